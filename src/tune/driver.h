/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tune driver: one tune invocation from the variants to the verdict.
 *
 * The pieces in tune.h each do one thing and know nothing of each other;
 * the driver holds the state of a whole search (struct nw_tuner) and
 * applies the policy (docs/tune.md):
 *
 *   measure   the default first, then interleaved rounds of every variant
 *   replan    after each round, repeats and variants that fit the budget
 *   prune     after --prune-after rounds, drop variants clearly slower
 *   confirm   measure a winner again, alternating with the default, and
 *             keep it only if it still wins beyond the noise
 *   analyze   the op x band table and the recommendation
 *   record    every successful run into history
 *
 * and builds the JSON document and the env file. It never prints: runs go
 * through a runner function (by default one `ncclwatch bench` child, see
 * nw_tune_run_child), progress and warnings through a note function, the
 * clock through a now function, so a test can plant timings and time.
 */
#ifndef NW_TUNE_DRIVER_H
#define NW_TUNE_DRIVER_H

#include <signal.h>
#include <stdio.h>

#include <jansson.h>

#include "model/result.h"
#include "store/store.h"
#include "tune/tune.h"

/* What to measure and how long: the tune command's options, checked. */
struct nw_tuner_opts {
	unsigned opmask;            /* ops to measure: bit (1u << enum nw_op) */
	const char *bands;          /* --bands boundaries; NULL: 64K,16M */
	unsigned groups;            /* NW_TG_* built-in settings to try */
	char *const *vars;          /* --var "NAME=v1,v2" strings */
	int nvars;
	char *const *keep;          /* NCCL_* names kept in every run (NULL-terminated; may be NULL) */
	int check_env;              /* measure the user's NCCL_* against the defaults */
	double budget_s;            /* time for the whole search; 0: none */
	int repeats;                /* repeats per variant (the most, with a budget) */
	double min_gain;            /* smallest gain that can count (0.02 = 2%) */
	int prune_after;            /* prune after this many repeats; 0: never */
	int confirm;                /* confirmation rounds before recommending; 0: none */
	double timeout_s;           /* kill a run after this long; 0: from the first default run */
	const char *save_runs;      /* directory for a copy of each run's results; NULL: none */
};

/* What a note is (the command decides what to show). */
enum nw_tune_note {
	NW_TUNE_PROGRESS,           /* a progress line: "[3/12] NCCL_PROTO=LL, repeat 1/3 ..." */
	NW_TUNE_ADVICE,             /* a warning that --quiet silences */
	NW_TUNE_WARNING,            /* a warning always shown (the runs were not recorded) */
};

/*
 * One run for rq: fills r as nw_tune_run_child does (r->run released by the
 * driver). Returns 0 when the run happened, -1 with err filled when it
 * could not be started (tune then stops).
 */
typedef int nw_tune_run_fn(void *ctx, const struct nw_tune_request *rq, struct nw_tune_result *r,
                           char *err, size_t errlen);

/* How the driver reaches the world. Every member may be left zero. */
struct nw_tuner_hooks {
	nw_tune_run_fn *run;        /* NULL: nw_tune_run_child with a struct nw_tune_child in run_ctx */
	void *run_ctx;
	double (*now)(void);        /* monotonic seconds; NULL: nw_now */
	void (*note)(void *ctx, enum nw_tune_note kind, const char *text); /* NULL: silent */
	void *note_ctx;
	volatile sig_atomic_t *interrupted; /* set non-zero by a signal: stop after the current run */
};

/* The state of one tune invocation. Read by the command for its report. */
struct nw_tuner {
	const struct nw_tuner_opts *o;
	struct nw_tuner_hooks h;
	struct nw_tune_variants vs;
	struct nw_tune_data data;
	struct nw_tune_band bands[NW_TUNE_MAXBANDS];
	int nbands;
	int nops;
	double t0;             /* when measuring started (h.now) */
	char started[32];      /* the same, as ISO 8601 UTC, for history */
	double timeout_s;      /* a run is killed after this long */
	int *done;             /* runs finished per variant */
	double *est;           /* estimated seconds per run, per variant */
	int *keep;             /* planner's keep flags, per variant */
	int repeats;           /* planned repeats per variant */
	int runs_total;        /* runs finished, all variants */
	char stopped[256];     /* why measuring stopped early ("" when it did not) */
	char nccl_version[32];
	char backend[16];
	char gpus[512];
	int nranks;
	struct nw_run *runs;   /* every successful run, for history */
	int *run_variant, *run_repeat;
	int nruns, capruns;
	struct nw_tune_cmp *cmps; /* [(variant * NW_NOPS + op) * nbands + band] */
	struct nw_tune_cell *cells;
	int ncells;
	int rec;               /* the recommended variant, or -1 */
	int *also;             /* other variants that qualified */
	int nalso;
	char stripped[1024];   /* NCCL_* names unset in the measured runs (blank-separated) */
	int nstripped;
	int candidate;         /* a winner that could not be confirmed, or -1 */
	char unconfirmed[256]; /* why not */
};

