/*
 * import: nccl-tests outputs (text of any version, or -J JSON) into the
 * result model, printed as CSV (default), JSON, or nccl-tests' own table.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/result.h"
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
	"  --json         the results document of 'ncclwatch bench --json'; an\n"
	"                 array of documents when more than one run was found\n"
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
};

/* nccl-tests' table for one run: out-of-place rows paired with their in-place twins. */
static void print_table(const struct nw_run *run)
{
	char line[512];
	int64_t wrong = 0;
	printf("# Collective test starting: %s_perf\n", run->nrows ? run->rows[0].op : "");
	printf("# nranks %d  host %s  gpus %s  nccl %s  input %s\n", run->h.nranks, run->h.host,
	       run->h.gpus, run->h.nccl_version, run->h.input);
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
	char err[NW_ERRLEN];
	long long id = 0;
	nw_fingerprint_collect(run);
	if (nw_store_record(&o->store, run, &id, err, sizeof(err)))
		return nw_error("not recorded in history: %s", err);
	if (id)
		fprintf(stderr, "recorded as run %lld\n", id);
	return 0;
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "table", no_argument, NULL, 't' },
		{ "op", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct import_opts o = { IMPORT_CSV, NULL, { NULL, 0 } };
	int c, rc = 0;
	/* history options (--db PATH, --no-history) are taken out before getopt */
	int kept = 1;
	for (int i = 1; i < argc; i++) {
		char err[NW_ERRLEN];
		int h = nw_store_parse_opt(argc, argv, &i, &o.store, err, sizeof(err));
		if (h < 0)
			return nw_error("%s", err), 2;
		if (!h)
			argv[kept++] = argv[i];
	}
	argc = kept;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o.format = IMPORT_CSV; break;
		case 'j': o.format = IMPORT_JSON; break;
		case 't': o.format = IMPORT_TABLE; break;
		case 'o': o.op = optarg; break;
		case 'h': fputs(usage_import, stdout); return 0;
		default:
			nw_error("unknown option '%s'; 'ncclwatch help import' lists them", argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		nw_error("no input file; give nccl-tests output files or '-' for standard input");
		return 2;
	}

	struct nw_run *all = NULL;
	size_t nall = 0;
	for (int a = optind; a < argc; a++) {
		struct nw_run *runs = NULL;
		size_t unparsed = 0;
		char err[NW_ERRLEN];
		int n = nw_nt_parse_path(argv[a], &runs, &unparsed, err, sizeof(err));
		if (n < 0) {
			nw_error("%s", err);
			rc = 2;
			continue;
		}
		if (unparsed)
			nw_warn("'%s': %zu line%s not understood (neither nccl-tests output nor NCCL log)",
			        argv[a], unparsed, unparsed == 1 ? "" : "s");
		if (n == 0) {
			nw_error("'%s' holds no nccl-tests result table; is it nccl-tests output?", argv[a]);
			if (rc == 0)
				rc = 1;
		}
		all = nw_realloc(all, (nall + (size_t)n) * sizeof(*all));
		for (int i = 0; i < n; i++) {
			if (import_run_complete(&runs[i], &o))
				rc = 2;
			all[nall++] = runs[i];
		}
		free(runs);
	}

	if (o.format == IMPORT_CSV && nall) {
		nw_csv_print_header(stdout, 0);
		for (size_t i = 0; i < nall; i++)
			for (size_t r = 0; r < all[i].nrows; r++)
				nw_csv_print_row(stdout, &all[i].rows[r], 0);
	} else if (o.format == IMPORT_JSON && nall == 1) {
		nw_run_write_json(&all[0], stdout, 0);
	} else if (o.format == IMPORT_JSON && nall > 1) {
		json_t *arr = json_array();
		for (size_t i = 0; i < nall; i++)
			json_array_append_new(arr, nw_run_to_json(&all[i], 0));
		json_dumpf(arr, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		fputc('\n', stdout);
		json_decref(arr);
	} else if (o.format == IMPORT_TABLE) {
		for (size_t i = 0; i < nall; i++)
			print_table(&all[i]);
	}
	for (size_t i = 0; i < nall; i++)
		nw_run_release(&all[i]);
	free(all);
	return rc;
}
