/* SPDX-License-Identifier: Apache-2.0 */
/* check's verdict (see verdict.h). */
#include "probe/verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "probe/expect.h"
#include "util/strbuf.h"
#include "util/util.h"

void nw_verdict_opts_default(struct nw_verdict_opts *o)
{
	o->warn_below = 0.90;
	o->fail_below = 0.75;
	o->warn_below_uncal = 0.75;
	o->fail_below_uncal = 0.40;
}

const char *nw_check_level_name(enum nw_check_level v)
{
	return v == NW_FAIL ? "FAIL" : v == NW_WARN ? "WARN" : "PASS";
}

const char *nw_verdict_item_label(const struct nw_verdict_item *it)
{
	return it->skipped ? "SKIP" : nw_check_level_name(it->v);
}

static struct nw_verdict_item *add(struct nw_check_verdict *cv, enum nw_check_level v, const char *what,
                                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct nw_verdict_item *add(struct nw_check_verdict *cv, enum nw_check_level v, const char *what,
                                   const char *fmt, ...)
{
	if (cv->n == cv->cap) {
		cv->cap = cv->cap ? cv->cap * 2 : 16;
		cv->items = nw_realloc(cv->items, cv->cap * sizeof(*cv->items));
	}
	struct nw_verdict_item *it = &cv->items[cv->n++];
	memset(it, 0, sizeof(*it));
	it->v = v;
	nw_strlcpy(it->what, what, sizeof(it->what));
	it->pair_a = it->pair_b = -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->reason, sizeof(it->reason), fmt, ap);
	va_end(ap);
	if (v > cv->v)
		cv->v = v;
	return it;
}

void nw_verdict_add_doctor(struct nw_check_verdict *cv, const struct nw_findings *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		const struct nw_finding *x = &f->v[i];
		if (x->sev < NW_SEV_WARN)
			continue;
		char what[64];
		snprintf(what, sizeof(what), "doctor %s", x->id);
		add(cv, x->sev == NW_SEV_ERROR ? NW_FAIL : NW_WARN, what, "%s%s%s", x->seen,
		    x->fix[0] ? "; fix: " : "", x->fix);
	}
}

void nw_verdict_add_fail(struct nw_check_verdict *cv, const char *what, const char *reason)
{
	add(cv, NW_FAIL, what, "%s", reason);
}

void nw_verdict_add_note(struct nw_check_verdict *cv, const char *what, const char *text)
{
	add(cv, NW_PASS, what, "%s", text);
}

