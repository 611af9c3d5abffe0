#!/usr/bin/env bash
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
expect_out "healthy 2xH200: summary line" "^ncclwatch doctor: 25 checks: 0 errors, 0 warnings"

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
