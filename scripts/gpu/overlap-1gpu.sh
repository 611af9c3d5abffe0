#!/usr/bin/env bash
# On a one-GPU machine: exposed communication (NCCLWATCH_OVERLAP=1) with real
# CUPTI, NCCL and PyTorch. Two ranks are made two "nodes" on the one GPU with
# NCCL_HOSTID (as hang-1gpu.sh does): their kernels time-share the GPU and
# the collectives go over a socket, so the figures show the mechanism and the
# difference between two ways of training, never a speed.
#   1. a small DDP model, twice: DDP's own bucketed overlap ("overlap"), and
#      communication forced after the backward pass (no_sync, then one
#      all_reduce per gradient: "after"). The plugin measures windows of
#      kernel activity; the exposed share of wall time read from
#      'ncclwatch exporter --once' is compared between the two.
#   2. the same two jobs without the plugin's CUPTI, under torch.profiler:
#      the exposed share computed offline from the trace's kernel events
#      (the same union-of-intervals arithmetic, written here in Python).
#   3. coexistence: the plugin's window with torch.profiler running.
#   4. cost: bench all_reduce 1 MiB..1 GiB with the plugin, with and without
#      NCCLWATCH_OVERLAP=1 (a window of 1 s every 4 s, far more often than
#      the default), three times each, alternating.
#   P=DIR OUT=DIR [STEPS=300] scripts/gpu/overlap-1gpu.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
STEPS=${STEPS:-300}
mkdir -p "$OUT"
NW=$PWD/$P/ncclwatch
PLUGIN=$PWD/$P/libnccl-profiler-ncclwatch.so
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/ovl1.XXXXXX)
T=$OUT/table.txt
: >"$T"
row() { printf '%-60s %s\n' "$1" "$2" | tee -a "$T"; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  python3 -c 'import nvidia.cuda_cupti, os; print("cupti wheel", os.path.dirname(nvidia.cuda_cupti.__file__))'; } >"$OUT/env.txt" 2>&1

cat >"$W/ddp.py" <<'PY'
import json, os, sys, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
r = dist.get_rank()
torch.cuda.set_device(0)
torch.manual_seed(0)
mode, steps, prof = os.environ["MODE"], int(os.environ["STEPS"]), os.environ.get("PROF")
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU()) for _ in range(12)]).cuda()
ddp = DDP(model, bucket_cap_mb=8)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-6)
x = torch.randn(2048, 2048, device="cuda")
def step():
    opt.zero_grad(set_to_none=True)
    if mode == "overlap":
        ddp(x).square().mean().backward()
    else:
        with ddp.no_sync():
            ddp(x).square().mean().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
    opt.step()
for _ in range(10):
    step()
torch.cuda.synchronize()
t0 = time.time()
if prof:
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(30):
            step()
        torch.cuda.synchronize()
    p.export_chrome_trace(os.environ["TRACE"] + ".%d.json" % r)
else:
    for i in range(steps):
        step()
    torch.cuda.synchronize()
dt = time.time() - t0
print("rank", r, "mode", mode, "steps/s %.1f" % ((30 if prof else steps) / dt), flush=True)
if r == 0:
    open(os.environ["MARK"], "w").write("done\n")
time.sleep(float(os.environ.get("LINGER", "0")))
dist.destroy_process_group()
PY

# job MODE NAME [VAR=value...]: the two ranks, waiting for both.
job() {
	local mode=$1 name=$2 port=$((20000 + RANDOM % 9000)) r
	shift 2
	rm -f "$W/mark"
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			NCCL_HOSTID=node$r NCCL_DEBUG=WARN MODE=$mode STEPS=$STEPS MARK=$W/mark TRACE=$W/trace.$name "$@" \
			timeout 600 python3 "$W/ddp.py" >"$OUT/job.$name.$r.txt" 2>&1 &
	done
}

# 1. the plugin's windows, each mode; the exporter is read every second
#    while the job runs and the last reading with a finished window is kept.
for mode in overlap after; do
	export NCCLWATCH_DIR=$W/stats.$mode
	mkdir -p "$NCCLWATCH_DIR"
	job "$mode" "$mode" NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=4 \
		NCCLWATCH_OVERLAP_WINDOW_S=1.5 LINGER=6
	while :; do
		"$NW" exporter --once >"$W/scrape.$mode" 2>/dev/null &&
			grep -q '^ncclwatch_exposed_communication_ratio' "$W/scrape.$mode" && cp "$W/scrape.$mode" "$OUT/scrape.$mode.txt"
		[ -f "$W/mark" ] && break
		jobs -r | grep -q python3 || break
		sleep 1
	done
	sleep 2
	"$NW" exporter --once >"$W/scrape.$mode" 2>/dev/null &&
		grep -q '^ncclwatch_exposed_communication_ratio' "$W/scrape.$mode" && cp "$W/scrape.$mode" "$OUT/scrape.$mode.txt"
	"$NW" top --once >"$OUT/top.$mode.txt" 2>&1
	wait
	row "$mode: steps/s (rank 0, rank 1)" "$(grep -ho 'steps/s [0-9.]*' "$OUT"/job.$mode.[01].txt | tr '\n' ' ')"
	row "$mode: plugin exposed share of wall, per rank (last window)" \
		"$(grep '^ncclwatch_exposed_communication_ratio' "$OUT/scrape.$mode.txt" 2>/dev/null | awk '{printf "%.3f ", $NF}')"
	row "$mode: windows measured, per rank" \
		"$(grep '^ncclwatch_overlap_windows_total' "$OUT/scrape.$mode.txt" 2>/dev/null | awk '{printf "%s ", $NF}')"
	row "$mode: window CPU cost s, per rank" \
		"$(grep '^ncclwatch_overlap_window_cpu_seconds' "$OUT/scrape.$mode.txt" 2>/dev/null | awk '{printf "%s ", $NF}')"
	row "$mode: enabled (1) per rank" \
		"$(grep '^ncclwatch_overlap_enabled' "$OUT/scrape.$mode.txt" 2>/dev/null | awk '{printf "%s ", $NF}')"
