/*
 * statsfile: the reader side of the plugin's per-rank stats files
 * (src/plugin/nwstats.h), for `ncclwatch top` and `ncclwatch exporter`.
 *
 * nw_sf_load opens every "*.nws" file in a directory, validates it (magic,
 * version, sizes, offsets: a bad file is listed in set->bad with the reason
 * and skipped, never a crash), copies a consistent snapshot of each (the
 * writer is never locked: per-part seqlocks, retried), and says whether
 * its process is alive: where the writer's pid is visible (same host and
 * PID namespace) the pid exists and its start time matches the file;
 * elsewhere (another host, a pod, `unshare --pid`) its heartbeat
 * (updated_ns, published every few ms) is less than 30 s old.
 * Files are read with pread, never mapped: one truncated or replaced while
 * it is read is reported bad, never a crash. Only regular files owned by
 * this user are read (a FIFO, link, device or another user's file is
 * skipped with the reason), and only from a directory that nobody else can
 * write. Every string taken from a file is made printable (nw_sf_sanitize).
 * It never modifies the files; it removes those of processes of this host
 * that are gone, once their last publish is older than
 * $NCCLWATCH_STALE_KEEP (a duration, default 24h; 0 keeps every file).
 */
#ifndef NW_STATSFILE_H
#define NW_STATSFILE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/nwstats.h"

/* Liveness of one file's writer. */
enum nw_sf_live {
	NW_SF_LIVE,     /* process alive, state running */
	NW_SF_FINISHED, /* the communicator was finalized (state finished) */
	NW_SF_DISABLED, /* the plugin disabled itself (hdr.disabled_reason) */
	NW_SF_STALE     /* process gone (or pid reused), or its heartbeat stopped */
};

/* One rank of one communicator: a consistent copy of its file. */
struct nw_sf_rank {
	char path[512];
	enum nw_sf_live live;
	struct nws_header hdr;                          /* copy; strings NUL-terminated */
	struct nws_record rec[NWS_NOPS][NWS_NBUCKETS];  /* copy */
	struct nws_opent *ring;                         /* copy, oldest first; owned */
	size_t nring;                                   /* valid entries in ring */
};

/* A file that could not be used, and why ("bad magic", "version 7, need 1"...). */
struct nw_sf_bad {
	char path[512];
	char why[160];
};

/* Everything in one directory. */
struct nw_sf_set {
	char dir[512];
	struct nw_sf_rank *ranks;   /* sorted by comm_hash, then rank */
	size_t n;
	struct nw_sf_bad *bad;
	size_t nbad;
	size_t nremoved;            /* old files of gone processes removed by this load */
};

/*
 * The stats directory: $NCCLWATCH_DIR when set and not empty, else
 * /dev/shm/ncclwatch-<uid>. Writes into buf; returns buf.
 */
const char *nw_sf_default_dir(char *buf, size_t len);

/*
 * Load every *.nws file in dir into set (zeroed by the call). Files that
 * fail validation go to set->bad; old files of gone processes are removed
 * (counted in set->nremoved). A bad NCCLWATCH_STALE_KEEP is an error. Returns 0, or -1 with err filled when
 * the directory itself cannot be read (a missing directory is an error:
 * "no stats directory '...': is a job running with NCCL_PROFILER_PLUGIN=ncclwatch?").
 * Free with nw_sf_set_release.
 */
int nw_sf_load(const char *dir, struct nw_sf_set *set, char *err, size_t errlen);

/* nw_sf_load_flags flags. */
enum {
	/* files whose process is gone keep only their header (rec zero, no
	   ring): for readers that hide stale ranks and only count them */
	NW_SF_HIDE_STALE = 1u << 0,
};

/* nw_sf_load with flags (NW_SF_*). */
int nw_sf_load_flags(const char *dir, unsigned flags, struct nw_sf_set *set, char *err, size_t errlen);

/*
 * Make s printable in place: control bytes, C1 controls and bytes that are
 * not UTF-8 become '?' (a terminal never gets an escape sequence from a file).
 */
void nw_sf_sanitize(char *s);

/*
 * Read and validate one file into r (ring allocated; free with
 * nw_sf_rank_release). Returns 0, or -1 with the reason in err.
 */
int nw_sf_read(const char *path, struct nw_sf_rank *r, char *err, size_t errlen);

/* Free what nw_sf_read allocated inside r (not r itself). */
void nw_sf_rank_release(struct nw_sf_rank *r);

/* Free everything nw_sf_load allocated and zero the set. */
void nw_sf_set_release(struct nw_sf_set *set);

/* "live", "finished", "disabled", "stale". */
const char *nw_sf_live_name(enum nw_sf_live l);

/*
 * Aggregate over one rank's record (op, bucket) or, with bucket < 0, over
 * all buckets of op. "Best" time is the kernel source when it timed any op,
 * else proxy; CPU enqueue times never count as execution. busbw_gbs uses
 * the timed ops only (bytes and time of the same ops), GB = 1e9; it is 0
 * with valid = 0 when no op had an execution time.
 */
struct nw_sf_agg {
	uint64_t count;        /* ops */
	uint64_t bytes;        /* bytes of all ops */
	int src;               /* enum nws_src of the times below, -1 when none */
	uint64_t timed;        /* ops with a time from src */
	uint64_t timed_bytes;
	double mean_us;        /* mean execution time of timed ops */
	double p50_us, p99_us; /* from the histogram (bin upper bound) */
	double max_us;
	double algbw_gbs, busbw_gbs;
	int valid;             /* 1 when the times above mean something */
};
void nw_sf_aggregate(const struct nw_sf_rank *r, int op, int bucket, struct nw_sf_agg *out);

/* Busy fraction of the last window (kernel-exact and estimated), 0..1; -1 when unknown. */
double nw_sf_busy_exact(const struct nw_sf_rank *r);
double nw_sf_busy_est(const struct nw_sf_rank *r);

/*
 * Straggler analysis for one communicator (all ranks of set with that
 * comm_hash). For each collective (op, seq) present in the rings of every
 * rank, the arrival of a rank is its kernel start when every rank has a
 * kernel time for it, else its enqueue time; lateness = arrival minus the
 * earliest arrival. Over the common recent range, per rank:
 */
struct nw_sf_late {
	int rank;
	const struct nw_sf_rank *r; /* points into the set */
	uint64_t nseq;              /* collectives compared */
	uint64_t nlast;             /* times this rank arrived last */
	double mean_late_us;        /* mean lateness */
	double max_late_us;
	int kernel_based;           /* 1 when every comparison used kernel starts */
};
/*
 * Fill out[0..max) with one entry per rank of comm_hash, sorted by
 * mean_late_us descending (out[0] is the straggler when nseq > 0). Only the
 * newest `window` common collectives count (0: all in the rings). Returns
 * the number of entries written (0 when fewer than 2 ranks or no common
 * collective).
 */
size_t nw_sf_stragglers(const struct nw_sf_set *set, uint64_t comm_hash, size_t window,
                        struct nw_sf_late *out, size_t max);

/*
 * Distinct communicators in the set, in set order (comm_hash values into
 * out[0..max)). Returns how many there are (may exceed max).
 */
size_t nw_sf_comms(const struct nw_sf_set *set, uint64_t *out, size_t max);

#endif
