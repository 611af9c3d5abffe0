/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view: every node's part of a job merged into one view (job.h): the
 * ranks with their figures and timelines, the clock offset of each node
 * against the first (estimated from collectives that end together on
 * every rank), charts over common time bins (bandwidth per op and size
 * bucket, lateness per communicator, exposed communication per rank) and
 * the incidents of every node in time order.
 */
#include "job/job_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

uint64_t jv_u64(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static uint64_t u64i(const json_t *a, size_t i)
{
	const json_t *v = json_array_get(a, i);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

const char *jv_str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

uint64_t jv_hex_of(const char *s)
{
	return strtoull(s, NULL, 16);
}

/* enum nws_op of a name ("other" when unknown). */
unsigned jv_op_of(const char *name)
{
	for (unsigned op = 0; op < NWS_NOPS; op++)
		if (!strcmp(nws_op_name(op), name))
			return op;
	return NWS_OP_OTHER;
}

/* A rank's timeline text (part.c: one operation per line) into r->tl. */
static void parse_timeline(const char *text, struct nw_jv_rank *r)
{
	size_t cap = 0;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		char line[256];
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p = e ? e + 1 : NULL;
		struct nw_jop o;
		unsigned op, src, flags, nch, dtype;
		memset(&o, 0, sizeof(o));
		if (sscanf(line, "%" SCNu64 " %" SCNu64 " %u %" SCNu64 " %" SCNu64 " %" SCNu64 " %u %u %u %u %11s %7s", &o.seq,
		           &o.bytes, &op, &o.enq_ns, &o.start_ns, &o.end_ns, &src, &flags, &nch, &dtype, o.algo, o.proto) != 12)
			continue;
		o.dtype = (uint8_t)(dtype < 255 ? dtype : 255);
		o.op = (uint16_t)(op < NWS_NOPS ? op : NWS_OP_OTHER);
		o.src = (uint8_t)src;
		o.flags = (uint8_t)flags;
		o.nch = (uint8_t)nch;
		if (!strcmp(o.algo, "-"))
			o.algo[0] = '\0';
		if (!strcmp(o.proto, "-"))
			o.proto[0] = '\0';
		if (r->ntl == cap) {
			cap = cap ? cap * 2 : 256;
			r->tl = nw_realloc(r->tl, cap * sizeof(*r->tl));
		}
		r->tl[r->ntl++] = o;
	}
}

/* One rank of a part into r. -1 with err when a field is missing. */
static int rank_from(const json_t *x, int node, struct nw_jv_rank *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if (!json_is_string(json_object_get(x, "comm")) || !json_is_integer(json_object_get(x, "rank")))
		return nw_seterr(err, errlen, "a rank without \"comm\" or \"rank\"");
	r->comm = jv_hex_of(jv_str(x, "comm"));
	r->rank = (int)json_integer_value(json_object_get(x, "rank"));
	r->nranks = (int)json_integer_value(json_object_get(x, "nranks"));
	r->node = node;
	r->pid = (int)json_integer_value(json_object_get(x, "pid"));
	r->gpu = (int)json_integer_value(json_object_get(x, "gpu"));
	nw_strlcpy(r->host, jv_str(x, "host"), sizeof(r->host));
	nw_strlcpy(r->name, jv_str(x, "name"), sizeof(r->name));
	nw_strlcpy(r->state, jv_str(x, "state"), sizeof(r->state));
	nw_strlcpy(r->disabled, jv_str(x, "disabled"), sizeof(r->disabled));
	r->ops = jv_u64(x, "ops");
	r->slow_ops = jv_u64(x, "slow_ops");
	r->dropped = jv_u64(x, "dropped");
	r->missed = jv_u64(x, "missed");
	r->tl_dropped = jv_u64(x, "timeline_dropped");
	const json_t *po = json_object_get(x, "per_op"), *e;
	size_t i;
	json_array_foreach(po, i, e) {
		unsigned op = jv_op_of(json_string_value(json_array_get(e, 0)) ? json_string_value(json_array_get(e, 0)) : "");
		int k = u64i(e, 4) ? 0 : 1; /* kernel timings, else proxy */
		r->per_op[op][0] += u64i(e, 2);
		r->per_op[op][1] += u64i(e, 3);
		r->per_op[op][2] += u64i(e, 4 + 3 * k);
		r->per_op[op][3] += u64i(e, 5 + 3 * k);
		r->per_op[op][4] += u64i(e, 6 + 3 * k);
		r->per_op_fb[op] += nws_busbw_factor(op, r->nranks) * (double)u64i(e, 5 + 3 * k);
		r->bytes += u64i(e, 3);
	}
	parse_timeline(json_string_value(json_object_get(x, "timeline")), r);
	return 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct nw_jv_rank *x = a, *y = b;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->node - y->node;
}

/* The ranks of every part; world ranks from each process's largest communicator. */
int jv_ranks_from(const json_t *parts, struct nw_job_view *v, char *err, size_t errlen)
{
	size_t cap = 0;
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *rs = json_object_get(v->nodes[n].part, "ranks"), *x;
		size_t i;
		json_array_foreach(rs, i, x) {
			if (v->nranks == cap) {
				cap = cap ? cap * 2 : 16;
				v->ranks = nw_realloc(v->ranks, cap * sizeof(*v->ranks));
			}
			char why[NW_ERRLEN];
			if (rank_from(x, (int)n, &v->ranks[v->nranks], why, sizeof(why)) != 0)
				return nw_seterr(err, errlen, "part of '%s', rank %zu: %s", v->nodes[n].host, i, why);
			v->nranks++;
		}
	}
	(void)parts;
	if (v->nranks > 1)
		qsort(v->ranks, v->nranks, sizeof(*v->ranks), cmp_rank);
	for (size_t i = 0; i < v->nranks; i++) {
		struct nw_jv_rank *r = &v->ranks[i];
		const struct nw_jv_rank *big = r;
		for (size_t k = 0; k < v->nranks; k++)
			if (v->ranks[k].node == r->node && v->ranks[k].pid == r->pid && v->ranks[k].nranks > big->nranks)
				big = &v->ranks[k];
		r->world = big->rank;
		if (r->nranks > v->world)
			v->world = r->nranks;
	}
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The time a collective is over on a rank (its end when timed, else its enqueue). */
static uint64_t done_at(const struct nw_jop *o, int *exact)
{
	*exact = o->src != NWS_SRC_CPU && o->end_ns;
	return *exact ? o->end_ns : o->enq_ns;
}

static void push_diff(int64_t **d, size_t *n, size_t *cap, int64_t x)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*d = nw_realloc(*d, *cap * sizeof(**d));
	}
	(*d)[(*n)++] = x;
}

