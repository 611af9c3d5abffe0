/* SPDX-License-Identifier: Apache-2.0 */
/* ncclwatch history: list, show, export, delete and name recorded runs. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/result.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "store/compare.h"
#include "store/store.h"
#include "util/termtext.h"
#include "util/util.h"

struct hopts {
	struct nw_store_opts so;
	struct nw_store_filter f;
	struct nw_opt_out json, csv;
	FILE *csv_out; /* where CSV goes: stdout or --csv=FILE */
	int del, env;
	const char *args[3];
	int nargs;
};

static const struct nw_subcmd history_subcmds[] = {
	{ "list", NW_ARGS_NONE },     { "show", NW_ARGS_WORDS },   { "export", NW_ARGS_WORDS },
	{ "delete", NW_ARGS_WORDS },  { "baseline", NW_ARGS_WORDS }, { "sync", NW_ARGS_NONE },
	{ "merge", NW_ARGS_FILES },   { NULL, 0 },
};

static const struct nw_opt history_options[] = {
	{ .kind = NW_OPTK_STRING, .lname = "host", .off = NW_F_STR(struct hopts, f.host), .argh = "H",
	  .help = "only runs recorded on host H" },
	{ .kind = NW_OPTK_STRING, .lname = "op", .off = NW_F_STR(struct hopts, f.op), .argh = "OP",
	  .values = nw_cli_op_names, .help = "only runs with results for OP (all_reduce, ...)" },
	{ .kind = NW_OPTK_STRING, .lname = "since", .off = NW_F_STR(struct hopts, f.since), .argh = "DATE",
	  .help = "only runs at or after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)" },
	{ .kind = NW_OPTK_STRING, .lname = "until", .off = NW_F_STR(struct hopts, f.until), .argh = "DATE",
	  .help = "only runs at or before DATE (a bare date includes that day)" },
	{ .kind = NW_OPTK_LONG, .lname = "limit", .off = NW_F_LONG(struct hopts, f.limit), .argh = "N", .min = 1,
	  .max = LONG_MAX, .help = "only the latest N runs (listed oldest first)" },
	{ .kind = NW_OPTK_FLAG, .lname = "env", .off = NW_F_INT(struct hopts, env),
	  .help = "show: every recorded environment variable, not only NCCL_*" },
	{ .kind = NW_OPTK_FLAG, .lname = "delete", .off = NW_F_INT(struct hopts, del),
	  .help = "baseline --delete NAME: remove the name" },
	NW_OPT_JSON(struct hopts, json, ""),
	NW_OPT_CSV(struct hopts, csv, ""),
	NW_OPTS_STORE_READ(struct hopts, so),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_history = {
	.name = "history",
	.synopsis = "[list] [--host H] [--op OP] [--since DATE] [--until DATE] [--limit N] [--json[=FILE]]\n"
	            "show ID [--env] [--json[=FILE] | --csv[=FILE]]\n"
	            "export ID|all [--json[=FILE] | --csv[=FILE]] [list filters]\n"
	            "delete ID\n"
	            "baseline [NAME ID | --delete NAME]\n"
	            "sync\n"
	            "merge FILE.db",
	.about = "Every bench, check, import and tune run is recorded (unless --no-history)\n"
	         "with its results and a fingerprint of what it ran on. This command reads\n"
	         "and manages that record.\n"
	         "\n"
	         "  list       one line per run: id, time (UTC), host, source, ops, NCCL\n"
	         "             version, peak busbw, baseline names, and a note for an\n"
	         "             incomplete or interrupted run (the default)\n"
	         "  show ID    a run's header, fingerprint (NCCL_* variables; --env for\n"
	         "             every recorded one) and results table\n"
	         "  export     a run (ID) or every run matching the filters (all), as\n"
	         "             ncclwatch results JSON (default) or CSV\n"
	         "  delete ID  remove a run (and baselines naming it)\n"
	         "  baseline NAME ID\n"
	         "             name run ID, e.g. 'before-update'; compare and report accept\n"
	         "             the name wherever they take a run; setting a name again moves it\n"
	         "  baseline   list the names; --delete NAME removes one\n"
	         "  sync       send the runs kept in the local spool while the PostgreSQL\n"
	         "             server of --db could not be reached or did not answer, or\n"
	         "             that a signal cut off (the next run recorded there sends\n"
	         "             them too; what a killed sync left is taken back)\n"
	         "  merge FILE.db\n"
	         "             copy the runs of another node's history file into this\n"
	         "             database; a run already here (same content key: host,\n"
	         "             time, source, rows, fingerprint, recording) is not copied\n"
	         "             again; FILE is only read, never changed\n",
	.opts = history_options,
	.args = NW_ARGS_WORDS,
	.subcmds = history_subcmds,
	.width = 18,
};

/* The operands (the sub-command and its arguments) into o->args; 0, or -1 after printing. */
static int take_operands(struct hopts *o, const struct nw_opt_res *res)
{
	for (int i = 0; i < res->nargs; i++) {
		if (o->nargs == 3)
			return nw_error("too many arguments ('%s'); 'ncclwatch help history' shows the forms", NW_TT(res->args[i]));
		o->args[o->nargs++] = res->args[i];
	}
	if (o->json.on && o->csv.on)
		return nw_error("give --json or --csv, not both");
	return 0;
}

/* Whether the text goes to stdout: neither a bare --json nor a bare --csv takes it. */
static int text_out(const struct hopts *o)
{
	return nw_cli_json_text(&o->json) && !(o->csv.on && !o->csv.path);
}

static int parse_id(const char *s, long long *id)
{
	char err[NW_ERRLEN];
	long v;
	if (!s)
		return nw_error("give a run id; 'ncclwatch history' lists the runs");
	if (nw_parse_long(s, 1, LONG_MAX, &v, "run id", err, sizeof(err)))
		return nw_error("bad run id '%s': 'ncclwatch history' lists the runs", NW_TT(s));
	*id = v;
	return 0;
}

static int open_db(const struct hopts *o, enum nw_store_mode mode, struct nw_store **s)
{
	char path[PATH_MAX], err[NW_ERRLEN];
	if (nw_store_path(&o->so, path, sizeof(path), err, sizeof(err)) ||
	    nw_store_open(path, mode, s, err, sizeof(err)))
		return nw_error("%s", NW_TT_MSG(err));
	return 0;
}

/* One listing line's text columns as a terminal shows them (what the database holds may be anything). */
struct list_cells {
	char time[NW_TT_BUF], host[NW_TT_BUF], source[NW_TT_BUF], ops[NW_TT_BUF], nccl[NW_TT_BUF], base[NW_TT_BUF];
};

/* Text width of cell k (0 time, 1 host, 2 source, 3 ops, 4 NCCL, 5 baselines) of c. */
static int cell_width(const struct list_cells *c, int k)
{
	const char *cells[] = { c->time, c->host, c->source, c->ops, c->nccl, c->base };
	return (int)nw_tt_width(cells[k]);
}

/* printf's width for text of w characters padded to want (multi-byte characters take one column each). */
static int pad(const char *text, int want)
{
	return want + (int)strlen(text) - (int)nw_tt_width(text);
}

/* What the list says of a run besides its columns: incomplete, interrupted. */
static const char *list_note(const struct nw_store_entry *e)
{
	return e->incomplete && e->interrupted ? "incomplete, interrupted" : e->incomplete ? "incomplete"
	       : e->interrupted ? "interrupted" : "";
}

/* The list as a table whose columns fit the widest host and op list; a last column notes incomplete runs. */
static void print_list(const struct nw_store_entry *e, size_t n)
{
	struct list_cells *c = nw_calloc(n ? n : 1, sizeof(*c));
	int w[6] = { 20, 4, 7, 3, 4, 8 };
	for (size_t i = 0; i < n; i++) {
		nw_tt(e[i].time, c[i].time);
		nw_tt(e[i].host, c[i].host);
		nw_tt(e[i].source, c[i].source);
		nw_tt(e[i].ops, c[i].ops);
		nw_tt(e[i].nccl_version[0] ? e[i].nccl_version : "-", c[i].nccl);
		nw_tt(e[i].baselines, c[i].base);
		for (int k = 0; k < 6; k++)
			if (cell_width(&c[i], k) > w[k])
				w[k] = cell_width(&c[i], k);
	}
	printf("%6s  %-*s  %-*s  %-*s  %-*s  %-*s  %14s  %-*s  %s\n", "id", w[0], "time (UTC)", w[1], "host", w[2],
	       "source", w[3], "ops", w[4], "NCCL", "peak busbw", w[5], "baseline", "note");
	for (size_t i = 0; i < n; i++) {
		char peak[32];
		snprintf(peak, sizeof(peak), "%.2f GB/s", e[i].peak_busbw);
		const char *note = list_note(&e[i]);
		printf("%6lld  %-*s  %-*s  %-*s  %-*s  %-*s  %14s  %-*s%s%s\n", e[i].id, pad(c[i].time, w[0]), c[i].time,
		       pad(c[i].host, w[1]), c[i].host, pad(c[i].source, w[2]), c[i].source, pad(c[i].ops, w[3]), c[i].ops,
		       pad(c[i].nccl, w[4]), c[i].nccl, peak, *note ? pad(c[i].base, w[5]) : 0, c[i].base, *note ? "  " : "",
		       note);
	}
	free(c);
}

static int do_list(struct nw_store *s, const struct hopts *o)
{
	struct nw_store_entry *e;
	size_t n;
	char err[NW_ERRLEN];
	if (nw_store_list(s, &o->f, &e, &n, err, sizeof(err)))
		return nw_error("%s", err);
	int rc = 0;
	if (o->json.on) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:f,s:i,s:s,s:b,s:b}", "id",
			                                   (json_int_t)e[i].id, "time", e[i].time, "host", e[i].host,
			                                   "source", e[i].source, "ops", e[i].ops, "nccl_version",
			                                   e[i].nccl_version, "peak_busbw_gbs", e[i].peak_busbw, "rows",
			                                   e[i].nrows, "baselines", e[i].baselines, "incomplete",
			                                   e[i].incomplete, "interrupted", e[i].interrupted));
		rc = nw_cli_json_write("history", &o->json, a, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
		json_decref(a);
	}
	int text = text_out(o);
	if (o->csv.on) {
		fprintf(o->csv_out, "id,time,host,source,ops,nccl_version,peak_busbw_gbs,rows,baselines,note\n");
		for (size_t i = 0; i < n; i++)
			fprintf(o->csv_out, "%lld,%s,%s,%s,\"%s\",%s,%.2f,%d,\"%s\",\"%s\"\n", e[i].id, e[i].time, e[i].host,
			        e[i].source, e[i].ops, e[i].nccl_version, e[i].peak_busbw, e[i].nrows, e[i].baselines,
			        list_note(&e[i]));
	}
	if (text && !n) {
		fprintf(stderr, "no runs recorded%s\n", o->f.host || o->f.op || o->f.since || o->f.until ? " match the filters" : " yet");
	} else if (text) {
		print_list(e, n);
	}
	free(e);
	return rc;
}

