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

struct mpi_priv {
	char *send, *recv;
	size_t bytes;
	void *staging;
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
	p->send = p->recv = NULL;
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

static int one_call(struct nw_backend *be, const struct nw_call *c, char *err, size_t errlen)
{
	struct mpi_priv *p = P(be);
	int rank = be->rank0, n = be->nranks;
	size_t soff, roff;
	nw_call_offsets(c, rank, &soff, &roff);
	char *s = (c->inplace ? p->recv : p->send) + soff;
	char *r = p->recv + roff;
	int cnt = (int)c->count;
	size_t es = nw_dtype_size(c->dtype);
	MPI_Datatype t = mpi_type(c->dtype);
	MPI_Op op = mpi_op(c->redop);
	MPI_Comm w = MPI_COMM_WORLD;
	int rc = MPI_SUCCESS;
	if (c->count * (uint64_t)n > (uint64_t)INT32_MAX)
		return nw_seterr(err, errlen, "%s of %llu elements per rank: MPI counts are limited to 2^31-1 "
		                 "elements; lower -e for the MPI backend", nw_coll_get(c->op)->name,
		                 (unsigned long long)c->count);
	const void *in = c->inplace ? MPI_IN_PLACE : s;
	switch (c->op) {
	case NW_ALL_REDUCE:
		rc = MPI_Allreduce(in, r, cnt, t, op, w);
		if (!rc && c->redop == NW_AVG)
			divide(r, (size_t)cnt, c->dtype, n);
		break;
	case NW_ALL_GATHER:
		rc = MPI_Allgather(in, cnt, t, r, cnt, t, w);
		break;
	case NW_REDUCE_SCATTER:
		/* in place, MPI reads the whole input at the buffer's start and leaves our chunk there */
		rc = MPI_Reduce_scatter_block(c->inplace ? MPI_IN_PLACE : s, c->inplace ? s : r, cnt, t, op, w);
		if (!rc && c->inplace && rank)
			memmove(r, s, (size_t)cnt * es);
		if (!rc && c->redop == NW_AVG)
			divide(r, (size_t)cnt, c->dtype, n);
		break;
	case NW_BROADCAST:
		if (!c->inplace && rank == c->root)
			memcpy(r, s, (size_t)cnt * es);
		rc = MPI_Bcast(r, cnt, t, c->root, w);
		break;
	case NW_REDUCE:
		rc = MPI_Reduce(c->inplace && rank == c->root ? MPI_IN_PLACE : s, r, cnt, t, op, c->root, w);
		if (!rc && c->redop == NW_AVG && rank == c->root)
			divide(r, (size_t)cnt, c->dtype, n);
		break;
	case NW_ALLTOALL:
		rc = MPI_Alltoall(in, cnt, t, r, cnt, t, w);
		break;
	case NW_SENDRECV: {
		int to = (rank + 1) % n, from = (rank - 1 + n) % n;
		if (c->pair) {
			to = from = nw_call_pair_peer(c, rank);
			if (to < 0)
				break;
		}
		if (c->inplace)
			rc = MPI_Sendrecv_replace(r, cnt, t, to, 0, from, 0, w, MPI_STATUS_IGNORE);
		else
			rc = MPI_Sendrecv(s, cnt, t, to, 0, r, cnt, t, from, 0, w, MPI_STATUS_IGNORE);
		break;
	}
	case NW_GATHER:
		rc = MPI_Gather(c->inplace && rank == c->root ? MPI_IN_PLACE : s, cnt, t, r, cnt, t, c->root, w);
		break;
	case NW_SCATTER:
		rc = MPI_Scatter(s, cnt, t, c->inplace && rank == c->root ? MPI_IN_PLACE : r, cnt, t, c->root, w);
		break;
	default:
		return nw_seterr(err, errlen, "internal: unknown op %d", c->op);
	}
	return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, nw_coll_get(c->op)->name, err, errlen);
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
		free(p);
	}
	free(be);
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
};

int nw_backend_mpi_open(struct nw_backend **out, struct nw_group *g, char *err, size_t errlen)
{
	*out = NULL;
	if (g->kind != NW_GROUP_MPI)
		return nw_seterr(err, errlen, "internal: the MPI backend needs the MPI process group");
	struct nw_backend *be = nw_calloc(1, sizeof(*be));
	be->ops = &mpi_ops;
	be->priv = nw_calloc(1, sizeof(struct mpi_priv));
	be->name = "mpi";
	be->group = g;
	be->nlocal = 1;
	be->nranks = g->size;
	be->rank0 = g->rank;
	be->gpu[0] = -1;
	static const int ok[] = { NW_INT8, NW_UINT8, NW_INT32, NW_UINT32, NW_INT64, NW_UINT64, NW_FLOAT, NW_DOUBLE };
	for (size_t i = 0; i < NW_ARRAY_LEN(ok); i++)
		be->dtype_ok[ok[i]] = 1;
	int len = 0;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, ",\n")] = '\0';
	snprintf(be->gpus, sizeof(be->gpus), "%d x host (%s)", g->size, lib);
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
