/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_cli: bench's option table (nccl-tests' flags and ours), its
 * checks of the options together, and the run: the nccl-tests text table
 * printed as rows come, progress, the summary, the JSON, CSV and -J files,
 * and SIGINT and SIGTERM (the run ends after the size or cycle running,
 * with what it measured).
 */
#include "cmd/bench_cli.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "comm/backend.h"
#include "gpu/nvml.h"
#include "model/ntjson.h"
#include "probe/expect.h"
#include "probe/topo.h"
#include "store/store.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Parse a comma list of names with 'all' through a finder; fills ids, returns count or -1. */
static int parse_list(const char *arg, int *ids, int max, int (*find)(const char *), int nall,
                      const char *what, char *err, size_t errlen)
{
	if (!strcmp(arg, "all")) {
		for (int i = 0; i < nall; i++)
			ids[i] = i;
		return nall;
	}
	char *copy = nw_strdup(arg);
	int n = 0;
	for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int id = find(tok);
		if (id < 0) {
			nw_seterr(err, errlen, "unknown %s '%s'", what, tok);
			free(copy);
			return -1;
		}
		if (n >= max) {
			nw_seterr(err, errlen, "too many %ss in '%s'", what, arg);
			free(copy);
			return -1;
		}
		ids[n++] = id;
	}
	free(copy);
	if (!n)
		return nw_seterr(err, errlen, "empty %s list", what);
	return n;
}

static int find_op(const char *s)
{
	const struct nw_coll *c = nw_coll_find(s);
	return c ? (int)c->op : -1;
}

/* -e's default with --backend mpi (32 MiB): the sweep then takes seconds, not minutes. */
#define NW_MPI_DEFAULT_MAX (32ULL << 20)

/* -o LIST: reductions. */
static int redop_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct nw_bench_opts *o = &((struct bench_cli *)opts)->o;
	int ids[NW_NREDOPS];
	char what[48];
	snprintf(what, sizeof(what), "reduction op (%s)", name);
	int n = parse_list(arg, ids, NW_NREDOPS, nw_redop_find, NW_NREDOPS, what, err, errlen);
	for (int i = 0; i < n; i++)
		o->redops[i] = (enum nw_redop)ids[i];
	o->nredops = n > 0 ? n : o->nredops;
	o->redops_all = !strcmp(arg, "all");
	return n < 0 ? -1 : 0;
}

/* -d LIST: data types. */
static int dtype_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct nw_bench_opts *o = &((struct bench_cli *)opts)->o;
	int ids[NW_NDTYPES];
	char what[48];
	snprintf(what, sizeof(what), "data type (%s)", name);
	int n = parse_list(arg, ids, NW_NDTYPES, nw_dtype_find, NW_NDTYPES, what, err, errlen);
	for (int i = 0; i < n; i++)
		o->dtypes[i] = (enum nw_dtype)ids[i];
	o->ndtypes = n > 0 ? n : o->ndtypes;
	return n < 0 ? -1 : 0;
}

/* --op LIST: collectives ('all': those nccl-tests had before 2.19). */
static int op_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct nw_bench_opts *o = &((struct bench_cli *)opts)->o;
	int ids[NW_NOPS];
	char what[48];
	snprintf(what, sizeof(what), "collective (%s)", name);
	int n = parse_list(arg, ids, NW_NOPS, find_op, NW_OPS_ALL, what, err, errlen);
	for (int i = 0; i < n; i++)
		o->ops[i] = (enum nw_op)ids[i];
	o->nops = n > 0 ? n : o->nops;
	return n < 0 ? -1 : 0;
}

/* -r N or 'all' (every rank in turn, -1). */
static int root_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	long v;
	char what[48];
	snprintf(what, sizeof(what), "%s (root)", name);
	if (!strcmp(arg, "all"))
		v = -1;
	else if (nw_parse_long(arg, 0, 1 << 20, &v, what, err, errlen))
		return -1;
	((struct bench_cli *)opts)->o.root = (int)v;
	return 0;
}

static const char *const *root_words(void)
{
	static const char *const w[] = { "all", "0", NULL };
	return w;
}

static const struct nw_opt_choice cta_policies[] = {
	{ "0", 0 }, { "1", 1 }, { "2", 2 }, { NULL, 0 },
};

static const struct nw_opt_choice average_modes[] = {
	{ "0", NW_AVG_RANK0 }, { "1", NW_AVG_MEAN }, { "2", NW_AVG_MIN }, { "3", NW_AVG_MAX }, { NULL, 0 },
};

#define BC struct bench_cli
#define INT_ROW(s, l, f, lo, hi, ah, h) \
	{ .kind = NW_OPTK_INT, .sname = s, .lname = l, .off = NW_F_INT(BC, f), .argh = ah, .min = lo, .max = hi, .help = h }
