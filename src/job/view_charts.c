/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view_charts: the merged view's charts over common time bins (bandwidth
 * per op and size bucket, lateness per communicator, exposed
 * communication per rank) and its incidents in time order; the view's
 * building and release (job.h).
 */
#include "job/job_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Lines of a bandwidth chart: the size buckets of an op that moved the most bytes. */
#define BW_LINES 6

/* Per op and bucket over the bins: factor-weighted timed bytes and timed ns (busbw = their ratio). */
struct bw_acc {
	double fb[NWS_NBUCKETS];
	double bytes[NWS_NBUCKETS];
	double *bin_fb, *bin_ns; /* [NWS_NBUCKETS][nbins] */
};

static void bw_cell(struct nw_job_view *v, struct bw_acc *acc, const json_t *c, size_t bin)
{
	const char *comm = json_string_value(json_array_get(c, 0)), *opn = json_string_value(json_array_get(c, 1));
	unsigned op = jv_op_of(opn ? opn : "");
	json_int_t b = json_integer_value(json_array_get(c, 2));
	if (b < 0 || b >= NWS_NBUCKETS)
		return;
	/* kernel timings when the cell has any, else proxy (the network part) */
	int k = json_integer_value(json_array_get(c, 5)) > 0 ? 0 : 1;
	double tb = (double)json_integer_value(json_array_get(c, 6 + 3 * k));
	double tns = (double)json_integer_value(json_array_get(c, 7 + 3 * k));
	double f = nws_busbw_factor(op, jv_comm_size(v, jv_hex_of(comm ? comm : "0")));
	acc[op].bytes[b] += (double)json_integer_value(json_array_get(c, 4));
	if (tns <= 0)
		return;
	acc[op].fb[b] += f * tb;
	acc[op].bin_fb[(size_t)b * v->nbins + bin] += f * tb;
	acc[op].bin_ns[(size_t)b * v->nbins + bin] += tns;
}

/* The buckets of op to draw: those with timed operations, the most bytes first, at most BW_LINES. */
static size_t bw_pick(const struct bw_acc *a, int *pick)
{
	size_t n = 0;
	for (int b = 0; b < NWS_NBUCKETS; b++) {
		if (a->fb[b] <= 0)
			continue;
		size_t k = n < BW_LINES ? n++ : BW_LINES - 1;
		if (k == BW_LINES - 1 && n == BW_LINES && pick[k] >= 0 && a->bytes[pick[k]] >= a->bytes[b])
			continue;
		pick[k] = b;
		for (; k > 0 && a->bytes[pick[k]] > a->bytes[pick[k - 1]]; k--) {
			int t = pick[k];
			pick[k] = pick[k - 1];
			pick[k - 1] = t;
		}
	}
	return n;
}

static void bw_charts(struct nw_job_view *v)
{
	struct bw_acc acc[NWS_NOPS];
	memset(acc, 0, sizeof(acc));
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		acc[op].bin_fb = nw_calloc((size_t)NWS_NBUCKETS * v->nbins, sizeof(double));
		acc[op].bin_ns = nw_calloc((size_t)NWS_NBUCKETS * v->nbins, sizeof(double));
	}
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *iv;
		size_t i;
		json_array_foreach(json_object_get(v->nodes[n].part, "series"), i, iv) {
			uint64_t t0 = jv_at(v, n, jv_u64(iv, "t0")), t1 = jv_at(v, n, jv_u64(iv, "t1"));
			size_t bin = jv_bin_of(v, t0 / 2 + t1 / 2);
			const json_t *c;
			size_t k;
			json_array_foreach(json_object_get(iv, "cells"), k, c)
				bw_cell(v, acc, c, bin);
		}
	}
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		int pick[BW_LINES];
		memset(pick, -1, sizeof(pick));
		size_t np = bw_pick(&acc[op], pick);
		if (np) {
			v->bw = nw_realloc(v->bw, (v->nbw + 1) * sizeof(*v->bw));
			struct nw_jv_chart *c = &v->bw[v->nbw++];
			memset(c, 0, sizeof(*c));
			snprintf(c->title, sizeof(c->title), "%s: busbw over time, by size", nws_op_name(op));
			nw_strlcpy(c->unit, "GB/s", sizeof(c->unit));
			for (size_t k = 0; k < np; k++) {
				char lo[24], hi[24], label[64];
				nw_format_size(nws_bucket_lo((unsigned)pick[k]), lo, sizeof(lo));
				nw_format_size(nws_bucket_lo((unsigned)pick[k] + 1), hi, sizeof(hi));
				snprintf(label, sizeof(label), "%s-%s", lo, hi);
				struct nw_jv_line *l = jv_chart_line(c, v->nbins, label);
				for (size_t b = 0; b < v->nbins; b++) {
					double ns = acc[op].bin_ns[(size_t)pick[k] * v->nbins + b];
					if (ns > 0)
						l->y[b] = acc[op].bin_fb[(size_t)pick[k] * v->nbins + b] / ns;
				}
			}
		}
		free(acc[op].bin_fb);
		free(acc[op].bin_ns);
	}
}