static int same_row_key(const struct nw_row *a, const struct nw_row *b)
{
	return a->size_bytes == b->size_bytes && a->root == b->root && !strcmp(a->op, b->op) &&
	       !strcmp(a->dtype, b->dtype) && !strcmp(a->redop, b->redop);
}

/* nccl-tests' table: each out-of-place row with its in-place twin, per op. */
static void print_table(const struct nw_run *run)
{
	char *used = nw_calloc(run->nrows + 1, 1);
	const char *op = NULL;
	for (size_t i = 0; i < run->nrows; i++) {
		if (used[i])
			continue;
		const struct nw_row *r = &run->rows[i], *oop = NULL, *ip = NULL;
		used[i] = 1;
		if (r->inplace)
			ip = r;
		else
			oop = r;
		for (size_t j = i + 1; j < run->nrows && !ip; j++)
			if (!used[j] && run->rows[j].inplace && same_row_key(r, &run->rows[j])) {
				ip = &run->rows[j];
				used[j] = 1;
			}
		if (!op || strcmp(op, r->op)) {
			op = r->op;
			printf("#\n# %s\n", NW_TT(op));
			if (nw_run_has_iters(run))
				nw_nt_print_table_header_iter(stdout);
			else
				nw_nt_print_table_header(stdout);
		}
		char line[512];
		nw_nt_format_row(line, sizeof(line), oop, ip);
		printf("%s\n", line);
	}
	free(used);
}

