/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tune driver: the policy (replan, prune, confirm, failures) with a fake
 * runner that returns planted timings and a fake clock that each run
 * advances, so no bench child is started and no time passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/driver.h"
#include "util/util.h"

#define OPS ((1u << NW_ALL_REDUCE) | (1u << NW_SENDRECV))

enum fail { FAIL_NONE, FAIL_EXIT, FAIL_WRONG, FAIL_NOSTART };

/* What one variant (by label) does: its times are the default's x factor. */
struct plant {
	const char *label;
	double factor;
	int until;          /* the factor holds for its first `until` runs only (0: always) */
	enum fail fail;
	int fail_from;      /* it fails from this run of it on (0 or 1: from the first) */
	uint64_t min_size;  /* the factor applies to sizes from this one on only */
};

struct fake {
	const struct plant *plants;
	int nplants;
	double clock;       /* what now() says */
	double wall_s;      /* what each run costs */
	double later_wall_s; /* what a variant's second and later runs cost (0: wall_s) */
	int calls;
	char labels[64][64];
	int counts[64];     /* runs per label, in labels[] order */
	int nlabels;
	int stop_after;     /* set *interrupt after this many runs (0: never) */
	volatile sig_atomic_t *interrupt;
	char notes[8192];   /* every note, one per line */
};

static struct fake *cur; /* the fake the clock reads */

static double fake_now(void)
{
	return cur->clock;
}

static void fake_note(void *ctx, enum nw_tune_note kind, const char *text)
{
	struct fake *f = ctx;
	size_t used = strlen(f->notes);
	snprintf(f->notes + used, sizeof(f->notes) - used, "%d %s\n", (int)kind, text);
}

/* Runs of label so far, this one included when count is set. */
static int runs_of(struct fake *f, const char *label, int count)
{
	int i;
	for (i = 0; i < f->nlabels; i++)
		if (!strcmp(f->labels[i], label))
			break;
	if (i == f->nlabels) {
		if (!count)
			return 0;
		snprintf(f->labels[f->nlabels++], sizeof(f->labels[0]), "%s", label);
	}
	return count ? ++f->counts[i] : f->counts[i];
}

static const struct plant *plant_of(const struct fake *f, const char *label)
{
	for (int i = 0; i < f->nplants; i++)
		if (!strcmp(f->plants[i].label, label))
			return &f->plants[i];
	return NULL;
}

/*
 * One row per op of rq->ops and size (1K small, 1M medium, 64M large):
 * 10 us + size at 200 GB/s, x factor from min_size on, +-0.3%.
 */
static void fill_rows(struct fake *f, const struct nw_tune_request *rq, double factor, uint64_t min_size,
                      int64_t wrong, struct nw_run *run)
{
	static const uint64_t sizes[] = { 1024, 1 << 20, 64 << 20 };
	const char *p = rq->ops;
	while (*p) {
		size_t n = strcspn(p, ",");
		for (size_t s = 0; s < NW_ARRAY_LEN(sizes); s++) {
			struct nw_row row;
			memset(&row, 0, sizeof(row));
			snprintf(row.op, sizeof(row.op), "%.*s", (int)n, p);
			snprintf(row.dtype, sizeof(row.dtype), "float");
			snprintf(row.redop, sizeof(row.redop), "sum");
			row.root = -1;
			row.size_bytes = sizes[s];
			row.nranks = 2;
			double jitter = 1 + 0.001 * (double)((f->calls * 37 + (int)s * 11) % 7 - 3);
			row.time_us = (10 + (double)sizes[s] / 200e3) * (sizes[s] >= min_size ? factor : 1) * jitter;
			row.wrong = wrong;
			nw_run_add(run, &row);
		}
		p += n;
		if (*p)
			p++;
	}
}

