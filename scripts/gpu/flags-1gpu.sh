#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a one-GPU machine, with the machine's own (PyTorch's) NCCL: bench's
# nccl-tests flags -R 1|2, -M 1, -N 2 -S 1, -u, -p 1, -z 3, -C 1 on the GPU,
# and alltoallv, hypercube and NCCL_TESTS_SPLIT on two ranks made two
# "nodes" on the one GPU with NCCL_HOSTID (time-sliced over a socket: the
# paths and the verified data, never a speed). Prints a table last.
#   P=DIR OUT=DIR scripts/gpu/flags-1gpu.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
mkdir -p "$OUT"
NW=$PWD/$P/ncclwatch
export NCCL_NVLS_ENABLE=0
T=$OUT/flags-table.txt
: >"$T"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$T"; }
L=$OUT/flags-logs
mkdir -p "$L"

# one: NAME FLAGS...: one GPU; the exit status, the wrong-element total, and the footer
one() {
	local name=$1; shift
	timeout 120 "$NW" bench --no-history "$@" >"$L/$name.txt" 2>&1
	local rc=$?
	row "$name: $*" "exit $rc; $(grep -h 'Out of bounds' "$L/$name.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
}
one R1 -b 1M -e 64M -f 4 -R 1
grep -m2 -i 'regist' "$L/R1.txt" | tee -a "$T"
one R2 -b 1M -e 64M -f 4 -R 2
grep -m2 -i 'regist\|symmetric\|window' "$L/R2.txt" | tee -a "$T"
one M -b 1M -e 16M -f 4 -M 1
grep -m1 'GPU memory usage' "$L/M.txt" | tee -a "$T"
one NS -b 1K -e 4K -f 2 -N 2 -S 1
row "NS: table rows (2 cycles x 3 sizes = 6)" "$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$L/NS.txt")"
one u3 -b 1K -e 1M -f 8 -u 3 --op all
one p1 -b 1M -e 4M -f 4 -p 1
one z3 -b 1M -e 4M -f 4 -z 3
one C1 -b 1K -e 64K -f 8 -C 1 --op sendrecv
grep -m1 'cputime' "$L/C1.txt" | tee -a "$T"

# two: NAME ENV... -- FLAGS...: two ranks on the one GPU, rank 0's output kept
two() {
	local name=$1 port=$((20000 + RANDOM % 9000)) r envs=()
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			NCCL_HOSTID=node$r "${envs[@]}" timeout 180 "$NW" bench --no-history "$@" >"$L/$name.$r.txt" 2>&1 &
	done
	wait
	row "$name (2 ranks): $*" "$(grep -h 'Out of bounds' "$L/$name.0.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
}
two a2av -- --op alltoallv -b 1K -e 4M -f 8
two hcube -- --op hypercube -b 1K -e 4M -f 8
two split NCCL_TESTS_SPLIT="MOD 2" -- -b 1K -e 1M -f 8
grep -m2 'Group' "$L/split.0.txt" | tee -a "$T"
tar -C "$OUT" -czf "$OUT/flags-logs.tgz" flags-logs && rm -rf "$L"
