/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sample: what top and the exporter remember of the stats files between two
 * looks, so they can show live rates (calls/s, busbw, percentiles over the
 * last interval) rather than averages since the job started.
 *
 * A sample holds, for every (rank file, op, size bucket) with any op, the
 * cumulative counters and the kernel and proxy timings, keyed so that the
 * same series is found again in a later sample. nw_sample_delta subtracts
 * an older sample; a counter that went backwards (a new process reused the
 * key) makes the delta the newer figures.
 */
#ifndef NW_SAMPLE_H
#define NW_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "export/statsfile.h"

/* Execution-time sources kept: kernel (exact) and proxy (network part). */
#define NW_SAMPLE_NSRC 2

struct nw_sample_timing {
	uint64_t count, bytes, sum_ns;
	uint64_t hist[NWS_NHIST];
};

struct nw_sample_ent {
	/* key */
	uint64_t comm_hash;
	uint64_t proc_start;
	int32_t pid;
	int32_t rank;
	uint32_t op;
	uint32_t bucket;
	/* cumulative figures */
	uint64_t count, bytes;
	struct nw_sample_timing t[NW_SAMPLE_NSRC]; /* [0] kernel, [1] proxy */
};

struct nw_sample {
	double t;                   /* monotonic seconds when taken */
	struct nw_sample_ent *e;    /* sorted by key; owned */
	size_t n;
};

/* Take a sample of every rank of set at monotonic time t (s zeroed first). */
void nw_sample_take(const struct nw_sf_set *set, double t, struct nw_sample *s);
/* Free the entries; the struct may be reused. */
void nw_sample_release(struct nw_sample *s);
/* Move src into dst (dst freed first); src is left empty. */
void nw_sample_move(struct nw_sample *dst, struct nw_sample *src);

/* The entry of rank r, op, bucket in s; NULL when absent. */
const struct nw_sample_ent *nw_sample_find(const struct nw_sample *s, const struct nw_sf_rank *r,
                                           unsigned op, unsigned bucket);

/* now - before (before may be NULL: then out = now). */
void nw_sample_delta(const struct nw_sample_ent *now, const struct nw_sample_ent *before,
                     struct nw_sample_ent *out);

/*
 * Execution-time figures of one entry (or a sum of entries): the kernel
 * timing when it timed any op, else proxy. Returns the nws_src used, or -1
 * when neither timed anything.
 */
int nw_sample_best(const struct nw_sample_ent *e, const struct nw_sample_timing **t);

/* Add b's counters and timings into a (keys untouched). */
void nw_sample_add(struct nw_sample_ent *a, const struct nw_sample_ent *b);

/*
 * Upper bounds in seconds of the plugin's time histogram bins, as
 * nw_hist_quantile and nw_prom_histogram take them: le[i] = 2^i us for
 * i in 0..NWS_NHIST-2; the last bin is open (its counts go above them).
 */
#define NW_SAMPLE_NBOUNDS (NWS_NHIST - 1)
void nw_sample_bounds(double le[NW_SAMPLE_NBOUNDS]);

#endif
