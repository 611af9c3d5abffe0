/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_header: the header and footer lines of nccl-tests' text output (the
 * '#' lines, or the same lines with their '#' lost in pasting, and RCCL's
 * banners): versions, the device list, the run's parameters, the column
 * header, the out-of-bounds count and the average bus bandwidth.
 */
#include <stdlib.h>
#include <string.h>

#include "parse/nt_int.h"
#include "util/util.h"

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

/* "#  Rank  0 Group  0 Pid    643 on         vm device  0 [0000:00:06] NVIDIA H200" */
static int parse_rank_line(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s, n, t, NT_MAX_TOKENS);
	long long rank;
	if (k < 8 || !nt_tok_is(&t[0], "Rank") || nt_tok_ll(&t[1], &rank, 0))
		return -1;
	int i = 2;
	while (i + 1 < k && !nt_tok_is(&t[i], "on"))
		i++;
	if (i + 1 >= k)
		return -1;
	const struct nt_tok *host = &t[i + 1];
	long long pid = -1, dev = -1;
	for (int j = 2; j + 1 < k; j++)
		if (nt_tok_is(&t[j], "Pid"))
			nt_tok_ll(&t[j + 1], &pid, 0);
		else if (nt_tok_is(&t[j], "device"))
			nt_tok_ll(&t[j + 1], &dev, 0);
	i += 2;
	while (i < k && t[i].s[0] != '[')
		i++;
	if (nt_stream_has_rows(st))
		return 1; /* another process's header after rows: caller restarts */
	/* the same device listed again is a repeated header; another process's own "Rank 0" is one more rank */
	uint64_t id = (fnv1a(host->s, host->n) ^ (uint64_t)pid) * 1000003u + (uint64_t)(dev + 1);
	int new_id = 1;
	for (int j = 0; j < st->nids && j < (int)NW_ARRAY_LEN(st->ids); j++)
		new_id &= st->ids[j] != id;
	if (new_id && st->nids < (int)NW_ARRAY_LEN(st->ids))
		st->ids[st->nids] = id;
	st->nids += new_id;
	if (!nt_note_rank(st, rank)) {
		if (new_id)
			nt_add_host(st->hosts, &st->nhosts, host->s, host->n);
		return 0;
	}
	nt_add_host(st->hosts, &st->nhosts, host->s, host->n);
	if (i + 1 < k)
		nt_add_gpu(st, t[i + 1].s, n - t[i + 1].col);
	return 0;
}

static long tok_long_or(const struct nt_tok *t, long dflt)
{
	long long v;
	return nt_tok_ll(t, &v, 0) || v > 1000000000 ? dflt : (long)v;
}

/* "# nThread 1 nGpus 2 minBytes 8 ... warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0" */
/* "nThread 1 nGpus 2 minBytes ... warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0" */
static int parse_params(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s, n, t, NT_MAX_TOKENS);
	for (int i = 0; i + 1 < k; i++) {
		const struct nt_tok *nx = &t[i + 1];
		if (nt_tok_is(&t[i], "nThread"))
			st->nthread = tok_long_or(nx, -1);
		else if (nt_tok_is(&t[i], "nGpus"))
			st->ngpus = tok_long_or(nx, -1);
		else if (nt_tok_is(&t[i], "iters:")) {
			if (i > 0 && nt_tok_is(&t[i - 1], "warmup"))
				st->warmup = tok_long_or(nx, -1);
			else if (!(i > 0 && nt_tok_is(&t[i - 1], "agg")))
				st->iters = tok_long_or(nx, -1);
		} else if (nt_tok_is(&t[i], "validation:"))
			st->validation = tok_long_or(nx, -1);
		else if (nt_tok_is(&t[i], "graph:"))
			st->graph = tok_long_or(nx, -1);
	}
	return 0;
}

static int starts(const char *s, size_t n, const char *w)
{
	size_t m = strlen(w);
	return n >= m && !memcmp(s, w, m);
}

static int find_word(const char *s, size_t n, const char *w)
{
	return memmem(s, n, w, strlen(w)) != NULL;
}

/*
 * The readers of nccl-tests' '#' lines (s: after "# "). Each returns 0, or
 * 1 when the line belongs to a new table (the stream's table is finished
 * and the line read again); parse_params and parse_rank_line above are two.
 */

