/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose: internals of the interposer (libncclwatch-interpose.so), the
 * second front end of the recording code: LD_PRELOADed into a training
 * job whose NCCL has no profiler interface (2.18 to 2.22), it wraps NCCL's
 * public calls, forwards each to the real NCCL and feeds the same slots,
 * publisher and stats files as the profiler plugin (nwp.h). Internal; the
 * prefix is ipo_. docs/plugin.md, "The interposer", has the design.
 *
 *   ipose.c       the exported wrappers and the hot path of an op and a group
 *   ipose_comm.c  communicators: the map from NCCL's handle, registration,
 *                 hashes, destroy and abort, the settings and the front end
 *   ipose_find.c  finding the real NCCL a caller would have bound to
 *   ipose_cuda.c  CUDA events: the driver already loaded, one pool of event
 *                 pairs per context, the completions the publisher polls
 *
 * Threads: the job's threads call the wrappers; the publisher thread
 * (publish.c) polls the events through nwp_g.front->tick with nwp_g.lock
 * held. Which fields each writes is said at each struct.
 */
#ifndef NW_PLUGIN_IPOSE_H
#define NW_PLUGIN_IPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/nwp.h"

/* NCCL's types, declared from nccl.h (never included): results, handles, the unique id by value. */
typedef int ipo_res_t;
typedef struct ipo_nccl_comm *ipo_comm_t;
typedef struct { char internal[128]; } ipo_uid_t;
typedef void *ipo_stream_t;                /* cudaStream_t, the driver's CUstream */
enum { IPO_SUCCESS = 0, IPO_INTERNAL_ERROR = 3, IPO_INVALID_USAGE = 5, IPO_IN_PROGRESS = 7 };
#define IPO_SPLIT_NOCOLOR (-1)

/* The calls the interposer wraps (and reads). */
enum ipo_fn {
	IPO_GET_VERSION, IPO_COMM_COUNT, IPO_COMM_USER_RANK,
	IPO_ALL_REDUCE, IPO_BROADCAST, IPO_BCAST, IPO_REDUCE, IPO_ALL_GATHER, IPO_REDUCE_SCATTER,
	IPO_ALLTOALL, IPO_GATHER, IPO_SCATTER, IPO_SEND, IPO_RECV,
	IPO_GROUP_START, IPO_GROUP_END, IPO_GROUP_SIMULATE_END,
	IPO_INIT_RANK, IPO_INIT_RANK_CONFIG, IPO_INIT_ALL, IPO_INIT_RANK_SCALABLE, IPO_SPLIT,
	IPO_ABORT, IPO_DESTROY, IPO_FINALIZE, IPO_GET_ASYNC_ERROR,
	IPO_NFN
};

/*
 * One NCCL library of the process and its entry points (pnccl* first,
 * which only NCCL defines, so a call never comes back into the
 * interposer). Written once when found (ipose_find.c), then read only.
 */
struct ipo_nccl {
	void *base;                /* where it is mapped: its identity */
	void *fn[IPO_NFN];         /* NULL where this NCCL lacks the call */
	int version;               /* ncclGetVersion's code (22105 for 2.21.5) */
	char path[256];
};

/* The NCCL the caller at return address ra would have bound to; NULL when none is loaded. */
const struct ipo_nccl *ipo_nccl_caller(const void *ra);
/* Is the ncclwatch profiler plugin loaded in this process (path in buf)? */
int ipo_plugin_loaded(char *buf, size_t len);

/* Communicator states (ipo_entry.state). */
enum { IPO_FREE = 0, IPO_LIVE = 1, IPO_PENDING = 2, IPO_DEAD = 3, IPO_ABORTED = 4 };

/*
 * One NCCL communicator seen by the interposer, found by its handle. The
 * map's entries are never freed: a handle NCCL hands out again (after a
 * destroy) takes its old entry, with gen bumped. Registration and the
 * destroy and abort paths write under ipo_map_lock; the hot path reads
 * key with acquire, then the rest.
 */
struct ipo_entry {
	ipo_comm_t key;            /* atomic: NCCL's handle; NULL: never used */
	int state;                 /* atomic: IPO_* */
	uint32_t gen;              /* atomic: bumped when the entry is (re)claimed */
	int users;                 /* atomic: job threads in a short section that touches c's slots or its stream's events */
	int errored;               /* atomic: ncclCommGetAsyncError reported an error: no more timing */
	struct nwp_comm *c;        /* the recording's communicator; NULL: counted nowhere (not watched) */
	const struct ipo_nccl *nc; /* the NCCL that made it */
	uint64_t hash;             /* the stats files' comm hash (ipose_comm.c says how it is made) */
	uint64_t last_timed_ns;    /* atomic: coarse monotonic clock (+1) at the last op (or group) timed */
	uint64_t seq[NWS_NOPS];    /* atomic: per-op sequence numbers handed out */
	uint32_t splits;           /* atomic: communicators split from it so far */
	int rank, nranks;
};

