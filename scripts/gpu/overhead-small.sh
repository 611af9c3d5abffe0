#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The profiler plugin's cost on small collectives, measured tightly enough to
# judge a sub-microsecond target.
#
#   make && OUT=/tmp/ovs scripts/gpu/overhead-small.sh       # needs 2 GPUs
#
# A one-rank communicator raises no collective events in NCCL, so this needs
# two GPUs (one process driving both, -g 2). For ROUNDS rounds (default 8) it
# runs
#   build/ncclwatch bench --op all_reduce -b 8 -e 8K -f 1024 -n 20000 -w 2000 -c 0 -g 2
# once without and once with NCCL_PROFILER_PLUGIN=<this build's plugin>, the
# order swapped every round so that drift cancels. Per round it takes the
# difference (with - without) of the out-of-place time per op at 8 B and at
# 8 KB; the summary gives the median time of each, the median of the paired
# differences and their range over rounds. The summary is rewritten after
# every round in $OUT/summary.txt, so a cut-short run still leaves figures.
#
# Environment: OUT (default ./out), ROUNDS (8), NCCLWATCH_KERNEL (unset: the
# plugin's auto policy), NCCL_LIB (passed as --nccl-lib when set).
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUT=${OUT:-./out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
ROUNDS=${ROUNDS:-8}
NW=$ROOT/build/ncclwatch
PLUGIN=$ROOT/build/libnccl-profiler-ncclwatch.so
export NCCL_NVLS_ENABLE=0

die() { echo "overhead-small: $*" >&2; exit 2; }
[ -x "$NW" ] || die "no $NW: run 'make' first"
[ -f "$PLUGIN" ] || die "no $PLUGIN: run 'make' first"
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$n" -ge 2 ] 2>/dev/null || die "needs 2 GPUs (a one-rank communicator raises no collective events); nvidia-smi -L shows ${n:-0}"
libarg=()
[ -n "${NCCL_LIB:-}" ] && libarg=(--nccl-lib "$NCCL_LIB")

one() {
	local cfg=$1 r=$2 base=$OUT/$1-$2
	local env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT)
	if [ "$cfg" = on ]; then
		env+=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_DIR="$OUT/stats-$r")
	fi
	env -u NCCL_PROFILER_PLUGIN "${env[@]}" "$NW" bench --op all_reduce -b 8 -e 8K -f 1024 -n 20000 -w 2000 \
		-c 0 -g 2 "${libarg[@]}" --no-history --json="$base.json" >"$base.log" 2>&1 ||
		echo "overhead-small: bench ($cfg, round $r) failed; see $base.log" >&2
	if [ "$cfg" = on ] && ! grep -q "ncclwatch: profiler v" "$base.log"; then
		echo "CHECK FAIL: the plugin did not watch the communicator in round $r (see $base.log)"
	fi
	if [ "$cfg" = on ] && grep -q "ncclwatch profiler disabled" "$base.log"; then
		echo "CHECK FAIL: the plugin disabled itself in round $r"
	fi
}

summary() {
	python3 - "$OUT" "$1" <<'PY' >"$OUT/summary.txt"
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def t(cfg, r):
    p = f"{out}/{cfg}-{r}.json"
    if not os.path.exists(p):
        return {}
    try:
        res = json.load(open(p)).get("results", [])
    except ValueError:
        return {}
    return {int(x["size_bytes"]): float(x["time_us"]) for x in res
            if x.get("op") == "all_reduce" and not x.get("inplace") and x.get("time_us") is not None}
print(f"all_reduce, 2 GPUs in one process, -n 20000 -w 2000, out-of-place, {rounds} round(s), order swapped each round")
print(f"{'size':>6} {'without us':>11} {'with us':>9} {'paired delta us: median':>24} {'min':>7} {'max':>7} {'delta %':>8}")
for s, name in ((8, "8 B"), (8192, "8 KB")):
    off, on, d = [], [], []
    for r in range(1, rounds + 1):
        a, b = t("off", r).get(s), t("on", r).get(s)
        if a is not None: off.append(a)
        if b is not None: on.append(b)
        if a is not None and b is not None: d.append(b - a)
    if not d:
        print(f"{name:>6} no paired rounds"); continue
    mo, mn, md = statistics.median(off), statistics.median(on), statistics.median(d)
    print(f"{name:>6} {mo:11.3f} {mn:9.3f} {md:+24.3f} {min(d):+7.3f} {max(d):+7.3f} {100 * md / mo:+7.2f}%")
print("rounds:", " ".join(f"{r}:{t('off', r).get(8, float('nan')):.2f}/{t('on', r).get(8, float('nan')):.2f}"
                          for r in range(1, rounds + 1)), "(8 B without/with, us)")
print("target: under 0.5 us per op at 8 B")
PY
}

for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then one off "$r"; one on "$r"; else one on "$r"; one off "$r"; fi
	summary "$r"
	echo "round $r done"
done
cat "$OUT/summary.txt"
