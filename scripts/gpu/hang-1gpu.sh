#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a one-GPU machine: the hang checks with real NCCL and PyTorch, two ranks
# made two "nodes" on the one GPU with NCCL_HOSTID (as portable-1gpu.sh does;
# time-sliced over a socket: the paths, never a speed).
#   1. a two-process PyTorch job with the plugin: warm-up all_reduces, then
#      rank 1 sleeps SLEEP s before one more all_reduce while rank 0 enters it
#      at once. 'ncclwatch hang --json' is polled every 0.5 s from the moment
#      rank 1 starts sleeping: the time until it says hung with rank 1 not
#      arrived (target NCCLWATCH_HANG_S + 2 s), the op and sequence number it
#      names, the one WARN line per rank, and the dump the plugin wrote (Chrome
#      trace JSON, as Perfetto opens it, with the incomplete op).
#   2. the plugin's cost on one rank: bench all_reduce 1 MiB to 1 GiB with and
#      without NCCL_PROFILER_PLUGIN, three times each, alternating.
#   P=DIR OUT=DIR [SLEEP=40 HANG_S=10] scripts/gpu/hang-1gpu.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
SLEEP=${SLEEP:-40}
HANG_S=${HANG_S:-10}
mkdir -p "$OUT"
NW=$PWD/$P/ncclwatch
PLUGIN=$PWD/$P/libnccl-profiler-ncclwatch.so
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/hang1.XXXXXX)
export NCCLWATCH_DB=$W/history.db NCCLWATCH_DIR=$W/stats NCCLWATCH_HANG_S=$HANG_S
mkdir -p "$NCCLWATCH_DIR"
T=$OUT/table.txt
: >"$T"
row() { printf '%-52s %s\n' "$1" "$2" | tee -a "$T"; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >"$OUT/env.txt" 2>&1

cat >"$W/job.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
r = dist.get_rank()
x = torch.ones(1 << 20, device="cuda")  # 4 MiB
for i in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
dist.barrier()
torch.cuda.synchronize()
with open(os.environ["MARK"] + ".%d" % r, "w") as f:
    f.write("%.6f\n" % time.time())
if r == 1:
    time.sleep(float(os.environ["SLEEP"]))
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank", r, "done", x[0].item(), flush=True)
time.sleep(3)
dist.destroy_process_group()
PY
port=$((20000 + RANDOM % 9000))
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	NCCL_HOSTID=node$r NCCL_PROFILER_PLUGIN=$PLUGIN NCCL_DEBUG=WARN MARK=$W/mark SLEEP=$SLEEP \
		timeout $((SLEEP + 240)) python3 "$W/job.py" >"$OUT/job.$r.txt" 2>&1 &
done
for _ in $(seq 600); do [ -f "$W/mark.1" ] && break; sleep 0.1; done
t0=$(cat "$W/mark.1" 2>/dev/null || date +%s.%N)
found=
for _ in $(seq $((SLEEP * 2))); do
	"$NW" hang --json --no-ras >"$W/hang.json" 2>"$W/hang.err"
	rc=$?
	if [ "$rc" = 1 ] && python3 - "$W/hang.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = any(c["verdict"] == "hung" and any(m["rank"] == 1 for m in c["not_arrived"]) for c in d["communicators"])
sys.exit(0 if ok else 1)
PY
	then
		found=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
		cp "$W/hang.json" "$OUT/hang-at-verdict.json"
		"$NW" hang --no-ras >"$OUT/hang-at-verdict.txt" 2>&1
		break
	fi
	sleep 0.5
done
wait
row "job: both ranks finished after the sleep" "$(grep -h 'done' "$OUT"/job.*.txt | tr '\n' ' ')"
row "plugin loaded (rank 0 log names it)" "$(grep -ci 'ncclwatch' "$OUT/job.0.txt")"
row "hang: seconds from rank 1's sleep to 'hung, rank 1 not arrived'" "${found:-never} (target <= $((HANG_S + 2)))"
if [ -f "$OUT/hang-at-verdict.json" ]; then
	row "hang: op and seq named" "$(python3 -c "
import json; d = json.load(open('$OUT/hang-at-verdict.json'))
print(' '.join('%s/%s seq %s' % (c['comm'][:8], c.get('op'), c.get('seq')) for c in d['communicators'] if c['verdict'] == 'hung'))")"
fi
row "plugin WARN lines about the hang (rank 0, rank 1)" "$(grep -ci 'hung' "$OUT/job.0.txt") $(grep -ci 'hung' "$OUT/job.1.txt")"
ndump=0 incomplete=0
for f in "$NCCLWATCH_DIR"/trace.*.json; do
	[ -f "$f" ] || continue
	cp "$f" "$OUT/"
	ndump=$((ndump + 1))
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d['traceEvents'], list)" "$f" &&
		incomplete=$((incomplete + $(grep -o '"incomplete": *true' "$f" | wc -l)))
done
row "dumps written (valid trace JSON), incomplete ops in them" "$ndump, $incomplete"

# the plugin's cost: one rank, all_reduce 1 MiB..1 GiB, with and without it
for k in 1 2 3; do
	"$NW" bench --no-history --op all_reduce -b 1M -e 1G -f 4 -n 50 -w 10 >"$OUT/cost.off.$k.txt" 2>&1
	NCCL_PROFILER_PLUGIN=$PLUGIN "$NW" bench --no-history --op all_reduce -b 1M -e 1G -f 4 -n 50 -w 10 \
		>"$OUT/cost.on.$k.txt" 2>&1
done
python3 scripts/gpu/cost-table.py "$OUT" "plugin cost, one rank (median of 3 runs, out-of-place time us):" | tee -a "$T"
rm -rf "$W"
