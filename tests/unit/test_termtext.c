/* SPDX-License-Identifier: Apache-2.0 */
/* Outside text made safe for a terminal (util/termtext.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/termtext.h"

static void escapes_controls(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } cases[] = {
		{ "node-7", "node-7" },
		{ "\x1b]0;PWNED\x07node", "\\x1b]0;PWNED\\x07node" },
		{ "a\nb\tc\rd", "a\\nb\\tc\\rd" },
		{ "del\x7f", "del\\x7f" },
		{ "c1 \xc2\x9b" "31m", "c1 \\u009b31m" },            /* CSI as a UTF-8 C1 control */
		{ "raw \x9b" "31m", "raw \\x9b31m" },                /* CSI as a lone byte: not UTF-8 */
		{ "n\xc3\xa4me \xe2\x80\xa6 \xf0\x9f\x98\x80", "n\xc3\xa4me \xe2\x80\xa6 \xf0\x9f\x98\x80" }, /* UTF-8 kept */
		{ "cut \xe2\x80", "cut \\xe2\\x80" },                  /* a sequence cut short */
		{ "over \xc0\xaf", "over \\xc0\\xaf" },                /* an overlong '/' */
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(NW_TT(cases[i].in), cases[i].out);
	assert_string_equal(NW_TT(NULL), "");
}

static void cuts_long_values(void **state)
{
	(void)state;
	size_t n = 120 * 1024;
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	const char *t = NW_TT(big);
	assert_true(strlen(t) < 300);
	assert_int_equal(strspn(t, "x"), NW_TT_MAX);
	assert_string_equal(t + NW_TT_MAX, "\xe2\x80\xa6(122880 bytes)");
	assert_int_equal(nw_tt_width(t), NW_TT_MAX + 1 + strlen("(122880 bytes)"));
	/* the worst case fits the buffer: every character escaped at its longest */
	for (size_t i = 0; i + 2 <= n; i += 2)
		big[i] = '\xc2', big[i + 1] = '\x85';
	t = NW_TT(big);
	assert_int_equal(strncmp(t, "\\u0085", 6), 0);
	assert_true(strlen(t) < NW_TT_BUF);
	free(big);
	/* exactly NW_TT_MAX characters: not cut */
	char edge[NW_TT_MAX + 1];
	memset(edge, 'y', NW_TT_MAX);
	edge[NW_TT_MAX] = '\0';
	assert_string_equal(NW_TT(edge), edge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_controls),
		cmocka_unit_test(cuts_long_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
