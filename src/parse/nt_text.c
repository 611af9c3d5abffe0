/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_text: nccl-tests' text output, line by line. Launcher prefixes are
 * taken off, NCCL log lines (whole, or cutting a row in two) are skipped,
 * '#' lines go to the header readers (nt_header.c), and result rows are
 * split into words and read into the stream's tables.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "parse/lineprefix.h"
#include "parse/nt_int.h"
#include "util/util.h"

/* Split s[0..n) at blanks into at most max tokens (with their columns); -1 when there are more. */
int nt_tokenize(const char *s, size_t n, struct nt_tok *t, int max)
{
	int k = 0;
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i >= n)
			break;
		size_t st = i;
		while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			i++;
		if (k == max)
			return -1;
		t[k].s = s + st;
		t[k].n = i - st;
		t[k].col = st;
		k++;
	}
	return k;
}

int nt_tok_is(const struct nt_tok *t, const char *w)
{
	size_t n = strlen(w);
	return t->n == n && !memcmp(t->s, w, n);
}

/* A token as a finite or infinite double (whole token must be consumed). */
int nt_tok_double(const struct nt_tok *t, double *v)
{
	char buf[64];
	if (!t->n || t->n >= sizeof(buf))
		return -1;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	char *end;
	errno = 0;
	*v = strtod(buf, &end);
	if (end == buf || *end)
		return -1;
	return 0;
}

/* A token of decimal digits (optionally signed) as a long long. */
int nt_tok_ll(const struct nt_tok *t, long long *v, int allow_sign)
{
	char buf[32];
	if (!t->n || t->n >= sizeof(buf))
		return -1;
	memcpy(buf, t->s, t->n);
	buf[t->n] = '\0';
	const char *p = buf;
	if (allow_sign && *p == '-')
		p++;
	if (!*p)
		return -1;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	char *end;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	return errno ? -1 : 0;
}

void nt_tok_copy(const struct nt_tok *t, char *dst, size_t len)
{
	size_t n = t->n < len - 1 ? t->n : len - 1;
	memcpy(dst, t->s, n);
	dst[n] = '\0';
}

/* One placement's four columns: time, algbw, busbw, #wrong (or old "error", kept raw in raw). */
static int parse_body(struct nt_stream *st, const struct nt_tok *t, struct nw_row *r, char raw[24])
{
	double v;
	nt_tok_copy(&t[3], raw, 24);
	if (nt_tok_double(&t[0], &r->time_us) || nt_tok_double(&t[1], &r->algbw_gbs) ||
	    nt_tok_double(&t[2], &r->busbw_gbs))
		return -1;
	if (nt_tok_is(&t[3], "N/A")) {
		r->wrong = -1;
		return 0;
	}
	if (nt_tok_double(&t[3], &v) || !(v >= 0) || v > 9.2e18)
		return -1;
	r->wrong = st->error_column ? -1 : (int64_t)v;
	return 0;
}

/* Whether a token is part of a trailing timestamp ("2026-11-30", "11:39:33"). */
static int is_stamp(const struct nt_tok *t)
{
	if (t->n >= 10 && t->s[4] == '-' && t->s[7] == '-')
		return 1;
	return t->n >= 8 && t->s[2] == ':' && t->s[5] == ':';
}

/*
 * A result row: size count type [redop] [root] then one or two placements
 * of four columns (with -R/per-iteration tables, eight each), maybe a
 * timestamp. Returns 0 when it was a row, -1 when not.
 */
int nt_parse_row(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s, n, t, NT_MAX_TOKENS);
	long long size, count, root = -1;
	double dummy;
	if (k < 7 || nt_tok_ll(&t[0], &size, 0) || nt_tok_ll(&t[1], &count, 0))
		return -1;
	if (!nt_tok_double(&t[2], &dummy))
		return -1;
	struct nw_row base;
	memset(&base, 0, sizeof(base));
	base.size_bytes = (uint64_t)size;
	base.count = (uint64_t)count;
	nt_tok_copy(&t[2], base.dtype, sizeof(base.dtype));
	int i = 3;
	if (nt_tok_double(&t[i], &dummy) && !nt_tok_is(&t[i], "N/A")) {
		nt_tok_copy(&t[i], base.redop, sizeof(base.redop));
		i++;
	} else {
		nw_strlcpy(base.redop, "none", sizeof(base.redop));
	}
	while (k > i && is_stamp(&t[k - 1]))
		k--;
	int rest = k - i;
	if (st->root_column && rest % 4 != 1 && rest > 0) {
		st->short_rows++; /* a row cut before its last columns: left out, never shifted */
		return 0;
	}
	if (rest % 4 == 1) {
		if (nt_tok_ll(&t[i], &root, 1) || root < -1 || root > 1000000)
			return -1;
		i++;
		rest--;
	}
	base.root = (int)root;
	struct nw_row oop = base, ip = base;
	ip.inplace = 1;
	int have_oop = 0, have_ip = 0;
	char raw[2][24] = { "", "" };
	if (rest == 8 || rest == 16) {
		if (parse_body(st, &t[i], &oop, raw[0]) || parse_body(st, &t[i + rest / 2], &ip, raw[1]))
			return -1;
		have_oop = have_ip = 1;
		st->whole_rows++;
	} else if (rest == 4) {
		/* one placement: in-place only when it sits in the in-place columns */
		if (t[i].col >= 80) {
			if (parse_body(st, &t[i], &ip, raw[1]))
				return -1;
			have_ip = 1;
		} else {
			if (parse_body(st, &t[i], &oop, raw[0]))
				return -1;
			have_oop = 1;
			st->half_rows++;
		}
	} else {
		return -1;
	}
	return nt_add_rows(st, have_oop ? &oop : NULL, have_ip ? &ip : NULL, raw);
}

