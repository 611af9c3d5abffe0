/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MPI host backend: the same collectives over host memory through MPI
 * collectives, one rank per process. It runs the whole bench pipeline for
 * real on machines without a GPU, and measures a CPU cluster's fabric.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/backend.h"
#include "util/util.h"

#if NW_HAVE_MPI
#include "comm/mpi_abi.h"
#include "comm/mpi_wait.h"

struct mpi_priv {
	char *send, *recv;
	size_t bytes;
	void *staging;
	char *swap;     /* in-place sendrecv receives here first; p->bytes, made when first needed */
	MPI_Comm comm;  /* MPI_COMM_WORLD, or this rank's group under NCCL_TESTS_SPLIT */
	int *vcounts;   /* alltoallv's counts and displacements: 4 x nranks, made when first needed */
};

static struct mpi_priv *P(struct nw_backend *be)
{
	return be->priv;
}

static MPI_Datatype mpi_type(int t)
{
	switch (t) {
	case NW_INT8: return MPI_INT8_T;
	case NW_UINT8: return MPI_UINT8_T;
	case NW_INT32: return MPI_INT32_T;
	case NW_UINT32: return MPI_UINT32_T;
	case NW_INT64: return MPI_INT64_T;
	case NW_UINT64: return MPI_UINT64_T;
	case NW_FLOAT: return MPI_FLOAT;
	case NW_DOUBLE: return MPI_DOUBLE;
	default: return MPI_DATATYPE_NULL;
	}
}

static MPI_Op mpi_op(int r)
{
	switch (r) {
	case NW_PROD: return MPI_PROD;
	case NW_MAX: return MPI_MAX;
	case NW_MIN: return MPI_MIN;
	default: return MPI_SUM; /* avg: sum, then divided here */
	}
}

static int mpi_fail(int rc, const char *what, char *err, size_t errlen)
{
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(rc, s, &n);
	return nw_seterr(err, errlen, "MPI %s failed: %s", what, s);
}

static int be_alloc(struct nw_backend *be, size_t bytes, char *err, size_t errlen)
{
	struct mpi_priv *p = P(be);
	free(p->send);
	free(p->recv);
	free(p->swap);
	p->send = p->recv = p->swap = NULL;
	bytes = (bytes + 4095) & ~(size_t)4095;
	if (posix_memalign((void **)&p->send, 4096, bytes) || posix_memalign((void **)&p->recv, 4096, bytes))
		return nw_seterr(err, errlen, "too little host memory for 2 x %.2f GiB buffers; lower -e",
		                 bytes / 1073741824.0);
	memset(p->send, 0, bytes);
	memset(p->recv, 0, bytes);
	p->bytes = bytes;
	return 0;
}

/* avg on a host backend: the sum, divided by n in place (truncating for integers). */
static void divide(void *buf, size_t count, int t, int n)
{
	switch (t) {
	case NW_FLOAT: for (size_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)n; break;
	case NW_DOUBLE: for (size_t i = 0; i < count; i++) ((double *)buf)[i] /= n; break;
	case NW_INT8: for (size_t i = 0; i < count; i++) ((int8_t *)buf)[i] = (int8_t)(((int8_t *)buf)[i] / n); break;
	case NW_UINT8: for (size_t i = 0; i < count; i++) ((uint8_t *)buf)[i] = (uint8_t)(((uint8_t *)buf)[i] / n); break;
	case NW_INT32: for (size_t i = 0; i < count; i++) ((int32_t *)buf)[i] /= n; break;
	case NW_UINT32: for (size_t i = 0; i < count; i++) ((uint32_t *)buf)[i] /= (uint32_t)n; break;
	case NW_INT64: for (size_t i = 0; i < count; i++) ((int64_t *)buf)[i] /= n; break;
	case NW_UINT64: for (size_t i = 0; i < count; i++) ((uint64_t *)buf)[i] /= (uint64_t)n; break;
	default: break;
	}
}

/*
 * Sendrecv as two nonblocking halves (to -1: this rank sits out). In place,
 * the message comes into p->swap and is copied over r once sent and received.
 */