/*
 * The collectives two ranks of one communicator share (same op and
 * sequence number; both timelines hold each op's numbers in increasing
 * order): the differences of the times they were over, into d.
 */
static void rank_diffs(const struct nw_jv_rank *x, const struct nw_jv_rank *y, int64_t **d, size_t *n, size_t *cap,
                       int *exact_all)
{
	for (unsigned op = 0; op < NWS_OP_SEND; op++) {
		size_t p = 0, q = 0;
		while (p < x->ntl && q < y->ntl && *n < 100000) {
			if (x->tl[p].op != op) {
				p++;
				continue;
			}
			if (y->tl[q].op != op) {
				q++;
				continue;
			}
			if (x->tl[p].seq != y->tl[q].seq) {
				if (x->tl[p].seq < y->tl[q].seq)
					p++;
				else
					q++;
				continue;
			}
			int ex, ey;
			uint64_t tx = done_at(&x->tl[p], &ex), ty = done_at(&y->tl[q], &ey);
			*exact_all &= ex && ey;
			push_diff(d, n, cap, (int64_t)tx - (int64_t)ty);
			p++;
			q++;
		}
	}
}

/* The differences between node a's and node b's clocks over every communicator they share, into *diffs. */
static size_t pair_diffs(const struct nw_job_view *v, int a, int b, int64_t **diffs, int *exact_all)
{
	size_t n = 0, cap = 0;
	*exact_all = 1;
	for (size_t i = 0; i < v->nranks; i++) {
		const struct nw_jv_rank *x = &v->ranks[i];
		if (x->node != a)
			continue;
		for (size_t k = 0; k < v->nranks; k++) {
			const struct nw_jv_rank *y = &v->ranks[k];
			if (y->node == b && y->comm == x->comm) {
				rank_diffs(x, y, diffs, &n, &cap, exact_all);
				break; /* one rank of b per rank of a is enough */
			}
		}
	}
	return n;
}

