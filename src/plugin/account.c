/* SPDX-License-Identifier: Apache-2.0 */
/*
 * account: turning finished in-flight slots into aggregates (publisher
 * thread). A drain pass decides for each stopped slot how it was timed
 * (KernelCh GPU times, proxy times or the launch on the CPU) or whether
 * events may still come; an accounted op goes into its (op, size bucket)
 * record, the flight-recorder ring, the busy time, the slow-op check, the
 * KernelCh cost model and the progress the hang verdict reads.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/nwp.h"

#define GIVEUP_NS (30 * NWP_SEC)    /* an op whose events never all came is accounted anyway */
#define QUIET_NS (100 * NWP_MS)     /* wait this long for events NCCL may still send */
#define PROXY_QUIET_NS (2 * NWP_MS)
#define COST_SMALL_NS 8000.0        /* measured: KernelCh adds 4-10 us to a short op */
#define COST_LARGE_NS 1000.0        /* ... and under 1 us to one over ~100 us */
#define LARGE_OP_NS 100000.0

static unsigned op_of(const char *f)
{
	static const struct { const char *name; unsigned op; } map[] = {
		{ "AllReduce", NWS_OP_ALL_REDUCE }, { "AllGather", NWS_OP_ALL_GATHER },
		{ "ReduceScatter", NWS_OP_REDUCE_SCATTER }, { "Broadcast", NWS_OP_BROADCAST },
		{ "Reduce", NWS_OP_REDUCE }, { "AlltoAll", NWS_OP_ALLTOALL }, { "Gather", NWS_OP_GATHER },
		{ "Scatter", NWS_OP_SCATTER }, { "Send", NWS_OP_SEND }, { "Recv", NWS_OP_RECV },
		{ "SendRecv", NWS_OP_SENDRECV },
	};
	if (!f)
		return NWS_OP_OTHER;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcasecmp(f, map[i].name))
			return map[i].op;
	return NWS_OP_OTHER;
}

/* ncclDataType_t number and size of NCCL's type name; 255 and size 1 when unknown. */
static unsigned dtype_of(const char *d, unsigned *size)
{
	static const struct { const char *name; unsigned size; } map[] = {
		{ "ncclInt8", 1 }, { "ncclUint8", 1 }, { "ncclInt32", 4 }, { "ncclUint32", 4 },
		{ "ncclInt64", 8 }, { "ncclUint64", 8 }, { "ncclFloat16", 2 }, { "ncclFloat32", 4 },
		{ "ncclFloat64", 8 }, { "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 }, { "ncclFloat8e5m2", 1 },
	};
	*size = 1;
	if (!d)
		return 255;
	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (!strcmp(d, map[i].name)) {
			*size = map[i].size;
			return i;
		}
	}
	return 255;
}

