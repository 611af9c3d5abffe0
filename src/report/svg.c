/* SPDX-License-Identifier: Apache-2.0 */
/* busbw against size, log2 x axis, one line per run: an inline SVG chart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "util/util.h"

/* Colours that stay apart for the colour-blind (Okabe-Ito), then greys. */
static const char *const palette[] = {
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999",
};

void nw_xml_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc(' ', f);
			else
				fputc(*s, f);
		}
	}
}

void nw_report_ops(const struct nw_report_input *in, char (**ops)[24], size_t *n)
{
	size_t cap = 8;
	*ops = nw_calloc(cap, sizeof(**ops));
	*n = 0;
	for (size_t r = 0; r < in->nruns; r++) {
		const struct nw_run *run = in->runs[r];
		for (size_t i = 0; i < run->nrows; i++) {
			size_t k;
			for (k = 0; k < *n; k++)
				if (!strcmp((*ops)[k], run->rows[i].op))
					break;
			if (k < *n)
				continue;
			if (*n == cap) {
				cap *= 2;
				*ops = nw_realloc(*ops, cap * sizeof(**ops));
			}
			nw_strlcpy((*ops)[(*n)++], run->rows[i].op, sizeof((*ops)[0]));
		}
	}
}

/* One plotted point: mean busbw and time of a run's rows at one size; y is the one charted. */
struct pt {
	double size;
	double busbw, time;
	double y;
	int n;
};

static int cmp_pt(const void *a, const void *b)
{
	const struct pt *x = a, *y = b;
	return x->size < y->size ? -1 : x->size > y->size;
}

/*
 * The points of one run for op and placement, restricted to the dtype and
 * redop of its first such row (a chart mixes no types). *dtype names it.
 */
static struct pt *series(const struct nw_run *run, const char *op, int inplace, size_t *n,
                         char *dtype, size_t dlen)
{
	struct pt *p = nw_calloc(run->nrows + 1, sizeof(*p));
	const struct nw_row *first = NULL;
	*n = 0;
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		if (strcmp(r->op, op) || r->inplace != inplace || r->size_bytes == 0 ||
		    !isfinite(r->busbw_gbs) || r->busbw_gbs < 0 || r->busbw_gbs > 1e9)
			continue;
		if (!first)
			first = r;
		if (strcmp(r->dtype, first->dtype) || strcmp(r->redop, first->redop) || r->root != first->root)
			continue;
		size_t k;
		for (k = 0; k < *n; k++)
			if (p[k].size == (double)r->size_bytes)
				break;
		if (k == *n) {
			p[k].size = (double)r->size_bytes;
			(*n)++;
		}
		p[k].busbw += r->busbw_gbs;
		p[k].time += isfinite(r->time_us) && r->time_us > 0 ? r->time_us : 0;
		p[k].n++;
	}
	for (size_t k = 0; k < *n; k++) {
		p[k].busbw /= p[k].n;
		p[k].time /= p[k].n;
	}
	qsort(p, *n, sizeof(*p), cmp_pt);
	if (dtype)
		nw_strlcpy(dtype, first ? first->dtype : "", dlen);
	return p;
}

