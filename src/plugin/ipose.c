/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose: the interposer's exported functions, under NCCL's own names
 * (the only symbols the library exports: src/plugin/interpose.map), and
 * the hot path of an op and of a group.
 *
 * Each wrapper finds the real NCCL (ipose_find.c), forwards the call with
 * its arguments untouched and returns NCCL's result. Around it, an op of a
 * recorded communicator takes a slot of the recording's pool (as the
 * profiler's Coll event does: slot.h) before NCCL is called, so a call
 * that blocks is seen enqueued, and marks it enqueued after. A timed op
 * gets one event pair on its stream (ipose_cuda.c): at most one op per
 * communicator per NCCLWATCH_TIMED_PER_S interval. Inside
 * ncclGroupStart/End, ops are noted per thread and the whole group is
 * timed at its outermost ncclGroupEnd, one pair per communicator and
 * stream; the publisher shares the group's time among its ops by bytes.
 * Ops on a stream being captured into a CUDA graph are counted, never
 * timed. A thread inside NCCL calling back into these names (NCCL's own
 * ncclCommInitAll calls ncclGroupStart) passes through untouched.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/ipose.h"
#include "plugin/ipose_api.h"
#include "plugin/slot.h"

#define IPO_API __attribute__((visibility("default")))
#define IPO_TLS __thread __attribute__((tls_model("initial-exec")))
#define GROUP_MAX 65536   /* ops of one group noted at most (more are marked enqueued at their call, untimed) */
#define GROUP_PAIRS 64    /* (communicator, stream) pairs of one group timed at most */

/* One op of the open group, and one (communicator, stream) pair of it. */
struct gop {
	struct ipo_entry *e;
	uint32_t gen;
	int captured;
	uint64_t idx;              /* its slot */
	ipo_stream_t st;
};
struct gpair {
	struct ipo_entry *e;
	uint32_t gen;
	ipo_stream_t st;
	struct ipo_timer *t;       /* NULL: untimed */
	uint64_t first, last;
};
struct group {
	size_t n, cap;
	struct gop op[];
};

/*
 * A communicator made inside a group, registered when the group ends: NCCL
 * initialises it then (and loads its profiler plugin then, which decides
 * who records), and sets a split's child handle only then.
 */
struct gmade {
	ipo_comm_t k;              /* the handle; NULL: read it from *child */
	ipo_comm_t *child;
	uint64_t hash;
	int rank, nranks;
	const struct ipo_nccl *nc;
	void *ctx;                 /* the CUDA context current at the call: its GPU */
};
#define GROUP_MADE 64

static IPO_TLS int t_inside;            /* calls of this thread into the real NCCL in progress */
static IPO_TLS int t_nmade;             /* communicators made in the open group */
static IPO_TLS struct gmade t_made[GROUP_MADE];
static IPO_TLS int t_depth;             /* the job's ncclGroupStart depth on this thread */
static IPO_TLS struct group *t_group;   /* ops of the open group (freed with the thread) */
static pthread_key_t group_key;
static pthread_once_t group_once = PTHREAD_ONCE_INIT;

static const char *const fn_func[IPO_NFN] = {
	[IPO_ALL_REDUCE] = "AllReduce", [IPO_BROADCAST] = "Broadcast", [IPO_BCAST] = "Broadcast",
	[IPO_REDUCE] = "Reduce", [IPO_ALL_GATHER] = "AllGather", [IPO_REDUCE_SCATTER] = "ReduceScatter",
	[IPO_ALLTOALL] = "AlltoAll", [IPO_GATHER] = "Gather", [IPO_SCATTER] = "Scatter",
	[IPO_SEND] = "Send", [IPO_RECV] = "Recv",
};
static const unsigned fn_op[IPO_NFN] = {
	[IPO_ALL_REDUCE] = NWS_OP_ALL_REDUCE, [IPO_BROADCAST] = NWS_OP_BROADCAST, [IPO_BCAST] = NWS_OP_BROADCAST,
	[IPO_REDUCE] = NWS_OP_REDUCE, [IPO_ALL_GATHER] = NWS_OP_ALL_GATHER,
	[IPO_REDUCE_SCATTER] = NWS_OP_REDUCE_SCATTER, [IPO_ALLTOALL] = NWS_OP_ALLTOALL, [IPO_GATHER] = NWS_OP_GATHER,
	[IPO_SCATTER] = NWS_OP_SCATTER, [IPO_SEND] = NWS_OP_SEND, [IPO_RECV] = NWS_OP_RECV,
};
/* ncclDataType_t by number (nccl.h), as the recording names types. */
static const char *const dtype_name[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
	                                  "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16",
	                                  "ncclFloat8e4m3", "ncclFloat8e5m2" };
