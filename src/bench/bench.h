/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench: the size sweep over collectives, shared by the bench, check and
 * tune commands. One call runs every (op, dtype, redop, root, size,
 * placement) the options ask for on one communicator set-up and fills a
 * run in the result model.
 */
#ifndef NW_BENCH_H
#define NW_BENCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/split.h"
#include "model/coll.h"
#include "model/result.h"

enum nw_backend_kind { NW_BACKEND_AUTO, NW_BACKEND_NCCL, NW_BACKEND_MPI };

/* nccl-tests' -a: how the times of several ranks become the one reported. */
enum nw_average { NW_AVG_RANK0 = 0, NW_AVG_MEAN = 1, NW_AVG_MIN = 2, NW_AVG_MAX = 3 };

struct nw_bench_opts {
	enum nw_backend_kind backend;
	enum nw_op ops[NW_NOPS];    /* in run order */
	int nops;
	enum nw_dtype dtypes[NW_NDTYPES];
	int ndtypes;
	enum nw_redop redops[NW_NREDOPS];
	int nredops;
	int root;                   /* -r: a rank, or -1 for every rank (nccl-tests' "all") */
	uint64_t min_bytes, max_bytes; /* -b, -e */
	uint64_t step_bytes;        /* -i (used when step_factor is 0) */
	double step_factor;         /* -f */
	int iters, warmup, agg_iters; /* -n, -w, -m */
	int check;                  /* -c: verify every result element */
	int blocking;               /* -z */
	int graph_launches;         /* -G: capture the -n batch as a CUDA graph, launch it this many times */
	enum nw_average average;    /* -a */
	int ngpus;                  /* -g: GPUs driven by this process (0: all visible) */
	int nthreads;               /* -t */
	int cputime;                /* -C: report CPU (host) time (the default on GPUs too) */
	double timeout_s;           /* -T: a collective not done in this time ends the run */
	double rdzv_timeout_s;      /* how long ranks wait for each other to start; 0: -T, at most 300 s */
	int per_rank;               /* gather every rank's time */
	int pairs;                  /* --pairs: send/recv for every pair of ranks first, then the ops (nops may be 0) */
	int oop_only, ip_only;      /* placements to run (both by default) */
	const char *nccl_lib;       /* --nccl-lib */
	int quiet;                  /* no progress lines on stderr */
	int per_iter;               /* -I 1: time every iteration on its own (each launch waited for) */
	int per_iter_skip;          /* -K: leading iterations the per-iteration summary leaves out */
	int timestamps;             /* -S 1: each table row ends with the local time it was printed (table only) */
	struct nw_split split;      /* NCCL_TESTS_SPLIT / _MASK: groups of processes that run apart (kind NONE: one) */
	int cycles;                 /* -N: sweeps of every size after one warm-up (default 1; 0 until stop_asked) */
	int mem_report;             /* -M 1: GPU memory taken by set-up, buffers and the collectives (extra "gpu_memory") */
	int unalign;                /* -u: pointers moved by this many elements (misaligned buffers) */
	int parallel_init;          /* -p 1: each -t thread creates its own communicators at the same time */
	int reg;                    /* -R: 0 none, 1 local (ncclCommRegister), 2 symmetric (ncclCommWindowRegister) */
	int stream_null;            /* -y 1: collectives on the NULL (legacy default) stream, as nccl-tests' -y 1 */
	int cta_policy;             /* -x: ncclConfig_t.CTAPolicy (0 default, 1 efficiency, 2 zero); -1 not set */
	int redops_all;             /* -o all: the reductions the backend cannot do are skipped, not refused */
	int (*stop_asked)(void);    /* with -N other than 1: non-zero on rank 0 ends the run after the current cycle */
	/*
	 * Set (by the command's signal handler) to end the sweep early: every
	 * rank asks after each size, so all stop after the same one, and rank
	 * 0's run gets "interrupted": true in its extra. NULL: never.
	 */
	volatile sig_atomic_t *stop;
};

/* nccl-tests' defaults (-b 32M -e 32M ... ) adapted: see docs/bench.md. */
void nw_bench_opts_default(struct nw_bench_opts *o);

/* The most sizes one sweep may have (the command refuses more). */
#define NW_BENCH_MAX_SIZES 100000

/* The size after s in the sweep of o; 0 when the sweep cannot go on. */
uint64_t nw_bench_next_size(const struct nw_bench_opts *o, uint64_t s);

/* How many sizes the sweep of o walks; NW_BENCH_MAX_SIZES + 1 when over the cap. */
size_t nw_bench_nsizes(const struct nw_bench_opts *o);

/* Called once per finished size (out-of-place row, in-place row; either may be NULL). */
typedef void (*nw_bench_row_fn)(const struct nw_row *oop, const struct nw_row *ip, void *arg);

/* What a sweep came to; the command turns it into its exit status. */
enum nw_bench_status {
	/*
	 * The options ask what cannot be done (a type or a root the backend
	 * refuses, bad launcher variables), err filled: every rank finds the
	 * same and says so, so the others are not aborted.
	 */
	NW_BENCH_USAGE = -2,
	NW_BENCH_FAILED = -1,  /* something failed (no GPU, NCCL error, timeout, a peer that died), err filled */
	NW_BENCH_OK = 0,
	NW_BENCH_WRONG = 1,    /* every collective ran, but verification found wrong elements */
};

/*
 * Run the sweep. Fills run (header and rows; the caller has nw_run_init'ed
 * it and owns it afterwards) and calls row_fn as rows complete (on the
 * rank that reports, rank 0).
 */
enum nw_bench_status nw_bench_run(const struct nw_bench_opts *o, struct nw_run *run, nw_bench_row_fn row_fn,
                                  void *arg, char *err, size_t errlen);

/*
 * Who says an error that every rank found alike (no GPU, no NCCL on any
 * rank): rank 0 hands it to fn inside nw_bench_run, and err comes back
 * empty; the ranks then wait for each other, so that no rank exits (and
 * has the launcher kill the job) before it was said. NULL (the default):
 * err comes back filled on rank 0, as for any other error.
 */
void nw_bench_on_job_error(void (*fn)(const char *msg));

#endif
