/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job: what run sets in a job's environment and what of the user's it
 * keeps; the job's id; two nodes' parts merged (figures, clock offset
 * estimated from collectives that end together, incidents in time order);
 * the job as a result run and as a Chrome trace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "job/job.h"
#include "probe/livemode.h"

static const char *setting(const struct nw_job_setup *s, const char *name)
{
	for (int i = 0; i < s->nset; i++)
		if (!strcmp(s->set[i].name, name))
			return s->set[i].value;
	return NULL;
}

static int noted(const struct nw_job_setup *s, const char *text)
{
	for (int i = 0; i < s->nnotes; i++)
		if (strstr(s->notes[i], text))
			return 1;
	return 0;
}

static void setup_env(void **state)
{
	(void)state;
	struct nw_live l = { .mode = NW_LIVE_PLUGIN };
	strcpy(l.file, "/opt/nw/libnccl-profiler-ncclwatch.so");
	char *plain[] = { "PATH=/usr/bin", NULL };
	struct nw_job_setup_in in = { .live = &l, .job_id = "j1", .stats_dir = "/dev/shm/ncclwatch-0/run-j1",
		                      .log_file = "/jobs/j1/nodes/n1/nccl.%h.%p.log", .subsys = "INIT,ENV", .log_s = 60,
		                      .overlap = 1, .env = plain };
	struct nw_job_setup s;
	nw_job_setup(&in, &s);
	assert_string_equal(setting(&s, "NCCL_PROFILER_PLUGIN"), "/opt/nw/libnccl-profiler-ncclwatch.so");
	assert_string_equal(setting(&s, "NCCLWATCH_DIR"), "/dev/shm/ncclwatch-0/run-j1");
	assert_string_equal(setting(&s, "NCCLWATCH_LOG_S"), "60");
	assert_string_equal(setting(&s, "NCCLWATCH_OVERLAP"), "1");
	assert_string_equal(setting(&s, "NCCLWATCH_JOB"), "j1");
	assert_string_equal(setting(&s, "NCCL_DEBUG"), "INFO");
	assert_string_equal(setting(&s, "NCCL_DEBUG_FILE"), "/jobs/j1/nodes/n1/nccl.%h.%p.log");
	assert_string_equal(setting(&s, "NCCL_DEBUG_SUBSYS"), "INIT,ENV");
	assert_null(setting(&s, "NCCLWATCH_HANG_S"));
	assert_true(s.stats && s.logs);
	assert_int_equal(s.nnotes, 0);
	/* the user's own: kept, and each said */
	char *theirs[] = { "NCCL_PROFILER_PLUGIN=/opt/other/libnccl-profiler-x.so", "NCCL_DEBUG=WARN",
		           "NCCLWATCH_LOG_S=10", "NCCLWATCH_DIR=/srv/nw", NULL };
	in.env = theirs;
	in.hang_s = 30;
	nw_job_setup(&in, &s);
	assert_null(setting(&s, "NCCL_PROFILER_PLUGIN"));
	assert_null(setting(&s, "NCCL_DEBUG"));
	assert_null(setting(&s, "NCCL_DEBUG_FILE"));
	assert_null(setting(&s, "NCCLWATCH_LOG_S"));
	assert_string_equal(setting(&s, "NCCLWATCH_DIR"), "/dev/shm/ncclwatch-0/run-j1");
	assert_string_equal(setting(&s, "NCCLWATCH_HANG_S"), "30");
	assert_false(s.stats || s.logs);
	assert_true(noted(&s, "NCCL_PROFILER_PLUGIN=/opt/other/libnccl-profiler-x.so is yours: kept"));
	assert_true(noted(&s, "NCCL_DEBUG=WARN is yours: kept"));
	assert_true(noted(&s, "NCCLWATCH_LOG_S=10 is yours: kept"));
	assert_true(noted(&s, "NCCLWATCH_DIR=/srv/nw is replaced"));
	/* the interposer goes before the job's own LD_PRELOAD */
	l.mode = NW_LIVE_INTERPOSE;
	strcpy(l.file, "/opt/nw/libncclwatch-interpose.so");
	char *pre[] = { "LD_PRELOAD=/usr/lib/libjemalloc.so", NULL };
	in.env = pre;
	nw_job_setup(&in, &s);
	assert_string_equal(setting(&s, "LD_PRELOAD"), "/opt/nw/libncclwatch-interpose.so:/usr/lib/libjemalloc.so");
	/* no live mode: nothing loaded, the logs still captured */
	l.mode = NW_LIVE_NONE;
	nw_job_setup(&in, &s);
	assert_null(setting(&s, "LD_PRELOAD"));
	assert_false(s.stats);
	assert_true(s.logs);
}

