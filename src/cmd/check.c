/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch check: a pass/fail pre-flight in seconds. Runs doctor, then a
 * short bench (all_reduce and all_gather near peak, optionally send/recv
 * between every pair) through the bench API, compares each against the
 * expectation from topo (or a baseline run) and prints PASS, WARN or FAIL
 * with one line per reason. Exit 0 PASS, 1 WARN, 2 FAIL, 3 cannot check
 * (no GPU, no NCCL, bad usage or input: nothing about the node was judged).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench.h"
#include "model/coll.h"
#include "model/result.h"
#include "cmd/cli.h"
#include "cmd/progress.h"
#include "cmd/cmd.h"
#include "comm/group.h"
#include "export/promtext.h"
#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/expect.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "probe/verdict.h"
#include "store/store.h"
#include "util/util.h"

/* The exit status when nothing about the node could be judged. */
#define CHECK_CANNOT 3

struct check_opts {
	struct nw_opt_out json;
	int pairs, no_bench, verify, ngpus, iters, warmup;
	uint64_t minb, maxb;
	double factor;
	enum nw_backend_kind backend;
	const char *baseline, *results, *nccl_lib, *sysroot, *nvml_json, *prom_textfile;
	struct nw_verdict_opts vo;
	struct nw_store_opts so;
	enum nw_progress_mode progress;
};

static int load_run(const char *path, struct nw_run *run, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return nw_seterr(err, errlen, "'%s' is not a file (history run ids are not supported yet; "
		                 "give a results file from 'ncclwatch bench --json')", path);
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return nw_seterr(err, errlen, "cannot read '%s': %s (line %d)", path, je.text, je.line);
	char e2[NW_ERRLEN];
	/* A check --json document carries its results under "results". */
	const json_t *sch = json_object_get(doc, "schema");
	const json_t *src = doc;
	if (json_is_string(sch) && !strcmp(json_string_value(sch), "ncclwatch.check/1")) {
		src = json_object_get(doc, "results");
		if (!src) {
			json_decref(doc);
			return nw_seterr(err, errlen, "'%s' is a check report without bench results", path);
		}
	}
	int rc = nw_run_from_json(src, run, e2, sizeof(e2));
	json_decref(doc);
	if (rc < 0)
		return nw_seterr(err, errlen, "'%s': %s", path, e2);
	return 0;
}

/* --prom-textfile PATH: node_exporter's textfile collector reads only *.prom files. */
static int prom_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	size_t n = strlen(arg);
	if (n < 6 || strcmp(arg + n - 5, ".prom"))
		return nw_seterr(err, errlen, "%s '%s': node_exporter's textfile collector reads only files named *.prom; "
		                 "give a path ending in .prom", name, arg);
	((struct check_opts *)opts)->prom_textfile = arg;
	return 0;
}

