/* SPDX-License-Identifier: Apache-2.0 */
/*
 * import: nccl-tests outputs (text of any version, or -J JSON) into the
 * result model, printed as CSV (default), JSON, or nccl-tests' own table.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/result.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "parse/nccltests.h"
#include "store/store.h"
#include "util/termtext.h"
#include "util/util.h"

enum import_format { IMPORT_CSV, IMPORT_JSON, IMPORT_TABLE };

struct import_opts {
	enum import_format format; /* what goes to stdout */
	const char *op;
	struct nw_store_opts store;
	struct nw_opt_out json, csv; /* --json[=FILE], --csv[=FILE] */
	int table;
};

static const struct nw_opt import_options[] = {
	NW_OPT_CSV(struct import_opts, csv, "\n(one line per row, header once; the default on stdout)"),
	NW_OPT_JSON(struct import_opts, json, "\n(the results document of 'ncclwatch bench --json'; an\n"
	                                      "array of documents when more than one run was found)"),
	{ .kind = NW_OPTK_FLAG, .lname = "table", .off = NW_F_INT(struct import_opts, table),
	  .help = "re-print nccl-tests' table from the model (round-trip check)" },
	{ .kind = NW_OPTK_STRING, .lname = "op", .off = NW_F_STR(struct import_opts, op), .argh = "NAME",
	  .values = nw_cli_op_names, .help = "collective to record when the output does not say\n"
	                                     "(outputs older than \"# Collective test starting\")" },
	NW_OPTS_STORE(struct import_opts, store),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_import = {
	.name = "import",
	.synopsis = "[options] FILE...",
	.about = "Read nccl-tests outputs (any version's text table, several runs per file,\n"
	         "launcher prefixes such as \"[1,0]<stdout>:\", or the JSON file of -J) and\n"
	         "print them in ncclwatch's result model. FILE \"-\" reads standard input.\n",
	.opts = import_options,
	.footer = "On stdout: CSV (the default), or the JSON with a bare --json, or the table\n"
	          "with --table; --json=FILE and --csv=FILE write a file besides.\n"
	          "Lines that are neither nccl-tests output nor NCCL log lines are counted\n"
	          "and reported on stderr. Exit status: 0 when every file gave at least one\n"
	          "run, 1 when a file gave none, 2 on a usage or read error.\n",
	.args = NW_ARGS_FILES,
	.width = 17,
};

/* nccl-tests' table for one run: out-of-place rows paired with their in-place twins. */
static void print_table(const struct nw_run *run)
{
	char line[512];
	int64_t wrong = 0;
	printf("# Collective test starting: %s_perf\n", NW_TT(run->nrows ? run->rows[0].op : ""));
	char nranks[16] = "?"; /* unknown: the output does not say */
	if (run->h.nranks > 0)
		snprintf(nranks, sizeof(nranks), "%d", run->h.nranks);
	printf("# nranks %s  host %s  gpus %s  nccl %s  input %s\n", nranks, NW_TT(run->h.host), NW_TT(run->h.gpus),
	       NW_TT(run->h.nccl_version), NW_TT(run->h.input));
	if (nw_run_has_iters(run))
		nw_nt_print_table_header_iter(stdout);
	else
		nw_nt_print_table_header(stdout);
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *a = &run->rows[i], *b = NULL;
		if (!a->inplace && i + 1 < run->nrows) {
			const struct nw_row *n = &run->rows[i + 1];
			if (n->inplace && n->size_bytes == a->size_bytes && n->count == a->count &&
			    !strcmp(n->dtype, a->dtype) && !strcmp(n->redop, a->redop) && n->root == a->root) {
				b = n;
				i++;
			}
		}
		if (a->wrong > 0)
			wrong += a->wrong;
		if (b && b->wrong > 0)
			wrong += b->wrong;
		if (a->inplace)
			nw_nt_format_row(line, sizeof(line), NULL, a);
		else
			nw_nt_format_row(line, sizeof(line), a, b);
		printf("%s\n", line);
	}
	nw_nt_print_footer(stdout, wrong, nw_run_avg_busbw(run));
}

