/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ncclwatch plugin's periodic log lines as logscan reads them: the
 * key=value tokeniser and the line reader on good and odd input (cut lines,
 * huge numbers, missing fields, binary junk), and the series a log of them
 * makes (duplicates from NCCL's logger and stderr counted once, launcher
 * prefixes, hung lines as a finding).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "parse/ncclog.h"
#include "parse/ncclog_int.h"
#include "util/util.h"

#define GOOD "NCCLWATCH v=1 t=1764627601.003 comm=5eed000000c0ffee name=world rank=0 nranks=8 interval_s=10.000 " \
             "ops=1234 bytes=104857600 busy_pct=31.2 top=all_reduce:412.30,all_gather:198.02 slow_ops=2"

static int parse(const char *s, struct lg_nwline *l)
{
	return lg_nwline_parse(s, strlen(s), l);
}

static void tokens(void **state)
{
	(void)state;
	struct lg_kv kv[4];
	const char *s = "  a=1\tb= c =d e=f=g";
	size_t n = lg_kv_split(s, strlen(s), kv, 4);
	assert_int_equal(n, 4);
	assert_int_equal(kv[0].kn, 1);
	assert_memory_equal(kv[0].v, "1", 1);
	assert_int_equal(kv[1].vn, 0);            /* "b=": empty value */
	assert_int_equal(kv[2].kn, 1);            /* "c": no '=' */
	assert_int_equal(kv[2].vn, 0);
	assert_int_equal(kv[3].kn, 0);            /* "=d": empty key */
	n = lg_kv_split(s, strlen(s), kv, 4);
	assert_int_equal(lg_kv_split("", 0, kv, 4), 0);
	assert_int_equal(lg_kv_split("   \t ", 5, kv, 4), 0);
	double x;
	assert_int_equal(lg_kv_num("412.30", 6, &x), 0);
	assert_true(x > 412.29 && x < 412.31);
	assert_int_equal(lg_kv_num("0", 1, &x), 0);
	assert_int_equal(lg_kv_num("12.", 3, &x), -1);
	assert_int_equal(lg_kv_num(".5", 2, &x), -1);
	assert_int_equal(lg_kv_num("-1", 2, &x), -1);
	assert_int_equal(lg_kv_num("1e9", 3, &x), -1);
	assert_int_equal(lg_kv_num("123456789012345678", 18, &x), 0);
	assert_int_equal(lg_kv_num("1234567890123456789", 19, &x), -1); /* huge: refused, not wrapped */
	assert_int_equal(lg_kv_num("", 0, &x), -1);
}

static void good_line(void **state)
{
	(void)state;
	struct lg_nwline l;
	assert_int_equal(parse(GOOD, &l), 0);
	assert_true(l.comm == 0x5eed000000c0ffeeull);
	assert_string_equal(l.name, "world");
	assert_true(l.rank == 0 && l.nranks == 8 && l.ops == 1234 && l.bytes == 104857600);
	assert_true(l.busy_pct > 31.19 && l.busy_pct < 31.21);
	assert_true(l.exposed_pct < 0 && l.hung == 0);
	assert_int_equal(l.ntop, 2);
	assert_string_equal(l.top[0].op, "all_reduce");
	assert_string_equal(l.top[1].op, "all_gather");
	/* fields added by later plugins are skipped; exposed_pct and hung read */
	assert_int_equal(parse(GOOD " exposed_pct=12.5 future=xyz hung=1", &l), 0);
	assert_true(l.exposed_pct > 12.4 && l.hung == 1);
}

