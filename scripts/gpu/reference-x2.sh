#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a machine with 2 or more GPUs: the figures the issues ask for on the
# 2xH200 reference machine, in one pass of about 6 minutes, a table last.
#
#   OUT=/some/dir scripts/gpu/reference-x2.sh
#
# 1. bench with the reference runs' flags, compared row by row with the
#    reference outputs (tests/fixtures/nccltests/nt_*.txt, nccl-tests 2.19.6
#    on 2xH200) by scripts/compare-nccl-tests; latency at 8 B plain and -G 20;
#    the six-op checked sweep's wall time.
# 2. one process per GPU through mpirun and torchrun --no-python at 1 GiB,
#    against the single-process run; --pairs through mpirun.
# 3. topo, and check healthy / NCCL_P2P_DISABLE=1 / both variables.
# 4. the plugin: overhead (scripts/gpu/plugin-overhead.sh) and a live
#    PyTorch job (scripts/gpu/top-exporter-live.sh).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -d .gpu-libs ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$ROOT/.gpu-libs
NW=$ROOT/build/ncclwatch
REF=$ROOT/tests/fixtures/nccltests
G=$(nvidia-smi -L | grep -c '^GPU')
T=$OUT/table.txt
: >"$T"
row() { printf '%-44s %s\n' "$1" "$2" >>"$T"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
B="$NW bench --no-history -g $G"

# 1. the reference runs' flags
timeout 60 $B -b 8 -e 8G -f 2 -n 20 -w 5 -c 0 >"$OUT/nw_all_reduce.txt" 2>&1
for op in all_gather reduce_scatter broadcast alltoall sendrecv; do
	timeout 40 $B --op $op -b 1K -e 4G -f 4 -n 20 -w 5 -c 0 >"$OUT/nw_$op.txt" 2>&1
done
args=""
for op in all_reduce all_gather reduce_scatter broadcast alltoall sendrecv; do
	args="$args $REF/nt_$op.txt $OUT/nw_$op.txt"
done
python3 scripts/compare-nccl-tests $args >"$OUT/parity-reference.txt" 2>&1
for op in all_reduce all_gather reduce_scatter broadcast alltoall sendrecv; do
	for sz in 67108864 1073741824 4294967296; do
		awk -v op=$op -v sz=$sz '$1==op && $2==sz {printf "%-14s %-11s nt %7.2f ours %7.2f GB/s algbw ratio %s\n", op, sz, $6, $7, $8}' "$OUT/parity-reference.txt" >>"$OUT/parity-headline.txt"
	done
done
timeout 30 $B -b 8 -e 64K -f 2 -n 200 -w 20 -c 0 >"$OUT/lat.txt" 2>&1
timeout 30 $B -b 8 -e 64K -f 2 -n 20 -w 5 -c 0 -G 20 >"$OUT/lat_graph.txt" 2>&1
row "all_reduce 8 B (us) plain / -G 20" "$(awk '$1==8{print $6}' "$OUT/lat.txt") / $(awk '$1==8{print $6}' "$OUT/lat_graph.txt") (reference about 11.5 / 6.0)"
s=$(now)
timeout 120 $B --op all_reduce,all_gather,reduce_scatter,broadcast,alltoall,sendrecv -b 8 -e 4G -f 2 -n 20 -w 5 -c 1 >"$OUT/sweep6_checked.txt" 2>&1
row "6-op sweep 8B-4G -c 1 (s, rc)" "$(since "$s") rc=$? (nccl-tests: 26.8)"
s=$(now)
timeout 120 $B --op all_reduce,all_gather,reduce_scatter,broadcast,alltoall,sendrecv -b 8 -e 4G -f 2 -n 20 -w 5 -c 0 >"$OUT/sweep6.txt" 2>&1
row "6-op sweep 8B-4G -c 0 (s)" "$(since "$s") (nccl-tests: 16.0)"
row "wrong elements in the checked sweep" "$(grep -c FAILED "$OUT/sweep6_checked.txt") failed sections"

# 2. one process per GPU
one="--op all_reduce,all_gather,sendrecv -b 1G -e 1G -n 20 -w 5 -c 0 --no-history"
timeout 60 $NW bench -g "$G" $one >"$OUT/single_1g.txt" 2>&1
timeout 90 mpirun -np "$G" "$NW" bench $one >"$OUT/mpirun_1g.txt" 2>&1
row "mpirun -np $G (rc)" "$?"
timeout 90 torchrun --no-python --nproc-per-node="$G" "$NW" bench $one >"$OUT/torchrun_1g.txt" 2>&1
row "torchrun --nproc-per-node=$G (rc)" "$?"
for op in all_reduce all_gather sendrecv; do
	a=$(awk -v op=$op '/Collective test starting/ {cur=$NF} $1==1073741824 && cur==op"_perf" {print $8; exit}' "$OUT/single_1g.txt")
	m=$(awk -v op=$op '/Collective test starting/ {cur=$NF} $1==1073741824 && cur==op"_perf" {print $8; exit}' "$OUT/mpirun_1g.txt")
	t=$(awk -v op=$op '/Collective test starting/ {cur=$NF} $1==1073741824 && cur==op"_perf" {print $8; exit}' "$OUT/torchrun_1g.txt")
	row "$op 1G busbw single/mpirun/torchrun" "$a / $m / $t GB/s"
done
timeout 90 mpirun -np "$G" "$NW" bench --pairs -e 1G --no-history >"$OUT/pairs.txt" 2>&1
row "--pairs via mpirun (rc)" "$? $(grep 'median pair' "$OUT/pairs.txt")"

# 3. topo and check
timeout 30 $NW topo >"$OUT/topo.txt" 2>&1
row "topo: path GPU0-GPU1" "$(grep -Eo 'NV[0-9]+' "$OUT/topo.txt" | head -1), $(grep -Eo '[0-9.]+ GB/s' "$OUT/topo.txt" | head -1)"
for v in "" "NCCL_P2P_DISABLE=1" "NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1"; do
	s=$(now)
	env $v timeout 90 $NW check --no-history >"$OUT/check_${v// /_}.txt" 2>&1
	rc=$?
	row "check ${v:-healthy} (exit, s)" "$rc, $(since "$s") s: $(grep -m1 '^ncclwatch check: [A-Z]' "$OUT/check_${v// /_}.txt" | cut -c1-40)"
done

# 4. the plugin
REPEATS=3 NGPUS=$G OUT=$OUT/overhead timeout 150 bash scripts/gpu/plugin-overhead.sh >"$OUT/overhead.txt" 2>&1
NGPUS=$G DURATION=15 OUT=$OUT/live timeout 90 bash scripts/gpu/top-exporter-live.sh >"$OUT/live.txt" 2>&1
row "live PyTorch job vs exporter (rc)" "$?"

echo "== parity with the reference (algbw at 64M, 1G, 4G)"
cat "$OUT/parity-headline.txt"
tail -1 "$OUT/parity-reference.txt"
echo "== overhead"; grep -A7 "ncclwatch bench --op all_reduce" "$OUT/overhead/summary.txt" 2>/dev/null | head -8
echo "== live"; grep -A6 "^op " "$OUT/live/summary.txt" 2>/dev/null | head -7
echo "== table"; cat "$T"
