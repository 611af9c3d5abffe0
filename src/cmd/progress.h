/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress: one line of progress on stderr for long work (bench, check,
 * tune): what is running, done/total, time left once it can be told,
 * redrawn in place.
 *
 * Shown only when stderr is a terminal (never in a pipe or a CI log)
 * unless forced with --progress / --no-progress; NCCLWATCH_PROGRESS=0|1
 * sets the default. Only the calling process draws: commands call it on
 * rank 0 alone.
 */
#ifndef NW_PROGRESS_H
#define NW_PROGRESS_H

#include <stdint.h>

enum nw_progress_mode { NW_PROGRESS_AUTO = 0, NW_PROGRESS_ON, NW_PROGRESS_OFF };

/*
 * The time left in a size sweep, estimated from the sizes still to run and
 * the times measured so far. Each planned step is one size; steps come in
 * sweeps (one per op, type, reduction and root), and a sweep's first step
 * also holds its set-up and its warm-up over every size (the run's first,
 * the communicators' too), so it is not read as the time of its size.
 *
 * A step of s bytes is taken to last a + c s (each size's latest time
 * standing for it): a, the median time of the three smallest sizes
 * measured; c, the median over the three largest of their time beyond a,
 * per byte. Medians, because a loaded host puts a step off by half its
 * time either way. The estimate is sound, and shown, only once the three
 * largest sizes' median time is at least four times a (their bytes, not
 * their latency and noise, are what was timed) or nothing larger remains;
 * until then nothing is said. Sweeps still to start add the warm-up
 * measured on a later sweep's first step (beyond what its size took), or,
 * before a second sweep began, warm_share of a sweep's predicted time.
 */
struct nw_eta {
	int n, cap, done;
	uint64_t *size;       /* planned steps' sizes, in run order */
	unsigned char *first; /* 1: the step begins a sweep */
	double *took;         /* seconds each finished step took */
	double warm_share;    /* a sweep's warm-up, as a share of its steps' time, until one is measured */
};

/* An empty plan; nw_eta_release frees what it gathers. */
void nw_eta_init(struct nw_eta *e);
void nw_eta_release(struct nw_eta *e);
/* Append a step of size bytes to the plan (first: it begins a sweep). */
void nw_eta_add(struct nw_eta *e, uint64_t size, int first);
/* The next planned step finished after seconds. */
void nw_eta_took(struct nw_eta *e, double seconds);
/* Seconds left, or -1 while the estimate is not sound (see above) or the plan is done. */
double nw_eta_left(const struct nw_eta *e);

struct nw_progress {
	int on;             /* drawing at all */
	int drawn;          /* a line is on the terminal now */
	double t0, last;    /* start, last redraw (monotonic seconds) */
	double step_t;      /* when the last step ended (or the start) */
	int total_n, done_n;    /* steps */
	struct nw_eta eta;  /* the time left, when the steps are planned (nw_progress_plan_bench) */
	char what[96];      /* the step running now, for the line and an interruption */
};

/*
 * Whether to draw: mode from the flags; AUTO asks NCCLWATCH_PROGRESS,
 * then whether stderr is a terminal (TERM=dumb is not).
 */
int nw_progress_wanted(enum nw_progress_mode mode);

/* Start a line for total_n steps (on: whether to draw); without a plan it shows no time left. */
void nw_progress_init(struct nw_progress *p, int on, int total_n);

struct nw_bench_opts;
/*
 * Plan p's steps as nw_bench_run walks them for options o on nranks ranks
 * (every op, type, reduction and root in its order, each sweep's sizes
 * for every cycle; sizes too small for an op, avg on fp8 with NCCL and
 * mulsum on the MPI backend left out, as the sweep leaves them out). With
 * -N 0 (no end) there is no plan: total_n is 0. Replaces any plan made
 * before; steps already done keep their times.
 */
void nw_progress_plan_bench(struct nw_progress *p, const struct nw_bench_opts *o, int nranks);

/* Free what p holds (its plan). */
void nw_progress_release(struct nw_progress *p);

/* Step `what` (copied) starts now; redraws at most 10 times a second. */
void nw_progress_begin(struct nw_progress *p, const char *what);

/* The step begun last is done; redraws as above. */
void nw_progress_done(struct nw_progress *p);

/* Erase the line (before other output on stderr, and at the end). */
void nw_progress_clear(struct nw_progress *p);

/*
 * Say on stderr that the work was interrupted at the step running now and
 * how much was done; safe in a signal handler (write(2) only). Does
 * nothing when p is NULL.
 */
void nw_progress_interrupted(const struct nw_progress *p, const char *cmd);

#endif
