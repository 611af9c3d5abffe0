/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_json: nccl-tests' -J JSON documents (one or several one after the
 * other) into runs, and the input of rccl-tests' JSON records, which it
 * hands record by record to nt_jsonl.c.
 */
#include <string.h>

#include "parse/nt_int.h"
#include "util/strbuf.h"
#include "util/util.h"

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
		nt_op_from_program(a0, n, op, len);
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
	size_t i;
	const json_t *v;
	struct nw_strbuf cmd;
	nw_strbuf_init(&cmd);
	json_array_foreach(json_object_get(doc, "args"), i, v)
		if (json_is_string(v))
			nw_strbuf_addf(&cmd, "%s%s", cmd.len ? " " : "", json_string_value(v));
	nw_strlcpy(st->cmdline, cmd.buf, sizeof(st->cmdline));
	nw_strbuf_release(&cmd);
	if (!json_is_array(json_object_get(doc, "env")))
		return;
	st->env = json_object();
	json_array_foreach(json_object_get(doc, "env"), i, v) {
		const char *e = json_is_string(v) ? json_string_value(v) : NULL;
		const char *eq = e ? strchr(e, '=') : NULL;
		if (!eq || eq == e || eq - e >= 128)
			continue;
		char name[128];
		nt_copy_bounded(name, sizeof(name), e, (size_t)(eq - e));
		json_object_set_new(st->env, name, json_string(eq + 1));
	}
}

/* One nccl-tests -J document into one run on a stream's scratch state. */
static void parse_json_doc(struct nt_ctx *c, const json_t *doc)
{
	struct nt_stream *st = nt_get_stream(c, "\x01json");
	nt_stream_reset(st);
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
		if (rank >= 0 && rank < 1e9 && !nt_note_rank(st, (long long)rank))
			continue;
		const char *h = nt_jstr(d, "hostname"), *g = nt_jstr(d, "device_info");
		if (h)
			nt_add_host(st->hosts, &st->nhosts, h, strlen(h));
		if (g)
			nt_add_gpu(st, g, strlen(g));
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
int nt_parse_json(struct nt_ctx *c, const char *buf, size_t len)
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