#define CO struct check_opts
static const struct nw_opt check_options[] = {
	NW_OPT_JSON(CO, json, "\n(schema ncclwatch.check/1)"),
	{ .kind = NW_OPTK_FILE, .lname = "baseline", .off = NW_F_STR(CO, baseline), .argh = "FILE",
	  .help = "compare with this results file (ncclwatch bench --json,\n"
	          "or an earlier check --json) instead of the model" },
	{ .kind = NW_OPTK_FILE, .lname = "results", .off = NW_F_STR(CO, results), .argh = "FILE", .excl = 1,
	  .help = "judge these results (bench --json) instead of running the bench" },
	{ .kind = NW_OPTK_FLAG, .lname = "pairs", .off = NW_F_INT(CO, pairs),
	  .help = "add send/recv between every pair of ranks" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-bench", .off = NW_F_INT(CO, no_bench), .excl = 1,
	  .help = "doctor only (verdict from its findings)" },
	{ .kind = NW_OPTK_SIZE, .sname = 'b', .lname = "minbytes", .off = NW_F_U64(CO, minb), .argh = "SIZE",
	  .help = "smallest size (default 1G; 4M with --backend mpi)" },
	{ .kind = NW_OPTK_SIZE, .sname = 'e', .lname = "maxbytes", .off = NW_F_U64(CO, maxb), .argh = "SIZE",
	  .help = "largest size, the one compared (default 4G; 16M with mpi)" },
	{ .kind = NW_OPTK_DOUBLE, .sname = 'f', .lname = "stepfactor", .off = NW_F_DBL(CO, factor), .argh = "F",
	  .dmin = 1, .dmax = 1024, .def = "4", .help = "size factor" },
	{ .kind = NW_OPTK_INT, .sname = 'n', .lname = "iters", .off = NW_F_INT(CO, iters), .argh = "N", .min = 1,
	  .max = 100000, .def = "20", .help = "timed iterations per size" },
	{ .kind = NW_OPTK_INT, .sname = 'w', .lname = "warmup_iters", .off = NW_F_INT(CO, warmup), .argh = "N",
	  .max = 100000, .def = "5", .help = "warm-up iterations" },
	{ .kind = NW_OPTK_INT, .sname = 'g', .lname = "ngpus", .off = NW_F_INT(CO, ngpus), .argh = "N", .min = 1,
	  .max = 1024, .help = "GPUs driven by this process (default: all visible)" },
	{ .kind = NW_OPTK_FLAG, .lname = "verify", .off = NW_F_INT(CO, verify),
	  .help = "check every result element (slower)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "warn-below", .off = NW_F_DBL(CO, vo.warn_below), .argh = "R", .dmax = 1,
	  .help = "WARN under this fraction of the expectation (default 0.90)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "fail-below", .off = NW_F_DBL(CO, vo.fail_below), .argh = "R", .dmax = 1,
	  .help = "FAIL under this fraction (default 0.75); uncalibrated\nexpectations use 0.75 and 0.40" },
	NW_OPT_BACKEND(CO, backend, "nccl (default) or mpi (host collectives, no GPU needed)"),
	{ .kind = NW_OPTK_FILE, .lname = "nccl-lib", .off = NW_F_STR(CO, nccl_lib), .argh = "PATH",
	  .help = "the libnccl.so to load" },
	NW_OPTS_MACHINE(CO, sysroot, nvml_json),
	{ .kind = NW_OPTK_CALL, .lname = "prom-textfile", .argh = "PATH", .call = prom_opt,
	  .help = "also write the verdict and figures for node_exporter's\n"
	          "textfile collector (PATH ends in .prom; written atomically)" },
	NW_OPTS_PROGRESS(CO, progress),
	NW_OPTS_STORE(CO, so),
	{ 0 },
};
#undef CO

const struct nw_cmd_spec nw_spec_check = {
	.name = "check",
	.about = "Pass/fail pre-flight for a node or a job: doctor's checks, then a short bench\n"
	         "(all_reduce and all_gather at sizes near peak; with --pairs, send/recv\n"
	         "between every pair of ranks), each compared with the busbw topo expects\n"
	         "(docs/expectations.md) or with a baseline run. Prints PASS, WARN or FAIL,\n"
	         "one line per reason, and the elapsed time. Runs under the same launchers\n"
	         "as bench (mpirun, srun, torchrun --no-python, or alone on all local GPUs).\n",
	.opts = check_options,
	.footer = "exit status: 0 PASS, 1 WARN, 2 FAIL, 3 cannot check (no GPU, no NCCL, a usage\n"
	          "error or unreadable input: nothing was judged, so do not drain the node for it).\n",
	.usage_rc = CHECK_CANNOT,
};

/* Sizes by backend where not given, and options that exclude each other. */
static int finish_opts(struct check_opts *o)
{
	if (!o->minb)
		o->minb = o->backend == NW_BACKEND_MPI ? 4ULL << 20 : 1ULL << 30;
	if (!o->maxb)
		o->maxb = o->backend == NW_BACKEND_MPI ? 16ULL << 20 : 4ULL << 30;
	if (o->minb > o->maxb)
		return nw_error("-b is larger than -e");
	if (o->vo.fail_below > o->vo.warn_below)
		return nw_error("--fail-below is above --warn-below");
	return 0;
}

