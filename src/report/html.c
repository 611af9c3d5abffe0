/* SPDX-License-Identifier: Apache-2.0 */
/* The self-contained HTML report: charts, comparison, fingerprints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "util/util.h"

static const char css[] =
	"body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff}"
	"h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}"
	".meta{color:#666;font-size:13px}"
	".warn{background:#fff3c4;padding:4px 8px;font-size:13px}"
	"table{border-collapse:collapse;font-size:13px;margin:8px 0}"
	"th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"tr.slower td{background:#fde2e1}tr.faster td{background:#e2f4e6}"
	"td.diff{background:#fff3c4}"
	".verdict{font-weight:bold;padding:6px 10px;display:inline-block;border-radius:4px}"
	".bad{background:#fde2e1;color:#8a1c13}.good{background:#e2f4e6;color:#17602b}"
	".chart{margin:10px 0}"
	"code{font-size:12px;word-break:break-all}"
	".pair{display:flex;flex-wrap:wrap;gap:8px}.pair.other{display:none}"
	"#other:checked~.charts .pair.other{display:flex}#other:checked~.charts .pair.main{display:none}"
	"label{font-size:13px;color:#333}";

static void esc(FILE *f, const char *s)
{
	nw_xml_escape(f, s);
}

static void run_table(FILE *f, const struct nw_report_input *in)
{
	fputs("<table><tr><th>run</th><th>time (UTC)</th><th>host</th><th>source</th><th>NCCL</th>"
	      "<th>GPUs</th><th>ranks</th><th>rows</th><th>avg busbw (GB/s)</th></tr>\n", f);
	for (size_t r = 0; r < in->nruns; r++) {
		const struct nw_run *run = in->runs[r];
		fputs("<tr><td>", f);
		esc(f, in->labels[r]);
		fputs("</td><td>", f);
		esc(f, run->h.time);
		fputs("</td><td>", f);
		esc(f, run->h.host);
		fputs("</td><td>", f);
		esc(f, run->h.source);
		fputs("</td><td>", f);
		esc(f, run->h.nccl_version);
		fputs("</td><td>", f);
		esc(f, run->h.gpus);
		fputs("</td><td class=\"num\">", f);
		if (run->h.nranks > 0)
			fprintf(f, "%d", run->h.nranks);
		else
			fputs("?", f); /* unknown: the output did not say */
		fprintf(f, "</td><td class=\"num\">%zu</td><td class=\"num\">%.2f</td></tr>\n", run->nrows,
		        nw_run_avg_busbw(run));
	}
	fputs("</table>\n", f);
	/* a run that lacks figures says so where its figures are read */
	for (size_t r = 0; r < in->nruns; r++) {
		const struct nw_run *run = in->runs[r];
		if (!nw_run_incomplete(run) && !nw_run_interrupted(run))
			continue;
		fputs("<p class=\"warn\">", f);
		esc(f, in->labels[r]);
		if (nw_run_incomplete(run)) {
			fputs(" is incomplete: ", f);
			esc(f, nw_run_incomplete(run));
		} else {
			fputs(" was interrupted: it holds only the sizes measured before it was stopped", f);
		}
		fputs("; the figures it lacks are not charted or compared.</p>\n", f);
	}
}

