#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a one-GPU machine: live monitoring with the NCCL releases PyTorch
# images carry, not only 2.27+. Two ranks of a job are made two "nodes" on
# the one GPU with NCCL_HOSTID (as hang-1gpu.sh does: the paths and the
# counts, never a speed). For each NCCL and way of watching:
#   2.21.5  the interposer (LD_PRELOAD; 2.21 has no profiler interface)
#   2.26.2  the profiler plugin through interface v3
#   the machine's own NCCL (PyTorch's): the plugin, and the interposer
# The machine's PyTorch (2.11) will not load an NCCL older than the one it
# was built for (it binds ncclCommWindowDeregister), so with 2.21.5 and
# 2.26.2 the job is the same loop in Python over ctypes: NCCL's names bound
# through the process's global scope as PyTorch's extension binds them
# (the interposer's first), CUDA's runtime from PyTorch's wheel. Each way,
# the job makes N1 all_reduces of 4 MiB and N1/5 of 64 MiB per rank, then
# waits; exporter --once (--detail all) is read while it waits (ops and
# bytes against what the job issued), NCCLWATCH_LOG_S lines are counted;
# then rank 1 sleeps SLEEP s before one more all_reduce and 'hang --json'
# is polled until it names rank 1 (target NCCLWATCH_HANG_S + 2 s).
# 2.21.5 also under `ncclwatch run --nccl-lib` (it picks the interposer):
# the report is written and counts the calls.
# Then the interposer's cost per op on one rank (bench all_reduce, NCCL
# 2.21.5, interleaved runs with and without it: the median difference and
# its 95% interval at 8 B, 256 KB, 1 MB, 64 MB), and the interposer against
# the plugin on the machine's NCCL for the same two-rank bench (op counts,
# busbw per size from the stats). A table is printed last.
#
#   P=.gpu NCCLS=.gpu/nccl OUT=/tmp/lo [N1=100 SLEEP=20 HANG_S=10 PAIRS=20 PARTS=...] scripts/gpu/live-old-nccl.sh
#
# PARTS picks sections (default all): ipo221 plug226 run221 own two cost.
# The cost section runs three ways, interleaved and rotated each pair: no
# interposer, the interposer as it is, and the interposer with timing off
# (NCCLWATCH_TIMED_PER_S=0: no capture check, no events), and times the
# steps the interposer adds to each op with cuprim (scripts/gpu/cuprim.c,
# built here with cc, or carried as $P/cuprim).
#
# NCCLS holds libnccl.so.2.21.5.xz and libnccl.so.2.26.2.xz, built by
# scripts/build-old-nccl (sm_90 only); a missing one skips its rows.
set -u
cd "$(dirname "$0")/../.." || exit 2
P=${P:-build-portable}
OUT=${OUT:-./out}
NCCLS=${NCCLS:-.gpu/nccl}
N1=${N1:-100}
SLEEP=${SLEEP:-20}
HANG_S=${HANG_S:-10}
PAIRS=${PAIRS:-20}
PARTS=" ${PARTS:-ipo221 plug226 run221 own two cost} "
part() { case "$PARTS" in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
NW=$PWD/$P/ncclwatch
PLUGIN=$PWD/$P/libnccl-profiler-ncclwatch.so
IPOSE=$PWD/$P/libncclwatch-interpose.so
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/liveold.XXXXXX)
T=$OUT/table.txt
: >"$T"
row() { printf '%-60s %s\n' "$1" "$2" | tee -a "$T"; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >"$OUT/env.txt" 2>&1
for v in 2.21.5 2.26.2; do
	[ -f "$NCCLS/libnccl.so.$v.xz" ] && xz -dc "$NCCLS/libnccl.so.$v.xz" >"$W/libnccl.so.$v"
done
SYSNCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
echo "machine's NCCL: $SYSNCCL" >>"$OUT/env.txt"

cat >"$W/job.py" <<'PY'
import os, sys, time, torch, torch.distributed as dist
w = os.environ["W"]
def mark(name):
    open(os.path.join(w, name), "w").close()
def wait_for(name, limit=120):
    t = time.time()
    while not os.path.exists(os.path.join(w, name)):
        if time.time() - t > limit:
            sys.exit("timed out waiting for " + name)
        time.sleep(0.05)
dist.init_process_group("nccl")
r = dist.get_rank()
n1 = int(os.environ["N1"])
x = torch.ones(1 << 20, device="cuda")   # 4 MiB
y = torch.ones(1 << 24, device="cuda")   # 64 MiB
for i in range(n1):
    dist.all_reduce(x)
for i in range(n1 // 5):
    dist.all_reduce(y)
torch.cuda.synchronize()
print("nccl", torch.cuda.nccl.version(), flush=True)
mark("issued.%d" % r)
wait_for("go")
if r == 1:
    time.sleep(float(os.environ["SLEEP"]))
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank", r, "done", flush=True)
dist.destroy_process_group()
PY

cat >"$W/cjob.py" <<'PY'
# the torch job's loop over ctypes: NCCL from the global scope, CUDA's runtime from PyTorch's wheel
import ctypes, glob, os, sys, time
w, r = os.environ["W"], int(os.environ["RANK"])
def mark(name):
    open(os.path.join(w, name), "w").close()
def wait_for(name, limit=120):
    t = time.time()
    while not os.path.exists(os.path.join(w, name)):
        if time.time() - t > limit:
            sys.exit("timed out waiting for " + name)
        time.sleep(0.05)
rt = None
for d in sys.path:
    for f in sorted(glob.glob(os.path.join(d, "nvidia", "**", "libcudart.so.*"), recursive=True)):
        rt = rt or f
cuda = ctypes.CDLL(rt)
g = ctypes.CDLL(None)
class UID(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
vp, sz = ctypes.c_void_p, ctypes.c_size_t
g.ncclGetUniqueId.argtypes = [ctypes.POINTER(UID)]
g.ncclCommInitRank.argtypes = [ctypes.POINTER(vp), ctypes.c_int, UID, ctypes.c_int]
g.ncclAllReduce.argtypes = [vp, vp, sz, ctypes.c_int, ctypes.c_int, vp, vp]
g.ncclCommDestroy.argtypes = [vp]
def ck(rc, what):
    if rc:
        sys.exit("%s failed: %d" % (what, rc))
ck(cuda.cudaSetDevice(0), "cudaSetDevice")
ver = ctypes.c_int()
ck(g.ncclGetVersion(ctypes.byref(ver)), "ncclGetVersion")
uid = UID()
idf = os.path.join(w, "uid")
if r == 0:
    ck(g.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    open(idf + ".tmp", "wb").write(ctypes.string_at(ctypes.byref(uid), 128))
    os.rename(idf + ".tmp", idf)
else:
    wait_for("uid")
    ctypes.memmove(ctypes.byref(uid), open(idf, "rb").read(), 128)
comm, stream = vp(), vp()
ck(g.ncclCommInitRank(ctypes.byref(comm), 2, uid, r), "ncclCommInitRank")
ck(cuda.cudaStreamCreate(ctypes.byref(stream)), "cudaStreamCreate")
bufs = []
for n in (1 << 20, 1 << 24):
    p = vp()
    ck(cuda.cudaMalloc(ctypes.byref(p), sz(4 * n)), "cudaMalloc")
    bufs.append((p, n))
n1 = int(os.environ["N1"])
def allreduce(p, n):
    ck(g.ncclAllReduce(p, p, n, 7, 0, comm, stream), "ncclAllReduce")  # float32, sum, in place
for i in range(n1):
    allreduce(*bufs[0])
for i in range(n1 // 5):
    allreduce(*bufs[1])
ck(cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
v = ver.value
print("nccl (%d, %d, %d)" % (v // 10000, v // 100 % 100, v % 100), flush=True)
mark("issued.%d" % r)
wait_for("go")
if r == 1:
    time.sleep(float(os.environ["SLEEP"]))
allreduce(*bufs[0])
ck(cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
print("rank", r, "done", flush=True)
g.ncclCommDestroy(comm)
PY

# job NAME NCCLLIB(or '') MODE(plugin|interposer) [SCRIPT: job.py]
job() {
	local name=$1 lib=$2 mode=$3 py=${4:-job.py} r port=$((20000 + RANDOM % 9000)) pre="" plug="" stats=$W/$1.stats
	rm -f "$W"/issued.* "$W/go" "$W/uid"
	mkdir -p "$stats"
	[ -n "$lib" ] && pre=$lib
	if [ "$mode" = interposer ]; then pre=$IPOSE${pre:+:$pre}; else plug=$PLUGIN; fi
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			NCCL_HOSTID=node$r ${pre:+LD_PRELOAD=$pre} ${plug:+NCCL_PROFILER_PLUGIN=$plug} NCCL_DEBUG=WARN \
			NCCLWATCH_DIR="$stats" NCCLWATCH_HANG_S="$HANG_S" NCCLWATCH_LOG_S=1 NCCLWATCH_LOG=stderr \
			W="$W" N1="$N1" SLEEP="$SLEEP" timeout $((SLEEP + 180)) python3 "$W/$py" >"$OUT/$name.job.$r.txt" 2>&1 &
	done
	local ok=0
	for _ in $(seq 1200); do
		[ -f "$W/issued.0" ] && [ -f "$W/issued.1" ] && { ok=1; break; }
		[ "$(jobs -rp | wc -l)" -eq 0 ] && break
		sleep 0.1
	done
	if [ "$ok" = 1 ]; then
		sleep 1.5 # the publisher's next look (NCCLWATCH_PERIOD_MS) and a log line
		NCCLWATCH_DIR=$stats "$NW" exporter --once --detail all >"$OUT/$name.exporter.txt" 2>&1
		NCCLWATCH_DIR=$stats "$NW" top --once >"$OUT/$name.top.txt" 2>&1
		touch "$W/go"
		local t0 found=""
		t0=$(date +%s.%N)
		for _ in $(seq $((SLEEP * 2))); do
			if NCCLWATCH_DIR=$stats "$NW" hang --json --no-ras >"$W/hang.json" 2>/dev/null; [ $? = 1 ] &&
				python3 - "$W/hang.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(c["verdict"] == "hung" and any(m["rank"] == 1 for m in c["not_arrived"]) for c in d["communicators"]) else 1)
PY
			then
				found=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
				cp "$W/hang.json" "$OUT/$name.hang.json"
				break
			fi
			sleep 0.5
		done
	fi
	wait
	local want_ops=$((N1 + N1 / 5)) want_bytes=$((N1 * 4194304 + (N1 / 5) * 67108864))
	row "$name: job (NCCL the job reported; ranks done)" \
		"$(grep -h '^nccl' "$OUT/$name.job.0.txt" | head -1 | tr -d '\n'); $(cat "$OUT"/"$name".job.*.txt | grep -c '^rank . done')/2"
	if [ "$ok" != 1 ]; then
		row "$name: did not reach its first mark" "$(tail -2 "$OUT/$name.job.0.txt" | tr '\n' ' ' | cut -c1-150)"
		return
	fi
	row "$name: exporter all_reduce ops, bytes per rank (want $want_ops, $want_bytes)" "$(python3 - "$OUT/$name.exporter.txt" <<'PY'
import re, sys, collections
ops, byt = collections.Counter(), collections.Counter()
for l in open(sys.argv[1]):
    m = re.match(r'(ncclwatch_coll_(ops|bytes)_total)\{(.*)\} (\S+)$', l)
    if not m or 'op="all_reduce"' not in m.group(3):
        continue
    rank = re.search(r'rank="(\d+)"', m.group(3)).group(1)
    (ops if m.group(2) == "ops" else byt)[rank] += float(m.group(4))
print(" ".join("r%s %d %d" % (k, ops[k], byt[k]) for k in sorted(ops)) or "none")
PY
)"
	row "$name: stats files' writer (exporter's profiler_abi label)" "$(grep -o 'profiler_abi="[^"]*"' "$OUT/$name.exporter.txt" | sort | uniq -c | tr '\n' ' ' | tr -s ' ')"
	row "$name: NCCLWATCH log lines (rank 0, rank 1)" "$(grep -c '^NCCLWATCH v=1' "$OUT/$name.job.0.txt") $(grep -c '^NCCLWATCH v=1' "$OUT/$name.job.1.txt")"
	row "$name: s from rank 1's sleep to 'hung, rank 1 not arrived'" "${found:-never} (target <= $((HANG_S + 2)))"
	cp -r "$stats" "$OUT/$name.stats" 2>/dev/null
}

[ -f "$W/libnccl.so.2.21.5" ] && part ipo221 && job nccl2.21.5-interposer "$W/libnccl.so.2.21.5" interposer cjob.py
[ -f "$W/libnccl.so.2.26.2" ] && part plug226 && job nccl2.26.2-plugin "$W/libnccl.so.2.26.2" plugin cjob.py
# 2.21.5 under ncclwatch run: it decides the interposer for that NCCL and sets it up
if [ -f "$W/libnccl.so.2.21.5" ] && part run221; then
	cat >"$W/launch2.sh" <<'SH'
#!/usr/bin/env bash
port=$((20000 + RANDOM % 9000))
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=node$r \
		LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$PRE" python3 "$W/cjob.py" &
done
sleep 1; touch "$W/go"
rc=0; wait -n || rc=$?; wait -n || rc=$?; exit $rc
SH
	chmod +x "$W/launch2.sh"
	rm -f "$W"/issued.* "$W/go" "$W/uid"
	env W="$W" N1="$N1" SLEEP=0 PRE="$W/libnccl.so.2.21.5" timeout 240 "$NW" run --no-history --job old221 --out "$W/job.old221" \
		--nccl-lib "$W/libnccl.so.2.21.5" -- "$W/launch2.sh" >"$OUT/run-2.21.5.out" 2>"$OUT/run-2.21.5.err"
	row "run --nccl-lib 2.21.5: exit, report written" "$? $([ -f "$W/job.old221/report.html" ] && echo yes || echo no)"
	row "  its summary" "$(grep -m1 'watched by' "$OUT/run-2.21.5.err" | cut -c1-150)"
	cp "$W/job.old221/report.html" "$OUT/report-2.21.5.html" 2>/dev/null
fi
part own && job own-plugin "" plugin
part own && job own-interposer "" interposer

# The interposer against the plugin on the machine's NCCL, the same two-rank bench.
two() {
	local name=$1 r port=$((20000 + RANDOM % 9000))
	shift
	mkdir -p "$W/$name"
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			NCCL_HOSTID=node$r NCCLWATCH_DIR="$W/$name" NCCLWATCH_TIMED_PER_S=all "$@" \
			timeout 240 "$NW" bench --no-history --op all_reduce -b 1M -e 64M -f 4 -n 20 -w 2 -c 0 \
			--nccl-lib "$SYSNCCL" >"$OUT/$name.$r.txt" 2>&1 &
	done
	wait
	NCCLWATCH_DIR=$W/$name "$NW" exporter --once --detail all --all >"$OUT/$name.exporter.txt" 2>&1
}
if [ -n "$SYSNCCL" ] && part two; then
	two bench-plugin NCCL_PROFILER_PLUGIN="$PLUGIN"
	two bench-interposer LD_PRELOAD="$IPOSE"
	python3 - "$OUT/bench-plugin.exporter.txt" "$OUT/bench-interposer.exporter.txt" <<'PY' | tee -a "$T"
import re, sys, collections
def read(p):
    ops, bw = collections.Counter(), {}
    for l in open(p):
        m = re.match(r'(ncclwatch_coll_\w+)\{(.*)\} (\S+)$', l)
        if not m or 'op="all_reduce"' not in m.group(2) or 'rank="0"' not in m.group(2):
            continue
        if m.group(1) == "ncclwatch_coll_ops_total":
            ops["all"] += float(m.group(3))
        if m.group(1) == "ncclwatch_coll_busbw_bytes_per_second":
            s = re.search(r'size="([^"]+)"', m.group(2))
            bw[s.group(1) if s else "?"] = float(m.group(3))
    return ops, bw
po, pb = read(sys.argv[1])
io, ib = read(sys.argv[2])
print("%-60s %s" % ("bench 2 ranks, own NCCL: all_reduce ops rank 0 (plugin, interposer)", "%d %d" % (po["all"], io["all"])))
for s in sorted(set(pb) | set(ib), key=lambda k: (len(k), k)):
    a, b = pb.get(s), ib.get(s)
    d = "%+.1f%%" % (100 * (b - a) / a) if a and b else "-"
    print("%-60s %s" % ("  busbw at %s (plugin, interposer GB/s, diff)" % s,
                        "%s %s %s" % ("%.2f" % (a / 1e9) if a else "-", "%.2f" % (b / 1e9) if b else "-", d)))
PY
fi

# The interposer's cost on one rank, NCCL 2.21.5: three ways per pair (none, on, on with timing off),
# interleaved, the order rotated every pair; then its steps one by one (cuprim).
if [ -f "$W/libnccl.so.2.21.5" ] && part cost; then
	CUPRIM=$P/cuprim
	[ -x "$CUPRIM" ] || { command -v cc >/dev/null && cc -O2 -o "$W/cuprim" scripts/gpu/cuprim.c -ldl && CUPRIM=$W/cuprim; }
	[ -x "$CUPRIM" ] && "$CUPRIM" 2000000 >"$OUT/cuprim.txt" 2>&1
	ways=(off on on0)
	for k in $(seq "$PAIRS"); do
		for j in 0 1 2; do
			m=${ways[$(((j + k) % 3))]}
			pre=()
			[ "$m" != off ] && pre=(LD_PRELOAD="$IPOSE")
			[ "$m" = on0 ] && pre+=(NCCLWATCH_TIMED_PER_S=0)
			env "${pre[@]}" NCCLWATCH_DIR="$W/cost" "$NW" bench --no-history \
				--nccl-lib "$W/libnccl.so.2.21.5" --op all_reduce -b 8 -e 64M -f 2 -n 1000 -w 50 -c 0 -o sum \
				--json="$W/cost.$m.$k.json" >/dev/null 2>"$W/cost.$m.$k.err"
		done
	done
	mkdir -p "$OUT/cost" && cp "$W"/cost.*.json "$OUT/cost/" 2>/dev/null
	python3 - "$W" "$PAIRS" <<'PY' | tee -a "$T"
import json, sys, statistics, math
w, n = sys.argv[1], int(sys.argv[2])
def times(p):
    d = json.load(open(p))
    return {r["size_bytes"]: r["time_us"] for r in d["results"] if not r.get("inplace")}
for way, what in (("on", "interposer"), ("on0", "interposer, NCCLWATCH_TIMED_PER_S=0")):
    diffs = {}
    for k in range(1, n + 1):
        try:
            a, b = times("%s/cost.off.%d.json" % (w, k)), times("%s/cost.%s.%d.json" % (w, way, k))
        except Exception:
            continue
        for s in a:
            if s in b:
                diffs.setdefault(s, []).append((b[s] - a[s], a[s]))
    print("%-60s %s" % ("cost of the %s, 1 rank, NCCL 2.21.5 (%d pairs)" % (what, len(next(iter(diffs.values()), []))),
                        "median diff us [95% CI], % of time"))
    for s in (8, 262144, 1048576, 67108864):
        v = sorted(d for d, _ in diffs.get(s, []))
        if len(v) < 4:
            print("  %-58s %s" % (s, "no data")); continue
        base = statistics.median(t for _, t in diffs[s])
        # distribution-free interval for the median: order statistics around n/2
        m = len(v); half = 1.96 * math.sqrt(m) / 2
        lo, hi = v[max(0, int(math.floor(m / 2 - half)))], v[min(m - 1, int(math.ceil(m / 2 + half)) - 1)]
        med = statistics.median(v)
        print("  %-58s %+.3f [%+.3f, %+.3f]  %+.2f%% (base %.2f us)" % ("%d B" % s, med, lo, hi, 100 * med / base, base))
PY
	[ -s "$OUT/cuprim.txt" ] && sed 's/^/  cuprim: /' "$OUT/cuprim.txt" | tee -a "$T"
fi
rm -rf "$W"
