/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result: runs and rows of the result model (adding, releasing,
 * bandwidths, per-iteration statistics, the peak and the average) and
 * their renderings: nccl-tests' text table, ncclwatch's JSON document (to
 * and from) and CSV.
 */
#include "model/result.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "util/strbuf.h"
#include "util/util.h"

void nw_run_init(struct nw_run *run)
{
	memset(run, 0, sizeof(*run));
}

void nw_run_release(struct nw_run *run)
{
	for (size_t i = 0; i < run->nrows; i++)
		nw_row_release(&run->rows[i]);
	free(run->rows);
	if (run->h.extra)
		json_decref(run->h.extra);
	nw_run_init(run);
}

struct nw_row *nw_run_add(struct nw_run *run, const struct nw_row *row)
{
	if (run->nrows == run->cap) {
		run->cap = run->cap ? run->cap * 2 : 64;
		run->rows = nw_realloc(run->rows, run->cap * sizeof(*run->rows));
	}
	run->rows[run->nrows] = *row;
	return &run->rows[run->nrows++];
}

void nw_row_release(struct nw_row *row)
{
	free(row->rank_times);
	free(row->iter_us);
	row->rank_times = NULL;
	row->nrank_times = 0;
	row->iter_us = NULL;
	row->niter = 0;
}

static int cmp_us(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* nccl-tests' percentile index: the ceil(n*p/100)-th smallest, 0-based. */
static int pct_index(int n, int p)
{
	int i = (n * p + 99) / 100 - 1;
	return i < n - 1 ? (i < 0 ? 0 : i) : n - 1;
}

int nw_row_iter_stats(const struct nw_row *row, struct nw_iter_stats *st)
{
	memset(st, 0, sizeof(*st));
	int skip = row->iter_skip > 0 ? row->iter_skip : 0;
	if (!row->iter_us || row->niter <= skip)
		return -1;
	int n = row->niter - skip;
	double *v = nw_malloc((size_t)n * sizeof(double));
	memcpy(v, row->iter_us + skip, (size_t)n * sizeof(double));
	qsort(v, (size_t)n, sizeof(double), cmp_us);
	double sum = 0, var = 0;
	for (int i = 0; i < n; i++)
		sum += v[i];
	st->n = n;
	st->avg = sum / n;
	for (int i = 0; i < n; i++)
		var += (v[i] - st->avg) * (v[i] - st->avg);
	st->min = v[0];
	st->max = v[n - 1];
	st->p50 = v[n / 2];
	st->p95 = v[pct_index(n, 95)];
	st->p99 = v[pct_index(n, 99)];
	st->stdev = sqrt(var / n);
	st->cv_pct = st->avg > 0 ? st->stdev / st->avg * 100 : 0;
	free(v);
	return 0;
}

int nw_run_has_iters(const struct nw_run *run)
{
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].niter > 0)
			return 1;
	return 0;
}

void nw_row_compute_bw(struct nw_row *row)
{
	const struct nw_coll *c = nw_coll_find(row->op);
	row->algbw_gbs = nw_algbw(row->size_bytes, row->time_us) * (c ? nw_algbw_factor(c->op, row->nranks) : 1);
	row->busbw_gbs = c ? row->algbw_gbs * nw_busbw_factor(c->op, row->nranks) : 0;
}

int nw_run_interrupted(const struct nw_run *run)
{
	return run->h.extra && json_is_true(json_object_get(run->h.extra, "interrupted"));
}

const char *nw_run_incomplete(const struct nw_run *run)
{
	if (!run->h.extra || !json_is_true(json_object_get(run->h.extra, "incomplete")))
		return NULL;
	const char *why = json_string_value(json_object_get(run->h.extra, "incomplete_reason"));
	return why && *why ? why : "the output it came from was cut short";
}

double nw_run_avg_busbw(const struct nw_run *run)
{
	double sum = 0;
	for (size_t i = 0; i < run->nrows; i++)
		sum += run->rows[i].busbw_gbs;
	return run->nrows ? sum / (double)run->nrows : 0;
}

const struct nw_row *nw_run_peak(const struct nw_run *run, const char *op)
{
	const struct nw_row *best = NULL;
	for (size_t k = 0; k < run->nrows; k++) {
		const struct nw_row *r = &run->rows[k];
		if (!strcmp(r->op, op) && (!best || r->busbw_gbs > best->busbw_gbs))
			best = r;
	}
	return best;
}