const struct nw_opt bench_cli_options[] = {
	{ .kind = NW_OPTK_GROUP, .help = "what to run:" },
	{ .kind = NW_OPTK_CALL, .lname = "op", .argh = "LIST", .call = op_opt, .values = nw_cli_op_names,
	  .flags = NW_OPTF_LIST,
	  .help = "collectives, comma-separated, or 'all': all_reduce all_gather\n"
	          "reduce_scatter broadcast reduce alltoall sendrecv gather scatter\n"
	          "(default all_reduce)\n"
	          "also alltoallv (uneven per-peer counts) and hypercube (all_gather\n"
	          "in log2(n) exchanges; 2, 4, 8 ... ranks), as nccl-tests 2.19" },
	{ .kind = NW_OPTK_CALL, .sname = 'd', .lname = "datatype", .argh = "T", .call = dtype_opt,
	  .values = nw_cli_dtype_names, .flags = NW_OPTF_LIST,
	  .help = "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
	          "f8e4m3 f8e5m2, a comma list, or 'all' (default float)" },
	{ .kind = NW_OPTK_CALL, .sname = 'o', .lname = "redop", .argh = "OP", .call = redop_opt,
	  .values = nw_cli_redop_names, .flags = NW_OPTF_LIST,
	  .help = "sum prod min max avg mulsum, a comma list, or 'all' (default sum);\n"
	          "mulsum: NCCL's pre-multiplied sum (ncclRedOpCreatePreMulSum), NCCL only" },
	{ .kind = NW_OPTK_CALL, .sname = 'r', .lname = "root", .argh = "N", .call = root_opt, .values = root_words,
	  .help = "root rank for broadcast/reduce/gather/scatter, or 'all' (default 0)" },
	{ .kind = NW_OPTK_GROUP, .help = "sizes (K, M, G suffixes are 1024-based):" },
	{ .kind = NW_OPTK_SIZE, .sname = 'b', .lname = "minbytes", .off = NW_F_U64(BC, o.min_bytes), .argh = "S",
	  .help = "smallest size (default 8)" },
	{ .kind = NW_OPTK_SIZE, .sname = 'e', .lname = "maxbytes", .off = NW_F_U64(BC, o.max_bytes), .argh = "S",
	  .help = "largest size (default 1G; 32M with --backend mpi)" },
	{ .kind = NW_OPTK_DOUBLE, .sname = 'f', .lname = "stepfactor", .off = NW_F_DBL(BC, o.step_factor), .argh = "F",
	  .dmin = 1, .dmax = 1024, .help = "multiply the size by F each step (default 2)" },
	{ .kind = NW_OPTK_SIZE, .sname = 'i', .lname = "stepbytes", .off = NW_F_U64(BC, o.step_bytes), .argh = "S",
	  .help = "add S each step instead (with -f 1)" },
	{ .kind = NW_OPTK_GROUP, .help = "timing:" },
	INT_ROW('n', "iters", o.iters, 1, 100000000, "N", "timed launches per size (default 20)"),
	INT_ROW('w', "warmup_iters", o.warmup, 0, 100000000, "N", "warm-up launches per size, all sizes first (default 1)"),
	INT_ROW('m', "agg_iters", o.agg_iters, 1, 1024, "N", "collectives aggregated in one group per launch (default 1)"),
	INT_ROW('G', "cudagraph", o.graph_launches, 0, 1000000, "N", "capture the -n launches as a CUDA graph, replay it N times"),
	{ .kind = NW_OPTK_CHOICE, .sname = 'a', .lname = "average", .off = NW_F_ENUM(BC, o.average), .argh = "N",
	  .choices = average_modes, .help = "time over ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)" },
	INT_ROW('z', "blocking", o.blocking, 0, 3, "N", "0 no waits (default); 1 wait and barrier after each of the -m\n"
	                                                "collectives; 2 wait, no barrier; 3 wait and barrier after\n"
	                                                "each launch of -m, the barrier not timed"),
	INT_ROW('C', "report_cputime", o.cputime, 0, 1, "0|1", "report the host time to launch, not to complete"),
	{ .kind = NW_OPTK_DURATION, .sname = 'T', .lname = "timeout", .off = NW_F_DBL(BC, o.timeout_s), .argh = "S",
	  .help = "a collective not done in S seconds ends the run (default 600; 0: no limit)" },
	INT_ROW('N', "run_cycles", o.cycles, 0, 1000000000, "N",
	        "sweep every size N times after one warm-up, the rows printed each\n"
	        "cycle (default 1; 0: until Ctrl-C, which stops after the current\n"
	        "cycle and keeps every finished one); one run in history, every\n"
	        "cycle's rows in order, \"cycles\" in its JSON"),
	{ .kind = NW_OPTK_DURATION, .lname = "rendezvous-timeout", .off = NW_F_DBL(BC, o.rdzv_timeout_s), .argh = "S",
	  .help = "how long launched ranks wait for each other\n(default: -T, at most 300)" },
	{ .kind = NW_OPTK_GROUP, .help = "checking:" },
	INT_ROW('c', "check", o.check, 0, 1000000, "N", "verify every element of every result, N > 0 on (default 1)"),
	{ .kind = NW_OPTK_GROUP, .help = "where:" },
	INT_ROW('g', "ngpus", o.ngpus, 1, NW_MAX_LOCAL, "N", "GPUs driven by this process (default: all visible when alone,\n"
	                                                    "1 per process when launched as several)"),
	INT_ROW('t', "nthreads", o.nthreads, 1, NW_MAX_LOCAL, "N",
	        "threads per process, each driving -g GPUs with its own NCCL group"),
	NW_OPT_BACKEND(BC, o.backend, "nccl (GPUs, default) or mpi (host memory over MPI)"),
	NW_OPT_NCCL_LIB(BC, o.nccl_lib),
	INT_ROW('p', "parallel_init", o.parallel_init, 0, 1, "0|1",
	        "with -t, each thread creates its own communicators at once\n"
	        "(with --backend mpi: one rank per process, nothing to do)"),
	INT_ROW('y', "stream_null", o.stream_null, 0, 1, "0|1",
	        "run the collectives on the NULL (legacy default) stream, as\n"
	        "nccl-tests' -y 1 (not with -G: a graph cannot capture it)"),
	{ .kind = NW_OPTK_CHOICE, .sname = 'x', .lname = "cta_policy", .off = NW_F_INT(BC, o.cta_policy), .argh = "0|1|2",
	  .choices = cta_policies,
	  .help = "NCCL's CTA policy for the communicators (ncclConfig_t.CTAPolicy):\n"
	          "0 default, 1 efficiency (NCCL 2.27+), 2 zero (2.28+); unset\n"
	          "unless given; refused on an older NCCL and with --backend mpi" },
	{ .kind = NW_OPTK_GROUP, .help = "buffers:" },
	INT_ROW('u', "unalign", o.unalign, 0, 1048576, "N", "move send and receive pointers N elements off their alignment"),
	INT_ROW('R', "local_register", o.reg, 0, 2, "0|1|2",
	        "buffers from ncclMemAlloc, registered with ncclCommRegister\n"
	        "(1, NCCL 2.19+) or as symmetric windows (2, ncclCommWindowRegister,\n"
	        "NCCL 2.27+); refused on an older NCCL and with --backend mpi"),
	{ .kind = NW_OPTK_GROUP, .help = "output:" },
	NW_OPT_JSON(BC, json, "\n(the results, docs/results.md)"),
	NW_OPT_CSV(BC, csv, "\n(the results, one line per row)"),
	INT_ROW('I', "per_iter_timing", o.per_iter, 0, 1, "1", "time every iteration: nccl-tests' i_min i_max i_p99 i_cv%\n"
	                                                      "columns, per-iteration JSON and history (compare's noise)"),
	INT_ROW('K', "per_iter_skip", o.per_iter_skip, 0, 1000000, "N", "leave the first N iterations out of that summary"),
	INT_ROW('S', "report_timestamps", o.timestamps, 0, 1, "1", "end each row with the time it was printed (nccl-tests' -S)"),
	INT_ROW('M', "memory", o.mem_report, 0, 1, "1", "GPU memory taken by set-up, buffers and collectives, as nccl-tests'\n"
	                                               "last '# GPU memory usage' line (NCCL backend only)"),
	{ .kind = NW_OPTK_OUTPUT, .sname = 'J', .lname = "output_file", .off = NW_F_STR(BC, nt_json_path), .argh = "FILE",
	  .help = "nccl-tests' own JSON (version 3, field for field); with\n"
	          "several --op one file each, FILE.OP.json" },
	{ .kind = NW_OPTK_FLAG, .lname = "per-rank", .off = NW_F_INT(BC, o.per_rank),
	  .help = "each rank's time per size: '#' lines in the table, records in JSON/CSV" },
	{ .kind = NW_OPTK_FLAG, .lname = "pairs", .off = NW_F_INT(BC, o.pairs),
	  .help = "send/recv between every pair of ranks (alone: only the pairs)" },
	{ .kind = NW_OPTK_FLAG, .lname = "oop-only", .off = NW_F_INT(BC, o.oop_only), .excl = 1,
	  .help = "only out-of-place" },
	{ .kind = NW_OPTK_FLAG, .lname = "ip-only", .off = NW_F_INT(BC, o.ip_only), .excl = 1, .help = "only in-place" },
	NW_OPT_QUIET(BC, o.quiet, 0),
	NW_OPTS_STORE(BC, so),
	NW_OPTS_PROGRESS(BC, progress_mode),
	{ .kind = NW_OPTK_REFUSED, .sname = 'D', .lname = "device_implementation", .argh = "N",
	  .help = "is nccl-tests' device API: it needs device code that ncclwatch does not build; use nccl-tests for it" },
	{ .kind = NW_OPTK_REFUSED, .sname = 'V', .lname = "device_cta_count", .argh = "N",
	  .help = "is nccl-tests' device API: it needs device code that ncclwatch does not build; use nccl-tests for it" },
	{ 0 },
};
#undef INT_ROW
#undef BC

