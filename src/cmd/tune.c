/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tune: measure NCCL's defaults against variants of the settings that
 * matter, one fresh `ncclwatch bench` process per run, and say what (if
 * anything) to set. --check-env measures the user's own NCCL_* settings.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "model/coll.h"
#include "cmd/cli.h"
#include "cmd/progress.h"
#include "cmd/cmd.h"
#include "store/store.h"
#include "tune/driver.h"
#include "util/util.h"

#define MAXVARS 64
#define MAXKEEP 64

/* The command's options: the driver's, bench's, and what the command does with the results. */
struct tune_opts {
	struct nw_tuner_opts t;          /* opmask is filled from ops once the options are read */
	struct nw_tune_bench_opts bench;
	const char *ops;
	char *vars[MAXVARS];
	char *keep[MAXKEEP + 1];         /* owned, NULL-terminated */
	int nkeep;
	const char *launcher;
	const char *env_out;
	struct nw_opt_out json;
	const char *bench_cmd;
	struct nw_store_opts so;
	int quiet;
	enum nw_progress_mode progress; /* --progress, --no-progress */
	struct nw_progress prog;        /* the line redrawn on a terminal */
};

static volatile sig_atomic_t interrupted;

/* SIGINT or SIGTERM: the first ends the run in progress and keeps what was measured; a second dies at once. */
static void on_signal(int sig)
{
	if (interrupted) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	interrupted = sig;
}

static void set_defaults(struct tune_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ops = "all_reduce,all_gather,reduce_scatter";
	o->bench = (struct nw_tune_bench_opts){ .b = "8", .e = "1G", .f = "4", .n = "20", .w = "5", .d = "float", .o = "sum" };
	o->t.groups = NW_TG_ALL;
	o->t.vars = o->vars;
	o->t.keep = o->keep;
	o->t.repeats = 5;
	o->t.min_gain = 0.02;
	o->t.prune_after = 2;
	o->t.confirm = 3;
}

/* --keep NAME[,NAME...], repeatable (past MAXKEEP, the rest are left out). */
static int keep_opt(void *opts, const char *list, const char *name, char *err, size_t errlen)
{
	struct tune_opts *o = opts;
	(void)name, (void)err, (void)errlen;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len && o->nkeep < MAXKEEP)
			o->keep[o->nkeep++] = nw_asprintf("%.*s", (int)len, p);
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

/* --var NAME=v1,v2, repeatable. */
static int var_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct tune_opts *o = opts;
	if (o->t.nvars == MAXVARS)
		return nw_seterr(err, errlen, "%s: at most %d", name, MAXVARS);
	o->vars[o->t.nvars++] = (char *)arg;
	return 0;
}

static int settings_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	(void)name;
	return nw_tune_groups_parse(arg, &((struct tune_opts *)opts)->t.groups, err, errlen) ? -1 : 0;
}

static const char *const *settings_names(void)
{
	static const char *const n[] = { "algo", "proto", "channels", "nthreads", "buffsize", "all", "none", NULL };
	return n;
}

/* A duration above zero (--budget, --timeout); 0, or -1 with err. */
static int positive_duration(const char *arg, const char *name, double *out, char *err, size_t errlen)
{
	char perr[NW_ERRLEN];
	if (nw_parse_duration(arg, out, perr, sizeof(perr)) != 0)
		return nw_seterr(err, errlen, "%s: %s", name, perr);
	if (*out <= 0)
		return nw_seterr(err, errlen, "%s: must be above zero%s", name, strstr(name, "budget") ? " (e.g. 10m)" : "");
	return 0;
}

static int budget_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	return positive_duration(arg, name, &((struct tune_opts *)opts)->t.budget_s, err, errlen);
}

static int timeout_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	return positive_duration(arg, name, &((struct tune_opts *)opts)->t.timeout_s, err, errlen);
}