static int start_sendrecv(struct mpi_priv *p, const char *s, char *r, int cnt, MPI_Datatype t, int to, int from,
                          int inplace, MPI_Request *rq, int *nrq)
{
	if (inplace && !p->swap)
		p->swap = nw_malloc(p->bytes);
	char *in = inplace ? p->swap : r;
	int rc = MPI_Irecv(in, cnt, t, from, 0, p->comm, &rq[0]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Isend(inplace ? r : s, cnt, t, to, 0, p->comm, &rq[1]);
	*nrq = rc == MPI_SUCCESS ? 2 : 0;
	return rc;
}

/*
 * alltoallv as MPI_Ialltoallv with nccl-tests' per-peer counts (the
 * displacements pack each rank's segments in rank order). In place (send
 * and receive both in the receive buffer, as nccl-tests does), the input is
 * staged in p->swap first: MPI_IN_PLACE would take the receive counts for
 * both sides, which differ here. Not verified in place, as in nccl-tests.
 */
static int start_alltoallv(struct nw_backend *be, const struct nw_call *c, char *s, char *r, MPI_Request *rq)
{
	struct mpi_priv *p = P(be);
	int n = be->nranks, me = be->rank0;
	size_t es = nw_dtype_size(c->dtype);
	if (!p->vcounts)
		p->vcounts = nw_calloc(4 * (size_t)n, sizeof(int));
	int *sc = p->vcounts, *sd = sc + n, *rc = sd + n, *rd = rc + n;
	for (int k = 0, soff = 0, roff = 0; k < n; k++) {
		sc[k] = (int)nw_alltoallv_count(c->count, es, n, me, k);
		rc[k] = (int)nw_alltoallv_count(c->count, es, n, k, me);
		sd[k] = soff;
		rd[k] = roff;
		soff += sc[k];
		roff += rc[k];
	}
	MPI_Datatype t = mpi_type(c->dtype);
	if (c->inplace) {
		if (!p->swap)
			p->swap = nw_malloc(p->bytes);
		memcpy(p->swap, s, (size_t)(sd[n - 1] + sc[n - 1]) * es);
		s = p->swap;
	}
	return MPI_Ialltoallv(s, sc, sd, t, r, rc, rd, t, p->comm, rq);
}

/*
 * hypercube (nccl-tests' meaning): an all_gather in log2(n) steps; at step
 * mask, a rank swaps everything it has gathered so far (mask chunks) with
 * rank ^ mask. Each step waited on for at most -T. 0, or -1 with err.
 */
static int hypercube(struct nw_backend *be, const struct nw_call *c, const char *s, char *r, char *err,
                     size_t errlen)
{
	struct mpi_priv *p = P(be);
	int n = be->nranks, me = be->rank0;
	size_t chunk = (size_t)c->count * nw_dtype_size(c->dtype);
	MPI_Datatype t = mpi_type(c->dtype);
	if (r + (size_t)me * chunk != s)
		memcpy(r + (size_t)me * chunk, s, chunk);
	for (int mask = 1; mask < n; mask <<= 1) {
		int have = me & ~(mask - 1), get = have ^ mask, cnt = (int)c->count * mask;
		MPI_Request rq[2];
		int rc = MPI_Irecv(r + (size_t)get * chunk, cnt, t, me ^ mask, 1, p->comm, &rq[0]);
		if (rc == MPI_SUCCESS)
			rc = MPI_Isend(r + (size_t)have * chunk, cnt, t, me ^ mask, 1, p->comm, &rq[1]);
		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "hypercube", err, errlen);
		if (nw_mpi_wait(be->group, rq, 2, be->timeout_s, "hypercube", err, errlen))
			return -1;
	}
	return 0;
}

/* Starts one call as MPI's nonblocking collective; the requests go to rq (*nrq of them). */
static int start_call(struct nw_backend *be, const struct nw_call *c, char *s, char *r, MPI_Request *rq, int *nrq)
{
	int rank = be->rank0, n = be->nranks;
	int cnt = (int)c->count;
	MPI_Datatype t = mpi_type(c->dtype);
	MPI_Op op = mpi_op(c->redop);
	MPI_Comm w = P(be)->comm;
	const void *in = c->inplace ? MPI_IN_PLACE : s;
	int root_in = c->inplace && rank == c->root;
	*nrq = 1;
	switch (c->op) {
	case NW_ALL_REDUCE: return MPI_Iallreduce(in, r, cnt, t, op, w, rq);
	case NW_ALL_GATHER: return MPI_Iallgather(in, cnt, t, r, cnt, t, w, rq);
	case NW_REDUCE_SCATTER:
		/* in place, MPI reads the whole input at the buffer's start and leaves our chunk there */
		return MPI_Ireduce_scatter_block(c->inplace ? MPI_IN_PLACE : s, c->inplace ? s : r, cnt, t, op, w, rq);
	case NW_BROADCAST:
		if (!c->inplace && rank == c->root)
			memcpy(r, s, (size_t)cnt * nw_dtype_size(c->dtype));
		return MPI_Ibcast(r, cnt, t, c->root, w, rq);
	case NW_REDUCE: return MPI_Ireduce(root_in ? MPI_IN_PLACE : s, r, cnt, t, op, c->root, w, rq);
	case NW_ALLTOALL: return MPI_Ialltoall(in, cnt, t, r, cnt, t, w, rq);
	case NW_GATHER: return MPI_Igather(root_in ? MPI_IN_PLACE : s, cnt, t, r, cnt, t, c->root, w, rq);
	case NW_SCATTER: return MPI_Iscatter(s, cnt, t, root_in ? MPI_IN_PLACE : r, cnt, t, c->root, w, rq);
	case NW_SENDRECV: {
		int to = (rank + 1) % n, from = (rank - 1 + n) % n;
		*nrq = 0;
		if (c->pair) {
			to = from = nw_call_pair_peer(c, rank);
			if (to < 0)
				return MPI_SUCCESS;
		}
		return start_sendrecv(P(be), s, r, cnt, t, to, from, c->inplace, rq, nrq);
	}
	case NW_ALLTOALLV: return start_alltoallv(be, c, s, r, rq);
	default: /* refused by the caller */
		*nrq = 0;
		return MPI_SUCCESS;
	}
}