/* Each node's clock offset against node 0, spreading from nodes already placed. */
void jv_clock_offsets(struct nw_job_view *v)
{
	if (!v->nnodes)
		return;
	v->nodes[0].offset_known = 1;
	snprintf(v->nodes[0].offset_how, sizeof(v->nodes[0].offset_how), "the reference clock");
	int64_t *d = NULL;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t b = 0; b < v->nnodes; b++) {
			if (v->nodes[b].offset_known)
				continue;
			for (size_t a = 0; a < v->nnodes && !v->nodes[b].offset_known; a++) {
				int exact;
				if (!v->nodes[a].offset_known)
					continue;
				size_t n = pair_diffs(v, (int)a, (int)b, &d, &exact);
				if (n < 3)
					continue;
				qsort(d, n, sizeof(*d), cmp_i64);
				struct nw_jv_node *nb = &v->nodes[b];
				nb->offset_ns = v->nodes[a].offset_ns + d[n / 2];
				nb->offset_known = 1;
				nb->offset_n = n;
				nb->offset_spread_us = (double)(d[3 * n / 4] - d[n / 4]) / 1e3;
				snprintf(nb->offset_how, sizeof(nb->offset_how), "from %zu collectives' %s shared with %s", n,
				         exact ? "end times" : "enqueue times (less exact)", v->nodes[a].host);
				changed = 1;
			}
		}
	}
	free(d);
	for (size_t b = 0; b < v->nnodes; b++)
		if (!v->nodes[b].offset_known)
			snprintf(v->nodes[b].offset_how, sizeof(v->nodes[b].offset_how),
			         "not estimated (no collective shared with the other nodes' timelines): clocks taken as they are");
}

/* Node offsets applied to every rank's timeline. */
void jv_apply_offsets(struct nw_job_view *v)
{
	for (size_t i = 0; i < v->nranks; i++) {
		struct nw_jv_rank *r = &v->ranks[i];
		int64_t off = v->nodes[r->node].offset_ns;
		if (!off)
			continue;
		for (size_t k = 0; k < r->ntl; k++) {
			struct nw_jop *o = &r->tl[k];
			o->enq_ns = (uint64_t)((int64_t)o->enq_ns + off);
			o->start_ns = o->start_ns ? (uint64_t)((int64_t)o->start_ns + off) : 0;
			o->end_ns = o->end_ns ? (uint64_t)((int64_t)o->end_ns + off) : 0;
		}
	}
}

/* A node's time t on the first node's clock. */
uint64_t jv_at(const struct nw_job_view *v, size_t node, uint64_t t)
{
	return t ? (uint64_t)((int64_t)t + v->nodes[node].offset_ns) : 0;
}

/* The common time bins: the job's span cut into at most 240 bins of at least one sample. */
void jv_bins(struct nw_job_view *v)
{
	double sample_s = 1;
	for (size_t n = 0; n < v->nnodes; n++) {
		uint64_t s = jv_at(v, n, jv_u64(v->nodes[n].part, "start_ns")), e = jv_at(v, n, jv_u64(v->nodes[n].part, "end_ns"));
		if (s && (!v->start_ns || s < v->start_ns))
			v->start_ns = s;
		if (e > v->end_ns)
			v->end_ns = e;
		double ss = json_number_value(json_object_get(v->nodes[n].part, "sample_s"));
		if (ss > 0 && ss < sample_s)
			sample_s = ss;
	}
	if (v->end_ns <= v->start_ns)
		v->end_ns = v->start_ns + 1000000000ull;
	double span = (double)(v->end_ns - v->start_ns);
	double w = fmax(sample_s * 1e9, span / 120);
	v->nbins = (size_t)ceil(span / w);
	if (v->nbins < 1)
		v->nbins = 1;
	if (v->nbins > 240)
		v->nbins = 240;
	v->bin0_ns = v->start_ns;
	v->bin_ns = (uint64_t)ceil(span / (double)v->nbins);
	if (!v->bin_ns)
		v->bin_ns = 1;
}

/* The bin of time t (clamped to the span). */
size_t jv_bin_of(const struct nw_job_view *v, uint64_t t)
{
	if (t <= v->bin0_ns)
		return 0;
	size_t b = (size_t)((t - v->bin0_ns) / v->bin_ns);
	return b < v->nbins ? b : v->nbins - 1;
}

/* A new line of nbins NAN values in c. */
struct nw_jv_line *jv_chart_line(struct nw_jv_chart *c, size_t nbins, const char *label)
{
	c->lines = nw_realloc(c->lines, (c->nlines + 1) * sizeof(*c->lines));
	struct nw_jv_line *l = &c->lines[c->nlines++];
	nw_strlcpy(l->label, label, sizeof(l->label));
	l->y = nw_malloc(nbins * sizeof(*l->y));
	for (size_t i = 0; i < nbins; i++)
		l->y[i] = NAN;
	return l;
}

/* The size of a communicator (its largest nranks seen); 1 when unknown. */
int jv_comm_size(const struct nw_job_view *v, uint64_t comm)
{
	int n = 1;
	for (size_t i = 0; i < v->nranks; i++)
		if (v->ranks[i].comm == comm && v->ranks[i].nranks > n)
			n = v->ranks[i].nranks;
	return n;
}
