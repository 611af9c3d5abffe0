/* SPDX-License-Identifier: Apache-2.0 */
/* The expectation model against the 2xH200 nccl-tests figures it is calibrated on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/nvml.h"
#include "probe/expect.h"
#include "probe/topo.h"

#define GB1 (1ULL << 30)
#define GB4 (4ULL << 30)
#define LINK (18 * 26.562)

static struct nw_topo *h200(void)
{
	static char path[1024], root[1024];
	const char *src = getenv("SRCDIR");
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	struct nw_topo *t = calloc(1, sizeof(*t));
	char err[512];
	snprintf(path, sizeof(path), "%s/tests/fixtures/nvml/h200x2.json", src ? src : ".");
	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/h200x2", src ? src : ".");
	assert_int_equal(nw_nvml_snap_load(path, s, err, sizeof(err)), 0);
	nw_topo_probe(t, root, s);
	free(s);
	return t;
}

/* Out-of-place busbw from reference/h200x2/nt_*.txt at 1 GB and 4 GB. */
static void calibration_points(void **state)
{
	(void)state;
	static const struct { enum nw_op op; double at1g, at4g; } ref[] = {
		{ NW_ALL_REDUCE, 324.85, 339.68 }, { NW_ALL_GATHER, 270.95, 289.01 },
		{ NW_REDUCE_SCATTER, 275.04, 290.82 }, { NW_BROADCAST, 364.71, 366.28 },
		{ NW_ALLTOALL, 332.01, 337.01 }, { NW_SENDRECV, 359.52, 365.07 },
	};
	for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		struct nw_expect e;
		char err[256];
		assert_int_equal(nw_expect_for_link(ref[i].op, 2, NW_PATH_NVL, LINK, GB1, &e, err, sizeof(err)), 0);
		assert_float_equal(e.busbw_gbs, ref[i].at1g, 0.05);
		assert_true(e.calibrated);
		assert_int_equal(nw_expect_for_link(ref[i].op, 2, NW_PATH_NVL, LINK, GB4, &e, err, sizeof(err)), 0);
		assert_float_equal(e.busbw_gbs, ref[i].at4g, 0.05);
	}
	/* all_reduce: 68% at 1 GB, 71% at 4 GB: a flat 70% rule would misjudge both. */
	int cal;
	assert_float_equal(nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, GB1, &cal), 0.679, 0.001);
	assert_float_equal(nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, GB4, &cal), 0.710, 0.001);
}

static void between_and_beyond(void **state)
{
	(void)state;
	int cal;
	double e1 = nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, GB1, &cal);
	double e2 = nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, 2ULL << 30, &cal);
	double e4 = nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, GB4, &cal);
	assert_float_equal(e2, (e1 + e4) / 2, 1e-9);
	assert_float_equal(nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, 8ULL << 30, &cal), e4, 1e-12);
	assert_float_equal(nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_NVL, 1 << 20, &cal), e1, 1e-12);
	/* Only NVLink and measured ops are calibrated. */
	nw_expect_efficiency(NW_ALL_REDUCE, NW_PATH_PHB, GB4, &cal);
	assert_false(cal);
	nw_expect_efficiency(NW_REDUCE, NW_PATH_NVL, GB4, &cal);
	assert_false(cal);
}

static void from_topology(void **state)
{
	(void)state;
	struct nw_topo *t = h200();
	struct nw_expect e;
	char err[256];
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 2, 2, GB4, &e, err, sizeof(err)), 0);
	assert_float_equal(e.link_gbs, 478.116, 0.001);
	assert_int_equal(e.path, NW_PATH_NVL);
	assert_int_equal(e.nvlinks, 18);
	assert_true(e.calibrated);
	assert_float_equal(e.busbw_gbs, 339.68, 0.05);
	assert_non_null(strstr(e.basis, "NV18"));
	/* One GPU or one rank: nothing crosses a link. */
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 1, 1, GB4, &e, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "1 rank"));
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 4, 4, GB4, &e, err, sizeof(err)), -1);
	/* Across hosts with no NIC rate known: said, not guessed. */
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 4, 2, GB4, &e, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NIC"));
	/* With a 400 Gb/s RDMA port shared by 2 local ranks: 25 GB/s each, uncalibrated. */
	t->nnics = 1;
	memset(&t->nics[0], 0, sizeof(t->nics[0]));
	strcpy(t->nics[0].kind, "ib");
	t->nics[0].up = 1;
	t->nics[0].rate_gbps = 400;
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 4, 2, GB4, &e, err, sizeof(err)), 0);
	assert_float_equal(e.link_gbs, 25.0, 1e-9);
	assert_false(e.calibrated);
	/* A pair without NVLink falls back to the PCIe link, flagged uncalibrated. */
	t->pairs[0][1].path = t->pairs[1][0].path = NW_PATH_PHB;
	t->pairs[0][1].link_gbs = t->pairs[1][0].link_gbs = 63.0;
	assert_int_equal(nw_expect_for_topo(t, NW_ALL_REDUCE, 2, 2, GB4, &e, err, sizeof(err)), 0);
	assert_int_equal(e.path, NW_PATH_PHB);
	assert_float_equal(e.link_gbs, 63.0, 1e-9);
	assert_false(e.calibrated);
	free(t);
}

/* topo's table: six collectives at 1 GB and 4 GB on the visible GPUs, or why there is none. */
static void table(void **state)
{
	(void)state;
	struct nw_topo *t = h200(), *vis = calloc(1, sizeof(*vis));
	char why[1024];
	int pos[2] = { 0, 1 };
	nw_topo_subset(t, pos, 2, vis);
	json_t *ops = nw_expect_table(t, vis, why, sizeof(why));
	assert_non_null(ops);
	assert_string_equal(why, "");
	assert_int_equal(json_array_size(ops), 6);
	json_t *ar = json_array_get(ops, 0);
	assert_string_equal(json_string_value(json_object_get(ar, "op")), "all_reduce");
	assert_string_equal(json_string_value(json_object_get(ar, "path")), "NV18");
	assert_float_equal(json_real_value(json_object_get(ar, "busbw_1g")), 324.85, 0.05);
	assert_float_equal(json_real_value(json_object_get(ar, "busbw_4g")), 339.68, 0.05);
	assert_true(json_is_true(json_object_get(ar, "calibrated")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 5), "op")), "sendrecv");
	json_decref(ops);
	/* one visible GPU, then none at all */
	nw_topo_subset(t, pos, 1, vis);
	assert_null(nw_expect_table(t, vis, why, sizeof(why)));
	assert_string_equal(why, "1 visible GPU: nothing crosses a link");
	t->ngpus = 0;
	snprintf(t->nvml_why, sizeof(t->nvml_why), "no NVIDIA driver");
	assert_null(nw_expect_table(t, vis, why, sizeof(why)));
	assert_string_equal(why, "no GPU: no NVIDIA driver");
	free(vis);
	free(t);
}

static void bad_inputs(void **state)
{
	(void)state;
	struct nw_expect e;
	char err[256];
	assert_int_equal(nw_expect_for_link(NW_ALL_REDUCE, 2, NW_PATH_NVL, 0.0, GB4, &e, err, sizeof(err)), -1);
	assert_int_equal(nw_expect_for_link(NW_ALL_REDUCE, 1, NW_PATH_NVL, 100.0, GB4, &e, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(calibration_points),
		cmocka_unit_test(between_and_beyond),
		cmocka_unit_test(from_topology),
		cmocka_unit_test(table),
		cmocka_unit_test(bad_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
