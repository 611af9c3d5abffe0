/* The cross-rank diagnosis and merging of progress views (model/progress). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/progress.h"

#define S 1000000000ull
#define NOW (1000000 * S)
#define HANG (120 * S)

/* A 4-rank comm where every rank did n all_reduces, all complete, last event `ago` before NOW. */
static void comm4(struct nw_prog_comm *c, uint64_t n, uint64_t ago)
{
	memset(c, 0, sizeof(*c));
	c->comm_hash = 0xabcull;
	c->nranks = 4;
	for (int r = 0; r < 4; r++) {
		struct nw_prog_rank *x = nw_prog_rank_get(c, r);
		assert_non_null(x);
		x->src = NW_PROG_SRC_STATS;
		x->enq[NWS_OP_ALL_REDUCE] = n;
		x->done[NWS_OP_ALL_REDUCE] = n;
		x->last_op = NWS_OP_ALL_REDUCE;
		x->last_seq = n - 1;
		x->last_enq_ns = NOW - ago;
		x->last_event_ns = NOW - ago;
		x->inflight = 0;
		x->completion = NWS_DONE_KERNEL;
	}
}

/* Rank r enqueued one more all_reduce at NOW - ago that has not completed. */
static void enter(struct nw_prog_comm *c, int r, uint64_t ago)
{
	struct nw_prog_rank *x = &c->ranks[r];
	x->last_seq = x->enq[NWS_OP_ALL_REDUCE]++;
	x->last_enq_ns = x->last_event_ns = NOW - ago;
	x->inflight = 1;
	x->oldest_inflight_ns = NOW - ago;
	x->oldest_op = NWS_OP_ALL_REDUCE;
	x->oldest_seq = x->last_seq;
}

static void not_arrived_is_a_hang_once_quiet(void **state)
{
	(void)state;
	struct nw_prog_comm c;
	struct nw_prog_diag d;
	char err[128];
	comm4(&c, 48213, 200 * S);
	for (int r = 0; r < 4; r++)
		if (r != 3)
			enter(&c, r, 130 * S);
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_HUNG);
	assert_int_equal(d.op, NWS_OP_ALL_REDUCE);
	assert_int_equal(d.seq, 48213);
	assert_int_equal(d.nmissing, 1);
	assert_int_equal(c.ranks[d.missing[0]].rank, 3);
	assert_int_equal(d.ninside, 3);
	assert_int_equal(d.nunseen, 0);
	assert_true(d.wait_ns >= 130 * S);
	nw_prog_diag_release(&d);
	/* every process gone (a crashed job's files): nobody waits any more */
	for (size_t i = 0; i < c.n; i++) {
		c.ranks[i].dead = 1;
		c.ranks[i].hung = 1;
	}
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_NONE);
	nw_prog_diag_release(&d);
	for (size_t i = 0; i < c.n; i++)
		c.ranks[i].dead = c.ranks[i].hung = 0;
	/* the same picture 10 s after the others entered: a straggler, not yet a hang */
	assert_int_equal(nw_prog_diagnose(&c, NOW - 120 * S, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_STRAGGLER);
	assert_int_equal(d.nmissing, 1);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
}

static void inside_without_completion_is_a_hang(void **state)
{
	(void)state;
	struct nw_prog_comm c;
	struct nw_prog_diag d;
	char err[128];
	comm4(&c, 10, 300 * S);
	for (int r = 0; r < 4; r++)
		enter(&c, r, 200 * S);
	c.ranks[2].done[NWS_OP_ALL_REDUCE] = 10;
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_HUNG);
	assert_int_equal(d.op, NWS_OP_ALL_REDUCE);
	assert_int_equal(d.seq, 10);
	assert_int_equal(d.nmissing, 0);
	assert_int_equal(d.ninside, 4);
	nw_prog_diag_release(&d);
	/* with events flowing, ops in flight are just work */
	assert_int_equal(nw_prog_diagnose(&c, NOW - 195 * S, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_NONE);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
}

static void idle_is_not_hung(void **state)
{
	(void)state;
	struct nw_prog_comm c;
	struct nw_prog_diag d;
	char err[128];
	comm4(&c, 500, 900 * S); /* checkpointing for 15 minutes */
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_IDLE);
	assert_int_equal(d.op, -1);
	assert_int_equal(d.nmissing + d.ninside, 0);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
	comm4(&c, 500, 1 * S);
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.verdict, NW_PROG_NONE);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
}

