#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU machine: what topo shows, what check says on the healthy
# machine and with the two classic workarounds left set, and how long each
# check takes. Everything lands under $OUT (default ./out).
#
#   make && OUT=/tmp/nw-check scripts/gpu/check-scenarios.sh
#
# Expected on 2 x H200 (NV18): topo shows NV18 and 478.1 GB/s; check PASS
# (exit 0) in under 30 s; with NCCL_P2P_DISABLE=1, and with
# NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1, FAIL (exit 2) naming the variables.
# With one GPU: the bandwidth items say "1 rank" and the variables give WARN.
set -u
OUT=${OUT:-./out}
NW=${NW:-build/ncclwatch}
mkdir -p "$OUT"
[ -x "$NW" ] || { echo "build first: $NW not found" >&2; exit 2; }

summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

"$NW" topo >"$OUT/topo.txt" 2>&1; note "topo: exit $?"
"$NW" topo --json >"$OUT/topo.json" 2>&1
"$NW" topo --nvml-dump >"$OUT/nvml-dump.json" 2>&1
"$NW" doctor >"$OUT/doctor.txt" 2>&1; note "doctor: exit $?"
grep -E "NV[0-9]+|bottleneck" "$OUT/topo.txt" | head -5 | tee -a "$summary"

scenario() {
	local name=$1; shift
	local t0=$EPOCHREALTIME rc
	env "$@" "$NW" check --json >"$OUT/check-$name.json" 2>"$OUT/check-$name.err"
	rc=$?
	note "check $name ($*): exit $rc, $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s wall"
	python3 - "$OUT/check-$name.json" <<'PY' | tee -a "$summary"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("    no report:", e)
    sys.exit(0)
print("    %s (%.1f s inside ncclwatch)" % (d["verdict"], d["elapsed_s"]))
for i in d["items"]:
    print("    %-4s %-26s %s" % (i["verdict"], i["what"], i["reason"]))
PY
}
scenario healthy
scenario p2p-off NCCL_P2P_DISABLE=1
scenario p2p-shm-off NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1
note "outputs in $OUT"
