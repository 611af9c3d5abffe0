/* SPDX-License-Identifier: Apache-2.0 */
/* fleet: every host's latest check against the median of its peers. */
#include <stdlib.h>
#include <string.h>

#include "store/fleet.h"
#include "util/util.h"

/* Fingerprint fields compared between hosts, besides the NCCL_* variables. */
static const char *const fp_fields[] = { "driver", "nccl_version", "topology_hash" };

static const json_t *fingerprint(const struct nw_run *run)
{
	const json_t *fp = run->h.extra ? json_object_get(run->h.extra, "fingerprint") : NULL;
	return json_is_object(fp) ? fp : NULL;
}

/* A fingerprint field ("env.NAME" for a variable) as text; "" when absent or not text. */
static const char *fp_text(const struct nw_run *run, const char *field)
{
	const json_t *fp = fingerprint(run), *v = NULL;
	if (fp && !strncmp(field, "env.", 4))
		v = json_object_get(json_object_get(fp, "env"), field + 4);
	else if (fp)
		v = json_object_get(fp, field);
	return json_is_string(v) ? json_string_value(v) : "";
}

/* The cell of (op, size) in h, added when absent. */
static struct nw_fleet_cell *cell_of(struct nw_fleet_host *h, const char *op, uint64_t size, int add)
{
	for (size_t i = 0; i < h->ncells; i++)
		if (h->cells[i].size_bytes == size && !strcmp(h->cells[i].op, op))
			return &h->cells[i];
	if (!add)
		return NULL;
	h->cells = nw_realloc(h->cells, (h->ncells + 1) * sizeof(*h->cells));
	struct nw_fleet_cell *c = &h->cells[h->ncells++];
	memset(c, 0, sizeof(*c));
	nw_strlcpy(c->op, op, sizeof(c->op));
	c->size_bytes = size;
	return c;
}

/* h's header fields and cells (mean busbw of the rows at each op and size) from run. */
static void host_from_run(struct nw_fleet_host *h, const struct nw_run *run, long long id)
{
	memset(h, 0, sizeof(*h));
	h->run_id = id;
	nw_strlcpy(h->host, run->h.host, sizeof(h->host));
	nw_strlcpy(h->time, run->h.time, sizeof(h->time));
	const json_t *v = run->h.extra ? json_object_get(run->h.extra, "check_verdict") : NULL;
	nw_strlcpy(h->verdict, json_is_string(v) ? json_string_value(v) : "", sizeof(h->verdict));
	const char *gpus = fp_text(run, "gpus");
	nw_strlcpy(h->gpus, gpus[0] ? gpus : run->h.gpus, sizeof(h->gpus));
	int *nrows = NULL;
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		size_t before = h->ncells;
		struct nw_fleet_cell *c = cell_of(h, r->op, r->size_bytes, 1);
		size_t k = (size_t)(c - h->cells);
		if (h->ncells > before) {
			nrows = nw_realloc(nrows, h->ncells * sizeof(*nrows));
			nrows[k] = 0;
		}
		c->busbw += r->busbw_gbs;
		nrows[k]++;
	}
	for (size_t k = 0; k < h->ncells; k++)
		h->cells[k].busbw /= nrows[k];
	free(nrows);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median busbw at c's op and size over hosts[0..n); every host's cell there gets its ratio. */
static void median_of(struct nw_fleet_host *hosts, size_t n, const struct nw_fleet_cell *c, double *buf)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const struct nw_fleet_cell *x = cell_of(&hosts[i], c->op, c->size_bytes, 0);
		if (x)
			buf[m++] = x->busbw;
	}
	qsort(buf, m, sizeof(*buf), cmp_double);
	double med = m % 2 ? buf[m / 2] : (buf[m / 2 - 1] + buf[m / 2]) / 2;
	for (size_t i = 0; i < n; i++) {
		struct nw_fleet_cell *x = cell_of(&hosts[i], c->op, c->size_bytes, 0);
		if (x && !x->median) {
			x->median = med;
			x->ratio = med > 0 ? x->busbw / med : 1;
		}
	}
}