/*
 * "nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809": the
 * version, and NCCL's (the library's first). rccl-tests' "rccl-headers=" and
 * "rccl-library=" are RCCL's versions, kept apart from NCCL's.
 */
static int comment_version(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s, n, t, NT_MAX_TOKENS);
	if (k >= 3)
		nt_tok_copy(&t[2], st->nt_version, sizeof(st->nt_version));
	if (starts(s, n, "rccl-tests")) {
		st->rccl = 1;
		for (int i = 3; i < k; i++)
			if (starts(t[i].s, t[i].n, "rccl-library=") && t[i].n > 13) {
				long code = tok_long_or(&(struct nt_tok){ t[i].s + 13, t[i].n - 13, 0 }, -1);
				if (code > 0)
					nt_version_from_code(code, st->rccl_version, sizeof(st->rccl_version));
			}
		return 0;
	}
	for (int i = 3; i < k; i++) {
		struct nt_tok v = t[i];
		int lib = starts(v.s, v.n, "nccl-library=");
		if (!lib && !starts(v.s, v.n, "nccl-headers="))
			continue;
		v.s += 13, v.n -= 13;
		long code = tok_long_or(&v, -1);
		if (code > 0 && (lib || st->nccl_code < 0))
			st->nccl_code = (int)code;
	}
	return 0;
}

/* "Collective test starting: all_reduce_perf" */
static int comment_starting(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s + 25, n - 25, t, NT_MAX_TOKENS);
	if (k >= 1)
		nt_op_from_program(t[0].s, t[0].n, st->op, sizeof(st->op));
	return 0;
}

/* "Collective test concluded: all_reduce_perf": the op, when nothing before said it. */
static int comment_concluded(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	const char *colon = memchr(s, ':', n);
	if (st->op[0] || !colon)
		return 0;
	int k = nt_tokenize(colon + 1, n - (size_t)(colon + 1 - s), t, NT_MAX_TOKENS);
	if (k >= 1)
		nt_op_from_program(t[0].s, t[0].n, st->op, sizeof(st->op));
	return 0;
}

/* ncclwatch's table: "Using devices: 2 x NVIDIA H200 on host (4 ranks)"; nThread x nGpus is per process */
static int comment_devices(struct nt_stream *st, const char *s, size_t n)
{
	size_t i = n;
	while (i > 0 && s[i - 1] != '(')
		i--;
	if (i == 0)
		return 0;
	char num[32];
	size_t k = n - i < sizeof(num) - 1 ? n - i : sizeof(num) - 1;
	memcpy(num, s + i, k);
	num[k] = '\0';
	char *end = NULL;
	long v = strtol(num, &end, 10);
	if (end != num && !strncmp(end, " rank", 5) && v > 0)
		st->nranks_declared = v;
	return 0;
}

/* The column header "size count type redop root time algbw busbw #wrong ...": whether it says "error" instead. */
static int comment_columns(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t[NT_MAX_TOKENS];
	int k = nt_tokenize(s, n, t, NT_MAX_TOKENS);
	if (!nt_stream_has_rows(st))
		st->error_column = st->root_column = 0; /* the columns of this table, not of one before it */
	for (int i = 0; i < k; i++)
		if (nt_tok_is(&t[i], "error"))
			st->error_column = 1;
		else if (nt_tok_is(&t[i], "root"))
			st->root_column = 1;
	return 0;
}

/* The first token after the first ':' of s; 0 when there is none. */
static int value_after_colon(const char *s, size_t n, struct nt_tok *t)
{
	struct nt_tok all[NT_MAX_TOKENS];
	const char *colon = memchr(s, ':', n);
	if (!colon || nt_tokenize(colon + 1, n - (size_t)(colon + 1 - s), all, NT_MAX_TOKENS) < 1)
		return 0;
	*t = all[0];
	return 1;
}

/* "Out of bounds values : 0 OK" */
static int comment_oob(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t;
	long long v;
	if (value_after_colon(s, n, &t) && !nt_tok_ll(&t, &v, 0)) {
		st->have_oob = 1;
		st->oob = v;
	}
	return 0;
}

