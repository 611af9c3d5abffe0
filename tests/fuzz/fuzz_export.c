/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the exporter's outside text. The input is split at the
 * first NUL: before it, a --listen address (parsed, never bound); after it,
 * a label value and HELP text written through the Prometheus text writer,
 * whose output must keep every sample on one line. The whole input is also
 * read as a process's /proc/PID/cgroup and as a container log name (the
 * process scan, exporter --procs).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "export/httpd.h"
#include "export/procscan.h"
#include "export/promtext.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	const char *rest = memchr(s, '\0', size) && strlen(s) < size ? s + strlen(s) + 1 : "";

	struct sockaddr_storage ss;
	size_t alen = 0;
	char err[NW_ERRLEN];
	if (nw_httpd_parse_listen(s, &ss, &alen, err, sizeof(err)) == 0 &&
	    alen > sizeof(ss))
		abort();

	struct nw_prom p;
	nw_prom_init(&p);
	nw_prom_family(&p, "ncclwatch_fuzz", "gauge", rest);
	struct nw_label l[2] = { { "comm", rest }, { "rank", s } };
	nw_prom_sample(&p, "ncclwatch_fuzz", l, 2, (double)size);
	/* two lines of family header and one sample line, whatever the text */
	size_t lines = 0;
	for (size_t i = 0; i < p.len; i++)
		lines += p.buf[i] == '\n';
	if (lines != 3)
		abort();
	nw_prom_release(&p);

	char uid[40], cid[96], pod[128], ns[64], ctr[64], lcid[80];
	if (nw_ps_parse_cgroup(s, uid, sizeof(uid), cid, sizeof(cid)) && strlen(uid) != 36)
		abort();
	if (nw_ps_parse_logname(s, pod, sizeof(pod), ns, sizeof(ns), ctr, sizeof(ctr), lcid, sizeof(lcid)) &&
	    (!*pod || !*ns || !*ctr || strlen(lcid) != 64))
		abort();
	free(s);
	return 0;
}
