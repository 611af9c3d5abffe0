/* The log analyser's front: its state's lifetime, and feeding lines (launcher and NCCL prefixes) to the readers. */
#include "parse/ncclog.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/lineprefix.h"
#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

struct nw_log *nw_log_new(void)
{
	struct nw_log *lg = nw_calloc(1, sizeof(*lg));
	lg->files = json_array();
	lg_ht_init(&lg->host_idx, LG_MAX_HOSTS);
	lg_ht_init(&lg->proc_idx, LG_MAX_PROCS);
	lg_ht_init(&lg->comm_key, LG_MAX_COMMS);
	lg_ht_init(&lg->comm_ptr, LG_MAX_PROCS * 4);
	lg_ht_init(&lg->comm_dev, LG_MAX_PROCS * 4);
	lg_ht_init(&lg->rank_idx, LG_MAX_RANKS);
	lg_ht_init(&lg->gpu_idx, LG_MAX_RANKS);
	lg_ht_init(&lg->pair_idx, LG_MAX_PAIRS);
	lg_ht_init(&lg->group_idx, LG_MAX_GROUPS);
	lg->last_proc = UINT32_MAX;
	return lg;
}

void nw_log_free(struct nw_log *lg)
{
	if (!lg)
		return;
	json_decref(lg->files);
	free(lg->hosts);
	lg_ht_release(&lg->host_idx);
	free(lg->procs);
	lg_ht_release(&lg->proc_idx);
	free(lg->comms);
	lg_ht_release(&lg->comm_key);
	lg_ht_release(&lg->comm_ptr);
	lg_ht_release(&lg->comm_dev);
	lg_ht_release(&lg->rank_idx);
	lg_ht_release(&lg->gpu_idx);
	free(lg->rank_host);
	free(lg->rank_bus);
	free(lg->rank_flags);
	free(lg->pairs);
	lg_ht_release(&lg->pair_idx);
	free(lg->groups);
	lg_ht_release(&lg->group_idx);
	free(lg);
}

/* ---- the host and process of a line, from its prefix: UINT32_MAX when their table is full (counted in dropped) ---- */

/*
 * The host named s[0..n) (created when new with create; without, UINT32_MAX
 * when not seen). Most lines come from the host of the line before: a
 * one-entry cache answers those without hashing.
 */
static uint32_t host_get(struct nw_log *lg, const char *s, size_t n, int create)
{
	if (n >= LG_NAME)
		n = LG_NAME - 1;
	if (create && n == lg->cached_host_len && n && !memcmp(s, lg->cached_host_name, n))
		return lg->cached_host;
	int created;
	uint32_t *v = lg_ht_get(&lg->host_idx, lg_hash_str(s, n), n, create, &created);
	if (!v) {
		if (create)
			lg->dropped++;
		return UINT32_MAX;
	}
	if (created) {
		lg->hosts = lg_grow(lg->hosts, &lg->cap_hosts, lg->nhosts, sizeof(*lg->hosts));
		*v = (uint32_t)lg->nhosts++;
		copy_str(lg->hosts[*v].name, LG_NAME, s, n);
	}
	if (create) {
		memcpy(lg->cached_host_name, s, n);
		lg->cached_host_len = n;
		lg->cached_host = *v;
	}
	return *v;
}

/* The process (host, pid), created when new; cached like the host (a full table counts one drop per line, cached or not). */
static uint32_t proc_get(struct nw_log *lg, uint32_t host, int pid)
{
	if (host == lg->last_host && pid == lg->last_pid && lg->last_valid) {
		if (lg->last_proc == UINT32_MAX)
			lg->dropped++;
		return lg->last_proc;
	}
	int created;
	uint32_t *v = lg_ht_get(&lg->proc_idx, host, (uint64_t)(uint32_t)pid, 1, &created);
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_valid = 1;
	if (!v) {
		lg->dropped++;
		lg->last_proc = UINT32_MAX;
		return UINT32_MAX;
	}
	if (created) {
		lg->procs = lg_grow(lg->procs, &lg->cap_procs, lg->nprocs, sizeof(*lg->procs));
		*v = (uint32_t)lg->nprocs++;
		lg->procs[*v].host = host;
		lg->procs[*v].pid = pid;
		lg->procs[*v].cuda_driver = -1;
	}
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_proc = *v;
	return *v;
}