/*
 * One call, started nonblocking and waited on for at most -T, so that a
 * stopped or dead peer ends the run naming it; then what MPI leaves to us
 * (avg's division, the in-place moves). 0, or -1 with err.
 */
static int one_call(struct nw_backend *be, const struct nw_call *c, char *err, size_t errlen)
{
	struct mpi_priv *p = P(be);
	int rank = be->rank0, n = be->nranks;
	size_t soff, roff;
	nw_call_offsets(c, rank, &soff, &roff);
	char *s = (c->inplace ? p->recv : p->send) + soff;
	char *r = p->recv + roff;
	size_t cnt = (size_t)c->count, es = nw_dtype_size(c->dtype);
	NW_ASSERT((unsigned)c->op < NW_NOPS);
	const char *name = nw_coll_get(c->op)->name;
	if (c->count * (uint64_t)n > (uint64_t)INT32_MAX)
		return nw_seterr(err, errlen, "%s of %llu elements per rank: MPI counts are limited to 2^31-1 "
		                 "elements; lower -e for the MPI backend", name, (unsigned long long)c->count);
	if (c->op == NW_HYPERCUBE)
		return hypercube(be, c, s, r, err, errlen);
	MPI_Request rq[2];
	int nrq = 0;
	int rc = start_call(be, c, s, r, rq, &nrq);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, name, err, errlen);
	if (nrq && nw_mpi_wait(be->group, rq, nrq, be->timeout_s, name, err, errlen))
		return -1;
	if (c->op == NW_REDUCE_SCATTER && c->inplace && rank)
		memmove(r, s, cnt * es);
	if (c->op == NW_SENDRECV && c->inplace && nrq)
		memcpy(r, p->swap, cnt * es);
	int divided = c->op == NW_ALL_REDUCE || c->op == NW_REDUCE_SCATTER || (c->op == NW_REDUCE && rank == c->root);
	if (divided && c->redop == NW_AVG)
		divide(r, cnt, c->dtype, n);
	return 0;
}

static int be_launch(struct nw_backend *be, const struct nw_call *c, int agg, char *err, size_t errlen)
{
	for (int a = 0; a < agg; a++)
		if (one_call(be, c, err, errlen))
			return -1;
	return 0;
}

static int be_wait(struct nw_backend *be, double timeout_s, const char *what, char *err, size_t errlen)
{
	(void)be; (void)timeout_s; (void)what; (void)err; (void)errlen;
	return 0; /* MPI collectives here are blocking */
}

static char *buf(struct mpi_priv *p, enum nw_buf b)
{
	return b == NW_BUF_SEND ? p->send : p->recv;
}

static int be_write(struct nw_backend *be, int i, enum nw_buf b, size_t off, const void *src, size_t n,
                    char *err, size_t errlen)
{
	(void)i; (void)err; (void)errlen;
	memcpy(buf(P(be), b) + off, src, n);
	return 0;
}

static int be_read(struct nw_backend *be, int i, enum nw_buf b, size_t off, void *dst, size_t n,
                   char *err, size_t errlen)
{
	(void)i; (void)err; (void)errlen;
	memcpy(dst, buf(P(be), b) + off, n);
	return 0;
}

static int be_copy(struct nw_backend *be, int i, size_t soff, size_t doff, size_t n, char *err, size_t errlen)
{
	(void)i; (void)err; (void)errlen;
	memmove(P(be)->recv + doff, P(be)->send + soff, n);
	return 0;
}

