/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet page: a heatmap of hosts x (op, size), each cell a host's busbw against its peers' median. */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "util/util.h"

static const char fleet_css[] =
	"body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
	"h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}"
	".meta{color:#666;font-size:13px}"
	"table{border-collapse:collapse;font-size:12px;margin:8px 0}"
	"th,td{border:1px solid #fff;padding:2px 6px;text-align:right;font-variant-numeric:tabular-nums}"
	"th{background:#f4f4f4;font-weight:normal}th.h,td.h{text-align:left;white-space:nowrap}"
	"tr.outlier td.h{font-weight:bold;color:#8a1c13}td.mark{color:#b22222;font-weight:bold;text-align:center}"
	"td.out{background:#b22222;color:#fff;font-weight:bold}"
	"td.why{text-align:left;color:#8a1c13;white-space:nowrap}"
	".key span{display:inline-block;padding:2px 8px;margin-right:4px;font-size:12px}";

/* A column of the heatmap. */
struct col {
	char op[24];
	uint64_t size;
};

static int by_op_size(const void *a, const void *b)
{
	const struct col *x = a, *y = b;
	int c = strcmp(x->op, y->op);
	return c ? c : (x->size > y->size) - (x->size < y->size);
}

/* Every (op, size) any host measured, by op then size; *cols is the caller's to free(). */
static size_t columns(const struct nw_fleet *fl, struct col **cols)
{
	size_t n = 0;
	*cols = NULL;
	for (size_t i = 0; i < fl->nhosts; i++)
		for (size_t k = 0; k < fl->hosts[i].ncells; k++) {
			const struct nw_fleet_cell *c = &fl->hosts[i].cells[k];
			size_t j = 0;
			while (j < n && ((*cols)[j].size != c->size_bytes || strcmp((*cols)[j].op, c->op)))
				j++;
			if (j < n)
				continue;
			*cols = nw_realloc(*cols, (n + 1) * sizeof(**cols));
			nw_strlcpy((*cols)[n].op, c->op, sizeof((*cols)[n].op));
			(*cols)[n++].size = c->size_bytes;
		}
	qsort(*cols, n, sizeof(**cols), by_op_size);
	return n;
}

/* Blend of two colours, t in [0, 1] from a to b, as "#rrggbb". */
static void blend(unsigned a, unsigned b, double t, char *buf, size_t len)
{
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	unsigned out = 0;
	for (int s = 16; s >= 0; s -= 8) {
		double x = (double)(a >> s & 0xff), y = (double)(b >> s & 0xff);
		out |= (unsigned)(x + (y - x) * t + 0.5) << s;
	}
	snprintf(buf, len, "#%06x", out);
}

/* One cell: its share of the median, coloured (solid red below the threshold). */
static void cell(FILE *f, const struct nw_fleet_host *h, const struct col *c, double threshold)
{
	const struct nw_fleet_cell *x = NULL;
	for (size_t k = 0; k < h->ncells && !x; k++)
		if (h->cells[k].size_bytes == c->size && !strcmp(h->cells[k].op, c->op))
			x = &h->cells[k];
	if (!x) {
		fputs("<td>-</td>", f);
		return;
	}
	char colour[16];
	if (x->ratio < threshold) {
		fprintf(f, "<td class=\"out\" title=\"%.2f GB/s, median %.2f\">%.1f</td>", x->busbw, x->median, x->ratio * 100);
		return;
	}
	if (x->ratio < 1)
		blend(0xf4a582, 0xf7f7f7, (x->ratio - threshold) / (1 - threshold), colour, sizeof(colour));
	else
		blend(0xf7f7f7, 0x92c5de, (x->ratio - 1) / 0.05, colour, sizeof(colour));
	fprintf(f, "<td style=\"background:%s\" title=\"%.2f GB/s, median %.2f\">%.1f</td>", colour, x->busbw,
	        x->median, x->ratio * 100);
}

/* What differs on an outlier, "driver 550.54.15 (fleet 560.35.03); ..." */
static void why(FILE *f, const struct nw_fleet_host *h)
{
	fputs("<td class=\"why\">", f);
	for (size_t k = 0; h->outlier && k < h->ndiffs; k++) {
		const struct nw_fleet_diff *d = &h->diffs[k];
		fputs(k ? "; " : "", f);
		nw_xml_escape(f, d->field);
		fputs(" ", f);
		nw_xml_escape(f, d->value[0] ? d->value : "unset");
		fputs(" (fleet ", f);
		nw_xml_escape(f, d->fleet[0] ? d->fleet : "unset");
		fputs(")", f);
	}
	fputs("</td>", f);
}

static void heat_table(FILE *f, const struct nw_fleet *fl, const struct col *cols, size_t ncols)
{
	fputs("<table>\n<tr><th></th><th class=\"h\">host</th><th class=\"h\">GPUs</th><th>verdict</th>", f);
	for (size_t c = 0; c < ncols; c++) {
		char size[32];
		nw_format_size(cols[c].size, size, sizeof(size));
		fputs("<th>", f);
		nw_xml_escape(f, cols[c].op);
		fprintf(f, "<br>%s</th>", size);
	}
	fputs("<th class=\"h\">differs from its peers</th></tr>\n", f);
	for (size_t i = 0; i < fl->nhosts; i++) {
		const struct nw_fleet_host *h = &fl->hosts[i];
		fprintf(f, "<tr%s><td class=\"mark\">%s</td><td class=\"h\">", h->outlier ? " class=\"outlier\"" : "",
		        h->outlier ? "&#x2716;" : "");
		nw_xml_escape(f, h->host);
		fputs("</td><td class=\"h\">", f);
		nw_xml_escape(f, h->gpus);
		fputs("</td><td>", f);
		nw_xml_escape(f, h->verdict[0] ? h->verdict : "-");
		fputs("</td>", f);
		for (size_t c = 0; c < ncols; c++)
			cell(f, h, &cols[c], fl->threshold);
		why(f, h);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

int nw_report_fleet_html(FILE *f, const struct nw_fleet *fl, const char *title, char *err, size_t errlen)
{
	if (!fl->nhosts)
		return nw_seterr(err, errlen, "no check runs in the history: record one per node with 'ncclwatch check', "
		                 "or merge their files with 'history merge'");
	struct col *cols;
	size_t ncols = columns(fl, &cols);
	if (!title || !*title)
		title = "ncclwatch fleet";
	char now[32];
	nw_utc_iso(now, sizeof(now));
	nw_html_head(f, title, fleet_css);
	fprintf(f, "<p class=\"meta\">generated %s by ncclwatch %s; each host's latest check, busbw at each "
	           "op and size as a percentage of the median of the hosts with the same GPUs</p>\n",
	        now, NW_VERSION);
	fprintf(f, "<p><b>%zu of %zu host%s below %.0f%% of the median</b> (&#x2716;, listed first)</p>\n",
	        fl->noutliers, fl->nhosts, fl->nhosts == 1 ? "" : "s", fl->threshold * 100);
	fprintf(f, "<p class=\"key\"><span style=\"background:#b22222;color:#fff\">below %.0f%%</span>"
	           "<span style=\"background:#f4a582\">%.0f%%</span><span style=\"background:#f7f7f7\">100%%</span>"
	           "<span style=\"background:#92c5de\">105%%+</span></p>\n",
	        fl->threshold * 100, fl->threshold * 100);
	heat_table(f, fl, cols, ncols);
	fputs("</body>\n</html>\n", f);
	free(cols);
	return ferror(f) ? nw_seterr(err, errlen, "write error") : 0;
}
