/* SPDX-License-Identifier: Apache-2.0 */
/* ras: NCCL RAS answers, common parts, the JSON format and the progress model. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "parse/ras_int.h"
#include "util/util.h"

/* NCCL's collective names (ncclFuncStr, ncclFuncToString) and ours. */
static const struct { const char *name; int op; } ras_ops[] = {
	{ "AllReduce", NWS_OP_ALL_REDUCE },
	{ "AllGather", NWS_OP_ALL_GATHER },
	{ "ReduceScatter", NWS_OP_REDUCE_SCATTER },
	{ "Broadcast", NWS_OP_BROADCAST },
	{ "Reduce", NWS_OP_REDUCE },
	{ "AllToAll", NWS_OP_ALLTOALL },
	{ "Gather", NWS_OP_GATHER },
	{ "Scatter", NWS_OP_SCATTER },
	{ "Send", NWS_OP_SEND },
	{ "Recv", NWS_OP_RECV },
	{ "SendRecv", NWS_OP_SENDRECV },
};

int nw_ras_op(const char *ncclname)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(ras_ops); i++)
		if (!strcmp(ras_ops[i].name, ncclname))
			return ras_ops[i].op;
	return NWS_OP_OTHER;
}

static void ras_init(struct nw_ras *r)
{
	memset(r, 0, sizeof(*r));
	r->cuda_runtime = r->cuda_driver = -1;
	r->nodes = r->procs = r->gpus = -1;
	r->collection_s = -1;
	r->timeouts = -1;
}

void nw_ras_release(struct nw_ras *r)
{
	for (size_t i = 0; i < r->ncomms; i++)
		free(r->comms[i].ranks);
	for (size_t i = 0; i < r->nerrors; i++)
		free(r->errors[i]);
	for (size_t i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->comms);
	free(r->groups);
	free(r->procs_out);
	free(r->errors);
	free(r->warnings);
	ras_init(r);
}

struct nw_ras_comm *nw_ras_comm_get(struct nw_ras *r, uint64_t hash)
{
	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].hash == hash)
			return &r->comms[i];
	r->comms = nw_realloc(r->comms, (r->ncomms + 1) * sizeof(*r->comms));
	struct nw_ras_comm *c = &r->comms[r->ncomms++];
	memset(c, 0, sizeof(*c));
	c->hash = hash;
	c->nmissing = -1;
	for (int op = 0; op < NWS_NOPS; op++)
		c->rest[op] = NW_RAS_NOCOUNT;
	return c;
}

struct nw_ras_rank *nw_ras_rank_get(struct nw_ras_comm *c, int rank)
{
	for (size_t i = 0; i < c->nranks; i++)
		if (c->ranks[i].rank == rank)
			return &c->ranks[i];
	c->ranks = nw_realloc(c->ranks, (c->nranks + 1) * sizeof(*c->ranks));
	struct nw_ras_rank *k = &c->ranks[c->nranks++];
	memset(k, 0, sizeof(*k));
	k->rank = rank;
	k->cuda_dev = k->nvml_dev = -1;
	k->init_state = k->async_error = -1;
	k->finalize_called = k->destroy_flag = k->abort_flag = -1;
	for (int op = 0; op < NWS_NOPS; op++)
		k->counts[op] = NW_RAS_NOCOUNT;
	return k;
}

void nw_ras_strlist_add(char ***list, size_t *n, const char *s)
{
	*list = nw_realloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = nw_strdup(s);
}

/* ---- JSON ---- */

static int json_int_or(json_t *o, const char *k, int dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static int json_flag(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_boolean(v) ? json_is_true(v) : -1;
}

static void json_str_into(json_t *o, const char *k, char *dst, size_t len)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v))
		nw_strlcpy(dst, json_string_value(v), len);
}

