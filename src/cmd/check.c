/*
 * ncclwatch check: a pass/fail pre-flight in seconds. Runs doctor, then a
 * short bench (all_reduce and all_gather near peak, optionally send/recv
 * between every pair) through the bench API, compares each against the
 * expectation from topo (or a baseline run) and prints PASS, WARN or FAIL
 * with one line per reason. Exit 0, 1 or 2.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "bench/bench.h"
#include "model/coll.h"
#include "model/result.h"
#include "cmd/cmd.h"
#include "comm/group.h"
#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/expect.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "probe/verdict.h"
#include "store/store.h"
#include "util/util.h"

const char usage_check[] =
	"usage: ncclwatch check [options]\n"
	"\n"
	"Pass/fail pre-flight for a node or a job: doctor's checks, then a short bench\n"
	"(all_reduce and all_gather at sizes near peak; with --pairs, send/recv\n"
	"between every pair of ranks), each compared with the busbw topo expects\n"
	"(docs/expectations.md) or with a baseline run. Prints PASS, WARN or FAIL,\n"
	"one line per reason, and the elapsed time. Runs under the same launchers\n"
	"as bench (mpirun, srun, torchrun --no-python, or alone on all local GPUs).\n"
	"\n"
	"options:\n"
	"  --json               JSON (schema ncclwatch.check/1) on stdout\n"
	"  --baseline FILE      compare with this results file (ncclwatch bench --json,\n"
	"                       or an earlier check --json) instead of the model\n"
	"  --results FILE       judge these results (bench --json) instead of running the bench\n"
	"  --pairs              add send/recv between every pair of ranks\n"
	"  --no-bench           doctor only (verdict from its findings)\n"
	"  -b, --minbytes SIZE  smallest size (default 1G; 4M with --backend mpi)\n"
	"  -e, --maxbytes SIZE  largest size, the one compared (default 4G; 16M with mpi)\n"
	"  -f, --stepfactor F   size factor (default 4)\n"
	"  -n, --iters N        timed iterations per size (default 20)\n"
	"  -w, --warmup_iters N warm-up iterations (default 5)\n"
	"  -g, --ngpus N        GPUs driven by this process (default: all visible)\n"
	"  --verify             check every result element (slower)\n"
	"  --warn-below R       WARN under this fraction of the expectation (default 0.90)\n"
	"  --fail-below R       FAIL under this fraction (default 0.75); uncalibrated\n"
	"                       expectations use 0.75 and 0.40\n"
	"  --backend B          nccl (default) or mpi (host collectives, no GPU needed)\n"
	"  --nccl-lib PATH      the libnccl.so to load\n"
	"  --sysroot DIR        read /sys, /proc and /etc under DIR (also $NCCLWATCH_SYSROOT)\n"
	"  --nvml-json FILE     replay recorded NVML answers (also $NCCLWATCH_NVML_JSON)\n"
	NW_STORE_USAGE
	"  -h, --help           this text\n"
	"\n"
	"exit status: 0 PASS, 1 WARN, 2 FAIL (or a usage error).\n";

struct check_opts {
	int json, pairs, no_bench, verify, ngpus, iters, warmup;
	uint64_t minb, maxb;
	double factor;
	enum nw_backend_kind backend;
	const char *baseline, *results, *nccl_lib, *sysroot, *nvml_json;
	struct nw_verdict_opts vo;
	struct nw_store_opts so;
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

static int parse_args(int *argcp, char **argv, struct check_opts *o)
{
	int argc = *argcp;
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "baseline", required_argument, NULL, 'B' },
		{ "results", required_argument, NULL, 'r' },
		{ "pairs", no_argument, NULL, 'p' },
		{ "no-bench", no_argument, NULL, 'x' },
		{ "minbytes", required_argument, NULL, 'b' },
		{ "maxbytes", required_argument, NULL, 'e' },
		{ "stepfactor", required_argument, NULL, 'f' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup_iters", required_argument, NULL, 'w' },
		{ "ngpus", required_argument, NULL, 'g' },
		{ "verify", no_argument, NULL, 'V' },
		{ "warn-below", required_argument, NULL, 'W' },
		{ "fail-below", required_argument, NULL, 'F' },
		{ "backend", required_argument, NULL, 'k' },
		{ "nccl-lib", required_argument, NULL, 'L' },
		{ "sysroot", required_argument, NULL, 'R' },
		{ "nvml-json", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[NW_ERRLEN];
	long l;
	/* history options (--db PATH, --no-history) are taken out before getopt */
	int kept = 1;
	for (int i = 1; i < argc; i++) {
		int h = nw_store_parse_opt(argc, argv, &i, &o->so, err, sizeof(err));
		if (h < 0)
			return nw_error("%s", err), -1;
		if (!h)
			argv[kept++] = argv[i];
	}
	argc = *argcp = kept;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":b:e:f:n:w:g:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': o->json = 1; break;
		case 'B': o->baseline = optarg; break;
		case 'r': o->results = optarg; break;
		case 'p': o->pairs = 1; break;
		case 'x': o->no_bench = 1; break;
		case 'V': o->verify = 1; break;
		case 'b':
		case 'e':
			if (nw_parse_size(optarg, c == 'b' ? &o->minb : &o->maxb, err, sizeof(err)) < 0)
				return nw_error("%s: %s", c == 'b' ? "-b" : "-e", err), -1;
			break;
		case 'f':
			if (nw_parse_double(optarg, 1.0, 1024.0, &o->factor, "-f", err, sizeof(err)) < 0)
				return nw_error("%s", err), -1;
			break;
		case 'n':
		case 'w':
		case 'g':
			if (nw_parse_long(optarg, c == 'n' ? 1 : c == 'g' ? 1 : 0, c == 'g' ? 1024 : 100000, &l,
			                  c == 'n' ? "-n" : c == 'w' ? "-w" : "-g", err, sizeof(err)) < 0)
				return nw_error("%s", err), -1;
			*(c == 'n' ? &o->iters : c == 'w' ? &o->warmup : &o->ngpus) = (int)l;
			break;
		case 'W':
		case 'F':
			if (nw_parse_double(optarg, 0.0, 1.0, c == 'W' ? &o->vo.warn_below : &o->vo.fail_below,
			                    c == 'W' ? "--warn-below" : "--fail-below", err, sizeof(err)) < 0)
				return nw_error("%s", err), -1;
			break;
		case 'k':
			if (!strcmp(optarg, "nccl"))
				o->backend = NW_BACKEND_NCCL;
			else if (!strcmp(optarg, "mpi"))
				o->backend = NW_BACKEND_MPI;
			else
				return nw_error("--backend '%s': use nccl or mpi", optarg), -1;
			break;
		case 'L': o->nccl_lib = optarg; break;
		case 'R': o->sysroot = optarg; break;
		case 'N': o->nvml_json = optarg; break;
		case 'h': fputs(usage_check, stdout); return 1;
		case ':': return nw_error("option '%s' needs a value; see 'ncclwatch help check'", argv[optind - 1]), -1;
		default: return nw_error("unknown option '%s'; see 'ncclwatch help check'", argv[optind - 1]), -1;
		}
	}
	if (optind < argc)
		return nw_error("unexpected argument '%s'; see 'ncclwatch help check'", argv[optind]), -1;
	if (!o->minb)
		o->minb = o->backend == NW_BACKEND_MPI ? 4ULL << 20 : 1ULL << 30;
	if (!o->maxb)
		o->maxb = o->backend == NW_BACKEND_MPI ? 16ULL << 20 : 4ULL << 30;
	if (o->minb > o->maxb)
		return nw_error("-b is larger than -e"), -1;
	if (o->vo.fail_below > o->vo.warn_below)
		return nw_error("--fail-below is above --warn-below"), -1;
	if (o->results && o->no_bench)
		return nw_error("--results and --no-bench exclude each other"), -1;
	return 0;
}

