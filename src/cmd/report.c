/* ncclwatch report: one self-contained HTML page (or one SVG chart) of runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/result.h"
#include "cmd/cmd.h"
#include "report/report.h"
#include "store/compare.h"
#include "store/input.h"
#include "store/store.h"
#include "util/util.h"

const char usage_report[] =
	"usage: ncclwatch report A [B ...] -o FILE.html [options]\n"
	"       ncclwatch report A [B ...] --svg FILE.svg [--op OP] [options]\n"
	"\n"
	"Write one self-contained HTML page (inline SVG and CSS, no script, nothing\n"
	"fetched: it opens offline and can be attached to a ticket) with, for each\n"
	"op, busbw against message size on a log2 axis, every run overlaid, and the\n"
	"link bandwidth line when known; with two runs, the comparison of B against A\n"
	"(as 'ncclwatch compare' does); and the runs' fingerprints side by side.\n"
	"With --svg, write only the chart of one op.\n"
	"\n"
	"A, B ... are each: a run id from 'ncclwatch history', a baseline name, an\n"
	"ncclwatch results JSON file, or an nccl-tests output (text or -J JSON);\n"
	"'-' reads one of them from standard input.\n"
	"\n"
	"options:\n"
	"  -o FILE              the HTML page ('-' for stdout)\n"
	"  --svg FILE           one chart as an SVG file ('-' for stdout)\n"
	"  --op OP              the op of --svg (default: the first op of the runs)\n"
	"  --link-gbs X         draw the link line at X GB/s (default: from the runs)\n"
	"  --inplace            chart in-place rows (default out-of-place)\n"
	"  --title TEXT         page title\n"
	"  --tolerance PCT      for the comparison table (default 5)\n"
	"  --latency-tolerance PCT, --latency-below SIZE, --min-size SIZE\n"
	"                       as in 'ncclwatch compare'\n"
	"  --db PATH            history database (default $NCCLWATCH_DB, else\n"
	"                       $XDG_DATA_HOME/ncclwatch/history.db)\n"
	"\n"
	"example:\n"
	"  ncclwatch report before-update 42 -o report.html\n";

#define MAX_RUNS 16

/*
 * Write through a temporary file renamed into place, so a failed report
 * never leaves half a page where a good one was.
 */
