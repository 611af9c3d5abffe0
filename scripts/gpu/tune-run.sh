#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncclwatch tune on a GPU machine: all_reduce, all_gather, reduce_scatter and
# sendrecv, NCCL's defaults against every built-in variant, in about 6 minutes.
#
#   OUT=/some/dir scripts/gpu/tune-run.sh [more tune options]
#
# Writes under $OUT (default ./out):
#   tune.txt      the table and the verdict (also printed last)
#   tune.stderr   progress (variant i/N, elapsed, ETA) and warnings
#   tune.env      the recommendation as an env file (comments only when the
#                 defaults are best)
#   tune.json     every figure (schema ncclwatch.tune/1, docs/tune.md)
#   runs/         each bench child's results document
#   machine.txt   GPUs, NCCL library, ncclwatch version, the command
# Builds build/ncclwatch first when it is missing. Works with one GPU too
# (then every collective runs on one rank: the figures are local copies).
set -u
OUT=${OUT:-./out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/../.."
NW=${NW:-build/ncclwatch}
BUDGET=${BUDGET:-330s}

if [ ! -x "$NW" ]; then
	make -j"$(nproc)" >"$OUT/build.log" 2>&1 || { echo "build failed: see $OUT/build.log" >&2; exit 1; }
fi

# This machine needs NVLS off; tune keeps NCCL_NVLS_ENABLE as it finds it.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

# The NCCL that PyTorch ships, unless one was named.
if [ -z "${NCCLWATCH_NCCL_LIB:-}" ]; then
	lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
	[ -n "$lib" ] && [ -f "$lib" ] && export NCCLWATCH_NCCL_LIB=$lib
fi

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
cmd=("$NW" tune --op all_reduce,all_gather,reduce_scatter,sendrecv -b 8 -e 1G -f 4 -n 20 -w 5
     --budget "$BUDGET" --env-out "$OUT/tune.env" --json="$OUT/tune.json" --save-runs "$OUT/runs"
     --no-history ${NCCLWATCH_NCCL_LIB:+--nccl-lib "$NCCLWATCH_NCCL_LIB"} "$@")
{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(hostname)"
	echo "gpus: $ngpus"
	nvidia-smi -L 2>/dev/null
	echo "ncclwatch: $("$NW" --version)"
	echo "NCCLWATCH_NCCL_LIB=${NCCLWATCH_NCCL_LIB:-} NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
	echo "command: ${cmd[*]}"
} >"$OUT/machine.txt"
[ "$ngpus" -lt 2 ] && echo "note: $ngpus GPU visible: collectives run on one rank" >&2

start=$(date +%s)
"${cmd[@]}" >"$OUT/tune.txt" 2> >(tee "$OUT/tune.stderr" >&2)
rc=$?
wait
end=$(date +%s)
echo "tune exit $rc after $((end - start)) s; outputs in $OUT" >&2
echo "--- $OUT/tune.env" >&2
cat "$OUT/tune.env" >&2 2>/dev/null
echo
cat "$OUT/tune.txt"
exit $rc