/* Prepares t for opts o (kept by pointer) and hooks h (copied; NULL: all defaults). */
void nw_tuner_init(struct nw_tuner *t, const struct nw_tuner_opts *o, const struct nw_tuner_hooks *h);
/* Frees what t holds; t stays, empty. */
void nw_tuner_release(struct nw_tuner *t);

/*
 * The bands, the variants (the default first; in check-env mode "defaults"
 * and "current", the user's NCCL_* settings) and the NCCL_* names the runs
 * will not inherit (t->stripped). Returns 0, 1 in check-env mode when no
 * NCCL_* variable is set (nothing to measure), or -1 with err filled.
 */
int nw_tuner_prepare(struct nw_tuner *t, char *err, size_t errlen);

/*
 * The default first, then rounds of every variant still in the running,
 * in rotated order, replanned after each round and pruned once. Returns
 * NW_TUNE_OK (t->stopped says when the budget ended it early),
 * NW_TUNE_FAILED with err filled (the default failed or a run could not
 * start) or NW_TUNE_INTERRUPTED (t->stopped is "interrupted").
 */
int nw_tuner_measure(struct nw_tuner *t, char *err, size_t errlen);

/*
 * After nw_tuner_measure returned measured (NW_TUNE_OK or, with runs,
 * NW_TUNE_INTERRUPTED): confirm a winner when measuring was complete,
 * else only analyze. Returns the final status: NW_TUNE_OK,
 * NW_TUNE_INTERRUPTED (the results stand, t->stopped says so) or
 * NW_TUNE_FAILED with err filled.
 */
int nw_tuner_conclude(struct nw_tuner *t, int measured, char *err, size_t errlen);

/*
 * Repeats and variants that fit the time left (t->repeats, t->keep);
 * active variants that no longer fit become NW_TV_SKIPPED, skipped ones
 * that fit again with 15% to spare come back.
 */
void nw_tuner_replan(struct nw_tuner *t);
/* Marks NW_TV_PRUNED the variants slower than the default in every band measured (after repeats). */
void nw_tuner_prune(struct nw_tuner *t, int after);
/*
 * Analyzes, then measures a winner o->confirm more rounds against the
 * default and analyzes again; up to three candidates. Leaves t->rec
 * confirmed or -1 (t->candidate then names an unconfirmed winner).
 * Returns NW_TUNE_OK, NW_TUNE_FAILED with err filled, or NW_TUNE_INTERRUPTED.
 */
int nw_tuner_confirm(struct nw_tuner *t, char *err, size_t errlen);
/* The table cells, comparisons and recommendation from the runs so far. */
void nw_tuner_analyze(struct nw_tuner *t);

/*
 * Records every successful run in history (so; nothing when disabled):
 * source "tune", extra "tune" = {variant, env, repeat, mode, started} and
 * a fingerprint of the environment that run had. Failures are warnings
 * (notes): the measurement stands. Returns the number of runs recorded.
 */
int nw_tuner_record(struct nw_tuner *t, const struct nw_store_opts *so);

/* Formats a note and hands it to the note hook, when there is one. */
void nw_tuner_note(const struct nw_tuner *t, enum nw_tune_note kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Seconds since measuring started. */
double nw_tuner_elapsed(const struct nw_tuner *t);
/* Variant v against the default in (op, band), after analysis. */
const struct nw_tune_cmp *nw_tuner_cmp(const struct nw_tuner *t, int v, enum nw_op op, int band);
/* How many (op, band) variant v is better and worse in. */
void nw_tuner_count_verdicts(const struct nw_tuner *t, int v, int *better, int *worse);
/* Variants still in the running with fewer repeats than a verdict needs. */
int nw_tuner_few_repeats(const struct nw_tuner *t);
/* 1 when nothing could be judged: the default, or every variant left, has too few repeats. */
int nw_tuner_no_verdict(const struct nw_tuner *t);

/* "better", "worse" ("helps", "hurts" in check-env mode), "no difference within noise", ... */
const char *nw_tune_verdict_name(enum nw_tune_verdict v, int check_env);
/* Seconds as "42s" or "3m05s". */
void nw_tune_fmt_dur(double s, char *buf, size_t len);

/* The whole result as JSON (schema ncclwatch.tune/1, docs/tune.md); caller decrefs. */
json_t *nw_tuner_json(const struct nw_tuner *t);
/*
 * Writes the env file to f: `export NAME=value` lines for a recommendation,
 * comments otherwise (defaults best, no verdict, an unconfirmed winner).
 * Returns 0, or -1 on a write error.
 */
int nw_tuner_write_env(const struct nw_tuner *t, FILE *f);

#endif
