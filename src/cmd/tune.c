/*
 * tune: measure NCCL's defaults against variants of the settings that
 * matter, one fresh `ncclwatch bench` process per run, and say what (if
 * anything) to set. --check-env measures the user's own NCCL_* settings.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/coll.h"
#include "model/result.h"
#include "cmd/cmd.h"
#include "store/store.h"
#include "tune/tune.h"
#include "util/util.h"

extern char **environ;

const char usage_tune[] =
	"usage: ncclwatch tune [options]\n"
	"\n"
	"Measures, per collective and size band, NCCL's defaults against variants of\n"
	"the settings that matter (NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS,\n"
	"NCCL_MAX_NCHANNELS, NCCL_NTHREADS, NCCL_BUFFSIZE, and --var), each run in a\n"
	"fresh 'ncclwatch bench' process. Variants are interleaved and repeated; a\n"
	"variant wins only when its gain is beyond the measured noise (docs/tune.md).\n"
	"Every NCCL_* variable except NCCL_NVLS_ENABLE (and --keep ones) is unset in\n"
	"the measured runs, so \"default\" means NCCL's own defaults.\n"
	"\n"
	"what to measure:\n"
	"  --op LIST            collectives (default all_reduce,all_gather,reduce_scatter)\n"
	"  -b SIZE, -e SIZE     smallest and largest size (default 8 and 1G)\n"
	"  -f FACTOR            size step factor (default 4)\n"
	"  -n ITERS, -w WARMUP  iterations and warm-up per size (default 20 and 5)\n"
	"  -d TYPE, -o REDOP    data type and reduction (default float, sum)\n"
	"  -g N                 GPUs per process (bench's -g)\n"
	"  --backend nccl|mpi   bench backend (default: bench's own)\n"
	"  --nccl-lib PATH      the libnccl.so.2 every run loads (bench's --nccl-lib)\n"
	"  --bands LIST         size band boundaries (default 64K,16M: small < 64K,\n"
	"                       medium 64K-16M, large >= 16M); 'none' for one band\n"
	"  --settings LIST      built-in groups to try: algo, proto, channels,\n"
	"                       nthreads, buffsize, 'all' (default) or 'none'\n"
	"  --var NAME=v1,v2     also try these values of NAME (repeatable)\n"
	"  --keep NAME          keep this NCCL_* variable in every run (repeatable,\n"
	"                       or a comma list), e.g. NCCL_SOCKET_IFNAME\n"
	"  --check-env          measure the current NCCL_* settings against the\n"
	"                       defaults instead: helps, hurts or no difference\n"
	"how long:\n"
	"  --budget DURATION    time for the whole search (e.g. 10m): repeats and\n"
	"                       variants are planned to fit; what was left out is said\n"
	"  --repeats N          repeats per variant, 3 or more (default 5; with --budget\n"
	"                       the most)\n"
	"  --min-gain PCT       smallest speed gain that can count (default 2)\n"
	"  --prune-after N      after N repeats drop variants slower than the default\n"
	"                       in every band (default 2; 0: never)\n"
	"  --confirm N          before recommending a variant, run N more interleaved\n"
	"                       rounds of it and the default; it must still win\n"
	"                       (default 3; 0: recommend without confirming)\n"
	"  --timeout DURATION   kill a run that takes longer (default: 5x the first\n"
	"                       default run, at least 30 s; 10m before that run)\n"
	"  --launcher \"CMD\"     prefix for multi-process runs, split on blanks\n"
	"                       (e.g. \"mpirun -np 2\"); default: one process for all\n"
	"                       local GPUs\n"
	"output:\n"
	"  --env-out FILE       write the recommendation as 'export NCCL_X=v' lines\n"
	"                       (only comments when the defaults are best)\n"
	"  --json FILE          write every figure as JSON ('-': stdout, no table)\n"
	"  --save-runs DIR      keep each run's results JSON in DIR\n"
	"history (every successful run is recorded, source \"tune\", with its variant):\n"
	NW_STORE_USAGE
	"  -q, --quiet          no progress lines on stderr\n"
	"testing:\n"
	"  --bench-cmd PATH     run PATH instead of this binary as the bench (for\n"
	"                       tests: a stand-in that writes results JSON)\n"
	"\n"
	"Exit: 0 measured (whatever the verdict), 2 usage, 3 the default runs failed,\n"
	"130 interrupted.\n";

#define MAXVARS 64
#define MAXKEEP 64

struct tune_opts {
	const char *ops;
	const char *b, *e, *f, *n, *w, *d, *o, *g, *backend, *nccl_lib;
	const char *bands_spec;
	unsigned groups;
	char *vars[MAXVARS];
	int nvars;
	char *keep[MAXKEEP + 1];
	int nkeep;
	int check_env;
	double budget_s;
	long repeats;
	int repeats_set;
	double min_gain;
	long prune_after;
	long confirm;
	double timeout_s;
	const char *launcher;
	const char *env_out;
	const char *json_out;
	const char *save_runs;
	struct nw_store_opts so;
	int quiet;
	const char *bench_cmd;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

/* "--name value" or "--name=value" at argv[*i]; returns the value or NULL (not this option). */
static const char *optval(int argc, char **argv, int *i, const char *name, int *missing)
{
	const char *a = argv[*i];
	size_t len = strlen(name);
	if (strncmp(a, name, len) != 0)
		return NULL;
	if (a[len] == '=')
		return a + len + 1;
	if (a[len] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

static void fmt_dur(double s, char *buf, size_t len)
{
	if (!(s >= 0) || !isfinite(s))
		s = 0;
	long t = lround(s);
	if (t >= 60)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%lds", t);
}

/* Parses the options; returns 0, or 2 after printing the error. */
static int parse(int argc, char **argv, struct tune_opts *o)
{
	char err[NW_ERRLEN];
	memset(o, 0, sizeof(*o));
	o->ops = "all_reduce,all_gather,reduce_scatter";
	o->b = "8";
	o->e = "1G";
	o->f = "4";
	o->n = "20";
	o->w = "5";
	o->d = "float";
	o->o = "sum";
	o->groups = NW_TG_ALL;
	o->repeats = 5;
	o->min_gain = 0.02;
	o->prune_after = 2;
	o->confirm = 3;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int missing = 0;
		long lv;
		double dv;
#define OPT(name) ((v = optval(argc, argv, &i, (name), &missing)) != NULL || missing)
		int h = nw_store_parse_opt(argc, argv, &i, &o->so, err, sizeof(err));
		if (h < 0)
			return nw_error("%s", err), 2;
		if (h > 0)
			continue;
		if (!strcmp(a, "--check-env")) {
			o->check_env = 1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (OPT("--op") || OPT("--ops")) {
			if (!missing)
				o->ops = v;
		} else if (OPT("-b")) {
			o->b = v;
		} else if (OPT("-e")) {
			o->e = v;
		} else if (OPT("-f")) {
			o->f = v;
		} else if (OPT("-n")) {
			o->n = v;
		} else if (OPT("-w")) {
			o->w = v;
		} else if (OPT("-d")) {
			o->d = v;
		} else if (OPT("-o")) {
			o->o = v;
		} else if (OPT("-g")) {
			o->g = v;
		} else if (OPT("--backend")) {
			o->backend = v;
		} else if (OPT("--nccl-lib")) {
			o->nccl_lib = v;
		} else if (OPT("--bands")) {
			o->bands_spec = v;
		} else if (OPT("--settings")) {
			if (!missing && nw_tune_groups_parse(v, &o->groups, err, sizeof(err)) != 0)
				return nw_error("%s", err), 2;
		} else if (OPT("--var")) {
			if (!missing && o->nvars == MAXVARS)
				return nw_error("--var: at most %d", MAXVARS), 2;
			if (!missing)
				o->vars[o->nvars++] = (char *)v;
		} else if (OPT("--keep")) {
			if (!missing) {
				const char *p = v;
				while (*p) {
					size_t len = strcspn(p, ",");
					if (len && o->nkeep < MAXKEEP)
						o->keep[o->nkeep++] = nw_asprintf("%.*s", (int)len, p);
					p += len;
					if (*p)
						p++;
				}
			}
		} else if (OPT("--budget")) {
			if (!missing && nw_parse_duration(v, &o->budget_s, err, sizeof(err)) != 0)
				return nw_error("--budget: %s", err), 2;
			if (!missing && o->budget_s <= 0)
				return nw_error("--budget: must be above zero (e.g. 10m)"), 2;
		} else if (OPT("--repeats")) {
			if (!missing && nw_parse_long(v, NW_TUNE_MIN_REPEATS, 1000, &lv, "--repeats", err, sizeof(err)) != 0)
				return nw_error("%s", err), 2;
			if (!missing) {
				o->repeats = lv;
				o->repeats_set = 1;
			}
		} else if (OPT("--min-gain")) {
			if (!missing && nw_parse_double(v, 0, 1000, &dv, "--min-gain", err, sizeof(err)) != 0)
				return nw_error("%s", err), 2;
			if (!missing)
				o->min_gain = dv / 100;
		} else if (OPT("--prune-after")) {
			if (!missing && nw_parse_long(v, 0, 1000, &lv, "--prune-after", err, sizeof(err)) != 0)
				return nw_error("%s", err), 2;
			if (!missing)
				o->prune_after = lv;
		} else if (OPT("--confirm")) {
			if (!missing && nw_parse_long(v, 0, 100, &lv, "--confirm", err, sizeof(err)) != 0)
				return nw_error("%s", err), 2;
			if (!missing)
				o->confirm = lv;
		} else if (OPT("--timeout")) {
			if (!missing && (nw_parse_duration(v, &o->timeout_s, err, sizeof(err)) != 0))
				return nw_error("--timeout: %s", err), 2;
			if (!missing && o->timeout_s <= 0)
				return nw_error("--timeout: must be above zero"), 2;
		} else if (OPT("--launcher")) {
			o->launcher = v;
		} else if (OPT("--env-out")) {
			o->env_out = v;
		} else if (OPT("--json")) {
			o->json_out = v;
		} else if (OPT("--save-runs")) {
			o->save_runs = v;
		} else if (OPT("--bench-cmd")) {
			o->bench_cmd = v;
		} else {
			return nw_error("tune: unknown option '%s'; 'ncclwatch help tune' lists them", a), 2;
		}
		if (missing)
			return nw_error("tune: option '%s' needs a value", a), 2;
#undef OPT
	}
	err[0] = '\0';
	/* Check the pass-through values here so a typo fails at once, not in every child. */
	uint64_t sz_b, sz_e;
	if (nw_parse_size(o->b, &sz_b, err, sizeof(err)) != 0 ||
	    nw_parse_size(o->e, &sz_e, err, sizeof(err)) != 0)
		return nw_error("-b/-e: %s", err), 2;
	if (sz_e < sz_b)
		return nw_error("-e %s is below -b %s", o->e, o->b), 2;
	double fv;
	long lv;
	if (nw_parse_double(o->f, 1, 1e6, &fv, "-f", err, sizeof(err)) != 0 ||
	    nw_parse_long(o->n, 1, 1000000, &lv, "-n", err, sizeof(err)) != 0 ||
	    nw_parse_long(o->w, 0, 1000000, &lv, "-w", err, sizeof(err)) != 0 ||
	    (o->g && nw_parse_long(o->g, 1, 1024, &lv, "-g", err, sizeof(err)) != 0))
		return nw_error("%s", err), 2;
	if (nw_dtype_find(o->d) < 0)
		return nw_error("-d: unknown data type '%s' (e.g. float, half, bfloat16, double, int32)", o->d), 2;
	if (nw_redop_find(o->o) < 0)
		return nw_error("-o: unknown reduction '%s' (sum, prod, max, min, avg)", o->o), 2;
	if (o->backend && strcmp(o->backend, "nccl") && strcmp(o->backend, "mpi"))
		return nw_error("--backend: '%s' is not nccl or mpi", o->backend), 2;
	if (o->launcher && !o->launcher[strspn(o->launcher, " \t")])
		return nw_error("--launcher: empty command"), 2;
	if (o->bench_cmd && !*o->bench_cmd)
		return nw_error("--bench-cmd: empty path"), 2;
	for (int i = 0; i < o->nkeep; i++)
		if (strncmp(o->keep[i], "NCCL_", 5) != 0)
			return nw_error("--keep '%s': only NCCL_* variables are unset, so only they can be kept", o->keep[i]), 2;
	return 0;
}

/* The ops of mask as a comma list, in enum order. */
static void ops_list_of(unsigned mask, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (enum nw_op op = 0; op < NW_NOPS; op++) {
		if (!(mask & (1u << op)))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", nw_coll_get(op)->name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

/* Parses --op into an op mask; writes the list in enum order to buf. */
static int parse_ops(const char *spec, unsigned *mask, char *buf, size_t len)
{
	*mask = 0;
	const char *p = spec;
	if (!*p)
		return nw_error("--op: empty list; give e.g. all_reduce,all_gather"), -1;
	while (*p) {
		size_t n = strcspn(p, ",");
		char name[32];
		if (n == 0 || n >= sizeof(name))
			return nw_error("--op: bad list '%s'", spec), -1;
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		const struct nw_coll *c = nw_coll_find(name);
		if (!c)
			return nw_error("--op: unknown collective '%s' (all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, gather, scatter)", name), -1;
		*mask |= 1u << c->op;
		p += n;
		if (*p)
			p++;
	}
	ops_list_of(*mask, buf, len);
	return 0;
}

/* Everything one tune invocation measures and decides. */
struct tune {
	struct tune_opts *o;
	struct nw_tune_variants vs;
	struct nw_tune_data data;
	struct nw_tune_child child;
	double timeout_s;      /* a run is killed after this long */
	struct nw_tune_band bands[NW_TUNE_MAXBANDS];
	int nbands;
	unsigned opmask;
	int nops;
	double t0;
	int *done;             /* runs finished per variant */
	double *est;           /* estimated seconds per run, per variant */
	int *keep;             /* planner's keep flags */
	int repeats;           /* planned repeats per variant */
	int runs_total;        /* runs finished, all variants */
	int runs_planned;
	char stopped[256];     /* why measuring stopped early ("" when it did not) */
	char nccl_version[32];
	char backend[16];
	char gpus[512];
	int nranks;
	struct nw_run *runs;   /* every successful run, for history */
	int *run_variant, *run_repeat;
	int nruns, capruns;
	struct nw_tune_cmp *cmps;
	struct nw_tune_cell *cells;
	int ncells;
	int rec;
	int *also;
	int nalso;
	char stripped[1024];   /* NCCL_* names unset in the measured runs */
	int candidate;         /* a winner that could not be confirmed, or -1 */
	char unconfirmed[256]; /* why not */
};

static double elapsed(const struct tune *t)
{
	return nw_now() - t->t0;
}

/* Seconds the plan still needs, by the current estimates. */
static double remaining(const struct tune *t)
{
	double s = 0;
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < t->repeats)
			s += (double)(t->repeats - t->done[v]) * t->est[v];
	return s;
}

static int planned_runs(const struct tune *t)
{
	int n = t->runs_total;
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < t->repeats)
			n += t->repeats - t->done[v];
	return n;
}

static void keep_run(struct tune *t, struct nw_run *run, int v, int repeat)
{
	if (t->nruns == t->capruns) {
		t->capruns = t->capruns ? t->capruns * 2 : 32;
		t->runs = nw_realloc(t->runs, (size_t)t->capruns * sizeof(*t->runs));
		t->run_variant = nw_realloc(t->run_variant, (size_t)t->capruns * sizeof(int));
		t->run_repeat = nw_realloc(t->run_repeat, (size_t)t->capruns * sizeof(int));
	}
	t->runs[t->nruns] = *run; /* moved: the caller's run is left empty */
	nw_run_init(run);
	t->run_variant[t->nruns] = v;
	t->run_repeat[t->nruns] = repeat;
	t->nruns++;
}

/* A file name made of the label's safe characters. */
static void safe_name(const char *label, char *buf, size_t len)
{
	size_t o = 0;
	for (const char *p = label; *p && o + 1 < len; p++)
		buf[o++] = (char)((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		                  (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.' ? *p : '_');
	buf[o] = '\0';
}

/*
 * One run of variant v (repeat numbering from 1). Returns 0 when measured
 * or when the variant failed (its status says which), -1 when the child
 * could not be started or we were interrupted.
 */
static int run_one(struct tune *t, int v, int repeat, int check, const char *note)
{
	struct nw_tune_variant *var = &t->vs.v[v];
	char ops[256], err[NW_ERRLEN], e1[32], e2[32];
	ops_list_of(t->opmask & var->opmask, ops, sizeof(ops));
	int i = t->runs_total + 1, n = planned_runs(t);
	if (!t->o->quiet) {
		fmt_dur(elapsed(t), e1, sizeof(e1));
		fmt_dur(remaining(t), e2, sizeof(e2));
		if (note)
			fprintf(stderr, "tune: [%d] %s, repeat %d (%s)  elapsed %s\n", i, var->label, repeat, note, e1);
		else
			fprintf(stderr, "tune: [%d/%d] %s, repeat %d/%d%s  elapsed %s  eta %s\n", i, n < i ? i : n,
			        var->label, repeat, t->repeats, check ? " (verified)" : "", e1, e2);
	}
	char *keep_path = NULL;
	if (t->o->save_runs) {
		char nm[160];
		safe_name(var->label, nm, sizeof(nm));
		keep_path = nw_asprintf("%s/%03d-%s-r%d.json", t->o->save_runs, i, nm, repeat);
	}
	struct nw_tune_result r;
	struct nw_tune_request rq = { var, ops, check, keep_path, t->timeout_s };
	int rc = nw_tune_run_child(&t->child, &rq, &r, err, sizeof(err));
	free(keep_path);
	if (rc != 0) {
		nw_run_release(&r.run);
		if (interrupted)
			return -1;
		return nw_error("%s", err);
	}
	if (interrupted) {
		nw_run_release(&r.run);
		return -1;
	}
	var->cost_s = (var->cost_s * var->runs + r.wall_s) / (var->runs + 1);
	var->runs++;
	t->est[v] = var->cost_s;
	t->done[v]++;
	t->runs_total++;
	int64_t wrong = 0;
	for (size_t k = 0; r.have_run && k < r.run.nrows; k++)
		if (r.run.rows[k].wrong > 0)
			wrong += r.run.rows[k].wrong;
	if (!r.have_run || (r.rc != 0 && r.rc != 1)) {
		var->status = NW_TV_FAILED;
		snprintf(var->why, sizeof(var->why), "repeat %d: %.900s", repeat, r.err[0] ? r.err : "no results");
	} else if (r.rc == 1 && wrong == 0) {
		var->status = NW_TV_FAILED;
		snprintf(var->why, sizeof(var->why), "repeat %d: %.900s (but no wrong element in its results)", repeat, r.err);
	} else if (wrong > 0) {
		var->status = NW_TV_WRONG;
		snprintf(var->why, sizeof(var->why), "repeat %d: verification found %lld wrong element%s%s%.900s",
		         repeat, (long long)wrong, wrong == 1 ? "" : "s", r.err[0] ? "; " : "", r.err);
	} else {
		nw_tune_data_add_run(&t->data, v, &r.run);
		if (!t->nccl_version[0])
			nw_strlcpy(t->nccl_version, r.run.h.nccl_version, sizeof(t->nccl_version));
		if (!t->backend[0])
			nw_strlcpy(t->backend, r.run.h.backend, sizeof(t->backend));
		if (!t->gpus[0])
			nw_strlcpy(t->gpus, r.run.h.gpus, sizeof(t->gpus));
		if (!t->nranks)
			t->nranks = r.run.h.nranks;
		keep_run(t, &r.run, v, repeat);
	}
	nw_run_release(&r.run);
	if (!t->o->quiet && var->status != NW_TV_ACTIVE)
		fprintf(stderr, "tune: %s %s: %s\n", var->label,
		        var->status == NW_TV_WRONG ? "gave wrong results" : "failed", var->why);
	return 0;
}

/*
 * Seconds kept back from the plan for confirming a winner (two runs per
 * round), at most a quarter of the budget so that a small budget still
 * measures something.
 */
static double reserve(const struct tune *t)
{
	if (t->o->check_env || t->o->confirm <= 0 || t->o->budget_s <= 0)
		return 0;
	double r = (double)t->o->confirm * 2 * t->est[0];
	return r < t->o->budget_s / 4 ? r : t->o->budget_s / 4;
}

/* Re-plans repeats and variants for the time left; marks what is dropped. */
static void replan(struct tune *t)
{
	int n = t->vs.n;
	int *active = nw_calloc((size_t)n, sizeof(int));
	int *trial = nw_calloc((size_t)n, sizeof(int));
	for (int v = 0; v < n; v++)
		active[v] = t->vs.v[v].status == NW_TV_ACTIVE;
	struct nw_tune_plan_in in = {
		.n = n, .cost_s = t->est, .active = active, .done = t->done,
		.budget_left_s = t->o->budget_s > 0 ? t->o->budget_s - elapsed(t) - reserve(t) : 0,
		.min_repeats = (int)(t->o->repeats < NW_TUNE_MIN_REPEATS ? t->o->repeats : NW_TUNE_MIN_REPEATS),
		.max_repeats = (int)t->o->repeats,
	};
	if (t->o->budget_s > 0 && in.budget_left_s <= 0)
		in.budget_left_s = 1e-9;
	struct nw_tune_plan_out out = { .keep = t->keep };
	nw_tune_plan(&in, &out);
	/*
	 * Variants left out earlier come back, in list order, when everything
	 * kept still fits with 15% to spare: estimates improve as runs finish,
	 * and the margin keeps a variant from coming and going.
	 */
	for (int v = 1; in.budget_left_s > 0 && out.fits && out.ndropped == 0 && v < n; v++) {
		if (t->vs.v[v].status != NW_TV_SKIPPED)
			continue;
		active[v] = 1;
		struct nw_tune_plan_in tin = in;
		tin.budget_left_s = in.budget_left_s * 0.85;
		struct nw_tune_plan_out tout = { .keep = trial };
		nw_tune_plan(&tin, &tout);
		if (tout.fits && tout.ndropped == 0) {
			memcpy(t->keep, trial, (size_t)n * sizeof(int));
			out.repeats = tout.repeats;
			t->vs.v[v].status = NW_TV_ACTIVE;
			t->vs.v[v].why[0] = '\0';
		} else {
			active[v] = 0;
			t->keep[v] = 0;
		}
	}
	t->repeats = out.repeats;
	for (int v = 1; v < n; v++) {
		struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status == NW_TV_ACTIVE && !t->keep[v]) {
			var->status = NW_TV_SKIPPED;
			snprintf(var->why, sizeof(var->why), "left out for lack of time after %d run%s",
			         t->done[v], t->done[v] == 1 ? "" : "s");
		}
	}
	if (!out.fits && !t->stopped[0] && !t->o->quiet)
		nw_warn("the budget does not fit %d repeats of the default (about %.0f s each): verdicts need %d; raise --budget",
		        in.min_repeats, t->est[0], NW_TUNE_MIN_REPEATS);
	free(active);
	free(trial);
}

/* Drops variants slower than the default in every band they were measured in. */
static void prune(struct tune *t, int after)
{
	for (int v = 1; v < t->vs.n; v++) {
		struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status != NW_TV_ACTIVE)
			continue;
		int bands = 0, worse = 0;
		for (enum nw_op op = 0; op < NW_NOPS; op++)
			for (int b = 0; b < t->nbands; b++) {
				const struct nw_tune_samples *d = nw_tune_data_at(&t->data, 0, op, b);
				const struct nw_tune_samples *s = nw_tune_data_at(&t->data, v, op, b);
				if (d->n < 2 || s->n < 2)
					continue;
				bands++;
				worse += nw_tune_clearly_worse(d->x, d->n, s->x, s->n, 0.05);
			}
		if (bands > 0 && worse == bands) {
			var->status = NW_TV_PRUNED;
			snprintf(var->why, sizeof(var->why),
			         "after %d repeats its fastest run was over 5%% slower than the default's slowest in every band (%d)",
			         after, bands);
		}
	}
}

/* Measures: the default first, then interleaved rounds; fills t. Returns 0, 3 or 130. */
static int measure(struct tune *t)
{
	int n = t->vs.n;
	double first_timeout = t->o->timeout_s > 0 ? t->o->timeout_s : 600;
	t->timeout_s = first_timeout;
	t->repeats = (int)t->o->repeats;
	for (int v = 0; v < n; v++)
		t->keep[v] = 1;
	if (run_one(t, 0, 1, 1, NULL) != 0)
		return interrupted ? 130 : 3;
	if (t->vs.v[0].status != NW_TV_ACTIVE) {
		nw_error("the default run failed, so nothing can be compared: %s", t->vs.v[0].why);
		return 3;
	}
	double c0 = t->vs.v[0].cost_s;
	if (t->o->timeout_s <= 0)
		t->timeout_s = 5 * c0 > 30 ? 5 * c0 : 30;
	for (int v = 1; v < n; v++) {
		int nv = 0;
		for (enum nw_op op = 0; op < NW_NOPS; op++)
			nv += (t->opmask & t->vs.v[v].opmask & (1u << op)) != 0;
		t->est[v] = c0 * (0.25 + 0.75 * nv / (t->nops ? t->nops : 1));
	}
	replan(t);
	int *order = nw_calloc((size_t)n, sizeof(int));
	int rc = 0;
	for (int r = 1; r <= t->repeats; r++) {
		/* This round's variants, rotated by one more each round. */
		int m = 0;
		for (int v = 0; v < n; v++)
			if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < r)
				order[m++] = v;
		for (int k = 0; k < m; k++) {
			int v = order[(k + r - 1) % m];
			struct nw_tune_variant *var = &t->vs.v[v];
			if (var->status != NW_TV_ACTIVE)
				continue;
			if (t->o->budget_s > 0 && elapsed(t) + t->est[v] > t->o->budget_s) {
				snprintf(t->stopped, sizeof(t->stopped), "the budget ran out during repeat %d", r);
				goto out;
			}
			if (run_one(t, v, t->done[v] + 1, t->done[v] == 0, NULL) != 0) {
				rc = interrupted ? 130 : 3;
				goto out;
			}
			if (v == 0 && var->status != NW_TV_ACTIVE) {
				nw_error("the default run failed on repeat %d, so the comparison stops: %s", r, var->why);
				rc = 3;
				goto out;
			}
		}
		if (!t->o->check_env && t->o->prune_after > 0 && r == t->o->prune_after)
			prune(t, r);
		replan(t);
	}
out:
	free(order);
	return rc;
}

static const char *status_name(enum nw_tune_status s)
{
	switch (s) {
	case NW_TV_ACTIVE: return "measured";
	case NW_TV_FAILED: return "failed";
	case NW_TV_WRONG: return "wrong";
	case NW_TV_PRUNED: return "pruned";
	case NW_TV_SKIPPED: return "skipped";
	}
	return "?";
}

static const char *verdict_name(enum nw_tune_verdict v, int check_env)
{
	switch (v) {
	case NW_TC_BETTER: return check_env ? "helps" : "better";
	case NW_TC_WORSE: return check_env ? "hurts" : "worse";
	case NW_TC_SAME: return "no difference within noise";
	case NW_TC_FEW: return "too few repeats for a verdict";
	}
	return "?";
}

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

static const struct nw_tune_cmp *cmp_at(const struct tune *t, int v, enum nw_op op, int b)
{
	return &t->cmps[((size_t)v * NW_NOPS + (size_t)op) * (size_t)t->nbands + (size_t)b];
}

static void count_verdicts(const struct tune *t, int v, int *better, int *worse)
{
	*better = *worse = 0;
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		for (int b = 0; b < t->nbands; b++) {
			enum nw_tune_verdict x = cmp_at(t, v, op, b)->verdict;
			*better += x == NW_TC_BETTER;
			*worse += x == NW_TC_WORSE;
		}
}

static void analyze(struct tune *t)
{
	free(t->cmps);
	free(t->cells);
	free(t->also);
	size_t n = (size_t)t->vs.n * NW_NOPS * (size_t)t->nbands;
	t->cmps = nw_calloc(n, sizeof(*t->cmps));
	t->cells = nw_calloc((size_t)NW_NOPS * (size_t)t->nbands, sizeof(*t->cells));
	t->also = nw_calloc((size_t)t->vs.n, sizeof(int));
	t->ncells = nw_tune_analyze(&t->data, &t->vs, t->o->min_gain, t->cmps, t->cells);
	t->rec = t->o->check_env ? -1 : nw_tune_recommend(&t->data, &t->vs, t->cmps, t->also, &t->nalso);
}

/*
 * A winner is measured again before it is recommended: o->confirm more
 * rounds of it and the default, alternating which goes first, then the
 * verdicts are recomputed over all runs. When it no longer wins the next
 * candidate gets the same treatment (three candidates at most). Leaves
 * t->rec confirmed or -1 (t->candidate then names an unconfirmed winner).
 * Returns 0, 3 (the default failed) or 130.
 */
static int confirm(struct tune *t)
{
	t->candidate = -1;
	analyze(t);
	if (t->o->check_env || t->o->confirm <= 0)
		return 0;
	for (int attempt = 0; attempt < 3 && t->rec >= 0 && !t->vs.v[t->rec].confirmed; attempt++) {
		int v = t->rec;
		double need = (double)t->o->confirm * (t->est[0] + t->est[v]);
		if (t->stopped[0] || (t->o->budget_s > 0 && elapsed(t) + need > t->o->budget_s)) {
			snprintf(t->unconfirmed, sizeof(t->unconfirmed), "no time left for %ld confirmation rounds (about %.0f s)",
			         t->o->confirm, need);
			break;
		}
		for (long k = 0; k < t->o->confirm && t->vs.v[v].status == NW_TV_ACTIVE; k++) {
			int order[2] = { k % 2 ? v : 0, k % 2 ? 0 : v };
			for (int j = 0; j < 2; j++) {
				int w = order[j];
				if (run_one(t, w, t->done[w] + 1, 0, "confirming") != 0)
					return interrupted ? 130 : 3;
				if (w == 0 && t->vs.v[0].status != NW_TV_ACTIVE) {
					nw_error("the default run failed while confirming: %s", t->vs.v[0].why);
					return 3;
				}
			}
		}
		t->vs.v[v].confirmed = 1;
		analyze(t);
	}
	if (t->rec >= 0 && !t->vs.v[t->rec].confirmed) {
		t->candidate = t->rec;
		if (!t->unconfirmed[0])
			snprintf(t->unconfirmed, sizeof(t->unconfirmed), "three candidates in a row lost their lead when measured again");
		t->rec = -1;
		t->nalso = 0;
	}
	return 0;
}

static void print_header(const struct tune *t)
{
	char el[32], bud[32];
	fmt_dur(elapsed(t), el, sizeof(el));
	fmt_dur(t->o->budget_s, bud, sizeof(bud));
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

static void print_tune_table(const struct tune *t)
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

/* Variants still in the running with fewer repeats than a verdict needs. */
static int few_repeats(const struct tune *t)
{
	int n = 0;
	for (int v = 1; v < t->vs.n; v++)
		n += t->vs.v[v].status == NW_TV_ACTIVE && t->done[v] < NW_TUNE_MIN_REPEATS;
	return n;
}

/* 1 when nothing could be judged: the default, or every variant left, has too few repeats. */
static int no_verdict(const struct tune *t)
{
	int active = 0;
	for (int v = 1; v < t->vs.n; v++)
		active += t->vs.v[v].status == NW_TV_ACTIVE;
	return t->done[0] < NW_TUNE_MIN_REPEATS || (active && few_repeats(t) == active);
}

static void print_tune_verdict(const struct tune *t)
{
	int any_best = 0;
	for (int i = 0; i < t->ncells; i++)
		any_best |= t->cells[i].best >= 0;
	int printed = 0;
	for (int v = 1; v < t->vs.n; v++) {
		const struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status == NW_TV_FAILED || var->status == NW_TV_WRONG) {
			if (!printed++)
				printf("\nfailed (never recommended):\n");
			printf("  %s: %s%s\n", var->label, var->status == NW_TV_WRONG ? "wrong results, " : "", var->why);
		}
	}
	printed = 0;
	for (int v = 1; v < t->vs.n; v++) {
		const struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status == NW_TV_PRUNED || var->status == NW_TV_SKIPPED) {
			if (!printed++)
				printf("\nnot measured to the end:\n");
			printf("  %s: %s %s\n", var->label, var->status == NW_TV_PRUNED ? "pruned," : "skipped,", var->why);
		}
	}
	printed = 0;
	for (int v = 1; v < t->vs.n; v++) {
		int nb, nw;
		count_verdicts(t, v, &nb, &nw);
		if (t->vs.v[v].status != NW_TV_ACTIVE || !nb || !nw)
			continue;
		if (!printed++)
			printf("\nfaster in some bands but slower in others (not recommended process-wide):\n");
		printf("  %s: better in %d, worse in %d (op x band)\n", t->vs.v[v].label, nb, nw);
	}
	printf("\n");
	int nskipped = 0;
	for (int v = 1; v < t->vs.n; v++)
		nskipped += t->vs.v[v].status == NW_TV_SKIPPED;
	if (nskipped)
		printf("(%d of %d variants were left out for lack of time: the verdict covers the others only)\n",
		       nskipped, t->vs.n - 1);
	int nfew = few_repeats(t);
	if (no_verdict(t)) {
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
		count_verdicts(t, t->rec, &nb, &nw);
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

static void print_check_env(const struct tune *t)
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
		const struct nw_tune_cmp *m = cmp_at(t, 1, c->op, c->band);
		char d[32], b[32], iv[48], g[16];
		fmt_us(m->med_d, d, sizeof(d));
		fmt_us(m->med_v, b, sizeof(b));
		snprintf(g, sizeof(g), isfinite(m->gain) ? "%+.1f%%" : "-", 100 * m->gain);
		if (isfinite(m->ci_lo))
			snprintf(iv, sizeof(iv), "%+.1f..%+.1f%%", 100 * m->ci_lo, 100 * m->ci_hi);
		else
			snprintf(iv, sizeof(iv), "-");
		printf("%-15s %-18s %11s %11s %8s  %-17s %s\n", nw_coll_get(c->op)->name,
		       t->bands[c->band].name, d, b, g, iv, verdict_name(m->verdict, 1));
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

static json_t *num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *variant_json(const struct tune *t, int v)
{
	const struct nw_tune_variant *var = &t->vs.v[v];
	json_t *env = json_object(), *ops = json_array();
	for (int i = 0; i < var->nset; i++)
		json_object_set_new(env, var->set[i].name, json_string(var->set[i].value));
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		if (t->opmask & var->opmask & (1u << op))
			json_array_append_new(ops, json_string(nw_coll_get(op)->name));
	return json_pack("{s:s, s:o, s:b, s:o, s:s, s:s, s:i, s:b, s:o}", "label", var->label, "env", env,
	                 "keeps_current_env", var->keep_env, "ops", ops, "status", status_name(var->status),
	                 "why", var->why, "runs", var->runs, "confirmed", var->confirmed,
	                 "cost_s", num_or_null(var->cost_s));
}

/* The whole result as JSON (schema ncclwatch.tune/1, docs/tune.md); caller decrefs. */
static json_t *tune_json(const struct tune *t)
{
	char now[32], host[256];
	nw_utc_iso(now, sizeof(now));
	nw_hostname(host, sizeof(host));
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.tune/1"));
	json_object_set_new(doc, "mode", json_string(t->o->check_env ? "check-env" : "tune"));
	json_object_set_new(doc, "host", json_string(host));
	json_object_set_new(doc, "time", json_string(now));
	json_object_set_new(doc, "nccl_version", json_string(t->nccl_version));
	json_object_set_new(doc, "backend", json_string(t->backend));
	json_object_set_new(doc, "gpus", json_string(t->gpus));
	json_object_set_new(doc, "nranks", json_integer(t->nranks));
	json_object_set_new(doc, "budget_s", t->o->budget_s > 0 ? json_real(t->o->budget_s) : json_null());
	json_object_set_new(doc, "elapsed_s", json_real(elapsed(t)));
	json_object_set_new(doc, "runs", json_integer(t->runs_total));
	json_object_set_new(doc, "repeats_planned", json_integer(t->repeats));
	json_object_set_new(doc, "min_gain", json_real(t->o->min_gain));
	json_object_set_new(doc, "stopped", t->stopped[0] ? json_string(t->stopped) : json_null());
	json_object_set_new(doc, "unset_env", json_string(t->stripped));
	json_t *bands = json_array();
	for (int b = 0; b < t->nbands; b++)
		json_array_append_new(bands, json_pack("{s:s, s:I, s:o}", "name", t->bands[b].name,
		                                       "lo_bytes", (json_int_t)t->bands[b].lo, "hi_bytes",
		                                       t->bands[b].hi == UINT64_MAX ? json_null() : json_integer((json_int_t)t->bands[b].hi)));
	json_object_set_new(doc, "bands", bands);
	json_t *vars = json_array();
	for (int v = 0; v < t->vs.n; v++)
		json_array_append_new(vars, variant_json(t, v));
	json_object_set_new(doc, "variants", vars);
	json_t *cells = json_array();
	for (int i = 0; i < t->ncells; i++) {
		const struct nw_tune_cell *c = &t->cells[i];
		const struct nw_tune_samples *ds = nw_tune_data_at(&t->data, 0, c->op, c->band);
		json_t *dsamp = json_array(), *cv = json_array();
		for (int k = 0; k < ds->n; k++)
			json_array_append_new(dsamp, json_real(ds->x[k]));
		for (int v = 1; v < t->vs.n; v++) {
			const struct nw_tune_samples *s = nw_tune_data_at(&t->data, v, c->op, c->band);
			if (!s->n)
				continue;
			const struct nw_tune_cmp *m = cmp_at(t, v, c->op, c->band);
			json_t *samp = json_array();
			for (int k = 0; k < s->n; k++)
				json_array_append_new(samp, json_real(s->x[k]));
			json_array_append_new(cv, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "label",
			                                    t->vs.v[v].label, "samples_us", samp, "median_us", num_or_null(m->med_v),
			                                    "min_us", num_or_null(m->lo_v), "max_us", num_or_null(m->hi_v),
			                                    "gain", num_or_null(m->gain), "ci_lo", num_or_null(m->ci_lo),
			                                    "ci_hi", num_or_null(m->ci_hi),
			                                    "verdict", verdict_name(m->verdict, t->o->check_env)));
		}
		json_array_append_new(cells, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "op",
		                                       nw_coll_get(c->op)->name, "band", t->bands[c->band].name,
		                                       "default_us", num_or_null(c->default_us), "default_samples_us", dsamp,
		                                       "best", c->best >= 0 ? json_string(t->vs.v[c->best].label) : json_null(),
		                                       "gain", c->best >= 0 ? num_or_null(c->best_cmp.gain) : json_null(),
		                                       "variants", cv));
	}
	json_object_set_new(doc, "cells", cells);
	if (!t->o->check_env) {
		json_t *rec = json_object(), *env = json_object(), *also = json_array();
		json_object_set_new(rec, "verdict", json_boolean(!no_verdict(t)));
		json_object_set_new(rec, "defaults_best", json_boolean(t->rec < 0 && !no_verdict(t)));
		json_object_set_new(rec, "label", t->rec >= 0 ? json_string(t->vs.v[t->rec].label) : json_null());
		json_object_set_new(rec, "confirmed", json_boolean(t->rec >= 0 && t->vs.v[t->rec].confirmed));
		json_object_set_new(rec, "unconfirmed_candidate",
		                    t->candidate >= 0 ? json_string(t->vs.v[t->candidate].label) : json_null());
		json_object_set_new(rec, "unconfirmed_why", t->candidate >= 0 ? json_string(t->unconfirmed) : json_null());
		if (t->rec >= 0)
			for (int i = 0; i < t->vs.v[t->rec].nset; i++)
				json_object_set_new(env, t->vs.v[t->rec].set[i].name, json_string(t->vs.v[t->rec].set[i].value));
		for (int i = 0; i < t->nalso; i++)
			json_array_append_new(also, json_string(t->vs.v[t->also[i]].label));
		json_object_set_new(rec, "env", env);
		json_object_set_new(rec, "also", also);
		json_object_set_new(doc, "recommendation", rec);
	}
	return doc;
}

static int write_env_file(const struct tune *t, const char *path)
{
	char now[32], host[256];
	nw_utc_iso(now, sizeof(now));
	nw_hostname(host, sizeof(host));
	FILE *f = !strcmp(path, "-") ? stdout : fopen(path, "w");
	if (!f)
		return nw_error("cannot write '%s': %s", path, strerror(errno));
	int rc;
	if (no_verdict(t))
		rc = fprintf(f, "# ncclwatch tune on %s, %s: no verdict (too few repeats%s%s); nothing to set.\n", host, now,
		             t->stopped[0] ? ", " : "", t->stopped) < 0 ? -1 : 0;
	else
		rc = nw_tune_write_env(f, &t->data, &t->vs, t->cmps, t->rec, now, host, t->nccl_version);
	if (rc == 0 && t->candidate >= 0 && fprintf(f, "# (%s looked faster but was not confirmed: %s)\n",
	                                             t->vs.v[t->candidate].label, t->unconfirmed) < 0)
		rc = -1;
	if (f != stdout && fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		return nw_error("writing '%s' failed: %s", path, strerror(errno));
	return 0;
}

static int write_json_file(const struct tune *t, const char *path)
{
	json_t *doc = tune_json(t);
	int rc;
	if (!strcmp(path, "-")) {
		rc = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
		fputc('\n', stdout);
	} else {
		rc = json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
	}
	json_decref(doc);
	if (rc != 0)
		return nw_error("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/* The NCCL_* names this process has that the children will not (", " list). */
static void stripped_names(const struct tune_opts *o, char *buf, size_t len, int *count)
{
	size_t used = 0;
	*count = 0;
	buf[0] = '\0';
	for (char **e = environ; *e; e++) {
		if (!nw_tune_env_unset(o->keep, 0, *e))
			continue;
		size_t n = strcspn(*e, "=");
		(*count)++;
		int w = snprintf(buf + used, len - used, "%s%.*s", used ? " " : "", (int)n, *e);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

/* The current NCCL_* settings that check-env measures, as "NAME=v NAME=v". */
static void current_label(const struct tune_opts *o, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (char **e = environ; *e; e++) {
		if (!nw_tune_env_unset(o->keep, 0, *e))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", *e);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

static void tune_release(struct tune *t)
{
	for (int i = 0; i < t->nruns; i++)
		nw_run_release(&t->runs[i]);
	free(t->runs);
	free(t->run_variant);
	free(t->run_repeat);
	free(t->done);
	free(t->est);
	free(t->keep);
	free(t->cmps);
	free(t->cells);
	free(t->also);
	nw_tune_data_release(&t->data);
	nw_tune_variants_release(&t->vs);
}

/* Makes this process's NCCL_* variables those a child of v had (saved: the originals). */
static void env_as_child(const struct tune_opts *o, char **saved, const struct nw_tune_variant *v)
{
	for (;;) { /* unset every NCCL_* (restart: unsetenv changes environ) */
		char **e = environ;
		while (*e && strncmp(*e, "NCCL_", 5) != 0)
			e++;
		if (!*e)
			break;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
		unsetenv(name);
	}
	for (char **e = saved; e && *e; e++) {
		if (v && nw_tune_env_unset(o->keep, v->keep_env, *e))
			continue;
		char name[256];
		size_t n = strcspn(*e, "=");
		snprintf(name, sizeof(name), "%.*s", (int)n, *e);
		setenv(name, *e + n + 1, 1);
	}
	for (int i = 0; v && i < v->nset; i++)
		setenv(v->set[i].name, v->set[i].value, 1);
}

/*
 * Records every successful run in history: source "tune", h.extra["tune"]
 * = {variant, env, repeat, mode, started}, and a fingerprint whose "env"
 * is the environment that run had (not tune's own). Failures to record are
 * warnings: the measurement stands.
 */
static void record(struct tune *t, const char *started)
{
	const struct tune_opts *o = t->o;
	char err[NW_ERRLEN], path[4096];
	struct nw_store *db = NULL;
	if (o->so.disabled || t->nruns == 0)
		return;
	if (nw_store_path(&o->so, path, sizeof(path), err, sizeof(err)) != 0 ||
	    nw_store_open(path, NW_STORE_WRITE, &db, err, sizeof(err)) != 0) {
		nw_warn("history: %s; the runs are not recorded (--no-history to skip it)", err);
		return;
	}
	int n = 0;
	for (char **e = environ; *e; e++)
		n += !strncmp(*e, "NCCL_", 5);
	char **saved = nw_calloc((size_t)n + 1, sizeof(char *));
	n = 0;
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "NCCL_", 5))
			saved[n++] = nw_strdup(*e);
	long long first = 0, last = 0;
	int recorded = 0;
	for (int i = 0; i < t->nruns; i++) {
		struct nw_run *run = &t->runs[i];
		const struct nw_tune_variant *v = &t->vs.v[t->run_variant[i]];
		nw_strlcpy(run->h.source, "tune", sizeof(run->h.source));
		if (!json_is_object(run->h.extra)) {
			json_decref(run->h.extra);
			run->h.extra = json_object();
		}
		json_t *env = json_object();
		for (int k = 0; k < v->nset; k++)
			json_object_set_new(env, v->set[k].name, json_string(v->set[k].value));
		json_object_set_new(run->h.extra, "tune",
		                    json_pack("{s:s, s:o, s:i, s:s, s:b, s:s}", "variant", v->label, "env", env,
		                              "repeat", t->run_repeat[i], "mode", o->check_env ? "check-env" : "tune",
		                              "keeps_current_env", v->keep_env, "started", started));
		json_object_del(run->h.extra, "fingerprint");
		env_as_child(o, saved, v);
		nw_fingerprint_collect(run);
		long long id = 0;
		if (nw_store_insert(db, run, &id, err, sizeof(err)) != 0) {
			nw_warn("history: %s; %d of %d runs recorded", err, recorded, t->nruns);
			break;
		}
		if (!recorded++)
			first = id;
		last = id;
	}
	env_as_child(o, saved, NULL);
	nw_tune_argv_free(saved);
	nw_store_close(db);
	if (recorded && !o->quiet)
		fprintf(stderr, "tune: recorded %d run%s in history (ids %lld-%lld, source tune)\n", recorded,
		        recorded == 1 ? "" : "s", first, last);
}

int cmd_tune(int argc, char **argv)
{
	struct tune_opts o;
	struct tune t;
	char err[NW_ERRLEN];
	int rc = parse(argc, argv, &o);
	memset(&t, 0, sizeof(t));
	nw_tune_variants_init(&t.vs);
	if (rc != 0)
		goto out;
	rc = 2;
	t.o = &o;
	char opsbuf[256];
	if (parse_ops(o.ops, &t.opmask, opsbuf, sizeof(opsbuf)) != 0)
		goto out;
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		t.nops += (t.opmask >> op) & 1;
	t.nbands = nw_tune_bands_parse(o.bands_spec, t.bands, err, sizeof(err));
	if (t.nbands < 0) {
		nw_error("%s", err);
		goto out;
	}
	int nstripped;
	stripped_names(&o, t.stripped, sizeof(t.stripped), &nstripped);
	if (o.check_env) {
		if (o.nvars || (o.groups != NW_TG_ALL))
			nw_warn("--check-env measures the current settings only; --var and --settings are ignored");
		char cur[sizeof(((struct nw_tune_variant *)0)->label) - 16];
		current_label(&o, cur, sizeof(cur));
		if (!cur[0]) {
			printf("no NCCL_* variables are set (besides NCCL_NVLS_ENABLE and --keep ones): nothing to check; NCCL runs with its defaults\n");
			rc = 0;
			goto out;
		}
		nw_tune_variants_add(&t.vs, "defaults", NULL, NULL, t.opmask);
		struct nw_tune_variant *v = nw_tune_variants_add(&t.vs, NULL, NULL, NULL, t.opmask);
		snprintf(v->label, sizeof(v->label), "current (%s)", cur);
		v->keep_env = 1;
	} else {
		const char *nvls = getenv("NCCL_NVLS_ENABLE");
		int nvls_on = !nvls || strcmp(nvls, "0") != 0;
		if (nw_tune_variants_build(&t.vs, o.groups, t.opmask, nvls_on, o.vars, o.nvars, err,
		                           sizeof(err)) != 0) {
			nw_error("%s", err);
			goto out;
		}
		if (t.vs.n < 2) {
			nw_error("nothing to compare: --settings none and no --var; give --var NAME=v1,v2 or --settings all");
			goto out;
		}
		if (nstripped && !o.quiet)
			nw_warn("unset in every measured run so that 'default' means NCCL's defaults: %s (keep one with --keep NAME)",
			        t.stripped);
	}

	struct nw_tune_child_spec spec = {
		.bench_cmd = o.bench_cmd, .launcher = o.launcher, .save_runs = o.save_runs, .keep = o.keep,
		.interrupted = &interrupted,
		.bench = { o.b, o.e, o.f, o.n, o.w, o.d, o.o, o.g, o.backend, o.nccl_lib },
	};
	rc = nw_tune_child_open(&t.child, &spec, err, sizeof(err));
	if (rc != NW_TUNE_OK) {
		nw_error("%s", err);
		goto out;
	}

	nw_tune_data_init(&t.data, t.vs.n, t.bands, t.nbands);
	t.done = nw_calloc((size_t)t.vs.n, sizeof(int));
	t.est = nw_calloc((size_t)t.vs.n, sizeof(double));
	t.keep = nw_calloc((size_t)t.vs.n, sizeof(int));

	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	char started[32];
	nw_utc_iso(started, sizeof(started));
	t.t0 = nw_now();
	if (!o.quiet) {
		char bud[32];
		fmt_dur(o.budget_s, bud, sizeof(bud));
		fprintf(stderr, "tune: %d variant%s of %s (sizes %s..%s), up to %ld repeats%s%s\n", t.vs.n,
		        t.vs.n == 1 ? "" : "s", opsbuf, o.b, o.e, o.repeats, o.budget_s > 0 ? ", budget " : "",
		        o.budget_s > 0 ? bud : "");
	}
	int mrc = measure(&t);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (mrc == 3 || (mrc == 130 && t.runs_total == 0)) {
		rc = mrc;
		goto out;
	}
	if (mrc == 130)
		snprintf(t.stopped, sizeof(t.stopped), "interrupted");

	if (mrc == 0) {
		mrc = confirm(&t);
		if (mrc == 3) {
			rc = 3;
			goto out;
		}
		if (mrc == 130)
			snprintf(t.stopped, sizeof(t.stopped), "interrupted");
	} else {
		t.candidate = -1;
		analyze(&t);
	}
	record(&t, started);
	int to_stdout_json = o.json_out && !strcmp(o.json_out, "-");
	if (!to_stdout_json) {
		print_header(&t);
		if (o.check_env) {
			print_check_env(&t);
		} else {
			print_tune_table(&t);
			print_tune_verdict(&t);
		}
	}
	rc = mrc;
	if (o.json_out && write_json_file(&t, o.json_out) != 0)
		rc = 3;
	if (o.env_out && !o.check_env && write_env_file(&t, o.env_out) != 0)
		rc = 3;
	if (o.env_out && !o.check_env && !o.quiet && rc == 0)
		fprintf(stderr, "tune: wrote '%s'%s\n", o.env_out, t.rec < 0 ? " (defaults are best: nothing to set)" : "");
out:
	nw_tune_child_close(&t.child);
	for (int i = 0; i < o.nkeep; i++)
		free(o.keep[i]);
	tune_release(&t);
	return rc;
}
