#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The interposer (libncclwatch-interpose.so, LD_PRELOAD) on the fake NCCL of
# versions without a profiler interface (2.18 to 2.22): bench, which
# dlopen()s NCCL RTLD_LOCAL as PyTorch loads it, and tests/helpers/ipose_job,
# a job that calls NCCL through names the loader binds (PyTorch's way); the
# stats files must hold what the job issued, op by op, written as the
# interposer's. Groups, graph capture, splits, threads, a hung rank aborted
# by a watchdog, the readers (top, exporter, hang), the choice between the
# profiler plugin and the interposer, settings and failures.
. "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
IPO=${NW_IPOSE:-$(dirname "$NW")/libncclwatch-interpose.so}
JOB=$NW_TESTS/ipose_job
# Under AddressSanitizer its runtime must come first among preloaded libraries.
ASANRT=$(ldd "$IPO" 2>/dev/null | awk '/libasan/ { print $3 }')
PRE="${ASANRT:+$ASANRT }$IPO"
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=4
unset NCCLWATCH_NCCL_LIB FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG FAKE_NCCL_ASYNC_ERROR FAKE_NCCL_VERSION \
	NCCL_PROFILER_PLUGIN NCCLWATCH_TIMED_PER_S NCCLWATCH_INTERPOSE NCCL_TESTS_SPLIT NCCLWATCH_LOG_S NCCL_DEBUG

# Only NCCL's functions are exported, and nothing but libc/libdl/libpthread/libm is needed.
want="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort ncclCommDestroy ncclCommFinalize"
want="$want ncclCommGetAsyncError ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig ncclCommInitRankScalable"
want="$want ncclCommSplit ncclGather ncclGroupEnd ncclGroupSimulateEnd ncclGroupStart ncclRecv ncclReduce"
want="$want ncclReduceScatter ncclScatter ncclSend "
syms=$(nm -D --defined-only "$IPO" | awk '{print $3}' | sort | tr '\n' ' ')
expect_true "the interposer exports NCCL's functions it wraps, nothing else" test "$syms" = "$want"
if readelf -d "$IPO" | grep NEEDED | grep -Eqv 'lib(c|pthread|m|dl)\.so|ld-linux|libasan|libubsan|libstdc|libgcc'; then
	RC=1; notok "the interposer links nothing but libc" "$(readelf -d "$IPO" | grep NEEDED)"
else ok "the interposer links nothing but libc"; fi

# stats DIR: "nranks rank op calls bytes" per communicator rank and op, summed over size buckets.
stats() {
	"$NW_TESTS/nwstats_dump" "$1" | awk '
		/^rank / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } n[v["comm"] " " v["rank"]] = v["nranks"] }
		/^rec /  { for (i = 2; i <= NF; i++) { split($i, kv, "="); w[kv[1]] = kv[2] }
		           k = w["comm"] " " w["rank"] " " w["op"]; c[k] += w["count"]; b[k] += w["bytes"] }
		END { for (k in c) { split(k, p, " "); print n[p[1] " " p[2]], p[2], p[3], c[k], b[k] } }' | sort
}
# issued FILE: the same from ipose_job's own counts.
issued() { awk '/^issued/ && $5 != "calls=0" { gsub(/[a-z]+=/, ""); print $2, $3, $4, $5, $6 }' "$1" | sort; }
# same A B: files A and B hold the same lines, and A is not empty.
same() { cat "$1" >"$TMP/same.a" && cat "$2" >"$TMP/same.b" && test -s "$TMP/same.a" && cmp -s "$TMP/same.a" "$TMP/same.b"; }
bench() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "$@"; }
ipo() { env LD_PRELOAD="$PRE" "$@"; }

# Inert where there is no NCCL; bench routes the calls it wraps through it, as the loader does for PyTorch.
run ipo sh -c true
expect_true "nothing happens in a process without NCCL" test "$RC" = 0 -a ! -s "$ERR"
run ipo "$NW" version --nccl-lib "$FAKE/libnccl.so.2"
expect_out "version: NCCL's calls go through the interposer" "^NCCL 2\.28\.9 .*, calls through .*libncclwatch-interpose\.so$"

