/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_jsonl: rccl-tests' JSON output ("--output_file F", JSON by default).
 * One object per size and placement, one per line (a JSON list of them
 * since rccl-tests of mid 2025):
 *   {"#wrong":"0","algBw":0.053,"busBw":0.080,"gpus":4,"inPlace":0,
 *    "name":"AllReduce","redop":"sum","size":1024,"time":19.18,"type":"float"}
 * Built with MPI, "gpus" is replaced by "ranks" (processes), "gpusPerRank",
 * "ranksPerNode" and "nodes". "time" is in microseconds and the bandwidths
 * in GB/s, as in the text table; "#wrong" is a string ("0", "N/A").
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "parse/nt_int.h"
#include "util/util.h"

#define JSONL_TAG "\x01jsonl"

int nt_jsonl_is_record(const json_t *v)
{
	return json_is_object(v) && json_is_string(json_object_get(v, "name")) && json_object_get(v, "size") &&
	       (json_object_get(v, "busBw") || json_object_get(v, "inPlace"));
}

/* "#wrong" as rccl-tests writes it (a string) or as a number; -1 for "N/A" or anything else. */
static int64_t record_wrong(const json_t *v)
{
	double w = -1;
	if (json_is_number(v)) {
		w = json_number_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		w = strtod(s, &end);
		if (end == s || *end)
			w = -1;
	}
	return w >= 0 && w < 9.2e18 ? (int64_t)w : -1;
}

/* "root" of a rooted collective, number or string; -1 when absent or not a rank. */
static int record_root(const json_t *v)
{
	double r = -1;
	if (json_is_number(v))
		r = json_number_value(v);
	else if (json_is_string(v))
		r = strtod(json_string_value(v), NULL);
	return r >= -1 && r <= 1000000 ? (int)r : -1;
}

/* One record's measurement into r (count left for the caller); -1 when a needed key is missing or out of range. */
static int record_row(const json_t *rec, struct nw_row *r)
{
	memset(r, 0, sizeof(*r));
	double size = nt_jnum(rec, "size", -1), t = nt_jnum(rec, "time", -1);
	const char *type = nt_jstr(rec, "type"), *redop = nt_jstr(rec, "redop");
	if (!(size >= 0 && size <= 1.8e19) || !(t >= 0) || !type)
		return -1;
	r->size_bytes = (uint64_t)size;
	r->time_us = t;
	r->algbw_gbs = nt_jnum(rec, "algBw", 0);
	r->busbw_gbs = nt_jnum(rec, "busBw", 0);
	r->wrong = record_wrong(json_object_get(rec, "#wrong"));
	const json_t *ip = json_object_get(rec, "inPlace");
	r->inplace = json_is_true(ip) || (json_is_number(ip) && json_number_value(ip) != 0);
	r->root = record_root(json_object_get(rec, "root"));
	nw_strlcpy(r->dtype, type, sizeof(r->dtype));
	nw_strlcpy(r->redop, redop ? redop : "none", sizeof(r->redop));
	return 0;
}

/* The ranks of a record: "gpus", or "ranks" (processes) times "gpusPerRank"; -1 when it says neither. */
static long record_ranks(const json_t *rec)
{
	double g = nt_jnum(rec, "gpus", -1);
	if (g <= 0) {
		double procs = nt_jnum(rec, "ranks", -1), per = nt_jnum(rec, "gpusPerRank", 1);
		g = procs > 0 && per > 0 ? procs * per : -1;
	}
	return g > 0 && g <= INT_MAX ? (long)g : -1;
}

/* A new run on the stream st for the collective name, with what its first record says of the job. */
static void start_run(struct nt_stream *st, struct nt_jsonl *jl, const char *name, const json_t *rec)
{
	nw_strlcpy(jl->name, name, sizeof(jl->name));
	const struct nw_coll *coll = nw_coll_find(name);
	nw_strlcpy(st->op, coll ? coll->name : name, sizeof(st->op));
	st->rccl = 1;
	st->no_footer = 1;
	st->nranks_declared = record_ranks(rec);
	double nodes = nt_jnum(rec, "nodes", -1);
	st->nnodes_declared = nodes > 0 && nodes <= INT_MAX ? (long)nodes : 0;
}

/* The element count nccl-tests prints for r's size (per rank for split collectives); 0 for an unknown type. */
static uint64_t row_count(const struct nt_stream *st, const struct nw_row *r)
{
	int t = nw_dtype_find(r->dtype);
	if (t < 0)
		return 0;
	size_t elem = nw_dtype_size((enum nw_dtype)t);
	const struct nw_coll *coll = nw_coll_find(st->op);
	if (!coll || st->nranks_declared <= 0)
		return r->size_bytes / elem;
	return nw_coll_count(coll->op, r->size_bytes, elem, (int)st->nranks_declared, NULL);
}

/* Rows into the run being read (oop or ip may be NULL); a row that fits no table is counted unparsed. */
static void put_rows(struct nt_ctx *c, struct nt_stream *st, struct nw_row *oop, struct nw_row *ip)
{
	if (nt_add_rows(st, oop, ip, NULL) < 0)
		c->unparsed += (oop != NULL) + (ip != NULL);
}

/* The waiting out-of-place row, alone: its in-place twin did not follow. */
static void flush_oop(struct nt_ctx *c, struct nt_stream *st, struct nt_jsonl *jl)
{
	if (!jl->have_oop)
		return;
	put_rows(c, st, &jl->oop, NULL);
	jl->have_oop = 0;
}

/* Whether an in-place row is the twin of the waiting out-of-place one (same size, type, op and root). */
static int twins(const struct nw_row *oop, const struct nw_row *ip)
{
	return oop->size_bytes == ip->size_bytes && !strcmp(oop->dtype, ip->dtype) && !strcmp(oop->redop, ip->redop) &&
	       oop->root == ip->root;
}

void nt_jsonl_add(struct nt_ctx *c, struct nt_jsonl *jl, const json_t *rec)
{
	const char *name = nt_jstr(rec, "name");
	struct nw_row r;
	if (!name || !*name || record_row(rec, &r) < 0) {
		c->unparsed++;
		return;
	}
	jl->records++;
	if (!jl->name[0] || strncmp(jl->name, name, sizeof(jl->name) - 1)) {
		nt_jsonl_end(c, jl);
		start_run(nt_get_stream(c, JSONL_TAG), jl, name, rec);
	}
	struct nt_stream *st = nt_get_stream(c, JSONL_TAG);
	r.count = row_count(st, &r);
	if (!r.inplace) {
		flush_oop(c, st, jl);
		jl->oop = r;
		jl->have_oop = 1;
	} else if (jl->have_oop && twins(&jl->oop, &r)) {
		put_rows(c, st, &jl->oop, &r);
		jl->have_oop = 0;
	} else {
		flush_oop(c, st, jl);
		put_rows(c, st, NULL, &r);
	}
}

void nt_jsonl_end(struct nt_ctx *c, struct nt_jsonl *jl)
{
	if (!jl->name[0])
		return;
	struct nt_stream *st = nt_get_stream(c, JSONL_TAG);
	flush_oop(c, st, jl);
	nt_stream_finish(c, st);
	jl->name[0] = '\0';
}