/* Defaults, then the options; NW_OPT_OK, or what nw_opt_parse says. */
static enum nw_opt_status parse_args(int argc, char **argv, struct check_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = NW_BACKEND_NCCL;
	nw_verdict_opts_default(&o->vo);
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_check, o, argc, argv, &res);
	if (st == NW_OPT_OK && finish_opts(o))
		st = NW_OPT_BAD;
	return st;
}

/* The bench's row callback state: the options, and the progress line on a terminal. */
struct check_rows {
	const struct check_opts *o;
	const struct nw_bench_opts *b;
	struct nw_progress p;
};

/*
 * Progress on stderr: on a terminal one line redrawn in place; elsewhere
 * a line per size, so a launcher's log shows where a slow check is.
 */
static void row_done(const struct nw_row *oop, const struct nw_row *ip, void *arg)
{
	struct check_rows *cr = arg;
	const struct nw_row *r = oop ? oop : ip;
	if (!r || !nw_cli_json_text(&cr->o->json))
		return;
	char sz[32], what[96];
	nw_format_size(r->size_bytes, sz, sizeof(sz));
	if (cr->p.on) {
		if (!cr->p.done_n) /* the plan again, now that the rank count is known */
			nw_progress_plan_bench(&cr->p, cr->b, r->nranks);
		snprintf(what, sizeof(what), "check: %s %s %.1f GB/s busbw", r->op, sz, r->busbw_gbs);
		nw_strlcpy(cr->p.what, what, sizeof(cr->p.what));
		nw_progress_done(&cr->p);
	} else {
		fprintf(stderr, "ncclwatch check: %s %s %.1f GB/s busbw\n", r->op, sz, r->busbw_gbs);
	}
}

/* The bench options check runs with. */
static void bench_opts(const struct check_opts *o, struct nw_bench_opts *b)
{
	nw_bench_opts_default(b);
	b->backend = o->backend;
	b->nops = 0;
	b->ops[b->nops++] = NW_ALL_REDUCE;
	b->ops[b->nops++] = NW_ALL_GATHER;
	b->min_bytes = o->minb;
	b->max_bytes = o->maxb;
	b->step_factor = o->factor;
	b->iters = o->iters;
	b->warmup = o->warmup;
	b->check = o->verify;
	b->oop_only = 1;
	b->ip_only = 0;
	b->ngpus = o->ngpus;
	b->nccl_lib = o->nccl_lib;
	b->quiet = 1;
}

static volatile sig_atomic_t check_stop; /* the first SIGINT or SIGTERM during the bench: its number */
static volatile sig_atomic_t recording;  /* the verdict is out and the run is being recorded */
static volatile sig_atomic_t rec_stop;   /* a signal while recording: the store gives up and spools the run */

/*
 * SIGINT or SIGTERM: the first ends the bench after the size running
 * (judged on what was measured), or, once the verdict is out, ends the
 * recording (the run is spooled); a second dies.
 */
static void on_check_signal(int sig)
{
	if (recording && !rec_stop) {
		rec_stop = sig;
		return;
	}
	if (check_stop || rec_stop) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	check_stop = sig;
}

/* Catch SIGINT and SIGTERM (on: 1) or give them back their default (0). */
static void catch_check_signals(int on)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on ? on_check_signal : SIG_DFL;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * Run the short bench; with --pairs, send/recv between every pair of ranks
 * at the largest size first, in the same run (its results land in
 * run->h.extra "pairs"). 0; -1 with err when it failed on this node (an
 * NCCL error, a timeout, a peer that died); -2 with err when the options
 * ask what the launch cannot do (nothing was measured).
 */
static int run_bench(const struct check_opts *o, struct nw_run *run, char *err, size_t errlen)
{
	struct nw_bench_opts b;
	bench_opts(o, &b);
	b.pairs = o->pairs;
	struct check_rows cr = { .o = o, .b = &b };
	nw_progress_init(&cr.p, nw_cli_json_text(&o->json) && nw_progress_wanted(o->progress), 0);
	nw_progress_plan_bench(&cr.p, &b, 1);
	nw_strlcpy(cr.p.what, "check: bench", sizeof(cr.p.what));
	b.stop = &check_stop;
	catch_check_signals(1);
	int rc = nw_bench_run(&b, run, row_done, &cr, err, errlen);
	nw_progress_clear(&cr.p);
	nw_progress_release(&cr.p);
	if (check_stop && rc >= 0 && run->h.rank == 0)
		fprintf(stderr, "ncclwatch: check: interrupted (%s) during the bench: it stopped after the size "
		        "running; judging the %zu rows measured (of %d sizes), recorded as interrupted\n",
		        check_stop == SIGTERM ? "SIGTERM" : "SIGINT", run->nrows, cr.p.total_n);
	return rc == NW_BENCH_USAGE ? -2 : rc < 0 ? -1 : 0;
}

