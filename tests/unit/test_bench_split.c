/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_TESTS_SPLIT / _MASK: nccl-tests 2.19's grammar (src/common.cu, read not copied) and the colors it gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bench/split.h"

/* The colors of ranks 0..3 under split and mask, as "0101"; "err" when refused. */
static const char *colors(const char *split, const char *mask)
{
	static char out[8];
	struct nw_split s;
	char err[256];
	if (nw_split_parse(split, mask, &s, err, sizeof(err)))
		return "err";
	for (int r = 0; r < 4; r++)
		out[r] = (char)('0' + nw_split_color(&s, r));
	out[4] = '\0';
	return out;
}

static void every_form(void **state)
{
	(void)state;
	assert_string_equal(colors(NULL, NULL), "0000");
	assert_string_equal(colors("", ""), "0000");
	assert_string_equal(colors("AND 0x1", NULL), "0101");
	assert_string_equal(colors("and 1", NULL), "0101");
	assert_string_equal(colors("&0x1", NULL), "0101");
	assert_string_equal(colors("&0b10", NULL), "0022");
	assert_string_equal(colors("MOD 2", NULL), "0101");
	assert_string_equal(colors("%2", NULL), "0101");
	assert_string_equal(colors("DIV 2", NULL), "0011");
	assert_string_equal(colors("/2", NULL), "0011");
	assert_string_equal(colors("OR 1", NULL), "1133");
	assert_string_equal(colors("|0x1", NULL), "1133");
	assert_string_equal(colors("MOD 010", NULL), "0123"); /* C's octal, as strtoul(.., 0) */
	/* the mask is hex without a prefix, and wins over NCCL_TESTS_SPLIT */
	assert_string_equal(colors("DIV 2", "1"), "0101");
	assert_string_equal(colors(NULL, "0x2"), "0022");
}

static void bad_values_refused(void **state)
{
	(void)state;
	const char *bad[] = { "XOR 1", "MOD", "MOD 0", "DIV 0", "%0", "AND 1x", "AND -1", "2", "MOD 2 3", "AND 99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_string_equal(colors(bad[i], NULL), "err");
	assert_string_equal(colors(NULL, "zz"), "err");
	struct nw_split s;
	char err[256];
	assert_int_equal(nw_split_parse("XOR 1", NULL, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NCCL_TESTS_SPLIT"));
	assert_non_null(strstr(err, "MOD N"));
	assert_int_equal(nw_split_parse(NULL, "g", &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NCCL_TESTS_SPLIT_MASK"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_form),
		cmocka_unit_test(bad_values_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
