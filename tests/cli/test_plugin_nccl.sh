#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin loaded by the fake NCCL as each NCCL version from 2.18 to 2.30
# loads a profiler plugin (tests/fakegpu/fake_nccl_prof.c): no plugin
# before 2.23, then the newest interface that version knows (v1 to v6),
# NCCL_PROFILER_PLUGIN taken as a path, or (2.26 on) as a name turned into
# libnccl-profiler-<name>.so; `bench` on the fakes runs real collectives
# and the stats files must hold them, written by the expected interface.
. "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=2 NCCLWATCH_KERNEL=on
unset NCCLWATCH_NCCL_LIB FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG FAKE_NCCL_ASYNC_ERROR FAKE_NCCL_VERSION
bench() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 --op all_reduce,all_gather -b 1K -e 4K -n 5 -w 1 -c 0; }

# The collectives each rank runs: per op, one warm-up launch of each of the 3 sizes, then per size and
# placement a synchronising launch and -n 5, and as many twice more for the size's noise (docs/bench.md).
OPS=$((2 * (3 + 3 * 2 * 3 * (1 + 5))))
# version code, the interface it loads (0: none), what the file then says about the size and kernel times
for row in "21803 0" "22203 0" "22304 1 2 0" "22503 2 2 0" "22603 3 0 $OPS" "22703 4 2 $OPS" "22809 5 2 $OPS" \
	"22907 6 2 $OPS" "23007 6 2 $OPS"; do
	set -- $row
	v=$1 abi=$2 nr=${3:-} k=${4:-}
	d=$TMP/v$v; mkdir -p "$d"
	NCCLWATCH_DIR=$d NCCL_PROFILER_PLUGIN=$NW_PLUGIN FAKE_NCCL_VERSION=$v run bench
	expect_rc "NCCL $v: bench runs with the plugin named" 0
	if [ "$abi" = 0 ]; then
		expect_true "NCCL $v: no profiler plugins before 2.23" test -z "$(ls "$d")"
		continue
	fi
	run "$NW_TESTS/nwstats_dump" "$d"
	expect_out "NCCL $v: loads profiler v$abi, every op of both ranks recorded" \
		"^rank .* rank=1 nranks=$nr abi=$abi ops=$OPS dropped=0 bad=0 late=0 kernel_ops=$k "
	expect_true "NCCL $v: two files, one per rank" test "$(grep -c '^rank ' "$OUT")" = 2
done

# the name alone: 2.26 on look for libnccl-profiler-<name>.so on the loader's path, 2.23 to 2.25 do not
mkdir -p "$TMP/lib"
ln -s "$NW_PLUGIN" "$TMP/lib/libnccl-profiler-ncclwatch.so"
for v in 22503 22603; do
	d=$TMP/name$v; mkdir -p "$d"
	NCCLWATCH_DIR=$d NCCL_PROFILER_PLUGIN=ncclwatch LD_LIBRARY_PATH=$TMP/lib FAKE_NCCL_VERSION=$v run bench
	expect_rc "NCCL $v: bench runs with NCCL_PROFILER_PLUGIN=ncclwatch" 0
done
expect_true "NCCL 2.25: the name alone finds no plugin" test -z "$(ls "$TMP/name22503")"
expect_true "NCCL 2.26: the name alone finds libnccl-profiler-ncclwatch.so" test -n "$(ls "$TMP/name22603")"

# NCCL's own log line and the plugin's, as a user sees them with NCCL_DEBUG=INFO
d=$TMP/info; mkdir -p "$d"
NCCLWATCH_DIR=$d NCCL_DEBUG=INFO NCCL_PROFILER_PLUGIN=$NW_PLUGIN FAKE_NCCL_VERSION=22809 run bench
expect_err "NCCL 2.28: says it loaded the plugin's v5 table" "NCCL INFO PROFILER/Plugin: Loaded ncclwatch \(v5\)"
expect_err "the plugin names each communicator through NCCL's logger" "NCCL INFO ncclwatch: profiler v5 watching comm [0-9a-f]{16} rank [01]/2"