#define TO struct tune_opts
static const struct nw_opt tune_options[] = {
	{ .kind = NW_OPTK_GROUP, .help = "what to measure:" },
	{ .kind = NW_OPTK_STRING, .lname = "op", .off = NW_F_STR(TO, ops), .argh = "LIST", .values = nw_cli_op_names,
	  .flags = NW_OPTF_LIST, .help = "collectives (default all_reduce,all_gather,reduce_scatter)" },
	{ .kind = NW_OPTK_STRING, .lname = "ops", .off = NW_F_STR(TO, ops), .argh = "LIST", .flags = NW_OPTF_HIDDEN },
	{ .kind = NW_OPTK_STRING, .sname = 'b', .off = NW_F_STR(TO, bench.b), .argh = "SIZE",
	  .help = "smallest size (default 8)" },
	{ .kind = NW_OPTK_STRING, .sname = 'e', .off = NW_F_STR(TO, bench.e), .argh = "SIZE",
	  .help = "largest size (default 1G)" },
	{ .kind = NW_OPTK_STRING, .sname = 'f', .off = NW_F_STR(TO, bench.f), .argh = "FACTOR",
	  .help = "size step factor (default 4)" },
	{ .kind = NW_OPTK_STRING, .sname = 'n', .off = NW_F_STR(TO, bench.n), .argh = "ITERS",
	  .help = "iterations per size (default 20)" },
	{ .kind = NW_OPTK_STRING, .sname = 'w', .off = NW_F_STR(TO, bench.w), .argh = "WARMUP",
	  .help = "warm-up iterations per size (default 5)" },
	{ .kind = NW_OPTK_STRING, .sname = 'd', .off = NW_F_STR(TO, bench.d), .argh = "TYPE", .values = nw_cli_dtype_names,
	  .help = "data type (default float)" },
	{ .kind = NW_OPTK_STRING, .sname = 'o', .off = NW_F_STR(TO, bench.o), .argh = "REDOP", .values = nw_cli_redop_names,
	  .help = "reduction (default sum)" },
	{ .kind = NW_OPTK_STRING, .sname = 'g', .off = NW_F_STR(TO, bench.g), .argh = "N",
	  .help = "GPUs per process (bench's -g)" },
	{ .kind = NW_OPTK_STRING, .lname = "backend", .off = NW_F_STR(TO, bench.backend), .argh = "nccl|mpi",
	  .help = "bench backend (default: bench's own)" },
	{ .kind = NW_OPTK_FILE, .lname = "nccl-lib", .off = NW_F_STR(TO, bench.nccl_lib), .argh = "PATH",
	  .help = "the libnccl.so.2 every run loads (bench's --nccl-lib)" },
	{ .kind = NW_OPTK_STRING, .lname = "bands", .off = NW_F_STR(TO, t.bands), .argh = "LIST",
	  .help = "size band boundaries (default 64K,16M: small < 64K,\nmedium 64K-16M, large >= 16M); 'none' for one band" },
	{ .kind = NW_OPTK_CALL, .lname = "settings", .argh = "LIST", .call = settings_opt, .values = settings_names,
	  .flags = NW_OPTF_LIST, .help = "built-in groups to try: algo, proto, channels,\n"
	                                 "nthreads, buffsize, 'all' (default) or 'none'" },
	{ .kind = NW_OPTK_CALL, .lname = "var", .argh = "NAME=v1,v2", .call = var_opt,
	  .help = "also try these values of NAME (repeatable)" },
	{ .kind = NW_OPTK_CALL, .lname = "keep", .argh = "NAME", .call = keep_opt,
	  .help = "keep this NCCL_* variable in every run (repeatable,\nor a comma list), e.g. NCCL_SOCKET_IFNAME" },
	{ .kind = NW_OPTK_FLAG, .lname = "check-env", .off = NW_F_INT(TO, t.check_env),
	  .help = "measure the current NCCL_* settings against the\ndefaults instead: helps, hurts or no difference" },
	{ .kind = NW_OPTK_GROUP, .help = "how long:" },
	{ .kind = NW_OPTK_CALL, .lname = "budget", .argh = "DURATION", .call = budget_opt,
	  .help = "time for the whole search (e.g. 10m): repeats and\n"
	          "variants are planned to fit; what was left out is said" },
	{ .kind = NW_OPTK_INT, .lname = "repeats", .off = NW_F_INT(TO, t.repeats), .argh = "N", .min = NW_TUNE_MIN_REPEATS,
	  .max = 1000, .help = "repeats per variant, 3 or more (default 5; with --budget\nthe most)" },
	{ .kind = NW_OPTK_PERCENT, .lname = "min-gain", .off = NW_F_DBL(TO, t.min_gain), .argh = "PCT",
	  .help = "smallest speed gain that can count (default 2)" },
	{ .kind = NW_OPTK_INT, .lname = "prune-after", .off = NW_F_INT(TO, t.prune_after), .argh = "N", .max = 1000,
	  .help = "after N repeats drop variants slower than the default\nin every band (default 2; 0: never)" },
	{ .kind = NW_OPTK_INT, .lname = "confirm", .off = NW_F_INT(TO, t.confirm), .argh = "N", .max = 100,
	  .help = "before recommending a variant, run N more interleaved\n"
	          "rounds of it and the default; it must still win\n"
	          "(default 3; 0: recommend without confirming)" },
	{ .kind = NW_OPTK_CALL, .lname = "timeout", .argh = "DURATION", .call = timeout_opt,
	  .help = "kill a run that takes longer (default: 5x the first\n"
	          "default run, at least 30 s; 10m before that run)" },
	{ .kind = NW_OPTK_STRING, .lname = "launcher", .off = NW_F_STR(TO, launcher), .argh = "\"CMD\"",
	  .help = "prefix for multi-process runs, split on blanks\n"
	          "(e.g. \"mpirun -np 2\"); default: one process for all\nlocal GPUs" },
	{ .kind = NW_OPTK_GROUP, .help = "output:" },
	{ .kind = NW_OPTK_OUTPUT, .lname = "env-out", .off = NW_F_STR(TO, env_out), .argh = "FILE",
	  .help = "write the recommendation as 'export NCCL_X=v' lines\n(only comments when the defaults are best)" },
	NW_OPT_JSON(TO, json, "\n(every figure)"),
	{ .kind = NW_OPTK_DIR, .lname = "save-runs", .off = NW_F_STR(TO, t.save_runs), .argh = "DIR",
	  .flags = NW_OPTF_LATER, .help = "keep each run's results JSON in DIR" },
	{ .kind = NW_OPTK_GROUP, .help = "history (every successful run is recorded, source \"tune\", with its variant):" },
	NW_OPTS_STORE(TO, so),
	NW_OPT_QUIET(TO, quiet, 'q'),
	NW_OPTS_PROGRESS(TO, progress),
	{ .kind = NW_OPTK_GROUP, .help = "testing:" },
	{ .kind = NW_OPTK_FILE, .lname = "bench-cmd", .off = NW_F_STR(TO, bench_cmd), .argh = "PATH",
	  .help = "run PATH instead of this binary as the bench (for\ntests: a stand-in that writes results JSON)" },
	{ 0 },
};
#undef TO

