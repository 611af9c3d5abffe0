/* SPDX-License-Identifier: Apache-2.0 */
/* ras (probe): a client of NCCL's RAS port with one deadline over connect and answer. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe/ras.h"
#include "util/util.h"

struct rconn {
	int fd;
	const char *addr;
	double deadline, timeout;
	char *buf;
	size_t len, cap, pos;      /* bytes read, room, start of what is not consumed */
};

const char *nw_ras_default_addr(void)
{
	const char *e = getenv("NCCL_RAS_ADDR");
	return e && *e ? e : "localhost:28028";
}

/* "host:port", "[v6]:port" or "v6:port" (split at the last ':'). */
static int split_addr(const char *addr, char *host, size_t hl, char *port, size_t pl, char *err, size_t errlen)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) || colon == addr)
		return nw_seterr(err, errlen, "RAS address '%s' is not HOST:PORT (e.g. localhost:28028, [::1]:28028); "
		                 "give it as NCCL_RAS_ADDR gives it to the job", addr);
	const char *h = addr;
	size_t n = (size_t)(colon - addr);
	if (h[0] == '[' && n >= 2 && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n >= hl)
		return nw_seterr(err, errlen, "RAS address '%s': host name too long", addr);
	memcpy(host, h, n);
	host[n] = '\0';
	nw_strlcpy(port, colon + 1, pl);
	return 0;
}

static int timed_out(struct rconn *c, const char *doing, char *err, size_t errlen)
{
	return nw_seterr(err, errlen, "RAS port at '%s' timed out after %g s %s; the job may be busy gathering data from a "
	                 "stuck process (try a longer timeout) or this is not a RAS port", c->addr, c->timeout, doing);
}

/* Wait for events on the socket until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(struct rconn *c, short events)
{
	for (;;) {
		double left = c->deadline - nw_now();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = c->fd, .events = events };
		int rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc > 0)
			return 1;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

/* Connect one address without blocking past the deadline; errno set on failure. */
static int connect_one(struct rconn *c, const struct addrinfo *ai)
{
	c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (c->fd < 0)
		return -1;
	if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	if (errno == EINPROGRESS) {
		int w = wait_fd(c, POLLOUT);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (w == 0)
			errno = ETIMEDOUT;
		else if (w > 0 && getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
			return 0;
		else if (w > 0)
			errno = soerr;
	}
	int e = errno;
	close(c->fd);
	c->fd = -1;
	errno = e;
	return -1;
}

static int rconn_open(struct rconn *c, char *err, size_t errlen)
{
	char host[256], port[16];
	if (split_addr(c->addr, host, sizeof(host), port, sizeof(port), err, errlen))
		return -1;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return nw_seterr(err, errlen, "RAS address '%s': cannot resolve '%s': %s", c->addr, host, gai_strerror(rc));
	int e = 0;
	for (struct addrinfo *ai = res; ai && c->fd < 0 && nw_now() < c->deadline; ai = ai->ai_next)
		if (connect_one(c, ai))
			e = errno;
	freeaddrinfo(res);
	if (c->fd >= 0)
		return 0;
	if (e == ETIMEDOUT || !e)
		return timed_out(c, "connecting", err, errlen);
	if (e == ECONNREFUSED)
		return nw_seterr(err, errlen, "connection to the RAS port at '%s' refused: no NCCL job listens there "
		                 "(is the job running on that node, with NCCL 2.24+ and NCCL_RAS_ENABLE not 0? "
		                 "give the address the job's NCCL_RAS_ADDR names)", c->addr);
	return nw_seterr(err, errlen, "cannot connect to the RAS port at '%s': %s", c->addr, strerror(e));
}

static int send_str(struct rconn *c, const char *s, char *err, size_t errlen)
{
	size_t n = strlen(s), done = 0;
	while (done < n) {
		int w = wait_fd(c, POLLOUT);
		if (w == 0)
			return timed_out(c, "sending a command", err, errlen);
		ssize_t k = w > 0 ? send(c->fd, s + done, n - done, MSG_NOSIGNAL) : -1;
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k < 0)
			return nw_seterr(err, errlen, "RAS port at '%s' closed the connection: %s", c->addr, strerror(errno));
		done += (size_t)k;
	}
	return 0;
}

/* Read more into c->buf: bytes read, 0 at end of stream, -1 with err. */
static ssize_t recv_more(struct rconn *c, const char *doing, char *err, size_t errlen)
{
	for (;;) {
		if (c->len + 1 >= c->cap) {
			if (c->cap >= NW_RAS_MAX_ANSWER)
				return nw_seterr(err, errlen, "RAS port at '%s' sent more than %u MiB: not a RAS answer", c->addr,
				                 NW_RAS_MAX_ANSWER >> 20);
			c->cap = c->cap ? c->cap * 2 : 65536;
			c->buf = nw_realloc(c->buf, c->cap);
		}
		int w = wait_fd(c, POLLIN);
		if (w == 0)
			return timed_out(c, doing, err, errlen);
		ssize_t k = w > 0 ? recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0) : -1;
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k < 0)
			return nw_seterr(err, errlen, "RAS port at '%s': %s while %s", c->addr, strerror(errno), doing);
		c->len += (size_t)k;
		c->buf[c->len] = '\0';
		return k;
	}
}

