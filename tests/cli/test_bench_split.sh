#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nccl-tests 2.19's alltoallv and hypercube, and NCCL_TESTS_SPLIT /
# NCCL_TESTS_SPLIT_MASK, on the MPI host backend with 4 ranks (for real, on
# CPUs, every element verified) and on the fake NCCL.
# No reference output exists for these in reference/h200x1-formats/: the
# shapes checked here come from nccl-tests' source (src/alltoallv.cu,
# src/hypercube.cu, src/common.cu, src/util.cu of 2.19.6): the same 13-field
# rows; alltoallv's size is the bytes one rank sends (per-peer shares by
# distance, each rounded down to 16 B), busbw = algbw x (n-1)/n, in place
# not verified (N/A); hypercube's size is the whole gathered buffer, algbw =
# size x (n-1)/n / time, busbw = algbw; under a split, one
# "#  Rank R Group G Pid P on HOST device D" line per rank and busbw per group.
. "$(dirname "$0")/lib.sh"
export NCCLWATCH_CUDA_LIB=/nonexistent/libcuda.so.1
unset NCCL_TESTS_SPLIT NCCL_TESTS_SPLIT_MASK

# check_table FILE N (lib.sh): the rows' shape, zero wrong (N/A for alltoallv in place), nccl-tests' formulas.

mpi() { ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np "$1" "$NW" bench --backend mpi --no-history "${@:2}"; }

run mpi 4 --op alltoallv,hypercube -b 1K -e 256K -f 4 -n 3 -w 1 -c 1
expect_rc "mpi np=4 alltoallv, hypercube: exit 0" 0
expect_out "alltoallv section" "^# Collective test starting: alltoallv_perf"
expect_out "hypercube section" "^# Collective test starting: hypercube_perf"
# 1 KiB of float over 4 ranks: 64 per peer; shares 0, 160, 336, 512 B by distance: 1008 B sent
expect_out "alltoallv: nccl-tests' size and count" "^ +1008 +64 +float +none +-1 "
expect_out "hypercube: whole buffer, count per rank" "^ +1024 +64 +float +none +-1 "
cp "$OUT" "$TMP/v4.txt"
expect_true "np=4: zero wrong, nccl-tests' algbw and busbw" check_table "$TMP/v4.txt" 4

run mpi 3 --op hypercube -b 1K -e 1K
expect_rc "hypercube on 3 ranks: refused (exit 2)" 2
expect_err "hypercube on 3 ranks: says why" "power-of-two number of ranks"

