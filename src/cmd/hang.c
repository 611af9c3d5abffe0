/* SPDX-License-Identifier: Apache-2.0 */
/* ncclwatch hang: which collective a job is stuck in, which ranks have not arrived, who waits. */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "export/hangsrc.h"
#include "export/statsfile.h"
#include "export/view.h"
#include "model/progress.h"
#include "probe/ras.h"
#include "util/util.h"

struct hang_args {
	const char *dir;
	const char **dumps;
	size_t ndumps;
	int no_local;
	struct nw_opt_out json;
	double hang_s;
	const char *comm;
	int ras;              /* -1 never, 0 quietly (default), 1 asked for: its failure is said */
	int no_ras;           /* --no-ras */
	const char *ras_addr; /* NULL: nw_ras_default_addr() */
	double ras_timeout_s;
};

/* What was read, for the closing line. */
struct hang_read {
	size_t nfiles, ndisabled, nbad, ndumps;
	char dir[PATH_MAX];
	/* NCCL's RAS port: asked, and what came of it */
	int ras_asked, ras_ok;
	size_t ras_comms;
	char ras_addr[256], ras_version[32], ras_err[NW_ERRLEN];
	struct nw_view_modes modes; /* stats files per writer (profiler interface, interposer) */
};

/* The default --hang-s: NCCLWATCH_HANG_S as the plugin reads it, else 120. */
static int default_hang_s(double *out)
{
	const char *e = getenv("NCCLWATCH_HANG_S");
	long v = 120;
	char err[NW_ERRLEN];
	if (e && *e && nw_parse_long(e, 1, 86400, &v, "NCCLWATCH_HANG_S", err, sizeof(err)) != 0)
		return nw_error("%s", err);
	*out = (double)v;
	return 0;
}

/* --dump PATH, repeatable. */
static int dump_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct hang_args *a = opts;
	if (!*arg)
		return nw_seterr(err, errlen, "option '%s' needs a value", name);
	a->dumps = nw_realloc(a->dumps, (a->ndumps + 1) * sizeof(*a->dumps));
	a->dumps[a->ndumps++] = arg;
	return 0;
}

/* --ras-addr A: ask RAS there (and say when it cannot be asked). */
static int ras_addr_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct hang_args *a = opts;
	if (!*arg)
		return nw_seterr(err, errlen, "option '%s' needs a value", name);
	a->ras = 1;
	a->ras_addr = arg;
	return 0;
}

