/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's HTTP endpoint (see httpd.h): our own epoll loop accepts
 * connections, enforces the caps and deadlines, and drives libmicrohttpd
 * (external epoll mode, no listening socket of its own), which parses the
 * requests and writes the replies. A second thread renders; the loop
 * caches what it rendered as shared libmicrohttpd responses.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "export/gzip.h"
#include "export/httpd.h"
#include "export/promtext.h"
#include "util/util.h"

#define HTTPD_IDLE_S 10u          /* libmicrohttpd's own timeout: a connection making no progress */
#define HTTPD_CONN_MEMORY 16384u  /* per connection: request headers and reply headers */
#define HTTPD_ACCEPT_BATCH 64     /* connections accepted per wake-up */

/* Connections of one address (a node of the tsearch tree h->peers). */
#define HD_PEER_KEY 17
struct hd_peer {
	unsigned char key[HD_PEER_KEY]; /* family, address */
	unsigned n;                     /* its connections */
};

/* Which deadline a connection is under. */
enum { HD_LIST_NONE, HD_LIST_HEADERS, HD_LIST_REPLY };

/* One connection, from accept until libmicrohttpd says CLOSED. */
struct hd_conn {
	int fd;
	struct MHD_Connection *mc;      /* set when libmicrohttpd takes it */
	struct hd_peer *peer;           /* NULL once killed */
	int list;                       /* HD_LIST_*: the list it is in, ordered by deadline */
	double deadline;                /* monotonic seconds */
	struct hd_conn *prev, *next;
	int killed;                     /* shut down by us: no longer counted */
	int waited;                     /* suspended for a rendering, now resumed: serve the cache */
};

struct hd_list {
	struct hd_conn *head, *tail;
};

struct nw_httpd {
	int lfd, ep, done_fd, stop_fd;  /* listening socket, the loop's epoll, rendering done, stop */
	int mhd_ep;                     /* libmicrohttpd's own epoll descriptor */
	unsigned port;
	struct MHD_Daemon *d;
	unsigned max_conn, nconn;       /* cap and count of connections (killed ones not counted) */
	struct hd_conn **byfd;          /* connection by descriptor */
	size_t nbyfd;
	void *peers;                    /* tsearch tree of struct hd_peer */
	struct hd_list headers;         /* waiting for a request's headers: deadline NW_HTTPD_HEADER_S */
	struct hd_list replying;        /* taking a reply: deadline NW_HTTPD_REPLY_S */
	struct hd_conn **waiters;       /* scrapes suspended until the next rendering */
	size_t nwait, capwait;
	/* the cache, the loop thread's alone */
	struct MHD_Response *plain, *gz;
	double cache_at, cache_s, render_asked;
	int rendering, stopping;
	struct MHD_Response *r_root, *r_404, *r_405, *r_500, *r_503;
	/* the rendering thread and what it hands over, under mu */
	nw_httpd_render_fn render;
	void *ctx;
	pthread_t loop_tid, render_tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int want, quit, out_ready;
	uint64_t want_served;
	char *out, *outgz;
	size_t outlen, outgzlen;
	struct nw_httpd_stats st;       /* updated atomically */
};

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int nw_httpd_parse_listen(const char *s, void *ss, size_t *addrlen, char *err, size_t errlen)
{
	char host[256];
	const char *colon = s ? strrchr(s, ':') : NULL;
	if (!colon)
		return nw_seterr(err, errlen, "bad listen address '%s': give ADDR:PORT, e.g. 127.0.0.1:9850",
		                 s ? s : "");
	size_t hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return nw_seterr(err, errlen, "bad listen address '%s': address too long", s);
	memcpy(host, s, hl);
	host[hl] = '\0';
	long port;
	char perr[NW_ERRLEN];
	if (nw_parse_long(colon + 1, 0, 65535, &port, "port", perr, sizeof(perr)) < 0)
		return nw_seterr(err, errlen, "bad listen address '%s': %s", s, perr);

	memset(ss, 0, sizeof(struct sockaddr_storage));
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *a6 = ss;
		host[hl - 1] = '\0';
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return nw_seterr(err, errlen, "bad listen address '%s': '%s' is not an IPv6 address",
			                 s, host + 1);
		*addrlen = sizeof(*a6);
		return 0;
	}
	struct sockaddr_in *a4 = ss;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	if (hl == 0)
		a4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
		return nw_seterr(err, errlen,
		                 "bad listen address '%s': '%s' is not an IPv4 address (IPv6 goes in brackets: [::1]:9850)",
		                 s, host);
	*addrlen = sizeof(*a4);
	return 0;
}