static int op_is_split(unsigned op)
{
	return op == NWS_OP_ALL_GATHER || op == NWS_OP_REDUCE_SCATTER || op == NWS_OP_ALLTOALL ||
	       op == NWS_OP_GATHER || op == NWS_OP_SCATTER;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t recent_median(const struct nwp_recent *r)
{
	uint64_t v[NWP_RECENT];
	memcpy(v, r->ns, r->n * sizeof(uint64_t));
	qsort(v, r->n, sizeof(uint64_t), cmp_u64);
	return v[r->n / 2];
}

/* Add busy time (kernel-exact k, estimated e) to the second sec of c's window. */
static void busy_add(struct nwp_comm *c, uint64_t sec, uint64_t k, uint64_t e)
{
	c->busy_k_total += k;
	c->busy_e_total += e;
	if (sec > c->busy_sec_start) {
		uint64_t from = c->busy_sec_start + 1;
		if (sec - c->busy_sec_start > 64)
			from = sec - 63;
		for (uint64_t s = from; s <= sec; s++) {
			c->busy_k[s % 64] = 0;
			c->busy_e[s % 64] = 0;
		}
		c->busy_sec_start = sec;
	}
	if (c->busy_sec_start - sec >= 64)
		return;
	c->busy_k[sec % 64] += k;
	c->busy_e[sec % 64] += e;
}

/* One finished op as it is accounted: what it was, how big, when it ran and how that was timed. */
struct done_op {
	unsigned op, dtype, bucket, src, flags;
	uint64_t bytes;
	uint64_t start, end, dur;  /* realtime ns, and the execution time */
};

/* The op's execution interval from its time source: GPU kernel times mapped to realtime, proxy times, or the launch. */
NWP_HOT void op_interval(const struct nwp_comm *c, struct nwp_slot *s, struct done_op *d)
{
	if (d->src == NWS_SRC_KERNEL) {
		uint64_t ks = __atomic_load_n(&s->kstart_gpu, __ATOMIC_RELAXED);
		uint64_t ke = __atomic_load_n(&s->kend_gpu, __ATOMIC_RELAXED);
		/* GPU globaltimer -> realtime: the smallest (arrival - timestamp) seen over the
		 * last 10-20 s is the offset plus the proxy thread's least delay */
		int64_t cur = __atomic_load_n(&c->off_min, __ATOMIC_RELAXED);
		int64_t off = c->off_prev < cur ? c->off_prev : cur;
		if (off == INT64_MAX)
			off = 0;
		if (!ks || ke < ks)
			ke = ks;
		d->dur = ke - ks;
		d->start = (uint64_t)((int64_t)ks + off);
		d->end = (uint64_t)((int64_t)ke + off);
	} else if (d->src == NWS_SRC_PROXY) {
		d->start = __atomic_load_n(&s->px_first_ns, __ATOMIC_RELAXED);
		d->end = __atomic_load_n(&s->px_last_ns, __ATOMIC_RELAXED);
		if (d->end < d->start)
			d->end = d->start;
		d->dur = d->end - d->start;
	} else {
		d->start = s->enq_ns;
		d->end = s->enq_end_ns >= s->enq_ns ? s->enq_end_ns : s->enq_ns;
		d->dur = d->end - d->start;
	}
}

/* Add the op to its (op, bucket) record under the seqlock; returns the record's mean kernel time (0: none). */
NWP_HOT uint64_t record_add(struct nwp_comm *c, const struct done_op *d)
{
	unsigned i = d->op * NWS_NBUCKETS + d->bucket;
	struct nws_record *r = &c->rec[i];
	c->fs.rec_dirty[i / 64] |= 1ull << (i % 64);
	nwp_w_begin(&r->gen);
	r->count++;
	r->bytes += d->bytes;
	r->last_ns = d->end;
	struct nws_timing *t = &r->t[d->src];
	if (!t->count || d->dur < t->min_ns)
		t->min_ns = d->dur;
	if (d->dur > t->max_ns)
		t->max_ns = d->dur;
	t->count++;
	t->bytes += d->bytes;
	t->sum_ns += d->dur;
	t->hist[nws_time_bin(d->dur)]++;
	uint64_t kmean = r->t[NWS_SRC_KERNEL].count ? r->t[NWS_SRC_KERNEL].sum_ns / r->t[NWS_SRC_KERNEL].count : 0;
	nwp_w_end(&r->gen);
	return kmean;
}

/* Kernel-timed ops: flag one far slower than recent peers of its comm/op/bucket (and ask for a dump), then remember its time. */
NWP_HOT void slow_check(struct nwp_comm *c, struct done_op *d, uint64_t now)
{
	struct nwp_recent *rc = &c->recent[d->op][d->bucket];
	if (rc->n >= 8) {
		uint64_t med = recent_median(rc);
		if ((double)d->dur > nwp_g.slow_factor * (double)med && d->dur - med > nwp_g.slow_floor_ns) {
			d->flags |= NWS_OPF_SLOW;
			c->slow_ops++;
			if (!nwp_g.last_auto_dump_ns || now - nwp_g.last_auto_dump_ns >= nwp_g.dump_min_ns) {
				nwp_g.last_auto_dump_ns = now ? now : 1;
				__atomic_store_n(&nwp_g.dump_requested, 2, __ATOMIC_RELAXED);
			}
		}
	}
	rc->ns[rc->pos] = d->dur;
	rc->pos = (rc->pos + 1) % NWP_RECENT;
	if (rc->n < NWP_RECENT)
		rc->n++;
	c->kernel_ops++;
}

/* Busy time (union of kernel intervals, plus estimates for untimed ops) and the KernelCh cost model. */
NWP_HOT void busy_and_cost(struct nwp_comm *c, const struct done_op *d, uint64_t kmean)
{
	if (d->src == NWS_SRC_KERNEL) {
		uint64_t from = d->start > c->last_end_ns ? d->start : c->last_end_ns;
		uint64_t add = d->end > from ? d->end - from : 0;
		if (d->end > c->last_end_ns)
			c->last_end_ns = d->end;
		busy_add(c, d->end / NWP_SEC, add, 0);
	} else if (kmean) {
		busy_add(c, d->end / NWP_SEC, 0, kmean);
	}
	/* cost model for the KernelCh policy (all comms of the process) */
	double est = d->src == NWS_SRC_KERNEL ? (double)d->dur : kmean ? (double)kmean
	             : 10000.0 + (double)d->bytes / 50.0; /* no sample yet: 10 us + 50 GB/s */
	nwp_g.win_exec_ns += est;
	nwp_g.win_cost_ns += est >= LARGE_OP_NS ? COST_LARGE_NS : COST_SMALL_NS;
}

/* The op's entry in the flight recorder. */
NWP_HOT void ring_add(struct nwp_comm *c, const struct nwp_slot *s, const struct done_op *d)
{
	uint64_t idx = ++c->ring_head;
	struct nws_opent *e = &c->ring[(idx - 1) % c->ring_len];
	nwp_w_begin(&e->gen);
	e->idx = idx;
	e->seq = s->seq;
	e->bytes = d->bytes;
	e->count = s->count;
	e->enq_ns = s->enq_ns;
	e->enq_end_ns = s->enq_end_ns;
	e->start_ns = d->start;
	e->end_ns = d->end;
	e->op = (uint16_t)d->op;
	e->src = (uint8_t)d->src;
	e->flags = (uint8_t)(d->flags | (s->kind == NWP_KIND_COLL ? NWS_OPF_SEQ : 0));
	e->nchannels = s->nch;
	e->nwarps = s->nwarps;
	e->dtype = (uint8_t)d->dtype;
	e->nkch = (uint8_t)(s->kch_stopped > 255 ? 255 : s->kch_stopped);
	e->peer = s->peer;
	nwp_copy_str(e->algo, sizeof(e->algo), s->algo);
	nwp_copy_str(e->proto, sizeof(e->proto), s->proto);
	nwp_w_end(&e->gen);
}

/*
 * The op, ncclDataType_t number and nccl-tests size of the operation in
 * slot s of c. Before v4 the size of the communicator may be one the hot
 * path learned after c->nranks was last updated (it is stored before the
 * slot is published); with no size at all (v3), an all_gather's or
 * reduce_scatter's bytes are one rank's part (NWS_BLIND_SPLIT_BYTES).
 */
unsigned nwp_slot_op(const struct nwp_comm *c, const struct nwp_slot *s, unsigned *dtype, uint64_t *bytes)
{
	unsigned tsize, op = op_of(s->func);
	int n = c->nranks > 0 ? c->nranks : __atomic_load_n(&c->nranks_seen, __ATOMIC_RELAXED);
	*dtype = dtype_of(s->dtype, &tsize);
	*bytes = s->count * tsize * (op_is_split(op) && n > 0 ? (uint64_t)n : 1);
	return op;
}

void nwp_learned(struct nwp_comm *c)
{
	if (c->nranks <= 0)
		c->nranks = __atomic_load_n(&c->nranks_seen, __ATOMIC_RELAXED);
}

/* Progress of an accounted op: a completion that was seen, or one given up on (kept as in flight). */
static void progress_done(struct nwp_comm *c, const struct nwp_slot *s, const struct done_op *d, int final)
{
	struct nws_progress *p = &c->prog;
	if (d->flags & NWS_OPF_INCOMPLETE) {
		if (!final && !c->stuck.on)
			c->stuck = (struct nwp_stuck){ 1, d->op, s->seq, d->bytes, s->enq_ns };
		return;
	}
	if (d->src == NWS_SRC_CPU || (d->flags & NWS_OPF_PARTIAL))
		return; /* no completion event: nothing seen */
	uint64_t n = s->kind == NWP_KIND_COLL ? s->seq + 1 : p->done_count[d->op] + 1;
	if (n > p->done_count[d->op])
		p->done_count[d->op] = n;
	p->done_op = d->op;
	p->done_seq = n - 1;
	p->done_bytes = d->bytes;
	p->done_ns = d->end;
	if (c->stuck.on && s->enq_ns > c->stuck.enq_ns)
		c->stuck.on = 0; /* a later op completed: the stuck one did too (one stream) */
}

/* Account one finished op: record, ring entry, busy time, slow check, cost model, progress. */
static void account(struct nwp_comm *c, struct nwp_slot *s, unsigned src, unsigned flags, uint64_t now, int final)
{
	struct done_op d;
	d.op = nwp_slot_op(c, s, &d.dtype, &d.bytes);
	d.bucket = nws_size_bucket(d.bytes);
	d.src = src;
	d.flags = flags;
	op_interval(c, s, &d);
	uint64_t kmean = record_add(c, &d);
	if (src == NWS_SRC_KERNEL)
		slow_check(c, &d, now);
	busy_and_cost(c, &d, kmean);
	ring_add(c, s, &d);
	if (s->kind == NWP_KIND_COLL && s->seq + 1 > c->last_seq[d.op])
		c->last_seq[d.op] = s->seq + 1;
	c->ops_total++;
	progress_done(c, s, &d, final);
}

/* What one drain pass knows beyond the slot: the time, final, and the newest slot with kernel activity. */
struct drain_pass {
	uint64_t now, head;
	int final, proxy_on;
	uint64_t newest_k;   /* 1 + index of the newest slot with kernel activity */
	int newest_k_known;
};

/* Kernel events of slot i: sets *src (and *flags) when they tell how to account it; 0, or -1 to wait. */
static int classify_kernel(struct nwp_comm *c, struct nwp_slot *s, uint64_t i, struct drain_pass *dp,
                           int *src, unsigned *flags)
{
	uint32_t mask = nwp_g.pool_size - 1;
	uint64_t age = dp->now > s->enq_end_ns ? dp->now - s->enq_end_ns : 0;
	uint32_t kst = __atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE);
	uint32_t ksp = __atomic_load_n(&s->kch_stopped, __ATOMIC_ACQUIRE);
	if (!dp->newest_k_known) {
		for (uint64_t j = dp->head; j > i; j--)
			if (__atomic_load_n(&c->slots[(j - 1) & mask].kch_started, __ATOMIC_RELAXED)) {
				dp->newest_k = j;
				break;
			}
		dp->newest_k_known = 1;
	}
	int later = dp->newest_k > i + 1, giveup = dp->final || age > GIVEUP_NS;
	if (kst > 0 && ksp >= kst && (s->nch ? ksp >= s->nch : (later || age > QUIET_NS || dp->final)))
		*src = NWS_SRC_KERNEL;
	else if (kst > 0 && ksp > 0 && (giveup || (later && age > QUIET_NS))) {
		*src = NWS_SRC_KERNEL;
		*flags = NWS_OPF_PARTIAL | (later ? 0 : NWS_OPF_INCOMPLETE);
	} else if (kst == 0 && !(giveup || later))
		return -1; /* kernel events may still come */
	else if (kst > 0 && !giveup)
		return -1;
	else if (!later)
		*flags = NWS_OPF_INCOMPLETE; /* the kernel never reported its end: given up */
	return 0;
}

