#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a GPU machine (two GPUs or more: -g 2; one: one rank), bench's last
# nccl-tests 2.19.6 flags for real, with the machine's own (PyTorch's) NCCL:
#   - -o mulsum: NCCL's pre-multiplied sum, every op with a reduction, every
#     type and root, checked (#wrong 0), with -G too, and in -o all;
#   - -y 1: every op on the NULL stream, checked, and its busbw next to the
#     default streams'; -y 1 with -G refused;
#   - -x 0|1|2: the CTA policy reaches NCCL (its INFO lines are grepped for
#     it) and what it does to all_reduce's busbw at 1 GiB;
#   - the header: nccl-tests' per-rank device lines, warmup iters: 1;
#   - when nccl-tests is built in .nccl-tests/build (scripts/gpu/devcheck.sh
#     builds it), the same flags through nccl-tests: its rows' sizes, #wrong
#     and busbw at 1 GiB next to ours.
# Prints a table last (also $OUT/nt-flags-table.txt).
#
#   NW=build-portable/ncclwatch OUT=/tmp/ntf scripts/gpu/nt-flags.sh
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
NW=${NW:-$ROOT/build/ncclwatch}
mkdir -p "$OUT"
[ -x "$NW" ] || { echo "build first: $NW not found" >&2; exit 2; }
T=$OUT/nt-flags-table.txt
: >"$T"
row() { printf '%-52s %s\n' "$1" "$2" | tee -a "$T"; }
NCCL_LIB=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
[ -n "$NCCL_LIB" ] && export NCCLWATCH_NCCL_LIB=$NCCL_LIB LD_LIBRARY_PATH=$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NG" -gt 2 ] && NG=2
[ "$NG" -lt 1 ] && { echo "no GPU visible (nvidia-smi -L)" >&2; exit 2; }
"$NW" version >"$OUT/version.txt" 2>&1
row "GPUs used (-g)" "$NG; $(grep -m1 '^NCCL' "$OUT/version.txt")"

