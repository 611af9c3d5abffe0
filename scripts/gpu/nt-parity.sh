#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU machine: bench's nccl-tests parity formats next to nccl-tests
# itself (-J, -I 1 -K 2, -S 1, -z 1..3), for the GPU issue. Everything
# lands under $OUT (default ./out); nothing is claimed until it has run.
#
#   make && NT=/path/to/nccl-tests/build OUT=/tmp/nw-nt scripts/gpu/nt-parity.sh
#
# Expected: the same rows (sizes, counts, types) and header lines as
# nccl-tests; busbw within 2% of nccl-tests' at 64 MB and above (2 GPUs);
# ncclwatch's -J read by nccl-tests' tools/analyze_perf_json.py unchanged.
set -u
OUT=${OUT:-./out}
NW=${NW:-build/ncclwatch}
NT=${NT:-}
mkdir -p "$OUT"
[ -x "$NW" ] || { echo "build first: $NW not found" >&2; exit 2; }

summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# one format: ncclwatch's and (when $NT is given) nccl-tests' run of the same flags
pair() {
	local name=$1; shift
	"$NW" bench --no-history "$@" >"$OUT/nw_$name.txt" 2>&1
	note "$name: ncclwatch exit $?"
	if [ -n "$NT" ]; then
		"$NT/all_reduce_perf" "${@/$OUT\/nw_/$OUT/nt_}" >"$OUT/nt_$name.txt" 2>&1
		note "$name: nccl-tests exit $?"
	fi
}

pair json -b 8 -e 1G -f 4 -J "$OUT/nw_ar.json"
pair iter -b 8 -e 1G -f 4 -I 1 -K 2 -J "$OUT/nw_ar_I.json"
pair ts -b 1K -e 64M -f 4 -S 1
for z in 1 2 3; do
	pair "z$z" -b 1K -e 256M -f 4 -z "$z"
done
if [ -n "$NT" ] && [ -f "$NT/../tools/analyze_perf_json.py" ]; then
	python3 "$NT/../tools/analyze_perf_json.py" "$OUT/nw_ar_I.json" --all >"$OUT/analyze_nw.txt" 2>&1
	note "analyze_perf_json.py on ncclwatch's -J: exit $?"
fi
for f in "$OUT"/nw_*.txt; do
	t=${f/nw_/nt_}
	[ -f "$t" ] || continue
	paste <(grep -E '^ +[0-9]' "$f" | awk '$1 >= 67108864 {print $1, $8}') \
		<(grep -E '^ +[0-9]' "$t" | awk '$1 >= 67108864 {print $8}') |
		awk -v n="$(basename "$f")" '{ d = ($3 > 0) ? ($2 / $3 - 1) * 100 : 0; printf "%s %s busbw %s vs %s (%+.1f%%)\n", n, $1, $2, $3, d }' |
		tee -a "$summary"
done
