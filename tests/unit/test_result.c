/* SPDX-License-Identifier: Apache-2.0 */
/* Formulas, number rendering and table rows against nccl-tests' own rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "model/coll.h"
#include "model/result.h"

static struct nw_row mkrow(const char *op, uint64_t size, uint64_t count, const char *redop,
                           int root, int nranks, int inplace, double t, int64_t wrong)
{
	struct nw_row r;
	memset(&r, 0, sizeof(r));
	strcpy(r.op, op);
	strcpy(r.dtype, "float");
	strcpy(r.redop, redop);
	r.root = root;
	r.size_bytes = size;
	r.count = count;
	r.nranks = nranks;
	r.inplace = inplace;
	r.time_us = t;
	r.wrong = wrong;
	nw_row_compute_bw(&r);
	return r;
}

/* Rows copied from tests/fixtures/nccltests/nt_*.txt (nccl-tests 2.19.6 on 2 x H200, 2 ranks). */
static void row_all_reduce_small(void **state)
{
	(void)state;
	struct nw_row a = mkrow("all_reduce", 8, 2, "sum", -1, 2, 0, 11.81, 0);
	struct nw_row b = mkrow("all_reduce", 8, 2, "sum", -1, 2, 1, 11.43, 0);
	char buf[256];
	nw_nt_format_row(buf, sizeof(buf), &a, &b);
	assert_string_equal(buf, "           8             2     float     sum      -1    11.81    0.00    0.00       0    11.43    0.00    0.00       0");
}

static void row_all_reduce_large(void **state)
{
	(void)state;
	struct nw_row a = mkrow("all_reduce", 4294967296ULL, 1073741824ULL, "sum", -1, 2, 0, 12644.1, 0);
	struct nw_row b = mkrow("all_reduce", 4294967296ULL, 1073741824ULL, "sum", -1, 2, 1, 12609.8, 0);
	char buf[256];
	nw_nt_format_row(buf, sizeof(buf), &a, &b);
	assert_string_equal(buf, "  4294967296    1073741824     float     sum      -1  12644.1  339.68  339.68       0  12609.8  340.61  340.61       0");
}

static void row_alltoall_na(void **state)
{
	(void)state;
	struct nw_row a = mkrow("alltoall", 4294967296ULL, 536870912ULL, "none", -1, 2, 0, 6372.20, 0);
	struct nw_row b = mkrow("alltoall", 4294967296ULL, 536870912ULL, "none", -1, 2, 1, 5917.73, -1);
	char buf[256];
	nw_nt_format_row(buf, sizeof(buf), &a, &b);
	assert_string_equal(buf, "  4294967296     536870912     float    none      -1  6372.20  674.02  337.01       0  5917.73  725.78  362.89    N/A");
}

static void busbw_factors(void **state)
{
	(void)state;
	assert_true(nw_busbw_factor(NW_ALL_REDUCE, 2) == 1.0);
	assert_true(nw_busbw_factor(NW_ALL_REDUCE, 8) == 1.75);
	assert_true(nw_busbw_factor(NW_ALL_GATHER, 4) == 0.75);
	assert_true(nw_busbw_factor(NW_BROADCAST, 8) == 1.0);
	assert_true(nw_busbw_factor(NW_SENDRECV, 8) == 1.0);
	assert_true(nw_busbw_factor(NW_ALLTOALL, 2) == 0.5);
}

static void counts(void **state)
{
	(void)state;
	uint64_t used;
	assert_int_equal(nw_coll_count(NW_ALL_GATHER, 1024, 4, 2, &used), 128);
	assert_int_equal(used, 1024);
	assert_int_equal(nw_coll_count(NW_ALL_REDUCE, 1024, 4, 2, &used), 256);
	assert_int_equal(nw_coll_count(NW_ALL_GATHER, 8, 4, 8, &used), 0);
	assert_int_equal(nw_coll_count(NW_REDUCE_SCATTER, 1000, 4, 3, &used), 83);
	assert_int_equal(used, 996);
}

/* The peak of an op: its highest busbw, whatever the placement; none for an op not run. */
static void peak(void **state)
{
	(void)state;
	struct nw_run run;
	nw_run_init(&run);
	struct nw_row rows[] = {
		mkrow("all_reduce", 1048576, 262144, "sum", -1, 2, 0, 15.11, 0),
		mkrow("all_reduce", 1048576, 262144, "sum", -1, 2, 1, 14.90, 0),
		mkrow("all_reduce", 4194304, 1048576, "sum", -1, 2, 0, 35.62, 0),
		mkrow("all_gather", 4194304, 524288, "none", -1, 2, 0, 30.00, 0),
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		nw_run_add(&run, &rows[i]);
	const struct nw_row *p = nw_run_peak(&run, "all_reduce");
	assert_non_null(p);
	assert_int_equal(p->size_bytes, 4194304);
	assert_int_equal(p->inplace, 0);
	assert_ptr_equal(nw_run_peak(&run, "all_gather"), &run.rows[3]);
	assert_null(nw_run_peak(&run, "broadcast"));
	nw_run_release(&run);
}

/*
 * nccl-tests' per-iteration summary: the first row of an -I 1 -K 2 run it
 * wrote (reference h200x1-formats/nt_ar_I.json, 8 B out-of-place).
 */
static void iter_stats(void **state)
{
	(void)state;
	static const double times[20] = { 12.064, 8.608, 4.192, 6.688, 7.232, 5.824, 6.656, 5.664, 5.76, 6.08,
	                                   5.888, 6.592, 5.472, 5.536, 6.272, 4.992, 8.16, 6.08, 6.336, 6.528 };
	struct nw_row r = mkrow("all_reduce", 8, 2, "sum", -1, 1, 0, 7.1326, 0);
	struct nw_iter_stats st;
	assert_int_equal(nw_row_iter_stats(&r, &st), -1); /* none recorded */
	r.iter_us = (double *)times;
	r.niter = 20;
	r.iter_skip = 2;
	assert_int_equal(nw_row_iter_stats(&r, &st), 0);
	assert_int_equal(st.n, 18);
	assert_float_equal(st.min, 4.192, 1e-6);
	assert_float_equal(st.max, 8.16, 1e-6);
	assert_float_equal(st.avg, 6.108444, 1e-6);
	assert_float_equal(st.p50, 6.08, 1e-6);
	assert_float_equal(st.p95, 8.16, 1e-6);
	assert_float_equal(st.p99, 8.16, 1e-6);
	assert_float_equal(st.stdev, 0.839887, 1e-6);
	assert_float_equal(st.cv_pct, 13.7496, 1e-4);
	char line[512];
	r.iter_us = (double *)times;
	nw_nt_format_row(line, sizeof(line), &r, NULL);
	assert_string_equal(line, "           8             2     float     sum      -1     7.13    0.00    0.00       0     4.19     8.16     8.16    13.75");
	r.iter_skip = 20; /* every one skipped: no summary */
	assert_int_equal(nw_row_iter_stats(&r, &st), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(row_all_reduce_small),
		cmocka_unit_test(row_all_reduce_large),
		cmocka_unit_test(row_alltoall_na),
		cmocka_unit_test(busbw_factors),
		cmocka_unit_test(counts),
		cmocka_unit_test(peak),
		cmocka_unit_test(iter_stats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
