/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot_int: internals shared by the bootstrap's files (boot*.c), not an
 * API: everything outside src/comm/boot*.c uses comm/boot.h alone.
 *
 *   boot.c       the handle: init, failure, abort, close
 *   boot_env.c   what the environment says (torchrun, Slurm)
 *   boot_wire.c  the wire format: header and hello
 *   boot_text.c  text of messages: rank lists, fingerprint differences
 *   boot_sock.c  non-blocking connections, bounded waits, whole messages
 *   boot_root.c  rank 0's startup: listen, take every hello, answer
 *   boot_peer.c  another rank's startup: connect, hello, take the answer
 *   boot_coll.c  the collectives: allgather, barrier, broadcast
 */
#ifndef NW_BOOT_INT_H
#define NW_BOOT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "comm/boot.h"
#include "util/util.h"

#define BOOT_MAX_RANKS 32768

/* ---- the wire format (boot_wire.c), beside the public part in boot.h ---- */

/* What rank 0 knows about each rank during startup ([size] each, index = rank). */
struct roster {
	long *pid;
	int *lrank, *lsize;
	char **fp;         /* fingerprints, owned */
};

/* Copy a wire string of n bytes into out (NUL-terminated, cut to fit), replacing anything unprintable. */
void boot_clean_copy(char *out, size_t outlen, const uint8_t *p, size_t n);
/* Is this header from another ncclwatch build (our magic, another protocol)? */
int boot_hdr_other_build(const uint8_t hdr[NW_BOOT_HDR_LEN]);
/* Rank 0's answer to the hellos: every rank's host and local place. A buffer the caller frees, its length in *len. */
uint8_t *boot_welcome_pack(const struct nw_boot *b, const struct roster *ro, size_t *len);
/* Take rank 0's answer into b (hosts, this rank's local size). 0, or -1 with err. */
int boot_welcome_unpack(struct nw_boot *b, const uint8_t *p, size_t len, char *err, size_t errlen);

/* ---- text (boot_text.c) ---- */

/* Append printf text to buf (NUL-terminated, truncating). */
void boot_app(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* strerror in lower case ("connection refused"), as our messages are; returns buf. */
const char *boot_errtext(int e, char *buf, size_t len);
/* The name of a collective (or message) in messages to the user. */
const char *boot_op_name(int type);
/* "rank 3 on hostB" into buf; returns buf. */
const char *boot_who(const struct nw_boot *b, int r, char *buf, size_t len);
/* "rank 2 on hostB" / "ranks 2,3 on hostB, 4-7 on hostC" (hosts NULL: "ranks 2,3"). */
void boot_ranks_text(char *const *hosts, const int *ranks, int n, char *out, size_t outlen);

/* ---- connections (boot_sock.c) ---- */

/* What boot_conn_step found. */
enum { CS_AGAIN = 0, CS_MSG = 1, CS_EOF = -1, CS_BAD = -2, CS_BIG = -3 };

/* One connection and its partly received message. */
struct conn {
	int fd;                          /* -1 when closed */
	uint8_t hdr[NW_BOOT_HDR_LEN];
	size_t hgot;
	struct nw_boot_hdr h;
	uint8_t *buf;                    /* payload being received, owned */
	size_t bgot;
};

/* Drop the message being received (frees its payload); the fd stays open. */
void boot_conn_reset(struct conn *c);
/* Close a connection: take what is waiting (so close sends FIN, not RST), then close. */
void boot_conn_close(struct conn *c);
/*
 * Read what is available on c without blocking, stopping at the end of one
 * message. CS_MSG: c->h and c->buf hold a whole message (take buf, then
 * boot_conn_reset). CS_AGAIN: more to come. CS_EOF, CS_BAD: err says what.
 * CS_BIG: the header announces a data (or startup answer) payload over
 * data_max (c->h is set).
 */
int boot_conn_step(struct conn *c, size_t data_max, char *err, size_t errlen);
/* Milliseconds left until deadline for poll(), rounded up; 0 when past. */
int boot_ms_left(double deadline);
/* Wait until fd has 'events' or deadline passes: 1 ready, 0 timed out, -1 error. */
int boot_wait_fd(int fd, short events, double deadline);
/*
 * Send one message (header and payload) on fd before deadline. A closed
 * peer is an error here, never SIGPIPE. 0, or -1 with err.
 */
int boot_send_msg(int fd, int type, unsigned arg, uint32_t seq, const void *p, size_t len, double deadline,
                  char *err, size_t errlen);
/* Non-blocking, and no Nagle delay for the small messages. */
void boot_tune_socket(int fd);

/* ---- the handle (boot.c) ---- */

struct nw_boot {
	int rank, size, local_rank, local_size;
	double timeout;
	uint32_t seq;
	int failed;
	char why[NW_ERRLEN];
	char **hosts;         /* [size] */
	struct conn *conns;   /* rank 0: [size] (index = rank; [0] unused); other ranks: [1], the link to rank 0 */
	int nconns;
	char where[300];      /* "ADDR:PORT (MASTER_ADDR, MASTER_PORT+1)" for messages */
	int roll_call;        /* the barrier under way is a roll call (it words a late rank as not answering) */
};

/*
 * Record a failure. Rank 0 tells every connected rank but 'except' (with
 * the same text); another rank tells rank 0 unless the news came from it
 * (notify 0). Then every connection is closed and every later call fails
 * with the same text. Returns -1 with err filled.
 */
int boot_fail(struct nw_boot *b, int notify, int except, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Rank 0's startup (boot_root.c): every rank's hello taken and checked, the table of hosts sent. 0 or -1. */
int boot_root_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err, size_t errlen);
/* Another rank's startup (boot_peer.c): connected to rank 0, hello sent, the table of hosts taken. 0 or -1. */
int boot_peer_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err, size_t errlen);

#endif
