/*
 * The NCCL backend: one communicator rank per local GPU, one non-blocking
 * stream each, NCCL and the driver loaded at run time. The local ranks are
 * driven from this thread (nccl-tests' -g), or split over -t threads, each
 * with its own ranks and its own ncclGroupStart/End, as nccl-tests' -t does:
 * thread 0 is the caller, the others wait for work handed over by a
 * generation counter (spinning briefly, then on a condition variable).
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/backend.h"
#include "gpu/cuda.h"
#include "gpu/nccl.h"
#include "util/util.h"

#define MAXLOCAL 64

struct nccl_priv {
	const struct nw_cu *cu;
	const struct nw_nccl *nc;
	nw_CUdevice dev[MAXLOCAL];
	nw_CUcontext ctx[MAXLOCAL];
	nw_CUstream stream[MAXLOCAL];
	nw_ncclComm_t comm[MAXLOCAL];
	nw_CUdeviceptr send[MAXLOCAL], recv[MAXLOCAL];
	nw_CUgraphExec gexec[MAXLOCAL];
	int reg;                /* -R: 0, 1 local, 2 symmetric; buffers then come from ncclMemAlloc */
	int parallel_init;      /* -p 1 */
	void *reg_send[MAXLOCAL], *reg_recv[MAXLOCAL]; /* -R 1: ncclCommRegister's handles, NULL none */
	nw_ncclWindow_t win_send[MAXLOCAL], win_recv[MAXLOCAL]; /* -R 2: the windows, NULL none */
	size_t bytes;
	void *pinned[16];
	int npinned;
	int aborted;
	/* -t: nthreads threads of per ranks each; work is handed over by gen */
	int nthreads, per;
	pthread_t th[MAXLOCAL];
	int nth_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned gen;           /* atomic: bumped for each piece of work (or stop) */
	int done;               /* atomic: worker threads finished with the current piece */
	int sleepers;           /* under mu: workers blocked on cv */
	int stop;
	struct work {
		const struct nw_call *c;
		int agg, iters;
		size_t stride, steps;
	} job;
	int trc[MAXLOCAL];      /* each thread's result for the current piece */
	char terr[MAXLOCAL][256];
};

static struct nccl_priv *P(struct nw_backend *be)
{
	return be->priv;
}

static int cu_fail(struct nccl_priv *p, nw_CUresult r, int gpu, const char *what, char *err, size_t errlen)
{
	char b[160];
	return nw_seterr(err, errlen, "GPU %d: %s failed: %s", gpu, what, nw_cuda_strerror(p->cu, r, b, sizeof(b)));
}

static int nccl_fail(struct nccl_priv *p, nw_ncclResult_t r, int local, const char *what, char *err, size_t errlen)
{
	char b[512];
	nw_nccl_strerror(p->nc, local >= 0 ? p->comm[local] : NULL, r, b, sizeof(b));
	return nw_seterr(err, errlen, "%s on GPU %d failed: %s", what, local >= 0 ? (int)p->dev[local] : -1, b);
}

static int set_ctx(struct nw_backend *be, int i, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	nw_CUresult r = p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
	return r ? cu_fail(p, r, p->dev[i], "selecting the device", err, errlen) : 0;
}

static void deregister_buffers(struct nw_backend *be);

static void free_buffers(struct nw_backend *be)
{
	struct nccl_priv *p = P(be);
	deregister_buffers(be);
	for (int i = 0; i < be->nlocal; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		nw_CUdeviceptr b[2] = { p->send[i], p->recv[i] };
		for (int k = 0; k < 2; k++) {
			if (b[k] && p->reg)
				p->nc->pfn_ncclMemFree((void *)(uintptr_t)b[k]);
			else if (b[k])
				p->cu->pfn_cuMemFree(b[k]);
		}
		p->send[i] = p->recv[i] = 0;
	}
	p->bytes = 0;
}

static int alloc_registered(struct nw_backend *be, size_t bytes, char *err, size_t errlen);
static int mem_snapshot(struct nw_backend *be, int64_t *free_b);
static int be_mem_free(struct nw_backend *be, int64_t *free_b, char *err, size_t errlen);

