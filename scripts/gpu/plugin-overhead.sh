#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the ncclwatch profiler plugin costs a running job, measured on GPUs.
#
#   make && make build/tests/nwstats_dump
#   OUT=/tmp/ovh scripts/gpu/plugin-overhead.sh            # all GPUs, at most 2
#   NGPUS=1 OUT=/tmp/ovh scripts/gpu/plugin-overhead.sh    # one-rank communicator
#
# For REPEATS rounds (default 3), interleaved, it runs
#   build/ncclwatch bench --op all_reduce -b 8 -e 1G -f 32 -n 200 -w 20 -c 0 (+ -b 1G -e 1G)
# and a PyTorch dist.all_reduce loop (torchrun, one process per GPU), each
# without and with NCCL_PROFILER_PLUGIN=<this build's plugin>, then prints
# the median time per op (8 B, 256 KB, 8 MB, 256 MB, 1 GB) without, with,
# and the difference in us and %. It also checks that NCCL loaded the plugin
# (NCCL_DEBUG=INFO lines) and that the stats files hold what ran (no drops,
# the same number of all_reduce ops at every size, at least -n per size).
#
# Environment: OUT (default ./out), NGPUS (default: visible GPUs, at most 2),
# REPEATS (3), NCCLWATCH_KERNEL (unset: the plugin's auto policy), NCCL_LIB
# (default: PyTorch's libnccl.so.2), PYTHON (python3), TORCHRUN (torchrun).
# Everything it writes goes under $OUT; the summary is also in $OUT/summary.txt.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUT=${OUT:-./out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
REPEATS=${REPEATS:-3}
PYTHON=${PYTHON:-python3}
TORCHRUN=${TORCHRUN:-torchrun}
NW=$ROOT/build/ncclwatch
PLUGIN=$ROOT/build/libnccl-profiler-ncclwatch.so
DUMP=$ROOT/build/tests/nwstats_dump
export NCCL_NVLS_ENABLE=0

die() { echo "plugin-overhead: $*" >&2; exit 2; }
[ -x "$NW" ] || die "no $NW: run 'make' first"
[ -f "$PLUGIN" ] || die "no $PLUGIN: run 'make' first"
[ -x "$DUMP" ] || die "no $DUMP: run 'make build/tests/nwstats_dump' first"
if [ -z "${NGPUS:-}" ]; then
	NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	[ "$NGPUS" -gt 2 ] && NGPUS=2
fi
[ "$NGPUS" -ge 1 ] 2>/dev/null || die "no GPU visible (nvidia-smi -L); set NGPUS"
if [ -z "${NCCL_LIB:-}" ]; then
	NCCL_LIB=$("$PYTHON" -c 'import nvidia.nccl, os; d = os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0]; print(os.path.join(d, "lib", "libnccl.so.2"))' 2>/dev/null)
fi
[ -f "${NCCL_LIB:-}" ] || die "cannot find PyTorch's libnccl.so.2; set NCCL_LIB"
echo "plugin-overhead: $NGPUS GPU(s), NCCL $NCCL_LIB, $REPEATS rounds, output in $OUT"

# One bench run: $1 = off|on, $2 = round, $3 = tag, rest = size flags.
bench() {
	local cfg=$1 rep=$2 tag=$3; shift 3
	local base=$OUT/bench-$tag-$cfg-$rep
	local env=(NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,ENV")
	if [ "$cfg" = on ]; then
		rm -rf "$OUT/stats-$tag-$rep"
		env+=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_DIR="$OUT/stats-$tag-$rep")
	fi
	env -u NCCL_PROFILER_PLUGIN "${env[@]}" "$NW" bench --op all_reduce "$@" -n 200 -w 20 -c 0 -g "$NGPUS" \
		--nccl-lib "$NCCL_LIB" --no-history --json="$base.json" >"$base.log" 2>&1
	local rc=$?
	[ $rc -eq 0 ] || echo "plugin-overhead: bench ($cfg, round $rep, $tag) exited $rc; see $base.log" >&2
}

