#!/usr/bin/env bash
# ncclwatch topo as a user runs it: on this GPU-less machine, on the recorded
# 2xH200 tree and NVML answers, and with bad input.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
H200=(--sysroot "$FX/sysfs/h200x2" --nvml-json "$FX/nvml/h200x2.json")

run env -u NCCLWATCH_NVML_JSON -u CUDA_VISIBLE_DEVICES NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$NW" topo --sysroot "$FX/sysfs/nogpu-vm"
expect_rc "no driver: exit 0" 0
expect_out "no driver: says what it skipped" "skipped NVLink, peer-to-peer and GPU names: no NVIDIA driver \(/nonexistent/libnvidia-ml.so.1 not found\)"
expect_out "no driver: expectation skipped, plainly" "skipped: no GPU"

run "$NW" topo --sysroot "$FX/sysfs/nogpu-vm" --nvml-json /dev/null
expect_rc "unreadable recording: exit 2" 2
expect_err "unreadable recording: named" "NVML recording '/dev/null'"

run "$NW" topo "${H200[@]}"
expect_rc "h200: exit 0" 0
expect_out "h200: NV18 matrix" "^GPU0 +X +NV18"
expect_out "h200: 478 GB/s link" "GPU0-GPU1 +NV18 +478.1 GB/s +P2P ok"
expect_out "h200: bottleneck link" "bottleneck link 478.1 GB/s each way \(NV18\)"
expect_out "h200: all_reduce expectation 1G and 4G" "all_reduce +324.9 +339.7 +71%"
expect_out "h200: NIC with nearest GPUs" "eth0 .*nearest GPU0,GPU1 \(PHB\)"

run "$NW" topo "${H200[@]}" --json
expect_rc "h200 json: exit 0" 0
expect_true "h200 json: parses, link and path" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["schema"]=="ncclwatch.topo/1"
p=d["topology"]["pairs"][0]
assert p["path"]=="NV18" and abs(p["link_gbs"]-478.116)<0.01 and p["p2p"] is True
ops={o["op"]:o for o in d["expected"]["ops"]}
assert abs(ops["all_reduce"]["busbw_4g"]-339.68)<0.05 and ops["all_reduce"]["calibrated"]
assert d["visible_gpus"]==[0,1]
' "$OUT"

run env CUDA_VISIBLE_DEVICES=1 "$NW" topo "${H200[@]}"
expect_out "one visible GPU: expectation skipped with the reason" "skipped: 1 visible GPU: nothing crosses a link"
run env CUDA_VISIBLE_DEVICES=0,9 "$NW" topo "${H200[@]}"
expect_rc "bad CUDA_VISIBLE_DEVICES: still exit 0" 0
expect_out "bad CUDA_VISIBLE_DEVICES: named" "CUDA_VISIBLE_DEVICES entry '9' matches no GPU"

run "$NW" topo "${H200[@]}" --nvml-dump
expect_true "nvml dump replays to the same answers" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["schema"]=="ncclwatch.nvml/1" and len(d["gpus"])==2
assert d["gpus"][0]["nvlink"]["speed_mbps"]==26562 and len(d["gpus"][1]["nvlink"]["links"])==18
' "$OUT"

run "$NW" topo --bogus
expect_rc "unknown option: exit 2" 2
expect_err "unknown option: named" "unknown option '--bogus'"
run "$NW" topo -g 0
expect_rc "bad -g: exit 2" 2
run "$NW" help topo
expect_out "help lists --nvml-json" "--nvml-json FILE"