/* One "key value" line of show; the value may come from anywhere, so it is made safe for a terminal. */
static void print_kv(const char *k, const char *v)
{
	if (v && *v)
		printf("%-14s %s\n", k, NW_TT(v));
}

/* The recorded variables: NCCL_* (or all of them with all), and a count of the rest. */
static void print_env(const json_t *env, int all)
{
	if (!json_is_object(env) || !json_object_size(env))
		return;
	printf("environment:\n");
	const char *k;
	const json_t *v;
	size_t rest = 0;
	json_object_foreach((json_t *)env, k, v) {
		if (all || !strncmp(k, "NCCL_", 5))
			printf("  %s=%s\n", NW_TT(k), NW_TT(json_is_string(v) ? json_string_value(v) : ""));
		else
			rest++;
	}
	if (rest)
		printf("  and %zu more (launcher, paths, CUDA_*: --env)\n", rest);
}

/* A run's header and fingerprint as "key value" lines, then its environment. */
static void print_header(long long id, const struct nw_run *run, int all_env)
{
	const struct nw_run_header *h = &run->h;
	char num[64];
	printf("run %lld\n", id);
	print_kv("time", h->time);
	print_kv("host", h->host);
	print_kv("source", h->source);
	print_kv("backend", h->backend);
	print_kv("NCCL", h->nccl_version);
	print_kv("NCCL library", h->nccl_path);
	print_kv("driver", h->driver);
	print_kv("CUDA driver", h->cuda_driver);
	print_kv("GPUs", h->gpus);
	snprintf(num, sizeof(num), "%d", h->nranks);
	print_kv("ranks", h->nranks > 0 ? num : "unknown");
	snprintf(num, sizeof(num), "%d", h->nhosts);
	print_kv("hosts", h->nhosts ? num : "");
	snprintf(num, sizeof(num), "%.1f GB/s", h->link_gbs);
	print_kv("link", h->link_gbs > 0 ? num : "");
	print_kv("command", h->cmdline);
	print_kv("input", h->input);
	print_kv("ncclwatch", h->tool_version);
	if (nw_run_interrupted(run))
		print_kv("interrupted", "yes: stopped by a signal (Ctrl-C); it holds only the sizes measured before");
	if (nw_run_incomplete(run)) {
		char why[600];
		snprintf(why, sizeof(why), "yes: %s", nw_run_incomplete(run));
		print_kv("incomplete", why);
	}
	json_t *fp = nw_fingerprint_of(run);
	const json_t *topo = json_object_get(fp, "topology");
	if (json_is_string(topo))
		print_kv("topology", json_string_value(topo));
	print_env(json_object_get(fp, "env"), all_env);
	json_decref(fp);
}

