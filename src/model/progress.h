/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress: how far each rank of a communicator has got, whatever told us.
 *
 * Three sources see a job's progress, each partly:
 *   - the plugin's stats files on this node (enqueued, completed, in flight,
 *     with times; see plugin/nwstats.h),
 *   - trace dumps the plugin wrote, gathered by the user from several nodes,
 *   - NCCL's RAS port (2.24+): per rank and per collective type, how many
 *     collectives were issued, plus ranks that are missing or unresponsive,
 *     for the whole job from any one node; no times, no completion.
 * Each source fills the same model below; the cross-rank diagnosis (which
 * operation the ranks diverge on, who has not arrived, who is inside it)
 * reads only this model, so it does not care where a figure came from.
 *
 * Counts per operation follow the stats file's last_seq[]: the number of
 * operations of that kind the rank has enqueued on the communicator (the
 * NCCL sequence number of the newest one, plus one). RAS's
 * "collective_counts" are the same quantity.
 */
#ifndef NW_MODEL_PROGRESS_H
#define NW_MODEL_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/nwstats.h"

/* A count or time that the source cannot observe (not zero: unknown). */
#define NW_PROG_UNKNOWN UINT64_MAX

/*
 * The largest communicator any source may claim (ranks 0..NW_PROG_MAX_RANKS-1),
 * the same bound as NCCL RAS answers get (parse/ras.h): a stats file, dump or
 * answer that claims more is refused as bad input, never allocated for.
 */
#define NW_PROG_MAX_RANKS (1 << 20)

/* Which sources reported a rank (bit mask in nw_prog_rank.src). */
enum nw_prog_src {
	NW_PROG_SRC_STATS = 1u << 0, /* a live stats file on this node */
	NW_PROG_SRC_DUMP  = 1u << 1, /* a trace dump file */
	NW_PROG_SRC_RAS   = 1u << 2  /* NCCL's RAS port */
};

/* One rank of one communicator. */
struct nw_prog_rank {
	int rank;                   /* rank in the communicator */
	char host[64];              /* as the source names it ("" unknown) */
	int pid;                    /* 0 unknown */
	unsigned src;               /* enum nw_prog_src bits; 0: no source saw this rank */
	int dead;                   /* process gone, or RAS says missing/unresponsive */
	uint64_t enq[NWS_NOPS];     /* operations enqueued, per op (enum nws_op) */
	uint64_t done[NWS_NOPS];    /* completed, per op; NW_PROG_UNKNOWN where not observable */
	int last_op;                /* enum nws_op of the newest enqueued op; -1 unknown */
	uint64_t last_seq;          /* its NCCL sequence number */
	uint64_t last_bytes;        /* its size (nccl-tests size); NW_PROG_UNKNOWN unknown */
	uint64_t last_enq_ns;       /* realtime it was enqueued; 0 unknown */
	uint64_t inflight;          /* started, not completed; NW_PROG_UNKNOWN unknown */
	uint64_t oldest_inflight_ns;/* realtime start of the oldest in-flight op; 0 none */
	uint64_t last_event_ns;     /* realtime of the last event NCCL raised; 0 unknown */
	/* added with the diagnosis */
	int oldest_op;              /* enum nws_op of the oldest in-flight op; -1 none or unknown */
	uint64_t oldest_seq;        /* its NCCL sequence number */
	unsigned completion;        /* enum nws_done_src: which completions the source could see */
	int hung;                   /* the source itself declared this rank hung */
	int finished;               /* the communicator was finalized on this rank */
	uint64_t seen_ns;           /* realtime the source observed this (a dump's time); 0: now */
};

/* One communicator, as seen by one or several sources merged. */
struct nw_prog_comm {
	uint64_t comm_hash;         /* NCCL's commHash (RAS "hash") */
	int nranks;                 /* size of the communicator; 0 unknown */
	char name[64];              /* user-given name, may be "" */
	struct nw_prog_rank *ranks; /* sorted by rank; owned (free()) */
	size_t n;
};

