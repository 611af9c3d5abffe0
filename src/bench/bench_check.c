/*
 * bench_check: the host side of verification (-c): each rank's input
 * pattern written into its send buffer and its output compared element by
 * element, through a pinned staging buffer, split over threads.
 */
#include <stdlib.h>

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
		if (bs_staged(x, p, i, roff, nw_pattern_output_count(p, rank), 1, &wrong))
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
	int key = dtype * 2 + (redop == NW_PROD && coll->has_redop);
	if (!x->o->check || key == x->pattern_key)
		return 0;
	struct nw_pattern p = { .op = coll->op, .dtype = dtype, .redop = coll->has_redop ? redop : NW_SUM,
	                        .root = root, .nranks = x->be->nranks, .count = 1 };
	size_t shift = (size_t)x->o->unalign * nw_dtype_size(dtype); /* -u: inputs start where the pointers do */
	for (int i = 0; i < x->be->nlocal; i++)
		if (bs_staged(x, &p, i, shift, x->buf_bytes / nw_dtype_size(dtype), 0, NULL))
			return -1;
	x->pattern_key = key;
	return 0;
}
