/* SPDX-License-Identifier: Apache-2.0 */
/* ncclwatch compare A B: what got slower, where, by how much, and what changed. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/result.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "store/compare.h"
#include "store/input.h"
#include "store/store.h"
#include "util/termtext.h"
#include "util/util.h"

/* A run's line: what it is, and whether it lacks sizes. What a run holds is outside text, shown safe for a terminal. */
static void describe(const char *tag, const char *label, const struct nw_run *r)
{
	printf("%s: %s (", tag, NW_TT(label));
	const char *sep = "";
	if (r->h.host[0])
		printf("%shost %s", sep, NW_TT(r->h.host)), sep = ", ";
	if (r->h.time[0])
		printf("%s%s", sep, NW_TT(r->h.time)), sep = ", ";
	if (r->h.nccl_version[0])
		printf("%sNCCL %s", sep, NW_TT(r->h.nccl_version)), sep = ", ";
	if (r->h.gpus[0])
		printf("%s%s", sep, NW_TT(r->h.gpus)), sep = ", ";
	printf("%s%zu rows%s", sep, r->nrows, nw_run_interrupted(r) ? ", INTERRUPTED: only the sizes before Ctrl-C" : "");
	if (nw_run_incomplete(r))
		printf(", INCOMPLETE: %s", NW_TT(nw_run_incomplete(r)));
	printf(")\n");
}

static void print_rows(const struct nw_cmp *c)
{
	for (size_t i = 0; i < c->nrows; i++) {
		const struct nw_cmp_row *r = &c->rows[i];
		if (i == 0 || strcmp(r->op, c->rows[i - 1].op) || strcmp(r->dtype, c->rows[i - 1].dtype) ||
		    strcmp(r->redop, c->rows[i - 1].redop) || r->root != c->rows[i - 1].root ||
		    r->inplace != c->rows[i - 1].inplace) {
			char root[32] = "";
			if (r->root >= 0)
				snprintf(root, sizeof(root), " root %d", r->root);
			printf("\n%s %s %s%s, %s\n", NW_TT(r->op), NW_TT(r->dtype), NW_TT(r->redop), root,
			       r->inplace ? "in-place" : "out-of-place");
			printf("%10s %10s %10s %10s %10s %13s  %s\n", "size", "busbw A", "busbw B", "time A",
			       "time B", "change", "verdict");
		}
		char size[32], ch[32], ba[32] = "-", bb[32] = "-", ta[32] = "-", tb[32] = "-";
		nw_format_size(r->size, size, sizeof(size));
		if (r->within_noise)
			nw_strlcpy(ch, "within noise", sizeof(ch));
		else
			nw_cmp_format_change(ch, sizeof(ch), r->change);
		if (r->na) {
			snprintf(ba, sizeof(ba), "%.2f", r->busbw_a);
			snprintf(ta, sizeof(ta), "%.2fus", r->time_a);
		}
		if (r->nb) {
			snprintf(bb, sizeof(bb), "%.2f", r->busbw_b);
			snprintf(tb, sizeof(tb), "%.2fus", r->time_b);
		}
		printf("%10s %10s %10s %10s %10s %13s  %s", size, ba, bb, ta, tb, ch, nw_cmp_verdict_name(r->verdict));
		if (r->verdict == NW_V_SAME || r->verdict == NW_V_SLOWER || r->verdict == NW_V_FASTER)
			printf(" (%s, +-%.0f%%%s%s)", r->by_time ? "time" : "busbw", r->threshold * 100,
			       r->from_noise ? " from batch spread" : r->from_iters ? " from per-iteration spread"
			       : r->from_repeats ? " from repeats" : "",
			       r->alone ? "; alone among unchanged sizes, not counted" : "");
		putchar('\n');
	}
}

static void print_bands(const struct nw_cmp *c, enum nw_cmp_verdict v)
{
	int any = 0;
	for (size_t i = 0; i < c->nbands; i++) {
		const struct nw_cmp_band *b = &c->bands[i];
		if (b->verdict != v)
			continue;
		struct nw_cmp_band_text t;
		nw_cmp_band_text(b, &t);
		printf("  %s %s %s, %s, %s%s%s (%d size%s): %s %s on average, %s %s at %s\n", NW_TT(b->op), NW_TT(b->dtype),
		       NW_TT(b->redop), b->inplace ? "in-place" : "out-of-place", t.from, b->from == b->to ? "" : "-",
		       b->from == b->to ? "" : t.to, b->nsizes, b->nsizes == 1 ? "" : "s",
		       b->by_time ? "speed (time)" : "busbw", t.mean, v == NW_V_SLOWER ? "worst" : "best", t.worst,
		       t.worst_size);
		any = 1;
	}
	if (!any)
		printf("  none\n");
}

