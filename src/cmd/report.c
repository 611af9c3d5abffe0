/* SPDX-License-Identifier: Apache-2.0 */
/* ncclwatch report: one self-contained HTML page (or one SVG chart) of runs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/result.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/jobout.h"
#include "report/report.h"
#include "store/compare.h"
#include "store/input.h"
#include "store/store.h"
#include "util/termtext.h"
#include "util/util.h"

#define MAX_RUNS 16

/* What a report writes: the page or one chart of runs, or the fleet page. */
struct page {
	int svg;
	const struct nw_report_input *in;
	const struct nw_report_opts *o;
	const char *op;
	const struct nw_fleet *fleet;
};

static int emit(FILE *f, const struct page *p, char *err, size_t errlen)
{
	if (p->fleet)
		return nw_report_fleet_html(f, p->fleet, p->o->title, err, errlen);
	return p->svg ? nw_svg_chart(f, p->in, p->op, p->o, err, errlen) : nw_report_html(f, p->in, p->o, err, errlen);
}

/*
 * Write through a temporary file renamed into place, so a failed report
 * never leaves half a page where a good one was. A path that is not a
 * regular file (a device, a pipe) is written to directly: a rename would
 * replace it.
 */
static int write_out(const char *path, const struct page *p)
{
	char err[NW_ERRLEN];
	struct stat st;
	if (!strcmp(path, "-"))
		return emit(stdout, p, err, sizeof(err)) ? nw_error("%s", NW_TT_MSG(err)) : 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device or a pipe (/dev/null, /dev/stdout): written to, never renamed over */
		FILE *f = fopen(path, "w");
		if (!f)
			return nw_error("cannot write '%s': %s", path, strerror(errno));
		int rc = emit(f, p, err, sizeof(err));
		if (fclose(f) != 0 && !rc)
			rc = nw_seterr(err, sizeof(err), "cannot write '%s': %s", path, strerror(errno));
		return rc ? nw_error("%s", NW_TT_MSG(err)) : 0;
	}
	char *tmp = nw_asprintf("%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		nw_error("cannot write '%s': %s", path, strerror(errno));
		free(tmp);
		return -1;
	}
	int rc = emit(f, p, err, sizeof(err));
	if (fclose(f) != 0 && !rc)
		rc = nw_seterr(err, sizeof(err), "cannot write '%s': %s", path, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = nw_seterr(err, sizeof(err), "cannot write '%s': %s", path, strerror(errno));
	if (rc) {
		unlink(tmp);
		nw_error("%s", NW_TT_MSG(err));
	} else {
		fprintf(stderr, "wrote %s\n", path);
	}
	free(tmp);
	return rc;
}

/* What the command line asks for. */
struct report_args {
	struct nw_store_opts so;
	struct nw_report_opts o;
	const char *specs[MAX_RUNS], *out, *svg, *op;
	size_t nspecs;
	int fleet;
	double threshold;
	const char *job;
};

/* -o FILE: the old spelling of -O (in bench and tune -o is the reduction, as in nccl-tests). */
static int old_output(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct report_args *a = opts;
	if (!*arg)
		return nw_seterr(err, errlen, "option '%s' needs a value", name);
	nw_warn("report: -o is deprecated here (in bench and tune it is the reduction); use -O or --output");
	a->out = arg;
	return 0;
}

