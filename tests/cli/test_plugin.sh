#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The profiler plugin, driven through its real ABI by tests/helpers/plugin_harness
# (several rank processes, NCCL's v1 to v6 descriptor layouts, a late rank),
# with the stats files read back through the statsfile reader.
source "$(dirname "$0")/lib.sh"
H=$NW_TESTS/plugin_harness

# Only the six profiler tables are exported (NCCL 2.23 to 2.30 each find theirs), and nothing but libc/libpthread/libm is needed.
syms=$(nm -D --defined-only "$NW_PLUGIN" | awk '{print $3}' | sort | tr '\n' ' ')
if [ "$syms" = "ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 " ]; then
	ok "plugin exports only ncclProfiler_v1 to _v6"
else RC=1; notok "plugin exports only ncclProfiler_v1 to _v6" "exports: $syms"; fi
if readelf -d "$NW_PLUGIN" | grep NEEDED | grep -Eqv 'lib(c|pthread|m|dl)\.so|ld-linux|libasan|libubsan|libstdc|libgcc'; then
	notok "plugin links nothing but libc" "$(readelf -d "$NW_PLUGIN" | grep NEEDED)"
else ok "plugin links nothing but libc"; fi

# Every interface NCCL 2.23 to 2.30 loads: v1 and v2 have no kernel events (the late rank is
# found from enqueue times: a larger lateness, as with NCCLWATCH_KERNEL=off), v1 to v3 name
# the communicator in each op, v3's kernel events carry no GPU timestamps.
for abi in 1 2 3 4 5 6; do
	d=$TMP/abi$abi; mkdir -p "$d"
	late=1500; [ $abi -le 2 ] && late=8000
	run "$H" --plugin "$NW_PLUGIN" --dir "$d" --abi $abi --ranks 4 --late 2 --late-us $late --ops 15 --check
	expect_rc "abi v$abi: 4 ranks, counts and bytes match what was fed" 0
	expect_out "abi v$abi: check ok" "^check ok scenario=normal abi=$abi ranks=4 files=8"
	expect_out "abi v$abi: late rank 2 found as the straggler" "^straggler comm=5eed000000c0ffee rank=2 "
	expect_no_out "abi v$abi: no failed check" "check FAIL"
	if [ $abi = 6 ]; then
		# NCCL 2.29+ runs some collectives on copy engines: CeColl events, no kernel events
		expect_out "abi v6: copy-engine collectives (CeColl) are counted" \
			"^fed comm=5eed000000c0ffee name=world rank=1 nranks=4 op=gather count=15 bytes=491520$"
		expect_true "abi v6: copy-engine ops are in the stats, launch-timed only" grep -Eq \
			"^rec comm=5eed000000c0ffee rank=1 op=gather bucket=[0-9]+ count=15 bytes=491520 kernel=0 proxy=0 cpu=15 " \
			<("$NW_TESTS/nwstats_dump" "$d")
	else
		expect_no_out "abi v$abi: no copy-engine collectives before v6" "op=gather"
	fi
	case $abi in
	1 | 2) expect_true "abi v$abi: the file says no kernel times, size learned" grep -Eq \
		"^rank .* name=world rank=1 nranks=4 abi=$abi .* blind=kernel_times,comm_size,node_count,graph_captures,idle_comms " \
		<("$NW_TESTS/nwstats_dump" "$d") ;;
	3) expect_true "abi v3: the file says kernel times from the proxy, size unknown, split bytes per rank" grep -Eq \
		"^rank .* name=world rank=1 nranks=0 abi=3 .* blind=gpu_timestamps,comm_size,split_bytes,node_count,graph_captures,idle_comms " \
		<("$NW_TESTS/nwstats_dump" "$d")
		expect_true "abi v3: all_gather bytes are one rank's part" grep -Eq \
		"^rec comm=5eed000000c0ffee rank=1 op=all_gather bucket=[0-9]+ count=15 bytes=61440 kernel=15 " \
		<("$NW_TESTS/nwstats_dump" "$d") ;;
	esac
done
expect_out "harness prints what it fed, per comm/rank/op" \
	"^fed comm=5eed000000c0ffee name=world rank=3 nranks=4 op=all_gather count=15 bytes=245760$"
# What top, the exporter and hang say of files from interfaces that give less.
run "$NW" top --once --dir "$TMP/abi3"
expect_out "top: says what profiler v3 cannot see" \
	"^note: profiler v3 \(NCCL 2.26\), 8 files, cannot see: kernel times are when NCCL's proxy thread saw each channel"
