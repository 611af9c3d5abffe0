/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake NCCL (libnccl.so.2, "NCCL version 2.28.9") for tests on machines
 * without a GPU, to go with the fake CUDA driver (fake_cuda.c): the nccl*
 * functions ncclwatch resolves (src/gpu/nccl.c), with the real ABI.
 *
 * A communicator clique is named by the unique id's bytes. When all its
 * ranks are in this process (the usual case in tests), they may be driven
 * from one thread (grouped) or from several. Group state is thread-local, as in NCCL: between ncclGroupStart
 * and ncclGroupEnd calls are queued, and put on their streams at the
 * outermost ncclGroupEnd. Each rank's collectives are numbered in order;
 * a collective runs when every rank of the clique has put its part on a
 * stream: the last one to arrive moves the data (host memory: a CUdeviceptr
 * of the fake driver is a host address) and marks each participant's
 * stream work complete. Sends and receives are matched per (sender,
 * receiver) pair in order. Nobody blocks for peers outside init: streams
 * carry the waiting (cuStreamQuery says not ready until the work ran).
 * Ops: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll,
 * Gather, Scatter, Send, Recv (to itself too); CommSplit, CommUserRank,
 * CommCount (see ncclCommSplit below); Bcast (in-place Broadcast, called
 * through its exported name as NCCL does); CommInitAll, CommInitRankScalable
 * (the first id names the clique) and CommFinalize (nothing to flush: work
 * runs when its ranks arrive). Every API function is exported under its
 * name and, as NCCL does, under the same name with a leading 'p'
 * (pncclAllReduce), which interposers call to reach NCCL itself. Every NCCL data type (fp8 and half/bfloat16
 * rounded to nearest even) and sum, prod, max, min, avg, and the
 * pre-multiplied sums of ncclRedOpCreatePreMulSum (each rank's input times
 * its own scalar, rounded to the type, then summed); a collective with avg
 * or a pre-multiplied sum on fp8 is refused, as NCCL 2.28 does. Reductions of floating types are
 * computed in double and rounded once; integers wrap as the type does;
 * integer avg is the wrapped sum divided by the rank count, truncating.
 * Stream 0 is the NULL stream of the context that was current when the
 * communicator was made (through the fake driver's struct fakegpu_ctx).
 *
 * ncclCommInitRank(Config) registers the rank in a shared-memory file
 * named after the unique id and waits (at the outermost ncclGroupEnd when
 * grouped) until every rank of the clique has joined, at most
 * FAKE_INIT_TIMEOUT_S (default 10) seconds; then ncclSystemError, and
 * ncclGetLastError says how many joined. A clique whose ranks are all in
 * this process runs as above; one spread over processes (mpirun -np N)
 * runs through the shared file instead: each rank gets a thread that runs
 * its work in order, inputs are copied into the file and each rank
 * computes its own output there (at most FAKE_XP_KIB, default 1024 KiB,
 * per rank per operation; more is reported as ncclInvalidUsage through
 * ncclCommGetAsyncError). Without a usable /dev/shm, ranks in other
 * processes are not supported: init fails after the timeout, and says so.
 * ncclCommAbort drops the clique's pending work and completes its streams
 * with CUDA_ERROR_LAUNCH_FAILED so waiters wake (in every process); its
 * other communicators then report ncclRemoteError. ncclCommDestroy with
 * work still pending drops that work the same way.
 *
 * Environment:
 *   FAKE_NCCL_VERSION=CODE   what ncclGetVersion says (default 22809, any of
 *                            2.18.x to 2.30.x); the file's "NCCL version
 *                            2.28.9" string stays. It also picks how a
 *                            profiler plugin is loaded and driven
 *                            (NCCL_PROFILER_PLUGIN; none below 2.23): see
 *                            fake_nccl_prof.h
 *   FAKE_INIT_TIMEOUT_S=S    see above
 *   FAKE_XP_KIB=N            see above (every process of a clique must agree)
 *   FAKE_NCCL_FAIL=NAME[:N]  the Nth call (default the 1st) of nccl function
 *                            NAME returns ncclUnhandledCudaError (1), with a
 *                            last-error text saying so
 *   FAKE_NCCL_CORRUPT=RANK   one element (the first) of RANK's output of every
 *                            operation is wrong by 7
 *   FAKE_NCCL_HANG=RANK      RANK's work is never executed: its peers' and its
 *                            own streams never complete (until abort)
 *   FAKE_NCCL_ASYNC_ERROR=RANK:N  after N operations (collectives, sends and
 *                            receives) of RANK, its further work never runs and
 *                            ncclCommGetAsyncError reports ncclRemoteError (6)
 *   FAKE_NCCL_LINK=LAT_US:GBPS[:nodata]  every operation lasts LAT_US plus its
 *                            bytes (a rank's input; a message's) at GBPS GB/s: the
 *                            thread that runs it sleeps until then, so times follow
 *                            sizes as on a GPU; with ":nodata" (in-process cliques)
 *                            it moves nothing, so only the sleep and the host's
 *                            scheduling make the time (timing tests, bench -c 0)
 *   FAKE_NCCL_REPORT_CONFIG=1  ncclCommInitRankConfig says what it read of the
 *                            config ("fake NCCL: rank R: config size S version V
 *                            CTAPolicy P|unset"); CTAPolicy is read as NCCL does
 *                            (from a 2.27+ config, 2 refused below 2.28)
 *   FAKE_NCCL_REPORT_OPS=1   each ncclRedOpCreatePreMulSum (with its scalar) and
 *                            ncclRedOpDestroy says so, and a communicator
 *                            destroyed with ops still made says how many
 *   FAKE_NCCL_REPORT_REG=1   each buffer registration and deregistration says
 *                            so on stderr ("fake NCCL: rank R: ncclCommRegister
 *                            N bytes"), and a communicator destroyed with
 *                            registrations still open says how many
 *
 * Buffer registration (nccl-tests' -R): ncclMemAlloc/ncclMemFree take device
 * memory from the fake driver (the cuMemAlloc_v2 of the libcuda.so.1 already
 * loaded, $NCCLWATCH_CUDA_LIB when set), so its cuMemGetInfo counts it;
 * ncclCommRegister/Deregister (refused below version 2.19) and
 * ncclCommWindowRegister/Deregister (refused below 2.27, as if absent) keep
 * a handle per buffer and check it comes back to the communicator that made
 * it. FAKE_NCCL_VERSION below those plays an older NCCL.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_nccl_prof.h"
#include "fakegpu.h"

#define EXPORT __attribute__((visibility("default")))

/* What `strings`-style readers (ncclwatch's version probe) find in the file. */
__attribute__((used)) static const char version_banner[] = "NCCL version 2.28.9+fake";

typedef int ncclResult_t;
typedef struct comm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct fakegpu_stream *cudaStream_t;

enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
};
enum { T_INT8, T_UINT8, T_INT32, T_UINT32, T_INT64, T_UINT64, T_HALF, T_FLOAT, T_DOUBLE, T_BF16, T_E4M3, T_E5M2, NTYPES };
enum { R_SUM, R_PROD, R_MAX, R_MIN, R_AVG, NREDOPS };
/* A call's op once a user op (ncclRedOpCreatePreMulSum, numbered from NREDOPS) is looked up: its scalar is in the call. */
#define R_PREMUL 100
enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 };
#define CU_LAUNCH_FAILED 719

EXPORT ncclResult_t ncclGetVersion(int *v);
EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int rank);
EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *c, int n, ncclUniqueId id, int rank, void *cfg);
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c);
EXPORT ncclResult_t ncclCommAbort(ncclComm_t c);
EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e);
EXPORT const char *ncclGetErrorString(ncclResult_t r);
EXPORT const char *ncclGetLastError(ncclComm_t c);
EXPORT ncclResult_t ncclGroupStart(void);
EXPORT ncclResult_t ncclGroupEnd(void);
EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclGather(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclScatter(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclRecv(void *r, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st);
EXPORT ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *out, void *config);
EXPORT ncclResult_t ncclCommUserRank(ncclComm_t c, int *rank);
EXPORT ncclResult_t ncclCommCount(ncclComm_t c, int *n);
EXPORT ncclResult_t ncclMemAlloc(void **p, size_t bytes);
EXPORT ncclResult_t ncclMemFree(void *p);
EXPORT ncclResult_t ncclCommRegister(ncclComm_t c, void *buf, size_t bytes, void **handle);
EXPORT ncclResult_t ncclCommDeregister(ncclComm_t c, void *handle);
EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t c, void *buf, size_t bytes, void **win, int flags);
EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t c, void *win);
EXPORT ncclResult_t ncclRedOpCreatePreMulSum(int *op, void *scalar, int t, int residence, ncclComm_t c);
EXPORT ncclResult_t ncclRedOpDestroy(int op, ncclComm_t c);
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *c, int n, int rank, int nid, ncclUniqueId *ids, void *config);
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t c);
EXPORT ncclResult_t ncclBcast(void *b, size_t n, int t, int root, ncclComm_t c, cudaStream_t st);

enum kind { K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLTOALL, K_GATHER, K_SCATTER,
            K_SEND, K_RECV };
static const char *const kind_name[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                                         "ncclReduce", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                                         "ncclRecv" };

/* One rank's part of an operation, as put on its stream (copied into stream work). */
struct call {
	int kind, dtype, redop, root, peer;
	unsigned char scalar[8]; /* R_PREMUL: this rank's scalar, as the type */
	const void *send;
	void *recv;
	size_t count;
	struct comm *comm;
	uint64_t prof;      /* the profiler plugin's kernel events to raise when it runs (fake_nccl_prof.h); 0 none */
};
_Static_assert(sizeof(struct call) <= sizeof(((struct fakegpu_work *)0)->arg), "call fits in stream work");

struct queued {
	struct call c;
	struct fakegpu_stream *s;
};

struct comm {
	struct clique *cl;  /* NULL until joined */
	int n, rank;
	unsigned char id[128];
	uint64_t coll_seq;  /* next collective's number */
	uint64_t *sent, *rcvd; /* per peer: sends / receives posted */
	uint64_t done;      /* operations executed */
	unsigned nsplit;    /* ncclCommSplit calls made on it (names each split's exchange file) */
	int async_err;
	char last_err[256];
	/* a clique across processes: this rank's work runs on its own thread, in order */
	struct xp_map *xp;
	pthread_t th;
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct queued *q;
	size_t qh, qn, qcap;
	int stop;
	int nreg;           /* registrations and windows still open (under mu) */
	struct fakegpu_ctx *ctx; /* the context current at init: its NULL stream is the one stream 0 means */
	int cta_policy;     /* the config's CTAPolicy as NCCL reads it; INT_MIN not set */
	struct uop {        /* ncclRedOpCreatePreMulSum's ops: op NREDOPS + index */
		int live, dtype;
		unsigned char scalar[8];
	} *uops;
	int nuops;
	struct fprof_comm prof; /* the profiler plugin's view of it (fake_nccl_prof.h) */
};

enum tag { TAG_COLL, TAG_P2P, TAG_HELD };

struct part {
	int posted;
	struct call c;
	struct fakegpu_stream *s;
};

/* Work in flight on a clique: a collective (n parts), a message (send, recv), or held work (1 part). */
struct pending {
	struct pending *next;
	enum tag tag;
	uint64_t seq;
	int a, b;     /* message: sender, receiver */
	int arrived;
	int dead;     /* ranks disagreed: never runs */
	int nparts;
	struct part parts[];
};

