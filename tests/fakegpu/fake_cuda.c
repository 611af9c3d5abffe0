/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake CUDA driver (libcuda.so.1) for tests on machines without a GPU:
 * every cu* function ncclwatch resolves (src/gpu/cuda.c), with the real
 * ABI. "Device memory" is host memory (a CUdeviceptr is the host
 * address); contexts, streams, graphs are small structs. Work on streams
 * comes only from the fake NCCL (fake_nccl.c) through struct
 * fakegpu_stream (fakegpu.h): a stream counts submitted and completed
 * work, cuStreamQuery says CUDA_ERROR_NOT_READY (600) while some is
 * pending, cuStreamSynchronize and cuCtxSynchronize wait on a condition
 * variable. While a stream captures, work put on it is recorded into the
 * graph; cuGraphLaunch submits the recorded work again. Stream 0 (and
 * CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) is the current context's NULL
 * stream, one per context, made on first use; it cannot be captured.
 *
 * Events (cuEventCreate/Record/Query/Synchronize/ElapsedTime/Destroy): an
 * event recorded on a stream completes once as many pieces of work have
 * completed on that stream as had been submitted when it was recorded (the
 * fake's streams do not keep their work in order: a send may finish
 * before an earlier collective), and its time is when that happened
 * (CLOCK_MONOTONIC), or the record when nothing was pending. Recording on
 * a stream of another context is CUDA_ERROR_INVALID_HANDLE, and on a
 * capturing stream CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED with a line on
 * stderr ("fake CUDA: cuEventRecord on a capturing stream"), so a test
 * sees a caller that should not have done it. cuStreamIsCapturing,
 * cuStreamGetCtx, cuCtxGetCurrent and cuThreadExchangeStreamCaptureMode
 * answer as the driver does.
 *
 * Environment:
 *   FAKE_GPU_COUNT=N       devices (default 2; 0: cuInit says CUDA_ERROR_NO_DEVICE)
 *   FAKE_GPU_NAME=TEXT     cuDeviceGetName (default "Fake H200"); compute capability 9.0
 *   FAKE_GPU_MEM=BYTES     memory per device (default 8 GiB; K/M/G suffixes): larger
 *                          allocations fail with CUDA_ERROR_OUT_OF_MEMORY (2) and
 *                          cuMemGetInfo reports what is really left
 *   FAKE_CUDA_FAIL=NAME[:N] the Nth call (default the 1st) of cu function NAME (its
 *                          exported name, e.g. cuMemAlloc_v2) fails: CUDA_ERROR_OUT_OF_MEMORY
 *                          for allocations, CUDA_ERROR_UNKNOWN (999) for the others
 *   FAKE_CUDA_NO_JIT=1     cuModuleLoadDataEx refuses the PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
 *                          with a message in the error log), as an old driver would
 * cuDriverGetVersion says 13000.
 *
 * Modules: cuModuleLoadDataEx takes PTX text that defines ncclwatch's check
 * kernels (src/gpu/verify.ptx: nw_fill, nw_verify_bits, nw_verify_map,
 * nw_verify_tol); cuLaunchKernel runs each one's equivalent, written here
 * in C from the kernels' documented meaning, on host memory at once (the
 * caller has waited for the collective; launches while a stream captures
 * are refused).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakegpu.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fakegpu_stream *CUstream;
typedef struct fake_graph *CUgraph;
typedef struct fake_graph *CUgraphExec;
typedef struct fake_module *CUmodule;
typedef const struct fake_kernel *CUfunction;
typedef struct fake_event *CUevent;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_PTX = 218,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_ILLEGAL_STATE = 401,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
	CUDA_ERROR_UNKNOWN = 999,
};

