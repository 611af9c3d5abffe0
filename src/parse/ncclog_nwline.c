/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ncclwatch plugin's periodic lines in a training log ("NCCLWATCH v=1
 * t=... comm=... rank=... ops=... top=all_reduce:412.30,..."; the format is
 * in docs/plugin.md, "Log lines"), read into a bandwidth-over-time series
 * per communicator and rank, for the report's "bandwidth" section.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/* ---- the tokeniser ---- */

size_t lg_kv_split(const char *s, size_t n, struct lg_kv *kv, size_t max)
{
	size_t i = 0, nt = 0;
	while (i < n && nt < max) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i >= n)
			break;
		size_t b = i;
		while (i < n && s[i] != ' ' && s[i] != '\t')
			i++;
		const char *eq = memchr(s + b, '=', i - b);
		struct lg_kv *t = &kv[nt++];
		t->k = s + b;
		t->kn = eq ? (size_t)(eq - (s + b)) : i - b;
		t->v = eq ? eq + 1 : s + i;
		t->vn = eq ? (size_t)(s + i - (eq + 1)) : 0;
	}
	return nt;
}

int lg_kv_num(const char *v, size_t n, double *out)
{
	size_t i = 0, digits = 0;
	double x = 0;
	for (; i < n && is_digit(v[i]); i++, digits++) {
		if (digits >= 18)
			return -1; /* more than a 64-bit count could hold: not ours */
		x = x * 10 + (v[i] - '0');
	}
	if (!digits)
		return -1;
	if (i < n && v[i] == '.') {
		double scale = 0.1;
		size_t fd = 0;
		for (i++; i < n && is_digit(v[i]) && fd < 9; i++, fd++, scale /= 10)
			x += (v[i] - '0') * scale;
		if (!fd)
			return -1;
	}
	if (i != n)
		return -1;
	*out = x;
	return 0;
}

static int key_is(const struct lg_kv *t, const char *k)
{
	size_t kn = strlen(k);
	return t->kn == kn && !memcmp(t->k, k, kn);
}

/* "all_reduce:412.30,all_gather:198.02" into l->top; -1 when malformed. */
static int parse_top(const char *v, size_t n, struct lg_nwline *l)
{
	l->ntop = 0;
	size_t i = 0;
	while (i < n) {
		const char *c = memchr(v + i, ',', n - i);
		size_t end = c ? (size_t)(c - v) : n;
		const char *colon = memchr(v + i, ':', end - i);
		if (!colon || l->ntop == LG_NW_TOP || (size_t)(colon - (v + i)) >= sizeof(l->top[0].op) ||
		    colon == v + i)
			return -1;
		size_t on = (size_t)(colon - (v + i));
		for (size_t k = 0; k < on; k++)
			if (!((v[i + k] >= 'a' && v[i + k] <= 'z') || v[i + k] == '_'))
				return -1;
		copy_str(l->top[l->ntop].op, sizeof(l->top[0].op), v + i, on);
		if (lg_kv_num(colon + 1, (size_t)(v + end - (colon + 1)), &l->top[l->ntop].gbs) != 0)
			return -1;
		l->ntop++;
		i = end + (c ? 1 : 0);
	}
	return 0;
}

/* One key of the line into l; -1 when its value is malformed (unknown keys are skipped: newer plugins add some). */
static int parse_field(const struct lg_kv *t, struct lg_nwline *l, unsigned *have)
{
	double x;
	size_t used;
	if (key_is(t, "top"))
		return parse_top(t->v, t->vn, l);
	if (key_is(t, "name")) {
		copy_str(l->name, sizeof(l->name), t->v, t->vn);
		return 0;
	}
	if (key_is(t, "comm")) {
		l->comm = parse_hex(t->v, t->vn, &used);
		*have |= LG_NW_HAVE_COMM;
		return used == t->vn && used > 0 && used <= 16 ? 0 : -1;
	}
	static const char *const nums[] = { "t", "rank", "nranks", "interval_s", "ops", "bytes", "busy_pct",
	                                    "slow_ops", "exposed_pct", "hung" };
	for (unsigned k = 0; k < NW_ARRAY_LEN(nums); k++) {
		if (!key_is(t, nums[k]))
			continue;
		if (lg_kv_num(t->v, t->vn, &x) != 0)
			return -1;
		double *dst[] = { &l->t, &l->rank, &l->nranks, &l->interval_s, &l->ops, &l->bytes, &l->busy_pct,
		                  &l->slow_ops, &l->exposed_pct, &l->hung };
		*dst[k] = x;
		*have |= 1u << k;
		return 0;
	}
	return 0;
}