/*
 * The run's fingerprint from what the file said, and only that: the
 * header's host, GPUs, versions and counts (null when the file did not say),
 * and a -J file's command line, start time and environment. Never this
 * process's hostname, environment, command line or clock: the same file
 * imported anywhere, any time, gets the same fingerprint.
 */
static void fingerprint_from_file(struct nw_run *run)
{
	struct nw_run_header *h = &run->h;
	if (!json_is_object(h->extra)) {
		json_decref(h->extra);
		h->extra = json_object();
	}
	json_t *fp = json_object();
	nw_fingerprint_fill(fp, h);
	json_object_set_new(fp, "nranks", h->nranks > 0 ? json_integer(h->nranks) : json_null());
	json_object_set_new(fp, "nhosts", h->nhosts > 0 ? json_integer(h->nhosts) : json_null());
	json_object_set_new(fp, "cmdline", json_string(h->cmdline));
	json_object_set_new(fp, "time", json_string(h->time));
	const json_t *env = json_object_get(h->extra, "env");
	json_object_set_new(fp, "env", json_is_object(env) ? json_deep_copy(env) : json_object());
	json_object_set_new(h->extra, "fingerprint", fp);
}

/*
 * A parsed run is complete here, once per run, in file order: its header
 * (source "import", backend "nccl-tests", input, host, gpus, nccl_version)
 * and rows are final. Recording into history belongs in this function.
 */
static int import_run_complete(struct nw_run *run, const struct import_opts *o)
{
	if (o->op)
		for (size_t i = 0; i < run->nrows; i++)
			if (!strcmp(run->rows[i].op, "unknown"))
				nw_strlcpy(run->rows[i].op, o->op, sizeof(run->rows[i].op));
	const json_t *why = json_object_get(run->h.extra, "incomplete_reason");
	if (why)
		nw_warn("'%s': incomplete run imported (%s); it is marked incomplete", NW_TT(run->h.input),
		        json_string_value(why));
	char err[NW_ERRLEN];
	long long id = 0;
	fingerprint_from_file(run);
	if (nw_store_record(&o->store, run, &id, err, sizeof(err)))
		return nw_error("not recorded in history: %s", err);
	if (id)
		nw_cli_say_recorded("import", id);
	return 0;
}

/*
 * What goes to stdout: a bare --csv, a bare --json or --table, one of them
 * (CSV when none). 0, or -1 after saying which exclude each other.
 */
static int stdout_format(struct import_opts *o, const struct nw_opt_res *res)
{
	const char *given = NULL;
	o->format = IMPORT_CSV;
	struct {
		int on;
		const char *name;
		enum import_format f;
	} f[] = {
		{ o->csv.on && !o->csv.path, "--csv", IMPORT_CSV },
		{ o->json.on && !o->json.path, "--json", IMPORT_JSON },
		{ o->table, "--table", IMPORT_TABLE },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(f); i++) {
		if (!f[i].on)
			continue;
		if (given)
			return nw_opt_error(res->spec, "%s and %s both ask for standard output: give one (or write a file "
			                    "with --json=FILE, --csv=FILE)", given, f[i].name);
		given = f[i].name;
		o->format = f[i].f;
	}
	if (!res->nargs)
		return nw_opt_error(res->spec, "no input file; give nccl-tests output files or '-' for standard input");
	return 0;
}

/*
 * Parse one file, complete and record each run in it, and append them to
 * *all (grown; the caller releases them). Returns the exit status so far:
 * rc, 1 when the file holds no run, 2 on a read or record error.
 */