struct clique {
	struct clique *next;
	unsigned char id[128];
	int n, joined;
	struct comm **ranks;
	struct pending *pend, **tail;
	int aborted;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t join_cv = PTHREAD_COND_INITIALIZER;
static struct clique *cliques;

static struct {
	int version;
	double init_timeout;
	char fail_name[64];
	long fail_at, fail_calls;
	int corrupt, hang, async_rank;
	uint64_t async_after;
	double link_lat_s, link_bps; /* FAKE_NCCL_LINK: an operation lasts lat + bytes / bps; bps 0: as fast as it runs */
	int link_nodata;             /* FAKE_NCCL_LINK's ":nodata": operations move nothing (timing only, bench -c 0) */
} cfg;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static _Thread_local char tl_err[256];

/* Group state of this thread. */
static _Thread_local int depth;
static _Thread_local ncclResult_t group_err;
static _Thread_local struct queued *gq;
static _Thread_local size_t gq_n, gq_cap;
static _Thread_local struct comm **ginit;
static _Thread_local size_t ginit_n, ginit_cap;

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	return errno || *end ? dflt : x;
}

/* Read the FAKE_* settings once. */
static void read_env(void)
{
	cfg.version = (int)env_long("FAKE_NCCL_VERSION", 22809);
	const char *v = getenv("FAKE_INIT_TIMEOUT_S");
	cfg.init_timeout = v && *v ? strtod(v, NULL) : 10;
	if (!(cfg.init_timeout > 0))
		cfg.init_timeout = 10;
	v = getenv("FAKE_NCCL_FAIL");
	if (v && *v) {
		snprintf(cfg.fail_name, sizeof(cfg.fail_name), "%s", v);
		char *colon = strchr(cfg.fail_name, ':');
		cfg.fail_at = 1;
		if (colon) {
			*colon = '\0';
			long n = strtol(colon + 1, NULL, 10);
			cfg.fail_at = n > 0 ? n : 1;
		}
	}
	cfg.corrupt = (int)env_long("FAKE_NCCL_CORRUPT", -1);
	cfg.hang = (int)env_long("FAKE_NCCL_HANG", -1);
	v = getenv("FAKE_NCCL_LINK");
	double lat_us, gbps;
	char what[16] = "";
	if (v && sscanf(v, "%lf:%lf:%15s", &lat_us, &gbps, what) >= 2 && lat_us >= 0 && gbps > 0) {
		cfg.link_lat_s = lat_us * 1e-6;
		cfg.link_bps = gbps * 1e9;
		cfg.link_nodata = !strcmp(what, "nodata");
	}
	cfg.async_rank = -1;
	v = getenv("FAKE_NCCL_ASYNC_ERROR");
	if (v && *v) {
		char *end;
		long r = strtol(v, &end, 10);
		unsigned long long after = *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
		if (end != v && r >= 0) {
			cfg.async_rank = (int)r;
			cfg.async_after = after;
		}
	}
}

/* Set this thread's last-error text (and the group's error inside a group); returns r. */
__attribute__((format(printf, 2, 3))) static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tl_err, sizeof(tl_err), fmt, ap);
	va_end(ap);
	if (depth > 0 && !group_err)
		group_err = r;
	return r;
}

/* Whether this call of `name` is the one FAKE_NCCL_FAIL picks. */
static int injected(const char *name)
{
	pthread_once(&env_once, read_env);
	if (!cfg.fail_name[0] || strcmp(name, cfg.fail_name) != 0)
		return 0;
	pthread_mutex_lock(&mu);
	long k = ++cfg.fail_calls;
	pthread_mutex_unlock(&mu);
	return k == cfg.fail_at;
}

#define FAIL_POINT()                                                                                    \
	do {                                                                                                \
		if (injected(__func__))                                                                         \
			return fail(ncclUnhandledCudaError, "fake NCCL: FAKE_NCCL_FAIL made %s call %ld fail", \
			            __func__, cfg.fail_at);                                                         \
	} while (0)

ncclResult_t ncclGetVersion(int *v)
{
	FAIL_POINT();
	if (!v)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	*v = cfg.version;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	FAIL_POINT();
	if (!id)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	static uint64_t counter;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&mu);
	uint64_t k = ++counter;
	pthread_mutex_unlock(&mu);
	uint64_t words[4] = { 0x66616b656e63636cull, (uint64_t)getpid(), k,
	                      (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec };
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, words, sizeof(words));
	return ncclSuccess;
}

/* ---- cliques ---- */

static void free_clique(struct clique *cl)
{
	struct clique **pp = &cliques;
	while (*pp && *pp != cl)
		pp = &(*pp)->next;
	if (*pp)
		*pp = cl->next;
	for (struct pending *p = cl->pend, *nx; p; p = nx) {
		nx = p->next;
		free(p);
	}
	free(cl->ranks);
	free(cl);
}

/* Put comm c in its clique (creating it). Called with mu held. */
static ncclResult_t join(struct comm *c)
{
	struct clique *cl = cliques;
	while (cl && (cl->aborted || memcmp(cl->id, c->id, sizeof(cl->id)) != 0))
		cl = cl->next;
	if (cl && cl->n != c->n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: ranks disagree on the rank count (%d)",
		            "ncclCommInitRank", c->n);
	if (cl && cl->ranks[c->rank])
		return fail(ncclInvalidUsage, "fake NCCL: %s: rank %d joined twice", "ncclCommInitRank", c->rank);
	if (!cl) {
		cl = calloc(1, sizeof(*cl));
		if (!cl || !(cl->ranks = calloc((size_t)c->n, sizeof(*cl->ranks)))) {
			free(cl);
			return fail(ncclSystemError, "fake NCCL: %s: out of memory", "ncclCommInitRank");
		}
		memcpy(cl->id, c->id, sizeof(cl->id));
		cl->n = c->n;
		cl->tail = &cl->pend;
		cl->next = cliques;
		cliques = cl;
	}
	cl->ranks[c->rank] = c;
	cl->joined++;
	c->cl = cl;
	pthread_cond_broadcast(&join_cv);
	return ncclSuccess;
}

/* Take comm c out of its clique; the clique goes with its last member. Called with mu held. */
static void leave(struct comm *c)
{
	struct clique *cl = c->cl;
	if (!cl)
		return;
	cl->ranks[c->rank] = NULL;
	c->cl = NULL;
	if (--cl->joined == 0)
		free_clique(cl);
}

/*
 * Wait until the cliques of comms cs[0..n) are complete. On timeout every
 * one of them leaves its clique and the result is ncclSystemError.
 */
static ncclResult_t wait_joined(struct comm **cs, size_t n)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	double t = cfg.init_timeout;
	dl.tv_sec += (time_t)t;
	dl.tv_nsec += (long)((t - (double)(time_t)t) * 1e9);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&mu);
	for (;;) {
		size_t missing = 0;
		for (size_t i = 0; i < n; i++)
			missing += cs[i]->cl && cs[i]->cl->joined < cs[i]->n;
		if (!missing)
			break;
		if (pthread_cond_timedwait(&join_cv, &mu, &dl) == ETIMEDOUT) {
			for (size_t i = 0; i < n; i++)
				leave(cs[i]);
			pthread_mutex_unlock(&mu);
			return fail(ncclSystemError, "fake NCCL: ranks in other processes are not supported "
			            "(%s: the clique did not complete in this process within %ld s)", "ncclCommInitRank",
			            (long)cfg.init_timeout);
		}
	}
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

static ncclResult_t init_all(struct comm **cs, size_t k);
static ncclResult_t split_finish(void);
static void *driver_sym(const char *name);
static double link_start(void);
static void link_wait(double t0, const struct call *c, int n);
static void xp_post(struct comm *c, const struct call *call, struct fakegpu_stream *s);
static void xp_leave(struct comm *c, int abort);

static void comm_free(struct comm *c)
{
	if (c) {
		free(c->uops);
		fprof_comm_fini(&c->prof);
		free(c->sent);
		free(c->rcvd);
		free(c);
	}
}

