/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin: the NCCL profiler entry points (ncclProfiler_v1 to _v6) and the
 * event hot paths. See docs/plugin.md for the design, nccl_abi.h for what
 * each interface version gives, register.c for init and finalize.
 *
 * The hot paths (startEvent, stopEvent, recordEventState) never lock,
 * never allocate, never call into the C library except clock_gettime (vDSO),
 * and never dereference a handle that does not point into the plugin's own
 * slot arena. Everything slower happens in the publisher thread. What the
 * interposer shares with it (the process-wide state, clocks, log lines,
 * filling a slot) is in core.c and slot.h.
 */
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "plugin/nccl_abi.h"
#include "plugin/nwp.h"
#include "plugin/slot.h"

#define NWP_EXPORT __attribute__((visibility("default")))

/* --- handles: slot pointers tagged in their low bits --- */

enum { TAG_OP = 0, TAG_KCH = 1, TAG_PROXY = 2, TAG_MASK = 63 };

/*
 * The handle of every Group event. NCCL 2.23 to 2.27 raise a collective's
 * or a p2p's events only under a group whose handle is not NULL
 * (plan->groupEventHandle), so a group is given this one; it holds
 * nothing, and stopping it does nothing.
 */
static const char group_token;
#define GROUP_HANDLE ((void *)&group_token)

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
	return &nwp_comm_table[i];
}

/* Start a Coll, P2p or CeColl event: fill a slot with plain stores, publish it. */
NWP_HOT void *op_start(struct nwp_comm *c, int kind, const struct nwp_op_in *in)
{
	struct nwp_slot *s = nwp_slot_take(c);
	if (!s)
		return NULL;
	int *mp = nwp_mask_ptr();
	int mask = mp ? __atomic_load_n(mp, __ATOMIC_RELAXED) : 0;
	/* copy engines run a CeColl: no kernel events will come, its time is the launch only */
	nwp_slot_fill(c, s, kind == NWP_KIND_CE ? NWP_KIND_COLL : kind, in,
	              kind != NWP_KIND_CE && (mask & NWP_EV_KERNELCH) != 0);
	/* a KernelCh sample burst ends after a fixed number of ops */
	if (__atomic_load_n(&nwp_g.burst_left, __ATOMIC_RELAXED) > 0 &&
	    __atomic_sub_fetch(&nwp_g.burst_left, 1, __ATOMIC_ACQ_REL) == 0 && mp)
		__atomic_store_n(mp, __atomic_load_n(&nwp_g.base_mask, __ATOMIC_RELAXED),
		                 __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, NWP_ACTIVE, __ATOMIC_RELEASE);
	return s;
}

