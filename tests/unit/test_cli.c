/* cli: one option convention: --opt value, --opt=value, -ovalue; errors name the option as typed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/cli.h"

enum { O_TOL = NW_OPT_LOCAL, O_JSON };

static const struct option longopts[] = {
	{ "tolerance", required_argument, NULL, O_TOL },
	{ "json", no_argument, NULL, O_JSON },
	{ "ngpus", required_argument, NULL, 'g' },
	NW_CLI_STORE_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

/* Parse argv (NULL-terminated) to the end; the codes returned go to got[], their names to names[]. */
static int parse(char **argv, int *got, char names[][32], const char **args, int max)
{
	int argc = 0, n = 0, c;
	while (argv[argc])
		argc++;
	optind = 0; /* glibc: start over, forgetting any half-read cluster */
	while ((c = nw_cli_next("test", argc, argv, "g:o:v", longopts)) != -1 && n < max) {
		got[n] = c;
		args[n] = c == -2 ? NULL : optarg;
		snprintf(names[n], 32, "%s", c == -2 ? "" : nw_cli_opt_name(c, argv));
		n++;
		if (c == -2)
			break;
	}
	return n;
}

static void both_forms_of_a_value(void **state)
{
	(void)state;
	char *argv[] = { "compare", "--tolerance", "5", "--tolerance=7", "-g2", "-g", "3", "--ngpus=4", "A", NULL };
	int got[8];
	char names[8][32];
	const char *args[8];
	int n = parse(argv, got, names, args, 8);
	assert_int_equal(n, 5);
	assert_int_equal(got[0], O_TOL);
	assert_string_equal(args[0], "5");
	assert_string_equal(names[0], "--tolerance");
	assert_int_equal(got[1], O_TOL);
	assert_string_equal(args[1], "7");
	assert_string_equal(names[1], "--tolerance");
	assert_int_equal(got[2], 'g');
	assert_string_equal(args[2], "2");
	assert_string_equal(names[2], "-g");
	assert_string_equal(args[3], "3");
	assert_string_equal(names[3], "-g");
	/* the long spelling of a short option is named as given */
	assert_int_equal(got[4], 'g');
	assert_string_equal(args[4], "4");
	assert_string_equal(names[4], "--ngpus");
	assert_int_equal(optind, 8);
	assert_string_equal(argv[optind], "A");
}

static void operands_anywhere(void **state)
{
	(void)state;
	char *argv[] = { "report", "A", "--json", "B", "-o/tmp/x.html", NULL };
	int got[8];
	char names[8][32];
	const char *args[8];
	int n = parse(argv, got, names, args, 8);
	assert_int_equal(n, 2);
	assert_int_equal(got[0], O_JSON);
	assert_int_equal(got[1], 'o');
	assert_string_equal(args[1], "/tmp/x.html");
	assert_int_equal(5 - optind, 2);
	assert_string_equal(argv[optind], "A");
	assert_string_equal(argv[optind + 1], "B");
}

static void errors(void **state)
{
	(void)state;
	char *unknown[] = { "x", "--bogus=1", NULL };
	char *missing[] = { "x", "--tolerance", NULL };
	char *missing_short[] = { "x", "-g", NULL };
	char *flag_value[] = { "x", "--json=yes", NULL };
	char *short_unknown[] = { "x", "-q", NULL };
	char **cases[] = { unknown, missing, missing_short, flag_value, short_unknown };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got[4];
		char names[4][32];
		const char *args[4];
		assert_int_equal(parse(cases[i], got, names, args, 4), 1);
		assert_int_equal(got[0], -2);
	}
}

static void history_options(void **state)
{
	(void)state;
	char *argv[] = { "import", "--db=/tmp/h.db", "--no-history", NULL };
	int got[4];
	char names[4][32];
	const char *args[4];
	assert_int_equal(parse(argv, got, names, args, 4), 2);
	struct nw_store_opts so = { 0 };
	assert_int_equal(nw_cli_store_opt(got[0], args[0], &so), 1);
	assert_string_equal(so.db_path, "/tmp/h.db");
	assert_int_equal(nw_cli_store_opt(got[1], args[1], &so), 1);
	assert_int_equal(so.disabled, 1);
	assert_int_equal(nw_cli_store_opt('g', "2", &so), 0);
	assert_int_equal(nw_cli_store_opt(NW_OPT_DB, "", &so), -1);
}

static void no_operands(void **state)
{
	(void)state;
	char *none[] = { "topo", "--json", NULL };
	char *one[] = { "topo", "--json", "extra", NULL };
	int got[4];
	char names[4][32];
	const char *args[4];
	parse(none, got, names, args, 4);
	assert_int_equal(nw_cli_no_operands("topo", 2, none), 0);
	parse(one, got, names, args, 4);
	assert_int_equal(nw_cli_no_operands("topo", 3, one), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_forms_of_a_value), cmocka_unit_test(operands_anywhere), cmocka_unit_test(errors),
		cmocka_unit_test(history_options),       cmocka_unit_test(no_operands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