static int import_file(const char *path, const struct import_opts *o, struct nw_run **all, size_t *nall, int rc)
{
	struct nw_run *runs = NULL;
	size_t unparsed = 0;
	char err[NW_ERRLEN];
	struct nw_nt_seen seen;
	int n = nw_nt_parse_path_seen(path, &runs, &unparsed, &seen, err, sizeof(err));
	if (n < 0) {
		nw_error("%s", NW_TT_MSG(err));
		return 2;
	}
	if (unparsed)
		nw_warn("'%s': %zu line%s not understood (neither nccl-tests output nor NCCL log)", NW_TT(path), unparsed,
		        unparsed == 1 ? "" : "s");
	if (n == 0 && seen.nranks > 0) {
		nw_error("'%s' holds nccl-tests' header (%d rank%s on %d host%s: %s) but no result table: the output was cut "
		         "before its first row; import the whole output", NW_TT(path), seen.nranks, seen.nranks == 1 ? "" : "s",
		         seen.nhosts, seen.nhosts == 1 ? "" : "s", NW_TT(seen.hosts));
		if (rc == 0)
			rc = 1;
	} else if (n == 0) {
		nw_error("'%s' holds no nccl-tests result table; is it nccl-tests output?", NW_TT(path));
		if (rc == 0)
			rc = 1;
	}
	*all = nw_realloc(*all, (*nall + (size_t)n) * sizeof(**all));
	for (int i = 0; i < n; i++) {
		if (import_run_complete(&runs[i], o))
			rc = 2;
		(*all)[(*nall)++] = runs[i];
	}
	free(runs);
	return rc;
}

/* The results document of every run found: one run's, or an array of them. The caller frees it. */
static json_t *runs_json(const struct nw_run *all, size_t nall)
{
	if (nall == 1)
		return nw_run_to_json(&all[0], 0);
	json_t *arr = json_array();
	for (size_t i = 0; i < nall; i++)
		json_array_append_new(arr, nw_run_to_json(&all[i], 0));
	return arr;
}

/* Every row of every run as CSV into f, the header once. */
static void print_csv(FILE *f, const struct nw_run *all, size_t nall)
{
	nw_csv_print_header(f, 0);
	for (size_t i = 0; i < nall; i++)
		for (size_t r = 0; r < all[i].nrows; r++)
			nw_csv_print_row(f, &all[i].rows[r], 0);
}

/* --csv=FILE: the CSV into FILE, replaced whole. 0, or -1 after printing why. */
static int write_csv(const struct nw_opt_out *csv, const struct nw_run *all, size_t nall)
{
	FILE *f = nw_cli_out_open("import", "--csv", csv);
	if (!f)
		return -1;
	print_csv(f, all, nall);
	return nw_cli_out_close("import", "--csv", csv, f);
}

/* Every run found, in the format asked for on stdout, and into the files given. 0, or -1 after printing why. */
static int print_runs(const struct nw_run *all, size_t nall, const struct import_opts *o)
{
	int rc = 0;
	if ((o->format == IMPORT_JSON || o->json.path) && nall) {
		json_t *doc = runs_json(all, nall);
		rc = nw_cli_json_write("import", &o->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		json_decref(doc);
	}
	if (o->csv.path && nall && write_csv(&o->csv, all, nall))
		rc = -1;
	if (o->format == IMPORT_CSV && nall) {
		print_csv(stdout, all, nall);
	} else if (o->format == IMPORT_TABLE) {
		for (size_t i = 0; i < nall; i++)
			print_table(&all[i]);
	}
	return rc;
}

int cmd_import(int argc, char **argv)
{
	struct import_opts o = { 0 };
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_import, &o, argc, argv, &res);
	if (st == NW_OPT_OK && stdout_format(&o, &res))
		st = NW_OPT_BAD;
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_import, st);
	struct nw_run *all = NULL;
	size_t nall = 0;
	int rc = 0;
	for (int a = 0; a < res.nargs; a++)
		rc = import_file(res.args[a], &o, &all, &nall, rc);
	if (print_runs(all, nall, &o))
		rc = 2;
	for (size_t i = 0; i < nall; i++)
		nw_run_release(&all[i]);
	free(all);
	return rc;
}