static const char *const api_name[IPO_NFN] = {
	"ncclGetVersion", "ncclCommCount", "ncclCommUserRank", "ncclAllReduce", "ncclBroadcast", "ncclBcast",
	"ncclReduce", "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
	"ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclGroupSimulateEnd", "ncclCommInitRank",
	"ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommInitRankScalable", "ncclCommSplit", "ncclCommAbort",
	"ncclCommDestroy", "ncclCommFinalize", "ncclCommGetAsyncError",
};

/* --- when there is no NCCL to call --- */

/* The job called fn and there is nothing to forward it to: said once, and an error NCCL would give. */
static ipo_res_t unforwardable(const struct ipo_nccl *nc, enum ipo_fn fn)
{
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
		if (nc)
			nwp_log(NWP_LOG_WARN, "ncclwatch: the NCCL loaded ('%s', version code %d) has no %s; the interposer "
			        "returns ncclInvalidUsage for it", nc->path, nc->version, api_name[fn]);
		else
			nwp_log(NWP_LOG_WARN, "ncclwatch: %s was called and no NCCL library is loaded in this process to "
			        "forward it to; take libncclwatch-interpose.so out of LD_PRELOAD", api_name[fn]);
	}
	return nc ? IPO_INVALID_USAGE : IPO_INTERNAL_ERROR;
}

/* The real function fn of nc into var (a function pointer), or return what unforwardable says. */
#define REAL(nc, id, var)                                    \
	do {                                                     \
		if ((nc))                                            \
			memcpy(&(var), &(nc)->fn[(id)], sizeof(var));    \
		if (!(nc) || !(var))                                 \
			return unforwardable((nc), (id));                \
	} while (0)

/* Call into NCCL: a call NCCL makes back into these names meanwhile passes through. */
#define FORWARD(r, call)  \
	do {                  \
		t_inside++;       \
		(r) = (call);     \
		t_inside--;       \
	} while (0)

static int recording(void)
{
	return !__atomic_load_n(&ipo_g.shutdown, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&ipo_g.decided, __ATOMIC_RELAXED) != 2 &&
	       !__atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED);
}

/* --- one op --- */

/* An op as it goes through its wrapper. */
struct op {
	struct ipo_entry *e;       /* NULL: not recorded */
	uint32_t gen;
	int kind, captured, grouped;
	unsigned nws_op;
	struct nwp_slot *s;        /* ungrouped: the slot taken before NCCL's call */
	uint64_t idx;
	struct ipo_timer *t;
	ipo_stream_t st;
	struct nwp_op_in in;
};

