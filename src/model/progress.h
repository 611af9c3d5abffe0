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
};

/* One communicator, as seen by one or several sources merged. */
struct nw_prog_comm {
	uint64_t comm_hash;         /* NCCL's commHash (RAS "hash") */
	int nranks;                 /* size of the communicator; 0 unknown */
	char name[64];              /* user-given name, may be "" */
	struct nw_prog_rank *ranks; /* sorted by rank; owned (free()) */
	size_t n;
};

#endif