static ncclResult_t init_rank(ncclComm_t *out, int n, const ncclUniqueId *id, int rank)
{
	if (!out)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator pointer", "ncclCommInitRank");
	*out = NULL;
	if (n < 1 || rank < 0 || rank >= n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: bad rank %d or rank count %d", "ncclCommInitRank", rank, n);
	struct comm *c = calloc(1, sizeof(*c));
	if (!c || !(c->sent = calloc((size_t)n, sizeof(uint64_t))) || !(c->rcvd = calloc((size_t)n, sizeof(uint64_t)))) {
		comm_free(c);
		return fail(ncclSystemError, "fake NCCL: %s: out of memory", "ncclCommInitRank");
	}
	c->n = n;
	c->rank = rank;
	c->cta_policy = INT_MIN;
	memcpy(c->id, id->internal, sizeof(c->id));
	/* stream 0 means this context's NULL stream, as NCCL uses the communicator's device */
	int (*get_ctx)(void **) = (int (*)(void **))driver_sym("cuCtxGetCurrent");
	void *cx = NULL;
	if (get_ctx && get_ctx(&cx) == 0 && cx && ((struct fakegpu_ctx *)cx)->magic == FAKEGPU_CTX_MAGIC)
		c->ctx = cx;
	if (depth > 0) {
		/* grouped: joined and waited for at the outermost ncclGroupEnd */
		if (ginit_n == ginit_cap) {
			size_t cap = ginit_cap ? ginit_cap * 2 : 8;
			struct comm **nq = realloc(ginit, cap * sizeof(*nq));
			if (!nq) {
				comm_free(c);
				return fail(ncclSystemError, "fake NCCL: %s: out of memory", "ncclCommInitRank");
			}
			ginit = nq;
			ginit_cap = cap;
		}
		ginit[ginit_n++] = c;
		*out = c;
		return ncclSuccess;
	}
	ncclResult_t r = init_all(&c, 1);
	if (r) {
		comm_free(c);
		return r;
	}
	*out = c;
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int rank)
{
	FAIL_POINT();
	return init_rank(c, n, &id, rank);
}

/* ncclConfig_t as of NCCL 2.28 (2.27's ends after nvlsCTAs); the fields this fake reads. */
struct fake_config {
	size_t size;
	unsigned int magic, version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs;
	const char *netName;
	int splitShare, trafficClass;
	const char *commName;
	int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};

/*
 * Read a config as NCCL does: at most the bytes it knows of the size the
 * caller says, the magic checked, CTAPolicy read when the caller's version
 * is 2.27 or newer and checked against what this NCCL's version accepts
 * (0 and 1 from 2.27, 2 from 2.28; older versions ignore it). *policy gets
 * it (INT_MIN not set). FAKE_NCCL_REPORT_CONFIG=1 says what arrived.
 */
static ncclResult_t read_config(const void *config, int rank, int *policy)
{
	struct fake_config f;
	memset(&f, 0, sizeof(f));
	*policy = INT_MIN;
	if (!config)
		return ncclSuccess;
	size_t size;
	memcpy(&size, config, sizeof(size));
	memcpy(&f, config, size < sizeof(f) ? size : sizeof(f));
	if (f.magic != 0xcafebeef)
		return fail(ncclInvalidArgument, "fake NCCL: ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
	int has_policy = f.version >= 22700 && size > offsetof(struct fake_config, CTAPolicy) && cfg.version >= 22700;
	if (has_policy && f.CTAPolicy != INT_MIN) {
		int most = cfg.version >= 22800 ? 2 : 1;
		if (f.CTAPolicy < 0 || f.CTAPolicy > most)
			return fail(ncclInvalidArgument, "fake NCCL: invalid config policy attribute value %d", f.CTAPolicy);
		*policy = f.CTAPolicy;
	}
	if (getenv("FAKE_NCCL_REPORT_CONFIG")) {
		char pol[16] = "unset";
		if (*policy != INT_MIN)
			snprintf(pol, sizeof(pol), "%d", *policy);
		fprintf(stderr, "fake NCCL: rank %d: config size %zu version %u CTAPolicy %s\n", rank, size, f.version, pol);
	}
	return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *c, int n, ncclUniqueId id, int rank, void *config)
{
	FAIL_POINT();
	pthread_once(&env_once, read_env);
	int policy;
	ncclResult_t r = read_config(config, rank, &policy);
	if (!r)
		r = init_rank(c, n, &id, rank);
	if (!r && *c)
		(*c)->cta_policy = policy;
	return r;
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *c, int n, int rank, int nid, ncclUniqueId *ids, void *config)
{
	FAIL_POINT();
	(void)config;
	if (nid < 1 || !ids)
		return fail(ncclInvalidArgument, "fake NCCL: %s: no unique id", __func__);
	return init_rank(c, n, &ids[0], rank);
}

/* Every rank of a new clique in this process, as one group (devlist is not needed: the fake has no devices). */
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	FAIL_POINT();
	(void)devlist;
	if (!comms || ndev < 1)
		return fail(ncclInvalidArgument, "fake NCCL: %s: bad arguments", __func__);
	ncclUniqueId id;
	ncclResult_t r = ncclGetUniqueId(&id);
	if (r)
		return r;
	depth++;
	for (int i = 0; i < ndev && !r; i++)
		r = init_rank(&comms[i], ndev, &id, i);
	ncclResult_t end = ncclGroupEnd();
	return r ? r : end;
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
	FAIL_POINT();
	return c ? ncclSuccess : fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator", __func__);
}

/* ---- dropping work ---- */

/* Complete every posted part of p with an error and free it. Called with mu held. */
static void drop(struct pending *p)
{
	for (int i = 0; i < p->nparts; i++)
		if (p->parts[i].posted)
			p->parts[i].s->end(p->parts[i].s, CU_LAUNCH_FAILED);
	free(p);
}

/* Drop the clique's pending work; with c non-NULL, only what involves c. Called with mu held. */
static void drop_pending(struct clique *cl, const struct comm *c)
{
	struct pending **pp = &cl->pend;
	while (*pp) {
		struct pending *p = *pp;
		int mine = !c;
		for (int i = 0; i < p->nparts && !mine; i++)
			mine = p->parts[i].posted && p->parts[i].c.comm == c;
		if (mine) {
			*pp = p->next;
			drop(p);
		} else {
			pp = &p->next;
		}
	}
	cl->tail = pp;
}

ncclResult_t ncclCommDestroy(ncclComm_t c)
{
	FAIL_POINT();
	if (!c)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator", __func__);
	if (c->nreg && getenv("FAKE_NCCL_REPORT_REG"))
		fprintf(stderr, "fake NCCL: rank %d: destroyed with %d registrations still open\n", c->rank, c->nreg);
	int nops = 0;
	for (int k = 0; k < c->nuops; k++)
		nops += c->uops[k].live;
	if (nops && getenv("FAKE_NCCL_REPORT_OPS"))
		fprintf(stderr, "fake NCCL: rank %d: destroyed with %d reduction ops still made\n", c->rank, nops);
	if (c->xp)
		xp_leave(c, 0);
	pthread_mutex_lock(&mu);
	if (c->cl) {
		drop_pending(c->cl, c);
		leave(c);
	}
	pthread_mutex_unlock(&mu);
	comm_free(c);
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
	FAIL_POINT();
	if (!c)
		return ncclSuccess;
	if (c->xp)
		xp_leave(c, 1);
	pthread_mutex_lock(&mu);
	struct clique *cl = c->cl;
	if (cl) {
		cl->aborted = 1;
		drop_pending(cl, NULL);
		for (int r = 0; r < cl->n; r++) {
			struct comm *o = cl->ranks[r];
			if (o && o != c && !o->async_err) {
				o->async_err = ncclRemoteError;
				snprintf(o->last_err, sizeof(o->last_err), "fake NCCL: rank %d's communicator was aborted", c->rank);
			}
		}
		leave(c);
	}
	pthread_mutex_unlock(&mu);
	comm_free(c);
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
	FAIL_POINT();
	if (!c || !e)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	pthread_mutex_lock(&mu);
	*e = c->async_err;
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm_t c)
{
	if (c && c->async_err && c->last_err[0])
		return c->last_err;
	return tl_err;
}

/* ---- element arithmetic ---- */

static size_t type_size(int t)
{
	static const size_t sz[NTYPES] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return sz[t];
}

static int is_float(int t)
{
	return t >= T_HALF;
}

/* A small float format: exponent bits, mantissa bits, bias; e4m3 has no infinities. */
struct minifloat {
	int ebits, mbits, bias, e4m3;
};
static const struct minifloat F16 = { 5, 10, 15, 0 }, E4M3 = { 4, 3, 7, 1 }, E5M2 = { 5, 2, 15, 0 };

static double mf_decode(uint32_t b, const struct minifloat *f)
{
	int sign = (int)(b >> (f->ebits + f->mbits)) & 1;
	int exp = (int)(b >> f->mbits) & ((1 << f->ebits) - 1);
	uint32_t man = b & ((1u << f->mbits) - 1);
	int emax = (1 << f->ebits) - 1;
	double v;
	if (f->e4m3 && exp == emax && man == (1u << f->mbits) - 1)
		return NAN;
	if (!f->e4m3 && exp == emax)
		v = man ? NAN : INFINITY;
	else if (exp == 0)
		v = ldexp((double)man, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)(man | (1u << f->mbits)), exp - f->bias - f->mbits);
	return sign ? -v : v;
}

/* Round to nearest even; beyond the largest finite value: infinity, or the largest for e4m3. */
static uint32_t mf_encode(double v, const struct minifloat *f)
{
	uint32_t sign = signbit(v) ? 1u << (f->ebits + f->mbits) : 0;
	int emax = (1 << f->ebits) - 1;
	uint32_t maxbits = f->e4m3 ? ((uint32_t)emax << f->mbits) | ((1u << f->mbits) - 2)
	                           : ((uint32_t)(emax - 1) << f->mbits) | ((1u << f->mbits) - 1);
	if (isnan(v))
		return sign | ((uint32_t)emax << f->mbits) | ((1u << f->mbits) - 1);
	double a = fabs(v);
	if (a == 0)
		return sign;
	int e;
	frexp(a, &e);
	int E = e - 1; /* a = 1.m * 2^E */
	int emin = 1 - f->bias;
	if (E < emin)
		E = emin;
	double q = rint(ldexp(a, f->mbits - E)); /* mantissa with its leading bit, rounded */
	uint32_t bits;
	if (E == emin && q < ldexp(1, f->mbits)) {
		bits = (uint32_t)q; /* subnormal (or rounded up to the smallest normal) */
	} else {
		if (q >= ldexp(1, f->mbits + 1)) {
			q /= 2;
			E++;
		}
		int field = E + f->bias;
		if (field >= emax + (f->e4m3 ? 1 : 0))
			return sign | (f->e4m3 ? maxbits : ((uint32_t)emax << f->mbits));
		bits = ((uint32_t)field << f->mbits) | ((uint32_t)q & ((1u << f->mbits) - 1));
		if (bits > maxbits)
			return sign | (f->e4m3 ? maxbits : ((uint32_t)emax << f->mbits));
	}
	return sign | bits;
}

static double load_f(int t, const unsigned char *p)
{
	switch (t) {
	case T_HALF: { uint16_t x; memcpy(&x, p, 2); return mf_decode(x, &F16); }
	case T_FLOAT: { float x; memcpy(&x, p, 4); return x; }
	case T_DOUBLE: { double x; memcpy(&x, p, 8); return x; }
	case T_BF16: { uint16_t h; memcpy(&h, p, 2); uint32_t x = (uint32_t)h << 16; float f; memcpy(&f, &x, 4); return f; }
	case T_E4M3: return mf_decode(p[0], &E4M3);
	default: return mf_decode(p[0], &E5M2);
	}
}

