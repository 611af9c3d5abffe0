/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_int: internal to the sweep, shared by its files and by nothing
 * else: bench.c (the sweep itself and its entry point), bench_time.c
 * (timing a batch and combining the ranks' times), bench_check.c (host-side
 * patterns and verification), bench_pairs.c (--pairs) and split.c (the job
 * split by NCCL_TESTS_SPLIT). Names carry the prefix bs_.
 */
#ifndef NW_BENCH_BENCH_INT_H
#define NW_BENCH_BENCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"
#include "bench/pattern.h"
#include "comm/backend.h"
#include "comm/group.h"

/* One sweep: its options, backend, group and run, and what it has done so far. */
struct bs_ctx {
	const struct nw_bench_opts *o;
	struct nw_backend *be;
	struct nw_group *g;
	struct nw_run *run;
	nw_bench_row_fn row_fn;
	void *arg;
	size_t buf_bytes;
	int pattern_key; /* dtype*3 + (1 prod, 2 mulsum, 0 others) of the pattern in the send buffers, -1 none */
	int dev;         /* -c on the device: 0 not decided yet, 1 yes, -1 on the host (bench_check.c) */
	int nthreads;
	int64_t pairs_wrong;
	int cycles_done;   /* -N: cycles finished by the (op, dtype, redop, root) running or run last */
	int stopped;       /* the sweep ends here: a stop after a cycle (-N) or after a size (o->stop) */
	char *err;
	size_t errlen;
};


/* bench_time.c */

/* What call c of size bytes is, for messages: op, size, type, redop and placement. */
void bs_describe(char *buf, size_t len, const struct nw_call *c, uint64_t size);
/* Warm-up over every size first (doubling from -b to -e), -w launches each, as nccl-tests does. 0 or -1. */
int bs_warm_up(struct bs_ctx *x, struct nw_call *c);
/*
 * One timed batch of iters launches (-n for the row's own); *usec gets
 * this process's time per operation (with -I 1, times gets each
 * iteration's, iters of them). 0 or -1.
 */
int bs_time_batch(struct bs_ctx *x, struct nw_call *c, uint64_t total_bytes, uint64_t size, int iters, double *usec,
                  double *times);
/* Combine every process's time as -a says into row->time_us; fills per-rank detail when asked. 0 or -1. */
int bs_combine(struct bs_ctx *x, double mine, struct nw_row *row);
/* -I 1: each iteration's time of the slowest process into the row's iter_us. 0, or -1 with err. */
int bs_slowest_iters(struct bs_ctx *x, const double *mine, struct nw_row *row);
/*
 * The row's noise (compare's): two more batches of the same launches, one
 * after the other, each timed and combined as the first; row->noise gets
 * (max - min) / mean of the three times per launch. A batch that took
 * over 25 ms is repeated with as many launches as fill 25 ms (at least
 * one), so a size costs at most 50 ms more, and a batch a burst of other
 * work made long is still repeated. Decided from the combined time, so
 * every rank decides alike. The row's time stays the first batch's,
 * nccl-tests' number. Not with -I 1 (every iteration is kept then) or -G.
 * 0, or -1 with err.
 */
int bs_noise(struct bs_ctx *x, struct nw_call *c, uint64_t used, struct nw_row *row);

/* bench_check.c */

/*
 * A local rank's data through the host staging buffer: with verify, count
 * elements of recv at byte offset off checked (*wrong grows by the wrong
 * ones); without, the rank's input pattern written into send at off. 0 or -1.
 */
int bs_staged(struct bs_ctx *x, const struct nw_pattern *p, int local, size_t off, uint64_t count, int verify,
              uint64_t *wrong);
/* Verify one placement: fresh inputs, one launch, every element compared; *wrong_out: the total over ranks. 0 or -1. */
int bs_check_once(struct bs_ctx *x, struct nw_call *c, const struct nw_pattern *p, int64_t *wrong_out);
/* The input patterns of one (op, dtype, redop, root) in every local send buffer, when -c asks. 0 or -1. */
int bs_fill_patterns(struct bs_ctx *x, const struct nw_coll *coll, enum nw_dtype dtype, enum nw_redop redop, int root);

/* split.c */

/*
 * NCCL_TESTS_SPLIT on an open backend: every process learns every
 * process's color, the backend splits into groups, rank 0 notes the split
 * and each rank's group in the run's extra ("split", devices[].group),
 * and the header counts the ranks of one group (busbw is per group, as in
 * nccl-tests). hypercube's power-of-two rank count is checked per group
 * (without a split, for the whole run). NW_BENCH_OK, or NW_BENCH_FAILED or
 * NW_BENCH_USAGE (the same on every rank) with err.
 */
enum nw_bench_status bs_split_job(const struct nw_bench_opts *o, struct nw_backend *be, struct nw_group *g,
                                  struct nw_run *run, char *err, size_t errlen);

/* bench_pairs.c */

/* --pairs: every pair of ranks timed alone; the busbw matrix into run->h.extra["pairs"]. 0 or -1. */
int bs_run_pairs(struct bs_ctx *x);

#endif
