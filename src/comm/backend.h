/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend: what moves the bytes. The sweep (src/bench/bench.c) drives one
 * backend the same way whether it is NCCL on GPUs or MPI on hosts: buffers
 * per local rank, launches of one collective for every local rank at once,
 * a wait bounded by the timeout, and copies in and out for verification.
 *
 * An interface with no backend.c: be_nccl.c and be_mpi.c each implement it.
 */
#ifndef NW_BACKEND_H
#define NW_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "comm/group.h"
#include "model/coll.h"

/* One collective call, the same on every local rank but for offsets. */
struct nw_call {
	enum nw_op op;
	enum nw_dtype dtype;
	enum nw_redop redop;
	int root;
	uint64_t count;      /* nccl-tests' paramcount: per-rank chunk for split ops */
	size_t shift;        /* bytes added to both buffers (cache rotation) */
	int inplace;
	int pair;            /* sendrecv between ranks pair_a and pair_b only, both ways */
	int pair_a, pair_b;
	size_t unalign;      /* -u: bytes added to both pointers after the shift (misaligned buffers) */
};

/* The peer of a rank in a pair call, or -1 when it sits this one out. */
static inline int nw_call_pair_peer(const struct nw_call *c, int rank)
{
	return rank == c->pair_a ? c->pair_b : rank == c->pair_b ? c->pair_a : -1;
}

enum nw_buf { NW_BUF_SEND, NW_BUF_RECV };

/*
 * A data check the device can run for bench's -c (made by bench/pattern.c,
 * nw_pattern_dcheck): every value a pattern uses repeats every
 * NW_DCHECK_PERIOD elements, so each block of the checked range is
 * described by one period's worth of what its elements must be.
 */
#define NW_DCHECK_PERIOD 13
enum nw_dcheck_kind {
	NW_DCHECK_BITS, /* the element's bytes must equal ref[] (exact checks) */
	NW_DCHECK_MAP,  /* 1- and 2-byte types under a tolerance: the code must be set in map */
	NW_DCHECK_TOL,  /* float and double under a tolerance: |got - rep| <= ts or |got - want| <= ts */
};
struct nw_dcheck_block {
	uint64_t start, len;                 /* elements, counted from the checked range's first */
	uint64_t ref[NW_DCHECK_PERIOD];      /* BITS: element start + j must be ref[j mod period] */
	double rep[NW_DCHECK_PERIOD], want[NW_DCHECK_PERIOD], ts[NW_DCHECK_PERIOD]; /* TOL */
};
struct nw_dcheck {
	enum nw_dcheck_kind kind;
	unsigned es;                         /* element size in bytes */
	size_t nblocks;
	struct nw_dcheck_block *blocks;
	uint32_t *map;                       /* MAP: period entries of 1 << (8 es) bits each, as 32-bit words */
	size_t map_words;
};

struct nw_backend;

struct nw_backend_ops {
	/* Give each local rank send and recv buffers of this many bytes. */
	int (*alloc)(struct nw_backend *be, size_t bytes, char *err, size_t errlen);
	/* Enqueue agg calls (nccl-tests -m) for every local rank, as one group. */
	int (*launch)(struct nw_backend *be, const struct nw_call *c, int agg, char *err, size_t errlen);
	/* The same, iters times, with shift = c->shift + stride x (it % steps); NULL: the caller loops. */
	int (*launch_many)(struct nw_backend *be, const struct nw_call *c, int agg, int iters, size_t stride,
	                   size_t steps, char *err, size_t errlen);
	/* Wait until every local rank's work is done, at most timeout_s (0: no limit). */
	int (*wait)(struct nw_backend *be, double timeout_s, const char *what, char *err, size_t errlen);
	/* Graphs (-G): capture the launches between begin and end, replay n times. NULL when unsupported. */
	int (*graph_begin)(struct nw_backend *be, char *err, size_t errlen);
	int (*graph_end)(struct nw_backend *be, char *err, size_t errlen);
	int (*graph_launch)(struct nw_backend *be, int times, char *err, size_t errlen);
	void (*graph_free)(struct nw_backend *be);
	/* Copy between host memory and a local rank's buffer at a byte offset. */
	int (*write)(struct nw_backend *be, int local, enum nw_buf b, size_t off, const void *src, size_t n,
	             char *err, size_t errlen);
	int (*read)(struct nw_backend *be, int local, enum nw_buf b, size_t off, void *dst, size_t n,
	            char *err, size_t errlen);
	/* Copy within a local rank's memory (send -> recv) and fill a buffer with a 32-bit word. */
	int (*copy)(struct nw_backend *be, int local, size_t src_off, size_t dst_off, size_t n, char *err, size_t errlen);
	int (*fill32)(struct nw_backend *be, int local, enum nw_buf b, uint32_t word, char *err, size_t errlen);
	/* Host-visible staging memory (pinned for GPUs); freed by destroy. */
	void *(*host_alloc)(struct nw_backend *be, size_t n);
	void (*destroy)(struct nw_backend *be);
	/*
	 * NCCL_TESTS_SPLIT: run every later collective among the ranks of the
	 * same color only; rank0 and nranks become the place in that group.
	 * Collective over every rank of the job. NULL when unsupported.
	 */
	int (*split)(struct nw_backend *be, int color, char *err, size_t errlen);
	/* -M: free device memory of each local rank's GPU into free_b[nlocal]; NULL for host backends. */
	int (*mem_free)(struct nw_backend *be, int64_t *free_b, char *err, size_t errlen);
	/*
	 * -c on the device, without copies through the host (NULL for backends
	 * that have none). dev_start prepares it (once; 0, or -1 with err
	 * saying why it cannot be done here: the caller then checks on the
	 * host). dev_fill writes n elements of es bytes from byte offset off of
	 * buffer b, element j getting tab[j mod period]; dev_verify adds to
	 * *wrong the elements of the receive buffer from byte offset off that c
	 * finds wrong.
	 */
	int (*dev_start)(struct nw_backend *be, char *err, size_t errlen);
	int (*dev_fill)(struct nw_backend *be, int local, enum nw_buf b, size_t off, uint64_t n, unsigned es,
	                const uint64_t tab[NW_DCHECK_PERIOD], char *err, size_t errlen);
	int (*dev_verify)(struct nw_backend *be, int local, size_t off, const struct nw_dcheck *c, uint64_t *wrong,
	                  char *err, size_t errlen);
};

