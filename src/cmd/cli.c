/* The option-parsing convention of every command (see cli.h). */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "util/util.h"

/* The option nw_cli_next returned last, and how it is named in messages. */
static int last_opt = -1;
static char last_name[64];

/* Remember how option c was given: "--name" when long (longindex li), else "-c". */
static void remember(int c, int li, const struct option *longopts)
{
	last_opt = c;
	if (li >= 0 && longopts)
		snprintf(last_name, sizeof(last_name), "--%s", longopts[li].name);
	else if (c > 0 && c < 0x100)
		snprintf(last_name, sizeof(last_name), "-%c", c);
	else
		last_name[0] = '\0';
}

/*
 * Whether typed ("--json=x") gives a value to a long option that takes
 * none; getopt_long answers '?' for it as for an unknown option.
 */
static int value_to_flag(const char *typed, const struct option *longopts)
{
	if (strncmp(typed, "--", 2) || !strchr(typed, '=') || !longopts)
		return 0;
	size_t len = strcspn(typed + 2, "=");
	for (const struct option *o = longopts; o->name; o++)
		if (o->has_arg == no_argument && strlen(o->name) >= len && !strncmp(o->name, typed + 2, len))
			return 1;
	return 0;
}

int nw_cli_next(const char *cmd, int argc, char **argv, const char *shortopts,
                const struct option *longopts)
{
	char spec[128];
	snprintf(spec, sizeof(spec), ":%s", shortopts ? shortopts : "");
	opterr = 0;
	int li = -1;
	int c = getopt_long(argc, argv, spec, longopts, &li);
	if (c != '?' && c != ':') {
		remember(c, li, longopts);
		return c;
	}
	/* argv[optind - 1] is the element that held the bad option */
	const char *typed = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	char name[64];
	if (!strncmp(typed, "--", 2) || optopt <= 0 || optopt >= 0x100)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(typed, "="), typed);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (c == ':')
		nw_error("option '%s' needs a value; 'ncclwatch help %s' lists the options", name, cmd);
	else if (value_to_flag(typed, longopts))
		nw_error("option '%s' takes no value; 'ncclwatch help %s' lists the options", name, cmd);
	else
		nw_error("unknown option '%s'; 'ncclwatch help %s' lists the options", name, cmd);
	return -2;
}

const char *nw_cli_opt_name(int c, char **argv)
{
	static char name[64];
	if (c == last_opt && last_name[0])
		return last_name;
	if (c > 0 && c < 0x100) {
		snprintf(name, sizeof(name), "-%c", c);
		return name;
	}
	const char *a = optarg && optind >= 2 && argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1];
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(a, "="), a);
	return name;
}

int nw_cli_no_operands(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	nw_error("unexpected argument '%s'; 'ncclwatch help %s' lists the options", argv[optind], cmd);
	return -1;
}

int nw_cli_store_opt(int c, const char *arg, struct nw_store_opts *so)
{
	switch (c) {
	case NW_OPT_DB:
		if (!arg || !*arg)
			return nw_error("--db needs a file path (the history database)");
		if (so->disabled)
			return nw_error("--db and --no-history exclude each other: give one");
		so->db_path = arg;
		return 1;
	case NW_OPT_NO_HISTORY:
		if (so->db_path)
			return nw_error("--db and --no-history exclude each other: give one");
		so->disabled = 1;
		return 1;
	default:
		return 0;
	}
}

int nw_cli_store_read_opt(const char *cmd, int c, const char *arg, struct nw_store_opts *so)
{
	if (c == NW_OPT_NO_HISTORY)
		return nw_error("--no-history has no meaning for %s (it records nothing)", cmd);
	return nw_cli_store_opt(c, arg, so);
}

int nw_cli_cmp_opt(int c, const char *arg, struct nw_cmp_opts *o)
{
	char err[NW_ERRLEN];
	switch (c) {
	case NW_OPT_TOLERANCE:
		if (nw_parse_percent(arg, &o->tolerance, "--tolerance", err, sizeof(err)))
			return nw_error("%s", err);
		return 1;
	case NW_OPT_LAT_TOLERANCE:
		if (nw_parse_percent(arg, &o->lat_tolerance, "--latency-tolerance", err, sizeof(err)))
			return nw_error("%s", err);
		return 1;
	case NW_OPT_LAT_BELOW:
	case NW_OPT_MIN_SIZE:
		if (nw_parse_size(arg, c == NW_OPT_MIN_SIZE ? &o->min_size : &o->lat_below, err, sizeof(err)))
			return nw_error("%s: %s", c == NW_OPT_MIN_SIZE ? "--min-size" : "--latency-below", err);
		return 1;
	default:
		return 0;
	}
}
