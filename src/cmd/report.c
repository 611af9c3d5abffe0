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
#include "report/report.h"
#include "store/compare.h"
#include "store/input.h"
#include "store/store.h"
#include "util/util.h"

const char usage_report[] =
	"usage: ncclwatch report A [B ...] -O FILE.html [options]\n"
	"       ncclwatch report A [B ...] --svg FILE.svg [--op OP] [options]\n"
	"       ncclwatch report --fleet -o FILE.html [--threshold PCT] [--db PATH]\n"
	"\n"
	"Write one self-contained HTML page (inline SVG and CSS, no script, nothing\n"
	"fetched: it opens offline and can be attached to a ticket) with, for each\n"
	"op, busbw against message size on a log2 axis, every run overlaid, and the\n"
	"link bandwidth line when known; with two runs, the comparison of B against A\n"
	"(as 'ncclwatch compare' does); and the runs' fingerprints side by side.\n"
	"With --svg, write only the chart of one op. With --fleet, a heatmap of\n"
	"every host's latest check against its peers (see 'ncclwatch fleet').\n"
	"\n"
	"A, B ... are each: a run id from 'ncclwatch history', a baseline name, an\n"
	"ncclwatch results JSON file, or an nccl-tests output (text or -J JSON);\n"
	"'-' reads one of them from standard input.\n"
	"\n"
	"options:\n"
	"  -O, --output FILE    the HTML page ('-' for stdout); -o still works but is\n"
	"                       deprecated: in bench and tune -o is the reduction\n"
	"  --svg FILE           one chart as an SVG file ('-' for stdout)\n"
	"  --op OP              the op of --svg (default: the first op of the runs)\n"
	"  --link-gbs X         draw the link line at X GB/s (default: from the runs)\n"
	"  --inplace            chart in-place rows (default out-of-place)\n"
	"  --title TEXT         page title\n"
	"  --fleet              the fleet heatmap of the history (no runs given)\n"
	"  --threshold PCT      with --fleet: outlier below PCT% of the median (default 90)\n"
	"  --tolerance PCT      for the comparison table (default 5)\n"
	"  --latency-tolerance PCT, --latency-below SIZE, --min-size SIZE\n"
	"                       as in 'ncclwatch compare'\n"
	"  --db PATH            history database (default $NCCLWATCH_DB, else\n"
	"                       $XDG_DATA_HOME/ncclwatch/history.db)\n"
	"\n"
	"example:\n"
	"  ncclwatch report before-update 42 -O report.html\n";

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
		return emit(stdout, p, err, sizeof(err)) ? nw_error("%s", err) : 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device or a pipe (/dev/null, /dev/stdout): written to, never renamed over */
		FILE *f = fopen(path, "w");
		if (!f)
			return nw_error("cannot write '%s': %s", path, strerror(errno));
		int rc = emit(f, p, err, sizeof(err));
		if (fclose(f) != 0 && !rc)
			rc = nw_seterr(err, sizeof(err), "cannot write '%s': %s", path, strerror(errno));
		return rc ? nw_error("%s", err) : 0;
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
		nw_error("%s", err);
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
};

enum { O_SVG = NW_OPT_LOCAL, O_OP, O_LINK_GBS, O_TITLE, O_INPLACE, O_FLEET, O_THRESHOLD };

/* One option's value into a; 0, or -1 after printing. */
static int take_opt(int opt, const char *v, const char *name, struct report_args *a)
{
	char err[NW_ERRLEN];
	if (v && !v[0])
		return nw_error("option '%s' needs a value; 'ncclwatch help report' lists the options", name);
	switch (opt) {
	case 'O': a->out = v; return 0;
	case 'o':
		/* -o is the reduction in bench and tune (as in nccl-tests) */
		nw_warn("report: -o is deprecated here (in bench and tune it is the reduction); use -O or --output");
		a->out = v;
		return 0;
	case O_SVG: a->svg = v; return 0;
	case O_OP: a->op = v; return 0;
	case O_TITLE: a->o.title = v; return 0;
	case O_INPLACE: a->o.inplace = 1; return 0;
	case O_FLEET: a->fleet = 1; return 0;
	case O_THRESHOLD:
		if (nw_parse_percent(v, &a->threshold, "--threshold", err, sizeof(err)))
			return nw_error("%s", err);
		if (a->threshold <= 0 || a->threshold > 1)
			return nw_error("--threshold '%s' is out of range: give a percentage of the median above 0 and at most 100 (e.g. 90)", v);
		return 0;
	case O_LINK_GBS:
		return nw_parse_double(v, 0.001, 1e6, &a->o.link_gbs, "--link-gbs", err, sizeof(err)) ? nw_error("%s", err) : 0;
	default: {
		int r = nw_cli_cmp_opt(opt, v, &a->o.cmp);
		if (r)
			return r < 0 ? -1 : 0;
		return nw_cli_store_read_opt("report", opt, v, &a->so) < 0 ? -1 : 0;
	}
	}
}

/* report --fleet takes the whole history: no runs, an HTML page only. */
static int fleet_form(const struct report_args *a)
{
	if (a->nspecs)
		return nw_error("report --fleet reads every host's latest check from the history: it takes no runs ('%s')",
		                a->specs[0]);
	if (a->svg || a->op)
		return nw_error("report --fleet writes an HTML page: give -o FILE.html, not --svg or --op");
	if (!a->out)
		return nw_error("say where to write: report --fleet -o FILE.html");
	return 0;
}

/* Options anywhere, runs as operands; then whether they make one report. */
static int parse(int argc, char **argv, struct report_args *a)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'O' },
		{ "svg", required_argument, NULL, O_SVG },
		{ "op", required_argument, NULL, O_OP },
		{ "link-gbs", required_argument, NULL, O_LINK_GBS },
		{ "title", required_argument, NULL, O_TITLE },
		NW_CLI_CMP_LONGOPTS,
		{ "inplace", no_argument, NULL, O_INPLACE },
		{ "fleet", no_argument, NULL, O_FLEET },
		{ "threshold", required_argument, NULL, O_THRESHOLD },
		NW_CLI_STORE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	while ((opt = nw_cli_next("report", argc, argv, "O:o:", longopts)) != -1)
		if (opt == -2 || take_opt(opt, optarg, nw_cli_opt_name(opt, argv), a))
			return -1;
	for (int i = optind; i < argc; i++) {
		if (a->nspecs == MAX_RUNS)
			return nw_error("too many runs (at most %d in one report)", MAX_RUNS);
		a->specs[a->nspecs++] = argv[i];
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
		return nw_error("%s", err), 2;
	int rc = nw_fleet_build(s, a->threshold ? a->threshold : NW_FLEET_THRESHOLD, &f, err, sizeof(err));
	nw_store_close(s);
	if (rc)
		return nw_error("%s", err), 2;
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
	if (parse(argc, argv, &a))
		return 2;
	if (a.fleet)
		return fleet_report(&a);
	struct nw_run runs[MAX_RUNS];
	const struct nw_run *rp[MAX_RUNS];
	char labels[MAX_RUNS][300], err[NW_ERRLEN];
	const char *lp[MAX_RUNS];
	size_t loaded = 0;
	int rc = 2;
	for (size_t k = 0; k < a.nspecs; k++) {
		if (nw_input_load(&a.so, a.specs[k], &runs[k], labels[k], sizeof(labels[k]), err, sizeof(err))) {
			nw_error("%s", err);
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
