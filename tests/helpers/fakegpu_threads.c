/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakegpu_threads: drive one NCCL clique from several threads, as
 * nccl-tests' -t does (each thread: ncclGroupStart, its own ranks' calls,
 * ncclGroupEnd, concurrently with the others), through ncclwatch's own
 * loaders (src/gpu/cuda.h, src/gpu/nccl.h). Made for the fake CUDA driver
 * and fake NCCL of tests/fakegpu/; the library checks nothing GPU-specific.
 *
 *   fakegpu_threads --nccl-lib PATH [--threads T] [--gpus G] [--iters N]
 *                   [--count C] [--graph] [--extra N]
 *
 * T threads drive G ranks each (T*G ranks, GPUs 0..T*G-1). Every
 * iteration: an all-reduce (sum) of float rank+iter+1, a ring of sends
 * and receives, and with --graph the all-reduce also captured and
 * replayed twice. Results are checked element by element. --extra N
 * makes the clique N ranks larger than the threads drive, so init must
 * fail (after FAKE_INIT_TIMEOUT_S) and say why. Prints
 * "ok threads=T gpus=G ranks=R iters=N" and exits 0, or prints what went
 * wrong on stderr and exits 1 (2 for bad usage).
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "gpu/cuda.h"
#include "gpu/nccl.h"
#include "util/util.h"

#define MAXG 8

static const struct nw_cu *cu;
static const struct nw_nccl *nc;
static nw_ncclUniqueId id;
static int nthreads = 2, ngpus = 1, iters = 20, graph, extra;
static size_t count = 1000;

struct worker {
	pthread_t th;
	int t;
	char err[512];
};

#define NCHECK(call, what)                                                           \
	do {                                                                             \
		nw_ncclResult_t r_ = (call);                                                 \
		if (r_) {                                                                    \
			snprintf(w->err, sizeof(w->err), "thread %d: %s: NCCL error %d (%s)", w->t, \
			         (what), r_, nc->pfn_ncclGetLastError ? nc->pfn_ncclGetLastError(NULL) : "");        \
			goto out;                                                                \
		}                                                                            \
	} while (0)
#define CCHECK(call, what)                                                              \
	do {                                                                                \
		nw_CUresult r_ = (call);                                                        \
		if (r_) {                                                                       \
			snprintf(w->err, sizeof(w->err), "thread %d: %s: CUDA error %d", w->t, (what), r_); \
			goto out;                                                                   \
		}                                                                               \
	} while (0)

