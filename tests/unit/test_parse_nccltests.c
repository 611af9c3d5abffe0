/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-tests output parser: real outputs, launcher transformations, old layouts, garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/result.h"
#include "parse/nccltests.h"
#include "util/util.h"

static char *fixture_path(const char *name)
{
	const char *src = getenv("SRCDIR");
	return nw_asprintf("%s/tests/fixtures/nccltests/%s", src ? src : ".", name);
}

static int parse_fixture(const char *name, struct nw_run **runs, size_t *unparsed)
{
	char *p = fixture_path(name);
	char err[NW_ERRLEN] = "";
	int n = nw_nt_parse_path(p, runs, unparsed, err, sizeof(err));
	if (n < 0)
		fail_msg("%s: %s", p, err);
	free(p);
	return n;
}

static void free_runs(struct nw_run *runs, int n)
{
	for (int i = 0; i < n; i++)
		nw_run_release(&runs[i]);
	free(runs);
}

/* Re-render every row pair of a run and compare with the file's data lines, byte for byte. */
static void check_roundtrip(const char *name, const struct nw_run *run, const char *prefix)
{
	char *p = fixture_path(name);
	size_t len;
	char *text = nw_read_file(p, 1 << 20, &len);
	assert_non_null(text);
	size_t plen = strlen(prefix), row = 0;
	int lines = 0;
	char *cur = text;
	while (cur && *cur) {
		char *nl = strchr(cur, '\n');
		if (nl)
			*nl = '\0';
		const char *l = cur;
		if (!strncmp(l, prefix, plen))
			l += plen;
		if (l[0] == ' ' && strspn(l, " ") < 13 && l[strspn(l, " ")] >= '0' && l[strspn(l, " ")] <= '9') {
			char buf[512];
			assert_true(row + 1 < run->nrows);
			const struct nw_row *a = &run->rows[row], *b = &run->rows[row + 1];
			assert_int_equal(a->inplace, 0);
			assert_int_equal(b->inplace, 1);
			nw_nt_format_row(buf, sizeof(buf), a, b);
			assert_string_equal(buf, l);
			row += 2;
			lines++;
		}
		cur = nl ? nl + 1 : NULL;
	}
	assert_int_equal(row, run->nrows);
	assert_true(lines > 10);
	free(text);
	free(p);
}

static void check_header(const struct nw_run *run, const char *op, double avg_reported)
{
	assert_string_equal(run->h.backend, "nccl-tests");
	assert_string_equal(run->h.source, "import");
	assert_string_equal(run->h.nccl_version, "2.28.9");
	assert_string_equal(run->h.host, "vm");
	assert_string_equal(run->h.gpus, "2 x NVIDIA H200");
	assert_int_equal(run->h.nranks, 2);
	assert_int_equal(run->h.nhosts, 1);
	assert_non_null(strstr(run->h.input, "tests/fixtures/nccltests/"));
	for (size_t i = 0; i < run->nrows; i++) {
		assert_string_equal(run->rows[i].op, op);
		assert_int_equal(run->rows[i].nranks, 2);
	}
	/* nccl-tests averages unrounded values; the rounded ones agree to 0.001 */
	double avg = nw_run_avg_busbw(run);
	assert_true(avg > avg_reported - 0.002 && avg < avg_reported + 0.002);
	json_t *v = json_object_get(run->h.extra, "avg_busbw_reported");
	assert_true(json_is_real(v));
	assert_true(json_real_value(v) == avg_reported);
}

static void reference_outputs(void **state)
{
	(void)state;
	static const struct {
		const char *file, *op;
		double avg;
		size_t rows;
	} refs[] = {
		{ "nt_all_reduce.txt", "all_reduce", 111.374, 62 },
		{ "nt_all_gather.txt", "all_gather", 110.683, 24 },
		{ "nt_reduce_scatter.txt", "reduce_scatter", 108.21, 24 },
		{ "nt_broadcast.txt", "broadcast", 159.236, 24 },
		{ "nt_alltoall.txt", "alltoall", 125.09, 24 },
		{ "nt_sendrecv.txt", "sendrecv", 141.108, 24 },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(refs); i++) {
		struct nw_run *runs;
		size_t unparsed = 99;
		int n = parse_fixture(refs[i].file, &runs, &unparsed);
		assert_int_equal(n, 1);
		assert_int_equal(unparsed, 0);
		assert_int_equal(runs[0].nrows, refs[i].rows);
		check_header(&runs[0], refs[i].op, refs[i].avg);
		check_roundtrip(refs[i].file, &runs[0], "");
		free_runs(runs, n);
	}
}

