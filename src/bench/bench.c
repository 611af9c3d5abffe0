/*
 * The sweep: every (op, dtype, redop, root, size, placement) the options
 * ask for, timed the way nccl-tests times it (a batch of -n launches on a
 * host clock, from before the first launch to the streams' completion,
 * divided by -n; warm-up over every size first; buffers shifted between
 * iterations), verified against patterns computed on the host.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hostmem.h"
#include "bench/pattern.h"
#include "comm/backend.h"
#include "comm/group.h"
#include "util/util.h"

void nw_bench_opts_default(struct nw_bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = NW_BACKEND_AUTO;
	o->ops[0] = NW_ALL_REDUCE;
	o->nops = 1;
	o->dtypes[0] = NW_FLOAT;
	o->ndtypes = 1;
	o->redops[0] = NW_SUM;
	o->nredops = 1;
	o->root = 0;
	o->min_bytes = 8;
	o->max_bytes = 1ULL << 30;
	o->step_bytes = 1ULL << 20;
	o->step_factor = 2;
	o->iters = 20;
	o->warmup = 5;
	o->agg_iters = 1;
	o->check = 1;
	o->average = NW_AVG_MEAN;
	o->nthreads = 1;
	o->timeout_s = 600; /* a hung peer never hangs the run for ever; -T 0 waits without limit */
	o->rdzv_timeout_s = 0; /* 0: -T, at most 300 s */
	o->cycles = 1;
}

uint64_t nw_bench_next_size(const struct nw_bench_opts *o, uint64_t s)
{
	uint64_t next = o->step_factor > 1 ? (uint64_t)((double)s * o->step_factor) : s + o->step_bytes;
	return next > s ? next : 0;
}

size_t nw_bench_nsizes(const struct nw_bench_opts *o)
{
	size_t k = 0;
	for (uint64_t s = o->min_bytes; s && s <= o->max_bytes && k <= NW_BENCH_MAX_SIZES; s = nw_bench_next_size(o, s))
		k++;
	return k;
}

/* The sizes of the sweep, as nccl-tests walks them. *n gets the count. */
static uint64_t *sizes(const struct nw_bench_opts *o, size_t *n)
{
	size_t cap = 64, k = 0;
	uint64_t *v = nw_malloc(cap * sizeof(*v));
	for (uint64_t s = o->min_bytes; s && s <= o->max_bytes && k < NW_BENCH_MAX_SIZES; s = nw_bench_next_size(o, s)) {
		if (k == cap) {
			cap *= 2;
			v = nw_realloc(v, cap * sizeof(*v));
		}
		v[k++] = s;
	}
	*n = k;
	return v;
}

struct ctx {
	const struct nw_bench_opts *o;
	struct nw_backend *be;
	struct nw_group *g;
	struct nw_run *run;
	nw_bench_row_fn row_fn;
	void *arg;
	size_t buf_bytes;
	int pattern_key; /* dtype*2+prod of the pattern in the send buffers, -1 none */
	int nthreads;
	int64_t pairs_wrong;
	int cycles_done;   /* -N: cycles finished by the (op, dtype, redop, root) running or run last */
	int stopped;       /* the sweep ends here: a stop after a cycle (-N) or after a size (o->stop) */
	char *err;
	size_t errlen;
};

/* --- host-side pattern work, split over threads --- */

struct job {
	const struct nw_pattern *p;
	int rank;
	uint64_t first, n;
	char *buf;
	uint64_t wrong[64];
	int verify;
};

static void job_part(void *v, int i, int n)
{
	struct job *j = v;
	uint64_t per = (j->n + (uint64_t)n - 1) / (uint64_t)n;
	uint64_t a = per * (uint64_t)i, b = a + per;
	if (b > j->n)
		b = j->n;
	if (a >= b)
		return;
	size_t es = nw_dtype_size(j->p->dtype);
	if (j->verify)
		j->wrong[i] = nw_pattern_verify(j->p, j->rank, j->first + a, b - a, j->buf + a * es);
	else
		nw_pattern_fill(j->p, j->rank, j->first + a, b - a, j->buf + a * es);
}

/*
 * Move a local rank's data through the host staging buffer in 64 MiB
 * chunks: with verify, read count elements of recv at byte offset off and
 * add the wrong ones to *wrong; without, write the rank's input pattern
 * (elements [0, count)) into its send buffer at byte offset off.
 */
static int staged(struct ctx *x, const struct nw_pattern *p, int local, size_t off, uint64_t count,
                  int verify, uint64_t *wrong)
{
	size_t es = nw_dtype_size(p->dtype);
	size_t chunk_elems = (64u << 20) / es;
	char *stage = x->be->ops->host_alloc(x->be, 0);
	if (!stage)
		return nw_seterr(x->err, x->errlen, "cannot allocate a host staging buffer");
	for (uint64_t done = 0; done < count; done += chunk_elems) {
		uint64_t k = count - done < chunk_elems ? count - done : chunk_elems;
		struct job j = { .p = p, .rank = x->be->rank0 + local, .first = done, .n = k, .buf = stage, .verify = verify };
		if (verify && x->be->ops->read(x->be, local, NW_BUF_RECV, off + done * es, stage, k * es, x->err, x->errlen))
			return -1;
		nw_parallel(x->nthreads, job_part, &j);
		if (!verify && x->be->ops->write(x->be, local, NW_BUF_SEND, off + done * es, stage, k * es, x->err, x->errlen))
			return -1;
		for (int t = 0; verify && t < 64; t++)
			*wrong += j.wrong[t];
	}
	return 0;
}

static void describe(char *buf, size_t len, const struct nw_call *c, uint64_t size)
{
	char sz[32];
	nw_format_size(size, sz, sizeof(sz));
	snprintf(buf, len, "%s of %s (%s%s%s, %s)", nw_coll_get(c->op)->name, sz,
	         nw_dtype_name(c->dtype), nw_coll_get(c->op)->has_redop ? " " : "",
	         nw_coll_get(c->op)->has_redop ? nw_redop_name(c->redop) : "",
	         c->inplace ? "in-place" : "out-of-place");
}