/* Time one more op (or group) of e now? At most one per NCCLWATCH_TIMED_PER_S interval. */
static int want_time(struct ipo_entry *e)
{
	if (!__atomic_load_n(&ipo_g.timing, __ATOMIC_RELAXED) || __atomic_load_n(&e->errored, __ATOMIC_RELAXED))
		return 0;
	if (!ipo_g.every_ns)
		return 1;
	struct timespec ts; /* the coarse clock: a few ns, not a TSC read, and a rate needs no better */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * NWP_SEC + (uint64_t)ts.tv_nsec + 1;
	uint64_t last = __atomic_load_n(&e->last_timed_ns, __ATOMIC_RELAXED);
	return (!last || now - last >= ipo_g.every_ns) &&
	       __atomic_compare_exchange_n(&e->last_timed_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Note a call captured into a graph (counted, never timed; said once). */
static void captured(struct ipo_entry *e)
{
	__atomic_fetch_add(&e->c->graph_ops, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ipo_g.captured, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&ipo_g.graph_said, 1, __ATOMIC_RELAXED))
		nwp_log(NWP_LOG_INFO, "ncclwatch: interposer: NCCL calls captured into CUDA graphs are counted once each "
		        "(graph_ops) and not timed; their replays are not seen");
}

/* The slot of an op taken and filled with its description; published by the caller. */
static struct nwp_slot *op_slot(struct op *o, int timed)
{
	struct nwp_slot *s = nwp_slot_take_at(o->e->c, &o->idx);
	if (s)
		nwp_slot_fill(o->e->c, s, o->kind, &o->in, timed);
	return s;
}

/*
 * Before NCCL's call: the NCCL to forward to (NULL: none) and, for an op
 * of a recorded communicator, what to record: outside a group, its slot
 * (published, so a call that blocks is seen) and its start event.
 */
static const struct ipo_nccl *op_begin(struct op *o, const void *ra, ipo_comm_t k, enum ipo_fn fn, size_t count,
                                       int dtype, int peer, ipo_stream_t st)
{
	o->e = NULL;
	struct ipo_entry *e = ipo_lookup(k);
	const struct ipo_nccl *nc = e && e->nc ? e->nc : ipo_nccl_caller(ra);
	if (t_inside || !nc || !recording() || !(e = ipo_live(nc, k)))
		return nc;
	o->kind = fn == IPO_SEND || fn == IPO_RECV ? NWP_KIND_P2P : NWP_KIND_COLL;
	o->nws_op = fn_op[fn];
	o->in = (struct nwp_op_in){ 0, fn_func[fn], dtype >= 0 && dtype < 12 ? dtype_name[dtype] : NULL, NULL, NULL,
	                            count, peer, 0, 0 };
	if (o->kind == NWP_KIND_COLL)
		o->in.seq = __atomic_fetch_add(&e->seq[o->nws_op], 1, __ATOMIC_RELAXED);
	o->st = st;
	o->t = NULL;
	o->s = NULL;
	int cap = __atomic_load_n(&ipo_g.timing, __ATOMIC_RELAXED) ? ipo_capturing(st) : 0;
	o->captured = cap == 1;
	if (o->captured)
		captured(e);
	o->grouped = t_depth > 0;
	o->e = e;
	if (o->grouped || !ipo_enter(e, 0))
		return nc; /* grouped: noted after the call, timed at the group's end */
	o->gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
	if (cap == 0 && want_time(e))
		o->t = ipo_timer_start(st);
	o->s = op_slot(o, o->t != NULL);
	if (o->s)
		__atomic_store_n(&o->s->state, NWP_ACTIVE, __ATOMIC_RELEASE);
	else if (o->t)
		ipo_timer_put(o->t), o->t = NULL;
	ipo_leave(e);
	return nc;
}

static void group_key_make(void)
{
	pthread_key_create(&group_key, free);
}

/* Note a grouped op's slot (taken now) in the thread's group; -1 when the group is too large to note it. */
static int group_add(struct op *o)
{
	struct group *g = t_group;
	if (!g || g->n == g->cap) {
		size_t cap = g ? g->cap * 2 : 64;
		struct group *ng = cap <= GROUP_MAX ? realloc(g, sizeof(*g) + cap * sizeof(g->op[0])) : NULL;
		if (!ng)
			return -1;
		if (!g) {
			ng->n = 0;
			pthread_once(&group_once, group_key_make);
			pthread_setspecific(group_key, ng);
		} else if (ng != g) {
			pthread_setspecific(group_key, ng);
		}
		ng->cap = cap;
		t_group = g = ng;
	}
	g->op[g->n++] = (struct gop){ o->e, o->gen, o->captured, o->idx, o->st };
	return 0;
}

/* After NCCL's call, which returned rc: the op marked enqueued (or cancelled), its end event recorded. */
static void op_end(struct op *o, ipo_res_t rc)
{
	struct ipo_entry *e = o->e;
	int ok = rc == IPO_SUCCESS || rc == IPO_IN_PROGRESS;
	if (!e)
		return;
	if (!ok && o->kind == NWP_KIND_COLL)
		__atomic_fetch_sub(&e->seq[o->nws_op], 1, __ATOMIC_RELAXED); /* not issued: its number is the next op's */
	if (!ipo_enter(e, o->grouped ? 0 : o->gen)) {
		if (o->t) /* gone while NCCL had the call (aborted): its slot is the finalize's, its pair never touched */
			ipo_timer_abandon(o->t);
		return;
	}
	if (o->grouped && ok) {
		o->gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
		struct nwp_slot *s = op_slot(o, 0);
		if (s && group_add(o) != 0)
			s->enq_end_ns = s->enq_ns, __atomic_store_n(&s->state, NWP_STOPPED, __ATOMIC_RELEASE);
		else if (s)
			__atomic_store_n(&s->state, NWP_ACTIVE, __ATOMIC_RELEASE);
	} else if (!o->grouped && o->s) {
		int timed = 0;
		if (o->t && rc == IPO_SUCCESS)
			timed = ipo_timer_stop(o->t, o->st) == 0; /* a failure gives the pair back */
		else if (o->t)
			ipo_timer_put(o->t);
		if (!timed)
			__atomic_store_n(&o->s->expect_kch, 0, __ATOMIC_RELAXED);
		o->s->enq_end_ns = nwp_realtime_ns();
		__atomic_store_n(&o->s->state, ok ? NWP_STOPPED : NWP_DONE, __ATOMIC_RELEASE);
		if (timed)
			ipo_timer_queue(o->t, e, o->gen, o->idx, o->idx);
	}
	ipo_leave(e);
}

/* --- groups --- */

/* The communicators made in the group just ended (rc): registered now (a nonblocking split's child: at its first op). */
static void group_made(ipo_res_t rc)
{
	for (int i = 0; i < t_nmade && (rc == IPO_SUCCESS || rc == IPO_IN_PROGRESS) && recording(); i++) {
		const struct gmade *m = &t_made[i];
		ipo_comm_t k = m->k ? m->k : rc == IPO_SUCCESS ? *m->child : NULL;
		if (!k)
			continue;
		void *was = m->ctx ? ipo_ctx_swap(m->ctx) : NULL;
		ipo_register(m->nc, k, m->hash, m->rank, m->nranks);
		if (was)
			ipo_ctx_swap(was);
	}
	t_nmade = 0;
}

/* Before NCCL's outermost ncclGroupEnd: the group's (communicator, stream) pairs, a start event on each timed one. */
static int group_pre(struct gpair *p)
{
	struct group *g = t_group;
	int np = 0;
	for (size_t i = 0; g && i < g->n; i++) {
		const struct gop *op = &g->op[i];
		int j = 0;
		while (j < np && (p[j].e != op->e || p[j].st != op->st))
			j++;
		if (j < np) {
			p[j].first = op->idx < p[j].first ? op->idx : p[j].first;
			p[j].last = op->idx > p[j].last ? op->idx : p[j].last;
			continue;
		}
		if (op->captured || np == GROUP_PAIRS)
			continue;
		p[np] = (struct gpair){ op->e, op->gen, op->st, NULL, op->idx, op->idx };
		if (ipo_enter(op->e, op->gen)) {
			if (want_time(op->e))
				p[np].t = ipo_timer_start(op->st);
			ipo_leave(op->e);
		}
		np++;
	}
	return np;
}

/* The pair of a grouped op, or NULL. */
static struct gpair *pair_of(struct gpair *p, int np, const struct gop *op)
{
	for (int j = 0; j < np; j++)
		if (p[j].e == op->e && p[j].st == op->st)
			return &p[j];
	return NULL;
}

/* After it (rc; launched 0: ncclGroupSimulateEnd): end events, every op of the group enqueued (or cancelled). */
static void group_post(struct gpair *p, int np, ipo_res_t rc, int launched)
{
	struct group *g = t_group;
	launched = launched && (rc == IPO_SUCCESS || rc == IPO_IN_PROGRESS);
	for (int j = 0; j < np; j++) {
		if (!p[j].t)
			continue;
		if (!ipo_enter(p[j].e, p[j].gen)) {
			ipo_timer_abandon(p[j].t); /* gone meanwhile: the pair is never touched again */
			p[j].t = NULL;
			continue;
		}
		if (rc != IPO_SUCCESS || !launched)
			ipo_timer_put(p[j].t), p[j].t = NULL;
		else if (ipo_timer_stop(p[j].t, p[j].st) != 0)
			p[j].t = NULL;
		ipo_leave(p[j].e);
	}
	uint64_t now = nwp_realtime_ns();
	for (size_t i = 0; g && i < g->n; i++) {
		const struct gop *op = &g->op[i];
		if (!ipo_enter(op->e, op->gen))
			continue;
		struct nwp_slot *s = &op->e->c->slots[op->idx & (nwp_g.pool_size - 1)];
		const struct gpair *pr = op->captured ? NULL : pair_of(p, np, op);
		__atomic_store_n(&s->expect_kch, (uint8_t)(pr && pr->t), __ATOMIC_RELAXED);
		s->enq_end_ns = now;
		__atomic_store_n(&s->state, launched ? NWP_STOPPED : NWP_DONE, __ATOMIC_RELEASE);
		ipo_leave(op->e);
	}
	for (int j = 0; j < np; j++)
		if (p[j].t)
			ipo_timer_queue(p[j].t, p[j].e, p[j].gen, p[j].first, p[j].last);
	if (g)
		g->n = 0;
}

/* ncclGroupEnd (sim NULL) and ncclGroupSimulateEnd: at the outermost one, the group is timed and marked enqueued. */
static ipo_res_t group_end(const void *ra, enum ipo_fn fn, void *sim)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(ra);
	ipo_res_t (*end)(void) = NULL, (*sim_end)(void *) = NULL, r;
	if (fn == IPO_GROUP_END)
		REAL(nc, fn, end);
	else
		REAL(nc, fn, sim_end);
	if (t_inside || t_depth != 1) {
		FORWARD(r, end ? end() : sim_end(sim));
		if (!t_inside && t_depth > 0)
			t_depth--;
		return r;
	}
	struct gpair p[GROUP_PAIRS];
	int np = fn == IPO_GROUP_END ? group_pre(p) : 0;
	FORWARD(r, end ? end() : sim_end(sim));
	t_depth = 0;
	group_post(p, np, r, fn == IPO_GROUP_END);
	group_made(fn == IPO_GROUP_END ? r : IPO_INTERNAL_ERROR);
	return r;
}

