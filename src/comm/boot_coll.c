/* SPDX-License-Identifier: Apache-2.0 */
/* boot_coll: the collectives (allgather, barrier, broadcast): rank 0 collects and answers, the others wait. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "comm/boot_int.h"

/* Take an ABORT payload as text. */
static void abort_text(const struct conn *c, char *why, size_t len)
{
	boot_clean_copy(why, len, c->buf ? c->buf : (const uint8_t *)"", c->h.len);
}

/* One collective as rank 0 collects it. */
struct collect {
	int op, root;    /* the collective (enum nw_boot_type), and the root of a broadcast */
	char *want;      /* [size]: 1 for each rank whose part is still to come */
	void *out;       /* parts land at out + rank * len (a broadcast's at out) */
	size_t len;      /* bytes of each part */
};

/*
 * Rank r's connection has data during collective x. 0: nothing whole yet;
 * 1: its part, stored; -1: anything else (gone, stopped, another call,
 * another size), after telling everyone.
 */
static int take_part(struct nw_boot *b, struct collect *x, int r, char *err, size_t errlen)
{
	struct conn *c = &b->conns[r];
	const char *op = boot_op_name(x->op);
	char e2[300], w[320];
	int st = boot_conn_step(c, x->len, e2, sizeof(e2));
	if (st == CS_AGAIN)
		return 0;
	boot_who(b, r, w, sizeof(w));
	if (st == CS_EOF)
		return boot_fail(b, 1, r, err, errlen, "%s %s during %s #%u", w, e2, op, b->seq);
	if (st == CS_BAD)
		return boot_fail(b, 1, -1, err, errlen, "%s sent %s during %s #%u", w, e2, op, b->seq);
	if (c->h.type == NW_BOOT_ABORT) {
		char why[NW_BOOT_MAX_WHY + 1];
		abort_text(c, why, sizeof(why));
		return boot_fail(b, 1, r, err, errlen, "%s stopped: %s", w, why);
	}
	if (!x->want[r] || c->h.type != x->op || c->h.seq != b->seq)
		return boot_fail(b, 1, -1, err, errlen,
		                 "%s called %s #%u while rank 0 called %s #%u: every rank must make the same calls in the "
		                 "same order",
		                 w, boot_op_name(c->h.type), c->h.seq, op, b->seq);
	if (x->op == NW_BOOT_BCAST && c->h.arg != x->root)
		return boot_fail(b, 1, -1, err, errlen, "%s called broadcast #%u from rank %u while rank 0 gave rank %d", w,
		                 b->seq, c->h.arg, x->root);
	if (st == CS_BIG || c->h.len != x->len)
		return boot_fail(b, 1, -1, err, errlen, "%s gave %u bytes to %s #%u where rank 0 gave %zu", w, c->h.len, op,
		                 b->seq, x->len);
	if (x->len)
		memcpy((uint8_t *)x->out + (x->op == NW_BOOT_BCAST ? 0 : (size_t)r * x->len), c->buf, x->len);
	boot_conn_reset(c);
	x->want[r] = 0;
	return 1;
}

/* The time is up: name the ranks whose part never came; -1 after telling everyone. */
static int parts_late(struct nw_boot *b, const struct collect *x, char *err, size_t errlen)
{
	int *late = nw_calloc((size_t)b->size, sizeof(int)), n = 0;
	char ranks[400];
	for (int r = 1; r < b->size; r++)
		if (x->want[r])
			late[n++] = r;
	boot_ranks_text(b->hosts, late, n, ranks, sizeof(ranks));
	free(late);
	if (b->roll_call)
		return boot_fail(b, 1, -1, err, errlen, "%s did not answer a roll call within %g s (stopped, dead or unreachable)",
		                 ranks, b->timeout);
	return boot_fail(b, 1, -1, err, errlen, "%s did not reach %s #%u within %g s", ranks, boot_op_name(x->op),
	                 b->seq, b->timeout);
}

/*
 * Rank 0: wait for the part of every rank marked in x->want to collective
 * (x->op, b->seq) and store it. Every other connection is watched too, so
 * a rank that dies or stops anywhere is reported at once. 0, or -1 after
 * telling everyone.
 */