/* The exported API, as the driver declares it. */
EXPORT CUresult cuInit(unsigned int flags);
EXPORT CUresult cuDriverGetVersion(int *v);
EXPORT CUresult cuDeviceGetCount(int *n);
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal);
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d);
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d);
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d);
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d);
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d);
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx);
EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx);
EXPORT CUresult cuCtxSynchronize(void);
EXPORT CUresult cuCtxGetDevice(CUdevice *d);
EXPORT CUresult cuDeviceGetUuid_v2(unsigned char uuid[16], CUdevice d);
EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b);
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
EXPORT CUresult cuMemFree_v2(CUdeviceptr p);
EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags);
EXPORT CUresult cuMemFreeHost(void *p);
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n);
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags);
EXPORT CUresult cuStreamDestroy_v2(CUstream s);
EXPORT CUresult cuStreamQuery(CUstream s);
EXPORT CUresult cuStreamSynchronize(CUstream s);
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode);
EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g);
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags);
EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s);
EXPORT CUresult cuGraphExecDestroy(CUgraphExec e);
EXPORT CUresult cuGraphDestroy(CUgraph g);
EXPORT CUresult cuGetErrorString(CUresult r, const char **s);
EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int nopts, int *opts, void **vals);
EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);
EXPORT CUresult cuModuleUnload(CUmodule m);
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
EXPORT CUresult cuGetErrorName(CUresult r, const char **s);
EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags);
EXPORT CUresult cuEventRecord(CUevent e, CUstream s);
EXPORT CUresult cuEventQuery(CUevent e);
EXPORT CUresult cuEventSynchronize(CUevent e);
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end);
EXPORT CUresult cuEventDestroy_v2(CUevent e);
EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status);
EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx);
EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx);
EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode);

#define MAXDEV 64
#define DONE_RING 4096 /* completion times kept per stream, for the events recorded on it */

/* A primary context: one per device, with the device's pending-work count. */
struct fake_ctx {
	struct fakegpu_ctx pub;  /* first: what the fake NCCL reads of a CUcontext */
	struct stream *legacy;   /* the NULL stream, made on first use */
	int dev;
	int refs;
	size_t used; /* bytes allocated on the device */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t submitted, completed;
};

struct fake_graph {
	struct fakegpu_work *w;
	size_t n, cap;
};

struct stream {
	struct fakegpu_stream pub; /* first: the pointer NCCL gets */
	struct fake_ctx *ctx;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t submitted, completed;
	int err;                   /* sticky error from work that failed */
	struct fake_graph *capture; /* non-NULL while capturing */
	uint64_t done_ns[DONE_RING]; /* [k % DONE_RING]: when `completed` reached k */
	struct fake_event *pending; /* events recorded on it and not seen complete (under ev_mu) */
};

/* An event: complete once its stream has completed `ticket` pieces of work. */
struct fake_event {
	uint64_t magic;
	struct fake_ctx *ctx;
	unsigned flags;
	int recorded;
	struct stream *s;          /* while it waits: the stream, and it is in s->pending */
	struct fake_event *next;
	uint64_t ticket;
	uint64_t rec_ns, done_ns;  /* done_ns 0: not complete yet */
};
#define EVENT_MAGIC 0x66616b6565766e31ull
#define EVENT_DISABLE_TIMING 0x2
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER; /* every event, and each stream's pending list */

/* Every allocation carries this header just before the address handed out. */
struct block {
	uint64_t magic;
	size_t size;
	struct fake_ctx *ctx;
	uint64_t pad;
};
#define BLOCK_MAGIC 0x66616b656d656d31ull

static struct {
	int ndev;
	char name[96];
	size_t mem;
	char fail_name[64];
	long fail_at;
	long fail_calls;
	int inited;
} g = { .ndev = 2, .name = "Fake H200", .mem = 8ull << 30, .fail_at = 0 };

static struct fake_ctx ctxs[MAXDEV];
static struct fakegpu_stream *ctx_null_stream(struct fakegpu_ctx *pub);
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local struct fake_ctx *current;
static _Thread_local int capture_mode; /* cuThreadExchangeStreamCaptureMode */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "8G", "512M", "1000": bytes, or 0 when the text is not a size. */
static size_t parse_bytes(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	return *end ? 0 : (size_t)v;
}