/* The chart of comm in v->late, added when new. */
static struct nw_jv_chart *late_chart(struct nw_job_view *v, uint64_t comm)
{
	char title[128];
	const char *name = "";
	for (size_t i = 0; i < v->nranks; i++)
		if (v->ranks[i].comm == comm && v->ranks[i].name[0])
			name = v->ranks[i].name;
	snprintf(title, sizeof(title), "communicator %016" PRIx64 "%s%s%s: lateness of each rank", comm, name[0] ? " (" : "",
	         name, name[0] ? ")" : "");
	for (size_t i = 0; i < v->nlate; i++)
		if (!strcmp(v->late[i].title, title))
			return &v->late[i];
	v->late = nw_realloc(v->late, (v->nlate + 1) * sizeof(*v->late));
	struct nw_jv_chart *c = &v->late[v->nlate++];
	memset(c, 0, sizeof(*c));
	nw_strlcpy(c->title, title, sizeof(c->title));
	nw_strlcpy(c->unit, "us", sizeof(c->unit));
	return c;
}

/* The line of label in c, added when new (at most 32 lines). */
static struct nw_jv_line *line_of(struct nw_jv_chart *c, size_t nbins, const char *label)
{
	for (size_t i = 0; i < c->nlines; i++)
		if (!strcmp(c->lines[i].label, label))
			return &c->lines[i];
	return c->nlines < 32 ? jv_chart_line(c, nbins, label) : NULL;
}

/*
 * Lateness samples of every node, a chart per communicator, a line per
 * rank, each bin the mean of its samples. Two passes: the charts and
 * lines first, so that the sample counts kept beside them stay put.
 */
static void late_charts(struct nw_job_view *v)
{
	for (int pass = 0; pass < 2; pass++) {
		size_t total = 0;
		for (size_t q = 0; pass && q < v->nlate; q++)
			total += v->late[q].nlines;
		double *cnt = pass ? nw_calloc(total * v->nbins + 1, sizeof(double)) : NULL;
		for (size_t n = 0; n < v->nnodes; n++) {
			const json_t *s;
			size_t i;
			json_array_foreach(json_object_get(v->nodes[n].part, "lateness"), i, s) {
				struct nw_jv_chart *c = late_chart(v, jv_hex_of(jv_str(s, "comm")));
				size_t bin = jv_bin_of(v, jv_at(v, n, jv_u64(s, "t")));
				const json_t *ranks = json_object_get(s, "ranks"), *late = json_object_get(s, "late_us");
				size_t base = 0;
				for (size_t q = 0; pass && &v->late[q] != c; q++)
					base += v->late[q].nlines;
				for (size_t k = 0; k < json_array_size(ranks); k++) {
					char label[32];
					snprintf(label, sizeof(label), "rank %d", (int)json_integer_value(json_array_get(ranks, k)));
					struct nw_jv_line *l = line_of(c, v->nbins, label);
					if (!l || !pass)
						continue;
					double x = json_number_value(json_array_get(late, k));
					l->y[bin] = isnan(l->y[bin]) ? x : l->y[bin] + x;
					cnt[(base + (size_t)(l - c->lines)) * v->nbins + bin] += 1;
				}
			}
		}
		size_t li = 0;
		for (size_t q = 0; pass && q < v->nlate; q++)
			for (size_t k = 0; k < v->late[q].nlines; k++, li++)
				for (size_t b = 0; b < v->nbins; b++)
					if (cnt[li * v->nbins + b] > 0)
						v->late[q].lines[k].y[b] /= cnt[li * v->nbins + b];
		free(cnt);
	}
}

/* Exposed communication windows: a line per rank, the exposed share of wall time in %. */
static void exposed_chart(struct nw_job_view *v)
{
	struct nw_jv_chart *c = &v->exposed;
	snprintf(c->title, sizeof(c->title), "exposed communication: NCCL kernel time with no compute kernel running, "
	                                     "share of wall time");
	nw_strlcpy(c->unit, "%", sizeof(c->unit));
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *w;
		size_t i;
		json_array_foreach(json_object_get(v->nodes[n].part, "overlap_windows"), i, w) {
			double wall = (double)jv_u64(w, "wall_ns");
			if (wall <= 0)
				continue;
			char label[32];
			snprintf(label, sizeof(label), "rank %d", (int)json_integer_value(json_object_get(w, "rank")));
			struct nw_jv_line *l = line_of(c, v->nbins, label);
			uint64_t t = jv_at(v, n, jv_u64(w, "t0") / 2 + jv_u64(w, "t1") / 2);
			if (l)
				l->y[jv_bin_of(v, t)] = 100.0 * (double)jv_u64(w, "exposed_ns") / wall;
		}
	}
}

static void add_inc(struct nw_job_view *v, uint64_t t, const char *kind, const char *host, const char *text)
{
	v->inc = nw_realloc(v->inc, (v->ninc + 1) * sizeof(*v->inc));
	struct nw_jv_incident *x = &v->inc[v->ninc++];
	memset(x, 0, sizeof(*x));
	x->t_ns = t;
	nw_strlcpy(x->kind, kind, sizeof(x->kind));
	nw_strlcpy(x->host, host, sizeof(x->host));
	nw_strlcpy(x->text, text, sizeof(x->text));
}