/*
 * nccl-tests' number rendering: two decimals while the integer part is
 * short, then one, then none, then exponent form, all in a fixed width.
 */
static void nt_float(char *buf, size_t len, double v, int width)
{
	int power = 0;
	for (uint64_t p = 1; v >= (double)p && power < 20; p *= 10)
		power++;
	if (power < width - 2)
		snprintf(buf, len, "%*.2f", width, v);
	else if (power < width - 1)
		snprintf(buf, len, "%*.1f", width, v);
	else if (power < width + 1)
		snprintf(buf, len, "%*.0f", width, v);
	else
		snprintf(buf, len, "%*.1e", width, v);
}

/* One placement's columns appended to sb: time, algbw, busbw, #wrong, then with -I the iteration statistics. */
static void nt_body(struct nw_strbuf *sb, const struct nw_row *r)
{
	char t[32], a[32], b[32];
	nt_float(t, sizeof(t), r->time_us, 7);
	nt_float(a, sizeof(a), r->algbw_gbs, 6);
	nt_float(b, sizeof(b), r->busbw_gbs, 6);
	if (r->wrong >= 0)
		nw_strbuf_addf(sb, "  %7s  %6s  %6s  %6g", t, a, b, (double)r->wrong);
	else
		nw_strbuf_addf(sb, "  %7s  %6s  %6s    N/A", t, a, b);
	struct nw_iter_stats st;
	if (!nw_row_iter_stats(r, &st)) {
		char mn[32], mx[32], p99[32], cv[32];
		nt_float(mn, sizeof(mn), st.min, 7);
		nt_float(mx, sizeof(mx), st.max, 7);
		nt_float(p99, sizeof(p99), st.p99, 7);
		nt_float(cv, sizeof(cv), st.cv_pct, 7);
		nw_strbuf_addf(sb, "  %7s  %7s  %7s  %7s", mn, mx, p99, cv);
	}
}

void nw_nt_format_row(char *buf, size_t len, const struct nw_row *oop, const struct nw_row *ip)
{
	const struct nw_row *r = oop ? oop : ip;
	if (!len)
		return;
	buf[0] = '\0';
	if (!r)
		return;
	/* nccl-tests' sendrecv loops over the reduction ops like the reducing collectives and prints "sum" */
	const char *redop = !strcmp(r->op, "sendrecv") && !strcmp(r->redop, "none") ? "sum" : r->redop;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addf(&sb, "%12" PRIu64 "  %12" PRIu64 "  %8s  %6s  %6i", r->size_bytes, r->count, r->dtype, redop,
	               r->root);
	if (oop)
		nt_body(&sb, oop);
	else
		nw_strbuf_addf(&sb, "%32s", "");
	if (ip)
		nt_body(&sb, ip);
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/*
 * nccl-tests' three header lines (its writeResultHeader): with per-iteration
 * columns, with a timestamp column, and with "cputime" for "time" under -C 1.
 */
void nw_nt_print_header(FILE *f, int per_iter, int timestamps, int cputime)
{
	const char *tm = cputime ? "cputime" : "time";
	const char *lbl = timestamps ? "timestamp" : "", *fmt = timestamps ? "%Y-%m-%d %H:%M:%S" : "";
	int pad = timestamps ? 19 : 0;
	if (per_iter) {
		fprintf(f, "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                "
		        "in-place (+ per-iteration)\n", "", "", "", "", "");
		fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  "
		        "%7s %*s\n", "size", "count", "type", "redop", "root", tm, "algbw", "busbw", "#wrong", "i_min", "i_max",
		        "i_p99", "i_cv%", tm, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", pad, lbl);
		fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  "
		        "%7s %*s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
		        "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", pad, fmt);
		return;
	}
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
	        "", "");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type", "redop",
	        "root", tm, "algbw", "busbw", "#wrong", tm, "algbw", "busbw", "#wrong", pad, lbl);
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "", "",
	        "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", pad, fmt);
}

void nw_nt_print_table_header(FILE *f)
{
	nw_nt_print_header(f, 0, 0, 0);
}

void nw_nt_print_table_header_iter(FILE *f)
{
	nw_nt_print_header(f, 1, 0, 0);
}

