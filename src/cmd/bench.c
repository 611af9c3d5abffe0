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

const char usage_bench[] =
	"usage: ncclwatch bench [options]\n"
	"\n"
	"Measures collectives over a size sweep and prints nccl-tests' table (same\n"
	"rows, same meaning), then what nccl-tests cannot say (peak, % of link).\n"
	"Runs on the GPUs of this process (NCCL loaded at run time), one process per\n"
	"GPU under mpirun/srun or torchrun (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT),\n"
	"or on hosts with --backend mpi under mpirun.\n"
	"\n"
	"what to run:\n"
	"  --op LIST          collectives, comma-separated, or 'all': all_reduce all_gather\n"
	"                     reduce_scatter broadcast reduce alltoall sendrecv gather scatter\n"
	"                     (default all_reduce)\n"
	"                     also alltoallv (uneven per-peer counts) and hypercube (all_gather\n"
	"                     in log2(n) exchanges; 2, 4, 8 ... ranks), as nccl-tests 2.19\n"
	"  -d, --datatype T   int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
	"                     f8e4m3 f8e5m2, a comma list, or 'all' (default float)\n"
	"  -o, --redop OP     sum prod min max avg, a comma list, or 'all' (default sum)\n"
	"  -r, --root N       root rank for broadcast/reduce/gather/scatter, or 'all' (default 0)\n"
	"sizes (K, M, G suffixes are 1024-based):\n"
	"  -b, --minbytes S   smallest size (default 8)\n"
	"  -e, --maxbytes S   largest size (default 1G; 32M with --backend mpi)\n"
	"  -f, --stepfactor F multiply the size by F each step (default 2)\n"
	"  -i, --stepbytes S  add S each step instead (with -f 1)\n"
	"timing:\n"
	"  -n, --iters N      timed launches per size (default 20)\n"
	"  -w, --warmup_iters N  warm-up launches per size, all sizes first (default 5)\n"
	"  -m, --agg_iters N  collectives aggregated in one group per launch (default 1)\n"
	"  -G, --cudagraph N  capture the -n launches as a CUDA graph, replay it N times\n"
	"  -a, --average N    time over ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)\n"
	"  -z, --blocking N   0 no waits (default); 1 wait and barrier after each of the -m\n"
	"                     collectives; 2 wait, no barrier; 3 wait and barrier after\n"
	"                     each launch of -m, the barrier not timed\n"
	"  -C, --report_cputime 0|1  report the host time to launch, not to complete\n"
	"  -T, --timeout S    a collective not done in S seconds ends the run (default 600; 0: no limit)\n"
	"  -N, --run_cycles N sweep every size N times after one warm-up, the rows printed each\n"
	"                     cycle (default 1; 0: until Ctrl-C, which stops after the current\n"
	"                     cycle and keeps every finished one); one run in history, every\n"
	"                     cycle's rows in order, \"cycles\" in its JSON\n"
	"  --rendezvous-timeout S  how long launched ranks wait for each other\n"
	"                     (default: -T, at most 300)\n"
	"checking:\n"
	"  -c, --check N      verify every element of every result, N > 0 on (default 1)\n"
	"where:\n"
	"  -g, --ngpus N      GPUs driven by this process (default: all visible when alone,\n"
	"                     1 per process when launched as several)\n"
	"  -t, --nthreads N   threads per process, each driving -g GPUs with its own NCCL group\n"
	"  --backend B        nccl (GPUs, default) or mpi (host memory over MPI)\n"
	"  --nccl-lib PATH    load this libnccl.so.2 (else NCCLWATCH_NCCL_LIB, PyTorch's, the system's)\n"
	"  -p, --parallel_init 0|1  with -t, each thread creates its own communicators at once\n"
	"                     (with --backend mpi: one rank per process, nothing to do)\n"
	"buffers:\n"
	"  -u, --unalign N    move send and receive pointers N elements off their alignment\n"
	"  -R, --local_register 0|1|2  buffers from ncclMemAlloc, registered with ncclCommRegister\n"
	"                     (1, NCCL 2.19+) or as symmetric windows (2, ncclCommWindowRegister,\n"
	"                     NCCL 2.27+); refused on an older NCCL and with --backend mpi\n"
	"output:\n"
	"  --json [FILE]      " NW_CLI_JSON_HELP
	"                     (the results, docs/results.md)\n"
	"  -I 1               time every iteration: nccl-tests' i_min i_max i_p99 i_cv%\n"
	"                     columns, per-iteration JSON and history (compare's noise)\n"
	"  -K N               leave the first N iterations out of that summary\n"
	"  -S 1               end each row with the time it was printed (nccl-tests' -S)\n"
	"  -M, --memory 1     GPU memory taken by set-up, buffers and collectives, as nccl-tests'\n"
	"                     last '# GPU memory usage' line (NCCL backend only)\n"
	"  -J FILE            nccl-tests' own JSON (version 3, field for field); with\n"
	"                     several --op one file each, FILE.OP.json\n"
	"  --csv FILE         results as CSV; '-' for stdout (no table then)\n"
	"  --per-rank         each rank's time per size: '#' lines in the table, records in JSON/CSV\n"
	"  --oop-only, --ip-only  only out-of-place or in-place\n"
	"  --db PATH, --no-history  where to record the run (default: the history database)\n"
	"not here: -D, -V (nccl-tests' device API: device code ncclwatch does not build)\n"
	"  --lock-timeout S   wait at most S for another ncclwatch's lock on it (default 15 s)\n"
	"  --progress, --no-progress  current op and size, done/total, time left on stderr,\n"
	"                     redrawn in place (default: only when stderr is a terminal)\n"
	"environment (nccl-tests' own):\n"
	"  NCCL_TESTS_SPLIT=\"MOD 2\"  run groups of ranks apart, at the same time: a rank's\n"
	"                     group is its rank AND, OR, MOD or DIV N (also &N |N %N /N;\n"
	"                     N decimal, 0x hex, 0b binary); busbw per group\n"
	"  NCCL_TESTS_SPLIT_MASK=HEX  the same as NCCL_TESTS_SPLIT=\"AND 0xHEX\"\n"
	"\n"
	"exit status: 0 ok, 1 wrong results, 2 bad usage, 3 the run failed (no GPU, NCCL error, timeout)\n";

int cmd_bench(int argc, char **argv)
{
	struct bench_cli cli;
	int rc = bench_cli_parse(argc, argv, &cli, "bench");
	if (rc)
		return rc;
	return bench_cli_run(&cli, argc, argv, "bench");
}