int lg_nwline_parse(const char *s, size_t n, struct lg_nwline *l)
{
	struct lg_kv kv[32];
	size_t nt = lg_kv_split(s, n, kv, NW_ARRAY_LEN(kv));
	memset(l, 0, sizeof(*l));
	l->busy_pct = -1;
	l->exposed_pct = -1;
	if (nt < 2 || !key_is(&kv[0], "NCCLWATCH") || kv[0].vn || !key_is(&kv[1], "v") || kv[1].vn != 1 ||
	    kv[1].v[0] != '1')
		return -1;
	unsigned have = 0;
	for (size_t i = 2; i < nt; i++)
		if (parse_field(&kv[i], l, &have) != 0)
			return -1;
	unsigned need = LG_NW_HAVE_T | LG_NW_HAVE_RANK | LG_NW_HAVE_COMM;
	if (l->rank > 1e9 || l->nranks > 1e9)
		return -1;
	return (have & need) == need ? 0 : -1;
}

/* ---- the series ---- */

/* The series of (comm, rank), created when new; NULL when the table is full. */
static struct lg_nwseries *series_get(struct nw_log *lg, const struct lg_nwline *l)
{
	int rank = (int)l->rank;
	for (size_t i = 0; i < lg->nnw; i++)
		if (lg->nw[i].comm == l->comm && lg->nw[i].rank == rank)
			return &lg->nw[i];
	if (lg->nnw == LG_MAX_NWSERIES) {
		lg->dropped++;
		return NULL;
	}
	lg->nw = lg_grow(lg->nw, &lg->cap_nw, lg->nnw, sizeof(*lg->nw));
	struct lg_nwseries *s = &lg->nw[lg->nnw++];
	s->comm = l->comm;
	s->rank = rank;
	s->busy_min = -1;
	return s;
}

/* Add one busbw sample of op to s (the first LG_NW_SAMPLES kept for the median; min and max over all). */
static void series_bw(struct lg_nwseries *s, const char *op, double gbs)
{
	size_t k = 0;
	while (k < s->nbw && strcmp(s->bw[k].op, op))
		k++;
	if (k == s->nbw) {
		if (s->nbw == LG_NW_OPS)
			return;
		s->nbw++;
		copy_str(s->bw[k].op, sizeof(s->bw[k].op), op, strlen(op));
	}
	struct lg_nwop *o = &s->bw[k];
	if (!o->n || gbs < o->min)
		o->min = gbs;
	if (gbs > o->max)
		o->max = gbs;
	if (o->n < LG_NW_SAMPLES) {
		o->samples = lg_grow(o->samples, &o->cap, o->n, sizeof(*o->samples));
		o->samples[o->n] = (float)gbs;
	}
	o->n++;
}

void lg_nw_line(struct nw_log *lg, const char *s, size_t n)
{
	struct lg_nwline l;
	if (lg_nwline_parse(s, n, &l) != 0) {
		lg->nw_bad++;
		return;
	}
	lg->nw_lines++;
	struct lg_nwseries *se = series_get(lg, &l);
	if (!se || (se->lines && l.t <= se->last_t))
		return; /* the same line twice (NCCL's logger and stderr), or no room */
	if (!se->lines)
		se->first_t = l.t;
	se->last_t = l.t;
	se->lines++;
	se->nranks = (int)l.nranks;
	if (l.name[0])
		copy_str(se->name, sizeof(se->name), l.name, strlen(l.name));
	se->ops += (uint64_t)l.ops;
	se->bytes += (uint64_t)l.bytes;
	se->slow_ops += (uint64_t)l.slow_ops;
	if (l.busy_pct >= 0) {
		if (se->busy_min < 0 || l.busy_pct < se->busy_min)
			se->busy_min = l.busy_pct;
		if (l.busy_pct > se->busy_max)
			se->busy_max = l.busy_pct;
	}
	for (int i = 0; i < l.ntop; i++)
		series_bw(se, l.top[i].op, l.top[i].gbs);
	if (l.hung > 0) {
		if (!se->hung_lines)
			se->first_hung_t = l.t;
		se->hung_lines++;
		lg_fact(lg, F_PLUGIN_HANG, UINT32_MAX, s, n);
	}
}

