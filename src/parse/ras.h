/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ras: read an answer of NCCL's RAS port (docs/ras.md) into one struct,
 * and turn it into the progress model (model/progress.h).
 *
 * NCCL (2.24 and newer) answers "STATUS" / "VERBOSE STATUS" in one of two
 * formats, and they do not carry the same facts:
 *
 *   JSON ("SET FORMAT json", NCCL 2.28.7 and newer): everything RAS
 *     gathered. Versions and timestamp; every communicator by hash with its
 *     size; every rank that answered, with host, pid, CUDA and NVML device,
 *     init/async error codes, finalize/destroy/abort flags and the count of
 *     each collective type it has launched (Broadcast, Reduce, AllGather,
 *     ReduceScatter, AllReduce); every missing rank with host, pid, devices
 *     and whether it is unresponsive or considered dead; RAS's collection
 *     time and its timeouts. No job summary, no verdicts.
 *
 *   Text (every version; the only one before 2.28.7): made for people. The
 *     NCCL and CUDA versions, the job summary (nodes, processes, GPUs), one
 *     row per group of alike communicators (size, status, OK / MISMATCH /
 *     ERROR / INCOMPLETE) and, under Errors and Warnings, a block for each
 *     problem. Communicators are named by hash only in those blocks, so a
 *     healthy communicator has no hash and no ranks here. Inside a block
 *     RAS lists only the outlier ranks: missing ranks, ranks whose count of
 *     one collective type differs from the majority (with the majority's
 *     value, not its members), ranks with another status or an error.
 *     Before 2.26 the counts are not split by collective type. Dead and
 *     unreachable processes are named by host and pid.
 *
 * Everything the answer says is kept; what it does not say is marked
 * unknown (-1, "" or NW_PROG_UNKNOWN), never guessed as 0.
 */
#ifndef NW_PARSE_RAS_H
#define NW_PARSE_RAS_H

#include <stddef.h>
#include <stdint.h>

#include "model/progress.h"

enum nw_ras_format { NW_RAS_TEXT, NW_RAS_JSON };

/* Rank numbers above this are taken as garbage (NCCL issue #1762 printed some). */
#define NW_RAS_MAXRANK (1 << 20)

/* A collective count RAS did not report for a rank. */
#define NW_RAS_NOCOUNT UINT64_MAX

/* One rank of a communicator, as RAS reported it (present or missing). */
struct nw_ras_rank {
	int rank;
	char host[64];          /* "" unknown */
	int pid;                /* 0 unknown */
	int cuda_dev, nvml_dev; /* -1 unknown */
	int missing;            /* RAS has no data from it */
	int unresponsive;       /* missing because RAS could not reach it (JSON) */
	int dead;               /* RAS considers the process dead */
	int init_state;         /* ncclResult_t; 0 ok, 7 in progress; -1 unknown */
	int async_error;        /* ncclResult_t; -1 unknown */
	int finalize_called, destroy_flag, abort_flag; /* 0/1; -1 unknown */
	char status[16];        /* text: "RUNNING", "FINALIZE", ... when RAS named it */
	char error[48];         /* text: the error RAS says it reported, "" none */
	uint64_t counts[NWS_NOPS]; /* collectives launched per enum nws_op; NW_RAS_NOCOUNT unknown */
};

/* One communicator. */
struct nw_ras_comm {
	uint64_t hash;          /* NCCL's commHash */
	char id[16];            /* text: RAS's "#group-index" ("" in JSON) */
	int size;               /* ranks in the communicator; 0 unknown */
	int nmissing;           /* missing ranks RAS counted; -1 unknown */
	char status[16];        /* text: the group's status ("RUNNING", "INIT", ...) */
	char errors[32];        /* text: the group's errors ("OK", "INCOMPLETE,MISMATCH") */
	/*
	 * Text: for each op whose counts differ, the value of the ranks RAS
	 * did not list, when exactly one such group remains; NW_RAS_NOCOUNT
	 * otherwise. Those ranks are the ones not listed and not missing.
	 */
	uint64_t rest[NWS_NOPS];
	struct nw_ras_rank *ranks; /* sorted by rank, owned */
	size_t nranks;
};

/* A job process RAS names in a job-wide Errors block (text). */
struct nw_ras_proc {
	char host[64];
	int pid;
	int dead;               /* 1: "considered dead"; 0: data missing (unresponsive) */
};

/* One group row of the text's communicator table. */
struct nw_ras_group {
	int group, ncomms, nodes, ranks_per_comm, ranks_in_group;
	char ranks_per_node[16]; /* "8" or "7-8" */
	char status[16], errors[32];
};

struct nw_ras {
	enum nw_ras_format format;
	int protocol;           /* "SERVER PROTOCOL n"; 0 when the text lacks it */
	char nccl_version[32];  /* "2.28.9"; "" unknown */
	int cuda_runtime, cuda_driver; /* -1 unknown */
	char timestamp[32];     /* JSON only */
	int nodes, procs, gpus; /* job summary (text); -1 unknown */
	double collection_s;    /* seconds RAS took to gather; -1 unknown */
	int timeouts;           /* communication timeouts while gathering; -1 unknown */
	struct nw_ras_group *groups; size_t ngroups;
	struct nw_ras_comm *comms;   size_t ncomms;
	struct nw_ras_proc *procs_out; size_t nprocs_out; /* missing or dead processes */
	char **errors;   size_t nerrors;   /* text: each Errors block, whole */
	char **warnings; size_t nwarnings; /* text: each Warnings block, whole */
};

/*
 * Parse one RAS answer (text or JSON; a leading "SERVER PROTOCOL n" and
 * "OK" lines of the handshake are skipped). NCCL 2.28.7 to 2.28.x forgot a
 * comma in each missing rank's JSON; that is repaired. Fills *out (caller
 * releases with nw_ras_release, also after an error); -1 with err naming
 * what is wrong when the text is not a RAS answer.
 */
int nw_ras_parse(const char *buf, size_t len, struct nw_ras *out, char *err, size_t errlen);
void nw_ras_release(struct nw_ras *r);

/* enum nws_op of NCCL's collective name ("AllReduce"); NWS_OP_OTHER when unknown. */
int nw_ras_op(const char *ncclname);

/*
 * The answer as the progress model: one nw_prog_comm per communicator that
 * has a hash, ranks 0..size-1 (src NW_PROG_SRC_RAS, host and pid where RAS
 * named them). enq[op] holds the collective counts RAS gave (text: the
 * listed outliers, and the majority's value for the unlisted ranks when
 * only one group is unlisted); NW_PROG_UNKNOWN where the answer does not
 * say. Counts from NCCL before 2.26 (all types together) go to
 * NWS_OP_OTHER. Missing, unresponsive or dead ranks, and ranks of a
 * process RAS names as missing or dead, are marked dead. done[],
 * last_bytes and inflight are NW_PROG_UNKNOWN, times 0: RAS does not
 * observe them; last_op is -1 (RAS does not say which op was newest).
 * A communicator whose size is unknown has only the ranks RAS named.
 * *out is a malloc'ed array (NULL when there is none); free it with
 * nw_ras_prog_free. Returns 0.
 */
int nw_ras_to_prog(const struct nw_ras *r, struct nw_prog_comm **out, size_t *n);
void nw_ras_prog_free(struct nw_prog_comm *c, size_t n);

#endif
