/* SPDX-License-Identifier: Apache-2.0 */
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
 * it is read is reported bad, never a crash. Headers are read first; the
 * records and ring only of the files a reader shows. Only regular files owned by
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

/*
 * Bounds on what a file or a directory may make a reader hold. Every count
 * read from a file is checked against what the file's size can hold and
 * against these; a file past them is bad, with the reason.
 */
#define NW_SF_MAX_RING (1u << 16)    /* ring entries: the plugin's NCCLWATCH_RING maximum */
#define NW_SF_MAX_FILES 65536u       /* *.nws files looked at in one directory; the rest are bad */
#define NW_SF_MAX_BAD 64u            /* bad files named in a set (all are counted) */

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
	struct nws_record (*rec)[NWS_NBUCKETS];         /* [NWS_NOPS][NWS_NBUCKETS] copy; owned; NULL when only
	                                                   the header was read (NW_SF_HEADERS) */
	struct nws_opent *ring;                         /* copy, oldest first; owned */
	size_t nring;                                   /* valid entries in ring */
	/* what the reader found out itself (the exporter's process scan), not in the file */
	unsigned origin;                                /* the directory it came from (nw_sf_opts.origin) */
	char pod_uid[40];                               /* the pod's UID from its cgroup; "" unknown */
	char container_id[96];                          /* "containerd://<id>" ...; "" unknown */
};

/* A file that could not be used, and why ("bad magic", "version 7, need 1"...). */
struct nw_sf_bad {
	char path[512];
	char why[160];
};

/*
 * Everything in one directory (or, for the exporter's process scan, in
 * several). Only the files a reader shows are held; hidden and bad ones are
 * counted, so a set's memory never grows with files it does not show.
 */
struct nw_sf_set {
	char dir[512];
	struct nw_sf_rank *ranks;   /* sorted by comm_hash, then rank */
	size_t n;
	struct nw_sf_bad *bad;      /* the first NW_SF_MAX_BAD bad files */
	size_t nbad;                /* entries in bad */
	size_t nbad_more;           /* bad files past those (counted, not named) */
	size_t nhidden;             /* stale files left out (NW_SF_HIDE_STALE): read no further than their header */
	size_t nremoved;            /* old files of gone processes removed by this load */
};

/* Bad files in all: named and counted. */
static inline size_t nw_sf_nbad(const struct nw_sf_set *set)
{
	return set->nbad + set->nbad_more;
}

/*
 * The stats directory: $NCCLWATCH_DIR when set and not empty, else
 * /dev/shm/ncclwatch-<uid>. Writes into buf; returns buf.
 */
const char *nw_sf_default_dir(char *buf, size_t len);

/* nw_sf_load_flags flags. */
enum {
	/* files whose process is gone are counted in set->nhidden and not
	   kept: for readers that hide stale ranks */
	NW_SF_HIDE_STALE = 1u << 0,
	/* read only the headers (rec NULL, no ring): for readers of progress (hang) */
	NW_SF_HEADERS = 1u << 1,
	/* never remove old files of gone processes (a directory seen through
	   another process's root: not ours to clean) */
	NW_SF_NO_CLEAN = 1u << 2,
};

/*
 * What a long-running reader (the exporter, top's live view) remembers of
 * files between loads: for each file it hides or finds bad, its identity
 * (device, inode, size, modification and change times) and the verdict, so
 * that an unchanged one is neither opened nor read again. About 100 bytes a
 * file, at most NW_SF_MAX_FILES files per directory; entries of files not
 * seen for a minute are dropped. A file whose writer was judged gone by its
 * heartbeat (another PID namespace) is looked at again every 10 s, since a
 * shared mapping's writes need not change its times.
 */
struct nw_sf_cache;
struct nw_sf_cache *nw_sf_cache_new(void);
void nw_sf_cache_free(struct nw_sf_cache *c);
/* Files the cache answered for without opening them, since it was made. */
uint64_t nw_sf_cache_hits(const struct nw_sf_cache *c);

/* How to read a directory. */
struct nw_sf_opts {
	unsigned flags;              /* NW_SF_* */
	struct nw_sf_cache *cache;   /* NULL: none */
	long owner;                  /* uid whose files are read; -1: this process's effective uid */
	unsigned origin;             /* recorded in each rank read (several directories make one set) */
};

/*
 * Load every *.nws file in dir into set (zeroed by the call). Files that
 * fail validation go to set->bad; old files of gone processes are removed
 * (counted in set->nremoved). A bad NCCLWATCH_STALE_KEEP is an error. Returns 0, or -1 with err filled when
 * the directory itself cannot be read (a missing directory is an error:
 * "no stats directory '...': is a job running with NCCL_PROFILER_PLUGIN=ncclwatch?").
 * Free with nw_sf_set_release.
 */
int nw_sf_load(const char *dir, struct nw_sf_set *set, char *err, size_t errlen);

/* nw_sf_load with flags (NW_SF_*). */
int nw_sf_load_flags(const char *dir, unsigned flags, struct nw_sf_set *set, char *err, size_t errlen);

/* nw_sf_load with options: flags, a cache, whose files. */
int nw_sf_load_opts(const char *dir, const struct nw_sf_opts *o, struct nw_sf_set *set, char *err, size_t errlen);

/*
 * Add the files of dir to set (which holds others already: several
 * directories make one set), unsorted: nw_sf_set_sort once all are in.
 * 0, or -1 with err when the directory cannot be read (set unchanged).
 */
int nw_sf_load_more(const char *dir, const struct nw_sf_opts *o, struct nw_sf_set *set, char *err,
                    size_t errlen);
void nw_sf_set_sort(struct nw_sf_set *set);

/*
 * Whether dir can be read as a stats directory (exists, ours, nobody else
 * can write it) without reading any file: 0, or -1 with err as nw_sf_load
 * would say it.
 */
int nw_sf_check_dir(const char *dir, char *err, size_t errlen);

/*
 * Make s printable in place: control bytes, C1 controls and bytes that are
 * not UTF-8 become '?' (a terminal never gets an escape sequence from a file).
 */
void nw_sf_sanitize(char *s);

/*
 * Read and validate one file into r (records and ring allocated; free with
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
