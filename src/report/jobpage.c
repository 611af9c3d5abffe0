/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobpage: the report of one training job run under `ncclwatch run`
 * (report.h): one self-contained HTML page (inline CSS and SVG, no script,
 * nothing fetched) with how the job ran and ended, every hang, abort and
 * anomaly, what each communicator moved, bandwidth, lateness and exposed
 * communication over time, NCCL's choices as its log says them, the
 * clocks of the nodes, and links to the timeline and the kept files.
 */
#include "report/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job/job.h"
#include "report/jobpage_int.h"
#include "util/util.h"

static const char *const palette[] = {
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999",
};

static const char css[] =
	"body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1280px}"
	"h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}"
	"table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;"
	"vertical-align:top}th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}"
	".meta{color:#666}.bad{background:#fde2e1}.warn{background:#fff3cd}.ok{color:#1a7f37}"
	".banner{padding:8px 12px;border:2px solid #c62828;background:#fde2e1;font-weight:600}"
	"svg{display:block;margin:6px 0 14px}code{background:#f4f4f4;padding:0 3px}.t{white-space:nowrap}";

static void esc(FILE *f, const char *s)
{
	nw_xml_escape(f, s ? s : "");
}

/* "2026-12-03 16:02:11 UTC" for realtime ns. */
static void when(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* ---- a chart over time: lines over the view's bins ---- */

static double chart_max(const struct nw_jv_chart *c, size_t nbins)
{
	double m = 0;
	for (size_t i = 0; i < c->nlines; i++)
		for (size_t b = 0; b < nbins; b++)
			if (!isnan(c->lines[i].y[b]) && c->lines[i].y[b] > m)
				m = c->lines[i].y[b];
	return m;
}

static double nice_max(double max)
{
	if (max <= 0)
		return 1;
	double p = pow(10, floor(log10(max)));
	for (double k = 1; k <= 10; k += (k < 2 ? 1 : k < 5 ? 3 : 5))
		if (k * p >= max)
			return k * p;
	return 10 * p;
}

static void chart_axes(FILE *f, const struct nw_job_view *v, const struct nw_jv_chart *c, double ymax, int W, int H,
                       int L, int B)
{
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
	for (int i = 0; i <= 4; i++) {
		double y = H - B - (H - B - 24) * i / 4.0;
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", L, W - 10, y, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n", L - 4, y + 4,
		        ymax * i / 4);
	}
	double span_s = (double)v->bin_ns * (double)v->nbins / 1e9;
	for (int i = 0; i <= 5; i++) {
		double x = L + (W - 10 - L) * i / 5.0;
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">%.3gs</text>", x, H - B + 16,
		        i == 0 ? "start" : i == 5 ? "end" : "middle", span_s * i / 5);
	}
	fprintf(f, "<text x=\"%d\" y=\"14\" font-size=\"12\" font-weight=\"600\">", L);
	esc(f, c->title);
	fprintf(f, " (%s)</text>\n", c->unit);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#666\">time since the job started</text>\n",
	        W / 2 - 60, H - 4);
}

/* One line: a path broken where a bin has no value; points as small circles with their value as tooltip. */
static void chart_line(FILE *f, const struct nw_job_view *v, const struct nw_jv_line *l, const char *col,
                       double ymax, int W, int H, int L, int B)
{
	double dx = (double)(W - 10 - L) / (double)v->nbins;
	int open = 0;
	fputs("<path fill=\"none\" stroke-width=\"2\" stroke=\"", f);
	fputs(col, f);
	fputs("\" d=\"", f);
	for (size_t b = 0; b < v->nbins; b++) {
		if (isnan(l->y[b])) {
			open = 0;
			continue;
		}
		double x = L + dx * ((double)b + 0.5), y = H - B - (H - B - 24) * l->y[b] / ymax;
		fprintf(f, "%c%.1f %.1f ", open ? 'L' : 'M', x, y);
		open = 1;
	}
	fputs("\"/>\n", f);
	for (size_t b = 0; b < v->nbins; b++) {
		if (isnan(l->y[b]))
			continue;
		double x = L + dx * ((double)b + 0.5), y = H - B - (H - B - 24) * l->y[b] / ymax;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>", x, y, col);
		esc(f, l->label);
		fprintf(f, ": %.4g at %.3gs</title></circle>", l->y[b], (double)v->bin_ns * ((double)b + 0.5) / 1e9);
	}
	fputc('\n', f);
}

