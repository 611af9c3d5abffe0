/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot: env rendezvous and a small TCP bootstrap (see boot.h, docs/launch.md).
 *
 * Topology: a star through rank 0. Rank 0 listens on the bootstrap port
 * during nw_boot_init only; every other rank keeps one connection to it.
 * A collective is: rank 0 tells the others it has entered it (ENTER), the
 * ranks that contribute send their part, rank 0 answers with RESULT. Every
 * socket is non-blocking and every wait is a poll() bounded by the time
 * left of the timeout; no threads. Messages are a 16-byte header (magic,
 * protocol, type, arg, sequence number, length) and a payload whose length
 * is checked against the limit of its type before anything is allocated.
 *
 * This file owns the handle: joining (nw_boot_init), failure, abort, close.
 * The other parts are listed in boot_int.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/boot_int.h"

/*
 * Record a failure. Rank 0 tells every connected rank but 'except' (with
 * the same text); another rank tells rank 0 unless the news came from it.
 * Then every connection is closed and every later call fails with 'why'.
 */
int boot_fail(struct nw_boot *b, int notify, int except, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->why, sizeof(b->why), fmt, ap);
	va_end(ap);
	b->failed = 1;
	double deadline = nw_now() + (b->timeout < 2 ? b->timeout : 2);
	size_t wl = strnlen(b->why, NW_BOOT_MAX_WHY - 1);
	for (int i = 0; i < b->nconns; i++) {
		if (b->conns[i].fd < 0)
			continue;
		if (notify && i != except)
			boot_send_msg(b->conns[i].fd, NW_BOOT_ABORT, 0, b->seq, b->why, wl, deadline, NULL, 0);
		boot_conn_close(&b->conns[i]);
	}
	return nw_seterr(err, errlen, "%s", b->why);
}

int nw_boot_rank(const struct nw_boot *b) { return b->rank; }
int nw_boot_size(const struct nw_boot *b) { return b->size; }
int nw_boot_local_rank(const struct nw_boot *b) { return b->local_rank; }
int nw_boot_local_size(const struct nw_boot *b) { return b->local_size; }

const char *nw_boot_host(const struct nw_boot *b, int rank)
{
	if (!b || rank < 0 || rank >= b->size || !b->hosts[rank])
		return "?";
	return b->hosts[rank];
}

/* nw_boot_env_parse's view of the real environment. */
static const char *env_get(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

int nw_boot_init(struct nw_boot **out, const char *fingerprint, double timeout_s, char *err,
                 size_t errlen)
{
	struct nw_boot_env e;
	*out = NULL;
	int r = nw_boot_env_parse(env_get, NULL, &e, err, errlen);
	if (r <= 0)
		return r < 0 ? -2 : 0; /* bad variables are the user's to fix: a usage error */
	if (!(timeout_s > 0) || timeout_s > 1e6)
		return nw_seterr(err, errlen, "bootstrap timeout %g s is out of range: give a positive number of seconds",
		                 timeout_s);
	if (!fingerprint)
		fingerprint = "";
	if (strlen(fingerprint) > NW_BOOT_MAX_FP)
		return nw_seterr(err, errlen, "the argument fingerprint is longer than %d bytes", NW_BOOT_MAX_FP);
	struct nw_boot *b = nw_calloc(1, sizeof(*b));
	b->rank = e.rank;
	b->size = e.size;
	b->local_rank = e.local_rank;
	b->local_size = e.local_size;
	b->timeout = timeout_s;
	b->hosts = nw_calloc((size_t)e.size, sizeof(char *));
	char host[NW_BOOT_MAX_HOST + 1];
	nw_hostname(host, sizeof(host));
	for (char *p = host; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
	b->hosts[e.rank] = nw_strdup(host);
	boot_app(b->where, sizeof(b->where), "%s%s%s:%d (%s, %s)", strchr(e.addr, ':') ? "[" : "", e.addr,
	         strchr(e.addr, ':') ? "]" : "", e.port, e.addr_from, e.port_from);
	if (e.size == 1) {
		if (!b->local_size)
			b->local_size = 1;
		*out = b;
		return 1;
	}
	b->nconns = e.rank == 0 ? e.size : 1;
	b->conns = nw_calloc((size_t)b->nconns, sizeof(struct conn));
	for (int i = 0; i < b->nconns; i++)
		b->conns[i].fd = -1;
	int rc = e.rank == 0 ? boot_root_start(b, &e, fingerprint, err, errlen)
	                     : boot_peer_start(b, &e, fingerprint, err, errlen);
	if (rc) {
		nw_boot_close(b);
		return -1;
	}
	for (int i = 0; i < e.size; i++)
		if (!b->hosts[i])
			b->hosts[i] = nw_strdup("?");
	*out = b;
	return 1;
}

void nw_boot_abort(struct nw_boot *b, const char *why)
{
	if (!b || b->failed)
		return;
	char w[320];
	if (b->rank == 0)
		boot_fail(b, 1, -1, NULL, 0, "%s stopped: %s", boot_who(b, 0, w, sizeof(w)),
		          why ? why : "no reason given");
	else
		boot_fail(b, 1, -1, NULL, 0, "%s", why ? why : "no reason given");
}

void nw_boot_close(struct nw_boot *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nconns; i++)
		boot_conn_close(&b->conns[i]);
	for (int r = 0; r < b->size; r++)
		free(b->hosts[r]);
	free(b->hosts);
	free(b->conns);
	free(b);
}
