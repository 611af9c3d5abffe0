/* SPDX-License-Identifier: Apache-2.0 */
/* boot_root: rank 0's startup: listen, take and check every hello, refuse by name, send the table of hosts. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/boot_int.h"

/* "10.0.0.2:40112" or "[fd00::2]:40112" for a peer's address. */
static void addr_text(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
	char h[NI_MAXHOST], s[NI_MAXSERV];
	if (getnameinfo(sa, len, h, sizeof(h), s, sizeof(s), NI_NUMERICHOST | NI_NUMERICSERV))
		nw_strlcpy(out, "?", outlen);
	else {
		out[0] = '\0';
		boot_app(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, s);
	}
}

/* Make room for one socket per rank when the soft limit on open files is lower. */
static void raise_nofile(int need)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max : (rlim_t)need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* A bound, listening socket on sa, or -1 with errno set. */
static int bind_listen(int family, const struct sockaddr *sa, socklen_t len, int backlog)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(s, sa, len) == 0 && listen(s, backlog) == 0)
		return s;
	int e = errno;
	close(s);
	errno = e;
	return -1;
}

/*
 * Rank 0's listening socket. When MASTER_ADDR is a literal address, rank 0
 * listens on exactly that address (127.0.0.1 stays private to the host). A
 * host name may resolve differently here than on the other hosts (Debian's
 * 127.0.1.1 for the own name, a Kubernetes service address), so for a name,
 * or a literal address that is not one of this machine's, rank 0 listens on
 * every address, as torchrun's own store does; 'note' then says so for the
 * messages. The fd, or -1 with err.
 */
static int listen_on(struct nw_boot *b, const struct nw_boot_env *e, char *note, size_t notelen,
                     char *err, size_t errlen)
{
	char myhost[NW_BOOT_MAX_HOST + 1], eb[80];
	int fd = -1, last = 0, backlog = b->size < 4096 ? b->size + 16 : 4096;
	struct addrinfo hints, *res = NULL;
	char ps[16];
	nw_hostname(myhost, sizeof(myhost));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%d", e->port);
	if (getaddrinfo(e->addr, ps, &hints, &res) == 0 && res) {
		fd = bind_listen(res->ai_family, res->ai_addr, res->ai_addrlen, backlog);
		last = fd < 0 ? errno : 0;
		freeaddrinfo(res);
		if (fd < 0 && last != EADDRNOTAVAIL)
			goto failed;
		if (fd < 0)
			boot_app(note, notelen, " (%s '%s' is not an address of %s, so rank 0 listens on every address)",
			         e->addr_from, e->addr, myhost);
	} else {
		boot_app(note, notelen, " (rank 0 listens on every address of %s)", myhost);
	}
	if (fd < 0) {
		struct sockaddr_in6 a6;
		struct sockaddr_in a4;
		memset(&a6, 0, sizeof(a6));
		a6.sin6_family = AF_INET6;
		a6.sin6_addr = in6addr_any;
		a6.sin6_port = htons((uint16_t)e->port);
		fd = bind_listen(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), backlog);
		if (fd < 0 && errno != EADDRINUSE && errno != EACCES) {
			/* no IPv6 here: IPv4 alone */
			memset(&a4, 0, sizeof(a4));
			a4.sin_family = AF_INET;
			a4.sin_addr.s_addr = htonl(INADDR_ANY);
			a4.sin_port = htons((uint16_t)e->port);
			fd = bind_listen(AF_INET, (struct sockaddr *)&a4, sizeof(a4), backlog);
		}
		last = fd < 0 ? errno : 0;
	}
failed:
	if (fd < 0) {
		if (last == EADDRINUSE)
			return nw_seterr(err, errlen,
			                 "cannot listen on %s: port %d is in use on %s (rank 0); another job or program holds it: "
			                 "set NCCLWATCH_PORT to a free port on every rank",
			                 b->where, e->port, myhost);
		return nw_seterr(err, errlen, "cannot listen on %s on %s (rank 0): %s", b->where, myhost,
		                 boot_errtext(last, eb, sizeof(eb)));
	}
	boot_tune_socket(fd);
	return fd;
}

