#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Record what topo and doctor read on this machine, as test fixtures.
#
#   OUT=./out scripts/gpu/record-fixtures.sh        (root gives the PCIe config
#                                                   space, hence ACS; not required)
#
# Writes under $OUT (default ./out):
#   sysfs/          a tree for --sysroot: the sysfs files of every GPU, NIC and
#                   PCIe bridge above them (plain files only, small; symlinks
#                   recreated relative so the tree stands alone), /sys/class/net,
#                   /sys/class/infiniband, /proc/{cmdline,modules,cpuinfo,mounts,
#                   meminfo}, /proc/self/{limits,status}, logind.conf(.d)
#   nvml.json       NVML's answers (schema ncclwatch.nvml/1) for --nvml-json,
#                   written with pynvml (nvidia-ml-py)
#   nvidia-smi-q.txt, nvidia-smi-topo-m.txt, nvidia-smi-nvlink-s.txt,
#   nvidia-smi-topo-p2p.txt, ulimit-l.txt, df-shm.txt, uname.txt
#   ncclwatch-*.json  topo/doctor/--nvml-dump from $NW (default build/ncclwatch)
#                   when that binary exists, to compare with the python dump
# Nothing is sent anywhere. MAC addresses and serial numbers are not copied;
# ncclwatch-doctor.json names the host.
set -u
OUT=${OUT:-./out}
NW=${NW:-build/ncclwatch}
mkdir -p "$OUT/sysfs"
OUT=$(cd "$OUT" && pwd)

command -v nvidia-smi >/dev/null 2>&1 && {
	nvidia-smi -q 2>&1 | sed -E 's/^( *(Serial Number|Board Part Number|GPU UUID|GPU PDI|Module ID) *: ).*/\1(removed)/' >"$OUT/nvidia-smi-q.txt"
	nvidia-smi topo -m >"$OUT/nvidia-smi-topo-m.txt" 2>&1
	nvidia-smi topo -p2p r >"$OUT/nvidia-smi-topo-p2p.txt" 2>&1
	nvidia-smi nvlink -s >"$OUT/nvidia-smi-nvlink-s.txt" 2>&1
}
(ulimit -l) >"$OUT/ulimit-l.txt" 2>&1
df -k /dev/shm >"$OUT/df-shm.txt" 2>&1
uname -r >"$OUT/uname.txt" 2>&1

python3 - "$OUT/sysfs" <<'PY'
import os, sys, shutil, re, stat
dst = sys.argv[1]
BDF = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')
# Per-device files worth keeping; everything else (resources, ROMs, MACs) is left out.
PCI_FILES = ['vendor', 'device', 'class', 'subsystem_vendor', 'subsystem_device', 'revision',
             'numa_node', 'local_cpulist', 'local_cpus', 'current_link_speed', 'max_link_speed',
             'current_link_width', 'max_link_width', 'config']
NET_FILES = ['operstate', 'type', 'speed', 'mtu', 'carrier', 'dev_id', 'dev_port']
IB_PORT_FILES = ['state', 'phys_state', 'rate', 'link_layer']

def scrub_config(data):
    """Zero the PCIe Device Serial Number capability (extended cap id 3)."""
    data = bytearray(data)
    off, seen = 0x100, 0
    while 0x100 <= off <= len(data) - 12 and seen < 64:
        hdr = int.from_bytes(data[off:off + 4], 'little')
        if hdr in (0, 0xffffffff):
            break
        if hdr & 0xffff == 3:
            data[off + 4:off + 12] = bytes(8)
        off, seen = (hdr >> 20) & 0xffc, seen + 1
    return bytes(data)

def put_file(src, size_max=4096):
    try:
        with open(src, 'rb') as f:
            data = f.read(size_max + 1)
    except OSError:
        return
    if len(data) > size_max:
        return
    if src.endswith('/config'):
        data = scrub_config(data)
    out = dst + src
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'wb') as f:
        f.write(data)

def put_link(path):
    """Recreate symlink `path` inside dst, pointing where it points on the host."""
    try:
        target = os.readlink(path)
    except OSError:
        return
    out = dst + path
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.lexists(out):
        os.remove(out)
    os.symlink(target, out)

def put_pci(real):
    """Copy a PCI device and every bridge above it."""
    parts = real.split('/')
    for i in range(len(parts)):
        if BDF.match(parts[i]):
            d = '/'.join(parts[:i + 1])
            for name in PCI_FILES:
                put_file(os.path.join(d, name))
            put_link('/sys/bus/pci/devices/' + parts[i])

def pci_of(real):
    parts = real.split('/')
    idx = [i for i, p in enumerate(parts) if BDF.match(p)]
    return '/'.join(parts[:idx[-1] + 1]) if idx else None