const struct nw_cmd_spec nw_spec_tune = {
	.name = "tune",
	.about = "Measures, per collective and size band, NCCL's defaults against variants of\n"
	         "the settings that matter (NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS,\n"
	         "NCCL_MAX_NCHANNELS, NCCL_NTHREADS, NCCL_BUFFSIZE, and --var), each run in a\n"
	         "fresh 'ncclwatch bench' process. Variants are interleaved and repeated; a\n"
	         "variant wins only when its gain is beyond the measured noise (docs/tune.md).\n"
	         "Every NCCL_* variable except NCCL_NVLS_ENABLE (and --keep ones) is unset in\n"
	         "the measured runs, so \"default\" means NCCL's own defaults.\n",
	.opts = tune_options,
	.footer = "Exit: 0 measured (whatever the verdict), 2 usage, 3 the default runs failed,\n"
	          "130 interrupted.\n",
};

/*
 * Checks the values passed through to bench so a typo fails at once, not
 * in every child, and the rest that only make sense together.
 */
static int check_opts(const struct tune_opts *o, char *err, size_t errlen)
{
	const struct nw_tune_bench_opts *b = &o->bench;
	char perr[NW_ERRLEN];
	uint64_t sz_b, sz_e;
	double fv;
	long lv;
	if (nw_parse_size(b->b, &sz_b, perr, sizeof(perr)) != 0 || nw_parse_size(b->e, &sz_e, perr, sizeof(perr)) != 0)
		return nw_seterr(err, errlen, "-b/-e: %s", perr);
	if (sz_e < sz_b)
		return nw_seterr(err, errlen, "-e %s is below -b %s", b->e, b->b);
	if (nw_parse_double(b->f, 1, 1e6, &fv, "-f", err, errlen) != 0 ||
	    nw_parse_long(b->n, 1, 1000000, &lv, "-n", err, errlen) != 0 ||
	    nw_parse_long(b->w, 0, 1000000, &lv, "-w", err, errlen) != 0 ||
	    (b->g && nw_parse_long(b->g, 1, 1024, &lv, "-g", err, errlen) != 0))
		return -1;
	if (nw_dtype_find(b->d) < 0)
		return nw_seterr(err, errlen, "-d: unknown data type '%s' (e.g. float, half, bfloat16, double, int32)", b->d);
	if (nw_redop_find(b->o) < 0)
		return nw_seterr(err, errlen, "-o: unknown reduction '%s' (sum, prod, max, min, avg)", b->o);
	if (b->backend && strcmp(b->backend, "nccl") && strcmp(b->backend, "mpi"))
		return nw_seterr(err, errlen, "--backend: '%s' is not nccl or mpi", b->backend);
	if (o->launcher && !o->launcher[strspn(o->launcher, " \t")])
		return nw_seterr(err, errlen, "--launcher: empty command");
	if (o->bench_cmd && !*o->bench_cmd)
		return nw_seterr(err, errlen, "--bench-cmd: empty path");
	for (int i = 0; i < o->nkeep; i++)
		if (strncmp(o->keep[i], "NCCL_", 5) != 0)
			return nw_seterr(err, errlen, "--keep '%s': only NCCL_* variables are unset, so only they can be kept", o->keep[i]);
	return 0;
}

