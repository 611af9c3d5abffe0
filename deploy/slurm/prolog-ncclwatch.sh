#!/bin/bash
# Slurm prolog: run `ncclwatch check` on each node before a GPU job starts,
# and keep a node that fails out of the job.
#
# Install: copy to every compute node (e.g. /etc/slurm/prolog.d/50-ncclwatch.sh),
# make it executable, and in slurm.conf:
#     Prolog=/etc/slurm/prolog.d/*
#     PrologFlags=Alloc          # run at allocation, once per node, before any step
#
# What a non-zero exit does: slurmd treats a prolog that exits non-zero as a
# node failure. Slurm DRAINS the node (reason "Prolog error") and requeues the
# job (or fails it if it cannot be requeued), so the job never runs on a node
# that failed the check, and no later job lands there until an admin runs
# `scontrol update nodename=NODE state=resume`.
# This script exits non-zero only on FAIL (ncclwatch exit 2); WARN (exit 1)
# is logged and the job proceeds. Set NCCLWATCH_PROLOG_STRICT=1 to drain on
# WARN too.
#
# The prolog runs as root without the job's environment: the check sees the
# node, not the job's NCCL_* variables (run `ncclwatch doctor` in the job
# script for those). It must finish well within PrologEpilogTimeout; check
# takes about 10-30 s on an 8-GPU node.

NCCLWATCH=${NCCLWATCH:-/usr/local/bin/ncclwatch}
LOG_DIR=${NCCLWATCH_LOG_DIR:-/var/log/ncclwatch}
STRICT=${NCCLWATCH_PROLOG_STRICT:-0}

# Only GPU jobs: SLURM_JOB_GPUS (or CUDA_VISIBLE_DEVICES) is set for jobs
# that were allocated GPUs on this node.
if [ -z "${SLURM_JOB_GPUS:-}${CUDA_VISIBLE_DEVICES:-}" ]; then
	exit 0
fi
# A missing tool must not drain the whole cluster: say so and let the job run.
if [ ! -x "$NCCLWATCH" ]; then
	logger -t ncclwatch-prolog "ncclwatch not found at $NCCLWATCH; check skipped"
	exit 0
fi

mkdir -p "$LOG_DIR"
report="$LOG_DIR/check-${SLURM_JOB_ID:-nojob}.json"
# Check the GPUs allocated to this job (CUDA numbering follows them).
if [ -n "${SLURM_JOB_GPUS:-}" ]; then
	export CUDA_VISIBLE_DEVICES="$SLURM_JOB_GPUS"
fi
timeout 120 "$NCCLWATCH" check --json >"$report" 2>"$report.err"
rc=$?
verdict=$(sed -n 's/^  "verdict": "\([A-Z]*\)".*/\1/p' "$report" | head -1)
logger -t ncclwatch-prolog "job ${SLURM_JOB_ID:-?} on $(hostname): ${verdict:-no verdict} (exit $rc), report $report"

case "$rc" in
0) exit 0 ;;
1) [ "$STRICT" = 1 ] && exit 1 || exit 0 ;;
124) # timed out: a hung collective is a failure of its own
	logger -t ncclwatch-prolog "check timed out after 120 s: draining"
	exit 1 ;;
*) exit 1 ;;  # FAIL: Slurm drains this node and requeues the job
esac
