#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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

# The real recording of a 1xH200 VM (tests/fixtures/README.md): what the
# replay prints must be what ncclwatch printed live on that machine.
H1=(--sysroot "$FX/sysfs/h200x1" --nvml-json "$FX/nvml/h200x1.json")
H1LIVE=$FX/h200x1
run env -u CUDA_VISIBLE_DEVICES "$NW" topo "${H1[@]}"
expect_rc "h200x1: exit 0" 0
expect_out "h200x1: one H200 at 00:06.0, Gen5 x16 now and at most" "^  GPU0  NVIDIA H200 +0000:00:06.0  CPUs 0-15  PCIe Gen5 x16 now \(max Gen5 x16, 63.0 GB/s\)"
expect_no_out "h200x1: no second GPU" "GPU1"
expect_out "h200x1: expectation skipped, 1 GPU" "skipped: 1 visible GPU: nothing crosses a link"
expect_out "h200x1: virtio NIC nearest GPU0" "eth0 .*0000:00:03.0  nearest GPU0 \(PHB\)"

run env -u CUDA_VISIBLE_DEVICES "$NW" topo "${H1[@]}" --json
expect_rc "h200x1 json: exit 0" 0
expect_true "h200x1 json: same as the live run on the H200 (but where NVML was read)" python3 -c '
import json,sys
rep=json.load(open(sys.argv[1])); live=json.load(open(sys.argv[2]))
assert rep["topology"]["nvml_lib"].endswith("h200x1.json (replayed)")
for d in (rep, live):
    del d["topology"]["nvml_lib"]
assert rep==live, (rep, live)
g=rep["topology"]["gpus"]
assert len(g)==1 and g[0]["model"]=="NVIDIA H200" and g[0]["bus_id"]=="0000:00:06.0"
assert g[0]["pcie"]["gen_cur"]==5 and g[0]["pcie"]["width_cur"]==16 and g[0]["pcie"]["width_max"]==16
assert rep["topology"]["pairs"]==[] and rep["topology"]["driver"]=="580.159.04"
assert rep["topology"]["cuda_driver"]=="13.0"
' "$OUT" "$H1LIVE/ncclwatch-topo.json"

# Without NVML the same link comes from sysfs ("32.0 GT/s PCIe" as recorded).
run env -u NCCLWATCH_NVML_JSON -u CUDA_VISIBLE_DEVICES NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$NW" topo --sysroot "$FX/sysfs/h200x1" --json
expect_true "h200x1 sysfs only: Gen5 x16 from the recorded link files" python3 -c '
import json,sys
g=json.load(open(sys.argv[1]))["topology"]["gpus"]
assert len(g)==1 and g[0]["bus_id"]=="0000:00:06.0", g
p=g[0]["pcie"]
assert (p["gen_cur"],p["gen_max"],p["width_cur"],p["width_max"])==(5,5,16,16), p
assert abs(p["max_gbs"]-63.015)<0.01, p
' "$OUT"

run "$NW" topo "${H1[@]}" --nvml-dump
expect_true "h200x1 nvml dump: replays the live dump (fabric: see fixtures README)" python3 -c '
import json,sys
rep=json.load(open(sys.argv[1])); live=json.load(open(sys.argv[2]))
for d in (rep, live):
    del d["lib"]
    for g in d["gpus"]:
        g.pop("fabric")
assert rep==live, (rep, live)
' "$OUT" "$H1LIVE/ncclwatch-nvml-dump.json"

# As seen on a real 2xH200 VM: every NVLink reports an NVSwitch at the far
# end, NVML gives no NVLink speed, and the link version is the enum value
# NVML documents (4.0 = 6; some drivers say 7 for Hopper). The pair is
# still NV18 at 18 x 26.5625 = 478.1 GB/s each way.
python3 - "$FX/nvml/h200x2.json" "$TMP/h200x2-switch.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for g in d["gpus"]:
    g["nvlink"].pop("speed_mbps", None)
    for l in g["nvlink"]["links"]:
        l["remote_type"] = 2
        l["remote_bus_id"] = ""
        l["version"] = 7
json.dump(d, open(sys.argv[2], "w"))
PY
run "$NW" topo --sysroot "$FX/sysfs/h200x2" --nvml-json "$TMP/h200x2-switch.json"
expect_rc "switch-attached H200 pair: exit 0" 0
expect_out "switch-attached H200 pair: NV18" "GPU0 +X +NV18"
expect_out "switch-attached H200 pair: the 478.1 GB/s link" "478\.1 GB/s"
expect_no_out "switch-attached H200 pair: no PCIe fallback" "bottleneck link 63\.0"
