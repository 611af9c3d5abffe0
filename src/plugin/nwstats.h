/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nwstats: the fixed layout of the per-rank stats file that the profiler
 * plugin publishes and `ncclwatch top` / `ncclwatch exporter` read.
 *
 * This header is the one contract between a training process and the
 * tools: plain C, fixed-width types, no pointers, no padding left to the
 * compiler (every struct is checked by _Static_assert below). A change to
 * any struct here bumps NWS_VERSION.
 *
 * One file per rank of each communicator (process x communicator), in
 * $NCCLWATCH_DIR (default /dev/shm/ncclwatch-<uid>, mode 0700; files 0600),
 * named "<host>.<pid>.<commhash as 16 hex>.r<rank>.nws". The file is
 *
 *   struct nws_header                     at 0
 *   struct nws_record [NWS_NOPS][NWS_NBUCKETS]   at header.off_records
 *   struct nws_opent  [header.ring_len]   at header.off_ring
 *
 * Writer: one thread per process (the plugin's publisher), never the
 * training job's threads. It writes the file with pwrite from a private
 * copy, never through a mapping (a file shortened from outside must not
 * fault the job), each part odd, then its body, then even, in separate
 * writes. Readers never lock anything: every record, every
 * ring entry and the header's live part carry a generation counter used as
 * a seqlock. The writer makes it odd, writes, then makes it even again
 * (release ordering); a reader copies the part, re-reads the counter and
 * retries when it was odd or changed (nws_read_begin / nws_read_retry).
 *
 * The identity part of the header (everything before live_gen) is written
 * once before `magic` is stored; a file whose magic is not NWS_MAGIC yet is
 * still being created. The ident struct at the end of the header (who runs
 * the rank: GPU, pod, job) is also written once before magic; it sits after
 * the live part only so that the layout grows at its end.
 *
 * Byte counts follow nccl-tests' "size" (DESIGN.md, busbw): all_reduce,
 * broadcast, reduce, send, recv: count x type size; all_gather,
 * reduce_scatter, alltoall, gather, scatter: the whole buffer
 * (count x type size x nranks). So busbw = bytes / time x nws_busbw_factor.
 *
 * Timestamps are CLOCK_REALTIME nanoseconds (so ranks on one host, and
 * hosts with synchronised clocks, can be compared). GPU kernel timestamps
 * (GPU globaltimer) are mapped onto CLOCK_REALTIME by the plugin.
 *
 * A layout-only contract, so there is no nwstats.c: the structs, the
 * constants and the few small helpers (names, buckets, bins, busbw factors,
 * seqlock reads, all static inline) are here, and the plugin (which links
 * only libc) and the tools compile the very same definitions.
 */
#ifndef NW_NWSTATS_H
#define NW_NWSTATS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define NWS_MAGIC   UINT64_C(0x315354415457434e) /* "NCWTATS1" read as little-endian bytes */
#define NWS_VERSION 4u  /* readers also take versions 2 and 3 (parts missing at the end read as zero) */

/* Operations, in this order everywhere (stats files, tools, metrics). */
enum nws_op {
	NWS_OP_ALL_REDUCE,
	NWS_OP_ALL_GATHER,
	NWS_OP_REDUCE_SCATTER,
	NWS_OP_BROADCAST,
	NWS_OP_REDUCE,
	NWS_OP_ALLTOALL,
	NWS_OP_GATHER,
	NWS_OP_SCATTER,
	NWS_OP_SEND,
	NWS_OP_RECV,
	NWS_OP_SENDRECV,
	NWS_OP_OTHER,      /* anything NCCL names that we do not know */
	NWS_NOPS
};

/*
 * Size buckets (power of two): bucket 0 holds 0 bytes; bucket b >= 1 holds
 * [2^(b-1), 2^b) bytes; the last bucket holds everything from 2^40 up.
 */
#define NWS_NBUCKETS 42

/*
 * Time histogram (fixed log bins, microseconds): bin 0 holds < 1 us; bin i
 * in 1..30 holds [2^(i-1), 2^i) us; bin 31 holds >= 2^30 us.
 */
#define NWS_NHIST 32

/* Where an execution time came from. */
enum nws_src {
	NWS_SRC_KERNEL, /* GPU kernel timestamps (KernelCh events): exact execution time */
	NWS_SRC_PROXY,  /* proxy thread network progress (ProxyOp events): network part only */
	NWS_SRC_CPU,    /* CPU enqueue (Coll/P2p start to stop): launch cost, NOT execution */
	NWS_NSRC
};

/* Default number of entries in the per-file operation ring (flight recorder). */
#define NWS_RING_DEFAULT 1024

/* Header states. */
enum nws_state {
	NWS_STATE_RUNNING  = 1,
	NWS_STATE_FINISHED = 2, /* NCCL finalized the communicator; figures are final */
	NWS_STATE_DISABLED = 3  /* the plugin disabled itself; see disabled_reason */
};

/* Kernel-timestamp policy in force (header.kernel_mode). */
enum nws_kmode {
	NWS_KMODE_AUTO  = 0, /* KernelCh for large ops, rare samples for small ones */
	NWS_KMODE_ON    = 1, /* KernelCh on every op (NCCLWATCH_KERNEL=on) */
	NWS_KMODE_OFF   = 2  /* never (NCCLWATCH_KERNEL=off) */
};

/* Timing of one time source inside one record. */
struct nws_timing {
	uint64_t count;            /* ops timed by this source */
	uint64_t bytes;            /* bytes of those ops (for busbw = bytes / sum) */
	uint64_t sum_ns;           /* total execution (or enqueue, for CPU) time */
	uint64_t min_ns;           /* 0 when count == 0 */
	uint64_t max_ns;
	uint64_t hist[NWS_NHIST];  /* see NWS_NHIST */
};

/* Aggregate of one operation x size bucket. Every op counts in exactly one
 * record (by op and bytes) and in exactly one timing (by its source). */
struct nws_record {
	uint64_t gen;              /* seqlock: odd while the writer updates */
	uint64_t count;            /* ops */
	uint64_t bytes;            /* sum of bytes (nccl-tests size) */
	uint64_t last_ns;          /* realtime of the last op's end (or enqueue) */
	struct nws_timing t[NWS_NSRC];
};

/* Flight-recorder entry: one operation. */
struct nws_opent {
	uint64_t gen;              /* seqlock */
	uint64_t idx;              /* 1-based running op index in this file; 0: empty */
	uint64_t seq;              /* NCCL's per-collective sequence number (flags & NWS_OPF_SEQ) */
	uint64_t bytes;            /* nccl-tests size */
	uint64_t count;            /* elements, as NCCL gave them (per rank) */
	uint64_t enq_ns;           /* realtime when NCCL started the event (enqueue) */
	uint64_t enq_end_ns;       /* realtime when NCCL stopped it (enqueued) */
	uint64_t start_ns;         /* execution start for src (KERNEL/PROXY); enq_ns for CPU */
	uint64_t end_ns;           /* execution end; enq_end_ns for CPU */
	uint16_t op;               /* enum nws_op */
	uint8_t src;               /* enum nws_src */
	uint8_t flags;             /* NWS_OPF_* */
	uint8_t nchannels;
	uint8_t nwarps;
	uint8_t dtype;             /* ncclDataType_t numbering; 255 unknown */
	uint8_t nkch;              /* KernelCh events that reported (channels timed) */
	int32_t peer;              /* root for rooted collectives, peer for p2p, -1 */
	uint32_t _pad0;
	char algo[16];             /* "Ring", "Tree", ... or "" */
	char proto[8];             /* "LL", "LL128", "Simple" or "" */
};

#define NWS_OPF_SEQ     0x01u  /* seq is valid (collectives) */
#define NWS_OPF_SLOW    0x02u  /* far slower than recent peers (triggered a dump) */
#define NWS_OPF_PARTIAL 0x04u  /* some expected kernel events never came */
#define NWS_OPF_INCOMPLETE 0x08u /* its completion was expected and never seen: accounted on giving up (times are the enqueue) */

/* Which completion events this file's plugin sees (nws_progress.completion). */
enum nws_done_src {
	NWS_DONE_NONE    = 0, /* none: only the enqueue is seen (KernelCh off, one node) */
	NWS_DONE_SAMPLED = 1, /* KernelCh on sampled ops only (auto): completion of those */
	NWS_DONE_KERNEL  = 2, /* KernelCh on every op: every completion */
	NWS_DONE_PROXY   = 3  /* network ProxyOps (several nodes, KernelCh off): ops with network traffic */
};

/* The plugin's own hang verdict (nws_progress.hang, hang_why). */
enum nws_hang { NWS_HANG_NO = 0, NWS_HANG_YES = 1 };
enum nws_hang_why { NWS_HANG_WHY_NONE = 0, NWS_HANG_WHY_INFLIGHT = 1, NWS_HANG_WHY_PEERS = 2 };

/*
 * Progress of one rank on one communicator (the end of the header, under
 * live_gen). "Enqueued" is NCCL's Coll/P2p start; "complete" is a
 * completion event the plugin saw (all KernelCh stops of the op, or all its
 * ProxyOps stopped): see `completion` for which ones this mode can see.
 * Ops whose completion cannot be seen never count as in flight.
 */
struct nws_progress {
	uint64_t last_event_ns;    /* realtime of the last event NCCL raised on this comm (0 none) */
	uint64_t enq_ns;           /* newest op enqueued: realtime of its Coll/P2p start */
	uint64_t enq_seq;          /* its NCCL seq (collectives) or per-op count - 1 (p2p) */
	uint64_t enq_bytes;        /* its nccl-tests size */
	uint64_t done_ns;          /* newest op seen complete: realtime of its end */
	uint64_t done_seq;
	uint64_t done_bytes;
	uint64_t inflight;         /* ops enqueued with completion expected and not seen yet */
	uint64_t oldest_ns;        /* enqueue realtime of the oldest of those; 0 none */
	uint64_t oldest_seq;
	uint64_t oldest_bytes;
	uint64_t hung_ns;          /* realtime the plugin declared the comm hung; 0 while not hung */
	uint64_t hang_after_ns;    /* NCCLWATCH_HANG_S (0: hang detection off) */
	uint64_t hangs;            /* hangs declared since start */
	uint64_t enq_count[NWS_NOPS];  /* per op: newest NCCL seq enqueued + 1 (collectives), ops enqueued (p2p) */
	uint64_t done_count[NWS_NOPS]; /* the same for ops seen complete */
	uint32_t enq_op;           /* enum nws_op of the newest enqueued op; NWS_NOPS none */
	uint32_t done_op;          /* ... of the newest seen complete */
	uint32_t oldest_op;        /* ... of the oldest in flight */
	uint32_t completion;       /* enum nws_done_src */
	uint32_t hang;             /* enum nws_hang */
	uint32_t hang_why;         /* enum nws_hang_why */
};

struct nws_header {
	/* --- identity: written once, before magic --- */
	uint64_t magic;            /* NWS_MAGIC */
	uint32_t version;          /* NWS_VERSION */
	uint32_t header_size;      /* sizeof(struct nws_header) */
	uint64_t file_size;        /* whole file */
	uint32_t nops;             /* NWS_NOPS */
	uint32_t nbuckets;         /* NWS_NBUCKETS */
	uint32_t nhist;            /* NWS_NHIST */
	uint32_t nsrc;             /* NWS_NSRC */
	uint32_t record_size;      /* sizeof(struct nws_record) */
	uint32_t opent_size;       /* sizeof(struct nws_opent) */
	uint64_t off_records;      /* offset of records[NWS_NOPS][NWS_NBUCKETS] */
	uint64_t off_ring;         /* offset of ring[ring_len] */
	uint32_t ring_len;         /* entries in the ring */
	int32_t pid;
	uint64_t proc_start;       /* field 22 of /proc/<pid>/stat (clock ticks since boot) */
	uint64_t created_ns;       /* realtime when the file was made */
	uint64_t comm_hash;        /* NCCL's commHash / commId: same on every rank of the comm */
	int32_t rank;
	int32_t nranks;
	int32_t nnodes;
	uint32_t abi;              /* who wrote it: profiler interface 1 to 6, or the interposer (see NWS_ABI_INTERPOSER) */
	char hostname[64];
	char comm_name[64];        /* user-given communicator name, may be "" */
	char plugin_version[16];

	/* --- live part, under live_gen --- */
	uint64_t live_gen;         /* seqlock for everything below */
	uint64_t updated_ns;       /* realtime of the last publish (heartbeat) */
	uint32_t state;            /* enum nws_state */
	uint32_t kernel_mode;      /* enum nws_kmode */
	uint32_t mask;             /* NCCL event activation mask the plugin set last */
	uint32_t graph_ops;        /* calls NCCL said were captured into a CUDA graph (v5+); replays are unseen */
	uint64_t ops_total;        /* ops accounted in records */
	uint64_t ops_dropped;      /* ops not recorded because the in-flight pool was full */
	uint64_t events_bad;       /* malformed or unknown events ignored */
	uint64_t events_late;      /* kernel events for an op already accounted */
	uint64_t mask_switches;    /* times KernelCh was switched on or off */
	uint64_t kernel_ops;       /* ops timed from kernel timestamps */
	uint64_t slow_ops;         /* ops flagged NWS_OPF_SLOW */
	uint64_t dumps;            /* trace dumps written */
	uint64_t ring_head;        /* idx of the newest ring entry (0: none) */
	uint64_t last_seq[NWS_NOPS];  /* newest NCCL seq number seen per op (+1; 0 none) */
	/* busy time: fraction of wall time with an op of this comm executing */
	uint64_t busy_window_ns;   /* length of the sliding window */
	uint64_t busy_kernel_ns;   /* kernel-timed busy time inside the window (exact) */
	uint64_t busy_est_ns;      /* plus untimed ops estimated from their bucket's kernel mean */
	uint64_t busy_kernel_total_ns; /* the same, cumulative since start (counters) */
	uint64_t busy_est_total_ns;
	uint64_t wall_total_ns;    /* wall time the cumulative figures cover */
	char last_dump[128];       /* file name of the last trace dump, "" when none */
	char disabled_reason[128]; /* why the plugin stopped, "" while running */

	/* --- who runs this rank (version 2): written once before magic, never changed --- */
	struct nws_ident {
		uint64_t pidns;        /* inode of the writer's /proc/self/ns/pid; 0 unknown */
		int32_t gpu;           /* GPU index (CUDA ordinal through the visible-devices lists) */
		uint32_t flags;        /* NWS_IDENT_*: which of the figures above are known (zero: none) */
		char uuid[48];         /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi's form) or "" */
		char pod[128];         /* POD_NAME (Kubernetes Downward API) or "" */
		char pod_namespace[64];/* POD_NAMESPACE */
		char container[64];    /* CONTAINER_NAME */
		char slurm_job[32];    /* SLURM_JOB_ID */
		char torchelastic[64]; /* TORCHELASTIC_RUN_ID */
		char job[128];         /* NCCLWATCH_JOB (set by the user) */
	} ident;

	struct nws_progress prog;  /* version 2: progress and hang verdict */

	/*
	 * Version 3: exposed communication, measured with CUPTI over a window
	 * of kernel activity every period (NCCLWATCH_OVERLAP=1, docs/plugin.md).
	 * Per process: every file of the process holds the same figures. Under
	 * live_gen. A version-2 file has none of it (readers see it zeroed:
	 * state NWS_OVL_UNKNOWN).
	 */
	struct nws_overlap {
		uint64_t win_start_ns; /* realtime of the last finished window's start; 0: none yet */
		uint64_t win_end_ns;
		uint64_t wall_ns;      /* its length on the GPU's clock */
		uint64_t compute_ns;   /* union of non-NCCL kernels in it, all streams */
		uint64_t nccl_ns;      /* union of NCCL kernels in it */
		uint64_t exposed_ns;   /* NCCL time with no compute kernel running */
		uint64_t windows;      /* windows done since start */
		uint64_t alone_windows;/* consecutive windows, up to the last, with exposed > 90% of NCCL time */
		uint64_t kernels;      /* kernel records in the last window */
		uint64_t cost_ns;      /* CPU time the last window cost the process (callbacks, arithmetic) */
		uint64_t period_ns;    /* one window every period_ns */
		uint32_t state;        /* enum nws_ovl_state */
		uint32_t dropped;      /* last window: kernel records past the room kept, plus buffers CUPTI asked for and did not get */
		char reason[96];       /* why it is off (state OFF or FAILED), "" otherwise */
	} ovl;

	/*
	 * Version 4: what the profiler interface NCCL loaded cannot give (NCCL
	 * 2.23 to 2.26 load v1 to v3, which give less than v4 to v6), what the
	 * plugin learned instead, and repairs of the file. Under live_gen.
	 * Older files read it as zero: nothing known missing, as their plugins
	 * took v4 to v6 only.
	 */
	struct nws_mode {
		uint32_t blind;        /* NWS_BLIND_*: what this interface cannot give */
		int32_t nranks;        /* communicator size as known now: the header's, or learned from the ops (v1, v2); 0 unknown */
		uint64_t repairs;      /* times the file was found damaged from outside (truncated, overwritten, removed) and written again */
	} mode;
};

/*
 * nws_mode.blind: what a profiler interface cannot give (docs/plugin.md,
 * "NCCL versions"). Readers say so instead of showing a figure as 0.
 */
#define NWS_BLIND_KERNEL      0x01u /* no KernelCh events (v1, v2): no kernel execution times, busy time or kernel-start arrivals */
#define NWS_BLIND_GPUCLOCK    0x02u /* KernelCh without GPU timestamps (v3): kernel times are when the proxy thread saw each channel start and end */
#define NWS_BLIND_NRANKS      0x04u /* init gives no communicator size (v1-v3): header nranks 0; mode.nranks once an op told it (v1, v2) */
#define NWS_BLIND_SPLIT_BYTES 0x08u /* size never told (v3): all_gather/reduce_scatter bytes are one rank's part, not nccl-tests' whole buffer */
#define NWS_BLIND_NNODES      0x10u /* init gives no node count (v1-v3): header nnodes 0 */
#define NWS_BLIND_GRAPH       0x20u /* no API events (v1-v4): calls captured into CUDA graphs are not seen (graph_ops stays 0) */
#define NWS_BLIND_IDLE        0x40u /* init names no communicator (v1-v3): its file appears at its first operation */
#define NWS_BLIND_ALGO        0x80u /* no algorithm, protocol or channel count (the interposer: NCCL's API tells none) */
#define NWS_NBLIND 8

/* Short name of blind bit i (0..NWS_NBLIND-1), as the exporter's label values and top's notes use it. */
static inline const char *nws_blind_name(unsigned i)
{
	static const char *const names[NWS_NBLIND] = {
		"kernel_times", "gpu_timestamps", "comm_size", "split_bytes", "node_count", "graph_captures", "idle_comms",
		"algorithm"
	};
	return i < NWS_NBLIND ? names[i] : "unknown";
}

/* What blind bit i means, in a few words for people ("no kernel execution times"). */
static inline const char *nws_blind_text(unsigned i)
{
	static const char *const text[NWS_NBLIND] = {
		"no kernel execution times (times only from network proxy ops), no busy time",
		"kernel times are when NCCL's proxy thread saw each channel start and end, not GPU timestamps",
		"no communicator size from NCCL, so no busbw (v1 and v2 learn it from the first all_gather or reduce_scatter)",
		"all_gather and reduce_scatter bytes are one rank's part (communicator size unknown)",
		"no node count",
		"calls captured into CUDA graphs are not seen",
		"communicators appear at their first operation",
		"no algorithm, protocol or channel count"
	};
	return i < NWS_NBLIND ? text[i] : "unknown";
}

/* The NCCL versions that load profiler interface abi ("2.24-2.25"); "?" for another number. */
static inline const char *nws_abi_nccl(unsigned abi)
{
	static const char *const v[7] = { "?", "2.23", "2.24-2.25", "2.26", "2.27", "2.28", "2.29+" };
	return abi < 7 ? v[abi] : "?";
}

/*
 * header.abi of a file written by the interposer (libncclwatch-interpose.so,
 * LD_PRELOADed: NCCL's API wrapped, for NCCL 2.18 to 2.22, which have no
 * profiler interface): this value in the low byte, and above it the
 * version code of the NCCL it wraps as ncclGetVersion says it (22105 for
 * 2.21.5; 0 when unknown). The profiler plugin writes 1 to 6.
 */
#define NWS_ABI_INTERPOSER 0xffu

static inline int nws_abi_interposer(uint32_t abi)
{
	return (abi & 0xffu) == NWS_ABI_INTERPOSER;
}

/* The NCCL version code in an interposer's abi (0: unknown or not the interposer). */
static inline unsigned nws_abi_nccl_code(uint32_t abi)
{
	return nws_abi_interposer(abi) ? abi >> 8 : 0;
}

/*
 * Readers count files per mode: index 1 to 6 the profiler interfaces,
 * NWS_MODE_INTERPOSER the interposer, 0 anything else (a newer writer).
 */
#define NWS_MODE_INTERPOSER 7
#define NWS_NMODES 8
static inline unsigned nws_mode_index(uint32_t abi)
{
	return abi >= 1 && abi <= 6 ? abi : nws_abi_interposer(abi) ? NWS_MODE_INTERPOSER : 0;
}

/* nws_overlap.state */
enum nws_ovl_state {
	NWS_OVL_UNKNOWN = 0, /* a version-2 file: the plugin could not say */
	NWS_OVL_OFF = 1,     /* not asked for (NCCLWATCH_OVERLAP unset or 0) */
	NWS_OVL_ON = 2,      /* measuring: a window every period */
	NWS_OVL_STOPPED = 3  /* asked for and turned off: reason says why (CUPTI missing or busy, budget, error) */
};

/* Exposed share of NCCL time above which a window counts as "collectives run alone". */
#define NWS_OVL_ALONE_SHARE 0.9

_Static_assert(sizeof(struct nws_timing) == 5 * 8 + NWS_NHIST * 8, "nws_timing layout");
_Static_assert(sizeof(struct nws_record) == 4 * 8 + NWS_NSRC * sizeof(struct nws_timing), "nws_record layout");
_Static_assert(sizeof(struct nws_opent) == 9 * 8 + 8 + 8 + 24, "nws_opent layout");
#define NWS_IDENT_GPU 0x01u   /* ident.gpu is known */

_Static_assert(sizeof(struct nws_ident) == 8 + 8 + 48 + 128 + 64 + 64 + 32 + 64 + 128, "nws_ident layout");
_Static_assert(sizeof(struct nws_progress) == 14 * 8 + 2 * NWS_NOPS * 8 + 6 * 4, "nws_progress layout");
_Static_assert(sizeof(struct nws_overlap) == 11 * 8 + 2 * 4 + 96, "nws_overlap layout");
_Static_assert(sizeof(struct nws_mode) == 2 * 4 + 8, "nws_mode layout");
_Static_assert(offsetof(struct nws_header, mode) % 8 == 0, "nws_mode is 8-aligned");
_Static_assert(sizeof(struct nws_header) % 8 == 0, "nws_header layout");
_Static_assert(offsetof(struct nws_header, ovl) % 8 == 0, "nws_overlap is 8-aligned");
/* What a version-2 header was: everything before the overlap part; version 3: before the mode part. */
#define NWS_HEADER_V2_SIZE ((uint32_t)offsetof(struct nws_header, ovl))
#define NWS_HEADER_V3_SIZE ((uint32_t)offsetof(struct nws_header, mode))

/* Lower-case op names as the tools print them ("all_reduce", ..., "send"). */
static inline const char *nws_op_name(unsigned op)
{
	static const char *const names[NWS_NOPS] = {
		"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
		"gather", "scatter", "send", "recv", "sendrecv", "other"
	};
	return op < NWS_NOPS ? names[op] : "other";
}

/* Source names ("kernel", "proxy", "cpu"). */
static inline const char *nws_src_name(unsigned src)
{
	static const char *const names[NWS_NSRC] = { "kernel", "proxy", "cpu" };
	return src < NWS_NSRC ? names[src] : "unknown";
}

/* Size bucket of a byte count (see NWS_NBUCKETS). */
static inline unsigned nws_size_bucket(uint64_t bytes)
{
	unsigned b = 0;
	while (bytes && b < NWS_NBUCKETS - 1) {
		bytes >>= 1;
		b++;
	}
	return b;
}

/* Smallest byte count that falls in bucket b (0, 1, 2, 4, ...). */
static inline uint64_t nws_bucket_lo(unsigned b)
{
	return b == 0 ? 0 : UINT64_C(1) << (b - 1);
}

/* Histogram bin of a duration in nanoseconds (see NWS_NHIST). */
static inline unsigned nws_time_bin(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned i = 0;
	while (us && i < NWS_NHIST - 1) {
		us >>= 1;
		i++;
	}
	return i;
}

/* Upper bound of bin i in microseconds (1, 2, 4, ...); 0 for the last (open) bin. */
static inline uint64_t nws_bin_hi_us(unsigned i)
{
	return i >= NWS_NHIST - 1 ? 0 : UINT64_C(1) << i;
}

/*
 * busbw factor for nranks (nccl-tests' rules): all_reduce 2(n-1)/n;
 * all_gather, reduce_scatter, alltoall, gather, scatter (n-1)/n; the rest 1.
 * NAN where it depends on a size that is not known (nranks 0: profiler v1
 * to v3, mode.blind NWS_BLIND_NRANKS): such a busbw is absent, never 0.
 */
static inline double nws_busbw_factor(unsigned op, int nranks)
{
	double n = (double)nranks;
	if (nranks <= 0)
		return op == NWS_OP_BROADCAST || op == NWS_OP_REDUCE || op >= NWS_OP_SEND ? 1.0 : NAN;
	switch (op) {
	case NWS_OP_ALL_REDUCE:
		return 2.0 * (n - 1.0) / n;
	case NWS_OP_ALL_GATHER:
	case NWS_OP_REDUCE_SCATTER:
	case NWS_OP_ALLTOALL:
	case NWS_OP_GATHER:
	case NWS_OP_SCATTER:
		return (n - 1.0) / n;
	default:
		return 1.0;
	}
}

/* Seqlock helpers for readers: copy between begin and retry, loop on retry. */
static inline uint64_t nws_read_begin(const uint64_t *gen)
{
	return __atomic_load_n(gen, __ATOMIC_ACQUIRE);
}

static inline int nws_read_retry(const uint64_t *gen, uint64_t begin)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (begin & 1) || __atomic_load_n(gen, __ATOMIC_RELAXED) != begin;
}

#endif
