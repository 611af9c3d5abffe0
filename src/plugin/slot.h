/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slot: taking and filling a slot of a communicator's in-flight pool, the
 * hot path both front ends share: the profiler plugin's Coll, P2p and
 * CeColl events (plugin.c) and the interposer's wrapped NCCL calls
 * (ipose.c). Internal to the recording code; everything is inline, so the
 * callers pay no call.
 */
#ifndef NW_PLUGIN_SLOT_H
#define NW_PLUGIN_SLOT_H

#include "plugin/nwp.h"

/* An op as a front end describes it, before it goes into a slot. */
struct nwp_op_in {
	uint64_t seq;
	const char *func, *dtype, *algo, *proto;  /* static strings: NCCL's, or the recording code's own */
	size_t count;
	int peer;                                 /* root, or peer for p2p */
	uint8_t nch, nwarps;
};

/* Take the next slot of c's pool (its running index in *idx); NULL (and a drop counted) when it is full. */
NWP_HOT struct nwp_slot *nwp_slot_take_at(struct nwp_comm *c, uint64_t *idx)
{
	uint64_t h = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t t = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if (h - t >= nwp_g.pool_size) {
			__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		if (__atomic_compare_exchange_n(&c->head, &h, h + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			*idx = h;
			return &c->slots[h & (nwp_g.pool_size - 1)];
		}
	}
}

NWP_HOT struct nwp_slot *nwp_slot_take(struct nwp_comm *c)
{
	uint64_t idx;
	return nwp_slot_take_at(c, &idx);
}

/*
 * Fill slot s (just taken) with the op, with plain stores, and note the
 * time as c's last event; the caller publishes it (state NWP_ACTIVE, or
 * NWP_STOPPED, with release). kind is NWP_KIND_COLL or NWP_KIND_P2P;
 * expect_kch: completion events (kernel times) will come for it.
 */
NWP_HOT void nwp_slot_fill(struct nwp_comm *c, struct nwp_slot *s, int kind, const struct nwp_op_in *in,
                           int expect_kch)
{
	s->kind = (uint8_t)kind;
	__atomic_store_n(&s->expect_kch, (uint8_t)(expect_kch != 0), __ATOMIC_RELAXED);
	s->seq = in->seq;
	s->func = in->func;
	s->count = in->count;
	s->peer = in->peer;
	s->dtype = in->dtype;
	s->nch = in->nch;
	s->nwarps = in->nwarps;
	s->algo = in->algo;
	s->proto = in->proto;
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
}

#endif