/* "0xda6d3161e2b43b74" into *out; -1 when it is no hex number. */
static int parse_hash(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !isxdigit((unsigned char)s[s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 2 : 0]))
		return -1;
	unsigned long long v = strtoull(s, &end, 16);
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* One element of "ranks" or "missing_ranks". */
static int json_rank(json_t *jr, struct nw_ras_comm *c, int missing)
{
	json_t *jn = json_object_get(jr, "rank");
	if (!json_is_integer(jn) || json_integer_value(jn) < 0 || json_integer_value(jn) > NW_RAS_MAXRANK)
		return -1;
	struct nw_ras_rank *k = nw_ras_rank_get(c, (int)json_integer_value(jn));
	json_str_into(jr, "host", k->host, sizeof(k->host));
	k->pid = json_int_or(jr, "pid", 0);
	k->cuda_dev = json_int_or(jr, "cuda_dev", -1);
	k->nvml_dev = json_int_or(jr, "nvml_dev", -1);
	k->missing = missing;
	/* "status" is null for a communicator caught mid-init (NCCL issue #2346). */
	json_t *st = json_object_get(jr, "status");
	if (missing) {
		k->unresponsive = json_flag(st, "unresponsive") == 1;
		k->dead = json_flag(st, "considered_dead") == 1;
	} else {
		k->init_state = json_int_or(st, "init_state", -1);
		k->async_error = json_int_or(st, "async_error", -1);
		k->finalize_called = json_flag(st, "finalize_called");
		k->destroy_flag = json_flag(st, "destroy_flag");
		k->abort_flag = json_flag(st, "abort_flag");
	}
	const char *name;
	json_t *v;
	json_object_foreach(json_object_get(jr, "collective_counts"), name, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			continue;
		int op = nw_ras_op(name);
		uint64_t prev = k->counts[op] == NW_RAS_NOCOUNT ? 0 : k->counts[op];
		k->counts[op] = prev + (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int json_comm(json_t *jc, struct nw_ras *r, char *err, size_t errlen)
{
	uint64_t hash;
	json_t *jh = json_object_get(jc, "hash");
	if (parse_hash(json_string_value(jh), &hash))
		return nw_seterr(err, errlen, "RAS JSON: a communicator without a valid \"hash\"");
	struct nw_ras_comm *c = nw_ras_comm_get(r, hash);
	c->size = json_int_or(jc, "size", 0);
	c->nmissing = json_int_or(jc, "missing_ranks_count", -1);
	static const char *const lists[2] = { "ranks", "missing_ranks" };
	for (int m = 0; m < 2; m++) {
		size_t i;
		json_t *jr;
		json_array_foreach(json_object_get(jc, lists[m]), i, jr) {
			if (json_rank(jr, c, m))
				return nw_seterr(err, errlen, "RAS JSON: communicator 0x%016llx: an entry of \"%s\" without a valid \"rank\"",
				                 (unsigned long long)hash, lists[m]);
		}
	}
	return 0;
}

static int parse_json_doc(json_t *doc, struct nw_ras *r, char *err, size_t errlen)
{
	json_t *comms = json_object_get(doc, "communicators");
	if (!json_is_object(doc) || !json_is_array(comms))
		return nw_seterr(err, errlen, "RAS JSON has no \"communicators\" array: not an answer of NCCL's RAS port");
	json_str_into(doc, "nccl_version", r->nccl_version, sizeof(r->nccl_version));
	json_str_into(doc, "timestamp", r->timestamp, sizeof(r->timestamp));
	r->cuda_runtime = json_int_or(doc, "cuda_runtime_version", -1);
	r->cuda_driver = json_int_or(doc, "cuda_driver_version", -1);
	json_t *ras = json_object_get(doc, "ras");
	json_t *ct = json_object_get(ras, "collection_time_sec");
	if (json_is_number(ct))
		r->collection_s = json_number_value(ct);
	r->timeouts = json_int_or(ras, "timeouts_count", -1);
	size_t i;
	json_t *jc;
	json_array_foreach(comms, i, jc) {
		if (json_comm(jc, r, err, errlen))
			return -1;
	}
	return 0;
}

/*
 * NCCL 2.28.7 .. 2.28.x write a missing rank's "nvml_dev": N without the
 * comma before "status". Returns a repaired copy (caller frees), or NULL
 * when there is nothing to repair.
 */
static char *repair_missing_comma(const char *buf, size_t len)
{
	const char *key = "\"nvml_dev\":";
	size_t klen = strlen(key), extra = 0;
	char *out = nw_malloc(len * 2 + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		out[o++] = buf[i];
		if (i + klen > len || memcmp(buf + i, key, klen))
			continue;
		size_t j = i + klen;
		while (j < len && (buf[j] == ' ' || isdigit((unsigned char)buf[j]) || buf[j] == '-'))
			j++;
		size_t k = j;
		while (k < len && isspace((unsigned char)buf[k]))
			k++;
		if (k < len && buf[k] == '"') {
			memcpy(out + o, buf + i + 1, j - i - 1);
			o += j - i - 1;
			out[o++] = ',';
			extra++;
			i = j - 1;
		}
	}
	out[o] = '\0';
	if (!extra) {
		free(out);
		return NULL;
	}
	return out;
}

static int parse_json(const char *buf, size_t len, struct nw_ras *r, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	if (!doc) {
		char *fixed = repair_missing_comma(buf, len);
		if (fixed)
			doc = json_loads(fixed, 0, NULL);
		free(fixed);
	}
	if (!doc)
		return nw_seterr(err, errlen, "RAS answer is not valid JSON (line %d: %s): not an answer of NCCL's RAS port, or cut short",
		                 je.line, je.text);
	int rc = parse_json_doc(doc, r, err, errlen);
	json_decref(doc);
	return rc;
}

/* ---- entry ---- */

/* Skip the handshake lines a recorded session may start with. */
static size_t skip_handshake(const char *buf, size_t len, int *protocol)
{
	size_t off = 0;
	for (;;) {
		while (off < len && isspace((unsigned char)buf[off]))
			off++;
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (buf + off)) : len - off;
		if (l >= 16 && !strncasecmp(buf + off, "SERVER PROTOCOL ", 16)) {
			int v = 0; /* within the line: the answer need not end in a NUL */
			for (size_t k = off + 16; k < off + l && isdigit((unsigned char)buf[k]) && v < 100000; k++)
				v = v * 10 + (buf[k] - '0');
			*protocol = v;
		} else if (!(l >= 2 && !strncasecmp(buf + off, "OK", 2) && (l == 2 || isspace((unsigned char)buf[off + 2])))) {
			return off;
		}
		off += l;
	}
}

static int cmp_rank(const void *a, const void *b)
{
	const struct nw_ras_rank *x = a, *y = b;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

int nw_ras_parse(const char *buf, size_t len, struct nw_ras *out, char *err, size_t errlen)
{
	ras_init(out);
	size_t off = skip_handshake(buf, len, &out->protocol);
	if (off >= len)
		return nw_seterr(err, errlen, "empty RAS answer: the job's RAS port sent nothing after the handshake");
	if (len - off >= 5 && !memcmp(buf + off, "ERROR", 5)) {
		/* the answer need not end in a NUL: its line is measured within len */
		size_t n = 0;
		while (off + n < len && n < 400 && buf[off + n] != '\r' && buf[off + n] != '\n' && buf[off + n] != '\0')
			n++;
		return nw_seterr(err, errlen, "the RAS port answered with an error: %.*s", (int)n, buf + off);
	}
	int rc;
	if (buf[off] == '{') {
		out->format = NW_RAS_JSON;
		rc = parse_json(buf + off, len - off, out, err, errlen);
	} else {
		out->format = NW_RAS_TEXT;
		rc = nw_ras_parse_text(buf + off, len - off, out, err, errlen);
	}
	for (size_t i = 0; i < out->ncomms; i++)
		if (out->comms[i].nranks > 1) /* a communicator RAS listed without ranks has none to sort (NULL) */
			qsort(out->comms[i].ranks, out->comms[i].nranks, sizeof(struct nw_ras_rank), cmp_rank);
	return rc;
}

/* ---- progress model ---- */

/* A process RAS named as missing or dead in a job-wide block. */
static int proc_out(const struct nw_ras *r, const struct nw_ras_rank *k)
{
	for (size_t i = 0; i < r->nprocs_out; i++)
		if (k->pid && r->procs_out[i].pid == k->pid && !strcmp(r->procs_out[i].host, k->host))
			return 1;
	return 0;
}

static void prog_rank(const struct nw_ras *r, const struct nw_ras_comm *c, const struct nw_ras_rank *k,
                      struct nw_prog_rank *p)
{
	if (k) {
		nw_strlcpy(p->host, k->host, sizeof(p->host));
		p->pid = k->pid;
		p->dead = k->missing || k->unresponsive || k->dead || proc_out(r, k);
	}
	for (int op = 0; op < NWS_NOPS; op++) {
		uint64_t v = k ? k->counts[op] : NW_RAS_NOCOUNT;
		if (v == NW_RAS_NOCOUNT && !(k && k->missing))
			v = c->rest[op];
		p->enq[op] = v == NW_RAS_NOCOUNT ? NW_PROG_UNKNOWN : v;
	}
}

/* One model rank: what RAS said of rank rk (k, may be NULL) plus the defaults of a RAS-only view. */
static void prog_fill(const struct nw_ras *r, const struct nw_ras_comm *c, int rk, const struct nw_ras_rank *k,
                      struct nw_prog_rank *p)
{
	p->rank = rk;
	p->src = NW_PROG_SRC_RAS;
	p->last_op = -1;
	p->last_bytes = p->inflight = NW_PROG_UNKNOWN;
	for (int op = 0; op < NWS_NOPS; op++)
		p->done[op] = NW_PROG_UNKNOWN;
	prog_rank(r, c, k, p);
}

/*
 * A communicator of known size gives ranks 0..size-1; one whose size the
 * answer does not give (or gives absurdly) only the ranks it names. The
 * ranks filled in from sizes alone are bounded over the whole answer
 * (NW_RAS_MAXRANK, a few hundred MB): a few kilobytes claiming thousands of
 * million-rank communicators must not take the machine's memory; the
 * communicators past the bound keep the ranks they name.
 */
static void prog_comm(const struct nw_ras *r, const struct nw_ras_comm *c, struct nw_prog_comm *pc,
                      size_t *budget)
{
	int dense = c->size > 0 && c->size <= NW_RAS_MAXRANK && (size_t)c->size <= *budget;
	pc->comm_hash = c->hash;
	pc->nranks = c->size;
	pc->n = dense ? (size_t)c->size : c->nranks;
	pc->ranks = pc->n ? nw_calloc(pc->n, sizeof(*pc->ranks)) : NULL;
	if (!dense) {
		for (size_t j = 0; j < c->nranks; j++)
			prog_fill(r, c, c->ranks[j].rank, &c->ranks[j], &pc->ranks[j]);
		return;
	}
	*budget -= (size_t)c->size;
	size_t j = 0;
	for (int rk = 0; rk < c->size; rk++) {
		while (j < c->nranks && c->ranks[j].rank < rk)
			j++;
		prog_fill(r, c, rk, j < c->nranks && c->ranks[j].rank == rk ? &c->ranks[j] : NULL, &pc->ranks[rk]);
	}
}

int nw_ras_to_prog(const struct nw_ras *r, struct nw_prog_comm **out, size_t *n)
{
	size_t budget = NW_RAS_MAXRANK;
	*out = r->ncomms ? nw_calloc(r->ncomms, sizeof(**out)) : NULL;
	*n = r->ncomms;
	for (size_t i = 0; i < r->ncomms; i++)
		prog_comm(r, &r->comms[i], &(*out)[i], &budget);
	return 0;
}

void nw_ras_prog_free(struct nw_prog_comm *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].ranks);
	free(c);
}