static const struct nw_opt hang_options[] = {
	NW_OPT_STATS_DIR(struct hang_args, dir),
	{ .kind = NW_OPTK_CALL, .lname = "dump", .argh = "PATH", .call = dump_opt,
	  .help = "a trace dump, or a directory of them (*.json), written by\nthe plugin on any node (repeatable)" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-local", .off = NW_F_INT(struct hang_args, no_local),
	  .help = "do not read this node's stats files (dumps only)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "hang-s", .off = NW_F_DBL(struct hang_args, hang_s), .argh = "S",
	  .dmin = 0.001, .dmax = 86400, .help = "seconds without any event that make waiting a hang\n"
	                                        "(default $NCCLWATCH_HANG_S, else 120)" },
	{ .kind = NW_OPTK_FLAG, .lname = "ras", .off = NW_F_INT(struct hang_args, ras),
	  .help = "ask NCCL's RAS port and say so when it cannot be asked (by\n"
	          "default it is asked quietly: a job without RAS is no error)" },
	{ .kind = NW_OPTK_CALL, .lname = "ras-addr", .argh = "A", .call = ras_addr_opt,
	  .help = "its address (default $NCCL_RAS_ADDR, else localhost:28028)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "ras-timeout", .off = NW_F_DBL(struct hang_args, ras_timeout_s),
	  .argh = "S", .dmin = 0.1, .dmax = 600, .def = "2", .help = "give up on RAS after S seconds in all" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-ras", .off = NW_F_INT(struct hang_args, no_ras),
	  .help = "do not ask RAS" },
	{ .kind = NW_OPTK_STRING, .lname = "comm", .off = NW_F_STR(struct hang_args, comm), .argh = "TEXT",
	  .help = "only communicators whose hex id starts with, or name\ncontains, TEXT" },
	NW_OPT_JSON(struct hang_args, json, "\n(the verdicts, schema ncclwatch.hang/1)"),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_hang = {
	.name = "hang",
	.about = "Say whether a training job is hung in NCCL, and where: for each\n"
	         "communicator, the collective and sequence number where the ranks\n"
	         "diverge, the ranks that have not arrived (with the last operation each\n"
	         "one enqueued), and the ranks waiting inside it. Reads the profiler\n"
	         "plugin's live stats files on this node, trace dumps gathered from\n"
	         "other nodes and, where the job's NCCL has it (2.24+), NCCL's RAS port,\n"
	         "which sees every rank of the job from any one node; it merges them into\n"
	         "one view. RAS counts the collectives each rank issued but not their\n"
	         "completion or times: it names ranks behind and dead ones, the stats files\n"
	         "and dumps say who is inside and since when.\n"
	         "\n"
	         "Verdicts: hung (ranks wait and no rank raised an NCCL event for --hang-s),\n"
	         "straggler (some ranks are behind, events still flow), idle (nothing in\n"
	         "flight and nobody behind: a job checkpointing is idle, not hung), none.\n",
	.opts = hang_options,
	.footer = "Ranks of other nodes are \"not reported\" unless their dumps are given;\n"
	          "where a plugin could not see completions (NCCLWATCH_KERNEL=off on one\n"
	          "node) the ranks inside an operation cannot be told, and the output says so.\n"
	          "\n"
	          "exit status: 0 no hang, 1 a communicator is hung, 2 bad usage or\n"
	          "unreadable input.\n"
	          "\n"
	          "examples:\n"
	          "  ncclwatch hang\n"
	          "  ncclwatch hang --no-local --dump dumps/ --json\n"
	          "  ncclwatch hang --ras --ras-addr node7:28028\n",
	.width = 18,
};

/* The options; 0, or -1 after printing an error (or the help: then *help is set). */
static int parse(int argc, char **argv, struct hang_args *a, int *help)
{
	if (default_hang_s(&a->hang_s) != 0)
		return -1;
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_hang, a, argc, argv, &res);
	*help = st == NW_OPT_HELP;
	if (st != NW_OPT_OK)
		return -1;
	if (a->no_ras && a->ras > 0)
		return nw_error("hang: --no-ras excludes --ras and --ras-addr");
	if (a->no_ras)
		a->ras = -1;
	if (a->no_local && !a->ndumps && a->ras <= 0)
		return nw_error("hang --no-local reads only trace dumps and RAS: give at least one --dump PATH, or --ras");
	return 0;
}

/*
 * NCCL's RAS port into set (one nw_prog_set_merge call). A port that is
 * closed, slow or answers garbage is no error: rd says what happened, and
 * the other sources stand alone. -1 only when merging fails.
 */
static int gather_ras(const struct hang_args *a, struct nw_prog_set *set, struct hang_read *rd)
{
	struct nw_ras ras;
	char err[NW_ERRLEN];
	rd->ras_asked = 1;
	nw_strlcpy(rd->ras_addr, a->ras_addr ? a->ras_addr : nw_ras_default_addr(), sizeof(rd->ras_addr));
	if (nw_ras_query(rd->ras_addr, a->ras_timeout_s, 0, &ras, rd->ras_err, sizeof(rd->ras_err)) != 0) {
		nw_ras_release(&ras);
		if (a->ras > 0)
			nw_warn("NCCL RAS at %s: %s; the view below is without it", rd->ras_addr, rd->ras_err);
		return 0;
	}
	struct nw_prog_comm *list;
	size_t n;
	nw_ras_to_prog(&ras, &list, &n);
	nw_strlcpy(rd->ras_version, ras.nccl_version, sizeof(rd->ras_version));
	nw_ras_release(&ras);
	int rc = nw_prog_set_merge(set, list, n, err, sizeof(err));
	nw_ras_prog_free(list, n);
	if (rc != 0)
		return nw_error("%s", err);
	rd->ras_ok = 1;
	rd->ras_comms = n;
	return 0;
}

/*
 * Every source into one set: this node's stats files, each dump, then
 * NCCL's RAS port, each with one merge. 0, or -1 after printing.
 */