static int be_alloc(struct nw_backend *be, size_t bytes, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	free_buffers(be);
	bytes = (bytes + 4095) & ~(size_t)4095;
	for (int i = 0; i < be->nlocal; i++) {
		if (set_ctx(be, i, err, errlen))
			return -1;
		size_t freeb = 0, total = 0;
		p->cu->pfn_cuMemGetInfo(&freeb, &total);
		if (freeb < 2 * bytes + (256u << 20))
			return nw_seterr(err, errlen,
			                 "too little GPU memory on GPU %d: the sweep needs 2 x %.2f GiB (send and receive "
			                 "buffers for -e), %.2f GiB is free of %.2f GiB; lower -e or free the GPU",
			                 (int)p->dev[i], bytes / 1073741824.0, freeb / 1073741824.0, total / 1073741824.0);
	}
	int64_t before[MAXLOCAL], after[MAXLOCAL];
	mem_snapshot(be, before);
	if (p->reg && alloc_registered(be, bytes, err, errlen))
		return -1;
	for (int i = 0; i < be->nlocal && !p->reg; i++) {
		if (set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuMemAlloc(&p->send[i], bytes);
		if (!r)
			r = p->cu->pfn_cuMemAlloc(&p->recv[i], bytes);
		if (r)
			return cu_fail(p, r, p->dev[i], "allocating buffers", err, errlen);
	}
	for (int i = 0; i < be->nlocal; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		/* a defined value everywhere (1.0f); patterns are written before checks */
		p->cu->pfn_cuMemsetD32(p->send[i], 0x3f800000u, bytes / 4);
		p->cu->pfn_cuMemsetD32(p->recv[i], 0x3f800000u, bytes / 4);
	}
	p->bytes = bytes;
	mem_snapshot(be, after);
	be->mem_user = 0;
	for (int i = 0; i < be->nlocal; i++)
		if (before[i] - after[i] > be->mem_user)
			be->mem_user = before[i] - after[i];
	return 0;
}

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

/* Enqueue call c for local rank i on its stream. 0, or -1 with err naming the collective. */
static int one_call(struct nw_backend *be, int i, const struct nw_call *c, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	const struct nw_nccl *nc = p->nc;
	size_t soff, roff;
	struct side x = { .nc = nc, .cnt = (size_t)c->count, .es = nw_dtype_size(c->dtype), .t = c->dtype,
	                  .rank = be->rank0 + i, .n = be->nranks, .comm = p->comm[i], .st = p->stream[i] };
	nw_call_offsets(c, x.rank, &soff, &roff);
	x.s = (const char *)(uintptr_t)(c->inplace ? p->recv[i] : p->send[i]) + soff;
	x.r = (char *)(uintptr_t)p->recv[i] + roff;
	nw_ncclResult_t rc;
	switch (c->op) {
	case NW_ALL_REDUCE: rc = nc->pfn_ncclAllReduce(x.s, x.r, x.cnt, x.t, c->redop, x.comm, x.st); break;
	case NW_ALL_GATHER: rc = nc->pfn_ncclAllGather(x.s, x.r, x.cnt, x.t, x.comm, x.st); break;
	case NW_REDUCE_SCATTER: rc = nc->pfn_ncclReduceScatter(x.s, x.r, x.cnt, x.t, c->redop, x.comm, x.st); break;
	case NW_BROADCAST: rc = nc->pfn_ncclBroadcast(x.s, x.r, x.cnt, x.t, c->root, x.comm, x.st); break;
	case NW_REDUCE: rc = nc->pfn_ncclReduce(x.s, x.r, x.cnt, x.t, c->redop, c->root, x.comm, x.st); break;
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
		return nw_seterr(err, errlen, "internal: unknown op %d", c->op);
	}
	if (rc)
		return nccl_fail(p, rc, i, nw_coll_get(c->op)->name, err, errlen);
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
	struct nccl_priv *p = P(be);
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
			return nccl_fail(p, rc ? rc : end, first, "hypercube", err, errlen);
	}
	return 0;
}

/* Enqueue agg calls for local ranks [first, first + n) as one group (when there is more than one call). */
static int launch_part(struct nw_backend *be, int first, int n, const struct nw_call *c, int agg, char *err,
                       size_t errlen)
{
	struct nccl_priv *p = P(be);
	int grouped = n > 1 || agg > 1;
	nw_ncclResult_t rc;
	if (c->op == NW_HYPERCUBE) {
		for (int a = 0; a < agg; a++)
			if (launch_hypercube(be, first, n, c, err, errlen))
				return -1;
		return 0;
	}
	if (grouped && (rc = p->nc->pfn_ncclGroupStart()) != 0)
		return nccl_fail(p, rc, -1, "ncclGroupStart", err, errlen);
	for (int a = 0; a < agg; a++)
		for (int i = first; i < first + n; i++)
			if (one_call(be, i, c, err, errlen)) {
				if (grouped)
					p->nc->pfn_ncclGroupEnd();
				return -1;
			}
	if (grouped && (rc = p->nc->pfn_ncclGroupEnd()) != 0)
		return nccl_fail(p, rc, first, nw_coll_get(c->op)->name, err, errlen);
	return 0;
}

