/* SPDX-License-Identifier: Apache-2.0 */
/* One line of progress on stderr, redrawn in place, and the time left in a sweep (see progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cmd/progress.h"
#include "util/util.h"

void nw_eta_init(struct nw_eta *e)
{
	memset(e, 0, sizeof(*e));
}

void nw_eta_release(struct nw_eta *e)
{
	free(e->size);
	free(e->first);
	free(e->took);
	nw_eta_init(e);
}

void nw_eta_add(struct nw_eta *e, uint64_t size, int first)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 64;
		e->size = nw_realloc(e->size, (size_t)e->cap * sizeof(*e->size));
		e->first = nw_realloc(e->first, (size_t)e->cap * sizeof(*e->first));
		e->took = nw_realloc(e->took, (size_t)e->cap * sizeof(*e->took));
	}
	e->size[e->n] = size;
	e->first[e->n] = first != 0;
	e->n++;
}

void nw_eta_took(struct nw_eta *e, double seconds)
{
	if (e->done < e->n)
		e->took[e->done++] = seconds;
}

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* The median of v[0..n) (reordered). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { ETA_K = 3 }; /* sizes the model reads at each end */

/* Keep size s (time t) among the ETA_K smallest (smallest) or largest sizes in v, t (*n of them). */
static void keep(uint64_t *v, double *t, int *n, uint64_t s, double ts, int smallest)
{
	if (*n < ETA_K) {
		v[*n] = s;
		t[(*n)++] = ts;
		return;
	}
	int w = 0; /* the one kept that fits least */
	for (int j = 1; j < ETA_K; j++)
		if (smallest ? v[j] > v[w] : v[j] < v[w])
			w = j;
	if (smallest ? s < v[w] : s > v[w])
		v[w] = s, t[w] = ts;
}

/*
 * The step model a + c s from the finished steps past sweeps' first ones
 * (progress.h says how). 0 when it is sound for what remains, else -1.
 */
static int eta_model(const struct nw_eta *e, double *a, double *c)
{
	enum { K = ETA_K };
	uint64_t lo[K], hi[K];  /* the smallest and the largest sizes measured, distinct */
	double tlo[K], thi[K];
	int nlo = 0, nhi = 0;
	for (int i = e->done - 1; i >= 0; i--) { /* latest first: a size's latest time wins */
		if (e->first[i])
			continue;
		uint64_t s = e->size[i];
		int seen = 0;
		for (int k = 0; k < nlo; k++)
			seen |= lo[k] == s;
		for (int k = 0; k < nhi; k++)
			seen |= hi[k] == s;
		if (seen)
			continue;
		keep(lo, tlo, &nlo, s, e->took[i], 1);
		keep(hi, thi, &nhi, s, e->took[i], 0);
	}
	if (nhi < K)
		return -1;
	double v[K];
	memcpy(v, tlo, sizeof(v));
	*a = median(v, K);
	for (int x = 0; x < K; x++)
		v[x] = thi[x] > *a ? (thi[x] - *a) / (double)hi[x] : 0;
	*c = median(v, K);
	memcpy(v, thi, sizeof(v));
	double tmed = median(v, K);
	uint64_t most = 0; /* the largest size still to run */
	for (int i = e->done; i < e->n; i++)
		most = e->size[i] > most ? e->size[i] : most;
	uint64_t top = hi[0] > hi[1] ? (hi[0] > hi[2] ? hi[0] : hi[2]) : (hi[1] > hi[2] ? hi[1] : hi[2]);
	return tmed >= 4 * *a || most <= top ? 0 : -1;
}

double nw_eta_left(const struct nw_eta *e)
{
	double a, c;
	if (e->done >= e->n || eta_model(e, &a, &c))
		return -1;
	/* a sweep's warm-up: the latest one measured beyond what its first size took (the run's first holds set-up too) */
	double warm = -1;
	for (int i = e->done - 1; i > 0 && warm < 0; i--)
		if (e->first[i])
			warm = e->took[i] > a + c * (double)e->size[i] ? e->took[i] - a - c * (double)e->size[i] : 0;
	double left = 0, sweep = 0;
	for (int i = e->n - 1; i >= e->done; i--) { /* backwards: each first step knows its sweep's time */
		double t = a + c * (double)e->size[i];
		left += t;
		sweep += t;
		if (e->first[i]) {
			left += warm >= 0 ? warm : e->warm_share * sweep;
			sweep = 0;
		}
	}
	return left;
}