/* "Avg bus bandwidth    : 123.456" */
static int comment_avg(struct nt_stream *st, const char *s, size_t n)
{
	struct nt_tok t;
	if (value_after_colon(s, n, &t) && !nt_tok_double(&t, &st->avg))
		st->have_avg = 1;
	return 0;
}

/*
 * The '#' lines of nccl-tests' header and footer that say something, by
 * how they start, tried in this order: a new kind of header line is one
 * reader and one row. The first three begin a test (a table with rows
 * before them is finished first); "concluded" ends one.
 */
enum { NT_BEGINS = 1, NT_ENDS = 2 };
static const struct comment_kind {
	const char *start;
	int flags;
	int (*read)(struct nt_stream *st, const char *s, size_t n);
} comment_kinds[] = {
	{ "nccl-tests version", NT_BEGINS, comment_version },
	{ "rccl-tests version", NT_BEGINS, comment_version },
	{ "Collective test starting:", NT_BEGINS, comment_starting },
	{ "nThread ", NT_BEGINS, parse_params },
	{ "Using devices:", 0, comment_devices },
	{ "Rank ", 0, parse_rank_line },
	{ "size ", 0, comment_columns },
	{ "size\t", 0, comment_columns },
	{ "Out of bounds values", 0, comment_oob },
	{ "Avg bus bandwidth", 0, comment_avg },
	{ "Collective test concluded", NT_ENDS, comment_concluded },
};

/* The kind of a header or footer line (s: after "# "), or NULL. */
static const struct comment_kind *comment_kind_of(const char *s, size_t n)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(comment_kinds); i++)
		if (starts(s, n, comment_kinds[i].start))
			return &comment_kinds[i];
	return NULL;
}

/*
 * A header or footer line whose '#' was lost in pasting: one of the kinds
 * above, the device list only with its "Pid", the column header only with
 * "count" and "type", or one that says nothing ("Using devices", the
 * placement and units lines above the columns).
 */
static int stripped_comment(const char *s, size_t n)
{
	const struct comment_kind *k = comment_kind_of(s, n);
	if (!k)
		return starts(s, n, "Using devices") || starts(s, n, "out-of-place") || starts(s, n, "(B)");
	if (k->read == parse_rank_line)
		return find_word(s, n, " Pid ");
	if (k->read == comment_columns)
		return find_word(s, n, " count ") && find_word(s, n, " type ");
	return 1;
}

/* "RCCL version : 2.28.3-gfx1151", "RCCL version 2.18.3+hip6.0", "HIP version : 7.12": RCCL, and its version. */
static int rccl_banner(struct nt_stream *st, const char *s, size_t n)
{
	if (starts(s, n, "HIP version")) {
		st->rccl = 1;
		return 1;
	}
	if (!starts(s, n, "RCCL version"))
		return 0;
	st->rccl = 1;
	size_t i = 12;
	while (i < n && (s[i] == ' ' || s[i] == ':'))
		i++;
	size_t e = i;
	while (e < n && s[e] != ' ')
		e++;
	if (!st->rccl_version[0] && e > i)
		nt_copy_bounded(st->rccl_version, sizeof(st->rccl_version), s + i, e - i);
	return 1;
}

/* A header or footer line (s: after its '#', if it had one). */
void nt_parse_comment(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n)
{
	while (n && *s == ' ')
		s++, n--;
	const struct comment_kind *k = comment_kind_of(s, n);
	if (k) {
		if ((k->flags & NT_BEGINS) && nt_stream_has_rows(st))
			nt_stream_finish(c, st);
		else if (k->read == comment_columns && st->footer_read)
			nt_stream_close_table(c, st); /* another table's column header, after a footer */
		if (k->read && k->read(st, s, n) == 1) {
			nt_stream_finish(c, st);
			k->read(st, s, n);
		}
		if (k->flags & NT_ENDS)
			nt_stream_finish(c, st);
		else if (k->read == comment_avg && st->nsub == 1)
			st->footer_read = 1; /* the table ends: rows after it are another table's (nt_stream_close_table) */
	}
}

/* An RCCL banner, or a header or footer line whose '#' was lost: read, and 1; 0 when s is neither. */
int nt_text_header_line(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n)
{
	if (rccl_banner(st, s, n))
		return 1;
	if (!stripped_comment(s, n))
		return 0;
	nt_parse_comment(c, st, s, n);
	return 1;
}
