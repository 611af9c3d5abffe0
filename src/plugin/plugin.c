/*
 * plugin: the NCCL profiler entry points (ncclProfiler_v4, _v5, _v6) and
 * the event hot paths. See docs/plugin.md for the design.
 *
 * The hot paths (startEvent, stopEvent, recordEventState) never lock,
 * never allocate, never call into the C library except clock_gettime (vDSO),
 * and never dereference a handle that does not point into the plugin's own
 * slot arena. Everything slower happens in the publisher thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define NWP_EXPORT __attribute__((visibility("default")))

/* --- NCCL's descriptor layouts (profiler_v4.h, profiler_v5.h, profiler_v6.h) --- */

struct d_coll {
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
	void *parentGroup;      /* v5 and v6 only */
};

struct d_p2p {
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t nChannels;      /* not filled by NCCL's v4 adapter */
	void *parentGroup;      /* v5 and v6 only */
};

struct d_proxyop {
	pid_t pid;
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
};

struct d_kernelch {
	uint8_t channelId;
	uint64_t pTimer;
};

/* v5/v6: the API call behind an op (sent whenever Coll/P2p events are on) */
struct d_collapi {
	const char *func;
	size_t count;
	const char *datatype;
	int root;
	void *stream;
	_Bool graphCaptured;
};

struct d_p2papi {
	const char *func;
	size_t count;
	const char *datatype;
	void *stream;
	_Bool graphCaptured;
};

/* v6: a collective NCCL runs on copy engines (no kernel, no KernelCh events) */
struct d_cecoll {
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	const char *syncStrategy;
	_Bool intraBatchSync;
	uint32_t batchSize;
	uint32_t numBatches;
	uint32_t ceSeqNum;
	void *stream;
};

union d_body {
	struct d_coll coll;
	struct d_cecoll ceColl;
	struct d_collapi collApi;
	struct d_p2papi p2pApi;
	struct d_p2p p2p;
	struct d_proxyop proxyOp;
	struct d_kernelch kernelCh;
	struct { int64_t id; void *data; } netPlugin;
	uint64_t _v6_room[13];
};
_Static_assert(sizeof(struct d_cecoll) <= 13 * sizeof(uint64_t), "v6 union room");

struct descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union d_body u;
};

struct descr_v5 {               /* also v6: same prefix, same members we read */
	uint64_t type;
	void *parentObj;
	int rank;
	union d_body u;
};

union state_args {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
};

/* --- handles: slot pointers tagged in their low bits --- */

enum { TAG_OP = 0, TAG_KCH = 1, TAG_PROXY = 2, TAG_MASK = 63 };

struct nwp_global nwp_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct nwp_comm *comm_store;     /* max_comms entries, one arena part each */
static char unmonitored_ctx;            /* context for communicators we do not watch */
static uint64_t bad_events;             /* atomic: events we could not use, all comms */
static uint64_t late_events;            /* atomic */
static int thread_gen;                  /* atomic: publisher runs while equal to its start value */

uint64_t nwp_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t nwp_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Disable the plugin for good: clear NCCL's activation mask so no more
 * events come, make every callback return at once, and log one line
 * through the logger NCCL gave to init (only the first call logs), and the
 * same line on stderr: NCCL shows WARN lines only with NCCL_DEBUG set, and
 * a job that publishes nothing must say so where its user looks. stderr is
 * written only when that cannot block (never stall the job on a full pipe).
 */