/* Medians and ratios of one group hosts[0..n); each host's worst cell. */
static void group_medians(struct nw_fleet_host *hosts, size_t n, double threshold)
{
	double *buf = nw_calloc(n, sizeof(*buf));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < hosts[i].ncells; k++)
			if (!hosts[i].cells[k].median)
				median_of(hosts, n, &hosts[i].cells[k], buf);
	free(buf);
	for (size_t i = 0; i < n; i++) {
		struct nw_fleet_host *h = &hosts[i];
		h->group_size = (int)n;
		h->worst = h->ncells ? h->cells[0].ratio : 1;
		for (size_t k = 1; k < h->ncells; k++)
			if (h->cells[k].ratio < h->worst) {
				h->worst = h->cells[k].ratio;
				h->worst_cell = k;
			}
		h->outlier = h->worst < threshold;
	}
}

/* The most common value of field among runs[idx[0..n)] (the first seen of equals). */
static const char *majority(const struct nw_run *runs, const size_t *idx, size_t n, const char *field)
{
	const char **vals = nw_calloc(n, sizeof(*vals));
	size_t *counts = nw_calloc(n, sizeof(*counts)), nv = 0, best = 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = fp_text(&runs[idx[i]], field);
		size_t k = 0;
		while (k < nv && strcmp(vals[k], v))
			k++;
		if (k == nv)
			vals[nv++] = v;
		if (++counts[k] > counts[best])
			best = k;
	}
	const char *m = vals[best];
	free(vals);
	free(counts);
	return m;
}

static void add_diff(struct nw_fleet_host *h, const char *field, const char *value, const char *fleet)
{
	h->diffs = nw_realloc(h->diffs, (h->ndiffs + 1) * sizeof(*h->diffs));
	struct nw_fleet_diff *d = &h->diffs[h->ndiffs++];
	nw_strlcpy(d->field, field, sizeof(d->field));
	nw_strlcpy(d->value, value, sizeof(d->value));
	nw_strlcpy(d->fleet, fleet, sizeof(d->fleet));
}

/* Every NCCL_* variable set on any host of the group, as "env.NAME"; *out is the caller's to free(). */
static size_t env_fields(const struct nw_run *runs, const size_t *idx, size_t n, char (**out)[96])
{
	size_t nf = 0;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		const json_t *fp = fingerprint(&runs[idx[i]]);
		const char *name;
		const json_t *v;
		json_object_foreach((json_t *)json_object_get(fp, "env"), name, v) {
			char f[96];
			size_t k = 0;
			if (strncmp(name, "NCCL_", 5) || snprintf(f, sizeof(f), "env.%s", name) >= (int)sizeof(f))
				continue;
			while (k < nf && strcmp((*out)[k], f))
				k++;
			if (k == nf) {
				*out = nw_realloc(*out, (nf + 1) * sizeof(**out));
				memcpy((*out)[nf++], f, sizeof(f));
			}
		}
	}
	return nf;
}

/* What differs between each host of a group (hosts[i] from runs[idx[i]]) and the group's majority. */
static void group_diffs(struct nw_fleet_host *hosts, const struct nw_run *runs, const size_t *idx, size_t n)
{
	char (*env)[96];
	size_t nenv = env_fields(runs, idx, n, &env);
	for (size_t f = 0; f < NW_ARRAY_LEN(fp_fields) + nenv; f++) {
		const char *field = f < NW_ARRAY_LEN(fp_fields) ? fp_fields[f] : env[f - NW_ARRAY_LEN(fp_fields)];
		const char *m = majority(runs, idx, n, field);
		for (size_t i = 0; i < n; i++) {
			const char *v = fp_text(&runs[idx[i]], field);
			if (strcmp(v, m))
				add_diff(&hosts[i], field, v, m);
		}
	}
	free(env);
}

/* A run's place in the input and its group, for sorting by group. */
struct by_group {
	const char *gpus;
	size_t idx;
};

