/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verdict: check's PASS/WARN/FAIL from doctor's findings and a short
 * bench run, each bandwidth compared against the expectation from the
 * topology (probe/expect.h) or a baseline run. Pure: tests feed it
 * synthetic results and recorded findings.
 */
#ifndef NW_PROBE_VERDICT_H
#define NW_PROBE_VERDICT_H

#include <stddef.h>

#include <jansson.h>

#include "model/result.h"
#include "probe/doctor.h"
#include "probe/topo.h"

enum nw_check_level { NW_PASS, NW_WARN, NW_FAIL };

struct nw_verdict_item {
	enum nw_check_level v;
	char what[64];          /* "all_reduce 4G", "doctor env.workarounds", "bench" */
	char op[24];            /* bandwidth items: the collective ("sendrecv" for a pair); else "" */
	uint64_t size_bytes;    /* bandwidth items: the size judged */
	int pair_a, pair_b;     /* a pair's ranks (op "sendrecv" from --pairs); else -1 */
	double measured_gbs;    /* busbw; 0 for non-bandwidth items */
	double expected_gbs;    /* 0 when there was nothing to compare with */
	char reason[640];       /* one line */
	int skipped;            /* not judged (one rank: no link to judge); v stays PASS */
};

struct nw_verdict_opts {
	double warn_below;      /* ratio to expectation under which it warns (0.90) */
	double fail_below;      /* ... fails (0.75) */
	double warn_below_uncal; /* the same for uncalibrated expectations (0.75) */
	double fail_below_uncal; /* (0.40) */
};

struct nw_check_verdict {
	enum nw_check_level v;
	struct nw_verdict_item *items;
	size_t n, cap;
};

void nw_verdict_opts_default(struct nw_verdict_opts *o);

/* Add doctor's findings: errors FAIL, warnings WARN; ok/info/skip are not items. */
void nw_verdict_add_doctor(struct nw_check_verdict *cv, const struct nw_findings *f);
/* Add a PASS item that only informs ("skipped: ..."). */
void nw_verdict_add_note(struct nw_check_verdict *cv, const char *what, const char *text);
/* Add a failure that stopped the bench ("no GPU: ..."). */
void nw_verdict_add_fail(struct nw_check_verdict *cv, const char *what, const char *reason);

/*
 * Compare the bench run: for every op, the rows at its largest size (the
 * slowest when several, as --pairs gives) against the baseline's row of
 * the same op, size and ranks when baseline is not NULL, else against the
 * expectation for topo with nlocal ranks on this host (topo may be NULL:
 * then nothing is compared and items say so). Wrong elements FAIL. A FAIL
 * or WARN names doctor's warnings and errors as the likely cause.
 */
void nw_verdict_add_bench(struct nw_check_verdict *cv, const struct nw_run *run,
                          const struct nw_run *baseline, const struct nw_topo *topo, int nlocal,
                          const struct nw_findings *doctor, const struct nw_verdict_opts *o);

/*
 * Compare bench --pairs results (the "pairs" object bench puts in the run
 * header's extra: {"size_bytes", "pairs": [{"a","b","busbw_gbs","wrong"}]})
 * against the baseline's pairs, else the model's send/recv expectation for
 * the path between GPUs a and b of topo (ranks on one host, one GPU each).
 * The slowest pair is always an item; every pair below the warn line is one.
 */
void nw_verdict_add_pairs(struct nw_check_verdict *cv, const json_t *pairs, const json_t *base_pairs,
                          const struct nw_topo *topo, const struct nw_findings *doctor,
                          const struct nw_verdict_opts *o);

/*
 * Judge a whole bench run as check does: nw_verdict_add_bench, then its
 * send/recv pairs (the "pairs" of run->h.extra) when it holds them, each
 * against baseline (may be NULL) or the model of this host's GPUs: vis
 * (the visible ones) when it has a GPU for every local rank of the run,
 * else topo (all of them); a host (mpi) run has no model, and pairs across
 * hosts are not placed on it. Returns 1 when pairs were judged, else 0.
 */
int nw_verdict_add_run(struct nw_check_verdict *cv, const struct nw_run *run, const struct nw_run *baseline,
                       const struct nw_topo *topo, const struct nw_topo *vis,
                       const struct nw_findings *doctor, const struct nw_verdict_opts *o);

/* 0 PASS, 1 WARN, 2 FAIL. */
int nw_verdict_exit(const struct nw_check_verdict *cv);
const char *nw_check_level_name(enum nw_check_level v);
/* An item's label: "SKIP" for a skipped one, else its level's name. */
const char *nw_verdict_item_label(const struct nw_verdict_item *it);
json_t *nw_verdict_to_json(const struct nw_check_verdict *cv);
void nw_verdict_release(struct nw_check_verdict *cv);

#endif
