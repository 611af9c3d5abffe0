#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a one-GPU machine: `ncclwatch run` around a small DDP job of two ranks
# made two "nodes" on the one GPU with NCCL_HOSTID (time-sliced over a
# socket: the paths, the agreement of figures and the relative cost, never
# a speed). The launch command is a two-line launcher that starts both
# ranks with their own NCCL_HOSTID (torchrun cannot give ranks different
# variables); run sets up everything else, as it would for torchrun.
#   1. cost: the job's median step time without run and under
#      `ncclwatch run --no-history` (the plugin, the machine's NCCL),
#      ROUNDS interleaved pairs (order swapped every pair);
#   2. in one of those runs, while the job waits after its steps, an
#      exporter --once --detail size of the job's stats directory: its
#      all_reduce busbw per size against the report's results.json;
#   3. rank 1 sleeps SLEEP s before one step: seconds until run says HUNG
#      naming rank 1 (with --hang-s HANG_S; PyTorch's watchdog would act
#      after 600 s).
# (run over NCCL 2.21.5 and the interposer: scripts/gpu/live-old-nccl.sh; this
# machine's PyTorch does not load an NCCL that old.)
#   P=.gpu OUT=/tmp/r1 [ROUNDS=5 STEPS=60 SLEEP=30 HANG_S=10] scripts/gpu/run-1gpu.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-60}
SLEEP=${SLEEP:-30}
HANG_S=${HANG_S:-10}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
NW=$PWD/$P/ncclwatch
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/run1.XXXXXX)
T=$OUT/table.txt
: >"$T"
row() { printf '%-62s %s\n' "$1" "$2" | tee -a "$T"; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >"$OUT/env.txt" 2>&1

cat >"$W/job.py" <<'PY'
import os, sys, time, statistics, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
w, r = os.environ["W"], int(os.environ["RANK"])
dist.init_process_group("nccl")
torch.manual_seed(0)
h = 2048
model = torch.nn.Sequential(*[torch.nn.Linear(h, h) for _ in range(4)]).cuda()
ddp = DDP(model, bucket_cap_mb=25)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(64, h, device="cuda")
steps, sleep_at = int(os.environ["STEPS"]), int(os.environ.get("SLEEP_AT", "-1"))
times = []
for i in range(steps + 10):
    if i == sleep_at and r == 1:
        with open(os.path.join(w, "sleep.mark"), "w") as f:
            f.write("%.6f\n" % time.time())
        time.sleep(float(os.environ["SLEEP"]))
    torch.cuda.synchronize()
    t = time.perf_counter()
    opt.zero_grad()
    ddp(x).sum().backward()
    opt.step()
    torch.cuda.synchronize()
    if i >= 10:
        times.append(time.perf_counter() - t)
if r == 0:
    print("step_ms %.3f" % (1e3 * statistics.median(times)), flush=True)
if os.environ.get("HOLD"):
    open(os.path.join(w, "held.%d" % r), "w").close()
    t = time.time()
    while not os.path.exists(os.path.join(w, "go")) and time.time() - t < 60:
        time.sleep(0.05)
dist.destroy_process_group()
PY
# the launcher: both ranks, each its own NCCL_HOSTID; PRE (an NCCL to load) after run's LD_PRELOAD
cat >"$W/launch2.sh" <<'SH'
#!/usr/bin/env bash
port=$((20000 + RANDOM % 9000))
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=node$r \
		LD_PRELOAD="${LD_PRELOAD:-}${PRE:+${LD_PRELOAD:+:}$PRE}" python3 "$W/job.py" &
done
rc=0
wait -n || rc=$?
wait -n || rc=$?
exit $rc
SH
chmod +x "$W/launch2.sh"
export W STEPS SLEEP

# 1 and 2: cost, and one run's exporter against its report
declare -a off on
for k in $(seq "$ROUNDS"); do
	for m in off on; do
		[ $((k % 2)) = 0 ] && { [ "$m" = off ] && m=on || m=off; }
		if [ "$m" = off ]; then
			timeout 300 "$W/launch2.sh" >"$W/off.$k.txt" 2>&1
			off+=("$(sed -n 's/^step_ms //p' "$W/off.$k.txt")")
		elif [ "$k" = 1 ]; then
			rm -f "$W"/held.* "$W/go"
			HOLD=1 timeout 300 "$NW" run --no-history --job "cost$k" --out "$W/job.cost$k" -- "$W/launch2.sh" \
				>"$W/on.$k.txt" 2>"$OUT/run.cost$k.err" &
			for _ in $(seq 2400); do [ -f "$W/held.0" ] && [ -f "$W/held.1" ] && break; sleep 0.1; done
			sleep 1.5
			d=/dev/shm/ncclwatch-$(id -u)/run-cost1
			"$NW" exporter --once --detail size,source --histograms op,size --dir "$d" >"$OUT/exporter.cost1.txt" 2>&1
			touch "$W/go"
			wait
			on+=("$(sed -n 's/^step_ms //p' "$W/on.$k.txt")")
		else
			timeout 300 "$NW" run --no-history --job "cost$k" --out "$W/job.cost$k" -- "$W/launch2.sh" \
				>"$W/on.$k.txt" 2>"$OUT/run.cost$k.err"
			on+=("$(sed -n 's/^step_ms //p' "$W/on.$k.txt")")
		fi
	done
done
cp "$W/job.cost1/report.html" "$W/job.cost1/results.json" "$OUT/" 2>/dev/null
python3 - "${off[*]}" "${on[*]}" <<'PY' | tee -a "$T"
import sys, statistics
off = [float(v) for v in sys.argv[1].split()]
on = [float(v) for v in sys.argv[2].split()]
if not off or not on:
    print("%-62s %s" % ("cost: step times", "missing (off %d, on %d)" % (len(off), len(on))))
else:
    a, b = statistics.median(off), statistics.median(on)
    print("%-62s %s" % ("cost: median step ms without run, under run (%d, %d runs)" % (len(off), len(on)),
                        "%.3f %.3f (%+.2f%%)" % (a, b, 100 * (b - a) / a)))
    print("%-62s %s" % ("  each run without / with", " ".join("%.2f" % v for v in off) + " / " + " ".join("%.2f" % v for v in on)))
PY
# the report's busbw of a size: every rank's timed bytes over their kernel time (busbw factor 1 at 2
# ranks); the exporter's from its counters the same way (timed bytes, duration _sum, source kernel)
python3 - "$OUT/exporter.cost1.txt" "$OUT/results.json" <<'PY' | tee -a "$T"
import json, re, sys, collections
units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
tb, ns = collections.Counter(), collections.Counter()
try:
    for l in open(sys.argv[1]):
        m = re.match(r'(ncclwatch_coll_timed_bytes_total|ncclwatch_coll_duration_seconds_sum)\{(.*)\} (\S+)$', l)
        if not m or 'op="all_reduce"' not in m.group(2) or 'source="kernel"' not in m.group(2):
            continue
        s = re.search(r'size="(\d+)([KMG]?)"', m.group(2))
        b = int(s.group(1)) * units[s.group(2)]
        (tb if m.group(1).endswith("bytes_total") else ns)[b] += float(m.group(3))
    exp = {b: tb[b] / ns[b] / 1e9 for b in tb if ns[b] > 0}
    res = {}
    for r in json.load(open(sys.argv[2]))["results"]:
        if r["op"] == "all_reduce" and r["size_bytes"] >= (1 << 20):
            res[1 << (r["size_bytes"].bit_length() - 1)] = r["busbw_gbs"]
except Exception as e:
    print("%-62s %s" % ("exporter against the report", "could not compare: %s" % e)); sys.exit(0)
worst = 0
for b in sorted(res):
    if b in exp and exp[b] > 0:
        d = 100 * (res[b] - exp[b]) / exp[b]
        worst = max(worst, abs(d))
        print("%-62s %s" % ("  all_reduce busbw, size bucket %d MiB (report, exporter GB/s)" % (b >> 20), "%.3f %.3f %+.1f%%" % (res[b], exp[b], d)))
print("%-62s %s" % ("exporter against the report: sizes compared, worst difference", "%d, %.1f%% (target <= 5%%)" % (len([b for b in res if b in exp]), worst)))
PY
row "run's summary (cost1)" "$(grep -m1 'watched by' "$OUT/run.cost1.err" | cut -c1-160)"

# 3: a sleeping rank named as hung
rm -f "$W/sleep.mark"
SLEEP_AT=30 timeout $((SLEEP + 300)) "$NW" run --no-history --job hang --hang-s "$HANG_S" --sample-s 0.5 \
	--out "$W/job.hang" -- "$W/launch2.sh" >"$OUT/run.hang.out" 2> >(while IFS= read -r l; do
		printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$OUT/run.hang.err")
sleep 1
first=$(grep -m1 'HUNG' "$OUT/run.hang.err")
row "hang: run's HUNG line names rank 1" "$(echo "$first" | grep -o 'not arrived: rank [0-9]*' | head -1)"
row "hang: s from rank 1's sleep to run's HUNG line" \
	"$(echo "$first" | awk -v t0="$(cat "$W/sleep.mark" 2>/dev/null || echo 0)" '$1 > 0 { printf "%.1f", $1 - t0 }') (target <= $((HANG_S + 2)))"
cp "$W/job.hang/report.html" "$OUT/report.hang.html" 2>/dev/null
rm -rf "$W"