expect_out "top: kernel-timed, but no busbw where the size is unknown (-, not 0)" \
	"^5eed000000c0ffee world +finished +[0-3]\*? all_reduce +[^ ]+ +45 +[0-9]+ +[0-9.]+ MiB +[0-9.]+ +- +[0-9.]+[mun]?s .* kernel "
run "$NW" top --once --dir "$TMP/abi2"
expect_out "top: says what profiler v2 cannot see" "^note: profiler v2 \(NCCL 2.24-2.25\), 8 files, cannot see: no kernel execution times"
run "$NW" exporter --once --dir "$TMP/abi3"
expect_out "exporter: rank_info names what the interface cannot give" \
	'^ncclwatch_rank_info\{.*profiler_abi="3".*cannot_see="gpu_timestamps,comm_size,split_bytes,node_count,graph_captures,idle_comms"\} 1$'
expect_no_out "exporter: no all_reduce busbw without the size" '^ncclwatch_coll_busbw_bytes_per_second\{.*op="all_reduce"'
expect_out "exporter: broadcast busbw needs no size" '^ncclwatch_coll_busbw_bytes_per_second\{.*op="broadcast"'
run "$NW" exporter --once --dir "$TMP/abi5"
expect_out "exporter: nothing missing with profiler v5" '^ncclwatch_rank_info\{.*profiler_abi="5".*cannot_see=""\} 1$'
run "$NW" hang --dir "$TMP/abi3"
expect_out "hang: a communicator of unknown size says so" '^comm 5eed000000c0ffee "world", size unknown: '
expect_out "hang: says what profiler v3 cannot see" "^note: profiler v3 \(NCCL 2.26\), 8 files, cannot see: "

# NCCL 2.23 to 2.26 give no logger: the plugin's lines go to stderr (INFO only with NCCL_DEBUG=INFO).
d=$TMP/v2info; mkdir -p "$d"
NCCL_DEBUG=INFO run "$H" --plugin "$NW_PLUGIN" --dir "$d" --abi 2 --ranks 1 --ops 2 --check
expect_rc "abi v2: runs with NCCL_DEBUG=INFO" 0
expect_err "abi v2: says on stderr what this interface cannot give" \
	"ncclwatch INFO ncclwatch: NCCL loaded profiler interface v2 \(NCCL 2.24-2.25\), which cannot give: no kernel execution times"
expect_err "abi v2: names the communicator once its first op did" \
	"ncclwatch INFO ncclwatch: profiler v2 watching comm 5eed000000c0ffee rank 0/\?, stats in "