/* Capture the -n launches of a batch (buffers shifted as in time_batch) as one graph per local rank (-G). 0 or -1. */
static int capture_batch(struct ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, int agg)
{
	struct nw_backend *be = x->be;
	if (be->ops->graph_begin(be, x->err, x->errlen))
		return -1;
	for (int it = 0; it < x->o->iters; it++) {
		c->shift = total_bytes * (it % steps);
		if (be->ops->launch(be, c, agg, x->err, x->errlen)) {
			be->ops->graph_end(be, NULL, 0);
			return -1;
		}
	}
	return be->ops->graph_end(be, x->err, x->errlen);
}

/*
 * -I 1: every iteration timed on its own on the host clock, from its
 * launch to its completion (each one waited for), into times (o->iters
 * entries, us per operation); *usec gets their mean.
 */
static int time_iters(struct ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, const char *what,
                      double *times, double *usec)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	double sum = 0;
	for (int it = 0; it < o->iters; it++) {
		c->shift = total_bytes * (it % steps);
		double t0 = nw_now();
		if (be->ops->launch(be, c, agg, x->err, x->errlen))
			return -1;
		double t_launched = nw_now();
		if (be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
			return -1;
		times[it] = ((o->cputime ? t_launched : nw_now()) - t0) / agg * 1e6;
		sum += times[it];
	}
	*usec = sum / o->iters;
	c->shift = 0;
	return 0;
}

/*
 * -z 1..3, nccl-tests' blocking modes: 1 waits for each collective of a
 * launch (-m) and then joins every rank at a barrier, 2 waits without the
 * barrier, 3 waits for each launch of -m collectives and joins at a
 * barrier, leaving the barrier out of the time. *usec: time per operation.
 */
static int time_blocking(struct ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, const char *what,
                         double *usec)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	int inner = o->blocking == 3 ? 1 : agg, per = o->blocking == 3 ? agg : 1;
	double t0 = nw_now(), barrier_s = 0;
	for (int it = 0; it < o->iters; it++) {
		c->shift = total_bytes * (it % steps);
		for (int k = 0; k < inner; k++) {
			if (be->ops->launch(be, c, per, x->err, x->errlen) ||
			    be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
				return -1;
			if (o->blocking == 2)
				continue;
			double b0 = nw_now();
			if (nw_group_barrier(x->g, x->err, x->errlen))
				return -1;
			if (o->blocking == 3)
				barrier_s += nw_now() - b0;
		}
	}
	*usec = (nw_now() - t0 - barrier_s) / ((double)o->iters * agg) * 1e6;
	c->shift = 0;
	return 0;
}