done

# 2. the same jobs under torch.profiler, no plugin; the offline arithmetic
for mode in overlap after; do
	job "$mode" "prof-$mode" PROF=1
	wait
	python3 - "$W/trace.prof-$mode".0.json <<'PY' | tee "$OUT/offline.$mode.txt"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel" and "dur" in e]
def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
nccl = union([(e["ts"], e["ts"] + e["dur"]) for e in k if "nccl" in e["name"].lower()])
comp = union([(e["ts"], e["ts"] + e["dur"]) for e in k if "nccl" not in e["name"].lower()])
def total(iv): return sum(e - s for s, e in iv)
def minus(a, b):  # a minus b, both unions
    out, j = 0.0, 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        i = j
        while i < len(b) and b[i][0] < e:
            if b[i][0] > cur:
                out += b[i][0] - cur
            cur = max(cur, b[i][1])
            i += 1
        if cur < e:
            out += e - cur
    return out
lo = min(s for s, _ in nccl + comp); hi = max(e for _, e in nccl + comp)
wall = hi - lo
exp = minus(nccl, comp)
print("kernels %d  wall %.1f ms  compute %.1f ms  nccl %.1f ms  exposed %.1f ms  exposed/wall %.3f  exposed/nccl %.3f"
      % (len(k), wall / 1e3, total(comp) / 1e3, total(nccl) / 1e3, exp / 1e3, exp / wall, exp / max(total(nccl), 1)))
PY
	row "$mode: offline (torch.profiler trace, rank 0) exposed/wall" "$(grep -o 'exposed/wall [0-9.]*' "$OUT/offline.$mode.txt")"
done

# 3. coexistence: torch.profiler running while the plugin wants CUPTI
export NCCLWATCH_DIR=$W/stats.coexist
mkdir -p "$NCCLWATCH_DIR"
job overlap coexist PROF=1 NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=1 \
	NCCLWATCH_OVERLAP_WINDOW_S=0.5
wait
row "coexist: job finished (rank 0, rank 1)" "$(grep -ho 'steps/s [0-9.]*' "$OUT"/job.coexist.[01].txt | tr '\n' ' ')"
row "coexist: plugin lines about CUPTI (rank 0)" "$(grep -ci 'cupti' "$OUT/job.coexist.0.txt")"
grep -hi 'cupti' "$OUT"/job.coexist.[01].txt | head -4 | tee -a "$T"

# 4. cost of the windows on one rank, bench all_reduce
export NCCLWATCH_DIR=$W/stats.cost
mkdir -p "$NCCLWATCH_DIR"
for k in 1 2 3; do
	NCCL_PROFILER_PLUGIN=$PLUGIN "$NW" bench --no-history --op all_reduce -b 1M -e 1G -f 4 -n 200 -w 10 \
		>"$OUT/cost.off.$k.txt" 2>&1
	NCCL_PROFILER_PLUGIN=$PLUGIN NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=4 NCCLWATCH_OVERLAP_WINDOW_S=1 \
		"$NW" bench --no-history --op all_reduce -b 1M -e 1G -f 4 -n 200 -w 10 >"$OUT/cost.on.$k.txt" 2>&1
done
python3 - "$OUT" <<'PY' | tee -a "$T"
import glob, os, statistics, sys
out = sys.argv[1]
def times(mode):
    t = {}
    for f in sorted(glob.glob(os.path.join(out, "cost.%s.*.txt" % mode))):
        for line in open(f):
            p = line.split()
            if len(p) > 6 and p[0].isdigit() and p[2] == "float":
                t.setdefault(int(p[0]), []).append(float(p[5]))
    return t
off, on = times("off"), times("on")
print("overlap windows' cost, one rank (median of 3 runs, out-of-place time us; window 1 s every 4 s):")
for s in sorted(off):
    if s in on:
        a, b = statistics.median(off[s]), statistics.median(on[s])
        print("  %10d B  without %9.1f  with %9.1f  %+6.2f%%" % (s, a, b, (b - a) / a * 100))
PY
rm -rf "$W"
