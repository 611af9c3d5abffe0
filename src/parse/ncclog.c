/* SPDX-License-Identifier: Apache-2.0 */
/* The log analyser's front: its state's lifetime, and feeding lines (launcher and NCCL prefixes) to the readers. */
#include "parse/ncclog.h"

#include <errno.h>
#include <limits.h>
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
	lg_ht_init(&lg->conn_host, LG_MAX_RANKS);
	lg_ht_init(&lg->gpu_idx, LG_MAX_RANKS);
	lg_ht_init(&lg->pair_idx, LG_MAX_PAIRS);
	lg_ht_init(&lg->group_idx, LG_MAX_GROUPS);
	lg_ht_init(&lg->pend_idx, LG_MAX_PENDING);
	lg->last_proc = UINT32_MAX;
	lg->ib_status = -1;
	lg->hostless_nics = -1;
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
	lg_ht_release(&lg->conn_host);
	lg_ht_release(&lg->gpu_idx);
	free(lg->rank_host);
	free(lg->rank_bus);
	free(lg->rank_flags);
	free(lg->pairs);
	lg_ht_release(&lg->pair_idx);
	free(lg->groups);
	lg_ht_release(&lg->group_idx);
	lg_ht_release(&lg->pend_idx);
	free(lg->pend);
	lg_nw_release(lg);
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
		lg->hosts[*v].ofi_nics = -1;
	}
	if (create) {
		memcpy(lg->cached_host_name, s, n);
		lg->cached_host_len = n;
		lg->cached_host = *v;
	}
	return *v;
}