/* One timed batch; *usec gets this process's time per operation (with -I 1, times gets each iteration's). */
static int time_batch(struct ctx *x, struct nw_call *c, uint64_t total_bytes, uint64_t size, double *usec,
                      double *times)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	char what[128];
	describe(what, sizeof(what), c, size);
	size_t steps = total_bytes ? x->buf_bytes / total_bytes : 1;
	if (steps < 1)
		steps = 1;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	/* one synchronising launch first, then every rank starts together */
	c->shift = 0;
	if (be->ops->launch(be, c, 1, x->err, x->errlen) || be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
		return -1;
	if (nw_group_barrier(x->g, x->err, x->errlen))
		return -1;
	if (times)
		return time_iters(x, c, total_bytes, steps, what, times, usec);
	double t0, t_launched;
	int graph = o->graph_launches > 0 && be->graphs;
	if (graph) {
		if (capture_batch(x, c, total_bytes, steps, agg) || nw_group_barrier(x->g, x->err, x->errlen))
			return -1;
		t0 = nw_now();
		if (be->ops->graph_launch(be, o->graph_launches, x->err, x->errlen))
			return -1;
	} else if (be->ops->launch_many && !o->blocking) {
		/* the backend loops (with -t, every thread its own loop, as nccl-tests) */
		t0 = nw_now();
		if (be->ops->launch_many(be, c, agg, o->iters, total_bytes, steps, x->err, x->errlen))
			return -1;
	} else if (o->blocking) {
		return time_blocking(x, c, total_bytes, steps, what, usec);
	} else {
		t0 = nw_now();
		for (int it = 0; it < o->iters; it++) {
			c->shift = total_bytes * (it % steps);
			if (be->ops->launch(be, c, agg, x->err, x->errlen))
				return -1;
		}
	}
	t_launched = nw_now();
	if (be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
		return -1;
	double t1 = nw_now();
	double per = (o->cputime ? t_launched - t0 : t1 - t0) / ((double)o->iters * agg);
	if (graph)
		per /= o->graph_launches;
	*usec = per * 1e6;
	c->shift = 0;
	return 0;
}

/* Combine every process's time as -a says; fills per-rank detail when asked. */
static int combine(struct ctx *x, double mine, struct nw_row *row)
{
	struct nw_group *g = x->g;
	double *all = nw_calloc((size_t)g->size, sizeof(double));
	if (nw_group_allgather(g, &mine, all, sizeof(double), x->err, x->errlen)) {
		free(all);
		return -1;
	}
	double v = all[0];
	if (x->o->average != NW_AVG_RANK0) {
		double sum = 0, mn = all[0], mx = all[0];
		for (int i = 0; i < g->size; i++) {
			sum += all[i];
			mn = all[i] < mn ? all[i] : mn;
			mx = all[i] > mx ? all[i] : mx;
		}
		v = x->o->average == NW_AVG_MIN ? mn : x->o->average == NW_AVG_MAX ? mx : sum / g->size;
	}
	row->time_us = v;
	if (x->o->per_rank) {
		int nl = x->be->nlocal;
		row->nrank_times = g->size * nl;
		row->rank_times = nw_calloc((size_t)row->nrank_times, sizeof(*row->rank_times));
		/* hostnames and devices of every rank, gathered once per row (small) */
		struct { char host[64]; int gpu[64]; } me, *info = nw_calloc((size_t)g->size, sizeof(me));
		memset(&me, 0, sizeof(me));
		nw_strlcpy(me.host, g->host, sizeof(me.host));
		for (int i = 0; i < nl && i < 64; i++)
			me.gpu[i] = x->be->gpu[i];
		if (nw_group_allgather(g, &me, info, sizeof(me), x->err, x->errlen)) {
			free(info);
			free(all);
			return -1;
		}
		for (int p = 0; p < g->size; p++)
			for (int i = 0; i < nl; i++) {
				struct nw_rank_time *t = &row->rank_times[p * nl + i];
				t->rank = p * nl + i;
				t->gpu = info[p].gpu[i];
				nw_strlcpy(t->host, info[p].host, sizeof(t->host));
				t->time_us = all[p];
			}
		free(info);
	}
	free(all);
	return 0;
}

/*
 * -I 1: each iteration's time of the slowest process (nccl-tests: "i_*
 * uses max over process rows") into the row's iter_us. 0, or -1 with err.
 */
static int slowest_iters(struct ctx *x, const double *mine, struct nw_row *row)
{
	struct nw_group *g = x->g;
	int n = x->o->iters;
	double *all = nw_calloc((size_t)g->size * (size_t)n, sizeof(double));
	if (nw_group_allgather(g, mine, all, (size_t)n * sizeof(double), x->err, x->errlen)) {
		free(all);
		return -1;
	}
	row->iter_us = nw_calloc((size_t)n, sizeof(double));
	row->niter = n;
	row->iter_skip = x->o->per_iter_skip;
	for (int it = 0; it < n; it++)
		for (int p = 0; p < g->size; p++)
			if (all[(size_t)p * (size_t)n + (size_t)it] > row->iter_us[it])
				row->iter_us[it] = all[(size_t)p * (size_t)n + (size_t)it];
	free(all);
	return 0;
}

/* Verify one placement: fresh inputs, one launch, every element compared. */
static int check_once(struct ctx *x, struct nw_call *c, const struct nw_pattern *p, int64_t *wrong_out)
{
	struct nw_backend *be = x->be;
	size_t es = nw_dtype_size(c->dtype);
	uint64_t wrong = 0;
	char what[128];
	describe(what, sizeof(what), c, 0);
	c->shift = 0;
	for (int i = 0; i < be->nlocal; i++) {
		int rank = be->rank0 + i;
		/* poison: a value no pattern produces, so unwritten output is caught */
		if (be->ops->fill32(be, i, NW_BUF_RECV, 0x7f7f7f7fu, x->err, x->errlen))
			return -1;
		if (c->inplace) {
			size_t soff, roff;
			nw_call_offsets(c, rank, &soff, &roff);
			uint64_t in = nw_pattern_input_count(p, rank);
			if (in && be->ops->copy(be, i, c->unalign, soff, in * es, x->err, x->errlen))
				return -1;
		}
	}
	if (nw_group_barrier(x->g, x->err, x->errlen))
		return -1;
	if (be->ops->launch(be, c, 1, x->err, x->errlen) || be->ops->wait(be, x->o->timeout_s, what, x->err, x->errlen))
		return -1;
	for (int i = 0; i < be->nlocal; i++) {
		int rank = be->rank0 + i;
		if (!nw_pattern_checks_rank(p, rank))
			continue;
		size_t soff, roff;
		nw_call_offsets(c, rank, &soff, &roff);
		if (staged(x, p, i, roff, nw_pattern_output_count(p, rank), 1, &wrong))
			return -1;
	}
	int64_t mine = (int64_t)wrong;
	int64_t *all = nw_calloc((size_t)x->g->size, sizeof(int64_t));
	if (nw_group_allgather(x->g, &mine, all, sizeof(mine), x->err, x->errlen)) {
		free(all);
		return -1;
	}
	int64_t sum = 0;
	for (int k = 0; k < x->g->size; k++)
		sum += all[k];
	free(all);
	*wrong_out = sum;
	return 0;
}

/*
 * The input patterns of one (op, dtype, redop, root) in every local send
 * buffer, when -c asks for checks; written once per type (products use
 * their own). 0 or -1.
 */
static int fill_patterns(struct ctx *x, const struct nw_coll *coll, enum nw_dtype dtype, enum nw_redop redop, int root)
{
	int key = dtype * 2 + (redop == NW_PROD && coll->has_redop);
	if (!x->o->check || key == x->pattern_key)
		return 0;
	struct nw_pattern p = { .op = coll->op, .dtype = dtype, .redop = coll->has_redop ? redop : NW_SUM,
	                        .root = root, .nranks = x->be->nranks, .count = 1 };
	size_t shift = (size_t)x->o->unalign * nw_dtype_size(dtype); /* -u: inputs start where the pointers do */
	for (int i = 0; i < x->be->nlocal; i++)
		if (staged(x, &p, i, shift, x->buf_bytes / nw_dtype_size(dtype), 0, NULL))
			return -1;
	x->pattern_key = key;
	return 0;
}

/* Warm-up over every size first (doubling from -b to -e), -w launches each, as nccl-tests does. 0 or -1. */
static int warm_up(struct ctx *x, struct nw_call *c)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	size_t es = nw_dtype_size(c->dtype);
	for (uint64_t wsz = o->min_bytes; wsz <= o->max_bytes && o->warmup > 0; wsz *= 2) {
		uint64_t used, count = nw_coll_count(c->op, wsz, es, be->nranks, &used);
		if (!count)
			continue;
		c->count = count;
		c->inplace = 0;
		for (int w = 0; w < o->warmup; w++)
			if (be->ops->launch(be, c, o->agg_iters > 0 ? o->agg_iters : 1, x->err, x->errlen))
				return -1;
		char what[128];
		describe(what, sizeof(what), c, used);
		if (be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
			return -1;
	}
	return 0;
}

/* A fresh row for call c (count elements, used bytes) of coll; the numbers come later. */
static void row_init(struct nw_row *r, const struct nw_coll *coll, const struct nw_call *c, uint64_t used, int nranks)
{
	memset(r, 0, sizeof(*r));
	nw_strlcpy(r->op, coll->name, sizeof(r->op));
	nw_strlcpy(r->dtype, nw_dtype_name(c->dtype), sizeof(r->dtype));
	nw_strlcpy(r->redop, coll->has_redop ? nw_redop_name(c->redop) : "none", sizeof(r->redop));
	r->root = coll->has_root ? c->root : -1;
	r->size_bytes = used;
	r->count = c->count;
	r->nranks = nranks;
	r->inplace = c->inplace;
	r->wrong = -1;
}

/*
 * One placement of one size: time it, combine the ranks' times, compute
 * bandwidths and, with -c, verify (out of place always, in place where
 * nccl-tests does). Fills r; 0 or -1.
 */
static int run_placement(struct ctx *x, const struct nw_coll *coll, struct nw_call *c, uint64_t used, struct nw_row *r)
{
	double mine;
	row_init(r, coll, c, used, x->be->nranks);
	double *times = x->o->per_iter ? nw_calloc((size_t)x->o->iters, sizeof(double)) : NULL;
	if (time_batch(x, c, used, used, &mine, times) || combine(x, mine, r) || (times && slowest_iters(x, times, r))) {
		free(times);
		nw_row_release(r);
		return -1;
	}
	free(times);
	nw_row_compute_bw(r);
	if (x->o->check && (!c->inplace || coll->verify_inplace)) {
		struct nw_pattern p = { .op = coll->op, .dtype = c->dtype, .redop = coll->has_redop ? c->redop : NW_SUM,
		                        .root = c->root, .nranks = x->be->nranks, .count = c->count };
		if (check_once(x, c, &p, &r->wrong)) {
			nw_row_release(r);
			return -1;
		}
	}
	return 0;
}

/*
 * One size of the sweep: both placements (or the one -o/-i... asks for),
 * added to the run and reported by rank 0. *wrong grows by the wrong
 * elements found. 0 or -1.
 */
static int run_size(struct ctx *x, const struct nw_coll *coll, struct nw_call *c, uint64_t size, int64_t *wrong)
{
	const struct nw_bench_opts *o = x->o;
	uint64_t used, count = nw_coll_count(coll->op, size, nw_dtype_size(c->dtype), x->be->nranks, &used);
	struct nw_row rows[2];
	int have[2] = { 0, 0 };
	if (!count)
		return 0;
	for (int ip = 0; ip < 2; ip++) {
		if ((ip && o->oop_only) || (!ip && o->ip_only))
			continue;
		c->count = count;
		c->inplace = ip;
		if (run_placement(x, coll, c, used, &rows[ip])) {
			if (have[0])
				nw_row_release(&rows[0]);
			return -1;
		}
		if (rows[ip].wrong > 0)
			*wrong += rows[ip].wrong;
		have[ip] = 1;
	}
	struct nw_row *a = have[0] ? nw_run_add(x->run, &rows[0]) : NULL;
	struct nw_row *b = have[1] ? nw_run_add(x->run, &rows[1]) : NULL;
	if (x->row_fn && x->g->rank == 0)
		x->row_fn(a, b, x->arg);
	return 0;
}

/*
 * After a cycle of -N: whether the run stops here (stop_asked on rank 0,
 * told to every rank, so that all stop after the same cycle): sets
 * x->stopped. 0, or -1 with err.
 */
static int cycle_end(struct ctx *x)
{
	int stop = x->g->rank == 0 && x->o->stop_asked && x->o->stop_asked();
	if (nw_group_bcast(x->g, &stop, sizeof(stop), 0, x->err, x->errlen))
		return -1;
	x->stopped = stop != 0;
	return 0;
}

/*
 * After a size: whether any rank's o->stop is set, asked of every rank so
 * that they all stop after the same size. Sets x->stopped and marks rank
 * 0's run interrupted. 0, or -1 with x->err.
 */
static int stop_agreed(struct ctx *x)
{
	if (!x->o->stop || x->stopped)
		return 0;
	int mine = *x->o->stop != 0, *all = nw_calloc((size_t)x->g->size, sizeof(int));
	int rc = nw_group_allgather(x->g, &mine, all, sizeof(int), x->err, x->errlen);
	for (int i = 0; !rc && i < x->g->size; i++)
		x->stopped |= all[i] != 0;
	free(all);
	if (x->stopped && x->g->rank == 0) {
		if (!x->run->h.extra)
			x->run->h.extra = json_object();
		json_object_set_new(x->run->h.extra, "interrupted", json_true());
	}
	return rc;
}

/* Every size of one (op, dtype, redop, root), -N times. Returns -1 on failure, else the wrong-element total. */
static int64_t sweep_one(struct ctx *x, const struct nw_coll *coll, enum nw_dtype dtype, enum nw_redop redop,
                         int root)
{
	size_t nsz;
	uint64_t *sz = sizes(x->o, &nsz);
	int64_t wrong = 0;
	struct nw_call c = { .op = coll->op, .dtype = dtype, .redop = redop, .root = root,
	                     .unalign = (size_t)x->o->unalign * nw_dtype_size(dtype) };
	int rc = fill_patterns(x, coll, dtype, redop, root) || warm_up(x, &c) ? -1 : 0;
	/* -N: every size again each cycle, after the one warm-up, as nccl-tests does */
	x->cycles_done = 0;
	for (int cyc = 0; !rc && !x->stopped && (x->o->cycles == 0 || cyc < x->o->cycles); cyc++) {
		for (size_t k = 0; k < nsz && !rc && !x->stopped; k++)
			rc = run_size(x, coll, &c, sz[k], &wrong) || stop_agreed(x);
		if (!rc && !x->stopped)
			x->cycles_done++;
		if (!rc && !x->stopped && x->o->cycles != 1)
			rc = cycle_end(x);
	}
	free(sz);
	return rc ? -1 : wrong;
}

/* The busbw matrix of --pairs, n x n, every cell null until measured; the caller owns it. */
static json_t *pairs_matrix(int n)
{
	json_t *matrix = json_array();
	for (int a = 0; a < n; a++) {
		json_t *row = json_array();
		for (int b = 0; b < n; b++)
			json_array_append_new(row, json_null());
		json_array_append_new(matrix, row);
	}
	return matrix;
}

/*
 * Time one pair (a, b): warm-up, the batch, the slower of the two ranks'
 * times in *t (us); with -c, *wrong gets the wrong elements (else -1).
 * all is scratch for every process's time. 0 or -1.
 */
static int time_pair(struct ctx *x, struct nw_call *c, double *all, double *t, int64_t *wrong)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	uint64_t bytes = c->count * nw_dtype_size(c->dtype);
	double mine;
	for (int w = 0; w < o->warmup; w++)
		if (be->ops->launch(be, c, 1, x->err, x->errlen))
			return -1;
	if (be->ops->wait(be, o->timeout_s, "sendrecv pair warm-up", x->err, x->errlen))
		return -1;
	if (time_batch(x, c, bytes, bytes, &mine, NULL) ||
	    nw_group_allgather(x->g, &mine, all, sizeof(double), x->err, x->errlen))
		return -1;
	double ta = all[c->pair_a / be->nlocal], tb = all[c->pair_b / be->nlocal];
	*t = ta > tb ? ta : tb;
	*wrong = -1;
	if (o->check) {
		struct nw_pattern p = { .op = NW_SENDRECV, .dtype = c->dtype, .nranks = be->nranks, .count = c->count,
		                        .pair = 1, .pair_a = c->pair_a, .pair_b = c->pair_b };
		if (check_once(x, c, &p, wrong))
			return -1;
	}
	return 0;
}