static int write_out(const char *path, int svg, const struct nw_report_input *in,
                     const struct nw_report_opts *o, const char *op)
{
	char err[NW_ERRLEN];
	if (!strcmp(path, "-")) {
		int rc = svg ? nw_svg_chart(stdout, in, op, o, err, sizeof(err))
		             : nw_report_html(stdout, in, o, err, sizeof(err));
		return rc ? nw_error("%s", err) : 0;
	}
	char *tmp = nw_asprintf("%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		nw_error("cannot write '%s': %s", path, strerror(errno));
		free(tmp);
		return -1;
	}
	int rc = svg ? nw_svg_chart(f, in, op, o, err, sizeof(err)) : nw_report_html(f, in, o, err, sizeof(err));
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

int cmd_report(int argc, char **argv)
{
	struct nw_store_opts so = { 0 };
	struct nw_report_opts o;
	memset(&o, 0, sizeof(o));
	nw_cmp_opts_default(&o.cmp);
	const char *specs[MAX_RUNS], *out = NULL, *svg = NULL, *op = NULL;
	size_t nspecs = 0;
	char err[NW_ERRLEN];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int h = nw_store_parse_opt(argc, argv, &i, &so, err, sizeof(err));
		if (h < 0)
			return nw_error("%s", err), 2;
		if (h > 0) {
			if (so.disabled)
				return nw_error("--no-history has no meaning for report (it records nothing)"), 2;
			continue;
		}
		static const char *const with_val[] = { "-o", "--svg", "--op", "--link-gbs", "--title", "--tolerance",
		                                        "--latency-tolerance", "--latency-below", "--min-size" };
		int has_val = 0;
		for (size_t k = 0; k < NW_ARRAY_LEN(with_val); k++)
			has_val |= !strcmp(a, with_val[k]);
		if (has_val && (i + 1 >= argc || !argv[i + 1][0]))
			return nw_error("%s needs a value; 'ncclwatch help report' lists the options", a), 2;
		const char *v = has_val ? argv[++i] : NULL;
		if (!strcmp(a, "-o")) {
			out = v;
		} else if (!strcmp(a, "--svg")) {
			svg = v;
		} else if (!strcmp(a, "--op")) {
			op = v;
		} else if (!strcmp(a, "--title")) {
			o.title = v;
		} else if (!strcmp(a, "--link-gbs")) {
			if (nw_parse_double(v, 0.001, 1e6, &o.link_gbs, "--link-gbs", err, sizeof(err)))
				return nw_error("%s", err), 2;
		} else if (!strcmp(a, "--tolerance")) {
			if (nw_parse_percent(v, &o.cmp.tolerance, "--tolerance", err, sizeof(err)))
				return nw_error("%s", err), 2;
		} else if (!strcmp(a, "--latency-tolerance")) {
			if (nw_parse_percent(v, &o.cmp.lat_tolerance, "--latency-tolerance", err, sizeof(err)))
				return nw_error("%s", err), 2;
		} else if (!strcmp(a, "--latency-below")) {
			if (nw_parse_size(v, &o.cmp.lat_below, err, sizeof(err)))
				return nw_error("--latency-below: %s", err), 2;
		} else if (!strcmp(a, "--min-size")) {
			if (nw_parse_size(v, &o.cmp.min_size, err, sizeof(err)))
				return nw_error("--min-size: %s", err), 2;
		} else if (!strcmp(a, "--inplace")) {
			o.inplace = 1;
		} else if (a[0] == '-' && a[1]) {
			return nw_error("unknown option '%s'; 'ncclwatch help report' lists the options", a), 2;
		} else if (nspecs < MAX_RUNS) {
			specs[nspecs++] = a;
		} else {
			return nw_error("too many runs (at most %d in one report)", MAX_RUNS), 2;
		}
	}
	if (!nspecs)
		return nw_error("report needs at least one run: ncclwatch report A [B ...] -o FILE.html"), 2;
	int nstdin = 0;
	for (size_t k = 0; k < nspecs; k++)
		nstdin += !strcmp(specs[k], "-");
	if (nstdin > 1)
		return nw_error("only one run can come from standard input ('-')"), 2;
	if (!out && !svg)
		return nw_error("say where to write: -o FILE.html (or --svg FILE.svg for one chart)"), 2;
	if (out && svg)
		return nw_error("give -o or --svg, not both"), 2;
	if (op && !svg)
		return nw_error("--op selects the chart of --svg; the HTML page has every op"), 2;

	struct nw_run runs[MAX_RUNS];
	const struct nw_run *rp[MAX_RUNS];
	char labels[MAX_RUNS][300];
	const char *lp[MAX_RUNS];
	size_t loaded = 0;
	int rc = 2;
	for (size_t k = 0; k < nspecs; k++) {
		if (nw_input_load(&so, specs[k], &runs[k], labels[k], sizeof(labels[k]), err, sizeof(err))) {
			nw_error("%s", err);
			goto out;
		}
		loaded++;
		rp[k] = &runs[k];
		lp[k] = labels[k];
	}
	/* Two inputs with the same label (two files of one name) stay apart in the legend. */
	for (size_t k = 1; k < nspecs; k++)
		for (size_t j = 0; j < k; j++)
			if (!strcmp(labels[k], labels[j])) {
				char tmp[300];
				snprintf(tmp, sizeof(tmp), "%.270s [%d]", labels[k], (int)k + 1);
				nw_strlcpy(labels[k], tmp, sizeof(labels[k]));
			}
	struct nw_report_input in = { rp, lp, nspecs };
	char (*ops)[24] = NULL;
	size_t nops = 0;
	if (svg && !op) {
		nw_report_ops(&in, &ops, &nops);
		if (!nops) {
			free(ops);
			nw_error("the runs hold no result rows: nothing to chart");
			goto out;
		}
		op = ops[0];
	}
	rc = write_out(svg ? svg : out, svg != NULL, &in, &o, op) ? 2 : 0;
	free(ops);
out:
	for (size_t k = 0; k < loaded; k++)
		nw_run_release(&runs[k]);
	return rc;
}
