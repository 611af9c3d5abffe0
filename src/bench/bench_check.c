/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_check: verification (-c). Each rank's input pattern is written
 * into its send buffer and its output compared element by element: on the
 * device where the backend can (the check kernels: only a count crosses
 * PCIe), else through a pinned staging buffer on the host, split over
 * threads. Both count exactly the same elements (test_pattern).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/bench_int.h"
#include "util/util.h"

struct job {
	const struct nw_pattern *p;
	int rank;
	uint64_t first, n;
	char *buf;
	uint64_t wrong[NW_PARALLEL_MAX]; /* one per thread of nw_parallel */
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
int bs_staged(struct bs_ctx *x, const struct nw_pattern *p, int local, size_t off, uint64_t count,
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
		for (int t = 0; verify && t < NW_PARALLEL_MAX; t++)
			*wrong += j.wrong[t];
	}
	return 0;
}

/*
 * Whether the checks run on the device: asked of the backend once. Where
 * it cannot (no kernels, a driver that refuses them), the run's header says
 * why ("checks": "host", "checks_why") and the host does it.
 */
static int use_dev(struct bs_ctx *x)
{
	if (x->dev)
		return x->dev > 0;
	x->dev = -1;
	if (!x->be->ops->dev_start)
		return 0;
	char why[NW_ERRLEN];
	if (!x->run->h.extra)
		x->run->h.extra = json_object();
	if (x->be->ops->dev_start(x->be, why, sizeof(why)) == 0) {
		x->dev = 1;
		json_object_set_new(x->run->h.extra, "checks", json_string("gpu"));
		return 1;
	}
	json_object_set_new(x->run->h.extra, "checks", json_string("host"));
	json_object_set_new(x->run->h.extra, "checks_why", json_string(why));
	return 0;
}

/*
 * NCCLWATCH_TEST_CORRUPT=I,J,...: after the collective, flip the last byte
 * of these output elements of every checked rank (through the backend, on
 * the device for GPUs), so a test can plant wrong elements and see the
 * same count from the device and the host checks. 0 or -1.
 */
static int plant_corruption(struct bs_ctx *x, const struct nw_pattern *p, int local, size_t roff)
{
	const char *list = getenv("NCCLWATCH_TEST_CORRUPT");
	size_t es = nw_dtype_size(p->dtype);
	uint64_t count = nw_pattern_output_count(p, x->be->rank0 + local);
	for (const char *s = list; s && *s;) {
		char *end;
		unsigned long long idx = strtoull(s, &end, 10);
		if (end == s)
			break;
		s = *end == ',' ? end + 1 : end;
		unsigned char e[8];
		if (idx >= count)
			continue;
		size_t at = roff + (size_t)idx * es;
		if (x->be->ops->read(x->be, local, NW_BUF_RECV, at, e, es, x->err, x->errlen))
			return -1;
		e[es - 1] ^= 0xA5;
		if (x->be->ops->write(x->be, local, NW_BUF_RECV, at, e, es, x->err, x->errlen))
			return -1;
	}
	return 0;
}

/* Local rank local's output (count elements at byte offset roff) checked: *wrong grows. 0 or -1. */
static int check_output(struct bs_ctx *x, const struct nw_pattern *p, int local, size_t roff, uint64_t count,
                        uint64_t *wrong)
{
	if (getenv("NCCLWATCH_TEST_CORRUPT") && plant_corruption(x, p, local, roff))
		return -1;
	if (!use_dev(x))
		return bs_staged(x, p, local, roff, count, 1, wrong);
	struct nw_dcheck dc;
	nw_pattern_dcheck(p, x->be->rank0 + local, 0, count, &dc);
	int rc = x->be->ops->dev_verify(x->be, local, roff, &dc, wrong, x->err, x->errlen);
	nw_dcheck_release(&dc);
	return rc;
}

/* Verify one placement: fresh inputs, one launch, every element compared. */
int bs_check_once(struct bs_ctx *x, struct nw_call *c, const struct nw_pattern *p, int64_t *wrong_out)
{
	struct nw_backend *be = x->be;
	size_t es = nw_dtype_size(c->dtype);
	uint64_t wrong = 0;
	char what[128];
	bs_describe(what, sizeof(what), c, 0);
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
		if (check_output(x, p, i, roff, nw_pattern_output_count(p, rank), &wrong))
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
int bs_fill_patterns(struct bs_ctx *x, const struct nw_coll *coll, enum nw_dtype dtype, enum nw_redop redop, int root)
{
	/* the inputs differ by type, and for prod and mulsum (their own values and amplitude) */
	int key = dtype * 3 + (!coll->has_redop ? 0 : redop == NW_PROD ? 1 : redop == NW_MULSUM ? 2 : 0);
	if (!x->o->check || key == x->pattern_key)
		return 0;
	struct nw_pattern p = { .op = coll->op, .dtype = dtype, .redop = coll->has_redop ? redop : NW_SUM,
	                        .root = root, .nranks = x->be->nranks, .count = 1 };
	/* -u: inputs start where the pointers do (the buffers have room for it) */
	size_t es = nw_dtype_size(dtype), shift = (size_t)x->o->unalign * es;
	uint64_t n = x->buf_bytes / es;
	for (int i = 0; i < x->be->nlocal; i++) {
		uint64_t tab[NW_DCHECK_PERIOD];
		if (!use_dev(x)) {
			if (bs_staged(x, &p, i, shift, n, 0, NULL))
				return -1;
			continue;
		}
		nw_pattern_fill_table(&p, x->be->rank0 + i, 0, tab);
		if (x->be->ops->dev_fill(x->be, i, NW_BUF_SEND, shift, n, (unsigned)es, tab, x->err, x->errlen))
			return -1;
	}
	x->pattern_key = key;
	return 0;
}