static int do_show(struct nw_store *s, const struct hopts *o)
{
	long long id;
	if (parse_id(o->args[1], &id))
		return -1;
	struct nw_run run;
	char err[NW_ERRLEN];
	if (nw_store_load(s, id, &run, err, sizeof(err)))
		return nw_error("%s", err);
	int rc = 0;
	if (o->csv.on)
		nw_run_write_csv(&run, o->csv_out, 0);
	if (text_out(o)) {
		print_header(id, &run, o->env);
		print_table(&run);
	}
	if (o->json.on) {
		json_t *doc = nw_run_to_json(&run, 1);
		rc = nw_cli_json_write("history", &o->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		json_decref(doc);
	}
	nw_run_release(&run);
	return rc;
}

/* export all: every run the filters select, as one history JSON document or one CSV table. */
static int export_all(struct nw_store *s, const struct hopts *o)
{
	char err[NW_ERRLEN];
	struct nw_store_entry *e;
	size_t n;
	if (nw_store_list(s, &o->f, &e, &n, err, sizeof(err)))
		return nw_error("%s", err);
	json_t *runs = json_array();
	if (o->csv.on) {
		fputs("run_id,", o->csv_out);
		nw_csv_print_header(o->csv_out, 0);
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct nw_run run;
		if (nw_store_load(s, e[i].id, &run, err, sizeof(err))) {
			rc = nw_error("%s", err);
			break;
		}
		if (o->csv.on) {
			for (size_t k = 0; k < run.nrows; k++) {
				fprintf(o->csv_out, "%lld,", e[i].id);
				nw_csv_print_row(o->csv_out, &run.rows[k], 0);
			}
		} else {
			json_t *doc = nw_run_to_json(&run, 1);
			json_object_set_new(json_object_get(doc, "run"), "id", json_integer(e[i].id));
			json_array_append_new(runs, doc);
		}
		nw_run_release(&run);
	}
	if (!o->csv.on && !rc) {
		json_t *doc = json_pack("{s:s,s:o}", "schema", "ncclwatch.history/1", "runs", runs);
		runs = NULL;
		rc = nw_cli_json_write("history", &o->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		json_decref(doc);
	}
	if (runs)
		json_decref(runs);
	free(e);
	return rc;
}

/* export ID (one run, per-rank detail included) or export all. */
static int do_export(struct nw_store *s, const struct hopts *o)
{
	char err[NW_ERRLEN];
	if (!o->args[1])
		return nw_error("export needs a run id or 'all'");
	if (!strcmp(o->args[1], "all"))
		return export_all(s, o);
	long long id;
	if (parse_id(o->args[1], &id))
		return -1;
	struct nw_run run;
	if (nw_store_load(s, id, &run, err, sizeof(err)))
		return nw_error("%s", err);
	int rc = 0;
	if (o->csv.on) {
		nw_run_write_csv(&run, o->csv_out, 1);
	} else {
		json_t *doc = nw_run_to_json(&run, 1);
		rc = nw_cli_json_write("history", &o->json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
		json_decref(doc);
	}
	nw_run_release(&run);
	return rc;
}

static int do_baseline(struct nw_store *s, const struct hopts *o)
{
	char err[NW_ERRLEN];
	if (o->del) {
		if (o->nargs != 2)
			return nw_error("usage: ncclwatch history baseline --delete NAME");
		if (nw_store_baseline_delete(s, o->args[1], err, sizeof(err)))
			return nw_error("%s", err);
		fprintf(stderr, "baseline '%s' deleted\n", NW_TT(o->args[1]));
		return 0;
	}
	if (o->nargs == 3) {
		long long id;
		if (parse_id(o->args[2], &id))
			return -1;
		if (nw_store_baseline_set(s, o->args[1], id, err, sizeof(err)))
			return nw_error("%s", err);
		fprintf(stderr, "baseline '%s' is run %lld\n", NW_TT(o->args[1]), id);
		return 0;
	}
	if (o->nargs != 1)
		return nw_error("usage: ncclwatch history baseline NAME ID (or no argument to list them)");
	struct nw_store_baseline *b;
	size_t n;
	if (nw_store_baseline_list(s, &b, &n, err, sizeof(err)))
		return nw_error("%s", err);
	int rc = 0;
	if (o->json.on) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_pack("{s:s,s:I,s:s}", "name", b[i].name, "run_id",
			                                   (json_int_t)b[i].run_id, "set", b[i].set_time));
		rc = nw_cli_json_write("history", &o->json, a, JSON_INDENT(1));
		json_decref(a);
	}
	if (!nw_cli_json_text(&o->json)) {
		/* the JSON said it */
	} else if (!n) {
		fprintf(stderr, "no baselines; name one with: ncclwatch history baseline NAME ID\n");
	} else {
		printf("%-24s %8s  %s\n", "name", "run", "set (UTC)");
		for (size_t i = 0; i < n; i++)
			printf("%-24s %8lld  %s\n", NW_TT(b[i].name), b[i].run_id, NW_TT(b[i].set_time));
	}
	free(b);
	return rc;
}

static int do_delete(struct nw_store *s, const struct hopts *o)
{
	long long id;
	char err[NW_ERRLEN];
	if (parse_id(o->args[1], &id))
		return -1;
	if (nw_store_delete(s, id, err, sizeof(err)))
		return nw_error("%s", err);
	fprintf(stderr, "run %lld deleted\n", id);
	return 0;
}

/* history sync: the spooled runs into the database; exit 1 when some are left. */
static int do_sync(const struct hopts *o)
{
	char err[NW_ERRLEN];
	struct nw_spool_counts c;
	int rc = nw_store_sync(&o->so, &c, err, sizeof(err));
	fprintf(stderr, "%zu spooled run%s sent", c.sent, c.sent == 1 ? "" : "s");
	if (c.dup)
		fprintf(stderr, ", %zu found stored already", c.dup);
	if (c.left)
		fprintf(stderr, ", %zu left in the spool", c.left);
	fprintf(stderr, "\n");
	if (c.reclaimed)
		nw_warn("%zu of them had been claimed by a sync that was killed before it finished; they were taken back",
		        c.reclaimed);
	if (rc)
		return nw_error("%s", err), c.left ? 1 : 2;
	return 0;
}

/* Is path the file this database is in (so merging it would read what it writes)? */
static int same_file(const struct hopts *o, const char *path)
{
	char mine[PATH_MAX], err[NW_ERRLEN];
	struct stat a, b;
	return !nw_store_path(&o->so, mine, sizeof(mine), err, sizeof(err)) && stat(mine, &a) == 0 &&
	       stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* history merge FILE: the runs of another history file that this one lacks. */
static int do_merge(struct nw_store *s, const struct hopts *o)
{
	const char *path = o->args[1];
	char err[NW_ERRLEN];
	if (same_file(o, path))
		return nw_error("'%s' is the current history database; give another node's file", NW_TT(path));
	struct nw_store *src;
	if (nw_store_open(path, NW_STORE_READ, &src, err, sizeof(err)))
		return nw_error("%s", NW_TT_MSG(err));
	size_t added, skipped;
	int rc = nw_store_merge(s, src, &added, &skipped, err, sizeof(err));
	nw_store_close(src);
	if (rc)
		return nw_error("merging '%s': %s (%zu runs were copied before this)", NW_TT(path), NW_TT_MSG(err), added);
	printf("merged %zu run%s from '%s' (%zu already here)\n", added, added == 1 ? "" : "s", NW_TT(path), skipped);
	return 0;
}

/* The sub-commands: name, what runs it, how many operands at most (the name included). */
static const struct history_sub {
	const char *name;
	int (*fn)(struct nw_store *, const struct hopts *);
	int max_args;
} subs[] = {
	{ "list", do_list, 1 },
	{ "show", do_show, 2 },
	{ "export", do_export, 2 },
	{ "delete", do_delete, 2 },
	{ "baseline", do_baseline, 3 },
	{ "sync", NULL, 1 }, /* opens the database itself (do_sync) */
	{ "merge", do_merge, 2 },
};

/* Whether the operands fit the sub-command's form, before the database is opened. */
static int check_form(const char *sub, int max_args, const struct hopts *o)
{
	long long id;
	if (o->nargs > max_args)
		return nw_error("too many arguments for 'history %s'; 'ncclwatch help history' shows the forms", NW_TT(sub));
	if (o->del && strcmp(sub, "baseline"))
		return nw_error("--delete belongs to 'history baseline --delete NAME'; to delete a run: history delete ID");
	if (!strcmp(sub, "delete") && parse_id(o->args[1], &id))
		return -1;
	if (!strcmp(sub, "merge") && (o->nargs < 2 || !o->args[1][0]))
		return nw_error("'history merge' needs a history file: ncclwatch history merge FILE.db");
	if ((!strcmp(sub, "show") || !strcmp(sub, "export")) && o->nargs < 2)
		return nw_error("'history %s' needs a run id%s", NW_TT(sub), strcmp(sub, "export") ? "" : " or 'all'");
	return 0;
}

int cmd_history(int argc, char **argv)
{
	struct hopts o;
	memset(&o, 0, sizeof(o));
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_history, &o, argc, argv, &res);
	if (st == NW_OPT_OK && take_operands(&o, &res))
		st = NW_OPT_BAD;
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_history, st);
	const char *sub = o.nargs ? o.args[0] : "list";
	const struct history_sub *sc = NULL;
	for (size_t i = 0; i < NW_ARRAY_LEN(subs); i++)
		if (!strcmp(sub, subs[i].name))
			sc = &subs[i];
	if (!sc)
		return nw_error("unknown history command '%s': list, show, export, delete, baseline, sync or merge", NW_TT(sub)), 2;
	if (check_form(sub, sc->max_args, &o))
		return 2;
	if (!sc->fn)
		return do_sync(&o);
	struct nw_store *s;
	/* merge writes (a new history too), delete and baseline change one that exists, the rest only read */
	enum nw_store_mode mode = sc->fn == do_merge ? NW_STORE_WRITE : NW_STORE_READ;
	if (sc->fn == do_delete || (sc->fn == do_baseline && (o.del || o.nargs == 3)))
		mode = NW_STORE_UPDATE;
	if (open_db(&o, mode, &s))
		return 2;
	int rc = 2;
	o.csv_out = nw_cli_out_open("history", "--csv", &o.csv);
	if (o.csv_out) {
		rc = sc->fn(s, &o) ? 2 : 0;
		if (nw_cli_out_close("history", "--csv", &o.csv, o.csv_out))
			rc = 2;
	}
	nw_store_close(s);
	return rc;
}
