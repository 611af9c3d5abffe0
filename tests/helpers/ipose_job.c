/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose_job: a training job's NCCL calls, made the way PyTorch makes them,
 * for the interposer's tests (tests/cli/test_interpose.sh) and its
 * ThreadSanitizer run (scripts/tsan-plugin). It links nothing of
 * ncclwatch and not NCCL: NCCL (the fake's libnccl.so.2) and the CUDA
 * driver are dlopen()ed RTLD_LOCAL, as Python loads PyTorch's extension
 * with libnccl.so.2 beside it, and the job calls NCCL's API through its
 * own undefined (weak) references, which the loader binds to an
 * LD_PRELOADed libncclwatch-interpose.so; without one they stay NULL and
 * the job calls NCCL through dlsym. NCCL is not in the global scope, so
 * the interposer's RTLD_NEXT finds nothing: the case it must handle.
 *
 *   ipose_job --nccl-lib PATH [--ranks N] [--iters K] [--threads] [--graph]
 *             [--split] [--initall] [--abort-ms MS] [--pace-us US]
 *
 * Each iteration, every rank: all_reduce, ncclBcast from rank 0,
 * all_gather, a grouped send/recv ring, and three all_reduces coalesced in
 * one group. --threads: one thread per rank (else one thread drives every
 * rank inside one group, nesting the inner groups); --graph: two more
 * iterations captured into a CUDA graph per rank and replayed three
 * times; --split: the world split in two (color rank % 2) and the
 * iterations run again on the halves; --initall: ncclCommInitAll (else
 * ncclCommInitRank in a group); --abort-ms: a watchdog thread aborts every
 * communicator after MS ms while the ranks wait (with FAKE_NCCL_HANG the
 * work never finishes otherwise). Prints what it issued, per
 * communicator size, rank and op (calls captured into graphs once, as
 * the interposer sees them), and "captured rank=R calls=N":
 *
 *   issued nranks=N rank=R op=OP calls=N bytes=B
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int res_t;
typedef struct jcomm *comm_t;
typedef struct { char internal[128]; } uid_t_;
typedef void *stream_t;

/* NCCL's API, bound by the loader (weak: NULL without an interposer in the global scope). */
extern res_t ncclAllReduce(const void *, void *, size_t, int, int, comm_t, stream_t) __attribute__((weak));
extern res_t ncclBcast(void *, size_t, int, int, comm_t, stream_t) __attribute__((weak));
extern res_t ncclAllGather(const void *, void *, size_t, int, comm_t, stream_t) __attribute__((weak));
extern res_t ncclSend(const void *, size_t, int, int, comm_t, stream_t) __attribute__((weak));
extern res_t ncclRecv(void *, size_t, int, int, comm_t, stream_t) __attribute__((weak));
extern res_t ncclGroupStart(void) __attribute__((weak));
extern res_t ncclGroupEnd(void) __attribute__((weak));
extern res_t ncclCommInitRank(comm_t *, int, uid_t_, int) __attribute__((weak));
extern res_t ncclCommInitAll(comm_t *, int, const int *) __attribute__((weak));
extern res_t ncclCommSplit(comm_t, int, int, comm_t *, void *) __attribute__((weak));
extern res_t ncclCommDestroy(comm_t) __attribute__((weak));
extern res_t ncclCommAbort(comm_t) __attribute__((weak));

#define MAXR 8
#define COUNT 4096 /* floats per rank and op */
enum { OP_AR, OP_BC, OP_AG, OP_SEND, OP_RECV, NOPS };
static const char *const op_name[NOPS] = { "all_reduce", "broadcast", "all_gather", "send", "recv" };

static struct {
	res_t (*all_reduce)(const void *, void *, size_t, int, int, comm_t, stream_t);
	res_t (*bcast)(void *, size_t, int, int, comm_t, stream_t);
	res_t (*all_gather)(const void *, void *, size_t, int, comm_t, stream_t);
	res_t (*send)(const void *, size_t, int, int, comm_t, stream_t);
	res_t (*recv)(void *, size_t, int, int, comm_t, stream_t);
	res_t (*group_start)(void), (*group_end)(void);
	res_t (*init_rank)(comm_t *, int, uid_t_, int);
	res_t (*init_all)(comm_t *, int, const int *);
	res_t (*split)(comm_t, int, int, comm_t *, void *);
	res_t (*destroy)(comm_t), (*abort)(comm_t);
	res_t (*unique_id)(uid_t_ *);
	res_t (*user_rank)(comm_t, int *);
	int (*cu_init)(unsigned);
	int (*ctx_retain)(void **, int);
	int (*ctx_set)(void *);
	int (*stream_create)(stream_t *, unsigned);
	int (*stream_sync)(stream_t);
	int (*mem_alloc)(unsigned long long *, size_t);
	int (*begin_capture)(stream_t, int);
	int (*end_capture)(stream_t, void **);
	int (*instantiate)(void **, void *, unsigned long long);
	int (*graph_launch)(void *, stream_t);
	int (*graph_exec_destroy)(void *);
	int (*graph_destroy)(void *);
} f;

struct rank {
	int r, n;
	comm_t comm;
	void *ctx;
	stream_t st;
	float *sbuf, *rbuf;
	uint64_t calls[NOPS], bytes[NOPS], captured;
	int failed;
};

static struct rank ranks[MAXR], halves[MAXR];
static int nranks = 2, iters = 5, threads, graph, split, initall, abort_ms = -1, pace_us;
static int aborted;

/* A symbol of h; the weak reference wins when the loader bound it. */
static void *pick(void *weak, void *h, const char *name)
{
	return weak ? weak : dlsym(h, name);
}

static void note(struct rank *k, int op, uint64_t bytes)
{
	k->calls[op]++;
	k->bytes[op] += bytes;
}

/* One iteration's calls of rank k (inside an outer group when grouped). */
static int issue(struct rank *k)
{
	const size_t b = COUNT * sizeof(float);
	int rc = f.all_reduce(k->sbuf, k->rbuf, COUNT, 7, 0, k->comm, k->st);
	note(k, OP_AR, b);
	rc |= f.bcast(k->rbuf, COUNT, 7, 0, k->comm, k->st);
	note(k, OP_BC, b);
	rc |= f.all_gather(k->sbuf, k->rbuf, COUNT / k->n, 7, k->comm, k->st);
	note(k, OP_AG, COUNT / k->n * sizeof(float) * (size_t)k->n);
	rc |= f.group_start();
	rc |= f.send(k->sbuf, COUNT, 7, (k->r + 1) % k->n, k->comm, k->st);
	rc |= f.recv(k->rbuf, COUNT, 7, (k->r + k->n - 1) % k->n, k->comm, k->st);
	rc |= f.group_end();
	note(k, OP_SEND, b);
	note(k, OP_RECV, b);
	rc |= f.group_start();
	for (int i = 0; i < 3; i++) {
		rc |= f.all_reduce(k->sbuf, k->rbuf, COUNT / 4, 7, 0, k->comm, k->st);
		note(k, OP_AR, b / 4);
	}
	rc |= f.group_end();
	if (pace_us)
		usleep((useconds_t)pace_us);
	return rc;
}

/* Iterations of every rank of set, grouped from this thread (all ranks) or from each rank's own thread (k). */
static void run_iters(struct rank *set, struct rank *k, int n)
{
	for (int it = 0; it < n && !__atomic_load_n(&aborted, __ATOMIC_ACQUIRE); it++) {
		if (k) {
			f.ctx_set(k->ctx);
			k->failed |= issue(k) != 0;
			k->failed |= f.stream_sync(k->st) != 0;
			continue;
		}
		f.group_start();
		for (int r = 0; r < nranks; r++) {
			f.ctx_set(set[r].ctx);
			set[r].failed |= issue(&set[r]) != 0;
		}
		f.group_end();
		for (int r = 0; r < nranks; r++)
			set[r].failed |= f.stream_sync(set[r].st) != 0;
	}
}

/* Two iterations captured into a graph on k's stream, launched three times (each rank's thread). */
static void *graph_rank(void *arg)
{
	struct rank *k = arg;
	void *g = NULL, *exec = NULL;
	f.ctx_set(k->ctx);
	uint64_t before = k->calls[OP_AR] + k->calls[OP_BC] + k->calls[OP_AG] + k->calls[OP_SEND] + k->calls[OP_RECV];
	if (f.begin_capture(k->st, 2 /* relaxed */) != 0)
		return NULL;
	for (int it = 0; it < 2; it++)
		k->failed |= issue(k) != 0;
	k->failed |= f.end_capture(k->st, &g) != 0 || f.instantiate(&exec, g, 0) != 0;
	k->captured = k->calls[OP_AR] + k->calls[OP_BC] + k->calls[OP_AG] + k->calls[OP_SEND] + k->calls[OP_RECV] - before;
	for (int i = 0; i < 3 && exec; i++)
		k->failed |= f.graph_launch(exec, k->st) != 0;
	k->failed |= f.stream_sync(k->st) != 0;
	if (exec && f.graph_exec_destroy)
		f.graph_exec_destroy(exec);
	if (g && f.graph_destroy)
		f.graph_destroy(g);
	return NULL;
}

static void *rank_thread(void *arg)
{
	struct rank *k = arg;
	run_iters(NULL, k, iters);
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	usleep((useconds_t)abort_ms * 1000);
	__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
	for (int r = 0; r < nranks; r++)
		f.abort(ranks[r].comm);
	return NULL;
}

/* Run the iterations on set (threads or grouped), then the graph ones. */
static void run_set(struct rank *set)
{
	pthread_t th[MAXR];
	if (threads) {
		for (int r = 0; r < nranks; r++)
			pthread_create(&th[r], NULL, rank_thread, &set[r]);
		for (int r = 0; r < nranks; r++)
			pthread_join(th[r], NULL);
	} else {
		run_iters(set, NULL, iters);
	}
	if (!graph || __atomic_load_n(&aborted, __ATOMIC_ACQUIRE))
		return;
	for (int r = 0; r < nranks; r++)
		pthread_create(&th[r], NULL, graph_rank, &set[r]);
	for (int r = 0; r < nranks; r++)
		pthread_join(th[r], NULL);
}

static int setup(const char *lib)
{
	const char *cuda = getenv("NCCLWATCH_CUDA_LIB");
	void *hc = dlopen(cuda && *cuda ? cuda : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *hn = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!hc || !hn) {
		fprintf(stderr, "ipose_job: cannot open the driver or NCCL: %s\n", dlerror());
		return -1;
	}
	*(void **)(void *)&f.all_reduce = pick((void *)ncclAllReduce, hn, "ncclAllReduce");
	*(void **)(void *)&f.bcast = pick((void *)ncclBcast, hn, "ncclBcast");
	*(void **)(void *)&f.all_gather = pick((void *)ncclAllGather, hn, "ncclAllGather");
	*(void **)(void *)&f.send = pick((void *)ncclSend, hn, "ncclSend");
	*(void **)(void *)&f.recv = pick((void *)ncclRecv, hn, "ncclRecv");
	*(void **)(void *)&f.group_start = pick((void *)ncclGroupStart, hn, "ncclGroupStart");
	*(void **)(void *)&f.group_end = pick((void *)ncclGroupEnd, hn, "ncclGroupEnd");
	*(void **)(void *)&f.init_rank = pick((void *)ncclCommInitRank, hn, "ncclCommInitRank");
	*(void **)(void *)&f.init_all = pick((void *)ncclCommInitAll, hn, "ncclCommInitAll");
	*(void **)(void *)&f.split = pick((void *)ncclCommSplit, hn, "ncclCommSplit");
	*(void **)(void *)&f.destroy = pick((void *)ncclCommDestroy, hn, "ncclCommDestroy");
	*(void **)(void *)&f.abort = pick((void *)ncclCommAbort, hn, "ncclCommAbort");
	*(void **)(void *)&f.unique_id = dlsym(hn, "ncclGetUniqueId");
	*(void **)(void *)&f.user_rank = dlsym(hn, "ncclCommUserRank");
	*(void **)(void *)&f.cu_init = dlsym(hc, "cuInit");
	*(void **)(void *)&f.ctx_retain = dlsym(hc, "cuDevicePrimaryCtxRetain");
	*(void **)(void *)&f.ctx_set = dlsym(hc, "cuCtxSetCurrent");
	*(void **)(void *)&f.stream_create = dlsym(hc, "cuStreamCreate");
	*(void **)(void *)&f.stream_sync = dlsym(hc, "cuStreamSynchronize");
	*(void **)(void *)&f.mem_alloc = dlsym(hc, "cuMemAlloc_v2");
	*(void **)(void *)&f.begin_capture = dlsym(hc, "cuStreamBeginCapture_v2");
	*(void **)(void *)&f.end_capture = dlsym(hc, "cuStreamEndCapture");
	*(void **)(void *)&f.instantiate = dlsym(hc, "cuGraphInstantiateWithFlags");
	*(void **)(void *)&f.graph_launch = dlsym(hc, "cuGraphLaunch");
	*(void **)(void *)&f.graph_exec_destroy = dlsym(hc, "cuGraphExecDestroy");
	*(void **)(void *)&f.graph_destroy = dlsym(hc, "cuGraphDestroy");
	printf("nccl %s, %s\n", ncclAllReduce ? "bound to an interposer" : "called through dlsym",
	       dlsym(RTLD_DEFAULT, "pncclAllReduce") ? "in the global scope" : "not in the global scope");
	return f.cu_init(0);
}

/* Devices, streams, buffers and the world communicator of every rank. */
static int make_world(void)
{
	comm_t comms[MAXR];
	for (int r = 0; r < nranks; r++) {
		struct rank *k = &ranks[r];
		unsigned long long s, d;
		k->r = r;
		k->n = nranks;
		if (f.ctx_retain(&k->ctx, r) || f.ctx_set(k->ctx) || f.stream_create(&k->st, 0) ||
		    f.mem_alloc(&s, COUNT * sizeof(float)) || f.mem_alloc(&d, COUNT * sizeof(float) * 2))
			return -1;
		k->sbuf = (float *)(uintptr_t)s;
		k->rbuf = (float *)(uintptr_t)d;
		memset(k->sbuf, 0, COUNT * sizeof(float));
	}
	if (initall) {
		if (f.init_all(comms, nranks, NULL))
			return -1;
	} else {
		uid_t_ id;
		f.unique_id(&id);
		f.group_start();
		for (int r = 0; r < nranks; r++) {
			f.ctx_set(ranks[r].ctx);
			f.init_rank(&comms[r], nranks, id, r);
		}
		if (f.group_end())
			return -1;
	}
	for (int r = 0; r < nranks; r++)
		ranks[r].comm = comms[r];
	return 0;
}

/* The world split in two halves (color rank % 2, key rank), in one group. */
static int make_halves(void)
{
	f.group_start();
	for (int r = 0; r < nranks; r++) {
		f.ctx_set(ranks[r].ctx);
		halves[r] = ranks[r];
		memset(halves[r].calls, 0, sizeof(halves[r].calls));
		memset(halves[r].bytes, 0, sizeof(halves[r].bytes));
		halves[r].captured = 0;
		f.split(ranks[r].comm, r % 2, r, &halves[r].comm, NULL);
	}
	if (f.group_end())
		return -1;
	for (int r = 0; r < nranks; r++) {
		halves[r].n = nranks / 2 + (r % 2 == 0 ? nranks % 2 : 0);
		f.user_rank(halves[r].comm, &halves[r].r);
	}
	return 0;
}

static void report(const struct rank *set)
{
	for (int r = 0; r < nranks; r++) {
		for (int op = 0; op < NOPS; op++)
			printf("issued nranks=%d rank=%d op=%s calls=%llu bytes=%llu\n", set[r].n, set[r].r, op_name[op],
			       (unsigned long long)set[r].calls[op], (unsigned long long)set[r].bytes[op]);
		if (graph)
			printf("captured nranks=%d rank=%d calls=%llu\n", set[r].n, set[r].r,
			       (unsigned long long)set[r].captured);
	}
}

int main(int argc, char **argv)
{
	const char *lib = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--nccl-lib"))
			lib = v, i++;
		else if (!strcmp(a, "--ranks"))
			nranks = atoi(v), i++;
		else if (!strcmp(a, "--iters"))
			iters = atoi(v), i++;
		else if (!strcmp(a, "--abort-ms"))
			abort_ms = atoi(v), i++;
		else if (!strcmp(a, "--pace-us"))
			pace_us = atoi(v), i++;
		else if (!strcmp(a, "--threads"))
			threads = 1;
		else if (!strcmp(a, "--graph"))
			graph = 1;
		else if (!strcmp(a, "--split"))
			split = 1;
		else if (!strcmp(a, "--initall"))
			initall = 1;
		else {
			fprintf(stderr, "usage: ipose_job --nccl-lib PATH [--ranks N] [--iters K] [--threads] [--graph] "
			        "[--split] [--initall] [--abort-ms MS] [--pace-us US]\n");
			return 2;
		}
	}
	if (!lib || nranks < 2 || nranks > MAXR || iters < 0 || setup(lib) != 0 || make_world() != 0) {
		fprintf(stderr, "ipose_job: cannot set the job up\n");
		return 1;
	}
	pthread_t wd;
	if (abort_ms >= 0)
		pthread_create(&wd, NULL, watchdog, NULL);
	run_set(ranks);
	if (abort_ms >= 0) {
		pthread_join(wd, NULL);
		printf("aborted\n");
		report(ranks);
		return 0;
	}
	if (split && make_halves() == 0) {
		run_set(halves);
		report(halves);
		for (int r = 0; r < nranks; r++)
			f.destroy(halves[r].comm);
	}
	report(ranks);
	int failed = 0;
	for (int r = 0; r < nranks; r++) {
		failed |= ranks[r].failed | halves[r].failed;
		f.destroy(ranks[r].comm);
	}
	return failed ? 1 : 0;
}
