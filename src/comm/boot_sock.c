/* SPDX-License-Identifier: Apache-2.0 */
/* boot_sock: the connections: non-blocking reads of whole messages, sends and waits bounded by a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/boot_int.h"

void boot_conn_reset(struct conn *c)
{
	free(c->buf);
	c->buf = NULL;
	c->hgot = c->bgot = 0;
}

/* Close a connection: take what is waiting (so close sends FIN, not RST), then close. */
void boot_conn_close(struct conn *c)
{
	if (c->fd >= 0) {
		char junk[4096];
		for (int i = 0; i < 64 && recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
			;
		shutdown(c->fd, SHUT_WR);
		close(c->fd);
	}
	c->fd = -1;
	boot_conn_reset(c);
}

/*
 * Read what is available on c without blocking, stopping at the end of one
 * message. CS_MSG: c->h and c->buf hold a whole message (take buf, then
 * boot_conn_reset). CS_AGAIN: more to come. CS_EOF, CS_BAD: err says what.
 * CS_BIG: the header announces a data (or startup answer) payload over
 * data_max (c->h is set).
 */
int boot_conn_step(struct conn *c, size_t data_max, char *err, size_t errlen)
{
	for (int guard = 0; guard < 1024; guard++) {
		ssize_t n;
		if (c->hgot < NW_BOOT_HDR_LEN) {
			n = recv(c->fd, c->hdr + c->hgot, NW_BOOT_HDR_LEN - c->hgot, MSG_DONTWAIT);
		} else {
			if (c->bgot == c->h.len)
				return CS_MSG;
			n = recv(c->fd, c->buf + c->bgot, c->h.len - c->bgot, MSG_DONTWAIT);
		}
		if (n == 0) {
			nw_seterr(err, errlen, "disconnected");
			return CS_EOF;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return CS_AGAIN;
			char eb[80];
			nw_seterr(err, errlen, "disconnected (%s)", boot_errtext(errno, eb, sizeof(eb)));
			return CS_EOF;
		}
		if (c->hgot < NW_BOOT_HDR_LEN) {
			c->hgot += (size_t)n;
			if (c->hgot < NW_BOOT_HDR_LEN)
				continue;
			if (nw_boot_hdr_unpack(c->hdr, &c->h, err, errlen))
				return CS_BAD;
			int data = c->h.type == NW_BOOT_GATHER || c->h.type == NW_BOOT_BCAST ||
			           c->h.type == NW_BOOT_RESULT || c->h.type == NW_BOOT_WELCOME;
			if (data && c->h.len > data_max) {
				nw_seterr(err, errlen, "a %u-byte message where at most %zu were expected", c->h.len,
				          data_max);
				return CS_BIG;
			}
			if (c->h.len)
				c->buf = nw_malloc(c->h.len);
		} else {
			c->bgot += (size_t)n;
		}
		if (c->hgot == NW_BOOT_HDR_LEN && c->bgot == c->h.len)
			return CS_MSG;
	}
	return CS_AGAIN;
}

/* Milliseconds left until deadline for poll(), rounded up; 0 when past. */
int boot_ms_left(double deadline)
{
	double left = deadline - nw_now();
	if (left <= 0)
		return 0;
	if (left > 1e6)
		return 1000000000;
	return (int)(left * 1000.0) + 1;
}

/* Wait until fd has 'events' or deadline passes: 1 ready, 0 timed out, -1 error. */
int boot_wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
		int ms = boot_ms_left(deadline);
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r == 0) {
			if (ms == 0 || nw_now() >= deadline)
				return 0;
			continue;
		}
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Send one message (header and payload) on fd before deadline. MSG_NOSIGNAL:
 * a closed peer is an error here, never SIGPIPE. 0, or -1 with err.
 */
int boot_send_msg(int fd, int type, unsigned arg, uint32_t seq, const void *p, size_t len,
                  double deadline, char *err, size_t errlen)
{
	struct nw_boot_hdr h = { .type = (uint8_t)type, .proto = NW_BOOT_PROTO, .arg = (uint16_t)arg,
	                         .seq = seq, .len = (uint32_t)len };
	uint8_t hb[NW_BOOT_HDR_LEN];
	nw_boot_hdr_pack(&h, hb);
	size_t total = NW_BOOT_HDR_LEN + len, done = 0;
	if (fd < 0)
		return nw_seterr(err, errlen, "is not connected");
	while (done < total) {
		struct iovec iov[2];
		int niov = 0;
		if (done < NW_BOOT_HDR_LEN) {
			iov[niov].iov_base = hb + done;
			iov[niov++].iov_len = NW_BOOT_HDR_LEN - done;
			if (len) {
				iov[niov].iov_base = (void *)(uintptr_t)p;
				iov[niov++].iov_len = len;
			}
		} else {
			iov[niov].iov_base = (uint8_t *)(uintptr_t)p + (done - NW_BOOT_HDR_LEN);
			iov[niov++].iov_len = total - done;
		}
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		char eb[80];
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return nw_seterr(err, errlen, "disconnected (%s)", boot_errtext(errno, eb, sizeof(eb)));
		int w = boot_wait_fd(fd, POLLOUT, deadline);
		if (w == 0)
			return nw_seterr(err, errlen, "did not take the data in time");
		if (w < 0)
			return nw_seterr(err, errlen, "disconnected (%s)", boot_errtext(errno, eb, sizeof(eb)));
	}
	return 0;
}

/* Non-blocking, and no Nagle delay for the small messages. */
void boot_tune_socket(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}