/* Thread k's share of the current piece of work: its ranks, iters times. */
static int run_part(struct nw_backend *be, int k, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
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
	struct nccl_priv *p = P(a.be);
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
static void wake_workers(struct nccl_priv *p)
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
	struct nccl_priv *p = P(be);
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

static int be_launch(struct nw_backend *be, const struct nw_call *c, int agg, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	p->job = (struct work){ .c = c, .agg = agg, .iters = 1, .stride = 0, .steps = 1 };
	return run_job(be, err, errlen);
}

/* iters launches, the buffers shifted by stride x (it % steps) bytes; each thread runs its own loop. */
static int be_launch_many(struct nw_backend *be, const struct nw_call *c, int agg, int iters, size_t stride,
                          size_t steps, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	p->job = (struct work){ .c = c, .agg = agg, .iters = iters, .stride = stride, .steps = steps ? steps : 1 };
	return run_job(be, err, errlen);
}

static void stop_workers(struct nccl_priv *p)
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
	struct nccl_priv *p = P(be);
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

static int be_wait(struct nw_backend *be, double timeout_s, const char *what, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	int done[MAXLOCAL] = { 0 };
	int left = be->nlocal;
	double start = nw_now();
	unsigned spins = 0;
	while (left) {
		for (int i = 0; i < be->nlocal; i++) {
			if (done[i])
				continue;
			nw_CUresult r = p->cu->pfn_cuStreamQuery(p->stream[i]);
			if (r == NW_CUDA_SUCCESS) {
				done[i] = 1;
				left--;
				continue;
			}
			if (r != NW_CUDA_ERROR_NOT_READY) {
				cu_fail(p, r, p->dev[i], what, err, errlen);
				abort_all(be);
				return -1;
			}
			nw_ncclResult_t ae = 0;
			if (p->nc->pfn_ncclCommGetAsyncError(p->comm[i], &ae) == 0 && ae != 0 && ae != NW_NCCL_IN_PROGRESS) {
				nccl_fail(p, ae, i, what, err, errlen);
				abort_all(be);
				return -1;
			}
		}
		if (!left)
			break;
		if ((++spins & 1023) == 0 && timeout_s > 0 && nw_now() - start > timeout_s) {
			char waiting[128] = "";
			size_t u = 0;
			for (int i = 0; i < be->nlocal && u < sizeof(waiting) - 8; i++)
				if (!done[i])
					u += (size_t)snprintf(waiting + u, sizeof(waiting) - u, "%s%d", u ? "," : "", (int)p->dev[i]);
			timeout_message(be, what, timeout_s, waiting, err, errlen);
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

static int be_graph_begin(struct nw_backend *be, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	int mode = capture_mode();
	for (int i = 0; i < be->nlocal; i++) {
		if (set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuStreamBeginCapture(p->stream[i], mode);
		if (r)
			return cu_fail(p, r, p->dev[i], "starting graph capture", err, errlen);
	}
	return 0;
}

static void be_graph_free(struct nw_backend *be)
{
	struct nccl_priv *p = P(be);
	for (int i = 0; i < be->nlocal; i++)
		if (p->gexec[i]) {
			p->cu->pfn_cuGraphExecDestroy(p->gexec[i]);
			p->gexec[i] = NULL;
		}
}

static int be_graph_end(struct nw_backend *be, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	be_graph_free(be);
	int rc = 0;
	for (int i = 0; i < be->nlocal; i++) {
		nw_CUgraph g = NULL;
		nw_CUresult r = p->cu->pfn_cuStreamEndCapture(p->stream[i], &g);
		if (!r)
			r = p->cu->pfn_cuGraphInstantiateWithFlags(&p->gexec[i], g, 0);
		if (g)
			p->cu->pfn_cuGraphDestroy(g);
		if (r && !rc)
			rc = cu_fail(p, r, p->dev[i], "building the CUDA graph (-G)", err, errlen);
	}
	return rc;
}

static int be_graph_launch(struct nw_backend *be, int times, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	for (int t = 0; t < times; t++)
		for (int i = 0; i < be->nlocal; i++) {
			nw_CUresult r = p->cu->pfn_cuGraphLaunch(p->gexec[i], p->stream[i]);
			if (r)
				return cu_fail(p, r, p->dev[i], "launching the CUDA graph", err, errlen);
		}
	return 0;
}

static nw_CUdeviceptr bufptr(struct nccl_priv *p, int i, enum nw_buf b)
{
	return b == NW_BUF_SEND ? p->send[i] : p->recv[i];
}

static int be_write(struct nw_backend *be, int i, enum nw_buf b, size_t off, const void *src, size_t n,
                    char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	if (set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyHtoD(bufptr(p, i, b) + off, src, n);
	return r ? cu_fail(p, r, p->dev[i], "copying to the GPU", err, errlen) : 0;
}

static int be_read(struct nw_backend *be, int i, enum nw_buf b, size_t off, void *dst, size_t n,
                   char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	if (set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyDtoH(dst, bufptr(p, i, b) + off, n);
	return r ? cu_fail(p, r, p->dev[i], "copying from the GPU", err, errlen) : 0;
}

static int be_copy(struct nw_backend *be, int i, size_t soff, size_t doff, size_t n, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	if (set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyDtoD(p->recv[i] + doff, p->send[i] + soff, n);
	if (!r)
		r = p->cu->pfn_cuCtxSynchronize();
	return r ? cu_fail(p, r, p->dev[i], "preparing in-place data", err, errlen) : 0;
}

static int be_fill32(struct nw_backend *be, int i, enum nw_buf b, uint32_t word, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	if (set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemsetD32(bufptr(p, i, b), word, p->bytes / 4);
	if (!r)
		r = p->cu->pfn_cuCtxSynchronize();
	return r ? cu_fail(p, r, p->dev[i], "filling a buffer", err, errlen) : 0;
}

/* One pinned staging buffer of 64 MiB (n == 0) or larger on request; kept until destroy. */
static void *be_host_alloc(struct nw_backend *be, size_t n)
{
	struct nccl_priv *p = P(be);
	if (n == 0) {
		if (p->npinned)
			return p->pinned[0];
		n = 64u << 20;
	}
	if (p->npinned >= (int)NW_ARRAY_LEN(p->pinned))
		return NULL;
	void *h = NULL;
	if (p->cu->pfn_cuMemHostAlloc(&h, n, 1 /* portable */) != 0)
		return NULL;
	p->pinned[p->npinned++] = h;
	return h;
}

static void be_destroy(struct nw_backend *be)
{
	if (!be)
		return;
	struct nccl_priv *p = P(be);
	if (p) {
		stop_workers(p);
		be_graph_free(be);
		deregister_buffers(be); /* while the communicators live */
		if (!p->aborted)
			for (int i = 0; i < be->nlocal; i++)
				if (p->comm[i]) {
					p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
					p->nc->pfn_ncclCommDestroy(p->comm[i]);
				}
		free_buffers(be);
		for (int i = 0; i < p->npinned; i++)
			p->cu->pfn_cuMemFreeHost(p->pinned[i]);
		for (int i = 0; i < be->nlocal; i++) {
			if (p->stream[i])
				p->cu->pfn_cuStreamDestroy(p->stream[i]);
			if (p->ctx[i])
				p->cu->pfn_cuDevicePrimaryCtxRelease(p->dev[i]);
		}
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
	}
	free(be);
}

/*
 * NCCL_TESTS_SPLIT: every local communicator is split by color (keyed by
 * global rank, so this process's ranks stay in order) and replaced by its
 * part; rank0 and nranks become this process's place in the group.
 * Collective over every rank. 0, or -1 with err.
 */
static int be_split(struct nw_backend *be, int color, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	const struct nw_nccl *nc = p->nc;
	if (!nc->pfn_ncclCommSplit || !nc->pfn_ncclCommUserRank || !nc->pfn_ncclCommCount)
		return nw_seterr(err, errlen, "NCCL_TESTS_SPLIT needs ncclCommSplit, which NCCL %s lacks (it came with "
		                 "2.18); use a newer NCCL (--nccl-lib PATH) or unset NCCL_TESTS_SPLIT", nc->version);
	nw_ncclComm_t sub[MAXLOCAL] = { 0 };
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	for (int i = 0; i < be->nlocal && !rc; i++) {
		if (set_ctx(be, i, err, errlen)) {
			nc->pfn_ncclGroupEnd();
			return -1;
		}
		rc = nc->pfn_ncclCommSplit(p->comm[i], color, be->rank0 + i, &sub[i], NULL);
	}
	nw_ncclResult_t end = nc->pfn_ncclGroupEnd();
	int rank = 0, n = 0;
	if (!rc && !end)
		rc = nc->pfn_ncclCommUserRank(sub[0], &rank);
	if (!rc && !end)
		rc = nc->pfn_ncclCommCount(sub[0], &n);
	if (rc || end) {
		for (int i = 0; i < be->nlocal; i++)
			if (sub[i])
				nc->pfn_ncclCommDestroy(sub[i]);
		return nccl_fail(p, rc ? rc : end, 0, "ncclCommSplit (NCCL_TESTS_SPLIT)", err, errlen);
	}
	for (int i = 0; i < be->nlocal; i++) {
		nc->pfn_ncclCommDestroy(p->comm[i]);
		p->comm[i] = sub[i];
	}
	be->rank0 = rank;
	be->nranks = n;
	return 0;
}

static const struct nw_backend_ops nccl_ops = {
	.alloc = be_alloc,
	.launch = be_launch,
	.launch_many = be_launch_many,
	.wait = be_wait,
	.graph_begin = be_graph_begin,
	.graph_end = be_graph_end,
	.graph_launch = be_graph_launch,
	.graph_free = be_graph_free,
	.write = be_write,
	.read = be_read,
	.copy = be_copy,
	.fill32 = be_fill32,
	.host_alloc = be_host_alloc,
	.destroy = be_destroy,
	.split = be_split,
	.mem_free = be_mem_free,
};

/* Which GPUs this process drives: nthreads threads (-t) of per GPUs (-g) each, ordinals first to first + ngpus - 1. */
struct gpu_plan {
	int nthreads, per, ngpus, first;
};

/* Open the driver and NCCL; *visible gets the GPUs the driver sees. 0, or -1 with err saying what to do. */
static int load_libs(const struct nw_nccl_open_opts *o, const struct nw_cu **cu, const struct nw_nccl **nc,
                     int *visible, char *err, size_t errlen)
{
	char e2[NW_ERRLEN];
	*cu = nw_cuda_load(e2, sizeof(e2));
	if (!*cu)
		return nw_seterr(err, errlen, "%s. Without a GPU, 'bench --backend mpi' measures host collectives "
		                 "over MPI instead", e2);
	*nc = nw_nccl_load(o->nccl_lib, err, errlen);
	if (!*nc)
		return -1;
	*visible = 0;
	(*cu)->pfn_cuDeviceGetCount(visible);
	if (*visible < 1)
		return nw_seterr(err, errlen, "no GPU visible to the CUDA driver (CUDA_VISIBLE_DEVICES='%s'); "
		                 "check nvidia-smi and the container's GPU access", getenv("CUDA_VISIBLE_DEVICES") ?
		                 getenv("CUDA_VISIBLE_DEVICES") : "unset");
	return 0;
}

/* Decide this process's GPUs from -t, -g and its local rank; -1 with err when too few are visible. */
static int plan_gpus(const struct nw_group *g, const struct nw_nccl_open_opts *o, int visible, struct gpu_plan *pl,
                     char *err, size_t errlen)
{
	pl->nthreads = o->nthreads > 1 ? o->nthreads : 1;
	/* -g is per thread (nccl-tests' meaning); alone and without -t or -g: every visible GPU */
	pl->per = o->ngpus > 0 ? o->ngpus : (g->size > 1 || pl->nthreads > 1 ? 1 : visible);
	pl->ngpus = pl->nthreads * pl->per;
	pl->first = g->local_rank * pl->ngpus;
	if (pl->ngpus > MAXLOCAL || pl->first + pl->ngpus > visible)
		return nw_seterr(err, errlen,
		                 "this process (local rank %d of %d) needs GPUs %d..%d (%d thread%s x %d GPU%s) but %d "
		                 "are visible; lower -t or -g, or start fewer processes per node", g->local_rank,
		                 g->local_size, pl->first, pl->first + pl->ngpus - 1, pl->nthreads,
		                 pl->nthreads == 1 ? "" : "s", pl->per, pl->per == 1 ? "" : "s", visible);
	return 0;
}

/* A backend for the plan, on no GPU yet (be_destroy frees it from here on); the caller owns it. */
static struct nw_backend *backend_new(struct nw_group *g, const struct nw_cu *cu, const struct nw_nccl *nc,
                                      const struct gpu_plan *pl)
{
	struct nw_backend *be = nw_calloc(1, sizeof(*be));
	struct nccl_priv *p = nw_calloc(1, sizeof(*p));
	be->ops = &nccl_ops;
	be->priv = p;
	be->name = "nccl";
	be->group = g;
	be->nlocal = pl->ngpus;
	be->nranks = g->size * pl->ngpus;
	be->rank0 = g->rank * pl->ngpus;
	be->graphs = 1;
	p->cu = cu;
	p->nc = nc;
	p->nthreads = pl->nthreads;
	p->per = pl->per;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (int t = 0; t < NW_NDTYPES; t++)
		be->dtype_ok[t] = 1;
	nw_strlcpy(be->nccl_version, nc->version, sizeof(be->nccl_version));
	nw_strlcpy(be->nccl_path, nc->where.path, sizeof(be->nccl_path));
	snprintf(be->cuda_driver, sizeof(be->cuda_driver), "%d.%d", cu->driver_version / 1000,
	         (cu->driver_version % 1000) / 10);
	char *dv = nw_read_file("/proc/driver/nvidia/version", 4096, NULL);
	if (dv) {
		char *k = strstr(dv, "Kernel Module");
		if (k && sscanf(k, "Kernel Module %31s", be->driver) != 1)
			be->driver[0] = '\0';
		free(dv);
	}
	return be;
}

/*
 * Each local rank's GPU (ordinals from first): what it can reduce (fp8
 * from compute capability 9.0, bfloat16 from 8.0), its primary context and
 * a non-blocking stream. 0, or -1 with err.
 */
static int open_devices(struct nw_backend *be, int first, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	const struct nw_cu *cu = p->cu;
	struct nw_cu_device info;
	for (int i = 0; i < be->nlocal; i++) {
		int ord = first + i;
		be->gpu[i] = ord;
		if (nw_cuda_device_info(cu, ord, &info, err, errlen))
			return -1;
		if (info.cc_major < 9)
			be->dtype_ok[NW_FP8E4M3] = be->dtype_ok[NW_FP8E5M2] = 0;
		if (info.cc_major < 8)
			be->dtype_ok[NW_BFLOAT16] = 0;
		if (i == 0)
			snprintf(be->gpus, sizeof(be->gpus), "%d x %s", be->nranks, info.name);
		nw_CUresult r = cu->pfn_cuDeviceGet(&p->dev[i], ord);
		if (!r)
			r = cu->pfn_cuDevicePrimaryCtxRetain(&p->ctx[i], p->dev[i]);
		if (!r)
			r = cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		if (!r)
			r = cu->pfn_cuStreamCreate(&p->stream[i], NW_CU_STREAM_NON_BLOCKING);
		if (r)
			return cu_fail(p, r, ord, "creating a context and stream", err, errlen);
	}
	return 0;
}

/* ncclConfig_t as nccl-tests 2.19.6 makes it: NCCL's defaults, with nvlinkCentricSched on 2.28+. */
static void default_config(const struct nw_nccl *nc, struct nw_ncclConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->magic = 0xcafebeef;
	cfg->version = (unsigned)(nc->version_code < 22809 ? nc->version_code : 22809);
	cfg->blocking = cfg->cgaClusterSize = cfg->minCTAs = cfg->maxCTAs = INT_MIN;
	cfg->splitShare = cfg->trafficClass = cfg->collnetEnable = cfg->CTAPolicy = INT_MIN;
	cfg->shrinkShare = cfg->nvlsCTAs = cfg->nChannelsPerNetPeer = INT_MIN;
	cfg->nvlinkCentricSched = 1; /* as nccl-tests does on 2.28+ */
}

/*
 * Local ranks [first, first + n) join the communicator of id, as one NCCL
 * group when there are several. 0, or -1 with err.
 */
static int init_range(struct nw_backend *be, int first, int n, const nw_ncclUniqueId *id, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	const struct nw_nccl *nc = p->nc;
	struct nw_ncclConfig cfg;
	default_config(nc, &cfg);
	int use_cfg = nc->pfn_ncclCommInitRankConfig && nc->version_code >= 22800;
	if (n > 1)
		nc->pfn_ncclGroupStart();
	for (int i = first; i < first + n; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		nw_ncclResult_t rc = use_cfg ? nc->pfn_ncclCommInitRankConfig(&p->comm[i], be->nranks, *id, be->rank0 + i, &cfg)
		                             : nc->pfn_ncclCommInitRank(&p->comm[i], be->nranks, *id, be->rank0 + i);
		if (rc) {
			if (n > 1)
				nc->pfn_ncclGroupEnd();
			return nccl_fail(p, rc, i, "creating the NCCL communicator", err, errlen);
		}
	}
	if (n > 1) {
		nw_ncclResult_t rc = nc->pfn_ncclGroupEnd();
		if (rc)
			return nccl_fail(p, rc, first, "creating the NCCL communicators", err, errlen);
	}
	return 0;
}

static int init_parallel(struct nw_backend *be, const nw_ncclUniqueId *id, char *err, size_t errlen);

/*
 * The communicators: rank 0's unique id goes to every process, then each
 * local GPU joins as one rank (one NCCL group when there are several; with
 * -p 1 and -t threads, each thread its own ranks at the same time). 0, or
 * -1 with err.
 */
static int init_comms(struct nw_backend *be, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	nw_ncclUniqueId id;
	memset(&id, 0, sizeof(id));
	if (be->group->rank == 0) {
		nw_ncclResult_t rc = p->nc->pfn_ncclGetUniqueId(&id);
		if (rc)
			return nccl_fail(p, rc, -1, "ncclGetUniqueId", err, errlen);
	}
	if (nw_group_bcast(be->group, &id, sizeof(id), 0, err, errlen))
		return -1;
	if (p->parallel_init && p->nthreads > 1)
		return init_parallel(be, &id, err, errlen);
	return init_range(be, 0, be->nlocal, &id, err, errlen);
}

/* --- -R (buffer registration), -M (memory report), -p (parallel init) --- */

/* Each local GPU's free memory into free_b[nlocal] (0 where the driver does not say). 0, or -1 with err. */
static int be_mem_free(struct nw_backend *be, int64_t *free_b, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	for (int i = 0; i < be->nlocal; i++) {
		size_t fr = 0, total = 0;
		if (set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuMemGetInfo(&fr, &total);
		if (r)
			return cu_fail(p, r, p->dev[i], "asking free memory (-M)", err, errlen);
		free_b[i] = (int64_t)fr;
	}
	return 0;
}

/* be_mem_free for the backend's own bookkeeping: zeros when the driver does not answer. */
static int mem_snapshot(struct nw_backend *be, int64_t *free_b)
{
	char e[NW_ERRLEN];
	int rc = be_mem_free(be, free_b, e, sizeof(e));
	if (rc)
		memset(free_b, 0, sizeof(*free_b) * (size_t)be->nlocal);
	return rc;
}

/* One local rank's send and recv buffers from ncclMemAlloc (memory NCCL can map for its peers). 0, or -1 with err. */
static int nccl_mem_alloc(struct nw_backend *be, int i, size_t bytes, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	void *sb = NULL, *rb = NULL;
	if (set_ctx(be, i, err, errlen))
		return -1;
	nw_ncclResult_t rc = p->nc->pfn_ncclMemAlloc(&sb, bytes);
	if (!rc)
		p->send[i] = (nw_CUdeviceptr)(uintptr_t)sb;
	if (!rc)
		rc = p->nc->pfn_ncclMemAlloc(&rb, bytes);
	if (!rc)
		p->recv[i] = (nw_CUdeviceptr)(uintptr_t)rb;
	return rc ? nccl_fail(p, rc, i, "ncclMemAlloc (-R)", err, errlen) : 0;
}

/*
 * -R, as nccl-tests does it: every local rank's buffers from ncclMemAlloc,
 * then registered with its communicator in one NCCL group (window
 * registration is collective): ncclCommRegister (-R 1) or
 * ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC (-R 2). The handles
 * stay in p until deregister_buffers. 0, or -1 with err.
 */
static int alloc_registered(struct nw_backend *be, size_t bytes, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	const struct nw_nccl *nc = p->nc;
	for (int i = 0; i < be->nlocal; i++)
		if (nccl_mem_alloc(be, i, bytes, err, errlen))
			return -1;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	int at = 0;
	for (; at < be->nlocal && !rc; at++) {
		void *sb = (void *)(uintptr_t)p->send[at], *rb = (void *)(uintptr_t)p->recv[at];
		p->cu->pfn_cuCtxSetCurrent(p->ctx[at]);
		if (p->reg == 2) {
			rc = nc->pfn_ncclCommWindowRegister(p->comm[at], sb, bytes, &p->win_send[at], NW_NCCL_WIN_COLL_SYMMETRIC);
			if (!rc)
				rc = nc->pfn_ncclCommWindowRegister(p->comm[at], rb, bytes, &p->win_recv[at],
				                                    NW_NCCL_WIN_COLL_SYMMETRIC);
		} else {
			rc = nc->pfn_ncclCommRegister(p->comm[at], sb, bytes, &p->reg_send[at]);
			if (!rc)
				rc = nc->pfn_ncclCommRegister(p->comm[at], rb, bytes, &p->reg_recv[at]);
		}
	}
	nw_ncclResult_t end = nc->pfn_ncclGroupEnd();
	if (rc || end)
		return nccl_fail(p, rc ? rc : end, at > 0 ? at - 1 : 0,
		                 p->reg == 2 ? "ncclCommWindowRegister (-R 2)" : "ncclCommRegister (-R 1)", err, errlen);
	return 0;
}

/* Undo alloc_registered's registrations (not the memory); nothing for communicators already gone. */
static void deregister_buffers(struct nw_backend *be)
{
	struct nccl_priv *p = P(be);
	for (int i = 0; i < be->nlocal; i++) {
		if (p->comm[i]) {
			p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
			void *h[2] = { p->reg_send[i], p->reg_recv[i] };
			nw_ncclWindow_t w[2] = { p->win_send[i], p->win_recv[i] };
			for (int k = 0; k < 2; k++) {
				if (h[k])
					p->nc->pfn_ncclCommDeregister(p->comm[i], h[k]);
				if (w[k])
					p->nc->pfn_ncclCommWindowDeregister(p->comm[i], w[k]);
			}
		}
		p->reg_send[i] = p->reg_recv[i] = NULL;
		p->win_send[i] = p->win_recv[i] = NULL;
	}
}

/* The highest -R the loaded NCCL can do: 1 from 2.19 (ncclCommRegister), 2 from 2.27 (windows). */
static int reg_max(const struct nw_nccl *nc)
{
	if (!nc->pfn_ncclMemAlloc || !nc->pfn_ncclMemFree || !nc->pfn_ncclCommRegister || !nc->pfn_ncclCommDeregister ||
	    nc->version_code < 21900)
		return 0;
	if (!nc->pfn_ncclCommWindowRegister || !nc->pfn_ncclCommWindowDeregister || nc->version_code < 22700)
		return 1;
	return 2;
}

struct init_arg {
	struct nw_backend *be;
	const nw_ncclUniqueId *id;
	int k, rc;
	char err[256];
};

static void *init_thread(void *v)
{
	struct init_arg *a = v;
	struct nccl_priv *p = P(a->be);
	a->rc = init_range(a->be, a->k * p->per, p->per, a->id, a->err, sizeof(a->err));
	return NULL;
}

/* -p 1: each of the -t threads creates its own ranks' communicators, all at once (nccl-tests' threadInit). */
static int init_parallel(struct nw_backend *be, const nw_ncclUniqueId *id, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
	struct init_arg *a = nw_calloc((size_t)p->nthreads, sizeof(*a));
	pthread_t *th = nw_calloc((size_t)p->nthreads, sizeof(*th));
	int started = 0, rc = 0;
	for (int k = 0; k < p->nthreads; k++) {
		a[k] = (struct init_arg){ .be = be, .id = id, .k = k };
		int e = pthread_create(&th[k], NULL, init_thread, &a[k]);
		if (e) {
			rc = nw_seterr(err, errlen, "cannot start init thread %d of %d (-p 1): %s", k, p->nthreads, strerror(e));
			break;
		}
		started++;
	}
	for (int k = 0; k < started; k++) {
		pthread_join(th[k], NULL);
		if (a[k].rc && !rc)
			rc = nw_seterr(err, errlen, "thread %d: %s", k, a[k].err);
	}
	free(th);
	free(a);
	return rc;
}

/* init_comms, and the device memory it took (-M's "Initialization"). */
static int init_comms_measured(struct nw_backend *be, char *err, size_t errlen)
{
	int64_t before[MAXLOCAL], after[MAXLOCAL];
	mem_snapshot(be, before);
	if (init_comms(be, err, errlen))
		return -1;
	mem_snapshot(be, after);
	be->mem_init = 0;
	for (int i = 0; i < be->nlocal; i++)
		if (before[i] - after[i] > be->mem_init)
			be->mem_init = before[i] - after[i];
	return 0;
}

/* The launch threads of -t beyond this one (thread 0). 0, or -1 with err. */
static int start_workers(struct nw_backend *be, char *err, size_t errlen)
{
	struct nccl_priv *p = P(be);
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

/*
 * Whether every rank got past loading the libraries and planning its GPUs
 * (failed: this one did not, err saying why). With a launcher, the ranks
 * exchange that before any of them waits on another, so that a job on
 * machines without a GPU fails once, on rank 0, without an abort. 0, -1
 * when the exchange itself failed, or NW_BACKEND_FAILED_ALL (see backend.h).
 */
static int agree_loaded(struct nw_group *g, int failed, char *err, size_t errlen)
{
	struct verdict {
		int failed;
		char why[600];
	} mine;
	if (g->size <= 1)
		return failed ? -1 : 0;
	memset(&mine, 0, sizeof(mine));
	mine.failed = failed;
	if (failed)
		nw_strlcpy(mine.why, err, sizeof(mine.why));
	struct verdict *all = nw_calloc((size_t)g->size, sizeof(*all));
	char e2[NW_ERRLEN];
	int rc = 0, first = -1, nfailed = 0;
	if (nw_group_allgather(g, &mine, all, sizeof(mine), e2, sizeof(e2)) != 0) {
		if (!failed)
			nw_strlcpy(err, e2, errlen);
		free(all);
		return -1;
	}
	for (int r = 0; r < g->size; r++)
		if (all[r].failed) {
			first = first < 0 ? r : first;
			nfailed++;
		}
	if (first >= 0) {
		rc = NW_BACKEND_FAILED_ALL;
		if (g->rank != 0)
			err[0] = '\0';
		else if (nfailed == g->size)
			nw_seterr(err, errlen, "every rank (%d): %s", g->size, all[0].why);
		else
			nw_seterr(err, errlen, "rank %d%s: %s", first, nfailed > 1 ? " (and others)" : "", all[first].why);
	}
	free(all);
	return rc;
}

int nw_backend_nccl_open(struct nw_backend **out, struct nw_group *g, const struct nw_nccl_open_opts *o,
                         char *err, size_t errlen)
{
	const struct nw_cu *cu;
	const struct nw_nccl *nc;
	struct gpu_plan pl;
	int visible;
	*out = NULL;
	int failed = load_libs(o, &cu, &nc, &visible, err, errlen) || plan_gpus(g, o, visible, &pl, err, errlen);
	int agreed = agree_loaded(g, failed, err, errlen);
	if (failed || agreed)
		return agreed ? agreed : -1;
	struct nw_backend *be = backend_new(g, cu, nc, &pl);
	be->reg_max = reg_max(nc);
	P(be)->reg = o->reg <= be->reg_max ? o->reg : 0; /* more than it can do: refused by the sweep, by name */
	P(be)->parallel_init = o->parallel_init;
	if (open_devices(be, pl.first, err, errlen) || init_comms_measured(be, err, errlen) ||
	    start_workers(be, err, errlen)) {
		be_destroy(be);
		return -1;
	}
	*out = be;
	return 0;
}
