#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench with the NCCL backend, for real, on CPUs: the fake CUDA driver and
# the fake NCCL (tests/fakegpu/) stand in for libcuda.so.1 and libnccl.so.2.
# Every op, type and reduction verified element by element, graphs,
# outputs, and every failure a GPU run can meet (out of memory, a CUDA or
# NCCL call failing, corrupted data, a hung peer, an asynchronous error).
. "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1
unset NCCLWATCH_NCCL_LIB FAKE_GPU_MEM FAKE_CUDA_FAIL FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG \
	FAKE_NCCL_ASYNC_ERROR FAKE_NCCL_VERSION FAKE_INIT_TIMEOUT_S
export FAKE_GPU_COUNT=4
bench() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "$@"; }

run "$NW" version --nccl-lib "$FAKE/libnccl.so.2"
expect_rc "version on the fakes: exit 0" 0
expect_out "version: the fake NCCL is 2.28.9" "^NCCL 2\.28\.9 .*libnccl\.so\.2"
expect_out "version: the fake driver is CUDA 13.0" "^CUDA driver API 13\.0 "

# check_table FILE N (lib.sh): zero wrong, algbw and busbw by nccl-tests' formulas for n ranks.

for g in 2 4; do
	run bench -g $g --op all -b 8 -e 64K -f 4 -c 1
	expect_rc "-g $g all ops: exit 0" 0
	expect_out "-g $g: nccl-tests' device list follows 'Using devices'" "^# Using devices$"
	expect_out "-g $g: the last rank's line as nccl-tests prints it (pid, host, device, PCI bus, name)" \
		"^#  Rank +$((g - 1)) Group  0 Pid +[0-9]+ on +[^ ]+ device +$((g - 1)) \[0000:[0-9a-f]{2}:00\] Fake H200\$"
	expect_true "-g $g: one device line per rank and section (9 sections)" \
		test "$(grep -c '^#  Rank ' "$OUT")" = $((9 * g))
	for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
		expect_out "-g $g: $op section" "Collective test starting: ${op}_perf"
	done
	cp "$OUT" "$TMP/t$g.txt"
	expect_true "-g $g: zero wrong, algbw and busbw by the nccl-tests formulas" check_table "$TMP/t$g.txt" $g
done
# The device lines are read back as nccl-tests' are: import counts the ranks and names the GPUs from them,
# and scripts/compare-nccl-tests pairs the rows with nccl-tests' own output.
run "$NW" import --no-history --json "$TMP/t4.txt"
expect_true "import of the table: 4 ranks of 4 x Fake H200 in each of the 9 sections" python3 -c "
import json, sys; d = json.load(open('$OUT'))
assert len(d) == 9 and all(r['run']['nranks'] == 4 and r['run']['gpus'] == '4 x Fake H200' for r in d), d[0]['run']"
if [ -f "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt" ]; then
	run python3 "$SRCDIR/scripts/compare-nccl-tests" "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt" "$TMP/t2.txt"
	expect_true "compare-nccl-tests pairs our rows with nccl-tests' (8 B to 64 KiB, every 4x)" \
		test "$(grep -cE '^(all_reduce|None) +[0-9]+ ' "$OUT")" -ge 5
fi

# Every type and reduction, every root (in-place and out-of-place rows both checked).
run bench -g 4 --op all -d all -o all -r all -b 8 -e 2K -f 16 -c 1 -n 2 -w 1
expect_rc "-g 4 -d all -o all -r all: exit 0" 0
cp "$OUT" "$TMP/all.txt"
expect_true "-d all -o all -r all: zero wrong everywhere" check_table "$TMP/all.txt" 4
for t in int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2; do
	expect_out "-d all: $t rows" "^ +[0-9]+ +[0-9]+ +$t +(sum|prod|min|max|avg|none) "
done
for o in sum prod min max avg; do
	expect_out "-o all: $o rows" "^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +$o "