/* Read the FAKE_* settings once. */
static void read_env(void)
{
	const char *v = getenv("FAKE_GPU_COUNT");
	if (v && *v) {
		long n = strtol(v, NULL, 10);
		g.ndev = n < 0 ? 0 : n > MAXDEV ? MAXDEV : (int)n;
	}
	v = getenv("FAKE_GPU_NAME");
	if (v && *v)
		snprintf(g.name, sizeof(g.name), "%s", v);
	v = getenv("FAKE_GPU_MEM");
	if (v && *v && parse_bytes(v))
		g.mem = parse_bytes(v);
	v = getenv("FAKE_CUDA_FAIL");
	if (v && *v) {
		snprintf(g.fail_name, sizeof(g.fail_name), "%s", v);
		char *colon = strchr(g.fail_name, ':');
		g.fail_at = 1;
		if (colon) {
			*colon = '\0';
			long n = strtol(colon + 1, NULL, 10);
			g.fail_at = n > 0 ? n : 1;
		}
	}
	for (int i = 0; i < MAXDEV; i++) {
		ctxs[i].pub.magic = FAKEGPU_CTX_MAGIC;
		ctxs[i].pub.null_stream = ctx_null_stream;
		ctxs[i].dev = i;
		pthread_mutex_init(&ctxs[i].mu, NULL);
		pthread_cond_init(&ctxs[i].cv, NULL);
	}
}

/* Whether this call of function `name` is the one FAKE_CUDA_FAIL picks. */
static int injected(const char *name)
{
	pthread_once(&env_once, read_env);
	if (!g.fail_name[0] || strcmp(name, g.fail_name) != 0)
		return 0;
	pthread_mutex_lock(&fail_mu);
	int hit = ++g.fail_calls == g.fail_at;
	pthread_mutex_unlock(&fail_mu);
	return hit;
}

#define FAIL_POINT(err)                \
	do {                               \
		if (injected(__func__))        \
			return (err);              \
	} while (0)

CUresult cuInit(unsigned int flags)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (g.ndev == 0)
		return CUDA_ERROR_NO_DEVICE;
	g.inited = 1;
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 13000;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!g.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = g.ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!g.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= g.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

static int bad_dev(CUdevice d)
{
	return !g.inited || d < 0 || d >= g.ndev;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", g.name);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case 16: *v = 132; break;      /* multiprocessors */
	case 33: *v = 0x18 + d; break; /* PCI bus */
	case 34: *v = 0; break;        /* PCI device */
	case 50: *v = 0; break;        /* PCI domain */
	case 75: *v = 9; break;        /* compute capability */
	case 76: *v = 0; break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = g.mem;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&ctxs[d].mu);
	ctxs[d].refs++;
	pthread_mutex_unlock(&ctxs[d].mu);
	*ctx = &ctxs[d];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&ctxs[d].mu);
	int ok = ctxs[d].refs > 0;
	if (ok)
		ctxs[d].refs--;
	pthread_mutex_unlock(&ctxs[d].mu);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (ctx && (ctx < &ctxs[0] || ctx >= &ctxs[MAXDEV] || ctx->refs <= 0))
		return CUDA_ERROR_INVALID_CONTEXT;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = current;
	return CUDA_SUCCESS;
}

/* The device of the calling thread's current context. */
CUresult cuCtxGetDevice(CUdevice *d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = (CUdevice)(current - ctxs);
	return CUDA_SUCCESS;
}

/* A fixed UUID per device: fa1e0000-0000-4000-8000-0000000000<d>. */
CUresult cuDeviceGetUuid_v2(unsigned char uuid[16], CUdevice d)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_dev(d))
		return g.inited ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	static const unsigned char base[16] = { 0xfa, 0x1e, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0 };
	memcpy(uuid, base, 16);
	uuid[15] = (unsigned char)d;
	return CUDA_SUCCESS;
}