# The same bench, recorded by the profiler plugin at 2.28 (the reference) and by the interposer at
# 2.18 to 2.22: op by op, rank by rank, the same calls and bytes.
# -I 1: no noise batches, whose launch count follows the measured time, so that both runs issue the same calls
OPS="-g 2 --op all_reduce,all_gather,reduce_scatter,broadcast,reduce,sendrecv -b 1K -e 16K -n 4 -w 1 -c 1 -I 1"
mkdir -p "$TMP/ref"
NCCLWATCH_DIR=$TMP/ref NCCL_PROFILER_PLUGIN=$NW_PLUGIN run bench $OPS
expect_rc "reference: bench with the profiler plugin at NCCL 2.28" 0
stats "$TMP/ref" >"$TMP/ref.txt"
for v in 21805 21903 22105 22203; do
	d=$TMP/v$v; mkdir -p "$d"
	NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=$v run ipo "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" $OPS
	expect_rc "NCCL $v: bench under the interposer runs" 0
	expect_out "NCCL $v: every element right" "^# Out of bounds values : 0 OK"
	stats "$d" >"$TMP/v$v.txt"
	expect_true "NCCL $v: the stats hold what bench issued, per rank and op (as the plugin's at 2.28)" \
		same "$TMP/ref.txt" "$TMP/v$v.txt"
	run "$NW_TESTS/nwstats_dump" "$d"
	expect_out "NCCL $v: written by the interposer, which says what it cannot see" \
		"^rank .* rank=1 nranks=2 abi=interposer .* blind=node_count,algorithm repairs=0 nccl=$v$"
	expect_true "NCCL $v: two files, one per rank" test "$(grep -c '^rank ' "$OUT")" = 2
	expect_out "NCCL $v: some ops timed with CUDA events (sampled)" "^prog .* completion=1 "
done
expect_true "the reference holds ops" test -s "$TMP/ref.txt"

# The readers name the interposer.
run "$NW" top --once --dir "$TMP/v22105"
expect_out "top: the interposer's files, with their ops" "^[0-9a-f]{16} .* all_reduce "
expect_out "top: names the interposer and its NCCL" \
	"^note: interposer \(NCCL 2\.21\.5\), 2 files, cannot see: no node count; no algorithm, protocol or channel count$"
run "$NW" exporter --once --dir "$TMP/v22105"
expect_out "exporter: rank_info says the interposer" 'ncclwatch_rank_info\{.*profiler_abi="interposer".*cannot_see="node_count,algorithm"\} 1'
ar=$(awk '$1 == 2 && $2 == 0 && $3 == "all_reduce" { print $5 }' "$TMP/ref.txt")
got=$(grep '^ncclwatch_coll_bytes_total{.*rank="0".*op="all_reduce"' "$OUT" | awk '{ s += $2 } END { print s + 0 }')
expect_true "exporter: all_reduce bytes of rank 0 are what bench issued ($ar)" test "$got" = "$ar"
run "$NW" hang --dir "$TMP/v22105" --no-ras
expect_rc "hang: nothing hung in a finished job" 0
expect_out "hang: names the interposer" "^note: interposer \(NCCL 2\.21\.5\)"

# Each op timed (NCCLWATCH_TIMED_PER_S=all): a paced job, one thread per rank. Inside a group one
# pair of events times the group; its time is shared by bytes among collectives, and sends and
# receives each get it whole (they run at once, in opposite directions).
d=$TMP/all; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_TIMED_PER_S=all NCCLWATCH_PERIOD_MS=1 FAKE_NCCL_VERSION=22105 run ipo "$JOB" \
	--nccl-lib "$FAKE/libnccl.so.2" --iters 6 --pace-us 3000
expect_rc "ipose_job, every op timed: runs" 0
expect_out "ipose_job: NCCL is not in the global scope, the loader bound the calls to the interposer" \
	"^nccl bound to an interposer, not in the global scope$"
issued "$OUT" >"$TMP/all.issued"
stats "$d" >"$TMP/all.stats"
expect_true "every op recorded as issued (ncclBcast once, as broadcast)" same "$TMP/all.issued" "$TMP/all.stats"
run "$NW_TESTS/nwstats_dump" "$d"
expect_out "every op timed: completions seen for every op" "^prog .* rank=0 completion=2 "
expect_true "every op timed: kernel_ops = ops" awk '/^rank / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["ops"] != v["kernel_ops"] || !v["ops"]) bad = 1; n++ } END { exit bad || n != 2 }' "$OUT"
# per group: collectives' shares add up to what sends (and receives) got whole
awk '/^rec .* rank=0 / { for (i = 2; i <= NF; i++) { split($i, kv, "="); w[kv[1]] = kv[2] }
	t = w["kernel"] * w["mean_us"]; if (w["op"] == "send") s += t; else if (w["op"] == "recv") r += t; else c += t }
	END { print c, s, r }' "$OUT" >"$TMP/shares"