void lg_host_add(struct nw_log *lg, const char *s, size_t n)
{
	host_get(lg, s, n, 1);
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
static const char *line_text(struct nw_log *lg, char *line, size_t len, int may_esc, size_t *n, size_t *pl)
{
	*n = len;
	*pl = 0;
	if (!may_esc || !memchr(line, '\x1b', len))
		*pl = nw_lp_nccl_prefix(line, len);
	if (*pl) {
		lg->tag[0] = '\0';
		return line;
	}
	struct nw_lp lp;
	size_t off = nw_lp_strip(line, len, n, &lp);
	const char *s = line + off;
	nw_strlcpy(lg->tag, lp.tag, sizeof(lg->tag));
	if (lp.repeated) {
		lg->ray_dedup_lines++;
		lg->ray_folded_lines += (uint64_t)lp.repeated;
	}
	if (lp.host[0]) {
		/* a crash report's "[host:pid]": that process ran there, even if it printed no NCCL line */
		uint32_t h = host_get(lg, lp.host, strlen(lp.host), 1);
		if (h != UINT32_MAX && lp.pid > 0 && lp.pid <= INT_MAX)
			proc_get(lg, h, (int)lp.pid);
	}
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

static void level_line(struct nw_log *lg, const struct lg_from *from, const char *m, size_t mn);

/* Whether m[0..n) holds "] NCCL ": the end of another NCCL prefix glued into this line (memchr is faster than memmem here). */
static int glued_mark(const char *m, size_t n)
{
	const char *p = m, *e = m + n;
	while ((p = memchr(p, ']', (size_t)(e - p))) && e - p >= 7) {
		if (!memcmp(p, "] NCCL ", 7))
			return 1;
		p++;
	}
	return 0;
}

/* A line with NCCL's prefix "host:pid:tid [dev] " (pl bytes): where it came from, then its level. */
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
	if (from.proc != UINT32_MAX && from.dev >= 0 && from.dev < 64)
		lg->procs[from.proc].devs |= 1ull << from.dev;
	if (lg->tag[0] && from.proc != UINT32_MAX)
		lg_tag_proc(lg, from.proc);
	if (lg->npending_banners && from.proc != UINT32_MAX)
		lg_take_banner(lg, from.proc);
	level_line(lg, &from, s + pl, n - pl);
}

/*
 * NCCL lines glued into one when pasted ("...<0>h100-node:1747:1747 [1]
 * NCCL INFO ..."): each read alone. Returns 1 when s held more than one.
 */
static int nccl_glued(struct nw_log *lg, const char *s, size_t n, size_t pl)
{
	int split = 0;
	/* connection lines, most of a log, are not looked into: a paste that glues lines glues others too */
	if (n >= pl + 18 && !memcmp(s + pl, "NCCL INFO Channel ", 18))
		return 0;
	while (n > pl + 20 && glued_mark(s + pl, n - pl)) {
		host_get(lg, s, (size_t)((const char *)memchr(s, ':', pl) - s), 1); /* known, so the glued one's host is told apart */
		size_t g = glued_nccl_line(lg, s + pl, n - pl);
		if (!g)
			break;
		nccl_line(lg, s, pl + g, pl);
		s += pl + g;
		n -= pl + g;
		pl = nw_lp_nccl_prefix(s, n);
		split = 1;
	}
	if (split)
		nccl_line(lg, s, n, pl);
	return split;
}

/* Length of a "file.cc:123 " source place before a level word (0 when s has none). */
static size_t src_place(const char *s, size_t n)
{
	size_t fl = lg_file_line(s, n);
	return fl && fl < n && s[fl] == ' ' ? fl + 1 : 0;
}

/*
 * NCCL lines whose "host:pid:tid" was cut when pasted: "NCCL INFO ..." or
 * "[3] NCCL INFO ...". Returns 1 when s was one (read without a process).
 */
static int hostless_line(struct nw_log *lg, const char *s, size_t n)
{
	struct lg_from from = { UINT32_MAX, UINT32_MAX, 0 };
	size_t i = 0, used = 0;
	/* a prefix masked by the poster, "[Node-A]:[PID]:[Thread] [0] NCCL WARN ...": read from its "[0]" on */
	const char *sp = memchr(s, ' ', n < 128 ? n : 128);
	if (sp && sp + 2 < s + n && sp[1] == '[' && memchr(s, ':', (size_t)(sp - s)) && !starts(s, n, "NCCL "))
		i = (size_t)(sp + 1 - s);
	if (n > i + 3 && s[i] == '[') {
		from.dev = (int)parse_ll(s + i + 1, n - i - 1, &used);
		i += 1 + used;
		if (!used || i + 2 > n || s[i] != ']' || s[i + 1] != ' ')
			return 0;
		i += 2;
	}
	i += src_place(s + i, n - i);
	if (!starts(s + i, n - i, "NCCL INFO ") && !starts(s + i, n - i, "NCCL WARN "))
		return 0;
	lg->nccl_lines++;
	level_line(lg, &from, s + i, n - i);
	return 1;
}

/* The rest of an NCCL line after its prefix: INFO to its readers, WARN to the error groups. */
static void level_line(struct nw_log *lg, const struct lg_from *from, const char *m, size_t mn)
{
	if (starts(m, mn, "NCCL INFO ")) {
		lg_info_line(lg, from, m + 10, mn - 10);
		return;
	}
	/* NCCL 2.3 and older: "INFO text" and "file.cu:118 WARN text", without "NCCL " */
	if (starts(m, mn, "INFO ")) {
		lg_info_line(lg, from, m + 5, mn - 5);
		return;
	}
	size_t sp = src_place(m, mn);
	if (sp && starts(m + sp, mn - sp, "WARN ")) {
		lg_warn_line(lg, from->host, m + sp + 5, mn - sp - 5);
		return;
	}
	const char *w = find(m, mn < 200 ? mn : 200, "NCCL WARN ");
	if (w) {
		if (find(m, (size_t)(w - m), "nvls.cc"))
			lg_fact(lg, F_NVLS_FAIL, from->host, m, mn); /* "transport/nvls.cc:152 NCCL WARN Cuda failure ..." */
		lg_warn_line(lg, from->host, w + 10, (size_t)(m + mn - (w + 10)));
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
 * NCCL line glued after other output). may_esc 0: the caller knows the
 * line holds no ESC (no colour code to strip).
 */
static void feed_line(struct nw_log *lg, char *line, size_t len, int may_esc)
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
	const char *s = line_text(lg, line, len, may_esc, &n, &pl);
	if (!s) {
		lg->blank_lines++;
		return;
	}
	if (pl) {
		if (!nccl_glued(lg, s, n, pl))
			nccl_line(lg, s, n, pl);
		return;
	}
	if (find(s, n, "NCCL INFO") || find(s, n, "NCCL WARN")) {
		if (hostless_line(lg, s, n))
			return;
		lg->unparsed++;
		return;
	}
	lg_other_line(lg, s, n);
}

void nw_log_feed_line(struct nw_log *lg, char *line, size_t len)
{
	feed_line(lg, line, len, 1);
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

/* How the bytes of a file are turned into lines of text. */
enum { DEC_UNKNOWN, DEC_PLAIN, DEC_UTF16LE, DEC_UTF16BE };

struct decoder {
	int mode;
	int cr;               /* CR-only line ends (decided on the first block's text, after UTF-16 decoding) */
	int has_odd;          /* UTF-16: a byte of a code unit left from the last block */
	unsigned char odd;
};

/* Whether 256 bytes at s look like UTF-16 without a BOM: NULs in every other byte (hi: at odd offsets for LE). */
static int utf16_guess(const unsigned char *s, size_t n, int hi)
{
	size_t nul = 0, pairs = 0;
	for (size_t i = 0; i + 1 < n && i < 256; i += 2, pairs++)
		nul += s[i + (size_t)hi] == 0 && s[i + 1 - (size_t)hi] != 0;
	return pairs >= 4 && nul * 10 >= pairs * 9;
}

/* Choose the decoding from the first block of a file (a BOM, NUL patterns); returns bytes to skip. */
static size_t decoder_pick(struct nw_log *lg, struct decoder *d, const unsigned char *s, size_t n)
{
	d->mode = DEC_PLAIN;
	if (n >= 2 && s[0] == 0xff && s[1] == 0xfe)
		return d->mode = DEC_UTF16LE, 2;
	if (n >= 2 && s[0] == 0xfe && s[1] == 0xff)
		return d->mode = DEC_UTF16BE, 2;
	if (utf16_guess(s, n, 1))
		return d->mode = DEC_UTF16LE, 0;
	if (utf16_guess(s, n, 0))
		return d->mode = DEC_UTF16BE, 0;
	if (n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		return 3;
	(void)lg;
	return 0;
}

/* UTF-16 to text in place: ASCII stays, anything else becomes '?'. Returns the new length. */
static size_t utf16_decode(struct decoder *d, unsigned char *s, size_t n)
{
	size_t w = 0, i = 0;
	int hi = d->mode == DEC_UTF16BE ? 0 : 1;
	unsigned char u[2];
	if (d->has_odd && n) {
		u[0] = d->odd, u[1] = s[0];
		s[w++] = u[hi] == 0 && u[1 - hi] < 0x80 ? u[1 - hi] : '?';
		i = 1;
		d->has_odd = 0;
	}
	for (; i + 1 < n; i += 2)
		s[w++] = s[i + (size_t)hi] == 0 && s[i + 1 - (size_t)hi] < 0x80 ? s[i + 1 - (size_t)hi] : '?';
	if (i < n)
		d->odd = s[i], d->has_odd = 1;
	return w;
}

/* Length of the valid UTF-8 sequence of a non-ASCII byte at s (0 when it is none). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!len || len > n || s[0] == 0xc0 || s[0] == 0xc1)
		return 0;
	for (size_t k = 1; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

/*
 * Whether the first bytes of a file are not text: more than one in ten a
 * control byte other than white space or a byte of no valid UTF-8
 * sequence (random data has about six in ten; control bytes alone, about
 * one in nine, were too close to the bound to tell).
 */
static int looks_binary(const unsigned char *s, size_t n)
{
	size_t bad = 0, m = n < 4096 ? n : 4096;
	for (size_t i = 0; i < m; i++) {
		if (s[i] >= 0x80) {
			size_t k = utf8_seq(s + i, m - i);
			if (k) {
				i += k - 1;
				continue;
			}
			bad += i + 4 < m; /* a sequence cut by the sample's end is not held against it */
			continue;
		}
		bad += (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' && s[i] != '\f' && s[i] != 0x1b) || s[i] == 0x7f;
	}
	return m && bad * 10 > m;
}

/*
 * Read up to cap bytes of f into dst as text (decoded from UTF-16, CR line
 * ends turned into LF); the first block also decides the decoding and
 * whether the input is binary. Returns the bytes stored; 0 at the end.
 */
static size_t read_text(struct nw_log *lg, struct decoder *d, FILE *f, char *dst, size_t cap)
{
	for (;;) {
		size_t got = fread(dst, 1, cap, f);
		if (!got)
			return 0;
		unsigned char *u = (unsigned char *)dst;
		int first = d->mode == DEC_UNKNOWN;
		if (first) {
			size_t skip = decoder_pick(lg, d, u, got);
			memmove(dst, dst + skip, got - skip);
			got -= skip;
			if (d->mode == DEC_UTF16LE || d->mode == DEC_UTF16BE)
				lg->utf16 = 1;
		}
		if (d->mode == DEC_UTF16LE || d->mode == DEC_UTF16BE)
			got = utf16_decode(d, u, got);
		/* old Mac line ends, in either encoding: judged on the decoded text */
		if (first && !memchr(dst, '\n', got) && memchr(dst, '\r', got))
			d->cr = 1;
		if (d->cr)
			for (char *p = memchr(dst, '\r', got); p; p = memchr(p, '\r', got - (size_t)(p - dst)))
				*p = '\n';
		if (lg->bytes == 0 && lg->lines == 0 && looks_binary(u, got))
			lg->binary = 1;
		if (got)
			return got;
	}
}

int nw_log_feed_file(struct nw_log *lg, FILE *f, const char *name, char *err, size_t errlen)
{
	struct decoder dec = { DEC_UNKNOWN, 0, 0, 0 };
	enum { BLOCK = 1 << 20 };
	char *buf = nw_malloc(BLOCK + LG_MAX_LINE + 2);
	size_t have = 0;
	int skipping = 0; /* inside the tail of an over-long line */
	int rc = 0;
	json_array_append_new(lg->files, json_string(name));
	for (;;) {
		size_t got = read_text(lg, &dec, f, buf + have, BLOCK + LG_MAX_LINE + 1 - have);
		if (got == 0) {
			if (ferror(f))
				rc = nw_seterr(err, errlen, "cannot read '%s': %s", name, strerror(errno));
			break;
		}
		size_t end = have + got, start = 0;
		/* the block's next ESC, looked for once: lines before it need no colour-code search of their own */
		const char *esc = memchr(buf, '\x1b', end);
		for (;;) {
			char *nl = memchr(buf + start, '\n', end - start);
			if (!nl)
				break;
			size_t n = (size_t)(nl - (buf + start));
			if (esc && esc < buf + start)
				esc = memchr(buf + start, '\x1b', end - start);
			if (skipping) {
				lg->bytes += n + 1;
				skipping = 0;
			} else {
				feed_line(lg, buf + start, n, esc && esc < nl);
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