/* Wait until every piece of work on the current context's streams is done. */
CUresult cuCtxSynchronize(void)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	struct fake_ctx *c = current;
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&c->mu);
	while (c->completed < c->submitted)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	struct fake_ctx *c = current;
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!free_b || !total_b)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->mu);
	*free_b = g.mem - c->used;
	*total_b = g.mem;
	pthread_mutex_unlock(&c->mu);
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	FAIL_POINT(CUDA_ERROR_OUT_OF_MEMORY);
	struct fake_ctx *c = current;
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->mu);
	int room = bytes <= g.mem - c->used;
	if (room)
		c->used += bytes;
	pthread_mutex_unlock(&c->mu);
	if (!room)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct block *b = malloc(sizeof(*b) + bytes);
	if (!b) {
		pthread_mutex_lock(&c->mu);
		c->used -= bytes;
		pthread_mutex_unlock(&c->mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	b->magic = BLOCK_MAGIC;
	b->size = bytes;
	b->ctx = c;
	*p = (CUdeviceptr)(uintptr_t)(b + 1);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!p)
		return CUDA_SUCCESS;
	struct block *b = (struct block *)(uintptr_t)p - 1;
	if (b->magic != BLOCK_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	b->magic = 0;
	pthread_mutex_lock(&b->ctx->mu);
	b->ctx->used -= b->size;
	pthread_mutex_unlock(&b->ctx->mu);
	free(b);
	return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
	FAIL_POINT(CUDA_ERROR_OUT_OF_MEMORY);
	(void)flags;
	if (!p || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	*p = malloc(bytes);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *p)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	free(p);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bytes && (!dst || !src))
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes)
		memcpy((void *)(uintptr_t)dst, src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bytes && (!dst || !src))
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes)
		memcpy(dst, (const void *)(uintptr_t)src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bytes && (!dst || !src))
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes)
		memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (n && (!dst || dst % 4))
		return CUDA_ERROR_INVALID_VALUE;
	uint32_t *d = (uint32_t *)(uintptr_t)dst;
	for (size_t i = 0; i < n; i++)
		d[i] = v;
	return CUDA_SUCCESS;
}

/* ---- streams ---- */

static struct stream *S(struct fakegpu_stream *s)
{
	return (struct stream *)s;
}

static int graph_add(struct fake_graph *gr, const struct fakegpu_work *w)
{
	if (gr->n == gr->cap) {
		size_t cap = gr->cap ? gr->cap * 2 : 16;
		struct fakegpu_work *nw = realloc(gr->w, cap * sizeof(*nw));
		if (!nw)
			return CUDA_ERROR_OUT_OF_MEMORY;
		gr->w = nw;
		gr->cap = cap;
	}
	gr->w[gr->n++] = *w;
	return CUDA_SUCCESS;
}

static int st_submit(struct fakegpu_stream *pub, const struct fakegpu_work *w)
{
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	struct fake_graph *cap = s->capture;
	int r = cap ? graph_add(cap, w) : CUDA_SUCCESS;
	pthread_mutex_unlock(&s->mu);
	if (!cap)
		w->launch(w, pub);
	return r;
}

static void st_begin(struct fakegpu_stream *pub)
{
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	s->submitted++;
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->ctx->mu);
	s->ctx->submitted++;
	pthread_mutex_unlock(&s->ctx->mu);
}

static void st_end(struct fakegpu_stream *pub, int cu_err)
{
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	s->completed++;
	s->done_ns[s->completed % DONE_RING] = mono_ns();
	if (cu_err && !s->err)
		s->err = cu_err;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->ctx->mu);
	s->ctx->completed++;
	pthread_cond_broadcast(&s->ctx->cv);
	pthread_mutex_unlock(&s->ctx->mu);
}

