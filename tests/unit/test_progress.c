/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cross-rank diagnosis and merging of progress views (model/progress),
 * and the progress line's time left in a sweep (cmd/progress: nw_eta).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/bench.h"
#include "cmd/progress.h"
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

/* ---- the time left in a sweep ---- */

/*
 * all_reduce on 2 H200s, nccl-tests 2.19.6 (reference h200x2/nt_all_reduce.txt):
 * out-of-place us per launch for 8 B, 16 B, ... 8 GiB.
 */
static const double h200_us[] = {
	11.81, 11.55, 11.51, 12.31, 12.48, 12.52, 11.68, 12.08, 12.57, 11.97, 11.61, 11.59, 11.99, 11.97,
	13.51, 13.46, 14.09, 15.11, 29.78, 35.62, 49.73, 78.52, 145.33, 259.11, 475.58, 895.79, 1723.04,
	3305.38, 6444.64, 12644.1, 25005.9,
};

/* A deterministic factor in [lo, hi): a loaded machine's noise. */
static double noise(unsigned *seed, double lo, double hi)
{
	*seed = *seed * 1103515245u + 12345u;
	return lo + (hi - lo) * (double)((*seed >> 8) & 0xffff) / 65536.0;
}

/*
 * Feed a sweep's steps (took[i] seconds for the planned step i) and check,
 * after each, the estimate against the truth (the sum of what is left):
 * nothing before the `quiet` first steps, and when something is shown,
 * within a factor of 2. *shown_at gets the first step after which it was.
 */
static void feed(struct nw_eta *e, const double *took, int quiet, int *shown_at)
{
	*shown_at = -1;
	for (int i = 0; i < e->n; i++) {
		nw_eta_took(e, took[i]);
		double truth = 0, left = nw_eta_left(e);
		for (int k = i + 1; k < e->n; k++)
			truth += took[k];
		if (i < quiet)
			assert_true(left < 0);
		if (left < 0)
			continue;
		if (*shown_at < 0)
			*shown_at = i;
		if (!(left >= truth / 2 && left <= truth * 2))
			fail_msg("step %d of %d: %.3f s shown, %.3f s true", i + 1, e->n, left, truth);
	}
}

/*
 * Two H200s, -b 8 -e 8G -f 2, two types one after the other: each step is
 * both placements of -n 20 and a synchronising launch, checked on the GPU
 * and gathered (300 us); the first step also holds the communicators'
 * set-up (3 s) and the warm-up over every size, the second sweep's first
 * its own warm-up. Nothing is said at step 1 (where the old estimate,
 * elapsed time scaled by bytes, said hours), and every estimate shown is
 * within a factor of 2.
 */
static void eta_gpu_sweep_is_within_a_factor(void **state)
{
	(void)state;
	int nsz = (int)(sizeof(h200_us) / sizeof(h200_us[0]));
	struct nw_eta e;
	nw_eta_init(&e);
	e.warm_share = 1.0 / 42;
	double took[2 * 64], warm = 0, total = 0;
	for (int k = 0; k < nsz; k++)
		warm += h200_us[k] * 1e-6;
	for (int sweep = 0; sweep < 2; sweep++)
		for (int k = 0; k < nsz; k++) {
			uint64_t s = 8ull << k;
			nw_eta_add(&e, s, k == 0);
			double t = 42 * h200_us[k] * 1e-6 + 2 * (double)s / 5e11 + 300e-6;
			if (k == 0)
				t += warm + (sweep == 0 ? 3.0 : 0);
			took[sweep * nsz + k] = t;
			total += t;
		}
	int shown;
	feed(&e, took, 3, &shown);
	/* shown once the bytes are seen (4 MiB: the 20th size), long before the time that matters has gone */
	double elapsed = 0;
	for (int i = 0; i <= shown; i++)
		elapsed += took[i];
	assert_true(shown >= 3 && shown < nsz);
	assert_true(elapsed < 0.5 * total);
	nw_eta_release(&e);
}

/*
 * The run of the report: --backend mpi on a loaded 2-core host, -b 8 -e
 * 32M (23 sizes), each size's time 25 us + bytes at 3 GB/s per launch, the
 * host's check and fill at 0.5 GB/s, 2 ms of exchanges, every step off by
 * -30% to +50% (other work on the cores), the first step holding MPI's
 * start (1.5 s) and the warm-up. It said "about 116m26s left" at step 1
 * of a 29.5 s run; now nothing until it can tell, then within 2x.
 */
static void eta_loaded_mpi_host_is_within_a_factor(void **state)
{
	(void)state;
	unsigned seed = 7;
	for (int run = 0; run < 20; run++) {
		struct nw_eta e;
		nw_eta_init(&e);
		e.warm_share = 5.0 / 42;
		double took[64], warm = 0;
		for (int k = 0; k < 23; k++)
			warm += 5 * (25e-6 + (double)(8ull << k) / 3e9);
		for (int k = 0; k < 23; k++) {
			uint64_t s = 8ull << k;
			nw_eta_add(&e, s, k == 0);
			double t = 42 * (25e-6 + (double)s / 3e9) + 4 * (double)s / 5e8 + 2e-3;
			took[k] = t * noise(&seed, 0.7, 1.5) + (k == 0 ? 1.5 + warm : 0);
		}
		int shown;
		feed(&e, took, 3, &shown);
		assert_true(shown > 0);
		nw_eta_release(&e);
	}
}

/* Only latency-bound sizes measured and large ones ahead: nothing is said; sizes planned again keep their times. */
static void eta_silent_until_bytes_are_seen(void **state)
{
	(void)state;
	struct nw_eta e;
	nw_eta_init(&e);
	for (int k = 0; k < 30; k++)
		nw_eta_add(&e, 8ull << k, k == 0);
	for (int k = 0; k < 12; k++) {
		nw_eta_took(&e, k == 0 ? 2.0 : 0.001);
		assert_true(nw_eta_left(&e) < 0);
	}
	/* the same plan made again (bench re-plans once the rank count is known): the times stay */
	struct nw_progress p;
	nw_progress_init(&p, 0, 0);
	struct nw_bench_opts o;
	nw_bench_opts_default(&o);
	o.min_bytes = 8;
	o.max_bytes = 1024;
	o.step_factor = 2;
	o.nops = 2;
	o.ops[1] = NW_ALL_GATHER;
	nw_progress_plan_bench(&p, &o, 1);
	assert_int_equal(p.total_n, 2 * 8);
	nw_progress_done(&p);
	nw_progress_plan_bench(&p, &o, 4); /* all_gather of 8 bytes of float over 4 ranks: no element each */
	assert_int_equal(p.total_n, 8 + 7);
	assert_int_equal(p.eta.done, 1);
	assert_true(p.eta.first[0] && p.eta.first[8] && !p.eta.first[1]);
	o.cycles = 0;
	nw_progress_plan_bench(&p, &o, 4);
	assert_int_equal(p.total_n, 0);
	nw_progress_release(&p);
	nw_eta_release(&e);
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
		cmocka_unit_test(eta_gpu_sweep_is_within_a_factor),
		cmocka_unit_test(eta_loaded_mpi_host_is_within_a_factor),
		cmocka_unit_test(eta_silent_until_bytes_are_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