# wrong FILE: rows, the #wrong total, the exit status's footer lines that are not 'OK'
wrong() { awk '!/^#/ && NF >= 13 { n++; w += ($9 == "N/A" ? 0 : $9) + ($13 == "N/A" ? 0 : $13) }
	END { printf "rows %d, #wrong total %d", n, w }' "$1"; printf ", footers not OK %s" "$(grep 'Out of bounds' "$1" | grep -vc ': 0 OK')"; }
# bus FILE SIZE REDOP: out-of-place busbw of the row of SIZE bytes (and REDOP)
bus() { awk -v s="$2" -v o="${3:-sum}" '!/^#/ && $1 == s && $4 == o { print $8; exit }' "$1"; }
nw() { local name=$1; shift; "$NW" bench --no-history -g "$NG" "$@" >"$OUT/$name.txt" 2>&1; echo $?; }

# 1. mulsum
rc=$(nw mulsum --op all_reduce,reduce_scatter,reduce -d all -o mulsum -r all -b 1K -e 64M -f 16 -c 1)
row "-o mulsum, 3 ops, -d all -r all, -c 1 (rc)" "rc=$rc $(wrong "$OUT/mulsum.txt")"
rc=$(nw mulsum-G --op all_reduce -d float,half,int32 -o mulsum -b 1K -e 64M -f 16 -G 2 -c 1)
row "-o mulsum -G 2 (rc)" "rc=$rc $(wrong "$OUT/mulsum-G.txt")"
rc=$(nw oall --op all_reduce -d all -o all -b 1K -e 1M -f 32 -c 1)
row "-o all -d all (rc): mulsum rows" "rc=$rc $(grep -c ' mulsum ' "$OUT/oall.txt") $(wrong "$OUT/oall.txt")"
rc=$(nw mulsum-bw -o sum,mulsum -b 1G -e 1G -c 0)
row "all_reduce 1G busbw: sum, mulsum" "rc=$rc $(bus "$OUT/mulsum-bw.txt" 1073741824 sum), $(bus "$OUT/mulsum-bw.txt" 1073741824 mulsum)"

# 2. the NULL stream
rc=$(nw y1 --op all -y 1 -b 8 -e 256M -f 4 -c 1)
row "-y 1 --op all -c 1 (rc)" "rc=$rc $(wrong "$OUT/y1.txt")"
nw y0bw -b 1G -e 1G -c 0 >/dev/null
nw y1bw -y 1 -b 1G -e 1G -c 0 >/dev/null
row "all_reduce 1G busbw: default streams, -y 1" "$(bus "$OUT/y0bw.txt" 1073741824), $(bus "$OUT/y1bw.txt" 1073741824)"
nw y0lat -b 8 -e 8 -n 200 -c 0 >/dev/null
nw y1lat -y 1 -b 8 -e 8 -n 200 -c 0 >/dev/null
row "all_reduce 8 B time (us): default streams, -y 1" "$(awk '!/^#/ && $1 == 8 { print $6; exit }' "$OUT/y0lat.txt"), $(awk '!/^#/ && $1 == 8 { print $6; exit }' "$OUT/y1lat.txt")"
rc=$(nw yG -y 1 -G 1)
row "-y 1 -G 1: refused (rc 2)" "rc=$rc $(grep -m1 -o 'a CUDA graph cannot capture' "$OUT/yG.txt")"

# 3. the CTA policy
for x in 0 1 2; do
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "$NW" bench --no-history -g "$NG" -x $x -b 1G -e 1G -c 0 >"$OUT/x$x.txt" 2>&1
	rc=$?
	row "-x $x (rc): all_reduce 1G busbw; NCCL says" "rc=$rc $(bus "$OUT/x$x.txt" 1073741824); $(grep -m1 -io 'cta[ _]*policy[^,;]*' "$OUT/x$x.txt" || echo 'no CTA policy line')"
done
nw xnone -b 1G -e 1G -c 0 >/dev/null
row "no -x: all_reduce 1G busbw" "$(bus "$OUT/xnone.txt" 1073741824)"

# 4. the header
nw hdr -b 1M -e 1M >/dev/null
row "header: warmup iters" "$(grep -m1 -o 'warmup iters: [0-9]*' "$OUT/hdr.txt")"
row "header: device lines (first)" "$(grep -m1 '^#  Rank ' "$OUT/hdr.txt")"
row "header: device lines (count)" "$(grep -c '^#  Rank ' "$OUT/hdr.txt")"

# 5. nccl-tests' own, when built
NT=$ROOT/.nccl-tests/build
if [ -x "$NT/all_reduce_perf" ]; then
	"$NT/all_reduce_perf" -g "$NG" -o mulsum -d all -b 1K -e 64M -f 16 -c 1 >"$OUT/nt-mulsum.txt" 2>&1
	row "nccl-tests -o mulsum -d all (rc)" "rc=$? $(wrong "$OUT/nt-mulsum.txt")"
	"$NT/all_reduce_perf" -g "$NG" -y 1 -b 1G -e 1G -c 0 >"$OUT/nt-y1.txt" 2>&1
	row "nccl-tests -y 1: all_reduce 1G busbw" "$(bus "$OUT/nt-y1.txt" 1073741824)"
	for x in 1 2; do
		"$NT/all_reduce_perf" -g "$NG" -x $x -b 1G -e 1G -c 0 >"$OUT/nt-x$x.txt" 2>&1
		row "nccl-tests -x $x: all_reduce 1G busbw" "$(bus "$OUT/nt-x$x.txt" 1073741824) $(grep -m1 -o 'Ignoring' "$OUT/nt-x$x.txt")"
	done
	"$NT/all_reduce_perf" -g "$NG" -b 1M -e 1M >"$OUT/nt-hdr.txt" 2>&1
	row "nccl-tests header: device lines (first)" "$(grep -m1 '^#  Rank ' "$OUT/nt-hdr.txt")"
	row "nccl-tests header: warmup iters" "$(grep -m1 -o 'warmup iters: [0-9]*' "$OUT/nt-hdr.txt")"
else
	row "nccl-tests" "not built in $NT (scripts/gpu/devcheck.sh builds it): ncclwatch only"
fi
echo "== table"; cat "$T"