expect_true "a group's time: collectives share it, sends and receives each get it" \
	awk '{ exit !($2 > 0 && $1 > 0 && ($2 - $3) ^ 2 < ($2 * 0.01) ^ 2) }' "$TMP/shares"

# The same job, every rank from one thread inside one group (nested groups), made by ncclCommInitAll.
d=$TMP/grouped; mkdir -p "$d"
NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=21903 run ipo "$JOB" --nccl-lib "$FAKE/libnccl.so.2" --iters 5 --initall
expect_rc "one thread, nested groups, ncclCommInitAll: runs" 0
issued "$OUT" >"$TMP/g.issued"
stats "$d" >"$TMP/g.stats"
expect_true "one thread, nested groups: every op recorded as issued" same "$TMP/g.issued" "$TMP/g.stats"

# Graph capture: the calls captured are counted once each, never timed, no event recorded while capturing.
d=$TMP/graph; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_TIMED_PER_S=all NCCL_DEBUG=INFO FAKE_NCCL_VERSION=22105 run ipo "$JOB" \
	--nccl-lib "$FAKE/libnccl.so.2" --iters 3 --threads --graph
expect_rc "graph capture: runs" 0
expect_true "graph capture: no event recorded on a capturing stream" test -z "$(grep 'capturing stream' "$ERR")"
expect_err "graph capture: said once that captured calls are counted, not timed" "counted once each \(graph_ops\) and not timed"
issued "$OUT" >"$TMP/gr.issued"
stats "$d" >"$TMP/gr.stats"
expect_true "graph capture: every call recorded once" same "$TMP/gr.issued" "$TMP/gr.stats"
cap=$(awk '/^captured .* rank=0 / { sub("calls=", "", $4); print $4 }' "$OUT")
expect_true "graph capture: graph_ops = the calls captured ($cap)" \
	grep -Eq "^rank .* rank=0 .* graph_ops=$cap " <("$NW_TESTS/nwstats_dump" "$d")
d=$TMP/bgraph; mkdir -p "$d"
NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=22105 run ipo "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	-g 2 -G 2 --op all_reduce -b 1K -e 8K -n 4 -w 1 -c 1
expect_rc "bench -G 2 under the interposer runs" 0
mkdir -p "$TMP/bgref"
NCCLWATCH_DIR=$TMP/bgref NCCL_PROFILER_PLUGIN=$NW_PLUGIN run bench -g 2 -G 2 --op all_reduce -b 1K -e 8K -n 4 -w 1 -c 1
expect_true "bench -G 2: the same calls as the plugin's at 2.28" same <(stats "$TMP/bgref") <(stats "$d")
expect_true "bench -G 2: the captured calls counted on both ranks" \
	test "$("$NW_TESTS/nwstats_dump" "$d" | grep -Ec '^rank .* graph_ops=[1-9][0-9]* ')" = 2

# Splits: inside a group NCCL sets the child only at the group's end; each half is one communicator.
d=$TMP/split; mkdir -p "$d"
NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=22105 run ipo "$JOB" --nccl-lib "$FAKE/libnccl.so.2" --ranks 4 --iters 3 --threads --split
expect_rc "split job: runs" 0
issued "$OUT" >"$TMP/s.issued"
stats "$d" >"$TMP/s.stats"
expect_true "split job: world and halves hold what was issued" same "$TMP/s.issued" "$TMP/s.stats"
expect_true "split job: three communicators (the world, two halves of 2 ranks)" test \
	"$("$NW_TESTS/nwstats_dump" "$d" | awk '/^rank /{ print $6, $9 }' | sort -u | awk '{ print $2 }' | sort | tr '\n' ' ')" = \
	"nranks=2 nranks=2 nranks=4 "