static void job_ids(void **state)
{
	(void)state;
	char id[128];
	char *argv[] = { "python", "train.py", NULL };
	char *none[] = { NULL };
	/* 2026-12-03T16:02:11Z */
	uint64_t t = 1796313731ull * 1000000000ull;
	nw_job_id(argv, none, t, 4242, id, sizeof(id));
	assert_string_equal(id, "job-20261203T160211-4242");
	char *named[] = { "NCCLWATCH_JOB=llama 70b/run#3", NULL };
	nw_job_id(argv, named, t, 4242, id, sizeof(id));
	assert_string_equal(id, "llama-70b-run-3");
	char *srun[] = { "SLURM_JOB_ID=881", "SLURM_STEP_ID=2", "SLURM_LOCALID=3", "SLURM_PROCID=11", NULL };
	nw_job_id(argv, srun, t, 1, id, sizeof(id));
	assert_string_equal(id, "slurm-881.2");
	int local, global;
	assert_int_equal(nw_job_task(srun, &local, &global), 1);
	assert_int_equal(local, 3);
	assert_int_equal(global, 11);
	char *batch[] = { "SLURM_JOB_ID=881", NULL };
	assert_int_equal(nw_job_task(batch, &local, &global), 0);
	nw_job_id(argv, batch, t, 77, id, sizeof(id));
	assert_string_equal(id, "slurm-881-20261203T160211-77");
	char *tr[] = { "torchrun", "--nnodes", "2", "--rdzv-id=exp12", "train.py", NULL };
	nw_job_id(tr, none, t, 1, id, sizeof(id));
	assert_string_equal(id, "torchrun-exp12");
	/* launches that span several nodes */
	char why[128];
	assert_int_equal(nw_job_spans_nodes(tr, why, sizeof(why)), 1);
	assert_string_equal(why, "--nnodes 2");
	char *s1[] = { "srun", "-N4", "python", "t.py", NULL }, *s2[] = { "srun", "--nodes=1", "python", NULL };
	char *m1[] = { "mpirun", "-H", "a,b", "-np", "16", "x", NULL }, *m2[] = { "mpirun", "-N", "8", "x", NULL };
	char *e1[] = { "torchrun", "--nnodes=1:4", "t.py", NULL }, *d1[] = { "deepspeed", "--hostfile=hosts", "t.py", NULL };
	assert_int_equal(nw_job_spans_nodes(s1, why, sizeof(why)), 1);
	assert_string_equal(why, "-N 4");
	assert_int_equal(nw_job_spans_nodes(s2, why, sizeof(why)), 0);
	assert_int_equal(nw_job_spans_nodes(m1, why, sizeof(why)), 1);
	assert_int_equal(nw_job_spans_nodes(m2, why, sizeof(why)), 0);
	assert_int_equal(nw_job_spans_nodes(e1, why, sizeof(why)), 1);
	assert_int_equal(nw_job_spans_nodes(d1, why, sizeof(why)), 1);
}

/* A part of one node: ranks of comm 0x5eed with all_reduces whose end times are t_end[seq] on the node's clock. */
static json_t *part(const char *host, int r0, int r1, int64_t skew_ns, uint64_t t0, uint64_t inc_ns)
{
	json_t *ranks = json_array();
	for (int r = r0; r <= r1; r++) {
		char tl[8192] = "";
		size_t used = 0;
		for (int seq = 0; seq < 10; seq++) {
			uint64_t end = t0 + (uint64_t)seq * 1000000u + 500000u;
			uint64_t start = end - 100000u - (uint64_t)r * 10000u; /* later ranks start later: they wait less */
			used += (size_t)snprintf(tl + used, sizeof(tl) - used, "%d 1048576 0 %llu %llu %llu 0 1 4 7 Ring Simple\n",
			                         seq, (unsigned long long)((int64_t)start - 5000 + skew_ns),
			                         (unsigned long long)((int64_t)start + skew_ns),
			                         (unsigned long long)((int64_t)end + skew_ns));
		}
		json_array_append_new(ranks, json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:i, s:s, s:i, s:[[s, i, i, i, i, i, i, i, i, i]], s:s}",
		                                       "comm", "0000000000005eed", "name", "dp", "rank", r, "nranks", 4, "host",
		                                       host, "pid", 100 + r, "gpu", r % 2, "state", "finished", "ops", 10,
		                                       "per_op", "all_reduce", 21, 10, 10485760, 10, 10485760, 1000000, 0, 0, 0,
		                                       "timeline", tl));
	}
	json_t *series = json_pack("[{s:I, s:I, s:[[s, s, i, i, i, i, i, i, i, i, i]]}]", "t0", (json_int_t)(t0 + skew_ns),
	                           "t1", (json_int_t)(t0 + skew_ns + 10000000), "cells", "0000000000005eed", "all_reduce",
	                           21, 20, 20971520, 20, 20971520, 2000000, 0, 0, 0);
	json_t *inc = json_pack("[{s:I, s:s, s:s}]", "t_ns", (json_int_t)(t0 + skew_ns + inc_ns), "kind", "slow", "text",
	                        host);
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:[s], s:{s:i, s:n, s:b}, s:{s:s, s:s}, s:o, s:o, s:o, s:[], s:[], s:f}",
	                 "schema", "ncclwatch.jobpart/1", "job", "j1", "host", host, "start_ns", (json_int_t)(t0 + skew_ns),
	                 "end_ns", (json_int_t)(t0 + skew_ns + 11000000), "command", "train", "exit", "code", 0, "signal",
	                 "interrupted", 0, "mode", "mode", "plugin", "nccl_version", "2.28.9", "ranks", ranks, "series",
	                 series, "incidents", inc, "lateness", "overlap_windows", "sample_s", 1.0);
}