/* A sweep that goes somewhere, and options that exclude each other; 0, or 2 after printing. */
static int check_sweep(const struct nw_bench_opts *o, const char *cmd)
{
	if (o->min_bytes > o->max_bytes)
		return nw_error("%s: -b %" PRIu64 " is larger than -e %" PRIu64 "; the sweep goes from -b up to -e", cmd,
		                o->min_bytes, o->max_bytes), 2;
	if (o->min_bytes == 0)
		return nw_error("%s: -b 0: the smallest size must be at least one element", cmd), 2;
	if (o->step_factor <= 1 && o->step_bytes == 0)
		return nw_error("%s: -f 1 with -i 0 would never advance; give -f > 1 or -i > 0", cmd), 2;
	if (o->blocking == 3 && o->graph_launches > 0)
		return nw_error("%s: -z 3 waits and joins the ranks after each launch; -G replays them as one graph: use one "
		                "or the other", cmd), 2;
	if (o->stream_null && o->graph_launches > 0)
		return nw_error("%s: -y 1 runs on the NULL (legacy) stream, which a CUDA graph cannot capture; -G captures "
		                "the launches as a graph: use one or the other", cmd), 2;
	if (o->per_iter && o->graph_launches > 0)
		return nw_error("%s: -I 1 times each iteration on its own; -G replays them as one graph: use one or the other",
		                cmd), 2;
	if (o->per_iter && o->iters > 1000000)
		return nw_error("%s: -I 1 keeps every iteration's time: at most 1000000 iterations (-n %d)", cmd, o->iters), 2;
	if (o->per_iter_skip && o->per_iter_skip >= o->iters)
		return nw_error("%s: -K %d skips every iteration of -n %d; give -K below -n", cmd, o->per_iter_skip, o->iters),
		       2;
	if (nw_bench_nsizes(o) > NW_BENCH_MAX_SIZES)
		return nw_error("%s: -b %" PRIu64 " to -e %" PRIu64 " is more than %d sizes, the most one sweep runs; "
		                "raise -f or -i, or narrow -b/-e", cmd, o->min_bytes, o->max_bytes, NW_BENCH_MAX_SIZES), 2;
	return 0;
}

/*
 * NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK into o->split, for bench alone
 * (nccl-tests' variables, read as its binaries read them). 0, or -1 after
 * printing the usage error.
 */
static int split_env(struct nw_bench_opts *o, const char *cmd)
{
	char err[NW_ERRLEN];
	if (strcmp(cmd, "bench") ||
	    !nw_split_parse(getenv("NCCL_TESTS_SPLIT"), getenv("NCCL_TESTS_SPLIT_MASK"), &o->split, err, sizeof(err)))
		return 0;
	return nw_error("%s: %s", cmd, err), -1;
}

enum nw_opt_status bench_cli_parse(int argc, char **argv, struct bench_cli *cli, const struct nw_cmd_spec *spec)
{
	const char *cmd = spec->name;
	memset(cli, 0, sizeof(*cli));
	nw_bench_opts_default(&cli->o);
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(spec, cli, argc, argv, &res);
	if (st != NW_OPT_OK)
		return st;
	cli->o.check = cli->o.check > 0;
	cli->json_path = cli->json.on ? (cli->json.path ? cli->json.path : "-") : NULL;
	cli->csv_path = cli->csv.on ? (cli->csv.path ? cli->csv.path : "-") : NULL;
	nw_strlcpy(cli->nt_json_opt, nw_opt_name(&res, "output_file"), sizeof(cli->nt_json_opt));
	/* host memory over MPI: up to 1 GiB takes minutes, and host bandwidth has levelled off long before */
	if (!nw_opt_given(&res, "maxbytes") && cli->o.backend == NW_BACKEND_MPI && cli->o.max_bytes > NW_MPI_DEFAULT_MAX)
		cli->o.max_bytes = cli->o.min_bytes > NW_MPI_DEFAULT_MAX ? cli->o.min_bytes : NW_MPI_DEFAULT_MAX;
	if (check_sweep(&cli->o, cmd) || split_env(&cli->o, cmd))
		return NW_OPT_BAD;
	if (cli->o.pairs && !nw_opt_given(&res, "op"))
		cli->o.nops = 0; /* --pairs alone: only the pairs */
	cli->cur_op = NULL;
	int stdout_taken = (cli->json.on && !cli->json.path) + (cli->csv.on && !cli->csv.path) +
	                   (cli->nt_json_path && !strcmp(cli->nt_json_path, "-"));
	if (stdout_taken > 1)
		return nw_opt_error(spec, "more than one of --json, --csv and -J - asks for standard output: give one "
		                    "(or write files with --json=FILE, --csv=FILE)"), NW_OPT_BAD;
	cli->table = !stdout_taken;
	return NW_OPT_OK;
}

