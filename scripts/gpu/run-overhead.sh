#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `ncclwatch run` costs a training job with its defaults, measured on GPUs.
#
#   make
#   OUT=/tmp/runovh scripts/gpu/run-overhead.sh            # every GPU (at least 2 for collectives)
#   NGPUS=2 REPEATS=9 OUT=/tmp/runovh scripts/gpu/run-overhead.sh
#
# The job is a small DDP-like training loop under torchrun (one process per
# GPU): a stack of fp32 Linear layers (HIDDEN x HIDDEN, LAYERS of them), a
# forward, a backward whose gradients DDP all_reduces in buckets, an SGD
# step; the median step time of rank 0 over STEPS steps after WARMUP. It
# runs with DDP's bucket size BUCKETS_MB (default "1 25": all_reduces of 1 MB
# and of 25 MB), each REPEATS times (default 7), interleaved: without run,
# then `ncclwatch run --no-history -- torchrun ...` (its defaults: the
# plugin, NCCL_DEBUG=INFO into files, log lines every 60 s, the stats read
# every second), then again, so that drift in the machine hits both alike.
#
# It prints, per bucket size: the median step time without and with run,
# the difference (ms and %), and PASS when it is under TARGET_PCT (1); and
# it checks that each run under ncclwatch captured the job: every rank's
# stats (all_reduce calls on each of NGPUS ranks), a report and a timeline.
# Exit status: 0 every size under target and every run captured, 1 not.
#
# Environment: OUT (./out), NGPUS (visible GPUs), REPEATS (7), STEPS (200),
# WARMUP (20), HIDDEN (4096), LAYERS (8), BUCKETS_MB ("1 25"), TARGET_PCT (1),
# PYTHON (python3), TORCHRUN (torchrun). Everything goes under $OUT; the
# table is also $OUT/summary.txt.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUT=${OUT:-./out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
REPEATS=${REPEATS:-7}
STEPS=${STEPS:-200}
WARMUP=${WARMUP:-20}
HIDDEN=${HIDDEN:-4096}
LAYERS=${LAYERS:-8}
BUCKETS_MB=${BUCKETS_MB:-1 25}
TARGET_PCT=${TARGET_PCT:-1}
PYTHON=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-torchrun}
NW=$ROOT/build/ncclwatch

die() { echo "run-overhead: $*" >&2; exit 2; }
[ -x "$NW" ] || die "no $NW: run 'make' first"
command -v "$TORCHRUN" >/dev/null || die "no $TORCHRUN on PATH"
if [ -z "${NGPUS:-}" ]; then
	NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
[ "$NGPUS" -ge 2 ] 2>/dev/null || die "needs 2 GPUs or more (DDP all_reduces nothing on one); set NGPUS"
echo "run-overhead: $NGPUS GPUs, buckets ${BUCKETS_MB// /, } MB, $REPEATS rounds of $STEPS steps, output in $OUT"
"$NW" env >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

cat >"$OUT/ddp_job.py" <<'PY'
# A DDP-like training step: Linear layers, forward, backward (DDP all_reduces the gradients in buckets), SGD.
import json, os, statistics, sys, time
import torch
import torch.distributed as dist
out, hidden, layers, steps, warmup, bucket = sys.argv[1], *map(int, sys.argv[2:7])
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
model = torch.nn.Sequential(*[torch.nn.Linear(hidden, hidden, bias=False) for _ in range(layers)]).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=bucket)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-6)
x = torch.randn(64, hidden, device="cuda")
times = []
for i in range(warmup + steps):
    torch.cuda.synchronize()
    t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    ddp(x).square().mean().backward()
    opt.step()
    torch.cuda.synchronize()
    if i >= warmup:
        times.append(time.perf_counter() - t)
if dist.get_rank() == 0:
    json.dump({"median_ms": statistics.median(times) * 1e3, "steps": steps}, open(out, "w"))
