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

/* One plotted point: mean busbw of a run's rows at one size. */
struct pt {
	double size;
	double busbw;
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
		if (strcmp(r->op, op) || r->inplace != inplace || r->size_bytes == 0)
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
		p[k].n++;
	}
	for (size_t k = 0; k < *n; k++)
		p[k].busbw /= p[k].n;
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

int nw_svg_chart(FILE *f, const struct nw_report_input *in, const char *op,
                 const struct nw_report_opts *o, char *err, size_t errlen)
{
	const int W = o->width > 0 ? o->width : 800, H = o->height > 0 ? o->height : 380;
	const double ml = 64, mr = 24, mt = 34, mb = 52;
	const double pw = W - ml - mr, ph = H - mt - mb;
	struct pt **ser = nw_calloc(in->nruns + 1, sizeof(*ser));
	size_t *ns = nw_calloc(in->nruns + 1, sizeof(*ns));
	char dtype[16] = "";
	double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
	for (size_t r = 0; r < in->nruns; r++) {
		char d[16];
		ser[r] = series(in->runs[r], op, o->inplace, &ns[r], d, sizeof(d));
		if (ns[r] && !dtype[0])
			nw_strlcpy(dtype, d, sizeof(dtype));
		for (size_t k = 0; k < ns[r]; k++) {
			xmin = fmin(xmin, log2(ser[r][k].size));
			xmax = fmax(xmax, log2(ser[r][k].size));
			ymax = fmax(ymax, ser[r][k].busbw);
		}
	}
	int rc = 0;
	if (!isfinite(xmin)) {
		rc = nw_seterr(err, errlen, "no %s rows for '%s' in these runs: nothing to chart",
		               o->inplace ? "in-place" : "out-of-place", op);
		goto out;
	}
	double link = link_of(in, o);
	if (link > ymax)
		ymax = link;
	if (ymax <= 0)
		ymax = 1;
	double ystep = nice_step(ymax * 1.05, 6);
	double ytop = ceil(ymax * 1.05 / ystep) * ystep;
	xmin = floor(xmin);
	xmax = ceil(xmax);
	if (xmax - xmin < 1)
		xmax = xmin + 1;
	int xstep = (int)ceil((xmax - xmin) / 12);
	if (xstep < 1)
		xstep = 1;
#define X(v) (ml + ((v) - xmin) / (xmax - xmin) * pw)
#define Y(v) (mt + ph - (v) / ytop * ph)

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n", W, H, W, H);
	fprintf(f, "<title>");
	nw_xml_escape(f, op);
	fprintf(f, " busbw by size</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
	fprintf(f, "<text x=\"%g\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", ml);
	nw_xml_escape(f, op);
	fprintf(f, "</text><text x=\"%g\" y=\"20\" text-anchor=\"end\" fill=\"#555\">%s, %s</text>\n", W - mr,
	        dtype, o->inplace ? "in-place" : "out-of-place");
	/* grid and y labels */
	for (double y = 0; y <= ytop + ystep / 2; y += ystep) {
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333\">%g</text>\n",
		        ml, ml + pw, Y(y), Y(y), ml - 6, Y(y) + 4, y);
	}
	/* x ticks: powers of two */
	for (int e = (int)xmin; e <= (int)xmax; e += xstep) {
		char lab[32];
		nw_format_size(1ULL << e, lab, sizeof(lab));
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#333\">%s</text>\n",
		        X(e), X(e), mt, mt + ph, X(e), mt + ph + 16, lab);
	}
	fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n", ml, mt, pw, ph);
	fprintf(f, "<text x=\"%g\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">message size (bytes, log2 scale)</text>\n",
	        ml + pw / 2, H - 12);
	fprintf(f, "<text transform=\"translate(16 %g) rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">busbw (GB/s)</text>\n",
	        mt + ph / 2);
	if (link > 0) {
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#B22222\" stroke-dasharray=\"6 4\"/>"
		           "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#B22222\">link %.0f GB/s</text>\n",
		        ml, ml + pw, Y(link), Y(link), ml + pw - 4, Y(link) - 5, link);
	}
	/* one line per run */
	for (size_t r = 0; r < in->nruns; r++) {
		if (!ns[r])
			continue;
		const char *col = palette[r % NW_ARRAY_LEN(palette)];
		/* the first run drawn wide and pale, so later runs on top of it leave it visible */
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-opacity=\"%s\" points=\"",
		        col, r ? "2" : "5", r ? "1" : "0.45");
		for (size_t k = 0; k < ns[r]; k++)
			fprintf(f, "%s%.1f,%.1f", k ? " " : "", X(log2(ser[r][k].size)), Y(ser[r][k].busbw));
		fprintf(f, "\"/>\n");
		for (size_t k = 0; k < ns[r]; k++) {
			char lab[32];
			nw_format_size((uint64_t)ser[r][k].size, lab, sizeof(lab));
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>", X(log2(ser[r][k].size)),
			        Y(ser[r][k].busbw), col);
			nw_xml_escape(f, in->labels[r]);
			fprintf(f, ": %s, %.2f GB/s</title></circle>\n", lab, ser[r][k].busbw);
		}
	}
	/* legend, top left inside the plot (small sizes have low busbw there) */
	double lx = ml + 10, ly = mt + 10;
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
	fputs("</svg>\n", f);
#undef X
#undef Y
out:
	for (size_t r = 0; r < in->nruns; r++)
		free(ser[r]);
	free(ser);
	free(ns);
	return rc;
}