static int gather(const struct hang_args *a, struct nw_prog_set *set, struct hang_read *rd)
{
	char err[NW_ERRLEN];
	if (!a->no_local) {
		struct nw_sf_set sf;
		if (a->dir)
			nw_strlcpy(rd->dir, a->dir, sizeof(rd->dir));
		else
			nw_sf_default_dir(rd->dir, sizeof(rd->dir));
		if (nw_sf_load_flags(rd->dir, NW_SF_HEADERS, &sf, err, sizeof(err)) < 0)
			return nw_error("%s (give --dump for trace dumps, or --dir)", err);
		rd->nfiles = sf.n;
		rd->nbad = nw_sf_nbad(&sf);
		for (size_t i = 0; i < sf.n; i++)
			nw_view_modes_add(&rd->modes, &sf.ranks[i].hdr);
		int rc = nw_hangsrc_stats(&sf, set, &rd->ndisabled, err, sizeof(err));
		nw_sf_set_release(&sf);
		if (rc != 0)
			return nw_error("%s", err);
	}
	for (size_t i = 0; i < a->ndumps; i++)
		if (nw_hangsrc_dumps(a->dumps[i], set, &rd->ndumps, err, sizeof(err)) != 0)
			return nw_error("%s", err);
	return a->ras >= 0 ? gather_ras(a, set, rd) : 0;
}

