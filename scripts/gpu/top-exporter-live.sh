#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ncclwatch top` and `ncclwatch exporter` on a real training-like job.
#
#   make
#   OUT=/tmp/live scripts/gpu/top-exporter-live.sh            # all GPUs, at most 8
#   NGPUS=1 OUT=/tmp/live scripts/gpu/top-exporter-live.sh    # one GPU
#
# Runs a PyTorch job (torchrun, one process per GPU) that does fp32
# dist.all_reduce at 8 KB, 64 MB and 1 GB, plus all_gather at 64 MB, in a
# loop for DURATION seconds (default 20) with NCCL_PROFILER_PLUGIN=<this
# build's plugin>. While it runs, every 2 s it saves `top --once` and a
# scrape of `exporter` (/metrics over loopback, with the scrape time); after
# it ends, a last `top --once` and `exporter --once`. The job writes how
# many ops it ran at each size and its own busbw (host clock around a
# synchronised batch), so the summary puts side by side:
#   - ops per size: what the job ran vs what top and the exporter count;
#   - busbw per size: the job's own vs top's (from GPU kernel timestamps);
#   - how fresh the stats are (ncclwatch_stats_age_seconds while running);
#   - the scrape time of /metrics and its size.
# With one GPU, all_reduce's busbw factor 2(n-1)/n is 0: busbw reads 0 there.
#
# Environment: OUT (default ./out), NGPUS (visible GPUs, at most 8),
# DURATION (20), PYTHON (python3), TORCHRUN (torchrun). The job uses the
# NCCL PyTorch loads. Everything goes under $OUT; the summary
# is $OUT/summary.txt. Exit status 0 when the counts agree, 1 otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUT=${OUT:-./out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
DURATION=${DURATION:-20}
PYTHON=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-torchrun}
NW=$ROOT/build/ncclwatch
PLUGIN=$ROOT/build/libnccl-profiler-ncclwatch.so
STATS=$OUT/stats
export NCCL_NVLS_ENABLE=0

die() { echo "top-exporter-live: $*" >&2; exit 2; }
[ -x "$NW" ] || die "no $NW: run 'make' first"
[ -f "$PLUGIN" ] || die "no $PLUGIN: run 'make' first"
if [ -z "${NGPUS:-}" ]; then
	NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	[ "$NGPUS" -gt 8 ] && NGPUS=8
fi
[ "$NGPUS" -ge 1 ] 2>/dev/null || die "no GPU visible (nvidia-smi -L); set NGPUS"
echo "top-exporter-live: $NGPUS GPU(s), ${DURATION}s job (PyTorch's own NCCL), output in $OUT"