static int by_gpus(const void *a, const void *b)
{
	const struct by_group *x = a, *y = b;
	int c = strcmp(x->gpus, y->gpus);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Outliers first, lowest ratio first; then by host name. */
static int by_rank(const void *a, const void *b)
{
	const struct nw_fleet_host *x = a, *y = b;
	if (x->outlier != y->outlier)
		return y->outlier - x->outlier;
	if (x->outlier && x->worst != y->worst)
		return x->worst < y->worst ? -1 : 1;
	return strcmp(x->host, y->host);
}

void nw_fleet_analyze(struct nw_fleet *f, const struct nw_run *runs, const long long *ids, size_t n,
                      double threshold)
{
	memset(f, 0, sizeof(*f));
	f->threshold = threshold;
	if (!n)
		return;
	struct by_group *order = nw_calloc(n, sizeof(*order));
	for (size_t i = 0; i < n; i++) {
		order[i].gpus = fp_text(&runs[i], "gpus")[0] ? fp_text(&runs[i], "gpus") : runs[i].h.gpus;
		order[i].idx = i;
	}
	qsort(order, n, sizeof(*order), by_gpus);
	size_t *idx = nw_calloc(n, sizeof(*idx));
	for (size_t i = 0; i < n; i++)
		idx[i] = order[i].idx;
	free(order);
	f->hosts = nw_calloc(n, sizeof(*f->hosts));
	f->nhosts = n;
	for (size_t i = 0; i < n; i++)
		host_from_run(&f->hosts[i], &runs[idx[i]], ids ? ids[idx[i]] : 0);
	for (size_t g = 0, end; g < n; g = end) {
		for (end = g + 1; end < n && !strcmp(f->hosts[end].gpus, f->hosts[g].gpus); end++)
			;
		group_medians(&f->hosts[g], end - g, threshold);
		group_diffs(&f->hosts[g], runs, &idx[g], end - g);
	}
	free(idx);
	qsort(f->hosts, n, sizeof(*f->hosts), by_rank);
	for (size_t i = 0; i < n; i++)
		f->noutliers += f->hosts[i].outlier != 0;
}

int nw_fleet_build(struct nw_store *s, double threshold, struct nw_fleet *f, char *err, size_t errlen)
{
	struct nw_run *runs;
	long long *ids;
	size_t n;
	memset(f, 0, sizeof(*f));
	if (nw_store_latest_check_runs(s, &runs, &ids, &n, err, errlen))
		return -1;
	nw_fleet_analyze(f, runs, ids, n, threshold);
	for (size_t i = 0; i < n; i++)
		nw_run_release(&runs[i]);
	free(runs);
	free(ids);
	return 0;
}

void nw_fleet_release(struct nw_fleet *f)
{
	for (size_t i = 0; i < f->nhosts; i++) {
		free(f->hosts[i].cells);
		free(f->hosts[i].diffs);
	}
	free(f->hosts);
	memset(f, 0, sizeof(*f));
}

static json_t *host_json(const struct nw_fleet_host *h)
{
	json_t *cells = json_array(), *diffs = json_array();
	for (size_t k = 0; k < h->ncells; k++) {
		const struct nw_fleet_cell *c = &h->cells[k];
		json_array_append_new(cells, json_pack("{s:s,s:I,s:f,s:f,s:f}", "op", c->op, "size", (json_int_t)c->size_bytes,
		                                       "busbw", c->busbw, "median", c->median, "ratio", c->ratio));
	}
	for (size_t k = 0; k < h->ndiffs; k++)
		json_array_append_new(diffs, json_pack("{s:s,s:s,s:s}", "field", h->diffs[k].field, "value",
		                                       h->diffs[k].value, "fleet", h->diffs[k].fleet));
	return json_pack("{s:s,s:I,s:s,s:s,s:s,s:i,s:b,s:f,s:o,s:o}", "host", h->host, "run_id", (json_int_t)h->run_id,
	                 "time", h->time, "verdict", h->verdict, "gpus", h->gpus, "group_size", h->group_size,
	                 "outlier", h->outlier, "worst_ratio", h->worst, "cells", cells, "differs", diffs);
}

json_t *nw_fleet_to_json(const struct nw_fleet *f)
{
	json_t *hosts = json_array();
	for (size_t i = 0; i < f->nhosts; i++)
		json_array_append_new(hosts, host_json(&f->hosts[i]));
	return json_pack("{s:f,s:I,s:I,s:o}", "threshold", f->threshold, "hosts_total", (json_int_t)f->nhosts,
	                 "outliers", (json_int_t)f->noutliers, "hosts", hosts);
}