/* The op of a v4 to v6 descriptor body (kind: Coll, P2p or CeColl). */
NWP_HOT void op_in_of(int kind, const union d_body *u, struct nwp_op_in *in)
{
	if (kind == NWP_KIND_CE) {
		*in = (struct nwp_op_in){ u->ceColl.seqNumber, u->ceColl.func, u->ceColl.datatype, "CE", NULL,
		                      u->ceColl.count, u->ceColl.root, 0, 0 };
	} else if (kind == NWP_KIND_COLL) {
		*in = (struct nwp_op_in){ u->coll.seqNumber, u->coll.func, u->coll.datatype, u->coll.algo, u->coll.proto,
		                      u->coll.count, u->coll.root, u->coll.nChannels, u->coll.nWarps };
	} else {
		*in = (struct nwp_op_in){ 0, u->p2p.func, u->p2p.datatype, NULL, NULL, u->p2p.count, u->p2p.peer,
		                      (uint8_t)(nwp_g.abi >= 5 ? u->p2p.nChannels : 0), 0 };
	}
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
		__atomic_fetch_add(&nwp_g.bad_events, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (st != NWP_ACTIVE && st != NWP_STOPPED) {
		__atomic_fetch_add(&nwp_g.late_events, 1, __ATOMIC_RELAXED);
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

/* The live communicator behind ctx for an op; NULL when it is not watched (and the plugin disabled when ctx is not ours). */
NWP_HOT struct nwp_comm *op_comm(void *ctx)
{
	struct nwp_comm *c = nwp_ctx_comm(ctx);
	if (!c && !nwp_ctx_ours(ctx))
		nwp_disable("startEvent called with a context this plugin did not make");
	return c; /* NULL: unwatched or already finalized, nothing to record */
}

/* Start an op (Coll, P2p or CeColl) of the communicator behind ctx; nothing when it is not watched. */
NWP_HOT void start_op(void *ctx, void **eHandle, int kind, const union d_body *u)
{
	struct nwp_comm *c = op_comm(ctx);
	if (!c)
		return;
	struct nwp_op_in in;
	op_in_of(kind, u, &in);
	*eHandle = op_start(c, kind, &in);
}

/*
 * A KernelCh event: the channel's start time t on its parent op, and the
 * clock offset. t is the GPU's (v4+) or, with v3, 0: the channel started
 * when NCCL's proxy thread saw it, now.
 */
NWP_HOT void start_kernelch(void **eHandle, void *parent, uint64_t t)
{
	struct nwp_slot *s = child_parent(parent);
	if (!s)
		return;
	uint64_t now = nwp_realtime_ns();
	if (nwp_g.abi == 3)
		t = now;
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
NWP_HOT void start_proxyop(void **eHandle, void *parent, const struct d_proxyop *po)
{
	if (po->pid != nwp_g.pid)
		return; /* PXN: the parent lives in another process */
	struct nwp_slot *s = child_parent(parent);
	if (!s)
		return;
	uint64_t now = nwp_realtime_ns();
	struct nwp_comm *c = slot_comm(s);
	atomic_min_u64(&s->px_first_ns, now);
	__atomic_store_n(&c->last_event_ns, now, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&c->proxy_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&c->proxy_seen, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->px_started, 1, __ATOMIC_RELEASE);
	*eHandle = (void *)((uintptr_t)s | TAG_PROXY);
}

/* CollApi/P2pApi (v5+): a call captured into a CUDA graph; its replays raise no events, so count it. */
NWP_HOT void count_graph_call(void *ctx, uint64_t type, const union d_body *u, int v4)
{
	if (v4 || !(type == NWP_EV_COLLAPI ? u->collApi.graphCaptured : u->p2pApi.graphCaptured))
		return;
	struct nwp_comm *c = nwp_ctx_comm(ctx);
	if (c)
		__atomic_fetch_add(&c->graph_ops, 1, __ATOMIC_RELAXED);
}

/*
 * What every startEvent checks first: a handle pointer (cleared) and a
 * descriptor, and the plugin still on. 1 when the event is to be read.
 */
static inline int start_usable(void **eHandle, const void *descr)
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
	return 1;
}

static int start_event(void *ctx, void **eHandle, const void *descr, int v4)
{
	if (!start_usable(eHandle, descr))
		return 0;
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
		start_kernelch(eHandle, parent, u->kernelCh.pTimer);
		return 0;
	case NWP_EV_PROXYOP:
		start_proxyop(eHandle, parent, &u->proxyOp);
		return 0;
	case NWP_EV_COLLAPI:
	case NWP_EV_P2PAPI:
		count_graph_call(ctx, type, u, v4);
		return 0;
	case NWP_EV_GROUP:
		*eHandle = GROUP_HANDLE;
		return 0;
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
	if (!eHandle || eHandle == GROUP_HANDLE || __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED))
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
			__atomic_fetch_add(&nwp_g.bad_events, 1, __ATOMIC_RELAXED);
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
		if (nwp_g.abi == 3) { /* v3: the channel ended when the proxy thread saw it, now */
			uint64_t now = nwp_realtime_ns();
			atomic_max_u64(&s->kend_gpu, now);
			__atomic_store_n(&slot_comm(s)->last_event_ns, now, __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->kch_stopped, 1, __ATOMIC_RELEASE);
		}
		return 0; /* v4+: its end came with recordEventState(KernelChStop) */
	default:
		nwp_disable("stopEvent called with a handle this plugin did not make");
		return 0;
	}
}

static int record_state(void *eHandle, int eState, const union state_args *args)
{
	if (!eHandle || eHandle == GROUP_HANDLE || __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED))
		return 0;
	unsigned tag;
	struct nwp_slot *s = handle_slot(eHandle, &tag);
	if (!s || tag > TAG_PROXY) {
		nwp_disable("recordEventState called with a handle this plugin did not make");
		return 0;
	}
	if (tag != TAG_KCH || eState != NWP_STATE_KERNELCH_STOP || nwp_g.abi < 4)
		return 0; /* before v4 no state is one we read (nor has this number) */
	if (!args) {
		__atomic_fetch_add(&nwp_g.bad_events, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (args->kernelCh.pTimer)
		atomic_max_u64(&s->kend_gpu, args->kernelCh.pTimer);
	__atomic_store_n(&slot_comm(s)->last_event_ns, nwp_realtime_ns(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->kch_stopped, 1, __ATOMIC_RELEASE);
	return 0;
}

/* --- profiler v1 to v3 (NCCL 2.23 to 2.26): the older layouts into the same slots --- */

/* v1's enum numbers under the names later versions give (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*). */
static const char *const v1_func[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
	                               "SendRecv", "Send", "Recv" };
static const char *const v1_dtype[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
	                                "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16",
	                                "ncclFloat8e4m3", "ncclFloat8e5m2" };
static const unsigned char v1_tsize[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
static const char *const v1_algo[] = { "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" };
static const char *const v1_proto[] = { "LL", "LL128", "SIMPLE" };
#define V1_NAME(table, i) ((size_t)(i) < sizeof(table) / sizeof((table)[0]) ? (table)[i] : NULL)

/* The first op of a v1 to v3 communicator names it (once): the publisher then makes its stats file. */
static __attribute__((noinline, cold)) void ident_learn(struct nwp_comm *c, uint64_t hash, int rank, const char *name)
{
	int st = NWP_IDENT_NONE;
	if (!__atomic_compare_exchange_n(&c->ident, &st, NWP_IDENT_WRITING, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	c->comm_hash = hash;
	c->rank = rank;
	nwp_copy_str(c->name, sizeof(c->name), name);
	__atomic_store_n(&c->ident, NWP_IDENT_KNOWN, __ATOMIC_RELEASE);
}

/*
 * v1, v2: an all_gather's or reduce_scatter's trafficBytes is count x type
 * size x nranks: the communicator's size, which init did not give (once).
 * tsize 0: from the type's name (v2).
 */
static __attribute__((noinline, cold)) void nranks_learn(struct nwp_comm *c, size_t traffic, size_t count,
                                                          unsigned tsize, const char *dtype)
{
	static const struct { const char *name; unsigned size; } sizes[] = {
		{ "ncclInt8", 1 }, { "ncclUint8", 1 }, { "ncclInt32", 4 }, { "ncclUint32", 4 }, { "ncclInt64", 8 },
		{ "ncclUint64", 8 }, { "ncclFloat16", 2 }, { "ncclFloat32", 4 }, { "ncclFloat64", 8 },
		{ "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 }, { "ncclFloat8e5m2", 1 },
	};
	for (size_t i = 0; !tsize && dtype && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (!strcmp(dtype, sizes[i].name))
			tsize = sizes[i].size;
	if (!count || !tsize || traffic % (count * tsize))
		return;
	size_t n = traffic / (count * tsize);
	if (n >= 1 && n <= INT32_MAX)
		__atomic_store_n(&c->nranks_seen, (int)n, __ATOMIC_RELAXED);
}

/* Is NCCL's function name that of an all_gather or a reduce_scatter? (No string calls: the hot path.) */
static inline int split_name(const char *f)
{
	return f && ((f[0] == 'A' && f[1] == 'l' && f[2] == 'l' && f[3] == 'G') ||
	             (f[0] == 'R' && f[1] == 'e' && f[2] == 'd' && f[3] == 'u' && f[4] == 'c' && f[5] == 'e' &&
	              f[6] == 'S'));
}

/*
 * The op of a v1 to v3 Coll or P2p body, the communicator hash and name it
 * carries; the size learned on the way (v1, v2). Channels are left unknown:
 * these versions give the most a collective may use, not what it uses.
 */
NWP_HOT void op_in_old(struct nwp_comm *c, int abi, int kind, const union d_body_old *u, struct nwp_op_in *in,
                       uint64_t *hash, const char **name)
{
	int learn = !__atomic_load_n(&c->nranks_seen, __ATOMIC_RELAXED);
	if (abi == 1 && kind == NWP_KIND_COLL) {
		const struct d_coll_v1 *k = &u->coll1;
		*in = (struct nwp_op_in){ k->seqNumber, V1_NAME(v1_func, k->func), V1_NAME(v1_dtype, k->datatype),
		                      V1_NAME(v1_algo, k->algo), V1_NAME(v1_proto, k->proto), k->count, k->root, 0,
		                      k->nWarps };
		if (learn && (k->func == 2 || k->func == 3) && k->datatype < sizeof(v1_tsize))
			nranks_learn(c, k->trafficBytes, k->count, v1_tsize[k->datatype], NULL);
		*hash = k->commHash;
		*name = k->name;
	} else if (abi == 1) {
		const struct d_p2p_v1 *k = &u->p2p1;
		*in = (struct nwp_op_in){ 0, V1_NAME(v1_func, k->func), V1_NAME(v1_dtype, k->datatype), NULL, NULL, k->count,
		                      k->peer, 0, 0 };
		*hash = k->commHash;
		*name = k->name;
	} else if (abi == 2 && kind == NWP_KIND_COLL) {
		const struct d_coll_v2 *k = &u->coll2;
		*in = (struct nwp_op_in){ k->seqNumber, k->func, k->datatype, k->algo, k->proto, k->count, k->root, 0, k->nWarps };
		if (learn && split_name(k->func))
			nranks_learn(c, k->trafficBytes, k->count, 0, k->datatype);
		*hash = k->commHash;
		*name = k->name;
	} else if (kind == NWP_KIND_COLL) {
		const struct d_coll_v3 *k = &u->coll3;
		*in = (struct nwp_op_in){ k->seqNumber, k->func, k->datatype, k->algo, k->proto, k->count, k->root, 0, k->nWarps };
		*hash = k->commHash;
		*name = k->name;
	} else {
		const struct d_p2p_v2 *k = &u->p2p2;
		*in = (struct nwp_op_in){ 0, k->func, k->datatype, NULL, NULL, k->count, k->peer, 0, 0 };
		*hash = k->commHash;
		*name = k->name;
	}
}

/* startEvent of v1 to v3 (abi): the same work as start_event from the older layouts; KernelCh and NetPlugin from v3. */
static int start_event_old(void *ctx, void **eHandle, const void *descr, int abi)
{
	if (!start_usable(eHandle, descr))
		return 0;
	const struct descr_old *d = descr;
	int kind = d->type == NWP_EV_COLL ? NWP_KIND_COLL : NWP_KIND_P2P;
	switch (d->type) {
	case NWP_EV_COLL:
	case NWP_EV_P2P:
		break;
	case NWP_EV_PROXYOP:
		start_proxyop(eHandle, d->parentObj, &d->u.proxyOp);
		return 0;
	case NWP_EV_KERNELCH:
	case NWP_EV_NETPLUGIN:
		if (abi < 3)
			goto unknown;
		if (d->type == NWP_EV_KERNELCH)
			start_kernelch(eHandle, d->parentObj, 0);
		return 0;
	case NWP_EV_GROUP:
		*eHandle = GROUP_HANDLE;
		return 0;
	case NWP_EV_PROXYSTEP:
	case NWP_EV_PROXYCTRL:
		return 0; /* known, not asked for: nothing to do */
	default:
	unknown:
		nwp_disable("unknown event type 0x%x for profiler v%d", d->type, abi);
		return 0;
	}
	struct nwp_comm *c = op_comm(ctx);
	if (!c)
		return 0;
	struct nwp_op_in in;
	uint64_t hash;
	const char *name;
	op_in_old(c, abi, kind, &d->u, &in, &hash, &name);
	if (__builtin_expect(__atomic_load_n(&c->ident, __ATOMIC_RELAXED) != NWP_IDENT_KNOWN, 0))
		ident_learn(c, hash, d->rank, name);
	*eHandle = op_start(c, kind, &in);
	return 0;
}

/* --- the exported tables --- */

static int v1_init(void **context, int *mask) { return nwp_init(1, 0, context, 0, mask, NULL, 0, 0, -1, NULL); }
static int v2_init(void **context, int *mask) { return nwp_init(2, 0, context, 0, mask, NULL, 0, 0, -1, NULL); }
static int v3_init(void **context, int *mask) { return nwp_init(3, 0, context, 0, mask, NULL, 0, 0, -1, NULL); }

static int v4_init(void **context, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return nwp_init(4, 1, context, hash, mask, name, nnodes, nranks, rank, logfn);
}

static int v5_init(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return nwp_init(5, 1, context, id, mask, name, nnodes, nranks, rank, logfn);
}

static int v6_init(void **context, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                   int rank, nwp_logfn_t logfn)
{
	return nwp_init(6, 1, context, id, mask, name, nnodes, nranks, rank, logfn);
}

static int v1_start(void *ctx, void **h, void *d) { return start_event_old(ctx, h, d, 1); }
static int v2_start(void *ctx, void **h, void *d) { return start_event_old(ctx, h, d, 2); }
static int v3_start(void *ctx, void **h, void *d) { return start_event_old(ctx, h, d, 3); }
static int v4_start(void *ctx, void **h, void *d) { return start_event(ctx, h, d, 1); }
static int v5_start(void *ctx, void **h, void *d) { return start_event(ctx, h, d, 0); }
static int any_record(void *h, int st, void *a) { return record_state(h, st, a); }

NWP_EXPORT struct nwp_table_v1 ncclProfiler_v1 = {
	"ncclwatch", v1_init, v1_start, stop_event, any_record, nwp_finalize
};
NWP_EXPORT struct nwp_table_v1 ncclProfiler_v2 = {
	"ncclwatch", v2_init, v2_start, stop_event, any_record, nwp_finalize
};
NWP_EXPORT struct nwp_table_v1 ncclProfiler_v3 = {
	"ncclwatch", v3_init, v3_start, stop_event, any_record, nwp_finalize
};
NWP_EXPORT struct nwp_table_v4 ncclProfiler_v4 = {
	"ncclwatch", v4_init, v4_start, stop_event, any_record, nwp_finalize
};
NWP_EXPORT struct nwp_table_v5 ncclProfiler_v5 = {
	"ncclwatch", v5_init, v5_start, stop_event, any_record, nwp_finalize
};
NWP_EXPORT struct nwp_table_v5 ncclProfiler_v6 = {
	"ncclwatch", v6_init, v5_start, stop_event, any_record, nwp_finalize
};