/* ---- lists of connections in deadline order ---- */

static void list_add(struct hd_list *l, struct hd_conn *c, int which, double deadline)
{
	c->list = which;
	c->deadline = deadline;
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

static void list_del(struct nw_httpd *h, struct hd_conn *c)
{
	struct hd_list *l = c->list == HD_LIST_HEADERS ? &h->headers : c->list == HD_LIST_REPLY ? &h->replying : NULL;
	if (!l)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
	c->list = HD_LIST_NONE;
}

/* ---- connections per address (a tsearch tree) ---- */

static int cmp_peer(const void *a, const void *b)
{
	return memcmp(((const struct hd_peer *)a)->key, ((const struct hd_peer *)b)->key, HD_PEER_KEY);
}

/* The address of ss as a tree key: family, then the address bytes (ports left out). */
static void peer_key(const struct sockaddr_storage *ss, unsigned char *key)
{
	memset(key, 0, HD_PEER_KEY);
	key[0] = (unsigned char)ss->ss_family;
	if (ss->ss_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/* The entry of ss's address (made when absent, count 0). */
static struct hd_peer *peer_get(struct nw_httpd *h, const struct sockaddr_storage *ss)
{
	struct hd_peer key;
	peer_key(ss, key.key);
	void *found = tfind(&key, &h->peers, cmp_peer);
	if (found)
		return *(struct hd_peer **)found;
	struct hd_peer *p = nw_calloc(1, sizeof(*p));
	memcpy(p->key, key.key, HD_PEER_KEY);
	if (!tsearch(p, &h->peers, cmp_peer))
		NW_BUG("tsearch could not add an address (out of memory)");
	return p;
}

/* One connection fewer from p; the entry goes with its last one. */
static void peer_put(struct nw_httpd *h, struct hd_peer *p)
{
	if (p->n && --p->n)
		return;
	tdelete(p, &h->peers, cmp_peer);
	free(p);
}

/* ---- connection records ---- */

/*
 * Close c to make room or for a missed deadline: its socket is shut down
 * (libmicrohttpd sees the end and closes it in this thread, then says
 * CLOSED) and it stops counting at once.
 */
static void conn_kill(struct nw_httpd *h, struct hd_conn *c)
{
	if (c->killed)
		return;
	list_del(h, c);
	shutdown(c->fd, SHUT_RDWR);
	c->killed = 1;
	peer_put(h, c->peer);
	c->peer = NULL;
	h->nconn--;
}

/* Forget c (closed by libmicrohttpd, or never taken by it). */
static void conn_free(struct nw_httpd *h, struct hd_conn *c)
{
	if (!c->killed) {
		list_del(h, c);
		peer_put(h, c->peer);
		h->nconn--;
	}
	if (c->fd >= 0 && (size_t)c->fd < h->nbyfd && h->byfd[c->fd] == c)
		h->byfd[c->fd] = NULL;
	for (size_t i = 0; i < h->nwait; i++)
		if (h->waiters[i] == c)
			h->waiters[i] = h->waiters[--h->nwait];
	free(c);
}

/*
 * Make room by closing the oldest connection still waiting to send its
 * headers: of address p, or of any address (p NULL). 1 when one was closed.
 */
static int evict(struct nw_httpd *h, const struct hd_peer *p)
{
	for (struct hd_conn *c = h->headers.head; c; c = c->next)
		if (!p || c->peer == p) {
			conn_kill(h, c);
			__atomic_add_fetch(&h->st.evicted, 1, __ATOMIC_RELAXED);
			return 1;
		}
	return 0;
}

/* A new connection: admitted within the caps (making room when needed) and handed to libmicrohttpd. */
static void admit(struct nw_httpd *h, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
	if ((size_t)fd >= h->nbyfd) {
		close(fd);
		return;
	}
	struct hd_peer *p = peer_get(h, ss);
	if ((p->n >= NW_HTTPD_MAX_PER_ADDR && !evict(h, p)) || (h->nconn >= h->max_conn && !evict(h, NULL))) {
		close(fd);
		p->n++;
		peer_put(h, p);
		return;
	}
	struct hd_conn *c = nw_calloc(1, sizeof(*c));
	c->fd = fd;
	c->peer = p;
	p->n++;
	h->nconn++;
	h->byfd[fd] = c;
	list_add(&h->headers, c, HD_LIST_HEADERS, mono() + NW_HTTPD_HEADER_S);
	__atomic_add_fetch(&h->st.accepted, 1, __ATOMIC_RELAXED);
	/* libmicrohttpd closes the socket itself when it refuses it */
	if (MHD_add_connection(h->d, fd, (const struct sockaddr *)ss, sl) != MHD_YES && h->byfd[fd] == c) {
		c->fd = -1;
		h->byfd[fd] = NULL;
		conn_free(h, c);
	}
}

static void accept_some(struct nw_httpd *h)
{
	for (int i = 0; i < HTTPD_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(h->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			admit(h, fd, &ss, sl);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE)
			evict(h, NULL); /* the next wake-up takes it */
		return;
	}
}

/* Close the connections past their deadline. */
static void expire(struct nw_httpd *h, double now)
{
	struct hd_list *lists[2] = { &h->headers, &h->replying };
	for (int k = 0; k < 2; k++)
		while (lists[k]->head && lists[k]->head->deadline <= now) {
			conn_kill(h, lists[k]->head);
			__atomic_add_fetch(&h->st.expired, 1, __ATOMIC_RELAXED);
		}
}

/* libmicrohttpd took a connection (STARTED) or closed one (CLOSED). */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct nw_httpd *h = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		int fd = ci ? ci->connect_fd : -1;
		struct hd_conn *c = fd >= 0 && (size_t)fd < h->nbyfd ? h->byfd[fd] : NULL;
		if (c)
			c->mc = mc;
		*socket_ctx = c;
	} else if (*socket_ctx) {
		conn_free(h, *socket_ctx);
		*socket_ctx = NULL;
	}
}

/* A request ended (its reply sent, or the client gone): the connection waits for its next request's headers. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **req_ctx, enum MHD_RequestTerminationCode toe)
{
	struct nw_httpd *h = cls;
	(void)toe;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct hd_conn *c = ci ? ci->socket_context : NULL;
	*req_ctx = NULL;
	if (!c || c->killed)
		return;
	list_del(h, c);
	list_add(&h->headers, c, HD_LIST_HEADERS, mono() + NW_HTTPD_HEADER_S);
}

/* c's reply is queued: it has NW_HTTPD_REPLY_S to take it. */
static void conn_replying(struct nw_httpd *h, struct hd_conn *c)
{
	if (!c || c->killed)
		return;
	list_del(h, c);
	list_add(&h->replying, c, HD_LIST_REPLY, mono() + NW_HTTPD_REPLY_S);
}

static enum MHD_Result queue(struct nw_httpd *h, struct MHD_Connection *mc, struct hd_conn *c, unsigned status,
                             struct MHD_Response *r)
{
	conn_replying(h, c);
	return MHD_queue_response(mc, status, r);
}

/* /metrics from the cache: gzip when the client accepts it and there is a gzip copy. */
static enum MHD_Result serve_metrics(struct nw_httpd *h, struct MHD_Connection *mc, struct hd_conn *c)
{
	if (!h->plain)
		return queue(h, mc, c, MHD_HTTP_INTERNAL_SERVER_ERROR, h->r_500);
	const char *ae = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	struct MHD_Response *r = h->gz && nw_gzip_accepted(ae) ? h->gz : h->plain;
	__atomic_add_fetch(&h->st.served, 1, __ATOMIC_RELAXED);
	return queue(h, mc, c, MHD_HTTP_OK, r);
}

/* Ask the rendering thread for a rendering (when none is under way). */
static void request_render(struct nw_httpd *h)
{
	if (h->rendering)
		return;
	h->rendering = 1;
	h->render_asked = mono();
	pthread_mutex_lock(&h->mu);
	h->want = 1;
	h->want_served = __atomic_load_n(&h->st.served, __ATOMIC_RELAXED) + h->nwait;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/*
 * /metrics: from a fresh cache at once, else wait (suspended) for the next
 * rendering and share it. Once the cache is three quarters of its age, a
 * scrape asks for the next rendering and is still served from the cache:
 * under steady scraping nobody waits for a rendering.
 */
static enum MHD_Result handle_metrics(struct nw_httpd *h, struct MHD_Connection *mc, struct hd_conn *c)
{
	if (h->stopping)
		return queue(h, mc, c, MHD_HTTP_SERVICE_UNAVAILABLE, h->r_503);
	if (c && c->waited) {
		c->waited = 0;
		return serve_metrics(h, mc, c);
	}
	double age = mono() - h->cache_at;
	if (h->plain && age < h->cache_s) {
		if (age >= h->cache_s * 0.75)
			request_render(h);
		return serve_metrics(h, mc, c);
	}
	if (!c) /* not one of ours (cannot happen): the cache as it is */
		return serve_metrics(h, mc, c);
	if (h->nwait == h->capwait) {
		h->capwait = h->capwait ? h->capwait * 2 : 64;
		h->waiters = nw_realloc(h->waiters, h->capwait * sizeof(*h->waiters));
	}
	h->waiters[h->nwait++] = c;
	list_del(h, c); /* waiting for a rendering has no deadline: the client did its part */
	MHD_suspend_connection(mc);
	request_render(h);
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_len, void **req_ctx)
{
	struct nw_httpd *h = cls;
	(void)version;
	(void)upload;
	(void)upload_len;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct hd_conn *c = ci ? ci->socket_context : NULL;
	if (!*req_ctx) {
		/* the request's headers are in: its header deadline no longer applies. The
		   reply comes at the next call: one queued at the first closes the connection */
		*req_ctx = h;
		if (c && !c->killed)
			list_del(h, c);
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return queue(h, mc, c, MHD_HTTP_METHOD_NOT_ALLOWED, h->r_405);
	if (!strcmp(url, "/metrics"))
		return handle_metrics(h, mc, c);
	return queue(h, mc, c, strcmp(url, "/") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK, strcmp(url, "/") ? h->r_404 : h->r_root);
}

/* ---- rendering ---- */

/* A shared /metrics response holding body (handed over); gz marks it gzip. NULL when it cannot be made. */
static struct MHD_Response *metrics_response(char *body, size_t len, int gz)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, NW_PROM_CONTENT_TYPE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	if (gz)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	return r;
}

/* The rendering thread: one rendering (and its gzip) each time the loop asks. */
static void *render_main(void *arg)
{
	struct nw_httpd *h = arg;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->want && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->quit)
			break;
		h->want = 0;
		uint64_t served = h->want_served;
		pthread_mutex_unlock(&h->mu);
		size_t len = 0, zlen = 0;
		char err[NW_ERRLEN];
		char *body = h->render(h->ctx, served, &len);
		char *z = body ? nw_gzip(body, len, &zlen, err, sizeof(err)) : NULL;
		pthread_mutex_lock(&h->mu);
		free(h->out);
		free(h->outgz);
		h->out = body;
		h->outlen = len;
		h->outgz = z;
		h->outgzlen = zlen;
		h->out_ready = 1;
		pthread_mutex_unlock(&h->mu);
		__atomic_add_fetch(&h->st.renders, 1, __ATOMIC_RELAXED);
		uint64_t one = 1;
		if (write(h->done_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write only fails at 2^64-1: cannot happen */
		}
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* A rendering is done: it becomes the cache, and every scrape waiting for it is resumed. */
static void take_rendering(struct nw_httpd *h)
{
	uint64_t n;
	if (read(h->done_fd, &n, sizeof(n)) < 0)
		return;
	pthread_mutex_lock(&h->mu);
	char *body = h->out, *z = h->outgz;
	size_t len = h->outlen, zlen = h->outgzlen;
	int ready = h->out_ready;
	h->out = h->outgz = NULL;
	h->out_ready = 0;
	pthread_mutex_unlock(&h->mu);
	if (!ready)
		return;
	if (h->plain)
		MHD_destroy_response(h->plain);
	if (h->gz)
		MHD_destroy_response(h->gz);
	h->plain = body ? metrics_response(body, len, 0) : NULL;
	h->gz = z ? metrics_response(z, zlen, 1) : NULL;
	h->cache_at = h->render_asked;
	h->rendering = 0;
	for (size_t i = 0; i < h->nwait; i++) {
		h->waiters[i]->waited = 1;
		MHD_resume_connection(h->waiters[i]->mc);
	}
	h->nwait = 0;
}

/* ---- the loop ---- */

/* Milliseconds until something is due: libmicrohttpd's own timeouts, then our deadlines; -1 none. */
static int next_timeout(struct nw_httpd *h)
{
	double t = -1;
	MHD_UNSIGNED_LONG_LONG ms;
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		t = (double)ms / 1e3;
	double now = mono();
	struct hd_conn *heads[2] = { h->headers.head, h->replying.head };
	for (int k = 0; k < 2; k++)
		if (heads[k]) {
			double d = heads[k]->deadline - now;
			d = d < 0 ? 0 : d;
			t = t < 0 || d < t ? d : t;
		}
	return t < 0 ? -1 : t > 1000 ? 1000000 : (int)(t * 1e3) + 1;
}

/*
 * Let libmicrohttpd work until it has nothing ready: each of its runs takes
 * a bounded batch of events, and a flood of connections (made and closed)
 * must not leave a scraper's request waiting behind them.
 */
static void run_mhd(struct nw_httpd *h)
{
	for (int i = 0; i < 256; i++) {
		MHD_run(h->d);
		struct pollfd p = { .fd = h->mhd_ep, .events = POLLIN };
		if (poll(&p, 1, 0) <= 0)
			break;
	}
}

static void *loop_main(void *arg)
{
	struct nw_httpd *h = arg;
	int stop = 0;
	while (!stop) {
		struct epoll_event ev[8];
		int n = epoll_wait(h->ep, ev, 8, next_timeout(h));
		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == h->lfd)
				accept_some(h);
			else if (ev[i].data.fd == h->done_fd)
				take_rendering(h);
			else if (ev[i].data.fd == h->stop_fd)
				stop = 1;
		}
		expire(h, mono());
		run_mhd(h);
	}
	/* every suspended scrape is resumed (and answered 503) before libmicrohttpd stops */
	h->stopping = 1;
	for (size_t i = 0; i < h->nwait; i++)
		MHD_resume_connection(h->waiters[i]->mc);
	h->nwait = 0;
	return NULL;
}

/*
 * How many connections to accept at once: many, so that idle or slow
 * clients cannot take every place a scrape needs, but within the open-file
 * limit (raised to its hard limit, up to what we use, when that is lower).
 */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	rlim_t want = NW_HTTPD_MAX_CONN + 128;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 64;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return NW_HTTPD_MAX_CONN;
	return rl.rlim_cur > 256 ? (unsigned)(rl.rlim_cur - 128) : 64;
}

