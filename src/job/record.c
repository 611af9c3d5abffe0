/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record: a job as a result run (source "job"), so that history keeps it
 * and compare diffs two jobs (job.h). A row per op and size bucket over
 * every rank of every node: the size is the bucket's smallest byte count,
 * the time the mean execution time of its timed operations (kernel times,
 * else the network part from proxy events), busbw over them with each
 * communicator's factor. The fingerprint holds what differs between jobs:
 * NCCL's version and library, the NCCL_* and launcher variables (as run
 * set them and as NCCL's log says it read them), the transports NCCL chose
 * (as "topology"), the nodes (as "host") and the job's shape.
 */
#include "job/job_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "store/store.h"
#include "util/strbuf.h"
#include "util/util.h"

struct acc {
	uint64_t count, bytes, t_count[2], t_bytes[2], t_ns[2];
	double fb[2];
};

static void add_rank(struct acc (*a)[NWS_NBUCKETS], const json_t *r)
{
	int nranks = (int)json_integer_value(json_object_get(r, "nranks"));
	const json_t *e;
	size_t i;
	json_array_foreach(json_object_get(r, "per_op"), i, e) {
		const char *name = json_string_value(json_array_get(e, 0));
		unsigned op = jv_op_of(name ? name : "");
		json_int_t b = json_integer_value(json_array_get(e, 1));
		if (b < 0 || b >= NWS_NBUCKETS)
			continue;
		struct acc *x = &a[op][b];
		x->count += (uint64_t)json_integer_value(json_array_get(e, 2));
		x->bytes += (uint64_t)json_integer_value(json_array_get(e, 3));
		for (int k = 0; k < 2; k++) {
			uint64_t tb = (uint64_t)json_integer_value(json_array_get(e, 5 + 3 * k));
			x->t_count[k] += (uint64_t)json_integer_value(json_array_get(e, 4 + 3 * k));
			x->t_bytes[k] += tb;
			x->t_ns[k] += (uint64_t)json_integer_value(json_array_get(e, 6 + 3 * k));
			x->fb[k] += nws_busbw_factor(op, nranks) * (double)tb;
		}
	}
}

/* The data type most of op's operations had in the timelines, by nccl-tests' name ("float"); "unknown" when none. */
static const char *dtype_of(const struct nw_job_view *v, unsigned op)
{
	uint64_t n[NW_NDTYPES] = { 0 };
	for (size_t i = 0; i < v->nranks; i++)
		for (size_t k = 0; k < v->ranks[i].ntl; k++)
			if (v->ranks[i].tl[k].op == op && v->ranks[i].tl[k].dtype < NW_NDTYPES)
				n[v->ranks[i].tl[k].dtype]++;
	int best = -1;
	for (int d = 0; d < NW_NDTYPES; d++)
		if (n[d] && (best < 0 || n[d] > n[best]))
			best = d;
	return best < 0 ? "unknown" : nw_dtype_name((enum nw_dtype)best);
}

static void add_rows(const struct nw_job_view *v, struct nw_run *run)
{
	struct acc(*a)[NWS_NBUCKETS] = nw_calloc(NWS_NOPS, sizeof(*a));
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *r;
		size_t i;
		json_array_foreach(json_object_get(v->nodes[n].part, "ranks"), i, r)
			add_rank(a, r);
	}
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		const char *dt = dtype_of(v, op);
		int d = nw_dtype_find(dt);
		size_t esize = d >= 0 ? nw_dtype_size((enum nw_dtype)d) : 1;
		for (unsigned b = 0; b < NWS_NBUCKETS; b++) {
			const struct acc *x = &a[op][b];
			int k = x->t_count[0] ? 0 : 1;
			if (!x->count || !x->t_count[k] || !x->t_ns[k])
				continue;
			struct nw_row row;
			memset(&row, 0, sizeof(row));
			nw_strlcpy(row.op, nws_op_name(op), sizeof(row.op));
			nw_strlcpy(row.dtype, dt, sizeof(row.dtype));
			nw_strlcpy(row.redop, "-", sizeof(row.redop));
			row.root = -1;
			row.size_bytes = nws_bucket_lo(b);
			row.count = row.size_bytes / esize;
			row.nranks = v->world;
			row.time_us = (double)x->t_ns[k] / (double)x->t_count[k] / 1e3;
			row.algbw_gbs = (double)x->t_bytes[k] / (double)x->t_ns[k];
			row.busbw_gbs = x->fb[k] / (double)x->t_ns[k];
			row.wrong = -1;
			nw_run_add(run, &row);
		}
	}
	free(a);
}