void nwp_disable(const char *fmt, ...)
{
	if (__atomic_exchange_n(&nwp_g.disabled, 1, __ATOMIC_ACQ_REL))
		return;
	if (nwp_g.mask_ptr)
		__atomic_store_n(nwp_g.mask_ptr, 0, __ATOMIC_RELAXED);
	char msg[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(nwp_g.disabled_reason, msg, sizeof(msg));
	if (!__atomic_exchange_n(&nwp_g.logged, 1, __ATOMIC_ACQ_REL) && nwp_g.logfn)
		nwp_g.logfn(2 /* NCCL_LOG_WARN */, 1 /* NCCL_INIT */, __FILE__, __LINE__,
		            "ncclwatch profiler disabled: %s", msg);
	char line[sizeof(msg) + 48];
	int n = snprintf(line, sizeof(line), "ncclwatch profiler disabled: %s\n", msg);
	struct pollfd p = { .fd = STDERR_FILENO, .events = POLLOUT };
	if (n > 0 && (size_t)n < sizeof(line) && poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) &&
	    write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nothing more to do: the reason is in the stats files too */
	}
}

/*
 * The slot a handle points at (any tag), or NULL when it is not ours: it
 * must lie in the pool and, once the tag is taken off, start a slot (a
 * handle into the middle of one would reach past the pool's end).
 */
static inline struct nwp_slot *handle_slot(const void *h, unsigned *tag)
{
	uintptr_t p = (uintptr_t)h;
	uintptr_t base = (uintptr_t)nwp_g.arena;
	*tag = (unsigned)(p & TAG_MASK);
	p &= ~(uintptr_t)TAG_MASK;
	if (!base || p < base || p >= base + nwp_g.arena_len || (p - base) % sizeof(struct nwp_slot) != 0)
		return NULL;
	return (struct nwp_slot *)p;
}

static inline struct nwp_comm *slot_comm(const struct nwp_slot *s)
{
	size_t i = (size_t)(s - nwp_g.arena) / nwp_g.pool_size;
	return &comm_store[i];
}

/* Is ctx one of the contexts init handed out (alive or not)? */
static inline int ctx_ours(const void *ctx)
{
	uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)comm_store;
	if (ctx == &unmonitored_ctx)
		return 1;
	return base && p >= base && p < base + (uintptr_t)nwp_g.max_comms * sizeof(struct nwp_comm) &&
	       (p - base) % sizeof(struct nwp_comm) == 0;
}

/* Our live communicator behind a context, or NULL (unmonitored, finalized, or not ours). */
static inline struct nwp_comm *ctx_comm(void *ctx)
{
	if (ctx == &unmonitored_ctx || !ctx_ours(ctx))
		return NULL;
	struct nwp_comm *c = ctx;
	return __atomic_load_n(&c->alive, __ATOMIC_ACQUIRE) ? c : NULL;
}

