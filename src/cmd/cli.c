/* The option-parsing convention of every command (see cli.h). */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "util/util.h"

int nw_cli_next(const char *cmd, int argc, char **argv, const char *shortopts,
                const struct option *longopts)
{
	char spec[128];
	snprintf(spec, sizeof(spec), ":%s", shortopts ? shortopts : "");
	opterr = 0;
	int c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* argv[optind - 1] is the element that held the bad option */
	const char *typed = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	char name[64];
	if (!strncmp(typed, "--", 2) || optopt <= 0 || optopt >= 0x100)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(typed, "="), typed);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (c == ':')
		nw_error("option '%s' needs a value; 'ncclwatch help %s' lists the options", name, cmd);
	else
		nw_error("unknown option '%s'; 'ncclwatch help %s' lists the options", name, cmd);
	return -2;
}

const char *nw_cli_opt_name(int c, char **argv)
{
	static char name[64];
	if (c > 0 && c < 0x100) {
		snprintf(name, sizeof(name), "-%c", c);
		return name;
	}
	const char *a = optarg && optind >= 2 && argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1];
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(a, "="), a);
	return name;
}

int nw_cli_store_opt(int c, const char *arg, struct nw_store_opts *so)
{
	switch (c) {
	case NW_OPT_DB:
		if (!arg || !*arg)
			return nw_error("--db needs a file path (the history database)");
		so->db_path = arg;
		return 1;
	case NW_OPT_NO_HISTORY:
		so->disabled = 1;
		return 1;
	default:
		return 0;
	}
}