/* doctor's warnings and errors, as "id (seen)" list, for a likely cause. */
static void causes(const struct nw_findings *f, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (size_t i = 0; f && i < f->n; i++)
		if (f->v[i].sev >= NW_SEV_WARN)
			nw_strbuf_addf(&sb, "%s%s", sb.len ? "; " : "", f->v[i].seen);
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* The row of op at size with the lowest busbw (out-of-place preferred); NULL if none. */
static const struct nw_row *worst_row(const struct nw_run *r, const char *op, uint64_t size, int nranks)
{
	const struct nw_row *best = NULL;
	for (int pass = 0; pass < 2 && !best; pass++)
		for (size_t i = 0; i < r->nrows; i++) {
			const struct nw_row *x = &r->rows[i];
			if (strcmp(x->op, op) || x->size_bytes != size || (nranks > 0 && x->nranks != nranks))
				continue;
			if (pass == 0 && x->inplace)
				continue;
			if (!best || x->busbw_gbs < best->busbw_gbs)
				best = x;
		}
	return best;
}

/* What an op's busbw is compared with, and where that figure comes from. */
struct expectation {
	double gbs;                 /* 0 when there is nothing to compare with */
	double warn, fail;          /* ratios to gbs under which it warns, fails */
	char basis[NW_ERRLEN + 64];
};

/*
 * The expectation for op at size (sz: the same, as text) with m's ranks:
 * the baseline's row when there is a baseline, else the model for topo
 * with nlocal ranks on this host, else none; the basis says which, or why none.
 */
static void expectation_for(const struct nw_row *m, const char *op, uint64_t size, const char *sz,
                            const struct nw_run *baseline, const struct nw_topo *topo, int nlocal,
                            const struct nw_verdict_opts *o, struct expectation *x)
{
	x->gbs = 0;
	x->warn = o->warn_below;
	x->fail = o->fail_below;
	x->basis[0] = '\0';
	if (baseline) {
		const struct nw_row *b = worst_row(baseline, op, size, m->nranks);
		if (b && b->busbw_gbs > 0) {
			x->gbs = b->busbw_gbs;
			snprintf(x->basis, sizeof(x->basis), "baseline %s", baseline->h.time[0] ? baseline->h.time : "run");
		} else
			snprintf(x->basis, sizeof(x->basis), "the baseline has no %s row at %s with %d ranks", op, sz, m->nranks);
		return;
	}
	if (!topo) {
		snprintf(x->basis, sizeof(x->basis), "no expectation (host backend; give --baseline)");
		return;
	}
	const struct nw_coll *c = nw_coll_find(op);
	struct nw_expect e;
	char err[NW_ERRLEN];
	int local = nlocal > 0 ? nlocal : m->nranks;
	if (local > m->nranks)
		local = m->nranks;
	if (!c)
		snprintf(x->basis, sizeof(x->basis), "no model for '%s'", op);
	else if (nw_expect_for_topo(topo, c->op, m->nranks, local, size, &e, err, sizeof(err)) < 0)
		snprintf(x->basis, sizeof(x->basis), "no expectation: %s", err);
	else {
		x->gbs = e.busbw_gbs;
		nw_strlcpy(x->basis, e.basis, sizeof(x->basis));
		if (!e.calibrated) {
			x->warn = o->warn_below_uncal;
			x->fail = o->fail_below_uncal;
		}
	}
}

/* One item for op: its slowest row at its largest size against the expectation; cause names doctor's findings. */
static void judge_op(struct nw_check_verdict *cv, const struct nw_run *run, const char *op,
                     const struct nw_run *baseline, const struct nw_topo *topo, int nlocal,
                     const char *cause, const struct nw_verdict_opts *o)
{
	uint64_t size = 0;
	for (size_t k = 0; k < run->nrows; k++)
		if (!strcmp(run->rows[k].op, op) && run->rows[k].size_bytes > size)
			size = run->rows[k].size_bytes;
	const struct nw_row *m = worst_row(run, op, size, 0);
	if (!m)
		return;
	char sz[32], what[64];
	nw_format_size(size, sz, sizeof(sz));
	snprintf(what, sizeof(what), "%s %s", op, sz);
	struct expectation x;
	expectation_for(m, op, size, sz, baseline, topo, nlocal, o, &x);
	if (m->nranks < 2) {
		struct nw_verdict_item *sk = add(cv, NW_PASS, what, "1 rank: nothing crosses a link; run check on 2 or "
		                                 "more GPUs, or under mpirun, srun or torchrun with 2 or more ranks");
		sk->skipped = 1;
		return;
	}
	struct nw_verdict_item *it;
	if (!(x.gbs > 0)) {
		it = add(cv, NW_PASS, what, "%.1f GB/s busbw; not compared: %s", m->busbw_gbs, x.basis);
	} else {
		double ratio = m->busbw_gbs / x.gbs;
		enum nw_check_level v = ratio < x.fail ? NW_FAIL : ratio < x.warn ? NW_WARN : NW_PASS;
		it = add(cv, v, what, "%.1f GB/s busbw, %.0f%% of %.1f expected (%s)%s%s", m->busbw_gbs,
		         ratio * 100.0, x.gbs, x.basis, v != NW_PASS && cause[0] ? "; likely cause: " : "",
		         v != NW_PASS ? cause : "");
	}
	it->measured_gbs = m->busbw_gbs;
	it->expected_gbs = x.gbs;
	nw_strlcpy(it->op, op, sizeof(it->op));
	it->size_bytes = size;
}

void nw_verdict_add_bench(struct nw_check_verdict *cv, const struct nw_run *run,
                          const struct nw_run *baseline, const struct nw_topo *topo, int nlocal,
                          const struct nw_findings *doctor, const struct nw_verdict_opts *o)
{
	char cause[512];
	causes(doctor, cause, sizeof(cause));
	int64_t wrong = 0;
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].wrong > 0)
			wrong += run->rows[i].wrong;
	if (wrong)
		add(cv, NW_FAIL, "bench", "%lld wrong elements: a collective returned corrupt data", (long long)wrong);
	/* Each op once, at its largest size. */
	for (size_t i = 0; i < run->nrows; i++) {
		const char *op = run->rows[i].op;
		int seen = 0;
		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(run->rows[k].op, op);
		if (!seen)
			judge_op(cv, run, op, baseline, topo, nlocal, cause, o);
	}
}