unsigned nw_httpd_port(const struct nw_httpd *h)
{
	return h->port;
}

void nw_httpd_get_stats(const struct nw_httpd *h, struct nw_httpd_stats *st)
{
	st->accepted = __atomic_load_n(&h->st.accepted, __ATOMIC_RELAXED);
	st->evicted = __atomic_load_n(&h->st.evicted, __ATOMIC_RELAXED);
	st->expired = __atomic_load_n(&h->st.expired, __ATOMIC_RELAXED);
	st->renders = __atomic_load_n(&h->st.renders, __ATOMIC_RELAXED);
	st->served = __atomic_load_n(&h->st.served, __ATOMIC_RELAXED);
}

/* Start libmicrohttpd without a listening socket of its own, driven from our loop. 0, or -1 with err. */
static int start_mhd(struct nw_httpd *h, char *err, size_t errlen)
{
	h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
	                        handle, h, MHD_OPTION_CONNECTION_LIMIT, h->max_conn + 256,
	                        MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_IDLE_S,
	                        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_CONN_MEMORY,
	                        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	const union MHD_DaemonInfo *di = h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!di)
		return nw_seterr(err, errlen, "libmicrohttpd refused to start (out of memory or file descriptors?)");
	h->mhd_ep = di->epoll_fd;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = di->epoll_fd };
	if (epoll_ctl(h->ep, EPOLL_CTL_ADD, di->epoll_fd, &ev) != 0)
		return nw_seterr(err, errlen, "cannot watch libmicrohttpd's events: %s", strerror(errno));
	return 0;
}