/* Send every rank the table of hosts; the job starts. */
static int send_welcome(struct nw_boot *b, const struct roster *ro, char *err, size_t errlen)
{
	size_t n;
	uint8_t *p = boot_welcome_pack(b, ro, &n);
	double deadline = nw_now() + b->timeout;
	char e2[256], w[320];
	int rc = 0;
	for (int r = 1; r < b->size && !rc; r++)
		if (boot_send_msg(b->conns[r].fd, NW_BOOT_WELCOME, 0, 0, p, n, deadline, e2, sizeof(e2)))
			rc = boot_fail(b, 1, r, err, errlen, "%s %s during startup", boot_who(b, r, w, sizeof(w)), e2);
	free(p);
	return rc;
}

/* Build the message for ranks whose fingerprint differs from rank 0's. */
static void mismatch_text(const struct nw_boot *b, const struct roster *ro, char *out, size_t outlen)
{
	int *grp = nw_calloc((size_t)b->size, sizeof(int));
	char *done = nw_calloc((size_t)b->size, 1);
	char w[320], ranks[600], da[200], db[200];
	out[0] = '\0';
	boot_app(out, outlen, "the ranks were started with different arguments or versions: ");
	int first = 1;
	for (int r = 1; r < b->size; r++) {
		if (done[r] || !ro->fp[r] || !strcmp(ro->fp[r], ro->fp[0]))
			continue;
		int n = 0;
		for (int s = r; s < b->size; s++)
			if (!done[s] && ro->fp[s] && !strcmp(ro->fp[s], ro->fp[r])) {
				grp[n++] = s;
				done[s] = 1;
			}
		boot_ranks_text(b->hosts, grp, n, ranks, sizeof(ranks));
		nw_boot_fpdiff(ro->fp[r], ro->fp[0], da, sizeof(da), db, sizeof(db));
		boot_app(out, outlen, "%s%s %s '%s' where %s has '%s'", first ? "" : "; ", ranks, n == 1 ? "has" : "have",
		         da, boot_who(b, 0, w, sizeof(w)), db);
		first = 0;
	}
	boot_app(out, outlen, "; start every rank with the same ncclwatch and the same arguments");
	free(grp);
	free(done);
}

/* Rank 0's state while the ranks arrive. */
struct arrivals {
	struct roster ro;
	struct conn *pend;     /* accepted connections not yet identified: [npend] of [maxpend] */
	int npend, maxpend;
	struct pollfd *pfd;    /* what one round polls: the listener, pend, the ranks known */
	int *map;              /* for each pfd: -1 the listener, below maxpend a pend index, else maxpend + rank */
	int lfd;               /* the listening socket, -1 when none */
	int arrived;           /* ranks identified */
	int mismatch;          /* a rank's fingerprint differs from rank 0's */
	int junk;              /* connections that were not ranks */
	char note[400];        /* how rank 0 listens, for messages */
	char junknote[200];    /* the last connection that was not a rank */
	double deadline;
	const char *fp;        /* rank 0's fingerprint */
};

/* Prepare a (caller-owned; arrivals_release frees what it holds) for b's startup: rank 0 known, nobody else. */
static void arrivals_init(struct arrivals *a, const struct nw_boot *b, const char *fp)
{
	memset(a, 0, sizeof(*a));
	a->deadline = nw_now() + b->timeout;
	a->maxpend = b->size + 16;
	a->lfd = -1;
	a->fp = fp;
	a->ro.pid = nw_calloc((size_t)b->size, sizeof(long));
	a->ro.lrank = nw_calloc((size_t)b->size, sizeof(int));
	a->ro.lsize = nw_calloc((size_t)b->size, sizeof(int));
	a->ro.fp = nw_calloc((size_t)b->size, sizeof(char *));
	a->pend = nw_calloc((size_t)a->maxpend, sizeof(*a->pend));
	a->pfd = nw_calloc((size_t)(1 + a->maxpend + b->size), sizeof(*a->pfd));
	a->map = nw_calloc((size_t)(1 + a->maxpend + b->size), sizeof(int));
	a->ro.pid[0] = (long)getpid();
	a->ro.lrank[0] = b->local_rank;
	a->ro.lsize[0] = b->local_size;
	a->ro.fp[0] = nw_strdup(fp);
}

/*
 * Close the listener and free what a holds. Connections not yet identified
 * may be ranks too: when the startup failed (rc), they are told why first.
 */