/* What differs, most likely to matter first; per-launch identifiers counted, or listed with show_all. */
static void print_diffs(const struct nw_cmp *c, int show_all)
{
	printf("\nwhat differs (most likely to matter first):\n");
	if (c->ndiffs == c->nignored)
		printf("  nothing that matters recorded\n");
	for (size_t i = 0; i < c->ndiffs; i++) {
		if (!c->diffs[i].ignored)
			printf("  %s\n", NW_TT(c->diffs[i].text));
		else if (show_all)
			printf("  %s (per-launch, never a cause)\n", NW_TT(c->diffs[i].text));
	}
	if (c->nignored && !show_all)
		printf("  and %zu more (--show-all): per-launch identifiers (job ids, ports, pids), never a cause\n",
		       c->nignored);
	printf("in short: %s\n", NW_TT(c->attribution));
}

/* The warning that A and B measure different things. */
static void print_not_comparable(const struct nw_cmp *c, int force)
{
	printf("NOT COMPARABLE: %s%s\n", NW_TT(c->not_comparable),
	       force ? " (compared anyway: --force)" : "; --force compares them anyway");
}

static void print_text(const struct nw_cmp *c, const struct nw_cmp_opts *o, int brief, int show_all,
                       const char *la, const struct nw_run *a, const char *lb, const struct nw_run *b)
{
	char lat[32];
	nw_format_size(o->lat_below, lat, sizeof(lat));
	if (c->not_comparable[0])
		print_not_comparable(c, 1);
	describe("A", la, a);
	describe("B", lb, b);
	printf("tolerance: busbw +-%g%% at %s and above, time +-%g%% below %s; the spread of repeats where a run repeats a size,\n"
	       "  of one iteration where both runs timed every iteration (bench -I 1), or of a size's batches\n"
	       "  (bench times quick ones three times), when larger; a change of one or a few sizes among\n"
	       "  unchanged neighbours counts only well beyond it\n",
	       o->tolerance * 100, lat, o->lat_tolerance * 100, lat);
	if (o->min_size) {
		char ms[32];
		nw_format_size(o->min_size, ms, sizeof(ms));
		printf("left out: sizes below %s\n", ms);
	}
	if (!brief)
		print_rows(c);
	printf("\nslower in B:\n");
	print_bands(c, NW_V_SLOWER);
	printf("faster in B:\n");
	print_bands(c, NW_V_FASTER);
	if (c->nonly)
		printf("not compared: %d size%s in only one run (or with no usable figure)\n", c->nonly,
		       c->nonly == 1 ? "" : "s");
	print_diffs(c, show_all);
	int total = c->nslower + c->nfaster + c->nsame;
	if (nw_cmp_regressed(c))
		printf("\nresult: REGRESSION: %d of %d compared sizes slower beyond tolerance\n", c->nslower, total);
	else if (!c->nfaster)
		printf("\nresult: no regression, no significant change (%d compared sizes)\n", total);
	else
		printf("\nresult: no regression (%d compared sizes, %d faster)\n", total, c->nfaster);
}

/* What the command line asks for. */
struct compare_args {
	struct nw_store_opts so;
	struct nw_cmp_opts o;
	struct nw_opt_out json;
	int brief, show_all, force;
	const char *by;
	const char *spec[2];
};

static const char *const *by_fields(void)
{
	static const char *const f[] = { "nccl_version", "gpu", "host", NULL };
	return f;
}

