/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare: two runs side by side, per op, size, dtype, redop and placement;
 * a verdict per size that respects noise; the size bands that got slower or
 * faster; and the fingerprint differences that may explain it, most likely
 * to matter first.
 */
#ifndef NW_COMPARE_H
#define NW_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model/result.h"
#include "store/store.h"

struct nw_cmp_opts {
	double tolerance;       /* relative busbw change tolerated, e.g. 0.05 */
	double lat_tolerance;   /* relative time change tolerated below lat_below, e.g. 0.20 */
	uint64_t lat_below;     /* sizes below this are latency-bound: compared on time */
	uint64_t min_size;      /* sizes below this are left out */
	double noise_floor_us;  /* a time difference below this many microseconds is noise */
};
/* 5%, 20% below 1 MiB, nothing left out, a 2 us noise floor. */
void nw_cmp_opts_default(struct nw_cmp_opts *o);

enum nw_cmp_verdict { NW_V_SAME, NW_V_SLOWER, NW_V_FASTER, NW_V_ONLY_A, NW_V_ONLY_B, NW_V_NA };
const char *nw_cmp_verdict_name(enum nw_cmp_verdict v); /* "same", "slower", ... */

/* One compared key. Means over repeats; change > 0 means B is faster. */
struct nw_cmp_row {
	char op[24];
	char dtype[16];
	char redop[8];
	int root;
	int inplace;
	uint64_t size;
	int na, nb;            /* rows (repeats) of this key in A and B */
	double busbw_a, busbw_b;
	double time_a, time_b;
	int by_time;           /* latency-bound: compared on time */
	double change;         /* speed(B)/speed(A) - 1: -0.2 is 20% slower */
	double threshold;      /* relative tolerance applied */
	int from_repeats;      /* threshold from the spread of repeats, not the stated tolerance */
	int from_iters;        /* threshold from the per-iteration spread (-I 1 on both sides), larger than the others */
	int from_noise;        /* threshold from the rows' measured noise (bench's repeated batches), larger than the others */
	int within_noise;      /* the difference is inside the measured noise (repeats or the floor) */
	/*
	 * Beyond its threshold, but one of too few sizes among unchanged
	 * neighbours to count (see nw_compare): verdict is then same.
	 */
	int alone;
	enum nw_cmp_verdict verdict;
};

/* Contiguous sizes of one op/dtype/redop/placement with one verdict (slower or faster). */
struct nw_cmp_band {
	char op[24];
	char dtype[16];
	char redop[8];
	int inplace;
	uint64_t from, to;
	int nsizes;
	double mean_change, worst_change;
	uint64_t worst_size;
	int by_time;           /* every size in it was compared on time */
	enum nw_cmp_verdict verdict;
};

/*
 * One fingerprint difference; lower rank is more likely to matter (the
 * table in docs/history.md). Per-launch identifiers (job ids, ports, pids,
 * timestamps) are kept with ignored set: they are never a cause.
 */
struct nw_fp_diff {
	int rank;
	int ignored;
	char field[64];        /* "nccl_version", "env.NCCL_PROTO", ... */
	char a[256], b[256];   /* "" when absent on that side */
	char text[640];        /* "NCCL 2.21.5 -> 2.28.9" */
};

struct nw_cmp {
	struct nw_cmp_row *rows;
	size_t nrows;
	struct nw_cmp_band *bands;
	size_t nbands;
	struct nw_fp_diff *diffs;
	size_t ndiffs;
	size_t nignored;        /* diffs that are per-launch identifiers */
	char attribution[2048]; /* one line in plain words */
	char not_comparable[512]; /* why A and B cannot be compared ("" when they can) */
	int nslower, nfaster, nsame, nonly;
};

/* Compare A (before) with B (after). Release out with nw_cmp_release. */
int nw_compare(const struct nw_run *a, const struct nw_run *b, const struct nw_cmp_opts *o,
               struct nw_cmp *out, char *err, size_t errlen);
void nw_cmp_release(struct nw_cmp *c);
/*
 * Whether A and B measure the same thing: same backend kind (GPUs or host),
 * GPU model, rank count and op/dtype set. 0 when they do; else 1 and the
 * reason ("backend nccl (GPUs) -> mpi (host)") in why.
 */
int nw_cmp_incomparable(const struct nw_run *a, const struct nw_run *b, char *why, size_t len);
/*
 * A change as people read it: "+12.5%" up to twice as fast or slow, beyond
 * that "3.2x faster" or "1000x slower"; "-" when unknown.
 */
void nw_cmp_format_change(char *buf, size_t len, double change);
/* A band's sizes and changes as text, for the text and HTML reports. */
struct nw_cmp_band_text {
	char from[32], to[32], worst_size[32]; /* "64M" */
	char mean[32], worst[32];              /* as nw_cmp_format_change */
};
void nw_cmp_band_text(const struct nw_cmp_band *b, struct nw_cmp_band_text *t);
/* Regression: some compared size got slower beyond its tolerance. */
int nw_cmp_regressed(const struct nw_cmp *c);

/*
 * The fingerprint of a run as recorded (extra.fingerprint), completed from
 * its header where fields are missing. New reference; caller decrefs.
 */
json_t *nw_fingerprint_of(const struct nw_run *run);

/*
 * Fingerprint differences between A and B, sorted by rank (per-launch
 * identifiers last, ignored set), and a plain one-line summary ("NCCL
 * 2.21.5 -> 2.28.9; NCCL_PROTO=Simple set in B; same GPUs and links") that
 * names no ignored field and counts what it leaves out. *diffs is the
 * caller's to free().
 */
void nw_fingerprint_diff(const struct nw_run *a, const struct nw_run *b, struct nw_fp_diff **diffs,
                         size_t *n, char *summary, size_t summarylen);

/* {"schema":"ncclwatch.compare/1", ...}: rows, bands, differences, verdict. */
json_t *nw_cmp_to_json(const struct nw_cmp *c, const struct nw_cmp_opts *o, const char *label_a,
                       const char *label_b);

/*
 * compare --by: the history's runs grouped by one field (nccl_version, gpu,
 * host), with the best busbw per group, op and size band: latency-bound
 * (below 64K), middle (64K to 64M) and bandwidth-bound (64M and above).
 */
enum { NW_BAND_LATENCY, NW_BAND_MIDDLE, NW_BAND_BW, NW_NBANDS };
#define NW_BAND_MIDDLE_FROM (64ULL << 10)
#define NW_BAND_BW_FROM (64ULL << 20)
const char *nw_band_name(int band); /* "latency", "middle", "bandwidth" */
int nw_band_of(uint64_t size);

struct nw_by_cell {
	char group[512];
	char op[24];
	int nruns;
	long long last_run;            /* the last run counted in nruns */
	double best[NW_NBANDS];        /* GB/s; 0 when no row of that band */
	long long best_run[NW_NBANDS]; /* the run that measured it; 0 none */
};

struct nw_by_table {
	char by[16];
	struct nw_by_cell *cells;      /* sorted by op, then group */
	size_t n;
};

/* Group the runs f selects from s by field by. Release out with nw_by_table_release. */
int nw_cmp_by(struct nw_store *s, const char *by, const struct nw_store_filter *f, struct nw_by_table *out,
              char *err, size_t errlen);
void nw_by_table_release(struct nw_by_table *t);
/* {"schema":"ncclwatch.compare-by/1", "by", "groups": [...]}; new reference. */
json_t *nw_by_table_to_json(const struct nw_by_table *t);

#endif