static int fake_run(void *ctx, const struct nw_tune_request *rq, struct nw_tune_result *r, char *err,
                    size_t errlen)
{
	struct fake *f = ctx;
	const struct plant *p = plant_of(f, rq->v->label);
	int k = runs_of(f, rq->v->label, 1);
	f->calls++;
	if (f->stop_after && f->calls >= f->stop_after)
		*f->interrupt = SIGINT;
	int failing = p && p->fail != FAIL_NONE && k >= p->fail_from;
	if (failing && p->fail == FAIL_NOSTART)
		return nw_seterr(err, errlen, "cannot start a bench child: planted");
	r->wall_s = k > 1 && f->later_wall_s > 0 ? f->later_wall_s : f->wall_s;
	f->clock += r->wall_s;
	if (failing && p->fail == FAIL_EXIT) {
		r->rc = 3;
		snprintf(r->err, sizeof(r->err), "exit 3; stderr: planted failure");
		return 0;
	}
	double factor = p && (!p->until || k <= p->until) ? p->factor : 1;
	int wrong = failing && p->fail == FAIL_WRONG;
	fill_rows(f, rq, factor, p ? p->min_size : 0, wrong ? 5 : 0, &r->run);
	snprintf(r->run.h.nccl_version, sizeof(r->run.h.nccl_version), "2.28.9");
	snprintf(r->run.h.backend, sizeof(r->run.h.backend), "fake");
	r->run.h.nranks = 2;
	r->have_run = 1;
	r->rc = wrong ? 1 : 0;
	if (wrong)
		snprintf(r->err, sizeof(r->err), "exit 1");
	return 0;
}

static char *vars_proto[] = { "NCCL_PROTO=LL,LL128,Simple" };
static char *vars_five[] = { "NCCL_X=1,2,3,4,5" };

/* One test's search: options, fake runner and clock, driver. */
struct bed {
	struct nw_tuner_opts o;
	struct fake f;
	struct nw_tuner t;
	char err[NW_ERRLEN];
	volatile sig_atomic_t stop;
};

/*
 * A bed measuring all_reduce and sendrecv in three bands, the variants of
 * vars only, 3 repeats, prune after 2, confirm 3, runs of 1 s; the test
 * changes what it needs in b->o and b->f, then calls bed_start.
 */
static struct bed *bed_new(char **vars, const struct plant *plants, int nplants)
{
	struct bed *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->o.opmask = OPS;
	b->o.vars = vars;
	b->o.nvars = 1;
	b->o.repeats = 3;
	b->o.min_gain = 0.02;
	b->o.prune_after = 2;
	b->o.confirm = 3;
	b->f.plants = plants;
	b->f.nplants = nplants;
	b->f.wall_s = 1;
	b->f.interrupt = &b->stop;
	return b;
}

static void bed_start(struct bed *b)
{
	cur = &b->f;
	struct nw_tuner_hooks h = {
		.run = fake_run, .run_ctx = &b->f, .now = fake_now, .note = fake_note, .note_ctx = &b->f,
		.interrupted = &b->stop,
	};
	nw_tuner_init(&b->t, &b->o, &h);
	assert_int_equal(nw_tuner_prepare(&b->t, b->err, sizeof(b->err)), 0);
}

static void bed_free(struct bed *b)
{
	nw_tuner_release(&b->t);
	free(b);
}

/* measure, then conclude as the command does; returns the final status. */
static int bed_tune(struct bed *b)
{
	int rc = nw_tuner_measure(&b->t, b->err, sizeof(b->err));
	if (rc == NW_TUNE_FAILED)
		return rc;
	return nw_tuner_conclude(&b->t, rc, b->err, sizeof(b->err));
}

/* The index of the variant labelled label. */
static int variant(const struct bed *b, const char *label)
{
	for (int v = 0; v < b->t.vs.n; v++)
		if (!strcmp(b->t.vs.v[v].label, label))
			return v;
	fail_msg("no variant '%s'", label);
	return -1;
}

static enum nw_tune_status status_of(const struct bed *b, const char *label)
{
	return b->t.vs.v[variant(b, label)].status;
}