void lg_nw_release(struct nw_log *lg)
{
	for (size_t i = 0; i < lg->nnw; i++)
		for (size_t k = 0; k < lg->nw[i].nbw; k++)
			free(lg->nw[i].bw[k].samples);
	free(lg->nw);
	lg->nw = NULL;
	lg->nnw = lg->cap_nw = 0;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

double lg_nw_median(const struct lg_nwop *o)
{
	size_t n = o->n < LG_NW_SAMPLES ? o->n : LG_NW_SAMPLES;
	if (!n)
		return 0;
	qsort(o->samples, n, sizeof(*o->samples), cmp_float);
	return n % 2 ? o->samples[n / 2] : (o->samples[n / 2 - 1] + o->samples[n / 2]) / 2.0;
}

/* ---- the report ---- */

static json_t *jnum(double v)
{
	return json_real((double)(int64_t)(v * 100.0 + 0.5) / 100.0);
}

/* Unix seconds as "2026-12-01T22:20:01Z" ("" when out of the calendar's range). */
static json_t *jtime(double t)
{
	char buf[40] = "";
	time_t tt = (time_t)t;
	struct tm tm;
	if (t >= 0 && t < 1e12 && gmtime_r(&tt, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

static json_t *series_json(const struct lg_nwseries *s)
{
	json_t *o = json_object();
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)s->comm);
	json_object_set_new(o, "comm", json_string(hex));
	json_object_set_new(o, "name", json_string(s->name)); /* the plugin keeps names to [A-Za-z0-9._:/@+-] */
	json_object_set_new(o, "rank", json_integer(s->rank));
	json_object_set_new(o, "nranks", json_integer(s->nranks));
	json_object_set_new(o, "lines", json_integer((json_int_t)s->lines));
	json_object_set_new(o, "first_t", json_real(s->first_t));
	json_object_set_new(o, "last_t", json_real(s->last_t));
	json_object_set_new(o, "first", jtime(s->first_t));
	json_object_set_new(o, "last", jtime(s->last_t));
	json_object_set_new(o, "ops", json_integer((json_int_t)s->ops));
	json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
	json_object_set_new(o, "slow_ops", json_integer((json_int_t)s->slow_ops));
	json_object_set_new(o, "busy_pct_min", s->busy_min < 0 ? json_null() : jnum(s->busy_min));
	json_object_set_new(o, "busy_pct_max", s->busy_min < 0 ? json_null() : jnum(s->busy_max));
	json_t *bw = json_array();
	for (size_t k = 0; k < s->nbw; k++) {
		const struct lg_nwop *p = &s->bw[k];
		json_t *e = json_object();
		json_object_set_new(e, "op", json_string(p->op));
		json_object_set_new(e, "samples", json_integer((json_int_t)p->n));
		json_object_set_new(e, "min_gbs", jnum(p->min));
		json_object_set_new(e, "median_gbs", jnum(lg_nw_median(p)));
		json_object_set_new(e, "max_gbs", jnum(p->max));
		json_array_append_new(bw, e);
	}
	json_object_set_new(o, "busbw", bw);
	json_object_set_new(o, "hung_lines", json_integer((json_int_t)s->hung_lines));
	json_object_set_new(o, "first_hung", s->hung_lines ? jtime(s->first_hung_t) : json_null());
	return o;
}

json_t *lg_nw_report(const struct nw_log *lg)
{
	json_t *a = json_array();
	for (size_t i = 0; i < lg->nnw; i++)
		json_array_append_new(a, series_json(&lg->nw[i]));
	return a;
}