/* Parses the options; NW_OPT_OK, or what nw_opt_parse says (after printing the error). */
static enum nw_opt_status parse(int argc, char **argv, struct tune_opts *o, struct nw_opt_res *res)
{
	char err[NW_ERRLEN];
	set_defaults(o);
	enum nw_opt_status st = nw_opt_parse(&nw_spec_tune, o, argc, argv, res);
	if (st != NW_OPT_OK)
		return st;
	if (check_opts(o, err, sizeof(err)) != 0) {
		nw_error("%s", err);
		return NW_OPT_BAD;
	}
	return NW_OPT_OK;
}

/* Microseconds with the precision a table needs; "-" when unknown. */
static void fmt_us(double us, char *buf, size_t len)
{
	if (!isfinite(us))
		snprintf(buf, len, "-");
	else if (us < 100)
		snprintf(buf, len, "%.2f us", us);
	else if (us < 10000)
		snprintf(buf, len, "%.1f us", us);
	else
		snprintf(buf, len, "%.0f us", us);
}

/* What was measured, on what, for how long, and why it stopped early. */
static void print_header(const struct nw_tuner *t)
{
	char el[32], bud[32];
	nw_tune_fmt_dur(nw_tuner_elapsed(t), el, sizeof(el));
	nw_tune_fmt_dur(t->o->budget_s, bud, sizeof(bud));
	printf("ncclwatch tune%s: %s%s%s%d rank%s%s%s%s, backend %s\n", t->o->check_env ? " --check-env" : "",
	       t->nccl_version[0] ? "NCCL " : "", t->nccl_version, t->nccl_version[0] ? ", " : "",
	       t->nranks, t->nranks == 1 ? "" : "s",
	       t->gpus[0] ? " (" : "", t->gpus, t->gpus[0] ? ")" : "", t->backend[0] ? t->backend : "?");
	printf("%d variant%s, %d run%s in %s%s%s%s; gain = speed over the defaults, median of repeats\n",
	       t->vs.n, t->vs.n == 1 ? "" : "s", t->runs_total, t->runs_total == 1 ? "" : "s", el,
	       t->o->budget_s > 0 ? " (budget " : "", t->o->budget_s > 0 ? bud : "", t->o->budget_s > 0 ? ")" : "");
	if (t->stripped[0])
		printf("unset in %s (keep one with --keep NAME): %s\n",
		       t->o->check_env ? "the 'defaults' runs" : "every run", t->stripped);
	if (t->stopped[0])
		printf("stopped early: %s\n", t->stopped);
}

