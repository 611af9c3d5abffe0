/* Patterns: exact where promised, and a wrong offset or rank order is caught. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/pattern.h"

/* Build the correct output of a collective for rank r by simulating it. */
static void simulate(const struct nw_pattern *p, int r, double *out)
{
	uint64_t c = p->count;
	int n = p->nranks;
	uint64_t m = nw_pattern_output_count(p, r);
	for (uint64_t j = 0; j < m; j++) {
		switch (p->op) {
		case NW_ALL_GATHER: out[j] = (double)nw_pattern_value(p, (int)(j / c), j % c); break;
		case NW_ALLTOALL: out[j] = (double)nw_pattern_value(p, (int)(j / c), (uint64_t)r * c + j % c); break;
		case NW_SENDRECV: out[j] = (double)nw_pattern_value(p, (r + n - 1) % n, j); break;
		default: {
			double s = 0;
			for (int k = 0; k < n; k++)
				s += (double)nw_pattern_value(p, k, (p->op == NW_REDUCE_SCATTER ? (uint64_t)r * c : 0) + j);
			out[j] = s;
		}
		}
	}
}

static uint64_t check(const struct nw_pattern *p, int r, const double *vals, uint64_t m)
{
	size_t es = nw_dtype_size((enum nw_dtype)p->dtype);
	char *buf = malloc(m * es);
	for (uint64_t j = 0; j < m; j++)
		nw_dtype_store(p->dtype, buf + j * es, vals[j]);
	uint64_t w = nw_pattern_verify(p, r, 0, m, buf);
	free(buf);
	return w;
}

static void correct_outputs_pass(void **state)
{
	(void)state;
	enum nw_op ops[] = { NW_ALL_REDUCE, NW_ALL_GATHER, NW_REDUCE_SCATTER, NW_ALLTOALL, NW_SENDRECV };
	int types[] = { NW_FLOAT, NW_HALF, NW_BFLOAT16, NW_FP8E4M3, NW_FP8E5M2, NW_INT8, NW_UINT8, NW_INT32, NW_DOUBLE };
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
			for (int n = 1; n <= 8; n *= 2) {
				struct nw_pattern p = { .op = ops[o], .dtype = types[t], .redop = NW_SUM, .nranks = n, .count = 100 };
				for (int r = 0; r < n; r++) {
					uint64_t m = nw_pattern_output_count(&p, r);
					double *v = calloc(m, sizeof(double));
					simulate(&p, r, v);
					assert_int_equal(check(&p, r, v, m), 0);
					free(v);
				}
			}
}

static void swapped_ranks_caught(void **state)
{
	(void)state;
	struct nw_pattern p = { .op = NW_ALL_GATHER, .dtype = NW_FLOAT, .nranks = 4, .count = 64 };
	uint64_t m = nw_pattern_output_count(&p, 1);
	double *v = calloc(m, sizeof(double));
	simulate(&p, 1, v);
	/* chunks of ranks 1 and 2 in each other's place */
	for (uint64_t j = 0; j < 64; j++) {
		double t = v[64 + j];
		v[64 + j] = v[128 + j];
		v[128 + j] = t;
	}
	assert_true(check(&p, 1, v, m) >= 60);
	free(v);
}

static void shifted_offset_caught(void **state)
{
	(void)state;
	struct nw_pattern p = { .op = NW_SENDRECV, .dtype = NW_INT32, .nranks = 2, .count = 1000 };
	double *v = calloc(1001, sizeof(double));
	simulate(&p, 0, v);
	memmove(v, v + 1, 1000 * sizeof(double)); /* off by one element */
	assert_true(check(&p, 0, v, 1000) > 900);
	free(v);
}

static void avg_tolerance_and_prod(void **state)
{
	(void)state;
	for (int t = NW_HALF; t <= NW_FP8E5M2; t++) {
		if (t == NW_DOUBLE || t == NW_FLOAT)
			continue;
		struct nw_pattern p = { .op = NW_ALL_REDUCE, .dtype = t, .redop = NW_PROD, .nranks = 8, .count = 64 };
		double v[64];
		for (int j = 0; j < 64; j++) {
			double prod = 1;
			for (int r = 0; r < 8; r++)
				prod *= (double)nw_pattern_value(&p, r, (uint64_t)j);
			v[j] = prod;
		}
		assert_int_equal(check(&p, 0, v, 64), 0);
		v[3] += 1;
		assert_int_equal(check(&p, 0, v, 64), 1);
	}
}

static void unwritten_output_caught(void **state)
{
	(void)state;
	struct nw_pattern p = { .op = NW_ALL_REDUCE, .dtype = NW_FLOAT, .redop = NW_SUM, .nranks = 2, .count = 256 };
	uint32_t *poison = malloc(256 * 4);
	for (int i = 0; i < 256; i++)
		poison[i] = 0x7f7f7f7fu;
	assert_int_equal(nw_pattern_verify(&p, 0, 0, 256, poison), 256);
	free(poison);
}

static void conversions_exact_for_small_ints(void **state)
{
	(void)state;
	for (int t = 0; t < NW_NDTYPES; t++)
		for (int v = -8; v <= 8; v++) {
			if ((t == NW_UINT8 || t == NW_UINT32 || t == NW_UINT64) && v < 0)
				continue;
			char b[8];
			nw_dtype_store(t, b, v);
			assert_true(nw_dtype_load(t, b) == (double)v);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(correct_outputs_pass),
		cmocka_unit_test(swapped_ranks_caught),
		cmocka_unit_test(shifted_offset_caught),
		cmocka_unit_test(avg_tolerance_and_prod),
		cmocka_unit_test(unwritten_output_caught),
		cmocka_unit_test(conversions_exact_for_small_ints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