/* ---- feeding lines ---- */

/* Where an NCCL log line starts inside s when something was printed before it without a newline. */
static size_t glued_nccl_line(struct nw_log *lg, const char *s, size_t n)
{
	const char *p = find(s, n, " NCCL ");
	if (!p)
		return 0;
	const char *lb = NULL;
	for (const char *b = p; b > s && p - b < 160; b--)
		if (*b == '[') {
			lb = b;
			break;
		}
	if (!lb || lb - s < 5 || lb[-1] != ' ')
		return 0;
	const char *b = lb - 1;
	int colons = 0;
	while (b > s && colons < 2) {
		b--;
		if (*b == ':')
			colons++;
		else if (!is_digit(*b))
			break;
	}
	if (colons < 2 || *b != ':')
		return 0;
	const char *host_end = b, *start = b;
	while (start > s && start[-1] != ' ' && start[-1] != '\t')
		start--;
	/* host names may begin with digits that belong to what came before: prefer a known host */
	for (const char *c = start; c < host_end; c++)
		if (host_get(lg, c, (size_t)(host_end - c), 0) != UINT32_MAX) {
			start = c;
			break;
		}
	if (!nw_lp_nccl_prefix(start, (size_t)(s + n - start)))
		return 0;
	return (size_t)(start - s);
}

/*
 * The program's text of a line: launcher prefixes stripped (unless the
 * line starts with NCCL's prefix already), and an NCCL line glued after
 * other output found. Sets *n to its length and *pl to the length of
 * NCCL's prefix (0 when it is no NCCL line); NULL when nothing is left.
 */
static const char *line_text(struct nw_log *lg, char *line, size_t len, size_t *n, size_t *pl)
{
	*n = len;
	*pl = 0;
	if (!memchr(line, '\x1b', len))
		*pl = nw_lp_nccl_prefix(line, len);
	if (*pl) {
		lg->tag[0] = '\0';
		return line;
	}
	struct nw_lp lp;
	size_t off = nw_lp_strip(line, len, n, &lp);
	const char *s = line + off;
	nw_strlcpy(lg->tag, lp.tag, sizeof(lg->tag));
	if (!*n)
		return NULL;
	*pl = nw_lp_nccl_prefix(s, *n);
	if (!*pl && memchr(s, 'N', *n)) {
		size_t g = glued_nccl_line(lg, s, *n);
		if (g) {
			s += g;
			*n -= g;
			*pl = nw_lp_nccl_prefix(s, *n);
		}
	}
	return s;
}

/* A line with NCCL's prefix "host:pid:tid [dev] " (pl bytes): INFO to its readers, WARN to the error groups. */
static void nccl_line(struct nw_log *lg, const char *s, size_t n, size_t pl)
{
	lg->nccl_lines++;
	const char *c1 = memchr(s, ':', pl);
	struct lg_from from;
	from.host = host_get(lg, s, (size_t)(c1 - s), 1);
	size_t used;
	long long pid = parse_ll(c1 + 1, pl - (size_t)(c1 + 1 - s), &used);
	const char *lb = memchr(s, '[', pl);
	from.dev = (int)parse_ll(lb + 1, pl - (size_t)(lb + 1 - s), &used);
	from.proc = from.host == UINT32_MAX ? UINT32_MAX : proc_get(lg, from.host, (int)pid);
	if (lg->tag[0] && from.proc != UINT32_MAX)
		lg_tag_proc(lg, from.proc);
	const char *m = s + pl;
	size_t mn = n - pl;
	if (starts(m, mn, "NCCL INFO ")) {
		lg_info_line(lg, &from, m + 10, mn - 10);
		return;
	}
	const char *w = find(m, mn < 200 ? mn : 200, "NCCL WARN ");
	if (w) {
		if (find(m, (size_t)(w - m), "nvls.cc"))
			lg->nvls_fail_lines++; /* "transport/nvls.cc:152 NCCL WARN Cuda failure ..." */
		lg_warn_line(lg, from.host, w + 10, (size_t)(m + mn - (w + 10)));
		return;
	}
	if (find(m, mn < 200 ? mn : 200, "NCCL INFO ") || find(m, mn < 200 ? mn : 200, "NCCL TRACE ") ||
	    starts(m, mn, "NCCL "))
		return; /* TRACE lines and INFO with a file:line before the level */
	lg->unparsed++;
}