static void arrivals_release(struct arrivals *a, const struct nw_boot *b, int rc)
{
	if (a->lfd >= 0)
		close(a->lfd);
	double soon = nw_now() + 0.5;
	for (int i = 0; i < a->npend; i++) {
		if (rc && b->failed)
			boot_send_msg(a->pend[i].fd, NW_BOOT_ABORT, 0, 0, b->why, strnlen(b->why, NW_BOOT_MAX_WHY - 1), soon,
			              NULL, 0);
		boot_conn_close(&a->pend[i]);
	}
	for (int r = 0; r < b->size; r++)
		free(a->ro.fp[r]);
	free(a->ro.fp);
	free(a->ro.pid);
	free(a->ro.lrank);
	free(a->ro.lsize);
	free(a->pend);
	free(a->pfd);
	free(a->map);
}

/* Fill a->pfd and a->map for one round: the listener, connections not yet identified, ranks. Returns the count. */
static int poll_set(const struct nw_boot *b, struct arrivals *a)
{
	int np = 0;
	a->pfd[np] = (struct pollfd){ .fd = a->lfd, .events = POLLIN };
	a->map[np++] = -1;
	for (int i = 0; i < a->npend; i++) {
		a->pfd[np] = (struct pollfd){ .fd = a->pend[i].fd, .events = POLLIN };
		a->map[np++] = i;
	}
	for (int r = 1; r < b->size; r++)
		if (b->conns[r].fd >= 0) {
			a->pfd[np] = (struct pollfd){ .fd = b->conns[r].fd, .events = POLLIN };
			a->map[np++] = a->maxpend + r;
		}
	return np;
}

/* Take every connection waiting on the listener; past the room for them, close them and count them as junk. */
static void accept_waiting(struct arrivals *a)
{
	for (int guard = 0; guard < 256; guard++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			break;
		if (a->npend >= a->maxpend) {
			close(fd);
			a->junk++;
			continue;
		}
		boot_tune_socket(fd);
		memset(&a->pend[a->npend], 0, sizeof(a->pend[a->npend]));
		a->pend[a->npend++].fd = fd;
	}
}

/*
 * Rank r, already known, spoke during startup: it is gone or stopping. 0
 * while nothing whole has arrived, else -1 after telling everyone.
 */
static int rank_spoke(struct nw_boot *b, const struct arrivals *a, int r, char *err, size_t errlen)
{
	struct conn *c = &b->conns[r];
	char e2[300], w[320];
	int st = boot_conn_step(c, 0, e2, sizeof(e2));
	if (st == CS_AGAIN)
		return 0;
	if (st == CS_MSG && c->h.type == NW_BOOT_ABORT) {
		char why[NW_BOOT_MAX_WHY + 1];
		boot_clean_copy(why, sizeof(why), c->buf, c->h.len);
		return boot_fail(b, 1, r, err, errlen, "%s stopped: %s", boot_who(b, r, w, sizeof(w)), why);
	}
	if (st == CS_EOF)
		return boot_fail(b, 1, r, err, errlen, "%s (pid %ld) %s during startup", boot_who(b, r, w, sizeof(w)),
		                 a->ro.pid[r], e2);
	return boot_fail(b, 1, r, err, errlen, "%s sent %s during startup", boot_who(b, r, w, sizeof(w)),
	                 st == CS_MSG ? boot_op_name(c->h.type) : e2);
}

/* Not one of ours (a port scan, a stray client): note it, drop pend[i] (the last one takes its place). */
static void drop_stranger(struct arrivals *a, int i, int st, const char *peer, const char *why)
{
	if (st != CS_EOF) {
		a->junk++;
		a->junknote[0] = '\0';
		boot_app(a->junknote, sizeof(a->junknote), "; a connection from %s was not an ncclwatch rank (%s)", peer,
		         st == CS_MSG ? "unexpected first message" : why);
	}
	boot_conn_close(&a->pend[i]);
	a->pend[i] = a->pend[--a->npend];
	a->pend[a->npend].fd = -1;
}

/*
 * Refuse a hello from another world size, a rank out of range or a rank
 * already taken: -1 after telling everyone (the connection stays pending,
 * so arrivals_release tells it too); else 0.
 */
