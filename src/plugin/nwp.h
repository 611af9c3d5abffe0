/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nwp: internals of the ncclwatch profiler plugin (not installed anywhere).
 *
 * Threads: NCCL calls Coll/P2p events on the thread that launches the
 * operation and KernelCh/ProxyOp events on the communicator's proxy thread.
 * Those hot paths only fill a preallocated slot with plain stores and
 * atomics. One publisher thread per process (publish.c) turns finished
 * slots into aggregates in the shared stats files, runs the activation-mask
 * policy and writes trace dumps. Registration (init/finalize) takes a mutex;
 * no event callback ever does.
 *
 * There is no nwp.c. Two front ends feed the same recording code: the
 * profiler plugin (plugin.c: NCCL's profiler entry points and event hot
 * paths) and the interposer (ipose*.c: NCCL's API wrapped, for NCCL
 * without a profiler interface); each shared library holds one of them.
 * core.c holds the process-wide state, clocks, nwp_disable and nwp_log;
 * slot.h the filling of a slot; publish.c the publisher thread (configuration,
 * mask policy), statsfile.c the stats files, account.c the accounting of
 * finished slots, trace.c the trace dumps; hang.c the progress and
 * hang verdict the publisher writes into each header (docs/hang.md);
 * overlap.c the exposed-communication window over CUPTI (docs/plugin.md);
 * logline.c the periodic summary lines in the job's log.
 */
#ifndef NW_NWP_H
#define NW_NWP_H

#include <stdint.h>
#include <stdio.h>
#include <pthread.h>

#include "plugin/nwstats.h"

/* NCCL's profiler event types (every version; which exist in which: nccl_abi.h). */
enum {
	NWP_EV_GROUP = 1 << 0,
	NWP_EV_COLL = 1 << 1,
	NWP_EV_P2P = 1 << 2,
	NWP_EV_PROXYOP = 1 << 3,
	NWP_EV_PROXYSTEP = 1 << 4,
	NWP_EV_PROXYCTRL = 1 << 5,
	NWP_EV_KERNELCH = 1 << 6,
	NWP_EV_NETPLUGIN = 1 << 7,
	NWP_EV_GROUPAPI = 1 << 8,
	NWP_EV_COLLAPI = 1 << 9,
	NWP_EV_P2PAPI = 1 << 10,
	NWP_EV_KERNELLAUNCH = 1 << 11,
	NWP_EV_CECOLL = 1 << 12,
	NWP_EV_CESYNC = 1 << 13,
	NWP_EV_CEBATCH = 1 << 14
};
#define NWP_STATE_KERNELCH_STOP 22   /* ncclProfilerKernelChStop */

