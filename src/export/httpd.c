/* The exporter's HTTP endpoint on libmicrohttpd (see httpd.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "export/gzip.h"
#include "export/httpd.h"
#include "export/mhd_abi.h"
#include "export/promtext.h"
#include "util/util.h"

/*
 * Connections: one epoll thread serves them all, so a client that holds a
 * connection idle or sends a header line now and then costs a descriptor,
 * never a thread nor a scrape's turn. Up to HTTPD_MAX_CONN at once (fewer
 * when the open-file limit is lower), at most HTTPD_MAX_PER_IP from one
 * address, and a connection silent for HTTPD_IDLE_S seconds is closed.
 */
#define HTTPD_MAX_CONN 4096u
#define HTTPD_MAX_PER_IP 1024u
#define HTTPD_IDLE_S 10u

struct nw_httpd {
	struct MHD_Daemon *d;
	nw_httpd_render_fn render;
	void *ctx;
	unsigned port;
};

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

/* Queue one reply (body handed over with MHD_RESPMEM_MUST_FREE); gz marks it Content-Encoding: gzip. */
static enum MHD_Result reply_enc(struct MHD_Connection *c, unsigned status, const char *type,
                                 char *body, size_t len, enum MHD_ResponseMemoryMode mode, int gz)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (mode == MHD_RESPMEM_MUST_FREE && status == MHD_HTTP_OK)
		MHD_add_response_header(r, "Vary", "Accept-Encoding");
	if (gz)
		MHD_add_response_header(r, "Content-Encoding", "gzip");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	return reply_enc(c, status, type, body, len, mode, 0);
}

/* The metrics text body (malloc'd, handed over), gzip-compressed when the client accepts it and zlib is there. */
static enum MHD_Result reply_metrics(struct MHD_Connection *c, char *body, size_t len)
{
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
	if (nw_gzip_accepted(ae)) {
		char err[NW_ERRLEN];
		size_t zlen;
		char *z = nw_gzip(body, len, &zlen, err, sizeof(err));
		if (z) {
			free(body);
			return reply_enc(c, MHD_HTTP_OK, NW_PROM_CONTENT_TYPE, z, zlen, MHD_RESPMEM_MUST_FREE, 1);
		}
	}
	return reply_enc(c, MHD_HTTP_OK, NW_PROM_CONTENT_TYPE, body, len, MHD_RESPMEM_MUST_FREE, 0);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **req_ctx)
{
	static const char text[] = "text/plain; charset=utf-8";
	struct nw_httpd *h = cls;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req_ctx;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char m[] = "only GET and HEAD are served here\n";
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, (char *)m, sizeof(m) - 1,
		             MHD_RESPMEM_PERSISTENT);
	}
	if (!strcmp(url, "/metrics")) {
		size_t len = 0;
		char *body = h->render(h->ctx, &len);
		if (!body) {
			static const char m[] = "rendering metrics failed; see the exporter's stderr\n";
			return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, text, (char *)m, sizeof(m) - 1,
			             MHD_RESPMEM_PERSISTENT);
		}
		return reply_metrics(c, body, len);
	}
	if (!strcmp(url, "/")) {
		static const char m[] = "ncclwatch exporter: metrics are at /metrics\n";
		return reply(c, MHD_HTTP_OK, text, (char *)m, sizeof(m) - 1, MHD_RESPMEM_PERSISTENT);
	}
	static const char m[] = "not found: metrics are at /metrics\n";
	return reply(c, MHD_HTTP_NOT_FOUND, text, (char *)m, sizeof(m) - 1, MHD_RESPMEM_PERSISTENT);
}

/*
 * How many connections to accept at once: many, so that idle or slow
 * clients cannot take every place a scrape needs, but within the open-file
 * limit (raised to its hard limit, up to what we use, when that is lower).
 */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	rlim_t want = HTTPD_MAX_CONN + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 64;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return HTTPD_MAX_CONN;
	return rl.rlim_cur > 128 ? (unsigned)(rl.rlim_cur - 64) : 64;
}

struct nw_httpd *nw_httpd_start(const char *listen, nw_httpd_render_fn render, void *ctx,
                                char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	size_t alen = 0;
	if (nw_httpd_parse_listen(listen, &ss, &alen, err, errlen) < 0 || nw_mhd_load(err, errlen) < 0)
		return NULL;
	struct nw_httpd *h = nw_calloc(1, sizeof(*h));
	h->render = render;
	h->ctx = ctx;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
	                        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	                        MHD_OPTION_CONNECTION_LIMIT, connection_limit(),
	                        MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTPD_MAX_PER_IP,
	                        MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_IDLE_S,
	                        MHD_OPTION_END);
	if (!h->d) {
		int e = errno;
		nw_seterr(err, errlen, "cannot listen on '%s': %s; pick another address or port with --listen",
		          listen, e ? strerror(e) : "libmicrohttpd refused to start");
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	return h;
}

unsigned nw_httpd_port(const struct nw_httpd *h)
{
	return h->port;
}

void nw_httpd_stop(struct nw_httpd *h)
{
	if (!h)
		return;
	if (h->d)
		MHD_stop_daemon(h->d);
	free(h);
}
