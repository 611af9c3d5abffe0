#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ctrl-C during bench keeps what was measured: the sweep ends after the size
# running, one line says where, the files are written with what was
# measured (marked interrupted), the run is recorded marked interrupted,
# and the exit status is 128+signal; a second Ctrl-C ends it at once.
source "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=2
unset NCCLWATCH_NCCL_LIB FAKE_GPU_MEM FAKE_CUDA_FAIL FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG
# 4096 sizes: far more than a few seconds' work
LONG=(-b 1K -e 4M -i 1K -f 1 -n 5 -w 1)

# wait_rows FILE N: until FILE has N table rows (at most 60 s).
wait_rows() {
	for _ in $(seq 600); do
		[ "$(grep -cE '^ +[0-9]+ ' "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# interrupt_when PID DIR REGEX: SIGINT to PID once DIR/err matches REGEX (at most 60 s); its
# status in RC, DIR/out and DIR/err in $OUT and $ERR.
interrupt_when() {
	for _ in $(seq 600); do grep -qE "$3" "$2/err" 2>/dev/null && break; sleep 0.1; done
	kill -INT "$1"
	wait "$1"; RC=$?
	cp "$2/out" "$OUT"; cp "$2/err" "$ERR"
}

# check_interrupted NAME DIR SIG: the message, the files and the history row of an interrupted run.
check_interrupted() {
	local name=$1 d=$2 sig=$3
	expect_err "$name: one line says where it stopped and what is kept" \
		"bench: interrupted \\($sig\\) during all_reduce [0-9.]+[KMG]?, which was finished, after ([0-9]+) of 4096 sizes: keeping the \\1 finished \\([0-9]+ rows\\), marked interrupted"
	expect_err "$name: recorded" 'recorded as run 1 \(ncclwatch history show 1\)'
	expect_true "$name: the JSON holds the rows measured, marked interrupted" python3 - "$d/r.json" "$d/r.csv" <<'PY'
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["extra"]["interrupted"] is True, d["run"].get("extra")
n = len(d["results"])
assert 0 < n < 2 * 4096, n
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == n, (len(rows), n)
PY
	run "$NW" history show --db "$d/h.db" 1
	expect_out "$name: history show says it was interrupted" '^interrupted +yes: stopped by a signal'
	run "$NW" compare --db "$d/h.db" 1 1
	expect_err "$name: compare says a baseline is interrupted" 'A \(run 1.*\) is an interrupted run: .*a baseline should be a complete run'
}

# The NCCL backend on the fake GPUs.
D=$TMP/nccl; mkdir -p "$D"
"$NW" bench --nccl-lib "$FAKE/libnccl.so.2" --db "$D/h.db" "${LONG[@]}" --json="$D/r.json" --csv="$D/r.csv" \
	>"$D/out" 2>"$D/err" &
pid=$!
wait_rows "$D/out" 3
kill -INT "$pid"
wait "$pid"; RC=$?
cp "$D/out" "$OUT"; cp "$D/err" "$ERR"
expect_rc "fake NCCL: Ctrl-C exits 130" 130
expect_err "fake NCCL: the first Ctrl-C says what happens" 'stopping after the size running now \(interrupt again to stop at once\)'
expect_out "fake NCCL: the table is closed as usual" '^# Avg bus bandwidth'
check_interrupted "fake NCCL" "$D" SIGINT

# The MPI host backend under mpirun: mpirun turns SIGINT into SIGTERM for
# the ranks (Open MPI kills them 1 s later; the test gives them 10 s).
D=$TMP/mpi; mkdir -p "$D"
ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" --mca odls_base_sigkill_timeout 10 -np 2 "$NW" bench --backend mpi --db "$D/h.db" \
	"${LONG[@]}" --json="$D/r.json" --csv="$D/r.csv" >"$D/out" 2>"$D/err" &
pid=$!
wait_rows "$D/out" 3
kill -INT "$pid"
wait "$pid"; RC=$?
cp "$D/out" "$OUT"; cp "$D/err" "$ERR"
check_interrupted "mpirun" "$D" SIGTERM

# A second Ctrl-C ends it at once: nothing written, nothing recorded.
D=$TMP/twice; mkdir -p "$D"
# sizes of seconds each on the fakes, so the second comes while the first waits for one
"$NW" bench --nccl-lib "$FAKE/libnccl.so.2" --db "$D/h.db" -b 64M -e 1G -f 4 -n 20 -w 1 --json="$D/r.json" \
	>"$D/out" 2>"$D/err" &
pid=$!
wait_rows "$D/out" 1
kill -INT "$pid"; sleep 0.1; kill -INT "$pid"
wait "$pid"; RC=$?
cp "$D/out" "$OUT"; cp "$D/err" "$ERR"
expect_rc "second Ctrl-C: dies of SIGINT" 130
expect_err "second Ctrl-C: says what it interrupted" 'bench: interrupted during .* steps were measured'
expect_true "second Ctrl-C: no JSON written, nothing recorded" sh -c "! test -e '$D/r.json' && ! test -e '$D/h.db'"

# On a terminal (script(1)) the progress line is cleared before the message.
if command -v script >/dev/null; then
	D=$TMP/tty; mkdir -p "$D"
	script -qfc "'$NW' bench --nccl-lib '$FAKE/libnccl.so.2' --no-history ${LONG[*]} >'$D/out'" "$D/typescript" \
		</dev/null >/dev/null 2>&1 &
	wait_rows "$D/out" 3
	pkill_pid=$(pgrep -f -n "^$NW bench --nccl-lib $FAKE/libnccl.so.2 --no-history")
	[ -n "$pkill_pid" ] && kill -INT "$pkill_pid"
	wait
	# (no time left on it yet: the sizes measured are latency-bound, 4M is ahead, so nothing sound to say)
	expect_true "terminal: the progress line was drawn" grep -qE '\([0-9]+/[0-9]+ done\)' "$D/typescript"
	expect_true "terminal: cleared before the message" grep -qaP '\r\x1b\[Kncclwatch: bench: interrupted \(SIGINT\)' "$D/typescript"
else
	skip "terminal: the progress line is cleared before the message" "script(1) is missing (bsdutils)"
fi

# tune: the run in progress is ended, the finished runs stand (JSON marked), exit 130.
D=$TMP/tune; mkdir -p "$D"
FAKE_SLEEP=0.3 "$NW" tune --bench-cmd "$NW_TESTS/fake_bench" --op all_reduce -b 8 -e 1K -f 8 --no-history \
	--json="$D/t.json" >"$D/out" 2>"$D/err" &
interrupt_when $! "$D" '\[4/'
expect_rc "tune: Ctrl-C exits 130" 130
expect_err "tune: one line says where it stopped and what is kept" \
	'tune: interrupted \(SIGINT\) during \[[0-9]+/[0-9]+\] .*: that run was ended; keeping the [0-9]+ finished runs'
expect_true "tune: the JSON says interrupted" python3 -c \
	"import json,sys; d=json.load(open('$D/t.json')); sys.exit(not (d['interrupted'] is True and d['runs'] > 0))"

# check: judged on the sizes measured, recorded as interrupted, exit 130.
D=$TMP/check; mkdir -p "$D"
# (Open MPI leaks at exit by design; leak checking covers our code in the other runs)
ASAN_OPTIONS=detect_leaks=0 NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$NW" check --sysroot "$SRCDIR/tests/fixtures/sysfs/nogpu-vm" \
	--backend mpi -b 1K -e 16M -f 1.1 -n 20 -w 1 --db "$D/h.db" --json="$D/c.json" >"$D/out" 2>"$D/err" &
interrupt_when $! "$D" 'ncclwatch check: all_reduce'
expect_rc "check: Ctrl-C exits 130" 130
expect_err "check: one line says it" 'check: interrupted \(SIGINT\) during the bench: it stopped after the size running; judging the [0-9]+ rows measured'
expect_true "check: the JSON's results are marked interrupted" python3 -c \
	"import json,sys; d=json.load(open('$D/c.json')); sys.exit(d['results']['run']['extra']['interrupted'] is not True)"
run "$NW" history show --db "$D/h.db" 1
expect_out "check: history show says it was interrupted" '^interrupted +yes'
