#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Eight ranks as eight "nodes" on one GPU: each rank its own NCCL_HOSTID, so
# NCCL connects them over NET/Socket (rings and trees across 8 nodes) while
# their kernels time-share the GPU. What differs from a real 8-node job:
# one GPU time-sliced by 8 processes (times mean nothing, the paths do), no
# NIC (sockets over loopback), one PCIe device, one host's clock.
#
#   P=.gpu OUT=/tmp/s8 [RANKS=8] [HANG_S=10] [SLEEP=30] scripts/gpu/scale8.sh
#
# Steps (each a row of the table printed last):
#   1. one small all_reduce's time at 2, 4 and 8 ranks (to size the rest)
#   2. bench --op all, small sizes, verified, every root, --per-rank,
#      with mpirun -np 8 when mpirun is there, and with the env rendezvous
#      (8 processes with RANK/WORLD_SIZE/MASTER_ADDR), and --pairs (28 pairs)
#   3. check with 8 ranks: the expectation for a socket path, the verdict
#   4. the plugin in an 8-rank PyTorch job: every rank's stats file, top and
#      exporter --once with 8 ranks (series per node), the time source per
#      rank, busbw against bench's for the same op and size
#   5. one rank sleeping before one all_reduce: hang names that rank and the
#      sequence number among 8 within HANG_S + 2 s, and NCCL's RAS agrees
#   6. logscan on the 8-node NCCL_DEBUG=INFO log: 8 nodes, 8 ranks, the
#      network, ring/tree structure
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
N=${RANKS:-8}
HANG_S=${HANG_S:-10}
SLEEP=${SLEEP:-30}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
NW=$PWD/$P/ncclwatch
PLUGIN=$PWD/$P/libnccl-profiler-ncclwatch.so
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d /tmp/scale8.XXXXXX)
export NCCLWATCH_DB=$W/history.db
T=$OUT/scale8-table.txt
: >"$T"
row() { printf '%-58s %s\n' "$1" "$2" | tee -a "$T"; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; command -v mpirun; } >"$OUT/env.txt" 2>&1

# envrun NRANKS OUTPREFIX CMD...: NRANKS processes meeting through the env
# rendezvous, each its own "node"; rank outputs in OUTPREFIX.RANK.txt; waits.
envrun() {
	local n=$1 pre=$2 port=$((20000 + RANDOM % 9000)) r
	shift 2
	for r in $(seq 0 $((n - 1))); do
		RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			NCCL_HOSTID=node$r timeout 300 "$@" >"$pre.$r.txt" 2>&1 &
	done
	wait
}

# 1. one small all_reduce at 2, 4 and 8 ranks
for n in 2 4 8; do
	[ "$n" -le "$N" ] || continue
	envrun "$n" "$W/lat$n" "$NW" bench --no-history -b 8 -e 8 -n 20 -w 5 -c 1
	row "all_reduce 8 B at $n ranks over sockets (us, rank 0)" "$(awk '$1==8{print $6; exit}' "$W/lat$n.0.txt")"
done

# 2. every op verified, every root, per-rank detail, pairs
s=$(date +%s.%N)
envrun "$N" "$W/all" "$NW" bench --no-history --op all -r all -b 8 -e 64K -f 8 -n 5 -w 1 -c 1 --per-rank \
	--json="$W/all.json"