# Every form of the split gives 2 groups of 2 (ranks 0..3).
for form in "AND 0x1:0101" "&0x1:0101" "and 1:0101" "MOD 2:0101" "%2:0101" "DIV 2:0011" "/2:0011" "OR 0b10:2323" \
	"|2:2323" "mask 1:0101" "mask 0x2:0022"; do
	v=${form%:*} want=${form##*:}
	if [ "${v%% *}" = mask ]; then
		run env NCCL_TESTS_SPLIT_MASK="${v#mask }" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 4 "$NW" bench --backend mpi \
			--no-history --op all_reduce,alltoallv,hypercube -b 1K -e 16K -f 4 -n 2 -w 1
	else
		run env NCCL_TESTS_SPLIT="$v" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 4 "$NW" bench --backend mpi --no-history \
			--op all_reduce,alltoallv,hypercube -b 1K -e 16K -f 4 -n 2 -w 1
	fi
	expect_rc "split '$v': exit 0" 0
	got=$(grep -E '^#  Rank +[0-3] Group' "$OUT" | head -4 | awk '{print $5}' | tr -d '\n')
	expect_true "split '$v': groups $want in the Group column" test "$got" = "$want"
	expect_true "split '$v': every rank of the job listed in each of the 3 sections, as nccl-tests lists them" \
		test "$(grep -cE '^#  Rank +[0-3] Group +[0-3] Pid .* device -1 \[-\] host ' "$OUT")" = 12
	cp "$OUT" "$TMP/s.txt"
	expect_true "split '$v': verified, busbw per group of 2" check_table "$TMP/s.txt" 2
done

# -J keeps each rank's group, as nccl-tests' devices list does
run env NCCL_TESTS_SPLIT="DIV 2" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 4 "$NW" bench --backend mpi --no-history \
	-b 1K -e 1K -n 2 -w 1 -J "$TMP/nt.json"
expect_rc "split with -J: exit 0" 0
expect_true "split with -J: devices[].group 0 0 1 1" python3 -c "import json, sys
d = json.load(open('$TMP/nt.json'))
sys.exit([x['group'] for x in d['config']['devices']] != [0, 0, 1, 1])"

for bad in "XOR 1" "MOD 0" "DIV" "AND 1x" "2"; do
	run env NCCL_TESTS_SPLIT="$bad" "$NW" bench --backend mpi --no-history
	expect_rc "NCCL_TESTS_SPLIT='$bad': exit 2" 2
	expect_err "NCCL_TESTS_SPLIT='$bad': names the variable" "NCCL_TESTS_SPLIT='$bad'"
done
run env NCCL_TESTS_SPLIT="XOR 1" "$NW" bench --no-history
expect_err "NCCL_TESTS_SPLIT: lists the accepted forms" "AND N, OR N, MOD N or DIV N"
run env NCCL_TESTS_SPLIT_MASK=0xg "$NW" bench --no-history
expect_rc "NCCL_TESTS_SPLIT_MASK=0xg: exit 2" 2
expect_err "NCCL_TESTS_SPLIT_MASK=0xg: named" "NCCL_TESTS_SPLIT_MASK='0xg' is not a hex mask"

run "$NW" help bench
expect_out "help bench lists alltoallv and hypercube" "alltoallv.*hypercube|hypercube.*alltoallv"
expect_out "help bench lists NCCL_TESTS_SPLIT" "NCCL_TESTS_SPLIT"

# The NCCL backend on the fake NCCL: grouped send/recv for both ops,
# ncclCommSplit for the split (in one process, and across processes).
FAKE=$NW_TESTS/fakegpu
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=4
unset FAKE_NCCL_CORRUPT FAKE_NCCL_FAIL FAKE_NCCL_VERSION
fb() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "$@"; }
run fb -g 4 --op alltoallv,hypercube -b 1K -e 64K -f 8 -n 2 -w 1
expect_rc "fake NCCL -g 4 alltoallv, hypercube: exit 0" 0
expect_out "fake NCCL alltoallv: nccl-tests' size and count" "^ +1008 +64 +float +none +-1 "
cp "$OUT" "$TMP/f4.txt"
expect_true "fake NCCL -g 4: zero wrong, nccl-tests' algbw and busbw" check_table "$TMP/f4.txt" 4
run env FAKE_NCCL_CORRUPT=2 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 4 --op alltoallv,hypercube \
	-b 1K -e 1K -n 2 -w 1
expect_rc "fake NCCL, a corrupted element: exit 1" 1
expect_out "fake NCCL alltoallv: the planted wrong values counted" "^ +1008 +64 +float +none +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9]"
expect_out "fake NCCL hypercube: the planted wrong values counted" "^ +1024 +64 +float +none +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9]"
run env NCCL_TESTS_SPLIT="MOD 2" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --no-history \
	--nccl-lib "$FAKE/libnccl.so.2" -g 2 --op all_reduce,alltoallv,hypercube -b 1K -e 8K -f 8 -n 2 -w 1
expect_rc "fake NCCL split, 2 processes x 2 GPUs: exit 0" 0
got=$(grep -E '^#  Rank +[0-3] Group' "$OUT" | head -4 | awk '{print $5}' | tr -d '\n')
expect_true "fake NCCL split: a process's GPUs share its group (0011)" test "$got" = "0011"
cp "$OUT" "$TMP/fs.txt"
expect_true "fake NCCL split: verified, busbw per group of 2" check_table "$TMP/fs.txt" 2
run env NCCL_TESTS_SPLIT="DIV 2" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 4 "$NW" bench --no-history \
	--nccl-lib "$FAKE/libnccl.so.2" --op all_reduce,alltoallv,hypercube -b 1K -e 8K -f 8 -n 2 -w 1
expect_rc "fake NCCL split, 4 processes: exit 0" 0
cp "$OUT" "$TMP/fs4.txt"
expect_true "fake NCCL split across processes: verified, groups of 2" check_table "$TMP/fs4.txt" 2
run env NCCL_TESTS_SPLIT="MOD 2" FAKE_NCCL_FAIL=ncclCommSplit ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench \
	--no-history --nccl-lib "$FAKE/libnccl.so.2" -g 1 -b 1K -e 1K
expect_true "fake NCCL: a failing ncclCommSplit ends the run (non-zero exit)" test "$RC" -ne 0
expect_err "fake NCCL: the failing split is named" "ncclCommSplit \(NCCL_TESTS_SPLIT\)"