static void print_memory(const struct nw_run *run);

/* A section's footer; the run's last one (last) carries -M's memory report, as nccl-tests ends with it. */
static void section_end(struct bench_cli *cli, int last)
{
	if (!cli->cur_op || !cli->table)
		return;
	const struct nw_coll *c = cli->cur_op;
	nw_nt_print_footer(stdout, cli->wrong_op, cli->bus_n ? cli->bus_sum / (double)cli->bus_n : 0);
	printf("# Collective test concluded: %s_perf\n", c->name);
	if (last && cli->o.mem_report)
		print_memory(cli->run);
	printf("#\n");
}

/*
 * nccl-tests' device list, one line per rank in rank order:
 * "#  Rank  0 Group  0 Pid    643 on         vm device  0 [0000:00:06] NVIDIA H200"
 * (Group: NCCL_TESTS_SPLIT's color, 0 without a split; a host rank of
 * --backend mpi is "device -1 [-] host (MPI library)"). Under a split, a
 * line first says how the ranks were grouped (rows are per group, times
 * averaged over every rank of the job, as nccl-tests does).
 */
static void device_lines(const struct nw_run_header *h)
{
	json_t *devs = h->extra ? json_object_get(h->extra, "devices") : NULL;
	const char *split = h->extra ? json_string_value(json_object_get(h->extra, "split")) : NULL;
	if (split)
		printf("# %s\n", split);
	printf("# Using devices\n");
	if (!json_array_size(devs)) /* not gathered: what the header knows */
		printf("#  %s on %s%s (%d ranks)\n", h->gpus, h->host, h->nhosts > 1 ? " and others" : "", h->nranks);
	for (size_t i = 0; i < json_array_size(devs); i++) {
		json_t *d = json_array_get(devs, i);
		const char *pci = json_string_value(json_object_get(d, "pci"));
		const char *name = json_string_value(json_object_get(d, "name"));
		printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n",
		       (int)json_integer_value(json_object_get(d, "rank")), (int)json_integer_value(json_object_get(d, "group")),
		       (int)json_integer_value(json_object_get(d, "pid")), json_string_value(json_object_get(d, "host")),
		       (int)json_integer_value(json_object_get(d, "device")), pci ? pci : "-", name ? name : h->gpus);
	}
	printf("#\n");
}

static void section_start(struct bench_cli *cli, const struct nw_row *r)
{
	const struct nw_bench_opts *o = &cli->o;
	const struct nw_run_header *h = &cli->run->h;
	const struct nw_coll *c = nw_coll_find(r->op);
	cli->cur_op = c;
	cli->wrong_op = 0;
	cli->bus_sum = 0;
	cli->bus_n = 0;
	printf("# ncclwatch %s  NCCL %s  backend %s", NW_VERSION, h->nccl_version[0] ? h->nccl_version : "-", h->backend);
	/* where -c checks: on the GPU, or on the host and why (said once, in the first header) */
	const char *where = h->extra ? json_string_value(json_object_get(h->extra, "checks")) : NULL;
	const char *why = h->extra ? json_string_value(json_object_get(h->extra, "checks_why")) : NULL;
	if (o->check && where && !cli->checks_said)
		printf("  checks %s%s%s%s", where, why ? " (" : "", why ? why : "", why ? ")" : "");
	cli->checks_said = 1;
	printf("\n");
	printf("# Collective test starting: %s_perf\n", r->op);
	char step[32];
	if (o->step_factor > 1)
		snprintf(step, sizeof(step), "%g(factor)", o->step_factor);
	else
		snprintf(step, sizeof(step), "%" PRIu64 "(bytes)", o->step_bytes);
	/* nccl-tests' meaning: threads in this process, GPUs driven by each */
	printf("# nThread %d nGpus %d minBytes %" PRIu64 " maxBytes %" PRIu64 " step: %s warmup iters: %d iters: %d "
	       "agg iters: %d validation: %d graph: %d unalign: %d\n", h->nthreads > 0 ? h->nthreads : 1,
	       h->gpus_per_thread > 0 ? h->gpus_per_thread : h->nranks, o->min_bytes, o->max_bytes, step, o->warmup,
	       o->iters, o->agg_iters, o->check, o->graph_launches, o->unalign);
	static const char *const blocking[] = {
		"", "wait and barrier after each inner iteration (-m) ", "wait after each inner iteration (-m), no barrier ",
		"wait and barrier after each outer iteration (-n); time excludes barrier ",
	};
	if (o->blocking > 0 && o->blocking < 4)
		printf("# Blocking Enabled: %s\n", blocking[o->blocking]);
	if (o->per_iter) {
		printf("# Per-Iteration Report: host clock timing; i_* uses max over process rows");
		if (o->per_iter_skip)
			printf("; summary skips first %d iterations", o->per_iter_skip);
		printf(" \n");
	}
	printf("#\n");
	device_lines(h);
	nw_nt_print_header(stdout, o->per_iter, o->timestamps, o->cputime);
}