/* Take the next slot of c's pool; NULL (and a drop counted) when it is full. */
static inline struct nwp_slot *slot_take(struct nwp_comm *c)
{
	uint64_t h = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t t = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if (h - t >= nwp_g.pool_size) {
			__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		if (__atomic_compare_exchange_n(&c->head, &h, h + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return &c->slots[h & (nwp_g.pool_size - 1)];
	}
}

/* Start a Coll or P2p event: fill a slot with plain stores, publish it. */
static void *op_start(struct nwp_comm *c, int kind, const union d_body *u)
{
	struct nwp_slot *s = slot_take(c);
	if (!s)
		return NULL;
	int mask = nwp_g.mask_ptr ? __atomic_load_n(nwp_g.mask_ptr, __ATOMIC_RELAXED) : 0;
	s->kind = (uint8_t)(kind == NWP_KIND_CE ? NWP_KIND_COLL : kind);
	s->expect_kch = kind != NWP_KIND_CE && (mask & NWP_EV_KERNELCH) != 0;
	if (kind == NWP_KIND_CE) {
		/* copy engines run it: no kernel events will come, time is the launch only */
		s->seq = u->ceColl.seqNumber;
		s->func = u->ceColl.func;
		s->count = u->ceColl.count;
		s->peer = u->ceColl.root;
		s->dtype = u->ceColl.datatype;
		s->nch = 0;
		s->nwarps = 0;
		s->algo = "CE";
		s->proto = NULL;
	} else if (kind == NWP_KIND_COLL) {
		s->seq = u->coll.seqNumber;
		s->func = u->coll.func;
		s->count = u->coll.count;
		s->peer = u->coll.root;
		s->dtype = u->coll.datatype;
		s->nch = u->coll.nChannels;
		s->nwarps = u->coll.nWarps;
		s->algo = u->coll.algo;
		s->proto = u->coll.proto;
	} else {
		s->seq = 0;
		s->func = u->p2p.func;
		s->count = u->p2p.count;
		s->peer = u->p2p.peer;
		s->dtype = u->p2p.datatype;
		s->nch = nwp_g.abi >= 5 ? u->p2p.nChannels : 0;
		s->nwarps = 0;
		s->algo = NULL;
		s->proto = NULL;
	}
	__atomic_store_n(&s->kch_started, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->kch_stopped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->kstart_gpu, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->kend_gpu, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->px_started, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->px_stopped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->px_first_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->px_last_ns, 0, __ATOMIC_RELAXED);
	s->enq_end_ns = 0;
	s->enq_ns = nwp_realtime_ns();
	__atomic_store_n(&c->last_event_ns, s->enq_ns, __ATOMIC_RELAXED);
	/* a KernelCh sample burst ends after a fixed number of ops */
	if (__atomic_load_n(&nwp_g.burst_left, __ATOMIC_RELAXED) > 0 &&
	    __atomic_sub_fetch(&nwp_g.burst_left, 1, __ATOMIC_ACQ_REL) == 0 && nwp_g.mask_ptr)
		__atomic_store_n(nwp_g.mask_ptr, __atomic_load_n(&nwp_g.base_mask, __ATOMIC_RELAXED),
		                 __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, NWP_ACTIVE, __ATOMIC_RELEASE);
	return s;
}

/* Atomically lower *p to v (0 means unset). */
static inline void atomic_min_u64(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while ((cur == 0 || v < cur) &&
	       !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void atomic_max_u64(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void atomic_min_i64(int64_t *p, int64_t v)
{
	int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A child event (KernelCh, ProxyOp) whose parent must be one of our live slots. */
static struct nwp_slot *child_parent(void *parent)
{
	if (!parent)
		return NULL; /* the parent was not recorded (pool full, unmonitored) */
	unsigned tag;
	struct nwp_slot *s = handle_slot(parent, &tag);
	if (!s || tag != TAG_OP) {
		__atomic_fetch_add(&bad_events, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (st != NWP_ACTIVE && st != NWP_STOPPED) {
		__atomic_fetch_add(&late_events, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return s;
}

/* The type, parent and body of an event descriptor of either layout (v4, or v5 and v6). */
NWP_HOT const union d_body *descr_read(const void *descr, int v4, uint64_t *type, void **parent)
{
	if (v4) {
		const struct descr_v4 *d = descr;
		*type = d->type;
		*parent = d->parentObj;
		return &d->u;
	}
	const struct descr_v5 *d = descr;
	*type = d->type;
	*parent = d->parentObj;
	return &d->u;
}

/* Start an op (Coll, P2p or CeColl) of the communicator behind ctx; nothing when it is not watched. */
NWP_HOT void start_op(void *ctx, void **eHandle, int kind, const union d_body *u)
{
	struct nwp_comm *c = ctx_comm(ctx);
	if (!c) {
		if (!ctx_ours(ctx))
			nwp_disable("startEvent called with a context this plugin did not make");
		return; /* unmonitored or already finalized: nothing to record */
	}
	*eHandle = op_start(c, kind, u);
}

/* A KernelCh event: the channel's GPU start time on its parent op, and the clock offset. */
NWP_HOT void start_kernelch(void **eHandle, void *parent, const union d_body *u)
{
	struct nwp_slot *s = child_parent(parent);
	if (!s)
		return;
	uint64_t t = u->kernelCh.pTimer, now = nwp_realtime_ns();
	struct nwp_comm *c = slot_comm(s);
	__atomic_store_n(&c->last_event_ns, now, __ATOMIC_RELAXED);
	if (t) {
		atomic_min_u64(&s->kstart_gpu, t);
		atomic_min_i64(&c->off_min, (int64_t)(now - t));
	}
	__atomic_fetch_add(&s->kch_started, 1, __ATOMIC_RELEASE);
	*eHandle = (void *)((uintptr_t)s | TAG_KCH);
}

/* A ProxyOp event of this process: the first proxy start on its parent op. */
NWP_HOT void start_proxyop(void **eHandle, void *parent, const union d_body *u)
{
	if (u->proxyOp.pid != nwp_g.pid)
		return; /* PXN: the parent lives in another process */
	struct nwp_slot *s = child_parent(parent);
	if (!s)
		return;
	uint64_t now = nwp_realtime_ns();
	atomic_min_u64(&s->px_first_ns, now);
	__atomic_store_n(&slot_comm(s)->last_event_ns, now, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->px_started, 1, __ATOMIC_RELEASE);
	*eHandle = (void *)((uintptr_t)s | TAG_PROXY);
}

/* CollApi/P2pApi (v5+): a call captured into a CUDA graph; its replays raise no events, so count it. */
NWP_HOT void count_graph_call(void *ctx, uint64_t type, const union d_body *u, int v4)
{
	if (v4 || !(type == NWP_EV_COLLAPI ? u->collApi.graphCaptured : u->p2pApi.graphCaptured))
		return;
	struct nwp_comm *c = ctx_comm(ctx);
	if (c)
		__atomic_fetch_add(&c->graph_ops, 1, __ATOMIC_RELAXED);
}

static int start_event(void *ctx, void **eHandle, const void *descr, int v4)
{
	if (!eHandle) {
		nwp_disable("startEvent called without a handle pointer");
		return 0;
	}
	*eHandle = NULL;
	if (__atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED))
		return 0;
	if (!descr) {
		nwp_disable("startEvent called with a NULL event descriptor");
		return 0;
	}
	uint64_t type;
	void *parent;
	const union d_body *u = descr_read(descr, v4, &type, &parent);
	int kind; /* the events that start an op break out of the switch with it */
	switch (type) {
	case NWP_EV_COLL:
		kind = NWP_KIND_COLL;
		break;
	case NWP_EV_P2P:
		kind = NWP_KIND_P2P;
		break;
	case NWP_EV_CECOLL:
		if (v4 || nwp_g.abi < 6)
			return 0; /* not part of this interface version: ignore */
		kind = NWP_KIND_CE;
		break;
	case NWP_EV_KERNELCH:
		start_kernelch(eHandle, parent, u);
		return 0;
	case NWP_EV_PROXYOP:
		start_proxyop(eHandle, parent, u);
		return 0;
	case NWP_EV_COLLAPI:
	case NWP_EV_P2PAPI:
		count_graph_call(ctx, type, u, v4);
		return 0;
	case NWP_EV_GROUP:
	case NWP_EV_PROXYSTEP:
	case NWP_EV_PROXYCTRL:
	case NWP_EV_NETPLUGIN:
	case NWP_EV_GROUPAPI:
	case NWP_EV_KERNELLAUNCH:
	case NWP_EV_CESYNC:
	case NWP_EV_CEBATCH:
		return 0; /* known, not asked for: nothing to do */
	default:
		nwp_disable("unknown event type 0x%llx", (unsigned long long)type);
		return 0;
	}
	start_op(ctx, eHandle, kind, u);
	return 0;
}

static int stop_event(void *eHandle)
{
	if (!eHandle || __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED))
		return 0;
	unsigned tag;
	struct nwp_slot *s = handle_slot(eHandle, &tag);
	if (!s) {
		nwp_disable("stopEvent called with a handle this plugin did not make");
		return 0;
	}
	switch (tag) {
	case TAG_OP:
		if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != NWP_ACTIVE) {
			__atomic_fetch_add(&bad_events, 1, __ATOMIC_RELAXED);
			return 0;
		}
		s->enq_end_ns = nwp_realtime_ns();
		__atomic_store_n(&slot_comm(s)->last_event_ns, s->enq_end_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&s->state, NWP_STOPPED, __ATOMIC_RELEASE);
		return 0;
	case TAG_PROXY: {
		uint64_t now = nwp_realtime_ns();
		__atomic_store_n(&s->px_last_ns, now, __ATOMIC_RELAXED);
		__atomic_store_n(&slot_comm(s)->last_event_ns, now, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->px_stopped, 1, __ATOMIC_RELEASE);
		return 0;
	}
	case TAG_KCH:
		return 0; /* its end came with recordEventState(KernelChStop) */
	default:
		nwp_disable("stopEvent called with a handle this plugin did not make");
		return 0;
	}
}

static int record_state(void *eHandle, int eState, const union state_args *args)
{
	if (!eHandle || __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED))
		return 0;
	unsigned tag;
	struct nwp_slot *s = handle_slot(eHandle, &tag);
	if (!s || tag > TAG_PROXY) {
		nwp_disable("recordEventState called with a handle this plugin did not make");
		return 0;
	}
	if (tag != TAG_KCH || eState != NWP_STATE_KERNELCH_STOP)
		return 0;
	if (!args) {
		__atomic_fetch_add(&bad_events, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (args->kernelCh.pTimer)
		atomic_max_u64(&s->kend_gpu, args->kernelCh.pTimer);
	__atomic_store_n(&slot_comm(s)->last_event_ns, nwp_realtime_ns(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->kch_stopped, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Read field 22 (start time) of /proc/self/stat. */
static uint64_t self_start_time(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* First-time setup: configuration, identity, arena. -1 when the plugin cannot run. */
static int global_setup(char *err, size_t errlen)
{
	if (nwp_config(err, errlen) != 0)
		return -1;
	nwp_g.pid = (int)getpid();
	nwp_g.proc_start = self_start_time();
	if (gethostname(nwp_g.host, sizeof(nwp_g.host)) != 0 || !nwp_g.host[0])
		snprintf(nwp_g.host, sizeof(nwp_g.host), "unknown");
	nwp_g.host[sizeof(nwp_g.host) - 1] = '\0';
	size_t nslots = (size_t)nwp_g.max_comms * nwp_g.pool_size;
	nwp_g.arena_len = nslots * sizeof(struct nwp_slot);
	if (posix_memalign((void **)&nwp_g.arena, 64, nwp_g.arena_len) != 0) {
		nwp_g.arena = NULL;
		snprintf(err, errlen, "cannot allocate %zu bytes for the event pool", nwp_g.arena_len);
		return -1;
	}
	comm_store = calloc((size_t)nwp_g.max_comms, sizeof(struct nwp_comm));
	if (!comm_store) {
		snprintf(err, errlen, "cannot allocate the communicator table");
		return -1;
	}
	return 0;
}

/* Who a communicator is, as init was told. */
struct comm_id {
	uint64_t hash;
	const char *name;
	int nnodes, nranks, rank;
};

/* init's answer when NCCL gave no context or no mask pointer: disable, and set what can be set. */
static int init_without_pointers(void **context, int *mask, nwp_logfn_t logfn)
{
	if (logfn && !nwp_g.logfn)
		nwp_g.logfn = logfn;
	nwp_disable("init called without %s", !context ? "a context pointer" : "an activation mask");
	if (mask)
		*mask = 0;
	if (context)
		*context = &unmonitored_ctx;
	return 0;
}

/* A free communicator entry, its slot pool cleared and its identity filled; NULL when all are taken. Caller holds the lock. */
static struct nwp_comm *comm_claim(const struct comm_id *id)
{
	struct nwp_comm *c = NULL;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		if (!comm_store[i].alive) {
			c = &comm_store[i];
			c->index = i;
			break;
		}
	}
	if (!c)
		return NULL;
	struct nwp_slot *slots = nwp_g.arena + (size_t)c->index * nwp_g.pool_size;
	memset(c, 0, sizeof(*c));
	c->index = (int)(slots - nwp_g.arena) / (int)nwp_g.pool_size;
	c->slots = slots;
	memset(slots, 0, (size_t)nwp_g.pool_size * sizeof(*slots));
	c->comm_hash = id->hash;
	c->rank = id->rank;
	c->nranks = id->nranks;
	c->nnodes = id->nnodes;
	c->off_min = INT64_MAX;
	c->off_prev = INT64_MAX;
	c->off_window = nwp_realtime_ns() / 1000000000ull / 10;
	c->fd = -1;
	c->prog.enq_op = c->prog.done_op = c->prog.oldest_op = NWS_NOPS;
	snprintf(c->name, sizeof(c->name), "%s", id->name ? id->name : "");
	return c;
}

/* The activation mask once a communicator over nnodes nodes is watched (the base mask grows to suit it). */
static int comm_mask(int nnodes)
{
	int base = nwp_g.base_mask | NWP_EV_COLL | NWP_EV_P2P | (nnodes > 1 ? NWP_EV_PROXYOP : 0) |
	           (nwp_g.abi >= 6 ? NWP_EV_CECOLL : 0); /* 2.29+: collectives on copy engines */
	__atomic_store_n(&nwp_g.base_mask, base, __ATOMIC_RELAXED);
	if (!nwp_g.mask)
		nwp_g.kernel_on = nwp_g.kmode == NWS_KMODE_ON;
	nwp_g.mask = nwp_g.base_mask | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
	return nwp_g.mask;
}

/*
 * Watch one more communicator (caller holds the lock): an entry, its
 * stats file, NCCL's mask, the context, one INFO line, the publisher
 * running. More communicators than entries are left unwatched (one INFO
 * line). -1 with err when the plugin cannot go on.
 */
static int comm_register(int abi, const struct comm_id *id, void **context, int *mask, nwp_logfn_t logfn,
                         char *err, size_t errlen)
{
	struct nwp_comm *c = comm_claim(id);
	if (!c) {
		if (logfn)
			logfn(3 /* INFO */, 1, __FILE__, __LINE__,
			      "ncclwatch: more than %d communicators in this process; communicator %s (%016llx) is not watched (raise NCCLWATCH_MAX_COMMS)",
			      nwp_g.max_comms, id->name && *id->name ? id->name : "-", (unsigned long long)id->hash);
		*mask = nwp_g.mask;
		return 0;
	}
	if (nwp_comm_open(c, err, errlen) != 0)
		return -1;
	*mask = comm_mask(id->nnodes);
	__atomic_store_n(&c->alive, 1, __ATOMIC_RELEASE);
	nwp_g.ncomms_alive++;
	*context = c;
	if (logfn)
		logfn(3 /* INFO */, 1, __FILE__, __LINE__,
		      "ncclwatch: profiler v%d watching comm %016llx rank %d/%d, stats in %s, kernel timestamps %s",
		      abi, (unsigned long long)id->hash, id->rank, id->nranks, c->path,
		      nwp_g.kmode == NWS_KMODE_ON ? "always" : nwp_g.kmode == NWS_KMODE_OFF ? "never" : "auto");
	if (!nwp_g.thread_running) {
		if (nwp_thread_start() != 0) {
			snprintf(err, errlen, "cannot start the publisher thread");
			return -1;
		}
		nwp_g.thread_running = 1;
	}
	return 0;
}

/*
 * init for every ABI version: register one communicator, open its stats
 * file, hand NCCL the activation mask. Never fails NCCL: a problem
 * disables the plugin (one log line) and NCCL goes on without events.
 */
static int plugin_init(int abi, void **context, uint64_t comm_hash, int *mask, const char *name,
                       int nnodes, int nranks, int rank, nwp_logfn_t logfn)
{
	static int setup_done;
	char err[200] = "";
	if (!context || !mask)
		return init_without_pointers(context, mask, logfn);
	*context = &unmonitored_ctx;
	pthread_mutex_lock(&nwp_g.lock);
	if (!nwp_g.logfn)
		nwp_g.logfn = logfn;
	nwp_g.mask_ptr = mask;
	int rc = 0;
	if (!setup_done) {
		setup_done = 1;
		nwp_g.abi = abi;
		rc = global_setup(err, sizeof(err));
	}
	if (rc == 0 && __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED)) {
		*mask = 0;
	} else if (rc == 0) {
		const struct comm_id id = { comm_hash, name, nnodes, nranks, rank };
		rc = comm_register(abi, &id, context, mask, logfn, err, sizeof(err));
	}
	pthread_mutex_unlock(&nwp_g.lock);
	if (rc != 0) {
		nwp_disable("%s", err);
		*mask = 0;
	}
	return 0;
}

/* finalize: account every op still in flight, mark the file finished, close it. */
static int plugin_finalize(void *context)
{
	pthread_mutex_lock(&nwp_g.lock);
	struct nwp_comm *c = ctx_comm(context);
	int join = 0;
	pthread_t tid;
	memset(&tid, 0, sizeof(tid));
	if (c) {
		__atomic_store_n(&c->alive, 0, __ATOMIC_RELEASE);
		uint64_t now = nwp_realtime_ns();
		if (!__atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED)) {
			nwp_drain(c, now, 1);
			nwp_publish_header(c, now, NWS_STATE_FINISHED);
		} else {
			nwp_publish_header(c, now, NWS_STATE_DISABLED);
		}
		nwp_comm_close(c);
		nwp_g.ncomms_alive--;
		if (nwp_g.ncomms_alive == 0 && nwp_g.thread_running) {
			nwp_g.thread_running = 0;
			tid = nwp_thread_stop();
			join = 1;
		}
	}
	pthread_mutex_unlock(&nwp_g.lock);
	if (join)
		pthread_join(tid, NULL);
	return 0;
}

uint64_t nwp_bad_events(void) { return __atomic_load_n(&bad_events, __ATOMIC_RELAXED); }
uint64_t nwp_late_events(void) { return __atomic_load_n(&late_events, __ATOMIC_RELAXED); }
int *nwp_thread_gen(void) { return &thread_gen; }
struct nwp_comm *nwp_comm_at(int i) { return comm_store ? &comm_store[i] : NULL; }

/* --- the exported tables --- */

static int v4_init(void **context, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return plugin_init(4, context, hash, mask, name, nnodes, nranks, rank, logfn);
}

static int v5_init(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return plugin_init(5, context, id, mask, name, nnodes, nranks, rank, logfn);
}

static int v6_init(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return plugin_init(6, context, id, mask, name, nnodes, nranks, rank, logfn);
}

static int v4_start(void *ctx, void **h, void *d) { return start_event(ctx, h, d, 1); }
static int v5_start(void *ctx, void **h, void *d) { return start_event(ctx, h, d, 0); }
static int any_record(void *h, int st, void *a) { return record_state(h, st, a); }

struct nwp_table_v4 {
	const char *name;
	int (*init)(void **, int *, const char *, uint64_t, int, int, int, nwp_logfn_t);
	int (*startEvent)(void *, void **, void *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, void *);
	int (*finalize)(void *);
};

struct nwp_table_v5 {
	const char *name;
	int (*init)(void **, uint64_t, int *, const char *, int, int, int, nwp_logfn_t);
	int (*startEvent)(void *, void **, void *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, void *);
	int (*finalize)(void *);
};

NWP_EXPORT struct nwp_table_v4 ncclProfiler_v4 = {
	"ncclwatch", v4_init, v4_start, stop_event, any_record, plugin_finalize
};
NWP_EXPORT struct nwp_table_v5 ncclProfiler_v5 = {
	"ncclwatch", v5_init, v5_start, stop_event, any_record, plugin_finalize
};
NWP_EXPORT struct nwp_table_v5 ncclProfiler_v6 = {
	"ncclwatch", v6_init, v5_start, stop_event, any_record, plugin_finalize
};