cp "$W/all.0.txt" "$OUT/bench-all-env.txt"
row "env rendezvous: bench --op all -r all -c 1 --per-rank (s)" "$(secs "$s"), $(grep -c '^ \+[0-9]' "$W/all.0.txt") rows, sections not OK: $(grep 'Out of bounds' "$W/all.0.txt" | grep -vc ': 0 OK')"
row "  ranks in the per-rank lines (max)" "$(grep -o '^#   [a-z-]* ranks:.*' "$W/all.0.txt" | head -1 | grep -o '[0-9]*@' | wc -l)"
if command -v mpirun >/dev/null; then
	s=$(date +%s.%N)
	mpirun --oversubscribe -np "$N" -x NCCL_NVLS_ENABLE bash -c \
		'NCCL_HOSTID=node$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$NW" bench --no-history --op all -r all -b 8 -e 64K -f 8 \
		-n 5 -w 1 -c 1 >"$OUT/bench-all-mpi.txt" 2>&1
	rc=$?
	row "mpirun -np $N: bench --op all -r all -c 1 (rc, s)" "rc=$rc $(secs "$s"), sections not OK: $(grep 'Out of bounds' "$OUT/bench-all-mpi.txt" | grep -vc ': 0 OK')"
else
	row "mpirun -np $N" "no mpirun on this machine: not run"
fi
envrun "$N" "$W/pairs" "$NW" bench --no-history --pairs -b 1K -e 64K -n 5 -w 1 -c 1 --json="$W/pairs.json"
cp "$W/pairs.0.txt" "$OUT/bench-pairs.txt"
row "--pairs: pairs measured, wrong" "$(python3 -c "
import json; d=json.load(open('$W/pairs.json')); p=d['run']['extra']['pairs']['pairs']
print(len(p), sum(x.get('wrong', 0) for x in p))" 2>&1)"

# 3. check with 8 ranks
envrun "$N" "$W/check" "$NW" check --no-history -b 1M -e 16M -n 5 -w 1
cp "$W/check.0.txt" "$OUT/check.txt"
row "check with $N ranks: verdict" "$(grep -m1 -E '^ncclwatch check: (PASS|WARN|FAIL)' "$W/check.0.txt")"
row "  all_reduce item" "$(grep -m1 -E '^  (PASS|WARN|FAIL) all_reduce' "$W/check.0.txt" | cut -c1-150)"
row "  items that are not PASS" "$(grep -E '^  (WARN|FAIL) ' "$W/check.0.txt" | awk '{print $2}' | tr '\n' ' ')"

# 4. the plugin in an 8-rank PyTorch job
cat >"$W/job.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
r, n = dist.get_rank(), dist.get_world_size()
x = torch.ones(1 << 20, device="cuda")      # 4 MiB
ITERS = int(os.environ.get("ITERS", "50"))
torch.cuda.synchronize()
t0 = time.time()
for i in range(ITERS):
    dist.all_reduce(x)
torch.cuda.synchronize()
dt = (time.time() - t0) / ITERS
if r == 0:
    print("job all_reduce 4MiB busbw %.3f GB/s time %.1f us" % (4 * (1 << 20) / dt / 1e9 * 2 * (n - 1) / n, dt * 1e6), flush=True)
dist.barrier()
torch.cuda.synchronize()
with open(os.environ["MARK"] + ".%d" % r, "w") as f:
    f.write("%.6f\n" % time.time())
if int(os.environ.get("SLEEPER", "-1")) == r:
    time.sleep(float(os.environ["SLEEP"]))
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank", r, "done", flush=True)
time.sleep(2)
dist.destroy_process_group()
PY
export NCCLWATCH_DIR=$W/stats NCCLWATCH_HANG_S=$HANG_S
mkdir -p "$NCCLWATCH_DIR"
# a job without a sleeper: stats, top and exporter with 8 ranks
NCCL_PROFILER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$W/nccl.%h.%p.log MARK=$W/m0 \
	envrun "$N" "$W/job" python3 "$W/job.py"
