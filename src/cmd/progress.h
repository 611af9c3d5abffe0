/*
 * progress: one line of progress on stderr for long work (bench, check,
 * tune): what is running, done/total, time left, redrawn in place.
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

struct nw_progress {
	int on;             /* drawing at all */
	int drawn;          /* a line is on the terminal now */
	double t0, last;    /* start, last redraw (monotonic seconds) */
	double total_w, done_w; /* work, in the caller's weight units */
	int total_n, done_n;    /* steps */
	char what[96];      /* the step running now, for the line and an interruption */
};

/*
 * Whether to draw: mode from the flags; AUTO asks NCCLWATCH_PROGRESS,
 * then whether stderr is a terminal (TERM=dumb is not).
 */
int nw_progress_wanted(enum nw_progress_mode mode);

/* Start a line for total_n steps weighing total_w in all (on: whether to draw). */
void nw_progress_init(struct nw_progress *p, int on, int total_n, double total_w);

/* Step `what` (copied) starts now; redraws at most 10 times a second. */
void nw_progress_begin(struct nw_progress *p, const char *what);

/* The step begun last is done, weighing w; redraws as above. */
void nw_progress_done(struct nw_progress *p, double w);

/* Erase the line (before other output on stderr, and at the end). */
void nw_progress_clear(struct nw_progress *p);

/*
 * Say on stderr that the work was interrupted at the step running now and
 * how much was done; safe in a signal handler (write(2) only). Does
 * nothing when p is NULL.
 */
void nw_progress_interrupted(const struct nw_progress *p, const char *cmd);

#endif