void nw_nt_print_footer(FILE *f, int64_t wrong_total, double avg_busbw)
{
	fprintf(f, "# Out of bounds values : %" PRId64 " %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
	fprintf(f, "# Avg bus bandwidth    : %g \n", avg_busbw);
	fputs("#\n", f);
}

/* JSON numbers: round to what is meaningful so files stay readable. */
static json_t *jnum(double v, double scale)
{
	if (!isfinite(v))
		return json_null();
	return json_real(round(v * scale) / scale);
}

static void set_str(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, json_string(v ? v : ""));
}

json_t *nw_row_iters_to_json(const struct nw_row *r)
{
	json_t *o = json_object(), *t = json_array();
	struct nw_iter_stats st;
	json_object_set_new(o, "skipped_iterations", json_integer(r->iter_skip));
	if (!nw_row_iter_stats(r, &st)) {
		json_object_set_new(o, "min_us", jnum(st.min, 1e6));
		json_object_set_new(o, "max_us", jnum(st.max, 1e6));
		json_object_set_new(o, "p99_us", jnum(st.p99, 1e6));
		json_object_set_new(o, "cv_pct", jnum(st.cv_pct, 1e4));
	}
	for (int i = 0; i < r->niter; i++)
		json_array_append_new(t, jnum(r->iter_us[i], 1e6));
	json_object_set_new(o, "times_us", t);
	return o;
}

void nw_row_iters_from_json(const json_t *pi, struct nw_row *r)
{
	const json_t *t = json_object_get(pi, "times_us");
	size_t n = json_array_size(t);
	if (!n || n > 100000000)
		return;
	r->iter_us = nw_calloc(n, sizeof(double));
	for (size_t i = 0; i < n; i++)
		r->iter_us[i] = json_is_number(json_array_get(t, i)) ? json_number_value(json_array_get(t, i)) : 0;
	r->niter = (int)n;
	const json_t *k = json_object_get(pi, "skipped_iterations");
	r->iter_skip = json_is_integer(k) && json_integer_value(k) > 0 && json_integer_value(k) < (json_int_t)n
	                   ? (int)json_integer_value(k)
	                   : 0;
}

/* One results row as its JSON object (with its per-rank times when per_rank). */
static json_t *row_to_json(const struct nw_row *r, int per_rank)
{
	json_t *o = json_object();
	set_str(o, "op", r->op);
	set_str(o, "dtype", r->dtype);
	set_str(o, "redop", r->redop);
	json_object_set_new(o, "root", json_integer(r->root));
	json_object_set_new(o, "size_bytes", json_integer((json_int_t)r->size_bytes));
	json_object_set_new(o, "count", json_integer((json_int_t)r->count));
	json_object_set_new(o, "nranks", r->nranks > 0 ? json_integer(r->nranks) : json_null()); /* unknown */
	json_object_set_new(o, "inplace", json_boolean(r->inplace));
	json_object_set_new(o, "time_us", jnum(r->time_us, 1e6));
	json_object_set_new(o, "algbw_gbs", jnum(r->algbw_gbs, 10000));
	json_object_set_new(o, "busbw_gbs", jnum(r->busbw_gbs, 10000));
	json_object_set_new(o, "wrong", r->wrong >= 0 ? json_integer(r->wrong) : json_null());
	if (per_rank && r->nrank_times) {
		json_t *ranks = json_array();
		for (int k = 0; k < r->nrank_times; k++) {
			const struct nw_rank_time *t = &r->rank_times[k];
			json_t *x = json_object();
			json_object_set_new(x, "rank", json_integer(t->rank));
			set_str(x, "host", t->host);
			json_object_set_new(x, "gpu", json_integer(t->gpu));
			json_object_set_new(x, "time_us", jnum(t->time_us, 1e6));
			json_array_append_new(ranks, x);
		}
		json_object_set_new(o, "ranks", ranks);
	}
	if (r->niter > 0)
		json_object_set_new(o, "per_iter", nw_row_iters_to_json(r));
	if (r->noise > 0)
		json_object_set_new(o, "noise", jnum(r->noise, 1e6));
	return o;
}

