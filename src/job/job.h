/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job: a training job run under `ncclwatch run`, from its start to its
 * report. One header for the module, implemented by several files:
 *   watch.c   the live watcher: reads the job's stats directory every
 *             sample, keeps bandwidth and lateness over time, exposed
 *             communication windows, the flight recorders' operations
 *             (bounded), hangs as `hang` would say them, and anomalies;
 *   part.c    a node's part of the job as one JSON document
 *             (ncclwatch.jobpart/1): built from the watcher at the end,
 *             written into the job's directory, recorded in history
 *             (source "job"), read back from either;
 *   view.c    every node's part merged into one view: ranks, bandwidth
 *             bins, lateness, incidents, clock offsets between nodes
 *             (estimated from collectives that end together), timeline;
 *   trace.c   the merged timeline as Chrome/Perfetto trace JSON, one
 *             track per rank;
 *   record.c  the view as a result run (rows per op and size bucket,
 *             fingerprint with the NCCL, environment, transports, nodes),
 *             for history and compare;
 *   proc.c    the job's process: started with its own signal mask and
 *             dispositions, an exec failure reported, exit status kept;
 *   ncclinfo.c the NCCL debug logs captured per rank, read by logscan.
 * The HTML page is report/jobpage.c (report/report.h).
 *
 * Layout of a job directory (docs/run.md):
 *   DIR/nodes/HOST/part.json      this node's part
 *   DIR/nodes/HOST/nccl.HOST.PID.log  NCCL's debug output of each process
 *   DIR/nodes/HOST/stats/         the stats files (.nws) at the end
 *   DIR/nodes/HOST/dumps/         the plugin's trace dumps (.json: anomalies, hangs)
 *   DIR/report.html, DIR/timeline.json, DIR/results.json
 */
#ifndef NW_JOB_H
#define NW_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include <jansson.h>

#include "model/result.h"
#include "plugin/nwstats.h"

/* ---- the live watcher (watch.c) ---- */

/* One operation of a flight recorder, as kept for the timeline. */
struct nw_jop {
	uint64_t seq, bytes;
	uint64_t enq_ns, start_ns, end_ns; /* CLOCK_REALTIME of the node that wrote it */
	uint16_t op;                       /* enum nws_op */
	uint8_t src, flags, nch;           /* enum nws_src, NWS_OPF_*, channels */
	uint8_t dtype;                     /* ncclDataType_t numbering; 255 unknown */
	char algo[12], proto[8];
};

/* What the watcher is told at start. */
struct nw_jobw_opts {
	const char *dir;        /* the stats directory (NCCLWATCH_DIR of the job) */
	double hang_s;          /* a hang after this many seconds without an NCCL event */
	size_t trace_ops;       /* operations kept per rank for the timeline (newest) */
};

/* One line's worth of the job's state, for the status line. */
struct nw_jobw_status {
	int files, ranks;        /* stats files read, distinct processes */
	double ops_per_s;        /* per rank, over the last interval */
	char top_op[24];         /* the op that moved the most bytes in it, "" none */
	double top_busbw;        /* its busbw, GB/s; 0 when not timed */
	int slow_rank;           /* the latest straggler's rank, -1 none */
	double slow_late_us;
	char slow_comm[17];
	int hung;                /* communicators hung now */
	char hang_text[256];     /* the first one, as one sentence */
};

/* A hang newly declared by a tick: said once by the caller. */
struct nw_jobw_news {
	char text[8][512];
	int n;
};

struct nw_jobw;

/* A watcher of opts->dir (which may not exist yet). Never NULL. */
struct nw_jobw *nw_jobw_new(const struct nw_jobw_opts *opts);
void nw_jobw_free(struct nw_jobw *w);

/*
 * One sample at realtime now_ns: read the stats directory, add what
 * happened since the last one, diagnose hangs. news gets the hangs newly
 * declared (may be NULL); st the state for a status line (may be NULL).
 * A directory that cannot be read yet is no error: 0, nothing added.
 */
int nw_jobw_tick(struct nw_jobw *w, uint64_t now_ns, struct nw_jobw_status *st, struct nw_jobw_news *news);