static void sendrecv_na_and_broadcast_root(void **state)
{
	(void)state;
	struct nw_run *runs;
	int n = parse_fixture("nt_sendrecv.txt", &runs, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(runs[0].rows[0].wrong, 0);
	assert_int_equal(runs[0].rows[1].wrong, -1); /* N/A */
	assert_true(runs[0].rows[1].time_us == 17.11);
	free_runs(runs, n);
	n = parse_fixture("nt_broadcast.txt", &runs, NULL);
	assert_int_equal(runs[0].rows[0].root, 0);
	assert_string_equal(runs[0].rows[0].redop, "none");
	free_runs(runs, n);
}

static void launcher_prefixes(void **state)
{
	(void)state;
	struct nw_run *runs;
	size_t unparsed = 99;
	int n = parse_fixture("xf_all_reduce_ompi_tagged.txt", &runs, &unparsed);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	check_header(&runs[0], "all_reduce", 111.374);
	check_roundtrip("xf_all_reduce_ompi_tagged.txt", &runs[0], "[1,0]<stdout>:");
	free_runs(runs, n);
	n = parse_fixture("xf_broadcast_pdsh.txt", &runs, &unparsed);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	check_roundtrip("xf_broadcast_pdsh.txt", &runs[0], "gpu-node-07: ");
	free_runs(runs, n);
}

static void several_runs(void **state)
{
	(void)state;
	static const char *ops[] = { "all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv" };
	struct nw_run *runs;
	int n = parse_fixture("xf_six_concatenated.txt", &runs, NULL);
	assert_int_equal(n, 6);
	for (int i = 0; i < n; i++)
		assert_string_equal(runs[i].rows[0].op, ops[i]);
	free_runs(runs, n);
}

static void processes_repeating_header(void **state)
{
	(void)state;
	const char *files[] = { "xf_sendrecv_two_procs_tagged.txt", "xf_all_gather_two_procs_untagged.txt" };
	for (int f = 0; f < 2; f++) {
		struct nw_run *runs;
		size_t unparsed = 99;
		int n = parse_fixture(files[f], &runs, &unparsed);
		assert_int_equal(n, 2);
		assert_int_equal(unparsed, 0);
		assert_int_equal(runs[0].nrows, 24);
		assert_int_equal(runs[1].nrows, 24);
		assert_int_equal(runs[0].h.nranks, 2);
		assert_string_equal(runs[0].h.gpus, "2 x NVIDIA H200");
		for (size_t i = 0; i < runs[0].nrows; i++) {
			assert_int_equal(runs[0].rows[i].size_bytes, runs[1].rows[i].size_bytes);
			assert_true(runs[0].rows[i].time_us == runs[1].rows[i].time_us);
		}
		free_runs(runs, n);
	}
}

/* The reference NCCL_DEBUG=INFO log: its one row is cut by NCCL lines printed mid-row. */
static void row_cut_by_nccl_log(void **state)
{
	(void)state;
	const char *src = getenv("SRCDIR");
	char *p = nw_asprintf("%s/tests/fixtures/logs/h200x2_allreduce_info.log", src ? src : ".");
	struct nw_run *runs;
	size_t unparsed = 99;
	char err[NW_ERRLEN];
	int n = nw_nt_parse_path(p, &runs, &unparsed, err, sizeof(err));
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	assert_int_equal(runs[0].nrows, 2);
	assert_int_equal(runs[0].rows[0].size_bytes, 67108864);
	assert_true(runs[0].rows[0].time_us == 261.74);
	assert_true(runs[0].rows[0].busbw_gbs == 256.40);
	assert_true(runs[0].rows[1].time_us == 262.80);
	assert_int_equal(runs[0].rows[1].wrong, 0);
	char buf[256];
	nw_nt_format_row(buf, sizeof(buf), &runs[0].rows[0], &runs[0].rows[1]);
	assert_string_equal(buf, "    67108864      16777216     float     sum      -1   261.74  256.40  256.40       0   262.80  255.36  255.36       0");
	free_runs(runs, n);
	free(p);
}

static int parse_text(const char *text, struct nw_run **runs, size_t *unparsed)
{
	char err[NW_ERRLEN];
	return nw_nt_parse_buf(text, strlen(text), "inline", runs, unparsed, err, sizeof(err));
}

/*
 * Layout of nccl-tests before the root column and #wrong (an "error" column
 * of max deviations); values are the reference all_reduce's first rows.
 */
static void old_error_column(void **state)
{
	(void)state;
	const char *text =
		"# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
		"#\n"
		"# Using devices\n"
		"#   Rank  0 Pid    643 on         vm device  0 [0x06] NVIDIA H200\n"
		"#   Rank  1 Pid    643 on         vm device  1 [0x07] NVIDIA H200\n"
		"#\n"
		"#                                                     out-of-place                       in-place\n"
		"#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
		"#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
		"           8             2   float     sum    11.81    0.00    0.00  0e+00    11.43    0.00    0.00  0e+00\n"
		"          16             4   float     sum    11.55    0.00    0.00  0e+00    12.12    0.00    0.00  0e+00\n"
		"# Out of bounds values : 0 OK\n"
		"# Avg bus bandwidth    : 0 \n";
	struct nw_run *runs;
	size_t unparsed = 99;
	int n = parse_text(text, &runs, &unparsed);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	assert_int_equal(runs[0].nrows, 4);
	assert_int_equal(runs[0].h.nranks, 2);
	assert_string_equal(runs[0].h.host, "vm");
	assert_string_equal(runs[0].rows[0].op, "unknown");
	assert_int_equal(runs[0].rows[0].root, -1);
	assert_int_equal(runs[0].rows[0].wrong, 0); /* footer said 0 out of bounds */
	assert_true(runs[0].rows[3].time_us == 12.12);
	assert_true(json_is_true(json_object_get(runs[0].h.extra, "error_column")));
	free_runs(runs, n);
}

/* Rows with one placement only: out-of-place columns, or in-place columns after 32 blanks. */
static void one_placement(void **state)
{
	(void)state;
	char text[1024];
	struct nw_row r;
	memset(&r, 0, sizeof(r));
	nw_strlcpy(r.op, "all_reduce", sizeof(r.op));
	nw_strlcpy(r.dtype, "float", sizeof(r.dtype));
	nw_strlcpy(r.redop, "sum", sizeof(r.redop));
	r.root = -1;
	r.size_bytes = 1024;
	r.count = 256;
	r.time_us = 12.08;
	r.algbw_gbs = r.busbw_gbs = 0.08;
	r.wrong = 0;
	char a[256], b[256];
	nw_nt_format_row(a, sizeof(a), &r, NULL);
	nw_nt_format_row(b, sizeof(b), NULL, &r);
	snprintf(text, sizeof(text), "# Collective test starting: all_reduce_perf\n%s\n%s\n", a, b);
	struct nw_run *runs;
	size_t unparsed = 99;
	int n = parse_text(text, &runs, &unparsed);
	assert_int_equal(unparsed, 0);
	/* the second row's size is not above the first: another table */
	assert_int_equal(n, 2);
	assert_int_equal(runs[0].nrows, 1);
	assert_int_equal(runs[0].rows[0].inplace, 0);
	assert_int_equal(runs[1].rows[0].inplace, 1);
	assert_true(runs[1].rows[0].time_us == 12.08);
	free_runs(runs, n);
}

/* nccl-tests -J (JSON file version 2, keys as nccl-tests writes them), reference values. */
static void json_output(void **state)
{
	(void)state;
	const char *text =
		"{\"version\":2,\"start_time\":\"2026-11-30 11:00:00\",\"args\":[\"./build/all_reduce_perf\",\"-g\",\"2\"],"
		"\"env\":[],\"nccl_version\":22809,\"config\":{\"nthreads\":1,\"ngpus\":2,\"minimum_bytes\":8,"
		"\"maximum_bytes\":16,\"step_factor\":2,\"warmup_iters\":5,\"iterations\":20,\"aggregated_iterations\":1,"
		"\"validation\":1,\"graph\":0,\"blocking_collectives\":\"false\",\"devices\":["
		"{\"rank\":0,\"group\":0,\"pid\":643,\"hostname\":\"vm\",\"device\":0,\"device_hex\":\"0000:00:06\",\"device_info\":\"NVIDIA H200\"},"
		"{\"rank\":1,\"group\":0,\"pid\":643,\"hostname\":\"vm\",\"device\":1,\"device_hex\":\"0000:00:07\",\"device_info\":\"NVIDIA H200\"}]},"
		"\"results\":[{\"size\":8,\"count\":2,\"type\":\"float\",\"redop\":\"sum\",\"root\":\"    -1\","
		"\"out_of_place\":{\"time\":11.810000,\"alg_bw\":0.000677,\"bus_bw\":0.000677,\"nwrong\":0.000000},"
		"\"in_place\":{\"time\":11.430000,\"alg_bw\":0.000700,\"bus_bw\":0.000700,\"nwrong\":null},"
		"\"actual_iterations\":20,\"experiment_name\":\"\"}],"
		"\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":0.000689,\"okay\":\"unchecked\"},"
		"\"errors\":[],\"end_time\":\"2026-11-30 11:00:01\"}\n";
	struct nw_run *runs;
	size_t unparsed = 99;
	int n = parse_text(text, &runs, &unparsed);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	assert_int_equal(runs[0].nrows, 2);
	assert_string_equal(runs[0].rows[0].op, "all_reduce");
	assert_string_equal(runs[0].h.nccl_version, "2.28.9");
	assert_string_equal(runs[0].h.gpus, "2 x NVIDIA H200");
	assert_int_equal(runs[0].h.nranks, 2);
	assert_int_equal(runs[0].rows[0].root, -1);
	assert_int_equal(runs[0].rows[0].wrong, 0);
	assert_int_equal(runs[0].rows[1].wrong, -1);
	char buf[256];
	nw_nt_format_row(buf, sizeof(buf), &runs[0].rows[0], &runs[0].rows[1]);
	assert_string_equal(buf, "           8             2     float     sum      -1    11.81    0.00    0.00       0    11.43    0.00    0.00    N/A");
	free_runs(runs, n);
	/* a truncated document: no run, counted, no crash */
	n = nw_nt_parse_buf(text, 200, "cut", &runs, &unparsed, NULL, 0);
	assert_int_equal(n, 0);
	assert_int_equal(unparsed, 1);
	free(runs);
}

static void garbage(void **state)
{
	(void)state;
	size_t len = 300000;
	char *buf = nw_malloc(len);
	uint32_t x = 12345;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (char)(x >> 16);
	}
	struct nw_run *runs;
	size_t unparsed = 0;
	int n = nw_nt_parse_buf(buf, len, "random", &runs, &unparsed, NULL, 0);
	assert_true(n >= 0);
	assert_true(unparsed > 0);
	free_runs(runs, n);
	/* a 100 KB line, NUL bytes, then a valid header and row */
	memset(buf, 'a', 100000);
	buf[100000] = '\n';
	memcpy(buf + 100001, "\0\0\0 #\n", 6);
	const char *tail = "# Collective test starting: all_reduce_perf\n"
	                   "           8             2     float     sum      -1    11.81    0.00    0.00       0    11.43    0.00    0.00       0\n";
	memcpy(buf + 100007, tail, strlen(tail));
	n = nw_nt_parse_buf(buf, 100007 + strlen(tail), "mixed", &runs, &unparsed, NULL, 0);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 2);
	assert_int_equal(runs[0].nrows, 2);
	free_runs(runs, n);
	free(buf);
}