dist.destroy_process_group()
PY

# One job: $1 = off|on, $2 = bucket MB, $3 = round.
job() {
	local cfg=$1 mb=$2 rep=$3
	local tag=$cfg-$mb-$rep
	local cmd=("$TORCHRUN" --standalone --nproc-per-node "$NGPUS" "$OUT/ddp_job.py" "$OUT/step-$tag.json"
		"$HIDDEN" "$LAYERS" "$STEPS" "$WARMUP" "$mb")
	if [ "$cfg" = on ]; then
		rm -rf "$OUT/job-$tag"
		cmd=("$NW" run --no-history --no-status --out "$OUT/job-$tag" -- "${cmd[@]}")
	fi
	env -u NCCL_PROFILER_PLUGIN -u NCCL_DEBUG -u NCCL_DEBUG_FILE "${cmd[@]}" >"$OUT/log-$tag.txt" 2>&1 ||
		echo "run-overhead: job $tag exited $?; see $OUT/log-$tag.txt" >&2
}

# Whether run captured job $1 (a directory): every rank's all_reduces, the report and the timeline.
captured() {
	"$PYTHON" - "$1" "$NGPUS" <<'PY'
import glob, json, sys
d, n = sys.argv[1], int(sys.argv[2])
parts = glob.glob(d + "/nodes/*/part.json")
ok = len(parts) == 1 and glob.glob(d + "/report.html") and glob.glob(d + "/timeline.json")
if ok:
    p = json.load(open(parts[0]))
    calls = {}
    for r in p["ranks"]:
        if r["nranks"] == n:
            calls[r["rank"]] = sum(e[2] for e in r["per_op"] if e[0] == "all_reduce")
    ok = sorted(calls) == list(range(n)) and min(calls.values()) > 0
sys.exit(0 if ok else 1)
PY
}

for rep in $(seq "$REPEATS"); do
	for mb in $BUCKETS_MB; do
		# alternate which goes first, round by round
		if [ $((rep % 2)) -eq 1 ]; then job off "$mb" "$rep"; job on "$mb" "$rep"; else job on "$mb" "$rep"; job off "$mb" "$rep"; fi
	done
	echo "run-overhead: round $rep of $REPEATS done"
done

fail=0
shopt -s nullglob
med() { "$PYTHON" -c 'import json,statistics,sys; v=[json.load(open(f))["median_ms"] for f in sys.argv[1:]]; print("%.4f" % statistics.median(v) if v else "nan")' "$@"; }
{
	printf "%-10s %14s %14s %10s %8s %6s %9s\n" bucket "without ms" "with run ms" "diff ms" "diff %" target captured
	for mb in $BUCKETS_MB; do
		off=$(med "$OUT"/step-off-"$mb"-*.json)
		on=$(med "$OUT"/step-on-"$mb"-*.json)
		ncap=0 nrun=0
		for d in "$OUT"/job-on-"$mb"-*; do
			[ -d "$d" ] || continue
			nrun=$((nrun + 1))
			captured "$d" && ncap=$((ncap + 1))
		done
		read -r diff pct verdict < <(awk -v a="$off" -v b="$on" -v t="$TARGET_PCT" 'BEGIN {
			if (a == "nan" || b == "nan" || a <= 0) { print "nan nan FAIL"; exit }
			d = b - a; p = 100 * d / a; printf "%.4f %.2f %s\n", d, p, (p < t ? "PASS" : "FAIL") }')
		[ "$verdict" = PASS ] && [ "$ncap" -eq "$nrun" ] && [ "$nrun" -gt 0 ] || fail=1
		printf "%-10s %14s %14s %10s %8s %6s %9s\n" "${mb} MB" "$off" "$on" "$diff" "$pct" "$verdict" "$ncap/$nrun"
	done
	echo "(median over $REPEATS interleaved rounds of each round's median step time; target: under $TARGET_PCT%)"
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
exit $fail