/* The op x band table: the default, the best variant where one is better, or why none is. */
static void print_tune_table(const struct nw_tuner *t)
{
	printf("\n%-15s %-18s %11s  %-28s %11s %8s  %-17s %s\n", "op", "size band", "default", "best variant",
	       "best", "gain", "95% interval", "verdict");
	for (int i = 0; i < t->ncells; i++) {
		const struct nw_tune_cell *c = &t->cells[i];
		char d[32], b[32], iv[48];
		fmt_us(c->default_us, d, sizeof(d));
		const char *op = nw_coll_get(c->op)->name;
		if (c->best >= 0) {
			const struct nw_tune_cmp *m = &c->best_cmp;
			fmt_us(m->med_v, b, sizeof(b));
			snprintf(iv, sizeof(iv), "%+.1f..%+.1f%%", 100 * m->ci_lo, 100 * m->ci_hi);
			printf("%-15s %-18s %11s  %-28s %11s %+7.1f%%  %-17s better (%d/%d repeats)\n", op,
			       t->bands[c->band].name, d, t->vs.v[c->best].label, b, 100 * m->gain, iv, m->n_v, m->n_d);
		} else {
			const struct nw_tune_samples *s = nw_tune_data_at(&t->data, 0, c->op, c->band);
			char why[128];
			if (s->n < NW_TUNE_MIN_REPEATS)
				snprintf(why, sizeof(why), "too few repeats for a verdict (%d)", s->n);
			else if (c->nworse + c->nsame == 0)
				snprintf(why, sizeof(why), "no variant with enough repeats");
			else
				snprintf(why, sizeof(why), "defaults best (%d slower, %d within noise)", c->nworse, c->nsame);
			printf("%-15s %-18s %11s  %-28s %11s %8s  %-17s %s\n", op, t->bands[c->band].name, d, "-", "", "",
			       "", why);
		}
	}
}

/* Variants in status a or b under a heading, each with why (nothing when there are none). */
static void print_status_list(const struct nw_tuner *t, const char *heading, enum nw_tune_status a,
                              enum nw_tune_status b)
{
	int printed = 0;
	for (int v = 1; v < t->vs.n; v++) {
		const struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status != a && var->status != b)
			continue;
		if (!printed++)
			printf("\n%s:\n", heading);
		printf("  %s: %s%s\n", var->label,
		       var->status == NW_TV_WRONG ? "wrong results, " :
		       var->status == NW_TV_PRUNED ? "pruned, " :
		       var->status == NW_TV_SKIPPED ? "skipped, " : "", var->why);
	}
}

/* Variants measured to the end that are faster in some bands and slower in others. */
static void print_mixed(const struct nw_tuner *t)
{
	int printed = 0;
	for (int v = 1; v < t->vs.n; v++) {
		int nb, nw;
		nw_tuner_count_verdicts(t, v, &nb, &nw);
		if (t->vs.v[v].status != NW_TV_ACTIVE || !nb || !nw)
			continue;
		if (!printed++)
			printf("\nfaster in some bands but slower in others (not recommended process-wide):\n");
		printf("  %s: better in %d, worse in %d (op x band)\n", t->vs.v[v].label, nb, nw);
	}
}