/* --- the exported functions --- */

#define RA __builtin_return_address(0)

/* One collective or p2p wrapper: op_begin, NCCL's call with the same arguments, op_end. */
#define OP_WRAPPER(id, type, call_args, comm, count, dtype, peer, stream)                                    \
	do {                                                                                                    \
		struct op ipo_o_;                                                                                   \
		const struct ipo_nccl *ipo_nc_ = op_begin(&ipo_o_, RA, (comm), (id), (count), (dtype), (peer), (stream)); \
		type ipo_real_ = NULL;                                                                              \
		ipo_res_t ipo_rc_ = IPO_INTERNAL_ERROR;                                                             \
		if (!ipo_nc_ || !ipo_nc_->fn[(id)]) {                                                               \
			op_end(&ipo_o_, IPO_INVALID_USAGE);                                                             \
			REAL(ipo_nc_, (id), ipo_real_);                                                                 \
		}                                                                                                   \
		memcpy(&ipo_real_, &ipo_nc_->fn[(id)], sizeof(ipo_real_));                                          \
		FORWARD(ipo_rc_, ipo_real_ call_args);                                                              \
		op_end(&ipo_o_, ipo_rc_);                                                                           \
		return ipo_rc_;                                                                                     \
	} while (0)

typedef ipo_res_t (*reduce_fn)(const void *, void *, size_t, int, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*rooted_fn)(const void *, void *, size_t, int, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*rooted_reduce_fn)(const void *, void *, size_t, int, int, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*plain_fn)(const void *, void *, size_t, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*bcast_fn)(void *, size_t, int, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*send_fn)(const void *, size_t, int, int, ipo_comm_t, ipo_stream_t);
typedef ipo_res_t (*recv_fn)(void *, size_t, int, int, ipo_comm_t, ipo_stream_t);

