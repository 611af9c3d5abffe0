/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check's verdict from synthetic bench results (rows built from the 2xH200
 * nccl-tests figures, and the same slowed down) and recorded doctor findings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/result.h"
#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/topo.h"
#include "probe/verdict.h"

static struct nw_topo *topo;

static int setup(void **state)
{
	(void)state;
	char p[1024], r[1024], err[256];
	const char *src = getenv("SRCDIR");
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	topo = calloc(1, sizeof(*topo));
	snprintf(p, sizeof(p), "%s/tests/fixtures/nvml/h200x2.json", src ? src : ".");
	snprintf(r, sizeof(r), "%s/tests/fixtures/sysfs/h200x2", src ? src : ".");
	if (nw_nvml_snap_load(p, s, err, sizeof(err)) < 0)
		return -1;
	nw_topo_probe(topo, r, s);
	free(s);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(topo);
	return 0;
}

/* A check-sized run: all_reduce and all_gather at 1G and 4G, times scaled by slow. */
static void mkrun(struct nw_run *r, double slow, int64_t wrong)
{
	static const struct { const char *op; uint64_t size, count; double t; } rows[] = {
		{ "all_reduce", 1ULL << 30, 268435456, 3305.38 }, { "all_reduce", 4ULL << 30, 1073741824, 12644.1 },
		{ "all_gather", 1ULL << 30, 134217728, 1981.45 }, { "all_gather", 4ULL << 30, 536870912, 7430.56 },
	};
	nw_run_init(r);
	strcpy(r->h.backend, "nccl");
	r->h.nranks = 2;
	r->h.nhosts = 1;
	for (size_t i = 0; i < 4; i++) {
		struct nw_row x;
		memset(&x, 0, sizeof(x));
		strcpy(x.op, rows[i].op);
		strcpy(x.dtype, "float");
		strcpy(x.redop, strcmp(rows[i].op, "all_reduce") ? "none" : "sum");
		x.root = -1;
		x.size_bytes = rows[i].size;
		x.count = rows[i].count;
		x.nranks = 2;
		x.time_us = rows[i].t * slow;
		x.wrong = i == 3 ? wrong : 0;
		nw_row_compute_bw(&x);
		nw_run_add(r, &x);
	}
}

static void healthy_passes(void **state)
{
	(void)state;
	struct nw_run r;
	struct nw_check_verdict cv = { 0 };
	struct nw_verdict_opts o;
	nw_verdict_opts_default(&o);
	mkrun(&r, 1.0, 0);
	nw_verdict_add_bench(&cv, &r, NULL, topo, 2, NULL, &o);
	assert_int_equal(cv.v, NW_PASS);
	assert_int_equal(nw_verdict_exit(&cv), 0);
	assert_int_equal(cv.n, 2);
	assert_string_equal(cv.items[0].what, "all_reduce 4G");
	assert_float_equal(cv.items[0].measured_gbs, 339.68, 0.01);
	assert_float_equal(cv.items[0].expected_gbs, 339.68, 0.05);
	/* 5% slower than the reference: still a pass (noise), 15%: a warning, 30%: a failure. */
	nw_verdict_release(&cv);
	nw_run_release(&r);
	static const struct { double slow; enum nw_check_level want; } steps[] = {
		{ 1.05, NW_PASS }, { 1.0 / 0.85, NW_WARN }, { 1.0 / 0.70, NW_FAIL },
	};
	for (size_t i = 0; i < 3; i++) {
		mkrun(&r, steps[i].slow, 0);
		nw_verdict_add_bench(&cv, &r, NULL, topo, 2, NULL, &o);
		assert_int_equal(cv.v, steps[i].want);
		nw_verdict_release(&cv);
		nw_run_release(&r);
	}
}

