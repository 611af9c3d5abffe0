/* SPDX-License-Identifier: Apache-2.0 */
/* Percentiles from bucketed histograms, matching Prometheus' histogram_quantile. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "export/hist.h"

static const double le[] = { 1, 2, 4, 8 };

static void median_interpolates_inside_bucket(void **state)
{
	(void)state;
	uint64_t c[] = { 0, 10, 0, 0, 0 }; /* all in (1, 2] */
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.5), 1.5, 1e-12);
	assert_float_equal(nw_hist_quantile(le, c, 4, 1.0), 2.0, 1e-12);
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.0), 1.0, 1e-12);
}

static void first_bucket_starts_at_zero(void **state)
{
	(void)state;
	uint64_t c[] = { 4, 0, 0, 0, 0 };
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.25), 0.25, 1e-12);
}

static void p99_across_buckets(void **state)
{
	(void)state;
	/* 90 in (0,1], 9 in (2,4], 1 in (4,8]: rank 99 is the 9th of (2,4] */
	uint64_t c[] = { 90, 0, 9, 1, 0 };
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.99), 4.0, 1e-12);
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.5), 50.0 / 90.0, 1e-12);
	/* rank 94.5: 4.5 of 9 in (2,4] -> 3 */
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.945), 3.0, 1e-12);
}

static void overflow_bucket_returns_last_bound(void **state)
{
	(void)state;
	uint64_t c[] = { 1, 0, 0, 0, 9 };
	assert_float_equal(nw_hist_quantile(le, c, 4, 0.99), 8.0, 1e-12);
}

static void empty_and_bad_q_are_nan(void **state)
{
	(void)state;
	uint64_t c[] = { 0, 0, 0, 0, 0 };
	assert_true(isnan(nw_hist_quantile(le, c, 4, 0.5)));
	uint64_t d[] = { 1, 0, 0, 0, 0 };
	assert_true(isnan(nw_hist_quantile(le, d, 4, -0.1)));
	assert_true(isnan(nw_hist_quantile(le, d, 4, 1.5)));
	assert_true(isnan(nw_hist_quantile(le, d, 4, NAN)));
}

static void delta_and_reset(void **state)
{
	(void)state;
	uint64_t now[] = { 5, 6, 7, 8, 9 }, before[] = { 1, 1, 1, 1, 1 }, out[5];
	assert_int_equal(nw_hist_delta(now, before, 4, out), 30);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[4], 8);
	uint64_t restarted[] = { 0, 1, 0, 0, 0 };
	assert_int_equal(nw_hist_delta(restarted, before, 4, out), 1);
	assert_int_equal(out[1], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(median_interpolates_inside_bucket),
		cmocka_unit_test(first_bucket_starts_at_zero),
		cmocka_unit_test(p99_across_buckets),
		cmocka_unit_test(overflow_bucket_returns_last_bound),
		cmocka_unit_test(empty_and_bad_q_are_nan),
		cmocka_unit_test(delta_and_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