/* Incidents by time; at the same time a hang or an abort before what came with it (its dumps). */
static int cmp_inc(const void *a, const void *b)
{
	const struct nw_jv_incident *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	int px = strcmp(x->kind, "hang") && strcmp(x->kind, "abort"), py = strcmp(y->kind, "hang") && strcmp(y->kind, "abort");
	return px - py;
}

/* How a node's job ended, as an incident when it did not end well. */
static void exit_incident(struct nw_job_view *v, size_t n)
{
	const json_t *p = v->nodes[n].part, *x = json_object_get(p, "exit");
	const char *sig = json_string_value(json_object_get(x, "signal"));
	int code = (int)json_integer_value(json_object_get(x, "code"));
	int intr = json_is_true(json_object_get(x, "interrupted"));
	if (!sig && !code && !intr)
		return;
	char text[512];
	if (intr)
		v->interrupted = 1;
	if (json_is_true(json_object_get(x, "not_started")))
		snprintf(text, sizeof(text), "the command could not be run (exit status %d)", code);
	else if (sig)
		snprintf(text, sizeof(text), "the job ended by %s (exit status %d)%s%s", sig,
		         (int)json_integer_value(json_object_get(x, "status")), intr ? ": interrupted by " : "",
		         intr ? jv_str(x, "by") : "");
	else
		snprintf(text, sizeof(text), "the job exited with status %d%s%s", code, intr ? " after it was interrupted by " : "",
		         intr ? jv_str(x, "by") : "");
	add_inc(v, jv_at(v, n, jv_u64(p, "end_ns")), intr ? "interrupted" : "exit", v->nodes[n].host, text);
}

/* Every node's incidents, its exit, and the errors logscan found in its NCCL logs. */
static void incidents(struct nw_job_view *v)
{
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *p = v->nodes[n].part, *x;
		size_t i;
		json_array_foreach(json_object_get(p, "incidents"), i, x)
			add_inc(v, jv_at(v, n, jv_u64(x, "t_ns")), jv_str(x, "kind"), v->nodes[n].host, jv_str(x, "text"));
		exit_incident(v, n);
		json_array_foreach(json_object_get(json_object_get(p, "nccl"), "diagnoses"), i, x) {
			if (strcmp(jv_str(x, "severity"), "error"))
				continue;
			char text[768];
			snprintf(text, sizeof(text), "NCCL's log: %s (%s)", jv_str(x, "message"), jv_str(x, "id"));
			add_inc(v, jv_at(v, n, jv_u64(p, "end_ns")), "nccl", v->nodes[n].host, text);
		}
	}
	if (v->ninc > 1)
		qsort(v->inc, v->ninc, sizeof(*v->inc), cmp_inc);
}

int nw_job_view_build(const json_t *parts, struct nw_job_view *v, char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	if (!json_is_array(parts) || !json_array_size(parts))
		return nw_seterr(err, errlen, "no part of the job to report on");
	v->nnodes = json_array_size(parts);
	v->nodes = nw_calloc(v->nnodes, sizeof(*v->nodes));
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *p = json_array_get(parts, n);
		v->nodes[n].part = p;
		nw_strlcpy(v->nodes[n].host, jv_str(p, "host"), sizeof(v->nodes[n].host));
		if (!json_is_array(json_object_get(p, "ranks")) || !json_is_array(json_object_get(p, "series")))
			return nw_seterr(err, errlen, "the part of '%s' has no \"ranks\" or \"series\" array",
			                 v->nodes[n].host);
		if (n && strcmp(jv_str(p, "job"), v->job))
			return nw_seterr(err, errlen, "the parts are of two jobs: '%s' and '%s'", v->job, jv_str(p, "job"));
		nw_strlcpy(v->job, jv_str(p, "job"), sizeof(v->job));
	}
	if (jv_ranks_from(parts, v, err, errlen) != 0)
		return -1;
	jv_clock_offsets(v);
	jv_apply_offsets(v);
	jv_bins(v);
	bw_charts(v);
	late_charts(v);
	exposed_chart(v);
	incidents(v);
	return 0;
}

static void chart_release(struct nw_jv_chart *c)
{
	for (size_t i = 0; i < c->nlines; i++)
		free(c->lines[i].y);
	free(c->lines);
	c->lines = NULL;
	c->nlines = 0;
}

void nw_job_view_release(struct nw_job_view *v)
{
	for (size_t i = 0; i < v->nranks; i++)
		free(v->ranks[i].tl);
	free(v->ranks);
	for (size_t i = 0; i < v->nbw; i++)
		chart_release(&v->bw[i]);
	free(v->bw);
	for (size_t i = 0; i < v->nlate; i++)
		chart_release(&v->late[i]);
	free(v->late);
	chart_release(&v->exposed);
	free(v->inc);
	free(v->nodes);
	memset(v, 0, sizeof(*v));
}

const json_t *nw_job_view_exit(const struct nw_job_view *v)
{
	return v->nnodes ? json_object_get(v->nodes[0].part, "exit") : NULL;
}