/* Record pair (a, b): its busbw in both cells of the matrix and an entry in list. */
static void pair_record(json_t *matrix, json_t *list, int a, int b, double t, double bw, int64_t wrong)
{
	json_array_set_new(json_array_get(matrix, (size_t)a), (size_t)b, json_real(round(bw * 100) / 100));
	json_array_set_new(json_array_get(matrix, (size_t)b), (size_t)a, json_real(round(bw * 100) / 100));
	json_t *e = json_object();
	json_object_set_new(e, "a", json_integer(a));
	json_object_set_new(e, "b", json_integer(b));
	json_object_set_new(e, "time_us", json_real(round(t * 1000) / 1000));
	json_object_set_new(e, "busbw_gbs", json_real(round(bw * 100) / 100));
	json_object_set_new(e, "wrong", wrong >= 0 ? json_integer(wrong) : json_null());
	json_array_append_new(list, e);
}

/* run->h.extra["pairs"]: size, type, the matrix and the list (both taken). */
static void pairs_store(struct nw_run *run, uint64_t bytes, enum nw_dtype dtype, json_t *matrix, json_t *list)
{
	json_t *pairs = json_object();
	json_object_set_new(pairs, "size_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(pairs, "dtype", json_string(nw_dtype_name(dtype)));
	json_object_set_new(pairs, "busbw_gbs", matrix);
	json_object_set_new(pairs, "pairs", list);
	if (!run->h.extra)
		run->h.extra = json_object();
	json_object_set_new(run->h.extra, "pairs", pairs);
}

/*
 * Pairwise mode: for every pair of ranks, both send and receive -e bytes
 * at once while the others wait; the matrix of busbw (size / time, per
 * direction) goes to run->h.extra["pairs"].
 */
static int run_pairs(struct ctx *x)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	int n = be->nranks;
	enum nw_dtype dtype = o->dtypes[0];
	size_t es = nw_dtype_size(dtype);
	uint64_t count = o->max_bytes / es;
	if (n < 2)
		return nw_seterr(x->err, x->errlen, "--pairs needs at least 2 ranks (this run has %d)", n);
	if (!count)
		return nw_seterr(x->err, x->errlen, "--pairs: -e is smaller than one element");
	if (o->check) {
		struct nw_pattern p = { .op = NW_SENDRECV, .dtype = dtype, .nranks = n, .count = 1 };
		for (int i = 0; i < be->nlocal; i++)
			if (staged(x, &p, i, 0, count, 0, NULL))
				return -1;
	}
	json_t *matrix = pairs_matrix(n), *list = json_array();
	double *all = nw_calloc((size_t)x->g->size, sizeof(double));
	int rc = 0;
	for (int a = 0; a < n && !rc; a++)
		for (int b = a + 1; b < n && !rc; b++) {
			struct nw_call c = { .op = NW_SENDRECV, .dtype = dtype, .count = count, .pair = 1, .pair_a = a,
			                     .pair_b = b };
			double t;
			int64_t wrong;
			rc = time_pair(x, &c, all, &t, &wrong);
			if (rc)
				break;
			pair_record(matrix, list, a, b, t, nw_algbw(count * es, t), wrong);
			if (wrong > 0)
				x->pairs_wrong += wrong;
		}
	free(all);
	if (rc) {
		json_decref(matrix);
		json_decref(list);
		return -1;
	}
	pairs_store(x->run, count * es, dtype, matrix, list);
	return 0;
}

