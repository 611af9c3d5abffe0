/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_time: how a size is timed, as nccl-tests times it: a batch of -n
 * launches on a host clock (or captured once as CUDA graphs, -G), each
 * iteration alone (-I 1), or blocking (-z); warm-up over every size first;
 * every process's time combined as -a says; the noise of a quick batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_int.h"
#include "util/util.h"

void bs_describe(char *buf, size_t len, const struct nw_call *c, uint64_t size)
{
	char sz[32];
	nw_format_size(size, sz, sizeof(sz));
	snprintf(buf, len, "%s of %s (%s%s%s, %s)", nw_coll_get(c->op)->name, sz,
	         nw_dtype_name(c->dtype), nw_coll_get(c->op)->has_redop ? " " : "",
	         nw_coll_get(c->op)->has_redop ? nw_redop_name(c->redop) : "",
	         c->inplace ? "in-place" : "out-of-place");
}

/* Capture the -n launches of a batch (buffers shifted as in time_batch) as one graph per local rank (-G). 0 or -1. */
static int capture_batch(struct bs_ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, int agg, int iters)
{
	struct nw_backend *be = x->be;
	if (be->ops->graph_begin(be, x->err, x->errlen))
		return -1;
	for (int it = 0; it < iters; it++) {
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
 * launch to its completion (each one waited for), into times (iters
 * entries, us per operation); *usec gets their mean.
 */
static int time_iters(struct bs_ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, const char *what,
                      int iters, double *times, double *usec)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	double sum = 0;
	for (int it = 0; it < iters; it++) {
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
	*usec = sum / iters;
	c->shift = 0;
	return 0;
}

/*
 * -z 1..3, nccl-tests' blocking modes: 1 waits for each collective of a
 * launch (-m) and then joins every rank at a barrier, 2 waits without the
 * barrier, 3 waits for each launch of -m collectives and joins at a
 * barrier, leaving the barrier out of the time. *usec: time per operation.
 */
static int time_blocking(struct bs_ctx *x, struct nw_call *c, uint64_t total_bytes, size_t steps, const char *what,
                         int iters, double *usec)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	int inner = o->blocking == 3 ? 1 : agg, per = o->blocking == 3 ? agg : 1;
	double t0 = nw_now(), barrier_s = 0;
	for (int it = 0; it < iters; it++) {
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
	*usec = (nw_now() - t0 - barrier_s) / ((double)iters * agg) * 1e6;
	c->shift = 0;
	return 0;
}

/* One timed batch; *usec gets this process's time per operation (with -I 1, times gets each iteration's). */
int bs_time_batch(struct bs_ctx *x, struct nw_call *c, uint64_t total_bytes, uint64_t size, int iters, double *usec,
                  double *times)
{
	const struct nw_bench_opts *o = x->o;
	struct nw_backend *be = x->be;
	char what[128];
	bs_describe(what, sizeof(what), c, size);
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
		return time_iters(x, c, total_bytes, steps, what, iters, times, usec);
	double t0, t_launched;
	int graph = o->graph_launches > 0 && be->graphs;
	if (graph) {
		if (capture_batch(x, c, total_bytes, steps, agg, iters) || nw_group_barrier(x->g, x->err, x->errlen))
			return -1;
		t0 = nw_now();
		if (be->ops->graph_launch(be, o->graph_launches, x->err, x->errlen))
			return -1;
	} else if (be->ops->launch_many && !o->blocking) {
		/* the backend loops (with -t, every thread its own loop, as nccl-tests) */
		t0 = nw_now();
		if (be->ops->launch_many(be, c, agg, iters, total_bytes, steps, x->err, x->errlen))
			return -1;
	} else if (o->blocking) {
		return time_blocking(x, c, total_bytes, steps, what, iters, usec);
	} else {
		t0 = nw_now();
		for (int it = 0; it < iters; it++) {
			c->shift = total_bytes * (it % steps);
			if (be->ops->launch(be, c, agg, x->err, x->errlen))
				return -1;
		}
	}
	t_launched = nw_now();
	if (be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
		return -1;
	double t1 = nw_now();
	double per = (o->cputime ? t_launched - t0 : t1 - t0) / ((double)iters * agg);
	if (graph)
		per /= o->graph_launches;
	*usec = per * 1e6;
	c->shift = 0;
	return 0;
}

/*
 * The noise's two more batches take at most this long each (combined over
 * ranks): a batch that took longer is repeated with fewer launches.
 */
#define NOISE_BATCH_S 0.005

int bs_noise(struct bs_ctx *x, struct nw_call *c, uint64_t used, struct nw_row *row)
{
	const struct nw_bench_opts *o = x->o;
	int agg = o->agg_iters > 0 ? o->agg_iters : 1;
	/* -I 1 keeps every iteration (compare's noise then); a graph would be captured again for each batch */
	if (o->per_iter || (o->graph_launches > 0 && x->be->graphs) || !(row->time_us > 0))
		return 0;
	/* from the combined time, so that every rank decides alike */
	double launch_s = row->time_us * 1e-6 * agg;
	int n = o->iters;
	if (launch_s * n > NOISE_BATCH_S)
		n = launch_s >= NOISE_BATCH_S ? 1 : (int)(NOISE_BATCH_S / launch_s);
	double t[3] = { row->time_us, 0, 0 };
	for (int k = 1; k < 3; k++) {
		struct nw_row again;
		double mine;
		memset(&again, 0, sizeof(again));
		int rc = bs_time_batch(x, c, used, used, n, &mine, NULL) || bs_combine(x, mine, &again);
		t[k] = again.time_us;
		nw_row_release(&again);
		if (rc)
			return -1;
	}
	double lo = t[0], hi = t[0], sum = 0;
	for (int k = 0; k < 3; k++) {
		lo = t[k] < lo ? t[k] : lo;
		hi = t[k] > hi ? t[k] : hi;
		sum += t[k];
	}
	row->noise = sum > 0 ? (hi - lo) / (sum / 3) : 0;
	if (row->noise < 1e-6)
		row->noise = 1e-6; /* measured, and below anything a clock tells apart */
	return 0;
}

/* Combine every process's time as -a says; fills per-rank detail when asked. */
int bs_combine(struct bs_ctx *x, double mine, struct nw_row *row)
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
		struct { char host[64]; int gpu[NW_MAX_LOCAL]; } me, *info = nw_calloc((size_t)g->size, sizeof(me));
		memset(&me, 0, sizeof(me));
		nw_strlcpy(me.host, g->host, sizeof(me.host));
		for (int i = 0; i < nl; i++)
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
int bs_slowest_iters(struct bs_ctx *x, const double *mine, struct nw_row *row)
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

/* Warm-up over every size first (doubling from -b to -e), -w launches each, as nccl-tests does. 0 or -1. */
int bs_warm_up(struct bs_ctx *x, struct nw_call *c)
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
		bs_describe(what, sizeof(what), c, used);
		if (be->ops->wait(be, o->timeout_s, what, x->err, x->errlen))
			return -1;
	}
	return 0;
}
