/*
 * bench_cli: bench's command line (nccl-tests' flags and ours) and its
 * outputs (the nccl-tests table on stdout, JSON, CSV), for bench and the
 * commands that run the same sweep.
 */
#ifndef NW_BENCH_CLI_H
#define NW_BENCH_CLI_H

#include "bench/bench.h"
#include "cmd/progress.h"
#include "store/store.h"

struct bench_cli {
	struct nw_bench_opts o;
	const char *json_path;
	const char *csv_path;
	const char *nt_json_path; /* -J: nccl-tests' own JSON */
	char nt_start[32];        /* when the run started, for -J */
	char json_opt[32], csv_opt[32], nt_json_opt[32]; /* the option names as typed, for messages */
	struct nw_store_opts so; /* --db, --no-history */
	/* printing state */
	int table;           /* print the text table on stdout */
	const struct nw_coll *cur_op; /* op of the section being printed, NULL none */
	int64_t wrong_op;
	double bus_sum;
	size_t bus_n;
	const struct nw_run *run;
	const char *cmd;     /* the command running the sweep, for messages */
	enum nw_progress_mode progress_mode; /* --progress, --no-progress */
	struct nw_progress prog;
};

/* Parse argv (argv[0] is the command name). Returns 0, or 2 after printing a usage error. */
int bench_cli_parse(int argc, char **argv, struct bench_cli *cli, const char *cmd);
/* Run the sweep and write every output; returns the exit status. */
int bench_cli_run(struct bench_cli *cli, int argc, char **argv, const char *cmd);

#endif
