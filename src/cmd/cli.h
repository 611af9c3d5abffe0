/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli: what every command shares besides its option table (cmd/opt.h):
 * the option rows that mean the same in every command that takes them
 * (--json, --csv, --db, --no-history, --lock-timeout, --nccl-lib,
 * --progress, --quiet; docs/cli.md), writing JSON where --json says,
 * output checks, colour, and the history messages.
 */
#ifndef NW_CLI_H
#define NW_CLI_H

#include <jansson.h>
#include <stddef.h>

#include "cmd/opt.h"
#include "store/compare.h"
#include "store/store.h"

/*
 * --json[=FILE], one rule in every command (docs/cli.md): --json alone
 * writes the JSON document to stdout instead of the text; --json=FILE
 * writes it to FILE and the text stays on stdout. The word after a bare
 * --json is never its FILE. M is a struct nw_opt_out member of T; more is
 * a further help line ("" or "\nwhat the document is").
 */
#define NW_OPT_JSON(T, M, more) \
	{ .kind = NW_OPTK_OUTOPT, .lname = "json", .off = NW_F_OUT(T, M), .argh = "FILE", \
	  .help = "JSON instead of text; with =FILE into FILE, text kept" more }
/* --csv[=FILE], the same rule for CSV. */
#define NW_OPT_CSV(T, M, more) \
	{ .kind = NW_OPTK_OUTOPT, .lname = "csv", .off = NW_F_OUT(T, M), .argh = "FILE", \
	  .help = "CSV instead of text; with =FILE into FILE, text kept" more }

/* The history options of a command that records (M: a struct nw_store_opts member of T). */
#define NW_OPTS_STORE(T, M) \
	{ .kind = NW_OPTK_STRING, .lname = "db", .off = NW_F_STR(T, M.db_path), .argh = "PATH", .excl = 0x7001, \
	  .help = "history database (default $NCCLWATCH_DB, else\n$XDG_DATA_HOME/ncclwatch/history.db), or a PostgreSQL\n" \
	          "URI postgresql://USER@HOST:PORT/DB (password from ~/.pgpass)" }, \
	{ .kind = NW_OPTK_FLAG, .lname = "no-history", .off = NW_F_INT(T, M.disabled), .excl = 0x7001, \
	  .help = "do not record this run" }, \
	NW_OPT_LOCK_TIMEOUT
/* The same for a command that only reads history: --no-history is refused, saying why. */
#define NW_OPTS_STORE_READ(T, M) \
	{ .kind = NW_OPTK_STRING, .lname = "db", .off = NW_F_STR(T, M.db_path), .argh = "PATH", \
	  .help = "history database (default $NCCLWATCH_DB, else\n$XDG_DATA_HOME/ncclwatch/history.db), or a PostgreSQL\n" \
	          "URI postgresql://USER@HOST:PORT/DB (password from ~/.pgpass)" }, \
	{ .kind = NW_OPTK_REFUSED, .lname = "no-history", \
	  .help = "has no meaning here: this command records nothing" }, \
	NW_OPT_LOCK_TIMEOUT
#define NW_OPT_LOCK_TIMEOUT \
	{ .kind = NW_OPTK_CALL, .lname = "lock-timeout", .argh = "S", .call = nw_cli_lock_timeout, \
	  .help = "wait at most S for the database: another process's\nlock, a server's answer (default 15 s, or\n$NCCLWATCH_LOCK_TIMEOUT; docs/history.md)" }
/* --lock-timeout S: sets NCCLWATCH_LOCK_TIMEOUT for the store (the bound of every wait on the database). */
int nw_cli_lock_timeout(void *opts, const char *arg, const char *name, char *err, size_t errlen);

/* --backend nccl|mpi (M: enum nw_backend_kind). */
extern const struct nw_opt_choice nw_cli_backends[];
#define NW_OPT_BACKEND(T, M, what) \
	{ .kind = NW_OPTK_CHOICE, .lname = "backend", .off = NW_F_ENUM(T, M), .argh = "B", .choices = nw_cli_backends, \
	  .help = what }

/* --nccl-lib PATH (M: const char *). */
#define NW_OPT_NCCL_LIB(T, M) \
	{ .kind = NW_OPTK_FILE, .lname = "nccl-lib", .off = NW_F_STR(T, M), .argh = "PATH", \
	  .help = "load this libnccl.so.2 (else NCCLWATCH_NCCL_LIB, PyTorch's, the system's)" }

/* -O, --output FILE: the file a command writes ("-": stdout; M: const char *). */
#define NW_OPT_OUTPUT(T, M, what) \
	{ .kind = NW_OPTK_OUTPUT, .sname = 'O', .lname = "output", .off = NW_F_STR(T, M), .argh = "FILE", \
	  .help = what " ('-' for stdout)" }

