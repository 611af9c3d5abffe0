#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a one-GPU machine: the portable files (make portable), carried with no
# library beside them, against the machine's own PyTorch NCCL.
#   1. what they need at load time (ldd), and version, topo, doctor, check,
#      bench --op all on the GPU;
#   2. two "nodes" on one host: two ranks with their own NCCL_HOSTID on the
#      same GPU, started with the env rendezvous, NCCL_DEBUG=INFO; logscan
#      on that log (nodes, transport);
#   3. the plugin in a two-process PyTorch job made the same way, then
#      top --once and exporter --once on its stats.
# Figures of step 2 and 3 are time-sliced on one GPU over a socket: they
# show the paths work, never a speed.
#   P=DIR OUT=DIR scripts/gpu/portable-1gpu.sh      (P: the portable files)
set -u
cd "$(dirname "$0")/../.."
P=${P:-build-portable}
OUT=${OUT:-./out}
mkdir -p "$OUT"
NW=$PWD/$P/ncclwatch
PLUGIN=$PWD/$P/libnccl-profiler-ncclwatch.so
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/portable1.XXXXXX)
export NCCLWATCH_DB=$W/history.db NCCLWATCH_DIR=$W/stats
T=$OUT/table.txt
: >"$T"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$T"; }
step() { # step NAME CMD...: output in $OUT/NAME.txt, status in RC
	local name=$1; shift
	{ echo "\$ $*"; "$@"; } >"$OUT/$name.txt" 2>&1
	RC=$?
	echo "# exit $RC" >>"$OUT/$name.txt"
}

{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >"$OUT/env.txt" 2>&1
step ldd sh -c "ldd $NW; ldd $PLUGIN; for f in $NW $PLUGIN; do echo \"\$f: \$(objdump -T \$f | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)\"; done"
row "ldd: libraries outside glibc" "$(grep '=>' "$OUT/ldd.txt" | grep -cvE 'libc\.so|libm\.so|libdl\.so|libpthread\.so|ld-linux|linux-vdso')"
row "newest GLIBC_ symbol (binary, plugin)" "$(grep -o 'GLIBC_[0-9.]*$' "$OUT/ldd.txt" | tr '\n' ' ')"
step version "$NW" version
row "version (rc, NCCL)" "rc=$RC $(grep -m1 '^NCCL' "$OUT/version.txt")"
step topo "$NW" topo
row "topo (rc)" "rc=$RC"
step doctor "$NW" doctor
row "doctor (rc: 0 ok, 1 warnings, 2 errors)" "rc=$RC"
step check "$NW" check
row "check (rc, verdict)" "rc=$RC $(grep -m1 -E 'PASS|WARN|FAIL|SKIP' "$OUT/check.txt" | cut -c1-60)"
step bench "$NW" bench --no-history --op all -b 8 -e 1G -f 4 -c 1 -n 20 -w 5
row "bench --op all -c 1 (rc, sections not OK)" "rc=$RC $(grep 'Out of bounds' "$OUT/bench.txt" | grep -vc ': 0 OK')"

# two ranks as two nodes on one GPU: env rendezvous, NCCL over the network
port=$((20000 + RANDOM % 9000))
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	NCCL_HOSTID=node$r NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH \
		timeout 300 "$NW" bench --no-history --op all_reduce,sendrecv -b 8 -e 64M -f 8 -c 1 -n 5 -w 2 \
		>"$OUT/twonode.$r.txt" 2>&1 &
done
wait
row "two nodes, one GPU: bench (sections not OK)" "$(grep 'Out of bounds' "$OUT/twonode.0.txt" | grep -vc ': 0 OK') of $(grep -c 'Out of bounds' "$OUT/twonode.0.txt")"
row "two nodes: NCCL path" "$(grep -ho 'via NET/[A-Za-z]*' "$OUT"/twonode.*.txt | sort | uniq -c | tr '\n' ' ')"
cat "$OUT"/twonode.0.txt "$OUT"/twonode.1.txt | grep 'NCCL' >"$W/twonode.log"
step logscan "$NW" logscan "$W/twonode.log"
row "logscan of that log: nodes, transports" "$(grep -m1 -iE 'node' "$OUT/logscan.txt" | cut -c1-60)"

# the plugin in a two-process PyTorch job, same shape
cat >"$W/job.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
x = torch.ones(16 << 20, device="cuda")
for i in range(40):
    dist.all_reduce(x)
torch.cuda.synchronize()
time.sleep(3)  # the publisher writes its last figures
if dist.get_rank() == 0:
    print("job done, x[0] =", x[0].item())
dist.destroy_process_group()
PY
port=$((20000 + RANDOM % 9000))
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	NCCL_HOSTID=node$r NCCL_PROFILER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
		timeout 300 python3 "$W/job.py" >"$OUT/plugin-job.$r.txt" 2>&1 &
done
wait
row "plugin job (rank 0 says)" "$(grep -m1 'job done' "$OUT/plugin-job.0.txt")"
row "plugin loaded (lines naming it)" "$(grep -ci 'ncclwatch' "$OUT/plugin-job.0.txt")"
step top "$NW" top --once --all
row "top --once (rc, rows)" "rc=$RC $(grep -c 'all_reduce' "$OUT/top.txt")"
step exporter "$NW" exporter --once
row "exporter --once (rc, all_reduce series)" "rc=$RC $(grep -c 'op="all_reduce"' "$OUT/exporter.txt")"
rm -rf "$W"
