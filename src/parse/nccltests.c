#include "parse/nccltests.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "parse/lineprefix.h"
#include "parse/nt_int.h"
#include "util/util.h"

#define NT_MAX_LINE 8192     /* longer lines are not nccl-tests output */
#define NT_MAX_TOKENS 40
#define NT_MAX_INPUT ((size_t)1 << 30)

/* A word of a line and its column. */
struct tok {
	const char *s;
	size_t n;
	size_t col;
};

/* Forget what a stream said (its tables are released), keeping its tag. */
static void stream_reset(struct nt_stream *st)
{
	char tag[sizeof(st->tag)];
	memcpy(tag, st->tag, sizeof(tag));
	for (int i = 0; i < st->nsub; i++)
		nw_run_release(&st->sub[i]);
	free(st->sub);
	if (st->env)
		json_decref(st->env);
	memset(st, 0, sizeof(*st));
	memcpy(st->tag, tag, sizeof(tag));
	st->nthread = st->ngpus = st->iters = st->warmup = st->validation = st->graph = -1;
	st->nranks_declared = -1;
	st->nccl_code = -1;
}

/* Split s[0..n) at blanks into at most max tokens (with their columns); -1 when there are more. */
static int tokenize(const char *s, size_t n, struct tok *t, int max)
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

static int tok_is(const struct tok *t, const char *w)
{
	size_t n = strlen(w);
	return t->n == n && !memcmp(t->s, w, n);
}

/* A token as a finite or infinite double (whole token must be consumed). */
static int tok_double(const struct tok *t, double *v)
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
static int tok_ll(const struct tok *t, long long *v, int allow_sign)
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

static void tok_copy(const struct tok *t, char *dst, size_t len)
{
	size_t n = t->n < len - 1 ? t->n : len - 1;
	memcpy(dst, t->s, n);
	dst[n] = '\0';
}

/* "22809" -> "2.28.9"; codes before 2.9 were major*1000 + minor*100 + patch. */
static void version_from_code(long code, char *buf, size_t len)
{
	if (code >= 10000)
		snprintf(buf, len, "%ld.%ld.%ld", code / 10000, (code / 100) % 100, code % 100);
	else if (code >= 1000)
		snprintf(buf, len, "%ld.%ld.%ld", code / 1000, (code / 100) % 10, code % 100);
	else
		buf[0] = '\0';
}

/* "./build/all_reduce_perf" -> "all_reduce"; keeps unknown names as they are. */
static void op_from_program(const char *s, size_t n, char *op, size_t len)
{
	const char *base = s;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			base = s + i + 1;
	size_t bn = n - (size_t)(base - s);
	if (bn > 5 && !memcmp(base + bn - 5, "_perf", 5))
		bn -= 5;
	else if (bn > 9 && !memcmp(base + bn - 9, "_perf_mpi", 9))
		bn -= 9;
	if (bn >= len)
		bn = len - 1;
	memcpy(op, base, bn);
	op[bn] = '\0';
}

static void add_host(char hosts[][64], int *nhosts, const char *h, size_t n)
{
	if (!n)
		return;
	if (n > 63)
		n = 63;
	for (int i = 0; i < *nhosts; i++)
		if (strlen(hosts[i]) == n && !memcmp(hosts[i], h, n))
			return;
	if (*nhosts == NT_MAX_HOSTS)
		return;
	memcpy(hosts[*nhosts], h, n);
	hosts[*nhosts][n] = '\0';
	(*nhosts)++;
}

