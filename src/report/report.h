/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report: busbw-against-size charts as inline SVG, and one self-contained
 * HTML page (inline CSS and SVG, no script, no network) with a chart per op,
 * several runs overlaid, the link line when known, the comparison of two
 * runs and their fingerprints side by side.
 *
 * One header for the report module, which has no report.c: svg.c
 * implements the charts (nw_svg_chart, nw_report_ops, nw_xml_escape),
 * html.c the page (nw_report_html), fleet.c the fleet heatmap.
 */
#ifndef NW_REPORT_H
#define NW_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "model/result.h"
#include "store/compare.h"
#include "store/fleet.h"

/* The runs of a report, in legend order. */
struct nw_report_input {
	const struct nw_run *const *runs;
	const char *const *labels;
	size_t nruns;
};

struct nw_report_opts {
	const char *title;       /* page title; NULL: "ncclwatch report" */
	double link_gbs;         /* > 0: the link line; 0: from the runs' headers */
	int inplace;             /* plot in-place rows instead of out-of-place */
	int latency;             /* chart time (log-log) instead of busbw */
	const struct nw_cmp *marks; /* NULL, or a comparison of runs 0 and 1 whose slower sizes are ringed */
	struct nw_cmp_opts cmp;  /* for the comparison table of two runs */
	int width, height;       /* chart size in px; 0: 800 x 380 */
};

/* Ops present in the runs, in order of first appearance; *ops is the caller's to free(). */
void nw_report_ops(const struct nw_report_input *in, char (**ops)[24], size_t *n);

/*
 * One chart (an <svg> element, usable as a file or inline): busbw (or, with
 * o->latency, time on a log axis) against size on a log2 axis for op, one
 * line per run, the link line when known, the slower sizes of o->marks
 * ringed. busbw goes to a log axis when small sizes would sit flat at zero.
 * -1 with err when no run has a row of op in the chosen placement.
 */
int nw_svg_chart(FILE *f, const struct nw_report_input *in, const char *op,
                 const struct nw_report_opts *o, char *err, size_t errlen);

/* The whole HTML page. -1 with err when there is nothing to chart. */
int nw_report_html(FILE *f, const struct nw_report_input *in, const struct nw_report_opts *o,
                   char *err, size_t errlen);

/*
 * The start of a self-contained page: doctype, a Content-Security-Policy
 * that loads nothing, title, inline style, <body> and the <h1> title.
 */
void nw_html_head(FILE *f, const char *title, const char *style);

/* Write s with &, <, >, " and ' escaped for XML/HTML text and attributes. */
void nw_xml_escape(FILE *f, const char *s);

/*
 * The fleet page (fleet.c): one self-contained HTML heatmap, a row per host
 * (outliers first, marked, with what differs on them), a column per op and
 * size, each cell the host's busbw as a share of its peers' median.
 * title NULL: "ncclwatch fleet". -1 with err when the fleet has no host.
 */
int nw_report_fleet_html(FILE *f, const struct nw_fleet *fl, const char *title, char *err, size_t errlen);

/* The links of a job's page, relative to it: the timeline, and files kept with the job (dumps, logs). */
struct nw_report_job_links {
	const char *trace;          /* "timeline.json", or NULL */
	const char *const *files;   /* paths relative to the page */
	size_t nfiles;
};

struct nw_job_view;

/*
 * The page of one job run under `ncclwatch run` (jobpage.c, jobpage_nccl.c):
 * how it ran and ended, its hangs, aborts and anomalies, what each
 * communicator moved, bandwidth, lateness and exposed communication over
 * time, NCCL's choices, the nodes' clocks, links. title NULL: "ncclwatch
 * job ID". -1 with err when the view has no part.
 */
int nw_report_job_html(FILE *f, const struct nw_job_view *v, const char *title,
                       const struct nw_report_job_links *links, char *err, size_t errlen);

#endif