static void odd_lines(void **state)
{
	(void)state;
	struct lg_nwline l;
	static const char *const bad[] = {
		"NCCLWATCH",                                                     /* only the tag */
		"NCCLWATCH v=2 t=1 comm=ab rank=0",                              /* a version we do not know */
		"NCCLWATCH v=1 comm=ab rank=0",                                  /* no time */
		"NCCLWATCH v=1 t=1 rank=0",                                      /* no communicator */
		"NCCLWATCH v=1 t=1 comm=ab",                                     /* no rank */
		"NCCLWATCH v=1 t=1 comm=zz rank=0",                              /* comm not hex */
		"NCCLWATCH v=1 t=1 comm=123456789abcdef01 rank=0",               /* comm longer than 64 bits */
		"NCCLWATCH v=1 t=1 comm=ab rank=99999999999999999999",           /* huge rank */
		"NCCLWATCH v=1 t=1 comm=ab rank=3000000000",                     /* rank past an int */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 ops=-5",                       /* negative count */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 top=all_reduce",               /* top without a figure */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 top=all_reduce:",              /* cut in the figure */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 top=:1.0",                     /* no op */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 top=a:1,b:2,c:3,d:4,e:5",      /* more ops than a line has */
		"NCCLWATCH v=1 t=1 comm=ab rank=0 top=ALL\x01:1",                /* junk in the op */
		"NCCLWATCH v=1 t=1.\x7f\xff comm=ab rank=0",                     /* binary junk in a number */
		"NCCLWATCHv=1 t=1 comm=ab rank=0",                               /* glued tag */
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(bad); i++) {
		if (parse(bad[i], &l) == 0)
			fail_msg("accepted: %s", bad[i]);
	}
	/* a line cut anywhere is refused or read without inventing figures */
	for (size_t cut = 0; cut < strlen(GOOD); cut++) {
		int rc = lg_nwline_parse(GOOD, cut, &l);
		if (rc == 0)
			assert_true(l.ops <= 1234 && l.bytes <= 104857600 && l.ntop <= 2);
	}
	/* the bare minimum */
	assert_int_equal(parse("NCCLWATCH v=1 t=1 comm=ab rank=0", &l), 0);
	assert_true(l.busy_pct < 0 && l.ntop == 0);
}

static void junk_bytes(void **state)
{
	(void)state;
	unsigned char buf[300];
	unsigned seed = 12345;
	struct lg_nwline l;
	for (int round = 0; round < 2000; round++) {
		size_t n = 10 + (size_t)(round % 280);
		memcpy(buf, GOOD, 10);
		for (size_t i = 10; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (unsigned char)(seed >> 16);
		}
		lg_nwline_parse((const char *)buf, n, &l); /* must not crash or read past n */
	}
}

static json_t *scan(const char *text)
{
	struct nw_log *lg = nw_log_new();
	nw_log_feed_buf(lg, text, strlen(text));
	json_t *doc = nw_log_report(lg);
	assert_int_equal(nw_log_input_kind(lg), NW_LOG_INPUT_LOG);
	nw_log_free(lg);
	return doc;
}

static void series(void **state)
{
	(void)state;
	const char *log =
		"[rank0]: Epoch 0 step 100 loss 2.31\n"
		"[rank0]: " GOOD "\n"
		"node1:4242:4300 [0] NCCL INFO " GOOD "\n"                          /* the same line through NCCL's logger */
		"node1: NCCLWATCH v=1 t=1764627611.003 comm=5eed000000c0ffee name=world rank=0 nranks=8 interval_s=10.000 "
		"ops=1000 bytes=1000 busy_pct=20.0 top=all_reduce:400.00 slow_ops=0 hung=1\n"
		"[rank0]: NCCLWATCH v=1 t=garbage comm=5eed000000c0ffee rank=0\n"  /* bad: counted, not used */
		"[rank0]: NCCLWATCH v=1 t=1764627621.003 comm=5eed000000c0ffee name=world rank=0 nranks=8 interval_s=10.000 "
		"ops=0 bytes=0 busy_pct=0.0 slow_ops=0 hung=1\n";
	json_t *doc = scan(log);
	json_t *bw = json_object_get(doc, "bandwidth");
	assert_int_equal(json_array_size(bw), 1);
	json_t *s = json_array_get(bw, 0);
	assert_int_equal(json_integer_value(json_object_get(s, "lines")), 3);
	assert_int_equal(json_integer_value(json_object_get(s, "ops")), 2234);
	assert_int_equal(json_integer_value(json_object_get(s, "hung_lines")), 2);
	assert_string_equal(json_string_value(json_object_get(s, "first_hung")), "2025-12-01T22:20:11Z");
	assert_true(json_real_value(json_object_get(s, "busy_pct_min")) == 0.0);
	assert_true(json_real_value(json_object_get(s, "busy_pct_max")) == 31.2);
	json_t *ar = json_array_get(json_object_get(s, "busbw"), 0);
	assert_string_equal(json_string_value(json_object_get(ar, "op")), "all_reduce");
	assert_int_equal(json_integer_value(json_object_get(ar, "samples")), 2);
	assert_true(json_real_value(json_object_get(ar, "median_gbs")) == 406.15);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "input"), "ncclwatch_lines")), 4);
	int hang = 0;
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(doc, "diagnoses"), i, d)
		hang |= !strcmp(json_string_value(json_object_get(d, "id")), "plugin-hang");
	assert_true(hang);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tokens),
		cmocka_unit_test(good_line),
		cmocka_unit_test(odd_lines),
		cmocka_unit_test(junk_bytes),
		cmocka_unit_test(series),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
