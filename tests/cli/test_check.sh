#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncclwatch check as a user runs it: on this GPU-less machine (cannot check,
# exit 3, naming the missing driver), judging recorded results against the 2xH200 model,
# with the doctor's findings, and with bad input.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
H200=(--sysroot "$FX/sysfs/h200x2" --nvml-json "$FX/nvml/h200x2.json")
# The recorded GPU-less VM, so these run the same on a machine with GPUs.
NOGPU=(--sysroot "$FX/sysfs/nogpu-vm")
NODRV=NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1
# A stand-in for the NCCL the H200 machine loads (PyTorch's 2.28.9, built for
# CUDA 13.0), so the version checks read the same wherever the tests run.
printf 'ELF\0NCCL version 2.28.9+cuda13.0\0' >"$TMP/libnccl.so.2"
CLEAN=(env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE -u NCCL_DEBUG -u MASTER_ADDR -u CUDA_VISIBLE_DEVICES
       -u NCCLWATCH_NVML_JSON -u NCCLWATCH_SYSROOT NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2")

run "${CLEAN[@]}" "$NODRV" "$NW" check "${NOGPU[@]}"
expect_rc "no GPU: cannot check, exit 3" 3
expect_out "no GPU: CANNOT naming the missing driver" "CANNOT +gpu +no GPU: no NVIDIA driver \(/nonexistent/libnvidia-ml.so.1 not found\)"
expect_out "no GPU: verdict and elapsed time" "^ncclwatch check: CANNOT CHECK \([0-9.]+ s\)"

run "${CLEAN[@]}" "$NODRV" "$NW" check "${NOGPU[@]}" --json
expect_rc "no GPU json: exit 3" 3
expect_true "no GPU json: cannot check, named" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["schema"]=="ncclwatch.check/1" and d["verdict"]=="CANNOT" and d["exit"]==3
c=d["cannot_check"]
assert c["what"]=="gpu" and "no NVIDIA driver" in c["reason"], c
assert isinstance(d["doctor"], list) and len(d["doctor"])>=25
' "$OUT"

# The host backend runs without a GPU: alone (1 rank) and under mpirun.
run "${CLEAN[@]}" "$NODRV" ASAN_OPTIONS=detect_leaks=0 "$NW" check "${NOGPU[@]}" --backend mpi -b 1M -e 4M -n 2 -w 1
expect_rc "--backend mpi alone: PASS" 0
expect_out "--backend mpi alone: says one rank crosses no link" "SKIP all_reduce 4M +1 rank: nothing crosses a link"
run "${CLEAN[@]}" "$NODRV" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -x NCCLWATCH_NVML_LIB -np 2 "$NW" check "${NOGPU[@]}" --backend mpi -b 1M -e 4M -n 2 -w 1 --json
expect_no_crash "--backend mpi under mpirun: no crash"
cp "$OUT" "$TMP/base.json"
expect_true "--backend mpi under mpirun: 2 ranks measured, one report" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["exit"] in (0,1) and d["verdict"] in ("PASS","WARN"), d["verdict"]
r=d["results"]
assert r["run"]["nranks"]==2 and r["run"]["backend"]=="mpi"
assert {x["op"] for x in r["results"]}=={"all_reduce","all_gather"}
assert any(i["what"]=="all_reduce 4M" and "no expectation (host backend" in i["reason"] for i in d["items"])
' "$OUT"
run "${CLEAN[@]}" "$NODRV" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -x NCCLWATCH_NVML_LIB -np 2 "$NW" check "${NOGPU[@]}" --backend mpi -b 1M -e 4M -n 2 -w 1 --baseline "$TMP/base.json"
expect_no_crash "--backend mpi against its own baseline: no crash"
expect_out "--backend mpi against its own baseline: compared" "all_reduce 4M +[0-9.]+ GB/s busbw, [0-9]+% of [0-9.]+ expected \(baseline"

run "${CLEAN[@]}" "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check.json"
expect_rc "reference figures on the 2xH200 model: PASS" 0
expect_out "PASS line per op" "PASS all_reduce 4G +339.7 GB/s busbw, 100% of 339.7 expected"

run "${CLEAN[@]}" NCCL_P2P_DISABLE=1 "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check.json"
expect_rc "P2P disabled, bandwidth intact: WARN from doctor" 1
expect_out "WARN names the variable" "WARN doctor env.workarounds +NCCL_P2P_DISABLE=1"

run "${CLEAN[@]}" NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check-slow16x.json"
expect_rc "bandwidth collapsed: FAIL" 2
expect_out "FAIL names the cause" "FAIL all_reduce 4G .*likely cause: NCCL_P2P_DISABLE=1; NCCL_SHM_DISABLE=1"

run "${CLEAN[@]}" "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check-slow16x.json" --baseline "$FX/results/h200x2-check.json"
expect_rc "against a baseline: FAIL" 2
expect_out "baseline named" "expected \(baseline"

run "${CLEAN[@]}" "$NW" check "${H200[@]}" --no-bench
expect_rc "--no-bench on the healthy tree: PASS" 0

# Bad usage or input judges nothing: exit 3 (cannot check), not 2 (FAIL).
run "$NW" check --baseline 42
expect_rc "run id as baseline: exit 3" 3
expect_err "run id: says what to give" "history run ids are not supported yet"
run "$NW" check --results /dev/null
expect_rc "unreadable results: exit 3" 3
run "$NW" check --backend tcp
expect_rc "bad backend: exit 3" 3
run "$NW" check -b 4G -e 1G
expect_rc "-b above -e: exit 3" 3
run "$NW" check --warn-below 0.5 --fail-below 0.8
expect_rc "fail above warn: exit 3" 3
run "$NW" check --no-such-option
expect_rc "unknown option: exit 3" 3
run "$NW" check --prom-textfile "$TMP/check.txt"
expect_rc "--prom-textfile without .prom: exit 3" 3
expect_err "--prom-textfile: says why" "reads only files named \*\.prom"
run "$NW" help check
expect_out "help documents exit 3" "3 cannot check"

# GPUs but no NCCL on the host (it lives in the containers): cannot check.
run "${CLEAN[@]}" NCCLWATCH_NCCL_LIB=/nonexistent/libnccl.so.2 "$NW" check "${H200[@]}"
expect_rc "no NCCL: cannot check, exit 3" 3
expect_out "no NCCL: named" "CANNOT +nccl +no NCCL on this host: .*/nonexistent/libnccl.so.2"
expect_out "no NCCL: doctor's finding still shown" "FAIL doctor version.nccl"

# --prom-textfile: the verdict and figures for node_exporter, written atomically.
run "${CLEAN[@]}" "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check-slow16x.json" --prom-textfile "$TMP/nw.prom"
expect_rc "textfile on FAIL: exit 2" 2
expect_true "textfile: verdict, exit status and figures" python3 -c '
import sys
t=open(sys.argv[1]).read()
assert "ncclwatch_check_exit_status 2\n" in t, t
assert "ncclwatch_check_verdict{verdict=\"FAIL\"} 1\n" in t and "ncclwatch_check_verdict{verdict=\"PASS\"} 0\n" in t
import re
m = re.search(r"^ncclwatch_check_busbw_bytes_per_second\{op=\"all_reduce\",size_bytes=\"4294967296\"\} (\S+)$", t, re.M)
assert m and 21.0e9 < float(m.group(1)) < 21.5e9, t
m = re.search(r"^ncclwatch_check_expected_busbw_bytes_per_second\{op=\"all_reduce\",size_bytes=\"4294967296\"\} (\S+)$", t, re.M)
assert m and 339.6e9 < float(m.group(1)) < 339.7e9, t
assert "_gbs" not in t and "item=" not in t, t
' "$TMP/nw.prom"
expect_true "textfile: no temporary file left" sh -c '[ "$(ls "$1" | grep -c tmp)" = 0 ]' sh "$TMP"
if command -v promtool >/dev/null 2>&1; then
	run promtool check metrics <"$TMP/nw.prom"
	expect_rc "textfile: promtool check metrics clean" 0
else
	skip "textfile: promtool check metrics clean" "promtool not installed"
fi
run "${CLEAN[@]}" "$NODRV" "$NW" check "${NOGPU[@]}" --prom-textfile "$TMP/nw.prom"
expect_rc "textfile on cannot check: exit 3" 3
expect_true "textfile: cannot check recorded" grep -qx 'ncclwatch_check_exit_status 3' "$TMP/nw.prom"
run "${CLEAN[@]}" "$NW" check "${H200[@]}" --results "$FX/results/h200x2-check.json" --prom-textfile "$TMP/nodir/nw.prom"
expect_rc "textfile in a missing directory: the verdict stands" 0
expect_err "textfile in a missing directory: says so" "cannot write .*nodir.*is its directory there and writable"
run "$NW" help check
expect_out "help lists --baseline" "--baseline FILE"

# A check that ran its bench is recorded in history with its verdict.
if command -v mpirun >/dev/null 2>&1; then
	run env NCCLWATCH_DB="$TMP/chk.db" ASAN_OPTIONS=detect_leaks=0 \
		"${MPIRUN[@]}" -np 2 "$NW" check --backend mpi -b 64K -e 256K
	expect_rc "recorded check: PASS" 0
	run env NCCLWATCH_DB="$TMP/chk.db" "$NW" history
	expect_out "history lists the check run" "^ +1 .* check +all_reduce,all_gather"
	run env NCCLWATCH_DB="$TMP/chk.db" "$NW" history export 1 --json
	expect_out "the verdict is kept with the run" '"check_verdict": "PASS"'
else
	skip "recorded check" "mpirun is not installed (Debian: openmpi-bin)"
fi

# Issue 28 item 14: recording never holds the verdict back. With a history
# database that takes connections and never answers, the verdict comes
# first, recording ends within 5 s of it, SIGTERM while recording ends check
# within 1 s keeping the verdict's exit status, and the run waits in the spool.
"$SRCDIR/tests/helpers/blackhole" "$TMP/bh.port" & BH=$!
for _ in $(seq 50); do [ -s "$TMP/bh.port" ] && break; sleep 0.1; done
FROZEN="postgresql://nw@127.0.0.1:$(cat "$TMP/bh.port")/nw"
MPICHECK=("${NOGPU[@]}" --backend mpi -b 1M -e 4M -n 2 -w 1 --db "$FROZEN")
export NCCLWATCH_SPOOL=$TMP/spool
export ASAN_OPTIONS=detect_leaks=0 # MPI's own allocations, in the sanitizer build
t0=$(date +%s%N)
run "${CLEAN[@]}" "$NODRV" "$NW" check "${MPICHECK[@]}"
tenths=$((($(date +%s%N) - t0) / 100000000))
expect_rc "frozen history database: the verdict's exit status" 0
expect_out "frozen history database: the verdict printed" "^ncclwatch check: PASS"
expect_true "frozen history database: check ends within its 5 s of recording + 1 after the bench (took ${tenths}/10 s)" test "$tenths" -le 80
expect_err "frozen history database: the run kept in the spool" "not recorded in history: .*did not answer in time.*the run was kept in"
"${CLEAN[@]}" "$NODRV" NCCLWATCH_LOCK_TIMEOUT=600 "$NW" check "${MPICHECK[@]}" >"$TMP/chk.out" 2>"$TMP/chk.err" &
c=$!
for _ in $(seq 100); do grep -q '^ncclwatch check:' "$TMP/chk.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
t0=$(date +%s%N); kill -TERM "$c"; wait "$c"; RC=$?; tenths=$((($(date +%s%N) - t0) / 100000000))
expect_true "SIGTERM while recording: check ends within 1 s (took ${tenths}/10 s)" test "$tenths" -le 10
expect_rc "SIGTERM while recording: the verdict's exit status stands" 0
expect_true "SIGTERM while recording: the run kept in the spool" grep -q 'stopped by a signal.*the run was kept in' "$TMP/chk.err"
expect_true "two runs in the spool" test "$(ls "$NCCLWATCH_SPOOL" | grep -c '\.json$')" -eq 2
kill "$BH" 2>/dev/null