/*
 * How to account stopped slot i: its time source and flags, or -1 while
 * events may still come. An op is complete when its kernel events all
 * came (KernelCh was on), or NCCL will send none (CPU, or PROXY once its
 * proxy ops stopped), or it waited too long (then it is marked incomplete
 * unless a later op shows it ended).
 */
static int classify(struct nwp_comm *c, struct nwp_slot *s, uint64_t i, struct drain_pass *dp, unsigned *flags)
{
	int src = -1;
	*flags = 0;
	uint64_t age = dp->now > s->enq_end_ns ? dp->now - s->enq_end_ns : 0;
	if ((__atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE) > 0 ||
	     __atomic_load_n(&s->expect_kch, __ATOMIC_RELAXED)) &&
	    classify_kernel(c, s, i, dp, &src, flags) != 0)
		return -1;
	if (src >= 0)
		return src;
	uint32_t pst = __atomic_load_n(&s->px_started, __ATOMIC_ACQUIRE);
	uint32_t psp = __atomic_load_n(&s->px_stopped, __ATOMIC_ACQUIRE);
	uint64_t plast = __atomic_load_n(&s->px_last_ns, __ATOMIC_RELAXED);
	if (pst > 0 && psp >= pst && (dp->final || dp->now - plast > PROXY_QUIET_NS))
		return NWS_SRC_PROXY;
	if (pst > 0 && (dp->final || age > GIVEUP_NS)) {
		*flags |= NWS_OPF_PARTIAL | NWS_OPF_INCOMPLETE;
		return NWS_SRC_PROXY;
	}
	if (pst == 0 && (!dp->proxy_on || dp->final || age > QUIET_NS))
		return NWS_SRC_CPU;
	return -1;
}