# GPUs (NVIDIA display/3D controllers) and NVSwitches, NICs (class 02xx).
pci = '/sys/bus/pci/devices'
for bdf in sorted(os.listdir(pci)):
    p = os.path.join(pci, bdf)
    try:
        vendor = open(p + '/vendor').read().strip()
        cls = open(p + '/class').read().strip()
    except OSError:
        continue
    if (vendor == '0x10de') or cls.startswith('0x02') or cls.startswith('0x0207'):
        put_pci(os.path.realpath(p))

for cdir, files in (('/sys/class/net', NET_FILES),):
    if not os.path.isdir(cdir):
        continue
    for name in sorted(os.listdir(cdir)):
        link = os.path.join(cdir, name)
        real = os.path.realpath(link)
        put_link(link)
        for f in files:
            put_file(os.path.join(real, f))
        dev = os.path.join(real, 'device')
        if os.path.islink(dev):
            put_link(dev)
            pd = pci_of(os.path.realpath(dev))
            if pd:
                put_pci(pd)

ib = '/sys/class/infiniband'
if os.path.isdir(ib):
    for name in sorted(os.listdir(ib)):
        link = os.path.join(ib, name)
        real = os.path.realpath(link)
        put_link(link)
        put_link(os.path.join(real, 'device'))
        pd = pci_of(os.path.realpath(os.path.join(real, 'device')))
        if pd:
            put_pci(pd)
            netdir = os.path.join(pd, 'net')
            if os.path.isdir(netdir):
                for n in os.listdir(netdir):
                    for f in NET_FILES:
                        put_file(os.path.join(netdir, n, f))
        ports = os.path.join(real, 'ports')
        for port in sorted(os.listdir(ports)) if os.path.isdir(ports) else []:
            for f in IB_PORT_FILES:
                put_file(os.path.join(ports, port, f))

for f in ['/sys/devices/system/cpu/online', '/sys/class/dmi/id/sys_vendor',
          '/sys/class/dmi/id/product_name']:
    put_file(f)
for d in ['/sys/module/nvidia_peermem', '/sys/module/nv_peer_mem', '/sys/module/nvidia']:
    if os.path.isdir(d):
        put_file(d + '/version') if os.path.exists(d + '/version') else None
        os.makedirs(dst + d, exist_ok=True)
        open(dst + d + '/.recorded', 'w').close()
iommu = '/sys/class/iommu'
if os.path.isdir(iommu):
    for name in os.listdir(iommu):
        put_link(os.path.join(iommu, name))
for f in ['/proc/cmdline', '/proc/modules', '/proc/mounts', '/proc/meminfo',
          '/proc/self/limits', '/proc/self/status']:
    put_file(f, 1 << 20)
# cpuinfo: the first processor block is enough (flags, model).
try:
    first = open('/proc/cpuinfo').read().split('\n\n')[0] + '\n\n'
    os.makedirs(dst + '/proc', exist_ok=True)
    open(dst + '/proc/cpuinfo', 'w').write(first)
except OSError:
    pass
for f in ['/etc/systemd/logind.conf']:
    put_file(f, 1 << 16)
for d in ['/etc/systemd/logind.conf.d', '/run/systemd/logind.conf.d']:
    if os.path.isdir(d):
        for n in os.listdir(d):
            put_file(os.path.join(d, n), 1 << 16)
if os.path.isdir('/run/systemd/system'):
    os.makedirs(dst + '/run/systemd/system', exist_ok=True)
    open(dst + '/run/systemd/system/.recorded', 'w').close()
PY

python3 - "$OUT/nvml.json" <<'PY'
import json, sys
out = sys.argv[1]
doc = {"schema": "ncclwatch.nvml/1", "loaded": False}
try:
    import pynvml as N
except ImportError as e:
    doc["why"] = "pynvml not importable: %s" % e
    json.dump(doc, open(out, "w"), indent=2)
    sys.exit(0)

def q(fn, *a):
    try:
        return fn(*a)
    except Exception:
        return None

def s(v):
    return v.decode() if isinstance(v, bytes) else v

try:
    N.nvmlInit()
except Exception as e:
    doc["why"] = "NVML did not start: %s" % e
    json.dump(doc, open(out, "w"), indent=2)
    sys.exit(0)
doc["loaded"] = True
doc["lib"] = "pynvml recording"
doc["driver"] = s(q(N.nvmlSystemGetDriverVersion))
cv = q(getattr(N, "nvmlSystemGetCudaDriverVersion_v2", N.nvmlSystemGetCudaDriverVersion))
if cv is not None:
    doc["cuda_driver"] = cv
