/* SPDX-License-Identifier: Apache-2.0 */
/* tune planner: repeats and variants that fit a budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune/tune.h"

static void no_budget(void **state)
{
	(void)state;
	double cost[] = { 1, 1, 1 };
	int active[] = { 1, 1, 1 }, done[] = { 1, 0, 0 }, keep[3];
	struct nw_tune_plan_in in = { 3, cost, active, done, 0, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out);
	assert_int_equal(out.repeats, 5);
	assert_int_equal(out.ndropped, 0);
	assert_true(out.est_s == 14);
	assert_true(keep[0] && keep[1] && keep[2]);
}

static void budget_fits_max(void **state)
{
	(void)state;
	double cost[] = { 1, 1, 1 };
	int active[] = { 1, 1, 1 }, done[] = { 1, 0, 0 }, keep[3];
	struct nw_tune_plan_in in = { 3, cost, active, done, 100, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out);
	assert_int_equal(out.repeats, 5);
	assert_int_equal(out.fits, 1);
}

static void budget_lowers_repeats(void **state)
{
	(void)state;
	double cost[] = { 1, 1, 1 };
	int active[] = { 1, 1, 1 }, done[] = { 1, 0, 0 }, keep[3];
	struct nw_tune_plan_in in = { 3, cost, active, done, 9, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out); /* r=3 needs 8, r=4 needs 11 */
	assert_int_equal(out.repeats, 3);
	assert_int_equal(out.ndropped, 0);
	assert_true(out.est_s == 8);
}

/* Not even the minimum for all: the last variants go first. */
static void budget_drops_from_the_end(void **state)
{
	(void)state;
	double cost[] = { 1, 1, 1, 1 };
	int active[] = { 1, 1, 1, 1 }, done[] = { 1, 0, 0, 0 }, keep[4];
	struct nw_tune_plan_in in = { 4, cost, active, done, 6, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out);
	assert_int_equal(out.repeats, 3);
	assert_int_equal(out.ndropped, 2);
	assert_true(keep[0] && keep[1] && !keep[2] && !keep[3]);
	assert_int_equal(out.fits, 1);
}

/* Costs differ: expensive variants weigh more; inactive ones cost nothing. */
static void costs_and_inactive(void **state)
{
	(void)state;
	double cost[] = { 2, 10, 1, 1 };
	int active[] = { 1, 0, 1, 1 }, done[] = { 3, 1, 3, 3 }, keep[4];
	struct nw_tune_plan_in in = { 4, cost, active, done, 8, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out); /* r=5: 4+2+2 = 8 */
	assert_int_equal(out.repeats, 5);
	assert_int_equal(keep[1], 0);
	assert_int_equal(out.ndropped, 0);
}

static void default_never_dropped(void **state)
{
	(void)state;
	double cost[] = { 10, 1 };
	int active[] = { 1, 1 }, done[] = { 1, 0 }, keep[2];
	struct nw_tune_plan_in in = { 2, cost, active, done, 5, 3, 5 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out);
	assert_int_equal(keep[0], 1);
	assert_int_equal(keep[1], 0);
	assert_int_equal(out.fits, 0);
}

static void max_below_min(void **state)
{
	(void)state;
	double cost[] = { 1, 1 };
	int active[] = { 1, 1 }, done[] = { 0, 0 }, keep[2];
	struct nw_tune_plan_in in = { 2, cost, active, done, 0, 3, 2 };
	struct nw_tune_plan_out out = { .keep = keep };
	nw_tune_plan(&in, &out);
	assert_int_equal(out.repeats, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_budget),
		cmocka_unit_test(budget_fits_max),
		cmocka_unit_test(budget_lowers_repeats),
		cmocka_unit_test(budget_drops_from_the_end),
		cmocka_unit_test(costs_and_inactive),
		cmocka_unit_test(default_never_dropped),
		cmocka_unit_test(max_below_min),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