# ... and across processes: every rank names each communicator alike (NCCL_TESTS_SPLIT, mpirun -np 4)
d=$TMP/xsplit; mkdir -p "$d"
run env NCCLWATCH_DIR="$d" FAKE_NCCL_VERSION=22105 NCCL_TESTS_SPLIT="MOD 2" ASAN_OPTIONS=detect_leaks=0 \
	"${MPIRUN[@]}" -np 4 -x NCCLWATCH_DIR -x FAKE_NCCL_VERSION -x NCCL_TESTS_SPLIT -x NCCLWATCH_CUDA_LIB \
	-x FAKE_GPU_COUNT -x ASAN_OPTIONS -x LD_PRELOAD="$PRE" "$NW" bench --no-history \
	--nccl-lib "$FAKE/libnccl.so.2" -g 1 --op all_reduce -b 1K -e 4K -n 3 -w 1 -c 1
expect_rc "4 processes, split in two: runs" 0
expect_true "4 processes: the world's 4 files and each half's 2 share a name, pids differ" test \
	"$("$NW_TESTS/nwstats_dump" "$d" | awk '/^rank /{ print $6, $9 }' | sort | uniq -c | awk '{ print $1, $3 }' | sort | tr '\n' ' ')" = \
	"2 nranks=2 2 nranks=2 4 nranks=4 "

# Threads: bench -t 2 against the plugin's reference.
d=$TMP/threads; mkdir -p "$d"
NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=22203 run ipo "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	-t 2 -g 2 --op all_reduce,sendrecv -b 1K -e 8K -n 4 -w 1 -c 1 -I 1
expect_rc "bench -t 2 -g 2 under the interposer runs" 0
mkdir -p "$TMP/tref"
NCCLWATCH_DIR=$TMP/tref NCCL_PROFILER_PLUGIN=$NW_PLUGIN run bench -t 2 -g 2 --op all_reduce,sendrecv -b 1K -e 8K -n 4 -w 1 -c 1 -I 1
expect_true "bench -t 2 -g 2: the same calls as the plugin's at 2.28" same <(stats "$TMP/tref") <(stats "$d")

# A hung rank: the verdict comes, the watchdog's abort neither crashes nor touches the events again.
d=$TMP/hung; mkdir -p "$d"
NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=22105 FAKE_NCCL_HANG=1 NCCLWATCH_HANG_S=1 run ipo "$NW" bench --no-history \
	--nccl-lib "$FAKE/libnccl.so.2" -g 2 --op all_reduce -b 1K -e 1K -n 3 -w 1 -c 1 -T 3
expect_no_crash "hung rank, bench -T aborts: no crash"
expect_err "hung rank: each rank says it is hung, op in flight" "ncclwatch: comm [0-9a-f]{16} rank 1/2 hung: no NCCL event for 1 s, 1 op\(s\) in flight"
run "$NW_TESTS/nwstats_dump" "$d"
expect_true "hung rank: both files finished, hung, after the abort" test "$(grep -Ec '^prog .* hung=1 why=1 ' "$OUT")" = 2
expect_true "hung rank: a trace dump" test -n "$(ls "$d" | grep '^trace\..*\.json$')"
d=$TMP/watchdog; mkdir -p "$d"
(NCCLWATCH_DIR=$d FAKE_NCCL_VERSION=22105 FAKE_NCCL_HANG=0 NCCLWATCH_HANG_S=1 LD_PRELOAD="$PRE" "$JOB" \
	--nccl-lib "$FAKE/libnccl.so.2" --threads --abort-ms 4000 >"$TMP/wd.out" 2>"$TMP/wd.err") &
job=$!
for _ in $(seq 60); do grep -q 'hung=1' <("$NW_TESTS/nwstats_dump" "$d" 2>/dev/null) && break; sleep 0.1; done
run "$NW" hang --dir "$d" --no-ras --hang-s 1
expect_rc "hang (live, interposer's files): exit 1, hung" 1
expect_out "hang: the communicator is hung at its first all_reduce" "^comm [0-9a-f]{16}, 2 ranks: hung at all_reduce seq 0"
wait "$job"
RC=$?
expect_rc "watchdog thread aborts the hung communicators: the job ends normally" 0
expect_true "watchdog: said aborted" grep -q '^aborted$' "$TMP/wd.out"
expect_true "watchdog: files finished" test "$("$NW_TESTS/nwstats_dump" "$d" | grep -c '^rank .* state=finished ')" = 2