/* The compared sizes as a table; only_flagged: just the slower and faster ones. */
static void cmp_table(FILE *f, const struct nw_cmp *c, int only_flagged)
{
	fputs("<table><tr><th>op</th><th>placement</th><th>size</th><th>busbw A</th><th>busbw B</th>"
	      "<th>time A (us)</th><th>time B (us)</th><th>change</th><th>verdict</th></tr>\n", f);
	for (size_t i = 0; i < c->nrows; i++) {
		const struct nw_cmp_row *r = &c->rows[i];
		if (only_flagged && r->verdict != NW_V_SLOWER && r->verdict != NW_V_FASTER)
			continue;
		char size[32];
		nw_format_size(r->size, size, sizeof(size));
		fprintf(f, "<tr class=\"%s\"><td>", nw_cmp_verdict_name(r->verdict));
		esc(f, r->op);
		fprintf(f, " ");
		esc(f, r->dtype);
		fprintf(f, "</td><td>%s</td><td class=\"num\">%s</td>", r->inplace ? "in-place" : "out-of-place", size);
		if (r->na)
			fprintf(f, "<td class=\"num\">%.2f</td>", r->busbw_a);
		else
			fputs("<td></td>", f);
		if (r->nb)
			fprintf(f, "<td class=\"num\">%.2f</td>", r->busbw_b);
		else
			fputs("<td></td>", f);
		if (r->na)
			fprintf(f, "<td class=\"num\">%.2f</td>", r->time_a);
		else
			fputs("<td></td>", f);
		if (r->nb)
			fprintf(f, "<td class=\"num\">%.2f</td>", r->time_b);
		else
			fputs("<td></td>", f);
		char ch[32];
		nw_cmp_format_change(ch, sizeof(ch), r->change);
		fprintf(f, "<td class=\"num\">%s</td>", r->within_noise ? "within noise" : isfinite(r->change) ? ch : "");
		fprintf(f, "<td>%s%s</td></tr>\n", nw_cmp_verdict_name(r->verdict), r->by_time ? " (time)" : "");
	}
	fputs("</table>\n", f);
}

/* The slower and faster size bands as a list; nothing when there are none. */
static void band_list(FILE *f, const struct nw_cmp *c)
{
	if (!c->nbands)
		return;
	fputs("<ul>\n", f);
	for (size_t i = 0; i < c->nbands; i++) {
		const struct nw_cmp_band *b = &c->bands[i];
		struct nw_cmp_band_text t;
		nw_cmp_band_text(b, &t);
		fprintf(f, "<li><b>%s</b> ", nw_cmp_verdict_name(b->verdict));
		esc(f, b->op);
		fprintf(f, " %s, %s&ndash;%s (%d sizes): %s %s on average, %s at %s</li>\n",
		        b->inplace ? "in-place" : "out-of-place", t.from, t.to, b->nsizes, t.mean,
		        b->by_time ? "speed (time)" : "busbw", t.worst, t.worst_size);
	}
	fputs("</ul>\n", f);
}

/* What differs, as compare prints it: most likely first, per-launch identifiers counted. */
static void diff_list(FILE *f, const struct nw_cmp *c)
{
	fputs("<p><b>What differs</b> (most likely to matter first):</p>\n<ul>\n", f);
	if (c->ndiffs == c->nignored)
		fputs("<li>nothing that matters recorded</li>\n", f);
	for (size_t i = 0; i < c->ndiffs; i++) {
		if (c->diffs[i].ignored)
			continue;
		fputs("<li>", f);
		esc(f, c->diffs[i].text);
		fputs("</li>\n", f);
	}
	if (c->nignored)
		fprintf(f, "<li>and %zu more: per-launch identifiers (job ids, ports, pids), never a cause</li>\n",
		        c->nignored);
	fputs("</ul>\n<p><b>In short:</b> ", f);
	esc(f, c->attribution);
	fputs("</p>\n", f);
}

static void cmp_section(FILE *f, const struct nw_report_input *in, const struct nw_report_opts *o)
{
	struct nw_cmp c;
	char err[NW_ERRLEN];
	fputs("<h2>Comparison</h2>\n", f);
	if (nw_compare(in->runs[0], in->runs[1], &o->cmp, &c, err, sizeof(err))) {
		fputs("<p>", f);
		esc(f, err);
		fputs("</p>\n", f);
		return;
	}
	if (c.not_comparable[0]) {
		fputs("<p><span class=\"verdict bad\">not comparable: ", f);
		esc(f, c.not_comparable);
		fputs("</span></p>\n", f);
	}
	fputs("<p>", f);
	esc(f, in->labels[1]);
	fputs(" against ", f);
	esc(f, in->labels[0]);
	char lat[32];
	nw_format_size(o->cmp.lat_below, lat, sizeof(lat));
	fprintf(f, ". Tolerance: busbw &plusmn;%g%% at %s and above, time &plusmn;%g%% below %s; "
	           "the spread of repeats where a run repeats a size.</p>\n",
	        o->cmp.tolerance * 100, lat, o->cmp.lat_tolerance * 100, lat);
	if (nw_cmp_regressed(&c))
		fprintf(f, "<p><span class=\"verdict bad\">regression: %d of %d sizes slower</span></p>\n", c.nslower,
		        c.nslower + c.nfaster + c.nsame);
	else
		fprintf(f, "<p><span class=\"verdict good\">no regression (%d sizes compared, %d faster)</span></p>\n",
		        c.nslower + c.nfaster + c.nsame, c.nfaster);
	band_list(f, &c);
	diff_list(f, &c);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && !(c.nslower + c.nfaster))
			continue;
		if (pass == 0)
			fputs("<p>Sizes beyond tolerance:</p>\n", f);
		else
			fprintf(f, "<details><summary>every compared size (%zu)</summary>\n", c.nrows);
		cmp_table(f, &c, pass == 0);
		if (pass == 1)
			fputs("</details>\n", f);
	}
	nw_cmp_release(&c);
}


