/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text writer: escaping, number forms, histogram cumulativity, +Inf bucket. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/promtext.h"

static void escape_label_values(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	struct nw_label l[] = { { "comm", "a\"b\\c\nd" }, { "op", "all_reduce" } };
	nw_prom_sample(&p, "ncclwatch_x", l, 2, 3);
	assert_string_equal(p.buf, "ncclwatch_x{comm=\"a\\\"b\\\\c\\nd\",op=\"all_reduce\"} 3\n");
	nw_prom_release(&p);
}

static void help_escapes_backslash_and_newline_not_quote(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	nw_prom_family(&p, "ncclwatch_y", "gauge", "a \"q\" \\ b\nc");
	assert_string_equal(p.buf, "# HELP ncclwatch_y a \"q\" \\\\ b\\nc\n# TYPE ncclwatch_y gauge\n");
	nw_prom_release(&p);
}

static void no_labels_no_braces(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	nw_prom_sample(&p, "ncclwatch_z_total", NULL, 0, 0);
	assert_string_equal(p.buf, "ncclwatch_z_total 0\n");
	nw_prom_release(&p);
}

static void value_forms(void **state)
{
	(void)state;
	char b[64];
	nw_prom_format_value(NAN, b, sizeof(b));
	assert_string_equal(b, "NaN");
	nw_prom_format_value(INFINITY, b, sizeof(b));
	assert_string_equal(b, "+Inf");
	nw_prom_format_value(-INFINITY, b, sizeof(b));
	assert_string_equal(b, "-Inf");
	nw_prom_format_value(18446744073709551616.0 / 4096, b, sizeof(b)); /* 2^52 */
	assert_string_equal(b, "4503599627370496");
	nw_prom_format_value(0.25, b, sizeof(b));
	assert_string_equal(b, "0.25");
	nw_prom_format_value(1e-6, b, sizeof(b));
	assert_string_equal(b, "1e-06");
	nw_prom_format_value(0.1 + 0.2, b, sizeof(b)); /* not 0.3: must read back exactly */
	assert_true(strtod(b, NULL) == 0.1 + 0.2);
	nw_prom_format_value(-3, b, sizeof(b));
	assert_string_equal(b, "-3");
}

static void histogram_is_cumulative_with_inf(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	double le[] = { 0.001, 0.01, 0.1 };
	uint64_t counts[] = { 2, 0, 5, 3 }; /* 3 above 0.1 s */
	struct nw_label l[] = { { "op", "all_reduce" } };
	nw_prom_histogram(&p, "ncclwatch_d_seconds", l, 1, le, counts, 3, 1.5);
	assert_string_equal(p.buf,
	                    "ncclwatch_d_seconds_bucket{op=\"all_reduce\",le=\"0.001\"} 2\n"
	                    "ncclwatch_d_seconds_bucket{op=\"all_reduce\",le=\"0.01\"} 2\n"
	                    "ncclwatch_d_seconds_bucket{op=\"all_reduce\",le=\"0.1\"} 7\n"
	                    "ncclwatch_d_seconds_bucket{op=\"all_reduce\",le=\"+Inf\"} 10\n"
	                    "ncclwatch_d_seconds_sum{op=\"all_reduce\"} 1.5\n"
	                    "ncclwatch_d_seconds_count{op=\"all_reduce\"} 10\n");
	nw_prom_release(&p);
}

static void histogram_without_labels(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	double le[] = { 1 };
	uint64_t counts[] = { 0, 0 };
	nw_prom_histogram(&p, "h", NULL, 0, le, counts, 1, 0);
	assert_string_equal(p.buf, "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
	nw_prom_release(&p);
}

static void buffer_grows_and_take(void **state)
{
	(void)state;
	struct nw_prom p;
	nw_prom_init(&p);
	struct nw_label l[] = { { "rank", "12345" } };
	for (int i = 0; i < 2000; i++)
		nw_prom_sample(&p, "ncclwatch_long_metric_name_for_growth", l, 1, i);
	size_t len;
	char *s = nw_prom_take(&p, &len);
	assert_int_equal(strlen(s), len);
	assert_non_null(strstr(s, "{rank=\"12345\"} 1999\n"));
	assert_null(p.buf);
	free(s);
	nw_prom_release(&p);
}

static void names(void **state)
{
	(void)state;
	assert_true(nw_prom_valid_name("ncclwatch_coll_duration_seconds"));
	assert_true(nw_prom_valid_name("ncclwatch:busbw:rate5m"));
	assert_false(nw_prom_valid_name("9abc"));
	assert_false(nw_prom_valid_name("a-b"));
	assert_false(nw_prom_valid_name(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escape_label_values),
		cmocka_unit_test(help_escapes_backslash_and_newline_not_quote),
		cmocka_unit_test(no_labels_no_braces),
		cmocka_unit_test(value_forms),
		cmocka_unit_test(histogram_is_cumulative_with_inf),
		cmocka_unit_test(histogram_without_labels),
		cmocka_unit_test(buffer_grows_and_take),
		cmocka_unit_test(names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