/*
 * The expectation for the send/recv pair a<->b at size: the baseline's
 * pair from blist (the last one listed), else, with no baseline at all,
 * the model for the path between GPUs a and b of topo; none otherwise.
 */
static void pair_expectation(int a, int b, json_int_t size, const json_t *blist, int have_baseline,
                             const struct nw_topo *topo, const struct nw_verdict_opts *o, struct expectation *x)
{
	x->gbs = 0;
	x->warn = o->warn_below;
	x->fail = o->fail_below;
	x->basis[0] = '\0';
	size_t k;
	json_t *be;
	json_array_foreach(blist, k, be) {
		if (json_integer_value(json_object_get(be, "a")) == a &&
		    json_integer_value(json_object_get(be, "b")) == b) {
			x->gbs = json_number_value(json_object_get(be, "busbw_gbs"));
			snprintf(x->basis, sizeof(x->basis), "baseline");
		}
	}
	if (x->gbs > 0 || have_baseline || !topo || a < 0 || b < 0 || a >= topo->ngpus || b >= topo->ngpus)
		return;
	const struct nw_topo_pair *p = &topo->pairs[a][b];
	struct nw_expect e;
	char err[NW_ERRLEN];
	if (nw_expect_for_link(NW_SENDRECV, 2, p->path, p->link_gbs, (uint64_t)size, &e, err, sizeof(err)) == 0) {
		x->gbs = e.busbw_gbs;
		nw_strlcpy(x->basis, e.basis, sizeof(x->basis));
		if (!e.calibrated) {
			x->warn = o->warn_below_uncal;
			x->fail = o->fail_below_uncal;
		}
	}
}