static int check_hello(struct nw_boot *b, const struct arrivals *a, const struct nw_boot_hello *h, const char *peer,
                       char *err, size_t errlen)
{
	char w[320];
	if (h->size != b->size)
		return boot_fail(b, 1, -1, err, errlen,
		                 "rank %d on %s (pid %ld) has a world size of %d where %s has %d: start every rank with the "
		                 "same WORLD_SIZE, and check that no other job uses %s",
		                 h->rank, h->host, h->pid, h->size, boot_who(b, 0, w, sizeof(w)), b->size, b->where);
	if (h->rank >= h->size)
		return boot_fail(b, 1, -1, err, errlen, "the process at %s (pid %ld on %s) claims rank %d of %d", peer,
		                 h->pid, h->host, h->rank, h->size);
	if (h->rank == 0 || b->conns[h->rank].fd >= 0)
		return boot_fail(b, 1, -1, err, errlen,
		                 "rank %d is claimed twice: by pid %ld on %s and by pid %ld on %s; give every process its own "
		                 "RANK, and check that no other job uses %s",
		                 h->rank, a->ro.pid[h->rank], b->hosts[h->rank], h->pid, h->host, b->where);
	return 0;
}

/* Rank h->rank joins: its connection (pend[i]) and what its hello says (the fingerprint is taken from h). */
static void admit(struct nw_boot *b, struct arrivals *a, int i, struct nw_boot_hello *h)
{
	int r = h->rank;
	b->conns[r] = a->pend[i];
	a->pend[i] = a->pend[--a->npend];
	a->pend[a->npend].fd = -1;
	free(b->hosts[r]);
	b->hosts[r] = nw_strdup(h->host);
	a->ro.pid[r] = h->pid;
	a->ro.lrank[r] = h->local_rank;
	a->ro.lsize[r] = h->local_size;
	a->ro.fp[r] = h->fingerprint;
	h->fingerprint = NULL;
	a->arrived++;
	if (strcmp(a->ro.fp[r], a->fp) && !a->mismatch) {
		/* a difference ends the job: give the others a moment to arrive, to name them all */
		a->mismatch = 1;
		double soon = nw_now() + 2.0;
		if (soon < a->deadline)
			a->deadline = soon;
	}
}

/*
 * A connection not yet identified (pend[i]) has data. 0: no whole message
 * yet. 1: taken (a rank joined, or a stranger was dropped; pend changed).
 * -1: the startup fails (another build, another world, a rank claimed
 * twice), everyone told.
 */
static int take_hello(struct nw_boot *b, struct arrivals *a, int i, char *err, size_t errlen)
{
	struct conn *c = &a->pend[i];
	char e2[300], peer[80] = "?";
	int st = boot_conn_step(c, 0, e2, sizeof(e2));
	if (st == CS_AGAIN)
		return 0;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0)
		addr_text((struct sockaddr *)&ss, sl, peer, sizeof(peer));
	if (st == CS_BAD && c->hgot == NW_BOOT_HDR_LEN && boot_hdr_other_build(c->hdr))
		/* another ncclwatch build: a rank that can never join */
		return boot_fail(b, 1, -1, err, errlen, "the process at %s speaks %s", peer, e2);
	if (st != CS_MSG || c->h.type != NW_BOOT_HELLO) {
		drop_stranger(a, i, st, peer, e2);
		return 1;
	}
	struct nw_boot_hello h;
	if (nw_boot_hello_unpack(c->buf, c->h.len, &h, e2, sizeof(e2)))
		return boot_fail(b, 1, -1, err, errlen, "the process at %s sent %s", peer, e2);
	boot_conn_reset(c);
	int rc = check_hello(b, a, &h, peer, err, errlen);
	if (!rc)
		admit(b, a, i, &h);
	nw_boot_hello_release(&h);
	return rc ? -1 : 1;
}

/*
 * One round: wait (until the deadline) for what comes next and take it.
 * 1: go on; 0: the deadline passed; -1: the startup fails, everyone told.
 */
