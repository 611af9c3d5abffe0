/* SPDX-License-Identifier: Apache-2.0 */
/*
 * be_nccl_int: internal to the NCCL backend, shared by its files and by
 * nothing else: be_nccl.c (opening, the ops table, split, destroy),
 * be_nccl_mem.c (device and host buffers, -R registration, -M memory),
 * be_nccl_run.c (calls, -t launch threads, waiting, CUDA graphs) and
 * be_nccl_dev.c (-c on the GPUs: the check kernels). Names carry the
 * prefix bn_.
 */
#ifndef NW_COMM_BE_NCCL_INT_H
#define NW_COMM_BE_NCCL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/backend.h"
#include "gpu/cuda.h"
#include "gpu/kern.h"
#include "gpu/nccl.h"

/* The backend's private state (nw_backend.priv). */
struct bn_priv {
	const struct nw_cu *cu;
	const struct nw_nccl *nc;
	nw_CUdevice dev[NW_MAX_LOCAL];
	nw_CUcontext ctx[NW_MAX_LOCAL];
	nw_CUstream stream[NW_MAX_LOCAL];
	nw_ncclComm_t comm[NW_MAX_LOCAL];
	nw_CUdeviceptr send[NW_MAX_LOCAL], recv[NW_MAX_LOCAL];
	nw_CUgraphExec gexec[NW_MAX_LOCAL];
	int reg;                /* -R: 0, 1 local, 2 symmetric; buffers then come from ncclMemAlloc */
	int stream_null;        /* -y 1: stream[] are all NULL, each local rank's legacy stream of its context */
	int cta_policy;         /* -x: the communicators' CTAPolicy; -1 not set */
	/* -o mulsum: the pre-multiplied sum each communicator made per type, made when first used; 0 none yet */
	int premul[NW_MAX_LOCAL][NW_NDTYPES];
	unsigned char have_premul[NW_MAX_LOCAL][NW_NDTYPES];
	int parallel_init;      /* -p 1 */
	void *reg_send[NW_MAX_LOCAL], *reg_recv[NW_MAX_LOCAL]; /* -R 1: ncclCommRegister's handles, NULL none */
	nw_ncclWindow_t win_send[NW_MAX_LOCAL], win_recv[NW_MAX_LOCAL]; /* -R 2: the windows, NULL none */
	size_t bytes;
	void *pinned[16];
	int npinned;
	int aborted;
	/* -t: nthreads threads of per ranks each; work is handed over by gen */
	int nthreads, per;
	pthread_t th[NW_MAX_LOCAL];
	int nth_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned gen;           /* atomic: bumped for each piece of work (or stop) */
	int done;               /* atomic: worker threads finished with the current piece */
	int sleepers;           /* under mu: workers blocked on cv */
	int stop;
	struct bn_work {
		const struct nw_call *c;
		int agg, iters;
		size_t stride, steps;
	} job;
	int trc[NW_MAX_LOCAL];      /* each thread's result for the current piece */
	char terr[NW_MAX_LOCAL][256];
	/* -c on the GPUs (be_nccl_dev.c): per local rank, the kernels and a scratch area (counter, bitmap) */
	int dev_state;             /* 0 not tried, 1 ready, -1 refused (the host checks) */
	char dev_why[256];         /* why refused */
	struct nw_kern kern[NW_MAX_LOCAL];
	nw_CUdeviceptr scratch[NW_MAX_LOCAL];
};

static inline struct bn_priv *bn_p(struct nw_backend *be)
{
	return be->priv;
}

/* be_nccl.c */

/* err: "GPU gpu: what failed: <the driver's message>"; returns -1. */
int bn_cu_fail(struct bn_priv *p, nw_CUresult r, int gpu, const char *what, char *err, size_t errlen);
/* err: "what on GPU <dev of local rank local> failed: <NCCL's message>" (local -1: no rank); returns -1. */
int bn_nccl_fail(struct bn_priv *p, nw_ncclResult_t r, int local, const char *what, char *err, size_t errlen);
/* Make local rank i's context current. 0, or -1 with err. */
int bn_set_ctx(struct nw_backend *be, int i, char *err, size_t errlen);
/* Destroy the mulsum ops made on the communicators (before the communicators go). */
void bn_premul_release(struct nw_backend *be);

/* be_nccl_mem.c: the ops of the same names (backend.h), and what opening and destroying need. */

int bn_alloc(struct nw_backend *be, size_t bytes, char *err, size_t errlen);
int bn_write(struct nw_backend *be, int i, enum nw_buf b, size_t off, const void *src, size_t n, char *err,
             size_t errlen);
int bn_read(struct nw_backend *be, int i, enum nw_buf b, size_t off, void *dst, size_t n, char *err, size_t errlen);
int bn_copy(struct nw_backend *be, int i, size_t soff, size_t doff, size_t n, char *err, size_t errlen);
int bn_fill32(struct nw_backend *be, int i, enum nw_buf b, uint32_t word, char *err, size_t errlen);
/* Local rank i's send or receive buffer. */
nw_CUdeviceptr bn_bufptr(struct bn_priv *p, int i, enum nw_buf b);
void *bn_host_alloc(struct nw_backend *be, size_t n);
int bn_mem_free(struct nw_backend *be, int64_t *free_b, char *err, size_t errlen);
/* bn_mem_free for the backend's own bookkeeping: zeros when the driver does not answer. */
int bn_mem_snapshot(struct nw_backend *be, int64_t *free_b);
/* Free the send and receive buffers (deregistered first). */
void bn_free_buffers(struct nw_backend *be);
/* Undo -R's registrations (not the memory); nothing for communicators already gone. */
void bn_deregister_buffers(struct nw_backend *be);
/* The highest -R the loaded NCCL can do: 0, 1 from 2.19, 2 from 2.27. */
int bn_reg_max(const struct nw_nccl *nc);

/* be_nccl_run.c: the ops of the same names (backend.h), and the -t launch threads. */

int bn_launch(struct nw_backend *be, const struct nw_call *c, int agg, char *err, size_t errlen);
int bn_launch_many(struct nw_backend *be, const struct nw_call *c, int agg, int iters, size_t stride, size_t steps,
                   char *err, size_t errlen);
int bn_wait(struct nw_backend *be, double timeout_s, const char *what, char *err, size_t errlen);
int bn_graph_begin(struct nw_backend *be, char *err, size_t errlen);
int bn_graph_end(struct nw_backend *be, char *err, size_t errlen);
int bn_graph_launch(struct nw_backend *be, int times, char *err, size_t errlen);
void bn_graph_free(struct nw_backend *be);
/* The launch threads of -t beyond this one (thread 0). 0, or -1 with err. */
int bn_start_workers(struct nw_backend *be, char *err, size_t errlen);
/* Stop and join the launch threads started. */
void bn_stop_workers(struct bn_priv *p);

/* be_nccl_dev.c: the ops of the same names (backend.h), and what destroying needs. */

int bn_dev_start(struct nw_backend *be, char *err, size_t errlen);
int bn_dev_fill(struct nw_backend *be, int i, enum nw_buf b, size_t off, uint64_t n, unsigned es,
                const uint64_t tab[NW_DCHECK_PERIOD], char *err, size_t errlen);
int bn_dev_verify(struct nw_backend *be, int i, size_t off, const struct nw_dcheck *c, uint64_t *wrong, char *err,
                  size_t errlen);
/* Unload the kernels and free the scratch areas (the contexts still current-able). */
void bn_dev_release(struct nw_backend *be);

#endif