/*
 * Whether every stats file's process has ended (finished, stale or
 * disabled); *live gets how many are still running. For the wait at the
 * end of a job whose launcher returned before its ranks.
 */
int nw_jobw_all_ended(struct nw_jobw *w, int *live);

/*
 * At the end of the job (after a last tick): ranks whose process ended
 * without finalizing its communicator (crashed, killed, aborted) become
 * incidents.
 */
void nw_jobw_finish(struct nw_jobw *w, uint64_t now_ns);

/* ---- a node's part (part.c) ---- */

/* How the job ended. */
struct nw_job_exit {
	int code;               /* exit status (0..255) when it exited */
	int signal;             /* the signal that ended it; 0 when it exited */
	int interrupted;        /* the wrapper was asked to stop it (Ctrl-C, kill) */
	char by[160];           /* "SIGTERM from pid 4242", "Ctrl-C (SIGINT from the terminal)" */
	int not_started;        /* the command could not be run (exit 127 / 126) */
};

/* What the part says about the job besides the watcher's figures. */
struct nw_job_meta {
	const char *job_id;
	const char *host;
	char *const *argv;      /* the command run */
	const char *cwd;
	uint64_t start_ns, end_ns;
	struct nw_job_exit exit;
	json_t *mode;           /* {"mode","profiler_interface","nccl_version","nccl_path","file","why"}; borrowed */
	json_t *settings;       /* {"NAME": "value"} set by run for the job; borrowed */
	json_t *kept;           /* ["NCCL_DEBUG=WARN is yours: kept", ...]; borrowed */
	json_t *nccl;           /* what logscan read in the captured logs (ncclinfo.c), or NULL; borrowed */
	json_t *env;            /* the job's NCCL_* and launcher variables, for the fingerprint; borrowed */
	double sample_s, hang_s;
	int log_s, overlap;
	const char *files_dir;  /* the node's directory, relative to the job directory ("nodes/HOST") */
};

/*
 * The part of this node: meta and everything the watcher kept, as a
 * document of schema ncclwatch.jobpart/1 (docs/run.md). Caller owns it.
 */
json_t *nw_job_part(const struct nw_jobw *w, const struct nw_job_meta *m);

/* The node directory of host in a job directory: DIR/nodes/HOST (host made safe for a file name). */
void nw_job_node_dir(const char *jobdir, const char *host, char *out, size_t len);

/* Write part as DIR/nodes/HOST/part.json, whole or not at all. -1 with err. */
int nw_job_part_write(const char *node_dir, const json_t *part, char *err, size_t errlen);

/*
 * Every part.json under DIR/nodes/ into an array (owned by the caller),
 * sorted by host. -1 with err when DIR is no job directory or a part is
 * unreadable (named).
 */
int nw_job_parts_dir(const char *dir, json_t **parts, char *err, size_t errlen);

/* ---- the merged view (view.c) ---- */

/* One rank of one communicator (one stats file) in the view. */
struct nw_jv_rank {
	uint64_t comm;
	int rank, nranks, node; /* node: index into the view's nodes */
	int pid, gpu, world;    /* world: the process's rank in its largest communicator (its track) */
	char host[64], name[64], state[16], disabled[128];
	uint64_t ops, bytes, slow_ops, dropped, missed;
	uint64_t per_op[NWS_NOPS][5]; /* per op: calls, bytes, timed calls, timed bytes, timed ns (kernel, else proxy) */
	double per_op_fb[NWS_NOPS];   /* timed bytes x the busbw factor (busbw = this / timed ns) */
	struct nw_jop *tl;      /* its timeline, oldest first, clock offset applied; owned */
	size_t ntl;
	uint64_t tl_dropped;    /* operations older than the timeline kept */
};

/* A node: its part, its clock offset against the first node. */
struct nw_jv_node {
	char host[64];
	const json_t *part;     /* borrowed from the parts array */
	int64_t offset_ns;      /* add to its times to put them on the first node's clock */
	int offset_known;       /* 1 estimated, 0 none (no collective shared with a known node) */
	size_t offset_n;        /* collectives it was estimated from */
	double offset_spread_us;/* their interquartile range */
	char offset_how[96];    /* "from 412 collectives' end times" */
};