typedef void (*nwp_logfn_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* nwp_comm.ident */
enum { NWP_IDENT_NONE = 0, NWP_IDENT_WRITING = 1, NWP_IDENT_KNOWN = 2 };

/* Slot states (in-flight operation pool). */
enum { NWP_FREE = 0, NWP_ACTIVE = 1, NWP_STOPPED = 2, NWP_DONE = 3 };
enum { NWP_KIND_COLL = 1, NWP_KIND_P2P = 2, NWP_KIND_CE = 3 /* op_start only: stored as COLL */ };

/*
 * One in-flight operation. Written by the launching thread (fields up to
 * proto, then state with release), by the proxy thread (atomics below) and
 * read by the publisher. 128 bytes, 64-aligned: handles are slot pointers
 * whose low bits tag the event kind.
 */
struct nwp_slot {
	uint32_t state;          /* atomic: NWP_* */
	uint8_t kind;            /* NWP_KIND_* */
	uint8_t expect_kch;      /* atomic: KernelCh was in the mask at start (the interposer: the op is timed; set at its group end) */
	uint8_t nch;             /* channels NCCL announced (0: unknown) */
	uint8_t nwarps;
	int32_t peer;            /* root or peer */
	uint32_t _pad;
	uint64_t seq;
	uint64_t count;
	uint64_t enq_ns, enq_end_ns;
	const char *func, *dtype, *algo, *proto;  /* NCCL's static strings */
	uint32_t kch_started, kch_stopped;        /* atomics (proxy thread) */
	uint64_t kstart_gpu, kend_gpu;            /* atomics: min start, max end (GPU clock) */
	uint32_t px_started, px_stopped;          /* atomics */
	uint64_t px_last_ns;                      /* atomic: realtime of last ProxyOp stop */
	uint64_t px_first_ns;                     /* atomic: realtime of first ProxyOp start */
};
_Static_assert(sizeof(struct nwp_slot) == 128, "slot size");

/* Recent execution times of one op x bucket (slow-op detection). */
#define NWP_RECENT 32
struct nwp_recent {
	uint32_t n, pos;
	uint64_t ns[NWP_RECENT];
};

/* Running totals of one communicator that a log line's interval is the difference of (publisher only). */
struct nwp_logsnap {
	uint64_t ops, bytes, busy_ns, kernel_ops, slow_ops;
	uint64_t kns[NWS_NOPS], kbytes[NWS_NOPS];  /* kernel-timed time and bytes per op */
};

/* Periodic log line state of one communicator (publisher only; logline.c). */
struct nwp_logstate {
	uint64_t last_ns;          /* realtime the current interval began; 0: not started */
	struct nwp_logsnap prev;   /* totals when it began */
};

/* One communicator seen by this process. */
struct nwp_comm {
	int index;                 /* position in the process arena */
	int alive;                 /* registered and not finalized */
	int ident;                 /* atomic NWP_IDENT_*: v4+ known at init; v1 to v3 named by the first op (hot path) */
	int nranks_seen;           /* atomic: v1, v2: the size an all_gather or reduce_scatter told (hot path); 0 none */
	int proxy_seen;            /* atomic: a ProxyOp event came (v1 to v3, where the node count is not told) */
	uint64_t comm_hash;        /* written once: at init, or (v1 to v3) by the op that names the communicator */
	int rank, nranks, nnodes;  /* nranks, nnodes 0: not told (v1 to v3; nranks then from nranks_seen, publisher) */
	char name[64];
	struct nwp_slot *slots;    /* pool (arena part), pool_size entries */
	uint64_t head;             /* atomic: next slot to hand out (launching thread) */
	uint64_t tail;             /* atomic: oldest slot not yet freed (publisher) */
	uint64_t dropped;          /* atomic: ops lost because the pool was full */
	uint64_t graph_ops;        /* atomic: calls captured into CUDA graphs */
	uint64_t last_event_ns;    /* atomic: realtime of the last NCCL event of this comm (hot paths store it) */
	int64_t off_min;           /* atomic: min(realtime - GPU clock) seen in this window */
	int64_t off_prev;          /* publisher: the same over the previous window */
	uint64_t off_window;       /* publisher: index of the current 10 s window */
	/*
	 * publisher-only state. The stats file is never mapped: the figures
	 * live in a private image of it (hdr, rec and ring point into img) and
	 * nwp_sync copies what changed into the file with pwrite, so nothing
	 * done to the file from outside can fault this process (statsfile.c).
	 */
	int fd;                    /* the stats file, -1 while there is none */
	void *img;                 /* private image of the whole file, img_len bytes */
	size_t img_len;
	struct nws_header *hdr;
	struct nws_record *rec;    /* [NWS_NOPS][NWS_NBUCKETS] */
	struct nws_opent *ring;
	uint32_t ring_len;
	uint64_t ring_head;
	struct nwp_filesync {      /* what the file holds of the image (statsfile.c) */
		uint64_t rec_dirty[(NWS_NOPS * NWS_NBUCKETS + 63) / 64]; /* records changed since the last sync */
		uint64_t ring_synced;  /* ring entries up to this idx are in the file */
		uint64_t sync_ns;      /* monotonic time of the last sync */
		uint64_t hdr_ns;       /* ... of the last header write */
		uint64_t retry_ns;     /* no file, or writes failed: try again from then */
		int64_t mtime_ns;      /* the file's mtime after our last write */
		int rewrite;           /* the whole image must be written again */
		uint64_t repairs;      /* times the file was found damaged from outside */
		struct nws_header *pub;/* the header as last written */
	} fs;
	uint64_t last_end_ns;      /* busy-time union: end of the last busy interval */
	uint64_t busy_sec_start;   /* second of busy_slot[0] */
	uint64_t busy_k[64], busy_e[64];
	uint64_t busy_k_total, busy_e_total;
	uint64_t ops_total, kernel_ops, slow_ops, late, bad;
	uint64_t last_seq[NWS_NOPS];
	struct nwp_recent recent[NWS_NOPS][NWS_NBUCKETS];
	/* progress and hang state (publisher only; prog is copied into the header) */
	struct nws_progress prog;
	uint64_t seen;             /* slots up to here have been noted as enqueued */
	struct nwp_stuck {         /* an op accounted on giving up without its completion */
		int on;
		unsigned op;
		uint64_t seq, bytes, enq_ns;
	} stuck;
	uint64_t hung_event_ns;    /* last_event_ns when the hang was declared */
	uint64_t peer_check_ns;    /* last look at peers' files */
	struct nwp_logstate logst; /* periodic log line (publisher) */
	char path[512];
};

/* The periodic log lines' configuration and state (set at init, then publisher only). */
#define NWP_LOG_MAXRANKS 32
struct nwp_logcfg {
	uint64_t every_ns;         /* NCCLWATCH_LOG_S (0: off, the default) */
	int to_stderr;             /* NCCLWATCH_LOG=stderr: also write(2) to stderr */
	int all_ranks;             /* NCCLWATCH_LOG_RANKS=all */
	int nranks;                /* ... else these ranks of each communicator (default: 0) */
	int ranks[NWP_LOG_MAXRANKS];
	int off;                   /* turned off by a bad setting or a failed write */
	int said;                  /* the message below went to NCCL's logger */
	uint64_t skipped;          /* lines not written to stderr because it would have blocked */
	char msg[160];             /* why the lines are off */
};

/*
 * The figures of one log line. Percentages below 0 are unknown and left
 * out of the line: exposed_pct stays so until exposed communication is
 * measured (docs/plugin.md, "Log lines").
 */
struct nwp_logfig {
	uint64_t comm_hash;
	const char *name;          /* communicator name, "" or NULL when none */
	int rank, nranks;
	uint64_t t_ms;             /* realtime of the line, ms */
	uint64_t interval_ms;
	uint64_t ops, bytes, slow_ops;
	int ntop;                  /* entries of top_op/top_gbs: ops by kernel-timed time, most first */
	unsigned top_op[2];
	double top_gbs[2];         /* busbw, GB/s */
	double busy_pct;
	double exposed_pct;
	int hung;
	const char *via;           /* "interposer" when it wrote the line; NULL: the profiler plugin */
};

/* The interposer's value of nwp_global.abi (profiler interfaces are 1 to 6). */
#define NWP_ABI_INTERPOSER 255

/*
 * A front end other than the profiler plugin (the interposer, ipose.c),
 * set in nwp_g.front before the first nwp_init and never changed: it
 * decides the kernel-time mode, writes its own word into the header's
 * abi, and gets a call from the publisher each period (lock held, before
 * the communicators are drained). The profiler plugin leaves it NULL.
 */
struct nwp_front {
	uint32_t abi_word;         /* the header's abi (NWS_ABI_INTERPOSER | NCCL version code << 8) */
	int kmode;                 /* enum nws_kmode in force: ON (every op timed), AUTO (sampled), OFF */
	const char *what;          /* how it times ops, for its INFO line per communicator */
	void (*tick)(uint64_t now_rt);
};

/* Process-wide state. */
struct nwp_global {
	const struct nwp_front *front; /* NULL: the profiler plugin */
	uint64_t bad_events;       /* atomic: events we could not use, all comms */
	uint64_t late_events;      /* atomic */
	int thread_gen;            /* atomic: the publisher runs while equal to its start value */
	pthread_mutex_t lock;      /* init/finalize/publisher only */
	int disabled;              /* atomic */
	int logged;                /* atomic: the one log line was written */
	nwp_logfn_t logfn;
	int *mask_ptr;             /* atomic: NCCL's activation mask (one int per process); see nwp_mask_ptr */
	int mask;                  /* last value stored (publisher) */
	int base_mask;             /* Coll|P2p(|ProxyOp) */
	int kernel_on;             /* policy state */
	int burst_left;            /* atomic: KernelCh sample ops left */
	int kmode;                 /* enum nws_kmode (off before v3: no KernelCh events) */
	int abi;                   /* profiler interface NCCL loaded: 1 to 6; NWP_ABI_INTERPOSER */
	int pid;
	uint64_t proc_start;
	char host[64];
	char dir[400];
	uint32_t pool_size;        /* power of two */
	uint32_t ring_len;
	double slow_factor;
	uint64_t slow_floor_ns;
	uint64_t dump_min_ns;
	uint64_t sample_ns;
	uint64_t period_ns;
	uint64_t busy_window_s;
	uint64_t hang_ns;          /* NCCLWATCH_HANG_S (0: off) */
	int hang_dump;             /* a hang was declared this cycle: dump once */
	struct nwp_slot *arena;    /* max_comms * pool_size slots */
	size_t arena_len;
	int max_comms;
	struct nwp_comm **comms;   /* max_comms entries */
	int ncomms_alive;
	pthread_t thread;
	int thread_running;
	int stop;                  /* atomic: publisher should exit */
	uint64_t mask_switches;
	uint64_t last_switch_ns;
	uint64_t last_sample_ns;
	uint64_t burst_started_ns;
	uint64_t dumps;
	uint64_t last_auto_dump_ns;
	int dump_requested;        /* atomic: SIGUSR2 or trigger file */
	int64_t trigger_mtime;     /* last trigger file mtime acted on (ns) */
	uint64_t last_trigger_check_ns;
	/* cost model window (all comms) */
	double win_exec_ns, win_cost_ns;
	uint64_t win_start_ns;
	char last_dump[128];
	char disabled_reason[128];
	struct nwp_logcfg log;     /* periodic log lines (logline.c) */
};

extern struct nwp_global nwp_g;
extern struct nwp_comm *nwp_comm_table;  /* max_comms entries (register.c) */
extern char nwp_unwatched_ctx;           /* the context of communicators not watched */

/* Is ctx one of the contexts init handed out (alive or not)? */
static inline int nwp_ctx_ours(const void *ctx)
{
	uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)nwp_comm_table;
	if (ctx == &nwp_unwatched_ctx)
		return 1;
	return base && p >= base && p < base + (uintptr_t)nwp_g.max_comms * sizeof(struct nwp_comm) &&
	       (p - base) % sizeof(struct nwp_comm) == 0;
}

