/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profiler_abi: NCCL's side of the profiler plugin interface, versions 1
 * to 6, for the test programs that stand in for NCCL (the plugin harness,
 * the fake NCCL). The layouts NCCL passes are declared here from NCCL's
 * headers (src/include/plugin/profiler/profiler_v1.h to _v6.h, tags
 * v2.23.4-1 to v2.30.x), independently of the plugin's own declarations
 * (src/plugin/nccl_abi.h), so that a layout mistake on either side shows
 * as a mismatch. Helpers open a plugin the way a given NCCL version does
 * and raise events in the layout of the interface it took.
 *
 * Layout only plus small static functions; no state.
 */
#ifndef NW_PROFILER_ABI_H
#define NW_PROFILER_ABI_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* Event types (bit flags, the same numbers in every version that has them). */
enum {
	NP_GROUP = 1 << 0, NP_COLL = 1 << 1, NP_P2P = 1 << 2, NP_PROXYOP = 1 << 3, NP_PROXYSTEP = 1 << 4,
	NP_PROXYCTRL = 1 << 5, NP_KERNELCH = 1 << 6 /* v3+ */, NP_NETPLUGIN = 1 << 7 /* v3+ */,
	NP_GROUPAPI = 1 << 8, NP_COLLAPI = 1 << 9, NP_P2PAPI = 1 << 10, NP_KERNELLAUNCH = 1 << 11 /* v5+ */,
	NP_CECOLL = 1 << 12, NP_CESYNC = 1 << 13, NP_CEBATCH = 1 << 14 /* v6 */
};
#define NP_KERNELCH_STOP 22 /* ncclProfilerKernelChStop (v4+) */