static int bad_stream(CUstream s)
{
	return !s || s->magic != FAKEGPU_STREAM_MAGIC;
}

/* A new stream of context c; NULL when out of memory. */
static struct stream *stream_new(struct fake_ctx *c)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pub.magic = FAKEGPU_STREAM_MAGIC;
	s->pub.submit = st_submit;
	s->pub.begin = st_begin;
	s->pub.end = st_end;
	s->ctx = c;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	return s;
}

/*
 * The NULL (legacy default) stream of a context, made on first use and
 * kept for the process. Work on it is ordered like any stream's; the
 * legacy stream's synchronisation with the context's other blocking
 * streams is not modelled (ncclwatch's own streams are non-blocking).
 */
static struct fakegpu_stream *ctx_null_stream(struct fakegpu_ctx *pub)
{
	struct fake_ctx *c = (struct fake_ctx *)pub;
	pthread_mutex_lock(&c->mu);
	if (!c->legacy)
		c->legacy = stream_new(c);
	struct stream *s = c->legacy;
	pthread_mutex_unlock(&c->mu);
	return s ? &s->pub : NULL;
}

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: handles that name the current context's default stream. */
#define CU_STREAM_LEGACY ((CUstream)(uintptr_t)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)(uintptr_t)0x2)

/* A stream argument: 0 (and the two special handles) is the current context's NULL stream; NULL without one. */
static CUstream resolve(CUstream s)
{
	if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
		return s;
	return current ? ctx_null_stream(&current->pub) : NULL;
}

static int is_default(CUstream s)
{
	return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult cuStreamCreate(CUstream *out, unsigned int flags)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	(void)flags;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	struct stream *s = stream_new(current);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = &s->pub;
	return CUDA_SUCCESS;
}

static void graph_free(struct fake_graph *gr)
{
	if (gr) {
		free(gr->w);
		free(gr);
	}
}

/*
 * Destroy a stream. The fake NCCL drops (completes) its pending work on
 * a stream when the communicator is destroyed or aborted, so by the time
 * a program destroys its streams nothing refers to them.
 */
CUresult cuStreamDestroy_v2(CUstream pub)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (is_default(pub) || bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	struct stream *s = S(pub);
	pthread_mutex_lock(&ev_mu);
	uint64_t now = mono_ns();
	for (struct fake_event *e = s->pending; e; e = e->next) {
		e->s = NULL; /* its work was dropped with the communicator: complete now */
		e->done_ns = now;
	}
	s->pending = NULL;
	pthread_mutex_unlock(&ev_mu);
	s->pub.magic = 0;
	graph_free(s->capture);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream pub)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (is_default(pub) && !current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pub = resolve(pub);
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	CUresult r = s->capture ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	           : s->err ? s->err
	           : s->completed < s->submitted ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	pthread_mutex_unlock(&s->mu);
	return r;
}

CUresult cuStreamSynchronize(CUstream pub)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (is_default(pub) && !current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pub = resolve(pub);
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	while (s->completed < s->submitted && !s->capture)
		pthread_cond_wait(&s->cv, &s->mu);
	CUresult r = s->capture ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : s->err;
	pthread_mutex_unlock(&s->mu);
	return r;
}

CUresult cuStreamBeginCapture_v2(CUstream pub, int mode)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (is_default(pub))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot be captured */
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	if (mode < 0 || mode > 2)
		return CUDA_ERROR_INVALID_VALUE;
	struct stream *s = S(pub);
	struct fake_graph *gr = calloc(1, sizeof(*gr));
	if (!gr)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&s->mu);
	CUresult r = s->capture ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
	if (!r) {
		s->capture = gr;
		gr = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	graph_free(gr);
	return r;
}

