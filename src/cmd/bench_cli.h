/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_cli: bench's command line (nccl-tests' flags and ours) and its
 * outputs (the nccl-tests table on stdout, JSON, CSV), for bench and the
 * commands that run the same sweep.
 */
#ifndef NW_BENCH_CLI_H
#define NW_BENCH_CLI_H

#include "bench/bench.h"
#include "cmd/opt.h"
#include "cmd/progress.h"
#include "store/store.h"

struct bench_cli {
	struct nw_bench_opts o;
	struct nw_opt_out json, csv; /* --json[=FILE], --csv[=FILE] as given */
	const char *json_path;    /* from them: "-" for stdout, a file, or NULL */
	const char *csv_path;
	const char *nt_json_path; /* -J: nccl-tests' own JSON */
	char nt_start[32];        /* when the run started, for -J */
	char nt_json_opt[32];     /* -J's name as typed, for messages */
	struct nw_store_opts so; /* --db, --no-history */
	/* printing state */
	int table;           /* print the text table on stdout */
	int checks_said;     /* the header said where -c checks */
	const struct nw_coll *cur_op; /* op of the section being printed, NULL none */
	int64_t wrong_op;
	double bus_sum;
	size_t bus_n;
	const struct nw_run *run;
	const char *cmd;     /* the command running the sweep, for messages */
	enum nw_progress_mode progress_mode; /* --progress, --no-progress */
	struct nw_progress prog;
};

/* bench's option table (the spec of a command that runs the sweep points to it). */
extern const struct nw_opt bench_cli_options[];

/*
 * Parse argv (argv[0] is the command name) by spec, then check the options
 * together (the sweep, NCCL_TESTS_SPLIT, one output on stdout).
 */
enum nw_opt_status bench_cli_parse(int argc, char **argv, struct bench_cli *cli, const struct nw_cmd_spec *spec);
/* Run the sweep and write every output; returns the exit status. */
int bench_cli_run(struct bench_cli *cli, int argc, char **argv, const char *cmd);

#endif
