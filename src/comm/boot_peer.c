/* SPDX-License-Identifier: Apache-2.0 */
/* boot_peer: another rank's startup: connect to rank 0 (retrying until it listens), hello, its answer. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/boot_int.h"

/* Resolve addr:port for a stream socket; NULL with err on failure. */
static struct addrinfo *resolve(const char *addr, int port, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	char ps[16];
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%d", port);
	int rc = getaddrinfo(addr, ps, &hints, &res);
	if (rc) {
		nw_seterr(err, errlen, "%s", gai_strerror(rc));
		return NULL;
	}
	return res;
}

/* Connect to rank 0, retrying until deadline (rank 0 may start later). fd or -1 with err. */
static int dial(struct nw_boot *b, const struct nw_boot_env *e, double deadline, char *err, size_t errlen)
{
	char last[256] = "no attempt finished";
	int delay_ms = 50;
	for (int attempt = 0; attempt < 1000000; attempt++) {
		struct addrinfo *res = resolve(e->addr, e->port, last, sizeof(last));
		for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
			if (fd < 0) {
				boot_errtext(errno, last, sizeof(last));
				continue;
			}
			int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
			if (r < 0 && errno == EINPROGRESS) {
				double d = nw_now() + 5.0;
				int w = boot_wait_fd(fd, POLLOUT, d < deadline ? d : deadline);
				int soerr = 0;
				socklen_t sl = sizeof(soerr);
				if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
					r = 0;
				else
					errno = w > 0 ? soerr : ETIMEDOUT;
			}
			if (r == 0) {
				freeaddrinfo(res);
				boot_tune_socket(fd);
				return fd;
			}
			boot_errtext(errno, last, sizeof(last));
			close(fd);
		}
		if (res)
			freeaddrinfo(res);
		int ms = boot_ms_left(deadline);
		if (ms == 0)
			break;
		poll(NULL, 0, ms < delay_ms ? ms : delay_ms);
		delay_ms = delay_ms * 2 > 1000 ? 1000 : delay_ms * 2;
	}
	if (last[0] >= 'A' && last[0] <= 'Z' && (last[1] < 'A' || last[1] > 'Z'))
		last[0] = (char)(last[0] - 'A' + 'a'); /* gai_strerror's text */
	return nw_seterr(err, errlen,
	                 "could not connect to rank 0 at %s within %g s (%s): check that rank 0 is running and that "
	                 "%s and the port are the same on every rank",
	                 b->where, b->timeout, last, e->addr_from);
}

/*
 * Wait for rank 0's answer to the hello: the table of hosts (0), or its
 * reason to stop, or nothing in time (-1, with err).
 */
static int take_answer(struct nw_boot *b, char *err, size_t errlen)
{
	struct conn *c = &b->conns[0];
	char e2[300];
	/* rank 0 was listening before we connected, so it answers within its own
	 * timeout of that moment: wait that long, and a second more */
	double deadline = nw_now() + b->timeout + 1.0;
	for (;;) {
		int w = boot_wait_fd(c->fd, POLLIN, deadline);
		if (w == 0)
			return boot_fail(b, 1, -1, err, errlen,
			                 "rank 0 at %s accepted the connection but did not answer within %g s", b->where,
			                 b->timeout);
		if (w < 0)
			return boot_fail(b, 0, -1, err, errlen, "waiting for rank 0 failed: %s",
			                 boot_errtext(errno, e2, sizeof(e2)));
		int st = boot_conn_step(c, 4 + (size_t)b->size * (14 + NW_BOOT_MAX_HOST), e2, sizeof(e2));
		if (st == CS_AGAIN)
			continue;
		if (st == CS_EOF)
			return boot_fail(b, 0, -1, err, errlen, "rank 0 at %s %s during startup", b->where, e2);
		if (st != CS_MSG)
			return boot_fail(b, 1, -1, err, errlen, "rank 0 at %s sent %s during startup", b->where, e2);
		int t = c->h.type;
		if (t == NW_BOOT_ABORT) {
			char why[NW_BOOT_MAX_WHY + 1];
			boot_clean_copy(why, sizeof(why), c->buf, c->h.len);
			boot_conn_reset(c);
			return boot_fail(b, 0, -1, err, errlen, "%s", why);
		}
		int rc = t == NW_BOOT_WELCOME ? boot_welcome_unpack(b, c->buf, c->h.len, e2, sizeof(e2)) : 0;
		boot_conn_reset(c);
		if (t != NW_BOOT_WELCOME)
			return boot_fail(b, 1, -1, err, errlen, "rank 0 at %s sent a %s during startup", b->where,
			                 boot_op_name(t));
		return rc ? boot_fail(b, 1, -1, err, errlen, "%s", e2) : 0;
	}
}

int boot_peer_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err, size_t errlen)
{
	char e2[300];
	double deadline = nw_now() + b->timeout;
	struct conn *c = &b->conns[0];
	c->fd = dial(b, e, deadline, err, errlen);
	if (c->fd < 0) {
		b->failed = 1;
		nw_strlcpy(b->why, err, sizeof(b->why));
		return -1;
	}
	struct nw_boot_hello h = { .rank = b->rank, .size = b->size, .local_rank = b->local_rank,
	                           .local_size = b->local_size, .pid = (long)getpid(),
	                           .fingerprint = (char *)(uintptr_t)fp };
	nw_strlcpy(h.host, b->hosts[b->rank], sizeof(h.host));
	size_t n;
	uint8_t *p = nw_boot_hello_pack(&h, &n);
	int rc = boot_send_msg(c->fd, NW_BOOT_HELLO, 0, 0, p, n, deadline, e2, sizeof(e2));
	free(p);
	if (rc)
		return boot_fail(b, 0, -1, err, errlen, "rank 0 at %s %s during startup", b->where, e2);
	return take_answer(b, err, errlen);
}
