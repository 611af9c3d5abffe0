/* SPDX-License-Identifier: Apache-2.0 */
/*
 * be_nccl_run: the NCCL backend's calls: one call per collective (grouped
 * send/recv where NCCL lacks one), the -t launch threads that share the
 * local ranks, waiting on the streams with a timeout (-T), and CUDA graph
 * capture and launch (-G).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/be_nccl_int.h"
#include "util/strbuf.h"
#include "util/util.h"

/* One local rank's side of a call: its buffers, element count and type, communicator and stream. */
struct side {
	const struct nw_nccl *nc;
	const char *s;      /* what it sends */
	char *r;            /* where it receives */
	size_t cnt, es;     /* elements (nccl-tests' count) and bytes per element */
	int t;              /* data type */
	int rank, n;        /* its global rank, of n */
	nw_ncclComm_t comm;
	nw_CUstream st;
};

/* sendrecv: to rank + 1 and from rank - 1 (a ring), or both ways with the peer of a pair. */
static nw_ncclResult_t sendrecv(const struct side *x, const struct nw_call *c)
{
	const struct nw_nccl *nc = x->nc;
	int to = (x->rank + 1) % x->n, from = (x->rank - 1 + x->n) % x->n;
	if (c->pair) {
		to = from = nw_call_pair_peer(c, x->rank);
		if (to < 0)
			return 0;
	}
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	if (!rc)
		rc = nc->pfn_ncclSend(x->s, x->cnt, x->t, to, x->comm, x->st);
	if (!rc)
		rc = nc->pfn_ncclRecv(x->r, x->cnt, x->t, from, x->comm, x->st);
	if (!rc)
		rc = nc->pfn_ncclGroupEnd();
	return rc;
}

/* alltoall before NCCL 2.28: a send to and a receive from every rank, as one group. */
static nw_ncclResult_t alltoall_p2p(const struct side *x)
{
	const struct nw_nccl *nc = x->nc;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	for (int k = 0; k < x->n && !rc; k++) {
		rc = nc->pfn_ncclSend(x->s + (size_t)k * x->cnt * x->es, x->cnt, x->t, k, x->comm, x->st);
		if (!rc)
			rc = nc->pfn_ncclRecv(x->r + (size_t)k * x->cnt * x->es, x->cnt, x->t, k, x->comm, x->st);
	}
	if (!rc)
		rc = nc->pfn_ncclGroupEnd();
	return rc;
}

/* gather before NCCL 2.28: every rank sends to the root, which receives each rank's chunk. */
static nw_ncclResult_t gather_p2p(const struct side *x, int root)
{
	const struct nw_nccl *nc = x->nc;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	if (!rc)
		rc = nc->pfn_ncclSend(x->s, x->cnt, x->t, root, x->comm, x->st);
	for (int k = 0; k < x->n && !rc && x->rank == root; k++)
		rc = nc->pfn_ncclRecv(x->r + (size_t)k * x->cnt * x->es, x->cnt, x->t, k, x->comm, x->st);
	if (!rc)
		rc = nc->pfn_ncclGroupEnd();
	return rc;
}

/* scatter before NCCL 2.28: the root sends each rank its chunk, every rank receives from the root. */
static nw_ncclResult_t scatter_p2p(const struct side *x, int root)
{
	const struct nw_nccl *nc = x->nc;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	for (int k = 0; k < x->n && !rc && x->rank == root; k++)
		rc = nc->pfn_ncclSend(x->s + (size_t)k * x->cnt * x->es, x->cnt, x->t, k, x->comm, x->st);
	if (!rc)
		rc = nc->pfn_ncclRecv(x->r, x->cnt, x->t, root, x->comm, x->st);
	if (!rc)
		rc = nc->pfn_ncclGroupEnd();
	return rc;
}

/*
 * alltoallv (nccl-tests 2.19): to and from every rank, the per-peer counts
 * of nw_alltoallv_count, packed in rank order on both sides, as one group.
 */
static nw_ncclResult_t alltoallv_p2p(const struct side *x)
{
	const struct nw_nccl *nc = x->nc;
	const char *s = x->s;
	char *r = x->r;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	for (int k = 0; k < x->n && !rc; k++) {
		size_t sc = nw_alltoallv_count(x->cnt, x->es, x->n, x->rank, k);
		size_t rcnt = nw_alltoallv_count(x->cnt, x->es, x->n, k, x->rank);
		if (sc)
			rc = nc->pfn_ncclSend(s, sc, x->t, k, x->comm, x->st);
		if (!rc && rcnt)
			rc = nc->pfn_ncclRecv(r, rcnt, x->t, k, x->comm, x->st);
		s += sc * x->es;
		r += rcnt * x->es;
	}
	if (!rc)
		rc = nc->pfn_ncclGroupEnd();
	return rc;
}

