/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL RAS answers: real samples (tests/fixtures/ras/README.md), both formats, into the progress model; garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "parse/ras.h"
#include "util/util.h"

static void parse_fixture(const char *name, struct nw_ras *r)
{
	const char *src = getenv("SRCDIR");
	char *p = nw_asprintf("%s/tests/fixtures/ras/%s", src ? src : ".", name);
	size_t len;
	char *text = nw_read_file(p, 1 << 20, &len);
	if (!text)
		fail_msg("cannot read %s", p);
	char err[NW_ERRLEN] = "";
	if (nw_ras_parse(text, len, r, err, sizeof(err)))
		fail_msg("%s: %s", p, err);
	free(text);
	free(p);
}

static const struct nw_ras_rank *rank_of(const struct nw_ras_comm *c, int rk)
{
	for (size_t i = 0; i < c->nranks; i++)
		if (c->ranks[i].rank == rk)
			return &c->ranks[i];
	return NULL;
}

static const struct nw_ras_comm *comm_of(const struct nw_ras *r, uint64_t hash)
{
	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].hash == hash)
			return &r->comms[i];
	fail_msg("no communicator %016llx", (unsigned long long)hash);
	return NULL;
}

static void test_h200_text(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("h200x1_2.28.9_text.txt", &r);
	assert_int_equal(r.format, NW_RAS_TEXT);
	assert_int_equal(r.protocol, 2);
	assert_string_equal(r.nccl_version, "2.28.9");
	assert_int_equal(r.cuda_runtime, 13000);
	assert_int_equal(r.cuda_driver, 13000);
	assert_int_equal(r.nodes, 1);
	assert_int_equal(r.procs, 1);
	assert_int_equal(r.gpus, 1);
	assert_int_equal(r.ngroups, 1);
	assert_string_equal(r.groups[0].status, "RUNNING");
	assert_string_equal(r.groups[0].errors, "OK");
	assert_int_equal(r.ncomms, 0); /* a healthy communicator has no hash in text */
	assert_int_equal(r.nerrors + r.nwarnings, 0);
	nw_ras_release(&r);
}