/* The answers that never change. */
static struct MHD_Response *fixed(const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	return r;
}

static int make_fixed(struct nw_httpd *h, char *err, size_t errlen)
{
	h->r_root = fixed("ncclwatch exporter: metrics are at /metrics\n");
	h->r_404 = fixed("not found: metrics are at /metrics\n");
	h->r_405 = fixed("only GET and HEAD are served here\n");
	h->r_500 = fixed("rendering metrics failed; see the exporter's stderr\n");
	h->r_503 = fixed("the exporter is stopping\n");
	if (!h->r_root || !h->r_404 || !h->r_405 || !h->r_500 || !h->r_503)
		return nw_seterr(err, errlen, "out of memory");
	return 0;
}

/* The listening socket, its events, and the loop's own event descriptors. 0, or -1 with err. */
static int open_fds(struct nw_httpd *h, const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	size_t alen = 0;
	if (nw_httpd_parse_listen(addr, &ss, &alen, err, errlen) < 0)
		return -1;
	h->ep = epoll_create1(EPOLL_CLOEXEC);
	h->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (h->ep < 0 || h->done_fd < 0 || h->stop_fd < 0 || h->lfd < 0 ||
	    setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(h->lfd, (struct sockaddr *)&ss, (socklen_t)alen) != 0 || listen(h->lfd, 1024) != 0)
		return nw_seterr(err, errlen, "cannot listen on '%s': %s; pick another address or port with --listen",
		                 addr, strerror(errno));
	socklen_t sl = sizeof(ss);
	if (getsockname(h->lfd, (struct sockaddr *)&ss, &sl) == 0)
		h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                         : ((struct sockaddr_in *)&ss)->sin_port);
	int fds[3] = { h->lfd, h->done_fd, h->stop_fd };
	for (int i = 0; i < 3; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		if (epoll_ctl(h->ep, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			return nw_seterr(err, errlen, "cannot watch '%s': %s", addr, strerror(errno));
	}
	return 0;
}

static void free_all(struct nw_httpd *h)
{
	if (h->d)
		MHD_stop_daemon(h->d);
	struct MHD_Response *rs[] = { h->plain, h->gz, h->r_root, h->r_404, h->r_405, h->r_500, h->r_503 };
	for (size_t i = 0; i < NW_ARRAY_LEN(rs); i++)
		if (rs[i])
			MHD_destroy_response(rs[i]);
	int fds[] = { h->lfd, h->ep, h->done_fd, h->stop_fd };
	for (size_t i = 0; i < NW_ARRAY_LEN(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	tdestroy(h->peers, free);
	free(h->byfd);
	free(h->waiters);
	free(h->out);
	free(h->outgz);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

struct nw_httpd *nw_httpd_start(const struct nw_httpd_opts *o, char *err, size_t errlen)
{
	struct nw_httpd *h = nw_calloc(1, sizeof(*h));
	h->lfd = h->ep = h->done_fd = h->stop_fd = -1;
	h->render = o->render;
	h->ctx = o->ctx;
	h->cache_s = o->cache_s;
	h->max_conn = connection_limit();
	struct rlimit rl;
	h->nbyfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1u << 20
	           ? (size_t)rl.rlim_cur : (size_t)1 << 20;
	h->byfd = nw_calloc(h->nbyfd, sizeof(*h->byfd));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (open_fds(h, o->listen, err, errlen) != 0 || make_fixed(h, err, errlen) != 0 || start_mhd(h, err, errlen) != 0) {
		free_all(h);
		return NULL;
	}
	if (pthread_create(&h->render_tid, NULL, render_main, h) != 0) {
		nw_seterr(err, errlen, "cannot start the rendering thread");
		free_all(h);
		return NULL;
	}
	if (pthread_create(&h->loop_tid, NULL, loop_main, h) != 0) {
		nw_seterr(err, errlen, "cannot start the HTTP thread");
		pthread_mutex_lock(&h->mu);
		h->quit = 1;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->render_tid, NULL);
		free_all(h);
		return NULL;
	}
	return h;
}

void nw_httpd_stop(struct nw_httpd *h)
{
	if (!h)
		return;
	uint64_t one = 1;
	if (write(h->stop_fd, &one, sizeof(one)) < 0) {
		/* cannot fail on an eventfd below 2^64-1 */
	}
	pthread_join(h->loop_tid, NULL);
	pthread_mutex_lock(&h->mu);
	h->quit = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->render_tid, NULL);
	free_all(h);
}