/* NCCL's transports as one line: "NET/IB/GDRDMA: 8 pairs (8 between nodes); P2P/IPC: 24 pairs". */
static void transports(const json_t *nccl, char *out, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	const json_t *t;
	size_t i;
	json_array_foreach(json_object_get(nccl, "transports"), i, t) {
		nw_strbuf_addf(&sb, "%s%s: %" JSON_INTEGER_FORMAT " pairs", i ? "; " : "", jv_str(t, "transport"),
		               json_integer_value(json_object_get(t, "pairs")));
		json_int_t inter = json_integer_value(json_object_get(t, "inter_node_pairs"));
		if (inter > 0)
			nw_strbuf_addf(&sb, " (%" JSON_INTEGER_FORMAT " between nodes)", inter);
	}
	nw_strlcpy(out, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* The first node's NCCL version: as run found it, else as its log printed it ("2.28.9+cuda13.0" -> "2.28.9"). */
static void nccl_version(const json_t *part, char *out, size_t len)
{
	nw_strlcpy(out, jv_str(json_object_get(part, "mode"), "nccl_version"), len);
	if (out[0])
		return;
	const json_t *v = json_array_get(json_object_get(json_object_get(part, "nccl"), "versions"), 0);
	nw_strlcpy(out, jv_str(v, "version"), len);
	out[strcspn(out, "+")] = '\0';
}

static json_t *fingerprint(const struct nw_job_view *v, const struct nw_run_header *h)
{
	const json_t *p0 = v->nodes[0].part;
	json_t *env = json_deep_copy(json_object_get(p0, "env"));
	if (!json_is_object(env)) {
		json_decref(env);
		env = json_object();
	}
	const json_t *e;
	size_t i;
	for (size_t n = 0; n < v->nnodes; n++)
		json_array_foreach(json_object_get(json_object_get(v->nodes[n].part, "nccl"), "env"), i, e)
			if (!json_object_get(env, jv_str(e, "name")))
				json_object_set_new(env, jv_str(e, "name"), json_string(jv_str(e, "value")));
	json_object_del(env, "NCCL_DEBUG_FILE");
	json_t *fp = json_pack("{s:o, s:s, s:s, s:s}", "env", env, "job", v->job, "cmdline", h->cmdline, "time", h->time);
	char topo[1024];
	transports(json_object_get(p0, "nccl"), topo, sizeof(topo));
	if (topo[0])
		json_object_set_new(fp, "topology", json_string(topo));
	nw_fingerprint_fill(fp, h);
	return fp;
}

void nw_job_to_run(const struct nw_job_view *v, struct nw_run *run)
{
	nw_run_init(run);
	struct nw_run_header *h = &run->h;
	const json_t *p0 = v->nnodes ? v->nodes[0].part : NULL;
	nw_strlcpy(h->tool_version, NW_VERSION, sizeof(h->tool_version));
	nw_strlcpy(h->source, "job", sizeof(h->source));
	nw_strlcpy(h->backend, "nccl", sizeof(h->backend));
	nccl_version(p0, h->nccl_version, sizeof(h->nccl_version));
	nw_strlcpy(h->nccl_path, jv_str(json_object_get(p0, "mode"), "nccl_path"), sizeof(h->nccl_path));
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (size_t n = 0; n < v->nnodes; n++)
		nw_strbuf_addf(&sb, "%s%s", n ? "," : "", v->nodes[n].host);
	nw_strlcpy(h->host, sb.buf, sizeof(h->host));
	nw_strbuf_reset(&sb);
	const json_t *a;
	size_t i;
	json_array_foreach(json_object_get(p0, "command"), i, a)
		nw_strbuf_addf(&sb, "%s%s", i ? " " : "", json_string_value(a));
	nw_strlcpy(h->cmdline, sb.buf, sizeof(h->cmdline));
	nw_strbuf_release(&sb);
	nw_strlcpy(h->time, jv_str(p0, "start"), sizeof(h->time));
	h->time[strcspn(h->time, ".")] = '\0';
	if (h->time[0] && !strchr(h->time, 'Z'))
		nw_strlcpy(h->time + strlen(h->time), "Z", sizeof(h->time) - strlen(h->time));
	h->nranks = v->world;
	h->nhosts = (int)v->nnodes;
	add_rows(v, run);
	h->extra = json_object();
	json_object_set_new(h->extra, "fingerprint", fingerprint(v, h));
	json_t *nodes = json_array();
	for (size_t n = 0; n < v->nnodes; n++)
		json_array_append_new(nodes, json_string(v->nodes[n].host));
	const json_t *x = nw_job_view_exit(v);
	json_object_set_new(h->extra, "job", json_pack("{s:s, s:o, s:O}", "id", v->job, "nodes", nodes, "exit",
	                                               x ? (json_t *)x : json_null()));
	if (v->interrupted)
		json_object_set_new(h->extra, "interrupted", json_true());
}
