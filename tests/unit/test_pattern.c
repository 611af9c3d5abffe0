/* SPDX-License-Identifier: Apache-2.0 */
/* Patterns: exact where promised, and a wrong offset or rank order is caught. */
#include <math.h>
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

/*
 * mulsum: every rank's input times its scalar (1 on even ranks, 2 on odd,
 * nccl-tests' ncclVerifiablePremulScalar), summed, is exact in every type
 * and rank count; the plain sum (a scalar that did not arrive) is caught.
 */
static void mulsum_exact_in_every_type(void **state)
{
	(void)state;
	assert_int_equal(nw_redop_find("mulsum"), NW_MULSUM);
	assert_string_equal(nw_redop_name(NW_MULSUM), "mulsum");
	for (int t = 0; t < NW_NDTYPES; t++)
		for (int n = 2; n <= 8; n++) {
			struct nw_pattern p = { .op = NW_REDUCE_SCATTER, .dtype = (enum nw_dtype)t, .redop = NW_MULSUM,
			                        .nranks = n, .count = 40 };
			for (int r = 0; r < n; r++) {
				double want[40], plain[40];
				for (int j = 0; j < 40; j++) {
					double s = 0, u = 0;
					for (int k = 0; k < n; k++) {
						double v = (double)nw_pattern_value(&p, k, (uint64_t)r * 40 + (uint64_t)j);
						s += v * (k % 2 ? 2 : 1);
						u += v;
					}
					/* integer types wrap as the type does */
					unsigned char b[8];
					if (t <= NW_UINT64) {
						int64_t w = (int64_t)s;
						memcpy(b, &w, 8);
						want[j] = nw_dtype_load(p.dtype, b);
						w = (int64_t)u;
						memcpy(b, &w, 8);
						plain[j] = nw_dtype_load(p.dtype, b);
					} else {
						want[j] = s;
						plain[j] = u;
						/* exact: the value survives a round trip through the type */
						nw_dtype_store(p.dtype, b, s);
						assert_true(nw_dtype_load(p.dtype, b) == s);
					}
				}
				assert_int_equal(check(&p, r, want, 40), 0);
				assert_true(check(&p, r, plain, 40) > 0);
			}
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


/*
 * alltoallv as nccl-tests 2.19 runs it (alltoallv.cu, read not copied):
 * rank src walks peers in rank order, sending its next send_count(src, to)
 * elements to each; the receiver appends what each source sends, sources
 * in rank order. Simulated here by walking the send streams.
 */
static void simulate_alltoallv(const struct nw_pattern *p, int r, double *out)
{
	size_t es = nw_dtype_size(p->dtype);
	uint64_t o = 0;
	for (int src = 0; src < p->nranks; src++) {
		uint64_t sent = 0;
		for (int to = 0; to < p->nranks; to++) {
			uint64_t k = nw_alltoallv_count(p->count, es, p->nranks, src, to);
			if (to == r)
				for (uint64_t e = 0; e < k; e++)
					out[o++] = (double)nw_pattern_value(p, src, sent + e);
			sent += k;
		}
	}
}

/* hypercube as nccl-tests runs it: log2(n) rounds, at mask each rank swaps its gathered mask chunks with rank ^ mask. */
static void simulate_hypercube(const struct nw_pattern *p, double *all /* n x (n * count) */)
{
	int n = p->nranks;
	uint64_t c = p->count, m = (uint64_t)n * c;
	for (int r = 0; r < n; r++)
		for (uint64_t e = 0; e < c; e++)
			all[(uint64_t)r * m + (uint64_t)r * c + e] = (double)nw_pattern_value(p, r, e);
	for (int mask = 1; mask < n; mask <<= 1)
		for (int r = 0; r < n; r++) {
			int peer = r ^ mask;
			if (peer < r)
				continue; /* each pair once: both directions at the same time */
			uint64_t rs = (uint64_t)(r & ~(mask - 1)) * c, ps = (uint64_t)(peer & ~(mask - 1)) * c;
			memcpy(all + (uint64_t)peer * m + rs, all + (uint64_t)r * m + rs, (size_t)(mask * c) * sizeof(double));
			memcpy(all + (uint64_t)r * m + ps, all + (uint64_t)peer * m + ps, (size_t)(mask * c) * sizeof(double));
		}
}

/* nccl-tests 2.19's sizes: 4 ranks, 128 B of float: per-peer 0, 16, 32, 64 B (distance 0..3), 112 B in all. */
static void alltoallv_counts_as_nccl_tests(void **state)
{
	(void)state;
	uint64_t used, count = nw_coll_count(NW_ALLTOALLV, 128, 4, 4, &used);
	assert_int_equal(count, 8);
	assert_int_equal(used, 112);
	assert_int_equal(nw_alltoallv_count(8, 4, 4, 0, 0), 0);
	assert_int_equal(nw_alltoallv_count(8, 4, 4, 0, 1), 4);
	assert_int_equal(nw_alltoallv_count(8, 4, 4, 0, 3), 16);
	assert_int_equal(nw_alltoallv_count(8, 4, 4, 3, 0), 4); /* distance (0 - 3) mod 4 = 1 */
	/* hypercube: count per rank rounded to 16 B, the whole buffer is the size, algbw (n-1)/n of it, busbw x1 */
	count = nw_coll_count(NW_HYPERCUBE, 1000, 4, 4, &used);
	assert_int_equal(count, 60);
	assert_int_equal(used, 960);
	assert_true(nw_algbw_factor(NW_HYPERCUBE, 4) == 0.75 && nw_busbw_factor(NW_HYPERCUBE, 4) == 1.0);
	assert_true(nw_busbw_factor(NW_ALLTOALLV, 4) == 0.75 && nw_algbw_factor(NW_ALLTOALLV, 4) == 1.0);
}

static void alltoallv_and_hypercube_verified(void **state)
{
	(void)state;
	int types[] = { NW_FLOAT, NW_INT8, NW_HALF, NW_DOUBLE };
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (int n = 1; n <= 8; n *= 2) {
			struct nw_pattern v = { .op = NW_ALLTOALLV, .dtype = types[t], .nranks = n, .count = 96 };
			for (int r = 0; r < n; r++) {
				uint64_t m = nw_pattern_output_count(&v, r);
				double *out = calloc(m + 1, sizeof(double));
				simulate_alltoallv(&v, r, out);
				assert_int_equal(check(&v, r, out, m), 0);
				if (m) {
					out[m / 2] += 1; /* a planted wrong value */
					assert_int_equal(check(&v, r, out, m), 1);
				}
				free(out);
			}
			struct nw_pattern h = { .op = NW_HYPERCUBE, .dtype = types[t], .nranks = n, .count = 40 };
			uint64_t m = nw_pattern_output_count(&h, 0);
			double *all = calloc((size_t)n * m, sizeof(double));
			simulate_hypercube(&h, all);
			for (int r = 0; r < n; r++)
				assert_int_equal(check(&h, r, all + (uint64_t)r * m, m), 0);
			all[m - 1] += 1;
			assert_int_equal(check(&h, 0, all, m), 1);
			free(all);
		}
}

/*
 * What the kernels of src/gpu/verify.ptx compute with a device check, done
 * on the host (as the fake driver does): the wrong elements of out.
 */
static uint64_t dcheck_count(const struct nw_dcheck *c, const unsigned char *out)
{
	uint64_t wrong = 0;
	size_t ncodes = c->es <= 2 ? (size_t)1 << (8 * c->es) : 0;
	for (size_t b = 0; b < c->nblocks; b++) {
		const struct nw_dcheck_block *bl = &c->blocks[b];
		for (uint64_t j = 0; j < bl->len; j++) {
			const unsigned char *e = out + (bl->start + j) * c->es;
			unsigned k = (unsigned)(j % NW_DCHECK_PERIOD);
			if (c->kind == NW_DCHECK_BITS) {
				uint64_t v = 0;
				memcpy(&v, e, c->es);
				wrong += v != bl->ref[k];
			} else if (c->kind == NW_DCHECK_MAP) {
				size_t code = c->es == 1 ? e[0] : (size_t)(e[0] | e[1] << 8);
				wrong += !((c->map[(k * ncodes + code) / 32] >> (code % 32)) & 1);
			} else {
				float f;
				double got;
				if (c->es == 4) {
					memcpy(&f, e, 4);
					got = f;
				} else {
					memcpy(&got, e, 8);
				}
				wrong += !(fabs(got - bl->rep[k]) <= bl->ts[k] || fabs(got - bl->want[k]) <= bl->ts[k]);
			}
		}
	}
	return wrong;
}

/*
 * The device checks count what the host check counts, for every op, type,
 * reduction and root, on outputs that are right but for planted elements,
 * on the poison of unwritten output, and on noise; and the fill table
 * repeats to the host's fill.
 */
static void device_checks_count_as_host(void **state)
{
	(void)state;
	unsigned seed = 12345;
	for (int op = 0; op < NW_NOPS; op++)
		for (int t = 0; t < NW_NDTYPES; t++)
			for (int ro = 0; ro < NW_NREDOPS; ro++)
				for (int n = 2; n <= 3; n++)
					for (int root = 0; root < n; root += n - 1) {
						if (ro && !nw_coll_get((enum nw_op)op)->has_redop)
							continue;
						struct nw_pattern p = { .op = (enum nw_op)op, .dtype = (enum nw_dtype)t,
						                        .redop = (enum nw_redop)ro, .root = root, .nranks = n,
						                        .count = 29, .seed = 3 };
						size_t es = nw_dtype_size(p.dtype);
						for (int r = 0; r < n; r++) {
							uint64_t tab[NW_DCHECK_PERIOD], m = nw_pattern_input_count(&p, r);
							unsigned char *in = calloc(m + 1, es), *rep = calloc(m + 1, es);
							nw_pattern_fill(&p, r, 0, m, in);
							nw_pattern_fill_table(&p, r, 0, tab);
							for (uint64_t j = 0; j < m; j++)
								memcpy(rep + j * es, &tab[j % NW_DCHECK_PERIOD], es);
							assert_memory_equal(in, rep, m * es);
							free(in);
							free(rep);
							m = nw_pattern_output_count(&p, r);
							if (!m || !nw_pattern_checks_rank(&p, r))
								continue;
							struct nw_dcheck c;
							nw_pattern_dcheck(&p, r, 0, m, &c);
							unsigned char *out = malloc(m * es);
							/* right output: each block's period (the tolerance kinds: the value as stored) */
							for (size_t b = 0; b < c.nblocks; b++)
								for (uint64_t j = 0; j < c.blocks[b].len; j++) {
									unsigned k = j % NW_DCHECK_PERIOD;
									unsigned char *e = out + (c.blocks[b].start + j) * es;
									if (c.kind == NW_DCHECK_BITS)
										memcpy(e, &c.blocks[b].ref[k], es);
									else
										nw_dtype_store(p.dtype, e, c.blocks[b].rep[k]);
								}
							assert_int_equal(nw_pattern_verify(&p, r, 0, m, out), 0);
							assert_int_equal(dcheck_count(&c, out), 0);
							/* planted: a few elements' bytes flipped */
							uint64_t plant[] = { 0, 5, 13, m - 1 };
							for (size_t i = 0; i < 4; i++)
								if (plant[i] < m)
									out[plant[i] * es + es - 1] ^= 0xA5;
							assert_int_equal(dcheck_count(&c, out), nw_pattern_verify(&p, r, 0, m, out));
							/* unwritten (the poison) and noise */
							memset(out, 0x7f, m * es);
							assert_int_equal(dcheck_count(&c, out), nw_pattern_verify(&p, r, 0, m, out));
							for (uint64_t j = 0; j < m * es; j++) {
								seed = seed * 1103515245u + 12345u;
								out[j] = (unsigned char)(seed >> 16);
							}
							assert_int_equal(dcheck_count(&c, out), nw_pattern_verify(&p, r, 0, m, out));
							free(out);
							nw_dcheck_release(&c);
						}
					}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(correct_outputs_pass),
		cmocka_unit_test(swapped_ranks_caught),
		cmocka_unit_test(shifted_offset_caught),
		cmocka_unit_test(avg_tolerance_and_prod),
		cmocka_unit_test(mulsum_exact_in_every_type),
		cmocka_unit_test(unwritten_output_caught),
		cmocka_unit_test(conversions_exact_for_small_ints),
		cmocka_unit_test(alltoallv_counts_as_nccl_tests),
		cmocka_unit_test(alltoallv_and_hypercube_verified),
		cmocka_unit_test(device_checks_count_as_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