static void merge_two_nodes(void **state)
{
	(void)state;
	uint64_t t0 = 1796313731ull * 1000000000ull;
	json_t *parts = json_array();
	json_array_append_new(parts, part("node1", 0, 1, 0, t0, 3000000));
	/* node2's clock runs 1.5 ms ahead; its incident happened 1 ms before node1's in real time */
	json_array_append_new(parts, part("node2", 2, 3, 1500000, t0, 2000000));
	struct nw_job_view v;
	char err[256];
	assert_int_equal(nw_job_view_build(parts, &v, err, sizeof(err)), 0);
	assert_int_equal(v.nnodes, 2);
	assert_int_equal(v.nranks, 4);
	assert_int_equal(v.world, 4);
	/* every rank ends each collective at the same real time; node2's clock is 1.5 ms ahead */
	assert_int_equal(v.nodes[1].offset_known, 1);
	assert_int_equal(v.nodes[1].offset_n, 20);
	assert_int_equal(v.nodes[1].offset_ns, -1500000);
	assert_non_null(strstr(v.nodes[1].offset_how, "end times shared with node1"));
	/* figures: every rank, op and the timelines */
	for (size_t i = 0; i < v.nranks; i++) {
		assert_int_equal(v.ranks[i].rank, (int)i);
		assert_int_equal(v.ranks[i].per_op[0][0], 10);
		assert_int_equal(v.ranks[i].per_op[0][1], 10485760);
		assert_int_equal(v.ranks[i].ntl, 10);
	}
	/* busbw over time: all_reduce, 2(n-1)/n of 20 MiB in 2 ms per node, both nodes in one bin (the job is shorter than a sample) */
	assert_int_equal(v.nbw, 1);
	int seen = 0;
	for (size_t b = 0; b < v.nbins; b++)
		if (!isnan(v.bw[0].lines[0].y[b])) {
			assert_true(fabs(v.bw[0].lines[0].y[b] - 1.5 * 20971520 / 2000000.0) < 1e-6);
			seen++;
		}
	assert_int_equal(seen, 1);
	/* incidents in real time order: node2's first */
	assert_int_equal(v.ninc, 2);
	assert_string_equal(v.inc[0].host, "node2");
	/* the job as a result run: one row, all_reduce of 1M (bucket 21's lowest size) */
	struct nw_run run;
	nw_job_to_run(&v, &run);
	assert_string_equal(run.h.source, "job");
	assert_string_equal(run.h.host, "node1,node2");
	assert_int_equal(run.h.nhosts, 2);
	assert_int_equal(run.nrows, 1);
	assert_string_equal(run.rows[0].op, "all_reduce");
	assert_string_equal(run.rows[0].dtype, "float");
	assert_int_equal(run.rows[0].size_bytes, 1048576);
	assert_true(fabs(run.rows[0].time_us - 100.0) < 1e-9);
	assert_true(fabs(run.rows[0].busbw_gbs - 1.5 * 10485760 / 1000000.0) < 1e-9);
	nw_run_release(&run);
	/* the trace: one process track per rank, ten operations each, node2's moved onto node1's clock */
	json_t *tr = nw_job_trace(&v);
	size_t nx = 0;
	int pids[8] = { 0 };
	json_t *e;
	size_t i;
	json_array_foreach(json_object_get(tr, "traceEvents"), i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		nx++;
		pids[json_integer_value(json_object_get(e, "pid"))]++;
	}
	assert_int_equal(nx, 40);
	for (int p = 0; p < 4; p++)
		assert_int_equal(pids[p], 10);
	json_decref(tr);
	nw_job_view_release(&v);
	/* parts of two jobs do not merge */
	json_object_set_new(json_array_get(parts, 1), "job", json_string("j2"));
	assert_int_equal(nw_job_view_build(parts, &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "two jobs"));
	nw_job_view_release(&v);
	json_decref(parts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(setup_env),
		cmocka_unit_test(job_ids),
		cmocka_unit_test(merge_two_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