/* A fingerprint value as text for the table ("" when absent). */
static void fp_text(const json_t *v, char *buf, size_t len)
{
	buf[0] = '\0';
	if (json_is_string(v))
		nw_strlcpy(buf, json_string_value(v), len);
	else if (json_is_integer(v))
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		nw_strlcpy(buf, json_is_true(v) ? "true" : "false", len);
}

/* Flatten a fingerprint: top-level scalars, then env.NAME. New object; caller decrefs. */
static json_t *flatten(const struct nw_run *run)
{
	json_t *fp = nw_fingerprint_of(run), *flat = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(fp, k, v) {
		if (json_is_object(v)) {
			const char *k2;
			json_t *v2;
			json_object_foreach(v, k2, v2) {
				char key[200];
				snprintf(key, sizeof(key), "%s.%s", k, k2);
				json_object_set(flat, key, v2);
			}
		} else if (!json_is_array(v)) {
			json_object_set(flat, k, v);
		}
	}
	json_decref(fp);
	return flat;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void fp_section(FILE *f, const struct nw_report_input *in)
{
	json_t **flat = nw_calloc(in->nruns + 1, sizeof(*flat));
	json_t *keys = json_object();
	for (size_t r = 0; r < in->nruns; r++) {
		flat[r] = flatten(in->runs[r]);
		const char *k;
		json_t *v;
		json_object_foreach(flat[r], k, v)
			json_object_set_new(keys, k, json_true());
	}
	size_t nk = json_object_size(keys), i = 0;
	const char **names = nw_calloc(nk + 1, sizeof(*names));
	const char *k;
	json_t *v;
	json_object_foreach(keys, k, v)
		names[i++] = k;
	qsort(names, nk, sizeof(*names), cmp_str);
	fputs("<h2>Fingerprints</h2>\n<p class=\"meta\">Cells that differ between runs are highlighted.</p>\n"
	      "<table><tr><th>field</th>", f);
	for (size_t r = 0; r < in->nruns; r++) {
		fputs("<th>", f);
		esc(f, in->labels[r]);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (i = 0; i < nk; i++) {
		char first[1024];
		fp_text(json_object_get(flat[0], names[i]), first, sizeof(first));
		int differs = 0, known = first[0] != '\0';
		for (size_t r = 1; r < in->nruns; r++) {
			char t[1024];
			fp_text(json_object_get(flat[r], names[i]), t, sizeof(t));
			differs |= strcmp(t, first) != 0;
			known |= t[0] != '\0';
		}
		if (!known)
			continue; /* unknown in every run */
		if (!strcmp(names[i], "time"))
			differs = 0; /* always differs; not a cause */
		fputs("<tr><td>", f);
		esc(f, names[i]);
		fputs("</td>", f);
		for (size_t r = 0; r < in->nruns; r++) {
			char t[1024];
			fp_text(json_object_get(flat[r], names[i]), t, sizeof(t));
			fprintf(f, "<td%s><code>", differs ? " class=\"diff\"" : "");
			esc(f, t);
			fputs("</code></td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	free(names);
	json_decref(keys);
	for (size_t r = 0; r < in->nruns; r++)
		json_decref(flat[r]);
	free(flat);
}

/*
 * The busbw and time charts of op, side by side, for one placement; main:
 * the placement asked for (shown), else the other (shown by the toggle,
 * left out when it has no rows). 1 when charted.
 */
static int chart_pair(FILE *f, const struct nw_report_input *in, const struct nw_report_opts *base, const char *op,
                      int main)
{
	struct nw_report_opts o = *base;
	char cerr[NW_ERRLEN];
	if (!main)
		o.inplace = !o.inplace;
	if (o.width <= 0)
		o.width = 540, o.height = 340;
	fprintf(f, "<div class=\"pair %s\">\n", main ? "main" : "other");
	int ok = nw_svg_chart(f, in, op, &o, cerr, sizeof(cerr)) == 0;
	if (ok) {
		o.latency = 1;
		nw_svg_chart(f, in, op, &o, cerr, sizeof(cerr));
	} else if (main) {
		fputs("<p class=\"meta\">", f);
		esc(f, cerr);
		fputs("</p>", f);
	}
	fputs("</div>\n", f);
	return ok;
}

/* Every op's charts, both placements with a toggle between them; returns how many ops were charted. */
static int chart_section(FILE *f, const struct nw_report_input *in, const struct nw_report_opts *base,
                         char (*ops)[24], size_t nops)
{
	struct nw_report_opts o = *base;
	struct nw_cmp c;
	char err[NW_ERRLEN];
	int have_cmp = in->nruns == 2 && nw_compare(in->runs[0], in->runs[1], &o.cmp, &c, err, sizeof(err)) == 0;
	o.marks = have_cmp ? &c : NULL;
	fputs("<h2>Bus bandwidth and time by size</h2>\n", f);
	fprintf(f, "<input type=\"checkbox\" id=\"other\"><label for=\"other\"> show %s rows instead</label>\n",
	        o.inplace ? "out-of-place" : "in-place");
	if (have_cmp)
		fputs("<p class=\"meta\">Red rings mark the sizes slower in the second run.</p>\n", f);
	fputs("<div class=\"charts\">\n", f);
	int charts = 0;
	for (size_t i = 0; i < nops; i++) {
		charts += chart_pair(f, in, &o, ops[i], 1);
		chart_pair(f, in, &o, ops[i], 0);
	}
	fputs("</div>\n", f);
	if (have_cmp)
		nw_cmp_release(&c);
	return charts;
}

void nw_html_head(FILE *f, const char *title, const char *style)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
	      "<title>", f);
	esc(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	esc(f, title);
	fputs("</h1>\n", f);
}

int nw_report_html(FILE *f, const struct nw_report_input *in, const struct nw_report_opts *o,
                   char *err, size_t errlen)
{
	char (*ops)[24];
	size_t nops;
	nw_report_ops(in, &ops, &nops);
	if (!nops) {
		free(ops);
		return nw_seterr(err, errlen, "the runs hold no result rows: nothing to report");
	}
	const char *title = o->title && *o->title ? o->title : "ncclwatch report";
	char now[32];
	nw_utc_iso(now, sizeof(now));
	nw_html_head(f, title, css);
	fprintf(f, "<p class=\"meta\">generated %s by ncclwatch %s; busbw as nccl-tests computes it "
	           "(GB = 10<sup>9</sup> bytes); %s rows</p>\n",
	        now, NW_VERSION, o->inplace ? "in-place" : "out-of-place");
	fputs("<h2>Runs</h2>\n", f);
	run_table(f, in);
	int charts = chart_section(f, in, o, ops, nops);
	free(ops);
	if (in->nruns == 2)
		cmp_section(f, in, o);
	fp_section(f, in);
	fputs("</body>\n</html>\n", f);
	if (!charts)
		return nw_seterr(err, errlen, "no %s rows in these runs: nothing to chart (try --inplace)",
		                 o->inplace ? "in-place" : "out-of-place");
	return ferror(f) ? nw_seterr(err, errlen, "write error") : 0;
}
