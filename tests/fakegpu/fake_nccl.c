/*
 * A fake NCCL (libnccl.so.2, "NCCL version 2.28.9") for tests on machines
 * without a GPU, to go with the fake CUDA driver (fake_cuda.c): the nccl*
 * functions ncclwatch resolves (src/gpu/nccl.c), with the real ABI.
 *
 * A communicator clique is named by the unique id's bytes and lives in
 * this process; its ranks may be driven from one thread (grouped) or from
 * several. Group state is thread-local, as in NCCL: between ncclGroupStart
 * and ncclGroupEnd calls are queued, and put on their streams at the
 * outermost ncclGroupEnd. Each rank's collectives are numbered in order;
 * a collective runs when every rank of the clique has put its part on a
 * stream: the last one to arrive moves the data (host memory: a CUdeviceptr
 * of the fake driver is a host address) and marks each participant's
 * stream work complete. Sends and receives are matched per (sender,
 * receiver) pair in order. Nobody blocks for peers outside init: streams
 * carry the waiting (cuStreamQuery says not ready until the work ran).
 * Ops: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll,
 * Gather, Scatter, Send, Recv; every NCCL data type (fp8 and half/bfloat16
 * rounded to nearest even) and sum, prod, max, min, avg (avg refused on fp8,
 * as NCCL 2.28 does). Reductions of floating types are computed in double
 * and rounded once; integers wrap as the type does; integer avg is the
 * wrapped sum divided by the rank count, truncating.
 *
 * ncclCommInitRank(Config) waits (at the outermost ncclGroupEnd when
 * grouped) until every rank of the clique has joined in this process, at
 * most FAKE_INIT_TIMEOUT_S (default 10) seconds; then ncclSystemError and
 * ncclGetLastError says "fake NCCL: ranks in other processes are not
 * supported". ncclCommAbort drops the clique's pending work and completes
 * its streams with CUDA_ERROR_LAUNCH_FAILED so waiters wake; its other
 * communicators then report ncclRemoteError. ncclCommDestroy with work
 * still pending drops that work the same way.
 *
 * Environment:
 *   FAKE_NCCL_VERSION=CODE   what ncclGetVersion says (default 22809); the
 *                            file's "NCCL version 2.28.9" string stays
 *   FAKE_INIT_TIMEOUT_S=S    see above
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
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

enum kind { K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLTOALL, K_GATHER, K_SCATTER,
            K_SEND, K_RECV };
static const char *const kind_name[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                                         "ncclReduce", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                                         "ncclRecv" };

/* One rank's part of an operation, as put on its stream (copied into stream work). */
struct call {
	int kind, dtype, redop, root, peer;
	const void *send;
	void *recv;
	size_t count;
	struct comm *comm;
};
_Static_assert(sizeof(struct call) <= sizeof(((struct fakegpu_work *)0)->arg), "call fits in stream work");

struct comm {
	struct clique *cl;  /* NULL until joined */
	int n, rank;
	unsigned char id[128];
	uint64_t coll_seq;  /* next collective's number */
	uint64_t *sent, *rcvd; /* per peer: sends / receives posted */
	uint64_t done;      /* operations executed */
	int async_err;
	char last_err[256];
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
} cfg;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static _Thread_local char tl_err[256];

/* Group state of this thread. */
struct queued {
	struct call c;
	struct fakegpu_stream *s;
};
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

