/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opt and cli: one option table per command. --opt value, --opt=value and
 * -ovalue are the same; values are checked by kind and range; errors name
 * the option as typed; --json/--csv never take the next word; exclusive
 * options, defaults, help, man page and completion come from the table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/cli.h"
#include "cmd/opt.h"

struct t_opts {
	struct nw_cmp_opts cmp;
	struct nw_store_opts so;
	struct nw_opt_out json, csv;
	int ngpus, verbose, mode;
	uint64_t size;
	double wait;
	const char *file;
	long long limit;
};

static const struct nw_opt_choice modes[] = { { "fast", 1 }, { "slow", 2 }, { NULL, 0 } };

static const struct nw_opt t_options[] = {
	NW_OPTS_CMP(struct t_opts, cmp),
	{ .kind = NW_OPTK_INT, .sname = 'g', .lname = "ngpus", .off = NW_F_INT(struct t_opts, ngpus), .argh = "N",
	  .min = 1, .max = 64, .def = "1", .help = "GPUs" },
	{ .kind = NW_OPTK_FLAG, .sname = 'v', .lname = "verbose", .off = NW_F_INT(struct t_opts, verbose),
	  .help = "more" },
	{ .kind = NW_OPTK_CHOICE, .lname = "mode", .off = NW_F_ENUM(struct t_opts, mode), .argh = "M", .choices = modes,
	  .help = "how" },
	{ .kind = NW_OPTK_SIZE, .sname = 'b', .lname = "bytes", .off = NW_F_U64(struct t_opts, size), .argh = "SIZE",
	  .help = "size" },
	{ .kind = NW_OPTK_DURATION, .lname = "wait", .off = NW_F_DBL(struct t_opts, wait), .argh = "S", .dmax = 60,
	  .help = "wait" },
	{ .kind = NW_OPTK_FILE, .lname = "file", .off = NW_F_STR(struct t_opts, file), .argh = "FILE", .help = "input" },
	{ .kind = NW_OPTK_LONG, .lname = "limit", .off = NW_F_LONG(struct t_opts, limit), .argh = "N", .min = 1,
	  .max = 1000000, .help = "limit" },
	{ .kind = NW_OPTK_FLAG, .lname = "fast", .off = NW_F_INT(struct t_opts, verbose), .excl = 9, .help = "fast" },
	{ .kind = NW_OPTK_FLAG, .lname = "slow", .off = NW_F_INT(struct t_opts, verbose), .excl = 9, .help = "slow" },
	NW_OPT_JSON(struct t_opts, json, ""),
	NW_OPT_CSV(struct t_opts, csv, ""),
	NW_OPTS_STORE(struct t_opts, so),
	{ 0 },
};

static const struct nw_cmd_spec t_spec = {
	.name = "test", .synopsis = "[options] FILE...", .about = "A test command.\n", .opts = t_options,
	.footer = "exit status: 0\n", .args = NW_ARGS_FILES,
};

static const struct nw_cmd_spec t_spec_none = {
	.name = "test", .opts = t_options, .args = NW_ARGS_NONE,
};

/* Parse a NULL-terminated argv (stderr to /dev/null: the messages are checked in the CLI tests). */
static enum nw_opt_status parse(const struct nw_cmd_spec *spec, char **argv, struct t_opts *o,
                                struct nw_opt_res *res)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	memset(o, 0, sizeof(*o));
	nw_cmp_opts_default(&o->cmp);
	fflush(stderr);
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	enum nw_opt_status st = nw_opt_parse(spec, o, argc, argv, res);
	fclose(stderr);
	stderr = saved;
	return st;
}

static void both_forms_of_a_value(void **state)
{
	(void)state;
	char *argv[] = { "test", "--tolerance", "5", "--latency-tolerance=7", "-g2", "A", "-b", "1K", "--bytes=2M",
		         "--wait", "500ms", "B", NULL };
	struct t_opts o;
	struct nw_opt_res res;
	assert_int_equal(parse(&t_spec, argv, &o, &res), NW_OPT_OK);
	assert_true(o.cmp.tolerance > 0.0499 && o.cmp.tolerance < 0.0501);
	assert_true(o.cmp.lat_tolerance > 0.0699 && o.cmp.lat_tolerance < 0.0701);
	assert_int_equal(o.ngpus, 2);
	assert_int_equal(o.size, 2u << 20);
	assert_true(o.wait > 0.49 && o.wait < 0.51);
	/* operands anywhere, in order */
	assert_int_equal(res.nargs, 2);
	assert_string_equal(res.args[0], "A");
	assert_string_equal(res.args[1], "B");
	assert_string_equal(nw_opt_name(&res, "ngpus"), "-g");
	assert_string_equal(nw_opt_name(&res, "tolerance"), "--tolerance");
	assert_true(nw_opt_given(&res, "bytes"));
	assert_false(nw_opt_given(&res, "verbose"));
}

static void defaults_and_kinds(void **state)
{
	(void)state;
	char *none[] = { "test", NULL };
	char *chosen[] = { "test", "--mode", "slow", "-v", "--limit=12", "--file", "x.log", NULL };
	struct t_opts o;
	struct nw_opt_res res;
	assert_int_equal(parse(&t_spec, none, &o, &res), NW_OPT_OK);
	assert_int_equal(o.ngpus, 1); /* .def */
	assert_int_equal(o.verbose, 0);
	assert_int_equal(parse(&t_spec, chosen, &o, &res), NW_OPT_OK);
	assert_int_equal(o.mode, 2);
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.limit, 12);
	assert_string_equal(o.file, "x.log");
}