typedef void (*np_logfn_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* v1 (NCCL 2.23): enum numbers for function, type, algorithm, protocol */
struct np_coll_v1 {
	const char *name; uint64_t commHash; uint64_t seqNumber; uint8_t func; const void *sendBuff; void *recvBuff;
	size_t count; int root; uint8_t datatype; uint32_t op; size_t trafficBytes; uint8_t nMaxChannels;
	uint8_t nWarps; uint8_t algo; uint8_t proto; int isCollnet; int isNvls;
};
struct np_p2p_v1 { const char *name; uint64_t commHash; uint8_t func; void *buff; uint8_t datatype; size_t count; int peer; };
/* v2 (2.24, 2.25): names */
struct np_coll_v2 {
	const char *name; uint64_t commHash; uint64_t seqNumber; const char *func; const void *sendBuff;
	void *recvBuff; size_t count; int root; const char *datatype; size_t trafficBytes; uint8_t nMaxChannels;
	uint8_t nWarps; const char *algo; const char *proto;
};
struct np_p2p_v2 { const char *name; uint64_t commHash; const char *func; void *buff; const char *datatype; size_t count; int peer; };
/* v3 (2.26): v2 without trafficBytes; p2p as v2 */
struct np_coll_v3 {
	const char *name; uint64_t commHash; uint64_t seqNumber; const char *func; const void *sendBuff;
	void *recvBuff; size_t count; int root; const char *datatype; uint8_t nMaxChannels; uint8_t nWarps;
	const char *algo; const char *proto;
};
/* v4 (2.27): no communicator in the op; v5, v6 add parentGroup */
struct np_coll_v4 {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
	const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto;
};
struct np_coll_v5 {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
	const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto; void *parentGroup;
};
struct np_p2p_v4 { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; };
struct np_p2p_v5 { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; void *parentGroup; };
struct np_kernelch { uint8_t channelId; uint64_t pTimer; /* v4+; v3 has channelId alone */ };
struct np_proxyop { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; };
struct np_collapi { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; };
struct np_cecoll {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
	const char *datatype; const char *syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches;
	uint32_t ceSeqNum; void *stream;
};

union np_body {
	struct np_coll_v1 coll1; struct np_p2p_v1 p2p1; struct np_coll_v2 coll2; struct np_p2p_v2 p2p2;
	struct np_coll_v3 coll3; struct np_coll_v4 coll4; struct np_coll_v5 coll5; struct np_p2p_v4 p2p4;
	struct np_p2p_v5 p2p5; struct np_kernelch kernelCh; struct np_proxyop proxyOp; struct np_collapi collApi;
	struct np_cecoll ceColl; uint64_t room[16];
};
struct np_descr8 { uint8_t type; void *parentObj; int rank; union np_body u; };   /* v1 to v4 */
struct np_descr64 { uint64_t type; void *parentObj; int rank; union np_body u; }; /* v5, v6 */
union np_descr { struct np_descr8 d8; struct np_descr64 d64; };
_Static_assert(offsetof(struct np_descr8, u) == offsetof(struct np_descr64, u), "the union sits at one place");

union np_state_args {
	struct { size_t transSize; int steps; } proxyOp;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { uint64_t pTimer; } kernelCh;
};

struct np_table_v1 { /* also v2, v3 */
	const char *name;
	int (*init)(void **ctx, int *mask);
	int (*startEvent)(void *ctx, void **h, void *d);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
};
struct np_table_v4 {
	const char *name;
	int (*init)(void **ctx, int *mask, const char *commName, uint64_t commHash, int nNodes, int nranks, int rank,
	            np_logfn_t logfn);
	int (*startEvent)(void *ctx, void **h, void *d);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
};
struct np_table_v5 { /* also v6 */
	const char *name;
	int (*init)(void **ctx, uint64_t commId, int *mask, const char *commName, int nNodes, int nranks, int rank,
	            np_logfn_t logfn);
	int (*startEvent)(void *ctx, void **h, void *d);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
};

/* A plugin as one NCCL took it: the interface version and its table. */
struct np_plugin {
	int abi;                       /* 1 to 6 */
	void *lib;
	const struct np_table_v1 *t1;  /* abi 1 to 3 */
	const struct np_table_v4 *t4;  /* abi 4 */
	const struct np_table_v5 *t5;  /* abi 5, 6 */
	const char *name;              /* the table's name */
};

/*
 * The newest profiler interface NCCL with version code (2.28.9: 22809)
 * knows: 2.23 v1, 2.24 and 2.25 v2, 2.26 v3, 2.27 v4, 2.28 v5, 2.29 on v6;
 * 0 before 2.23, which has no profiler plugins.
 */
static inline int np_abi_of_nccl(int code)
{
	int major = code / 10000, minor = code / 100 % 100;
	if (major != 2 || minor < 23)
		return major > 2 ? 6 : 0;
	return minor == 23 ? 1 : minor <= 25 ? 2 : minor == 26 ? 3 : minor == 27 ? 4 : minor == 28 ? 5 : 6;
}

/*
 * Take the tables of lib the way an NCCL whose newest interface is newest
 * does: ncclProfiler_v<newest> first, then each older one. 0, or -1 when
 * the library has none of them.
 */
static inline int np_take(struct np_plugin *p, void *lib, int newest)
{
	memset(p, 0, sizeof(*p));
	p->lib = lib;
	for (int v = newest; v >= 1; v--) {
		char sym[32];
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
		void *t = dlsym(lib, sym);
		if (!t)
			continue;
		p->abi = v;
		if (v <= 3)
			p->t1 = t, p->name = p->t1->name;
		else if (v == 4)
			p->t4 = t, p->name = p->t4->name;
		else
			p->t5 = t, p->name = p->t5->name;
		return 0;
	}
	return -1;
}

/*
 * Open the profiler plugin the way NCCL with version code does
 * (NCCL_PROFILER_PLUGIN's value in env, may be NULL): the value as given;
 * from 2.26 on, then libnccl-profiler-<value>.so (2.23 to 2.25 try the
 * value as given twice); no value: libnccl-profiler.so. Then its tables
 * (np_take). 0, or -1 with why (no plugin: the library or the tables
 * missing; NCCL then runs without one).
 */
static inline int np_open(struct np_plugin *p, int code, const char *env, char *why, size_t whylen)
{
	int newest = np_abi_of_nccl(code);
	char name[512];
	void *lib = NULL;
	memset(p, 0, sizeof(*p));
	if (!newest) {
		snprintf(why, whylen, "NCCL %d has no profiler plugins", code);
		return -1;
	}
	if (env && *env) {
		lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (!lib && code >= 22600) {
			snprintf(name, sizeof(name), "libnccl-profiler-%s.so", env);
			lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
		}
	} else {
		lib = dlopen("libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
	}
	if (!lib) {
		snprintf(why, whylen, "cannot load a profiler plugin '%s'", env && *env ? env : "libnccl-profiler.so");
		return -1;
	}
	if (np_take(p, lib, newest) != 0) {
		snprintf(why, whylen, "'%s' has no ncclProfiler_v%d to _v1", env && *env ? env : "libnccl-profiler.so", newest);
		dlclose(lib);
		return -1;
	}
	return 0;
}

/*
 * init as the plugin's interface has it; v1 to v3 get the context and the
 * mask alone (no communicator, no logger).
 */
static inline int np_init(const struct np_plugin *p, void **ctx, int *mask, uint64_t hash, const char *name,
                          int nnodes, int nranks, int rank, np_logfn_t logfn)
{
	if (p->abi <= 3)
		return p->t1->init(ctx, mask);
	if (p->abi == 4)
		return p->t4->init(ctx, mask, name, hash, nnodes, nranks, rank, logfn);
	return p->t5->init(ctx, hash, mask, name, nnodes, nranks, rank, logfn);
}

static inline int np_start(const struct np_plugin *p, void *ctx, void **h, void *descr)
{
	return p->abi <= 3 ? p->t1->startEvent(ctx, h, descr) : p->abi == 4 ? p->t4->startEvent(ctx, h, descr)
	       : p->t5->startEvent(ctx, h, descr);
}

static inline int np_stop(const struct np_plugin *p, void *h)
{
	return p->abi <= 3 ? p->t1->stopEvent(h) : p->abi == 4 ? p->t4->stopEvent(h) : p->t5->stopEvent(h);
}

static inline int np_record(const struct np_plugin *p, void *h, int state, void *args)
{
	return p->abi <= 3 ? p->t1->recordEventState(h, state, args) : p->abi == 4 ? p->t4->recordEventState(h, state, args)
	       : p->t5->recordEventState(h, state, args);
}

static inline int np_fini(const struct np_plugin *p, void *ctx)
{
	return p->abi <= 3 ? p->t1->finalize(ctx) : p->abi == 4 ? p->t4->finalize(ctx) : p->t5->finalize(ctx);
}

/* d zeroed, with the type (a uint8_t up to v4, a uint64_t from v5), parent and rank; its union. */
static inline union np_body *np_head(const struct np_plugin *p, union np_descr *d, uint64_t type, void *parent, int rank)
{
	memset(d, 0, sizeof(*d));
	if (p->abi >= 5) {
		d->d64.type = type;
		d->d64.parentObj = parent;
		d->d64.rank = rank;
		return &d->d64.u;
	}
	d->d8.type = (uint8_t)type;
	d->d8.parentObj = parent;
	d->d8.rank = rank;
	return &d->d8.u;
}

/* NCCL's enum number of a function or data type name, as v1 passes them (ncclFunc_t, ncclDataType_t); 255 unknown. */
static inline uint8_t np_num(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return (uint8_t)i;
	return 255;
}
static inline uint8_t np_func_num(const char *f)
{
	static const char *const names[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
		                             "SendRecv", "Send", "Recv" };
	return np_num(names, sizeof(names) / sizeof(names[0]), f);
}
static inline uint8_t np_dtype_num(const char *t)
{
	static const char *const names[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
		                             "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64",
		                             "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2" };
	return np_num(names, sizeof(names) / sizeof(names[0]), t);
}

/* One collective or p2p call as NCCL describes it to the profiler. */
struct np_op {
	int coll;                   /* 1 collective, 0 send or recv */
	int ce;                     /* v6: run on copy engines (CeColl) */
	const char *func, *dtype;   /* NCCL's names ("AllGather", "ncclFloat32") */
	const char *algo, *proto;   /* names ("RING", "LL"); v1 takes their numbers below */
	uint8_t algo_num, proto_num;
	uint64_t seq;
	size_t count;               /* elements, per rank */
	unsigned tsize;             /* bytes per element (for v1 and v2's trafficBytes) */
	int root;                   /* root, or the peer of a p2p */
	uint8_t nch, nwarps;
	uint64_t comm_hash;         /* v1 to v3 name the communicator in each op */
	const char *comm_name;
	int nranks;                 /* for trafficBytes */
	void *buf;
};

/* trafficBytes as NCCL 2.23 to 2.25 fill it: count x type size x 2 (all_reduce), x nranks (all_gather, reduce_scatter), x 1. */
static inline size_t np_traffic(const struct np_op *o)
{
	size_t b = o->count * o->tsize;
	if (!strcmp(o->func, "AllReduce"))
		return b * 2;
	if (!strcmp(o->func, "AllGather") || !strcmp(o->func, "ReduceScatter"))
		return b * (size_t)o->nranks;
	return b;
}

/* The Coll, P2p or CeColl descriptor of o in p's layout, child of group; d returned. */
static inline void *np_op_descr(const struct np_plugin *p, union np_descr *d, const struct np_op *o, void *group,
                                int rank)
{
	union np_body *u = np_head(p, d, o->ce ? NP_CECOLL : o->coll ? NP_COLL : NP_P2P, p->abi >= 5 ? NULL : group, rank);
	if (o->ce)
		u->ceColl = (struct np_cecoll){ o->seq, o->func, o->buf, o->buf, o->count, o->root, o->dtype, "ucMemcpy",
		                                false, 1, 1, (uint32_t)o->seq, NULL };
	else if (o->coll && p->abi == 1)
		u->coll1 = (struct np_coll_v1){ o->comm_name, o->comm_hash, o->seq, np_func_num(o->func), o->buf, o->buf,
		                                o->count, o->root, np_dtype_num(o->dtype), 0, np_traffic(o), o->nch,
		                                o->nwarps, o->algo_num, o->proto_num, 0, 0 };
	else if (o->coll && p->abi == 2)
		u->coll2 = (struct np_coll_v2){ o->comm_name, o->comm_hash, o->seq, o->func, o->buf, o->buf, o->count,
		                                o->root, o->dtype, np_traffic(o), o->nch, o->nwarps, o->algo, o->proto };
	else if (o->coll && p->abi == 3)
		u->coll3 = (struct np_coll_v3){ o->comm_name, o->comm_hash, o->seq, o->func, o->buf, o->buf, o->count,
		                                o->root, o->dtype, o->nch, o->nwarps, o->algo, o->proto };
	else if (o->coll && p->abi == 4)
		u->coll4 = (struct np_coll_v4){ o->seq, o->func, o->buf, o->buf, o->count, o->root, o->dtype, o->nch,
		                                o->nwarps, o->algo, o->proto };
	else if (o->coll)
		u->coll5 = (struct np_coll_v5){ o->seq, o->func, o->buf, o->buf, o->count, o->root, o->dtype, o->nch,
		                                o->nwarps, o->algo, o->proto, group };
	else if (p->abi == 1)
		u->p2p1 = (struct np_p2p_v1){ o->comm_name, o->comm_hash, np_func_num(o->func), o->buf,
		                              np_dtype_num(o->dtype), o->count, o->root };
	else if (p->abi <= 3)
		u->p2p2 = (struct np_p2p_v2){ o->comm_name, o->comm_hash, o->func, o->buf, o->dtype, o->count, o->root };
	else if (p->abi == 4)
		u->p2p4 = (struct np_p2p_v4){ o->func, o->buf, o->dtype, o->count, o->root, 0xCC /* v4: never filled */ };
	else
		u->p2p5 = (struct np_p2p_v5){ o->func, o->buf, o->dtype, o->count, o->root, o->nch, group };
	return d;
}

/* The CollApi descriptor (v5+) of o, graph-captured or not. */
static inline void *np_collapi_descr(const struct np_plugin *p, union np_descr *d, const struct np_op *o, bool captured)
{
	union np_body *u = np_head(p, d, NP_COLLAPI, NULL, 0);
	u->collApi = (struct np_collapi){ o->func, o->count, o->dtype, o->root, NULL, captured };
	return d;
}

/* The KernelCh descriptor of channel ch of op handle parent (v3+; v3 carries no timestamp). */
static inline void *np_kernelch_descr(const struct np_plugin *p, union np_descr *d, void *parent, int ch, uint64_t start)
{
	union np_body *u = np_head(p, d, NP_KERNELCH, parent, 0);
	u->kernelCh.channelId = (uint8_t)ch;
	if (p->abi >= 4)
		u->kernelCh.pTimer = start;
	return d;
}

/* The ProxyOp descriptor of a network transfer of op handle parent, raised by process pid. */
static inline void *np_proxyop_descr(const struct np_plugin *p, union np_descr *d, void *parent, int rank, pid_t pid,
                                     int ch, int peer, int send)
{
	union np_body *u = np_head(p, d, NP_PROXYOP, parent, rank);
	u->proxyOp = (struct np_proxyop){ pid, (uint8_t)ch, peer, 4, 1 << 17, send };
	return d;
}

/* A kernel channel's end as NCCL sends it: v4+ its end timestamp with KernelChStop, then stop; v3 stop alone. */
static inline void np_kernelch_end(const struct np_plugin *p, void *kh, uint64_t end)
{
	if (p->abi >= 4) {
		union np_state_args a;
		memset(&a, 0, sizeof(a));
		a.kernelCh.pTimer = end;
		np_record(p, kh, NP_KERNELCH_STOP, &a);
	}
	np_stop(p, kh);
}

#endif
