/* The option-parsing convention of every command (see cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "probe/ncclenv.h"
#include "util/util.h"

/* The option nw_cli_next returned last, and how it is named in messages. */
static int last_opt = -1;
static char last_name[64];
/* The word after a bare --json that was not taken as its FILE (for nw_cli_no_operands' hint). */
static const char *json_left;

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

const char *nw_cli_nearest(const char *typed, const char *const *names, size_t n)
{
	const char *best = NULL;
	int bestd = 9;
	size_t lt = strlen(typed);
	for (size_t i = 0; i < n; i++) {
		int d = nw_edit_distance(typed, names[i]);
		if (lt >= 3 && !strncmp(names[i], typed, lt))
			d = 1; /* a prefix of it */
		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	int limit = lt <= 4 ? 1 : lt <= 8 ? 2 : 3;
	return best && bestd <= limit ? best : NULL;
}

/* "; did you mean '--X'?" for an unknown long option name ("--itres"), else "". */
static void suggest_option(const char *name, const struct option *longopts, char *out, size_t len)
{
	const char *names[128];
	size_t n = 0;
	out[0] = '\0';
	if (strncmp(name, "--", 2) || !longopts)
		return;
	for (const struct option *o = longopts; o->name && n < NW_ARRAY_LEN(names); o++)
		names[n++] = o->name;
	const char *best = nw_cli_nearest(name + 2, names, n);
	if (best)
		snprintf(out, len, "did you mean '--%s'? ", best);
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

/* Whether word, after a bare --json, is its FILE: "-" or a name ending in ".json" (not an option). */
static int json_file_word(const char *word)
{
	size_t n = strlen(word);
	if (!strcmp(word, "-"))
		return 1;
	return word[0] != '-' && n > 5 && !strcmp(word + n - 5, ".json");
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
		if (c == NW_OPT_JSON && !optarg && optind < argc) {
			if (json_file_word(argv[optind]))
				optarg = argv[optind++];
			else if (argv[optind][0] != '-')
				json_left = argv[optind];
		}
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
	else {
		char hint[96];
		suggest_option(name, longopts, hint, sizeof(hint));
		nw_error("unknown option '%s'; %s'ncclwatch help %s' lists the options", name, hint, cmd);
	}
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
	if (json_left && argv[optind] == json_left)
		nw_error("unexpected argument '%s': --json takes a file as --json=FILE or a name ending in .json; "
		         "'ncclwatch help %s' lists the options", argv[optind], cmd);
	else
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
	case NW_OPT_LOCK_TIMEOUT: {
		double s;
		char err[NW_ERRLEN];
		if (nw_parse_duration(arg, &s, err, sizeof(err)) || s <= 0)
			return nw_error("--lock-timeout '%s': give a duration above 0 (seconds, as in 15 or 2m)", arg);
		setenv("NCCLWATCH_LOCK_TIMEOUT", arg, 1);
		return 1;
	}
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

int nw_cli_dir_opt(const char *opt, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return nw_error("%s '%s': %m; give the directory that holds the machine's /sys, /proc and /etc", opt, path);
	if (!S_ISDIR(st.st_mode))
		return nw_error("%s '%s' is not a directory; give the directory that holds the machine's /sys, /proc and /etc",
		                opt, path);
	return 0;
}

int nw_cli_colour(void)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	if (nc && *nc)
		return 0;
	if (term && !strcmp(term, "dumb"))
		return 0;
	return isatty(STDOUT_FILENO);
}

int nw_cli_json_opt(int c, const char *arg, struct nw_cli_json *j)
{
	if (c != NW_OPT_JSON && c != NW_OPT_JSON_EQ)
		return 0;
	j->on = 1;
	j->path = arg && *arg && strcmp(arg, "-") ? arg : NULL;
	return 1;
}

int nw_cli_json_text(const struct nw_cli_json *j)
{
	return !j->on || j->path;
}

int nw_cli_check_output(const char *cmd, const char *opt, const char *path)
{
	struct stat st;
	if (!path || !strcmp(path, "-"))
		return 0;
	if (!*path)
		return nw_error("%s: %s needs a file name", cmd, opt), 2;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return nw_error("%s: %s '%s' is a directory; give a file name", cmd, opt, path), 2;
		if (access(path, W_OK) != 0)
			return nw_error("%s: %s '%s' cannot be written: %m", cmd, opt, path), 2;
		return 0;
	}
	char dir[4096];
	nw_path_dir(path, dir, sizeof(dir));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return nw_error("%s: %s '%s': the directory '%s' does not exist", cmd, opt, path, dir), 2;
	if (access(dir, W_OK | X_OK) != 0)
		return nw_error("%s: %s '%s' cannot be created in '%s': %m", cmd, opt, path, dir), 2;
	return 0;
}

int nw_cli_json_write(const char *cmd, const struct nw_cli_json *j, const json_t *doc, size_t flags)
{
	if (!j->path) {
		json_dumpf(doc, stdout, flags);
		fputc('\n', stdout);
		return 0;
	}
	FILE *f = fopen(j->path, "w");
	if (!f)
		return nw_error("%s: --json '%s': %m", cmd, j->path);
	int bad = json_dumpf(doc, f, flags) != 0 || fputc('\n', f) == EOF;
	bad |= fclose(f) != 0;
	if (bad)
		return nw_error("%s: --json '%s': writing failed: %m", cmd, j->path);
	return 0;
}

void nw_cli_say_waiting(const char *path, double bound_s)
{
	fprintf(stderr, "ncclwatch: waiting for the history database '%s': another ncclwatch is writing it "
	        "(giving up after %g s; --lock-timeout S changes that)\n", path, bound_s);
}

void nw_cli_say_recorded(const char *cmd, long long id)
{
	fprintf(stderr, "ncclwatch: %s: recorded as run %lld (ncclwatch history show %lld)\n", cmd, id, id);
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