static const struct nw_opt compare_options[] = {
	NW_OPTS_CMP(struct compare_args, o),
	{ .kind = NW_OPTK_FLAG, .lname = "brief", .off = NW_F_INT(struct compare_args, brief),
	  .help = "only the summary, not every size" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "noise-floor", .off = NW_F_DBL(struct compare_args, o.noise_floor_us),
	  .argh = "US", .dmin = 0, .dmax = 1e9, .help = "a time difference below US microseconds is noise\n(default 2)" },
	{ .kind = NW_OPTK_STRING, .lname = "by", .off = NW_F_STR(struct compare_args, by), .argh = "FIELD",
	  .values = by_fields, .help = "no runs: group the history's runs by nccl_version,\n"
	                               "gpu or host and print the best busbw of each\n"
	                               "group per op and size band" },
	{ .kind = NW_OPTK_FLAG, .lname = "show-all", .off = NW_F_INT(struct compare_args, show_all),
	  .help = "also list the per-launch identifiers that differ\n(job ids, ports, pids: never a cause)" },
	{ .kind = NW_OPTK_FLAG, .lname = "force", .off = NW_F_INT(struct compare_args, force),
	  .help = "compare runs that measure different things\n(still says so first)" },
	NW_OPT_JSON(struct compare_args, json, "\n(schema ncclwatch.compare/1)"),
	NW_OPTS_STORE_READ(struct compare_args, so),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_compare = {
	.name = "compare",
	.synopsis = "[options] A B\n--by nccl_version|gpu|host [--json[=FILE]] [--db PATH]",
	.about = "Compare run B against run A (the reference) for every op, size, dtype,\n"
	         "redop and placement they share; say what got slower or faster, in which\n"
	         "size bands and by how much, and which differences between the two runs'\n"
	         "fingerprints may explain it (NCCL version, NCCL_* variables, topology,\n"
	         "driver, GPUs, host), most likely first.\n"
	         "\n"
	         "A and B are each: a run id from 'ncclwatch history', a baseline name\n"
	         "('ncclwatch history baseline NAME ID'), an ncclwatch results JSON file\n"
	         "(bench --json), or an nccl-tests output (text or -J JSON); '-' reads one\n"
	         "of them from standard input.\n"
	         "\n"
	         "Sizes at or above --latency-below are compared on busbw with --tolerance;\n"
	         "smaller (latency-bound) sizes on time with --latency-tolerance. Where a run\n"
	         "holds repeats of the same size, the spread of the repeats is the tolerance;\n"
	         "where bench measured a size's noise (three batches), the tolerance is at\n"
	         "least that. A change of one or a few sizes among unchanged neighbours\n"
	         "counts only when it is well beyond its tolerance, and one latency-bound\n"
	         "size alone not at all (docs/history.md).\n",
	.opts = compare_options,
	.footer = "A size whose difference is inside the measured noise (the spread of\n"
	          "repeats, iterations or batches, or less than 2 us of time) is \"within\n"
	          "noise\". Changes beyond\n"
	          "twice as fast or slow read as \"3.0x slower\", not as a percentage.\n"
	          "\n"
	          "exit status: 0 no regression, 1 something got slower beyond tolerance,\n"
	          "2 bad usage or unreadable input, 3 the runs are not comparable (backend\n"
	          "GPUs vs host, GPU model, rank count or op/dtype set differ) and no --force.\n"
	          "\n"
	          "examples:\n"
	          "  ncclwatch compare before-update 42\n"
	          "  ncclwatch compare old.json new.json --tolerance 3 --min-size 1M\n"
	          "  ncclwatch compare --by nccl_version\n",
	.args = NW_ARGS_RUNS,
	.width = 27,
};

/* Exactly two runs, at most one of them standard input, or --by and none. 0, or -1 after printing. */
static int take_runs(struct compare_args *a, const struct nw_opt_res *res)
{
	int nspec = res->nargs;
	if (a->by && nspec)
		return nw_error("compare --by groups the whole history: it takes no runs ('%s')", NW_TT(res->args[0]));
	if (a->by)
		return 0;
	if (nspec > 2)
		return nw_error("compare takes two runs, got a third ('%s')", NW_TT(res->args[2]));
	if (nspec != 2)
		return nw_error("compare needs two runs: ncclwatch compare A B (run ids, baseline names or result files)");
	a->spec[0] = res->args[0];
	a->spec[1] = res->args[1];
	if (!strcmp(a->spec[0], "-") && !strcmp(a->spec[1], "-"))
		return nw_error("only one of A and B can be standard input ('-')");
	return 0;
}

/* A band's best busbw and its run as "361.20 (run 7)", or "-". */
static void fmt_best(char *buf, size_t len, const struct nw_by_cell *c, int band)
{
	if (c->best_run[band])
		snprintf(buf, len, "%.2f (run %lld)", c->best[band], c->best_run[band]);
	else
		snprintf(buf, len, "-");
}

/* The --by table: one line per op and group, the best busbw of each size band. */
static void print_by(const struct nw_by_table *t)
{
	int wg = (int)strlen(t->by);
	for (size_t i = 0; i < t->n; i++)
		if ((int)nw_tt_width(NW_TT(t->cells[i].group)) > wg)
			wg = (int)nw_tt_width(NW_TT(t->cells[i].group));
	printf("best busbw (GB/s) by %s, per op and size band (the run that measured it):\n", t->by);
	printf("%-16s %-*s %5s  %-22s %-22s %s\n", "op", wg, t->by, "runs", "latency (<64K)", "middle (64K-64M)",
	       "bandwidth (>=64M)");
	for (size_t i = 0; i < t->n; i++) {
		const struct nw_by_cell *c = &t->cells[i];
		char b[NW_NBANDS][48];
		for (int k = 0; k < NW_NBANDS; k++)
			fmt_best(b[k], sizeof(b[k]), c, k);
		char group[NW_TT_BUF];
		nw_tt(c->group, group);
		printf("%-16s %-*s %5d  %-22s %-22s %s\n", NW_TT(c->op), wg + (int)(strlen(group) - nw_tt_width(group)), group,
		       c->nruns, b[0], b[1], b[2]);
	}
}

/* compare --by FIELD: exit 0, or 2 when the history cannot be read. */
static int run_by(const struct compare_args *a)
{
	char path[PATH_MAX], err[NW_ERRLEN];
	struct nw_store *s;
	struct nw_store_filter f;
	struct nw_by_table t;
	memset(&f, 0, sizeof(f));
	if (nw_store_path(&a->so, path, sizeof(path), err, sizeof(err)) ||
	    nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err))) {
		nw_error("%s", NW_TT_MSG(err));
		return 2;
	}
	int rc = nw_cmp_by(s, a->by, &f, &t, err, sizeof(err));
	nw_store_close(s);
	if (rc) {
		nw_error("%s", NW_TT_MSG(err));
		return 2;
	}
	if (nw_cli_json_text(&a->json))
		print_by(&t);
	if (a->json.on) {
		json_t *doc = nw_by_table_to_json(&t);
		rc = nw_cli_json_write("compare", &a->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) ? 2 : 0;
		json_decref(doc);
	}
	nw_by_table_release(&t);
	return rc;
}