# Never both: NCCL 2.28 with the plugin loaded, the plugin records; 2.25 given only the name
# (which it does not turn into a file name) loads no plugin, so the interposer records.
d=$TMP/both; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCL_PROFILER_PLUGIN=$NW_PLUGIN run ipo "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	-g 2 --op all_reduce -b 1K -e 4K -n 3 -w 1 -c 1
expect_rc "2.28, plugin and interposer: runs" 0
expect_err "2.28: says the plugin records and the interposer passes through" \
	"NCCL 2\.28\.9 loaded the ncclwatch profiler plugin \('.*libnccl-profiler-ncclwatch\.so'\), which records this job; the interposer passes every call through"
expect_true "2.28: only the plugin's files" test "$("$NW_TESTS/nwstats_dump" "$d" | grep -c '^rank .* abi=5 ')" = 2 -a \
	"$(ls "$d" | wc -l)" = 2
d=$TMP/name25; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCL_PROFILER_PLUGIN=ncclwatch FAKE_NCCL_VERSION=22503 run ipo "$NW" bench --no-history \
	--nccl-lib "$FAKE/libnccl.so.2" -g 2 --op all_reduce -b 1K -e 4K -n 3 -w 1 -c 1
expect_true "2.25 with the plugin's name only: the interposer records" \
	test "$("$NW_TESTS/nwstats_dump" "$d" | grep -c '^rank .* abi=interposer .* nccl=22503$')" = 2

# Settings: off; a bad rate (said, nothing recorded, the job unharmed); 0 (counted, never timed).
d=$TMP/off; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_INTERPOSE=off FAKE_NCCL_VERSION=22105 run ipo "$JOB" --nccl-lib "$FAKE/libnccl.so.2" --iters 2
expect_true "NCCLWATCH_INTERPOSE=off: the job runs, nothing recorded" test "$RC" = 0 -a -z "$(ls "$d")"
d=$TMP/badrate; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_TIMED_PER_S=lots FAKE_NCCL_VERSION=22105 run ipo "$JOB" --nccl-lib "$FAKE/libnccl.so.2" --iters 2
expect_rc "bad NCCLWATCH_TIMED_PER_S: the job runs" 0
expect_err "bad NCCLWATCH_TIMED_PER_S: named once, passing through" \
	"NCCLWATCH_TIMED_PER_S='lots' is not 'all' or a whole number in \[0, 1000000\]; the interposer passes every call through"
expect_true "bad NCCLWATCH_TIMED_PER_S: nothing recorded" test -z "$(ls "$d")"
d=$TMP/rate0; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_TIMED_PER_S=0 FAKE_NCCL_VERSION=22105 run ipo "$JOB" --nccl-lib "$FAKE/libnccl.so.2" --iters 2
issued "$OUT" >"$TMP/r0.issued"
expect_true "NCCLWATCH_TIMED_PER_S=0: every op counted" same "$TMP/r0.issued" <(stats "$d")
expect_true "NCCLWATCH_TIMED_PER_S=0: none timed, no completions seen" \
	test "$("$NW_TESTS/nwstats_dump" "$d" | grep -Ec '^(rank .* kernel_ops=0 |prog .* completion=0 )')" = 4

# A driver call failing: timing stops (said once), counting goes on, the job is unharmed.
d=$TMP/cufail; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_TIMED_PER_S=all FAKE_CUDA_FAIL=cuEventRecord:3 FAKE_NCCL_VERSION=22105 run ipo "$JOB" \
	--nccl-lib "$FAKE/libnccl.so.2" --iters 3 --threads
expect_rc "cuEventRecord failing: the job runs" 0
expect_true "cuEventRecord failing: said once" test "$(grep -c 'interposer timing off: cuEventRecord failed' "$ERR")" = 1
issued "$OUT" >"$TMP/cf.issued"
expect_true "cuEventRecord failing: every op still counted" same "$TMP/cf.issued" <(stats "$d")

# Log lines (NCCLWATCH_LOG_S) come from the interposer too, and say so.
d=$TMP/log; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCLWATCH_LOG_S=1 NCCLWATCH_LOG=stderr FAKE_NCCL_VERSION=22105 run ipo "$JOB" \
	--nccl-lib "$FAKE/libnccl.so.2" --iters 130 --pace-us 10000
expect_err "log line: written by the interposer, says so" \
	"^NCCLWATCH v=1 t=[0-9.]+ comm=[0-9a-f]{16} rank=0 nranks=2 interval_s=[0-9.]+ ops=[1-9][0-9]* .* via=interposer$"