/* What was not measured to the end or is mixed, what the verdict covers, and the verdict. */
static void print_tune_verdict(const struct nw_tuner *t)
{
	int any_best = 0;
	for (int i = 0; i < t->ncells; i++)
		any_best |= t->cells[i].best >= 0;
	print_status_list(t, "failed (never recommended)", NW_TV_FAILED, NW_TV_WRONG);
	print_status_list(t, "not measured to the end", NW_TV_PRUNED, NW_TV_SKIPPED);
	print_mixed(t);
	printf("\n");
	int nskipped = 0;
	for (int v = 1; v < t->vs.n; v++)
		nskipped += t->vs.v[v].status == NW_TV_SKIPPED;
	if (nskipped)
		printf("(%d of %d variants were left out for lack of time: the verdict covers the others only)\n",
		       nskipped, t->vs.n - 1);
	int nfew = nw_tuner_few_repeats(t);
	if (nw_tuner_no_verdict(t)) {
		printf("no verdict: too few repeats (%d needed)%s%s; give more --budget or time\n", NW_TUNE_MIN_REPEATS,
		       t->stopped[0] ? ", " : "", t->stopped);
		return;
	}
	if (nfew)
		printf("(%d variant%s stopped before %d repeats and got no verdict)\n", nfew, nfew == 1 ? "" : "s",
		       NW_TUNE_MIN_REPEATS);
	if (t->rec >= 0) {
		const struct nw_tune_variant *var = &t->vs.v[t->rec];
		int nb, nw;
		nw_tuner_count_verdicts(t, t->rec, &nb, &nw);
		printf("recommendation: %s (better in %d op x band, worse in none%s)\n", var->label, nb,
		       var->confirmed ? ", confirmed by a second measurement" : "");
		for (int i = 0; i < t->nalso; i++)
			printf("  also better somewhere and worse nowhere, not combined (combinations were not measured): %s\n",
			       t->vs.v[t->also[i]].label);
	} else if (t->candidate >= 0) {
		printf("defaults are best here as far as confirmed: %s looked faster but was not confirmed (%s); run again with more --budget\n",
		       t->vs.v[t->candidate].label, t->unconfirmed);
	} else if (any_best) {
		printf("defaults are best here for a process-wide setting: no variant is faster in some band without being slower in another\n");
	} else {
		printf("defaults are best here: no variant was faster beyond the noise in any op and size band\n");
	}
}

/* --check-env: the user's settings against the defaults per op x band, and what to do. */
static void print_check_env(const struct nw_tuner *t)
{
	const struct nw_tune_variant *cur = &t->vs.v[1];
	printf("\nyour settings: %s\n", cur->label);
	if (cur->status == NW_TV_FAILED || cur->status == NW_TV_WRONG) {
		printf("\nyour settings %s: %s\nthe defaults work: unset them\n",
		       cur->status == NW_TV_WRONG ? "give wrong results" : "fail", cur->why);
		return;
	}
	printf("\n%-15s %-18s %11s %11s %8s  %-17s %s\n", "op", "size band", "defaults", "current", "gain",
	       "95% interval", "verdict");
	int helps = 0, hurts = 0, same = 0, few = 0;
	for (int i = 0; i < t->ncells; i++) {
		const struct nw_tune_cell *c = &t->cells[i];
		const struct nw_tune_cmp *m = nw_tuner_cmp(t, 1, c->op, c->band);
		char d[32], b[32], iv[48], g[16];
		fmt_us(m->med_d, d, sizeof(d));
		fmt_us(m->med_v, b, sizeof(b));
		snprintf(g, sizeof(g), isfinite(m->gain) ? "%+.1f%%" : "-", 100 * m->gain);
		if (isfinite(m->ci_lo))
			snprintf(iv, sizeof(iv), "%+.1f..%+.1f%%", 100 * m->ci_lo, 100 * m->ci_hi);
		else
			snprintf(iv, sizeof(iv), "-");
		printf("%-15s %-18s %11s %11s %8s  %-17s %s\n", nw_coll_get(c->op)->name,
		       t->bands[c->band].name, d, b, g, iv, nw_tune_verdict_name(m->verdict, 1));
		helps += m->verdict == NW_TC_BETTER;
		hurts += m->verdict == NW_TC_WORSE;
		same += m->verdict == NW_TC_SAME;
		few += m->verdict == NW_TC_FEW;
	}
	printf("\nyour NCCL_* settings help in %d op x band, hurt in %d, make no difference within noise in %d",
	       helps, hurts, same);
	if (few)
		printf(", too few repeats in %d", few);
	printf("\n");
	if (hurts && !helps)
		printf("they only hurt here: unset them\n");
	else if (!hurts && !helps && same)
		printf("they do nothing measurable here: the defaults are as good (defaults are best here)\n");
	else if (hurts && helps)
		printf("they help some sizes and hurt others: keep them only if your job's sizes are where they help\n");
}