/* As the time left shrinks: fewer repeats first, then the last variants go; they come back when estimates drop. */
static void replan_shrinks_then_readmits(void **state)
{
	(void)state;
	struct bed *b = bed_new(vars_five, NULL, 0);
	struct nw_tuner *t = &b->t;
	b->o.repeats = 5;
	b->o.budget_s = 40;
	bed_start(b);
	assert_int_equal(t->vs.n, 6);
	for (int v = 0; v < t->vs.n; v++)
		t->est[v] = 1;
	t->done[0] = 1;
	t->t0 = 0;
	/* 40 s less a 6 s reserve for confirming (3 rounds x 2 runs x 1 s) */
	nw_tuner_replan(t); /* 34 s left: 5 repeats need 4 + 25 */
	assert_int_equal(t->repeats, 5);
	b->f.clock = 8;
	nw_tuner_replan(t); /* 26 s: 4 repeats need 3 + 20 */
	assert_int_equal(t->repeats, 4);
	b->f.clock = 16;
	nw_tuner_replan(t); /* 18 s: 3 repeats need 2 + 15 */
	assert_int_equal(t->repeats, 3);
	for (int v = 0; v < t->vs.n; v++)
		assert_int_equal(t->vs.v[v].status, NW_TV_ACTIVE);
	b->f.clock = 22;
	nw_tuner_replan(t); /* 12 s: 3 repeats fit only the first four variants */
	assert_int_equal(t->repeats, 3);
	for (int v = 0; v < 4; v++)
		assert_int_equal(t->vs.v[v].status, NW_TV_ACTIVE);
	assert_int_equal(status_of(b, "NCCL_X=4"), NW_TV_SKIPPED);
	assert_int_equal(status_of(b, "NCCL_X=5"), NW_TV_SKIPPED);
	assert_non_null(strstr(t->vs.v[5].why, "left out for lack of time"));
	/* Runs turn out cheaper: what was left out comes back. */
	for (int v = 0; v < t->vs.n; v++)
		t->est[v] = 0.5;
	nw_tuner_replan(t);
	assert_int_equal(status_of(b, "NCCL_X=4"), NW_TV_ACTIVE);
	assert_int_equal(status_of(b, "NCCL_X=5"), NW_TV_ACTIVE);
	assert_string_equal(t->vs.v[5].why, "");
	assert_true(t->repeats >= 3);
	/* Not even the default fits any more: said as advice. */
	assert_null(strstr(b->f.notes, "does not fit"));
	b->f.clock = 39.9;
	nw_tuner_replan(t);
	assert_non_null(strstr(b->f.notes, "the budget does not fit 3 repeats of the default"));
	bed_free(b);
}

/* A whole search under a budget: the runs fit it, the last variants are left out, the rest get a verdict's repeats. */
static void measure_fits_the_budget(void **state)
{
	(void)state;
	struct bed *b = bed_new(vars_five, NULL, 0);
	b->o.repeats = 5;
	b->o.budget_s = 14;
	b->o.confirm = 0;
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	assert_true(b->f.clock <= b->o.budget_s);
	assert_int_equal(b->t.repeats, 3);
	for (int v = 0; v < 4; v++) {
		assert_int_equal(b->t.vs.v[v].status, NW_TV_ACTIVE);
		assert_int_equal(b->t.done[v], 3);
	}
	assert_int_equal(status_of(b, "NCCL_X=4"), NW_TV_SKIPPED);
	assert_int_equal(status_of(b, "NCCL_X=5"), NW_TV_SKIPPED);
	assert_int_equal(runs_of(&b->f, "NCCL_X=5", 0), 0);
	assert_int_equal(nw_tuner_no_verdict(&b->t), 0);
	bed_free(b);
}