/* A "nice" axis step (1, 2 or 5 times a power of ten) giving about n ticks up to max. */
static double nice_step(double max, int n)
{
	double raw = max / n;
	double p = pow(10, floor(log10(raw)));
	double f = raw / p;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

static double link_of(const struct nw_report_input *in, const struct nw_report_opts *o)
{
	if (o->link_gbs > 0)
		return o->link_gbs;
	for (size_t r = 0; r < in->nruns; r++)
		if (in->runs[r]->h.link_gbs > 0)
			return in->runs[r]->h.link_gbs;
	return 0;
}

/* The placement of the plot in the picture, and the ranges it shows. */
struct frame {
	int W, H;                /* the picture, px */
	double ml, mr, mt, pw, ph; /* left, right and top margins; the plot's width and height */
	double xmin, xmax;       /* log2 of the sizes at the plot's edges */
	int xstep;               /* an x tick every xstep powers of two */
	double ytop, ystep;      /* y at the plot's top, and between grid lines (linear axis) */
	int ylog;                /* log10 y axis from ybot to ytop, a grid line per decade */
	double ybot;
	int latency;             /* time (us) rather than busbw (GB/s) */
	double link;             /* the link line (GB/s); 0 when unknown */
};

/* Picture x of log2(size) v, and y of busbw v. */
static double px(const struct frame *g, double v)
{
	return g->ml + (v - g->xmin) / (g->xmax - g->xmin) * g->pw;
}

static double py(const struct frame *g, double v)
{
	if (g->ylog) {
		double l = log10(fmax(v, g->ybot));
		return g->mt + g->ph - (l - log10(g->ybot)) / (log10(g->ytop) - log10(g->ybot)) * g->ph;
	}
	return g->mt + g->ph - v / g->ytop * g->ph;
}

/* Every run's points for op: ser[r] has ns[r] points (both arrays caller-owned, one per run). */
struct plot {
	struct pt **ser;
	size_t *ns;
	char dtype[16];          /* of the first run with points */
	double xmin, xmax, ymax; /* log2 size range and highest y over all points */
	double ymin;             /* lowest y above zero; INFINITY when none */
};

/* Fill p with the runs' series of op; free with plot_release. */
static void plot_collect(struct plot *p, const struct nw_report_input *in, const char *op, int inplace,
                         int latency)
{
	p->ser = nw_calloc(in->nruns + 1, sizeof(*p->ser));
	p->ns = nw_calloc(in->nruns + 1, sizeof(*p->ns));
	p->dtype[0] = '\0';
	p->xmin = INFINITY;
	p->xmax = -INFINITY;
	p->ymax = 0;
	p->ymin = INFINITY;
	for (size_t r = 0; r < in->nruns; r++) {
		char d[16];
		p->ser[r] = series(in->runs[r], op, inplace, &p->ns[r], d, sizeof(d));
		if (p->ns[r] && !p->dtype[0])
			nw_strlcpy(p->dtype, d, sizeof(p->dtype));
		for (size_t k = 0; k < p->ns[r]; k++) {
			struct pt *q = &p->ser[r][k];
			q->y = latency ? q->time : q->busbw;
			p->xmin = fmin(p->xmin, log2(q->size));
			p->xmax = fmax(p->xmax, log2(q->size));
			p->ymax = fmax(p->ymax, q->y);
			if (q->y > 0)
				p->ymin = fmin(p->ymin, q->y);
		}
	}
}

static void plot_release(struct plot *p, size_t nruns)
{
	for (size_t r = 0; r < nruns; r++)
		free(p->ser[r]);
	free(p->ser);
	free(p->ns);
}

/* Picture size and margins from o, axis ranges from the points and the link line. */
static void frame_fit(struct frame *g, const struct nw_report_opts *o, const struct plot *p, double link)
{
	g->W = o->width > 0 ? o->width : 800;
	g->H = o->height > 0 ? o->height : 380;
	g->ml = 64;
	g->mr = 24;
	g->mt = 34;
	const double mb = 52;
	g->pw = g->W - g->ml - g->mr;
	g->ph = g->H - g->mt - mb;
	g->link = link;
	double ymax = p->ymax;
	if (link > ymax)
		ymax = link;
	if (ymax <= 0)
		ymax = 1;
	g->ystep = nice_step(ymax * 1.05, 6);
	g->ytop = ceil(ymax * 1.05 / g->ystep) * g->ystep;
	/* time always, busbw when small sizes would sit flat at zero: a decade per grid line */
	if (g->latency || (isfinite(p->ymin) && p->ymin < ymax / 100)) {
		g->ylog = 1;
		g->ybot = isfinite(p->ymin) ? pow(10, floor(log10(p->ymin))) : ymax / 1000;
		g->ytop = pow(10, ceil(log10(ymax * 1.05)));
		if (g->ytop < g->ybot * 100)
			g->ytop = g->ybot * 100;
	}
	g->xmin = floor(p->xmin);
	g->xmax = ceil(p->xmax);
	if (g->xmax - g->xmin < 1)
		g->xmax = g->xmin + 1;
	g->xstep = (int)ceil((g->xmax - g->xmin) / 12);
	if (g->xstep < 1)
		g->xstep = 1;
}

/* The <svg> opening, title, grid with its labels, axis names and the link line. */
static void draw_axes(FILE *f, const struct frame *g, const char *op, const char *dtype, int inplace)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n", g->W, g->H, g->W, g->H);
	fprintf(f, "<title>");
	nw_xml_escape(f, op);
	fprintf(f, " %s by size</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	        g->latency ? "time" : "busbw", g->W, g->H);
	fprintf(f, "<text x=\"%g\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", g->ml);
	nw_xml_escape(f, op);
	fprintf(f, "</text><text x=\"%g\" y=\"20\" text-anchor=\"end\" fill=\"#555\">%s, %s</text>\n", g->W - g->mr,
	        dtype, inplace ? "in-place" : "out-of-place");
	/* grid and y labels: even steps, or one per decade on a log axis */
	double yend = g->ylog ? g->ytop * 1.01 : g->ytop + g->ystep / 2;
	for (double y = g->ylog ? g->ybot : 0; y <= yend; y = g->ylog ? y * 10 : y + g->ystep) {
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333\">%g</text>\n",
		        g->ml, g->ml + g->pw, py(g, y), py(g, y), g->ml - 6, py(g, y) + 4, y);
	}
	/* x ticks: powers of two */
	for (int e = (int)g->xmin; e <= (int)g->xmax; e += g->xstep) {
		char lab[32];
		nw_format_size(1ULL << e, lab, sizeof(lab));
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#333\">%s</text>\n",
		        px(g, e), px(g, e), g->mt, g->mt + g->ph, px(g, e), g->mt + g->ph + 16, lab);
	}
	fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n", g->ml,
	        g->mt, g->pw, g->ph);
	fprintf(f, "<text x=\"%g\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">message size (bytes, log2 scale)</text>\n",
	        g->ml + g->pw / 2, g->H - 12);
	fprintf(f, "<text transform=\"translate(16 %g) rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">%s</text>\n",
	        g->mt + g->ph / 2, g->latency ? "time (us, log scale)" : g->ylog ? "busbw (GB/s, log scale)" : "busbw (GB/s)");
	if (g->link > 0 && !g->latency) {
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#B22222\" stroke-dasharray=\"6 4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#B22222\">link %.0f GB/s</text>\n",
		        g->ml, g->ml + g->pw, py(g, g->link), py(g, g->link), g->ml + g->pw - 4, py(g, g->link) - 5,
		        g->link);
	}
}

