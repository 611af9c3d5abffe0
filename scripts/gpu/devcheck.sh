#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a GPU machine: bench's checks on the GPU (src/gpu/verify.ptx) for
# real. The kernels compile and count exactly what the host check counts
# (every op, type, reduction and root, with planted wrong elements), and
# the six-op sweep's time, checked and unchecked, next to nccl-tests
# 2.19.6 built here against the same NCCL, in interleaved rounds.
#
#   NW=build-portable/ncclwatch OUT=/tmp/dc scripts/gpu/devcheck.sh [ROUNDS]
#
# nccl-tests' sources are expected in .nccl-tests/src (this repository
# does not carry them; the tag is v2.19.6); they are built into
# .nccl-tests/build with the nvcc and the NCCL found here (PyTorch's).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
NW=${NW:-$ROOT/build/ncclwatch}
ROUNDS=${1:-2}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
T=$OUT/devcheck-table.txt
: >"$T"
row() { printf '%-46s %s\n' "$1" "$2" | tee -a "$T"; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }

NCCL_LIB=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
NCCL_HOME=$(dirname "$(dirname "$NCCL_LIB")")
row "NCCL (PyTorch's)" "$NCCL_LIB"
"$NW" version --nccl-lib "$NCCL_LIB" >"$OUT/version.txt" 2>&1
row "ncclwatch version" "$(grep -m1 '^NCCL' "$OUT/version.txt")"

NT=$ROOT/.nccl-tests/build
if [ ! -x "$NT/all_reduce_perf" ] && [ -d "$ROOT/.nccl-tests/src" ]; then
	s=$(date +%s.%N)
	make -C "$ROOT/.nccl-tests/src" -j"$(nproc)" BUILDDIR="$NT" CUDA_HOME=/usr/local/cuda NCCL_HOME="$NCCL_HOME" MPI=0 \
		NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/nt-build.log" 2>&1
	rc=$?
	row "nccl-tests build (rc, s)" "rc=$rc $(secs "$s")"
fi
export LD_LIBRARY_PATH=$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# 1. every op, type, reduction and root verified on the GPU: zero wrong
"$NW" bench --no-history --op all -d all -o all -r all -b 1K -e 4M -f 64 -n 2 -w 1 -c 1 >"$OUT/all-types.txt" 2>&1
rc=$?
row "bench --op all -d all -o all -r all -c 1 (rc)" "rc=$rc $(head -1 "$OUT/all-types.txt" | grep -o 'checks [a-z]*') rows=$(grep -c '^ \+[0-9]' "$OUT/all-types.txt") failed=$(grep 'Out of bounds' "$OUT/all-types.txt" | grep -vc ': 0 OK')"

# 2. planted wrong elements: the same counts from the GPU and the host checks
A=(--no-history --op all -d all -o all -r all -b 64 -e 1M -f 16 -n 1 -w 0 -c 1 --csv)
NCCLWATCH_TEST_CORRUPT=0,5,13,100,1000,40000 "$NW" bench "${A[@]}" >"$OUT/corrupt-gpu.csv" 2>"$OUT/corrupt-gpu.err"
NCCLWATCH_CHECKS=host NCCLWATCH_TEST_CORRUPT=0,5,13,100,1000,40000 "$NW" bench "${A[@]}" >"$OUT/corrupt-host.csv" 2>"$OUT/corrupt-host.err"
row "planted corruption, GPU vs host counts" "$(python3 - "$OUT/corrupt-gpu.csv" "$OUT/corrupt-host.csv" <<'PY'
import csv, sys
a = list(csv.DictReader(open(sys.argv[1]))); b = list(csv.DictReader(open(sys.argv[2])))
k = lambda r: (r["op"], r["dtype"], r["redop"], r["root"], r["size_bytes"], r["inplace"])
same = len(a) == len(b) and [k(r) for r in a] == [k(r) for r in b]
diff = sum(1 for x, y in zip(a, b) if x["wrong"] != y["wrong"])
nz = sum(1 for x in a if x["wrong"] not in ("0", ""))
print("rows %d/%d, same keys %s, rows differing %d, rows with wrong>0 %d" % (len(a), len(b), same, diff, nz))
PY
)"

# 3. the six-op sweep, interleaved rounds: nccl-tests and ncclwatch, checked and not
OPS="all_reduce all_gather reduce_scatter broadcast alltoall sendrecv"
F=(-b 8 -e 4G -f 2 -n 20 -w 5 -g 1)
for r in $(seq 1 "$ROUNDS"); do
	for c in 1 0; do
		if [ -x "$NT/all_reduce_perf" ]; then
			s=$(date +%s.%N)
			for op in $OPS; do "$NT/${op}_perf" "${F[@]}" -c $c >"$OUT/nt-r$r-c$c-$op.txt" 2>&1; done
			row "round $r nccl-tests six ops -c $c (s)" "$(secs "$s")"
		fi
		s=$(date +%s.%N)
		"$NW" bench --no-history --op "$(echo $OPS | tr ' ' ,)" "${F[@]}" -c $c >"$OUT/nw-r$r-c$c.txt" 2>&1
		rc=$?
		row "round $r ncclwatch six ops -c $c (s)" "$(secs "$s") rc=$rc $(head -1 "$OUT/nw-r$r-c$c.txt" | grep -o 'checks [a-z]*')"
	done
	s=$(date +%s.%N)
	NCCLWATCH_CHECKS=host "$NW" bench --no-history --op "$(echo $OPS | tr ' ' ,)" "${F[@]}" -c 1 >"$OUT/nw-r$r-host.txt" 2>&1
	row "round $r ncclwatch six ops -c 1, host checks (s)" "$(secs "$s")"
done
for f in "$OUT"/nw-r1-c1.txt "$OUT"/nt-r1-c1-all_reduce.txt; do
	[ -f "$f" ] && row "$(basename "$f"): all_reduce 4G busbw" "$(awk '$1==4294967296 && $4=="sum"{print $8; exit}' "$f")"
done
echo "== table"; cat "$T"
