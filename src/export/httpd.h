/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpd: the exporter's HTTP endpoint (libmicrohttpd driven from our own
 * epoll loop, one thread, plus one thread that renders).
 *
 * GET /metrics answers with the text a caller-supplied function renders;
 * one rendering (and its gzip) is served to every scrape within cache_s
 * seconds, and scrapes that arrive while it renders wait for it and share
 * it, so a crowd of scrapers costs one rendering per interval. Under
 * steady scraping the next rendering starts once the cache is three
 * quarters that old, while scrapes are still served from it. GET / answers
 * a short page pointing at /metrics; anything else is 404 (unknown path)
 * or 405 (not GET/HEAD).
 *
 * Connections (docs/metrics.md, "Connections"): the loop accepts them
 * itself and hands them to libmicrohttpd. A connection has
 * NW_HTTPD_HEADER_S seconds from its opening (or from the end of its
 * previous reply) to send a request's headers, and NW_HTTPD_REPLY_S to take
 * a reply; at most NW_HTTPD_MAX_PER_ADDR come from one address and
 * NW_HTTPD_MAX_CONN in all (fewer when the open-file limit is lower). When
 * either cap is reached, the oldest connection still waiting to send its
 * headers (of that address, or of all) is closed to make room: a client
 * that completes its headers at once, as every scraper does, always gets
 * in.
 */
#ifndef NW_HTTPD_H
#define NW_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#define NW_HTTPD_HEADER_S 5.0
#define NW_HTTPD_REPLY_S 30.0
#define NW_HTTPD_MAX_CONN 4096u
#define NW_HTTPD_MAX_PER_ADDR 512u

/*
 * Render the /metrics body: return a malloc'd NUL-terminated buffer (the
 * server frees it) and its length in *len, or NULL for a 500 answer.
 * served is how many /metrics replies were queued before this rendering
 * plus the scrapes waiting for it. Called from the rendering thread, one
 * call at a time.
 */
typedef char *(*nw_httpd_render_fn)(void *ctx, uint64_t served, size_t *len);

struct nw_httpd;

/*
 * Parse "ADDR:PORT" ("127.0.0.1:9850", "[::1]:9850", "0.0.0.0:9850",
 * ":9850" meaning all IPv4 addresses) into a socket address. Port 0 asks
 * the kernel for a free port (see nw_httpd_port).
 */
int nw_httpd_parse_listen(const char *s, void *sockaddr_storage, size_t *addrlen,
                          char *err, size_t errlen);

struct nw_httpd_opts {
	const char *listen;         /* "ADDR:PORT" */
	double cache_s;             /* serve one rendering for this long (0: each scrape not sharing one renders) */
	nw_httpd_render_fn render;
	void *ctx;
};

/* Start serving; NULL with err filled on failure (nothing left running). */
struct nw_httpd *nw_httpd_start(const struct nw_httpd_opts *o, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
unsigned nw_httpd_port(const struct nw_httpd *h);

/* What the server has done so far (read from any thread). */
struct nw_httpd_stats {
	uint64_t accepted;          /* connections accepted */
	uint64_t evicted;           /* closed to make room for a new one (a cap reached) */
	uint64_t expired;           /* closed for missing their header or reply deadline */
	uint64_t renders;           /* renderings done */
	uint64_t served;            /* /metrics replies queued */
};
void nw_httpd_get_stats(const struct nw_httpd *h, struct nw_httpd_stats *st);

/* Stop serving and free everything. NULL is ignored. */
void nw_httpd_stop(struct nw_httpd *h);

#endif
