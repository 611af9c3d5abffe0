/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opt: one declarative option table per command, in the spirit of git's
 * parse-options.h. A command declares a `struct nw_cmd_spec`: its name,
 * synopsis, a paragraph on what it does, its options (one `struct nw_opt`
 * row each: kind, short letter, long name, the field it fills, the value's
 * name, range or choices, default, help), its operands and sub-commands.
 * From that one table come:
 *   - parsing (getopt_long: `--opt value`, `--opt=value`, `-ovalue`,
 *     options and operands mixed, `--` ends the options), with the value
 *     checked by its kind and range and one error style for every command;
 *   - `ncclwatch help CMD` and `CMD --help` (nw_opt_help);
 *   - the man page (nw_opt_man, through `ncclwatch help --man CMD`);
 *   - shell completion (nw_opt_complete, through `ncclwatch __complete`).
 *
 * Rows fill fields of the command's own options struct by offset; the
 * NW_F_* macros take the offset and fail to compile when the field is not
 * of the type the kind writes. Relations between options (one range
 * larger than another, an option that needs another) stay code in the
 * command, after nw_opt_parse.
 */
#ifndef NW_OPT_H
#define NW_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a row is, and so what its field is and how its value is read. */
enum nw_optk {
	NW_OPTK_END = 0,  /* ends a table */
	NW_OPTK_GROUP,    /* a heading in help (.help), no option */
	NW_OPTK_FLAG,     /* no value; the int-sized field gets .min (1 when .min is 0) */
	NW_OPTK_INT,      /* int in [.min, .max] */
	NW_OPTK_LONG,     /* long long in [.min, .max] */
	NW_OPTK_DOUBLE,   /* double in [.dmin, .dmax] */
	NW_OPTK_PERCENT,  /* double, a fraction: "5" or "5%" is 0.05; in [.dmin, .dmax] when .dmax > 0 */
	NW_OPTK_SIZE,     /* uint64_t bytes: 8, 1K, 1.5M, 4G (1024-based) */
	NW_OPTK_DURATION, /* double seconds: 30, 30s, 500ms, 10m, 1h; in [.dmin, .dmax] when .dmax > 0 */
	NW_OPTK_STRING,   /* const char *, not empty */
	NW_OPTK_FILE,     /* const char *: a file that is read (completion offers files) */
	NW_OPTK_DIR,      /* const char *: a directory that must exist */
	NW_OPTK_OUTPUT,   /* const char *: a file written; "-" is stdout; checked writable before the work */
	NW_OPTK_OUTOPT,   /* struct nw_opt_out: an optional value, only as --opt=FILE (--json, --csv) */
	NW_OPTK_CHOICE,   /* int-sized field: the .value of the .choices row named */
	NW_OPTK_CALL,     /* .call reads the value (or none, with NW_OPTF_NOVAL) into the options */
	NW_OPTK_REFUSED,  /* known by name, always refused: .help says why and what to use (hidden) */
};

/* Row flags. */
enum {
	NW_OPTF_HIDDEN = 1 << 0, /* not in help or completion (an old spelling kept working) */
	NW_OPTF_LIST = 1 << 1,   /* the value is a comma list of .values (completion after each comma) */
	NW_OPTF_NOVAL = 1 << 2,  /* NW_OPTK_CALL without a value (.call gets arg NULL) */
	NW_OPTF_EMPTY = 1 << 3,  /* NW_OPTK_STRING/FILE: an empty value is allowed */
	NW_OPTF_LATER = 1 << 4,  /* NW_OPTK_DIR: need not exist yet (the command says what it finds) */
};

/* One allowed value of a NW_OPTK_CHOICE row; a row with name NULL ends the list. */
struct nw_opt_choice {
	const char *name;
	int value;
};

/* The field of a NW_OPTK_OUTOPT row: given at all, and its FILE (NULL: stdout). */
struct nw_opt_out {
	int on;
	const char *path;
};

struct nw_opt {
	enum nw_optk kind;
	char sname;        /* short letter, 0 for none */
	const char *lname; /* long name without "--", NULL for none */
	size_t off;        /* the field, an offset in the command's options struct (NW_F_*) */
	const char *argh;  /* the value's name in help: "N", "SIZE", "FILE" */
	const char *help;  /* one or more lines; '\n' starts a continuation line */
	long min, max;     /* NW_OPTK_INT, NW_OPTK_LONG: the range; NW_OPTK_FLAG: the value set */
	double dmin, dmax; /* NW_OPTK_DOUBLE; NW_OPTK_PERCENT and NW_OPTK_DURATION when .dmax > 0 */
	const struct nw_opt_choice *choices; /* NW_OPTK_CHOICE */
	/* Completion values (NULL-terminated, static), e.g. the op names for --op. */
	const char *const *(*values)(void);
	/* NW_OPTK_CALL: read arg (NULL with NW_OPTF_NOVAL) into opts; 0, or -1 with err. */
	int (*call)(void *opts, const char *arg, const char *name, char *err, size_t errlen);
	const char *def;   /* the default, read as a given value before the options; shown in help */
	unsigned flags;    /* NW_OPTF_* */
	int excl;          /* non-zero: rows with the same number exclude each other */
};

