/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-tests reader: rccl-tests' JSON records, and the op from a command line pasted above a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "model/result.h"
#include "parse/nccltests.h"
#include "util/util.h"

static void free_runs(struct nw_run *runs, int n)
{
	for (int i = 0; i < n; i++)
		nw_run_release(&runs[i]);
	free(runs);
}

static int parse_text(const char *text, struct nw_run **runs, size_t *unparsed)
{
	char err[NW_ERRLEN] = "";
	int n = nw_nt_parse_buf(text, strlen(text), "t", runs, unparsed, err, sizeof(err));
	assert_true(n >= 0);
	return n;
}

/* The same text through the stream reader (what import reads files and stdin with). */
static int parse_stream(const char *text, struct nw_run **runs, size_t *unparsed)
{
	char err[NW_ERRLEN] = "";
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	int n = nw_nt_parse_stream(f, "t", runs, unparsed, err, sizeof(err));
	fclose(f);
	assert_true(n >= 0);
	return n;
}

/* The corpus file (rccl-tests' own sample, built without MPI): one AllReduce run on 4 GPUs, pairs by size. */
static void corpus_records(void **state)
{
	(void)state;
	const char *src = getenv("SRCDIR");
	char *p = nw_asprintf("%s/tests/fixtures/corpus/079-rccl-tests-json-lines-output.txt", src ? src : ".");
	struct nw_run *runs;
	size_t unparsed = 9;
	char err[NW_ERRLEN] = "";
	int n = nw_nt_parse_path(p, &runs, &unparsed, err, sizeof(err));
	free(p);
	assert_int_equal(n, 1);
	assert_int_equal(unparsed, 0);
	assert_int_equal(runs[0].h.nranks, 4);
	assert_string_equal(runs[0].h.backend, "rccl-tests");
	assert_true(json_is_true(json_object_get(runs[0].h.extra, "rccl")));
	assert_null(json_object_get(runs[0].h.extra, "incomplete"));
	assert_int_equal(runs[0].nrows, 5);
	const struct nw_row *r = runs[0].rows;
	assert_string_equal(r[0].op, "all_reduce");
	assert_string_equal(r[0].dtype, "float");
	assert_string_equal(r[0].redop, "sum");
	assert_int_equal(r[0].size_bytes, 1024);
	assert_int_equal(r[0].count, 256);
	assert_int_equal(r[0].inplace, 0);
	assert_int_equal(r[1].inplace, 1);
	assert_int_equal(r[1].size_bytes, 1024);
	assert_true(r[0].time_us == 19.184150000000002);
	assert_true(r[1].busbw_gbs == 0.07719504564609389);
	assert_int_equal(r[0].wrong, 0);
	assert_int_equal(r[4].size_bytes, 4096);
	assert_int_equal(r[4].inplace, 0);
	free_runs(runs, n);
}

#define MPI_REC(name, ip, size, wrong)                                                                        \
	"{\"#wrong\":" wrong ",\"algBw\":1.5,\"busBw\":2.5,\"gpusPerRank\":2,\"inPlace\":" ip ",\"name\":\"" name \
	"\",\"nodes\":2,\"ranks\":4,\"ranksPerNode\":2,\"redop\":\"sum\",\"size\":" size                          \
	",\"time\":10.5,\"type\":\"float\"}\n"

/* Built with MPI: ranks x gpusPerRank ranks, nodes; a run per collective; a broken line skipped and counted. */
static void mpi_records_and_bad_lines(void **state)
{
	(void)state;
	const char *text = MPI_REC("AllGather", "0", "1024", "\"0\"") MPI_REC("AllGather", "1", "1024", "\"N/A\"")
		"{\"#wrong\":\"0\",\"algBw\":0.1,\"bus\n"
		MPI_REC("AllGather", "0", "2048", "3") MPI_REC("ReduceScatter", "0", "1024", "\"0\"")
		MPI_REC("ReduceScatter", "1", "1024", "\"0\"") "{\"name\":\"ReduceScatter\",\"size\":8,\"inPlace\":1}\n";
	struct nw_run *runs;
	size_t unparsed = 0;
	int n = parse_text(text, &runs, &unparsed);
	assert_int_equal(n, 2);
	assert_int_equal(unparsed, 2);
	assert_int_equal(runs[0].h.nranks, 8);
	assert_int_equal(runs[0].h.nhosts, 2);
	assert_int_equal(runs[0].nrows, 3);
	assert_string_equal(runs[0].rows[0].op, "all_gather");
	assert_int_equal(runs[0].rows[0].count, 1024 / 4 / 8);
	assert_int_equal(runs[0].rows[1].wrong, -1);
	assert_int_equal(runs[0].rows[2].wrong, 3);
	assert_int_equal(runs[0].rows[2].size_bytes, 2048);
	assert_int_equal(runs[1].nrows, 2);
	assert_string_equal(runs[1].rows[1].op, "reduce_scatter");
	assert_int_equal(runs[1].rows[1].inplace, 1);
	free_runs(runs, n);
}