/* Runs turn out slower than planned: measuring stops before a run that would overrun the budget. */
static void measure_stops_when_the_budget_runs_out(void **state)
{
	(void)state;
	struct bed *b = bed_new(vars_proto, NULL, 0);
	b->o.budget_s = 10;
	b->o.confirm = 0;
	b->f.later_wall_s = 4;
	bed_start(b);
	/* default 1 s; round 1: LL, LL128 1 s each (Simple left out); round 2: LL and LL128 4 s each */
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	assert_string_equal(b->t.stopped, "the budget ran out during repeat 2");
	assert_int_equal(b->f.calls, 5);
	assert_int_equal(runs_of(&b->f, "default", 0), 1);
	assert_int_equal(status_of(b, "NCCL_PROTO=Simple"), NW_TV_SKIPPED);
	assert_int_equal(nw_tuner_no_verdict(&b->t), 1);
	bed_free(b);
}

/*
 * Twice as slow everywhere: dropped after --prune-after repeats. 3% slower
 * is within the margin, twice as slow in one band only is not slower
 * everywhere: both stay.
 */
static void prune_drops_a_clear_loser(void **state)
{
	(void)state;
	static const struct plant plants[] = {
		{ .label = "NCCL_PROTO=LL", .factor = 2.0 },
		{ .label = "NCCL_PROTO=LL128", .factor = 1.03 },
		{ .label = "NCCL_PROTO=Simple", .factor = 2.0, .min_size = 16 << 20 },
	};
	struct bed *b = bed_new(vars_proto, plants, 3);
	b->o.repeats = 5;
	b->o.confirm = 0;
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	const struct nw_tune_variant *ll = &b->t.vs.v[variant(b, "NCCL_PROTO=LL")];
	assert_int_equal(ll->status, NW_TV_PRUNED);
	assert_int_equal(ll->runs, 2);
	assert_non_null(strstr(ll->why, "after 2 repeats"));
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 2);
	assert_int_equal(status_of(b, "NCCL_PROTO=LL128"), NW_TV_ACTIVE);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL128", 0), 5);
	assert_int_equal(status_of(b, "NCCL_PROTO=Simple"), NW_TV_ACTIVE);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=Simple", 0), 5);
	assert_int_equal(runs_of(&b->f, "default", 0), 5);
	assert_int_equal(b->t.rec, -1);
	bed_free(b);
}

static void prune_after_zero_never_prunes(void **state)
{
	(void)state;
	static const struct plant plants[] = { { .label = "NCCL_PROTO=LL", .factor = 2.0 } };
	struct bed *b = bed_new(vars_proto, plants, 1);
	b->o.repeats = 4;
	b->o.prune_after = 0;
	b->o.confirm = 0;
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	assert_int_equal(status_of(b, "NCCL_PROTO=LL"), NW_TV_ACTIVE);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 4);
	int better, worse;
	nw_tuner_count_verdicts(&b->t, variant(b, "NCCL_PROTO=LL"), &better, &worse);
	assert_int_equal(better, 0);
	assert_int_equal(worse, 6); /* both ops x three bands */
	bed_free(b);
}

/* A bed where NCCL_PROTO=LL is 30% faster (in its first `until` runs; 0: always). */
static struct bed *faster_ll(int until, int confirm)
{
	static const struct plant always[] = { { .label = "NCCL_PROTO=LL", .factor = 0.7 } };
	static const struct plant first3[] = { { .label = "NCCL_PROTO=LL", .factor = 0.7, .until = 3 } };
	assert_true(until == 0 || until == 3);
	struct bed *b = bed_new(vars_proto, until ? first3 : always, 1);
	b->o.confirm = confirm;
	return b;
}

/* A winner that still wins when measured again is recommended, confirmed. */
static void confirm_keeps_a_real_winner(void **state)
{
	(void)state;
	struct bed *b = faster_ll(0, 3);
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	int ll = variant(b, "NCCL_PROTO=LL");
	assert_int_equal(b->t.rec, ll);
	assert_int_equal(b->t.vs.v[ll].confirmed, 1);
	assert_int_equal(b->t.candidate, -1);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 6);
	assert_int_equal(runs_of(&b->f, "default", 0), 6);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=Simple", 0), 3);
	assert_non_null(strstr(b->f.notes, "NCCL_PROTO=LL, repeat 4 (confirming)"));
	int better, worse;
	nw_tuner_count_verdicts(&b->t, ll, &better, &worse);
	assert_int_equal(better, 6);
	assert_int_equal(worse, 0);
	bed_free(b);
}