CUresult cuStreamEndCapture(CUstream pub, CUgraph *out)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	struct fake_graph *gr = s->capture;
	s->capture = NULL;
	pthread_mutex_unlock(&s->mu);
	*out = gr;
	return gr ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_STATE;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph gr, unsigned long long flags)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	(void)flags;
	if (!e || !gr)
		return CUDA_ERROR_INVALID_VALUE;
	struct fake_graph *x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < gr->n; i++)
		if (graph_add(x, &gr->w[i])) {
			graph_free(x);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	*e = x;
	return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	s = resolve(s);
	if (!e || bad_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	for (size_t i = 0; i < e->n; i++) {
		CUresult r = s->submit(s, &e->w[i]);
		if (r)
			return r;
	}
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec e)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	graph_free(e);
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph gr)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	graph_free(gr);
	return CUDA_SUCCESS;
}

/* ---- events ---- */

static int bad_event(CUevent e)
{
	return !e || e->magic != EVENT_MAGIC;
}

/* Take e off its stream's pending list (ev_mu held). */
static void ev_unlink(struct fake_event *e)
{
	if (!e->s)
		return;
	for (struct fake_event **pp = &e->s->pending; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	e->s = NULL;
}

/* Has e completed? Settles its time when it just did (ev_mu held). */
static int ev_done(struct fake_event *e)
{
	if (e->done_ns)
		return 1;
	struct stream *s = e->s;
	pthread_mutex_lock(&s->mu);
	int done = s->completed >= e->ticket;
	uint64_t t = done && s->completed - e->ticket < DONE_RING ? s->done_ns[e->ticket % DONE_RING] : 0;
	pthread_mutex_unlock(&s->mu);
	if (!done)
		return 0;
	e->done_ns = t > e->rec_ns ? t : e->rec_ns;
	ev_unlink(e);
	return 1;
}

CUresult cuEventCreate(CUevent *out, unsigned int flags)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct fake_event *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = EVENT_MAGIC;
	e->ctx = current;
	e->flags = flags;
	*out = e;
	return CUDA_SUCCESS;
}

/* NULL, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2): the context's default streams, idle in the fake. */
static int default_stream(CUstream s)
{
	return (uintptr_t)s <= 2;
}

CUresult cuEventRecord(CUevent e, CUstream pub)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_event(e) || (!default_stream(pub) && bad_stream(pub)))
		return CUDA_ERROR_INVALID_HANDLE;
	struct stream *s = default_stream(pub) ? NULL : S(pub);
	if (s && s->ctx != e->ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev_mu);
	ev_unlink(e);
	e->recorded = 1;
	e->rec_ns = mono_ns();
	e->done_ns = e->rec_ns;
	CUresult r = CUDA_SUCCESS;
	if (s) {
		pthread_mutex_lock(&s->mu);
		if (s->capture) {
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
			fprintf(stderr, "fake CUDA: cuEventRecord on a capturing stream\n");
		} else if (s->completed < s->submitted) {
			e->ticket = s->submitted;
			e->done_ns = 0;
			e->s = s;
			e->next = s->pending;
			s->pending = e;
		}
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_unlock(&ev_mu);
	return r;
}

CUresult cuEventQuery(CUevent e)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev_mu);
	CUresult r = !e->recorded || ev_done(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&ev_mu);
	return r;
}

CUresult cuEventSynchronize(CUevent e)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	CUresult r;
	while ((r = cuEventQuery(e)) == CUDA_ERROR_NOT_READY)
		usleep(100);
	return r;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (bad_event(a) || bad_event(b) || ((a->flags | b->flags) & EVENT_DISABLE_TIMING) || a->ctx != b->ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev_mu);
	CUresult r = !a->recorded || !b->recorded ? CUDA_ERROR_INVALID_HANDLE
	           : !ev_done(a) || !ev_done(b) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	if (!r)
		*ms = (float)(((double)b->done_ns - (double)a->done_ns) / 1e6);
	pthread_mutex_unlock(&ev_mu);
	return r;
}