void nw_progress_plan_bench(struct nw_progress *p, const struct nw_bench_opts *o, int nranks)
{
	struct nw_eta *e = &p->eta;
	e->n = 0; /* the steps done keep their times */
	/* a sweep's warm-up (-w launches per size) against its steps (both placements of -n launches and one more) */
	e->warm_share = (double)o->warmup / (2.0 * (o->iters + 1));
	if (o->cycles == 0) {
		p->total_n = 0;
		return;
	}
	for (int i = 0; i < o->nops; i++) {
		const struct nw_coll *coll = nw_coll_get(o->ops[i]);
		int nroots = coll->has_root && o->root < 0 ? (nranks > 0 ? nranks : 1) : 1;
		int nred = coll->has_redop ? o->nredops : 1;
		for (int d = 0; d < o->ndtypes; d++)
			for (int k = 0; k < nred; k++) {
				enum nw_redop r = coll->has_redop ? o->redops[k] : NW_SUM;
				int fp8 = o->dtypes[d] == NW_FP8E4M3 || o->dtypes[d] == NW_FP8E5M2;
				int mpi = o->backend == NW_BACKEND_MPI;
				if ((r == NW_AVG && fp8 && !mpi) || (r == NW_MULSUM && mpi))
					continue; /* the sweep leaves these out */
				for (int root = 0; root < nroots; root++) {
					int first = 1;
					for (int cyc = 0; cyc < o->cycles; cyc++)
						for (uint64_t s = o->min_bytes; s && s <= o->max_bytes; s = nw_bench_next_size(o, s)) {
							if (!nw_coll_count(coll->op, s, nw_dtype_size(o->dtypes[d]), nranks, NULL))
								continue;
							nw_eta_add(e, s, first);
							first = 0;
						}
				}
			}
	}
	p->total_n = e->n;
}

void nw_progress_release(struct nw_progress *p)
{
	nw_eta_release(&p->eta);
}

int nw_progress_wanted(enum nw_progress_mode mode)
{
	if (mode != NW_PROGRESS_AUTO)
		return mode == NW_PROGRESS_ON;
	const char *env = getenv("NCCLWATCH_PROGRESS");
	if (env && *env)
		return strcmp(env, "0") != 0;
	const char *term = getenv("TERM");
	return isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

void nw_progress_init(struct nw_progress *p, int on, int total_n)
{
	memset(p, 0, sizeof(*p));
	p->on = on;
	p->t0 = p->step_t = nw_now();
	p->total_n = total_n;
}

/* "1m05s" or "42s" into buf. */
static void fmt_secs(double s, char *buf, size_t len)
{
	long t = (long)(s + 0.5);
	if (t >= 60)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%lds", t);
}

/*
 * Draw the line: what, done/total, and the time left once the plan's
 * estimate is sound (nothing before; the step running now counts as not
 * begun).
 */
static void draw(struct nw_progress *p, int force)
{
	double now = nw_now();
	if (!p->on || (!force && p->drawn && now - p->last < 0.1))
		return;
	p->last = now;
	char left[48] = "";
	double secs = p->eta.n ? nw_eta_left(&p->eta) : -1;
	if (secs >= 0) {
		char t[16];
		fmt_secs(secs, t, sizeof(t));
		snprintf(left, sizeof(left), ", about %s left", t);
	}
	if (p->total_n > 0)
		fprintf(stderr, "\r%s (%d/%d done%s)\033[K", p->what, p->done_n, p->total_n, left);
	else
		fprintf(stderr, "\r%s\033[K", p->what);
	fflush(stderr);
	p->drawn = 1;
}

void nw_progress_begin(struct nw_progress *p, const char *what)
{
	nw_strlcpy(p->what, what, sizeof(p->what));
	draw(p, 0);
}

void nw_progress_done(struct nw_progress *p)
{
	double now = nw_now();
	p->done_n++;
	nw_eta_took(&p->eta, now - p->step_t);
	p->step_t = now;
	draw(p, 0);
}

void nw_progress_clear(struct nw_progress *p)
{
	if (!p->on || !p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = 0;
}

/* Append s to buf (of len, at *at), for the signal-safe message. */
static void put(char *buf, size_t len, size_t *at, const char *s)
{
	while (*s && *at + 1 < len)
		buf[(*at)++] = *s++;
}

/* Decimal n into a small buffer, without stdio (signal-safe). */
static const char *num(int n, char *buf, size_t len)
{
	char *e = buf + len - 1;
	*e = '\0';
	unsigned v = n < 0 ? 0u : (unsigned)n;
	do {
		*--e = (char)('0' + v % 10);
		v /= 10;
	} while (v && e > buf);
	return e;
}

void nw_progress_interrupted(const struct nw_progress *p, const char *cmd)
{
	if (!p)
		return;
	char msg[320], a[16], b[16];
	size_t at = 0;
	put(msg, sizeof(msg), &at, p->on && p->drawn ? "\r\033[K" : "");
	put(msg, sizeof(msg), &at, "ncclwatch: ");
	put(msg, sizeof(msg), &at, cmd);
	put(msg, sizeof(msg), &at, ": interrupted");
	if (p->what[0]) {
		put(msg, sizeof(msg), &at, " during ");
		put(msg, sizeof(msg), &at, p->what);
	}
	put(msg, sizeof(msg), &at, "; ");
	put(msg, sizeof(msg), &at, num(p->done_n, a, sizeof(a)));
	put(msg, sizeof(msg), &at, " of ");
	put(msg, sizeof(msg), &at, num(p->total_n, b, sizeof(b)));
	put(msg, sizeof(msg), &at, " steps were measured (printed above)\n");
	ssize_t w = write(STDERR_FILENO, msg, at);
	(void)w;
}