/* The bytes of the value v (1 or 2) as type t, for ncclRedOpCreatePreMulSum's host scalar. */
static void scalar_bytes(enum nw_dtype t, int v, unsigned char out[8])
{
	memset(out, 0, 8);
	uint64_t u = (uint64_t)v;
	float f = (float)v;
	double d = v;
	switch (t) {
	case NW_HALF: u = v == 2 ? 0x4000 : 0x3c00; break;
	case NW_BFLOAT16: u = v == 2 ? 0x4000 : 0x3f80; break;
	case NW_FP8E4M3: u = v == 2 ? 0x40 : 0x38; break;
	case NW_FP8E5M2: u = v == 2 ? 0x40 : 0x3c; break;
	case NW_FLOAT: memcpy(out, &f, sizeof(f)); return;
	case NW_DOUBLE: memcpy(out, &d, sizeof(d)); return;
	default: break; /* integers: v in the low bytes (little-endian) */
	}
	for (int k = 0; k < 8; k++)
		out[k] = (unsigned char)(u >> (8 * k));
}

/*
 * The NCCL reduction op of call c on local rank i: the built-in one, or
 * for mulsum the rank's pre-multiplied sum for c's type, made on its
 * communicator the first time it is needed (scalar 1 on even ranks, 2 on
 * odd ones, as nccl-tests) and kept until the communicator goes. 0, or -1
 * with err.
 */
static int redop_of(struct nw_backend *be, int i, const struct nw_call *c, int *op, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	*op = (int)c->redop;
	if (c->redop != NW_MULSUM || !nw_coll_get(c->op)->has_redop)
		return 0;
	if (!p->have_premul[i][c->dtype]) {
		unsigned char scalar[8];
		scalar_bytes(c->dtype, nw_mulsum_scalar(be->rank0 + i), scalar);
		nw_ncclResult_t rc = p->nc->pfn_ncclRedOpCreatePreMulSum(&p->premul[i][c->dtype], scalar, c->dtype,
		                                                          NW_NCCL_SCALAR_HOST_IMMEDIATE, p->comm[i]);
		if (rc)
			return bn_nccl_fail(p, rc, i, "ncclRedOpCreatePreMulSum (-o mulsum)", err, errlen);
		p->have_premul[i][c->dtype] = 1;
	}
	*op = p->premul[i][c->dtype];
	return 0;
}

void bn_premul_release(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	for (int i = 0; i < be->nlocal; i++)
		for (int t = 0; t < NW_NDTYPES; t++)
			if (p->have_premul[i][t]) {
				if (p->comm[i])
					p->nc->pfn_ncclRedOpDestroy(p->premul[i][t], p->comm[i]);
				p->have_premul[i][t] = 0;
			}
}

/* Enqueue call c for local rank i on its stream. 0, or -1 with err naming the collective. */
static int one_call(struct nw_backend *be, int i, const struct nw_call *c, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_nccl *nc = p->nc;
	int op;
	if (redop_of(be, i, c, &op, err, errlen))
		return -1;
	size_t soff, roff;
	struct side x = { .nc = nc, .cnt = (size_t)c->count, .es = nw_dtype_size(c->dtype), .t = c->dtype,
	                  .rank = be->rank0 + i, .n = be->nranks, .comm = p->comm[i], .st = p->stream[i] };
	nw_call_offsets(c, x.rank, &soff, &roff);
	x.s = (const char *)(uintptr_t)(c->inplace ? p->recv[i] : p->send[i]) + soff;
	x.r = (char *)(uintptr_t)p->recv[i] + roff;
	nw_ncclResult_t rc;
	switch (c->op) {
	case NW_ALL_REDUCE: rc = nc->pfn_ncclAllReduce(x.s, x.r, x.cnt, x.t, op, x.comm, x.st); break;
	case NW_ALL_GATHER: rc = nc->pfn_ncclAllGather(x.s, x.r, x.cnt, x.t, x.comm, x.st); break;
	case NW_REDUCE_SCATTER: rc = nc->pfn_ncclReduceScatter(x.s, x.r, x.cnt, x.t, op, x.comm, x.st); break;
	case NW_BROADCAST: rc = nc->pfn_ncclBroadcast(x.s, x.r, x.cnt, x.t, c->root, x.comm, x.st); break;
	case NW_REDUCE: rc = nc->pfn_ncclReduce(x.s, x.r, x.cnt, x.t, op, c->root, x.comm, x.st); break;
	case NW_SENDRECV: rc = sendrecv(&x, c); break;
	case NW_ALLTOALLV: rc = alltoallv_p2p(&x); break;
	/* alltoall, gather and scatter came with NCCL 2.28; before, grouped send/recv do the same */
	case NW_ALLTOALL:
		rc = nc->pfn_ncclAlltoAll ? nc->pfn_ncclAlltoAll(x.s, x.r, x.cnt, x.t, x.comm, x.st)
		                          : alltoall_p2p(&x);
		break;
	case NW_GATHER:
		rc = nc->pfn_ncclGather ? nc->pfn_ncclGather(x.s, x.r, x.cnt, x.t, c->root, x.comm, x.st)
		                        : gather_p2p(&x, c->root);
		break;
	case NW_SCATTER:
		rc = nc->pfn_ncclScatter ? nc->pfn_ncclScatter(x.s, x.r, x.cnt, x.t, c->root, x.comm, x.st)
		                         : scatter_p2p(&x, c->root);
		break;
	default:
		NW_BUG("unknown op %d", c->op);
	}
	if (rc)
		return bn_nccl_fail(p, rc, i, nw_coll_get(c->op)->name, err, errlen);
	return 0;
}

