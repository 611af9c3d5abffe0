/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench: every collective over a size sweep, with nccl-tests' flags and
 * its text table (byte-identical rows), plus JSON/CSV and per-rank detail.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/bench_cli.h"
#include "util/util.h"

const struct nw_cmd_spec nw_spec_bench = {
	.name = "bench",
	.about = "Measures collectives over a size sweep and prints nccl-tests' table (same\n"
	         "rows, same meaning), then what nccl-tests cannot say (peak, % of link).\n"
	         "Runs on the GPUs of this process (NCCL loaded at run time), one process per\n"
	         "GPU under mpirun/srun or torchrun (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT),\n"
	         "or on hosts with --backend mpi under mpirun.\n",
	.opts = bench_cli_options,
	.footer = "not here: -D, -V (nccl-tests' device API: device code ncclwatch does not build)\n"
	          "environment (nccl-tests' own):\n"
	          "  NCCL_TESTS_SPLIT=\"MOD 2\"  run groups of ranks apart, at the same time: a rank's\n"
	          "                     group is its rank AND, OR, MOD or DIV N (also &N |N %N /N;\n"
	          "                     N decimal, 0x hex, 0b binary); busbw per group\n"
	          "  NCCL_TESTS_SPLIT_MASK=HEX  the same as NCCL_TESTS_SPLIT=\"AND 0xHEX\"\n"
	          "\n"
	          "exit status: 0 ok, 1 wrong results, 2 bad usage, 3 the run failed (no GPU, NCCL error, timeout)\n",
	.width = 21,
};

int cmd_bench(int argc, char **argv)
{
	struct bench_cli cli;
	enum nw_opt_status st = bench_cli_parse(argc, argv, &cli, &nw_spec_bench);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_bench, st);
	return bench_cli_run(&cli, argc, argv, "bench");
}