/* A win that is gone when measured again is not recommended. */
static void confirm_drops_a_vanishing_winner(void **state)
{
	(void)state;
	struct bed *b = faster_ll(3, 3);
	bed_start(b);
	assert_int_equal(nw_tuner_measure(&b->t, b->err, sizeof(b->err)), NW_TUNE_OK);
	int ll = variant(b, "NCCL_PROTO=LL");
	nw_tuner_analyze(&b->t);
	assert_int_equal(b->t.rec, ll); /* it looked like a winner */
	assert_int_equal(nw_tuner_conclude(&b->t, NW_TUNE_OK, b->err, sizeof(b->err)), NW_TUNE_OK);
	assert_int_equal(b->t.vs.v[ll].confirmed, 1);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 6);
	assert_int_equal(b->t.rec, -1);
	assert_int_equal(nw_tuner_no_verdict(&b->t), 0);
	bed_free(b);
}

/* With no time left to confirm, a winner is named as a candidate, not recommended. */
static void confirm_needs_time(void **state)
{
	(void)state;
	struct bed *b = faster_ll(0, 3);
	b->o.budget_s = 100;
	bed_start(b);
	assert_int_equal(nw_tuner_measure(&b->t, b->err, sizeof(b->err)), NW_TUNE_OK);
	b->f.clock = 98; /* 3 rounds of two 1 s runs do not fit in 2 s */
	assert_int_equal(nw_tuner_conclude(&b->t, NW_TUNE_OK, b->err, sizeof(b->err)), NW_TUNE_OK);
	int ll = variant(b, "NCCL_PROTO=LL");
	assert_int_equal(b->t.rec, -1);
	assert_int_equal(b->t.candidate, ll);
	assert_int_equal(b->t.vs.v[ll].confirmed, 0);
	assert_non_null(strstr(b->t.unconfirmed, "no time left for 3 confirmation rounds"));
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 3);
	bed_free(b);
}

static void confirm_zero_recommends_at_once(void **state)
{
	(void)state;
	struct bed *b = faster_ll(0, 0);
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	int ll = variant(b, "NCCL_PROTO=LL");
	assert_int_equal(b->t.rec, ll);
	assert_int_equal(b->t.vs.v[ll].confirmed, 0);
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 3);
	bed_free(b);
}

/*
 * The fastest variants fail: one exits non-zero at once, one gives wrong
 * results, one is fast for a run and then fails. Each is marked and never
 * recommended; the first two run once only.
 */
static void failing_variants_are_never_recommended(void **state)
{
	(void)state;
	static const struct plant plants[] = {
		{ .label = "NCCL_PROTO=LL", .factor = 0.5, .fail = FAIL_EXIT },
		{ .label = "NCCL_PROTO=LL128", .factor = 0.5, .fail = FAIL_WRONG },
		{ .label = "NCCL_PROTO=Simple", .factor = 0.5, .fail = FAIL_EXIT, .fail_from = 2 },
	};
	struct bed *b = bed_new(vars_proto, plants, 3);
	const struct nw_tuner *t = &b->t;
	bed_start(b);
	assert_int_equal(bed_tune(b), NW_TUNE_OK);
	int ll = variant(b, "NCCL_PROTO=LL"), ll128 = variant(b, "NCCL_PROTO=LL128");
	int simple = variant(b, "NCCL_PROTO=Simple");
	assert_int_equal(t->vs.v[ll].status, NW_TV_FAILED);
	assert_string_equal(t->vs.v[ll].why, "repeat 1: exit 3; stderr: planted failure");
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL", 0), 1);
	assert_int_equal(t->vs.v[ll128].status, NW_TV_WRONG);
	assert_non_null(strstr(t->vs.v[ll128].why, "verification found 30 wrong elements"));
	assert_int_equal(runs_of(&b->f, "NCCL_PROTO=LL128", 0), 1);
	assert_int_equal(t->vs.v[simple].status, NW_TV_FAILED);
	assert_non_null(strstr(t->vs.v[simple].why, "repeat 2: exit 3"));
	assert_int_equal(t->rec, -1);
	assert_int_equal(t->candidate, -1);
	assert_int_equal(t->nalso, 0);
	for (int i = 0; i < t->ncells; i++)
		assert_int_equal(t->cells[i].best, -1);
	assert_non_null(strstr(b->f.notes, "NCCL_PROTO=LL failed: repeat 1: exit 3"));
	assert_non_null(strstr(b->f.notes, "NCCL_PROTO=LL128 gave wrong results"));
	json_t *doc = nw_tuner_json(t);
	json_t *rec = json_object_get(doc, "recommendation");
	assert_true(json_is_null(json_object_get(rec, "label")));
	assert_true(json_is_true(json_object_get(rec, "defaults_best")));
	json_decref(doc);
	bed_free(b);
}