json_t *nw_run_to_json(const struct nw_run *run, int per_rank)
{
	const struct nw_run_header *h = &run->h;
	json_t *jr = json_object();
	set_str(jr, "tool_version", h->tool_version);
	set_str(jr, "source", h->source);
	set_str(jr, "backend", h->backend);
	set_str(jr, "nccl_version", h->nccl_version);
	set_str(jr, "nccl_path", h->nccl_path);
	set_str(jr, "driver", h->driver);
	set_str(jr, "cuda_driver", h->cuda_driver);
	set_str(jr, "host", h->host);
	set_str(jr, "gpus", h->gpus);
	set_str(jr, "cmdline", h->cmdline);
	set_str(jr, "time", h->time);
	if (h->input[0])
		set_str(jr, "input", h->input);
	json_object_set_new(jr, "nranks", h->nranks > 0 ? json_integer(h->nranks) : json_null()); /* unknown */
	json_object_set_new(jr, "nhosts", json_integer(h->nhosts));
	json_object_set_new(jr, "link_gbs", h->link_gbs > 0 ? jnum(h->link_gbs, 1000) : json_null());
	if (h->extra)
		json_object_set(jr, "extra", h->extra);

	json_t *rows = json_array();
	for (size_t i = 0; i < run->nrows; i++) {
		json_t *o = row_to_json(&run->rows[i], per_rank);
		json_array_append_new(rows, o);
	}
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.results/1"));
	json_object_set_new(doc, "run", jr);
	json_object_set_new(doc, "results", rows);
	return doc;
}

static void get_str(const json_t *o, const char *k, char *dst, size_t len)
{
	const json_t *v = json_object_get(o, k);
	nw_strlcpy(dst, json_is_string(v) ? json_string_value(v) : "", len);
}