static void unseen_ranks_and_blind_completion(void **state)
{
	(void)state;
	struct nw_prog_comm c;
	struct nw_prog_diag d;
	char err[128];
	comm4(&c, 5, 1 * S);
	c.nranks = 8; /* ranks 4..7 on another node: no stats here */
	c.ranks[1].inflight = NW_PROG_UNKNOWN;
	c.ranks[1].completion = NWS_DONE_NONE;
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nunseen, 4);
	assert_int_equal(d.nunseen_ranges, 1);
	assert_int_equal(d.unseen[0].lo, 4);
	assert_int_equal(d.unseen[0].hi, 7);
	assert_true(d.done_blind);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
}

/*
 * A communicator claiming 2^31-1 ranks with ranks 0, 2 and 3 seen: the
 * unseen ones come as three ranges, whatever the claimed size (this used to
 * allocate one int per claimed rank: 8 GB).
 */
static void unseen_ranks_are_ranges_of_any_size(void **state)
{
	(void)state;
	struct nw_prog_comm c;
	struct nw_prog_diag d;
	char err[128];
	comm4(&c, 5, 1 * S);
	c.nranks = 2147483647;
	c.ranks[1].src = 0; /* rank 1 seen by no source */
	c.ranks[1].last_event_ns = 0;
	c.ranks[1].last_op = -1;
	assert_int_equal(nw_prog_diagnose(&c, NOW, HANG, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nunseen_ranges, 2);
	assert_int_equal(d.unseen[0].lo, 1);
	assert_int_equal(d.unseen[0].hi, 1);
	assert_int_equal(d.unseen[1].lo, 4);
	assert_int_equal(d.unseen[1].hi, 2147483646);
	assert_true(d.nunseen == (size_t)2147483647 - 3);
	nw_prog_diag_release(&d);
	nw_prog_comm_release(&c);
}

static void merge_takes_the_newest_view(void **state)
{
	(void)state;
	struct nw_prog_set set = { 0 };
	struct nw_prog_comm a, b;
	char err[128];
	comm4(&a, 7, 50 * S);
	comm4(&b, 9, 10 * S);
	b.ranks[0].src = NW_PROG_SRC_DUMP;
	snprintf(b.ranks[0].host, sizeof(b.ranks[0].host), "node2");
	b.ranks[0].done[NWS_OP_ALL_REDUCE] = NW_PROG_UNKNOWN;
	assert_int_equal(nw_prog_set_merge(&set, &a, 1, err, sizeof(err)), 0);
	assert_int_equal(nw_prog_set_merge(&set, &b, 1, err, sizeof(err)), 0);
	assert_int_equal(set.n, 1);
	const struct nw_prog_comm *m = &set.comms[0];
	assert_int_equal(m->n, 4);
	assert_int_equal(m->ranks[0].enq[NWS_OP_ALL_REDUCE], 9);
	assert_int_equal(m->ranks[0].done[NWS_OP_ALL_REDUCE], 7); /* unknown does not erase a known count */
	assert_int_equal(m->ranks[0].last_seq, 8);
	assert_int_equal(m->ranks[0].src, NW_PROG_SRC_STATS | NW_PROG_SRC_DUMP);
	assert_string_equal(m->ranks[0].host, "node2");
	/* a second comm is added, sorted by hash */
	struct nw_prog_comm z;
	comm4(&z, 1, 1 * S);
	z.comm_hash = 0x1ull;
	assert_int_equal(nw_prog_set_merge(&set, &z, 1, err, sizeof(err)), 0);
	assert_int_equal(set.n, 2);
	assert_int_equal(set.comms[0].comm_hash, 0x1ull);
	nw_prog_set_release(&set);
	assert_int_equal(set.n, 0);
	nw_prog_comm_release(&a);
	nw_prog_comm_release(&b);
	nw_prog_comm_release(&z);
}

static void rank_get_keeps_order(void **state)
{
	(void)state;
	struct nw_prog_comm c = { 0 };
	int order[] = { 5, 1, 3, 0, 4, 2, 3 };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		assert_non_null(nw_prog_rank_get(&c, order[i]));
	assert_int_equal(c.n, 6);
	for (size_t i = 0; i < c.n; i++) {
		assert_int_equal(c.ranks[i].rank, (int)i);
		assert_int_equal(c.ranks[i].last_op, -1);
		assert_true(c.ranks[i].inflight == NW_PROG_UNKNOWN);
	}
	nw_prog_comm_release(&c);
	assert_string_equal(nw_prog_verdict_name(NW_PROG_HUNG), "hung");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(not_arrived_is_a_hang_once_quiet),
		cmocka_unit_test(inside_without_completion_is_a_hang),
		cmocka_unit_test(idle_is_not_hung),
		cmocka_unit_test(unseen_ranks_and_blind_completion),
		cmocka_unit_test(unseen_ranks_are_ranges_of_any_size),
		cmocka_unit_test(merge_takes_the_newest_view),
		cmocka_unit_test(rank_get_keeps_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