static void test_h200_json(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("h200x1_2.28.9_json.txt", &r);
	assert_int_equal(r.format, NW_RAS_JSON);
	assert_int_equal(r.protocol, 2);
	assert_string_equal(r.nccl_version, "2.28.9");
	assert_string_equal(r.timestamp, "2026-12-01 14:09:33");
	assert_int_equal(r.timeouts, 0);
	assert_int_equal(r.ncomms, 1);
	const struct nw_ras_comm *c = comm_of(&r, 0xda6d3161e2b43b74ull);
	assert_int_equal(c->size, 1);
	assert_int_equal(c->nmissing, 0);
	const struct nw_ras_rank *k = rank_of(c, 0);
	assert_non_null(k);
	assert_string_equal(k->host, "192.0.2.2");
	assert_int_equal(k->pid, 537);
	assert_int_equal(k->cuda_dev, 0);
	assert_int_equal(k->init_state, 0);
	assert_int_equal(k->abort_flag, 0);
	assert_int_equal(k->counts[NWS_OP_ALL_REDUCE], 0);
	assert_int_equal(k->counts[NWS_OP_BROADCAST], 0);
	assert_true(k->counts[NWS_OP_ALLTOALL] == NW_RAS_NOCOUNT);

	struct nw_prog_comm *pc;
	size_t n;
	assert_int_equal(nw_ras_to_prog(&r, &pc, &n), 0);
	assert_int_equal(n, 1);
	assert_true(pc[0].comm_hash == 0xda6d3161e2b43b74ull);
	assert_int_equal(pc[0].nranks, 1);
	assert_int_equal(pc[0].n, 1);
	const struct nw_prog_rank *p = &pc[0].ranks[0];
	assert_int_equal(p->src, NW_PROG_SRC_RAS);
	assert_int_equal(p->pid, 537);
	assert_int_equal(p->dead, 0);
	assert_int_equal(p->enq[NWS_OP_ALL_REDUCE], 0);
	assert_true(p->enq[NWS_OP_SEND] == NW_PROG_UNKNOWN);
	assert_true(p->done[NWS_OP_ALL_REDUCE] == NW_PROG_UNKNOWN);
	assert_true(p->inflight == NW_PROG_UNKNOWN);
	assert_int_equal(p->last_op, -1);
	assert_int_equal(p->last_enq_ns, 0);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

/* 30 ranks at 640 (not listed), ranks 12 and 13 at 641. */
static void test_mismatch_2_26(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("nccl1911_2.26.2_mismatch.txt", &r);
	assert_int_equal(r.nodes, 4);
	assert_int_equal(r.gpus, 32);
	assert_int_equal(r.nwarnings, 1);
	const struct nw_ras_comm *c = comm_of(&r, 0xfa93daea854b060bull);
	assert_string_equal(c->id, "#0-0");
	assert_int_equal(c->size, 32);
	assert_string_equal(c->errors, "MISMATCH");
	assert_true(c->rest[NWS_OP_ALL_GATHER] == 640);
	const struct nw_ras_rank *k = rank_of(c, 13);
	assert_non_null(k);
	assert_true(k->counts[NWS_OP_ALL_GATHER] == 641);
	assert_int_equal(k->pid, 323033);
	assert_int_equal(k->cuda_dev, 5);
	assert_string_equal(k->host, "10.137.190.124");

	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(&r, &pc, &n);
	assert_int_equal(pc[0].n, 32);
	assert_true(pc[0].ranks[0].enq[NWS_OP_ALL_GATHER] == 640);
	assert_true(pc[0].ranks[12].enq[NWS_OP_ALL_GATHER] == 641);
	assert_true(pc[0].ranks[31].enq[NWS_OP_ALL_GATHER] == 640);
	assert_true(pc[0].ranks[0].enq[NWS_OP_ALL_REDUCE] == NW_PROG_UNKNOWN);
	for (size_t i = 0; i < pc[0].n; i++)
		assert_int_equal(pc[0].ranks[i].dead, 0);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

/* Before 2.26: one count for all collective types; here the 6 listed ranks are behind. */
static void test_mismatch_2_24(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("docs_2.24_mismatch.txt", &r);
	const struct nw_ras_comm *c = comm_of(&r, 0x27a079b828ff1a75ull);
	assert_int_equal(c->size, 32);
	assert_true(c->rest[NWS_OP_OTHER] == 6650);
	assert_true(rank_of(c, 7)->counts[NWS_OP_OTHER] == 6649);
	assert_null(rank_of(c, 1));
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(&r, &pc, &n);
	assert_true(pc[0].ranks[1].enq[NWS_OP_OTHER] == 6650);
	assert_true(pc[0].ranks[2].enq[NWS_OP_OTHER] == 6649);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

static void test_straggler_2_30(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("example_2.30.7_straggler.txt", &r);
	const struct nw_ras_comm *c = comm_of(&r, 0x78db921d1c117b4aull);
	assert_int_equal(c->size, 8);
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(&r, &pc, &n);
	assert_int_equal(pc[0].n, 8);
	assert_true(pc[0].ranks[6].enq[NWS_OP_ALL_REDUCE] == 64);
	assert_true(pc[0].ranks[7].enq[NWS_OP_ALL_REDUCE] == 60);
	assert_string_equal(pc[0].ranks[7].host, "node1");
	assert_int_equal(pc[0].ranks[7].pid, 1650386);
	assert_int_equal(pc[0].ranks[7].dead, 0);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

static void test_incomplete(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("example_2.30.7_incomplete.txt", &r);
	assert_true(r.collection_s > 0.0019 && r.collection_s < 0.0021);
	assert_int_equal(r.nprocs_out, 1);
	assert_int_equal(r.procs_out[0].pid, 3748990);
	assert_int_equal(r.procs_out[0].dead, 0);
	assert_int_equal(r.nerrors, 2);
	const struct nw_ras_comm *c = comm_of(&r, 0x1bdb83b038775869ull);
	assert_int_equal(c->nmissing, 1);
	assert_int_equal(rank_of(c, 7)->missing, 1);
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(&r, &pc, &n);
	assert_int_equal(pc[0].n, 8);
	assert_int_equal(pc[0].ranks[7].dead, 1);
	assert_int_equal(pc[0].ranks[6].dead, 0);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);

	parse_fixture("docs_2.24_incomplete.txt", &r);
	assert_int_equal(r.timeouts, 2);
	assert_true(r.collection_s > 2.04 && r.collection_s < 2.06);
	assert_int_equal(r.nwarnings, 1);
	c = comm_of(&r, 0xcf264af53edbe986ull);
	assert_int_equal(rank_of(c, 21)->missing, 1);
	assert_int_equal(c->nranks, 1);
	nw_ras_release(&r);
}

/* A garbage rank number (NCCL's own bug) and an outlier node in the job summary. */
static void test_incomplete_2_27(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("nccl1762_2.27.3_incomplete_cut.txt", &r);
	assert_int_equal(r.nodes, 2);
	assert_int_equal(r.procs, 10);
	assert_int_equal(r.gpus, 10);
	assert_int_equal(r.ngroups, 3);
	assert_string_equal(r.groups[2].errors, "INCOMPLETE,MISMATCH");
	const struct nw_ras_comm *c = comm_of(&r, 0xb3398875b8b2a063ull);
	assert_int_equal(c->size, 2);
	assert_int_equal(rank_of(c, 1)->missing, 1);
	const struct nw_ras_comm *c2 = comm_of(&r, 0x93d7000200000001ull);
	assert_int_equal(c2->nmissing, 255);
	assert_int_equal(c2->nranks, 0);
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(&r, &pc, &n);
	assert_int_equal(n, 2);
	assert_int_equal(pc[0].ranks[1].dead, 1);
	assert_int_equal(pc[0].ranks[0].dead, 0);
	assert_int_equal(pc[1].n, 0);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

static void test_dead_status_ok(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("example_2.30.7_dead.txt", &r);
	assert_int_equal(r.nprocs_out, 1);
	assert_int_equal(r.procs_out[0].dead, 1);
	assert_string_equal(r.procs_out[0].host, "node1");
	assert_int_equal(r.ncomms, 0);
	nw_ras_release(&r);

	parse_fixture("docs_2.24_status.txt", &r);
	assert_int_equal(r.ngroups, 3);
	const struct nw_ras_comm *c = comm_of(&r, 0x9e17999afaa87dbbull);
	assert_string_equal(c->status, "FINALIZE");
	assert_string_equal(rank_of(c, 16)->status, "RUNNING");
	assert_string_equal(rank_of(c, 20)->status, "FINALIZE");
	nw_ras_release(&r);

	parse_fixture("nccl1730_2.26.2_ok_256.txt", &r);
	assert_int_equal(r.nodes, 32);
	assert_int_equal(r.gpus, 256);
	assert_int_equal(r.groups[0].ranks_per_comm, 256);
	assert_int_equal(r.ncomms, 0);
	nw_ras_release(&r);
}

static void check_docs_json(struct nw_ras *r)
{
	const struct nw_ras_comm *c = comm_of(r, 0xae94423cfbb2ef4aull);
	assert_int_equal(c->size, 2);
	assert_int_equal(c->nmissing, 1);
	const struct nw_ras_rank *k = rank_of(c, 1);
	assert_int_equal(k->missing, 1);
	assert_int_equal(k->unresponsive, 1);
	assert_int_equal(k->dead, 0);
	assert_int_equal(k->pid, 1524345);
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(r, &pc, &n);
	assert_int_equal(pc[0].ranks[1].dead, 1);
	assert_true(pc[0].ranks[1].enq[NWS_OP_ALL_REDUCE] == NW_PROG_UNKNOWN);
	assert_int_equal(pc[0].ranks[0].dead, 0);
	assert_true(pc[0].ranks[0].enq[NWS_OP_ALL_REDUCE] == 0);
	nw_ras_prog_free(pc, n);
}

static void test_json_missing(void **state)
{
	(void)state;
	struct nw_ras r;
	parse_fixture("docs_2.29.1_missing.json", &r);
	assert_string_equal(r.nccl_version, "2.29.1");
	check_docs_json(&r);
	nw_ras_release(&r);
	parse_fixture("as_2.28.7_missing_nocomma.json", &r);
	assert_string_equal(r.nccl_version, "2.28.9");
	check_docs_json(&r);
	nw_ras_release(&r);
}

static void expect_error(const char *text, const char *want)
{
	struct nw_ras r;
	char err[NW_ERRLEN] = "";
	assert_int_equal(nw_ras_parse(text, strlen(text), &r, err, sizeof(err)), -1);
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s'", err, want);
	nw_ras_release(&r);
}

static void test_garbage(void **state)
{
	(void)state;
	expect_error("", "empty RAS answer");
	expect_error("SERVER PROTOCOL 2\nOK\n", "empty RAS answer");
	expect_error("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not an answer of NCCL's RAS port");
	expect_error("SSH-2.0-OpenSSH_9.2\r\n", "not an answer");
	expect_error("ERROR: Unknown command VERBOSE STATUS\n", "answered with an error");
	expect_error("{\"nccl_version\": \"2.28.9\", \"communicators\": [ {", "not valid JSON");
	expect_error("{\"hello\": 1}", "no \"communicators\"");
	expect_error("{\"communicators\": [{\"size\": 2}]}", "valid \"hash\"");
	expect_error("{\"communicators\": [{\"hash\": \"0x1\", \"ranks\": [{\"rank\": -4}]}]}", "valid \"rank\"");
	/* Cut or odd lines inside a block: no crash, what is there is kept. */
	const char *odd = "Errors\n======\n\n#0-0 (00000000000000ff) INCOMPLETE\n  The missing ranks\n  Rank\n  Rank 99999999999 --\n";
	struct nw_ras ro;
	char erro[NW_ERRLEN] = "";
	assert_int_equal(nw_ras_parse(odd, strlen(odd), &ro, erro, sizeof(erro)), 0);
	assert_int_equal(ro.ncomms, 1);
	assert_int_equal(ro.comms[0].nranks, 0);
	nw_ras_release(&ro);
	char bin[8] = { 'N', 'C', 0, 1, 2, 3, 4, 5 };
	struct nw_ras r;
	char err[NW_ERRLEN];
	assert_int_equal(nw_ras_parse(bin, sizeof(bin), &r, err, sizeof(err)), -1);
	nw_ras_release(&r);
}

/* The JSON of a communicator caught mid-init (NCCL issue #2346: "status": null). */
static void test_json_null_status(void **state)
{
	(void)state;
	const char *t = "{\"communicators\": [{\"hash\": \"0xabc\", \"size\": 2, \"ranks\": ["
	                "{\"rank\": 0, \"status\": null, \"collective_counts\": {\"AllReduce\": 5, \"NewOp\": 2}}]}]}";
	struct nw_ras r;
	char err[NW_ERRLEN] = "";
	assert_int_equal(nw_ras_parse(t, strlen(t), &r, err, sizeof(err)), 0);
	const struct nw_ras_rank *k = rank_of(&r.comms[0], 0);
	assert_int_equal(k->init_state, -1);
	assert_true(k->counts[NWS_OP_ALL_REDUCE] == 5);
	assert_true(k->counts[NWS_OP_OTHER] == 2);
	nw_ras_release(&r);
}

static void test_op_names(void **state)
{
	(void)state;
	assert_int_equal(nw_ras_op("AllReduce"), NWS_OP_ALL_REDUCE);
	assert_int_equal(nw_ras_op("ReduceScatter"), NWS_OP_REDUCE_SCATTER);
	assert_int_equal(nw_ras_op("Broadcast"), NWS_OP_BROADCAST);
	assert_int_equal(nw_ras_op("collective"), NWS_OP_OTHER);
}

/* Answers that do not end in a NUL are read within their length (ASan sees any read past it). */
static void test_unterminated(void **state)
{
	(void)state;
	static const char *const answers[] = { "ERRORunhand.e", "SERVER PROTOCOL 2", "OK\nERROR" };
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		size_t n = strlen(answers[i]);
		char *buf = malloc(n);
		assert_non_null(buf);
		memcpy(buf, answers[i], n);
		struct nw_ras r;
		char err[256] = "";
		assert_int_not_equal(nw_ras_parse(buf, n, &r, err, sizeof(err)), 0);
		if (i != 1)
			assert_non_null(strstr(err, "answered with an error: ERROR"));
		nw_ras_release(&r);
		free(buf);
	}
}

/*
 * Forty communicators that each claim a million ranks, in 3 kB: the ranks
 * filled in from sizes stop at NW_RAS_MAXRANK over the whole answer, and
 * the communicators past it keep the one rank they name.
 */
static void test_sizes_bounded(void **state)
{
	(void)state;
	char doc[8192];
	size_t len = (size_t)snprintf(doc, sizeof(doc), "{\"nccl_version\": \"2.29.1\", \"communicators\": [");
	for (int i = 0; i < 40; i++)
		len += (size_t)snprintf(doc + len, sizeof(doc) - len,
		                        "%s{\"hash\": \"0x%x\", \"size\": 1000000, \"ranks\": [{\"rank\": 3, \"pid\": 7}]}",
		                        i ? ", " : "", 0x1000 + i);
	len += (size_t)snprintf(doc + len, sizeof(doc) - len, "]}");
	struct nw_ras r;
	char err[256];
	assert_int_equal(nw_ras_parse(doc, len, &r, err, sizeof(err)), 0);
	assert_int_equal(r.ncomms, 40);
	struct nw_prog_comm *pc;
	size_t n, total = 0;
	nw_ras_to_prog(&r, &pc, &n);
	assert_int_equal(n, 40);
	for (size_t i = 0; i < n; i++) {
		total += pc[i].n;
		assert_int_equal(pc[i].nranks, 1000000);
	}
	assert_true(total <= NW_RAS_MAXRANK + 40);
	assert_int_equal(pc[n - 1].n, 1);
	assert_int_equal(pc[n - 1].ranks[0].rank, 3);
	assert_int_equal(pc[n - 1].ranks[0].pid, 7);
	nw_ras_prog_free(pc, n);
	nw_ras_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h200_text),
		cmocka_unit_test(test_h200_json),
		cmocka_unit_test(test_mismatch_2_26),
		cmocka_unit_test(test_mismatch_2_24),
		cmocka_unit_test(test_straggler_2_30),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_incomplete_2_27),
		cmocka_unit_test(test_dead_status_ok),
		cmocka_unit_test(test_json_missing),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_json_null_status),
		cmocka_unit_test(test_op_names),
		cmocka_unit_test(test_sizes_bounded),
		cmocka_unit_test(test_unterminated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