static void errors(void **state)
{
	(void)state;
	struct t_opts o;
	struct nw_opt_res res;
	char *bad[][5] = {
		{ "test", "--ngpus", "abc", NULL },    /* not a number */
		{ "test", "-g", "0", NULL },           /* out of range */
		{ "test", "--mode", "medium", NULL },  /* not a choice */
		{ "test", "--bytes", "zz", NULL },     /* not a size */
		{ "test", "--wait", "2m", NULL },      /* above the range */
		{ "test", "--no-such", NULL },         /* unknown */
		{ "test", "--verbose=yes", NULL },     /* a value to a flag */
		{ "test", "--file=", NULL },           /* an empty value */
		{ "test", "--ngpus", NULL },           /* no value */
		{ "test", "--fast", "--slow", NULL },  /* exclusive */
		{ "test", "--db", "x", "--no-history", NULL },
		{ "test", "--json=", NULL },           /* --json= without a file */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum nw_opt_status st = parse(&t_spec, bad[i], &o, &res);
		if (st != NW_OPT_BAD)
			fail_msg("case %zu (%s %s) was not refused", i, bad[i][1], bad[i][2] ? bad[i][2] : "");
	}
	char *operand[] = { "test", "stray", NULL };
	assert_int_equal(parse(&t_spec_none, operand, &o, &res), NW_OPT_BAD);
	char *help[] = { "test", "-v", "--help", NULL };
	FILE *saved = stdout;
	stdout = fopen("/dev/null", "w");
	enum nw_opt_status st = parse(&t_spec, help, &o, &res);
	fclose(stdout);
	stdout = saved;
	assert_int_equal(st, NW_OPT_HELP);
	assert_int_equal(nw_opt_exit(&t_spec, NW_OPT_HELP), 0);
	assert_int_equal(nw_opt_exit(&t_spec, NW_OPT_BAD), 2);
}

/* --json and --csv take a FILE only as --json=FILE: the next word is an operand. */
static void optional_values(void **state)
{
	(void)state;
	struct t_opts o;
	struct nw_opt_res res;
	char *bare[] = { "test", "--json", "run.log", "--csv", NULL };
	assert_int_equal(parse(&t_spec, bare, &o, &res), NW_OPT_OK);
	assert_true(o.json.on);
	assert_null(o.json.path);
	assert_true(o.csv.on);
	assert_null(o.csv.path);
	assert_int_equal(res.nargs, 1);
	assert_string_equal(res.args[0], "run.log");
	char *eq[] = { "test", "--json=/tmp/x.json", "--csv=-", NULL };
	assert_int_equal(parse(&t_spec, eq, &o, &res), NW_OPT_OK);
	assert_string_equal(o.json.path, "/tmp/x.json");
	assert_null(o.csv.path); /* '-' is stdout */
	/* a name after a bare --json that looks like its file and does not exist: refused before any work */
	char *looks[] = { "test", "--json", "/nonexistent/out.json", NULL };
	assert_int_equal(parse(&t_spec, looks, &o, &res), NW_OPT_BAD);
	char *no_operands[] = { "test", "--json", "out.json", NULL };
	assert_int_equal(parse(&t_spec_none, no_operands, &o, &res), NW_OPT_BAD);
}

/* Completion of `ncclwatch test WORDS`: the candidates printed, one per line, into buf. */
static void complete(char **words, int n, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	assert_non_null(f);
	nw_opt_complete(&t_spec, n, words, f);
	fclose(f);
}

static void completion(void **state)
{
	(void)state;
	char buf[4096];
	char *w1[] = { "--lat" };
	complete(w1, 1, buf, sizeof(buf));
	assert_string_equal(buf, "--latency-tolerance\n--latency-below\n");
	char *w2[] = { "--mode", "" };
	complete(w2, 2, buf, sizeof(buf));
	assert_string_equal(buf, "fast\nslow\n");
	char *w3[] = { "--mode=s" };
	complete(w3, 1, buf, sizeof(buf));
	assert_string_equal(buf, "--mode=slow\n");
	char *w4[] = { "--file", "" };
	complete(w4, 2, buf, sizeof(buf));
	assert_string_equal(buf, "__files__\n");
	char *w5[] = { "-g", "2", "" };
	complete(w5, 3, buf, sizeof(buf));
	assert_string_equal(buf, "__files__\n"); /* an operand: files */
	char *w6[] = { "--no-h" };
	complete(w6, 1, buf, sizeof(buf));
	assert_string_equal(buf, "--no-history\n");
}

static void help_and_man(void **state)
{
	(void)state;
	char buf[16384];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	nw_opt_help(&t_spec, f);
	fclose(f);
	assert_non_null(strstr(buf, "usage: ncclwatch test [options] FILE...\n"));
	assert_non_null(strstr(buf, "  -g, --ngpus N"));
	assert_non_null(strstr(buf, "GPUs (default 1)\n"));
	assert_non_null(strstr(buf, "  --json[=FILE]"));
	assert_non_null(strstr(buf, "exit status: 0\n"));
	f = fmemopen(buf, sizeof(buf), "w");
	nw_opt_man(&t_spec, "a test", "0.0", f);
	fclose(f);
	assert_non_null(strstr(buf, ".SH OPTIONS\n"));
	assert_non_null(strstr(buf, ".TP\n\\fB\\-g, \\-\\-ngpus N\\fR\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_forms_of_a_value), cmocka_unit_test(defaults_and_kinds), cmocka_unit_test(errors),
		cmocka_unit_test(optional_values),       cmocka_unit_test(completion),         cmocka_unit_test(help_and_man),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
