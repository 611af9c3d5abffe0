/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_stream: the streams of the nccl-tests reader and the tables on them.
 * A stream collects what a header said (hosts, GPUs, ranks, versions) and
 * the rows of one table per process printing it; when its run ends, each
 * table becomes a run of the result, its header filled from the stream.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/nt_int.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Forget what a stream said (its tables are released), keeping its tag. */
void nt_stream_reset(struct nt_stream *st)
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

/* "22809" -> "2.28.9"; codes before 2.9 were major*1000 + minor*100 + patch. */
void nt_version_from_code(long code, char *buf, size_t len)
{
	if (code >= 10000)
		snprintf(buf, len, "%ld.%ld.%ld", code / 10000, (code / 100) % 100, code % 100);
	else if (code >= 1000)
		snprintf(buf, len, "%ld.%ld.%ld", code / 1000, (code / 100) % 10, code % 100);
	else
		buf[0] = '\0';
}

/* "./build/all_reduce_perf" -> "all_reduce"; keeps unknown names as they are. */
void nt_op_from_program(const char *s, size_t n, char *op, size_t len)
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

void nt_add_host(char hosts[][64], int *nhosts, const char *h, size_t n)
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

void nt_add_gpu(struct nt_stream *st, const char *name, size_t n)
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

/* Count a rank of the device list; returns 0 when it was listed already. */
int nt_note_rank(struct nt_stream *st, long long rank)
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
	char why[160] = "";
	if (st->short_rows)
		nw_strlcpy(why, "rows missing columns were left out", sizeof(why));
	else if (st->whole_rows && st->half_rows) /* a table of both placements with a row cut after the first */
		snprintf(why, sizeof(why), "%d row%s only %s out-of-place half (cut short): %s in-place figures are missing",
		         st->half_rows, st->half_rows == 1 ? " has" : "s have", st->half_rows == 1 ? "its" : "their",
		         st->half_rows == 1 ? "its" : "their");
	else if (!st->have_avg && !st->no_footer)
		nw_strlcpy(why, "the table has no footer", sizeof(why));
	if (why[0]) {
		json_object_set_new(x, "incomplete", json_true());
		json_object_set_new(x, "incomplete_reason", json_string(why));
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
		nt_version_from_code(st->nccl_code, h->nccl_version, sizeof(h->nccl_version));
	nw_strlcpy(h->input, c->name ? c->name : "", sizeof(h->input));
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int i = 0; i < st->nhosts; i++)
		nw_strbuf_addf(&sb, "%s%s", i ? "," : "", st->hosts[i]);
	nw_strlcpy(h->host, sb.buf, sizeof(h->host));
	nw_strbuf_reset(&sb);
	for (int i = 0; i < st->ngpunames; i++)
		nw_strbuf_addf(&sb, "%s%d x %s", i ? ", " : "", st->gpus[i].n, st->gpus[i].name);
	nw_strlcpy(h->gpus, sb.buf, sizeof(h->gpus));
	nw_strbuf_release(&sb);
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
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int i = 0; i < st->nhosts; i++)
		nw_strbuf_addf(&sb, "%s%s", i ? ", " : "", st->hosts[i]);
	nw_strlcpy(c->seen->hosts, sb.buf, sizeof(c->seen->hosts));
	nw_strbuf_release(&sb);
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
		if (nt_parse_row(st, st->pending, st->plen) < 0)
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
	nt_stream_reset(st);
}

void nt_stream_close_table(struct nt_ctx *c, struct nt_stream *st)
{
	st->footer_read = 0;
	if (st->nsub != 1 || !st->sub[0].nrows || !st->have_avg || st->plen)
		return;
	merge_zero_rows(st);
	fill_header(c, st, &st->sub[0]);
	push_run(c, &st->sub[0]);
	nw_run_release(&st->sub[0]);
	st->nsub = 0;
	st->have_avg = st->have_oob = 0;
	st->avg = 0;
	st->oob = 0;
	st->short_rows = 0;
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
	nt_stream_reset(st);
	c->streams[c->nstreams++] = st;
	return st;
}

/* Whether a stream's table has rows yet. */
int nt_stream_has_rows(const struct nt_stream *st)
{
	return st->nsub > 1 || (st->nsub == 1 && st->sub[0].nrows > 0);
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

void nt_copy_bounded(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}
