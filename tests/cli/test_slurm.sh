#!/usr/bin/env bash
# Node health in a cluster: the Slurm prolog (deploy/slurm) and the NHC
# check file (deploy/nhc) run the real ncclwatch check on recorded inputs,
# with fake `scontrol` and `nhc` on PATH that record their arguments. The
# prolog drains only on FAIL (and a hung check), with a readable reason;
# "cannot check" (exit 3), WARN and a missing or broken tool never drain.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
PROLOG=$SRCDIR/deploy/slurm/prolog-ncclwatch.sh
NHCFILE=$SRCDIR/deploy/nhc/ncclwatch.nhc
printf 'ELF\0NCCL version 2.28.9+cuda13.0\0' >"$TMP/libnccl.so.2"
mkdir -p "$TMP/bin" "$TMP/log"

# scontrol: every call's arguments, one a line, then "--".
cat >"$TMP/bin/scontrol" <<FAKE
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done >>"$TMP/scontrol.calls"
echo -- >>"$TMP/scontrol.calls"
FAKE
# logger: what the prolog logs, so a test can read it.
cat >"$TMP/bin/logger" <<FAKE
#!/bin/sh
echo "\$*" >>"$TMP/logger.lines"
FAKE
# nhc: records its arguments, then does what LBNL NHC does with a check
# file: sources every *.nhc in the scripts directory (-D) and runs each
# "mask || command" line of the configuration (-c); die() marks the node
# bad (exit 1) with its message.
cat >"$TMP/bin/nhc" <<'FAKE'
#!/bin/bash
echo "$*" >>"$NHC_RECORD.args"
conf= dir=
while [ $# -gt 0 ]; do case $1 in -c) conf=$2; shift 2 ;; -D) dir=$2; shift 2 ;; *) shift ;; esac; done
log() { echo "log: $*" >>"$NHC_RECORD.log"; }
dbg() { echo "dbg: $*" >>"$NHC_RECORD.log"; }
die() { echo "die $1: $2" >>"$NHC_RECORD.log"; exit "$1"; }
for f in "$dir"/*.nhc; do source "$f"; done
while IFS= read -r line; do
	case $line in ''|'#'*) continue ;; esac
	eval "${line#*|| }"
done <"$conf"
exit 0
FAKE
chmod +x "$TMP/bin/"*
# A fake ncclwatch that hangs, for the timeout.
printf '#!/bin/sh\nsleep 30\n' >"$TMP/bin/hang"; chmod +x "$TMP/bin/hang"

H200="--sysroot $FX/sysfs/h200x2 --nvml-json $FX/nvml/h200x2.json"
NOGPU="--sysroot $FX/sysfs/nogpu-vm"
# The prolog's environment: a GPU job on node gpu-node-7, the recorded 2xH200.
P=(env -i PATH="$TMP/bin:$PATH" NCCLWATCH="$NW" NCCLWATCH_LOG_DIR="$TMP/log" SLURM_JOB_ID=4242
   SLURMD_NODENAME=gpu-node-7 SLURM_JOB_GPUS=0,1 NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2"
   NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 ASAN_OPTIONS=detect_leaks=0)
calls() { cat "$TMP/scontrol.calls" 2>/dev/null; }
fresh() { rm -f "$TMP/scontrol.calls" "$TMP/logger.lines"; }

fresh
run "${P[@]}" NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check.json" bash "$PROLOG"
expect_rc "prolog, PASS: the job runs" 0
expect_true "prolog, PASS: no scontrol call" test ! -e "$TMP/scontrol.calls"
expect_true "prolog, PASS: report kept per job" grep -q '^ncclwatch check: PASS' "$TMP/log/check-4242.txt"
expect_true "prolog, PASS: logged" grep -q 'job 4242 on gpu-node-7: PASS (exit 0)' "$TMP/logger.lines"

fresh
run "${P[@]}" NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check-slow16x.json" bash "$PROLOG"
expect_rc "prolog, FAIL: exits 1 (Slurm requeues the job)" 1
expect_true "prolog, FAIL: drains this node with the failing item as reason" \
	test "$(calls)" = "update
nodename=gpu-node-7
state=drain
reason=ncclwatch: FAIL all_reduce 4G 21.2 GB/s busbw, 6% of 339.7 expected
--"

fresh
run "${P[@]}" NCCLWATCH_CHECK_ARGS="$NOGPU" bash "$PROLOG"
expect_rc "prolog, no GPU (cannot check): the job runs" 0
expect_true "prolog, no GPU: not drained" test ! -e "$TMP/scontrol.calls"
expect_true "prolog, no GPU: says why, and that it does not drain" \
	grep -q 'cannot check gpu-node-7: CANNOT gpu no GPU: no NVIDIA driver.*not draining' "$TMP/logger.lines"

fresh
run "${P[@]}" NCCLWATCH_NCCL_LIB=/nonexistent/libnccl.so.2 NCCLWATCH_CHECK_ARGS="$H200" bash "$PROLOG"
expect_rc "prolog, no NCCL on the host (cannot check): the job runs" 0
expect_true "prolog, no NCCL: not drained" test ! -e "$TMP/scontrol.calls"
expect_true "prolog, no NCCL: says so" grep -q 'CANNOT nccl no NCCL on this host' "$TMP/logger.lines"

fresh
run "${P[@]}" NCCLWATCH_CHECK_ARGS="--no-such-option" bash "$PROLOG"
expect_rc "prolog, usage error (cannot check): the job runs" 0
expect_true "prolog, usage error: not drained" test ! -e "$TMP/scontrol.calls"

fresh
run "${P[@]}" NCCL_P2P_DISABLE=1 NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check.json" bash "$PROLOG"
expect_rc "prolog, WARN: the job runs" 0
expect_true "prolog, WARN: not drained" test ! -e "$TMP/scontrol.calls"
run "${P[@]}" NCCL_P2P_DISABLE=1 NCCLWATCH_PROLOG_STRICT=1 NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check.json" bash "$PROLOG"
expect_rc "prolog, WARN with NCCLWATCH_PROLOG_STRICT=1: exits 1" 1
expect_true "prolog, strict WARN: drained naming the warning" grep -qx 'reason=ncclwatch: WARN doctor env.workarounds NCCL_P2P_DISABLE=1; fix: .*' "$TMP/scontrol.calls"

fresh
run "${P[@]}" NCCLWATCH="$TMP/bin/hang" NCCLWATCH_TIMEOUT=1 bash "$PROLOG"
expect_rc "prolog, hung check: exits 1" 1
expect_true "prolog, hung check: drained as timed out" grep -qx 'reason=ncclwatch: check timed out after 1 s (a hung collective?)' "$TMP/scontrol.calls"

fresh
run "${P[@]}" NCCLWATCH=/nonexistent/ncclwatch bash "$PROLOG"
expect_rc "prolog, ncclwatch not installed: the job runs" 0
expect_true "prolog, not installed: not drained" test ! -e "$TMP/scontrol.calls"
run "${P[@]}" SLURM_JOB_GPUS= SLURM_JOB_ID=5151 bash "$PROLOG"
expect_rc "prolog, a job without GPUs: nothing run" 0
expect_true "prolog, no GPUs: no check, no report" test ! -e "$TMP/log/check-5151.txt"

# A Slurm prolog cannot read the reason back; a fake scontrol that fails
# still leaves the node failing (Slurm then drains with "Prolog error").
fresh
printf '#!/bin/sh\nexit 1\n' >"$TMP/fail-scontrol"; mkdir -p "$TMP/bin2"; cp "$TMP/fail-scontrol" "$TMP/bin2/scontrol"; chmod +x "$TMP/bin2/scontrol"
run "${P[@]}" PATH="$TMP/bin2:$TMP/bin:$PATH" NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check-slow16x.json" bash "$PROLOG"
expect_rc "prolog, FAIL and scontrol failing: still exits 1" 1
expect_err "prolog, scontrol failing: says so" 'scontrol update failed'

# NHC: the check file sourced by (a stand-in for) nhc, configured per line.
mkdir -p "$TMP/nhc"
cp "$NHCFILE" "$TMP/nhc/"
N=(env PATH="$TMP/bin:$PATH" NHC_RECORD="$TMP/nhcrec" NCCLWATCH="$NW" NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2"
   NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 ASAN_OPTIONS=detect_leaks=0)
nhc_case() { # NAME CHECK-ARGS: run nhc with one configuration line
	rm -f "$TMP/nhcrec".*
	echo "* || check_ncclwatch $2" >"$TMP/nhc.conf"
	shift 2
	run "${N[@]}" "$@" nhc -c "$TMP/nhc.conf" -D "$TMP/nhc"
}
nhc_case pass "$H200 --results $FX/results/h200x2-check.json"
expect_rc "nhc, PASS: node healthy" 0
expect_true "nhc: called with its configuration" grep -q -- "-c $TMP/nhc.conf -D $TMP/nhc" "$TMP/nhcrec.args"
expect_true "nhc, PASS: nothing marked" sh -c '! grep -q "^die" "$1"' sh "$TMP/nhcrec.log"
nhc_case fail "$H200 --results $FX/results/h200x2-check-slow16x.json"
expect_rc "nhc, FAIL: node marked bad" 1
expect_true "nhc, FAIL: die with the failing item" grep -qx 'die 1: check_ncclwatch: ncclwatch: FAIL all_reduce 4G 21.2 GB/s busbw, 6% of 339.7 expected' "$TMP/nhcrec.log"
nhc_case nogpu "$NOGPU"
expect_rc "nhc, cannot check: node not marked" 0
expect_true "nhc, cannot check: logged with the reason" grep -q '^log: check_ncclwatch: ncclwatch cannot check this node: CANNOT gpu no GPU' "$TMP/nhcrec.log"
nhc_case warn "$H200 --results $FX/results/h200x2-check.json" NCCL_P2P_DISABLE=1
expect_rc "nhc, WARN: node not marked" 0
expect_true "nhc, WARN: logged" grep -q '^log: check_ncclwatch: ncclwatch: WARN doctor env.workarounds' "$TMP/nhcrec.log"
nhc_case strict "$H200 --results $FX/results/h200x2-check.json" NCCL_P2P_DISABLE=1 NCCLWATCH_NHC_STRICT=1
expect_rc "nhc, WARN with NCCLWATCH_NHC_STRICT=1: node marked bad" 1
nhc_case missing "--no-bench" NCCLWATCH=/nonexistent/ncclwatch
expect_rc "nhc, ncclwatch not installed: node not marked" 0
expect_true "nhc, not installed: logged" grep -q 'ncclwatch not found at /nonexistent/ncclwatch' "$TMP/nhcrec.log"
nhc_case hang "" NCCLWATCH="$TMP/bin/hang" NCCLWATCH_TIMEOUT=1
expect_rc "nhc, hung check: node marked bad" 1

if command -v shellcheck >/dev/null 2>&1; then
	run shellcheck -s bash "$PROLOG" "$NHCFILE"
	expect_rc "shellcheck: prolog and NHC check file" 0
else
	skip "shellcheck: prolog and NHC check file" "shellcheck not installed"
fi