/*
 * The most ranks (GPUs) one process drives: the NCCL backend refuses more
 * (-t x -g, by name); arrays of one entry per local rank have this size,
 * and their users assert nlocal <= NW_MAX_LOCAL.
 */
#define NW_MAX_LOCAL 64

struct nw_backend {
	const struct nw_backend_ops *ops;
	const char *name;       /* "nccl", "mpi" */
	int nlocal;             /* ranks driven by this process, 1 to NW_MAX_LOCAL */
	int rank0;              /* global rank of local rank 0 */
	int nranks;             /* ranks in all */
	int dtype_ok[NW_NDTYPES]; /* types this backend can reduce */
	int redop_ok[NW_NREDOPS]; /* reductions it can do (mulsum: NCCL 2.11+ only) */
	int graphs;             /* graph_* usable */
	struct nw_group *group; /* the process group (for host-side exchange) */
	double timeout_s;       /* -T: how long a launch of a blocking backend may wait for peers (0: no limit) */
	/* Description for the run header and per-rank output. */
	int gpu[NW_MAX_LOCAL];  /* device ordinal of each local rank, -1 for hosts */
	/* each local rank's device as nccl-tests' device lines name it: PCI "0000:00:06" ("-" for hosts), model */
	struct nw_dev_desc {
		char pci[16];
		char name[64];
	} dev[NW_MAX_LOCAL];
	char gpus[512];         /* "2 x NVIDIA H200" */
	char nccl_version[32];
	char nccl_path[512];
	char driver[32];
	char cuda_driver[16];
	int reg_max;            /* -R: the highest registration mode this backend can do (0 none, 1 local, 2 symmetric) */
	int cta_max;            /* -x: the highest CTA policy it can set (-1 none, 1 from NCCL 2.27, 2 from 2.28) */
	int64_t mem_init, mem_user; /* -M: device memory communicator set-up and the buffers took (most of any local GPU) */
	void *priv;
};

/*
 * Byte offsets of a rank's send and recv pointers for a call. Out of
 * place: send in the send buffer, recv in the recv buffer. In place
 * (nccl-tests' layout): both in the recv buffer, the smaller side at the
 * rank's chunk (all_gather and gather send from it, reduce_scatter and
 * scatter receive into it).
 */
static inline void nw_call_offsets(const struct nw_call *c, int rank, size_t *soff, size_t *roff)
{
	size_t chunk = (size_t)c->count * nw_dtype_size(c->dtype);
	*soff = *roff = c->shift + c->unalign;
	if (!c->inplace)
		return;
	if (c->op == NW_ALL_GATHER || c->op == NW_GATHER || c->op == NW_HYPERCUBE)
		*soff += (size_t)rank * chunk;
	else if (c->op == NW_REDUCE_SCATTER || c->op == NW_SCATTER)
		*roff += (size_t)rank * chunk;
}

/* What the NCCL backend needs to know from the command line. */
struct nw_nccl_open_opts {
	const char *nccl_lib; /* --nccl-lib, or NULL: found as PyTorch would */
	int ngpus;            /* -g: GPUs per thread (0: all visible, one per process under a launcher) */
	int nthreads;         /* -t: threads, each with its own GPUs and NCCL group (0 or 1: one) */
	int reg;              /* -R: 0 none, 1 ncclCommRegister, 2 ncclCommWindowRegister (symmetric) */
	int parallel_init;    /* -p 1: each -t thread creates its own communicators, at the same time */
	int stream_null;      /* -y 1: every rank's work on the NULL (legacy default) stream of its context */
	int cta_policy;       /* -x: ncclConfig_t.CTAPolicy for the communicators; -1 not set */
};

/*
 * A failure every rank of the job has heard of (so nobody needs to be
 * aborted): err is set on rank 0 only (naming the rank that failed when it
 * is another one) and empty on the others, so that the job says it once.
 */
#define NW_BACKEND_FAILED_ALL (-3)

/*
 * NCCL on this process's GPUs. 0; -1 with err; NW_BACKEND_FAILED_ALL when
 * a rank could not load CUDA or NCCL or lacks GPUs, agreed by every rank
 * before any of them waits on another.
 */
int nw_backend_nccl_open(struct nw_backend **out, struct nw_group *g, const struct nw_nccl_open_opts *o,
                         char *err, size_t errlen);
/* MPI collectives on host memory (one rank per process). */
int nw_backend_mpi_open(struct nw_backend **out, struct nw_group *g, char *err, size_t errlen);

#endif
