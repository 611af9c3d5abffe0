#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real NCCL_DEBUG=INFO logs of known situations, for logscan's fixtures.
#
#   OUT=/some/dir scripts/gpu/gen-logs.sh        (OUT defaults to ./out)
#
# Needs: python3 with PyTorch (its NCCL), one or more GPUs, mpirun for the
# size-1 case. Runs small torch.distributed all_reduce programs (a few
# seconds each, the whole script under 4 minutes) and writes, with stderr,
#   $OUT/logs/<name>.log   and   $OUT/logs/SUMMARY.txt (exit code, seconds)
# Scenarios (2 ranks when the machine has 2+ GPUs, else 1 where noted):
#   default                 NCCL_DEBUG=INFO
#   p2p_disable             NCCL_P2P_DISABLE=1
#   p2p_shm_disable         NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
#   algo_ring_simple        NCCL_ALGO=Ring NCCL_PROTO=Simple
#   bad_socket_ifname       NCCL_SOCKET_IFNAME=nosuchif0
#   subsys_all              NCCL_DEBUG_SUBSYS=ALL
#   dup_gpu                 torchrun, 2 ranks both on cuda:0 (NCCL: Duplicate GPU)
#   two_ranks_one_gpu_hostid  2 ranks on cuda:0 told apart by NCCL_HOSTID (NET/Socket)
#   mpirun_size1            mpirun -np 2, each process its own 1-rank world
#   rank1_never_joins       WORLD_SIZE=2 but only rank 0 starts (10 s timeout)
#   watchdog_timeout        rank 1 skips the second all_reduce (10 s timeout)
# Then: copy a log to tests/fixtures/logs/<name>.log with the matching
# scripts/gpu/expect/<name>.expect (check the expectations against it).
set -u
OUT=${OUT:-./out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nwgen.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
DEADLINE=225   # seconds: leave room inside the 4-minute budget

cat >"$WORK/ar.py" <<'PY'
# Small all_reduce over NCCL. argv[1]: normal | same_gpu | hostid | alone | skip_second
import datetime, os, sys, time
import torch
import torch.distributed as dist

mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
local = int(os.environ.get("LOCAL_RANK", "0"))
ngpu = torch.cuda.device_count()
dev = 0 if mode in ("same_gpu", "hostid") else local % max(ngpu, 1)
if mode == "hostid" or (mode == "skip_second" and ngpu < 2):
    os.environ["NCCL_HOSTID"] = "nwhost%d" % rank  # two ranks on one GPU look like two hosts
torch.cuda.set_device(dev)
timeout = datetime.timedelta(seconds=float(os.environ.get("NW_TIMEOUT", "60")))
device = torch.device("cuda", dev)
if mode == "alone":
    # a launcher that did not connect the processes: each one is rank 0 of 1
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, timeout=timeout, device_id=device)
else:
    dist.init_process_group("nccl", timeout=timeout, device_id=device)
x = torch.ones(1 << 20, device=device)
dist.all_reduce(x)
torch.cuda.synchronize()
if mode == "skip_second" and dist.get_rank() == 1:
    time.sleep(float(os.environ.get("NW_TIMEOUT", "10")) + 12)  # rank 1 never calls the second one
    sys.exit(0)
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank %d of %d: all_reduce gave %.0f" % (dist.get_rank(), dist.get_world_size(), x[0].item()), flush=True)
dist.destroy_process_group()
PY

NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
case "$NGPU" in ""|*[!0-9]*) NGPU=0 ;; esac
[ "$NGPU" -gt 0 ] || echo "gen-logs: warning: PyTorch sees no GPU; the logs will only show that failure" >&2
W=$(( NGPU >= 2 ? 2 : 1 ))
echo "gen-logs: $NGPU GPU(s); scenarios use $W rank(s) where a GPU each is needed" >&2
: >"$LOGS/SUMMARY.txt"
echo "# gen-logs on $(hostname), $NGPU GPU(s), $(date -u +%FT%TZ)" >>"$LOGS/SUMMARY.txt"

# scenario NAME SECONDS CMD...: runs CMD with a time limit, stdout+stderr into the log.
scenario() {
	local name=$1 limit=$2; shift 2
	local now; now=$(date +%s)
	if [ $((now - START + limit)) -gt $DEADLINE ]; then
		echo "$name skipped (time budget)" | tee -a "$LOGS/SUMMARY.txt" >&2
		return
	fi
	local t0=$now
	timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
	local rc=$?
	echo "$name exit $rc after $(( $(date +%s) - t0 )) s ($(wc -l <"$LOGS/$name.log") lines)" | tee -a "$LOGS/SUMMARY.txt" >&2
}

# torchrun on this node: trun.sh NPROC MODE (environment as given)
cat >"$WORK/trun.sh" <<EOF
#!/usr/bin/env bash
exec "$PY" -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node="\$1" "$WORK/ar.py" "\$2"
EOF
# both ranks by hand, so that rank 1 can skip a collective
cat >"$WORK/wd.sh" <<EOF
#!/usr/bin/env bash
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 WORLD_SIZE=2 NW_TIMEOUT=10 TORCH_NCCL_DUMP_ON_TIMEOUT=0
RANK=1 LOCAL_RANK=1 "$PY" "$WORK/ar.py" skip_second &
RANK=0 LOCAL_RANK=0 "$PY" "$WORK/ar.py" skip_second
wait
EOF
chmod +x "$WORK/trun.sh" "$WORK/wd.sh"
T=$WORK/trun.sh

export NCCL_DEBUG=INFO
scenario default 30 "$T" "$W" normal
scenario p2p_disable 30 env NCCL_P2P_DISABLE=1 "$T" "$W" normal
scenario p2p_shm_disable 30 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$T" "$W" normal
scenario algo_ring_simple 30 env NCCL_ALGO=Ring NCCL_PROTO=Simple "$T" "$W" normal
scenario bad_socket_ifname 30 env NCCL_SOCKET_IFNAME=nosuchif0 "$T" "$W" normal
scenario subsys_all 30 env NCCL_DEBUG_SUBSYS=ALL "$T" "$W" normal
scenario dup_gpu 30 "$T" 2 same_gpu
scenario two_ranks_one_gpu_hostid 30 "$T" 2 hostid
if command -v mpirun >/dev/null; then
	scenario mpirun_size1 30 mpirun -np 2 --oversubscribe --bind-to none --tag-output \
		-x NCCL_DEBUG -x NCCL_NVLS_ENABLE -x PATH "$PY" "$WORK/ar.py" alone
else
	echo "mpirun_size1 skipped (no mpirun)" | tee -a "$LOGS/SUMMARY.txt" >&2
fi
scenario rank1_never_joins 35 env MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 NW_TIMEOUT=10 \
	"$PY" "$WORK/ar.py" normal
scenario watchdog_timeout 45 "$WORK/wd.sh"

echo "gen-logs: done in $(( $(date +%s) - START )) s; logs in $LOGS" >&2