void nw_verdict_add_pairs(struct nw_check_verdict *cv, const json_t *pairs, const json_t *base_pairs,
                          const struct nw_topo *topo, const struct nw_findings *doctor,
                          const struct nw_verdict_opts *o)
{
	const json_t *list = json_object_get(pairs, "pairs");
	const json_t *blist = json_object_get(base_pairs, "pairs");
	json_int_t size = json_integer_value(json_object_get(pairs, "size_bytes"));
	char cause[512], sz[32];
	causes(doctor, cause, sizeof(cause));
	nw_format_size(size > 0 ? (uint64_t)size : 0, sz, sizeof(sz));
	size_t i;
	json_t *e;
	double worst_ratio = 1e9, worst_bw = 0, worst_exp = 0;
	int worst_a = -1, worst_b = -1;
	char worst_what[64] = "", worst_basis[NW_ERRLEN + 64] = "";
	int npairs = 0;
	json_array_foreach(list, i, e) {
		int a = (int)json_integer_value(json_object_get(e, "a"));
		int b = (int)json_integer_value(json_object_get(e, "b"));
		double bw = json_number_value(json_object_get(e, "busbw_gbs"));
		json_int_t wrong = json_integer_value(json_object_get(e, "wrong"));
		char what[64];
		snprintf(what, sizeof(what), "sendrecv %d<->%d %s", a, b, sz);
		npairs++;
		if (wrong > 0)
			add(cv, NW_FAIL, what, "%lld wrong elements: the pair returned corrupt data", (long long)wrong);
		struct expectation x;
		pair_expectation(a, b, size, blist, base_pairs != NULL, topo, o, &x);
		double expect = x.gbs, warn = x.warn, fail = x.fail;
		const char *basis = x.basis;
		if (!(expect > 0))
			continue;
		double ratio = bw / expect;
		if (ratio < worst_ratio) {
			worst_ratio = ratio;
			worst_bw = bw;
			worst_exp = expect;
			worst_a = a;
			worst_b = b;
			nw_strlcpy(worst_what, what, sizeof(worst_what));
			nw_strlcpy(worst_basis, basis, sizeof(worst_basis));
		}
		if (ratio < warn) {
			enum nw_check_level v = ratio < fail ? NW_FAIL : NW_WARN;
			struct nw_verdict_item *it = add(cv, v, what, "%.1f GB/s, %.0f%% of %.1f expected (%s)%s%s", bw,
			                                 ratio * 100.0, expect, basis, cause[0] ? "; likely cause: " : "", cause);
			it->measured_gbs = bw;
			it->expected_gbs = expect;
			nw_strlcpy(it->op, "sendrecv", sizeof(it->op));
			it->size_bytes = size > 0 ? (uint64_t)size : 0;
			it->pair_a = a;
			it->pair_b = b;
			/* mark it so the summary line below is not repeated for it */
			if (!strcmp(what, worst_what))
				worst_what[0] = '\0';
		}
	}
	if (worst_what[0]) {
		struct nw_verdict_item *it = add(cv, NW_PASS, worst_what, "slowest of %d pairs: %.1f GB/s, %.0f%% of %.1f expected (%s)",
		                                 npairs, worst_bw, worst_ratio * 100.0, worst_exp, worst_basis);
		it->measured_gbs = worst_bw;
		it->expected_gbs = worst_exp;
		nw_strlcpy(it->op, "sendrecv", sizeof(it->op));
		it->size_bytes = size > 0 ? (uint64_t)size : 0;
		it->pair_a = worst_a;
		it->pair_b = worst_b;
	} else if (npairs && worst_ratio > 1e8)
		add(cv, NW_PASS, "sendrecv pairs", "%d pairs measured; not compared (no expectation for these ranks)", npairs);
}

int nw_verdict_add_run(struct nw_check_verdict *cv, const struct nw_run *run, const struct nw_run *baseline,
                       const struct nw_topo *topo, const struct nw_topo *vis,
                       const struct nw_findings *doctor, const struct nw_verdict_opts *o)
{
	int nhosts = run->h.nhosts > 0 ? run->h.nhosts : 1;
	int nlocal = run->h.nranks > 0 ? run->h.nranks / nhosts : 0;
	int gpu = strcmp(run->h.backend, "mpi") != 0;
	const struct nw_topo *model = gpu ? (vis->ngpus >= nlocal ? vis : topo) : NULL;
	nw_verdict_add_bench(cv, run, baseline, model, nlocal, doctor, o);
	json_t *pairs = run->h.extra ? json_object_get(run->h.extra, "pairs") : NULL;
	json_t *bpairs = baseline && baseline->h.extra ? json_object_get(baseline->h.extra, "pairs") : NULL;
	if (!pairs)
		return 0;
	nw_verdict_add_pairs(cv, pairs, bpairs, nhosts == 1 ? model : NULL, doctor, o);
	return 1;
}

int nw_verdict_exit(const struct nw_check_verdict *cv)
{
	return cv->v == NW_FAIL ? 2 : cv->v == NW_WARN ? 1 : 0;
}

json_t *nw_verdict_to_json(const struct nw_check_verdict *cv)
{
	json_t *a = json_array();
	for (size_t i = 0; i < cv->n; i++) {
		const struct nw_verdict_item *it = &cv->items[i];
		json_t *o = json_object();
		json_object_set_new(o, "what", json_string(it->what));
		json_object_set_new(o, "verdict", json_string(nw_verdict_item_label(it)));
		if (it->measured_gbs > 0)
			json_object_set_new(o, "busbw_gbs", json_real(it->measured_gbs));
		if (it->expected_gbs > 0)
			json_object_set_new(o, "expected_gbs", json_real(it->expected_gbs));
		json_object_set_new(o, "reason", json_string(it->reason));
		json_array_append_new(a, o);
	}
	return a;
}

void nw_verdict_release(struct nw_check_verdict *cv)
{
	free(cv->items);
	memset(cv, 0, sizeof(*cv));
}
