/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tune: find the NCCL settings that are fastest on this machine, by
 * measurement. The pieces, each usable alone (and unit-tested alone):
 *
 *   variants  the settings to try (built-in groups, --var), per op
 *   stats     medians, spreads, bootstrap intervals, the win/lose rule
 *   plan      how many repeats and which variants fit a time budget
 *   runner    one `ncclwatch bench` child per run, fresh environment,
 *             timeout, stderr captured, results parsed
 *   analyze   band scores from runs, the per op x band table, the
 *             recommendation, and the env file
 *
 * The driver (driver.h) composes them into a whole search; the tune
 * command (src/cmd/tune.c) parses options, calls the driver and prints.
 * (No tune.c: each piece above is its own file, variants.c ... analyze.c.)
 * Nothing here prints.
 */
#ifndef NW_TUNE_H
#define NW_TUNE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "model/coll.h"
#include "model/result.h"

/* ---------------------------------------------------------------- bands */

#define NW_TUNE_MAXBANDS 8

/* Sizes in [lo, hi) bytes; hi is UINT64_MAX for the last band. */
struct nw_tune_band {
	uint64_t lo, hi;
	char name[48];     /* "small (<64K)", "medium (64K-16M)", "large (>=16M)" */
};

/*
 * Bands from a list of increasing boundaries ("64K,16M" gives three bands).
 * NULL or "" gives the default boundaries 64K and 16M. Returns the number
 * of bands, or -1 with err filled (unordered, zero, bad size, too many).
 */
int nw_tune_bands_parse(const char *spec, struct nw_tune_band *bands, char *err, size_t errlen);
/* Index of the band holding size, or -1. */
int nw_tune_band_of(const struct nw_tune_band *bands, int nbands, uint64_t size);

/* ------------------------------------------------------------- variants */

struct nw_tune_setting {
	char name[64];     /* "NCCL_PROTO" */
	char value[128];   /* "LL" */
};

enum nw_tune_status {
	NW_TV_ACTIVE,      /* measured, still in the running */
	NW_TV_FAILED,      /* a run exited non-zero, hung, or wrote no results */
	NW_TV_WRONG,       /* verification found wrong elements */
	NW_TV_PRUNED,      /* clearly worse after the first repeats */
	NW_TV_SKIPPED,     /* left out for lack of time */
};

/*
 * One environment to measure. The default variant (index 0) sets nothing;
 * in --check-env mode variant 1 is "current" (keeps the user's NCCL_*).
 */
struct nw_tune_variant {
	char label[200];   /* "default", "NCCL_PROTO=LL", "current" */
	struct nw_tune_setting set[4];
	int nset;
	int keep_env;      /* 1: keep the user's NCCL_* variables (check-env "current") */
	unsigned opmask;   /* bit (1u << enum nw_op) for each op it applies to */
	enum nw_tune_status status;
	char why[1024];    /* failure reason and stderr tail; why it was pruned or skipped */
	int runs;          /* runs finished (successful or not) */
	int confirmed;     /* its confirmation rounds against the default were run */
	double cost_s;     /* mean wall seconds per run, 0 before the first */
};

/* Groups of built-in settings (--settings). */
enum {
	NW_TG_ALGO = 1u << 0,
	NW_TG_PROTO = 1u << 1,
	NW_TG_CHANNELS = 1u << 2,
	NW_TG_NTHREADS = 1u << 3,
	NW_TG_BUFFSIZE = 1u << 4,
	NW_TG_ALL = 0x1f,
};

/* "algo,proto,channels,nthreads,buffsize", "all" or "none" into a group mask. */
int nw_tune_groups_parse(const char *spec, unsigned *mask, char *err, size_t errlen);

struct nw_tune_variants {
	struct nw_tune_variant *v;
	int n, cap;
};

void nw_tune_variants_init(struct nw_tune_variants *vs);
void nw_tune_variants_release(struct nw_tune_variants *vs);
/* Append a variant setting name=value that applies to the ops in opmask; returns it. */
struct nw_tune_variant *nw_tune_variants_add(struct nw_tune_variants *vs, const char *label,
                                             const char *name, const char *value, unsigned opmask);

/*
 * Fill vs with "default" then, in this order, every --var value, and the
 * built-in groups in mask, keeping only variants that apply to at least
 * one op in opmask (NCCL_ALGO=Tree applies to all_reduce only, ...).
 * nvls_enabled says whether NVLS algorithms may be tried (they are not
 * when NCCL_NVLS_ENABLE=0 stays set). vars are "NAME=v1,v2" strings.
 * Returns 0, or -1 with err filled for a bad --var.
 */
int nw_tune_variants_build(struct nw_tune_variants *vs, unsigned groups, unsigned opmask,
                           int nvls_enabled, char *const *vars, int nvars, char *err,
                           size_t errlen);

/*
 * A comma list of collectives ("all_reduce,sendrecv") into a mask of
 * (1u << enum nw_op) bits. what names the option in err ("--op").
 * Returns 0, or -1 with err filled (empty list, unknown name).
 */