done
expect_out "-r all: root 3 rows" "^ +[0-9]+ +[0-9]+ +float +none +3 "
expect_no_out "-o all: no avg on fp8 (NCCL refuses it)" " f8e(4m3|5m2) +avg "

run bench -g 2 --op reduce,broadcast,gather,scatter -r 1 -b 64 -e 1K -f 4
expect_rc "-r 1: exit 0" 0
expect_out "-r 1: root printed" "^ +64 +[0-9]+ +float +(sum|none) +1 "
cp "$OUT" "$TMP/r1.txt"
expect_true "-r 1: zero wrong" check_table "$TMP/r1.txt" 2

run bench -g 2 --op all_reduce,all_gather,reduce_scatter --oop-only -b 8 -e 4K -f 8
expect_rc "--oop-only: exit 0" 0
expect_out "--oop-only: out-of-place figures only" "^ +8 +2 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 *$"
run bench -g 2 --op all_reduce,all_gather,reduce_scatter --ip-only -b 8 -e 4K -f 8
expect_rc "--ip-only: exit 0" 0
expect_out "--ip-only: in-place figures only" "^ +8 +2 +float +sum +-1 {30,}[0-9.]+ +[0-9.]+ +[0-9.]+ +0 *$"

# CUDA graphs: the -n launches captured once, replayed -G times.
run bench -g 2 --op all -G 2 -b 8 -e 16K -f 4
expect_rc "-G 2: exit 0" 0
expect_out "-G 2: header says graph 2" "graph: 2 unalign: 0$"
cp "$OUT" "$TMP/g.txt"
expect_true "-G 2: zero wrong" check_table "$TMP/g.txt" 2

for a in 0 1 2 3; do
	run bench -g 2 -a $a -b 8 -e 1K -f 4
	expect_rc "-a $a: exit 0" 0
done
run bench -g 2 -m 4 -b 8 -e 1K -f 4
expect_rc "-m 4 (aggregated in a group): exit 0" 0
run bench -g 2 -z 1 -b 8 -e 1K -f 4
expect_rc "-z 1 (blocking): exit 0" 0

run bench -g 4 --op all_reduce,alltoall,gather -d half,int32 -b 64 -e 4K -f 4 --json="$TMP/r.json" --csv="$TMP/r.csv"
expect_rc "--json --csv: exit 0" 0
check_json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); csvf = sys.argv[2]
bad = 0
run = doc["run"]
if run["nranks"] != 4 or run["backend"] != "nccl" or run["nccl_version"] != "2.28.9": bad += 1; print("run", run)
rows = doc["results"]
seen = {(r["op"], r["dtype"]) for r in rows}
want = {(o, d) for o in ("all_reduce", "alltoall", "gather") for d in ("half", "int32")}
if seen != want: bad += 1; print("ops/types", seen)
sizes = sorted({r["size_bytes"] for r in rows if r["op"] == "all_reduce"})
if sizes != [64, 256, 1024, 4096]: bad += 1; print("sizes", sizes)
for r in rows:
    if r["nranks"] != 4: bad += 1; print("nranks", r)
    if r["wrong"] not in (0, None): bad += 1; print("wrong", r)
    es = 2 if r["dtype"] == "half" else 4
    per = r["size_bytes"] // es // (4 if r["op"] in ("alltoall", "gather") else 1)
    if r["count"] != per: bad += 1; print("count", r)
lines = [l for l in open(csvf) if l.strip()]
if len(lines) != len(rows) + 1: bad += 1; print("csv rows", len(lines), len(rows))
sys.exit(1 if bad else 0)
PY
}
expect_true "--json: ranks, ops, types, sizes, counts, zero wrong; --csv: one line per row" \
	check_json "$TMP/r.json" "$TMP/r.csv"

# ---- failures ----
run bench -g 8 -b 8 -e 1K
expect_rc "-g 8 of 4 GPUs: exit 3" 3
expect_err "-g 8: needs GPUs" "needs GPUs 0\.\.7 .*but 4 are visible"