/* Does c pass --comm (hex prefix or name substring)? */
static int comm_wanted(const struct hang_args *a, const struct nw_prog_comm *c)
{
	if (!a->comm || !*a->comm)
		return 1;
	char hex[17];
	snprintf(hex, sizeof(hex), "%016" PRIx64, c->comm_hash);
	return !strncmp(hex, a->comm, strlen(a->comm)) || strstr(c->name, a->comm) != NULL;
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* "rank 3 (host pid 123, dead): last all_reduce seq 40, enqueued 12.0 s ago" */
static void print_missing(const struct nw_prog_rank *r, uint64_t now)
{
	printf("    rank %d (%s pid %d%s): ", r->rank, r->host[0] ? r->host : "?", r->pid, r->dead ? ", process gone" : "");
	if (r->last_op < 0)
		printf("no operation enqueued yet\n");
	else
		printf("last %s seq %" PRIu64 ", enqueued %.1f s ago\n", nws_op_name((unsigned)r->last_op), r->last_seq,
		       r->last_enq_ns && now > r->last_enq_ns ? secs(now - r->last_enq_ns) : 0.0);
}

/* The one-screen text of one communicator. */
static void print_comm(const struct nw_prog_comm *c, const struct nw_prog_diag *d, uint64_t now)
{
	char size[32] = "size unknown"; /* profiler v1 to v3 are not told it */
	if (c->nranks > 0)
		snprintf(size, sizeof(size), "%d rank%s", c->nranks, c->nranks == 1 ? "" : "s");
	printf("comm %016" PRIx64 "%s%s%s, %s: %s", c->comm_hash, c->name[0] ? " \"" : "", c->name,
	       c->name[0] ? "\"" : "", size, nw_prog_verdict_name(d->verdict));
	if (d->op >= 0 && (d->nmissing || d->ninside))
		printf(" at %s seq %" PRIu64, nws_op_name((unsigned)d->op), d->seq);
	if (d->quiet_ns != NW_PROG_UNKNOWN)
		printf(", no NCCL event for %.1f s", secs(d->quiet_ns));
	putchar('\n');
	if (d->nmissing) {
		printf("  not arrived (%zu):\n", d->nmissing);
		for (size_t k = 0; k < d->nmissing; k++)
			print_missing(&c->ranks[d->missing[k]], now);
	}
	if (d->ninside) {
		printf("  inside (%zu):", d->ninside);
		for (size_t k = 0; k < d->ninside; k++)
			printf(" %d", c->ranks[d->inside[k]].rank);
		if (d->wait_ns)
			printf(", waiting %.1f s", secs(d->wait_ns));
		putchar('\n');
	}
	if (d->nmissing && d->narrived > d->ninside)
		printf("  arrived, completion not seen: %zu rank%s\n", d->narrived - d->ninside,
		       d->narrived - d->ninside == 1 ? "" : "s");
	if (d->nunseen) {
		printf("  not reported (%zu, other nodes? give their dumps with --dump):", d->nunseen);
		for (size_t k = 0; k < d->nunseen_ranges && k < 32; k++) {
			const struct nw_prog_range *u = &d->unseen[k];
			if (u->lo == u->hi)
				printf(" %d", u->lo);
			else
				printf(" %d-%d", u->lo, u->hi);
		}
		printf("%s\n", d->nunseen_ranges > 32 ? " ..." : "");
	}
	if (d->done_blind && (d->nmissing || d->ninside || d->verdict == NW_PROG_IDLE))
		printf("  note: some ranks cannot see completions (NCCLWATCH_KERNEL=off on one node, or NCCL before 2.26: no kernel events): who is inside an operation is unknown there\n");
}

static json_t *rank_list(const struct nw_prog_comm *c, const size_t *idx, size_t n, int detail)
{
	json_t *a = json_array();
	for (size_t k = 0; k < n; k++) {
		const struct nw_prog_rank *r = &c->ranks[idx[k]];
		if (!detail) {
			json_array_append_new(a, json_integer(r->rank));
			continue;
		}
		json_t *o = json_pack("{s:i, s:s, s:i, s:b}", "rank", r->rank, "host", r->host, "pid", r->pid, "dead",
		                      r->dead);
		if (r->last_op >= 0) {
			json_object_set_new(o, "last_op", json_string(nws_op_name((unsigned)r->last_op)));
			json_object_set_new(o, "last_seq", json_integer((json_int_t)r->last_seq));
			json_object_set_new(o, "last_enq_ns", json_integer((json_int_t)r->last_enq_ns));
		}
		json_array_append_new(a, o);
	}
	return a;
}

/*
 * The first HANG_JSON_UNSEEN ranks no source reported, one by one
 * (not_reported_count and not_reported_ranges say all of them): a
 * communicator of a million ranks seen from one node is not a million
 * numbers.
 */
#define HANG_JSON_UNSEEN 1024
static json_t *unseen_json(const struct nw_prog_diag *d)
{
	json_t *un = json_array();
	size_t n = 0;
	for (size_t k = 0; k < d->nunseen_ranges && n < HANG_JSON_UNSEEN; k++)
		for (int r = d->unseen[k].lo; r <= d->unseen[k].hi && n < HANG_JSON_UNSEEN; r++, n++)
			json_array_append_new(un, json_integer(r));
	return un;
}

static json_t *comm_json(const struct nw_prog_comm *c, const struct nw_prog_diag *d)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016" PRIx64, c->comm_hash);
	json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "comm", hex, "name", c->name, "nranks", c->nranks, "verdict",
	                      nw_prog_verdict_name(d->verdict));
	if (d->op >= 0) {
		json_object_set_new(o, "op", json_string(nws_op_name((unsigned)d->op)));
		json_object_set_new(o, "seq", json_integer((json_int_t)d->seq));
	}
	if (d->quiet_ns != NW_PROG_UNKNOWN)
		json_object_set_new(o, "quiet_s", json_real(secs(d->quiet_ns)));
	json_object_set_new(o, "wait_s", json_real(secs(d->wait_ns)));
	json_object_set_new(o, "not_arrived", rank_list(c, d->missing, d->nmissing, 1));
	json_object_set_new(o, "inside", rank_list(c, d->inside, d->ninside, 0));
	json_object_set_new(o, "not_reported", unseen_json(d));
	json_object_set_new(o, "not_reported_count", json_integer((json_int_t)d->nunseen));
	json_t *ranges = json_array();
	for (size_t k = 0; k < d->nunseen_ranges; k++)
		json_array_append_new(ranges, json_pack("[i, i]", d->unseen[k].lo, d->unseen[k].hi));
	json_object_set_new(o, "not_reported_ranges", ranges);
	json_object_set_new(o, "completion_blind", json_boolean(d->done_blind));
	return o;
}

/* Order of the report: hung first, then stragglers, then the rest; ties by hash. */
static int rank_of(enum nw_prog_verdict v)
{
	return v == NW_PROG_HUNG ? 0 : v == NW_PROG_STRAGGLER ? 1 : 2;
}