/*
 * Where an NCCL log line starts inside s (it may follow the first half of a
 * table row printed without a newline); -1 when there is none. Host names
 * may begin with digits, so a host seen at the start of other NCCL lines is
 * preferred when the row's digits run into it ("-1vm:803:803 [0] NCCL").
 */
static long find_nccl_line(struct nt_ctx *c, const char *s, size_t n)
{
	const char *p = s;
	while ((p = memmem(p, n - (size_t)(p - s), " NCCL ", 6))) {
		/* back from " NCCL" to "[dev]" (WARN lines have "file.cc:123" between) */
		const char *q = p;
		const char *lb = NULL;
		for (const char *b = q; b > s && q - b < 160; b--)
			if (*b == '[') {
				lb = b;
				break;
			}
		p += 6;
		if (!lb || lb - s < 5 || lb[-1] != ' ')
			continue;
		const char *e = lb - 1; /* the space before '[' */
		const char *b = e;
		int colons = 0;
		while (b > s && colons < 2) {
			b--;
			if (*b == ':')
				colons++;
			else if (*b < '0' || *b > '9')
				break;
		}
		if (colons < 2 || *b != ':')
			continue;
		const char *host_end = b;
		while (b > s && (b[-1] != ' ' && b[-1] != '\t' && b[-1] != '#'))
			b--;
		size_t hn = (size_t)(host_end - b);
		for (int i = 0; i < c->nknown; i++) {
			size_t kn = strlen(c->known_hosts[i]);
			if (kn < hn && !memcmp(host_end - kn, c->known_hosts[i], kn)) {
				b = host_end - kn;
				break;
			}
		}
		if (nw_lp_nccl_prefix(b, n - (size_t)(b - s)))
			return b - s;
	}
	return -1;
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

static void pending_add(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n)
{
	if (st->plen + n >= sizeof(st->pending)) {
		c->unparsed++;
		st->plen = 0;
		return;
	}
	memcpy(st->pending + st->plen, s, n);
	st->plen += n;
}

/*
 * The collective of a word that looks like nccl-tests' program
 * ("./build/all_gather_perf", "alltoall_perf_mpi") into op; 0 when it is
 * not one (another word, or a program of no collective we know).
 */
static int program_op(const char *w, size_t n, char *op, size_t len)
{
	if (!(n > 5 && !memcmp(w + n - 5, "_perf", 5)) && !(n > 9 && !memcmp(w + n - 9, "_perf_mpi", 9)))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)w[i]) && !strchr("_./~-", w[i]))
			return 0;
	char name[32];
	nt_op_from_program(w, n, name, sizeof(name));
	const struct nw_coll *coll = nw_coll_find(name);
	if (!coll)
		return 0;
	nw_strlcpy(op, coll->name, len);
	return 1;
}

/*
 * A command line pasted above a table ("$ mpirun -np 16 ./build/all_gather_perf
 * -b 8 -e 1G", "srun ... alltoall_perf ..."): its program's collective
 * becomes the op of the tables that start after it, unless their header
 * or footer names one (streams without rows yet take it now).
 */
static void command_line(struct nt_ctx *c, const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		size_t b = i;
		while (i < n && s[i] != ' ' && s[i] != '\t')
			i++;
		if (i > b && program_op(s + b, i - b, c->cmd_op, sizeof(c->cmd_op))) {
			for (int k = 0; k < c->nstreams; k++)
				if (!nt_stream_has_rows(c->streams[k]))
					nw_strlcpy(c->streams[k]->cmd_op, c->cmd_op, sizeof(c->streams[k]->cmd_op));
			return;
		}
	}
}

/*
 * NCCL log lines in a line of text: 1 when the line is one (its host is
 * remembered) or holds nothing else before one; else 0, with *n cut to
 * what comes before one and *cut set when there was one.
 */