int nw_tune_ops_parse(const char *spec, const char *what, unsigned *mask, char *err, size_t errlen);
/* The ops of mask as a comma list, in enum order. */
void nw_tune_ops_list(unsigned mask, char *buf, size_t len);

/* ---------------------------------------------------------------- stats */

/* Median of n values (n > 0; the array is not changed). */
double nw_tune_median(const double *x, int n);

enum nw_tune_verdict {
	NW_TC_FEW = -2,    /* fewer than the minimum repeats on either side */
	NW_TC_WORSE = -1,
	NW_TC_SAME = 0,    /* no difference beyond the noise */
	NW_TC_BETTER = 1,
};

#define NW_TUNE_MIN_REPEATS 3

/* A variant's samples (seconds-like: lower is better) against the default's. */
struct nw_tune_cmp {
	int n_d, n_v;
	double med_d, med_v;      /* medians */
	double lo_d, hi_d, lo_v, hi_v; /* ranges */
	double noise;             /* larger relative spread (max-min)/median of the two */
	double gain;              /* med_d / med_v - 1: +0.10 means 10% faster */
	double ci_lo, ci_hi;      /* bootstrap 95% interval of gain */
	enum nw_tune_verdict verdict;
};

/*
 * Compare a variant's samples v[nv] with the default's d[nd] (both
 * lower-is-better). The rule (docs/tune.md): BETTER when both have at
 * least NW_TUNE_MIN_REPEATS samples, the gain exceeds both min_gain and the
 * noise, the ranges do not overlap (the variant's slowest beats the
 * default's fastest) and the bootstrap 95% interval of the gain lies above
 * zero; WORSE symmetrically; SAME otherwise. seed makes the bootstrap
 * repeatable.
 */
void nw_tune_compare(const double *d, int nd, const double *v, int nv, double min_gain,
                     uint64_t seed, struct nw_tune_cmp *out);

/*
 * The pruning rule: 1 when the variant's fastest sample is slower than the
 * default's slowest by more than margin (0.05 = 5%); both need >= 2 samples.
 */
int nw_tune_clearly_worse(const double *d, int nd, const double *v, int nv, double margin);

/* ----------------------------------------------------------------- plan */

struct nw_tune_plan_in {
	int n;                  /* variants; index 0 is the default, never dropped */
	const double *cost_s;   /* estimated seconds per run */
	const int *active;      /* 1 when still to be measured */
	const int *done;        /* repeats already done */
	double budget_left_s;   /* seconds left; <= 0 means no budget */
	int min_repeats, max_repeats;
};

struct nw_tune_plan_out {
	int repeats;            /* target repeats per variant */
	int *keep;              /* caller-provided array[n]: 1 kept, 0 dropped for time */
	int ndropped;           /* active variants dropped for lack of time */
	double est_s;           /* estimated seconds for what is kept */
	int fits;               /* 0 when even the default alone does not fit min_repeats */
};

/*
 * Choose the most repeats in [min_repeats, max_repeats] for which every
 * active variant fits the budget; when even min_repeats does not fit, drop
 * active variants from the end of the list (the lowest priority) until it
 * does. Without a budget: max_repeats, nothing dropped.
 */
void nw_tune_plan(const struct nw_tune_plan_in *in, struct nw_tune_plan_out *out);

/* --------------------------------------------------------------- runner */

/* Outcomes of tune's steps; each is also the exit status of the tune command. */
enum nw_tune_rc {
	NW_TUNE_OK = 0,
	NW_TUNE_USAGE = 2,        /* a bad option value */
	NW_TUNE_FAILED = 3,       /* the default runs failed, or the machine refused */
	NW_TUNE_INTERRUPTED = 130,
};

/* Bench's own options, passed to every child as the user typed them (NULL: bench's default). */
struct nw_tune_bench_opts {
	const char *b, *e, *f, *n, *w, *d, *o;
	const char *g, *backend, *nccl_lib;
};

/* What nw_tune_child_open needs. */
struct nw_tune_child_spec {
	const char *bench_cmd;  /* the bench program; NULL: this program (/proc/self/exe) */
	const char *launcher;   /* prefix for multi-process runs, split on blanks; NULL: none */
	struct nw_tune_bench_opts bench;
	const char *save_runs;  /* directory for kept result files, created when missing; NULL: none */
	char *const *keep;      /* NCCL_* names kept in every child (NULL-terminated; may be NULL) */
	volatile sig_atomic_t *interrupted; /* when set non-zero (a signal), a running child is ended */
};

/* How bench children are started. Owned strings and arrays, except keep. */
struct nw_tune_child {
	char **launcher;        /* argv prefix ("mpirun", "-np", "2"), NULL-terminated; may be NULL */
	char *bench_cmd;        /* the ncclwatch binary (or a stand-in) */
	char **bench_args;      /* arguments after "bench", NULL-terminated, without --json/-c */
	char *const *keep;      /* NCCL_* names kept in every child (NULL-terminated; may be NULL) */
	char *tmpdir;           /* where result files go; made by open, removed by close */
	volatile sig_atomic_t *interrupted;
};