static void per_rank_line(const struct nw_row *r)
{
	if (!r || !r->nrank_times)
		return;
	int slow = 0;
	double mn = r->rank_times[0].time_us, mx = mn;
	for (int k = 0; k < r->nrank_times; k++) {
		double t = r->rank_times[k].time_us;
		if (t > mx) {
			mx = t;
			slow = k;
		}
		mn = t < mn ? t : mn;
	}
	printf("#   %s ranks:", r->inplace ? "in-place" : "out-of-place");
	for (int k = 0; k < r->nrank_times && k < 16; k++)
		printf(" %d@%s:%d=%.2fus", r->rank_times[k].rank, r->rank_times[k].host, r->rank_times[k].gpu,
		       r->rank_times[k].time_us);
	if (r->nrank_times > 16)
		printf(" ...");
	printf("; slowest rank %d (%s), spread %.1f%%\n", r->rank_times[slow].rank, r->rank_times[slow].host,
	       mn > 0 ? (mx - mn) / mn * 100 : 0);
}

/*
 * The progress line and its plan: every (op, dtype, redop, root) sweeps
 * every size (nw_progress_plan_bench), planned again when the first row
 * tells the number of ranks (sizes too small for an op, -r all's roots).
 */
static void progress_start(struct bench_cli *cli, int nranks)
{
	struct nw_progress *p = &cli->prog;
	const struct nw_bench_opts *o = &cli->o;
	if (!p->t0) {
		nw_progress_init(p, nw_progress_wanted(cli->progress_mode), 0);
		snprintf(p->what, sizeof(p->what), "%s: %s", cli->cmd, o->nops ? nw_coll_get(o->ops[0])->name : "pairs");
	}
	/* -N 0 has no end to count down to (the line then says only where it is) */
	nw_progress_plan_bench(p, o, nranks);
}

/* One size done: advance the progress line to the size after it. */
static void progress_row(struct bench_cli *cli, const struct nw_row *r)
{
	const struct nw_bench_opts *o = &cli->o;
	if (!cli->prog.done_n)
		progress_start(cli, r->nranks);
	uint64_t next = nw_bench_next_size(o, r->size_bytes);
	char what[96], sz[32];
	nw_format_size(next, sz, sizeof(sz));
	if (next && next <= o->max_bytes)
		snprintf(what, sizeof(what), "%s: %s %s %s", cli->cmd, r->op, r->dtype, sz);
	else
		snprintf(what, sizeof(what), "%s: %s %s done", cli->cmd, r->op, r->dtype);
	nw_strlcpy(cli->prog.what, what, sizeof(cli->prog.what));
	nw_progress_done(&cli->prog);
}

/* A size's rows into the table (and the sums of its footer). */
static void print_rows(struct bench_cli *cli, const struct nw_row *oop, const struct nw_row *ip)
{
	const struct nw_row *r = oop ? oop : ip;
	if (!cli->table || !r)
		return;
	const struct nw_coll *c = nw_coll_find(r->op);
	if (!c || c != cli->cur_op) {
		section_end(cli, 0);
		section_start(cli, r);
	}
	char line[512];
	nw_nt_format_row(line, sizeof(line), oop, ip);
	if (cli->o.timestamps) {
		char now[32];
		nw_nt_json_now(now, sizeof(now));
		printf("%s%21s\n", line, now);
	} else {
		puts(line);
	}
	const struct nw_row *rs[2] = { oop, ip };
	for (int k = 0; k < 2; k++)
		if (rs[k]) {
			cli->bus_sum += rs[k]->busbw_gbs;
			cli->bus_n++;
			if (rs[k]->wrong > 0)
				cli->wrong_op += rs[k]->wrong;
		}
	if (cli->o.per_rank) {
		per_rank_line(oop);
		per_rank_line(ip);
	}
	fflush(stdout);
}

static void on_row(const struct nw_row *oop, const struct nw_row *ip, void *arg)
{
	struct bench_cli *cli = arg;
	const struct nw_row *r = oop ? oop : ip;
	nw_progress_clear(&cli->prog);
	print_rows(cli, oop, ip);
	if (r)
		progress_row(cli, r);
}

/*
 * The topology of this host's visible GPUs, for "% of link" and the
 * history fingerprint (a summary line and its hash). NCCL runs only;
 * allocates its large structs on the heap. *topo is NULL when unknown.
 */
static struct nw_topo *probe_topology(struct nw_run *run)
{
	if (strcmp(run->h.backend, "nccl") != 0)
		return NULL;
	struct nw_nvml_snap *snap = nw_calloc(1, sizeof(*snap));
	struct nw_topo *all = nw_calloc(1, sizeof(*all)), *vis = nw_calloc(1, sizeof(*vis));
	char err[NW_ERRLEN];
	int pos[NW_NVML_MAX_GPUS];
	if (nw_probe_nvml(snap, NULL, err, sizeof(err)) != 0 || nw_topo_probe(all, "", snap) != 0) {
		free(snap);
		free(all);
		free(vis);
		return NULL;
	}
	int n = nw_topo_visible(all, getenv("CUDA_VISIBLE_DEVICES"), pos, NW_NVML_MAX_GPUS, NULL, 0);
	nw_topo_subset(all, pos, n > 0 ? n : 0, vis);
	free(snap);
	free(all);
	/* "GPU0-GPU1 NV18 478.1 GB/s; ..." and its hash go into the fingerprint */
	char sum[1024], hex[17];
	nw_topo_summary(vis, sum, sizeof(sum), hex);
	if (!run->h.extra)
		run->h.extra = json_object();
	json_t *fp = json_object_get(run->h.extra, "fingerprint");
	if (!fp) {
		fp = json_object();
		json_object_set_new(run->h.extra, "fingerprint", fp);
	}
	json_object_set_new(fp, "topology", json_string(sum));
	json_object_set_new(fp, "topology_hash", json_string(hex));
	return vis;
}