IPO_API ipo_res_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_ALL_REDUCE, reduce_fn, (s, r, n, t, op, c, st), c, n, t, -1, st);
}

IPO_API ipo_res_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_REDUCE_SCATTER, reduce_fn, (s, r, n, t, op, c, st), c, n, t, -1, st);
}

IPO_API ipo_res_t ncclAllGather(const void *s, void *r, size_t n, int t, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_ALL_GATHER, plain_fn, (s, r, n, t, c, st), c, n, t, -1, st);
}

IPO_API ipo_res_t ncclAlltoAll(const void *s, void *r, size_t n, int t, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_ALLTOALL, plain_fn, (s, r, n, t, c, st), c, n, t, -1, st);
}

IPO_API ipo_res_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_BROADCAST, rooted_fn, (s, r, n, t, root, c, st), c, n, t, root, st);
}

IPO_API ipo_res_t ncclBcast(void *b, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_BCAST, bcast_fn, (b, n, t, root, c, st), c, n, t, root, st);
}

IPO_API ipo_res_t ncclGather(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_GATHER, rooted_fn, (s, r, n, t, root, c, st), c, n, t, root, st);
}

IPO_API ipo_res_t ncclScatter(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_SCATTER, rooted_fn, (s, r, n, t, root, c, st), c, n, t, root, st);
}