static void chart(FILE *f, const struct nw_job_view *v, const struct nw_jv_chart *c)
{
	const int W = 900, H = 300, L = 64, B = 34;
	double ymax = nice_max(chart_max(c, v->nbins));
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\"><title>", W, H);
	esc(f, c->title);
	fputs("</title>\n", f);
	chart_axes(f, v, c, ymax, W, H, L, B);
	for (size_t i = 0; i < c->nlines; i++)
		chart_line(f, v, &c->lines[i], palette[i % NW_ARRAY_LEN(palette)], ymax, W, H, L, B);
	for (size_t i = 0; i < c->nlines; i++) {
		int y = 28 + 15 * (int)i;
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
		           "font-size=\"11\">", W - 150, y, palette[i % NW_ARRAY_LEN(palette)], W - 134, y + 4);
		esc(f, c->lines[i].label);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

/* ---- sections ---- */

static void exit_text(FILE *f, const json_t *x)
{
	const char *sig = json_string_value(json_object_get(x, "signal"));
	fprintf(f, "status %d", (int)json_integer_value(json_object_get(x, "status")));
	if (sig)
		fprintf(f, " (ended by %s)", sig);
	if (json_is_true(json_object_get(x, "interrupted"))) {
		fputs(", interrupted by ", f);
		esc(f, jstr(x, "by"));
	}
	if (json_is_true(json_object_get(x, "not_started")))
		fputs(", the command could not be run", f);
}