/* Several communicators (a list that sources add to and merge into). */
struct nw_prog_set {
	struct nw_prog_comm *comms; /* owned; sorted by comm_hash */
	size_t n;
};

/* Ranks lo..hi (both included). */
struct nw_prog_range {
	int lo, hi;
};

/* The diagnosis of one communicator. */
enum nw_prog_verdict {
	NW_PROG_NONE,      /* working: ops in flight, no rank behind, events flowing */
	NW_PROG_IDLE,      /* nothing in flight, no rank behind, no event for hang_s: not hung */
	NW_PROG_STRAGGLER, /* some ranks have not arrived at an op the others are in, events still flowing */
	NW_PROG_HUNG       /* ranks wait (not arrived, or inside an op) and no event for hang_s */
};

struct nw_prog_diag {
	enum nw_prog_verdict verdict;
	int op;                 /* enum nws_op where ranks diverge or wait; -1 none */
	uint64_t seq;           /* its NCCL sequence number */
	size_t *missing;        /* indices into comm->ranks: not arrived at (op, seq); owned */
	size_t nmissing;
	size_t *inside;         /* indices: started it, completion not seen; owned */
	size_t ninside;
	size_t narrived;        /* ranks that enqueued it (inside or not; completion unknown or seen) */
	struct nw_prog_range *unseen; /* ranks of 0..nranks-1 that no source reported, as ranges in order; owned */
	size_t nunseen_ranges;  /* entries of unseen: at most one more than the ranks reported */
	size_t nunseen;         /* ranks in those ranges */
	uint64_t quiet_ns;      /* least time without an event over the ranks; NW_PROG_UNKNOWN unknown */
	uint64_t wait_ns;       /* since the op was first enqueued (or the oldest in-flight op began); 0 unknown */
	int done_blind;         /* some rank could not see completions (inside may be incomplete) */
};

/* A rank with every figure unknown (done[], inflight, last_bytes UNKNOWN; last_op -1). */
void nw_prog_rank_init(struct nw_prog_rank *r, int rank);

/* The entry of rank in c, added (initialised, kept sorted) when absent; NULL when out of memory. The pointer lives until the next add. */
struct nw_prog_rank *nw_prog_rank_get(struct nw_prog_comm *c, int rank);

/* Free what c holds (its ranks); c stays, empty and reusable. */
void nw_prog_comm_release(struct nw_prog_comm *c);

/*
 * Merge view `from` of a communicator into `into` (same comm_hash):
 * counts take the larger value, the newest event wins for the last op and
 * in-flight figures, source bits add up. -1 with err when out of memory.
 */
int nw_prog_merge(struct nw_prog_comm *into, const struct nw_prog_comm *from, char *err, size_t errlen);

/* The set's entry for comm_hash, added empty when absent; NULL when out of memory. Lives until the next add. */
struct nw_prog_comm *nw_prog_set_get(struct nw_prog_set *s, uint64_t comm_hash);

/* Merge every communicator of list (n of them; any source) into s in one call. -1 with err on failure. */
int nw_prog_set_merge(struct nw_prog_set *s, const struct nw_prog_comm *list, size_t n, char *err, size_t errlen);

/* Free every communicator of s; s stays, empty. */
void nw_prog_set_release(struct nw_prog_set *s);

/*
 * Diagnose c at realtime now: the op and sequence number where the ranks
 * diverge (or wait), who has not arrived, who is inside, and a verdict;
 * hang_ns is how long without any event makes waiting a hang. d is filled
 * (its arrays owned: nw_prog_diag_release). -1 with err when out of memory.
 */
int nw_prog_diagnose(const struct nw_prog_comm *c, uint64_t now, uint64_t hang_ns, struct nw_prog_diag *d,
                     char *err, size_t errlen);

/* Free what d holds; d stays, empty. */
void nw_prog_diag_release(struct nw_prog_diag *d);

/* "none", "idle", "straggler", "hung". */
const char *nw_prog_verdict_name(enum nw_prog_verdict v);

#endif