IPO_API ipo_res_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, ipo_comm_t c,
                             ipo_stream_t st)
{
	OP_WRAPPER(IPO_REDUCE, rooted_reduce_fn, (s, r, n, t, op, root, c, st), c, n, t, root, st);
}

IPO_API ipo_res_t ncclSend(const void *s, size_t n, int t, int peer, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_SEND, send_fn, (s, n, t, peer, c, st), c, n, t, peer, st);
}

IPO_API ipo_res_t ncclRecv(void *r, size_t n, int t, int peer, ipo_comm_t c, ipo_stream_t st)
{
	OP_WRAPPER(IPO_RECV, recv_fn, (r, n, t, peer, c, st), c, n, t, peer, st);
}

IPO_API ipo_res_t ncclGroupStart(void)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(RA);
	ipo_res_t (*start)(void) = NULL, r;
	REAL(nc, IPO_GROUP_START, start);
	if (t_inside)
		return start();
	FORWARD(r, start());
	if (r == IPO_SUCCESS)
		t_depth++;
	return r;
}

IPO_API ipo_res_t ncclGroupEnd(void)
{
	return group_end(RA, IPO_GROUP_END, NULL);
}

IPO_API ipo_res_t ncclGroupSimulateEnd(void *sim)
{
	return group_end(RA, IPO_GROUP_SIMULATE_END, sim);
}

/* The NCCL of comm k: the one that made it, else the caller's. */
static const struct ipo_nccl *nccl_of(ipo_comm_t k, const void *ra)
{
	struct ipo_entry *e = ipo_lookup(k);
	return e && e->nc ? e->nc : ipo_nccl_caller(ra);
}

/*
 * A communicator made (r: NCCL's answer; split: *k is set only when the
 * call completes): registered when recording, at the group's end inside one.
 */
static void made(const struct ipo_nccl *nc, ipo_res_t r, ipo_comm_t *k, int split, uint64_t hash, int rank,
                 int nranks)
{
	if ((r != IPO_SUCCESS && r != IPO_IN_PROGRESS) || !k || t_inside || !recording())
		return;
	if (t_depth > 0 && t_nmade < GROUP_MADE)
		t_made[t_nmade++] = (struct gmade){ split ? NULL : *k, k, hash, rank, nranks, nc, ipo_ctx_swap(NULL) };
	else if (*k)
		ipo_register(nc, *k, hash, rank, nranks);
}

IPO_API ipo_res_t ncclCommInitRank(ipo_comm_t *k, int nranks, ipo_uid_t id, int rank)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(RA);
	ipo_res_t (*init)(ipo_comm_t *, int, ipo_uid_t, int) = NULL, r;
	REAL(nc, IPO_INIT_RANK, init);
	FORWARD(r, init(k, nranks, id, rank));
	made(nc, r, k, 0, ipo_hash_id(&id), rank, nranks);
	return r;
}

IPO_API ipo_res_t ncclCommInitRankConfig(ipo_comm_t *k, int nranks, ipo_uid_t id, int rank, void *config)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(RA);
	ipo_res_t (*init)(ipo_comm_t *, int, ipo_uid_t, int, void *) = NULL, r;
	REAL(nc, IPO_INIT_RANK_CONFIG, init);
	FORWARD(r, init(k, nranks, id, rank, config));
	made(nc, r, k, 0, ipo_hash_id(&id), rank, nranks);
	return r;
}