static void summary(FILE *f, const struct nw_job_view *v, const struct nw_report_job_links *links)
{
	const json_t *p0 = v->nodes[0].part;
	char s[40], e[40];
	when(v->start_ns, s, sizeof(s));
	when(v->end_ns, e, sizeof(e));
	if (v->interrupted)
		fputs("<p class=\"banner\">INTERRUPTED: the job was stopped before it ended by itself; the figures cover it "
		      "up to then.</p>\n",
		      f);
	fputs("<table>\n<tr><th>command</th><td><code>", f);
	const json_t *a;
	size_t i;
	json_array_foreach(json_object_get(p0, "command"), i, a) {
		fputs(i ? " " : "", f);
		esc(f, json_string_value(a));
	}
	fprintf(f, "</code></td></tr>\n<tr><th>ran</th><td>%s to %s (%.1f s)</td></tr>\n", s, e,
	        (double)(v->end_ns - v->start_ns) / 1e9);
	fputs("<tr><th>ended</th><td>", f);
	exit_text(f, nw_job_view_exit(v));
	fprintf(f, "</td></tr>\n<tr><th>nodes</th><td>%zu:", v->nnodes);
	for (size_t n = 0; n < v->nnodes; n++) {
		fputs(n ? ", " : " ", f);
		esc(f, v->nodes[n].host);
	}
	fprintf(f, "</td></tr>\n<tr><th>ranks</th><td>%d (the largest communicator)</td></tr>\n", v->world);
	for (size_t n = 0; n < v->nnodes; n++) {
		const json_t *m = json_object_get(v->nodes[n].part, "mode");
		fputs("<tr><th>watched", f);
		if (v->nnodes > 1) {
			fputs(" on ", f);
			esc(f, v->nodes[n].host);
		}
		fputs("</th><td><b>", f);
		esc(f, jstr(m, "mode"));
		fputs("</b>: ", f);
		esc(f, jstr(m, "why"));
		const json_t *k;
		json_array_foreach(json_object_get(v->nodes[n].part, "kept"), i, k) {
			fputs("<br>", f);
			esc(f, json_string_value(k));
		}
		fputs("</td></tr>\n", f);
	}
	if (links && links->trace) {
		fputs("<tr><th>timeline</th><td><a href=\"", f);
		esc(f, links->trace);
		fputs("\">", f);
		esc(f, links->trace);
		fputs("</a>: every rank's collectives on one time axis (Chrome trace JSON: open it in "
		      "ui.perfetto.dev or chrome://tracing)</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void incidents(FILE *f, const struct nw_job_view *v)
{
	fprintf(f, "<h2>Hangs, aborts and anomalies (%zu)</h2>\n", v->ninc);
	if (!v->ninc) {
		fputs("<p class=\"ok\">none: no hang, no rank ended without its communicator, nothing the plugin flagged, "
		      "and the job ended with status 0.</p>\n",
		      f);
		return;
	}
	fputs("<table>\n<tr><th>at</th><th>node</th><th>what</th><th></th></tr>\n", f);
	for (size_t i = 0; i < v->ninc; i++) {
		const struct nw_jv_incident *x = &v->inc[i];
		int bad = !strcmp(x->kind, "hang") || !strcmp(x->kind, "abort") || !strcmp(x->kind, "exit") ||
		          !strcmp(x->kind, "nccl") || !strcmp(x->kind, "interrupted");
		fprintf(f, "<tr class=\"%s\" data-kind=\"%s\"><td class=\"n t\">+%.1f s</td><td>", bad ? "bad" : "warn",
		        x->kind, x->t_ns > v->start_ns ? (double)(x->t_ns - v->start_ns) / 1e9 : 0.0);
		esc(f, x->host);
		fprintf(f, "</td><td>%s</td><td>", x->kind);
		esc(f, x->text);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* Per communicator and op: calls and bytes over every rank, calls per rank, busbw of the timed ones. */
static void traffic(FILE *f, const struct nw_job_view *v)
{
	fputs("<h2>What each communicator moved</h2>\n<table>\n<tr><th>communicator</th><th>ranks</th><th>op</th>"
	      "<th>calls (all ranks)</th><th>bytes (all ranks)</th><th>calls per rank</th><th>busbw GB/s</th></tr>\n",
	      f);
	for (size_t i = 0; i < v->nranks;) {
		size_t j = i;
		uint64_t sum[NWS_NOPS][5] = { { 0 } };
		double fb[NWS_NOPS] = { 0 };
		int seen = 0;
		for (; j < v->nranks && v->ranks[j].comm == v->ranks[i].comm; j++, seen++)
			for (unsigned op = 0; op < NWS_NOPS; op++) {
				for (int k = 0; k < 5; k++)
					sum[op][k] += v->ranks[j].per_op[op][k];
				fb[op] += v->ranks[j].per_op_fb[op];
			}
		for (unsigned op = 0; op < NWS_NOPS; op++) {
			if (!sum[op][0])
				continue;
			fprintf(f, "<tr><td><code>%016" PRIx64 "</code> ", v->ranks[i].comm);
			esc(f, v->ranks[i].name);
			fprintf(f, "</td><td class=\"n\">%d (%d seen)</td><td>%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
			           "</td><td class=\"n\">%.1f</td><td class=\"n\">",
			        v->ranks[i].nranks, seen, nws_op_name(op), sum[op][0], sum[op][1], (double)sum[op][0] / seen);
			if (sum[op][4])
				fprintf(f, "%.2f", fb[op] / (double)sum[op][4]);
			else
				fputs("not timed", f);
			fputs("</td></tr>\n", f);
		}
		i = j;
	}
	fputs("</table>\n", f);
}

/* Every rank and op, as the plugin counted them (the figures tests compare with what was fed). */
static void per_rank(FILE *f, const struct nw_job_view *v)
{
	fprintf(f, "<details><summary>Every rank (%zu stats files)</summary>\n<table>\n<tr><th>communicator</th><th>rank</th>"
	           "<th>node</th><th>pid</th><th>state</th><th>op</th><th>calls</th><th>bytes</th><th>timeline kept</th>"
	           "<th>notes</th></tr>\n", v->nranks);
	for (size_t i = 0; i < v->nranks; i++) {
		const struct nw_jv_rank *r = &v->ranks[i];
		for (unsigned op = 0; op < NWS_NOPS; op++) {
			if (!r->per_op[op][0])
				continue;
			fprintf(f, "<tr data-comm=\"%016" PRIx64 "\" data-rank=\"%d\" data-op=\"%s\" data-calls=\"%" PRIu64
			           "\" data-bytes=\"%" PRIu64 "\"><td><code>%016" PRIx64 "</code></td><td class=\"n\">%d/%d</td><td>",
			        r->comm, r->rank, nws_op_name(op), r->per_op[op][0], r->per_op[op][1], r->comm, r->rank, r->nranks);
			esc(f, r->host);
			fprintf(f, "</td><td class=\"n\">%d</td><td>%s</td><td>%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
			           "</td><td class=\"n\">%zu</td><td>", r->pid, r->state, nws_op_name(op), r->per_op[op][0],
			        r->per_op[op][1], r->ntl);
			if (r->slow_ops)
				fprintf(f, "%" PRIu64 " slow; ", r->slow_ops);
			if (r->dropped)
				fprintf(f, "%" PRIu64 " dropped; ", r->dropped);
			if (r->tl_dropped || r->missed)
				fprintf(f, "%" PRIu64 " older and %" PRIu64 " missed operations not in the timeline; ", r->tl_dropped,
				        r->missed);
			esc(f, r->disabled);
			fputs("</td></tr>\n", f);
		}
	}
	fputs("</table>\n</details>\n", f);
}

static void charts(FILE *f, const struct nw_job_view *v)
{
	fputs("<h2>Bandwidth over time</h2>\n", f);
	if (!v->nbw)
		fputs("<p>No operation had an execution time (kernel or network timestamps): busbw cannot be shown. With "
		      "NCCLWATCH_KERNEL=auto small operations are timed in bursts only; NCCL before 2.26 gives no kernel "
		      "times.</p>\n",
		      f);
	for (size_t i = 0; i < v->nbw; i++)
		chart(f, v, &v->bw[i]);
	fputs("<h2>Lateness over time</h2>\n<p class=\"meta\">For each communicator, how long after the earliest rank "
	      "each rank arrived at the collectives every rank of the node ran (mean over the newest 64 at each "
	      "sample): a rank high above the others is the straggler the others wait for.</p>\n",
	      f);
	if (!v->nlate)
		fputs("<p>No communicator had two ranks on one node with collectives in common.</p>\n", f);
	for (size_t i = 0; i < v->nlate; i++)
		chart(f, v, &v->late[i]);
	fputs("<h2>Exposed communication over time</h2>\n", f);
	if (v->exposed.nlines)
		chart(f, v, &v->exposed);
	else
		fputs("<p>Not measured: run with <code>--overlap</code> (NCCLWATCH_OVERLAP=1) to measure it.</p>\n", f);
}

int nw_report_job_html(FILE *f, const struct nw_job_view *v, const char *title,
                       const struct nw_report_job_links *links, char *err, size_t errlen)
{
	if (!v->nnodes)
		return nw_seterr(err, errlen, "the job has no part: nothing to report");
	char t[256];
	if (!title || !*title)
		snprintf(t, sizeof(t), "ncclwatch job %s", v->job);
	nw_html_head(f, title && *title ? title : t, css);
	char now[32];
	nw_utc_iso(now, sizeof(now));
	fprintf(f, "<p class=\"meta\">generated %s by ncclwatch %s; busbw as nccl-tests computes it (GB = "
	           "10<sup>9</sup> bytes); times on the first node's clock</p>\n",
	        now, NW_VERSION);
	summary(f, v, links);
	incidents(f, v);
	traffic(f, v);
	per_rank(f, v);
	charts(f, v);
	nw_report_job_nccl(f, v);
	nw_report_job_clocks(f, v);
	nw_report_job_files(f, links);
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? nw_seterr(err, errlen, "write error") : 0;
}