static void collapse_names_the_cause(void **state)
{
	(void)state;
	struct nw_run r;
	struct nw_check_verdict cv = { 0 };
	struct nw_verdict_opts o;
	struct nw_findings f = { 0 };
	nw_verdict_opts_default(&o);
	/* What doctor said with NCCL_P2P_DISABLE=1 set. */
	nw_doc_add(&f, "env.workarounds", NW_SEV_WARN, "why", "unset it", "NCCL_P2P_DISABLE=1");
	nw_doc_add(&f, "env.debug", NW_SEV_OK, NULL, NULL, "NCCL_DEBUG=(unset: WARN)");
	/* Doctor alone: WARN. */
	nw_verdict_add_doctor(&cv, &f);
	assert_int_equal(cv.v, NW_WARN);
	assert_int_equal(cv.n, 1);
	assert_string_equal(cv.items[0].what, "doctor env.workarounds");
	/* With the bandwidth collapsed through host memory: FAIL, naming the variable. */
	mkrun(&r, 16.0, 0);
	nw_verdict_add_bench(&cv, &r, NULL, topo, 2, &f, &o);
	assert_int_equal(cv.v, NW_FAIL);
	assert_int_equal(nw_verdict_exit(&cv), 2);
	int named = 0;
	for (size_t i = 0; i < cv.n; i++)
		named |= cv.items[i].v == NW_FAIL && strstr(cv.items[i].reason, "likely cause: NCCL_P2P_DISABLE=1") != NULL;
	assert_true(named);
	json_t *j = nw_verdict_to_json(&cv);
	assert_int_equal(json_array_size(j), 3);
	json_decref(j);
	nw_verdict_release(&cv);
	nw_run_release(&r);
	nw_findings_release(&f);
}

static void doctor_errors_fail(void **state)
{
	(void)state;
	struct nw_check_verdict cv = { 0 };
	struct nw_findings f = { 0 };
	nw_doc_add(&f, "os.shm", NW_SEV_ERROR, "why", "--shm-size=8g", "/dev/shm is 64 MB");
	nw_doc_add(&f, "os.vm", NW_SEV_INFO, NULL, NULL, "virtual machine");
	nw_verdict_add_doctor(&cv, &f);
	assert_int_equal(cv.v, NW_FAIL);
	assert_non_null(strstr(cv.items[0].reason, "/dev/shm is 64 MB; fix: --shm-size=8g"));
	nw_verdict_add_fail(&cv, "gpu", "no GPU: no NVIDIA driver (libnvidia-ml.so.1 not found)");
	assert_int_equal(cv.n, 2);
	nw_verdict_release(&cv);
	nw_findings_release(&f);
}

static void baseline_and_wrong(void **state)
{
	(void)state;
	struct nw_run r, base;
	struct nw_check_verdict cv = { 0 };
	struct nw_verdict_opts o;
	nw_verdict_opts_default(&o);
	/* Against a baseline run of its own: 20% slower than the baseline warns. */
	mkrun(&base, 1.0, 0);
	mkrun(&r, 1.2, 0);
	nw_verdict_add_bench(&cv, &r, &base, NULL, 2, NULL, &o);
	assert_int_equal(cv.v, NW_WARN);
	assert_non_null(strstr(cv.items[0].reason, "baseline"));
	nw_verdict_release(&cv);
	nw_run_release(&r);
	/* Wrong elements fail whatever the bandwidth. */
	mkrun(&r, 1.0, 12);
	nw_verdict_add_bench(&cv, &r, &base, NULL, 2, NULL, &o);
	assert_int_equal(cv.v, NW_FAIL);
	assert_non_null(strstr(cv.items[0].reason, "12 wrong elements"));
	nw_verdict_release(&cv);
	nw_run_release(&r);
	/* Nothing to compare with (host backend, no baseline): reported, passes. */
	mkrun(&r, 1.0, 0);
	nw_verdict_add_bench(&cv, &r, NULL, NULL, 2, NULL, &o);
	assert_int_equal(cv.v, NW_PASS);
	assert_non_null(strstr(cv.items[0].reason, "not compared"));
	nw_verdict_release(&cv);
	nw_run_release(&r);
	nw_run_release(&base);
}

