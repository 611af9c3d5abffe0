/* SPDX-License-Identifier: Apache-2.0 */
/* Env-rendezvous parsing, Slurm host lists, message framing and the text of
 * the bootstrap's messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "comm/boot.h"
#include "util/util.h"

/* An environment as a NULL-terminated list of "NAME=value". */
static const char *lookup(const char *name, void *arg)
{
	const char *const *env = arg;
	size_t n = strlen(name);
	for (; *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static int parse(const char *const *env, struct nw_boot_env *e, char *err)
{
	err[0] = '\0';
	return nw_boot_env_parse(lookup, (void *)(uintptr_t)env, e, err, NW_ERRLEN);
}

#define TORCH(...) { "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", __VA_ARGS__, NULL }

static void torchrun_env(void **state)
{
	(void)state;
	const char *env[] = TORCH("RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2");
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	assert_int_equal(parse(env, &e, err), 1);
	assert_int_equal(e.rank, 3);
	assert_int_equal(e.size, 8);
	assert_int_equal(e.local_rank, 1);
	assert_int_equal(e.local_size, 2);
	assert_string_equal(e.addr, "10.0.0.1");
	assert_int_equal(e.port, 29501);
	assert_string_equal(e.port_from, "MASTER_PORT+1");
	assert_string_equal(e.launcher, "env");
}

static void no_env_is_single(void **state)
{
	(void)state;
	const char *env[] = { "HOME=/root", "MASTER_ADDR=x", NULL };
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	assert_int_equal(parse(env, &e, err), 0);
}

static void port_override_and_limits(void **state)
{
	(void)state;
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	const char *a[] = TORCH("RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "NCCLWATCH_PORT=40000");
	assert_int_equal(parse(a, &e, err), 1);
	assert_int_equal(e.port, 40000);
	assert_string_equal(e.port_from, "NCCLWATCH_PORT");
	const char *b[] = { "MASTER_ADDR=h", "MASTER_PORT=65535", "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	assert_int_equal(parse(b, &e, err), -1);
	assert_non_null(strstr(err, "NCCLWATCH_PORT"));
	const char *c[] = { "MASTER_ADDR=h", "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	assert_int_equal(parse(c, &e, err), -1);
	assert_non_null(strstr(err, "MASTER_PORT is not set"));
	const char *d[] = { "MASTER_ADDR=h", "MASTER_PORT=http", "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	assert_int_equal(parse(d, &e, err), -1);
	assert_non_null(strstr(err, "MASTER_PORT='http'"));
}

/* Each bad combination is refused naming the variable and its value. */
static void bad_combinations(void **state)
{
	(void)state;
	static const struct {
		const char *env[8];
		const char *want;
	} cases[] = {
		{ TORCH("RANK=4", "WORLD_SIZE=4", "LOCAL_RANK=0"), "RANK='4' must be below WORLD_SIZE='4'" },
		{ TORCH("RANK=0", "WORLD_SIZE=0", "LOCAL_RANK=0"), "WORLD_SIZE='0' is out of range" },
		{ TORCH("RANK=0", "WORLD_SIZE=abc", "LOCAL_RANK=0"), "WORLD_SIZE='abc' is not a whole number" },
		{ TORCH("RANK=-1", "WORLD_SIZE=4", "LOCAL_RANK=0"), "RANK='-1' is out of range" },
		{ TORCH("RANK=1x", "WORLD_SIZE=4", "LOCAL_RANK=0"), "RANK='1x' is not a whole number" },
		{ TORCH("RANK=1", "LOCAL_RANK=0"), "RANK='1' is set but WORLD_SIZE is not" },
		{ TORCH("WORLD_SIZE=2", "LOCAL_RANK=0"), "WORLD_SIZE='2' is set but RANK is not" },
		{ TORCH("RANK=1", "WORLD_SIZE=4"), "LOCAL_RANK is not set" },
		{ TORCH("RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"),
		  "LOCAL_RANK='2' must be below LOCAL_WORLD_SIZE='2'" },
		{ TORCH("RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=5"), "LOCAL_WORLD_SIZE='5' is out of range" },
		{ { "MASTER_PORT=1", "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", NULL }, "MASTER_ADDR is not set (WORLD_SIZE='4')" },
		{ TORCH("RANK=0", "WORLD_SIZE=99999999999999999999", "LOCAL_RANK=0"), "WORLD_SIZE='99999999999999999999'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nw_boot_env e;
		char err[NW_ERRLEN];
		int r = parse(cases[i].env, &e, err);
		if (r != -1 || !strstr(err, cases[i].want))
			fail_msg("case %zu: got %d '%s', wanted -1 with '%s'", i, r, err, cases[i].want);
	}
}

static void world_of_one(void **state)
{
	(void)state;
	const char *env[] = { "RANK=0", "WORLD_SIZE=1", NULL };
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	assert_int_equal(parse(env, &e, err), 1);
	assert_int_equal(e.size, 1);
	assert_int_equal(e.local_rank, 0);
}

static void slurm_env(void **state)
{
	(void)state;
	const char *env[] = { "SLURM_PROCID=5", "SLURM_STEP_NUM_TASKS=12", "SLURM_NTASKS=99", "SLURM_LOCALID=1",
		              "SLURM_STEP_TASKS_PER_NODE=4(x2),2(x2)", "SLURM_NODEID=2", "SLURM_STEP_ID=3",
		              "SLURM_JOB_ID=123456", "SLURM_STEP_NODELIST=gpu-[007-009,12],login1", NULL };
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	assert_int_equal(parse(env, &e, err), 1);
	assert_string_equal(e.launcher, "slurm");
	assert_int_equal(e.rank, 5);
	assert_int_equal(e.size, 12);
	assert_int_equal(e.local_rank, 1);
	assert_int_equal(e.local_size, 2);
	assert_string_equal(e.addr, "gpu-007");
	assert_string_equal(e.addr_from, "SLURM_STEP_NODELIST");
	assert_int_equal(e.port, 20000 + (123456 % 3000) * 4 + 3);
	assert_string_equal(e.port_from, "SLURM_JOB_ID");
}

static void slurm_master_addr_and_torch_win(void **state)
{
	(void)state;
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	const char *a[] = { "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEPID=0",
		            "SLURM_JOB_ID=7", "MASTER_ADDR=10.1.1.1", "MASTER_PORT=6000", NULL };
	assert_int_equal(parse(a, &e, err), 1);
	assert_string_equal(e.addr, "10.1.1.1");
	assert_int_equal(e.port, 6001);
	assert_int_equal(e.local_size, 0);
	/* torchrun under srun: torchrun's variables describe the process */
	const char *b[] = TORCH("RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", "SLURM_PROCID=0", "SLURM_NTASKS=1",
	                        "SLURM_STEP_ID=0");
	assert_int_equal(parse(b, &e, err), 1);
	assert_int_equal(e.rank, 3);
	assert_string_equal(e.launcher, "env");
}

/* A batch script has SLURM_PROCID but no step: not a rank of a launch. */
static void slurm_batch_script_is_single(void **state)
{
	(void)state;
	const char *env[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "SLURM_JOB_ID=200505",
		              "SLURM_JOB_NODELIST=gnode[10,20,25,37]", NULL };
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	assert_int_equal(parse(env, &e, err), 0);
}

static void slurm_bad(void **state)
{
	(void)state;
	struct nw_boot_env e;
	char err[NW_ERRLEN];
	const char *a[] = { "SLURM_PROCID=4", "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=0", NULL };
	assert_int_equal(parse(a, &e, err), -1);
	assert_non_null(strstr(err, "SLURM_PROCID='4' must be below SLURM_STEP_NUM_TASKS='4'"));
	const char *b[] = { "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=4", NULL };
	assert_int_equal(parse(b, &e, err), -1);
	assert_non_null(strstr(err, "SLURM_LOCALID is not set"));
	const char *c[] = { "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=0", "SLURM_JOB_ID=1", NULL };
	assert_int_equal(parse(c, &e, err), -1);
	assert_non_null(strstr(err, "MASTER_ADDR"));
	const char *d[] = { "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=2", "SLURM_NODEID=0",
		            "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_JOB_ID=1", "SLURM_STEP_NODELIST=n[1-2]", NULL };
	assert_int_equal(parse(d, &e, err), -1);
	assert_non_null(strstr(err, "SLURM_LOCALID='2'"));
	const char *f[] = { "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=0", "SLURM_JOB_ID=1",
		            "SLURM_STEP_NODELIST=n[1-2", NULL };
	assert_int_equal(parse(f, &e, err), -1);
	assert_non_null(strstr(err, "SLURM_STEP_NODELIST='n[1-2'"));
}

static void slurm_hostlists(void **state)
{
	(void)state;
	char h[64];
	assert_int_equal(nw_boot_slurm_first_host("node1", h, sizeof(h)), 0);
	assert_string_equal(h, "node1");
	assert_int_equal(nw_boot_slurm_first_host("node1,node2", h, sizeof(h)), 0);
	assert_string_equal(h, "node1");
	assert_int_equal(nw_boot_slurm_first_host("gnode[10,20,25,37]", h, sizeof(h)), 0);
	assert_string_equal(h, "gnode10");
	assert_int_equal(nw_boot_slurm_first_host("gpu[003-010,12],cpu1", h, sizeof(h)), 0);
	assert_string_equal(h, "gpu003");
	assert_int_equal(nw_boot_slurm_first_host("rack[1-2]-n[01-04]", h, sizeof(h)), 0);
	assert_string_equal(h, "rack1-n01");
	assert_int_equal(nw_boot_slurm_first_host("", h, sizeof(h)), -1);
	assert_int_equal(nw_boot_slurm_first_host("n[1-2", h, sizeof(h)), -1);
	assert_int_equal(nw_boot_slurm_first_host("n]1", h, sizeof(h)), -1);
	assert_int_equal(nw_boot_slurm_first_host("n[[1]]", h, sizeof(h)), -1);
	assert_int_equal(nw_boot_slurm_first_host("averyveryverylonghostname", h, 8), -1);
}

static void slurm_tasks_per_node(void **state)
{
	(void)state;
	assert_int_equal(nw_boot_slurm_tasks_on_node("8", 0), 8);
	assert_int_equal(nw_boot_slurm_tasks_on_node("8", 1), -1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("1(x4)", 3), 1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("5,4(x3)", 0), 5);
	assert_int_equal(nw_boot_slurm_tasks_on_node("5,4(x3)", 3), 4);
	assert_int_equal(nw_boot_slurm_tasks_on_node("5,4(x3)", 4), -1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("2(x2),1", 2), 1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("2(2)", 0), -1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("2(x", 0), -1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("x", 0), -1);
	assert_int_equal(nw_boot_slurm_tasks_on_node("0", 0), -1);
}

static void header_roundtrip(void **state)
{
	(void)state;
	struct nw_boot_hdr h = { .type = NW_BOOT_BCAST, .proto = NW_BOOT_PROTO, .arg = 513, .seq = 70000,
		                 .len = 128 }, g;
	uint8_t buf[NW_BOOT_HDR_LEN];
	char err[NW_ERRLEN];
	nw_boot_hdr_pack(&h, buf);
	assert_memory_equal(buf, "NWBO", 4);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), 0);
	assert_int_equal(g.type, NW_BOOT_BCAST);
	assert_int_equal(g.arg, 513);
	assert_int_equal(g.seq, 70000);
	assert_int_equal(g.len, 128);
}

static void header_rejects(void **state)
{
	(void)state;
	uint8_t buf[NW_BOOT_HDR_LEN];
	struct nw_boot_hdr h = { .type = NW_BOOT_HELLO, .proto = NW_BOOT_PROTO, .len = 10 }, g;
	char err[NW_ERRLEN];
	/* an HTTP request is not ours */
	memcpy(buf, "GET / HTTP/1.1\r\n", 16);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not ncclwatch bootstrap traffic"));
	h.proto = NW_BOOT_PROTO + 1;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "run the same ncclwatch build"));
	h.proto = NW_BOOT_PROTO;
	h.type = 0;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	h.type = NW_BOOT_NTYPES;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	/* each type has its own length limit */
	h.type = NW_BOOT_BARRIER;
	h.len = 1;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	h.type = NW_BOOT_ABORT;
	h.len = NW_BOOT_MAX_WHY + 1;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	h.type = NW_BOOT_GATHER;
	h.len = NW_BOOT_MAX_PAYLOAD + 1;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), -1);
	h.len = NW_BOOT_MAX_PAYLOAD;
	nw_boot_hdr_pack(&h, buf);
	assert_int_equal(nw_boot_hdr_unpack(buf, &g, err, sizeof(err)), 0);
}

static void hello_roundtrip_and_truncation(void **state)
{
	(void)state;
	struct nw_boot_hello h = { .rank = 7, .size = 16, .local_rank = 3, .local_size = 8, .pid = 4242,
		                   .fingerprint = "ncclwatch 0.1.0 bench -b 8 -e 1G" }, g;
	nw_strlcpy(h.host, "gpu-node-17", sizeof(h.host));
	char err[NW_ERRLEN];
	size_t n;
	uint8_t *p = nw_boot_hello_pack(&h, &n);
	assert_int_equal(nw_boot_hello_unpack(p, n, &g, err, sizeof(err)), 0);
	assert_int_equal(g.rank, 7);
	assert_int_equal(g.size, 16);
	assert_int_equal(g.local_rank, 3);
	assert_int_equal(g.local_size, 8);
	assert_int_equal(g.pid, 4242);
	assert_string_equal(g.host, "gpu-node-17");
	assert_string_equal(g.fingerprint, h.fingerprint);
	nw_boot_hello_release(&g);
	/* every shorter or longer buffer is refused, never read past */
	for (size_t k = 0; k < n; k++) {
		uint8_t *q = nw_malloc(k ? k : 1);
		memcpy(q, p, k);
		assert_int_equal(nw_boot_hello_unpack(q, k, &g, err, sizeof(err)), -1);
		free(q);
	}
	uint8_t *longer = nw_calloc(n + 1, 1);
	memcpy(longer, p, n);
	assert_int_equal(nw_boot_hello_unpack(longer, n + 1, &g, err, sizeof(err)), -1);
	free(longer);
	/* a NUL inside the fingerprint and rank >= limit are refused */
	p[n - 3] = 0;
	assert_int_equal(nw_boot_hello_unpack(p, n, &g, err, sizeof(err)), -1);
	memset(p, 0xff, 4);
	assert_int_equal(nw_boot_hello_unpack(p, n, &g, err, sizeof(err)), -1);
	free(p);
}

static void hello_host_is_cleaned(void **state)
{
	(void)state;
	struct nw_boot_hello h = { .rank = 1, .size = 2, .fingerprint = "" }, g;
	nw_strlcpy(h.host, "bad\033[31mhost\n", sizeof(h.host));
	char err[NW_ERRLEN];
	size_t n;
	uint8_t *p = nw_boot_hello_pack(&h, &n);
	assert_int_equal(nw_boot_hello_unpack(p, n, &g, err, sizeof(err)), 0);
	assert_string_equal(g.host, "bad?[31mhost?");
	assert_string_equal(g.fingerprint, "");
	nw_boot_hello_release(&g);
	free(p);
}

static void fingerprint_diff(void **state)
{
	(void)state;
	char a[200], b[200];
	nw_boot_fpdiff("0.1.0 bench -b 8 -e 1G -n 20", "0.1.0 bench -b 8 -e 2G -n 20", a, sizeof(a), b, sizeof(b));
	assert_string_equal(a, "...-e 1G...");
	assert_string_equal(b, "...-e 2G...");
	nw_boot_fpdiff("0.1.0 bench -b 8", "0.1.0 bench -b 8", a, sizeof(a), b, sizeof(b));
	assert_string_equal(a, "");
	assert_string_equal(b, "");
	nw_boot_fpdiff("0.1.0 bench", "0.2.0 bench", a, sizeof(a), b, sizeof(b));
	assert_string_equal(a, "0.1.0...");
	assert_string_equal(b, "0.2.0...");
	nw_boot_fpdiff("bench -b 8 -c", "bench -b 8", a, sizeof(a), b, sizeof(b));
	assert_non_null(strstr(a, "-c"));
	assert_string_equal(a, "...-b 8 -c");
	assert_string_equal(b, "...-b 8");
	nw_boot_fpdiff("probe", "other", a, sizeof(a), b, sizeof(b));
	assert_string_equal(a, "probe");
	assert_string_equal(b, "other");
	/* long differences are cut */
	char la[400], lb[400];
	memset(la, 'x', sizeof(la) - 1);
	la[sizeof(la) - 1] = '\0';
	memcpy(lb, la, sizeof(lb));
	lb[0] = 'y';
	nw_boot_fpdiff(la, lb, a, sizeof(a), b, sizeof(b));
	assert_true(strlen(a) < 100);
	assert_non_null(strstr(a, "..."));
}

static void rank_lists(void **state)
{
	(void)state;
	char s[64];
	int a[] = { 0, 1, 2, 5, 7, 8 };
	nw_boot_ranklist(a, 6, s, sizeof(s));
	assert_string_equal(s, "0-2,5,7,8");
	nw_boot_ranklist(a + 3, 1, s, sizeof(s));
	assert_string_equal(s, "5");
	nw_boot_ranklist(a, 0, s, sizeof(s));
	assert_string_equal(s, "");
	int big[100];
	for (int i = 0; i < 100; i++)
		big[i] = 2 * i;
	nw_boot_ranklist(big, 100, s, sizeof(s));
	assert_true(strlen(s) < sizeof(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(torchrun_env),
		cmocka_unit_test(no_env_is_single),
		cmocka_unit_test(port_override_and_limits),
		cmocka_unit_test(bad_combinations),
		cmocka_unit_test(world_of_one),
		cmocka_unit_test(slurm_env),
		cmocka_unit_test(slurm_master_addr_and_torch_win),
		cmocka_unit_test(slurm_batch_script_is_single),
		cmocka_unit_test(slurm_bad),
		cmocka_unit_test(slurm_hostlists),
		cmocka_unit_test(slurm_tasks_per_node),
		cmocka_unit_test(header_roundtrip),
		cmocka_unit_test(header_rejects),
		cmocka_unit_test(hello_roundtrip_and_truncation),
		cmocka_unit_test(hello_host_is_cleaned),
		cmocka_unit_test(fingerprint_diff),
		cmocka_unit_test(rank_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