FAKE_GPU_MEM=200M run bench -g 2 -b 8 -e 64M
expect_rc "too little memory: exit 3" 3
expect_err "too little memory: names the GPU" "too little GPU memory on GPU 0"
expect_no_crash "too little memory: no crash"

FAKE_CUDA_FAIL=cuMemAlloc_v2 run bench -g 2 -b 8 -e 1K
expect_rc "cuMemAlloc_v2 fails: exit 3" 3
expect_err "cuMemAlloc_v2 fails: named" "GPU 0: allocating buffers failed: CUDA_ERROR_OUT_OF_MEMORY"

FAKE_CUDA_FAIL=cuStreamCreate:2 run bench -g 2 -b 8 -e 1K
expect_rc "cuStreamCreate fails: exit 3" 3
expect_err "cuStreamCreate fails: named" "GPU 1: creating a context and stream failed: CUDA_ERROR_UNKNOWN"

FAKE_NCCL_FAIL=ncclAllReduce:3 run bench -g 2 -b 8 -e 1K
expect_rc "ncclAllReduce fails: exit 3" 3
expect_err "ncclAllReduce fails: op and NCCL error named" "all_reduce on GPU 0 failed: unhandled cuda error .*NCCL error 1"
expect_no_crash "ncclAllReduce fails: no crash"

FAKE_NCCL_FAIL=ncclCommInitRankConfig:2 run bench -g 2 -b 8 -e 1K
expect_rc "ncclCommInitRankConfig fails: exit 3" 3
expect_err "ncclCommInitRankConfig fails: named" "creating the NCCL communicator on GPU 1 failed: unhandled cuda error"

FAKE_NCCL_CORRUPT=1 run bench -g 2 --op all_reduce,all_gather,sendrecv -b 8 -e 1K -f 4
expect_rc "corrupted data: exit 1" 1
expect_err "corrupted data: said" "results have wrong elements"
expect_out "corrupted data: #wrong > 0 in the table" "^ +8 +2 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9]"

start=$(date +%s)
FAKE_NCCL_HANG=1 run bench -g 2 -T 2 -b 8 -e 1K
took=$(($(date +%s) - start))
expect_rc "hung rank, -T 2: exit 3" 3
expect_err "hung rank: the timeout named" "did not finish within 2 s \(-T\) on GPU 0,1"
expect_true "hung rank: ends well within 30 s (took ${took} s)" test "$took" -lt 30

FAKE_NCCL_ASYNC_ERROR=1:10 run bench -g 2 -b 8 -e 1K -T 20
expect_rc "asynchronous error: exit 3" 3
expect_err "asynchronous error: named" "on GPU 1 failed: remote process exited .*NCCL error 6"

FAKE_NCCL_VERSION=22703 run "$NW" version --nccl-lib "$FAKE/libnccl.so.2"
expect_out "FAKE_NCCL_VERSION: ncclGetVersion says 2.27.3" "^NCCL 2\.27\.3 "