/* --dir DIR: the plugin's stats directory (top, exporter, hang; M: const char *). */
#define NW_OPT_STATS_DIR(T, M) \
	{ .kind = NW_OPTK_DIR, .lname = "dir", .off = NW_F_STR(T, M), .argh = "DIR", .flags = NW_OPTF_LATER, \
	  .help = "stats directory (default $NCCLWATCH_DIR, else\n/dev/shm/ncclwatch-<uid>)" }

/* --sysroot DIR, --nvml-json FILE: recorded machine inputs (topo, doctor, check; M1, M2: const char *). */
#define NW_OPTS_MACHINE(T, M1, M2) \
	{ .kind = NW_OPTK_DIR, .lname = "sysroot", .off = NW_F_STR(T, M1), .argh = "DIR", \
	  .help = "read /sys, /proc and /etc under DIR (also $NCCLWATCH_SYSROOT)" }, \
	{ .kind = NW_OPTK_FILE, .lname = "nvml-json", .off = NW_F_STR(T, M2), .argh = "FILE", \
	  .help = "replay recorded NVML answers (also $NCCLWATCH_NVML_JSON)" }

/* --progress, --no-progress (M: enum nw_progress_mode). */
#define NW_OPTS_PROGRESS(T, M) \
	{ .kind = NW_OPTK_FLAG, .lname = "progress", .off = NW_F_ENUM(T, M), .min = 1 /* NW_PROGRESS_ON */, \
	  .excl = 0x7002, .help = "one progress line on stderr, redrawn in place (default:\nonly when stderr is a terminal)" }, \
	{ .kind = NW_OPTK_FLAG, .lname = "no-progress", .off = NW_F_ENUM(T, M), .min = 2 /* NW_PROGRESS_OFF */, \
	  .excl = 0x7002, .help = "no progress line" }

/* -q, --quiet (M: int): nothing on stderr but errors and warnings. */
#define NW_OPT_QUIET(T, M, letter) \
	{ .kind = NW_OPTK_FLAG, .sname = letter, .lname = "quiet", .off = NW_F_INT(T, M), \
	  .help = "nothing on stderr but warnings and errors" }

/* The comparison's tolerances (compare, report; M: a struct nw_cmp_opts member of T). */
#define NW_OPTS_CMP(T, M) \
	{ .kind = NW_OPTK_PERCENT, .lname = "tolerance", .off = NW_F_DBL(T, M.tolerance), .argh = "PCT", \
	  .help = "busbw change treated as noise when no spread is recorded\n(default 5)" }, \
	{ .kind = NW_OPTK_PERCENT, .lname = "latency-tolerance", .off = NW_F_DBL(T, M.lat_tolerance), .argh = "PCT", \
	  .help = "the same for latency-bound sizes, compared on time\n(default 20)" }, \
	{ .kind = NW_OPTK_SIZE, .lname = "latency-below", .off = NW_F_U64(T, M.lat_below), .argh = "SIZE", \
	  .help = "latency-bound sizes are those below SIZE (default 1M)" }, \
	{ .kind = NW_OPTK_SIZE, .lname = "min-size", .off = NW_F_U64(T, M.min_size), .argh = "SIZE", \
	  .help = "leave out sizes below SIZE (default: none)" }

/* The names of the collectives, data types and reductions, and "all", for completion (NULL-terminated). */
const char *const *nw_cli_op_names(void);
const char *const *nw_cli_dtype_names(void);
const char *const *nw_cli_redop_names(void);

/*
 * The name in names[0..n) nearest to typed (a typo, a swap, a prefix), or
 * NULL when none is near enough to suggest.
 */
const char *nw_cli_nearest(const char *typed, const char *const *names, size_t n);

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

/* Warns that what is read from the history database at path may be stale, and why (for nw_store_on_caveat). */
void nw_cli_say_caveat(const char *path, const char *why);

/* Whether the command's text goes to stdout: no --json, or --json FILE (not '-'). */
int nw_cli_json_text(const struct nw_opt_out *j);

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
int nw_cli_json_write(const char *cmd, const struct nw_opt_out *j, const json_t *doc, size_t flags);

/*
 * Where the output of option opt (--csv[=FILE]) goes: stdout, or FILE
 * opened for writing (replaced whole). NULL after printing why, naming cmd
 * and opt. Close it with nw_cli_out_close.
 */
FILE *nw_cli_out_open(const char *cmd, const char *opt, const struct nw_opt_out *o);
/* Closes f unless it is stdout; 0, or -1 after printing that writing failed. */
int nw_cli_out_close(const char *cmd, const char *opt, const struct nw_opt_out *o, FILE *f);

/*
 * Whether a launcher started this process as a rank other than 0 (Open
 * MPI, PMIx, PMI, torchrun, Slurm variables): such a rank writes no
 * output files and checks none.
 */
int nw_cli_other_rank(void);

/* The one line saying a run went into history: "ncclwatch: CMD: recorded as run N (ncclwatch history show N)". */
void nw_cli_say_recorded(const char *cmd, long long id);

#endif