/*
 * hypercube (nccl-tests 2.19) for local ranks [first, first + n): its own
 * chunk first (a send to itself, out of place), then one group per step,
 * mask = 1, 2, 4 ...: every rank swaps the mask chunks it has gathered with
 * rank ^ mask. Steps are groups of their own across the local ranks, so a
 * step never runs before the one whose data it sends. 0, or -1 with err.
 */
static int launch_hypercube(struct nw_backend *be, int first, int n, const struct nw_call *c, char *err,
                            size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_nccl *nc = p->nc;
	size_t es = nw_dtype_size(c->dtype), chunk = (size_t)c->count * es;
	for (int mask = c->inplace ? 1 : 0; mask < be->nranks; mask = mask ? mask << 1 : 1) {
		nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
		for (int i = first; i < first + n && !rc; i++) {
			int rank = be->rank0 + i, peer = mask ? rank ^ mask : rank;
			size_t soff, roff;
			nw_call_offsets(c, rank, &soff, &roff);
			char *r = (char *)(uintptr_t)p->recv[i] + roff;
			const char *s = mask ? r + (size_t)(rank & ~(mask - 1)) * chunk
			                     : (const char *)(uintptr_t)p->send[i] + soff;
			char *into = r + (size_t)(mask ? (rank & ~(mask - 1)) ^ mask : rank) * chunk;
			size_t cnt = (size_t)c->count * (size_t)(mask ? mask : 1);
			rc = nc->pfn_ncclSend(s, cnt, c->dtype, peer, p->comm[i], p->stream[i]);
			if (!rc)
				rc = nc->pfn_ncclRecv(into, cnt, c->dtype, peer, p->comm[i], p->stream[i]);
		}
		nw_ncclResult_t end = nc->pfn_ncclGroupEnd();
		if (rc || end)
			return bn_nccl_fail(p, rc ? rc : end, first, "hypercube", err, errlen);
	}
	return 0;
}

/* Enqueue agg calls for local ranks [first, first + n) as one group (when there is more than one call). */
static int launch_part(struct nw_backend *be, int first, int n, const struct nw_call *c, int agg, char *err,
                       size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	int grouped = n > 1 || agg > 1;
	nw_ncclResult_t rc;
	if (c->op == NW_HYPERCUBE) {
		for (int a = 0; a < agg; a++)
			if (launch_hypercube(be, first, n, c, err, errlen))
				return -1;
		return 0;
	}
	if (grouped && (rc = p->nc->pfn_ncclGroupStart()) != 0)
		return bn_nccl_fail(p, rc, -1, "ncclGroupStart", err, errlen);
	for (int a = 0; a < agg; a++)
		for (int i = first; i < first + n; i++)
			if (one_call(be, i, c, err, errlen)) {
				if (grouped)
					p->nc->pfn_ncclGroupEnd();
				return -1;
			}
	if (grouped && (rc = p->nc->pfn_ncclGroupEnd()) != 0)
		return bn_nccl_fail(p, rc, first, nw_coll_get(c->op)->name, err, errlen);
	return 0;
}

/* Thread k's share of the current piece of work: its ranks, iters times. */
static int run_part(struct nw_backend *be, int k, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	struct nw_call c = *p->job.c;
	size_t base = c.shift;
	for (int it = 0; it < p->job.iters; it++) {
		if (p->job.iters > 1)
			c.shift = base + p->job.stride * ((size_t)it % p->job.steps);
		if (launch_part(be, k * p->per, p->per, &c, p->job.agg, err, errlen))
			return -1;
	}
	return 0;
}