IPO_API ipo_res_t ncclCommInitRankScalable(ipo_comm_t *k, int nranks, int rank, int nid, ipo_uid_t *ids,
                                           void *config)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(RA);
	ipo_res_t (*init)(ipo_comm_t *, int, int, int, ipo_uid_t *, void *) = NULL, r;
	REAL(nc, IPO_INIT_RANK_SCALABLE, init);
	FORWARD(r, init(k, nranks, rank, nid, ids, config));
	if (nid >= 1 && ids)
		made(nc, r, k, 0, ipo_hash_id(&ids[0]), rank, nranks);
	return r;
}

IPO_API ipo_res_t ncclCommInitAll(ipo_comm_t *ks, int ndev, const int *devlist)
{
	const struct ipo_nccl *nc = ipo_nccl_caller(RA);
	ipo_res_t (*init)(ipo_comm_t *, int, const int *) = NULL, r;
	REAL(nc, IPO_INIT_ALL, init);
	FORWARD(r, init(ks, ndev, devlist));
	uint64_t hash = ipo_hash_local(); /* every rank is in this process */
	for (int i = 0; ks && i < ndev; i++)
		made(nc, r, &ks[i], 0, hash, i, ndev);
	return r;
}

IPO_API ipo_res_t ncclCommSplit(ipo_comm_t k, int color, int key, ipo_comm_t *child, void *config)
{
	const struct ipo_nccl *nc = nccl_of(k, RA);
	ipo_res_t (*split)(ipo_comm_t, int, int, ipo_comm_t *, void *) = NULL, r;
	REAL(nc, IPO_SPLIT, split);
	FORWARD(r, split(k, color, key, child, config));
	if ((r == IPO_SUCCESS || r == IPO_IN_PROGRESS) && !t_inside && recording()) {
		struct ipo_entry *parent = ipo_lookup(k);
		uint64_t hash = ipo_hash_split(parent, color); /* counted on every rank, child or not */
		made(nc, r, child, 1, hash, -1, -1);
	}
	return r;
}

/* ncclCommDestroy (abort 0) and ncclCommAbort (1). */
static ipo_res_t comm_end(const void *ra, ipo_comm_t k, int abort)
{
	const struct ipo_nccl *nc = nccl_of(k, ra);
	ipo_res_t (*end)(ipo_comm_t) = NULL, r;
	REAL(nc, abort ? IPO_ABORT : IPO_DESTROY, end);
	if (t_inside || __atomic_load_n(&ipo_g.shutdown, __ATOMIC_RELAXED))
		return end(k);
	struct ipo_entry *e = ipo_end_begin(k, abort);
	FORWARD(r, end(k));
	ipo_end_finish(e, abort);
	return r;
}

IPO_API ipo_res_t ncclCommDestroy(ipo_comm_t k)
{
	return comm_end(RA, k, 0);
}

IPO_API ipo_res_t ncclCommAbort(ipo_comm_t k)
{
	return comm_end(RA, k, 1);
}

IPO_API ipo_res_t ncclCommFinalize(ipo_comm_t k)
{
	const struct ipo_nccl *nc = nccl_of(k, RA);
	ipo_res_t (*fin)(ipo_comm_t) = NULL, r;
	REAL(nc, IPO_FINALIZE, fin);
	FORWARD(r, fin(k));
	return r;
}

IPO_API ipo_res_t ncclCommGetAsyncError(ipo_comm_t k, ipo_res_t *err)
{
	const struct ipo_nccl *nc = nccl_of(k, RA);
	ipo_res_t (*get)(ipo_comm_t, ipo_res_t *) = NULL, r;
	REAL(nc, IPO_GET_ASYNC_ERROR, get);
	FORWARD(r, get(k, err));
	if (r == IPO_SUCCESS && err && *err != IPO_SUCCESS && *err != IPO_IN_PROGRESS) {
		struct ipo_entry *e = ipo_lookup(k); /* a communicator in error: no more events on its stream */
		if (e && !__atomic_exchange_n(&e->errored, 1, __ATOMIC_RELAXED))
			nwp_log(NWP_LOG_INFO, "ncclwatch: interposer: comm %016llx reports NCCL error %d: its ops are "
			        "counted, no longer timed", (unsigned long long)e->hash, *err);
	}
	return r;
}