/* One reply line (without "\r\n") into line. */
static int read_line(struct rconn *c, char *line, size_t len, const char *doing, char *err, size_t errlen)
{
	char *nl;
	while (!(nl = c->buf ? memchr(c->buf + c->pos, '\n', c->len - c->pos) : NULL)) {
		ssize_t k = recv_more(c, doing, err, errlen);
		if (k < 0)
			return -1;
		if (k == 0)
			return nw_seterr(err, errlen, "RAS port at '%s' closed the connection while %s%s", c->addr, doing,
			                 c->len > c->pos ? " (the reply was cut short)" : "");
		if (c->len - c->pos > 4096)
			return nw_seterr(err, errlen, "RAS port at '%s' sent a line of over 4 KiB while %s: not a RAS server",
			                 c->addr, doing);
	}
	size_t n = (size_t)(nl - (c->buf + c->pos));
	snprintf(line, len, "%.*s", (int)n, c->buf + c->pos);
	line[strcspn(line, "\r")] = '\0';
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 32 || (unsigned char)*p > 126)
			*p = '?';
	c->pos += n + 1;
	return 0;
}

/* Send cmd and read its one-line reply into line. */
static int command(struct rconn *c, const char *cmd, char *line, size_t len, char *err, size_t errlen)
{
	char doing[64];
	snprintf(doing, sizeof(doing), "waiting for the reply to '%.*s'", (int)strcspn(cmd, "\n"), cmd);
	if (send_str(c, cmd, err, errlen))
		return -1;
	return read_line(c, line, len, doing, err, errlen);
}

/* The handshake; *json set when the server took "SET FORMAT json". */
static int handshake(struct rconn *c, int text_only, int *protocol, int *json, char *err, size_t errlen)
{
	char line[160], cmd[32];
	if (command(c, "CLIENT PROTOCOL 2\n", line, sizeof(line), err, errlen))
		return -1;
	if (strncasecmp(line, "SERVER PROTOCOL ", 16))
		return nw_seterr(err, errlen, "'%s' is not a NCCL RAS port: it answered '%.60s' to the handshake", c->addr, line);
	*protocol = atoi(line + 16);
	int t = (int)((c->timeout - 1) / 2);
	snprintf(cmd, sizeof(cmd), "TIMEOUT %d\n", t < 1 ? 1 : t);
	if (command(c, cmd, line, sizeof(line), err, errlen))
		return -1;
	if (strcasecmp(line, "OK"))
		return nw_seterr(err, errlen, "RAS port at '%s' answered '%.60s' to '%.*s'", c->addr, line,
		                 (int)strcspn(cmd, "\n"), cmd);
	*json = 0;
	if (text_only)
		return 0;
	if (command(c, "SET FORMAT json\n", line, sizeof(line), err, errlen))
		return -1;
	if (!strcasecmp(line, "OK"))
		*json = 1;
	else if (strncmp(line, "ERROR", 5))
		return nw_seterr(err, errlen, "RAS port at '%s' answered '%.60s' to 'SET FORMAT json'", c->addr, line);
	return 0;
}

int nw_ras_query(const char *addr, double timeout_s, int text_only, struct nw_ras *out, char *err, size_t errlen)
{
	struct rconn c = { .fd = -1, .addr = addr ? addr : nw_ras_default_addr() };
	c.timeout = timeout_s > 0 ? timeout_s : NW_RAS_TIMEOUT_S;
	c.deadline = nw_now() + c.timeout;
	memset(out, 0, sizeof(*out));
	int protocol = 0, json = 0, rc = -1;
	if (rconn_open(&c, err, errlen) || handshake(&c, text_only, &protocol, &json, err, errlen) ||
	    send_str(&c, "VERBOSE STATUS\n", err, errlen))
		goto out;
	ssize_t k;
	while ((k = recv_more(&c, "waiting for the status", err, errlen)) > 0)
		;
	if (k < 0)
		goto out;
	char perr[NW_ERRLEN];
	if (nw_ras_parse(c.buf ? c.buf + c.pos : "", c.len - c.pos, out, perr, sizeof(perr))) {
		nw_seterr(err, errlen, "RAS port at '%s': %s", c.addr, perr);
		goto out;
	}
	out->protocol = protocol;
	if (json && out->format != NW_RAS_JSON) {
		nw_seterr(err, errlen, "RAS port at '%s' took 'SET FORMAT json' but answered in text: not a NCCL RAS port", c.addr);
		goto out;
	}
	rc = 0;
out:
	if (c.fd >= 0)
		close(c.fd);
	free(c.buf);
	return rc;
}