struct worker_arg {
	struct nw_backend *be;
	int k;
};

static void *worker(void *argp)
{
	struct worker_arg a = *(struct worker_arg *)argp;
	free(argp);
	struct bn_priv *p = bn_p(a.be);
	p->cu->pfn_cuCtxSetCurrent(p->ctx[a.k * p->per]);
	unsigned seen = 0;
	for (;;) {
		unsigned g;
		int spins = 0;
		while ((g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE)) == seen) {
			if (++spins < 20000) {
				sched_yield();
				continue;
			}
			pthread_mutex_lock(&p->mu);
			p->sleepers++;
			while (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen)
				pthread_cond_wait(&p->cv, &p->mu);
			p->sleepers--;
			pthread_mutex_unlock(&p->mu);
		}
		seen = g;
		if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
			return NULL;
		p->trc[a.k] = run_part(a.be, a.k, p->terr[a.k], sizeof(p->terr[a.k]));
		__atomic_add_fetch(&p->done, 1, __ATOMIC_RELEASE);
	}
}

/* Hand the current job to the worker threads. */
static void wake_workers(struct bn_priv *p)
{
	__atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->mu);
	__atomic_add_fetch(&p->gen, 1, __ATOMIC_RELEASE);
	if (p->sleepers)
		pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Run the job set in p->job on every thread (this one being thread 0); the first error wins. */
static int run_job(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (p->nthreads == 1)
		return run_part(be, 0, err, errlen);
	wake_workers(p);
	int rc = run_part(be, 0, err, errlen);
	while (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < p->nthreads - 1)
		sched_yield();
	for (int k = 1; k < p->nthreads; k++)
		if (p->trc[k] && !rc) {
			rc = -1;
			nw_seterr(err, errlen, "thread %d: %s", k, p->terr[k]);
		}
	return rc;
}

int bn_launch(struct nw_backend *be, const struct nw_call *c, int agg, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	p->job = (struct bn_work){ .c = c, .agg = agg, .iters = 1, .stride = 0, .steps = 1 };
	return run_job(be, err, errlen);
}

/* iters launches, the buffers shifted by stride x (it % steps) bytes; each thread runs its own loop. */
int bn_launch_many(struct nw_backend *be, const struct nw_call *c, int agg, int iters, size_t stride,
                          size_t steps, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	p->job = (struct bn_work){ .c = c, .agg = agg, .iters = iters, .stride = stride, .steps = steps ? steps : 1 };
	return run_job(be, err, errlen);
}

void bn_stop_workers(struct bn_priv *p)
{
	if (!p->nth_started)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	wake_workers(p);
	for (int k = 0; k < p->nth_started; k++)
		pthread_join(p->th[k], NULL);
	p->nth_started = 0;
}

static void abort_all(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	if (p->aborted)
		return;
	p->aborted = 1;
	for (int i = 0; i < be->nlocal; i++)
		if (p->comm[i])
			p->nc->pfn_ncclCommAbort(p->comm[i]);
	for (int i = 0; i < be->nlocal; i++)
		p->comm[i] = NULL;
}

/*
 * The message of a collective not done within -T on the GPUs in waiting.
 * With other processes, a roll call first names the ranks that no longer
 * answer (stopped, dead or unreachable): every rank still running times
 * out on the same collective and takes part.
 */
static void timeout_message(struct nw_backend *be, const char *what, double timeout_s, const char *waiting,
                            char *err, size_t errlen)
{
	char who[NW_ERRLEN];
	if (be->group->size > 1 && nw_group_roll_call(be->group, who, sizeof(who)) != 0)
		nw_seterr(err, errlen, "%s did not finish within %g s (-T) on GPU %s; a roll call of the ranks: %s",
		          what, timeout_s, waiting, who);
	else
		nw_seterr(err, errlen,
		          "%s did not finish within %g s (-T) on GPU %s; %s: look at NCCL_DEBUG=WARN; raise -T if the "
		          "size is simply slow here", what, timeout_s, waiting,
		          be->group->size > 1 ? "every rank still answers, so NCCL or the link is stuck"
		                              : "a GPU or the link between them is stuck");
}