static ncclResult_t fail(ncclResult_t r, const char *fmt, const char *a, long b)
{
	snprintf(tl_err, sizeof(tl_err), fmt, a, b);
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
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument%.0ld", __func__, 0);
	*v = cfg.version;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	FAIL_POINT();
	if (!id)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument%.0ld", __func__, 0);
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
		return fail(ncclInvalidArgument, "fake NCCL: %s: ranks disagree on the rank count (%ld)",
		            "ncclCommInitRank", c->n);
	if (cl && cl->ranks[c->rank])
		return fail(ncclInvalidUsage, "fake NCCL: %s: rank %ld joined twice", "ncclCommInitRank", c->rank);
	if (!cl) {
		cl = calloc(1, sizeof(*cl));
		if (!cl || !(cl->ranks = calloc((size_t)c->n, sizeof(*cl->ranks)))) {
			free(cl);
			return fail(ncclSystemError, "fake NCCL: %s: out of memory%.0ld", "ncclCommInitRank", 0);
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

static void comm_free(struct comm *c)
{
	if (c) {
		free(c->sent);
		free(c->rcvd);
		free(c);
	}
}

static ncclResult_t init_rank(ncclComm_t *out, int n, const ncclUniqueId *id, int rank)
{
	if (!out)
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator pointer%.0ld", "ncclCommInitRank", 0);
	*out = NULL;
	if (n < 1 || rank < 0 || rank >= n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: bad rank or rank count (%ld)", "ncclCommInitRank", rank);
	struct comm *c = calloc(1, sizeof(*c));
	if (!c || !(c->sent = calloc((size_t)n, sizeof(uint64_t))) || !(c->rcvd = calloc((size_t)n, sizeof(uint64_t)))) {
		comm_free(c);
		return fail(ncclSystemError, "fake NCCL: %s: out of memory%.0ld", "ncclCommInitRank", 0);
	}
	c->n = n;
	c->rank = rank;
	memcpy(c->id, id->internal, sizeof(c->id));
	if (depth > 0) {
		/* grouped: joined and waited for at the outermost ncclGroupEnd */
		if (ginit_n == ginit_cap) {
			size_t cap = ginit_cap ? ginit_cap * 2 : 8;
			struct comm **nq = realloc(ginit, cap * sizeof(*nq));
			if (!nq) {
				comm_free(c);
				return fail(ncclSystemError, "fake NCCL: %s: out of memory%.0ld", "ncclCommInitRank", 0);
			}
			ginit = nq;
			ginit_cap = cap;
		}
		ginit[ginit_n++] = c;
		*out = c;
		return ncclSuccess;
	}
	pthread_mutex_lock(&mu);
	ncclResult_t r = join(c);
	pthread_mutex_unlock(&mu);
	if (!r)
		r = wait_joined(&c, 1);
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

ncclResult_t ncclCommInitRankConfig(ncclComm_t *c, int n, ncclUniqueId id, int rank, void *config)
{
	FAIL_POINT();
	(void)config; /* accepted and ignored */
	return init_rank(c, n, &id, rank);
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
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL communicator%.0ld", __func__, 0);
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
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL argument%.0ld", __func__, 0);
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
	if (p->tag == TAG_P2P)
		run_p2p(cl, p);
	else if (run_coll(cl, p))
		p->dead = 1;
	if (p->dead)
		return; /* stays until abort or destroy drops it */
	unlink_entry(cl, p);
	for (int i = 0; i < p->nparts; i++) {
		struct comm *o = p->parts[i].c.comm;
		o->done++;
		p->parts[i].s->end(p->parts[i].s, 0);
	}
	free(p);
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

static int submit(const struct call *c, struct fakegpu_stream *s)
{
	struct fakegpu_work w;
	memset(&w, 0, sizeof(w));
	w.launch = launch;
	memcpy(w.arg, c, sizeof(*c));
	return s->submit(s, &w);
}

/* Check a call's arguments, then queue it (in a group) or submit it. */
static ncclResult_t enqueue(const struct call *c, struct fakegpu_stream *s)
{
	const char *name = kind_name[c->kind];
	struct comm *cm = c->comm;
	if (!cm || !cm->cl)
		return fail(ncclInvalidArgument, "fake NCCL: %s: no communicator (or one not initialised)%.0ld", name, 0);
	if (!s || s->magic != FAKEGPU_STREAM_MAGIC)
		return fail(ncclInvalidArgument, "fake NCCL: %s: the stream is not one of the fake CUDA driver's%.0ld",
		            name, 0);
	if (c->dtype < 0 || c->dtype >= NTYPES)
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid data type %ld", name, c->dtype);
	if (c->redop < 0 || c->redop >= NREDOPS)
		return fail(ncclInvalidArgument, "fake NCCL: %s: invalid reduction op %ld", name, c->redop);
	if (c->redop == R_AVG && (c->dtype == T_E4M3 || c->dtype == T_E5M2))
		return fail(ncclInvalidArgument, "fake NCCL: %s: ncclAvg is not supported on fp8 types%.0ld", name, 0);
	if (c->root < 0 || c->root >= cm->n || c->peer < 0 || c->peer >= cm->n)
		return fail(ncclInvalidArgument, "fake NCCL: %s: root or peer %ld out of range", name,
		            c->root < 0 || c->root >= cm->n ? c->root : c->peer);
	int n = cm->n;
	if ((c->kind != K_RECV && in_count(c, cm->rank, n) && !c->send) ||
	    (c->kind != K_SEND && out_count(c, cm->rank, n) && !c->recv))
		return fail(ncclInvalidArgument, "fake NCCL: %s: NULL buffer%.0ld", name, 0);
	if (depth == 0)
		return submit(c, s) ? ncclUnhandledCudaError : ncclSuccess;
	if (gq_n == gq_cap) {
		size_t cap = gq_cap ? gq_cap * 2 : 16;
		struct queued *nq = realloc(gq, cap * sizeof(*nq));
		if (!nq)
			return fail(ncclSystemError, "fake NCCL: %s: out of memory%.0ld", name, 0);
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
		return fail(ncclInvalidUsage, "fake NCCL: %s without ncclGroupStart%.0ld", __func__, 0);
	if (--depth > 0)
		return ncclSuccess;
	ncclResult_t r = group_err;
	if (!r && ginit_n) {
		pthread_mutex_lock(&mu);
		size_t k = 0;
		for (; k < ginit_n && !r; k++)
			r = join(ginit[k]);
		if (r)
			for (size_t i = 0; i + 1 < k; i++)
				leave(ginit[i]);
		pthread_mutex_unlock(&mu);
		if (!r)
			r = wait_joined(ginit, ginit_n);
	}
	for (size_t i = 0; i < gq_n && !r; i++)
		if (submit(&gq[i].c, gq[i].s))
			r = fail(ncclUnhandledCudaError, "fake NCCL: %s: the stream refused work%.0ld", __func__, 0);
	group_reset();
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