static double get_num(const json_t *o, const char *k, double dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

int nw_run_from_json(const json_t *doc, struct nw_run *run, char *err, size_t errlen)
{
	nw_run_init(run);
	const json_t *schema = json_object_get(doc, "schema");
	if (!json_is_string(schema) || strncmp(json_string_value(schema), "ncclwatch.results/", 18))
		return nw_seterr(err, errlen, "not an ncclwatch results document (no \"schema\": \"ncclwatch.results/1\")");
	const json_t *jr = json_object_get(doc, "run");
	const json_t *rows = json_object_get(doc, "results");
	if (!json_is_object(jr) || !json_is_array(rows))
		return nw_seterr(err, errlen, "results document lacks \"run\" or \"results\"");
	struct nw_run_header *h = &run->h;
	get_str(jr, "tool_version", h->tool_version, sizeof(h->tool_version));
	get_str(jr, "source", h->source, sizeof(h->source));
	get_str(jr, "backend", h->backend, sizeof(h->backend));
	get_str(jr, "nccl_version", h->nccl_version, sizeof(h->nccl_version));
	get_str(jr, "nccl_path", h->nccl_path, sizeof(h->nccl_path));
	get_str(jr, "driver", h->driver, sizeof(h->driver));
	get_str(jr, "cuda_driver", h->cuda_driver, sizeof(h->cuda_driver));
	get_str(jr, "host", h->host, sizeof(h->host));
	get_str(jr, "gpus", h->gpus, sizeof(h->gpus));
	get_str(jr, "cmdline", h->cmdline, sizeof(h->cmdline));
	get_str(jr, "time", h->time, sizeof(h->time));
	get_str(jr, "input", h->input, sizeof(h->input));
	h->nranks = (int)get_num(jr, "nranks", 0);
	h->nhosts = (int)get_num(jr, "nhosts", 0);
	h->link_gbs = get_num(jr, "link_gbs", 0);
	const json_t *extra = json_object_get(jr, "extra");
	if (json_is_object(extra))
		h->extra = json_deep_copy(extra);

	size_t i;
	const json_t *o;
	json_array_foreach(rows, i, o) {
		if (!json_is_object(o)) {
			nw_run_release(run);
			return nw_seterr(err, errlen, "results[%zu] is not an object", i);
		}
		struct nw_row r;
		memset(&r, 0, sizeof(r));
		get_str(o, "op", r.op, sizeof(r.op));
		get_str(o, "dtype", r.dtype, sizeof(r.dtype));
		get_str(o, "redop", r.redop, sizeof(r.redop));
		r.root = (int)get_num(o, "root", -1);
		double sz = get_num(o, "size_bytes", -1), cnt = get_num(o, "count", 0);
		if (!r.op[0] || sz < 0) {
			nw_run_release(run);
			return nw_seterr(err, errlen, "results[%zu] lacks \"op\" or \"size_bytes\"", i);
		}
		r.size_bytes = (uint64_t)sz;
		r.count = cnt > 0 ? (uint64_t)cnt : 0;
		r.nranks = (int)get_num(o, "nranks", h->nranks);
		r.inplace = json_is_true(json_object_get(o, "inplace"));
		r.time_us = get_num(o, "time_us", 0);
		r.algbw_gbs = get_num(o, "algbw_gbs", 0);
		r.busbw_gbs = get_num(o, "busbw_gbs", 0);
		const json_t *w = json_object_get(o, "wrong");
		r.wrong = json_is_integer(w) ? (int64_t)json_integer_value(w) : -1;
		const json_t *ranks = json_object_get(o, "ranks");
		if (json_is_array(ranks) && json_array_size(ranks)) {
			size_t k;
			const json_t *x;
			r.rank_times = nw_calloc(json_array_size(ranks), sizeof(*r.rank_times));
			json_array_foreach(ranks, k, x) {
				struct nw_rank_time *t = &r.rank_times[r.nrank_times++];
				t->rank = (int)get_num(x, "rank", (double)k);
				t->gpu = (int)get_num(x, "gpu", -1);
				get_str(x, "host", t->host, sizeof(t->host));
				t->time_us = get_num(x, "time_us", 0);
			}
		}
		nw_row_iters_from_json(json_object_get(o, "per_iter"), &r);
		double noise = get_num(o, "noise", 0);
		r.noise = noise > 0 && isfinite(noise) ? noise : 0;
		nw_run_add(run, &r);
	}
	return 0;
}

int nw_run_write_json(const struct nw_run *run, FILE *f, int per_rank)
{
	json_t *doc = nw_run_to_json(run, per_rank);
	int rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
	json_decref(doc);
	fputc('\n', f);
	return rc == 0 && !ferror(f) ? 0 : -1;
}

void nw_csv_print_header(FILE *f, int per_rank)
{
	fputs("op,dtype,redop,root,size_bytes,count,nranks,inplace,time_us,algbw_gbs,busbw_gbs,wrong", f);
	if (per_rank)
		fputs(",rank,host,gpu", f);
	fputc('\n', f);
}

static void csv_line(FILE *f, const struct nw_row *r, double time_us, int per_rank,
                     const struct nw_rank_time *t)
{
	double alg = r->time_us > 0 ? r->algbw_gbs * r->time_us / time_us : 0;
	double bus = r->time_us > 0 ? r->busbw_gbs * r->time_us / time_us : 0;
	if (!t) {
		alg = r->algbw_gbs;
		bus = r->busbw_gbs;
	}
	fprintf(f, "%s,%s,%s,%d,%" PRIu64 ",%" PRIu64 ",", r->op, r->dtype, r->redop, r->root, r->size_bytes,
	        r->count);
	if (r->nranks > 0) /* empty when unknown */
		fprintf(f, "%d", r->nranks);
	fprintf(f, ",%d,%.3f,%.4f,%.4f,", r->inplace, time_us, alg, bus);
	if (r->wrong >= 0)
		fprintf(f, "%" PRId64, r->wrong);
	if (per_rank) {
		if (t)
			fprintf(f, ",%d,%s,%d", t->rank, t->host, t->gpu);
		else
			fputs(",all,,", f);
	}
	fputc('\n', f);
}

void nw_csv_print_row(FILE *f, const struct nw_row *r, int per_rank)
{
	csv_line(f, r, r->time_us, per_rank, NULL);
	if (per_rank)
		for (int k = 0; k < r->nrank_times; k++)
			csv_line(f, r, r->rank_times[k].time_us, per_rank, &r->rank_times[k]);
}

int nw_run_write_csv(const struct nw_run *run, FILE *f, int per_rank)
{
	nw_csv_print_header(f, per_rank);
	for (size_t i = 0; i < run->nrows; i++)
		nw_csv_print_row(f, &run->rows[i], per_rank);
	return ferror(f) ? -1 : 0;
}

void nw_header_fill_local(struct nw_run_header *h, const char *source, int argc, char **argv)
{
	nw_strlcpy(h->tool_version, NW_VERSION, sizeof(h->tool_version));
	nw_strlcpy(h->source, source, sizeof(h->source));
	nw_hostname(h->host, sizeof(h->host));
	nw_utc_iso(h->time, sizeof(h->time));
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int i = 0; i < argc; i++)
		nw_strbuf_addf(&sb, "%s%s", i ? " " : "", argv[i]);
	nw_strlcpy(h->cmdline, sb.buf, sizeof(h->cmdline));
	nw_strbuf_release(&sb);
}