CUresult cuEventDestroy_v2(CUevent e)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (bad_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev_mu);
	ev_unlink(e);
	e->magic = 0;
	pthread_mutex_unlock(&ev_mu);
	free(e);
	return CUDA_SUCCESS;
}

/* CU_STREAM_CAPTURE_STATUS_NONE (0) or _ACTIVE (1). */
CUresult cuStreamIsCapturing(CUstream pub, int *status)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	if (default_stream(pub)) {
		*status = 0;
		return CUDA_SUCCESS;
	}
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	struct stream *s = S(pub);
	pthread_mutex_lock(&s->mu);
	*status = s->capture ? 1 : 0;
	pthread_mutex_unlock(&s->mu);
	return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream pub, CUcontext *ctx)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (default_stream(pub)) {
		*ctx = current;
		return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	}
	if (bad_stream(pub))
		return CUDA_ERROR_INVALID_HANDLE;
	*ctx = S(pub)->ctx;
	return CUDA_SUCCESS;
}

/* The calling thread's stream-capture mode, swapped (GLOBAL 0, THREAD_LOCAL 1, RELAXED 2). */
CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!mode || *mode < 0 || *mode > 2)
		return CUDA_ERROR_INVALID_VALUE;
	int old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ---- modules and the check kernels ---- */

#define PERIOD 13 /* the kernels' table length (src/gpu/verify.ptx) */
#define MODULE_MAGIC 0x66616b656d6f6431ull

struct fake_module {
	uint64_t magic;
};

/* One kernel: its name and what it does with the launch's parameters. */
struct fake_kernel {
	const char *name;
	void (*run)(void **params);
};

/* The element at a of es bytes, zero-extended (little-endian). */
static uint64_t load_elem(const unsigned char *a, unsigned es)
{
	uint64_t v = 0;
	memcpy(&v, a, es);
	return v;
}

static void k_fill(void **params)
{
	unsigned char *buf = (unsigned char *)(uintptr_t)*(CUdeviceptr *)params[0];
	uint64_t n = *(uint64_t *)params[1];
	unsigned es = *(unsigned *)params[2], k0 = *(unsigned *)params[3];
	const uint64_t *tab = params[4];
	for (uint64_t j = 0; j < n; j++)
		memcpy(buf + j * es, &tab[(k0 + j) % PERIOD], es);
}

static void k_bits(void **params)
{
	const unsigned char *buf = (const unsigned char *)(uintptr_t)*(CUdeviceptr *)params[0];
	uint64_t n = *(uint64_t *)params[1], wrong = 0;
	unsigned es = *(unsigned *)params[2], k0 = *(unsigned *)params[3];
	uint64_t *count = (uint64_t *)(uintptr_t)*(CUdeviceptr *)params[4];
	const uint64_t *ref = params[5];
	for (uint64_t j = 0; j < n; j++)
		wrong += load_elem(buf + j * es, es) != ref[(k0 + j) % PERIOD];
	__atomic_add_fetch(count, wrong, __ATOMIC_RELAXED);
}

static void k_map(void **params)
{
	const unsigned char *buf = (const unsigned char *)(uintptr_t)*(CUdeviceptr *)params[0];
	uint64_t n = *(uint64_t *)params[1], wrong = 0;
	unsigned es = *(unsigned *)params[2], k0 = *(unsigned *)params[3];
	uint64_t *count = (uint64_t *)(uintptr_t)*(CUdeviceptr *)params[4];
	const uint32_t *map = (const uint32_t *)(uintptr_t)*(CUdeviceptr *)params[5];
	uint64_t words = es == 1 ? 8 : 2048;
	for (uint64_t j = 0; j < n; j++) {
		uint64_t code = load_elem(buf + j * es, es), k = (k0 + j) % PERIOD;
		wrong += !((map[k * words + code / 32] >> (code % 32)) & 1);
	}
	__atomic_add_fetch(count, wrong, __ATOMIC_RELAXED);
}