/* Operands of a command or sub-command, for help and completion. */
enum nw_opt_args {
	NW_ARGS_NONE = 0, /* none: any operand is a usage error */
	NW_ARGS_FILES,    /* input files ("-": standard input) */
	NW_ARGS_RUNS,     /* history runs: ids, baseline names or result files */
	NW_ARGS_WORDS,    /* other words the command reads itself */
	NW_ARGS_COMMAND,  /* a command line after "--", run as it is */
};

/* A sub-command (history show, ...): its name and operands. A row with name NULL ends the list. */
struct nw_subcmd {
	const char *name;
	enum nw_opt_args args;
};

struct nw_cmd_spec {
	const char *name;     /* "bench" */
	const char *synopsis; /* after "usage: ncclwatch NAME "; '\n' starts another form */
	const char *about;    /* what the command does, a paragraph or two */
	const struct nw_opt *opts;
	const char *footer;   /* after the options: environment, exit status */
	enum nw_opt_args args;
	const struct nw_subcmd *subcmds; /* NULL: none */
	int usage_rc;         /* exit status of a usage error: 2 (0 taken as 2) */
	int width;            /* column of the help text (0: 24) */
};

/* The most option rows a table may have (a larger table is a bug, said at parse time). */
#define NW_OPT_MAX 96

/* What nw_opt_parse found besides the values it wrote. */
struct nw_opt_res {
	int nargs;     /* operands, in the order given */
	char **args;
	const struct nw_cmd_spec *spec;
	unsigned char given[NW_OPT_MAX]; /* per row: 0 not given, 1 long, 2 short */
};

/* What nw_opt_parse did. */
enum nw_opt_status {
	NW_OPT_OK = 0, /* parsed: go on */
	NW_OPT_HELP,   /* -h or --help: the help is printed, the command exits 0 */
	NW_OPT_BAD,    /* a usage error is printed: the command exits nw_opt_usage_rc() */
};

/*
 * Parse argv[1..argc) (argv[0] is the command's name) by spec into opts,
 * after applying every row's .def. The operands are left in res (a
 * command of NW_ARGS_NONE gets none: an operand is a usage error). An
 * error names the option as typed and points to `ncclwatch help CMD`.
 */
enum nw_opt_status nw_opt_parse(const struct nw_cmd_spec *spec, void *opts, int argc, char **argv,
                                struct nw_opt_res *res);

/* The exit status for a status other than NW_OPT_OK: 0 after the help, else nw_opt_usage_rc(). */
int nw_opt_exit(const struct nw_cmd_spec *spec, enum nw_opt_status st);

/* The exit status of a usage error of this command. */
int nw_opt_usage_rc(const struct nw_cmd_spec *spec);

/* Whether the option with long name lname was given. */
int nw_opt_given(const struct nw_opt_res *res, const char *lname);

/*
 * The option with long name lname as the user gave it ("-n" or "--iters"),
 * for messages; "--lname" when not given. Valid until the next call.
 */
const char *nw_opt_name(const struct nw_opt_res *res, const char *lname);

/* Prints "ncclwatch: error: MESSAGE; 'ncclwatch help CMD' lists the options"; returns -1. */
int nw_opt_error(const struct nw_cmd_spec *spec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For a command without operands: 0 when none is left, else -1 after saying which. */
int nw_opt_no_operands(const struct nw_opt_res *res);

/* The help text: usage lines, the paragraph, the options, the footer. */
void nw_opt_help(const struct nw_cmd_spec *spec, FILE *f);

/*
 * The man page (roff) of a command: NAME (with summary), SYNOPSIS,
 * DESCRIPTION, OPTIONS (one .TP per row), NOTES (the footer), SEE ALSO.
 */
void nw_opt_man(const struct nw_cmd_spec *spec, const char *summary, const char *version, FILE *f);

/*
 * Completion candidates for the word words[n-1] (possibly empty) of
 * `ncclwatch NAME words...`, one per line on f, each a whole word that
 * begins with it; or the single line "__files__" / "__dirs__" when a
 * file or directory name is expected there.
 */
void nw_opt_complete(const struct nw_cmd_spec *spec, int n, char **words, FILE *f);

/* One line per option of spec: short, long, kind, argh, whether it takes a value (for tests and docs checks). */
void nw_opt_list(const struct nw_cmd_spec *spec, FILE *f);

/*
 * Field offsets that fail to compile when the field is not of the type
 * the row's kind writes.
 */
#define NW_F_INT(T, f) _Generic(((T *)0)->f, int: offsetof(T, f))
#define NW_F_LONG(T, f) _Generic(((T *)0)->f, long long: offsetof(T, f))
#define NW_F_DBL(T, f) _Generic(((T *)0)->f, double: offsetof(T, f))
#define NW_F_U64(T, f) _Generic(((T *)0)->f, uint64_t: offsetof(T, f))
#define NW_F_STR(T, f) _Generic(((T *)0)->f, const char *: offsetof(T, f))
#define NW_F_OUT(T, f) _Generic(((T *)0)->f, struct nw_opt_out: offsetof(T, f))
/* An int or an enum (stored as int: the enum must have int's size). */
#define NW_F_ENUM(T, f) (offsetof(T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == sizeof(int) ? 1 : -1]))

#endif
