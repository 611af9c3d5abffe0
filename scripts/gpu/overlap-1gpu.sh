#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
#   Also the periodic log lines (NCCLWATCH_LOG_S=3, stderr) of those jobs,
#   read back with 'ncclwatch logscan'.
#   4. cost: bench all_reduce 1 MiB..1 GiB with the plugin, with and without
#      NCCLWATCH_OVERLAP=1 (a window of 1 s every 2 s, the most allowed),
#      each size for about 4 s, twice each, alternating.
#   $OUT gets table.txt and all.tgz (every log, scrape and trace summary).
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
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU()) for _ in range(12)]).cuda()
ddp = DDP(model, bucket_cap_mb=8)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-6)
x = torch.randn(16384, 1024, device="cuda")
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
#    while the job runs; every distinct window of each rank is kept.
for mode in overlap after; do
	export NCCLWATCH_DIR=$W/stats.$mode
	mkdir -p "$NCCLWATCH_DIR"
	job "$mode" "$mode" NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=3 \
		NCCLWATCH_OVERLAP_WINDOW_S=1 NCCLWATCH_LOG_S=3 NCCLWATCH_LOG=stderr LINGER=2
	i=0
	while [ ! -f "$W/mark" ] && jobs -r | grep -q python3; do
		i=$((i + 1))
		"$NW" exporter --once >"$W/scrape.$mode.$i" 2>/dev/null
		[ "$i" = 8 ] && "$NW" top --once >"$OUT/top.$mode.txt" 2>&1
		sleep 1
	done
	wait
	row "$mode: steps/s (rank 0, rank 1)" "$(grep -ho 'steps/s [0-9.]*' "$OUT"/job.$mode.[01].txt | tr '\n' ' ')"
	python3 - "$mode" "$W"/scrape.$mode.* <<'PY' | tee -a "$T"
import re, sys
mode, files = sys.argv[1], sys.argv[2:]
pat = re.compile(r'^(ncclwatch_[a-z_]+)\{([^}]*)\} (\S+)$')
win = {}  # (rank, windows_total) -> figures
for f in files:
    cur = {}
    for line in open(f):
        m = pat.match(line.strip())
        if not m:
            continue
        rk = re.search(r'rank="(\d+)"', m.group(2))
        if rk:
            cur.setdefault(rk.group(1), {})[m.group(1)] = float(m.group(3))
    for rank, d in cur.items():
        if "ncclwatch_overlap_windows_total" in d and "ncclwatch_overlap_window_seconds" in d:
            win[(rank, int(d["ncclwatch_overlap_windows_total"]))] = d
for rank in sorted({r for r, _ in win}):
    ws = [d for (r, _), d in sorted(win.items()) if r == rank and d.get("ncclwatch_nccl_kernel_seconds", 0) > 0]
    if not ws:
        print("%s: rank %s: no window with NCCL kernels" % (mode, rank))
        continue
    wall = sum(d["ncclwatch_overlap_window_seconds"] for d in ws)
    comp = sum(d["ncclwatch_compute_kernel_seconds"] for d in ws)
    nccl = sum(d["ncclwatch_nccl_kernel_seconds"] for d in ws)
    exp = sum(d["ncclwatch_exposed_communication_seconds"] for d in ws)
    cpu = max(d.get("ncclwatch_overlap_window_cpu_seconds", 0) for d in ws)
    print("%-8s rank %s plugin: %d windows with NCCL, wall %.2f s, compute %.2f s, nccl %.2f s, exposed %.2f s: "
          "exposed/wall %.3f exposed/nccl %.3f (max window CPU %.1f us)"
          % (mode, rank, len(ws), wall, comp, nccl, exp, exp / wall, exp / nccl, cpu * 1e6))
PY
	tail -n +1 "$W"/scrape.$mode.* >"$OUT/scrapes.$mode.txt" 2>/dev/null
	# the job's own log: periodic NCCLWATCH lines, read back by logscan
	row "$mode: NCCLWATCH log lines (rank 0), last one" "$(grep -c 'NCCLWATCH v=' "$OUT/job.$mode.0.txt")"
	grep 'NCCLWATCH v=' "$OUT/job.$mode.0.txt" | tail -1 | tee -a "$T"
	"$NW" logscan "$OUT/job.$mode.0.txt" >"$OUT/logscan.$mode.txt" 2>&1
	row "$mode: logscan exit, bandwidth-over-time section" "$? $(grep -c -i 'bandwidth over time' "$OUT/logscan.$mode.txt")"
	grep -A6 -i 'bandwidth over time' "$OUT/logscan.$mode.txt" | tee -a "$T"
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

# 4. cost of the windows on one rank, bench all_reduce: each size run for
#    about 4 s, so that it spans windows; a window of 1 s every 2 s (half the
#    time, the most allowed) against none, twice each, alternating. Scaled to
#    the default (2 s every 60 s) the cost is the measured one x (2/60)/(1/2).
export NCCLWATCH_DIR=$W/stats.cost
mkdir -p "$NCCLWATCH_DIR"
for k in 1 2; do
	for sn in 1M:800000 16M:300000 256M:30000 1G:8000; do
		s=${sn%%:*} n=${sn##*:}
		NCCL_PROFILER_PLUGIN=$PLUGIN "$NW" bench --no-history --op all_reduce -b "$s" -e "$s" -n "$n" -w 100 \
			>>"$OUT/cost.off.$k.txt" 2>&1
		NCCL_PROFILER_PLUGIN=$PLUGIN NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=2 NCCLWATCH_OVERLAP_WINDOW_S=1 \
			"$NW" bench --no-history --op all_reduce -b "$s" -e "$s" -n "$n" -w 100 >>"$OUT/cost.on.$k.txt" 2>&1
	done
done
python3 scripts/gpu/cost-table.py "$OUT" "windows' cost, one rank, all_reduce out-of-place time us (median of 2 runs of ~4 s each; scaled: to 2 s of 60 s)" "$(python3 -c 'print((2 / 60) / 0.5)')" | tee -a "$T"
tar -C "$OUT" -czf "$W/all.tgz" --exclude=table.txt . && rm -f "$OUT"/*.txt.tmp
find "$OUT" -mindepth 1 ! -name table.txt -delete
mv "$W/all.tgz" "$OUT/all.tgz"
rm -rf "$W"