static int skip_nccl_line(struct nt_ctx *c, const char *s, size_t *n, int *cut)
{
	*cut = 0;
	if (!memmem(s, *n, " NCCL ", 6))
		return 0;
	long at = find_nccl_line(c, s, *n);
	if (at == 0) {
		size_t hn = 0;
		while (hn < *n && s[hn] != ':')
			hn++;
		if (c->nknown < NT_MAX_HOSTS)
			nt_add_host(c->known_hosts, &c->nknown, s, hn);
		return 1;
	}
	if (at < 0)
		return 0;
	*n = (size_t)at;
	*cut = 1;
	return is_blank(s, *n);
}

/* Length of a rank tag "[12]" at s (digits only, as MPICH's and Intel MPI's -prepend-rank print it), 0 when none. */
static size_t rank_tag(const char *s, size_t n)
{
	size_t i = 1;
	if (n < 3 || s[0] != '[')
		return 0;
	while (i < n && i < 8 && s[i] >= '0' && s[i] <= '9')
		i++;
	return i > 1 && i < n && s[i] == ']' ? i + 1 : 0;
}

/*
 * MPICH's and Intel MPI's -prepend-rank: "[0] " before every line, and again
 * wherever the line was flushed in pieces, inside a row ("... sum  -1[0]
 * 1626.5 ..."). The leading tag becomes the stream's ("[0]" and "[1]" are
 * two processes); tags inside the line are cut out. Returns the new length.
 */
static size_t rank_tags(char *s, size_t n, char *tag, size_t taglen)
{
	size_t k = rank_tag(s, n);
	if (!k || (k < n && s[k] != ' ' && s[k] != '#'))
		return n;
	nt_copy_bounded(tag, taglen, s, k);
	size_t w = 0;
	for (size_t r = k < n && s[k] == ' ' ? k + 1 : k; r < n;) {
		size_t t = s[r] == '[' ? rank_tag(s + r, n - r) : 0;
		if (t == k && !memcmp(s + r, tag, k)) {
			r += t;
			continue;
		}
		s[w++] = s[r++];
	}
	return w;
}

/* nccl-tests' own "NCCL version 2.19.4+cuda12.2" (NCCL at WARN level, or older nccl-tests): the run's NCCL, when the header gives no code. */
static int nccl_banner(struct nt_stream *st, const char *s, size_t n)
{
	size_t i = 13, used = 0;
	long v[3] = { -1, -1, -1 };
	if (n < 18 || memcmp(s, "NCCL version ", 13) || s[i] < '0' || s[i] > '9')
		return 0;
	for (int k = 0; k < 3 && i < n; k++) {
		long x = 0;
		for (used = 0; i < n && s[i] >= '0' && s[i] <= '9' && used < 6; i++, used++)
			x = x * 10 + (s[i] - '0');
		if (!used)
			break;
		v[k] = x;
		if (i < n && s[i] == '.')
			i++;
	}
	if (v[2] >= 0 && st->nccl_code <= 0)
		st->nccl_code = v[0] > 2 || v[1] >= 9 ? (int)(v[0] * 10000 + v[1] * 100 + v[2]) : (int)(v[0] * 1000 + v[1] * 100 + v[2]);
	return 1;
}

/*
 * One line of text output: launcher prefixes off, NCCL log lines skipped
 * (the part of a row printed before one is kept for later), then header
 * comments, rows, or an unparsed line.
 */
void nt_process_line(struct nt_ctx *c, char *line, size_t len)
{
	struct nw_lp lp;
	size_t n;
	size_t off = nw_lp_strip(line, len, &n, &lp);
	char *s = line + off;
	if (!lp.tag[0] && n && s[0] == '[')
		n = rank_tags(s, n, lp.tag, sizeof(lp.tag));
	while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (!n)
		return;
	struct nt_stream *st = nt_get_stream(c, lp.tag);
	if (nccl_banner(st, s, n))
		return;
	if (!st->cmd_op[0] && c->cmd_op[0] && !nt_stream_has_rows(st))
		nw_strlcpy(st->cmd_op, c->cmd_op, sizeof(st->cmd_op));
	int cut;
	if (skip_nccl_line(c, s, &n, &cut))
		return;
	if (memchr(s, '\0', n)) {
		c->unparsed++;
		return;
	}
	if (s[0] == '#') {
		if (st->plen)
			nt_stream_finish(c, st), st = nt_get_stream(c, lp.tag);
		nt_parse_comment(c, st, s + 1, n - 1);
		return;
	}
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	int rowish = i < n && s[i] >= '0' && s[i] <= '9';
	if (rowish && st->footer_read)
		nt_stream_close_table(c, st);
	if (!rowish && !st->plen && nt_text_header_line(c, st, s + i, n - i))
		return;
	if (cut && (rowish || st->plen)) {
		pending_add(c, st, s, n);
		return;
	}
	if (st->plen) {
		pending_add(c, st, s, n);
		if (st->plen && nt_parse_row(st, st->pending, st->plen) < 0)
			c->unparsed++;
		st->plen = 0;
		return;
	}
	if (!rowish)
		command_line(c, s + i, n - i);
	if (!rowish || nt_parse_row(st, s, n) < 0)
		c->unparsed++;
}
