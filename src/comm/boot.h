/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot: the env-rendezvous launcher. One ncclwatch process per GPU,
 * started by torchrun --no-python, a Kubernetes PyTorchJob or srun, finds
 * its peers through environment variables and a small TCP bootstrap:
 * rank 0 listens, every other rank connects to it (a star), and the ranks
 * exchange the 128-byte NCCL unique id and small host-side results
 * (timings, hostnames, device info). NCCL moves the real data.
 *
 * Variables (see docs/launch.md):
 *   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 *   or, under srun, SLURM_PROCID, SLURM_STEP_NUM_TASKS (SLURM_NTASKS),
 *   SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE + SLURM_NODEID,
 *   SLURM_STEP_NODELIST, SLURM_JOB_ID, SLURM_STEP_ID.
 *   NCCLWATCH_PORT overrides the bootstrap port (default MASTER_PORT + 1,
 *   because torchrun's own TCPStore already listens on MASTER_PORT).
 *
 * Every wait is bounded by the timeout given to nw_boot_init; a peer that
 * dies, never arrives or sends garbage makes every call fail with a message
 * naming the rank(s) and their host, never a hang. All calls are
 * collective: every rank makes the same calls in the same order.
 */
#ifndef NW_BOOT_H
#define NW_BOOT_H

#include <stddef.h>
#include <stdint.h>

struct nw_boot; /* opaque */

/*
 * Detect an env rendezvous and connect the ranks. Returns 1 with *out set
 * (the caller owns it: nw_boot_close) when RANK/WORLD_SIZE or an srun task
 * say this is a multi-process launch (WORLD_SIZE=1 included: every call
 * then works locally); 0 with *out NULL when no such variables are set (a
 * single-process run); -2 with err filled on a bad combination (the message
 * names the variable and its value); -1 with err when the ranks could not
 * be joined.
 * 'fingerprint' is text every rank must agree on (tool version and the
 * normalized arguments): a difference is refused on every rank, naming the
 * ranks, their hosts and the differing text. timeout_s bounds every wait.
 */
int nw_boot_init(struct nw_boot **out, const char *fingerprint, double timeout_s, char *err,
                 size_t errlen);

int nw_boot_rank(const struct nw_boot *b);
int nw_boot_size(const struct nw_boot *b);
int nw_boot_local_rank(const struct nw_boot *b);
/* Ranks on this host: LOCAL_WORLD_SIZE (or Slurm's tasks on this node) when
 * set, else the number of ranks that reported the same hostname. */
int nw_boot_local_size(const struct nw_boot *b);
/* Hostname of a rank (every rank's is known after init); owned by b. "?"
 * for a rank out of range. */
const char *nw_boot_host(const struct nw_boot *b, int rank);

/* Copy len bytes of buf on rank 'root' into buf on every rank. 0 or -1. */
int nw_boot_bcast(struct nw_boot *b, void *buf, size_t len, int root, char *err, size_t errlen);
/* Every rank gives len bytes; all (size * len bytes, rank order) receives them on every rank. */
int nw_boot_allgather(struct nw_boot *b, const void *mine, void *all, size_t len, char *err,
                      size_t errlen);
/* Returns when every rank has entered the barrier. */
int nw_boot_barrier(struct nw_boot *b, char *err, size_t errlen);
/*
 * After a timeout elsewhere (NCCL's traffic): a barrier bounded by
 * timeout_s instead of b's timeout, so that every rank still running
 * learns within it which ranks are not. 0 when every rank came; -1 with
 * err naming the ranks that did not (rank 0 says who; the others hear it
 * from rank 0, or name rank 0 when it is the one missing).
 */
int nw_boot_roll_call(struct nw_boot *b, double timeout_s, char *err, size_t errlen);
/*
 * Tell every peer to stop, with the reason (peers report it at their next
 * call, naming this rank and host). After it, every call on b fails.
 */
void nw_boot_abort(struct nw_boot *b, const char *why);
/* Close the connections and free b (NULL is fine). */
void nw_boot_close(struct nw_boot *b);

/*
 * Below: the pure pieces, exposed so that they can be tested alone.
 */

/* What the environment says about this process. */
struct nw_boot_env {
	int rank, size;
	int local_rank;
	int local_size;        /* 0: not given, derived from hostnames after connecting */
	char addr[256];        /* rank 0's address (MASTER_ADDR or the first Slurm node) */
	char addr_from[32];    /* the variable addr came from, for messages */
	int port;              /* the bootstrap port */
	char port_from[40];    /* how port was chosen ("NCCLWATCH_PORT", "MASTER_PORT+1" ...) */
	char launcher[8];      /* "env" or "slurm" */
};

/* Looks up a variable; NULL when unset. */
typedef const char *(*nw_boot_getenv_fn)(const char *name, void *arg);

/* Parse the variables (through get) into e: 1, 0 (not a multi-process launch) or -1 with err. */
int nw_boot_env_parse(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                      size_t errlen);
/* First host of a Slurm hostlist ("gpu[003-010,12],cpu1" -> "gpu003"). 0 or -1. */
int nw_boot_slurm_first_host(const char *list, char *out, size_t outlen);
/* Tasks on node 'nodeid' from SLURM_STEP_TASKS_PER_NODE ("4(x2),3" node 2 -> 3); -1 when bad. */
int nw_boot_slurm_tasks_on_node(const char *tpn, int nodeid);

/* Wire format: a 16-byte header in network byte order, then len bytes. */
#define NW_BOOT_MAGIC 0x4e57424fu /* "NWBO" */
#define NW_BOOT_PROTO 1
#define NW_BOOT_HDR_LEN 16
#define NW_BOOT_MAX_PAYLOAD (64u << 20)
#define NW_BOOT_MAX_HOST 255
#define NW_BOOT_MAX_FP 16384
#define NW_BOOT_MAX_WHY 1024

enum nw_boot_type {
	NW_BOOT_HELLO = 1, /* rank -> 0: who I am */
	NW_BOOT_WELCOME,   /* 0 -> rank: every rank's host, the job starts */
	NW_BOOT_ABORT,     /* either way: stop, with the reason */
	NW_BOOT_ENTER,     /* 0 -> rank: rank 0 has entered collective seq */
	NW_BOOT_GATHER,    /* rank -> 0: my piece of an allgather */
	NW_BOOT_BCAST,     /* root -> 0: the broadcast data */
	NW_BOOT_BARRIER,   /* rank -> 0: I reached the barrier */
	NW_BOOT_RESULT,    /* 0 -> rank: the outcome of collective seq (arg: its type) */
	NW_BOOT_NTYPES
};

struct nw_boot_hdr {
	uint8_t type;   /* enum nw_boot_type */
	uint8_t proto;  /* NW_BOOT_PROTO */
	uint16_t arg;   /* broadcast root, or the collective a RESULT/ENTER answers */
	uint32_t seq;   /* collective number, from 1 */
	uint32_t len;   /* payload bytes */
};

void nw_boot_hdr_pack(const struct nw_boot_hdr *h, uint8_t out[NW_BOOT_HDR_LEN]);
/* Check magic, protocol, type and the length limit of the type. 0 or -1 with err. */
int nw_boot_hdr_unpack(const uint8_t in[NW_BOOT_HDR_LEN], struct nw_boot_hdr *h, char *err,
                       size_t errlen);

struct nw_boot_hello {
	int rank, size, local_rank, local_size;
	long pid;
	char host[NW_BOOT_MAX_HOST + 1];
	char *fingerprint; /* owned: nw_boot_hello_release */
};
/* Encode a hello; returns a buffer the caller frees, its length in *len. */
uint8_t *nw_boot_hello_pack(const struct nw_boot_hello *h, size_t *len);
/* Decode a hello payload (bounds-checked); 0 or -1 with err. */
int nw_boot_hello_unpack(const uint8_t *p, size_t len, struct nw_boot_hello *h, char *err,
                         size_t errlen);
void nw_boot_hello_release(struct nw_boot_hello *h);

/*
 * The part of two fingerprints that differs, widened to whole words:
 * "v1 bench -b 8 -e 1G" vs "v1 bench -b 8 -e 2G" gives "-e 1G" and "-e 2G"
 * ("..." marks text cut to keep them short). Both empty when equal.
 */
void nw_boot_fpdiff(const char *a, const char *b, char *da, size_t dalen, char *db, size_t dblen);
/* Ascending rank list as text, runs of three or more as ranges: {0,1,2,5,7,8} -> "0-2,5,7,8". */
void nw_boot_ranklist(const int *ranks, int n, char *out, size_t outlen);

#endif
