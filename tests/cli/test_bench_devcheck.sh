#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# -c on the device: the check kernels (src/gpu/verify.ptx) through the fake
# driver, which accepts the PTX and runs each kernel's equivalent on host
# memory. The device and the host checks must count exactly the same wrong
# elements for every op, type, reduction and root (planted with
# NCCLWATCH_TEST_CORRUPT after the collective); a driver that refuses the
# PTX falls back to the host, said once in the header.
. "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=3
unset NCCLWATCH_NCCL_LIB FAKE_GPU_MEM FAKE_CUDA_FAIL FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG \
	FAKE_NCCL_ASYNC_ERROR FAKE_NCCL_VERSION FAKE_INIT_TIMEOUT_S FAKE_CUDA_NO_JIT NCCLWATCH_CHECKS NCCLWATCH_TEST_CORRUPT
bench() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "$@"; }

run bench -g 3 --op all -b 8 -e 64K -f 8
expect_rc "checked sweep on the device: exit 0" 0
expect_out "the header says the checks run on the GPU" '^# ncclwatch .* backend nccl  checks gpu$'
expect_true "zero wrong" check_table "$OUT" 3
[ "$(grep -c 'checks gpu' "$OUT")" -eq 1 ]; RC=$?; expect_rc "said once, in the first header" 0

run bench -g 3 -b 8 -e 64 -c 0
expect_no_out "-c 0: nothing said of checks" 'checks (gpu|host)'

FAKE_CUDA_NO_JIT=1 run bench -g 3 --op all -b 8 -e 64K -f 8
expect_rc "a driver that refuses the PTX: exit 0" 0
expect_out "the fallback is said, with the driver's reason" \
	'^# ncclwatch .* checks host \(GPU 0: the driver did not compile the check kernels: CUDA_ERROR_UNSUPPORTED_PTX_VERSION .*Unsupported \.version'
expect_true "the host checks: zero wrong" check_table "$OUT" 3

NCCLWATCH_CHECKS=host run bench -g 3 -b 8 -e 64
expect_out "NCCLWATCH_CHECKS=host: the host checks, said" 'checks host \(NCCLWATCH_CHECKS=host\)'

# planted corruption: the same counts both ways, every op, type, reduction and root
A=(-g 3 --op all -d all -o all -r all -b 64 -e 8K -f 8 -n 1 -w 0 --csv)
NCCLWATCH_TEST_CORRUPT=0,5,13,100,1000 run bench "${A[@]}"
expect_rc "planted corruption, device checks: exit 1 (wrong elements)" 1
cp "$OUT" "$TMP/dev.csv"
NCCLWATCH_CHECKS=host NCCLWATCH_TEST_CORRUPT=0,5,13,100,1000 run bench "${A[@]}"
expect_rc "planted corruption, host checks: exit 1" 1
cp "$OUT" "$TMP/host.csv"
expect_true "the same wrong count in every row, device and host" python3 - "$TMP/dev.csv" "$TMP/host.csv" <<'PY'
import csv, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
assert len(a) == len(b) > 2000, (len(a), len(b))
key = lambda r: (r["op"], r["dtype"], r["redop"], r["root"], r["size_bytes"], r["inplace"])
assert [key(r) for r in a] == [key(r) for r in b]
diff = [(key(x), x["wrong"], y["wrong"]) for x, y in zip(a, b) if x["wrong"] != y["wrong"]]
assert not diff, diff[:5]
nonzero = sum(1 for x in a if x["wrong"] not in ("0", ""))
assert nonzero > len(a) * 0.9, nonzero
ops = {r["op"] for r in a}; types = {r["dtype"] for r in a}; redops = {r["redop"] for r in a}
assert {"all_reduce", "broadcast", "reduce", "gather", "scatter", "alltoall"} <= ops, ops
assert {"half", "bfloat16", "f8e4m3", "f8e5m2", "float", "double", "int8", "uint64"} <= types, types
assert {"sum", "prod", "min", "max", "avg"} <= redops, redops
PY