# Files are 0600 in a 0700 directory when the plugin makes the directory.
d=$TMP/fresh/stats
mkdir -p "$TMP/fresh"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 3 --check
expect_rc "plugin creates its stats directory" 0
expect_true "stats directory is mode 700" test "$(stat -c %a "$d")" = 700
expect_true "stats files are mode 600" test "$(stat -c %a "$(ls "$d"/*.nws | head -1)")" = 600

# Kernel timestamps off and auto: counts stay exact whatever the time source.
for k in off auto; do
	d=$TMP/k$k; mkdir -p "$d"
	run "$H" --plugin "$NW_PLUGIN" --dir "$d" --kernel $k --ranks 2 --late 1 --late-us 8000 --ops 10 --check
	expect_rc "NCCLWATCH_KERNEL=$k: counts and bytes still exact" 0
	expect_out "NCCLWATCH_KERNEL=$k: late rank found from enqueue times" "^straggler comm=[0-9a-f]+ rank=1 "
done

d=$TMP/pool; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario pool --ops 500 --check
expect_rc "full in-flight pool: drops counted, every op accounted or dropped" 0
expect_out "full in-flight pool: plugin stays enabled" "^pool ops_total=64 ops_dropped=436 state=finished"
expect_no_crash "full in-flight pool: no crash"

d=$TMP/slow; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario slow --check
expect_rc "an op 50x slower than its peers is flagged and dumps a trace" 0
expect_out "slow-op dump is a Chrome trace with the slow op marked" "^dump trace\..*\.json events=41 slow=1"

d=$TMP/trigger; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario trigger --check
expect_rc "touching \$NCCLWATCH_DIR/dump writes a trace" 0

for s in null-descr bad-type null-handle bad-handle misaligned-handle bad-context; do
	for abi in 1 2 3 4 5; do
		d=$TMP/$s$abi; mkdir -p "$d"
		run "$H" --plugin "$NW_PLUGIN" --dir "$d" --abi $abi --scenario $s --check
		expect_rc "bad input ($s, v$abi): disabled with one log line, file says why" 0
		expect_no_crash "bad input ($s, v$abi): no crash"
	done
done
expect_out "the one log line names the problem" "^logged: ncclwatch profiler disabled: startEvent called with a context"

# A stats directory owned by someone else, or a bad NCCLWATCH_* value: disabled, never a crash.
d=$TMP/conf; mkdir -p "$d"
NCCLWATCH_POOL=1000 run "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 1 --ops 2
expect_no_crash "bad NCCLWATCH_POOL: no crash"
expect_err "bad NCCLWATCH_POOL: one line naming the variable" "disabled: NCCLWATCH_POOL=1000 is not a power of two"
# a non-root rank given a stats directory root made (as kubelet makes a hostPath): it says so on
# stderr itself, once per process, not only through NCCL's logger (shown with NCCL_DEBUG alone)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	d=$TMP/rootsdir; mkdir -p "$d"; chmod 755 "$d"; chmod 755 "$TMP"
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 2
	expect_no_crash "a directory of another user: no crash"
	expect_true "... one line per process on stderr of its own, naming the directory" \
		test "$(grep -c "^ncclwatch profiler disabled: stats directory '$d' belongs to another user" "$ERR")" = 2
else
	skip_root "a directory of another user" "needs root and setpriv (util-linux) to run a rank as another user"
fi

run "$H" --plugin "$NW_PLUGIN" --dir "$TMP/none" --scenario nosuch
expect_rc "harness rejects an unknown scenario" 2

# nwstats_dump (the raw reader used by scripts/gpu/plugin-overhead.sh) sees exactly what was fed,
# and reports files it cannot use instead of failing on them.
d=$TMP/dumpcheck; mkdir -p "$d"
"$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --late 0 --late-us 1000 --ops 4 >/dev/null
echo junk >"$d/junk.nws"
run "$NW_TESTS/nwstats_dump" "$d"
expect_rc "nwstats_dump reads a directory with a bad file in it" 0
expect_out "nwstats_dump: per-bucket counts and bytes as fed" \
	"^rec comm=5eed000000c0ffee rank=1 op=all_reduce bucket=262144 count=4 bytes=1048576 kernel=4 "
expect_out "nwstats_dump: rank line" "^rank file=.* state=finished .* comm=5eed000000c0ffee name=world rank=0 nranks=2 abi=5 ops=36 dropped=0 bad=0"
expect_out "nwstats_dump: straggler" "^straggler comm=5eed000000c0ffee rank=0 "
expect_out "nwstats_dump: bad file reported, not fatal" "^bad file=.*/junk.nws why=too small"
run "$NW_TESTS/nwstats_dump" "$TMP/does-not-exist"
expect_rc "nwstats_dump: missing directory is an error" 1
expect_err "nwstats_dump: missing directory explained" "no stats directory '.*does-not-exist': is a job running"

# While the job runs, the files are live and already hold what was fed.
d=$TMP/live; mkdir -p "$d"
"$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 3 --hold-ms 3000 >"$TMP/live.out" 2>&1 &
hp=$!
# the harness holds the files live for 3 s after feeding; look as soon as
# every rank has published (bounded, for a loaded machine)
for _ in $(seq 28); do
	sleep 0.1
	[ "$("$NW_TESTS/nwstats_dump" "$d" 2>/dev/null | grep -c '^rank .* state=live .* name=world .* ops=27 ')" = 2 ] && break
done
run "$NW_TESTS/nwstats_dump" "$d"
expect_out "running job: files are live" "^rank file=.* state=live .* name=world rank=1 nranks=2 .* ops=27 dropped=0"
expect_out "running job: counts already published" "^rec comm=5eed000000c0ffee rank=0 op=alltoall bucket=2048 count=3 bytes=6144 "
wait $hp
run "$NW_TESTS/nwstats_dump" "$d"
expect_out "after finalize: finished" "^rank file=.* state=finished .* name=world rank=1 "

# Hot-path cost on this CPU (a figure, not a timing assertion): every op fed is accounted or counted as dropped.
d=$TMP/hot; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario hotpath --kernel off --ops 20000 --check
expect_rc "hot path: every op accounted or counted as dropped" 0
expect_out "hot path: prints ns per op" "^hotpath abi=5 ops=20000 plugin_ns_per_op=[0-9.]+ null_ns_per_op=[0-9.]+ added_ns_per_op="
grep '^hotpath abi' "$OUT" | sed 's/^/# /'

# NCCL's threads at once (launching, proxy, init/finalize): counts exact. Under
# ThreadSanitizer this is what `make TSAN=1 tsan` runs (scripts/tsan-plugin).
d=$TMP/threads; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario threads --kernel auto --ops 200 --check
expect_rc "launching, proxy and init threads at once: counts exact" 0
expect_out "threads: check ok" "^check ok scenario=threads"