static void k_tol(void **params)
{
	const unsigned char *buf = (const unsigned char *)(uintptr_t)*(CUdeviceptr *)params[0];
	uint64_t n = *(uint64_t *)params[1], wrong = 0;
	unsigned es = *(unsigned *)params[2], k0 = *(unsigned *)params[3];
	uint64_t *count = (uint64_t *)(uintptr_t)*(CUdeviceptr *)params[4];
	const double *rep = params[5], *want = params[6], *ts = params[7];
	for (uint64_t j = 0; j < n; j++) {
		double got;
		if (es == 4) {
			float f;
			memcpy(&f, buf + j * 4, 4);
			got = f;
		} else {
			memcpy(&got, buf + j * 8, 8);
		}
		uint64_t k = (k0 + j) % PERIOD;
		double d1 = got - rep[k], d2 = got - want[k];
		int ok = (d1 < 0 ? -d1 : d1) <= ts[k] || (d2 < 0 ? -d2 : d2) <= ts[k];
		wrong += !ok;
	}
	__atomic_add_fetch(count, wrong, __ATOMIC_RELAXED);
}

static const struct fake_kernel kernels[] = {
	{ "nw_fill", k_fill }, { "nw_verify_bits", k_bits }, { "nw_verify_map", k_map }, { "nw_verify_tol", k_tol },
};

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int nopts, int *opts, void **vals)
{
	FAIL_POINT(CUDA_ERROR_UNKNOWN);
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!m || !image)
		return CUDA_ERROR_INVALID_VALUE;
	char *log = NULL;
	size_t loglen = 0;
	for (unsigned i = 0; i < nopts; i++) {
		if (opts[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
			log = vals[i];
		if (opts[i] == 6) /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
			loglen = (size_t)(uintptr_t)vals[i];
	}
	const char *no_jit = getenv("FAKE_CUDA_NO_JIT");
	if (no_jit && *no_jit && strcmp(no_jit, "0")) {
		if (log && loglen)
			snprintf(log, loglen, "ptxas application ptx input, line 1; fatal   : Unsupported .version (fake driver)");
		return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
	}
	const char *text = image;
	if (!strstr(text, ".version") || !strstr(text, ".target")) {
		if (log && loglen)
			snprintf(log, loglen, "not PTX text");
		return CUDA_ERROR_INVALID_PTX;
	}
	struct fake_module *mod = calloc(1, sizeof(*mod));
	if (!mod)
		return CUDA_ERROR_OUT_OF_MEMORY;
	mod->magic = MODULE_MAGIC;
	*m = mod;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	if (!m || m->magic != MODULE_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, name)) {
			*f = &kernels[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleUnload(CUmodule m)
{
	if (!m || m->magic != MODULE_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	m->magic = 0;
	free(m);
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	FAIL_POINT(CUDA_ERROR_LAUNCH_FAILED);
	(void)gy, (void)gz, (void)by, (void)bz, (void)shmem;
	if (!f || !params || extra || !gx || !bx)
		return CUDA_ERROR_INVALID_VALUE;
	s = resolve(s);
	if (s && bad_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	if (s && S(s)->capture)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	f->run(params);
	return CUDA_SUCCESS;
}

/* ---- errors ---- */

struct err_ent {
	int code;
	const char *name, *text;
};

static const struct err_ent errs[] = {
	{ 0, "CUDA_SUCCESS", "no error" },
	{ 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ 4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
	{ 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ 218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed" },
	{ 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain." },
	{ 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ 401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state" },
	{ 600, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
	{ 719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
	{ 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing" },
	{ 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture" },
	{ 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

/* The table entry of a result code, or NULL. */
static const struct err_ent *err_find(CUresult r)
{
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == r)
			return &errs[i];
	return NULL;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	const struct err_ent *e = err_find(r);
	*s = e ? e->text : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	const struct err_ent *e = err_find(r);
	*s = e ? e->name : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