/*
 * Prepare c from s, in this order: the bench program, the save_runs
 * directory, a fresh directory under $TMPDIR, the launcher and bench
 * argument lists. Returns NW_TUNE_OK, NW_TUNE_USAGE (save_runs cannot be
 * created) or NW_TUNE_FAILED (no program path, no temporary directory),
 * with err filled. c is to be closed in every case.
 */
int nw_tune_child_open(struct nw_tune_child *c, const struct nw_tune_child_spec *s, char *err,
                       size_t errlen);
/* Removes the temporary directory and frees what c holds; c stays, empty. */
void nw_tune_child_close(struct nw_tune_child *c);

/* One run asked of a runner. */
struct nw_tune_request {
	const struct nw_tune_variant *v;
	const char *ops;        /* comma list of the ops to run */
	int check;              /* 1: verify results (bench -c 1) */
	const char *json_keep;  /* a path to copy the child's results file to, or NULL */
	double timeout_s;       /* kill the run after this long */
};

struct nw_tune_result {
	int rc;                 /* exit status; -1 when killed by a signal or timed out */
	int timed_out;
	double wall_s;
	char err[1024];         /* what went wrong, with the tail of the child's stderr */
	struct nw_run run;      /* parsed results when rc is 0 or 1 (caller releases) */
	int have_run;
};

/*
 * Run one bench child for rq->v: environment = ours, minus every NCCL_*
 * variable nw_tune_env_unset names, plus the variant's settings; with a
 * launcher the settings also travel on the command line through env(1)
 * so every rank gets them. Returns 0 when the child ran (see r->rc), -1
 * with err filled when it could not be started, was interrupted, or its
 * results could not be kept. r is initialised here; the caller releases
 * r->run.
 */
int nw_tune_run_child(const struct nw_tune_child *c, const struct nw_tune_request *rq,
                      struct nw_tune_result *r, char *err, size_t errlen);

/*
 * Whether a child runs without the environment entry "NAME=value": every
 * NCCL_* variable is unset except NCCL_NVLS_ENABLE and the names in keep
 * (NULL-terminated; may be NULL), unless keep_env (check-env's "current").
 */
int nw_tune_env_unset(char *const *keep, int keep_env, const char *entry);

/* Split a launcher string on blanks into a NULL-terminated argv (caller frees with nw_tune_argv_free). */
char **nw_tune_split_words(const char *s);
void nw_tune_argv_free(char **argv);

/* -------------------------------------------------------------- analyze */

/* Samples of one (variant, op, band): one score per successful run. */
struct nw_tune_samples {
	double *x;
	int n, cap;
};

/* All scores: index [(variant * NW_NOPS + op) * nbands + band]. */
struct nw_tune_data {
	int nvariants, nbands;
	struct nw_tune_band bands[NW_TUNE_MAXBANDS];
	struct nw_tune_samples *s;
};

void nw_tune_data_init(struct nw_tune_data *d, int nvariants, const struct nw_tune_band *bands,
                       int nbands);
void nw_tune_data_release(struct nw_tune_data *d);
struct nw_tune_samples *nw_tune_data_at(const struct nw_tune_data *d, int variant, enum nw_op op,
                                        int band);
/*
 * Add one run's scores for a variant: per (op, band) the geometric mean of
 * time_us over its rows (both placements) with a size in the band.
 */
void nw_tune_data_add_run(struct nw_tune_data *d, int variant, const struct nw_run *run);

/* One cell of the table: op x band, default against the best variant. */
struct nw_tune_cell {
	enum nw_op op;
	int band;
	double default_us;      /* median band score of the default */
	int best;               /* variant index with a BETTER verdict and the highest gain, or -1 */
	struct nw_tune_cmp best_cmp;
	int nbetter, nworse, nsame;
};

/*
 * Compare every active variant with the default in every (op, band) that
 * has samples. cmps is filled with [variant * NW_NOPS * nbands + op * nbands
 * + band] (caller-provided, nvariants * NW_NOPS * nbands entries; verdict
 * NW_TC_FEW and n_v 0 where there is nothing). cells gets one entry per
 * (op, band) with default samples, in op then band order; returns their
 * number.
 */
int nw_tune_analyze(const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                    double min_gain, struct nw_tune_cmp *cmps, struct nw_tune_cell *cells);

/*
 * The recommendation: the variant that is BETTER in at least one
 * (op, band) and WORSE in none, with the largest summed gain over its
 * BETTER cells; -1 when the defaults are best. Variants that failed are
 * never chosen. also[] gets the other variants that qualify (for "also
 * better, not combined"); *nalso their number.
 */
int nw_tune_recommend(const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                      const struct nw_tune_cmp *cmps, int *also, int *nalso);

/*
 * Write the env file for the recommended variant (rec, or -1 for
 * "defaults are best here"): a header comment (tool, date, host, NCCL),
 * then for the variant one comment line per BETTER cell with its measured
 * gain, then `export NAME=value` lines. Returns 0 or -1 on a write error.
 */
int nw_tune_write_env(FILE *f, const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                      const struct nw_tune_cmp *cmps, int rec, const char *date, const char *host,
                      const char *nccl_version);

#endif