static void store_f(int t, unsigned char *p, double v)
{
	switch (t) {
	case T_HALF: { uint16_t x = (uint16_t)mf_encode(v, &F16); memcpy(p, &x, 2); break; }
	case T_FLOAT: { float x = (float)v; memcpy(p, &x, 4); break; }
	case T_DOUBLE: memcpy(p, &v, 8); break;
	case T_BF16: {
		float f = (float)v;
		uint32_t x;
		memcpy(&x, &f, 4);
		uint16_t h = (x & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((x >> 16) | 0x40u)
		                                              : (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
		memcpy(p, &h, 2);
		break;
	}
	case T_E4M3: p[0] = (unsigned char)mf_encode(v, &E4M3); break;
	default: p[0] = (unsigned char)mf_encode(v, &E5M2); break;
	}
}

/* Integers as 64-bit two's complement (sign- or zero-extended). */
static uint64_t load_i(int t, const unsigned char *p)
{
	switch (t) {
	case T_INT8: { int8_t x; memcpy(&x, p, 1); return (uint64_t)(int64_t)x; }
	case T_UINT8: return p[0];
	case T_INT32: { int32_t x; memcpy(&x, p, 4); return (uint64_t)(int64_t)x; }
	case T_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
	default: { uint64_t x; memcpy(&x, p, 8); return x; }
	}
}

static void store_i(int t, unsigned char *p, uint64_t v)
{
	switch (t) {
	case T_INT8: case T_UINT8: p[0] = (unsigned char)v; break;
	case T_INT32: case T_UINT32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

/* v wrapped to the type's width, as a signed or unsigned 64-bit value. */
static uint64_t wrap_i(int t, uint64_t v)
{
	unsigned char b[8];
	store_i(t, b, v);
	return load_i(t, b);
}

static int is_signed(int t)
{
	return t == T_INT8 || t == T_INT32 || t == T_INT64;
}

/* out[i] = redop over k < nin of in[k][i], for count elements. */
static void reduce(int t, int op, int nranks, const unsigned char *const *in, int nin, size_t count, unsigned char *out)
{
	size_t es = type_size(t);
	for (size_t i = 0; i < count; i++) {
		size_t o = i * es;
		if (is_float(t)) {
			double acc = load_f(t, in[0] + o);
			for (int k = 1; k < nin; k++) {
				double v = load_f(t, in[k] + o);
				switch (op) {
				case R_PROD: acc *= v; break;
				case R_MAX: acc = v > acc ? v : acc; break;
				case R_MIN: acc = v < acc ? v : acc; break;
				default: acc += v; break;
				}
			}
			if (op == R_AVG)
				acc /= nranks;
			store_f(t, out + o, acc);
			continue;
		}
		uint64_t acc = load_i(t, in[0] + o);
		for (int k = 1; k < nin; k++) {
			uint64_t v = load_i(t, in[k] + o);
			switch (op) {
			case R_PROD: acc *= v; break;
			case R_MAX:
				if (is_signed(t) ? (int64_t)v > (int64_t)acc : v > acc)
					acc = v;
				break;
			case R_MIN:
				if (is_signed(t) ? (int64_t)v < (int64_t)acc : v < acc)
					acc = v;
				break;
			default: acc += v; break;
			}
		}
		if (op == R_AVG) {
			acc = wrap_i(t, acc);
			acc = is_signed(t) ? (uint64_t)((int64_t)acc / nranks) : acc / (uint64_t)nranks;
		}
		store_i(t, out + o, acc);
	}
}

/*
 * count elements of type t at p multiplied in place by scalar (as the
 * type), rounded to the type: a pre-multiplied sum's first step, each
 * rank's input by its own scalar, before the sum.
 */
static void premultiply(int t, const unsigned char *scalar, unsigned char *p, size_t count)
{
	size_t es = type_size(t);
	if (is_float(t)) {
		double k = load_f(t, scalar);
		for (size_t i = 0; i < count; i++)
			store_f(t, p + i * es, load_f(t, p + i * es) * k);
		return;
	}
	uint64_t k = load_i(t, scalar);
	for (size_t i = 0; i < count; i++)
		store_i(t, p + i * es, load_i(t, p + i * es) * k);
}

/* Make the first element at p wrong by 7 (FAKE_NCCL_CORRUPT). */
static void corrupt(int t, unsigned char *p)
{
	if (is_float(t)) {
		double v = load_f(t, p);
		store_f(t, p, v > 0 ? v - 7 : v + 7);
	} else {
		store_i(t, p, load_i(t, p) + 7);
	}
}

/* ---- running work ---- */

/* Elements rank r reads (input) and writes (output) for a collective. */
static size_t in_count(const struct call *c, int r, int n)
{
	switch (c->kind) {
	case K_REDUCESCATTER: case K_ALLTOALL: return c->count * (size_t)n;
	case K_BROADCAST: return r == c->root ? c->count : 0;
	case K_SCATTER: return r == c->root ? c->count * (size_t)n : 0;
	default: return c->count;
	}
}

static size_t out_count(const struct call *c, int r, int n)
{
	switch (c->kind) {
	case K_ALLGATHER: case K_ALLTOALL: return c->count * (size_t)n;
	case K_GATHER: return r == c->root ? c->count * (size_t)n : 0;
	case K_REDUCE: return r == c->root ? c->count : 0;
	default: return c->count;
	}
}

static void set_async(struct clique *cl, int err, const char *text)
{
	for (int r = 0; r < cl->n; r++)
		if (cl->ranks[r] && !cl->ranks[r]->async_err) {
			cl->ranks[r]->async_err = err;
			snprintf(cl->ranks[r]->last_err, sizeof(cl->ranks[r]->last_err), "%s", text);
		}
}

/*
 * Write rank r's output of collective c0 (n ranks) to out, from every
 * rank's input ins[k]. tmp (one chunk) keeps a reduction shared by every
 * rank (*tmp_ready says it is there); view holds n pointers of scratch.
 */
static void coll_output(const struct call *c0, int r, int n, const unsigned char *const *ins, unsigned char *out,
                        unsigned char *tmp, int *tmp_ready, const unsigned char **view)
{
	size_t chunk = c0->count * type_size(c0->dtype);
	int root = c0->root;
	switch (c0->kind) {
	case K_ALLREDUCE:
		if (!*tmp_ready)
			reduce(c0->dtype, c0->redop, n, ins, n, c0->count, tmp);
		*tmp_ready = 1;
		memcpy(out, tmp, chunk);
		break;
	case K_REDUCE:
		if (r == root)
			reduce(c0->dtype, c0->redop, n, ins, n, c0->count, out);
		break;
	case K_REDUCESCATTER:
		for (int k = 0; k < n; k++)
			view[k] = ins[k] + (size_t)r * chunk;
		reduce(c0->dtype, c0->redop, n, view, n, c0->count, out);
		break;
	case K_ALLGATHER:
		for (int k = 0; k < n; k++)
			memcpy(out + (size_t)k * chunk, ins[k], chunk);
		break;
	case K_BROADCAST:
		memcpy(out, ins[root], chunk);
		break;
	case K_ALLTOALL:
		for (int k = 0; k < n; k++)
			memcpy(out + (size_t)k * chunk, ins[k] + (size_t)r * chunk, chunk);
		break;
	case K_GATHER:
		for (int k = 0; k < n && r == root; k++)
			memcpy(out + (size_t)k * chunk, ins[k], chunk);
		break;
	case K_SCATTER:
		memcpy(out, ins[root] + (size_t)r * chunk, chunk);
		break;
	default:
		break;
	}
	if (r == cfg.corrupt && out_count(c0, r, n) > 0)
		corrupt(c0->dtype, out);
}

/* Move the data of a collective whose every part is posted. Returns 0, or -1 when ranks disagree. */
static int run_coll(struct clique *cl, struct pending *p)
{
	int n = cl->n;
	const struct call *c0 = &p->parts[0].c;
	for (int r = 1; r < n; r++) {
		const struct call *c = &p->parts[r].c;
		if (c->kind != c0->kind || c->count != c0->count || c->dtype != c0->dtype ||
		    c->redop != c0->redop || c->root != c0->root) {
			char text[256];
			snprintf(text, sizeof(text), "fake NCCL: ranks 0 and %d called different operations as their "
			         "collective number %llu (%s and %s)", r, (unsigned long long)p->seq, kind_name[c0->kind],
			         kind_name[c->kind]);
			set_async(cl, ncclInvalidUsage, text);
			return -1;
		}
	}
	size_t es = type_size(c0->dtype), chunk = c0->count * es;
	if (!chunk)
		return 0;
	unsigned char **snap = calloc((size_t)n, sizeof(*snap));
	unsigned char *tmp = malloc(chunk ? chunk : 1);
	int ok = snap && tmp;
	for (int r = 0; r < n && ok; r++) {
		size_t b = in_count(c0, r, n) * es;
		if (!b)
			continue;
		snap[r] = malloc(b);
		ok = snap[r] != NULL;
		if (ok)
			memcpy(snap[r], p->parts[r].c.send, b);
		if (ok && c0->redop == R_PREMUL)
			premultiply(c0->dtype, p->parts[r].c.scalar, snap[r], b / es);
	}
	if (!ok) {
		set_async(cl, ncclSystemError, "fake NCCL: out of memory running a collective");
		for (int r = 0; snap && r < n; r++)
			free(snap[r]);
		free(snap);
		free(tmp);
		return -1;
	}
	const unsigned char **ins = (const unsigned char **)snap;
	const unsigned char **view = calloc((size_t)n, sizeof(*view));
	int tmp_ready = 0;
	for (int r = 0; r < n && view; r++)
		coll_output(c0, r, n, ins, p->parts[r].c.recv, tmp, &tmp_ready, view);
	for (int r = 0; r < n; r++)
		free(snap[r]);
	free(snap);
	free(tmp);
	free(view);
	return 0;
}

static void run_p2p(struct clique *cl, struct pending *p)
{
	const struct call *s = &p->parts[0].c, *r = &p->parts[1].c;
	if (s->count != r->count || s->dtype != r->dtype) {
		char text[256];
		snprintf(text, sizeof(text), "fake NCCL: rank %d sends %zu elements of type %d to rank %d, which "
		         "receives %zu of type %d", p->a, s->count, s->dtype, p->b, r->count, r->dtype);
		set_async(cl, ncclInvalidUsage, text);
		p->dead = 1;
		return;
	}
	size_t bytes = s->count * type_size(s->dtype);
	if (bytes)
		memmove(r->recv, s->send, bytes);
	if (p->b == cfg.corrupt && bytes)
		corrupt(r->dtype, r->recv);
}

/* Find or add the pending entry (tag, seq, a, b) with nparts parts. Called with mu held. */
static struct pending *entry(struct clique *cl, enum tag tag, uint64_t seq, int a, int b, int nparts)
{
	for (struct pending *p = cl->pend; p; p = p->next)
		if (p->tag == tag && p->seq == seq && p->a == a && p->b == b && tag != TAG_HELD)
			return p;
	struct pending *p = calloc(1, sizeof(*p) + (size_t)nparts * sizeof(struct part));
	if (!p)
		return NULL;
	p->tag = tag;
	p->seq = seq;
	p->a = a;
	p->b = b;
	p->nparts = nparts;
	*cl->tail = p;
	cl->tail = &p->next;
	return p;
}

static void unlink_entry(struct clique *cl, struct pending *p)
{
	struct pending **pp = &cl->pend;
	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	if (cl->tail == &p->next)
		cl->tail = pp;
}

/*
 * Post one rank's part of an operation, on stream s (whose begin() has been
 * called). Runs the operation when this part completes it. Called with mu held.
 */
static void post(const struct call *c, struct fakegpu_stream *s)
{
	struct comm *cm = c->comm;
	struct clique *cl = cm->cl;
	if (cm->xp) {
		xp_post(cm, c, s);
		return;
	}
	if (!cl || cl->aborted) {
		s->end(s, CU_LAUNCH_FAILED);
		return;
	}
	int held = cm->rank == cfg.hang;
	if (cm->rank == cfg.async_rank && cm->done >= cfg.async_after) {
		held = 1;
		if (!cm->async_err) {
			cm->async_err = ncclRemoteError;
			snprintf(cm->last_err, sizeof(cm->last_err), "fake NCCL: FAKE_NCCL_ASYNC_ERROR after %llu "
			         "operations on rank %d", (unsigned long long)cfg.async_after, cm->rank);
		}
	}
	struct pending *p;
	int slot;
	if (held) {
		p = entry(cl, TAG_HELD, 0, cm->rank, cm->rank, 1);
		slot = 0;
	} else if (c->kind == K_SEND) {
		p = entry(cl, TAG_P2P, cm->sent[c->peer]++, cm->rank, c->peer, 2);
		slot = 0;
	} else if (c->kind == K_RECV) {
		p = entry(cl, TAG_P2P, cm->rcvd[c->peer]++, c->peer, cm->rank, 2);
		slot = 1;
	} else {
		p = entry(cl, TAG_COLL, cm->coll_seq++, -1, -1, cl->n);
		slot = cm->rank;
	}
	if (!p) {
		set_async(cl, ncclSystemError, "fake NCCL: out of memory posting work");
		s->end(s, CU_LAUNCH_FAILED);
		return;
	}
	p->parts[slot].posted = 1;
	p->parts[slot].c = *c;
	p->parts[slot].s = s;
	if (held || ++p->arrived < p->nparts)
		return;
	double t0 = link_start();
	if (cfg.link_nodata)
		; /* timing only */
	else if (p->tag == TAG_P2P)
		run_p2p(cl, p);
	else if (run_coll(cl, p))
		p->dead = 1;
	link_wait(t0, &p->parts[0].c, cl->n);
	if (p->dead)
		return; /* stays until abort or destroy drops it */
	unlink_entry(cl, p);
	for (int i = 0; i < p->nparts; i++) {
		struct comm *o = p->parts[i].c.comm;
		o->done++;
		fprof_ran(p->parts[i].c.prof);
		p->parts[i].s->end(p->parts[i].s, 0);
	}
	free(p);
}

/* ---- FAKE_NCCL_LINK: operations that take the time a link would ---- */

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* When an operation starts running (0 without FAKE_NCCL_LINK). */
static double link_start(void)
{
	return cfg.link_bps > 0 ? mono_now() : 0;
}

/*
 * With FAKE_NCCL_LINK=LAT_US:GBPS, sleep until the operation c (on n
 * ranks) started at t0 has lasted LAT_US + its bytes (a rank's input; a
 * message's for sends) at GBPS GB/s, as a GPU's would over a link: times
 * then follow sizes as a real system's do, with the host's scheduling
 * noise on top, which tests of compare need. Nothing without it. In one
 * process it sleeps holding the fake's lock: operations run one at a time.
 */
static void link_wait(double t0, const struct call *c, int n)
{
	if (!(cfg.link_bps > 0))
		return;
	size_t items = c->kind == K_SEND || c->kind == K_RECV ? c->count : in_count(c, c->root, n);
	double end = t0 + cfg.link_lat_s + (double)(items * type_size(c->dtype)) / cfg.link_bps;
	struct timespec ts;
	ts.tv_sec = (time_t)end;
	ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Stream work: one rank's part (the struct call in w->arg). */
static void launch(const struct fakegpu_work *w, struct fakegpu_stream *s)
{
	struct call c;
	memcpy(&c, w->arg, sizeof(c));
	s->begin(s);
	pthread_mutex_lock(&mu);
	post(&c, s);
	pthread_mutex_unlock(&mu);
}

/* Launch one call: its profiler events (NCCL raises them at launch, not when a graph replays it), then onto s. */
static int submit(const struct call *c, struct fakegpu_stream *s)
{
	struct fakegpu_work w;
	struct call pc = *c;
	int rooted = c->kind == K_BROADCAST || c->kind == K_REDUCE || c->kind == K_GATHER || c->kind == K_SCATTER;
	int p2p = c->kind == K_SEND || c->kind == K_RECV;
	pc.prof = fprof_launch(&c->comm->prof, c->kind, kind_name[c->kind] + 4 /* "ncclAllReduce": "AllReduce" */, !p2p,
	                       c->dtype, c->count, p2p ? c->peer : rooted ? c->root : -1);
	memset(&w, 0, sizeof(w));
	w.launch = launch;
	memcpy(w.arg, &pc, sizeof(pc));
	return s->submit(s, &w);
}

/*
 * A user op (ncclRedOpCreatePreMulSum's) of c's communicator into c: its
 * scalar copied and the op marked R_PREMUL. ncclSuccess, or an error when
 * the op is not a live one of that communicator or of another type.
 */
static ncclResult_t use_uop(struct call *c, const char *name)
{
	struct comm *cm = c->comm;
	int k = c->redop - NREDOPS;
	pthread_mutex_lock(&mu);
	int ok = k >= 0 && k < cm->nuops && cm->uops[k].live;
	int dtype = ok ? cm->uops[k].dtype : -1;
	if (ok)
		memcpy(c->scalar, cm->uops[k].scalar, sizeof(c->scalar));
	pthread_mutex_unlock(&mu);
	if (!ok)
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid reduction op %d", name, c->redop);
	if (dtype != c->dtype)
		return fail(ncclInvalidArgument, "fake NCCL: %s: reduction op %d was made for type %d, not %d", name,
		            c->redop, dtype, c->dtype);
	c->redop = R_PREMUL;
	return ncclSuccess;
}

/* Check a call's arguments, then queue it (in a group) or submit it. Stream 0 is the NULL stream of the communicator's context. */
static ncclResult_t enqueue(const struct call *call, struct fakegpu_stream *s)
{
	struct call copy = *call, *c = &copy;
	const char *name = kind_name[c->kind];
	struct comm *cm = c->comm;
	if (!cm || (!cm->cl && !cm->xp))
		return fail(ncclInvalidArgument, "fake NCCL: %s: no communicator (or one not initialised)", name);
	if (!s && cm->ctx)
		s = cm->ctx->null_stream(cm->ctx);
	if (!s || s->magic != FAKEGPU_STREAM_MAGIC)
		return fail(ncclInvalidArgument, "fake NCCL: %s: the stream is not one of the fake CUDA driver's",
		            name);
	if (c->dtype < 0 || c->dtype >= NTYPES)
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid data type %d", name, c->dtype);
	int fp8 = c->dtype == T_E4M3 || c->dtype == T_E5M2;
	if (c->redop >= NREDOPS && (c->kind == K_ALLREDUCE || c->kind == K_REDUCE || c->kind == K_REDUCESCATTER)) {
		if (fp8) /* as NCCL 2.28.9 on an H200: the op is made, the collective refused */
			return fail(ncclInvalidArgument, "fake NCCL: %s: a pre-multiplied sum is not supported on fp8 types",
			            name);
		ncclResult_t r = use_uop(c, name);
		if (r)
			return r;
	} else if (c->redop < 0 || c->redop >= NREDOPS) {
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid reduction op %d", name, c->redop);
	}
	if (c->redop == R_AVG && fp8)
		return fail(ncclInvalidArgument, "fake NCCL: %s: ncclAvg is not supported on fp8 types", name);
	if (c->root < 0 || c->root >= cm->n || c->peer < 0 || c->peer >= cm->n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: root or peer %d out of range", name,
		            c->root < 0 || c->root >= cm->n ? c->root : c->peer);
	int n = cm->n;
	if ((c->kind != K_RECV && in_count(c, cm->rank, n) && !c->send) ||
	    (c->kind != K_SEND && out_count(c, cm->rank, n) && !c->recv))
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL buffer", name);
	if (depth == 0)
		return submit(c, s) ? ncclUnhandledCudaError : ncclSuccess;
	if (gq_n == gq_cap) {
		size_t cap = gq_cap ? gq_cap * 2 : 16;
		struct queued *nq = realloc(gq, cap * sizeof(*nq));
		if (!nq)
			return fail(ncclSystemError, "fake NCCL: %s: out of memory", name);
		gq = nq;
		gq_cap = cap;
	}
	gq[gq_n].c = *c;
	gq[gq_n].s = s;
	gq_n++;
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	FAIL_POINT();
	depth++;
	return ncclSuccess;
}

static void group_reset(void)
{
	free(gq);
	gq = NULL;
	gq_n = gq_cap = 0;
	free(ginit);
	ginit = NULL;
	ginit_n = ginit_cap = 0;
	group_err = ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	FAIL_POINT();
	if (depth == 0)
		return fail(ncclInvalidUsage, "fake NCCL: %s without ncclGroupStart", __func__);
	if (--depth > 0)
		return ncclSuccess;
	ncclResult_t r = group_err;
	if (!r)
		r = split_finish();
	if (!r && ginit_n)
		r = init_all(ginit, ginit_n);
	for (size_t i = 0; i < gq_n && !r; i++)
		if (submit(&gq[i].c, gq[i].s))
			r = fail(ncclUnhandledCudaError, "fake NCCL: %s: the stream refused work", __func__);
	group_reset();
	return r;
}

/* ---- cliques across processes ---- */

/*
 * Every clique registers in a shared-memory file named after its unique
 * id (/dev/shm/fakenccl-<uid>-<hash>): ranks write their pid there and
 * wait until all have joined. When every rank is in this process the file
 * is let go and the clique runs in-process (above). Otherwise each rank
 * gets a thread that runs its work in order through the file: a
 * collective's inputs are copied into a slot (XP_SLOTS in a ring, one
 * region of FAKE_XP_BYTES per rank), and once all have arrived each rank
 * computes its own output from them; a send copies into the (sender,
 * receiver) ring of XP_PSLOTS messages, the receive copies out. The file
 * is unlinked once everyone has mapped it.
 */
#define XP_MAXR 64
#define XP_SLOTS 8
#define XP_PSLOTS 2
#define XP_MAGIC 0x66616b6578703031ull

struct xp_part {
	int kind, dtype, redop, root;
	size_t count;
};
struct xp_slot {
	uint64_t seq;
	int arrived, consumed;
	struct xp_part part[XP_MAXR];
};
struct xp_msg {
	uint64_t seq;
	int full, dtype;
	size_t count;
};
struct xp_hdr {
	uint64_t magic;
	int ready, n;
	size_t cap;
	pthread_mutex_t mu; /* process-shared, robust */
	uint32_t wake;      /* futex word: bumped on every change waiters may be waiting for */
	int joined, seen, aborted;
	int pids[XP_MAXR];
	struct xp_slot slots[XP_SLOTS];
	/* then n*n*XP_PSLOTS struct xp_msg, then the data */
};

struct xp_map {
	struct xp_map *next;
	unsigned char id[128];
	char path[96];
	struct xp_hdr *h;
	size_t size;
	int refs;
};

static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xp_map *maps;

static size_t xp_cap(void)
{
	long kib = env_long("FAKE_XP_KIB", 1024);
	return (size_t)(kib > 0 ? kib : 1024) << 10;
}

static size_t msgs_off(void)
{
	return (sizeof(struct xp_hdr) + 63) & ~(size_t)63;
}

static size_t data_off(int n)
{
	return (msgs_off() + (size_t)n * (size_t)n * XP_PSLOTS * sizeof(struct xp_msg) + 4095) & ~(size_t)4095;
}

static size_t xp_size(int n, size_t cap)
{
	return data_off(n) + (size_t)XP_SLOTS * (size_t)n * cap + (size_t)n * (size_t)n * XP_PSLOTS * cap;
}

static struct xp_msg *xp_msg(struct xp_hdr *h, int a, int b, uint64_t k)
{
	struct xp_msg *m = (struct xp_msg *)((char *)h + msgs_off());
	return &m[((size_t)a * (size_t)h->n + (size_t)b) * XP_PSLOTS + k % XP_PSLOTS];
}

static unsigned char *xp_slot_data(struct xp_hdr *h, uint64_t k, int r)
{
	return (unsigned char *)h + data_off(h->n) + ((k % XP_SLOTS) * (size_t)h->n + (size_t)r) * h->cap;
}

static unsigned char *xp_msg_data(struct xp_hdr *h, int a, int b, uint64_t k)
{
	size_t base = data_off(h->n) + (size_t)XP_SLOTS * (size_t)h->n * h->cap;
	return (unsigned char *)h + base + (((size_t)a * (size_t)h->n + (size_t)b) * XP_PSLOTS + k % XP_PSLOTS) * h->cap;
}

/*
 * Whether the clique is aborted: 1 a rank called ncclCommAbort, 2 a process
 * died holding the lock (read and set without the lock: see xp_lock_for).
 */
static int xp_aborted(struct xp_hdr *h)
{
	return __atomic_load_n(&h->aborted, __ATOMIC_ACQUIRE);
}

/* The lock was taken with EOWNERDEAD: a process died holding it, and nothing it was doing can be trusted. */
static void xp_owner_died(struct xp_hdr *h)
{
	__atomic_store_n(&h->aborted, 2, __ATOMIC_RELEASE);
	pthread_mutex_consistent(&h->mu);
}

static void xp_lock(struct xp_hdr *h)
{
	if (pthread_mutex_lock(&h->mu) == EOWNERDEAD)
		xp_owner_died(h);
}

static uint64_t fnv(const unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++)
		x = (x ^ p[i]) * 0x100000001b3ull;
	return x;
}

static void xp_detach(struct xp_map *m)
{
	pthread_mutex_lock(&maps_mu);
	int last = --m->refs == 0;
	if (last) {
		struct xp_map **pp = &maps;
		while (*pp != m)
			pp = &(*pp)->next;
		*pp = m->next;
	}
	pthread_mutex_unlock(&maps_mu);
	if (last) {
		munmap(m->h, m->size);
		free(m);
	}
}

/* Sleep a millisecond at a time until *flag is set or the deadline passes. */
static int wait_flag(const int *flag, double seconds)
{
	for (double t = 0; t < seconds; t += 0.001) {
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			return 0;
		usleep(1000);
	}
	return -1;
}

/*
 * Remove registry files left by cliques whose id was made by a process
 * that is gone (killed during init: after init the file is already unlinked).
 */
static void sweep(void)
{
	char prefix[48];
	int plen = snprintf(prefix, sizeof(prefix), "fakenccl-%u-", (unsigned)getuid());
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
			continue;
		char *end;
		long pid = strtol(e->d_name + plen, &end, 10);
		if (pid <= 0 || *end != '-' || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		unlink(path);
	}
	closedir(d);
}

/* Map the clique's registry file (creating it), once per process. NULL when shared memory is unusable. */
static struct xp_map *xp_attach(const struct comm *c)
{
	pthread_mutex_lock(&maps_mu);
	for (struct xp_map *m = maps; m; m = m->next)
		if (!memcmp(m->id, c->id, sizeof(m->id))) {
			m->refs++;
			pthread_mutex_unlock(&maps_mu);
			return m;
		}
	struct xp_map *m = calloc(1, sizeof(*m));
	if (!m || c->n > XP_MAXR)
		goto fail;
	memcpy(m->id, c->id, sizeof(m->id));
	uint64_t gen;
	memcpy(&gen, c->id + 8, sizeof(gen)); /* the pid ncclGetUniqueId put there */
	sweep();
	snprintf(m->path, sizeof(m->path), "/dev/shm/fakenccl-%u-%llu-%016llx%016llx", (unsigned)getuid(),
	         (unsigned long long)(gen < 1u << 30 ? gen : 0),
	         (unsigned long long)fnv(c->id, sizeof(c->id), 0xcbf29ce484222325ull),
	         (unsigned long long)fnv(c->id, sizeof(c->id), 0x84222325cbf29ce4ull));
	size_t cap = xp_cap();
	m->size = xp_size(c->n, cap);
	int creator = 1;
	int fd = open(m->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		creator = 0;
		fd = open(m->path, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0)
		goto fail;
	if (creator && ftruncate(fd, (off_t)m->size) != 0) {
		close(fd);
		unlink(m->path);
		goto fail;
	}
	struct stat st;
	for (int i = 0; !creator && i < 10000; i++) {
		if (fstat(fd, &st) == 0 && (size_t)st.st_size >= m->size)
			break;
		usleep(1000);
	}
	void *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		goto fail;
	m->h = p;
	if (creator) {
		struct xp_hdr *h = m->h;
		h->magic = XP_MAGIC;
		h->n = c->n;
		h->cap = cap;
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&h->mu, &ma);
		pthread_mutexattr_destroy(&ma);
		for (int i = 0; i < XP_SLOTS; i++)
			h->slots[i].seq = (uint64_t)i;
		for (int a = 0; a < c->n; a++)
			for (int b = 0; b < c->n; b++)
				for (uint64_t k = 0; k < XP_PSLOTS; k++)
					xp_msg(h, a, b, k)->seq = k;
		__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
	} else if (wait_flag(&m->h->ready, cfg.init_timeout) != 0 || m->h->magic != XP_MAGIC || m->h->n != c->n ||
	           m->h->cap != cap) {
		munmap(m->h, m->size);
		goto fail;
	}
	m->refs = 1;
	m->next = maps;
	maps = m;
	pthread_mutex_unlock(&maps_mu);
	return m;
fail:
	pthread_mutex_unlock(&maps_mu);
	free(m);
	return NULL;
}

/*
 * Let the lock go and wait up to 20 ms for a change, through a futex word
 * in the shared file rather than a process-shared condition variable:
 * glibc's condition variable makes a broadcaster wait for its waiters, so a
 * peer stopped (SIGSTOP) inside a wait would block every other process's
 * ncclCommAbort; a futex wake never waits for anyone.
 */
static void xp_sleep(struct xp_hdr *h)
{
	uint32_t seen = __atomic_load_n(&h->wake, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&h->mu);
	struct timespec ts = { 0, 20 * 1000000L };
	syscall(SYS_futex, &h->wake, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Wait (lock held) for a change, then hold the lock again (init: it has its own deadline). */
static void xp_nap(struct xp_hdr *h)
{
	xp_sleep(h);
	xp_lock(h);
}

/* Wake every process waiting in xp_nap. */
static void xp_wake(struct xp_hdr *h)
{
	__atomic_add_fetch(&h->wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &h->wake, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static int xp_gone(struct comm *c)
{
	return xp_aborted(c->xp->h) || __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
}

/*
 * Take the shared file's lock for rank c's worker: 0 when taken, 1 (not
 * taken) once the clique is aborted or c is going away. It tries 20 ms at a
 * time and looks at both in between: a peer stopped (SIGSTOP) while holding
 * the lock never lets it go, and this rank's ncclCommAbort, which joins the
 * worker, must still return (NCCL's own abort waits for no peer).
 */
static int xp_lock_for(struct comm *c)
{
	struct xp_hdr *h = c->xp->h;
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		int e = pthread_mutex_timedlock(&h->mu, &ts);
		if (e == EOWNERDEAD)
			xp_owner_died(h);
		if (e == 0 || e == EOWNERDEAD)
			return 0;
		if (xp_gone(c))
			return 1;
	}
}

/*
 * One wait of xp_run's (lock held): 1 when the clique is gone, so stop
 * waiting (*locked cleared when the lock could not be taken again); 0 to
 * look again.
 */
static int xp_wait(struct comm *c, int *locked)
{
	if (xp_gone(c))
		return 1;
	xp_sleep(c->xp->h);
	if (xp_lock_for(c)) {
		*locked = 0;
		return 1;
	}
	return 0;
}

static void xp_async(struct comm *c, int err, const char *text)
{
	pthread_mutex_lock(&mu);
	if (!c->async_err) {
		c->async_err = err;
		snprintf(c->last_err, sizeof(c->last_err), "%s", text);
	}
	pthread_mutex_unlock(&mu);
}

/*
 * Run one part of this rank's work through the shared file, in order.
 * Returns 0 when done, CU_LAUNCH_FAILED when the clique was aborted or the
 * communicator is going away, -1 when the work is held (never runs).
 */
static int xp_run(struct comm *c, const struct call *call)
{
	struct xp_hdr *h = c->xp->h;
	int n = c->n, rank = c->rank;
	pthread_mutex_lock(&mu);
	int held = rank == cfg.hang;
	if (rank == cfg.async_rank && c->done >= cfg.async_after) {
		held = 1;
		if (!c->async_err) {
			c->async_err = ncclRemoteError;
			snprintf(c->last_err, sizeof(c->last_err), "fake NCCL: FAKE_NCCL_ASYNC_ERROR after %llu "
			         "operations on rank %d", (unsigned long long)cfg.async_after, rank);
		}
	}
	pthread_mutex_unlock(&mu);
	if (held)
		return -1;
	size_t es = type_size(call->dtype);
	size_t bytes = (call->kind == K_SEND || call->kind == K_RECV ? call->count : in_count(call, rank, n)) * es;
	if (bytes > h->cap) {
		char text[256];
		snprintf(text, sizeof(text), "fake NCCL: across processes an operation may move at most %zu KiB per "
		         "rank (FAKE_XP_KIB); %s wants %zu bytes", h->cap >> 10, kind_name[call->kind], bytes);
		xp_async(c, ncclInvalidUsage, text);
		return -1;
	}
	double t0 = link_start();
	int rc = xp_lock_for(c), locked = !rc;
	if (rc) {
		/* gone before it started */
	} else if (call->kind == K_SEND) {
		uint64_t k = c->sent[call->peer]++;
		struct xp_msg *m = xp_msg(h, rank, call->peer, k);
		while ((m->seq != k || m->full) && !(rc = xp_wait(c, &locked)))
			continue;
		if (!rc) {
			if (bytes)
				memcpy(xp_msg_data(h, rank, call->peer, k), call->send, bytes);
			m->count = call->count;
			m->dtype = call->dtype;
			m->full = 1;
		}
	} else if (call->kind == K_RECV) {
		uint64_t k = c->rcvd[call->peer]++;
		struct xp_msg *m = xp_msg(h, call->peer, rank, k);
		while ((m->seq != k || !m->full) && !(rc = xp_wait(c, &locked)))
			continue;
		if (!rc && (m->count != call->count || m->dtype != call->dtype)) {
			xp_async(c, ncclInvalidUsage, "fake NCCL: a send and its receive disagree on count or type");
			rc = -1;
		}
		if (!rc) {
			if (bytes) {
				memcpy(call->recv, xp_msg_data(h, call->peer, rank, k), bytes);
				if (rank == cfg.corrupt)
					corrupt(call->dtype, call->recv);
			}
			m->full = 0;
			m->seq += XP_PSLOTS;
		}
	} else {
		uint64_t k = c->coll_seq++;
		struct xp_slot *sl = &h->slots[k % XP_SLOTS];
		while (sl->seq != k && !(rc = xp_wait(c, &locked)))
			continue;
		if (!rc) {
			if (bytes)
				memcpy(xp_slot_data(h, k, rank), call->send, bytes);
			if (bytes && call->redop == R_PREMUL)
				premultiply(call->dtype, call->scalar, xp_slot_data(h, k, rank), bytes / es);
			sl->part[rank] = (struct xp_part){ call->kind, call->dtype, call->redop, call->root, call->count };
			sl->arrived++;
			xp_wake(h);
		}
		while (!rc && sl->arrived < n && !(rc = xp_wait(c, &locked)))
			continue;
		for (int r = 0; r < n && !rc; r++)
			if (memcmp(&sl->part[r], &sl->part[0], sizeof(sl->part[0])) != 0) {
				xp_async(c, ncclInvalidUsage, "fake NCCL: ranks called different collectives at the same point");
				rc = -1;
			}
		if (!rc) {
			const unsigned char *ins[XP_MAXR], *view[XP_MAXR];
			unsigned char *tmp = malloc(call->count * es + 1);
			int tmp_ready = 0;
			if (tmp) {
				for (int r = 0; r < n; r++)
					ins[r] = xp_slot_data(h, k, r);
				if (call->count)
					coll_output(call, rank, n, ins, call->recv, tmp, &tmp_ready, view);
			} else {
				xp_async(c, ncclSystemError, "fake NCCL: out of memory running a collective");
				rc = -1;
			}
			free(tmp);
		}
		if (locked && rc >= 0 && !xp_gone(c) && ++sl->consumed == n) {
			sl->seq += XP_SLOTS;
			sl->arrived = sl->consumed = 0;
		}
	}
	int aborted = xp_aborted(h);
	if (rc > 0 || aborted) {
		rc = CU_LAUNCH_FAILED;
		if (aborted)
			xp_async(c, ncclRemoteError, aborted == 2 ? "fake NCCL: a peer process died in the middle of an operation"
			                                          : "fake NCCL: a peer's communicator was aborted");
	}
	xp_wake(h);
	if (locked)
		pthread_mutex_unlock(&h->mu);
	if (!rc)
		link_wait(t0, call, n);
	return rc;
}

/* This rank's worker: its work in order, like a GPU running a stream. */
static void *xp_thread(void *arg)
{
	struct comm *c = arg;
	struct queued *held = NULL;
	size_t nheld = 0;
	for (;;) {
		pthread_mutex_lock(&c->qmu);
		while (c->qh == c->qn && !c->stop)
			pthread_cond_wait(&c->qcv, &c->qmu);
		if (c->qh == c->qn) {
			pthread_mutex_unlock(&c->qmu);
			break;
		}
		struct queued it = c->q[c->qh++];
		int stop = c->stop;
		pthread_mutex_unlock(&c->qmu);
		int rc = stop ? CU_LAUNCH_FAILED : xp_run(c, &it.c);
		if (rc < 0) {
			struct queued *nh = realloc(held, (nheld + 1) * sizeof(*nh));
			if (nh) {
				held = nh;
				held[nheld++] = it;
				continue;
			}
			rc = CU_LAUNCH_FAILED;
		}
		if (!rc) {
			pthread_mutex_lock(&mu);
			c->done++;
			pthread_mutex_unlock(&mu);
			fprof_ran(it.c.prof);
		}
		it.s->end(it.s, rc);
	}
	for (size_t i = 0; i < nheld; i++)
		held[i].s->end(held[i].s, CU_LAUNCH_FAILED);
	free(held);
	return NULL;
}

/* Queue one part for this rank's worker (its stream's begin() is done). */
static void xp_post(struct comm *c, const struct call *call, struct fakegpu_stream *s)
{
	pthread_mutex_lock(&c->qmu);
	if (c->qh == c->qn)
		c->qh = c->qn = 0;
	if (c->qn == c->qcap) {
		size_t cap = c->qcap ? c->qcap * 2 : 64;
		struct queued *nq = realloc(c->q, cap * sizeof(*nq));
		if (!nq) {
			pthread_mutex_unlock(&c->qmu);
			s->end(s, CU_LAUNCH_FAILED);
			return;
		}
		c->q = nq;
		c->qcap = cap;
	}
	c->q[c->qn].c = *call;
	c->q[c->qn].s = s;
	c->qn++;
	pthread_cond_signal(&c->qcv);
	pthread_mutex_unlock(&c->qmu);
}

/* Stop this rank's worker (its pending work completes with an error) and let the file go; abort tells every rank. */
static void xp_leave(struct comm *c, int abort)
{
	struct xp_hdr *h = c->xp->h;
	if (abort) {
		/* without the lock: a peer stopped while holding it must not hold up the abort */
		__atomic_store_n(&h->aborted, 1, __ATOMIC_RELEASE);
		xp_wake(h);
	}
	pthread_mutex_lock(&c->qmu);
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&c->qcv);
	pthread_mutex_unlock(&c->qmu);
	pthread_join(c->th, NULL);
	pthread_mutex_destroy(&c->qmu);
	pthread_cond_destroy(&c->qcv);
	free(c->q);
	c->q = NULL;
	xp_detach(c->xp);
	c->xp = NULL;
}

/* Take rank c out of the registry (init failed). */
static void xp_unregister(struct comm *c, struct xp_map *m)
{
	struct xp_hdr *h = m->h;
	xp_lock(h);
	if (h->pids[c->rank] == (int)getpid()) {
		h->pids[c->rank] = 0;
		if (--h->joined == 0)
			unlink(m->path);
	}
	pthread_mutex_unlock(&h->mu);
}

/*
 * Join comms cs[0..k) to their cliques: register every one in the shared
 * file, wait (FAKE_INIT_TIMEOUT_S) until every rank of each clique has
 * joined, then run in-process where a whole clique is here, across
 * processes where it is not. Without usable shared memory, in-process only.
 */
static ncclResult_t init_all(struct comm **cs, size_t k)
{
	struct xp_map **m = calloc(k, sizeof(*m));
	ncclResult_t r = ncclSuccess;
	size_t reg = 0, i;
	if (!m)
		return fail(ncclSystemError, "fake NCCL: %s: out of memory", "ncclCommInitRank");
	int shared = 1;
	for (i = 0; i < k && shared; i++)
		shared = (m[i] = xp_attach(cs[i])) != NULL;
	if (!shared) {
		/* no shared memory: this process only */
		for (i = 0; i < k; i++)
			if (m[i])
				xp_detach(m[i]);
		free(m);
		pthread_mutex_lock(&mu);
		for (i = 0; i < k && !r; i++)
			r = join(cs[i]);
		if (r)
			for (size_t j = 0; j + 1 < i; j++)
				leave(cs[j]);
		pthread_mutex_unlock(&mu);
		return r ? r : wait_joined(cs, k);
	}
	for (; reg < k && !r; reg++) {
		struct xp_hdr *h = m[reg]->h;
		xp_lock(h);
		if (h->pids[cs[reg]->rank])
			r = fail(ncclInvalidUsage, "fake NCCL: %s: rank %d joined twice", "ncclCommInitRank", cs[reg]->rank);
		else {
			h->pids[cs[reg]->rank] = (int)getpid();
			h->joined++;
			xp_wake(h);
		}
		pthread_mutex_unlock(&h->mu);
	}
	if (r)
		reg--;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < k && !r; i++) {
		struct xp_hdr *h = m[i]->h;
		xp_lock(h);
		while (h->joined < h->n && !r) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 > cfg.init_timeout) {
				char text[160];
				snprintf(text, sizeof(text), "fake NCCL: %%s: only %d of %d ranks of the clique joined within "
				         "%%ld s (FAKE_INIT_TIMEOUT_S); are the others started?", h->joined, h->n);
				r = fail(ncclSystemError, text, "ncclCommInitRank", (long)cfg.init_timeout);
				break;
			}
			xp_nap(h);
		}
		pthread_mutex_unlock(&h->mu);
	}
	if (r) {
		for (i = 0; i < reg; i++)
			xp_unregister(cs[i], m[i]);
		for (i = 0; i < k; i++)
			xp_detach(m[i]);
		free(m);
		return r;
	}
	size_t nlocal = 0;
	for (i = 0; i < k; i++) {
		struct xp_hdr *h = m[i]->h;
		int here = 1;
		fprof_comm_init(&cs[i]->prof, cs[i]->id, cs[i]->n, cs[i]->rank, cfg.version);
		xp_lock(h);
		for (int q = 0; q < h->n; q++)
			here &= h->pids[q] == (int)getpid();
		if (++h->seen == h->n)
			unlink(m[i]->path);
		pthread_mutex_unlock(&h->mu);
		if (here) {
			xp_detach(m[i]);
			pthread_mutex_lock(&mu);
			r = join(cs[i]);
			pthread_mutex_unlock(&mu);
			cs[nlocal++] = cs[i];
			continue;
		}
		struct comm *c = cs[i];
		c->xp = m[i];
		pthread_mutex_init(&c->qmu, NULL);
		pthread_cond_init(&c->qcv, NULL);
		if (pthread_create(&c->th, NULL, xp_thread, c) != 0) {
			pthread_mutex_destroy(&c->qmu);
			pthread_cond_destroy(&c->qcv);
			xp_detach(m[i]);
			c->xp = NULL;
			r = fail(ncclSystemError, "fake NCCL: %s: cannot start a thread", "ncclCommInitRank");
		}
	}
	free(m);
	/* in-process cliques: every rank is here, joining now */
	if (!r && nlocal)
		r = wait_joined(cs, nlocal);
	return r;
}

/* ---- the operations ---- */

#define CALL(K, S, R, N, T, OP, ROOT, PEER, C) \
	((struct call){ .kind = (K), .send = (S), .recv = (R), .count = (N), .dtype = (T), .redop = (OP), \
	                .root = (ROOT), .peer = (PEER), .comm = (C) })

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_ALLREDUCE, s, r, n, t, op, 0, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclBcast(void *b, size_t n, int t, int root, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	return ncclBroadcast(b, b, n, t, root, c, st);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_ALLGATHER, s, r, n, t, 0, 0, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_REDUCESCATTER, s, r, n, t, op, 0, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_BROADCAST, s, r, n, t, 0, root, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_REDUCE, s, r, n, t, op, root, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_ALLTOALL, s, r, n, t, 0, 0, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclGather(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_GATHER, s, r, n, t, 0, root, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclScatter(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_SCATTER, s, r, n, t, 0, root, 0, c);
	return enqueue(&k, st);
}

ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_SEND, s, NULL, n, t, 0, 0, peer, c);
	return enqueue(&k, st);
}

ncclResult_t ncclRecv(void *r, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st)
{
	FAIL_POINT();
	struct call k = CALL(K_RECV, NULL, r, n, t, 0, 0, peer, c);
	return enqueue(&k, st);
}

/* ---- ncclCommSplit ---- */

/*
 * ncclCommSplit: the parent's ranks meet in a shared-memory file named
 * after the parent's id and its split count (/dev/shm/fakenccl-split-...),
 * each writing its color and key; once all have, each works out its new
 * rank (by key, then parent rank, among its color) and count, and inits
 * the new communicator with an id made from the parent's, the split count
 * and the color (so across processes too). Grouped, the meeting waits for
 * the outermost ncclGroupEnd, where the new communicators init together.
 * color -1 (NCCL_SPLIT_NOCOLOR): no new communicator (*out NULL).
 */
struct split_file {
	uint32_t readers;
	struct { int32_t color, key, set; } e[XP_MAXR];
};

static _Thread_local struct split_wait {
	struct comm *parent;
	unsigned seq;
	int color;
	ncclComm_t *out;
	struct split_file *f;
	char path[160];
} *gsplit;
static _Thread_local size_t gsplit_n, gsplit_cap;

/* Map the exchange file of the parent's split number seq (created by whoever comes first). NULL on failure. */
static struct split_file *split_map(const struct comm *c, unsigned seq, char *path, size_t len)
{
	snprintf(path, len, "/dev/shm/fakenccl-split-%u-%016llx-%u", (unsigned)getuid(),
	         (unsigned long long)fnv(c->id, sizeof(c->id), 0xcbf29ce484222325ull), seq);
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return NULL;
	struct split_file *f = NULL;
	if (ftruncate(fd, sizeof(*f)) == 0) {
		f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (f == MAP_FAILED)
			f = NULL;
	}
	close(fd);
	return f;
}

/* Wait for every rank's entry, then init this rank's part of the split (grouped when depth > 0). */
static ncclResult_t split_resolve(struct split_wait *w)
{
	struct comm *c = w->parent;
	struct timespec t0, now, nap = { 0, 200000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int r = 0; r < c->n; r++)
		while (!__atomic_load_n(&w->f->e[r].set, __ATOMIC_ACQUIRE)) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 > cfg.init_timeout)
				return fail(ncclSystemError, "fake NCCL: ncclCommSplit: rank %d of %d never came (%ld s)", r,
				            c->n, (long)cfg.init_timeout);
			nanosleep(&nap, NULL);
		}
	int n = 0, rank = 0, key = w->f->e[c->rank].key;
	for (int r = 0; r < c->n; r++) {
		if (w->f->e[r].color != w->color)
			continue;
		n++;
		rank += w->f->e[r].key < key || (w->f->e[r].key == key && r < c->rank);
	}
	if (__atomic_add_fetch(&w->f->readers, 1, __ATOMIC_ACQ_REL) == (uint32_t)c->n)
		unlink(w->path);
	munmap(w->f, sizeof(*w->f));
	w->f = NULL;
	if (w->color < 0)
		return ncclSuccess;
	ncclUniqueId id;
	memcpy(id.internal, c->id, sizeof(id.internal));
	uint32_t tag[3] = { 0x73706c74u, w->seq, (uint32_t)w->color };
	memcpy(id.internal + sizeof(id.internal) - sizeof(tag), tag, sizeof(tag));
	ncclResult_t r = init_rank(w->out, n, &id, rank);
	if (!r && *w->out)
		(*w->out)->cta_policy = c->cta_policy; /* a NULL config inherits the parent's */
	return r;
}