/* One thread's ranks: set up, iterate, check, tear down. Fills w->err on failure. */
static void *work(void *arg)
{
	struct worker *w = arg;
	int n = nthreads * ngpus + extra;
	nw_CUcontext ctx[MAXG] = { 0 };
	nw_CUstream st[MAXG] = { 0 };
	nw_ncclComm_t comm[MAXG] = { 0 };
	nw_CUdeviceptr sbuf[MAXG] = { 0 }, rbuf[MAXG] = { 0 }, pbuf[MAXG] = { 0 };
	nw_CUgraphExec exec[MAXG] = { 0 };
	float *host = nw_malloc(count * sizeof(float));
	for (int g = 0; g < ngpus; g++) {
		nw_CUdevice dev;
		CCHECK(cu->pfn_cuDeviceGet(&dev, w->t * ngpus + g), "cuDeviceGet");
		CCHECK(cu->pfn_cuDevicePrimaryCtxRetain(&ctx[g], dev), "cuDevicePrimaryCtxRetain");
		CCHECK(cu->pfn_cuCtxSetCurrent(ctx[g]), "cuCtxSetCurrent");
		CCHECK(cu->pfn_cuStreamCreate(&st[g], NW_CU_STREAM_NON_BLOCKING), "cuStreamCreate");
		CCHECK(cu->pfn_cuMemAlloc(&sbuf[g], count * sizeof(float)), "cuMemAlloc");
		CCHECK(cu->pfn_cuMemAlloc(&rbuf[g], count * sizeof(float)), "cuMemAlloc");
		CCHECK(cu->pfn_cuMemAlloc(&pbuf[g], count * sizeof(float)), "cuMemAlloc");
	}
	NCHECK(nc->pfn_ncclGroupStart(), "ncclGroupStart");
	for (int g = 0; g < ngpus; g++)
		NCHECK(nc->pfn_ncclCommInitRank(&comm[g], n, id, w->t * ngpus + g), "ncclCommInitRank");
	NCHECK(nc->pfn_ncclGroupEnd(), "ncclGroupEnd (init)");
	for (int it = 0; it < iters; it++) {
		for (int g = 0; g < ngpus; g++) {
			int rank = w->t * ngpus + g;
			for (size_t i = 0; i < count; i++)
				host[i] = (float)(rank + it + 1);
			CCHECK(cu->pfn_cuCtxSetCurrent(ctx[g]), "cuCtxSetCurrent");
			CCHECK(cu->pfn_cuMemcpyHtoD(sbuf[g], host, count * sizeof(float)), "cuMemcpyHtoD");
		}
		int capture = graph && it % 2;
		if (capture)
			for (int g = 0; g < ngpus; g++)
				CCHECK(cu->pfn_cuStreamBeginCapture(st[g], NW_CU_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
		NCHECK(nc->pfn_ncclGroupStart(), "ncclGroupStart");
		for (int g = 0; g < ngpus; g++)
			NCHECK(nc->pfn_ncclAllReduce((void *)(uintptr_t)sbuf[g], (void *)(uintptr_t)rbuf[g], count, NW_FLOAT,
			                             NW_SUM, comm[g], st[g]), "ncclAllReduce");
		NCHECK(nc->pfn_ncclGroupEnd(), "ncclGroupEnd");
		if (capture)
			for (int g = 0; g < ngpus; g++) {
				nw_CUgraph gr = NULL;
				CCHECK(cu->pfn_cuStreamEndCapture(st[g], &gr), "cuStreamEndCapture");
				nw_CUresult r = cu->pfn_cuGraphInstantiateWithFlags(&exec[g], gr, 0);
				cu->pfn_cuGraphDestroy(gr);
				CCHECK(r, "cuGraphInstantiateWithFlags");
				CCHECK(cu->pfn_cuGraphLaunch(exec[g], st[g]), "cuGraphLaunch");
				CCHECK(cu->pfn_cuGraphLaunch(exec[g], st[g]), "cuGraphLaunch");
			}
		NCHECK(nc->pfn_ncclGroupStart(), "ncclGroupStart");
		for (int g = 0; g < ngpus; g++) {
			int rank = w->t * ngpus + g;
			NCHECK(nc->pfn_ncclSend((void *)(uintptr_t)sbuf[g], count, NW_FLOAT, (rank + 1) % n, comm[g], st[g]), "ncclSend");
			NCHECK(nc->pfn_ncclRecv((void *)(uintptr_t)pbuf[g], count, NW_FLOAT, (rank - 1 + n) % n, comm[g], st[g]),
			       "ncclRecv");
		}
		NCHECK(nc->pfn_ncclGroupEnd(), "ncclGroupEnd");
		for (int g = 0; g < ngpus; g++) {
			int rank = w->t * ngpus + g;
			CCHECK(cu->pfn_cuStreamSynchronize(st[g]), "cuStreamSynchronize");
			if (exec[g]) {
				cu->pfn_cuGraphExecDestroy(exec[g]);
				exec[g] = NULL;
			}
			float want = (float)(n * (it + 1) + n * (n - 1) / 2);
			CCHECK(cu->pfn_cuMemcpyDtoH(host, rbuf[g], count * sizeof(float)), "cuMemcpyDtoH");
			for (size_t i = 0; i < count; i++)
				if (host[i] != want) {
					snprintf(w->err, sizeof(w->err), "rank %d iteration %d: all-reduce element %zu is %g, "
					         "not %g", rank, it, i, (double)host[i], (double)want);
					goto out;
				}
			CCHECK(cu->pfn_cuMemcpyDtoH(host, pbuf[g], count * sizeof(float)), "cuMemcpyDtoH");
			float from = (float)((rank - 1 + n) % n + it + 1);
			for (size_t i = 0; i < count; i++)
				if (host[i] != from) {
					snprintf(w->err, sizeof(w->err), "rank %d iteration %d: received element %zu is %g, "
					         "not %g", rank, it, i, (double)host[i], (double)from);
					goto out;
				}
		}
	}
out:
	for (int g = 0; g < ngpus; g++) {
		if (exec[g])
			cu->pfn_cuGraphExecDestroy(exec[g]);
		if (comm[g])
			(w->err[0] ? nc->pfn_ncclCommAbort : nc->pfn_ncclCommDestroy)(comm[g]);
		if (ctx[g]) {
			cu->pfn_cuCtxSetCurrent(ctx[g]);
			if (sbuf[g])
				cu->pfn_cuMemFree(sbuf[g]);
			if (rbuf[g])
				cu->pfn_cuMemFree(rbuf[g]);
			if (pbuf[g])
				cu->pfn_cuMemFree(pbuf[g]);
			if (st[g])
				cu->pfn_cuStreamDestroy(st[g]);
			nw_CUdevice dev;
			if (cu->pfn_cuDeviceGet(&dev, w->t * ngpus + g) == 0)
				cu->pfn_cuDevicePrimaryCtxRelease(dev);
		}
	}
	free(host);
	return NULL;
}

static int int_arg(const char *s, long lo, long hi, const char *name)
{
	long v;
	char err[NW_ERRLEN];
	if (nw_parse_long(s, lo, hi, &v, name, err, sizeof(err))) {
		fprintf(stderr, "fakegpu_threads: %s\n", err);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	const char *lib = NULL;
	static const struct option opts[] = {
		{ "nccl-lib", required_argument, NULL, 'l' }, { "threads", required_argument, NULL, 't' },
		{ "gpus", required_argument, NULL, 'g' },     { "iters", required_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'c' },    { "graph", no_argument, NULL, 'G' },
		{ "extra", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': lib = optarg; break;
		case 't': nthreads = int_arg(optarg, 1, 16, "--threads"); break;
		case 'g': ngpus = int_arg(optarg, 1, MAXG, "--gpus"); break;
		case 'n': iters = int_arg(optarg, 1, 100000, "--iters"); break;
		case 'c': count = (size_t)int_arg(optarg, 1, 1 << 24, "--count"); break;
		case 'G': graph = 1; break;
		case 'x': extra = int_arg(optarg, 0, 16, "--extra"); break;
		default:
			fprintf(stderr, "usage: fakegpu_threads --nccl-lib PATH [--threads T] [--gpus G] [--iters N] "
			        "[--count C] [--graph] [--extra N]\n");
			return 2;
		}
	}
	char err[NW_ERRLEN];
	if (!(cu = nw_cuda_load(err, sizeof(err))) || !(nc = nw_nccl_load(lib, err, sizeof(err)))) {
		fprintf(stderr, "fakegpu_threads: %s\n", err);
		return 1;
	}
	if (nc->pfn_ncclGetUniqueId(&id)) {
		fprintf(stderr, "fakegpu_threads: ncclGetUniqueId failed\n");
		return 1;
	}
	struct worker *w = nw_calloc((size_t)nthreads, sizeof(*w));
	for (int t = 0; t < nthreads; t++) {
		w[t].t = t;
		if (pthread_create(&w[t].th, NULL, work, &w[t]) != 0) {
			fprintf(stderr, "fakegpu_threads: cannot start thread %d\n", t);
			return 1;
		}
	}
	int bad = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		if (w[t].err[0]) {
			fprintf(stderr, "fakegpu_threads: %s\n", w[t].err);
			bad = 1;
		}
	}
	free(w);
	if (!bad)
		printf("ok threads=%d gpus=%d ranks=%d iters=%d%s\n", nthreads, ngpus, nthreads * ngpus, iters,
		       graph ? " graph" : "");
	return bad;
}
