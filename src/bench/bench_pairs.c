/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pairs: --pairs, every pair of ranks sending to each other while
 * the others wait, for a matrix of busbw that shows a slow link.
 */
#include <math.h>

#include "bench/bench_int.h"
#include "util/util.h"

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
static int time_pair(struct bs_ctx *x, struct nw_call *c, double *all, double *t, int64_t *wrong)
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
	if (bs_time_batch(x, c, bytes, bytes, x->o->iters, &mine, NULL) ||
	    nw_group_allgather(x->g, &mine, all, sizeof(double), x->err, x->errlen))
		return -1;
	double ta = all[c->pair_a / be->nlocal], tb = all[c->pair_b / be->nlocal];
	*t = ta > tb ? ta : tb;
	*wrong = -1;
	if (o->check) {
		struct nw_pattern p = { .op = NW_SENDRECV, .dtype = c->dtype, .nranks = be->nranks, .count = c->count,
		                        .pair = 1, .pair_a = c->pair_a, .pair_b = c->pair_b };
		if (bs_check_once(x, c, &p, wrong))
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
int bs_run_pairs(struct bs_ctx *x)
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
			if (bs_staged(x, &p, i, 0, count, 0, NULL))
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