int cmd_compare(int argc, char **argv)
{
	struct compare_args a;
	memset(&a, 0, sizeof(a));
	nw_cmp_opts_default(&a.o);
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_compare, &a, argc, argv, &res);
	if (st == NW_OPT_OK && take_runs(&a, &res))
		st = NW_OPT_BAD;
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_compare, st);
	if (a.by)
		return run_by(&a);
	struct nw_run ra, rb;
	char la[300], lb[300], err[NW_ERRLEN];
	struct nw_cmp c;
	int rc = 2;
	memset(&c, 0, sizeof(c));
	nw_run_init(&ra);
	nw_run_init(&rb);
	if (nw_input_load(&a.so, a.spec[0], &ra, la, sizeof(la), err, sizeof(err)) ||
	    nw_input_load(&a.so, a.spec[1], &rb, lb, sizeof(lb), err, sizeof(err)) ||
	    nw_compare(&ra, &rb, &a.o, &c, err, sizeof(err))) {
		nw_error("%s", NW_TT_MSG(err));
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		if (nw_run_interrupted(i ? &rb : &ra))
			nw_warn("compare: %s (%s) is an interrupted run: it holds only the sizes measured before it was "
			        "stopped; sizes it lacks are not compared%s", i ? "B" : "A", NW_TT(i ? lb : la),
			        i ? "" : " (a baseline should be a complete run)");
		if (nw_run_incomplete(i ? &rb : &ra))
			nw_warn("compare: %s (%s) is an incomplete run (%s): figures it lacks are not compared%s", i ? "B" : "A",
			        NW_TT(i ? lb : la), NW_TT(nw_run_incomplete(i ? &rb : &ra)),
			        i ? "" : " (a baseline should be a complete run)");
	}
	int text = nw_cli_json_text(&a.json);
	if (text && c.not_comparable[0] && !a.force) {
		print_not_comparable(&c, 0);
		print_diffs(&c, a.show_all);
	} else if (text) {
		print_text(&c, &a.o, a.brief, a.show_all, la, &ra, lb, &rb);
	}
	rc = c.not_comparable[0] && !a.force ? 3 : nw_cmp_regressed(&c) ? 1 : 0;
	if (a.json.on) {
		json_t *doc = nw_cmp_to_json(&c, &a.o, la, lb);
		if (nw_cli_json_write("compare", &a.json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)))
			rc = 2;
		json_decref(doc);
	}
out:
	nw_cmp_release(&c);
	nw_run_release(&ra);
	nw_run_release(&rb);
	return rc;
}
