/* SPDX-License-Identifier: Apache-2.0 */
/* tune statistics: medians, the win/lose rule, pruning, size bands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "tune/tune.h"

static void median_odd_even(void **state)
{
	(void)state;
	double a[] = { 5, 1, 3 };
	assert_true(nw_tune_median(a, 3) == 3);
	assert_true(a[0] == 5 && a[1] == 1); /* order kept */
	double b[] = { 4, 1, 3, 2 };
	assert_true(nw_tune_median(b, 4) == 2.5);
	assert_true(isnan(nw_tune_median(b, 0)));
}

static void clear_win(void **state)
{
	(void)state;
	double d[] = { 100, 101, 102, 100.5, 101.5 };
	double v[] = { 90, 91, 90.5, 89.5, 90.2 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 5, v, 5, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_BETTER);
	assert_true(fabs(c.gain - (101.0 / 90.2 - 1)) < 1e-9);
	assert_true(c.ci_lo > 0.05 && c.ci_hi < 0.2 && c.ci_lo <= c.gain && c.gain <= c.ci_hi);
	assert_true(c.hi_v == 91 && c.lo_d == 100);
}

static void clear_loss(void **state)
{
	(void)state;
	double d[] = { 100, 101, 102 };
	double v[] = { 120, 121, 119 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 3, v, 3, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_WORSE);
	assert_true(c.gain < 0 && c.ci_hi < 0);
}

static void within_noise(void **state)
{
	(void)state;
	double d[] = { 100, 110, 95, 105, 100 };
	double v[] = { 98, 103, 97, 108, 99 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 5, v, 5, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_SAME);
}

/* Medians 5% apart, but one slow variant run overlaps the default's range. */
static void overlap_is_no_win(void **state)
{
	(void)state;
	double d[] = { 100, 101, 102 };
	double v[] = { 95, 96, 101.5 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 3, v, 3, 0.02, 7, &c);
	assert_true(c.gain > 0.04);
	assert_int_equal(c.verdict, NW_TC_SAME);
}

/* The default's own spread (30%) is larger than the gain (23%). */
static void gain_below_default_spread(void **state)
{
	(void)state;
	double d[] = { 100, 100, 130 };
	double v[] = { 80, 81, 82 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 3, v, 3, 0.02, 7, &c);
	assert_true(c.noise > 0.29 && c.gain > 0.2);
	assert_int_equal(c.verdict, NW_TC_SAME);
}

static void min_gain_threshold(void **state)
{
	(void)state;
	double d[] = { 100, 100.1, 100.2 };
	double v[] = { 99, 99.1, 99.2 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 3, v, 3, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_SAME); /* 1% < 2% */
	nw_tune_compare(d, 3, v, 3, 0.005, 7, &c);
	assert_int_equal(c.verdict, NW_TC_BETTER);
}

static void too_few(void **state)
{
	(void)state;
	double d[] = { 100, 101 };
	double v[] = { 50, 51 };
	struct nw_tune_cmp c;
	nw_tune_compare(d, 2, v, 2, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_FEW);
	assert_true(c.gain > 0.9);
	nw_tune_compare(d, 2, v, 0, 0.02, 7, &c);
	assert_int_equal(c.verdict, NW_TC_FEW);
	assert_int_equal(c.n_v, 0);
}

static void bootstrap_repeatable(void **state)
{
	(void)state;
	double d[] = { 100, 104, 98, 101, 103, 99 };
	double v[] = { 95, 97, 99, 94, 96, 98 };
	struct nw_tune_cmp a, b;
	nw_tune_compare(d, 6, v, 6, 0.02, 42, &a);
	nw_tune_compare(d, 6, v, 6, 0.02, 42, &b);
	assert_true(a.ci_lo == b.ci_lo && a.ci_hi == b.ci_hi);
	assert_true(a.ci_lo < a.ci_hi);
}

static void pruning_rule(void **state)
{
	(void)state;
	double d[] = { 100, 102 };
	double v1[] = { 110, 112 };
	double v2[] = { 105, 120 };
	assert_int_equal(nw_tune_clearly_worse(d, 2, v1, 2, 0.05), 1);
	assert_int_equal(nw_tune_clearly_worse(d, 2, v2, 2, 0.05), 0);
	assert_int_equal(nw_tune_clearly_worse(d, 1, v1, 2, 0.05), 0);
}

static void bands_default(void **state)
{
	(void)state;
	struct nw_tune_band b[NW_TUNE_MAXBANDS];
	char err[256];
	assert_int_equal(nw_tune_bands_parse(NULL, b, err, sizeof(err)), 3);
	assert_string_equal(b[0].name, "small (<64K)");
	assert_string_equal(b[1].name, "medium (64K-16M)");
	assert_string_equal(b[2].name, "large (>=16M)");
	assert_int_equal(nw_tune_band_of(b, 3, 65535), 0);
	assert_int_equal(nw_tune_band_of(b, 3, 65536), 1);
	assert_int_equal(nw_tune_band_of(b, 3, 16u << 20), 2);
	assert_int_equal(nw_tune_band_of(b, 3, UINT64_MAX - 1), 2);
}

static void bands_custom_and_bad(void **state)
{
	(void)state;
	struct nw_tune_band b[NW_TUNE_MAXBANDS];
	char err[256];
	assert_int_equal(nw_tune_bands_parse("1M", b, err, sizeof(err)), 2);
	assert_string_equal(b[0].name, "small (<1M)");
	assert_int_equal(nw_tune_bands_parse("none", b, err, sizeof(err)), 1);
	assert_string_equal(b[0].name, "all sizes");
	assert_int_equal(nw_tune_bands_parse("16M,64K", b, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "increasing"));
	assert_int_equal(nw_tune_bands_parse("abc", b, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "abc"));
	assert_int_equal(nw_tune_bands_parse("0", b, err, sizeof(err)), -1);
	assert_int_equal(nw_tune_bands_parse("1K,,2K", b, err, sizeof(err)), -1);
	assert_int_equal(nw_tune_bands_parse("1,2,3,4,5,6,7,8", b, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(median_odd_even),
		cmocka_unit_test(clear_win),
		cmocka_unit_test(clear_loss),
		cmocka_unit_test(within_noise),
		cmocka_unit_test(overlap_is_no_win),
		cmocka_unit_test(gain_below_default_spread),
		cmocka_unit_test(min_gain_threshold),
		cmocka_unit_test(too_few),
		cmocka_unit_test(bootstrap_repeatable),
		cmocka_unit_test(pruning_rule),
		cmocka_unit_test(bands_default),
		cmocka_unit_test(bands_custom_and_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