/* Account every slot of c that is complete (or, with final, everything started), then free finished slots in order. */
void nwp_drain(struct nwp_comm *c, uint64_t now, int final)
{
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint32_t mask = nwp_g.pool_size - 1;
	/* proxy ops time an op only across nodes; before v4 the node count is not told, so: once one came */
	int proxy_on = (nwp_g.base_mask & NWP_EV_PROXYOP) &&
	               (c->nnodes > 1 || (c->nnodes <= 0 && __atomic_load_n(&c->proxy_seen, __ATOMIC_RELAXED)));
	struct drain_pass dp = { now, head, final, proxy_on, 0, 0 };
	nwp_note_enqueued(c, head);
	for (uint64_t i = tail; i < head; i++) {
		struct nwp_slot *s = &c->slots[i & mask];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == NWP_ACTIVE && final) {
			s->enq_end_ns = s->enq_ns;
			st = NWP_STOPPED;
		}
		if (st != NWP_STOPPED)
			continue;
		unsigned flags;
		int src = classify(c, s, i, &dp, &flags);
		if (src < 0)
			continue;
		account(c, s, (unsigned)src, flags, now, final);
		__atomic_store_n(&s->state, NWP_DONE, __ATOMIC_RELAXED);
	}
	while (tail < head) {
		struct nwp_slot *s = &c->slots[tail & mask];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != NWP_DONE)
			break;
		__atomic_store_n(&s->state, NWP_FREE, __ATOMIC_RELEASE);
		tail++;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	nwp_note_inflight(c, tail, head, dp.proxy_on);
}