/* Writes the env file to path ('-': stdout); 0, or -1 after printing the error. */
static int write_env_file(const struct nw_tuner *t, const char *path)
{
	FILE *f = !strcmp(path, "-") ? stdout : fopen(path, "w");
	if (!f)
		return nw_error("cannot write '%s': %s", path, strerror(errno));
	int rc = nw_tuner_write_env(t, f);
	if (f != stdout && fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		return nw_error("writing '%s' failed: %s", path, strerror(errno));
	return 0;
}

/* Writes the JSON document where --json says; 0, or -1 after printing the error. */
static int write_json_file(const struct nw_tuner *t, const struct nw_opt_out *j)
{
	json_t *doc = nw_tuner_json(t);
	int rc = nw_cli_json_write("tune", j, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
	json_decref(doc);
	return rc;
}

/*
 * Shows the driver's notes on stderr: progress and advice unless --quiet,
 * warnings always. On a terminal the "[i/n] variant" lines are one line
 * redrawn in place.
 */
static void show_note(void *ctx, enum nw_tune_note kind, const char *text)
{
	struct tune_opts *o = ctx;
	if (kind == NW_TUNE_PROGRESS && text[0] == '[')
		nw_strlcpy(o->prog.what, text, sizeof(o->prog.what)); /* what an interruption stopped */
	if (kind == NW_TUNE_PROGRESS && text[0] == '[' && o->prog.on) {
		char what[sizeof(o->prog.what)];
		snprintf(what, sizeof(what), "tune: %s", text);
		nw_progress_begin(&o->prog, what);
		return;
	}
	nw_progress_clear(&o->prog);
	if (kind == NW_TUNE_WARNING || (kind == NW_TUNE_ADVICE && !o->quiet))
		nw_warn("%s", text);
	else if (kind == NW_TUNE_PROGRESS && !o->quiet)
		fprintf(stderr, "tune: %s\n", text);
}

/* The first progress line: how many variants of what, and for how long. */
static void say_start(const struct tune_opts *o, const struct nw_tuner *t, const char *ops)
{
	char bud[32];
	if (o->quiet)
		return;
	nw_tune_fmt_dur(o->t.budget_s, bud, sizeof(bud));
	fprintf(stderr, "tune: %d variant%s of %s (sizes %s..%s), up to %d repeats%s%s\n", t->vs.n,
	        t->vs.n == 1 ? "" : "s", ops, o->bench.b, o->bench.e, o->t.repeats, o->t.budget_s > 0 ? ", budget " : "",
	        o->t.budget_s > 0 ? bud : "");
}

/* Measures with SIGINT and SIGTERM caught: a run in progress is ended and what was measured stands. */
static int measure_caught(struct nw_tuner *t, char *err, size_t errlen)
{
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	int rc = nw_tuner_measure(t, err, errlen);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

/* The report on stdout (unless the JSON goes there) and the files asked for; rc, or 3 when a file fails. */
static int report(const struct tune_opts *o, const struct nw_tuner *t, int rc)
{
	if (nw_cli_json_text(&o->json)) {
		print_header(t);
		if (o->t.check_env) {
			print_check_env(t);
		} else {
			print_tune_table(t);
			print_tune_verdict(t);
		}
	}
	if (o->json.on && write_json_file(t, &o->json) != 0)
		rc = NW_TUNE_FAILED;
	if (o->env_out && !o->t.check_env && write_env_file(t, o->env_out) != 0)
		rc = NW_TUNE_FAILED;
	if (o->env_out && !o->t.check_env && !o->quiet && rc == 0)
		fprintf(stderr, "tune: wrote '%s'%s\n", o->env_out, t->rec < 0 ? " (defaults are best: nothing to set)" : "");
	return rc;
}

int cmd_tune(int argc, char **argv)
{
	struct tune_opts o;
	struct nw_tuner t;
	struct nw_tune_child child;
	char err[NW_ERRLEN], ops[256];
	memset(&child, 0, sizeof(child));
	struct nw_opt_res res;
	enum nw_opt_status st = parse(argc, argv, &o, &res);
	int rc = st == NW_OPT_OK ? 0 : nw_opt_exit(&nw_spec_tune, st);
	struct nw_tuner_hooks hooks = {
		.run_ctx = &child, .note = show_note, .note_ctx = &o, .interrupted = &interrupted,
	};
	nw_tuner_init(&t, &o.t, &hooks);
	if (st != NW_OPT_OK)
		goto out;
	rc = NW_TUNE_USAGE;
	if (nw_tune_ops_parse(o.ops, nw_opt_given(&res, "ops") ? "--ops" : "--op", &o.t.opmask, err, sizeof(err)) != 0)
		goto fail;
	nw_tune_ops_list(o.t.opmask, ops, sizeof(ops));
	int prepared = nw_tuner_prepare(&t, err, sizeof(err));
	if (prepared < 0)
		goto fail;
	if (prepared > 0) {
		printf("no NCCL_* variables are set (besides NCCL_NVLS_ENABLE and --keep ones): nothing to check; NCCL runs with its defaults\n");
		rc = 0;
		goto out;
	}
	struct nw_tune_child_spec spec = {
		.bench_cmd = o.bench_cmd, .launcher = o.launcher, .bench = o.bench, .save_runs = o.t.save_runs,
		.keep = o.keep, .interrupted = &interrupted,
	};
	rc = nw_tune_child_open(&child, &spec, err, sizeof(err));
	if (rc != NW_TUNE_OK)
		goto fail;
	say_start(&o, &t, ops);
	nw_progress_init(&o.prog, !o.quiet ? nw_progress_wanted(o.progress) : o.progress == NW_PROGRESS_ON, 0);
	rc = measure_caught(&t, err, sizeof(err));
	nw_progress_clear(&o.prog);
	if (interrupted)
		fprintf(stderr, "ncclwatch: tune: interrupted (%s) during %s: that run was ended; keeping the %d finished "
		        "run%s\n", interrupted == SIGTERM ? "SIGTERM" : "SIGINT", o.prog.what[0] ? o.prog.what : "the start",
		        t.runs_total, t.runs_total == 1 ? "" : "s");
	if (rc == NW_TUNE_INTERRUPTED && t.runs_total == 0)
		goto out;
	if (rc != NW_TUNE_FAILED)
		rc = nw_tuner_conclude(&t, rc, err, sizeof(err));
	if (rc == NW_TUNE_FAILED)
		goto fail;
	nw_tuner_record(&t, &o.so);
	rc = report(&o, &t, rc);
	goto out;
fail:
	nw_error("%s", err);
out:
	nw_tune_child_close(&child);
	for (int i = 0; i < o.nkeep; i++)
		free(o.keep[i]);
	nw_tuner_release(&t);
	return rc;
}