/* This process's rank under a launcher, from the bench run or the environment; 0 alone. */
static int my_rank(const struct nw_run *run, int have_run)
{
	static const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK", "SLURM_PROCID" };
	if (have_run)
		return run->h.rank;
	for (size_t i = 0; i < NW_ARRAY_LEN(vars); i++) {
		const char *v = getenv(vars[i]);
		long r;
		if (v && nw_parse_long(v, 0, 1 << 24, &r, vars[i], NULL, 0) == 0)
			return (int)r;
	}
	return 0;
}

/* What one check holds from the first probe to the verdict. */
struct check_state {
	struct nw_nvml_snap *snap;
	struct nw_topo *topo, *vis; /* every GPU, the visible ones */
	struct nw_doc_ctx ctx;
	struct nw_findings findings;
	struct nw_check_verdict cv;
	struct nw_run run, base;
	int have_run, have_base;
	char cannot_what[16];   /* "gpu", "nccl", "bench": why nothing was judged; "" when it was */
	char cannot[640];
};

static void state_init(struct check_state *st, int argc, char **argv)
{
	memset(st, 0, sizeof(*st));
	st->snap = nw_calloc(1, sizeof(*st->snap));
	st->topo = nw_calloc(1, sizeof(*st->topo));
	st->vis = nw_calloc(1, sizeof(*st->vis));
	nw_run_init(&st->run);
	nw_header_fill_local(&st->run.h, "check", argc, argv);
	nw_run_init(&st->base);
	nw_doc_ctx_init(&st->ctx, st->snap, st->topo);
}

static void state_release(struct check_state *st)
{
	nw_verdict_release(&st->cv);
	nw_findings_release(&st->findings);
	nw_doc_ctx_release(&st->ctx);
	nw_run_release(&st->run);
	nw_run_release(&st->base);
	free(st->snap);
	free(st->topo);
	free(st->vis);
}

/* The --baseline and --results files; 0, or -1 after printing. */
static int load_inputs(const struct check_opts *o, struct check_state *st)
{
	char err[NW_ERRLEN];
	if (o->baseline) {
		if (load_run(o->baseline, &st->base, err, sizeof(err)) < 0)
			return nw_error("--baseline: %s", err);
		st->have_base = 1;
	}
	if (o->results) {
		if (load_run(o->results, &st->run, err, sizeof(err)) < 0)
			return nw_error("--results: %s", err);
		st->have_run = 1;
	}
	return 0;
}

/* Doctor's checks into the verdict, and the visible GPUs for the expectation; 0, or -1 after printing. */
static int doctor_step(const struct check_opts *o, struct check_state *st)
{
	char err[NW_ERRLEN];
	if (nw_doc_probe_all(nw_sys_root(o->sysroot), o->nvml_json, o->nccl_lib, 0.0, st->snap, st->topo, &st->ctx,
	                     err, sizeof(err)) < 0)
		return nw_error("%s", err);
	nw_doc_run(&st->ctx, NULL, 0, &st->findings);
	nw_verdict_add_doctor(&st->cv, &st->findings);
	int pos[NW_NVML_MAX_GPUS];
	int nvis = nw_topo_visible(st->topo, getenv("CUDA_VISIBLE_DEVICES"), pos, NW_NVML_MAX_GPUS, NULL, 0);
	nw_topo_subset(st->topo, pos, nvis > 0 ? nvis : 0, st->vis);
	return 0;
}

static void set_cannot(struct check_state *st, const char *what, const char *head, const char *why)
{
	nw_strlcpy(st->cannot_what, what, sizeof(st->cannot_what));
	snprintf(st->cannot, sizeof(st->cannot), "%s%s", head, why);
}