/* A string every process must agree on: version and what the options ask. */
static void fingerprint(const struct nw_bench_opts *o, char *buf, size_t len)
{
	size_t u = (size_t)snprintf(buf, len, "ncclwatch %s b=%" PRIu64 " e=%" PRIu64 " f=%g i=%" PRIu64
	                            " n=%d w=%d m=%d c=%d G=%d g=%d r=%d be=%d ops=",
	                            NW_VERSION, o->min_bytes, o->max_bytes, o->step_factor, o->step_bytes, o->iters,
	                            o->warmup, o->agg_iters, o->check, o->graph_launches, o->ngpus, o->root, o->backend);
	for (int i = 0; i < o->nops && u < len; i++)
		u += (size_t)snprintf(buf + u, len - u, "%s%s", i ? "," : "", nw_coll_get(o->ops[i])->name);
	for (int i = 0; i < o->ndtypes && u < len; i++)
		u += (size_t)snprintf(buf + u, len - u, "%s%s", i ? "," : " d=", nw_dtype_name(o->dtypes[i]));
	for (int i = 0; i < o->nredops && u < len; i++)
		u += (size_t)snprintf(buf + u, len - u, "%s%s", i ? "," : " o=", nw_redop_name(o->redops[i]));
	if (u < len)
		snprintf(buf + u, len - u, " N=%d M=%d u=%d p=%d R=%d", o->cycles, o->mem_report, o->unalign, o->parallel_init,
		         o->reg);
}