/* Diagnose and print every wanted communicator (hung first); returns how many are hung, -1 on failure. */
/* The text's closing lines: what was read (stats files, dumps, RAS) and what was left out. */
static void print_read(const struct hang_read *rd, size_t ncomms, double hang_s, int ras)
{
	if (!ncomms)
		printf("no communicators: no stats files in '%s'%s (is the plugin loaded? NCCL_PROFILER_PLUGIN=ncclwatch)\n",
		       rd->dir, rd->ndumps ? " and no progress in the dumps" : "");
	printf("read: %zu stats file%s%s%s, %zu trace dump%s; hang after %.0f s without events\n", rd->nfiles,
	       rd->nfiles == 1 ? "" : "s", rd->dir[0] ? " in " : "", rd->dir, rd->ndumps,
	       rd->ndumps == 1 ? "" : "s", hang_s);
	if (rd->ras_ok)
		printf("NCCL RAS at %s (NCCL %s): %zu communicator%s of the whole job\n", rd->ras_addr,
		       rd->ras_version[0] ? rd->ras_version : "?", rd->ras_comms, rd->ras_comms == 1 ? "" : "s");
	else if (rd->ras_asked && ras > 0)
		printf("NCCL RAS at %s: not used (%s)\n", rd->ras_addr, rd->ras_err);
	if (rd->ndisabled || rd->nbad)
		printf("left out: %zu file%s of a disabled plugin, %zu unusable\n", rd->ndisabled,
		       rd->ndisabled == 1 ? "" : "s", rd->nbad);
	char note[1024];
	for (unsigned i = 1; i < NWS_NMODES; i++)
		if (nw_view_mode_note(note, sizeof(note), &rd->modes, i))
			printf("note: %s\n", note);
}

static int report(const struct hang_args *a, const struct nw_prog_set *set, const struct hang_read *rd,
                  uint64_t now)
{
	char err[NW_ERRLEN];
	struct nw_prog_diag *d = nw_calloc(set->n + 1, sizeof(*d));
	int nhung = 0, rc = 0;
	size_t done = 0;
	for (; done < set->n && rc == 0; done++)
		rc = nw_prog_diagnose(&set->comms[done], now, (uint64_t)(a->hang_s * 1e9), &d[done], err, sizeof(err));
	json_t *arr = a->json.on ? json_array() : NULL;
	int text = nw_cli_json_text(&a->json);
	for (int pass = 0; rc == 0 && pass < 3; pass++) {
		for (size_t i = 0; i < set->n; i++) {
			if (rank_of(d[i].verdict) != pass || !comm_wanted(a, &set->comms[i]))
				continue;
			nhung += d[i].verdict == NW_PROG_HUNG;
			if (arr)
				json_array_append_new(arr, comm_json(&set->comms[i], &d[i]));
			if (text)
				print_comm(&set->comms[i], &d[i], now);
		}
	}
	if (rc == 0 && text)
		print_read(rd, set->n, a->hang_s, a->ras);
	if (rc == 0 && arr) {
		json_t *doc = json_pack("{s:s, s:b, s:f, s:o, s:{s:i, s:i, s:i}}", "schema", "ncclwatch.hang/1", "hung",
		                        nhung > 0, "hang_s", a->hang_s, "communicators", arr, "read", "stats_files",
		                        (int)rd->nfiles, "disabled_files", (int)rd->ndisabled, "dumps", (int)rd->ndumps);
		if (rd->ras_asked)
			json_object_set_new(json_object_get(doc, "read"), "ras",
			                    json_pack("{s:s, s:b, s:s, s:i, s:s}", "addr", rd->ras_addr, "answered",
			                              rd->ras_ok, "nccl_version", rd->ras_version, "communicators",
			                              (int)rd->ras_comms, "error", rd->ras_ok ? "" : rd->ras_err));
		if (nw_cli_json_write("hang", &a->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6)))
			rc = -1;
		json_decref(doc);
	} else if (rc != 0) {
		json_decref(arr);
		nw_error("%s", err);
	}
	for (size_t i = 0; i < done; i++)
		nw_prog_diag_release(&d[i]);
	free(d);
	return rc == 0 ? nhung : -1;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cmd_hang(int argc, char **argv)
{
	struct hang_args a = { 0 };
	struct hang_read rd = { 0 };
	struct nw_prog_set set = { 0 };
	int rc = 2, help = 0;
	if (parse(argc, argv, &a, &help) != 0) {
		rc = help ? 0 : 2;
		goto out;
	}
	if (gather(&a, &set, &rd) != 0)
		goto out;
	int nhung = report(&a, &set, &rd, realtime_ns());
	if (nhung >= 0)
		rc = nhung ? 1 : 0;
	if (nw_finish_stdout() != 0)
		rc = 2;
out:
	nw_prog_set_release(&set);
	free(a.dumps);
	return rc;
}
