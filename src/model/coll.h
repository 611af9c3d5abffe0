/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coll: the collectives ncclwatch measures, their size rules and the
 * bus-bandwidth factors nccl-tests uses (DESIGN.md, "busbw").
 */
#ifndef NW_MODEL_COLL_H
#define NW_MODEL_COLL_H

#include <stddef.h>
#include <stdint.h>

enum nw_op {
	NW_ALL_REDUCE,
	NW_ALL_GATHER,
	NW_REDUCE_SCATTER,
	NW_BROADCAST,
	NW_REDUCE,
	NW_ALLTOALL,
	NW_SENDRECV,
	NW_GATHER,
	NW_SCATTER,
	NW_ALLTOALLV,  /* nccl-tests' alltoallv_perf: uneven, distance-weighted per-peer counts */
	NW_HYPERCUBE,  /* nccl-tests' hypercube_perf: an all_gather in log2(n) pairwise exchanges */
	NW_NOPS
};

/* '--op all' means the ops before this one (those nccl-tests had before 2.19). */
#define NW_OPS_ALL NW_ALLTOALLV

/* Data types, numbered as NCCL numbers them (ncclDataType_t). */
enum nw_dtype {
	NW_INT8, NW_UINT8, NW_INT32, NW_UINT32, NW_INT64, NW_UINT64,
	NW_HALF, NW_FLOAT, NW_DOUBLE, NW_BFLOAT16, NW_FP8E4M3, NW_FP8E5M2,
	NW_NDTYPES
};

/*
 * Reduction ops, numbered as NCCL numbers its built-in ones (ncclRedOp_t),
 * then mulsum: NCCL's pre-multiplied sum, an op each communicator creates
 * (ncclRedOpCreatePreMulSum) with a scalar per rank, as nccl-tests' -o
 * mulsum does: 1 on even ranks, 2 on odd ones (nw_mulsum_scalar).
 */
enum nw_redop { NW_SUM, NW_PROD, NW_MAX, NW_MIN, NW_AVG, NW_MULSUM, NW_NREDOPS };

/* mulsum's scalar for rank r: nccl-tests' ncclVerifiablePremulScalar. */
static inline int nw_mulsum_scalar(int r)
{
	return r % 2 == 0 ? 1 : 2;
}

struct nw_coll {
	enum nw_op op;
	const char *name;  /* "all_reduce", as nccl-tests' binaries are named */
	int has_redop;     /* takes a reduction op */
	int has_root;      /* takes a root rank */
	int split;         /* size is the whole buffer, n chunks of count elements */
	int verify_inplace; /* nccl-tests verifies the in-place result */
};

const struct nw_coll *nw_coll_get(enum nw_op op);
/* Look up by name ("all_reduce", also "allreduce"); NULL when unknown. */
const struct nw_coll *nw_coll_find(const char *name);

/* busbw = algbw * factor for n ranks. */
double nw_busbw_factor(enum nw_op op, int nranks);
/* algbw in GB/s (10^9 bytes) for size_bytes moved in time_us. */
double nw_algbw(uint64_t size_bytes, double time_us);
/*
 * algbw = nw_algbw(size) * this: 1 but for hypercube, whose algbw counts
 * only the (n-1)/n of the buffer that comes from the other ranks.
 */
double nw_algbw_factor(enum nw_op op, int nranks);

/*
 * alltoallv's per-peer element counts (nccl-tests 2.19's generated
 * pattern, spread 1): for chunk elements per peer (nccl-tests' count),
 * rank 'from' sends to rank 'to' a share growing with their distance
 * (to - from) mod n, none to itself, each rounded down to 16 bytes. Every
 * rank sends and receives the same total.
 */
uint64_t nw_alltoallv_count(uint64_t chunk, size_t elem_size, int nranks, int from, int to);
/* Elements rank 'from' sends to ranks below 'to' (its send offset for 'to'). */
uint64_t nw_alltoallv_before(uint64_t chunk, size_t elem_size, int nranks, int from, int to);
/* Elements every rank sends (and receives) in all. */
uint64_t nw_alltoallv_total(uint64_t chunk, size_t elem_size, int nranks);

/*
 * The element count nccl-tests prints for a size (per rank for split ops),
 * and the size actually used after rounding down to whole elements (and to
 * n equal chunks for split ops). Returns 0 when the size holds no element.
 */
uint64_t nw_coll_count(enum nw_op op, uint64_t size_bytes, size_t elem_size, int nranks,
                       uint64_t *size_used);

const char *nw_dtype_name(enum nw_dtype t);      /* nccl-tests' spelling: "float" */
size_t nw_dtype_size(enum nw_dtype t);
int nw_dtype_find(const char *name);             /* -1 when unknown; accepts aliases */
const char *nw_redop_name(enum nw_redop r);      /* "sum" */
int nw_redop_find(const char *name);             /* -1 when unknown */

#endif