/* One point of a chart: value at a time bin. */
struct nw_jv_line {
	char label[64];         /* "1M-2M", "rank 3" */
	double *y;              /* nbins values; NAN where nothing was measured; owned */
};

/* A chart: lines over the view's time bins. */
struct nw_jv_chart {
	char title[128];
	char unit[16];          /* "GB/s", "us", "%" */
	struct nw_jv_line *lines;
	size_t nlines;
};

/* An incident (hang, abort, anomaly), in time order. */
struct nw_jv_incident {
	uint64_t t_ns;
	char kind[16];          /* "hang", "abort", "exit", "slow", "dump", "disabled", "dropped", "alone", "nccl" */
	char host[64];
	char text[768];
};

struct nw_job_view {
	char job[128];
	uint64_t start_ns, end_ns;
	struct nw_jv_node *nodes;
	size_t nnodes;
	struct nw_jv_rank *ranks; /* by comm, then rank */
	size_t nranks;
	int world;                /* ranks of the largest communicator */
	/* time bins of the charts */
	uint64_t bin0_ns, bin_ns;
	size_t nbins;
	struct nw_jv_chart *bw;   /* one per op with timed operations */
	size_t nbw;
	struct nw_jv_chart *late; /* one per communicator with lateness samples */
	size_t nlate;
	struct nw_jv_chart exposed; /* exposed share of wall time, a line per rank; nlines 0 when not measured */
	struct nw_jv_incident *inc;
	size_t ninc;
	int interrupted;          /* any node was stopped */
};

/*
 * Merge parts (an array of ncclwatch.jobpart/1 documents, all of one job)
 * into v (zeroed first; parts must outlive v). -1 with err when a part is
 * malformed (named, with the field).
 */
int nw_job_view_build(const json_t *parts, struct nw_job_view *v, char *err, size_t errlen);
void nw_job_view_release(struct nw_job_view *v);

/* The first node's exit (the job's status as the launcher saw it). */
const json_t *nw_job_view_exit(const struct nw_job_view *v);

/* ---- outputs (trace.c, record.c) ---- */

/* The merged timeline as Chrome trace JSON (traceEvents, one pid per rank). Caller owns it. */
json_t *nw_job_trace(const struct nw_job_view *v);

/*
 * The view as a result run (source "job"): one row per op and size bucket
 * over every rank (time: mean execution time of the timed ops; busbw over
 * them), the header from the first node (NCCL, host list, ranks, nodes),
 * and a fingerprint with the job's environment, NCCL's transports as the
 * "topology" and the job id. run is initialised here (nw_run_release).
 */
void nw_job_to_run(const struct nw_job_view *v, struct nw_run *run);

/* ---- what run sets in the job's environment (setup.c) ---- */

struct nw_live;

/* What run wants for the job. */
struct nw_job_setup_in {
	const struct nw_live *live; /* the mode (probe/livemode.h) */
	const char *job_id;
	const char *stats_dir;      /* NCCLWATCH_DIR of the job */
	const char *log_file;       /* NCCL_DEBUG_FILE pattern (DIR/nccl.%h.%p.log); NULL: no capture */
	const char *subsys;         /* NCCL_DEBUG_SUBSYS for the captured logs */
	double log_s;               /* NCCLWATCH_LOG_S; 0 off */
	int overlap;                /* NCCLWATCH_OVERLAP=1 */
	double hang_s;              /* NCCLWATCH_HANG_S when > 0 (else the user's, or the plugin's default) */
	char *const *env;           /* the environment the job would get otherwise ("NAME=value") */
};

#define NW_JOB_MAX_SET 16
#define NW_JOB_MAX_NOTES 8

/* The variables to set, and what of the user's was kept. */
struct nw_job_setup {
	struct {
		char name[40];
		char value[4096];
	} set[NW_JOB_MAX_SET];
	int nset;
	char notes[NW_JOB_MAX_NOTES][320]; /* "NCCL_DEBUG=WARN is yours: kept; ..." */
	int nnotes;
	int stats;                  /* the job's ranks will write stats files for run to read */
	int logs;                   /* NCCL's debug output goes to run's files */
};