/* Open the backend the options ask for on group g; 0, or -1 with err. */
static int open_backend(const struct nw_bench_opts *o, struct nw_group *g, struct nw_backend **be, char *err,
                        size_t errlen)
{
	if (o->backend == NW_BACKEND_MPI) {
		if (nw_backend_mpi_open(be, g, err, errlen))
			return -1;
		(*be)->timeout_s = o->timeout_s;
		return 0;
	}
	struct nw_nccl_open_opts no = { .nccl_lib = o->nccl_lib, .ngpus = o->ngpus, .nthreads = o->nthreads,
	                                .reg = o->reg, .parallel_init = o->parallel_init };
	return nw_backend_nccl_open(be, g, &no, err, errlen);
}

/*
 * -M and -R on a backend that cannot do them: GPU-only flags on a host
 * backend, or a registration the loaded NCCL is too old for (named with
 * its version). 0, or -1 with err.
 */
static int gpu_flags_fit(const struct nw_bench_opts *o, const struct nw_backend *be, char *err, size_t errlen)
{
	int gpu = !strcmp(be->name, "nccl");
	if (o->mem_report && !be->ops->mem_free)
		return nw_seterr(err, errlen, "-M 1 (--memory) reports GPU memory; the %s backend has none: leave -M out",
		                 be->name);
	if (o->reg && !gpu)
		return nw_seterr(err, errlen, "-R %d (--local_register) registers GPU buffers with NCCL; the %s backend has "
		                 "none: leave -R out", o->reg, be->name);
	if (o->reg > be->reg_max)
		return nw_seterr(err, errlen, "-R %d (--local_register, %s) needs NCCL %s or newer (%s); the NCCL loaded is "
		                 "%s (%s): use a newer NCCL (--nccl-lib PATH)%s", o->reg, o->reg == 2 ? "symmetric" : "local",
		                 o->reg == 2 ? "2.27" : "2.19", o->reg == 2 ? "ncclCommWindowRegister" : "ncclCommRegister",
		                 be->nccl_version, be->nccl_path, o->reg == 2 && be->reg_max == 1 ? " or -R 1" : "");
	return 0;
}

/* Refuse what the options ask of a backend that cannot do it (a type, -G, -t); 0 or -1 with err. */
static int backend_fits(const struct nw_bench_opts *o, const struct nw_backend *be, char *err, size_t errlen)
{
	int gpu = !strcmp(be->name, "nccl");
	for (int i = 0; i < o->ndtypes; i++)
		if (!be->dtype_ok[o->dtypes[i]])
			return nw_seterr(err, errlen,
			                 "data type '%s' is not supported by the %s backend%s; choose another with -d",
			                 nw_dtype_name(o->dtypes[i]), be->name,
			                 gpu ? " on this GPU (fp8 needs compute capability 9.0, bfloat16 8.0)" : "");
	if (o->graph_launches > 0 && !be->graphs)
		return nw_seterr(err, errlen, "-G (CUDA graphs) needs the NCCL backend");
	if (o->nthreads > 1 && !be->ops->launch_many)
		return nw_seterr(err, errlen, "-t %d (threads) needs the NCCL backend; the %s backend runs one rank per "
		                 "process (start more processes instead)", o->nthreads, be->name);
	return gpu_flags_fit(o, be, err, errlen);
}

/* What the run header says about the backend, the library, the GPUs and the ranks. */
static void fill_header(struct nw_run_header *h, const struct nw_bench_opts *o, const struct nw_backend *be,
                        const struct nw_group *g)
{
	nw_strlcpy(h->backend, be->name, sizeof(h->backend));
	nw_strlcpy(h->nccl_version, be->nccl_version, sizeof(h->nccl_version));
	nw_strlcpy(h->nccl_path, be->nccl_path, sizeof(h->nccl_path));
	nw_strlcpy(h->driver, be->driver, sizeof(h->driver));
	nw_strlcpy(h->cuda_driver, be->cuda_driver, sizeof(h->cuda_driver));
	nw_strlcpy(h->gpus, be->gpus, sizeof(h->gpus));
	h->nranks = be->nranks;
	h->nthreads = o->nthreads > 1 ? o->nthreads : 1;
	h->gpus_per_thread = be->nlocal / h->nthreads;
	h->rank = g->rank;
	h->nhosts = g->size / (g->local_size > 0 ? g->local_size : 1);
}