/*
 * The short bench, unless --no-bench or --results. No GPU, no NCCL or a
 * launch the bench refuses leave nothing judged ("cannot check"); a bench
 * that fails on this node is a FAIL item.
 */
static void bench_step(const struct check_opts *o, struct check_state *st)
{
	char err[NW_ERRLEN];
	if (o->no_bench || st->have_run)
		return;
	if (o->backend == NW_BACKEND_NCCL && st->topo->ngpus == 0) {
		set_cannot(st, "gpu", "no GPU: ",
		           st->topo->nvml_why[0] ? st->topo->nvml_why : "no NVIDIA GPU on the PCI bus");
		return;
	}
	if (o->backend == NW_BACKEND_NCCL && st->ctx.nccl_state == 0) {
		set_cannot(st, "nccl", "no NCCL on this host: ", st->ctx.nccl_err);
		return;
	}
	int rc = run_bench(o, &st->run, err, sizeof(err));
	if (rc == -2)
		set_cannot(st, "bench", "", err);
	else if (rc < 0)
		nw_verdict_add_fail(&st->cv, "bench", err);
	else
		st->have_run = 1;
}

/*
 * The exit status: the verdict's (0 PASS, 1 WARN, 2 FAIL), or CHECK_CANNOT
 * when nothing could be judged and nothing else failed (a missing NCCL is
 * doctor's error too; it is the reason, not a second failure).
 */
static int check_exit(const struct check_state *st)
{
	if (!st->cannot[0])
		return nw_verdict_exit(&st->cv);
	for (size_t i = 0; i < st->cv.n; i++)
		if (st->cv.items[i].v == NW_FAIL && strcmp(st->cv.items[i].what, "doctor version.nccl"))
			return 2;
	return CHECK_CANNOT;
}

/* "PASS", "WARN", "FAIL" or "CANNOT" (cannot check) for an exit status. */
static const char *exit_name(int rc)
{
	return rc == CHECK_CANNOT ? "CANNOT" : nw_check_level_name(rc == 2 ? NW_FAIL : rc == 1 ? NW_WARN : NW_PASS);
}

/* Rank 0 prints everything; other ranks only what is wrong on their side, prefixed. */
static void print_text(const struct check_state *st, double elapsed, int rank)
{
	const struct nw_check_verdict *cv = &st->cv;
	int rc = check_exit(st);
	if (rank != 0) {
		char host[256];
		nw_hostname(host, sizeof(host));
		if (st->cannot[0])
			printf("rank %d (%s): CANNOT %-26s %s\n", rank, host, st->cannot_what, st->cannot);
		for (size_t i = 0; i < cv->n; i++)
			if (cv->items[i].v != NW_PASS)
				printf("rank %d (%s): %-4s %-28s %s\n", rank, host, nw_verdict_item_label(&cv->items[i]),
				       cv->items[i].what, cv->items[i].reason);
		return;
	}
	printf("ncclwatch check: %s (%.1f s)\n", rc == CHECK_CANNOT ? "CANNOT CHECK" : exit_name(rc), elapsed);
	if (st->cannot[0])
		printf("  CANNOT %-26s %s\n", st->cannot_what, st->cannot);
	for (int v = NW_FAIL; v >= NW_PASS; v--)
		for (size_t i = 0; i < cv->n; i++)
			if (cv->items[i].v == (enum nw_check_level)v)
				printf("  %-4s %-28s %s\n", nw_verdict_item_label(&cv->items[i]), cv->items[i].what,
				       cv->items[i].reason);
}

/* The most recording may take after the verdict; what is not stored by then waits in the spool. */
#define CHECK_RECORD_S 5.0

/*
 * A check that ran its bench is recorded, with its verdict, like a bench,
 * once the verdict is out: a database that is slow, away or frozen must
 * not hold the verdict back (a prolog's timeout would take it for a hung
 * node). Recording ends within CHECK_RECORD_S (or the lock bound when
 * shorter), or at a signal, and the run is then spooled.
 */