static const struct nw_opt report_options[] = {
	NW_OPT_OUTPUT(struct report_args, out, "the HTML page"),
	{ .kind = NW_OPTK_CALL, .sname = 'o', .argh = "FILE", .call = old_output, .flags = NW_OPTF_HIDDEN },
	{ .kind = NW_OPTK_OUTPUT, .lname = "svg", .off = NW_F_STR(struct report_args, svg), .argh = "FILE",
	  .help = "one chart as an SVG file ('-' for stdout)" },
	{ .kind = NW_OPTK_STRING, .lname = "op", .off = NW_F_STR(struct report_args, op), .argh = "OP",
	  .values = nw_cli_op_names, .help = "the op of --svg (default: the first op of the runs)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "link-gbs", .off = NW_F_DBL(struct report_args, o.link_gbs), .argh = "X",
	  .dmin = 0.001, .dmax = 1e6, .help = "draw the link line at X GB/s (default: from the runs)" },
	{ .kind = NW_OPTK_FLAG, .lname = "inplace", .off = NW_F_INT(struct report_args, o.inplace),
	  .help = "chart in-place rows (default out-of-place)" },
	{ .kind = NW_OPTK_STRING, .lname = "title", .off = NW_F_STR(struct report_args, o.title), .argh = "TEXT",
	  .help = "page title" },
	{ .kind = NW_OPTK_FLAG, .lname = "fleet", .off = NW_F_INT(struct report_args, fleet),
	  .help = "the fleet heatmap of the history (no runs given)" },
	{ .kind = NW_OPTK_PERCENT, .lname = "threshold", .off = NW_F_DBL(struct report_args, threshold), .argh = "PCT",
	  .dmin = 0.0001, .dmax = 1, .help = "with --fleet: outlier below PCT% of the median (default 90)" },
	{ .kind = NW_OPTK_STRING, .lname = "job", .off = NW_F_STR(struct report_args, job), .argh = "ID",
	  .help = "the report of a job run under 'ncclwatch run', every node's\npart merged: ID is its directory, or its id (read from\n./ncclwatch-job-ID, else from the history)" },
	NW_OPTS_CMP(struct report_args, o.cmp),
	NW_OPTS_STORE_READ(struct report_args, so),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_report = {
	.name = "report",
	.synopsis = "A [B ...] -O FILE.html [options]\nA [B ...] --svg FILE.svg [--op OP] [options]\n"
	            "--fleet -O FILE.html [--threshold PCT] [--db PATH]\n--job ID [-O FILE.html] [--db PATH]",
	.about = "Write one self-contained HTML page (inline SVG and CSS, no script, nothing\n"
	         "fetched: it opens offline and can be attached to a ticket) with, for each\n"
	         "op, busbw against message size on a log2 axis, every run overlaid, and the\n"
	         "link bandwidth line when known; with two runs, the comparison of B against A\n"
	         "(as 'ncclwatch compare' does); and the runs' fingerprints side by side.\n"
	         "With --svg, write only the chart of one op. With --fleet, a heatmap of\n"
	         "every host's latest check against its peers (see 'ncclwatch fleet').\n"
	         "With --job, the report of a job run under 'ncclwatch run', its nodes'\n"
	         "parts merged into one page and one timeline (docs/run.md).\n"
	         "\n"
	         "A, B ... are each: a run id from 'ncclwatch history', a baseline name, an\n"
	         "ncclwatch results JSON file, or an nccl-tests output (text or -J JSON);\n"
	         "'-' reads one of them from standard input.\n",
	.opts = report_options,
	.footer = "example:\n"
	          "  ncclwatch report before-update 42 -O report.html\n",
	.args = NW_ARGS_RUNS,
};

/* report --fleet takes the whole history: no runs, an HTML page only. */
static int fleet_form(const struct report_args *a)
{
	if (a->nspecs)
		return nw_error("report --fleet reads every host's latest check from the history: it takes no runs ('%s')",
		                a->specs[0]);
	if (a->svg || a->op)
		return nw_error("report --fleet writes an HTML page: give -O FILE.html, not --svg or --op");
	if (!a->out)
		return nw_error("say where to write: report --fleet -O FILE.html");
	return 0;
}

/* The runs given, and whether they and the options make one report; 0, or -1 after printing. */
static int take_runs(struct report_args *a, const struct nw_opt_res *res)
{
	for (int i = 0; i < res->nargs; i++) {
		if (a->nspecs == MAX_RUNS)
			return nw_error("too many runs (at most %d in one report)", MAX_RUNS);
		a->specs[a->nspecs++] = res->args[i];
	}
	if (a->job) {
		if (a->nspecs || a->fleet || a->svg || a->op)
			return nw_error("report --job ID writes the job's page: no runs, --fleet, --svg or --op with it");
		if (a->out && !strcmp(a->out, "-"))
			return nw_error("report --job writes a page and its timeline beside it: give -O FILE.html, not '-'");
		return 0;
	}
	if (a->fleet)
		return fleet_form(a);
	if (a->threshold)
		return nw_error("--threshold belongs to 'report --fleet'");
	if (!a->nspecs)
		return nw_error("report needs at least one run: ncclwatch report A [B ...] -O FILE.html");
	int nstdin = 0;
	for (size_t k = 0; k < a->nspecs; k++)
		nstdin += !strcmp(a->specs[k], "-");
	if (nstdin > 1)
		return nw_error("only one run can come from standard input ('-')");
	if (!a->out && !a->svg)
		return nw_error("say where to write: -O FILE.html (or --svg FILE.svg for one chart)");
	if (a->out && a->svg)
		return nw_error("give --output or --svg, not both");
	if (a->op && !a->svg)
		return nw_error("--op selects the chart of --svg; the HTML page has every op");
	return 0;
}

/* Two inputs with the same label (two files of one name) stay apart in the legend. */
static void distinct_labels(char (*labels)[300], size_t n)
{
	for (size_t k = 1; k < n; k++)
		for (size_t j = 0; j < k; j++)
			if (!strcmp(labels[k], labels[j])) {
				char tmp[300];
				snprintf(tmp, sizeof(tmp), "%.270s [%d]", labels[k], (int)k + 1);
				nw_strlcpy(labels[k], tmp, sizeof(labels[k]));
			}
}

/* Write the page, or the chart of --op (default: the runs' first op). */
static int write_report(const struct report_args *a, const struct nw_report_input *in)
{
	char (*ops)[24] = NULL;
	size_t nops = 0;
	const char *op = a->op;
	if (a->svg && !op) {
		nw_report_ops(in, &ops, &nops);
		if (!nops) {
			free(ops);
			return nw_error("the runs hold no result rows: nothing to chart");
		}
		op = ops[0];
	}
	struct page p = { a->svg != NULL, in, &a->o, op, NULL };
	int rc = write_out(a->svg ? a->svg : a->out, &p);
	free(ops);
	return rc;
}

/* report --fleet: the heatmap of every host's latest check. */
static int fleet_report(const struct report_args *a)
{
	char path[PATH_MAX], err[NW_ERRLEN];
	struct nw_store *s;
	struct nw_fleet f;
	if (nw_store_path(&a->so, path, sizeof(path), err, sizeof(err)) ||
	    nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)))
		return nw_error("%s", NW_TT_MSG(err)), 2;
	int rc = nw_fleet_build(s, a->threshold ? a->threshold : NW_FLEET_THRESHOLD, &f, err, sizeof(err));
	nw_store_close(s);
	if (rc)
		return nw_error("%s", NW_TT_MSG(err)), 2;
	struct page p = { 0, NULL, &a->o, NULL, &f };
	rc = write_out(a->out, &p) ? 2 : 0;
	nw_fleet_release(&f);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	memset(&a, 0, sizeof(a));
	nw_cmp_opts_default(&a.o.cmp);
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_report, &a, argc, argv, &res);
	if (st == NW_OPT_OK && take_runs(&a, &res))
		st = NW_OPT_BAD;
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_report, st);
	if (a.fleet)
		return fleet_report(&a);
	if (a.job)
		return nw_jobout_report(a.job, a.out, a.o.title, &a.so);
	struct nw_run runs[MAX_RUNS];
	const struct nw_run *rp[MAX_RUNS];
	char labels[MAX_RUNS][300], err[NW_ERRLEN];
	const char *lp[MAX_RUNS];
	size_t loaded = 0;
	int rc = 2;
	for (size_t k = 0; k < a.nspecs; k++) {
		if (nw_input_load(&a.so, a.specs[k], &runs[k], labels[k], sizeof(labels[k]), err, sizeof(err))) {
			nw_error("%s", NW_TT_MSG(err));
			goto out;
		}
		loaded++;
		rp[k] = &runs[k];
		lp[k] = labels[k];
	}
	distinct_labels(labels, a.nspecs);
	struct nw_report_input in = { rp, lp, a.nspecs };
	rc = write_report(&a, &in) ? 2 : 0;
out:
	for (size_t k = 0; k < loaded; k++)
		nw_run_release(&runs[k]);
	return rc;
}