/* bench --pairs results: the pair against the model's send/recv over its path, or a baseline. */
static void pairs(void **state)
{
	(void)state;
	struct nw_check_verdict cv = { 0 };
	struct nw_verdict_opts o;
	struct nw_findings f = { 0 };
	nw_verdict_opts_default(&o);
	/* 4 GB send/recv at the reference's 365.07 GB/s. */
	json_t *good = json_loads("{\"size_bytes\": 4294967296, \"pairs\": [{\"a\": 0, \"b\": 1, "
	                          "\"busbw_gbs\": 365.07, \"wrong\": 0}]}", 0, NULL);
	json_t *slow = json_loads("{\"size_bytes\": 4294967296, \"pairs\": [{\"a\": 0, \"b\": 1, "
	                          "\"busbw_gbs\": 21.5, \"wrong\": null}]}", 0, NULL);
	assert_non_null(good);
	assert_non_null(slow);
	nw_verdict_add_pairs(&cv, good, NULL, topo, NULL, &o);
	assert_int_equal(cv.v, NW_PASS);
	assert_int_equal(cv.n, 1);
	assert_string_equal(cv.items[0].what, "sendrecv 0<->1 4G");
	assert_non_null(strstr(cv.items[0].reason, "slowest of 1 pairs: 365.1 GB/s, 100% of 365.1 expected"));
	nw_verdict_release(&cv);
	nw_doc_add(&f, "env.workarounds", NW_SEV_WARN, NULL, NULL, "NCCL_P2P_DISABLE=1");
	nw_verdict_add_pairs(&cv, slow, NULL, topo, &f, &o);
	assert_int_equal(cv.v, NW_FAIL);
	assert_non_null(strstr(cv.items[0].reason, "likely cause: NCCL_P2P_DISABLE=1"));
	nw_verdict_release(&cv);
	/* Against a baseline's pairs: the same figure passes. */
	nw_verdict_add_pairs(&cv, good, good, NULL, NULL, &o);
	assert_int_equal(cv.v, NW_PASS);
	assert_non_null(strstr(cv.items[0].reason, "(baseline)"));
	nw_verdict_release(&cv);
	/* Ranks the model cannot place (no topology): measured, not compared. */
	nw_verdict_add_pairs(&cv, slow, NULL, NULL, NULL, &o);
	assert_int_equal(cv.v, NW_PASS);
	assert_non_null(strstr(cv.items[0].reason, "not compared"));
	nw_verdict_release(&cv);
	json_decref(good);
	json_decref(slow);
	nw_findings_release(&f);
}

/* A whole run as check judges it: which GPUs model it, and its pairs. */
static void whole_run(void **state)
{
	(void)state;
	struct nw_run r;
	struct nw_check_verdict cv = { 0 };
	struct nw_verdict_opts o;
	struct nw_topo *one = calloc(1, sizeof(*one));
	int pos[1] = { 0 };
	nw_verdict_opts_default(&o);
	nw_topo_subset(topo, pos, 1, one);
	/* 2 local ranks, 1 visible GPU: the model is every GPU of the host, so busbw is compared. */
	mkrun(&r, 1.0, 0);
	assert_int_equal(nw_verdict_add_run(&cv, &r, NULL, topo, one, NULL, &o), 0);
	assert_int_equal(cv.n, 2);
	assert_float_equal(cv.items[0].expected_gbs, 339.68, 0.05);
	nw_verdict_release(&cv);
	/* A host (mpi) run has no GPU model: measured, not compared. */
	strcpy(r.h.backend, "mpi");
	nw_verdict_add_run(&cv, &r, NULL, topo, topo, NULL, &o);
	assert_float_equal(cv.items[0].expected_gbs, 0, 0);
	assert_non_null(strstr(cv.items[0].reason, "not compared"));
	nw_verdict_release(&cv);
	/* Pairs in the run are judged, against the model of one host... */
	strcpy(r.h.backend, "nccl");
	r.h.extra = json_loads("{\"pairs\": {\"size_bytes\": 4294967296, \"pairs\": [{\"a\": 0, \"b\": 1, "
	                       "\"busbw_gbs\": 365.07, \"wrong\": 0}]}}", 0, NULL);
	assert_non_null(r.h.extra);
	assert_int_equal(nw_verdict_add_run(&cv, &r, NULL, topo, topo, NULL, &o), 1);
	assert_int_equal(cv.n, 3);
	assert_string_equal(cv.items[2].what, "sendrecv 0<->1 4G");
	assert_float_equal(cv.items[2].expected_gbs, 365.07, 0.1);
	nw_verdict_release(&cv);
	/* ...and not placed on it across hosts. */
	r.h.nranks = 4;
	r.h.nhosts = 2;
	assert_int_equal(nw_verdict_add_run(&cv, &r, NULL, topo, topo, NULL, &o), 1);
	assert_non_null(strstr(cv.items[cv.n - 1].reason, "not compared"));
	nw_verdict_release(&cv);
	nw_run_release(&r);
	free(one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(healthy_passes),
		cmocka_unit_test(collapse_names_the_cause),
		cmocka_unit_test(doctor_errors_fail),
		cmocka_unit_test(baseline_and_wrong),
		cmocka_unit_test(pairs),
		cmocka_unit_test(whole_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