static void truncated_and_missing(void **state)
{
	(void)state;
	char *p = fixture_path("nt_all_reduce.txt");
	size_t len;
	char *text = nw_read_file(p, 1 << 20, &len);
	char *cut = strstr(text, "   536870912");
	assert_non_null(cut);
	struct nw_run *runs;
	size_t unparsed = 0;
	int n = nw_nt_parse_buf(text, (size_t)(cut - text) + 40, "cut", &runs, &unparsed, NULL, 0);
	assert_int_equal(n, 1);
	assert_int_equal(runs[0].nrows, 52);
	assert_int_equal(unparsed, 1);
	free_runs(runs, n);
	free(text);
	free(p);
	char err[NW_ERRLEN] = "";
	assert_int_equal(nw_nt_parse_path("/nonexistent/nt.txt", &runs, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'/nonexistent/nt.txt'"));
	n = nw_nt_parse_buf("", 0, "empty", &runs, &unparsed, NULL, 0);
	assert_int_equal(n, 0);
	free(runs);
}

/* MPICH's and Intel MPI's -prepend-rank: "[0] " before every line, and again inside each row where it was flushed. */
static void prepend_rank_tags(void **state)
{
	(void)state;
	struct nw_run *runs;
	size_t unparsed;
	int n = parse_fixture("xf_all_reduce_impi_prepend_rank.txt", &runs, &unparsed);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	assert_int_equal(runs[0].nrows, 62);
	assert_string_equal(runs[0].h.nccl_version, "2.28.9");
	assert_string_equal(runs[0].rows[0].op, "all_reduce");
	assert_int_equal(runs[0].rows[0].root, -1);
	assert_true(runs[0].rows[0].time_us > 11.80 && runs[0].rows[0].time_us < 11.82);
	free_runs(runs, n);
}

/* NCCL's own banner inside an nccl-tests output whose header has no nccl-library code: the run's version, understood. */
static void banner_version(void **state)
{
	(void)state;
	const char *src = getenv("SRCDIR");
	char *p = nw_asprintf("%s/tests/fixtures/corpus/018-nccl-tests-h800-broadcast-2gpu-warn.txt", src ? src : ".");
	struct nw_run *runs;
	size_t unparsed;
	char err[NW_ERRLEN] = "";
	int n = nw_nt_parse_path(p, &runs, &unparsed, err, sizeof(err));
	assert_int_equal(n, 1);
	assert_string_equal(runs[0].h.nccl_version, "2.19.4");
	free_runs(runs, n);
	free(p);
	/* a header's nccl-library code wins over a banner */
	const char *text = "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\nNCCL version 2.19.4+cuda12.2\n";
	n = nw_nt_parse_buf(text, strlen(text), "x", &runs, &unparsed, err, sizeof(err));
	assert_int_equal(unparsed, 0);
	free_runs(runs, n);
}

/* Two tables without headers between them: each keeps its own footer ("Out of bounds values : 2 FAILED" stays with the first). */
static void tables_keep_their_footers(void **state)
{
	(void)state;
	struct nw_run *runs;
	size_t unparsed;
	int n = parse_fixture("xf_two_tables_first_failed_no_header.txt", &runs, &unparsed);
	assert_int_equal(n, 2);
	const json_t *x0 = runs[0].h.extra, *x1 = runs[1].h.extra;
	assert_int_equal(json_integer_value(json_object_get(x0, "out_of_bounds_reported")), 2);
	assert_true(json_real_value(json_object_get(x0, "avg_busbw_reported")) > 128.9);
	assert_int_equal(runs[0].nrows, 2);
	assert_int_equal(runs[0].rows[0].wrong, 1);
	assert_int_equal(json_integer_value(json_object_get(x1, "out_of_bounds_reported")), 0);
	assert_true(json_real_value(json_object_get(x1, "avg_busbw_reported")) < 110.7);
	assert_null(json_object_get(x1, "error_column"));
	assert_null(json_object_get(x0, "processes_repeating_header"));
	assert_int_equal(runs[1].nrows, 24);
	assert_int_equal(runs[1].rows[0].wrong, 0);
	free_runs(runs, n);
}

/* A directory is refused by name; nw_nt_parse_dir reads every file in it. */
static void directory(void **state)
{
	(void)state;
	const char *src = getenv("SRCDIR");
	char *dir = nw_asprintf("%s/tests/fixtures/nccltests", src ? src : ".");
	struct nw_run *runs;
	size_t unparsed;
	char err[NW_ERRLEN] = "";
	assert_int_equal(nw_nt_parse_path(dir, &runs, &unparsed, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is a directory"));
	int n = nw_nt_parse_dir(dir, &runs, &unparsed, err, sizeof(err));
	assert_true(n >= 6 + 6);
	int from_ar = 0;
	for (int i = 0; i < n; i++)
		from_ar += strstr(runs[i].h.input, "/nt_all_reduce.txt") != NULL;
	assert_int_equal(from_ar, 1);
	free_runs(runs, n);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_outputs),
		cmocka_unit_test(sendrecv_na_and_broadcast_root),
		cmocka_unit_test(launcher_prefixes),
		cmocka_unit_test(several_runs),
		cmocka_unit_test(processes_repeating_header),
		cmocka_unit_test(row_cut_by_nccl_log),
		cmocka_unit_test(old_error_column),
		cmocka_unit_test(one_placement),
		cmocka_unit_test(json_output),
		cmocka_unit_test(garbage),
		cmocka_unit_test(truncated_and_missing),
		cmocka_unit_test(prepend_rank_tags),
		cmocka_unit_test(banner_version),
		cmocka_unit_test(tables_keep_their_footers),
		cmocka_unit_test(directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
