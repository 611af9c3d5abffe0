#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Slurm prolog: run `ncclwatch check` on each node before a GPU job starts,
# and keep a node that fails out of the job, with a reason people can read.
#
# Install: copy to every compute node (e.g. /etc/slurm/prolog.d/50-ncclwatch.sh),
# make it executable, and in slurm.conf:
#     Prolog=/etc/slurm/prolog.d/*
#     PrologFlags=Alloc          # run at allocation, once per node, before any step
#
# What it does with check's verdict, the "ncclwatch check: VERDICT" line of
# its report (docs/check.md); an exit status alone is never taken for one:
#   PASS             the job runs.
#   WARN             logged; the job runs (NCCLWATCH_PROLOG_STRICT=1: drained like FAIL).
#   FAIL             the node is drained with the first failing item as reason,
#                    `scontrol update nodename=NODE state=drain reason="ncclwatch: ..."`,
#                    then the prolog exits 1: Slurm requeues the job held
#                    (`scontrol release JOBID` lets it run again) unless
#                    SchedulerParameters has nohold_on_prolog_fail, when it
#                    is requeued without a hold to run elsewhere.
#   CANNOT CHECK     no GPU, no NCCL on the host (it often lives only in the
#                    containers), a usage error: nothing about the node was
#                    judged. Logged; the job runs; the node is NOT drained.
#   no verdict, timed out at NCCLWATCH_TIMEOUT
#                    a hung collective is a failure of its own: drained as FAIL.
#                    A check that gave its verdict and was then stopped (it
#                    records in history after the verdict) is judged by it.
#   no verdict, any other exit
#                    check crashed, could not start or could not write its
#                    report: logged, not drained, strict or not (a broken
#                    install must not drain every GPU node of the cluster).
# check ends its recording in history at most 5 s after the verdict (the run
# is kept in its spool when the database is slow or away), so a database
# outage never drains a node. A check that ignores SIGTERM at the timeout is
# killed 5 s later (timeout -k).
# The node is drained before the prolog exits non-zero: slurmctld leaves a
# node that is already draining as it is, so the reason given here is the one
# `sinfo -R` shows, instead of Slurm's generic "Prolog error". Resume it with
# `scontrol update nodename=NODE state=resume` once fixed.
#
# The prolog runs as root without the job's environment: the check sees the
# node, not the job's NCCL_* variables (run `ncclwatch doctor` in the job
# script for those). It must finish well within PrologEpilogTimeout; check
# takes about 10-30 s on an 8-GPU node.
#
# Settings (environment, e.g. from a file the site sources first):
#   NCCLWATCH                the binary (/usr/local/bin/ncclwatch)
#   NCCLWATCH_LOG_DIR        where reports go (/var/log/ncclwatch; when it cannot be
#                            made or written, a temporary file, said in the log)
#   NCCLWATCH_PROLOG_STRICT  1: drain on WARN too
#   NCCLWATCH_CHECK_ARGS     extra check options, split on blanks ("--pairs",
#                            "--prom-textfile /var/lib/node_exporter/ncclwatch.prom")
#   NCCLWATCH_TIMEOUT        seconds before a hung check counts as FAIL (120)

NCCLWATCH=${NCCLWATCH:-/usr/local/bin/ncclwatch}
LOG_DIR=${NCCLWATCH_LOG_DIR:-/var/log/ncclwatch}
STRICT=${NCCLWATCH_PROLOG_STRICT:-0}
TIMEOUT=${NCCLWATCH_TIMEOUT:-120}
NODE=${SLURMD_NODENAME:-$(hostname -s)}

say() { logger -t ncclwatch-prolog -- "$*" 2>/dev/null; echo "ncclwatch-prolog: $*" >&2; }

# drain REASON: take this node out with REASON (never empty), then fail the
# prolog: Slurm requeues the job held (not held with nohold_on_prolog_fail).
drain() {
	local reason
	reason=$(printf '%s' "ncclwatch: ${1:-check gave no reason}" | tr -d '"\n' | cut -c1-200)
	say "draining $NODE: $reason"
	if ! scontrol update nodename="$NODE" state=drain reason="$reason"; then
		say "scontrol update failed; Slurm will drain $NODE with \"Prolog error\""
	fi
	exit 1
}

# The first item of the report at LEVEL, without its explanation in
# parentheses: "FAIL all_reduce 4G 21.2 GB/s busbw, 6% of 339.7 expected"
# ("FAIL (no item in the report)" when there is none).
first_item() {
	local item
	item=$(sed -n "s/^  $1 *//p" "$2" | head -1 | sed 's/ (.*//; s/  */ /g')
	echo "$1 ${item:-(no item in the report)}"
}

# Only GPU jobs: SLURM_JOB_GPUS (or CUDA_VISIBLE_DEVICES) is set for jobs
# that were allocated GPUs on this node.
if [ -z "${SLURM_JOB_GPUS:-}${CUDA_VISIBLE_DEVICES:-}" ]; then
	exit 0
fi
# A missing tool must not drain the whole cluster: say so and let the job run.
if [ ! -x "$NCCLWATCH" ]; then
	say "ncclwatch not found at $NCCLWATCH; check skipped"
	exit 0
fi

report="$LOG_DIR/check-${SLURM_JOB_ID:-nojob}.txt"
if ! { mkdir -p "$LOG_DIR" && : >"$report"; } 2>/dev/null; then
	report=$(mktemp "${TMPDIR:-/tmp}/ncclwatch-check.XXXXXX") || { say "no place for check's report; check skipped"; exit 0; }
	say "cannot write reports in $LOG_DIR; this one goes to $report"
fi
# Check the GPUs allocated to this job (CUDA numbering follows them).
if [ -n "${SLURM_JOB_GPUS:-}" ]; then
	export CUDA_VISIBLE_DEVICES="$SLURM_JOB_GPUS"
fi
# shellcheck disable=SC2086 # NCCLWATCH_CHECK_ARGS is a list of options
timeout -k 5 "$TIMEOUT" "$NCCLWATCH" check ${NCCLWATCH_CHECK_ARGS:-} >"$report" 2>"$report.err"
rc=$?
verdict=$(sed -n 's/^ncclwatch check: \([A-Z ]*\) (.*/\1/p' "$report" | head -1)
say "job ${SLURM_JOB_ID:-?} on $NODE: ${verdict:-no verdict} (exit $rc), report $report"
timed_out=0
case "$rc" in 124|137) timed_out=1 ;; esac
if [ "$timed_out" = 1 ] && [ -n "$verdict" ]; then
	say "check was stopped at $TIMEOUT s after its verdict (while recording it?); the verdict stands"
fi

case "$verdict" in
PASS) exit 0 ;;
WARN)
	[ "$STRICT" = 1 ] && drain "$(first_item WARN "$report")"
	exit 0 ;;
FAIL) drain "$(first_item FAIL "$report")" ;;
"CANNOT CHECK")
	say "cannot check $NODE: $(first_item CANNOT "$report"); not draining"
	exit 0 ;;
esac
[ "$timed_out" = 1 ] && drain "check timed out after $TIMEOUT s (a hung collective?)"
say "check gave no verdict (exit $rc: $(head -c 300 "$report.err")); not draining"
exit 0
