/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coll: the table of collectives (name, reduction op, root, split buffer,
 * in-place verification), element counts for a size, algbw and busbw
 * factors, alltoallv's per-peer counts, and the names of data types and
 * reduction ops.
 */
#include "model/coll.h"

#include <string.h>
#include <strings.h>

#include "util/util.h"

static const struct nw_coll colls[NW_NOPS] = {
	{ NW_ALL_REDUCE,     "all_reduce",     1, 0, 0, 1 },
	{ NW_ALL_GATHER,     "all_gather",     0, 0, 1, 1 },
	{ NW_REDUCE_SCATTER, "reduce_scatter", 1, 0, 1, 1 },
	{ NW_BROADCAST,      "broadcast",      0, 1, 0, 1 },
	{ NW_REDUCE,         "reduce",         1, 1, 0, 1 },
	{ NW_ALLTOALL,       "alltoall",       0, 0, 1, 0 },
	{ NW_SENDRECV,       "sendrecv",       0, 0, 0, 0 },
	{ NW_GATHER,         "gather",         0, 1, 1, 1 },
	{ NW_SCATTER,        "scatter",        0, 1, 1, 1 },
	/* nccl-tests does not check alltoallv in place; hypercube it does */
	{ NW_ALLTOALLV,      "alltoallv",      0, 0, 1, 0 },
	{ NW_HYPERCUBE,      "hypercube",      0, 0, 1, 1 },
};

const struct nw_coll *nw_coll_get(enum nw_op op)
{
	return (unsigned)op < NW_NOPS ? &colls[op] : NULL;
}

const struct nw_coll *nw_coll_find(const char *name)
{
	static const struct { const char *alias; enum nw_op op; } aliases[] = {
		{ "allreduce", NW_ALL_REDUCE }, { "allgather", NW_ALL_GATHER },
		{ "reducescatter", NW_REDUCE_SCATTER }, { "all_to_all", NW_ALLTOALL },
		{ "send_recv", NW_SENDRECV },
	};
	for (size_t i = 0; i < NW_NOPS; i++)
		if (!strcasecmp(name, colls[i].name))
			return &colls[i];
	for (size_t i = 0; i < NW_ARRAY_LEN(aliases); i++)
		if (!strcasecmp(name, aliases[i].alias))
			return &colls[aliases[i].op];
	return NULL;
}

double nw_busbw_factor(enum nw_op op, int n)
{
	if (n < 1)
		return 0;
	switch (op) {
	case NW_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case NW_ALL_GATHER:
	case NW_REDUCE_SCATTER:
	case NW_ALLTOALL:
	case NW_GATHER:
	case NW_SCATTER:
	case NW_ALLTOALLV:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

double nw_algbw(uint64_t size_bytes, double time_us)
{
	if (time_us <= 0)
		return 0;
	return (double)size_bytes / 1e3 / time_us;
}

double nw_algbw_factor(enum nw_op op, int n)
{
	return op == NW_HYPERCUBE && n > 0 ? (double)(n - 1) / n : 1.0;
}

/* Bytes 'from' sends to 'to' out of total (nccl-tests' distance-weighted share, spread 1). */
static uint64_t v_bytes(uint64_t total, int n, int from, int to)
{
	if (n <= 1)
		return total & ~(uint64_t)15;
	int dist = ((to - from) % n + n) % n;
	double share = (double)dist * (double)total / ((double)n * (n - 1) / 2.0);
	return (uint64_t)share & ~(uint64_t)15;
}

uint64_t nw_alltoallv_count(uint64_t chunk, size_t es, int n, int from, int to)
{
	return v_bytes(chunk * (uint64_t)n * es, n, from, to) / es;
}

uint64_t nw_alltoallv_before(uint64_t chunk, size_t es, int n, int from, int to)
{
	uint64_t sum = 0;
	for (int k = 0; k < to; k++)
		sum += nw_alltoallv_count(chunk, es, n, from, k);
	return sum;
}

uint64_t nw_alltoallv_total(uint64_t chunk, size_t es, int n)
{
	return nw_alltoallv_before(chunk, es, n, 0, n);
}

uint64_t nw_coll_count(enum nw_op op, uint64_t size_bytes, size_t elem_size, int nranks,
                       uint64_t *size_used)
{
	uint64_t count = size_bytes / elem_size;
	if (op == NW_ALLTOALLV || op == NW_HYPERCUBE) {
		/* nccl-tests 2.19: the per-peer chunk is rounded down to 16 bytes (elements of 1, 2, 4 or 8) */
		uint64_t align = elem_size < 16 ? 16 / elem_size : 1;
		count = count / (uint64_t)nranks / align * align;
		if (size_used)
			*size_used = op == NW_HYPERCUBE ? count * (uint64_t)nranks * elem_size
			                                : nw_alltoallv_total(count, elem_size, nranks) * elem_size;
		return count;
	}
	if (colls[op].split) {
		count /= (uint64_t)nranks;
		if (size_used)
			*size_used = count * (uint64_t)nranks * elem_size;
	} else if (size_used) {
		*size_used = count * elem_size;
	}
	return count;
}

static const struct { const char *name; size_t size; } dtypes[NW_NDTYPES] = {
	{ "int8", 1 }, { "uint8", 1 }, { "int32", 4 }, { "uint32", 4 },
	{ "int64", 8 }, { "uint64", 8 }, { "half", 2 }, { "float", 4 },
	{ "double", 8 }, { "bfloat16", 2 }, { "f8e4m3", 1 }, { "f8e5m2", 1 },
};

const char *nw_dtype_name(enum nw_dtype t)
{
	return (unsigned)t < NW_NDTYPES ? dtypes[t].name : "?";
}

size_t nw_dtype_size(enum nw_dtype t)
{
	return (unsigned)t < NW_NDTYPES ? dtypes[t].size : 0;
}

int nw_dtype_find(const char *name)
{
	static const struct { const char *alias; int t; } aliases[] = {
		{ "char", NW_INT8 }, { "int", NW_INT32 }, { "float16", NW_HALF },
		{ "fp16", NW_HALF }, { "float32", NW_FLOAT }, { "fp32", NW_FLOAT },
		{ "float64", NW_DOUBLE }, { "fp64", NW_DOUBLE }, { "bf16", NW_BFLOAT16 },
		{ "fp8e4m3", NW_FP8E4M3 }, { "e4m3", NW_FP8E4M3 }, { "float8e4m3", NW_FP8E4M3 },
		{ "fp8e5m2", NW_FP8E5M2 }, { "e5m2", NW_FP8E5M2 }, { "float8e5m2", NW_FP8E5M2 },
	};
	for (int i = 0; i < NW_NDTYPES; i++)
		if (!strcasecmp(name, dtypes[i].name))
			return i;
	for (size_t i = 0; i < NW_ARRAY_LEN(aliases); i++)
		if (!strcasecmp(name, aliases[i].alias))
			return aliases[i].t;
	return -1;
}

static const char *const redops[NW_NREDOPS] = { "sum", "prod", "max", "min", "avg", "mulsum" };

const char *nw_redop_name(enum nw_redop r)
{
	return (unsigned)r < NW_NREDOPS ? redops[r] : "?";
}

int nw_redop_find(const char *name)
{
	for (int i = 0; i < NW_NREDOPS; i++)
		if (!strcasecmp(name, redops[i]))
			return i;
	return -1;
}
