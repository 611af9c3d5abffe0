/*
 * httpd: the exporter's HTTP endpoint (libmicrohttpd, one internal thread).
 * GET /metrics answers with the text a caller-supplied function renders
 * at each request; GET / answers a short page pointing at /metrics;
 * anything else is 404 (unknown path) or 405 (not GET/HEAD).
 */
#ifndef NW_HTTPD_H
#define NW_HTTPD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Render the /metrics body: return a malloc'd NUL-terminated buffer (the
 * server frees it) and its length in *len, or NULL for a 500 answer.
 * Called from the server's thread, one request at a time.
 */
typedef char *(*nw_httpd_render_fn)(void *ctx, size_t *len);

struct nw_httpd;

/*
 * Parse "ADDR:PORT" ("127.0.0.1:9850", "[::1]:9850", "0.0.0.0:9850",
 * ":9850" meaning all IPv4 addresses) into a socket address. Port 0 asks
 * the kernel for a free port (see nw_httpd_port).
 */
int nw_httpd_parse_listen(const char *s, void *sockaddr_storage, size_t *addrlen,
                          char *err, size_t errlen);

/* Start serving on listen ("ADDR:PORT"); NULL with err filled on failure. */
struct nw_httpd *nw_httpd_start(const char *listen, nw_httpd_render_fn render, void *ctx,
                                char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
unsigned nw_httpd_port(const struct nw_httpd *h);
/* Stop serving and free everything. NULL is ignored. */
void nw_httpd_stop(struct nw_httpd *h);

#endif