/* One line per run, with a point (and its tooltip) per size. */
static void draw_series(FILE *f, const struct frame *g, const struct nw_report_input *in, const struct plot *p)
{
	for (size_t r = 0; r < in->nruns; r++) {
		if (!p->ns[r])
			continue;
		const struct pt *s = p->ser[r];
		const char *col = palette[r % NW_ARRAY_LEN(palette)];
		/* the first run drawn wide and pale, so later runs on top of it leave it visible */
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-opacity=\"%s\" points=\"",
		        col, r ? "2" : "5", r ? "1" : "0.45");
		for (size_t k = 0; k < p->ns[r]; k++)
			fprintf(f, "%s%.1f,%.1f", k ? " " : "", px(g, log2(s[k].size)), py(g, s[k].y));
		fprintf(f, "\"/>\n");
		for (size_t k = 0; k < p->ns[r]; k++) {
			char lab[32];
			nw_format_size((uint64_t)s[k].size, lab, sizeof(lab));
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>", px(g, log2(s[k].size)),
			        py(g, s[k].y), col);
			nw_xml_escape(f, in->labels[r]);
			fprintf(f, ": %s, %.2f GB/s, %.2f us</title></circle>\n", lab, s[k].busbw, s[k].time);
		}
	}
}

/* A red ring at every size the comparison found slower in B (the second run), with its change. */
static void draw_marks(FILE *f, const struct frame *g, const struct nw_cmp *c, const char *op, int inplace,
                       const struct plot *p)
{
	if (!p->ns[1])
		return;
	for (size_t i = 0; i < c->nrows; i++) {
		const struct nw_cmp_row *r = &c->rows[i];
		if (r->verdict != NW_V_SLOWER || r->inplace != inplace || strcmp(r->op, op) || strcmp(r->dtype, p->dtype))
			continue;
		for (size_t k = 0; k < p->ns[1]; k++) {
			if (p->ser[1][k].size != (double)r->size)
				continue;
			char ch[32];
			nw_cmp_format_change(ch, sizeof(ch), r->change);
			fprintf(f, "<circle class=\"regression\" cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" "
			           "stroke=\"#B22222\" stroke-width=\"2\"><title>slower in B: %s</title></circle>\n",
			        px(g, log2(p->ser[1][k].size)), py(g, p->ser[1][k].y), ch);
		}
	}
}

/* The legend, top left inside the plot (small sizes have low busbw there). */
static void draw_legend(FILE *f, const struct frame *g, const struct nw_report_input *in, const size_t *ns)
{
	double lx = g->ml + 10, ly = g->mt + 10;
	size_t shown = 0, longest = 0;
	for (size_t r = 0; r < in->nruns; r++)
		if (strlen(in->labels[r]) > longest)
			longest = strlen(in->labels[r]);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#ddd\"/>\n",
	        lx - 6, ly - 6, 40 + 6.6 * (double)(longest + 10), 18.0 * (double)in->nruns + 6);
	for (size_t r = 0; r < in->nruns; r++) {
		const char *col = palette[r % NW_ARRAY_LEN(palette)];
		double y = ly + 18.0 * (double)shown++;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"%s\" fill=\"%s\" fill-opacity=\"%s\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\">",
		        lx, y + (r ? 4 : 3.5), r ? "3" : "5", col, r ? "1" : "0.45", lx + 20, y + 9);
		nw_xml_escape(f, in->labels[r]);
		if (!ns[r])
			fputs(" (no rows)", f);
		fputs("</text>\n", f);
	}
}

int nw_svg_chart(FILE *f, const struct nw_report_input *in, const char *op,
                 const struct nw_report_opts *o, char *err, size_t errlen)
{
	struct plot p;
	plot_collect(&p, in, op, o->inplace, o->latency);
	int rc = 0;
	if (!isfinite(p.xmin)) {
		rc = nw_seterr(err, errlen, "no %s rows for '%s' in these runs: nothing to chart",
		               o->inplace ? "in-place" : "out-of-place", op);
	} else {
		struct frame g;
		memset(&g, 0, sizeof(g));
		g.latency = o->latency;
		frame_fit(&g, o, &p, link_of(in, o));
		draw_axes(f, &g, op, p.dtype, o->inplace);
		draw_series(f, &g, in, &p);
		if (o->marks)
			draw_marks(f, &g, o->marks, op, o->inplace, &p);
		draw_legend(f, &g, in, p.ns);
		fputs("</svg>\n", f);
	}
	plot_release(&p, in->nruns);
	return rc;
}