static int root_collect(struct nw_boot *b, struct collect *x, char *err, size_t errlen)
{
	struct pollfd *pfd = nw_calloc((size_t)b->size, sizeof(*pfd));
	int left = 0, rc = 0;
	for (int r = 1; r < b->size; r++)
		left += x->want[r] != 0;
	double deadline = nw_now() + b->timeout;
	while (left > 0 && !rc) {
		for (int r = 1; r < b->size; r++) /* pfd[k] is rank k + 1 */
			pfd[r - 1] = (struct pollfd){ .fd = b->conns[r].fd, .events = POLLIN };
		int ms = boot_ms_left(deadline);
		if (ms == 0) {
			rc = parts_late(b, x, err, errlen);
			break;
		}
		int pr = poll(pfd, (nfds_t)(b->size - 1), ms);
		if (pr < 0 && errno != EINTR) {
			char e2[300];
			rc = boot_fail(b, 1, -1, err, errlen, "waiting for the ranks failed: %s",
			               boot_errtext(errno, e2, sizeof(e2)));
		}
		for (int k = 0; pr > 0 && !rc && k < b->size - 1; k++) {
			if (!pfd[k].revents)
				continue;
			int st = take_part(b, x, k + 1, err, errlen);
			if (st < 0)
				rc = -1;
			else
				left -= st;
		}
	}
	free(pfd);
	return rc;
}

/* Rank 0: send a message to every rank but 'skip'. */
static int root_send_all(struct nw_boot *b, int type, int arg, const void *p, size_t len, int skip,
                         char *err, size_t errlen)
{
	char e2[300], w[320];
	double deadline = nw_now() + b->timeout;
	for (int r = 1; r < b->size; r++) {
		if (r == skip)
			continue;
		if (boot_send_msg(b->conns[r].fd, type, (unsigned)arg, b->seq, p, len, deadline, e2, sizeof(e2)))
			return boot_fail(b, 1, r, err, errlen, "%s %s during %s #%u", boot_who(b, r, w, sizeof(w)), e2,
			                 boot_op_name(type == NW_BOOT_ENTER || type == NW_BOOT_RESULT ? arg : type), b->seq);
	}
	return 0;
}

/*
 * Any other rank: wait for rank 0's RESULT of (op, seq) and copy len
 * bytes of it into out. ENTER from rank 0 restarts the clock: rank 0 is in
 * the collective and answers within its own timeout.
 */
static int peer_wait(struct nw_boot *b, int op, void *out, size_t len, char *err, size_t errlen)
{
	struct conn *c = &b->conns[0];
	char e2[300], w[320];
	int entered = 0;
	double deadline = nw_now() + b->timeout;
	boot_who(b, 0, w, sizeof(w));
	for (;;) {
		int wr = boot_wait_fd(c->fd, POLLIN, deadline);
		if (wr == 0)
			return boot_fail(b, 1, -1, err, errlen, "%s did not %s %s #%u within %g s", w,
			                 entered ? "finish" : "reach", boot_op_name(op), b->seq, b->timeout);
		if (wr < 0)
			return boot_fail(b, 1, -1, err, errlen, "waiting for rank 0 failed: %s",
			                 boot_errtext(errno, e2, sizeof(e2)));
		int st = boot_conn_step(c, len, e2, sizeof(e2));
		if (st == CS_AGAIN)
			continue;
		if (st == CS_EOF)
			return boot_fail(b, 0, -1, err, errlen, "%s %s during %s #%u", w, e2, boot_op_name(op), b->seq);
		if (st == CS_BAD)
			return boot_fail(b, 1, -1, err, errlen, "%s sent %s during %s #%u", w, e2, boot_op_name(op),
			                 b->seq);
		if (c->h.type == NW_BOOT_ABORT) {
			char why[NW_BOOT_MAX_WHY + 1];
			abort_text(c, why, sizeof(why));
			boot_conn_reset(c);
			return boot_fail(b, 0, -1, err, errlen, "%s", why);
		}
		int t = c->h.type, arg = c->h.arg;
		uint32_t seq = c->h.seq, got = c->h.len;
		if ((t == NW_BOOT_ENTER || t == NW_BOOT_RESULT) && (arg != op || seq != b->seq)) {
			boot_conn_reset(c);
			char me[320];
			return boot_fail(b, 1, -1, err, errlen,
			                 "%s called %s #%u while %s called %s #%u: every rank must make the same calls in the same order",
			                 w, boot_op_name(arg), seq, boot_who(b, b->rank, me, sizeof(me)), boot_op_name(op),
			                 b->seq);
		}
		if (t == NW_BOOT_ENTER) {
			boot_conn_reset(c);
			entered = 1;
			deadline = nw_now() + b->timeout + 1.0;
			continue;
		}
		if (t != NW_BOOT_RESULT) {
			boot_conn_reset(c);
			return boot_fail(b, 1, -1, err, errlen, "%s sent a %s during %s #%u", w, boot_op_name(t),
			                 boot_op_name(op), b->seq);
		}
		if (st == CS_BIG || got != len) {
			boot_conn_reset(c);
			return boot_fail(b, 1, -1, err, errlen, "%s answered %s #%u with %u bytes where this rank expects %zu",
			                 w, boot_op_name(op), b->seq, got, len);
		}
		if (len)
			memcpy(out, c->buf, len);
		boot_conn_reset(c);
		return 0;
	}
}