/* The entry of handle k (any state), or NULL; lock-free. */
struct ipo_entry *ipo_lookup(ipo_comm_t k);
/* An entry for a comm made now (rank, nranks < 0: ask NCCL); its state says whether it is watched. */
void ipo_register(const struct ipo_nccl *nc, ipo_comm_t k, uint64_t hash, int rank, int nranks);
/* The comm a handle stands for, made watchable if it is IPO_PENDING; NULL when not recorded. */
struct ipo_entry *ipo_live(const struct ipo_nccl *nc, ipo_comm_t k);
/*
 * Destroy (abort 0) or abort (1) of k, around NCCL's call: begin stops
 * recording it and waits for the job's threads to leave it (with abort,
 * its event pairs are dropped unseen, before NCCL aborts); finish polls
 * its pairs once more (destroy), finalizes its file and frees the entry.
 * begin returns NULL when k is not recorded.
 */
struct ipo_entry *ipo_end_begin(ipo_comm_t k, int abort);
void ipo_end_finish(struct ipo_entry *e, int abort);
/* Hashes of new communicators: from a unique id (as NCCL makes its commHash), of a split child, of ncclCommInitAll. */
uint64_t ipo_hash_id(const ipo_uid_t *id);
uint64_t ipo_hash_split(struct ipo_entry *parent, int color);
uint64_t ipo_hash_local(void);

/*
 * Enter and leave a short section that may touch e's slots or record on
 * its stream: 1 when e is live (generation gen, or any with gen 0) and
 * may be used; the section must then be left. The abort and destroy
 * paths mark the entry first and wait for sections to end.
 */
static inline int ipo_enter(struct ipo_entry *e, uint32_t gen)
{
	__atomic_add_fetch(&e->users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&e->state, __ATOMIC_SEQ_CST) == IPO_LIVE &&
	    (!gen || __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) == gen))
		return 1;
	__atomic_sub_fetch(&e->users, 1, __ATOMIC_RELEASE);
	return 0;
}

static inline void ipo_leave(struct ipo_entry *e)
{
	__atomic_sub_fetch(&e->users, 1, __ATOMIC_RELEASE);
}

/* Settings and state of the process (ipose_comm.c). */
struct ipo_global {
	int decided;               /* atomic: 1 recording, 2 passing through (off, the plugin records, a failure) */
	int shutdown;              /* atomic: the process exits, or this is a child after fork: pass through */
	uint64_t every_ns;         /* time at most one op (or group) per communicator this often; 0: every one */
	int timing;                /* atomic: CUDA events in use (0: counting only, said once) */
	int graph_said;            /* atomic: the line about graph captures was written */
	uint64_t timed, untimed_busy, captured; /* atomic counters for the last line (timed ops, no pair free, captured calls) */
};
extern struct ipo_global ipo_g;

/* Say once (WARN, stderr) that something failed and timing is off from now on; counting goes on. */
void ipo_timing_off(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- CUDA events (ipose_cuda.c) --- */

/*
 * A pair of events timing one op or one group on one stream, for the ops
 * first..last of one communicator. The job's thread that took it from its
 * context's free list owns it until it is queued (ipo_timer_queue); then
 * the publisher owns it. Never shared.
 */
struct ipo_timer {
	void *ev[2];               /* CUevent: start and end */
	struct ipo_ctx *ctx;
	struct ipo_timer *next;    /* free list, queue, pending list */
	struct ipo_entry *e;
	uint32_t gen;
	int dead;                  /* its communicator went while it was recorded: never touched again */
	uint64_t first, last;      /* slot indices (e->c's pool) of the ops it times */
};

/* Open the driver the process already loaded (once); 0 when timing can be done, else -1 with why. */
int ipo_cuda_open(const char **why);
/*
 * The calling thread's current CUDA context, made ctx (when not NULL and
 * another) on the way: a communicator made inside a group is registered at
 * the group's end in the context its init was called in (its GPU, its
 * event pairs), then the job's is put back. NULL when unknown.
 */
void *ipo_ctx_swap(void *ctx);
/* Is stream st being captured into a CUDA graph (1), not (0), or unknown (-1)? */
int ipo_capturing(ipo_stream_t st);
/* A free pair for stream st with its start recorded there; NULL when none (untimed). */
struct ipo_timer *ipo_timer_start(ipo_stream_t st);
/* Record the end on st: 0, or -1 (the pair went back, the op is untimed). */
int ipo_timer_stop(struct ipo_timer *t, ipo_stream_t st);
/* Give a pair back unused (its op failed or is untimed). */
void ipo_timer_put(struct ipo_timer *t);
/* A pair whose communicator went (an abort) while it was being recorded: kept, never touched again. */
void ipo_timer_abandon(struct ipo_timer *t);
/* Hand a recorded pair to the publisher, for ops first..last of e. */
void ipo_timer_queue(struct ipo_timer *t, struct ipo_entry *e, uint32_t gen, uint64_t first, uint64_t last);
/* Make event pairs ready in the calling thread's current context (at registration). */
void ipo_cuda_prepare(void);
/* The publisher's tick (nwp_g.lock held): completions into slots, pools topped up. */
void ipo_cuda_tick(uint64_t now_rt);
/*
 * Before e's communicator is finalized (nwp_g.lock held): its pairs polled
 * once more, those not finished kept without their ops; aborted: dropped
 * without a call (no call on an aborted communicator's events).
 */
void ipo_cuda_release(struct ipo_entry *e, int aborted);
/* Never touch a CUDA event again (the process exits). */
void ipo_cuda_shutdown(void);

#endif