cat "$W"/nccl.*.log >"$OUT/nccl-debug-8nodes.log" 2>/dev/null
"$NW" top --once --all >"$OUT/top-once.txt" 2>&1
"$NW" exporter --once --all >"$OUT/exporter-once.txt" 2>&1
row "job: rank 0 says" "$(grep -m1 '^job ' "$W/job.0.txt")"
row "stats files after the job" "$(find "$NCCLWATCH_DIR" -maxdepth 1 -type f | wc -l)"
row "top --once: ranks shown" "$(grep -cE '^ *[0-9a-f]{4,}.* all_reduce' "$OUT/top-once.txt")"
row "exporter --once: series" "$(grep -vc '^#' "$OUT/exporter-once.txt")"
row "top --once: time source per rank (SRC)" "$(awk '$5 == "all_reduce" {print $15}' "$OUT/top-once.txt" | sort | uniq -c | tr '\n' ' ')"
envrun "$N" "$W/b4m" "$NW" bench --no-history -b 4M -e 4M -n 50 -w 5 -c 0
row "bench all_reduce 4 MiB busbw, rank 0 (GB/s)" "$(awk '$1==4194304{print $8; exit}' "$W/b4m.0.txt")"
row "top's all_reduce busbw per rank, over its life (GB/s)" "$(awk '$5 == "all_reduce" {print $11}' "$OUT/top-once.txt" | tr '\n' ' ')"

# 5. one rank sleeps before an all_reduce: hang names it among N
rm -rf "${NCCLWATCH_DIR:?}"/*
SL=$((N - 3))
port=$((20000 + RANDOM % 9000))
for r in $(seq 0 $((N - 1))); do
	RANK=$r WORLD_SIZE=$N LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=node$r \
		NCCL_PROFILER_PLUGIN=$PLUGIN NCCL_DEBUG=WARN MARK=$W/mark SLEEPER=$SL SLEEP=$SLEEP ITERS=20 \
		timeout $((SLEEP + 240)) python3 "$W/job.py" >"$W/hjob.$r.txt" 2>&1 &
done
for _ in $(seq 900); do [ -f "$W/mark.$SL" ] && break; sleep 0.1; done
t0=$(cat "$W/mark.$SL" 2>/dev/null || date +%s.%N)
found=
for _ in $(seq $((SLEEP * 2))); do
	"$NW" hang --json >"$W/hang.json" 2>"$W/hang.err"
	if [ $? = 1 ] && python3 - "$W/hang.json" "$SL" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); sl = int(sys.argv[2])
sys.exit(0 if any(c["verdict"] == "hung" and [m["rank"] for m in c["not_arrived"]] == [sl] for c in d["communicators"]) else 1)
PY
	then
		found=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
		cp "$W/hang.json" "$OUT/hang-at-verdict.json"
		"$NW" hang >"$OUT/hang-at-verdict.txt" 2>&1
		break
	fi
	sleep 0.5
done
wait
row "hang: s from rank $SL's sleep to 'hung, rank $SL not arrived'" "${found:-never} (target <= $((HANG_S + 2)))"
[ -f "$OUT/hang-at-verdict.json" ] && row "hang: comm, op, seq, ranks in the view, RAS" "$(python3 -c "
import json; d = json.load(open('$OUT/hang-at-verdict.json'))
for c in d['communicators']:
    if c['verdict'] == 'hung':
        print(c.get('op'), 'seq', c.get('seq'), 'nranks', c.get('nranks'), 'ras', json.dumps(d['read'].get('ras', {}))[:100])")"

# 6. logscan on the 8-node log
"$NW" logscan "$OUT/nccl-debug-8nodes.log" >"$OUT/logscan.txt" 2>&1
"$NW" logscan --json "$OUT/nccl-debug-8nodes.log" >"$W/logscan.json" 2>/dev/null
row "logscan: nodes, ranks, transports" "$(python3 -c "
import json; d = json.load(open('$W/logscan.json'))
print('nodes', d.get('nhosts'), 'ranks', d.get('nranks'), 'transports', sorted({p.get('transport') for p in d.get('pairs', [])}))" 2>&1)"
row "logscan: rings/trees lines" "$(grep -ciE 'ring|tree' "$OUT/logscan.txt")"
tar czf "$OUT/scale8-logs.tgz" -C "$W" --exclude=stats . 2>/dev/null
echo "== table"; cat "$T"
rm -rf "$W"