/* rccl-tests since mid 2025: a JSON list of the records, from a buffer and from a stream. */
static void record_list(void **state)
{
	(void)state;
	const char *text = "[\n" "{\"#wrong\":\"0\",\"algBw\":1,\"busBw\":1.75,\"gpus\":8,\"inPlace\":0,\"name\":\"AlltoAll\","
	                   "\"redop\":\"none\",\"size\":4096,\"time\":7.5,\"type\":\"half\"},\n"
	                   "{\"#wrong\":\"0\",\"algBw\":1,\"busBw\":1.75,\"gpus\":8,\"inPlace\":1,\"name\":\"AlltoAll\","
	                   "\"redop\":\"none\",\"size\":4096,\"time\":7.5,\"type\":\"half\"}\n]\n";
	for (int how = 0; how < 2; how++) {
		struct nw_run *runs;
		size_t unparsed = 9;
		int n = how ? parse_stream(text, &runs, &unparsed) : parse_text(text, &runs, &unparsed);
		assert_int_equal(n, 1);
		assert_int_equal(unparsed, 0);
		assert_int_equal(runs[0].nrows, 2);
		assert_int_equal(runs[0].h.nranks, 8);
		assert_string_equal(runs[0].rows[0].op, "alltoall");
		assert_int_equal(runs[0].rows[0].count, 4096 / 2 / 8);
		free_runs(runs, n);
	}
}

#define TABLE                                                                                              \
	"# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n" \
	"#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n" \
	"           8             2   float     sum    10.00    0.00    0.00  0e+00    10.00    0.00    0.00  0e+00\n" \
	"          16             4   float     sum    10.00    0.00    0.00  0e+00    10.00    0.00    0.00  0e+00\n" \
	"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0\n"

/* The op of each run of text (the first row's), "|"-separated, into buf. */
static const char *ops_of(const char *text, char *buf, size_t len)
{
	struct nw_run *runs;
	size_t unparsed;
	int n = parse_text(text, &runs, &unparsed);
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", i ? "|" : "", runs[i].nrows ? runs[i].rows[0].op : "-");
	}
	free_runs(runs, n);
	return buf;
}

/* A pasted command line gives the op of the tables after it, never over what the header or footer says. */
static void op_from_command_line(void **state)
{
	(void)state;
	char b[128];
	assert_string_equal(ops_of("$ mpirun -np 16 -x NCCL_DEBUG=WARN ./build/all_gather_perf -b 8 -e 1G -f 2 -g 1\n" TABLE,
	                           b, sizeof(b)),
	                    "all_gather");
	assert_string_equal(ops_of("srun -N 2 --mpi=pmix /opt/nccl-tests/build/reduce_scatter_perf_mpi -b 8\n" TABLE, b,
	                           sizeof(b)),
	                    "reduce_scatter");
	assert_string_equal(ops_of("[1,0]<stdout>:./alltoall_perf -g 2\n" TABLE, b, sizeof(b)), "alltoall");
	/* the header's or the footer's op wins */
	assert_string_equal(ops_of("./build/all_gather_perf -g 2\n# Collective test starting: broadcast_perf\n" TABLE, b,
	                           sizeof(b)),
	                    "broadcast");
	assert_string_equal(ops_of("./build/all_gather_perf -g 2\n" TABLE "# Collective test concluded: reduce_perf\n", b,
	                           sizeof(b)),
	                    "reduce");
	/* after the table, or not a program of a collective: nothing said */
	assert_string_equal(ops_of(TABLE "./build/broadcast_perf -g 2\n", b, sizeof(b)), "unknown");
	assert_string_equal(ops_of("see tune_perf and all_reduce_perf.txt\n" TABLE, b, sizeof(b)), "unknown");
	/* each table its own command line */
	assert_string_equal(ops_of("$ ./all_reduce_perf -g 2\n" TABLE "$ ./sendrecv_perf -g 2\n" TABLE, b, sizeof(b)),
	                    "all_reduce|sendrecv");
}

/* Real outputs pasted with their command line and no other op (corpus), and one with it below the table. */
static void op_from_command_line_corpus(void **state)
{
	(void)state;
	static const struct { const char *file, *op; } cases[] = {
		{ "018-nccl-tests-h800-broadcast-2gpu-warn.txt", "broadcast" },
		{ "045-nccl-tests-rtx5090-alltoall-NA-wrong.txt", "alltoall" },
		{ "137-nccl-tests-allgather-4g-oob-failed-lost-hash-nccl24.txt", "all_gather" },
		{ "011-nccl-tests-old-error-column-2gpu.txt", "unknown" },
	};
	const char *src = getenv("SRCDIR");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = nw_asprintf("%s/tests/fixtures/corpus/%s", src ? src : ".", cases[i].file);
		struct nw_run *runs;
		size_t unparsed;
		char err[NW_ERRLEN] = "";
		int n = nw_nt_parse_path(p, &runs, &unparsed, err, sizeof(err));
		assert_true(n >= 1);
		for (size_t r = 0; r < runs[0].nrows; r++)
			assert_string_equal(runs[0].rows[r].op, cases[i].op);
		free_runs(runs, n);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(corpus_records),
		cmocka_unit_test(mpi_records_and_bad_lines),
		cmocka_unit_test(record_list),
		cmocka_unit_test(op_from_command_line),
		cmocka_unit_test(op_from_command_line_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
