#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncclwatch doctor as a user runs it: the issue's own example, exit codes,
# JSON, the GPU-less machine, recorded trees.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
H200=(--sysroot "$FX/sysfs/h200x2" --nvml-json "$FX/nvml/h200x2.json")
# A stand-in for the NCCL the H200 machine loads (PyTorch's 2.28.9, built for
# CUDA 13.0), so the version checks read the same wherever the tests run.
printf 'ELF\0NCCL version 2.28.9+cuda13.0\0' >"$TMP/libnccl.so.2"
CLEAN=(env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE -u NCCL_DEBUG -u MASTER_ADDR -u CUDA_VISIBLE_DEVICES
       -u NCCLWATCH_NVML_JSON -u NCCLWATCH_SYSROOT NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2")

NCCL_P2P_DISABLE=1 NCCL_IBHCA=mlx5_0 NCCL_SOCKET_IFNAME=nosuchif0 run "$NW" doctor --json
expect_rc "three bad variables: exit 2 (an error among them)" 2
expect_true "json names all three variables" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
seen=" ".join(f["seen"] for f in d["findings"] if f["severity"] in ("warn","error"))
for v in ("NCCL_P2P_DISABLE=1","NCCL_IBHCA=mlx5_0","NCCL_SOCKET_IFNAME=nosuchif0","NCCL_IB_HCA?"):
    assert v in seen, v
assert d["schema"]=="ncclwatch.doctor/1" and d["exit"]==2 and d["worst"]=="error"
' "$OUT"

run "${CLEAN[@]}" "$NW" doctor "${H200[@]}"
expect_rc "healthy 2xH200: exit 0" 0
expect_out "healthy 2xH200: NVLinks" "ok +hw.nvlink +36/36 NVLinks up on 2 GPUs"
# every check adds at least one row naming its id: the summary counts them all
awk '$1 ~ /^(ok|skip|info|warn|error)$/ {print $2}' "$OUT" | sort -u >"$TMP/ran"
expect_out "healthy 2xH200: summary line" "^ncclwatch doctor: $(wc -l <"$TMP/ran") checks: 0 errors, 0 warnings"
# docs/doctor.md has a row for each check the binary runs, and for no other
sed -n 's/^| `\([a-z]*\.[a-z_0-9]*\)` |.*/\1/p' "$SRCDIR/docs/doctor.md" | sort -u >"$TMP/documented"
expect_true "docs/doctor.md lists every check doctor runs ($(wc -l <"$TMP/ran")), and no other" \
	diff "$TMP/documented" "$TMP/ran"

run "${CLEAN[@]}" NCCL_DEBUG=INFO "$NW" doctor "${H200[@]}"
expect_rc "warning only: exit 1" 1
expect_out "warning: what, why, fix" "warn +env.debug +NCCL_DEBUG=INFO"
expect_out "warning: fix line" "fix: use NCCL_DEBUG=WARN in production"

run "${CLEAN[@]}" NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$NW" doctor --sysroot "$FX/sysfs/nogpu-vm"
expect_no_crash "no GPU: no crash" 
expect_rc "no GPU (recorded VM): nothing above info" 0
expect_out "no GPU: says plainly what it skipped" "skip +hw.nvlink +skipped: no NVIDIA driver \(/nonexistent/libnvidia-ml.so.1 not found\)"
expect_out "no GPU: still checks /dev/shm" "ok +os.shm"

run "${CLEAN[@]}" "$NW" doctor --only env,hw.p2p "${H200[@]}" --json
expect_true "--only runs those checks only" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
ids={f["id"] for f in d["findings"]}
assert "hw.p2p" in ids and all(i.startswith("env.") or i=="hw.p2p" for i in ids), ids
' "$OUT"

run "$NW" doctor --only nosuch
expect_rc "--only unknown: exit 2" 2
expect_err "--only unknown: named" "--only 'nosuch' matches no check"
run "$NW" doctor --interval 1y
expect_rc "bad --interval: exit 2" 2
run "$NW" doctor --nvml-json "$FX/sysfs/h200x2/proc/mounts"
expect_rc "not a recording: exit 2" 2
expect_no_crash "not a recording: no crash"
run "$NW" help doctor
expect_out "help lists --only" "--only ID"

# The real recording of a 1xH200 VM: every finding that comes from the
# recorded tree and NVML answers reads as it did live on that machine. The
# NCCL files, the environment and the host name are this machine's own.
H1=(--sysroot "$FX/sysfs/h200x1" --nvml-json "$FX/nvml/h200x1.json")
run "${CLEAN[@]}" "$NW" doctor "${H1[@]}" --json
expect_rc "h200x1: exit 0 (one info: the VM)" 0
expect_true "h200x1: findings as printed live on the H200" python3 -c '
import json,re,sys
rep=json.load(open(sys.argv[1])); live=json.load(open(sys.argv[2]))
local=("version.nccl","version.nccl_many","version.live")
def keep(d):
    out=[]
    for f in d["findings"]:
        # node.* came after the live recording (node health checks)
        if f["id"] in local or f["id"].startswith(("env.", "node.")):
            continue
        f=dict(f)
        f["seen"]=re.sub(r" \(NVML: .*\)$","",f["seen"])
        out.append(f)
    return out
a,b=keep(rep),keep(live)
assert a==b, [(x,y) for x,y in zip(a,b) if x!=y] or (len(a),len(b))
assert len(a)==16, len(a)
by={f["id"]:f for f in a}
assert by["hw.nvlink"]["seen"]=="no NVLink on 1 GPU"
assert by["hw.pcie_link"]["seen"]=="1 PCIe link at full width"
assert by["hw.persistence"]["seen"]=="persistence mode on for 1 GPU"
assert by["hw.p2p"]["seen"]=="1 GPU: no pair to check"
assert by["os.vm"]["severity"]=="info" and "hypervisor flag" in by["os.vm"]["seen"]
assert by["version.driver"]["seen"]=="driver 580.159.04, CUDA driver API 13.0, 1 GPU"
' "$OUT" "$FX/h200x1/ncclwatch-doctor.json"
expect_true "h200x1: NCCL as loaded live (2.28.9 for CUDA 13.0), matching the driver" python3 -c '
import json,sys
rep=json.load(open(sys.argv[1])); live=json.load(open(sys.argv[2]))
def f(d,i): return [x for x in d["findings"] if x["id"]==i][0]
for d in (rep, live):
    assert f(d,"version.nccl")["seen"].startswith("NCCL 2.28.9 built for CUDA 13.0 from ")
    assert f(d,"version.nccl_cuda")["seen"]=="NCCL built for CUDA 13.0; the driver supports CUDA 13.0"
' "$OUT" "$FX/h200x1/ncclwatch-doctor.json"

run "${CLEAN[@]}" "$NW" doctor "${H1[@]}"
expect_out "h200x1 text: the VM is named" "^info +os.vm +virtual machine \(hypervisor flag in /proc/cpuinfo\)"
expect_out "h200x1 text: /dev/shm as recorded" "^ok +os.shm +/dev/shm is 128.0 GB"
expect_out "h200x1 text: the CPUs the GPU is local to" "^ok +cpu.affinity +this process runs on CPUs 0-15 \(not bound\)"

run "${CLEAN[@]}" "$NW" check "${H1[@]}" --no-bench
expect_rc "h200x1 check --no-bench: PASS" 0
expect_out "h200x1 check --no-bench: says PASS" "^ncclwatch check: PASS"
run "${CLEAN[@]}" "$NW" check "${H1[@]}" --no-bench --json
expect_true "h200x1 check json: PASS, nothing benchmarked, doctor saw 1 H200" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["verdict"]=="PASS" and d["exit"]==0 and d["items"]==[], d
f={x["id"]:x for x in d["doctor"]}
assert f["hw.nvlink"]["seen"]=="no NVLink on 1 GPU"
assert f["version.driver"]["seen"].startswith("driver 580.159.04, CUDA driver API 13.0, 1 GPU")
' "$OUT"

# Node health on recorded inputs: the 8-rail node's RDMA ports and kernel
# log (tests/fixtures/sysfs/ib8, from public listings; README says which),
# healthy, then broken: a port down, one trained at half rate, link-down
# and symbol errors, real Xid lines, GPU clocks held down, a GPU missing.
IB8=(--sysroot "$FX/sysfs/ib8" --nvml-json "$FX/nvml/h200x2.json")
run "${CLEAN[@]}" "$NW" doctor "${IB8[@]}" --only node --expect-gpus 2
expect_rc "node, healthy 8-rail node: nothing above info" 0
expect_out "node: IB ports ok" "^ok +node.ib_ports +8 InfiniBand ports ACTIVE, 2 of 4 RoCE ports ACTIVE"
expect_out "node: spare RoCE ports down are info" "^info +node.ib_ports +RoCE ports not ACTIVE: mlx5_2:1 \(DOWN, Disabled\); mlx5_8:1"
expect_out "node: no Xid since boot" "^ok +node.xid +no GPU Xid in the kernel log since boot"
expect_out "node: GPU count as expected" "^ok +node.gpu_count +NVML sees 2 GPUs, as expected"
BAD=$TMP/ib8-broken
cp -r "$FX/sysfs/ib8" "$BAD"
cp "$FX/kmsg/xid.kmsg" "$BAD/dev/kmsg"
P=$BAD/sys/class/infiniband
echo "1: DOWN" >"$P/mlx5_5/ports/1/state"; echo "2: Polling" >"$P/mlx5_5/ports/1/phys_state"
echo "200 Gb/sec (2X NDR)" >"$P/mlx5_9/ports/1/rate"
echo 3 >"$P/mlx5_10/ports/1/counters/link_downed"; echo 41 >"$P/mlx5_10/ports/1/counters/symbol_error"
python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); d["gpus"][1]["clocks_event_reasons"]=0x48; d["gpus"][0]["clocks_event_reasons"]=1
json.dump(d,open(sys.argv[2],"w"))' "$FX/nvml/h200x2.json" "$TMP/hot.json"
run "${CLEAN[@]}" "$NW" doctor --sysroot "$BAD" --nvml-json "$TMP/hot.json" --only node --expect-gpus 8 --json
expect_rc "node, broken: exit 2" 2
expect_true "node, broken: each fault named" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
by={}
for f in d["findings"]: by.setdefault(f["id"],[]).append((f["severity"],f["seen"]))
def has(i,sev,s): assert any(v==sev and s in t for v,t in by[i]), (i,sev,s,by[i])
has("node.ib_ports","error","not ACTIVE: mlx5_5:1 (DOWN, Polling)")
has("node.ib_ports","warn","mlx5_9:1 (200 Gb/sec (2X NDR); others at 400 Gb/s)")
has("node.ib_ports","warn","mlx5_10:1 (link_downed 3, symbol_error 41)")
has("node.xid","error","Xid 79 on 0000:44:00 (GPU has fallen off the bus)")
has("node.xid","warn","Xid 32 x2 on 0000:01:00")
has("node.xid","info","Xid 31 on 0000:01:00")
has("node.clocks","error","GPU1 clocks held down: HW slowdown, HW thermal slowdown (reasons 0x48)")
has("node.gpu_count","error","NVML sees 2 GPUs, expected 8")
' "$OUT"
run "${CLEAN[@]}" "$NW" doctor --sysroot "$FX/sysfs/h200x2" --nvml-json "$FX/nvml/h200x2.json" --only node.xid
expect_out "node: no kernel log in the tree: skipped, saying why" "^skip +node.xid +skipped: cannot read .*/dev/kmsg: No such file"
if [ "$(id -u)" != 0 ] || [ -r /dev/kmsg ]; then
	run "${CLEAN[@]}" "$NW" doctor --only node.xid --nvml-json "$FX/nvml/h200x2.json"
	expect_no_crash "node: the live kernel log read without blocking"
	expect_out "node: the live kernel log read or skipped with a reason" "^(ok|skip|info|warn|error) +node.xid"
fi
run "$NW" doctor --expect-gpus 2x
expect_rc "--expect-gpus 2x: exit 2" 2
expect_err "--expect-gpus: named" "--expect-gpus: '2x' is not a whole number"
run "$NW" doctor --expect-gpus 100000
expect_rc "--expect-gpus out of range: exit 2" 2
