/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pattern: the data every rank sends, and the result every rank must see,
 * computed independently of the collective under test.
 *
 * Element i of rank r's input is a small integer v(r, i) that depends on
 * both r and i, so a chunk at the wrong offset or from the wrong rank is
 * caught, not only a wrong sum. Values are small enough that every
 * partial sum or product is exact in the data type, so results compare
 * exactly (avg excepted: compared with a tolerance for floating types).
 */
#ifndef NW_PATTERN_H
#define NW_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "comm/backend.h"
#include "model/coll.h"

struct nw_pattern {
	enum nw_op op;
	enum nw_dtype dtype;
	enum nw_redop redop; /* ignored by ops without one */
	int root;
	int nranks;
	uint64_t count;  /* nccl-tests' per-rank count (chunk size for split ops) */
	uint32_t seed;
	int pair;        /* sendrecv between pair_a and pair_b only */
	int pair_a, pair_b;
};

/* The input value of rank r at element i (a small integer). */
int64_t nw_pattern_value(const struct nw_pattern *p, int r, uint64_t i);

/* Elements in the input (send) buffer of rank r, and in its output. */
uint64_t nw_pattern_input_count(const struct nw_pattern *p, int r);
uint64_t nw_pattern_output_count(const struct nw_pattern *p, int r);
/* 1 when rank r's output is defined (e.g. only the root's for reduce/gather). */
int nw_pattern_checks_rank(const struct nw_pattern *p, int r);

/* Write rank r's input elements [first, first+n) as dtype into dst. */
void nw_pattern_fill(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, void *dst);

/*
 * Count the elements of out (rank r's output elements [first, first+n),
 * as dtype) that differ from what the collective must produce.
 */
uint64_t nw_pattern_verify(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, const void *out);

/*
 * For checks on the device: the period's encodings of rank r's input from
 * element first (element first + j holds tab[j mod NW_DCHECK_PERIOD],
 * zero-extended to 64 bits).
 */
void nw_pattern_fill_table(const struct nw_pattern *p, int r, uint64_t first, uint64_t tab[NW_DCHECK_PERIOD]);

/*
 * The device check that counts exactly what nw_pattern_verify(p, r, first,
 * n, out) counts (backend.h says what each kind compares). out is filled;
 * nw_dcheck_release frees what it holds.
 */
void nw_pattern_dcheck(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, struct nw_dcheck *out);
void nw_dcheck_release(struct nw_dcheck *c);

/* Element conversion (exposed for tests): double <-> dtype bits. */
void nw_dtype_store(enum nw_dtype dtype, void *dst, double v);
double nw_dtype_load(enum nw_dtype dtype, const void *src);

#endif