static void record_run(const struct check_opts *o, struct check_state *st)
{
	char err[NW_ERRLEN];
	long long id = 0;
	nw_strlcpy(st->run.h.source, "check", sizeof(st->run.h.source));
	if (!st->run.h.extra)
		st->run.h.extra = json_object();
	json_object_set_new(st->run.h.extra, "check_verdict", json_string(nw_check_level_name(st->cv.v)));
	nw_fingerprint_collect(&st->run);
	struct nw_store_opts so = o->so;
	so.record_s = CHECK_RECORD_S;
	fflush(stdout);
	nw_store_stop_on(&rec_stop);
	recording = 1;
	int rc = nw_store_record(&so, &st->run, &id, err, sizeof(err));
	recording = 0;
	nw_store_stop_on(NULL);
	if (rc != 0)
		nw_warn("check: the run was not recorded in history: %s", err);
	else if (id > 0 && nw_cli_json_text(&o->json))
		nw_cli_say_recorded("check", id);
}

/* The JSON report (schema ncclwatch.check/1) where --json says. 0, or -1 after printing why. */
static int print_json(const struct nw_opt_out *j, const struct check_state *st, double elapsed)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.check/1"));
	int rc = check_exit(st);
	json_object_set_new(doc, "verdict", json_string(exit_name(rc)));
	json_object_set_new(doc, "exit", json_integer(rc));
	if (st->cannot[0]) {
		json_t *c = json_object();
		json_object_set_new(c, "what", json_string(st->cannot_what));
		json_object_set_new(c, "reason", json_string(st->cannot));
		json_object_set_new(doc, "cannot_check", c);
	}
	json_object_set_new(doc, "elapsed_s", json_real(elapsed));
	json_object_set_new(doc, "items", nw_verdict_to_json(&st->cv));
	json_object_set_new(doc, "doctor", nw_findings_to_json(&st->findings));
	if (st->have_run)
		json_object_set_new(doc, "results", nw_run_to_json(&st->run, 0));
	int wrc = nw_cli_json_write("check", j, doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	return wrc;
}

/* The verdict and figures in Prometheus' text format, for node_exporter's textfile collector. */
static void prom_text(const struct check_state *st, int rc, double elapsed, struct nw_prom *p)
{
	static const char *const names[] = { "PASS", "WARN", "FAIL", "CANNOT" };
	nw_prom_family(p, "ncclwatch_check_exit_status", "gauge",
	               "Exit status of the last ncclwatch check: 0 PASS, 1 WARN, 2 FAIL, 3 cannot check.");
	nw_prom_sample(p, "ncclwatch_check_exit_status", NULL, 0, rc);
	nw_prom_family(p, "ncclwatch_check_verdict", "gauge", "1 for the verdict of the last ncclwatch check, 0 for the others.");
	for (int i = 0; i < 4; i++) {
		struct nw_label l = { "verdict", names[i] };
		nw_prom_sample(p, "ncclwatch_check_verdict", &l, 1, i == rc);
	}
	nw_prom_family(p, "ncclwatch_check_timestamp_seconds", "gauge", "When the last ncclwatch check finished (Unix time).");
	nw_prom_sample(p, "ncclwatch_check_timestamp_seconds", NULL, 0, (double)time(NULL));
	nw_prom_family(p, "ncclwatch_check_duration_seconds", "gauge", "How long the last ncclwatch check took.");
	nw_prom_sample(p, "ncclwatch_check_duration_seconds", NULL, 0, elapsed);
	/* bandwidth items in base units, one label per dimension: op, size_bytes, and a pair's ranks */
	static const char *const fam[2][2] = {
		{ "ncclwatch_check_busbw_bytes_per_second", "Bus bandwidth each check item measured, in bytes per second." },
		{ "ncclwatch_check_expected_busbw_bytes_per_second",
		  "Bus bandwidth each check item was compared with, in bytes per second." },
	};
	for (int f = 0; f < 2; f++) {
		nw_prom_family(p, fam[f][0], "gauge", fam[f][1]);
		for (size_t i = 0; i < st->cv.n; i++) {
			const struct nw_verdict_item *it = &st->cv.items[i];
			double gbs = f ? it->expected_gbs : it->measured_gbs;
			if (!it->op[0] || !(gbs > 0))
				continue;
			char size[24], a[12], b[12];
			snprintf(size, sizeof(size), "%" PRIu64, it->size_bytes);
			snprintf(a, sizeof(a), "%d", it->pair_a);
			snprintf(b, sizeof(b), "%d", it->pair_b);
			struct nw_label l[4] = { { "op", it->op }, { "size_bytes", size }, { "rank_a", a }, { "rank_b", b } };
			nw_prom_sample(p, fam[f][0], l, it->pair_a >= 0 ? 4 : 2, gbs * 1e9);
		}
	}
	nw_prom_family(p, "ncclwatch_check_items", "gauge", "Check items at each level (doctor findings and bench figures).");
	for (int v = NW_PASS; v <= NW_FAIL; v++) {
		size_t n = 0;
		for (size_t i = 0; i < st->cv.n; i++)
			n += st->cv.items[i].v == (enum nw_check_level)v;
		struct nw_label l = { "verdict", names[v] };
		nw_prom_sample(p, "ncclwatch_check_items", &l, 1, (double)n);
	}
}