/* Progress on stderr, so a launcher's log shows where a slow check is. */
static void row_done(const struct nw_row *oop, const struct nw_row *ip, void *arg)
{
	const struct check_opts *o = arg;
	const struct nw_row *r = oop ? oop : ip;
	if (r && !o->json) {
		char sz[32];
		nw_format_size(r->size_bytes, sz, sizeof(sz));
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

/*
 * Run the short bench; with --pairs, send/recv between every pair of ranks
 * at the largest size first, in the same run (its results land in
 * run->h.extra "pairs"). 0, or -1 with err.
 */
static int run_bench(const struct check_opts *o, struct nw_run *run, char *err, size_t errlen)
{
	struct nw_bench_opts b;
	bench_opts(o, &b);
	b.pairs = o->pairs;
	return nw_bench_run(&b, run, row_done, (void *)o, err, errlen) < 0 ? -1 : 0;
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

/* Rank 0 prints everything; other ranks only what is wrong on their side, prefixed. */
static void print_text(const struct nw_check_verdict *cv, double elapsed, int rank)
{
	if (rank != 0) {
		char host[256];
		nw_hostname(host, sizeof(host));
		for (size_t i = 0; i < cv->n; i++)
			if (cv->items[i].v != NW_PASS)
				printf("rank %d (%s): %-4s %-28s %s\n", rank, host, nw_check_level_name(cv->items[i].v),
				       cv->items[i].what, cv->items[i].reason);
		return;
	}
	printf("ncclwatch check: %s (%.1f s)\n", nw_check_level_name(cv->v), elapsed);
	for (int v = NW_FAIL; v >= NW_PASS; v--)
		for (size_t i = 0; i < cv->n; i++)
			if (cv->items[i].v == (enum nw_check_level)v)
				printf("  %-4s %-28s %s\n", nw_check_level_name(cv->items[i].v), cv->items[i].what,
				       cv->items[i].reason);
}

int cmd_check(int argc, char **argv)
{
	double t0 = nw_now();
	struct check_opts o;
	memset(&o, 0, sizeof(o));
	o.factor = 4.0;
	o.iters = 20;
	o.warmup = 5;
	o.backend = NW_BACKEND_NCCL;
	nw_verdict_opts_default(&o.vo);
	int pr = parse_args(&argc, argv, &o);
	if (pr != 0)
		return pr > 0 ? 0 : 2;

	int rc = 2, have_run = 0, have_base = 0;
	char err[NW_ERRLEN];
	struct nw_nvml_snap *snap = nw_calloc(1, sizeof(*snap));
	struct nw_topo *topo = nw_calloc(1, sizeof(*topo)), *vis = nw_calloc(1, sizeof(*vis));
	struct nw_doc_ctx ctx;
	struct nw_findings findings = { 0 };
	struct nw_check_verdict cv = { 0 };
	struct nw_run run, base;
	nw_run_init(&run);
	nw_header_fill_local(&run.h, "check", argc, argv);
	nw_run_init(&base);
	nw_doc_ctx_init(&ctx, snap, topo);

	if (o.baseline) {
		if (load_run(o.baseline, &base, err, sizeof(err)) < 0) {
			nw_error("--baseline: %s", err);
			goto out;
		}
		have_base = 1;
	}
	if (o.results) {
		if (load_run(o.results, &run, err, sizeof(err)) < 0) {
			nw_error("--results: %s", err);
			goto out;
		}
		have_run = 1;
	}
	if (nw_doc_probe_all(nw_sys_root(o.sysroot), o.nvml_json, o.nccl_lib, 0.0, snap, topo, &ctx, err,
	                     sizeof(err)) < 0) {
		nw_error("%s", err);
		goto out;
	}
	nw_doc_run(&ctx, NULL, 0, &findings);
	nw_verdict_add_doctor(&cv, &findings);

	/* The visible GPUs, for the expectation. */
	int pos[NW_NVML_MAX_GPUS];
	int nvis = nw_topo_visible(topo, getenv("CUDA_VISIBLE_DEVICES"), pos, NW_NVML_MAX_GPUS, NULL, 0);
	nw_topo_subset(topo, pos, nvis > 0 ? nvis : 0, vis);

	if (!o.no_bench && !have_run) {
		if (o.backend == NW_BACKEND_NCCL && topo->ngpus == 0) {
			char why[700];
			snprintf(why, sizeof(why), "no GPU: %s", topo->nvml_why[0] ? topo->nvml_why : "no NVIDIA GPU on the PCI bus");
			nw_verdict_add_fail(&cv, "gpu", why);
		} else if (run_bench(&o, &run, err, sizeof(err)) < 0) {
			nw_verdict_add_fail(&cv, "bench", err);
		} else {
			have_run = 1;
		}
	}
	if (have_run) {
		int nhosts = run.h.nhosts > 0 ? run.h.nhosts : 1;
		int nlocal = run.h.nranks > 0 ? run.h.nranks / nhosts : 0;
		int gpu = strcmp(run.h.backend, "mpi") != 0;
		const struct nw_topo *model = gpu ? (vis->ngpus >= nlocal ? vis : topo) : NULL;
		nw_verdict_add_bench(&cv, &run, have_base ? &base : NULL, model, nlocal, &findings, &o.vo);
		json_t *pairs = run.h.extra ? json_object_get(run.h.extra, "pairs") : NULL;
		json_t *bpairs = have_base && base.h.extra ? json_object_get(base.h.extra, "pairs") : NULL;
		if (pairs)
			nw_verdict_add_pairs(&cv, pairs, bpairs, nhosts == 1 ? model : NULL, &findings, &o.vo);
		else if (o.pairs && !o.results)
			nw_verdict_add_note(&cv, "sendrecv pairs", "skipped: one rank has no pair of ranks to measure");
	}
	int rank = my_rank(&run, have_run && !o.results);
	double elapsed = nw_now() - t0;
	/* A check that ran its bench is recorded, with its verdict, like a bench. */
	if (have_run && !o.results && rank == 0) {
		long long id = 0;
		nw_strlcpy(run.h.source, "check", sizeof(run.h.source));
		if (!run.h.extra)
			run.h.extra = json_object();
		json_object_set_new(run.h.extra, "check_verdict", json_string(nw_check_level_name(cv.v)));
		nw_fingerprint_collect(&run);
		if (nw_store_record(&o.so, &run, &id, err, sizeof(err)) != 0)
			nw_warn("check: the run was not recorded in history: %s", err);
		else if (id > 0 && !o.json)
			fprintf(stderr, "ncclwatch: check: recorded as run %lld\n", id);
	}
	if (o.json && rank == 0) {
		json_t *doc = json_object();
		json_object_set_new(doc, "schema", json_string("ncclwatch.check/1"));
		json_object_set_new(doc, "verdict", json_string(nw_check_level_name(cv.v)));
		json_object_set_new(doc, "exit", json_integer(nw_verdict_exit(&cv)));
		json_object_set_new(doc, "elapsed_s", json_real(elapsed));
		json_object_set_new(doc, "items", nw_verdict_to_json(&cv));
		json_object_set_new(doc, "doctor", nw_findings_to_json(&findings));
		if (have_run)
			json_object_set_new(doc, "results", nw_run_to_json(&run, 0));
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else if (!o.json) {
		print_text(&cv, elapsed, rank);
	}
	rc = nw_verdict_exit(&cv);
out:
	nw_verdict_release(&cv);
	nw_findings_release(&findings);
	nw_doc_ctx_release(&ctx);
	nw_run_release(&run);
	nw_run_release(&base);
	free(snap);
	free(topo);
	free(vis);
	return rc;
}