/*
 * The sweep's context: buffers sized for the largest size, whole (split
 * ops use it for n chunks), and threads for host-side pattern work shared
 * among the local ranks and the processes on this host, at most 16.
 */
static void ctx_init(struct ctx *x, const struct nw_bench_opts *o, struct nw_backend *be, struct nw_group *g)
{
	uint64_t maxb = o->max_bytes;
	size_t maxes = 8;
	if (maxb < maxes * (uint64_t)be->nranks)
		maxb = maxes * (uint64_t)be->nranks;
	x->o = o;
	x->be = be;
	x->g = g;
	x->buf_bytes = (size_t)maxb;
	x->pattern_key = -1;
	x->nthreads = nw_ncpus() / (be->nlocal > 0 ? be->nlocal : 1);
	if (g->local_size > 1)
		x->nthreads /= g->local_size;
	if (x->nthreads > 16)
		x->nthreads = 16;
	if (x->nthreads < 1)
		x->nthreads = 1;
}

/*
 * Every (dtype, redop, root) of one op. Returns -1 on failure, else the
 * wrong-element total. avg on fp8 is skipped with NCCL (which refuses it),
 * or refused when it is all the options ask for.
 */
static int64_t sweep_op(struct ctx *x, const struct nw_coll *coll)
{
	const struct nw_bench_opts *o = x->o;
	int nred = coll->has_redop ? o->nredops : 1;
	int r0 = coll->has_root ? (o->root < 0 ? 0 : o->root) : -1;
	int r1 = coll->has_root ? (o->root < 0 ? x->be->nranks - 1 : o->root) : -1;
	int64_t wrong = 0;
	if (coll->has_root && r1 >= x->be->nranks)
		return nw_seterr(x->err, x->errlen, "-r %d: root must be below the number of ranks (%d)", o->root,
		                 x->be->nranks) * 2;
	for (int d = 0; d < o->ndtypes && !x->stopped; d++)
		for (int k = 0; k < nred && !x->stopped; k++)
			for (int root = r0; root <= r1 && !x->stopped; root++) {
				enum nw_redop redop = coll->has_redop ? o->redops[k] : NW_SUM;
				int fp8 = o->dtypes[d] == NW_FP8E4M3 || o->dtypes[d] == NW_FP8E5M2;
				if (coll->has_redop && redop == NW_AVG && fp8 && !strcmp(x->be->name, "nccl")) {
					/* NCCL refuses avg on fp8 (ncclInvalidArgument, 2.28.9 on an H200) */
					if (o->ndtypes == 1 && o->nredops == 1)
						return nw_seterr(x->err, x->errlen,
						                 "NCCL does not support -o avg on %s; choose sum, prod, min or max",
						                 nw_dtype_name(o->dtypes[d]));
					continue;
				}
				int64_t w = sweep_one(x, coll, o->dtypes[d], redop, root);
				if (w < 0)
					return -1;
				wrong += w;
			}
	return wrong;
}

/*
 * A host backend's buffers (send and recv for each process of this host)
 * must fit in the memory that is available now, cgroup limits included:
 * the kernel overcommits, and its OOM killer would end this run or a
 * neighbour's with no message. 0, or -1 with x->err.
 */
static int host_memory_fits(struct ctx *x)
{
	if (x->be->gpu[0] >= 0)
		return 0;
	char why[64];
	uint64_t avail = nw_host_mem_available(why, sizeof(why));
	int procs = x->g->local_size > 0 ? x->g->local_size : 1;
	uint64_t each = 2 * (((uint64_t)x->buf_bytes + 4095) & ~(uint64_t)4095);
	uint64_t need = each * (uint64_t)procs;
	if (avail == UINT64_MAX || need <= avail)
		return 0;
	return nw_seterr(x->err, x->errlen, "-e %" PRIu64 " needs %.2f GiB of host memory on %s (2 buffers of %.2f GiB "
	                 "for each of %d processes) but only %.2f GiB is available (%s); lower -e or run fewer "
	                 "processes per host", x->o->max_bytes, need / 1073741824.0, x->g->host, each / 2147483648.0,
	                 procs, avail / 1073741824.0, why);
}

/*
 * -M: what nccl-tests' memory report says, into the run's extra as
 * "gpu_memory": device memory taken by communicator set-up, by the
 * buffers (and their registration), and during the collectives (free
 * memory before them, free0, less after), the most of any local GPU.
 * 0, or -1 with err.
 */
static int memory_report(struct ctx *x, const int64_t *free0)
{
	int64_t free1[64], coll = 0;
	if (x->be->ops->mem_free(x->be, free1, x->err, x->errlen))
		return -1;
	for (int i = 0; i < x->be->nlocal && i < 64; i++)
		if (free0[i] - free1[i] > coll)
			coll = free0[i] - free1[i];
	json_t *m = json_object();
	json_object_set_new(m, "init_bytes", json_integer(x->be->mem_init));
	json_object_set_new(m, "user_bytes", json_integer(x->be->mem_user));
	json_object_set_new(m, "collective_bytes", json_integer(coll));
	if (!x->run->h.extra)
		x->run->h.extra = json_object();
	json_object_set_new(x->run->h.extra, "gpu_memory", m);
	return 0;
}

/*
 * -N: the run's extra "cycles": the cycles asked (0: until stopped), those
 * finished by the last (op, dtype, redop, root) that ran, and whether a
 * stop ended the run. The rows of every cycle are in the run, in order.
 */
static void cycles_record(struct ctx *x)
{
	json_t *c = json_object();
	json_object_set_new(c, "asked", json_integer(x->o->cycles));
	json_object_set_new(c, "completed", json_integer(x->cycles_done));
	json_object_set_new(c, "stopped", json_boolean(x->stopped));
	if (!x->run->h.extra)
		x->run->h.extra = json_object();
	json_object_set_new(x->run->h.extra, "cycles", c);
}