/*
 * Write the textfile atomically: a temporary file beside path (a name
 * node_exporter ignores: it reads only *.prom), flushed to disk, then
 * renamed over path, so the collector never reads half a file. 0, or -1
 * with err (the temporary file is removed).
 */
static int write_textfile(const char *path, const struct check_state *st, int rc, double elapsed, char *err,
                          size_t errlen)
{
	struct nw_prom p;
	char tmp[4096];
	nw_prom_init(&p);
	prom_text(st, rc, elapsed, &p);
	if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp)) {
		nw_prom_release(&p);
		return nw_seterr(err, errlen, "'%s': path too long", path);
	}
	FILE *f = fopen(tmp, "w");
	int bad = !f || fwrite(p.buf, 1, p.len, f) != p.len || fflush(f) != 0 || fsync(fileno(f)) != 0;
	if (f && fclose(f) != 0)
		bad = 1;
	nw_prom_release(&p);
	if (bad || rename(tmp, path) != 0) {
		nw_seterr(err, errlen, "cannot write '%s': %s (is its directory there and writable?)", f ? path : tmp,
		          strerror(errno));
		if (f)
			unlink(tmp);
		return -1;
	}
	return 0;
}

/* Print the report (and write the textfile) on the ranks that report; the exit status. */
static int report(const struct check_opts *o, struct check_state *st, double t0)
{
	int rank = my_rank(&st->run, st->have_run && !o->results);
	double elapsed = nw_now() - t0;
	int rc = check_exit(st);
	char err[NW_ERRLEN];
	if (nw_cli_json_text(&o->json))
		print_text(st, elapsed, rank);
	if (o->json.on && rank == 0 && print_json(&o->json, st, elapsed))
		rc = 2;
	if (o->prom_textfile && rank == 0 && write_textfile(o->prom_textfile, st, rc, elapsed, err, sizeof(err)) < 0)
		nw_error("--prom-textfile: %s", err);
	if (st->have_run && !o->results && rank == 0)
		record_run(o, st);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	double t0 = nw_now();
	struct check_opts o;
	enum nw_opt_status ps = parse_args(argc, argv, &o);
	if (ps != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_check, ps);
	struct check_state st;
	int rc = CHECK_CANNOT;
	state_init(&st, argc, argv);
	if (load_inputs(&o, &st) == 0 && doctor_step(&o, &st) == 0) {
		bench_step(&o, &st);
		if (st.have_run && !nw_verdict_add_run(&st.cv, &st.run, st.have_base ? &st.base : NULL, st.topo, st.vis,
		                                       &st.findings, &o.vo) && o.pairs && !o.results)
			nw_verdict_add_note(&st.cv, "sendrecv pairs", "skipped: one rank has no pair of ranks to measure");
		rc = report(&o, &st, t0);
		if (check_stop) /* as bench: rank 0 says it, the others leave quietly */
			rc = st.run.h.rank == 0 ? 128 + check_stop : 0;
	}
	catch_check_signals(0);
	state_release(&st);
	return rc;
}