JOB_PID= EXP_PID=
cleanup() {
	for p in $JOB_PID $EXP_PID; do kill -TERM "$p" 2>/dev/null; done
	for p in $JOB_PID $EXP_PID; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cat >"$OUT/job.py" <<'PY'
import json, os, sys, time
import torch
import torch.distributed as dist
out, duration = sys.argv[1], float(sys.argv[2])
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
n = dist.get_world_size()
work = [("all_reduce", 8 << 10), ("all_reduce", 64 << 20), ("all_reduce", 1 << 30), ("all_gather", 64 << 20)]
bufs = {}
for op, size in work:
    x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
    y = torch.empty(size // 4 * n, dtype=torch.float32, device="cuda") if op == "all_gather" else None
    bufs[(op, size)] = (x, y)
ops = {f"{op}:{size}": 0 for op, size in work}
tsum = {f"{op}:{size}": 0.0 for op, size in work}
end = time.time() + duration
batch = 10
while time.time() < end:
    for op, size in work:
        x, y = bufs[(op, size)]
        k = f"{op}:{size}"
        torch.cuda.synchronize()
        dist.barrier()
        t = time.perf_counter()
        for _ in range(batch):
            if op == "all_reduce":
                dist.all_reduce(x)
            else:
                dist.all_gather_into_tensor(y, x)
        torch.cuda.synchronize()
        tsum[k] += time.perf_counter() - t
        ops[k] += batch
res = {}
for op, size in work:
    k = f"{op}:{size}"
    nbytes = size if op == "all_reduce" else size * n   # nccl-tests size
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    per_op = tsum[k] / ops[k]
    res[k] = {"op": op, "bytes": nbytes, "ops": ops[k], "time_us": per_op * 1e6,
              "busbw_gbs": nbytes / per_op / 1e9 * factor}
# every rank runs the same ops; rank 0 reports (barriers are tiny all_reduce ops in another size bucket)
if dist.get_rank() == 0:
    json.dump({"nranks": n, "results": res}, open(out, "w"), indent=1)
dist.barrier()
dist.destroy_process_group()
PY

rm -rf "$STATS"
mkdir -p "$STATS"
env NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_DIR="$STATS" NCCL_DEBUG=WARN \
	"$TORCHRUN" --standalone --nproc-per-node "$NGPUS" "$OUT/job.py" "$OUT/job.json" "$DURATION" \
	>"$OUT/job.log" 2>&1 &
JOB_PID=$!

"$NW" exporter --dir "$STATS" --listen 127.0.0.1:0 --window 2s 2>"$OUT/exporter.err" &
EXP_PID=$!
PORT=
for _ in $(seq 100); do
	PORT=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$OUT/exporter.err")
	[ -n "$PORT" ] && break
	sleep 0.1
done
[ -n "$PORT" ] || die "exporter did not start: $(cat "$OUT/exporter.err")"

i=0
: >"$OUT/scrapes.txt"
while kill -0 "$JOB_PID" 2>/dev/null && [ $i -lt 200 ]; do
	sleep 2
	i=$((i + 1))
	"$NW" top --once --dir "$STATS" >"$OUT/top-$i.txt" 2>&1
	curl -s -m 10 -o "$OUT/metrics-$i.prom" -w "scrape $i: %{time_total} s, %{size_download} bytes\n" \
		"http://127.0.0.1:$PORT/metrics" >>"$OUT/scrapes.txt"
done
wait "$JOB_PID"
JOB_RC=$?
JOB_PID=
"$NW" top --once --all --dir "$STATS" >"$OUT/top-final.txt" 2>&1
"$NW" exporter --once --all --dir "$STATS" >"$OUT/metrics-final.prom" 2>"$OUT/metrics-final.err"
if command -v promtool >/dev/null; then
	promtool check metrics <"$OUT/metrics-final.prom" >"$OUT/promtool.txt" 2>&1
	echo "promtool check metrics: exit $?" >>"$OUT/promtool.txt"
fi

"$PYTHON" - "$OUT" "$JOB_RC" >"$OUT/summary.txt" <<'PY'
import glob, json, os, re, sys
out, job_rc = sys.argv[1], int(sys.argv[2])
ok = job_rc == 0
print(f"job exit status {job_rc}")
try:
    job = json.load(open(os.path.join(out, "job.json")))
except Exception as e:
    print(f"no job.json: {e}"); sys.exit(1)
n = job["nranks"]
def bucket_lo(b):
    return 1 << (b.bit_length() - 1) if b else 0
def fmt(b):
    for s, u in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b % s == 0 and b >= s:
            return f"{b // s}{u}"
    return str(b)
# exporter --once after the job: ops per (op, size) summed over ranks
ops, bw = {}, {}
for line in open(os.path.join(out, "metrics-final.prom")):
    m = re.match(r'^ncclwatch_coll_ops_total\{(.*)\} (\S+)$', line)
    if m:
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        k = (lab["op"], lab["size"])
        ops[k] = ops.get(k, 0) + float(m.group(2))
    m = re.match(r'^ncclwatch_coll_busbw_bytes_per_second\{(.*)\} (\S+)$', line)
    if m:
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        bw.setdefault((lab["op"], lab["size"]), []).append(float(m.group(2)))
print(f"\n{n} rank(s). ops: the job's count per rank x ranks vs exporter; busbw: the job's host-timed vs the plugin's (kernel timestamps, whole run)")
print(f"{'op':<12} {'size':>6} {'job ops':>9} {'exported':>9} {'job busbw':>10} {'ncclwatch':>10}")
for k, r in job["results"].items():
    size = fmt(bucket_lo(r["bytes"]))
    want = r["ops"] * n
    got = ops.get((r["op"], size), 0)
    b = bw.get((r["op"], size), [])
    mine = sum(b) / len(b) / 1e9 if b else float("nan")
    # the job's count excludes nothing NCCL ran for it at that size; the exported one may include more (barriers are tiny)
    flag = "" if got >= want else "  <-- fewer than the job ran"
    if got < want:
        ok = False
    print(f"{r['op']:<12} {size:>6} {want:>9} {int(got):>9} {r['busbw_gbs']:>10.1f} {mine:>10.1f}{flag}")
ages = []
for f in sorted(glob.glob(os.path.join(out, "metrics-[0-9]*.prom"))):
    for line in open(f):
        m = re.match(r'^ncclwatch_stats_age_seconds\{.*\} (\S+)$', line)
        if m:
            ages.append(float(m.group(1)))
if ages:
    ages.sort()
    print(f"\nstats age while running: median {ages[len(ages) // 2]:.3f} s, max {ages[-1]:.3f} s over {len(ages)} samples")
print("\n" + open(os.path.join(out, "scrapes.txt")).read().strip())
tops = sorted(glob.glob(os.path.join(out, "top-[0-9]*.txt")))
if tops:
    print(f"\nlast live top --once ({os.path.basename(tops[-1])}):")
    print(open(tops[-1]).read())
print("verdict:", "ok" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
rc=$?
cat "$OUT/summary.txt"
exit $rc
