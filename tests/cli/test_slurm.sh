#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Node health in a cluster: the Slurm prolog (deploy/slurm) and the NHC
# check file (deploy/nhc) run the real ncclwatch check on recorded inputs,
# with fake `scontrol` and `nhc` on PATH that record their arguments. The
# prolog drains only on FAIL (and a hung check), with a readable reason;
# "cannot check" (exit 3), WARN and a missing or broken tool never drain.
# Both act on the verdict check printed, never on a bare exit status, and a
# history database that does not answer never holds the verdict back.
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
# One that exits 1 saying nothing (a broken install), one that gives a FAIL
# verdict with no item, and one that gives its verdict, then ignores SIGTERM.
printf '#!/bin/sh\nexit 1\n' >"$TMP/bin/broken"
printf '#!/bin/sh\necho "ncclwatch check: FAIL (0.1 s)"\nexit 2\n' >"$TMP/bin/bare-fail"
printf '#!/bin/sh\ntrap "" TERM\necho "ncclwatch check: PASS (0.1 s)"\nsleep 60\n' >"$TMP/bin/deaf"
chmod +x "$TMP/bin/broken" "$TMP/bin/bare-fail" "$TMP/bin/deaf"
# A PostgreSQL server that takes connections and never answers.
"$SRCDIR/tests/helpers/blackhole" "$TMP/bh.port" & BH=$!
trap 'kill "$BH" 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ -s "$TMP/bh.port" ] && break; sleep 0.1; done
FROZEN="postgresql://nw@127.0.0.1:$(cat "$TMP/bh.port")/nw"
MPICHECK="--sysroot $FX/sysfs/nogpu-vm --backend mpi -b 1M -e 4M -n 2 -w 1"

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
expect_rc "prolog, FAIL: exits 1 (Slurm drains the node and requeues the job held)" 1
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

# Item 15: strict means WARN drains; "cannot check" never does, and a drain always has a reason.
fresh
run "${P[@]}" NCCLWATCH="$TMP/bin/broken" NCCLWATCH_PROLOG_STRICT=1 bash "$PROLOG"
expect_rc "prolog, strict, a broken binary (exit 1, no verdict): the job runs" 0
expect_true "prolog, strict, broken binary: not drained" test ! -e "$TMP/scontrol.calls"
expect_true "prolog, strict, broken binary: says there was no verdict" grep -q 'check gave no verdict (exit 1.*not draining' "$TMP/logger.lines"
fresh
run "${P[@]}" NCCL_P2P_DISABLE=1 NCCLWATCH_PROLOG_STRICT=1 NCCLWATCH_LOG_DIR=/proc/ncclwatch-cannot-be-made \
	NCCLWATCH_CHECK_ARGS="$H200 --results $FX/results/h200x2-check.json" bash "$PROLOG"
expect_rc "prolog, strict, a log directory that cannot be made: check still judged (WARN, exit 1)" 1
expect_true "prolog, unwritable log directory: drained naming the warning, not an empty reason" \
	grep -qx 'reason=ncclwatch: WARN doctor env.workarounds NCCL_P2P_DISABLE=1; fix: .*' "$TMP/scontrol.calls"
expect_true "prolog, unwritable log directory: says where the report went" grep -q 'cannot write reports in /proc/ncclwatch-cannot-be-made' "$TMP/logger.lines"
fresh
run "${P[@]}" NCCLWATCH="$TMP/bin/bare-fail" bash "$PROLOG"
expect_true "prolog, FAIL without an item: the reason says so" grep -qx 'reason=ncclwatch: FAIL (no item in the report)' "$TMP/scontrol.calls"

# Item 14: the verdict is given before recording in history, which ends on
# its own short deadline; a check that ignores SIGTERM is killed (timeout -k).
fresh
start=$SECONDS
run "${P[@]}" NCCLWATCH="$TMP/bin/deaf" NCCLWATCH_TIMEOUT=1 bash "$PROLOG"
took=$((SECONDS - start))
expect_true "prolog, a check ignoring SIGTERM: killed 5 s after the timeout (took ${took}s)" test "$took" -le 9
expect_rc "prolog, verdict PASS, then stopped at the timeout: the job runs" 0
expect_true "prolog, verdict then timeout: not drained" test ! -e "$TMP/scontrol.calls"
fresh
start=$SECONDS
run "${P[@]}" NCCLWATCH_SPOOL="$TMP/spool" NCCLWATCH_TIMEOUT=20 NCCLWATCH_CHECK_ARGS="$MPICHECK --db $FROZEN" bash "$PROLOG"
took=$((SECONDS - start))
expect_rc "prolog, history database frozen: the job runs" 0
expect_true "prolog, database frozen: not drained" test ! -e "$TMP/scontrol.calls"
expect_true "prolog, database frozen: ends at check's recording deadline, not the prolog's timeout (took ${took}s)" test "$took" -le 12
expect_true "prolog, database frozen: PASS logged" grep -q 'job 4242 on gpu-node-7: PASS (exit 0)' "$TMP/logger.lines"
expect_true "prolog, database frozen: the run waits in the spool" test "$(ls "$TMP/spool" | grep -c '\.json$')" -eq 1

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
nhc_case broken "" NCCLWATCH="$TMP/bin/broken" NCCLWATCH_NHC_STRICT=1
expect_rc "nhc, strict, a broken binary (exit 1, no verdict): node not marked" 0
expect_true "nhc, strict, broken binary: logged" grep -q 'ncclwatch check gave no verdict (exit 1); skipped' "$TMP/nhcrec.log"
start=$SECONDS
nhc_case deaf "" NCCLWATCH="$TMP/bin/deaf" NCCLWATCH_TIMEOUT=1
took=$((SECONDS - start))
expect_rc "nhc, verdict PASS, then deaf to SIGTERM: node not marked" 0
expect_true "nhc, deaf check: killed 5 s after the timeout (took ${took}s)" test "$took" -le 9
start=$SECONDS
nhc_case frozen "$MPICHECK --db $FROZEN" NCCLWATCH_SPOOL="$TMP/spool" NCCLWATCH_TIMEOUT=20
took=$((SECONDS - start))
expect_rc "nhc, history database frozen: node not marked" 0
expect_true "nhc, database frozen: ends at check's recording deadline (took ${took}s)" test "$took" -le 12

if command -v shellcheck >/dev/null 2>&1; then
	run shellcheck -s bash "$PROLOG" "$NHCFILE"
	expect_rc "shellcheck: prolog and NHC check file" 0
else
	skip "shellcheck: prolog and NHC check file" "shellcheck not installed"
fi