/* Our live communicator behind a context, or NULL (unwatched, finalized, or not ours). */
static inline struct nwp_comm *nwp_ctx_comm(void *ctx)
{
	if (ctx == &nwp_unwatched_ctx || !nwp_ctx_ours(ctx))
		return NULL;
	struct nwp_comm *c = ctx;
	return __atomic_load_n(&c->alive, __ATOMIC_ACQUIRE) ? c : NULL;
}

/* A step split out of a hot function (event callbacks, accounting): always inlined, so naming it adds no call. */
#define NWP_HOT static inline __attribute__((always_inline))

/* Clocks. */
uint64_t nwp_realtime_ns(void);
uint64_t nwp_mono_ns(void);

/* Disable recording for good: mask 0, one log line through NCCL's logger (or stderr). */
void nwp_disable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NCCL's log levels as the plugin uses them. */
#define NWP_LOG_WARN 2
#define NWP_LOG_INFO 3
/*
 * One line through NCCL's logger (subsystem INIT); with no logger (profiler
 * v1 to v3 give none) WARN lines go to stderr, and INFO lines too when
 * NCCL_DEBUG is INFO or TRACE. Never blocks: a stderr that cannot take
 * the line now loses it.
 */
void nwp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* NCCL's activation mask int (NULL before the first init): read and written with atomics only. */
static inline int *nwp_mask_ptr(void)
{
	return __atomic_load_n(&nwp_g.mask_ptr, __ATOMIC_ACQUIRE);
}