static void add_gpu(struct nt_stream *st, const char *name, size_t n)
{
	while (n && (name[n - 1] == ' ' || name[n - 1] == '\r'))
		n--;
	if (!n)
		return;
	if (n > sizeof(st->gpus[0].name) - 1)
		n = sizeof(st->gpus[0].name) - 1;
	for (int i = 0; i < st->ngpunames; i++)
		if (strlen(st->gpus[i].name) == n && !memcmp(st->gpus[i].name, name, n)) {
			st->gpus[i].n++;
			return;
		}
	if (st->ngpunames == NT_MAX_GPUNAMES)
		return;
	memcpy(st->gpus[st->ngpunames].name, name, n);
	st->gpus[st->ngpunames].name[n] = '\0';
	st->gpus[st->ngpunames++].n = 1;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

/* Count a rank of the device list; returns 0 when it was listed already. */
static int note_rank(struct nt_stream *st, long long rank)
{
	for (int i = 0; i < st->nranks_seen && i < (int)NW_ARRAY_LEN(st->ranks_seen); i++)
		if (st->ranks_seen[i] == rank) {
			st->dup_ranks++;
			return 0;
		}
	if (st->nranks_seen < (int)NW_ARRAY_LEN(st->ranks_seen))
		st->ranks_seen[st->nranks_seen] = (int)rank;
	st->nranks_seen++;
	return 1;
}

static void push_run(struct nt_ctx *c, struct nw_run *run)
{
	if (c->nruns == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->runs = nw_realloc(c->runs, c->cap * sizeof(*c->runs));
	}
	c->runs[c->nruns++] = *run;
	nw_run_init(run);
}

static void set_extra_int(json_t *o, const char *k, long v)
{
	if (v >= 0)
		json_object_set_new(o, k, json_integer(v));
}

/*
 * Old nccl-tests' verdict on a row from its "error" column (the largest
 * difference from the expected values): 1 beyond the bound it used for the
 * type (DeltaMaxValue: half and bfloat16 1e-2, float 1e-5, double 1e-12,
 * integers any difference), 0 within, -1 when there is no number.
 */
static int64_t wrong_from_error(const char *raw, const char *dtype)
{
	char *end;
	if (!raw || !*raw)
		return -1;
	double v = strtod(raw, &end);
	if (*end || !(v >= 0))
		return -1;
	double bound = 1e-200;
	if (!strcmp(dtype, "half") || !strcmp(dtype, "bfloat16"))
		bound = 1e-2;
	else if (!strcmp(dtype, "float"))
		bound = 1e-5;
	else if (!strcmp(dtype, "double"))
		bound = 1e-12;
	return v > bound;
}

/* What the header said beyond the run header's fields, into a run's extra object x. */
static void fill_extra(const struct nt_stream *st, json_t *x)
{
	if (st->rccl)
		json_object_set_new(x, "rccl", json_true());
	if (st->rccl_version[0])
		json_object_set_new(x, "rccl_version", json_string(st->rccl_version));
	if (st->env)
		json_object_set(x, "env", st->env);
	if (st->nt_version[0])
		json_object_set_new(x, st->rccl ? "rccl_tests_version" : "nccl_tests_version", json_string(st->nt_version));
	set_extra_int(x, "nthreads", st->nthread);
	set_extra_int(x, "ngpus", st->ngpus);
	set_extra_int(x, "iters", st->iters);
	set_extra_int(x, "warmup_iters", st->warmup);
	set_extra_int(x, "validation", st->validation);
	set_extra_int(x, "graph", st->graph);
	if (st->have_avg && isfinite(st->avg))
		json_object_set_new(x, "avg_busbw_reported", json_real(st->avg));
	if (st->have_oob)
		json_object_set_new(x, "out_of_bounds_reported", json_integer(st->oob));
	if (st->error_column)
		json_object_set_new(x, "error_column", json_true());
	if (st->nsub > 1 || st->dup_ranks)
		json_object_set_new(x, "processes_repeating_header", json_integer(st->nsub > 1 ? st->nsub : st->dup_ranks + 1));
	if ((!st->have_avg && !st->no_footer) || st->short_rows) {
		json_object_set_new(x, "incomplete", json_true());
		json_object_set_new(x, "incomplete_reason",
		                    json_string(st->short_rows ? "rows missing columns were left out" : "the table has no footer"));
	}
}

/* Fill a finished run's header from what its stream said. */
static void fill_header(struct nt_ctx *c, const struct nt_stream *st, struct nw_run *run)
{
	struct nw_run_header *h = &run->h;
	nw_strlcpy(h->tool_version, NW_VERSION, sizeof(h->tool_version));
	nw_strlcpy(h->source, "import", sizeof(h->source));
	nw_strlcpy(h->backend, st->rccl ? "rccl-tests" : "nccl-tests", sizeof(h->backend));
	nw_strlcpy(h->time, st->start_time, sizeof(h->time));
	nw_strlcpy(h->cmdline, st->cmdline, sizeof(h->cmdline));
	if (st->nccl_code > 0)
		version_from_code(st->nccl_code, h->nccl_version, sizeof(h->nccl_version));
	nw_strlcpy(h->input, c->name ? c->name : "", sizeof(h->input));
	size_t used = 0;
	for (int i = 0; i < st->nhosts && used + 1 < sizeof(h->host); i++) {
		int n = snprintf(h->host + used, sizeof(h->host) - used, "%s%s", i ? "," : "", st->hosts[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used >= sizeof(h->host))
		h->host[sizeof(h->host) - 1] = '\0';
	used = 0;
	for (int i = 0; i < st->ngpunames && used + 1 < sizeof(h->gpus); i++) {
		int n = snprintf(h->gpus + used, sizeof(h->gpus) - used, "%s%d x %s", i ? ", " : "",
		                 st->gpus[i].n, st->gpus[i].name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used >= sizeof(h->gpus))
		h->gpus[sizeof(h->gpus) - 1] = '\0';
	h->nhosts = st->nhosts;
	if (!h->nhosts && st->nnodes_declared > 0 && st->nnodes_declared <= INT_MAX)
		h->nhosts = (int)st->nnodes_declared;
	if (st->nranks_seen > 0)
		h->nranks = st->nranks_seen > st->nids ? st->nranks_seen : st->nids;
	else if (st->nranks_declared > 0 && st->nranks_declared <= INT_MAX)
		h->nranks = (int)st->nranks_declared;
	else if (st->nthread > 0 && st->ngpus > 0)
		h->nranks = (int)(st->nthread * st->ngpus);
	json_t *x = h->extra ? h->extra : json_object(); /* may hold the rows' raw "error" values */
	fill_extra(st, x);
	h->extra = x;
	const json_t *ev = json_object_get(x, "error_values");
	for (size_t i = 0; i < run->nrows; i++) {
		struct nw_row *r = &run->rows[i];
		nw_strlcpy(r->op, st->op[0] ? st->op : st->cmd_op[0] ? st->cmd_op : "unknown", sizeof(r->op));
		r->nranks = h->nranks;
		if (st->error_column && st->have_oob && st->oob == 0)
			r->wrong = 0;
		else if (st->error_column)
			r->wrong = wrong_from_error(json_string_value(json_array_get(ev, i)), r->dtype);
	}
}

static int parse_row(struct nt_stream *st, const char *s, size_t n);

/* A device list that no table followed: the largest one is told to the caller. */
static void tell_header_only(struct nt_ctx *c, const struct nt_stream *st)
{
	int nranks = st->nranks_seen > st->nids ? st->nranks_seen : st->nids;
	if (nranks > 0 && st->nthread > 0 && st->ngpus > 0 && st->nthread * st->ngpus > nranks &&
	    st->nthread * st->ngpus <= INT_MAX)
		nranks = (int)(st->nthread * st->ngpus); /* the list was cut */
	if (!c->seen || nranks <= c->seen->nranks)
		return;
	c->seen->nranks = nranks;
	c->seen->nhosts = st->nhosts;
	size_t used = 0;
	c->seen->hosts[0] = '\0';
	for (int i = 0; i < st->nhosts && used + 1 < sizeof(c->seen->hosts); i++) {
		int k = snprintf(c->seen->hosts + used, sizeof(c->seen->hosts) - used, "%s%s", i ? ", " : "", st->hosts[i]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

/* The raw "error" values of merge_zero_rows' tables, in the rows' new order (before their tables are released). */
static json_t *merged_error_values(const struct nt_stream *st, size_t zeros)
{
	const json_t *a0 = st->sub[0].h.extra ? json_object_get(st->sub[0].h.extra, "error_values") : NULL;
	if (!a0)
		return NULL;
	json_t *all = json_array();
	for (size_t i = 0; i < zeros && i < json_array_size(a0); i++)
		json_array_append(all, json_array_get(a0, i));
	for (int j = 1; j < st->nsub; j++) {
		const json_t *a = st->sub[j].h.extra ? json_object_get(st->sub[j].h.extra, "error_values") : NULL;
		for (size_t i = 0; i < json_array_size(a); i++)
			json_array_append(all, json_array_get(a, i));
	}
	for (size_t i = zeros; i < json_array_size(a0); i++)
		json_array_append(all, json_array_get(a0, i));
	return all;
}

/*
 * One table that repeats its size-0 rows (reduce_scatter or alltoall on 8+
 * ranks from -b 1 print several rows of size 0, then the sizes that count)
 * was read as one process table per repeated row: when the tables after
 * the first hold only size-0 rows, they are the first's, in file order.
 */
static void merge_zero_rows(struct nt_stream *st)
{
	if (st->nsub < 2 || !st->sub[0].nrows || st->sub[0].rows[0].size_bytes)
		return;
	size_t total = st->sub[0].nrows;
	for (int j = 1; j < st->nsub; j++) {
		for (size_t i = 0; i < st->sub[j].nrows; i++)
			if (st->sub[j].rows[i].size_bytes)
				return; /* another process's table: sizes it repeats beyond 0 */
		total += st->sub[j].nrows;
	}
	struct nw_run *first = &st->sub[0];
	size_t zeros = 0;
	while (zeros < first->nrows && !first->rows[zeros].size_bytes)
		zeros++;
	json_t *ev = merged_error_values(st, zeros);
	if (ev)
		json_object_set_new(first->h.extra, "error_values", ev);
	struct nw_row *rows = nw_malloc(total * sizeof(*rows));
	size_t w = 0;
	memcpy(rows, first->rows, zeros * sizeof(*rows));
	w = zeros;
	for (int j = 1; j < st->nsub; j++) {
		memcpy(rows + w, st->sub[j].rows, st->sub[j].nrows * sizeof(*rows));
		w += st->sub[j].nrows;
		st->sub[j].nrows = 0; /* its rows moved: nothing of theirs is released */
		nw_run_release(&st->sub[j]);
	}
	memcpy(rows + w, first->rows + zeros, (first->nrows - zeros) * sizeof(*rows));
	free(first->rows);
	first->rows = rows;
	first->nrows = first->cap = total;
	st->nsub = 1;
}

/* End of a stream's run: its rows become runs of the result. */
void nt_stream_finish(struct nt_ctx *c, struct nt_stream *st)
{
	if (st->plen) {
		if (parse_row(st, st->pending, st->plen) < 0)
			c->unparsed++;
		st->plen = 0;
	}
	merge_zero_rows(st);
	int rows = 0;
	for (int i = 0; i < st->nsub; i++)
		rows += st->sub[i].nrows > 0;
	if (!rows)
		tell_header_only(c, st);
	for (int i = 0; i < st->nsub; i++) {
		if (!st->sub[i].nrows)
			continue;
		fill_header(c, st, &st->sub[i]);
		push_run(c, &st->sub[i]);
	}
	stream_reset(st);
}

struct nt_stream *nt_get_stream(struct nt_ctx *c, const char *tag)
{
	for (int i = 0; i < c->nstreams; i++)
		if (!strcmp(c->streams[i]->tag, tag))
			return c->streams[i];
	if (c->nstreams == NT_MAX_STREAMS)
		return c->streams[0];
	struct nt_stream *st = nw_calloc(1, sizeof(*st));
	nw_strlcpy(st->tag, tag, sizeof(st->tag));
	stream_reset(st);
	c->streams[c->nstreams++] = st;
	return st;
}

/* Whether a stream's table has rows yet. */
static int stream_has_rows(const struct nt_stream *st)
{
	return st->nsub > 1 || (st->nsub == 1 && st->sub[0].nrows > 0);
}

/* One placement's four columns: time, algbw, busbw, #wrong (or old "error", kept raw in raw). */
static int parse_body(struct nt_stream *st, const struct tok *t, struct nw_row *r, char raw[24])
{
	double v;
	tok_copy(&t[3], raw, 24);
	if (tok_double(&t[0], &r->time_us) || tok_double(&t[1], &r->algbw_gbs) ||
	    tok_double(&t[2], &r->busbw_gbs))
		return -1;
	if (tok_is(&t[3], "N/A")) {
		r->wrong = -1;
		return 0;
	}
	if (tok_double(&t[3], &v) || !(v >= 0) || v > 9.2e18)
		return -1;
	r->wrong = st->error_column ? -1 : (int64_t)v;
	return 0;
}

/* Whether a token is part of a trailing timestamp ("2026-11-30", "11:39:33"). */
static int is_stamp(const struct tok *t)
{
	if (t->n >= 10 && t->s[4] == '-' && t->s[7] == '-')
		return 1;
	return t->n >= 8 && t->s[2] == ':' && t->s[5] == ':';
}

/* The raw value of the old "error" column (a float such as "1e-07") in the run's extra.error_values, row by row. */
static void keep_error_value(struct nw_run *run, const char *raw)
{
	if (!run->h.extra)
		run->h.extra = json_object();
	json_t *a = json_object_get(run->h.extra, "error_values");
	if (!a) {
		a = json_array();
		json_object_set_new(run->h.extra, "error_values", a);
	}
	json_array_append_new(a, json_string(raw));
}

/* Add a row to the first process's table whose sizes are still below it (raw: the "error" values, or NULL). */
int nt_add_rows(struct nt_stream *st, const struct nw_row *oop, const struct nw_row *ip, char raw[2][24])
{
	const struct nw_row *r = oop ? oop : ip;
	int j;
	for (j = 0; j < st->nsub; j++) {
		struct nw_run *run = &st->sub[j];
		if (!run->nrows || run->rows[run->nrows - 1].size_bytes < r->size_bytes)
			break;
	}
	if (j == NT_MAX_SUB)
		return -1;
	if (j == st->nsub) {
		if (st->nsub == st->cap_sub) {
			st->cap_sub = st->cap_sub ? st->cap_sub * 2 : 2;
			st->sub = nw_realloc(st->sub, (size_t)st->cap_sub * sizeof(*st->sub));
		}
		nw_run_init(&st->sub[st->nsub++]);
	}
	if (oop)
		nw_run_add(&st->sub[j], oop);
	if (oop && raw && st->error_column)
		keep_error_value(&st->sub[j], raw[0]);
	if (ip)
		nw_run_add(&st->sub[j], ip);
	if (ip && raw && st->error_column)
		keep_error_value(&st->sub[j], raw[1]);
	return 0;
}

/*
 * A result row: size count type [redop] [root] then one or two placements
 * of four columns (with -R/per-iteration tables, eight each), maybe a
 * timestamp. Returns 0 when it was a row, -1 when not.
 */
static int parse_row(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s, n, t, NT_MAX_TOKENS);
	long long size, count, root = -1;
	double dummy;
	if (k < 7 || tok_ll(&t[0], &size, 0) || tok_ll(&t[1], &count, 0))
		return -1;
	if (!tok_double(&t[2], &dummy))
		return -1;
	struct nw_row base;
	memset(&base, 0, sizeof(base));
	base.size_bytes = (uint64_t)size;
	base.count = (uint64_t)count;
	tok_copy(&t[2], base.dtype, sizeof(base.dtype));
	int i = 3;
	if (tok_double(&t[i], &dummy) && !tok_is(&t[i], "N/A")) {
		tok_copy(&t[i], base.redop, sizeof(base.redop));
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
		if (tok_ll(&t[i], &root, 1) || root < -1 || root > 1000000)
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
		}
	} else {
		return -1;
	}
	return nt_add_rows(st, have_oop ? &oop : NULL, have_ip ? &ip : NULL, raw);
}

/* "#  Rank  0 Group  0 Pid    643 on         vm device  0 [0000:00:06] NVIDIA H200" */
static int parse_rank_line(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s, n, t, NT_MAX_TOKENS);
	long long rank;
	if (k < 8 || !tok_is(&t[0], "Rank") || tok_ll(&t[1], &rank, 0))
		return -1;
	int i = 2;
	while (i + 1 < k && !tok_is(&t[i], "on"))
		i++;
	if (i + 1 >= k)
		return -1;
	const struct tok *host = &t[i + 1];
	long long pid = -1, dev = -1;
	for (int j = 2; j + 1 < k; j++)
		if (tok_is(&t[j], "Pid"))
			tok_ll(&t[j + 1], &pid, 0);
		else if (tok_is(&t[j], "device"))
			tok_ll(&t[j + 1], &dev, 0);
	i += 2;
	while (i < k && t[i].s[0] != '[')
		i++;
	if (stream_has_rows(st))
		return 1; /* another process's header after rows: caller restarts */
	/* the same device listed again is a repeated header; another process's own "Rank 0" is one more rank */
	uint64_t id = (fnv1a(host->s, host->n) ^ (uint64_t)pid) * 1000003u + (uint64_t)(dev + 1);
	int new_id = 1;
	for (int j = 0; j < st->nids && j < (int)NW_ARRAY_LEN(st->ids); j++)
		new_id &= st->ids[j] != id;
	if (new_id && st->nids < (int)NW_ARRAY_LEN(st->ids))
		st->ids[st->nids] = id;
	st->nids += new_id;
	if (!note_rank(st, rank)) {
		if (new_id)
			add_host(st->hosts, &st->nhosts, host->s, host->n);
		return 0;
	}
	add_host(st->hosts, &st->nhosts, host->s, host->n);
	if (i + 1 < k)
		add_gpu(st, t[i + 1].s, n - t[i + 1].col);
	return 0;
}

static long tok_long_or(const struct tok *t, long dflt)
{
	long long v;
	return tok_ll(t, &v, 0) || v > 1000000000 ? dflt : (long)v;
}

/* "# nThread 1 nGpus 2 minBytes 8 ... warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0" */
/* "nThread 1 nGpus 2 minBytes ... warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0" */
static int parse_params(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s, n, t, NT_MAX_TOKENS);
	for (int i = 0; i + 1 < k; i++) {
		const struct tok *nx = &t[i + 1];
		if (tok_is(&t[i], "nThread"))
			st->nthread = tok_long_or(nx, -1);
		else if (tok_is(&t[i], "nGpus"))
			st->ngpus = tok_long_or(nx, -1);
		else if (tok_is(&t[i], "iters:")) {
			if (i > 0 && tok_is(&t[i - 1], "warmup"))
				st->warmup = tok_long_or(nx, -1);
			else if (!(i > 0 && tok_is(&t[i - 1], "agg")))
				st->iters = tok_long_or(nx, -1);
		} else if (tok_is(&t[i], "validation:"))
			st->validation = tok_long_or(nx, -1);
		else if (tok_is(&t[i], "graph:"))
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

static void copy_bounded(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
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
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s, n, t, NT_MAX_TOKENS);
	if (k >= 3)
		tok_copy(&t[2], st->nt_version, sizeof(st->nt_version));
	if (starts(s, n, "rccl-tests")) {
		st->rccl = 1;
		for (int i = 3; i < k; i++)
			if (starts(t[i].s, t[i].n, "rccl-library=") && t[i].n > 13) {
				long code = tok_long_or(&(struct tok){ t[i].s + 13, t[i].n - 13, 0 }, -1);
				if (code > 0)
					version_from_code(code, st->rccl_version, sizeof(st->rccl_version));
			}
		return 0;
	}
	for (int i = 3; i < k; i++) {
		struct tok v = t[i];
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
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s + 25, n - 25, t, NT_MAX_TOKENS);
	if (k >= 1)
		op_from_program(t[0].s, t[0].n, st->op, sizeof(st->op));
	return 0;
}

/* "Collective test concluded: all_reduce_perf": the op, when nothing before said it. */
static int comment_concluded(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t[NT_MAX_TOKENS];
	const char *colon = memchr(s, ':', n);
	if (st->op[0] || !colon)
		return 0;
	int k = tokenize(colon + 1, n - (size_t)(colon + 1 - s), t, NT_MAX_TOKENS);
	if (k >= 1)
		op_from_program(t[0].s, t[0].n, st->op, sizeof(st->op));
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
	struct tok t[NT_MAX_TOKENS];
	int k = tokenize(s, n, t, NT_MAX_TOKENS);
	for (int i = 0; i < k; i++)
		if (tok_is(&t[i], "error"))
			st->error_column = 1;
		else if (tok_is(&t[i], "root"))
			st->root_column = 1;
	return 0;
}

/* The first token after the first ':' of s; 0 when there is none. */
static int value_after_colon(const char *s, size_t n, struct tok *t)
{
	struct tok all[NT_MAX_TOKENS];
	const char *colon = memchr(s, ':', n);
	if (!colon || tokenize(colon + 1, n - (size_t)(colon + 1 - s), all, NT_MAX_TOKENS) < 1)
		return 0;
	*t = all[0];
	return 1;
}

/* "Out of bounds values : 0 OK" */
static int comment_oob(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t;
	long long v;
	if (value_after_colon(s, n, &t) && !tok_ll(&t, &v, 0)) {
		st->have_oob = 1;
		st->oob = v;
	}
	return 0;
}

/* "Avg bus bandwidth    : 123.456" */
static int comment_avg(struct nt_stream *st, const char *s, size_t n)
{
	struct tok t;
	if (value_after_colon(s, n, &t) && !tok_double(&t, &st->avg))
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
		copy_bounded(st->rccl_version, sizeof(st->rccl_version), s + i, e - i);
	return 1;
}

/* A header or footer line (s: after its '#', if it had one). */
static void parse_comment(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n)
{
	while (n && *s == ' ')
		s++, n--;
	const struct comment_kind *k = comment_kind_of(s, n);
	if (k) {
		if ((k->flags & NT_BEGINS) && stream_has_rows(st))
			nt_stream_finish(c, st);
		if (k->read && k->read(st, s, n) == 1) {
			nt_stream_finish(c, st);
			k->read(st, s, n);
		}
		if (k->flags & NT_ENDS)
			nt_stream_finish(c, st);
	}
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

/* An RCCL banner, or a header or footer line whose '#' was lost: read, and 1; 0 when s is neither. */
static int text_header_line(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n)
{
	if (rccl_banner(st, s, n))
		return 1;
	if (!stripped_comment(s, n))
		return 0;
	parse_comment(c, st, s, n);
	return 1;
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
	op_from_program(w, n, name, sizeof(name));
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
				if (!stream_has_rows(c->streams[k]))
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
			add_host(c->known_hosts, &c->nknown, s, hn);
		return 1;
	}
	if (at < 0)
		return 0;
	*n = (size_t)at;
	*cut = 1;
	return is_blank(s, *n);
}

/*
 * One line of text output: launcher prefixes off, NCCL log lines skipped
 * (the part of a row printed before one is kept for later), then header
 * comments, rows, or an unparsed line.
 */
static void process_line(struct nt_ctx *c, char *line, size_t len)
{
	struct nw_lp lp;
	size_t n;
	size_t off = nw_lp_strip(line, len, &n, &lp);
	char *s = line + off;
	while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (!n)
		return;
	struct nt_stream *st = nt_get_stream(c, lp.tag);
	if (!st->cmd_op[0] && c->cmd_op[0] && !stream_has_rows(st))
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
		parse_comment(c, st, s + 1, n - 1);
		return;
	}
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	int rowish = i < n && s[i] >= '0' && s[i] <= '9';
	if (!rowish && !st->plen && text_header_line(c, st, s + i, n - i))
		return;
	if (cut && (rowish || st->plen)) {
		pending_add(c, st, s, n);
		return;
	}
	if (st->plen) {
		pending_add(c, st, s, n);
		if (st->plen && parse_row(st, st->pending, st->plen) < 0)
			c->unparsed++;
		st->plen = 0;
		return;
	}
	if (!rowish)
		command_line(c, s + i, n - i);
	if (!rowish || parse_row(st, s, n) < 0)
		c->unparsed++;
}

/* Pull string/number fields out of nccl-tests' -J document. */
const char *nt_jstr(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

double nt_jnum(const json_t *o, const char *k, double dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

static int json_body(const json_t *b, struct nw_row *r)
{
	if (!json_is_object(b))
		return -1;
	const json_t *t = json_object_get(b, "time");
	if (!t)
		t = json_object_get(b, "cpu_time");
	if (!json_is_number(t))
		return -1;
	r->time_us = json_number_value(t);
	r->algbw_gbs = nt_jnum(b, "alg_bw", 0);
	r->busbw_gbs = nt_jnum(b, "bus_bw", 0);
	const json_t *w = json_object_get(b, "nwrong");
	double wv = json_is_number(w) ? json_number_value(w) : -1;
	r->wrong = wv >= 0 && wv < 9.2e18 ? (int64_t)wv : -1;
	return 0;
}

/*
 * A placement's per-iteration object (-I 1: "times_us" and
 * "skipped_iterations") into r (iter_us allocated); nothing when absent.
 */
static void json_iters(const json_t *pi, struct nw_row *r)
{
	const json_t *times = json_object_get(pi, "times_us");
	size_t n = json_array_size(times);
	if (!n || n > 100000000)
		return;
	r->iter_us = nw_calloc(n, sizeof(double));
	size_t i;
	const json_t *v;
	json_array_foreach(times, i, v)
		r->iter_us[i] = json_is_number(v) ? json_number_value(v) : 0;
	r->niter = (int)n;
	double skip = nt_jnum(pi, "skipped_iterations", 0);
	r->iter_skip = skip > 0 && skip < (double)n ? (int)skip : 0;
}

/*
 * The collective of a -J document from its "args": nccl-tests' program
 * ("./build/all_reduce_perf"), or for ncclwatch's own -J ("ncclwatch",
 * "bench", ...) the one collective of --op (none by default: all_reduce;
 * several: unknown, import's --op says which).
 */
static void json_op(const json_t *args, char *op, size_t len)
{
	const char *a0 = json_string_value(json_array_get(args, 0));
	if (!a0)
		return;
	size_t n = strlen(a0);
	if (!(n >= 9 && !strcmp(a0 + n - 9, "ncclwatch") && (n == 9 || a0[n - 10] == '/'))) {
		op_from_program(a0, n, op, len);
		return;
	}
	const char *ops = "all_reduce";
	for (size_t i = 1; i < json_array_size(args); i++) {
		const char *a = json_string_value(json_array_get(args, i));
		if (a && !strncmp(a, "--op=", 5))
			ops = a + 5;
		else if (a && !strcmp(a, "--op") && json_is_string(json_array_get(args, i + 1)))
			ops = json_string_value(json_array_get(args, ++i));
	}
	nw_strlcpy(op, strchr(ops, ',') ? "" : ops, len);
}

/* One entry of a -J document's "results" into st's tables (bad entries counted as unparsed). */
static void json_result(struct nt_ctx *c, struct nt_stream *st, const json_t *d)
{
	struct nw_row base;
	memset(&base, 0, sizeof(base));
	double size = nt_jnum(d, "size", -1), count = nt_jnum(d, "count", -1);
	const char *type = nt_jstr(d, "type"), *redop = nt_jstr(d, "redop");
	if (size < 0 || size > 1.8e19 || count < 0 || count > 1.8e19 || !type) {
		c->unparsed++;
		return;
	}
	base.size_bytes = (uint64_t)size;
	base.count = (uint64_t)count;
	nw_strlcpy(base.dtype, type, sizeof(base.dtype));
	nw_strlcpy(base.redop, redop ? redop : "none", sizeof(base.redop));
	const json_t *root = json_object_get(d, "root");
	base.root = -1;
	if (json_is_string(root)) {
		long r;
		const char *rs = json_string_value(root);
		while (*rs == ' ')
			rs++;
		if (!nw_parse_long(rs, -1, 1000000, &r, "root", NULL, 0))
			base.root = (int)r;
	} else if (json_is_number(root)) {
		double r = json_number_value(root);
		base.root = r >= -1 && r <= 1000000 ? (int)r : -1;
	}
	struct nw_row oop = base, ip = base;
	ip.inplace = 1;
	int ho = !json_body(json_object_get(d, "out_of_place"), &oop);
	int hi = !json_body(json_object_get(d, "in_place"), &ip);
	if (ho)
		json_iters(json_object_get(d, "out_of_place_per_iter"), &oop);
	if (hi)
		json_iters(json_object_get(d, "in_place_per_iter"), &ip);
	if ((!ho && !hi) || nt_add_rows(st, ho ? &oop : NULL, hi ? &ip : NULL, NULL) < 0) {
		c->unparsed++;
		nw_row_release(&oop);
		nw_row_release(&ip);
	}
}

/* What a -J document says of its run: "start_time", "args" (the command line), "env" ("NAME=value" strings). */
static void json_file_facts(struct nt_stream *st, const json_t *doc)
{
	const char *t = nt_jstr(doc, "start_time");
	if (t)
		nw_strlcpy(st->start_time, t, sizeof(st->start_time));
	size_t i, used = 0;
	const json_t *v;
	json_array_foreach(json_object_get(doc, "args"), i, v) {
		if (!json_is_string(v) || used + 1 >= sizeof(st->cmdline))
			continue;
		int k = snprintf(st->cmdline + used, sizeof(st->cmdline) - used, "%s%s", used ? " " : "", json_string_value(v));
		if (k > 0)
			used = used + (size_t)k < sizeof(st->cmdline) ? used + (size_t)k : sizeof(st->cmdline) - 1;
	}
	if (!json_is_array(json_object_get(doc, "env")))
		return;
	st->env = json_object();
	json_array_foreach(json_object_get(doc, "env"), i, v) {
		const char *e = json_is_string(v) ? json_string_value(v) : NULL;
		const char *eq = e ? strchr(e, '=') : NULL;
		if (!eq || eq == e || eq - e >= 128)
			continue;
		char name[128];
		copy_bounded(name, sizeof(name), e, (size_t)(eq - e));
		json_object_set_new(st->env, name, json_string(eq + 1));
	}
}

/* One nccl-tests -J document into one run on a stream's scratch state. */
static void parse_json_doc(struct nt_ctx *c, const json_t *doc)
{
	struct nt_stream *st = nt_get_stream(c, "\x01json");
	stream_reset(st);
	json_op(json_object_get(doc, "args"), st->op, sizeof(st->op));
	json_file_facts(st, doc);
	double code = nt_jnum(doc, "nccl_version", -1);
	if (code > 0 && code < 1e7)
		st->nccl_code = (int)code;
	const json_t *cfg = json_object_get(doc, "config");
	st->nthread = (long)nt_jnum(cfg, "nthreads", -1);
	st->ngpus = (long)nt_jnum(cfg, "ngpus", -1);
	st->iters = (long)nt_jnum(cfg, "iterations", -1);
	st->warmup = (long)nt_jnum(cfg, "warmup_iters", -1);
	st->validation = (long)nt_jnum(cfg, "validation", -1);
	st->graph = (long)nt_jnum(cfg, "graph", -1);
	size_t i;
	const json_t *d;
	json_array_foreach(json_object_get(cfg, "devices"), i, d) {
		double rank = nt_jnum(d, "rank", -1);
		if (rank >= 0 && rank < 1e9 && !note_rank(st, (long long)rank))
			continue;
		const char *h = nt_jstr(d, "hostname"), *g = nt_jstr(d, "device_info");
		if (h)
			add_host(st->hosts, &st->nhosts, h, strlen(h));
		if (g)
			add_gpu(st, g, strlen(g));
	}
	const json_t *oob = json_object_get(doc, "out_of_bounds");
	if (json_is_number(json_object_get(oob, "count"))) {
		st->have_oob = 1;
		st->oob = (int64_t)nt_jnum(oob, "count", 0);
	}
	const json_t *avg = json_object_get(doc, "average_bus_bandwidth");
	if (json_is_number(json_object_get(avg, "bandwidth"))) {
		st->have_avg = 1;
		st->avg = nt_jnum(avg, "bandwidth", 0);
	}
	json_array_foreach(json_object_get(doc, "results"), i, d)
		json_result(c, st, d);
	nt_stream_finish(c, st);
}

/* One JSON value of the input: a -J document, an rccl-tests record, or a list of records. */
static void parse_json_value(struct nt_ctx *c, struct nt_jsonl *jl, const json_t *v)
{
	size_t i;
	const json_t *e;
	if (nt_jsonl_is_record(v)) {
		nt_jsonl_add(c, jl, v);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (nt_jsonl_is_record(e))
				nt_jsonl_add(c, jl, e);
			else
				c->unparsed++;
	} else if (json_is_object(v)) {
		nt_jsonl_end(c, jl);
		parse_json_doc(c, v);
	} else {
		c->unparsed++;
	}
}

/*
 * Where reading resumes after a broken value at buf[off]: past its line
 * when it is one of rccl-tests' records (records came before it, or its
 * line names their keys), so the records after it are read; 0 to stop (a
 * broken -J document ends the reading).
 */
static size_t json_resume(const struct nt_jsonl *jl, const char *buf, size_t off, size_t len)
{
	const char *nl = memchr(buf + off, '\n', len - off);
	size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
	if (!nl || (!jl->records && !memmem(buf + off, n, "\"busBw\"", 7) && !memmem(buf + off, n, "\"inPlace\"", 9)))
		return 0;
	return off + n + 1;
}

/*
 * One or more -J documents one after the other, or rccl-tests' records
 * (one a line, or a list of them); a broken value is counted and ends the
 * reading, but for a broken record line, which is skipped.
 */
static int parse_json(struct nt_ctx *c, const char *buf, size_t len)
{
	struct nt_jsonl jl;
	memset(&jl, 0, sizeof(jl));
	size_t off = 0;
	while (off < len) {
		while (off < len && (buf[off] == ' ' || buf[off] == '\n' || buf[off] == '\r' || buf[off] == '\t'))
			off++;
		if (off >= len)
			break;
		json_error_t jerr;
		json_t *doc = json_loadb(buf + off, len - off, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!doc) {
			c->unparsed++;
			off = json_resume(&jl, buf, off, len);
			if (!off)
				break;
			continue;
		}
		parse_json_value(c, &jl, doc);
		json_decref(doc);
		if (jerr.position <= 0)
			break;
		off += (size_t)jerr.position;
	}
	nt_jsonl_end(c, &jl);
	return 0;
}

/* End every stream's table and hand the runs to the caller; returns their number. */
static int ctx_finish(struct nt_ctx *c, struct nw_run **runs, size_t *unparsed)
{
	if (c->seen)
		memset(c->seen, 0, sizeof(*c->seen));
	for (int i = 0; i < c->nstreams; i++) {
		nt_stream_finish(c, c->streams[i]);
		free(c->streams[i]);
	}
	if (unparsed)
		*unparsed = c->unparsed;
	*runs = c->runs;
	return (int)c->nruns;
}

/* Whether s starts a JSON input: '{', or '[' then blanks then '{' (a list of rccl-tests records). */
static int json_start(const char *s, size_t n)
{
	if (!n || (s[0] != '{' && s[0] != '['))
		return 0;
	size_t i = 1;
	while (s[0] == '[' && i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
		i++;
	return s[0] == '{' || (i < n && s[i] == '{');
}

/* JSON when the first non-blank bytes start one (json_start), else text, line by line (lines over 8 KB are unparsed). */
static int parse_buf(const char *buf, size_t len, const char *name, struct nw_run **runs, size_t *unparsed,
                     struct nw_nt_seen *seen)
{
	struct nt_ctx c;
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.seen = seen;
	size_t first = 0;
	while (first < len && (buf[first] == ' ' || buf[first] == '\n' || buf[first] == '\r' || buf[first] == '\t'))
		first++;
	if (json_start(buf + first, len - first)) {
		parse_json(&c, buf + first, len - first);
	} else {
		char *line = nw_malloc(NT_MAX_LINE);
		size_t off = 0;
		while (off < len) {
			const char *nl = memchr(buf + off, '\n', len - off);
			size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
			if (n >= NT_MAX_LINE) {
				c.unparsed++;
			} else {
				memcpy(line, buf + off, n);
				line[n] = '\0';
				process_line(&c, line, n);
			}
			off += n + (nl ? 1 : 0);
		}
		free(line);
	}
	return ctx_finish(&c, runs, unparsed);
}

int nw_nt_parse_buf(const char *buf, size_t len, const char *name, struct nw_run **runs, size_t *unparsed,
                    char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return parse_buf(buf, len, name, runs, unparsed, NULL);
}

/*
 * Read all of a stream into memory after pre[0..npre) (bytes already read,
 * at most 64 KiB); NULL with errno set on a read error,
 * or with errno EFBIG when it holds more than NT_MAX_INPUT bytes (a -J
 * JSON document is read whole; text is streamed instead).
 */
static char *read_stream(FILE *f, const char *pre, size_t npre, size_t *len_out)
{
	size_t cap = 65536, len = npre;
	char *buf = nw_malloc(cap);
	memcpy(buf, pre, npre);
	for (;;) {
		if (len == cap) {
			if (cap >= NT_MAX_INPUT) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			buf = nw_realloc(buf, cap);
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return NULL;
	}
	*len_out = len;
	return buf;
}

/*
 * Text from f, line by line, without holding the input: first[0..nfirst)
 * is what was already read of it (less than NT_MAX_LINE). Returns the runs'
 * number, or -1 on a read error (errno set).
 */
static int parse_text_stream(FILE *f, const char *first, size_t nfirst, const char *name, struct nw_run **runs,
                             size_t *unparsed, struct nw_nt_seen *seen)
{
	struct nt_ctx c;
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.seen = seen;
	char *line = nw_malloc(NT_MAX_LINE);
	size_t n = 0, used = 0;
	int skipping = 0; /* inside a line over NT_MAX_LINE */
	for (;;) {
		int ch = used < nfirst ? (unsigned char)first[used++] : getc(f);
		if (ch == EOF || ch == '\n') {
			if (!skipping && (n || ch == '\n')) {
				line[n] = '\0';
				process_line(&c, line, n);
			}
			skipping = 0;
			n = 0;
			if (ch == EOF)
				break;
			continue;
		}
		if (skipping)
			continue;
		if (n + 1 >= NT_MAX_LINE) {
			c.unparsed++;
			skipping = 1;
			continue;
		}
		line[n++] = (char)ch;
	}
	free(line);
	int bad = ferror(f);
	int nr = ctx_finish(&c, runs, unparsed);
	if (bad) {
		for (int i = 0; i < nr; i++)
			nw_run_release(&(*runs)[i]);
		free(*runs);
		*runs = NULL;
		errno = EIO;
		return -1;
	}
	return nr;
}

int nw_nt_parse_path(const char *path, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen)
{
	return nw_nt_parse_path_seen(path, runs, unparsed, NULL, err, errlen);
}

/*
 * After a first '[' read from f: it and the blanks that follow into buf
 * (room for len bytes; *n is how many it holds). Returns the next byte,
 * which the caller puts back: '{' when a JSON list starts, else text.
 */
static int peek_list(FILE *f, char *buf, size_t len, size_t *n)
{
	*n = 0;
	buf[(*n)++] = '[';
	int ch;
	while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
		if (*n < len)
			buf[(*n)++] = (char)ch;
	return ch;
}

int nw_nt_parse_stream_seen(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                        char *err, size_t errlen)
{
	*runs = NULL;
	char ws[256];
	size_t nws = 0;
	int ch;
	while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
		if (ch == '\n')
			nws = 0;
		else if (nws < sizeof(ws))
			ws[nws++] = (char)ch;
	}
	if (ch == '[') /* a list of rccl-tests records, or a launcher tag ("[1,0]<stdout>:") starting text */
		ch = peek_list(f, ws, sizeof(ws), &nws);
	int n;
	if (ch == '{') {
		ungetc(ch, f);
		size_t len = 0;
		char *buf = read_stream(f, ws, nws, &len);
		if (!buf)
			n = nw_seterr(err, errlen, "cannot read '%s': %s", name,
			              errno == EFBIG ? "a JSON document over 1 GiB" : strerror(errno));
		else
			n = parse_buf(buf, len, name, runs, unparsed, seen);
		free(buf);
	} else {
		if (ch != EOF)
			ungetc(ch, f);
		n = parse_text_stream(f, ws, nws, name, runs, unparsed, seen);
		if (n < 0)
			nw_seterr(err, errlen, "cannot read '%s': %s", name, strerror(errno));
	}
	return n;
}

int nw_nt_parse_path_seen(const char *path, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                          char *err, size_t errlen)
{
	int is_stdin = !strcmp(path, "-");
	*runs = NULL;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (!f)
		return nw_seterr(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	int n = nw_nt_parse_stream_seen(f, is_stdin ? "(stdin)" : path, runs, unparsed, seen, err, errlen);
	if (!is_stdin)
		fclose(f);
	return n;
}

int nw_nt_parse_stream(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen)
{
	return nw_nt_parse_stream_seen(f, name, runs, unparsed, NULL, err, errlen);
}
