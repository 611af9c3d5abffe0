/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run: what the files of `ncclwatch run` share (run.c: options, setting
 * the job up and starting it; run_wait.c: the wait for it, with signals,
 * samples and the status line; run_end.c: its part, history, report and
 * summary). Internal to src/cmd.
 */
#ifndef NW_CMD_RUN_H
#define NW_CMD_RUN_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "job/job.h"
#include "probe/livemode.h"
#include "store/store.h"

enum run_status_line { RUN_STATUS_AUTO, RUN_STATUS_ON, RUN_STATUS_OFF };

struct run_opts {
	const char *out, *job, *report, *nccl_lib, *subsys, *title, *node;
	int no_report, overlap, no_nccl_log, quiet, log_s;
	enum run_status_line status;
	double hang_s, sample_s, wait_s;
	long long trace_ops;
	struct nw_store_opts store;
};

struct run_ctx {
	struct run_opts o;
	char **cmd;                 /* the job's command line (NULL-terminated) */
	char job_id[128], host[256], cwd[PATH_MAX];
	char jobdir[PATH_MAX], nodedir[PATH_MAX + 300], stats_dir[PATH_MAX], report[PATH_MAX + 32];
	int task, local, global;    /* started by a launcher as one of its tasks */
	int collector;              /* this wrapper reads the node's stats and writes its part */
	int speaker;                /* this wrapper prints the job's summary */
	int capture;                /* the node directory exists: logs, part and report can be kept */
	double hang_s;
	struct nw_live_facts facts;
	struct nw_live live;
	struct nw_job_setup setup;
	struct nw_jobw *w;
	struct nw_job_sig sig;
	pid_t child;
	uint64_t start_ns, end_ns;
	struct nw_job_exit exit;
	/* the status line */
	int tty, rows, cols, drawn;
	char line[512];
	int nhangs;                 /* hangs said while it ran */
	char first_hang[512];
};

/* run_wait.c */
/* Wait for the job, sampling and forwarding signals; fills c->exit. */
void run_wait(struct run_ctx *c);
/* The status line: reserve the terminal's last row (when c->tty), and give it back. */
void run_tty_begin(struct run_ctx *c);
void run_tty_end(struct run_ctx *c);
/* Realtime now, ns. */
uint64_t run_realtime(void);

/* run_end.c */
/* Everything after the job: its part, history, the report, the summary. Returns the job's exit status. */
int run_end(struct run_ctx *c);

#endif