static int serve_round(struct nw_boot *b, struct arrivals *a, char *err, size_t errlen)
{
	int np = poll_set(b, a);
	int ms = boot_ms_left(a->deadline);
	if (ms == 0)
		return 0;
	int pr = poll(a->pfd, (nfds_t)np, ms);
	if (pr < 0 && errno != EINTR) {
		char e2[300];
		return boot_fail(b, 1, -1, err, errlen, "waiting for the ranks failed: %s",
		                 boot_errtext(errno, e2, sizeof(e2)));
	}
	for (int k = 0; pr > 0 && k < np; k++) {
		int m = a->map[k];
		if (!a->pfd[k].revents)
			continue;
		if (m == -1) {
			accept_waiting(a);
		} else if (m >= a->maxpend) {
			if (rank_spoke(b, a, m - a->maxpend, err, errlen))
				return -1;
		} else if (a->pend[m].fd >= 0) {
			int st = take_hello(b, a, m, err, errlen);
			if (st)
				return st; /* 1: pend changed, so pfd and map are stale: poll again */
		}
	}
	return 1;
}

/*
 * The wait is over: refuse fingerprints that differ (naming the ranks and
 * what differs) or ranks that never came (naming them, and who did).
 * 0 when every rank is here and agrees, else -1 after telling everyone.
 */
static int check_roll(struct nw_boot *b, const struct arrivals *a, char *err, size_t errlen)
{
	int *list = nw_calloc((size_t)b->size, sizeof(int));
	int nmiss = 0, nhere = 0, rc = 0;
	char miss[300];
	for (int r = 1; r < b->size; r++)
		if (b->conns[r].fd < 0)
			list[nmiss++] = r;
	if (nmiss)
		boot_ranks_text(NULL, list, nmiss, miss, sizeof(miss));
	if (a->mismatch) {
		char msg[NW_ERRLEN];
		mismatch_text(b, &a->ro, msg, sizeof(msg));
		if (nmiss)
			boot_app(msg, sizeof(msg), " (%s had not connected yet)", miss);
		rc = boot_fail(b, 1, -1, err, errlen, "%s", msg);
	} else if (nmiss) {
		char here[300];
		for (int r = 0; r < b->size; r++)
			if (r == 0 || b->conns[r].fd >= 0)
				list[nhere++] = r;
		boot_ranks_text(b->hosts, list, nhere, here, sizeof(here));
		rc = boot_fail(b, 1, -1, err, errlen,
		               "%s never connected to %s%s within %g s (connected: %s)%s%s; start the missing ranks with the "
		               "same MASTER_ADDR and port, or raise the timeout",
		               miss, b->where, a->note, b->timeout, here + (nhere == 1 ? 5 : 6), a->junknote,
		               a->junk > 1 ? " and others" : "");
	}
	free(list);
	return rc;
}

/* Hosts known: a LOCAL_WORLD_SIZE not given is the number of ranks on the host (a LOCAL_RANK past it is refused). */
static int local_sizes(struct nw_boot *b, struct roster *ro, char *err, size_t errlen)
{
	char w[320];
	for (int r = 0; r < b->size; r++) {
		if (ro->lsize[r])
			continue;
		int n = 0;
		for (int s = 0; s < b->size; s++)
			n += !strcmp(b->hosts[s], b->hosts[r]);
		ro->lsize[r] = n;
		if (ro->lrank[r] >= n)
			return boot_fail(b, 1, -1, err, errlen,
			                 "%s has LOCAL_RANK=%d but only %d rank%s run%s on %s: set LOCAL_WORLD_SIZE, or check "
			                 "LOCAL_RANK",
			                 boot_who(b, r, w, sizeof(w)), ro->lrank[r], n, n == 1 ? "" : "s", n == 1 ? "s" : "",
			                 b->hosts[r]);
	}
	b->local_size = ro->lsize[0];
	return 0;
}

int boot_root_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err, size_t errlen)
{
	struct arrivals a;
	int rc = -1, st = 1;
	arrivals_init(&a, b, fp);
	raise_nofile(b->size + a.maxpend + 64);
	a.lfd = listen_on(b, e, a.note, sizeof(a.note), err, errlen);
	if (a.lfd < 0) {
		b->failed = 1;
		nw_strlcpy(b->why, err, sizeof(b->why));
	} else {
		while (a.arrived < b->size - 1 && (st = serve_round(b, &a, err, errlen)) > 0)
			;
		if (st >= 0 && !check_roll(b, &a, err, errlen) && !local_sizes(b, &a.ro, err, errlen))
			rc = send_welcome(b, &a.ro, err, errlen);
	}
	arrivals_release(&a, b, rc);
	return rc;
}