/* What nccl-tests does not say: the peak per op, and where it is reached. */
static void summary(const struct bench_cli *cli, const struct nw_run *run, const struct nw_topo *topo)
{
	if (run->h.nranks == 1) {
		printf("# ncclwatch: one rank: every collective is a local copy or nothing at all, so these\n"
		       "# bandwidths say nothing about links (busbw is 0 by definition); use 2 or more %s\n",
		       strcmp(run->h.backend, "mpi") ? "GPUs" : "ranks (mpirun -np 2 ...)");
		return;
	}
	for (int i = 0; i < cli->o.nops; i++) {
		const char *name = nw_coll_get(cli->o.ops[i])->name;
		const struct nw_row *best = nw_run_peak(run, name);
		if (!best)
			continue;
		char sz[32];
		nw_format_size(best->size_bytes, sz, sizeof(sz));
		printf("# ncclwatch: %-14s peak busbw %8.2f GB/s at %s (%s)", name, best->busbw_gbs, sz,
		       best->inplace ? "in-place" : "out-of-place");
		struct nw_expect e;
		int nhosts = run->h.nhosts > 0 ? run->h.nhosts : 1;
		if (topo && nw_expect_for_topo(topo, nw_coll_find(name)->op, run->h.nranks, run->h.nranks / nhosts,
		                               best->size_bytes, &e, NULL, 0) == 0 && e.link_gbs > 0) {
			printf(", %.1f%% of the %.1f GB/s link; expected about %.0f GB/s at this size%s",
			       best->busbw_gbs / e.link_gbs * 100, e.link_gbs, e.busbw_gbs, e.calibrated ? "" : " (uncalibrated)");
		} else {
			printf(", link bandwidth unknown");
		}
		printf("\n");
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The pairwise matrix, then the slowest pairs by name. */
static void print_pairs(const struct nw_run *run)
{
	json_t *p = run->h.extra ? json_object_get(run->h.extra, "pairs") : NULL;
	if (!p)
		return;
	json_t *m = json_object_get(p, "busbw_gbs"), *list = json_object_get(p, "pairs");
	size_t n = json_array_size(m), np = json_array_size(list);
	char sz[32];
	nw_format_size((uint64_t)json_integer_value(json_object_get(p, "size_bytes")), sz, sizeof(sz));
	printf("# ncclwatch pairs: send/recv of %s both ways between each pair of ranks, the others idle\n", sz);
	printf("# busbw per direction, GB/s (%s)\n#      ", run->h.gpus);
	for (size_t b = 0; b < n; b++)
		printf(" %7zu", b);
	printf("\n");
	for (size_t a = 0; a < n; a++) {
		printf("# %4zu ", a);
		for (size_t b = 0; b < n; b++) {
			json_t *v = json_array_get(json_array_get(m, a), b);
			if (json_is_number(v))
				printf(" %7.1f", json_number_value(v));
			else
				printf(" %7s", "-");
		}
		printf("\n");
	}
	if (!np)
		return;
	double *bw = nw_calloc(np, sizeof(double));
	for (size_t i = 0; i < np; i++)
		bw[i] = json_number_value(json_object_get(json_array_get(list, i), "busbw_gbs"));
	qsort(bw, np, sizeof(double), cmp_double);
	double med = bw[np / 2];
	free(bw);
	printf("# median pair %.1f GB/s; ", med);
	int named = 0;
	for (size_t i = 0; i < np; i++) {
		json_t *e = json_array_get(list, i);
		double v = json_number_value(json_object_get(e, "busbw_gbs"));
		json_t *w = json_object_get(e, "wrong");
		if (v < 0.8 * med || (json_is_integer(w) && json_integer_value(w) > 0)) {
			printf("%sslow pair %lld<->%lld %.1f GB/s (%.0f%% of median)%s", named ? "; " : "",
			       (long long)json_integer_value(json_object_get(e, "a")),
			       (long long)json_integer_value(json_object_get(e, "b")), v, med > 0 ? v / med * 100 : 0,
			       json_is_integer(w) && json_integer_value(w) > 0 ? " WITH WRONG DATA" : "");
			named++;
		}
	}
	printf("%s\n", named ? "" : "no pair below 80% of the median");
}

static int write_out(const char *path, const struct nw_run *run, int per_rank, int json)
{
	FILE *f = !strcmp(path, "-") ? stdout : fopen(path, "w");
	if (!f)
		return nw_error("cannot write '%s': %m", path);
	int rc = json ? nw_run_write_json(run, f, per_rank) : nw_run_write_csv(run, f, per_rank);
	if (f != stdout && fclose(f) != 0)
		rc = -1;
	if (rc)
		return nw_error("writing '%s' failed: %m", path);
	return 0;
}

/* -J's file for op: the path, or with several ops the op's name before the extension ("out.all_reduce.json"). */
static void nt_json_file(const struct bench_cli *cli, const char *op, char *path, size_t len)
{
	const char *p = cli->nt_json_path, *dot = strrchr(p, '.'), *slash = strrchr(p, '/');
	if (cli->o.nops <= 1 || !strcmp(p, "-"))
		nw_strlcpy(path, p, len);
	else if (dot && (!slash || dot > slash + 1))
		snprintf(path, len, "%.*s.%s%s", (int)(dot - p), p, op, dot);
	else
		snprintf(path, len, "%s.%s", p, op);
}

/* -J: nccl-tests' JSON of op's rows into its file (nt_json_file). 0, or -1 after printing why. */
static int write_nt_json(const struct bench_cli *cli, const struct nw_run *run, const char *op, int argc,
                         char **argv)
{
	extern char **environ;
	const struct nw_bench_opts *o = &cli->o;
	char path[4096];
	nt_json_file(cli, op, path, sizeof(path));
	struct nw_nt_config c = {
		.nthreads = run->h.nthreads > 0 ? run->h.nthreads : 1,
		.ngpus = run->h.gpus_per_thread > 0 ? run->h.gpus_per_thread : 1,
		.min_bytes = o->min_bytes, .max_bytes = o->max_bytes, .step_factor = o->step_factor,
		.step_bytes = o->step_bytes, .warmup = o->warmup, .iters = o->iters, .agg_iters = o->agg_iters,
		.validation = o->check, .graph = o->graph_launches, .blocking = o->blocking,
		.per_iter = o->per_iter, .per_iter_skip = o->per_iter_skip, .parallel_init = o->parallel_init,
		.prog = "ncclwatch", .argc = argc, .argv = argv, .envp = environ,
	};
	nw_strlcpy(c.start_time, cli->nt_start, sizeof(c.start_time));
	int out = !strcmp(path, "-");
	FILE *f = out ? stdout : fopen(path, "w");
	if (!f)
		return nw_error("cannot write '%s': %m", path);
	int rc = nw_nt_write_json(f, run, op, &c);
	if (out)
		fputc('\n', f);
	if (!out && fclose(f) != 0)
		rc = -1;
	if (rc)
		return nw_error("writing '%s' failed: %m", path);
	return 0;
}

static struct nw_progress *sig_prog;
static const char *sig_cmd;
static volatile sig_atomic_t sig_stop; /* the first SIGINT or SIGTERM: its number */
static volatile sig_atomic_t recording; /* the run is being recorded: a signal ends the database's waits */
static volatile sig_atomic_t rec_stop;  /* the signal that came while recording */

/* Append s to buf (of len, at *at), without stdio (signal-safe). */
static void sig_put(char *buf, size_t len, size_t *at, const char *s)
{
	while (*s && *at + 1 < len)
		buf[(*at)++] = *s++;
}

/*
 * After a stop signal (signal-safe): output must not keep the run from
 * saving what it measured. A launcher tearing the job down stops reading
 * the ranks' pipes (Open MPI's mpirun does on Ctrl-C: rank 0 then blocked
 * on a full stdout until it was killed, with nothing written), and a
 * pipeline's reader dies with the same Ctrl-C (a write would raise
 * SIGPIPE). So: SIGPIPE ignored, and stdout/stderr made non-blocking when
 * they are pipes or sockets, or the terminal mpirun gives each rank of its
 * own (never a user's terminal, whose state the shell shares); output that
 * cannot go out is dropped, the files and history are still written.
 */
static int own_tty; /* launched by Open MPI/PMIx: a terminal on stdout is the rank's own */

static void unblock_outputs(void)
{
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	for (int fd = 1; fd <= 2; fd++) {
		struct stat st;
		if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || (own_tty && isatty(fd))))
			continue;
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
}

/*
 * SIGINT or SIGTERM: the first ends the sweep after the size running now
 * (every rank alike, see nw_bench_opts.stop) and says so; what was
 * measured is then printed, written and recorded as interrupted. A second
 * says what was interrupted and dies of it at once.
 */
static void on_interrupt(int sig)
{
	if (recording && !rec_stop) {
		rec_stop = sig; /* the store gives up within 0.1 s and spools the run */
		return;
	}
	if (sig_stop || rec_stop) {
		nw_progress_interrupted(sig_prog, sig_cmd);
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	sig_stop = sig;
	unblock_outputs();
	if (!sig_prog)
		return;
	char msg[200];
	size_t at = 0;
	sig_put(msg, sizeof(msg), &at, sig_prog->on && sig_prog->drawn ? "\r\033[K" : "");
	sig_put(msg, sizeof(msg), &at, "ncclwatch: ");
	sig_put(msg, sizeof(msg), &at, sig_cmd);
	sig_put(msg, sizeof(msg), &at, ": stopping after the size running now (interrupt again to stop at once)\n");
	ssize_t w = write(STDERR_FILENO, msg, at);
	(void)w;
}

/*
 * Catch SIGINT and SIGTERM for the sweep (on: 1), or give them back their
 * default (0). p (rank 0's progress, else NULL) names what a second
 * signal interrupted.
 */
static void catch_interrupt(int on, struct nw_progress *p, const char *cmd)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on ? on_interrupt : SIG_DFL;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sig_prog = p;
	sig_cmd = cmd;
	own_tty = getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* After a sweep ended by a signal: the one line saying where it stopped and what is kept. */
static void say_interrupted(const struct bench_cli *cli, const struct nw_run *run, int sig)
{
	const struct nw_row *last = run->nrows ? &run->rows[run->nrows - 1] : NULL;
	char sz[32] = "";
	if (last)
		nw_format_size(last->size_bytes, sz, sizeof(sz));
	fprintf(stderr, "ncclwatch: %s: interrupted (%s)%s%s%s%s%s after %d of %d sizes: keeping the %d finished "
	        "(%zu rows), marked interrupted\n", cli->cmd, sig == SIGTERM ? "SIGTERM" : "SIGINT",
	        last ? " during " : " before the first size", last ? last->op : "", last ? " " : "",
	        last ? sz : "", last ? ", which was finished," : "", cli->prog.done_n, cli->prog.total_n,
	        cli->prog.done_n, run->nrows);
}

/* --- -N and -M: stopping between cycles, the memory report --- */

static volatile sig_atomic_t stop_flag;
static int stop_quiet; /* a rank other than 0: rank 0 says it for the job */

/* SIGINT during -N cycles: the first ends the run after the current cycle (nw_bench_opts.stop_asked), a second as usual. */
static void on_stop(int sig)
{
	static const char msg[] = "\nncclwatch: interrupted: stopping after the current cycle (Ctrl-C again to quit now)\n";
	stop_flag = 1;
	unblock_outputs();
	if (!stop_quiet && write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		stop_flag = 1;
	signal(sig, SIG_DFL);
}

static int stop_asked(void)
{
	return stop_flag != 0;
}

/* With -N other than 1: SIGINT asks for a stop between cycles (every rank: a terminal's Ctrl-C reaches them all). */
static void catch_stop(struct nw_bench_opts *o)
{
	stop_flag = 0;
	stop_quiet = nw_cli_other_rank();
	o->stop_asked = stop_asked;
	signal(SIGINT, on_stop);
}

/* nccl-tests' memory amounts: B, KB, MB, GB (1024-based) with 2, 1 or 0 decimals below 10, 100 and above. */
static void mem_text(int64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KB", "MB", "GB" };
	double v = (double)bytes;
	int u = fabs(v) >= 1073741824.0 ? 3 : fabs(v) >= 1048576.0 ? 2 : fabs(v) >= 1024.0 ? 1 : 0;
	v /= pow(1024.0, u);
	snprintf(buf, len, "%.*f %s", fabs(v) < 10 ? 2 : fabs(v) < 100 ? 1 : 0, v, unit[u]);
}

/* -M: "# GPU memory usage     : Initialization X | User-Allocated Y | Collective Z | Total  T", as nccl-tests. */
static void print_memory(const struct nw_run *run)
{
	json_t *m = run->h.extra ? json_object_get(run->h.extra, "gpu_memory") : NULL;
	if (!m)
		return;
	static const char *const key[] = { "init_bytes", "user_bytes", "collective_bytes" };
	static const char *const name[] = { "Initialization", "User-Allocated", "Collective" };
	char v[32];
	struct nw_strbuf line;
	nw_strbuf_init(&line);
	int64_t total = 0;
	for (int i = 0; i < 3; i++) {
		int64_t b = (int64_t)json_integer_value(json_object_get(m, key[i]));
		total += b;
		mem_text(b, v, sizeof(v));
		nw_strbuf_addf(&line, "%s %s | ", name[i], v);
	}
	mem_text(total, v, sizeof(v));
	printf("# %-20s : %sTotal  %s\n", "GPU memory usage", line.buf, v);
	nw_strbuf_release(&line);
}

/* -N stopped by Ctrl-C: say on stderr how many cycles were kept. */
static void cycles_note(const struct bench_cli *cli, const struct nw_run *run)
{
	json_t *c = run->h.extra ? json_object_get(run->h.extra, "cycles") : NULL;
	if (!c || !json_is_true(json_object_get(c, "stopped")))
		return;
	long long done = json_integer_value(json_object_get(c, "completed"));
	nw_warn("%s: stopped after cycle %lld as asked (Ctrl-C); %lld finished cycle%s kept", cli->cmd, done, done,
	        done == 1 ? "" : "s");
}

static const char *job_cmd;

/*
 * Record the run (rank 0). A SIGINT or SIGTERM meanwhile ends the
 * database's waits within 0.1 s and the run is kept in the spool; the
 * store says so in its error.
 */
static void record(const struct bench_cli *cli, struct nw_run *run, int stopped)
{
	long long id = 0;
	char serr[NW_ERRLEN];
	nw_fingerprint_collect(run);
	nw_store_stop_on(&rec_stop);
	recording = 1;
	if (sig_stop && !stopped)
		rec_stop = sig_stop; /* it came after the sweep, before the recording */
	int rc = nw_store_record(&cli->so, run, &id, serr, sizeof(serr));
	recording = 0;
	nw_store_stop_on(NULL);
	if (rc != 0)
		nw_warn("%s: the run was not recorded in history: %s", cli->cmd, serr);
	else if (id > 0 && !cli->o.quiet)
		nw_cli_say_recorded(cli->cmd, id);
}

/* An error every rank found alike, said by rank 0 for the job (nw_bench_on_job_error). */
static void say_job_error(const char *msg)
{
	fflush(stdout);
	nw_error("%s: %s", job_cmd, msg);
	fflush(stderr);
}

int bench_cli_run(struct bench_cli *cli, int argc, char **argv, const char *cmd)
{
	struct nw_run run;
	nw_run_init(&run);
	argv[0] = (char *)cmd;
	nw_header_fill_local(&run.h, cmd, argc, argv);
	cli->run = &run;
	nw_nt_json_now(cli->nt_start, sizeof(cli->nt_start));
	for (int i = 0; cli->nt_json_path && cli->table && !nw_cli_other_rank() && i < cli->o.nops; i++) {
		char path[4096];
		nt_json_file(cli, nw_coll_get(cli->o.ops[i])->name, path, sizeof(path));
		printf("# Writing JSON output to %s\n", path);
	}
	cli->cmd = cmd;
	char err[NW_ERRLEN] = "";
	if (cli->o.quiet && cli->progress_mode == NW_PROGRESS_AUTO)
		cli->progress_mode = NW_PROGRESS_OFF;
	progress_start(cli, 1);
	sig_stop = 0;
	catch_interrupt(1, nw_cli_other_rank() ? NULL : &cli->prog, cmd);
	cli->o.stop = &sig_stop;
	job_cmd = cmd;
	nw_bench_on_job_error(say_job_error);
	if (cli->o.cycles != 1)
		catch_stop(&cli->o);
	int rc = nw_bench_run(&cli->o, &run, on_row, cli, err, sizeof(err));
	nw_bench_on_job_error(NULL);
	nw_progress_clear(&cli->prog);
	int stopped = sig_stop;
	rec_stop = 0;
	if (stopped && rc >= 0 && run.h.rank == 0)
		say_interrupted(cli, &run, stopped);
	int status;
	if (rc < 0) {
		if (cli->table && cli->cur_op)
			fflush(stdout);
		if (err[0]) /* empty on ranks other than 0 when rank 0 says it for the job */
			nw_error("%s: %s", cmd, err);
		status = rc == NW_BENCH_USAGE ? 2 : 3;
	} else {
		status = rc ? 1 : 0;
		if (run.h.rank == 0) {
			section_end(cli, 1);
			cycles_note(cli, &run);
			struct nw_topo *topo = probe_topology(&run);
			struct nw_expect e;
			int nhosts = run.h.nhosts > 0 ? run.h.nhosts : 1;
			if (topo && nw_expect_for_topo(topo, NW_ALL_REDUCE, run.h.nranks, run.h.nranks / nhosts, cli->o.max_bytes,
			                               &e, NULL, 0) == 0)
				run.h.link_gbs = e.link_gbs;
			if (cli->table && cli->o.pairs)
				print_pairs(&run);
			if (cli->table && cli->o.nops)
				summary(cli, &run, topo);
			free(topo);
			if (rc == 1)
				nw_error("%s: results have wrong elements (see #wrong): NCCL, the GPU or the link "
				         "corrupted data", cmd);
			if (cli->json_path && write_out(cli->json_path, &run, cli->o.per_rank, 1))
				status = 3;
			if (cli->csv_path && write_out(cli->csv_path, &run, cli->o.per_rank, 0))
				status = 3;
			for (int i = 0; cli->nt_json_path && i < cli->o.nops; i++)
				if (write_nt_json(cli, &run, nw_coll_get(cli->o.ops[i])->name, argc, argv))
					status = 3;
			record(cli, &run, stopped);
		}
		/* rank 0 says it; another rank exiting non-zero first would have the launcher kill rank 0 mid-write */
		if (stopped && status < 2)
			status = run.h.rank == 0 ? 128 + stopped : 0;
	}
	if (!stopped && rec_stop && status < 2)
		stopped = rec_stop, status = 128 + rec_stop;
	if (stopped) {
		/* output a torn-down launcher no longer reads was dropped (unblock_outputs): not an error of its own */
		fflush(stdout);
		__fpurge(stdout);
		clearerr(stdout);
	}
	catch_interrupt(0, NULL, NULL);
	nw_progress_release(&cli->prog);
	nw_run_release(&run);
	return status;
}