# The PyTorch loop: one process per GPU, fp32 all_reduce, median-free mean per size.
cat >"$OUT/torch_allreduce.py" <<'PY'
import json, os, sys, time
import torch
import torch.distributed as dist
out = sys.argv[1]
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
res = {}
for size in (8, 256 << 10, 8 << 20, 256 << 20, 1 << 30):
    x = torch.ones(max(size // 4, 1), dtype=torch.float32, device="cuda")
    for _ in range(20):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    iters = 200
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    res[str(size)] = (time.perf_counter() - t0) / iters * 1e6
    del x
if dist.get_rank() == 0:
    with open(out, "w") as f:
        json.dump(res, f)
dist.destroy_process_group()
PY

torch_run() {
	local cfg=$1 rep=$2
	local base=$OUT/torch-$cfg-$rep
	local env=(NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,ENV")
	if [ "$cfg" = on ]; then
		rm -rf "$OUT/stats-torch-$rep"
		env+=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLWATCH_DIR="$OUT/stats-torch-$rep")
	fi
	env -u NCCL_PROFILER_PLUGIN "${env[@]}" "$TORCHRUN" --standalone --nproc_per_node="$NGPUS" "$OUT/torch_allreduce.py" "$base.json" \
		>"$base.log" 2>&1 || echo "plugin-overhead: torch ($cfg, round $rep) failed; see $base.log" >&2
}

have_torch=1
"$PYTHON" -c 'import torch, torch.distributed' 2>/dev/null || { have_torch=0; echo "plugin-overhead: no PyTorch: skipping the torch loop" >&2; }
command -v "$TORCHRUN" >/dev/null 2>&1 || { have_torch=0; echo "plugin-overhead: no torchrun: skipping the torch loop" >&2; }

for rep in $(seq 1 "$REPEATS"); do
	for cfg in off on; do
		echo "round $rep: bench, plugin $cfg"
		bench "$cfg" "$rep" sweep -b 8 -e 1G -f 32
		bench "$cfg" "$rep" 1g -b 1G -e 1G
		if [ $have_torch = 1 ]; then
			echo "round $rep: torch, plugin $cfg"
			torch_run "$cfg" "$rep"
		fi
	done
done

fail=0
# Did NCCL load the plugin, and did the plugin watch the communicators?
for log in "$OUT"/bench-*-on-*.log "$OUT"/torch-on-*.log; do
	[ -f "$log" ] || continue
	if ! grep -Eq "PROFILER/Plugin: Loaded ncclwatch|Successfully loaded external profiler plugin" "$log"; then
		echo "CHECK FAIL: NCCL did not report loading the plugin in $log"; fail=1
	elif ! grep -q "ncclwatch: profiler v" "$log"; then
		echo "CHECK FAIL: the plugin did not report watching a communicator in $log"; fail=1
	elif grep -q "ncclwatch profiler disabled" "$log"; then
		echo "CHECK FAIL: the plugin disabled itself in $log: $(grep -m1 'ncclwatch profiler disabled' "$log")"; fail=1
	fi
done
for log in "$OUT"/bench-*-off-*.log "$OUT"/torch-off-*.log; do
	[ -f "$log" ] || continue
	grep -q "ncclwatch: profiler v" "$log" && { echo "CHECK FAIL: plugin loaded in a run without it: $log"; fail=1; }
done

# Do the stats files hold what ran? (counts per size bucket, drops, sources)
for d in "$OUT"/stats-*; do
	[ -d "$d" ] || continue
	"$DUMP" "$d" >"$d.txt" 2>&1 || { echo "CHECK FAIL: cannot read $d (see $d.txt)"; fail=1; continue; }
	"$PYTHON" - "$d.txt" <<'PY' || fail=1
import re, sys
path = sys.argv[1]
bench = "/stats-torch-" not in path
ok = True
ranks, recs = [], {}
for line in open(path):
    kv = dict(re.findall(r'(\w+)=(\S+)', line))
    if line.startswith("rank "):
        ranks.append(kv)
        if int(kv["dropped"]) or int(kv["bad"]):
            print(f"CHECK FAIL: {path}: rank {kv['rank']} dropped={kv['dropped']} bad={kv['bad']}"); ok = False
        if kv["state"] not in ("finished", "live", "stale"):
            print(f"CHECK FAIL: {path}: rank {kv['rank']} state {kv['state']}"); ok = False
    elif line.startswith("rec ") and kv["op"] == "all_reduce":
        recs.setdefault((kv["comm"], kv["rank"]), []).append(kv)
    elif line.startswith("bad "):
        print(f"CHECK FAIL: {path}: {line.strip()}"); ok = False
if not ranks:
    print(f"CHECK FAIL: {path}: no stats file"); ok = False
for key, rows in recs.items():
    counts = {int(r["count"]) for r in rows}
    if min(counts) < 200:
        print(f"CHECK FAIL: {path}: comm {key[0]} rank {key[1]}: all_reduce counts per size {sorted(counts)} "
              "(every size ran at least 200 times)"); ok = False
    elif bench and len(counts) != 1:
        print(f"  note: {path}: comm {key[0]} rank {key[1]}: all_reduce counts differ between sizes: "
              f"{sorted(counts)}")
    for r in rows:
        print(f"  {path.split('/')[-1][:-4]} rank {key[1]} size>={r['bucket']:>10} B: {r['count']} ops, "
              f"kernel-timed {r['kernel']}, cpu-only {r['cpu']}, mean {r['mean_us']} us ({r['src']})")
sys.exit(0 if ok else 1)
PY
done

# The table: median over rounds of the out-of-place time per op.
"$PYTHON" - "$OUT" "$REPEATS" "$NGPUS" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out, reps, ngpus = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sizes = [(8, "8 B"), (256 << 10, "256 KB"), (8 << 20, "8 MB"), (256 << 20, "256 MB"), (1 << 30, "1 GB")]
def bench_times(cfg):
    t = {}
    for rep in range(1, reps + 1):
        for tag in ("sweep", "1g"):
            p = f"{out}/bench-{tag}-{cfg}-{rep}.json"
            if not os.path.exists(p):
                continue
            for r in json.load(open(p)).get("results", []):
                if r.get("op") == "all_reduce" and not r.get("inplace") and r.get("time_us") is not None:
                    t.setdefault(int(r["size_bytes"]), []).append(float(r["time_us"]))
    return t
def torch_times(cfg):
    t = {}
    for rep in range(1, reps + 1):
        p = f"{out}/torch-{cfg}-{rep}.json"
        if os.path.exists(p):
            for k, v in json.load(open(p)).items():
                t.setdefault(int(k), []).append(float(v))
    return t
def table(title, off, on):
    print(f"\n{title} ({ngpus} GPU(s), median of {reps} rounds, us per op)")
    print(f"{'size':>8} {'without':>11} {'with':>11} {'delta us':>9} {'delta %':>8}")
    for s, name in sizes:
        if s not in off or s not in on:
            print(f"{name:>8} {'-':>11} {'-':>11} {'-':>9} {'-':>8}")
            continue
        a, b = statistics.median(off[s]), statistics.median(on[s])
        print(f"{name:>8} {a:11.2f} {b:11.2f} {b - a:+9.2f} {100 * (b - a) / a:+7.2f}%")
table("ncclwatch bench --op all_reduce -n 200 -w 20 -c 0 (out-of-place)", bench_times("off"), bench_times("on"))
if any(os.path.exists(f"{out}/torch-off-{r}.json") for r in range(1, reps + 1)):
    table("PyTorch dist.all_reduce fp32 loop (200 iterations)", torch_times("off"), torch_times("on"))
print("\ntargets: under 0.5 us per op at 8 B, under 1% at 1 MB and above")
PY

if [ $fail -ne 0 ]; then
	echo "plugin-overhead: some checks failed (see CHECK FAIL lines above)"
	exit 1
fi
echo "plugin-overhead: checks passed (plugin loaded in every run with it; stats files complete)"
