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
#include "util/util.h"

const char usage_import[] =
	"usage: ncclwatch import [options] FILE...\n"
	"\n"
	"Read nccl-tests outputs (any version's text table, several runs per file,\n"
	"launcher prefixes such as \"[1,0]<stdout>:\", or the JSON file of -J) and\n"
	"print them in ncclwatch's result model. FILE \"-\" reads standard input.\n"
	"\n"
	"options:\n"
	"  --csv          one CSV line per row, header once (default)\n"
	"  --json[=FILE]  " NW_CLI_JSON_HELP
	"                 (the results document of 'ncclwatch bench --json'; an\n"
	"                 array of documents when more than one run was found; a\n"
	"                 file only as --json=FILE here: the inputs may be .json)\n"
	"  --table        re-print nccl-tests' table from the model (round-trip check)\n"
	"  --op NAME      collective to record when the output does not say\n"
	"                 (outputs older than \"# Collective test starting\")\n"
	NW_STORE_USAGE
	"  -h, --help     this text\n"
	"\n"
	"Lines that are neither nccl-tests output nor NCCL log lines are counted\n"
	"and reported on stderr. Exit status: 0 when every file gave at least one\n"
	"run, 1 when a file gave none, 2 on a usage or read error.\n";

enum import_format { IMPORT_CSV, IMPORT_JSON, IMPORT_TABLE };

struct import_opts {
	enum import_format format;
	const char *op;
	struct nw_store_opts store;
	struct nw_cli_json json; /* --json=FILE: the JSON there too, the text format on stdout */
};

/* nccl-tests' table for one run: out-of-place rows paired with their in-place twins. */
static void print_table(const struct nw_run *run)
{
	char line[512];
	int64_t wrong = 0;
	printf("# Collective test starting: %s_perf\n", run->nrows ? run->rows[0].op : "");
	char nranks[16] = "?"; /* unknown: the output does not say */
	if (run->h.nranks > 0)
		snprintf(nranks, sizeof(nranks), "%d", run->h.nranks);
	printf("# nranks %s  host %s  gpus %s  nccl %s  input %s\n", nranks, run->h.host, run->h.gpus,
	       run->h.nccl_version, run->h.input);
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
		nw_warn("'%s': incomplete run imported (%s); it is marked incomplete", run->h.input,
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

/* Options anywhere, files as operands; 0, 1 after --help, or -1 after printing an error. */
static int parse(int argc, char **argv, struct import_opts *o)
{
	enum { O_CSV = NW_OPT_LOCAL, O_TABLE, O_OP, O_JSON = NW_OPT_JSON_EQ };
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, O_CSV },
		NW_CLI_JSON_EQ_LONGOPT,
		{ "table", no_argument, NULL, O_TABLE },
		{ "op", required_argument, NULL, O_OP },
		{ "help", no_argument, NULL, 'h' },
		NW_CLI_STORE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c;
	const char *fmt_name = NULL; /* the output format option given */
	while ((c = nw_cli_next("import", argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case -2: return -1;
		case O_JSON:
			/* --json=FILE keeps the text format; --json alone is the output format */
			nw_cli_json_opt(c, optarg, &o->json);
			if (o->json.path)
				break;
			/* fall through */
		case O_CSV: case O_TABLE: {
			int f = c == O_CSV ? IMPORT_CSV : c == O_JSON ? IMPORT_JSON : IMPORT_TABLE;
			if (fmt_name && (int)o->format != f)
				return nw_error("%s and %s exclude each other: give one output format",
				                fmt_name, nw_cli_opt_name(c, argv));
			o->format = f;
			fmt_name = c == O_CSV ? "--csv" : c == O_JSON ? "--json" : "--table";
			break;
		}
		case O_OP: o->op = optarg; break;
		case 'h': fputs(usage_import, stdout); return 1;
		default:
			if (nw_cli_store_opt(c, optarg, &o->store) < 0)
				return -1;
			break;
		}
	}
	if (optind >= argc)
		return nw_error("no input file; give nccl-tests output files or '-' for standard input");
	return nw_cli_check_output("import", "--json", o->json.path) ? -1 : 0;
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
		nw_error("%s", err);
		return 2;
	}
	if (unparsed)
		nw_warn("'%s': %zu line%s not understood (neither nccl-tests output nor NCCL log)", path, unparsed,
		        unparsed == 1 ? "" : "s");
	if (n == 0 && seen.nranks > 0) {
		nw_error("'%s' holds nccl-tests' header (%d rank%s on %d host%s: %s) but no result table: the output was cut "
		         "before its first row; import the whole output", path, seen.nranks, seen.nranks == 1 ? "" : "s",
		         seen.nhosts, seen.nhosts == 1 ? "" : "s", seen.hosts);
		if (rc == 0)
			rc = 1;
	} else if (n == 0) {
		nw_error("'%s' holds no nccl-tests result table; is it nccl-tests output?", path);
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

/* Every run found, in the format asked for; with --json=FILE the JSON into it too. 0, or -1 after printing why. */
static int print_runs(const struct nw_run *all, size_t nall, enum import_format format, const struct nw_cli_json *j)
{
	int rc = 0;
	if ((format == IMPORT_JSON || j->path) && nall) {
		json_t *doc = runs_json(all, nall);
		rc = nw_cli_json_write("import", j, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		json_decref(doc);
	}
	if (format == IMPORT_CSV && nall) {
		nw_csv_print_header(stdout, 0);
		for (size_t i = 0; i < nall; i++)
			for (size_t r = 0; r < all[i].nrows; r++)
				nw_csv_print_row(stdout, &all[i].rows[r], 0);
	} else if (format == IMPORT_TABLE) {
		for (size_t i = 0; i < nall; i++)
			print_table(&all[i]);
	}
	return rc;
}

int cmd_import(int argc, char **argv)
{
	struct import_opts o = { IMPORT_CSV, NULL, { NULL, 0 }, { 0, NULL } };
	int pr = parse(argc, argv, &o);
	if (pr)
		return pr > 0 ? 0 : 2;
	struct nw_run *all = NULL;
	size_t nall = 0;
	int rc = 0;
	for (int a = optind; a < argc; a++)
		rc = import_file(argv[a], &o, &all, &nall, rc);
	if (print_runs(all, nall, o.format, &o.json))
		rc = 2;
	for (size_t i = 0; i < nall; i++)
		nw_run_release(&all[i]);
	free(all);
	return rc;
}