# Cliques across processes (one rank per process under mpirun, or two),
# through the fake's shared-memory file (in /dev/shm).
if command -v mpirun >/dev/null && [ -w /dev/shm ]; then
	# Open MPI leaks at exit by design; leak checking covers our code in the other runs.
	mpi() { ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np "$1" "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "${@:2}"; }
	run mpi 2 --op all -b 8 -e 64K -f 4
	expect_rc "mpirun -np 2 all ops: exit 0" 0
	expect_out "mpirun -np 2: rank 1 listed with its own pid and GPU" "^#  Rank  1 Group  0 Pid +[0-9]+ on .* device  1 \[0000:19:00\] Fake H200\$"
	expect_true "mpirun -np 2: the two ranks' pids differ" test "$(grep -m2 '^#  Rank ' "$OUT" | awk '{print $7}' | sort -u | wc -l)" = 2
	cp "$OUT" "$TMP/m2.txt"
	expect_true "mpirun -np 2: zero wrong, busbw formulas" check_table "$TMP/m2.txt" 2
	run mpi 2 -g 2 --op all -G 2 -b 8 -e 16K -f 4
	expect_rc "mpirun -np 2 -g 2 -G 2: exit 0" 0
	cp "$OUT" "$TMP/m22.txt"
	expect_true "mpirun -np 2 -g 2 -G 2: 4 ranks, zero wrong" check_table "$TMP/m22.txt" 4
	run mpi 4 --op all -d int8,half,f8e5m2,double -o all -r all -b 8 -e 2K -f 16 -n 2 -w 1
	expect_rc "mpirun -np 4 types, reductions, roots: exit 0" 0
	cp "$OUT" "$TMP/m4.txt"
	expect_true "mpirun -np 4: zero wrong" check_table "$TMP/m4.txt" 4
	FAKE_NCCL_CORRUPT=1 run mpi 2 -b 8 -e 1K
	expect_rc "mpirun, corrupted data: exit 1" 1
	start=$(date +%s)
	FAKE_NCCL_HANG=1 run mpi 2 -T 2 -b 8 -e 1K
	took=$(($(date +%s) - start))
	expect_true "mpirun, hung rank: non-zero exit" test "$RC" -ne 0
	expect_err "mpirun, hung rank: the timeout named" "did not finish within 2 s \(-T\)"
	expect_true "mpirun, hung rank: ends well within 30 s (took ${took} s)" test "$took" -lt 30
	FAKE_NCCL_ASYNC_ERROR=1:10 run mpi 2 -T 20 -b 8 -e 1K
	expect_true "mpirun, asynchronous error: non-zero exit" test "$RC" -ne 0
	# rank 1's NCCL error makes rank 0's next collective fail too; which of the two
	# ranks is reported first is a race between the processes (seen both ways under ASan)
	expect_err "mpirun, asynchronous error: a failing rank and its collective named" \
		"rank 1 on .* remote process exited .*NCCL error 6|rank 0 on .*all_reduce of [0-9]+ .* failed: CUDA_ERROR_LAUNCH_FAILED"
	FAKE_XP_KIB=4 run mpi 2 -b 8 -e 64K -T 20
	expect_true "mpirun, more than FAKE_XP_KIB per rank: non-zero exit" test "$RC" -ne 0
	expect_err "mpirun, more than FAKE_XP_KIB: said" "at most 4 KiB per rank \(FAKE_XP_KIB\)"
	left=$(ls /dev/shm 2>/dev/null | grep -c "^fakenccl-$(id -u)-" || true)
	expect_true "mpirun: no shared-memory file left behind" test "$left" -eq 0
else
	skip "cliques across processes under mpirun" "mpirun is not installed (Debian: openmpi-bin) or /dev/shm is not writable"
fi

# A rank that never joins: init fails after FAKE_INIT_TIMEOUT_S, by name.
FAKE_INIT_TIMEOUT_S=1 FAKE_GPU_COUNT=16 run "$NW_TESTS/fakegpu_threads" --nccl-lib "$FAKE/libnccl.so.2" \
	--threads 2 --gpus 2 --extra 1
expect_rc "missing rank: init fails" 1
expect_err "missing rank: ncclSystemError, how many joined" "NCCL error 2 \(fake NCCL: (ncclCommInitRank: only [0-9] of 5 ranks of the clique joined within 1 s|ranks in other processes are not supported)"

# bench -t: threads of one process, each with its own ranks and NCCL group.
run bench -t 2 -g 2 --op all -b 8 -e 16K -f 4
expect_rc "-t 2 -g 2 all ops: exit 0" 0
cp "$OUT" "$TMP/t22.txt"
expect_true "-t 2 -g 2: 4 ranks, zero wrong, busbw formulas" check_table "$TMP/t22.txt" 4
expect_out "-t 2 -g 2: the header says threads and GPUs per thread, as nccl-tests" '^# nThread 2 nGpus 2 minBytes 8 '
run bench -t 4 -G 2 --op all_reduce,sendrecv,alltoall -d all -b 8 -e 4K -f 8 -n 4
expect_rc "-t 4 -G 2 -d all: exit 0" 0
cp "$OUT" "$TMP/t4.txt"
expect_true "-t 4 -G 2 -d all: zero wrong" check_table "$TMP/t4.txt" 4
FAKE_NCCL_FAIL=ncclAllReduce:4 run bench -t 2 -b 8 -e 1K
expect_rc "-t 2, ncclAllReduce fails in thread 1: exit 3" 3
expect_err "-t 2: the thread and the NCCL error named" "thread 1: all_reduce on GPU 1 failed: unhandled cuda error"
start=$(date +%s)
FAKE_NCCL_HANG=1 run bench -t 2 -T 2 -b 8 -e 1K
took=$(($(date +%s) - start))
expect_rc "-t 2, hung rank: exit 3" 3
expect_err "-t 2, hung rank: the timeout named" "did not finish within 2 s"
expect_true "-t 2, hung rank: ends well within 30 s (took ${took} s)" test "$took" -lt 30

# One clique driven from several threads (nccl-tests' -t): thread-local
# groups, ranks of other threads completing the work, graphs per thread.
T=$NW_TESTS/fakegpu_threads
FAKE_GPU_COUNT=16 run "$T" --nccl-lib "$FAKE/libnccl.so.2" --threads 4 --gpus 2 --iters 50 --graph
expect_rc "threads: 4 threads x 2 ranks, all-reduce, send/recv ring, graphs: exit 0" 0
expect_out "threads: checked" "^ok threads=4 gpus=2 ranks=8 iters=50 graph$"
FAKE_GPU_COUNT=16 run "$T" --nccl-lib "$FAKE/libnccl.so.2" --threads 8 --iters 200 --count 1
expect_rc "threads: 8 threads x 1 rank, 200 iterations: exit 0" 0
FAKE_NCCL_CORRUPT=1 run "$T" --nccl-lib "$FAKE/libnccl.so.2" --threads 2
expect_rc "threads: corrupted data is caught" 1
expect_err "threads: the wrong element named" "rank 1 iteration 0: all-reduce element 0 is"
expect_no_crash "threads: abort wakes the other threads, no crash"

# nccl-tests parity on the fake NCCL: -z 1..3, -I 1 -K, -S 1, -J, every result verified.
for z in 1 2 3; do
	run bench -b 1K -e 64K -f 4 -z "$z" -c 1
	expect_rc "fake NCCL -z $z: exit 0, verified" 0
	expect_out "fake NCCL -z $z: nccl-tests' blocking line" '^# Blocking Enabled: '
done
run bench -b 1K -e 64K -f 4 -n 8 -I 1 -K 1 -S 1 -J "$TMP/fake_nt.json"
expect_rc "fake NCCL -I 1 -S 1 -J: exit 0" 0
expect_true "fake NCCL -I 1 -S 1: 23 columns per row (per-iteration and timestamp)" \
	sh -c "test \$(grep -E '^ +[0-9]' '$OUT' | awk '{print NF}' | sort -u) = 23"
expect_true "fake NCCL -J: four GPUs listed, nccl_version 22809, per-iteration objects" python3 -c "
import json; d = json.load(open('$TMP/fake_nt.json'))
assert [x['device'] for x in d['config']['devices']] == [0, 1, 2, 3], d['config']['devices']
assert d['nccl_version'] == 22809 and d['config']['per_iter_skip'] == 1, d['nccl_version']
assert all(len(r['out_of_place_per_iter']['times_us']) == 8 for r in d['results'])"
expect_true "fake NCCL -J: every field by nccl-tests' list" python3 "$SRCDIR/tests/cli/ntjson_reader.py" "$TMP/fake_nt.json"
