/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap_math: union and intersection of kernel intervals (see
 * overlap_math.h). Everything happens in the caller's array: clip, split by
 * kind, sort each kind by start, merge overlaps in place, then walk the two
 * merged lists together for their intersection.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/overlap_math.h"

static int by_start(const void *a, const void *b)
{
	const struct nwo_iv *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Clip to the window and drop empty intervals; returns how many are left (at the front). */
static size_t clip(struct nwo_iv *iv, size_t n, uint64_t lo, uint64_t hi)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct nwo_iv v = iv[i];
		if (v.start < lo)
			v.start = lo;
		if (v.end > hi)
			v.end = hi;
		if (v.end > v.start)
			iv[k++] = v;
	}
	return k;
}

/* Move compute intervals before NCCL ones; returns the number of compute intervals. */
static size_t split(struct nwo_iv *iv, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!iv[i].is_nccl) {
			struct nwo_iv t = iv[k];
			iv[k++] = iv[i];
			iv[i] = t;
		}
	}
	return k;
}

/* Sort by start and merge overlapping or touching intervals in place; returns the count and sets *total to their length. */
static size_t merge(struct nwo_iv *iv, size_t n, uint64_t *total)
{
	size_t k = 0;
	*total = 0;
	if (!n)
		return 0;
	qsort(iv, n, sizeof(*iv), by_start);
	for (size_t i = 1; i < n; i++) {
		if (iv[i].start <= iv[k].end) {
			if (iv[i].end > iv[k].end)
				iv[k].end = iv[i].end;
		} else {
			iv[++k] = iv[i];
		}
	}
	for (size_t i = 0; i <= k; i++)
		*total += iv[i].end - iv[i].start;
	return k + 1;
}

/* Length of the intersection of two sorted, disjoint lists. */
static uint64_t overlap_len(const struct nwo_iv *a, size_t na, const struct nwo_iv *b, size_t nb)
{
	uint64_t sum = 0;
	size_t i = 0, j = 0;
	while (i < na && j < nb) {
		uint64_t lo = a[i].start > b[j].start ? a[i].start : b[j].start;
		uint64_t hi = a[i].end < b[j].end ? a[i].end : b[j].end;
		if (hi > lo)
			sum += hi - lo;
		if (a[i].end < b[j].end)
			i++;
		else
			j++;
	}
	return sum;
}

void nwo_compute(struct nwo_iv *iv, size_t n, uint64_t win_start, uint64_t win_end, struct nwo_result *r)
{
	memset(r, 0, sizeof(*r));
	if (win_end <= win_start)
		return;
	r->wall_ns = win_end - win_start;
	n = clip(iv, n, win_start, win_end);
	size_t nc = split(iv, n);
	size_t mc = merge(iv, nc, &r->compute_ns);
	size_t mn = merge(iv + nc, n - nc, &r->nccl_ns);
	r->exposed_ns = r->nccl_ns - overlap_len(iv, mc, iv + nc, mn);
}

int nwo_is_nccl_kernel(const char *name)
{
	if (!name)
		return 0;
	if (name[0] == '_' && name[1] == 'Z') {
		name += 2;
		while (*name >= '0' && *name <= '9')
			name++;
	}
	return !strncmp(name, "ncclKernel", 10) || !strncmp(name, "ncclDevKernel", 13);
}