int bn_wait(struct nw_backend *be, double timeout_s, const char *what, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	int done[NW_MAX_LOCAL] = { 0 };
	int left = be->nlocal;
	double start = nw_now();
	unsigned spins = 0;
	while (left) {
		for (int i = 0; i < be->nlocal; i++) {
			if (done[i])
				continue;
			/* -y 1: the NULL stream is the current context's */
			if (p->stream_null && bn_set_ctx(be, i, err, errlen))
				return -1;
			nw_CUresult r = p->cu->pfn_cuStreamQuery(p->stream[i]);
			if (r == NW_CUDA_SUCCESS) {
				done[i] = 1;
				left--;
				continue;
			}
			if (r != NW_CUDA_ERROR_NOT_READY) {
				bn_cu_fail(p, r, p->dev[i], what, err, errlen);
				abort_all(be);
				return -1;
			}
			nw_ncclResult_t ae = 0;
			if (p->nc->pfn_ncclCommGetAsyncError(p->comm[i], &ae) == 0 && ae != 0 && ae != NW_NCCL_IN_PROGRESS) {
				bn_nccl_fail(p, ae, i, what, err, errlen);
				abort_all(be);
				return -1;
			}
		}
		if (!left)
			break;
		if ((++spins & 1023) == 0 && timeout_s > 0 && nw_now() - start > timeout_s) {
			struct nw_strbuf waiting;
			nw_strbuf_init(&waiting);
			for (int i = 0; i < be->nlocal; i++)
				if (!done[i])
					nw_strbuf_addf(&waiting, "%s%d", waiting.len ? "," : "", (int)p->dev[i]);
			timeout_message(be, what, timeout_s, waiting.buf, err, errlen);
			nw_strbuf_release(&waiting);
			abort_all(be);
			return -1;
		}
		if ((spins & 63) == 0)
			sched_yield();
	}
	return 0;
}

/*
 * Capture mode. nccl-tests captures in thread-local mode through cudart;
 * through the driver API, NCCL 2.28.9's first capture on a communicator
 * was invalidated on an H200 in both global and thread-local mode and
 * succeeded in relaxed mode (gpu-check, 2026-11-30), so relaxed is the
 * default. NCCLWATCH_CAPTURE_MODE=global|thread chooses another.
 */
static int capture_mode(void)
{
	const char *m = getenv("NCCLWATCH_CAPTURE_MODE");
	if (m && !strcmp(m, "global"))
		return NW_CU_CAPTURE_MODE_GLOBAL;
	if (m && !strcmp(m, "thread"))
		return NW_CU_CAPTURE_MODE_THREAD_LOCAL;
	return NW_CU_CAPTURE_MODE_RELAXED;
}

int bn_graph_begin(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	int mode = capture_mode();
	for (int i = 0; i < be->nlocal; i++) {
		if (bn_set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuStreamBeginCapture(p->stream[i], mode);
		if (r)
			return bn_cu_fail(p, r, p->dev[i], "starting graph capture", err, errlen);
	}
	return 0;
}

void bn_graph_free(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	for (int i = 0; i < be->nlocal; i++)
		if (p->gexec[i]) {
			p->cu->pfn_cuGraphExecDestroy(p->gexec[i]);
			p->gexec[i] = NULL;
		}
}

int bn_graph_end(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	bn_graph_free(be);
	int rc = 0;
	for (int i = 0; i < be->nlocal; i++) {
		nw_CUgraph g = NULL;
		nw_CUresult r = p->cu->pfn_cuStreamEndCapture(p->stream[i], &g);
		if (!r)
			r = p->cu->pfn_cuGraphInstantiateWithFlags(&p->gexec[i], g, 0);
		if (g)
			p->cu->pfn_cuGraphDestroy(g);
		if (r && !rc)
			rc = bn_cu_fail(p, r, p->dev[i], "building the CUDA graph (-G)", err, errlen);
	}
	return rc;
}

int bn_graph_launch(struct nw_backend *be, int times, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	for (int t = 0; t < times; t++)
		for (int i = 0; i < be->nlocal; i++) {
			nw_CUresult r = p->cu->pfn_cuGraphLaunch(p->gexec[i], p->stream[i]);
			if (r)
				return bn_cu_fail(p, r, p->dev[i], "launching the CUDA graph", err, errlen);
		}
	return 0;
}

/* The launch threads of -t beyond this one (thread 0). 0, or -1 with err. */
int bn_start_workers(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	for (int k = 1; k < p->nthreads; k++) {
		struct worker_arg *a = nw_calloc(1, sizeof(*a));
		a->be = be;
		a->k = k;
		int e = pthread_create(&p->th[p->nth_started], NULL, worker, a);
		if (e) {
			free(a);
			return nw_seterr(err, errlen, "cannot start launch thread %d of %d (-t): %s", k, p->nthreads,
			                 strerror(e));
		}
		p->nth_started++;
	}
	return 0;
}