/* Common entry checks: a failed bootstrap stays failed. */
static int usable(const struct nw_boot *b, char *err, size_t errlen)
{
	if (!b)
		return nw_seterr(err, errlen, "no bootstrap");
	if (b->failed)
		return nw_seterr(err, errlen, "%s", b->why);
	return 0;
}

/* allgather and barrier: every rank contributes len bytes (0 for a barrier). */
static int gather(struct nw_boot *b, int op, const void *mine, void *all, size_t len, char *err,
                  size_t errlen)
{
	if (usable(b, err, errlen))
		return -1;
	if (len && len > NW_BOOT_MAX_PAYLOAD / (size_t)b->size)
		return boot_fail(b, 1, -1, err, errlen,
		                 "%s of %zu bytes from each of %d ranks is over the bootstrap's limit of %u bytes",
		                 boot_op_name(op), len, b->size, NW_BOOT_MAX_PAYLOAD);
	b->seq++;
	if (b->size == 1) {
		if (len)
			memmove(all, mine, len);
		return 0;
	}
	char e2[300];
	if (b->rank != 0) {
		if (boot_send_msg(b->conns[0].fd, op, 0, b->seq, mine, len, nw_now() + b->timeout, e2, sizeof(e2))) {
			char w[320];
			return boot_fail(b, 0, -1, err, errlen, "%s %s during %s #%u", boot_who(b, 0, w, sizeof(w)), e2,
			                 boot_op_name(op), b->seq);
		}
		return peer_wait(b, op, all, len * (size_t)b->size, err, errlen);
	}
	struct collect x = { .op = op, .root = 0, .want = nw_calloc((size_t)b->size, 1), .out = all, .len = len };
	memset(x.want + 1, 1, (size_t)b->size - 1);
	if (len)
		memmove(all, mine, len);
	int rc = root_send_all(b, NW_BOOT_ENTER, op, NULL, 0, -1, err, errlen);
	if (!rc)
		rc = root_collect(b, &x, err, errlen);
	if (!rc)
		rc = root_send_all(b, NW_BOOT_RESULT, op, all, len * (size_t)b->size, -1, err, errlen);
	free(x.want);
	return rc;
}

int nw_boot_allgather(struct nw_boot *b, const void *mine, void *all, size_t len, char *err,
                      size_t errlen)
{
	return gather(b, NW_BOOT_GATHER, mine, all, len, err, errlen);
}

int nw_boot_barrier(struct nw_boot *b, char *err, size_t errlen)
{
	return gather(b, NW_BOOT_BARRIER, NULL, NULL, 0, err, errlen);
}

int nw_boot_roll_call(struct nw_boot *b, double timeout_s, char *err, size_t errlen)
{
	double saved = b->timeout;
	b->timeout = timeout_s;
	b->roll_call = 1;
	int rc = nw_boot_barrier(b, err, errlen);
	b->roll_call = 0;
	b->timeout = saved;
	return rc;
}

int nw_boot_bcast(struct nw_boot *b, void *buf, size_t len, int root, char *err, size_t errlen)
{
	if (usable(b, err, errlen))
		return -1;
	if (root < 0 || root >= b->size)
		return boot_fail(b, 1, -1, err, errlen, "broadcast from rank %d: there are ranks 0 to %d", root,
		                 b->size - 1);
	if (len > NW_BOOT_MAX_PAYLOAD)
		return boot_fail(b, 1, -1, err, errlen, "broadcast of %zu bytes is over the bootstrap's limit of %u bytes",
		                 len, NW_BOOT_MAX_PAYLOAD);
	b->seq++;
	if (b->size == 1)
		return 0;
	char e2[300], w[320];
	if (b->rank != 0) {
		if (b->rank != root)
			return peer_wait(b, NW_BOOT_BCAST, buf, len, err, errlen);
		if (boot_send_msg(b->conns[0].fd, NW_BOOT_BCAST, (unsigned)root, b->seq, buf, len, nw_now() + b->timeout,
		                  e2, sizeof(e2)))
			return boot_fail(b, 0, -1, err, errlen, "%s %s during broadcast #%u", boot_who(b, 0, w, sizeof(w)), e2,
			                 b->seq);
		return 0;
	}
	if (root != 0) {
		struct collect x = { .op = NW_BOOT_BCAST, .root = root, .want = nw_calloc((size_t)b->size, 1), .out = buf,
		                     .len = len };
		x.want[root] = 1;
		int rc = root_send_all(b, NW_BOOT_ENTER, NW_BOOT_BCAST, NULL, 0, root, err, errlen);
		if (!rc)
			rc = root_collect(b, &x, err, errlen);
		free(x.want);
		if (rc)
			return -1;
	}
	return root_send_all(b, NW_BOOT_RESULT, NW_BOOT_BCAST, buf, len, root, err, errlen);
}