static int be_fill32(struct nw_backend *be, int i, enum nw_buf b, uint32_t word, char *err, size_t errlen)
{
	(void)i; (void)err; (void)errlen;
	struct mpi_priv *p = P(be);
	uint32_t *w = (uint32_t *)(void *)buf(p, b);
	for (size_t k = 0; k < p->bytes / 4; k++)
		w[k] = word;
	return 0;
}

static void *be_host_alloc(struct nw_backend *be, size_t n)
{
	struct mpi_priv *p = P(be);
	if (n == 0) {
		if (!p->staging)
			p->staging = nw_malloc(64u << 20);
		return p->staging;
	}
	return NULL;
}

static void be_destroy(struct nw_backend *be)
{
	if (!be)
		return;
	struct mpi_priv *p = P(be);
	if (p) {
		free(p->send);
		free(p->recv);
		free(p->staging);
		free(p->swap);
		free(p->vcounts);
		if (p->comm != MPI_COMM_WORLD)
			MPI_Comm_free(&p->comm);
		free(p);
	}
	free(be);
}

/*
 * NCCL_TESTS_SPLIT: from now on this backend's collectives run among the
 * ranks of the same color only (MPI_Comm_split of the world, keyed by
 * world rank); be->rank0 and be->nranks become this rank's place in its
 * group. Collective over every rank. 0, or -1 with err.
 */
static int be_split(struct nw_backend *be, int color, char *err, size_t errlen)
{
	struct mpi_priv *p = P(be);
	MPI_Comm c;
	int rc = MPI_Comm_split(MPI_COMM_WORLD, color, be->rank0, &c);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, "Comm_split (NCCL_TESTS_SPLIT)", err, errlen);
	if (p->comm != MPI_COMM_WORLD)
		MPI_Comm_free(&p->comm);
	p->comm = c;
	MPI_Comm_rank(c, &be->rank0);
	MPI_Comm_size(c, &be->nranks);
	free(p->vcounts);
	p->vcounts = NULL;
	return 0;
}

static const struct nw_backend_ops mpi_ops = {
	.alloc = be_alloc,
	.launch = be_launch,
	.wait = be_wait,
	.write = be_write,
	.read = be_read,
	.copy = be_copy,
	.fill32 = be_fill32,
	.host_alloc = be_host_alloc,
	.destroy = be_destroy,
	.split = be_split,
};

int nw_backend_mpi_open(struct nw_backend **out, struct nw_group *g, char *err, size_t errlen)
{
	(void)err; /* this build cannot fail here; one without MPI refuses (below) */
	(void)errlen;
	*out = NULL;
	NW_ASSERT(g->kind == NW_GROUP_MPI); /* the sweep opens the MPI group for the MPI backend */
	struct nw_backend *be = nw_calloc(1, sizeof(*be));
	be->ops = &mpi_ops;
	be->priv = nw_calloc(1, sizeof(struct mpi_priv));
	P(be)->comm = MPI_COMM_WORLD;
	be->name = "mpi";
	be->group = g;
	be->nlocal = 1;
	be->nranks = g->size;
	be->rank0 = g->rank;
	be->gpu[0] = -1;
	static const int ok[] = { NW_INT8, NW_UINT8, NW_INT32, NW_UINT32, NW_INT64, NW_UINT64, NW_FLOAT, NW_DOUBLE };
	for (size_t i = 0; i < NW_ARRAY_LEN(ok); i++)
		be->dtype_ok[ok[i]] = 1;
	/* MPI's own reductions, avg divided here; NCCL's pre-multiplied sum has no MPI counterpart */
	for (int r = 0; r < NW_NREDOPS; r++)
		be->redop_ok[r] = r != NW_MULSUM;
	be->cta_max = -1;
	int len = 0;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, ",\n")] = '\0';
	snprintf(be->gpus, sizeof(be->gpus), "%d x host (%s)", g->size, lib);
	nw_strlcpy(be->dev[0].pci, "-", sizeof(be->dev[0].pci));
	snprintf(be->dev[0].name, sizeof(be->dev[0].name), "host (%.55s)", lib);
	*out = be;
	return 0;
}

#else

int nw_backend_mpi_open(struct nw_backend **out, struct nw_group *g, char *err, size_t errlen)
{
	(void)g;
	*out = NULL;
	return nw_seterr(err, errlen, "this ncclwatch was built without MPI support, so '--backend mpi' is "
	                 "unavailable; install libopenmpi-dev and rebuild (make prints 'MPI support: yes')");
}

#endif
