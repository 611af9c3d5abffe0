/*
 * cli: the one option-parsing convention of every command.
 *
 * Every command parses with getopt_long through nw_cli_next(), so
 * `--opt value` and `--opt=value` are both accepted everywhere, options and
 * operands may be mixed, and a bad option gets one message that names the
 * option as the user typed it. Long-only options take codes from
 * NW_OPT_LOCAL up; the history options (--db, --no-history) are shared
 * entries (NW_CLI_STORE_LONGOPTS) handled by nw_cli_store_opt().
 */
#ifndef NW_CLI_H
#define NW_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stddef.h>

#include "store/compare.h"
#include "store/store.h"

enum {
	NW_OPT_DB = 0x1000,
	NW_OPT_NO_HISTORY,
	NW_OPT_TOLERANCE,
	NW_OPT_LAT_TOLERANCE,
	NW_OPT_LAT_BELOW,
	NW_OPT_MIN_SIZE,
	NW_OPT_PROGRESS,
	NW_OPT_NO_PROGRESS,
	NW_OPT_LOCK_TIMEOUT,
	NW_OPT_JSON,
	NW_OPT_JSON_EQ,
	NW_OPT_LOCAL = 0x1100, /* a command's own long-only options start here */
};

#define NW_CLI_STORE_LONGOPTS \
	{ "db", required_argument, NULL, NW_OPT_DB }, \
	{ "no-history", no_argument, NULL, NW_OPT_NO_HISTORY }, \
	{ "lock-timeout", required_argument, NULL, NW_OPT_LOCK_TIMEOUT }

/* The comparison's tolerances (compare, report), handled by nw_cli_cmp_opt(). */
#define NW_CLI_CMP_LONGOPTS \
	{ "tolerance", required_argument, NULL, NW_OPT_TOLERANCE }, \
	{ "latency-tolerance", required_argument, NULL, NW_OPT_LAT_TOLERANCE }, \
	{ "latency-below", required_argument, NULL, NW_OPT_LAT_BELOW }, \
	{ "min-size", required_argument, NULL, NW_OPT_MIN_SIZE }

/*
 * --json [FILE], one rule in every command (docs/cli.md): --json alone
 * writes the JSON document to stdout instead of the text; --json=FILE (or
 * --json FILE where FILE is '-' or ends in ".json") writes it to FILE and
 * the text stays on stdout; FILE '-' is stdout. nw_cli_next takes the
 * separate FILE. Commands whose operands may be JSON files (compare,
 * import) declare NW_CLI_JSON_EQ_LONGOPT: only --json=FILE names a file.
 */
#define NW_CLI_JSON_LONGOPT { "json", optional_argument, NULL, NW_OPT_JSON }
#define NW_CLI_JSON_EQ_LONGOPT { "json", optional_argument, NULL, NW_OPT_JSON_EQ }
/* What `help CMD` says of it, after "  --json [FILE]" and the command's own padding. */
#define NW_CLI_JSON_HELP "JSON instead of text; into FILE, text kept (docs/cli.md)\n"

struct nw_cli_json {
	int on;           /* --json given */
	const char *path; /* its FILE; NULL or "-": stdout */
};

/*
 * The next option, as getopt_long returns it (with ':' prepended to
 * shortopts and opterr off). Returns -1 at the end of the options, and -2
 * after printing an error (unknown option, missing value, a value given to
 * an option that takes none) that names the option and points to
 * `ncclwatch help CMD`: the command returns 2.
 */
int nw_cli_next(const char *cmd, int argc, char **argv, const char *shortopts,
                const struct option *longopts);

/*
 * The name in names[0..n) nearest to typed (a typo, a swap, a prefix), or
 * NULL when none is near enough to suggest.
 */
const char *nw_cli_nearest(const char *typed, const char *const *names, size_t n);

/*
 * How the user gave option c, just returned by nw_cli_next, for messages:
 * "--ngpus" when given long (even as "--ngpus=2"), "-g" when short. The
 * string is static, valid until the next call.
 */
const char *nw_cli_opt_name(int c, char **argv);

/*
 * For a command that takes no operands, after its option loop: 0 when
 * none is left, else -1 after printing "unexpected argument" naming the
 * first one (the command returns 2).
 */
int nw_cli_no_operands(const char *cmd, int argc, char **argv);

/*
 * A history option (NW_CLI_STORE_LONGOPTS): fills so and returns 1; 0 when
 * c is not one; -1 after printing an error (empty --db, a bad
 * --lock-timeout). --lock-timeout S sets NCCLWATCH_LOCK_TIMEOUT for the
 * store, the bound of every wait for another process's lock.
 */
int nw_cli_store_opt(int c, const char *arg, struct nw_store_opts *so);

/*
 * The same for a command that only reads history (compare, report,
 * history): --no-history is refused, naming cmd.
 */
int nw_cli_store_read_opt(const char *cmd, int c, const char *arg, struct nw_store_opts *so);

/*
 * A comparison option (NW_CLI_CMP_LONGOPTS): its value into o and 1; 0
 * when c is not one; -1 after printing an error naming the option.
 */
int nw_cli_cmp_opt(int c, const char *arg, struct nw_cmp_opts *o);

/*
 * A value that must name an existing directory (--sysroot DIR): 0, or -1
 * after printing an error naming opt.
 */
int nw_cli_dir_opt(const char *opt, const char *path);

/*
 * Whether to use colour on stdout: a terminal, TERM not "dumb", and
 * NO_COLOR unset or empty (https://no-color.org).
 */
int nw_cli_colour(void);

/*
 * Says on stderr that the command waits for the history database at path,
 * locked by another ncclwatch, and for how long at most (for
 * nw_store_on_wait).
 */
void nw_cli_say_waiting(const char *path, double bound_s);

/* A --json option (NW_OPT_JSON, NW_OPT_JSON_EQ): into j and 1; 0 when c is not one. */
int nw_cli_json_opt(int c, const char *arg, struct nw_cli_json *j);

/* Whether the command's text goes to stdout: no --json, or --json FILE (not '-'). */
int nw_cli_json_text(const struct nw_cli_json *j);

/*
 * Before the work: 0 when the output path opt names (a file, "-" or NULL
 * for stdout) can be written, else 2 after printing why, naming cmd and
 * opt (a directory, no such directory, no permission).
 */
int nw_cli_check_output(const char *cmd, const char *opt, const char *path);

/*
 * Writes doc (json_dumpf flags) where j says, with a newline: stdout or
 * j->path, replaced whole. 0, or -1 after printing why, naming cmd.
 */
int nw_cli_json_write(const char *cmd, const struct nw_cli_json *j, const json_t *doc, size_t flags);

/* The one line saying a run went into history: "ncclwatch: CMD: recorded as run N (ncclwatch history show N)". */
void nw_cli_say_recorded(const char *cmd, long long id);

#endif