/*
 * Decide the job's variables (pure: tests give env). The user's own
 * NCCL_PROFILER_PLUGIN, NCCL_DEBUG, NCCL_DEBUG_FILE, NCCL_DEBUG_SUBSYS and
 * NCCLWATCH_* settings are kept, each said in a note; NCCLWATCH_DIR is the
 * job's own (a user's value is replaced, and said).
 */
void nw_job_setup(const struct nw_job_setup_in *in, struct nw_job_setup *out);

/*
 * The job's id: NCCLWATCH_JOB; else, run as a task of a launcher, the
 * launch's own id (Slurm's job and step, the MPI namespace), the same on
 * every node; else torchrun's --rdzv-id in argv; else one made of the
 * Slurm job (if any), the time (now_ns) and pid. Letters, digits, '.',
 * '_' and '-' only.
 */
void nw_job_id(char *const *argv, char *const *env, uint64_t now_ns, int pid, char *out, size_t len);

/*
 * Whether argv launches ranks on several nodes (srun -N 2+, mpirun with
 * several hosts or a hostfile, torchrun --nnodes above 1, deepspeed
 * --num_nodes above 1 or a hostfile): 1 with what says so in why.
 */
int nw_job_spans_nodes(char *const *argv, char *why, size_t len);

/*
 * Whether a launcher started this process as one of its tasks (srun,
 * mpirun, torchrun's children): 1 with *local (rank on this node) and
 * *global (rank in the launch; -1 unknown), else 0.
 */
int nw_job_task(char *const *env, int *local, int *global);

/*
 * Copy the stats files (.nws) and the plugin's trace dumps (trace.*.json)
 * of stats_dir into node_dir/stats and node_dir/dumps. *nstats and
 * *ndumps get the counts. -1 with err when a directory cannot be made.
 */
int nw_job_keep_files(const char *stats_dir, const char *node_dir, size_t *nstats, size_t *ndumps, char *err,
                      size_t errlen);

/* Remove the stats files, dumps and dump trigger of stats_dir, then the directory if empty. */
void nw_job_clear_stats(const char *stats_dir);

/* ---- the job's process (proc.c) ---- */

/* The signals run waits for with sigtimedwait instead of handling them, and what it changed. */
struct nw_job_sig {
	sigset_t waited;          /* CHLD, INT, TERM, HUP, QUIT, USR1, USR2, WINCH, ALRM */
	sigset_t saved_mask;      /* the mask before */
	struct sigaction saved_pipe; /* SIGPIPE's disposition before it was ignored */
};

/* Block the signals of s->waited and ignore SIGPIPE (stderr may go away); the old state into s. */
void nw_job_signals_take(struct nw_job_sig *s);

/* Put back the mask and SIGPIPE's disposition. */
void nw_job_signals_give_back(const struct nw_job_sig *s);

/*
 * Start argv (argv[0] looked up on PATH) with env as its environment
 * (NULL: this one) and the signal state s had before nw_job_signals_take,
 * in this process group (the terminal's Ctrl-C reaches it directly).
 * *pid gets its pid. -1 with err when it cannot be run; *errno_out then
 * says why (ENOENT: the shell's exit status 127, else 126).
 */
int nw_job_start(char *const *argv, char *const *env, const struct nw_job_sig *s, pid_t *pid, int *errno_out,
                 char *err, size_t errlen);

/* "SIGTERM" for a signal number ("signal 42" when it has no name), into buf. */
const char *nw_job_signame(int sig, char *buf, size_t len);

/* ---- NCCL's captured logs (ncclinfo.c) ---- */

/*
 * Read the NCCL debug logs in dir (files named nccl.*.log) with logscan;
 * the report document (ncclwatch.logscan/1) trimmed to what a job report
 * shows, or NULL when there was none. *nfiles counts the logs read.
 */
json_t *nw_job_nccl_info(const char *dir, size_t *nfiles);

#endif