/* The default failing, or a run that cannot start, stops everything with the reason. */
static void default_failure_stops(void **state)
{
	(void)state;
	static const struct plant later[] = { { .label = "default", .factor = 1, .fail = FAIL_EXIT, .fail_from = 2 } };
	static const struct plant nostart[] = { { .label = "default", .factor = 1, .fail = FAIL_NOSTART } };
	struct bed *b = bed_new(vars_proto, later, 1);
	bed_start(b);
	assert_int_equal(nw_tuner_measure(&b->t, b->err, sizeof(b->err)), NW_TUNE_FAILED);
	assert_non_null(strstr(b->err, "the default run failed on repeat 2, so the comparison stops: repeat 2: exit 3"));
	bed_free(b);
	b = bed_new(vars_proto, nostart, 1);
	bed_start(b);
	assert_int_equal(nw_tuner_measure(&b->t, b->err, sizeof(b->err)), NW_TUNE_FAILED);
	assert_string_equal(b->err, "cannot start a bench child: planted");
	assert_int_equal(b->t.runs_total, 0);
	bed_free(b);
}

/* Interrupted: measuring stops after the current run, what was measured is analyzed. */
static void interrupted_keeps_what_was_measured(void **state)
{
	(void)state;
	struct bed *b = bed_new(vars_proto, NULL, 0);
	b->f.stop_after = 6;
	bed_start(b);
	int rc = nw_tuner_measure(&b->t, b->err, sizeof(b->err));
	assert_int_equal(rc, NW_TUNE_INTERRUPTED);
	assert_int_equal(b->f.calls, 6);
	assert_int_equal(b->t.runs_total, 5); /* the interrupted run does not count */
	assert_string_equal(b->t.stopped, "interrupted");
	assert_int_equal(nw_tuner_conclude(&b->t, rc, b->err, sizeof(b->err)), NW_TUNE_INTERRUPTED);
	assert_int_equal(b->t.ncells, 6);
	assert_int_equal(nw_tuner_no_verdict(&b->t), 1);
	bed_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(replan_shrinks_then_readmits),
		cmocka_unit_test(measure_fits_the_budget),
		cmocka_unit_test(measure_stops_when_the_budget_runs_out),
		cmocka_unit_test(prune_drops_a_clear_loser),
		cmocka_unit_test(prune_after_zero_never_prunes),
		cmocka_unit_test(confirm_keeps_a_real_winner),
		cmocka_unit_test(confirm_drops_a_vanishing_winner),
		cmocka_unit_test(confirm_needs_time),
		cmocka_unit_test(confirm_zero_recommends_at_once),
		cmocka_unit_test(failing_variants_are_never_recommended),
		cmocka_unit_test(default_failure_stops),
		cmocka_unit_test(interrupted_keeps_what_was_measured),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
