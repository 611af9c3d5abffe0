/* SPDX-License-Identifier: Apache-2.0 */
/* The growable string buffer (util/strbuf.h): appending, growing, resetting, detaching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/strbuf.h"

/* A fresh buffer is "" and holds no memory; releasing it is harmless, twice too. */
static void empty(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	assert_string_equal(sb.buf, "");
	assert_int_equal(nw_strbuf_len(&sb), 0);
	assert_int_equal(sb.cap, 0);
	nw_strbuf_addstr(&sb, "");
	nw_strbuf_add(&sb, "x", 0);
	assert_int_equal(sb.cap, 0);
	nw_strbuf_release(&sb);
	nw_strbuf_release(&sb);
	assert_string_equal(sb.buf, "");
}

/* The list-building pattern the sites replaced with it use. */
static void list(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	static const int v[] = { 3, 14, 159 };
	for (int i = 0; i < 3; i++)
		nw_strbuf_addf(&sb, "%s%d", sb.len ? "," : "", v[i]);
	assert_string_equal(sb.buf, "3,14,159");
	assert_int_equal(nw_strbuf_len(&sb), 8);
	nw_strbuf_addch(&sb, ';');
	nw_strbuf_addstr(&sb, " done");
	assert_string_equal(sb.buf, "3,14,159; done");
	nw_strbuf_release(&sb);
}

/* Far past the first allocation, by small and by large pieces; the text stays whole. */
static void grows(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int i = 0; i < 10000; i++)
		nw_strbuf_addf(&sb, "%04d", i % 10000);
	assert_int_equal(sb.len, 40000);
	assert_true(sb.cap > sb.len);
	assert_memory_equal(sb.buf, "0000000100020003", 16);
	assert_memory_equal(sb.buf + 39996, "9999", 5); /* with its NUL */
	char big[5000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	nw_strbuf_addf(&sb, "<%s>", big);
	assert_int_equal(sb.len, 40000 + 5001);
	assert_int_equal(sb.buf[40000], '<');
	assert_int_equal(sb.buf[45000], '>');
	assert_int_equal(sb.buf[45001], '\0');
	assert_int_equal(strlen(sb.buf), sb.len);
	nw_strbuf_release(&sb);
}

/* A formatted piece that exactly fills, or just overflows, the room left. */
static void exact_fit(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_grow(&sb, 10);
	size_t cap = sb.cap;
	char fill[256];
	assert_true(cap > 10 && cap <= sizeof(fill));
	memset(fill, 'a', sizeof(fill));
	fill[cap - 1] = '\0'; /* cap - 1 characters: fits with the NUL */
	nw_strbuf_addf(&sb, "%s", fill);
	assert_int_equal(sb.cap, cap);
	assert_int_equal(sb.len, cap - 1);
	nw_strbuf_addf(&sb, "%c", 'b'); /* one more: must grow */
	assert_true(sb.cap > cap);
	assert_int_equal(sb.len, cap);
	assert_int_equal(sb.buf[cap - 1], 'b');
	assert_int_equal(sb.buf[cap], '\0');
	nw_strbuf_release(&sb);
}

/* Bytes with NULs in them are kept; the length says where the text ends. */
static void binary(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_add(&sb, "a\0b", 3);
	assert_int_equal(sb.len, 3);
	assert_memory_equal(sb.buf, "a\0b", 4);
	nw_strbuf_release(&sb);
}

/* reset keeps the memory; detach hands the text over and leaves the buffer reusable. */
static void reset_detach(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addstr(&sb, "first");
	char *mem = sb.buf;
	nw_strbuf_reset(&sb);
	assert_string_equal(sb.buf, "");
	assert_ptr_equal(sb.buf, mem);
	nw_strbuf_addf(&sb, "%s=%.1f", "x", 2.5);
	char *s = nw_strbuf_detach(&sb);
	assert_string_equal(s, "x=2.5");
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
	assert_int_equal(sb.cap, 0);
	free(s);
	s = nw_strbuf_detach(&sb); /* nothing in it: still a string of its own to free */
	assert_string_equal(s, "");
	free(s);
	nw_strbuf_addstr(&sb, "again");
	assert_string_equal(sb.buf, "again");
	nw_strbuf_release(&sb);
}

/* nw_strbuf_vaddf through a caller's own variadic function. */
static void my_addf(struct nw_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void my_addf(struct nw_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nw_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

static void vaddf(void **state)
{
	(void)state;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	my_addf(&sb, "%s %d %s", "rank", 7, "failed");
	my_addf(&sb, "%s", "");
	assert_string_equal(sb.buf, "rank 7 failed");
	nw_strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty),
		cmocka_unit_test(list),
		cmocka_unit_test(grows),
		cmocka_unit_test(exact_fit),
		cmocka_unit_test(binary),
		cmocka_unit_test(reset_detach),
		cmocka_unit_test(vaddf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