/* Hot-path counters and tables kept in core.c, for the publisher. */
uint64_t nwp_bad_events(void);
uint64_t nwp_late_events(void);
int *nwp_thread_gen(void);
struct nwp_comm *nwp_comm_at(int i);

#define NWP_MS 1000000ull          /* nanoseconds */
#define NWP_SEC 1000000000ull

/* Seqlock writer (nwstats.h): make gen odd before writing, even after. */
static inline void nwp_w_begin(uint64_t *gen)
{
	uint64_t g = __atomic_load_n(gen, __ATOMIC_RELAXED);
	__atomic_store_n(gen, g + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void nwp_w_end(uint64_t *gen)
{
	uint64_t g = __atomic_load_n(gen, __ATOMIC_RELAXED);
	__atomic_store_n(gen, g + 1, __ATOMIC_RELEASE);
}

/*
 * Registration (register.c): init and finalize of every interface version
 * (known: init named the communicator, v4+); the stats file of a
 * communicator named since (v1 to v3; publisher, lock held: 0 when it has
 * one); what interface abi cannot give (NWS_BLIND_*).
 */
int nwp_init(int abi, int known, void **context, uint64_t comm_hash, int *mask, const char *name, int nnodes,
             int nranks, int rank, nwp_logfn_t logfn);
int nwp_finalize(void *context);
int nwp_comm_ready(struct nwp_comm *c);
uint32_t nwp_blind(int abi, int nranks_known);

/* Publisher thread and configuration (publish.c). */
int nwp_config(char *err, size_t errlen);
int nwp_thread_start(void);
pthread_t nwp_thread_stop(void);
/*
 * Stats files (statsfile.c; callers hold nwp_g.lock). nwp_comm_open makes
 * c's private image and its file (-1 with err when it cannot); the figures
 * go into the image, and nwp_sync copies what changed into the file under
 * the seqlocks (at most every 50 ms, the header at least every second;
 * force: now, as at finalize). nwp_sync never fails the plugin: a file
 * damaged from outside (truncated, overwritten, removed) is written again
 * whole, with one WARN line per process, and a file that cannot be written
 * is tried again every second.
 */
int nwp_comm_open(struct nwp_comm *c, char *err, size_t errlen);
void nwp_comm_close(struct nwp_comm *c);
void nwp_publish_header(struct nwp_comm *c, uint64_t now_rt, uint32_t state);
void nwp_sync(struct nwp_comm *c, int force);
/* src into dst (room for len bytes), cut to fit, the rest of dst zeroed; src may be NULL. */
void nwp_copy_str(char *dst, size_t len, const char *src);
/* Accounting of finished slots (account.c). */
void nwp_drain(struct nwp_comm *c, uint64_t now_rt, int final);
unsigned nwp_slot_op(const struct nwp_comm *c, const struct nwp_slot *s, unsigned *dtype, uint64_t *bytes);
/* v1, v2: take the communicator size the hot path learned, once (publisher). */
void nwp_learned(struct nwp_comm *c);

/* Periodic log lines (logline.c): configuration from the environment (never fails the plugin), the publisher's look at c, the line itself. */
void nwp_logline_config(void);
void nwp_logline_tick(struct nwp_comm *c, uint64_t now_rt);
size_t nwp_logline_format(char *buf, size_t len, const struct nwp_logfig *f);

/* Progress and hangs (hang.c; publisher thread only). */
void nwp_note_enqueued(struct nwp_comm *c, uint64_t head);
void nwp_note_inflight(struct nwp_comm *c, uint64_t tail, uint64_t head, int proxy_on);
void nwp_hang_check(struct nwp_comm *c, uint64_t now_rt);
void nwp_dump_inflight(FILE *f, const struct nwp_comm *c, uint64_t now_rt);
void nwp_dump_progress(FILE *f, const struct nwp_comm *c, int first);
/* Trace dumps (trace.c). */
int nwp_dump_all(const char *why);
void nwp_json_str(FILE *f, const char *s);

/*
 * Exposed communication (overlap.c, NCCLWATCH_OVERLAP=1): config from
 * nwp_config; tick and shutdown on the publisher thread with nwp_g.lock
 * held; fill copies the figures into a header (nwp_g.lock held).
 */
int nwp_overlap_config(char *err, size_t errlen);
void nwp_overlap_tick(uint64_t now_mono);
void nwp_overlap_shutdown(void);
void nwp_overlap_fill(struct nws_overlap *o);
/*
 * The last window's exposed communication as shares of its wall time and
 * of its NCCL kernel time (for the periodic log line); 0 while no window
 * is done (or overlap is off), 1 with both set. Publisher thread.
 */
int nwp_overlap_latest(double *exposed_share_of_wall, double *exposed_share_of_nccl);

/*
 * Identity (ident.c): fill id with the writer's PID namespace, the GPU of
 * the calling thread's current CUDA context (from the driver already
 * loaded; flags without NWS_IDENT_GPU and uuid "" when none) and the job identifiers in the
 * environment. Called by the thread in NCCL's init.
 */
void nwp_ident_fill(struct nws_ident *id);

#endif