/* At the outermost ncclGroupEnd: resolve the grouped splits; their new communicators join ginit. */
static ncclResult_t split_finish(void)
{
	ncclResult_t r = ncclSuccess;
	depth++;
	for (size_t i = 0; i < gsplit_n; i++) {
		if (!r)
			r = split_resolve(&gsplit[i]);
		else if (gsplit[i].f)
			munmap(gsplit[i].f, sizeof(*gsplit[i].f));
	}
	depth--;
	free(gsplit);
	gsplit = NULL;
	gsplit_n = gsplit_cap = 0;
	return r;
}

ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *out, void *config)
{
	FAIL_POINT();
	(void)config;
	if (!c || !out)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	if (c->n > XP_MAXR)
		return fail(ncclInvalidUsage, "fake NCCL: %s: at most %d ranks", __func__, XP_MAXR);
	*out = NULL;
	struct split_wait w = { .parent = c, .seq = c->nsplit++, .color = color < 0 ? -1 : color, .out = out };
	if (!(w.f = split_map(c, w.seq, w.path, sizeof(w.path))))
		return fail(ncclSystemError, "fake NCCL: %s: cannot use %s: %s", __func__, w.path, strerror(errno));
	w.f->e[c->rank].color = w.color;
	w.f->e[c->rank].key = key;
	__atomic_store_n(&w.f->e[c->rank].set, 1, __ATOMIC_RELEASE);
	if (depth == 0)
		return split_resolve(&w);
	if (gsplit_n == gsplit_cap) {
		size_t cap = gsplit_cap ? gsplit_cap * 2 : 8;
		struct split_wait *nq = realloc(gsplit, cap * sizeof(*nq));
		if (!nq) {
			munmap(w.f, sizeof(*w.f));
			return fail(ncclSystemError, "fake NCCL: %s: out of memory", __func__);
		}
		gsplit = nq;
		gsplit_cap = cap;
	}
	gsplit[gsplit_n++] = w;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(ncclComm_t c, int *rank)
{
	FAIL_POINT();
	if (!c || !rank)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	*rank = c->rank;
	return ncclSuccess;
}

ncclResult_t ncclCommCount(ncclComm_t c, int *n)
{
	FAIL_POINT();
	if (!c || !n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	*n = c->n;
	return ncclSuccess;
}

/* ---- buffer registration (-R) ---- */

#define REG_MAGIC 0x66616b6572656731ull /* "fakereg1" */

struct reg {
	uint64_t magic;
	struct comm *comm;
	void *buf;
	size_t bytes;
	int window;
};

/* cuMemAlloc_v2 / cuMemFree_v2 of the fake driver this process already loaded; NULL when none is. */
static void *driver_sym(const char *name)
{
	const char *lib = getenv("NCCLWATCH_CUDA_LIB");
	void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	void *f = h ? dlsym(h, name) : NULL;
	if (h)
		dlclose(h);
	return f;
}

ncclResult_t ncclMemAlloc(void **p, size_t bytes)
{
	FAIL_POINT();
	int (*alloc)(unsigned long long *, size_t) = (int (*)(unsigned long long *, size_t))driver_sym("cuMemAlloc_v2");
	if (!p || !bytes)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL pointer or 0 bytes", __func__);
	if (!alloc)
		return fail(ncclSystemError, "fake NCCL: %s: no CUDA driver loaded in this process", __func__);
	unsigned long long d = 0;
	int r = alloc(&d, bytes);
	if (r)
		return fail(ncclUnhandledCudaError, "fake NCCL: %s: cuMemAlloc of %zu bytes failed (%d)", __func__, bytes, r);
	*p = (void *)(uintptr_t)d;
	return ncclSuccess;
}

ncclResult_t ncclMemFree(void *p)
{
	FAIL_POINT();
	int (*release)(unsigned long long) = (int (*)(unsigned long long))driver_sym("cuMemFree_v2");
	if (!release)
		return fail(ncclSystemError, "fake NCCL: %s: no CUDA driver loaded in this process", __func__);
	return release((unsigned long long)(uintptr_t)p) ? fail(ncclInvalidArgument, "fake NCCL: %s: not ncclMemAlloc's", __func__)
	                                                 : ncclSuccess;
}

/* A handle for buf on c (window: a symmetric window); the version checks play older NCCLs. */
static ncclResult_t reg_open(const char *fn, ncclComm_t c, void *buf, size_t bytes, void **out, int window)
{
	pthread_once(&env_once, read_env);
	int need = window ? 22700 : 21900;
	if (cfg.version < need)
		return fail(ncclInvalidUsage, "fake NCCL: %s is not in NCCL %d (it came with %d)", fn, cfg.version, need);
	if (!c || !buf || !bytes || !out)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument or 0 bytes", fn);
	struct reg *r = calloc(1, sizeof(*r));
	if (!r)
		return fail(ncclSystemError, "fake NCCL: %s: out of memory", fn);
	*r = (struct reg){ .magic = REG_MAGIC, .comm = c, .buf = buf, .bytes = bytes, .window = window };
	pthread_mutex_lock(&mu);
	c->nreg++;
	pthread_mutex_unlock(&mu);
	if (getenv("FAKE_NCCL_REPORT_REG"))
		fprintf(stderr, "fake NCCL: rank %d: %s %zu bytes\n", c->rank, fn, bytes);
	*out = r;
	return ncclSuccess;
}

/* Close a handle reg_open made on c. */
static ncclResult_t reg_close(const char *fn, ncclComm_t c, void *h, int window)
{
	struct reg *r = h;
	if (!c || !r || r->magic != REG_MAGIC || r->comm != c || r->window != window)
		return fail(ncclInvalidArgument, "fake NCCL: %s: not a handle of this communicator", fn);
	r->magic = 0;
	pthread_mutex_lock(&mu);
	c->nreg--;
	pthread_mutex_unlock(&mu);
	if (getenv("FAKE_NCCL_REPORT_REG"))
		fprintf(stderr, "fake NCCL: rank %d: %s %zu bytes\n", c->rank, fn, r->bytes);
	free(r);
	return ncclSuccess;
}

ncclResult_t ncclCommRegister(ncclComm_t c, void *buf, size_t bytes, void **handle)
{
	FAIL_POINT();
	return reg_open(__func__, c, buf, bytes, handle, 0);
}

ncclResult_t ncclCommDeregister(ncclComm_t c, void *handle)
{
	FAIL_POINT();
	return reg_close(__func__, c, handle, 0);
}

ncclResult_t ncclCommWindowRegister(ncclComm_t c, void *buf, size_t bytes, void **win, int flags)
{
	FAIL_POINT();
	if (flags & ~1)
		return fail(ncclInvalidArgument, "fake NCCL: %s: unknown flags %#x", __func__, (unsigned)flags);
	return reg_open(__func__, c, buf, bytes, win, 1);
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t c, void *win)
{
	FAIL_POINT();
	return reg_close(__func__, c, win, 1);
}

/* ---- pre-multiplied sums (ncclRedOpCreatePreMulSum, NCCL 2.11+) ---- */

/*
 * A user op of c: the sum of every rank's input times that rank's own
 * scalar (read now: ncclScalarHostImmediate; a device scalar is not
 * modelled). Ops are numbered from NREDOPS (ncclNumOps), as NCCL numbers
 * them; a destroyed op's number is given again. FAKE_NCCL_REPORT_OPS=1
 * says each creation and destruction, and a communicator destroyed with
 * ops still made.
 */
ncclResult_t ncclRedOpCreatePreMulSum(int *op, void *scalar, int t, int residence, ncclComm_t c)
{
	FAIL_POINT();
	pthread_once(&env_once, read_env);
	if (!op || !scalar || !c)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument", __func__);
	if (cfg.version < 21100)
		return fail(ncclInvalidUsage, "fake NCCL: %s is NCCL 2.11+ (FAKE_NCCL_VERSION=%d)", __func__, cfg.version);
	if (t < 0 || t >= NTYPES)
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid data type %d", __func__, t);
	if (residence != ncclScalarHostImmediate)
		return fail(ncclInvalidUsage, "fake NCCL: %s: only ncclScalarHostImmediate is modelled", __func__);
	pthread_mutex_lock(&mu);
	int k = 0;
	while (k < c->nuops && c->uops[k].live)
		k++;
	if (k == c->nuops) {
		struct uop *g = realloc(c->uops, (size_t)(c->nuops + 1) * sizeof(*g));
		if (!g) {
			pthread_mutex_unlock(&mu);
			return fail(ncclSystemError, "fake NCCL: %s: out of memory", __func__);
		}
		c->uops = g;
		c->nuops++;
	}
	c->uops[k].live = 1;
	c->uops[k].dtype = t;
	memset(c->uops[k].scalar, 0, sizeof(c->uops[k].scalar));
	memcpy(c->uops[k].scalar, scalar, type_size(t));
	pthread_mutex_unlock(&mu);
	*op = NREDOPS + k;
	if (getenv("FAKE_NCCL_REPORT_OPS")) {
		unsigned char v[8] = { 0 };
		memcpy(v, scalar, type_size(t));
		fprintf(stderr, "fake NCCL: rank %d: ncclRedOpCreatePreMulSum type %d scalar %g -> op %d\n", c->rank, t,
		        is_float(t) ? load_f(t, v) : (double)load_i(t, v), *op);
	}
	return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(int op, ncclComm_t c)
{
	FAIL_POINT();
	if (!c)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator", __func__);
	int k = op - NREDOPS;
	pthread_mutex_lock(&mu);
	int ok = k >= 0 && k < c->nuops && c->uops[k].live;
	if (ok)
		c->uops[k].live = 0;
	pthread_mutex_unlock(&mu);
	if (!ok)
		return fail(ncclInvalidArgument, "fake NCCL: %s: op %d is not one this communicator made", __func__, op);
	if (getenv("FAKE_NCCL_REPORT_OPS"))
		fprintf(stderr, "fake NCCL: rank %d: ncclRedOpDestroy op %d\n", c->rank, op);
	return ncclSuccess;
}

/* NCCL's second name of each API function (pncclX), the one profiling tools call. */
#define PNAME(f) extern __typeof__(f) p##f __attribute__((alias(#f), visibility("default")));
PNAME(ncclGetVersion) PNAME(ncclGetUniqueId) PNAME(ncclCommInitRank) PNAME(ncclCommInitRankConfig)
PNAME(ncclCommInitRankScalable) PNAME(ncclCommInitAll) PNAME(ncclCommFinalize) PNAME(ncclCommDestroy)
PNAME(ncclCommAbort) PNAME(ncclCommGetAsyncError) PNAME(ncclGetErrorString) PNAME(ncclGetLastError)
PNAME(ncclGroupStart) PNAME(ncclGroupEnd) PNAME(ncclAllReduce) PNAME(ncclAllGather) PNAME(ncclReduceScatter)
PNAME(ncclBroadcast) PNAME(ncclBcast) PNAME(ncclReduce) PNAME(ncclAlltoAll) PNAME(ncclGather) PNAME(ncclScatter) PNAME(ncclSend)
PNAME(ncclRecv) PNAME(ncclCommSplit) PNAME(ncclCommUserRank) PNAME(ncclCommCount) PNAME(ncclMemAlloc)
PNAME(ncclMemFree) PNAME(ncclCommRegister) PNAME(ncclCommDeregister) PNAME(ncclCommWindowRegister)
PNAME(ncclCommWindowDeregister) PNAME(ncclRedOpCreatePreMulSum) PNAME(ncclRedOpDestroy)