/*
 * Lines starting with NCCL's prefix go straight to their level's reader;
 * others lose their launcher prefixes first (and may turn out to hold an
 * NCCL line glued after other output).
 */
void nw_log_feed_line(struct nw_log *lg, char *line, size_t len)
{
	lg->lines++;
	lg->bytes += len + 1;
	if (len > LG_MAX_LINE) {
		lg->long_lines++;
		len = LG_MAX_LINE;
	}
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	size_t n, pl;
	const char *s = line_text(lg, line, len, &n, &pl);
	if (!s) {
		lg->blank_lines++;
		return;
	}
	if (pl) {
		nccl_line(lg, s, n, pl);
		return;
	}
	if (find(s, n, "NCCL INFO") || find(s, n, "NCCL WARN")) {
		lg->unparsed++;
		return;
	}
	lg_other_line(lg, s, n);
}

void nw_log_feed_buf(struct nw_log *lg, const char *buf, size_t len)
{
	char *line = nw_malloc(LG_MAX_LINE + 1);
	size_t off = 0;
	while (off < len) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
		size_t take = n > LG_MAX_LINE ? LG_MAX_LINE + 1 : n;
		memcpy(line, buf + off, take);
		nw_log_feed_line(lg, line, take);
		if (n > take)
			lg->bytes += n - take;
		off += n + (nl ? 1 : 0);
	}
	free(line);
}

int nw_log_feed_file(struct nw_log *lg, FILE *f, const char *name, char *err, size_t errlen)
{
	enum { BLOCK = 1 << 20 };
	char *buf = nw_malloc(BLOCK + LG_MAX_LINE + 2);
	size_t have = 0;
	int skipping = 0; /* inside the tail of an over-long line */
	int rc = 0;
	json_array_append_new(lg->files, json_string(name));
	for (;;) {
		size_t got = fread(buf + have, 1, BLOCK + LG_MAX_LINE + 1 - have, f);
		if (got == 0) {
			if (ferror(f))
				rc = nw_seterr(err, errlen, "cannot read '%s': %s", name, strerror(errno));
			break;
		}
		size_t end = have + got, start = 0;
		for (;;) {
			char *nl = memchr(buf + start, '\n', end - start);
			if (!nl)
				break;
			size_t n = (size_t)(nl - (buf + start));
			if (skipping) {
				lg->bytes += n + 1;
				skipping = 0;
			} else {
				nw_log_feed_line(lg, buf + start, n);
			}
			start += n + 1;
		}
		have = end - start;
		if (have > LG_MAX_LINE) {
			/* a line longer than the cap: read its start, skip the rest */
			if (!skipping)
				nw_log_feed_line(lg, buf + start, have);
			else
				lg->bytes += have;
			skipping = 1;
			have = 0;
		} else {
			memmove(buf, buf + start, have);
		}
	}
	if (have && !skipping && rc == 0)
		nw_log_feed_line(lg, buf, have);
	free(buf);
	return rc;
}