/* The sweep on an open backend: --pairs first, then every op. 0, 1 (wrong elements), -1 or -2 (usage) with x->err. */
static int sweep(struct ctx *x)
{
	const struct nw_bench_opts *o = x->o;
	int64_t wrong = 0;
	if (o->pairs && o->nops == 0 && x->be->nranks < 2)
		return nw_seterr(x->err, x->errlen, "--pairs needs at least 2 ranks (this run has %d); start it under a "
		                 "launcher, e.g. mpirun -np 2 ncclwatch bench --pairs", x->be->nranks), -2;
	/* -u: room for the pointers moved by up to 8-byte elements, as nccl-tests pads */
	if (host_memory_fits(x) || x->be->ops->alloc(x->be, x->buf_bytes + 8 * (size_t)o->unalign, x->err, x->errlen))
		return -1;
	int64_t free0[64];
	if (o->mem_report && x->be->ops->mem_free(x->be, free0, x->err, x->errlen))
		return -1;
	/* with other ops asked for too, one rank simply has no pairs */
	if (o->pairs && (x->be->nranks > 1 || o->nops == 0) && run_pairs(x))
		return -1;
	for (int i = 0; i < o->nops && !x->stopped; i++) {
		int64_t w = sweep_op(x, nw_coll_get(o->ops[i]));
		if (w < 0)
			return (int)w;
		wrong += w;
	}
	if (o->mem_report && memory_report(x, free0))
		return -1;
	if (o->cycles != 1)
		cycles_record(x);
	return wrong || x->pairs_wrong ? 1 : 0;
}

/*
 * Every process's host, pid and devices, gathered once: rank 0 keeps them
 * in the header's extra as "devices" [{rank, host, pid, device}] (what
 * nccl-tests' "Using devices" lists). 0, or -1 with err.
 */
static int gather_devices(struct nw_run *run, const struct nw_backend *be, struct nw_group *g, char *err,
                          size_t errlen)
{
	struct { char host[64]; int pid, n, gpu[64]; } me, *all = nw_calloc((size_t)g->size, sizeof(me));
	memset(&me, 0, sizeof(me));
	nw_strlcpy(me.host, g->host, sizeof(me.host));
	me.pid = (int)getpid();
	me.n = be->nlocal < 64 ? be->nlocal : 64;
	for (int i = 0; i < me.n; i++)
		me.gpu[i] = be->gpu[i];
	if (nw_group_allgather(g, &me, all, sizeof(me), err, errlen)) {
		free(all);
		return -1;
	}
	if (g->rank == 0) {
		json_t *list = json_array();
		for (int p = 0, rank = 0; p < g->size; p++)
			for (int i = 0; i < all[p].n; i++) {
				json_t *d = json_object();
				json_object_set_new(d, "rank", json_integer(rank++));
				json_object_set_new(d, "host", json_string(all[p].host));
				json_object_set_new(d, "pid", json_integer(all[p].pid));
				json_object_set_new(d, "device", json_integer(all[p].gpu[i]));
				json_array_append_new(list, d);
			}
		if (!run->h.extra)
			run->h.extra = json_object();
		json_object_set_new(run->h.extra, "devices", list);
	}
	free(all);
	return 0;
}

/* Put "rank R on HOST: " before the message in err, so that the rank that failed is named. */
static void name_rank(const struct nw_group *g, char *err, size_t errlen)
{
	char *msg = nw_strdup(err);
	nw_seterr(err, errlen, "rank %d on %s: %s", g->rank, g->host, msg);
	free(msg);
}

static void (*job_error_fn)(const char *msg);

void nw_bench_on_job_error(void (*fn)(const char *msg))
{
	job_error_fn = fn;
}

int nw_bench_run(const struct nw_bench_opts *o, struct nw_run *run, nw_bench_row_fn row_fn,
                 void *arg, char *err, size_t errlen)
{
	struct nw_group *g = NULL;
	struct nw_backend *be = NULL;
	char fp[1024];
	fingerprint(o, fp, sizeof(fp));
	if (o->min_bytes > o->max_bytes)
		return nw_seterr(err, errlen, "-b %" PRIu64 " is larger than -e %" PRIu64, o->min_bytes, o->max_bytes);
	double rdzv = o->rdzv_timeout_s;
	if (rdzv <= 0)
		rdzv = o->timeout_s > 0 && o->timeout_s < 300 ? o->timeout_s : 300;
	int rc = nw_group_open(&g, o->backend == NW_BACKEND_MPI, fp, rdzv, err, errlen);
	if (rc)
		return rc;
	rc = -1;
	/* what the backend cannot do is the options' fault: -2 */
	int orc = open_backend(o, g, &be, err, errlen);
	if (orc == NW_BACKEND_FAILED_ALL) {
		/* every rank knows: no abort; rank 0 says it once, before any rank exits */
		if (g->rank == 0 && job_error_fn && err[0]) {
			job_error_fn(err);
			err[0] = '\0';
		}
		char e2[NW_ERRLEN];
		nw_group_barrier(g, e2, sizeof(e2));
		nw_group_close(g);
		return -1;
	}
	if (!orc && (rc = backend_fits(o, be, err, errlen) * 2) == 0) {
		struct ctx x = { .run = run, .row_fn = row_fn, .arg = arg, .err = err, .errlen = errlen };
		fill_header(&run->h, o, be, g);
		rc = -1;
		if (!gather_devices(run, be, g, err, errlen) && (rc = nw_split_job(o, be, g, run, err, errlen)) == 0) {
			ctx_init(&x, o, be, g);
			rc = sweep(&x);
		}
	}
	if (rc < 0 && g->size > 1) {
		/* tell the others before they wait on us forever (a usage error stops every rank alike) */
		if (rc == -1)
			nw_group_abort(g, err);
		name_rank(g, err, errlen);
	}
	if (be)
		be->ops->destroy(be);
	nw_group_close(g);
	return rc;
}