doc["nvml_version"] = s(q(N.nvmlSystemGetNVMLVersion))
n = q(N.nvmlDeviceGetCount) or 0
handles, gpus = [], []
for i in range(n):
    h = N.nvmlDeviceGetHandleByIndex(i)
    handles.append(h)
    g = {"index": i, "name": s(q(N.nvmlDeviceGetName, h)), "uuid": s(q(N.nvmlDeviceGetUUID, h))}
    pci = q(N.nvmlDeviceGetPciInfo, h)
    if pci is not None:
        g["bus_id"] = "%04x:%02x:%02x.0" % (pci.domain, pci.bus, pci.device)
    pm = q(N.nvmlDeviceGetPersistenceMode, h)
    if pm is not None:
        g["persistence"] = int(pm)
    pcie = {}
    for k, fn in (("gen_cur", "nvmlDeviceGetCurrPcieLinkGeneration"), ("gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
                  ("width_cur", "nvmlDeviceGetCurrPcieLinkWidth"), ("width_max", "nvmlDeviceGetMaxPcieLinkWidth")):
        v = q(getattr(N, fn), h)
        if v is not None:
            pcie[k] = v
    g["pcie"] = pcie
    ecc = {}
    em = q(N.nvmlDeviceGetEccMode, h)
    if em is not None:
        ecc["mode"] = int(em[0])
        if em[0]:
            v = q(N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC)
            if v is not None:
                ecc["uncorrected_volatile"] = v
    rr = q(N.nvmlDeviceGetRemappedRows, h)
    if rr is not None:
        ecc["remap_pending"] = int(bool(rr[2]))
        ecc["remap_failure"] = int(bool(rr[3]))
    rp = q(N.nvmlDeviceGetRetiredPagesPendingStatus, h)
    if rp is not None:
        ecc["retired_pending"] = int(bool(rp))
    g["ecc"] = ecc
    fab = {}
    fi = q(N.nvmlDeviceGetGpuFabricInfo, h) if hasattr(N, "nvmlDeviceGetGpuFabricInfo") else None
    if fi is not None:
        fab = {"state": int(fi.state), "status": int(fi.status)}
    g["fabric"] = fab
    nvl = {}
    fv = q(N.nvmlDeviceGetFieldValues, h, [90, 91])
    nlinks = 18
    if fv:
        if fv[0].nvmlReturn == 0 and fv[0].value.uiVal:
            nvl["speed_mbps"] = fv[0].value.uiVal
        if fv[1].nvmlReturn == 0:
            nlinks = fv[1].value.uiVal
    links = []
    for l in range(nlinks):
        st = q(N.nvmlDeviceGetNvLinkState, h, l)
        if st is None:
            continue
        lk = {"link": l, "active": int(st)}
        v = q(N.nvmlDeviceGetNvLinkVersion, h, l)
        if v is not None:
            lk["version"] = v
        rp = q(N.nvmlDeviceGetNvLinkRemotePciInfo, h, l)
        if rp is not None:
            lk["remote_bus_id"] = "%04x:%02x:%02x.0" % (rp.domain, rp.bus, rp.device)
        if hasattr(N, "nvmlDeviceGetNvLinkRemoteDeviceType"):
            t = q(N.nvmlDeviceGetNvLinkRemoteDeviceType, h, l)
            if t is not None and 0 <= int(t) <= 2:
                lk["remote_type"] = int(t)
        errs = {}
        for name, c in (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3)):
            v = q(N.nvmlDeviceGetNvLinkErrorCounter, h, l, c)
            if v is not None:
                errs[name] = v
        lk["errors"] = errs
        links.append(lk)
    nvl["links"] = links
    g["nvlink"] = nvl
    gpus.append({k: v for k, v in g.items() if v is not None})
doc["gpus"] = gpus
pairs = []
for a in range(n):
    for b in range(n):
        if a == b:
            continue
        p = {"a": a, "b": b}
        for k, idx in (("p2p_read", 0), ("p2p_write", 1), ("p2p_nvlink", 2)):
            v = q(N.nvmlDeviceGetP2PStatus, handles[a], handles[b], idx)
            if v is not None:
                p[k] = int(v)
        v = q(N.nvmlDeviceGetTopologyCommonAncestor, handles[a], handles[b])
        if v is not None:
            p["topo_level"] = int(v)
        pairs.append(p)
doc["pairs"] = pairs
N.nvmlShutdown()
json.dump(doc, open(out, "w"), indent=2)
PY

if [ -x "$NW" ]; then
	"$NW" topo --nvml-dump >"$OUT/ncclwatch-nvml-dump.json" 2>&1
	"$NW" topo --json >"$OUT/ncclwatch-topo.json" 2>&1
	"$NW" doctor --json >"$OUT/ncclwatch-doctor.json" 2>&1
fi
echo "recorded under $OUT"
