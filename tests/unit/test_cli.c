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

/* What one command line gave: each code nw_cli_next returned, its value and its name. */
struct parsed {
	int n;
	int got[8];
	const char *args[8];
	char names[8][32];
};

/* Parse argv (NULL-terminated) to the end, or to the first error (-2, kept in p). */
static void parse(char **argv, struct parsed *p)
{
	int argc = 0, c;
	while (argv[argc])
		argc++;
	memset(p, 0, sizeof(*p));
	optind = 0; /* glibc: start over, forgetting any half-read cluster */
	while (p->n < 8 && (c = nw_cli_next("test", argc, argv, "g:o:v", longopts)) != -1) {
		p->got[p->n] = c;
		p->args[p->n] = c == -2 ? NULL : optarg;
		snprintf(p->names[p->n], sizeof(p->names[0]), "%s", c == -2 ? "" : nw_cli_opt_name(c, argv));
		p->n++;
		if (c == -2)
			break;
	}
}

static void both_forms_of_a_value(void **state)
{
	(void)state;
	char *argv[] = { "compare", "--tolerance", "5", "--tolerance=7", "-g2", "-g", "3", "--ngpus=4", "A", NULL };
	struct parsed p;
	parse(argv, &p);
	assert_int_equal(p.n, 5);
	assert_int_equal(p.got[0], O_TOL);
	assert_string_equal(p.args[0], "5");
	assert_string_equal(p.names[0], "--tolerance");
	assert_int_equal(p.got[1], O_TOL);
	assert_string_equal(p.args[1], "7");
	assert_string_equal(p.names[1], "--tolerance");
	assert_int_equal(p.got[2], 'g');
	assert_string_equal(p.args[2], "2");
	assert_string_equal(p.names[2], "-g");
	assert_string_equal(p.args[3], "3");
	assert_string_equal(p.names[3], "-g");
	/* the long spelling of a short option is named as given */
	assert_int_equal(p.got[4], 'g');
	assert_string_equal(p.args[4], "4");
	assert_string_equal(p.names[4], "--ngpus");
	assert_int_equal(optind, 8);
	assert_string_equal(argv[optind], "A");
}

static void operands_anywhere(void **state)
{
	(void)state;
	char *argv[] = { "report", "A", "--json", "B", "-o/tmp/x.html", NULL };
	struct parsed p;
	parse(argv, &p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.got[0], O_JSON);
	assert_int_equal(p.got[1], 'o');
	assert_string_equal(p.args[1], "/tmp/x.html");
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
		struct parsed p;
		parse(cases[i], &p);
		assert_int_equal(p.n, 1);
		assert_int_equal(p.got[0], -2);
	}
}

static void history_options(void **state)
{
	(void)state;
	char *argv[] = { "import", "--db=/tmp/h.db", "--no-history", NULL };
	struct parsed p;
	parse(argv, &p);
	assert_int_equal(p.n, 2);
	struct nw_store_opts so = { 0 };
	assert_int_equal(nw_cli_store_opt(p.got[0], p.args[0], &so), 1);
	assert_string_equal(so.db_path, "/tmp/h.db");
	/* --db then --no-history (and the other way round) exclude each other */
	assert_int_equal(nw_cli_store_opt(p.got[1], p.args[1], &so), -1);
	struct nw_store_opts off = { 0 };
	assert_int_equal(nw_cli_store_opt(p.got[1], p.args[1], &off), 1);
	assert_int_equal(off.disabled, 1);
	assert_int_equal(nw_cli_store_opt(p.got[0], p.args[0], &off), -1);
	assert_int_equal(nw_cli_store_opt('g', "2", &so), 0);
	assert_int_equal(nw_cli_store_opt(NW_OPT_DB, "", &so), -1);
}

static void comparison_options(void **state)
{
	(void)state;
	struct nw_cmp_opts o;
	struct nw_store_opts so = { 0 };
	nw_cmp_opts_default(&o);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_TOLERANCE, "3", &o), 1);
	assert_float_equal(o.tolerance, 0.03, 1e-12);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_LAT_TOLERANCE, "10%", &o), 1);
	assert_float_equal(o.lat_tolerance, 0.10, 1e-12);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_LAT_BELOW, "2M", &o), 1);
	assert_int_equal(o.lat_below, 2 << 20);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_MIN_SIZE, "1K", &o), 1);
	assert_int_equal(o.min_size, 1024);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_MIN_SIZE, "zz", &o), -1);
	assert_int_equal(nw_cli_cmp_opt(NW_OPT_DB, "x", &o), 0);
	/* a command that only reads history refuses --no-history, takes --db */
	assert_int_equal(nw_cli_store_read_opt("compare", NW_OPT_NO_HISTORY, NULL, &so), -1);
	assert_int_equal(so.disabled, 0);
	assert_int_equal(nw_cli_store_read_opt("compare", NW_OPT_DB, "/tmp/h.db", &so), 1);
	assert_string_equal(so.db_path, "/tmp/h.db");
}

static void no_operands(void **state)
{
	(void)state;
	char *none[] = { "topo", "--json", NULL };
	char *one[] = { "topo", "--json", "extra", NULL };
	struct parsed p;
	parse(none, &p);
	assert_int_equal(nw_cli_no_operands("topo", 2, none), 0);
	parse(one, &p);
	assert_int_equal(nw_cli_no_operands("topo", 3, one), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_forms_of_a_value), cmocka_unit_test(operands_anywhere), cmocka_unit_test(errors),
		cmocka_unit_test(history_options),       cmocka_unit_test(comparison_options),
		cmocka_unit_test(no_operands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
