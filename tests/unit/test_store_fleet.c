/* SPDX-License-Identifier: Apache-2.0 */
/* fleet: medians per GPU group, outliers by the lowest share, what differs from the majority. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "model/result.h"
#include "store/fleet.h"
#include "util/util.h"

/* A check of host with busbw at all_reduce 64M (both placements) and 1G (out-of-place). */
static void make(struct nw_run *run, const char *host, const char *gpus, double bw64, double bw1g,
                 const char *driver, const char *ib_hca)
{
	nw_run_init(run);
	nw_strlcpy(run->h.host, host, sizeof(run->h.host));
	nw_strlcpy(run->h.source, "check", sizeof(run->h.source));
	const uint64_t sizes[3] = { 64 << 20, 64 << 20, 1 << 30 };
	const double bws[3] = { bw64 - 1, bw64 + 1, bw1g };
	for (int k = 0; k < 3; k++) {
		struct nw_row r;
		memset(&r, 0, sizeof(r));
		nw_strlcpy(r.op, "all_reduce", sizeof(r.op));
		r.size_bytes = sizes[k];
		r.inplace = k == 1;
		r.busbw_gbs = bws[k];
		nw_run_add(run, &r);
	}
	json_t *env = json_object();
	if (ib_hca)
		json_object_set_new(env, "NCCL_IB_HCA", json_string(ib_hca));
	json_object_set_new(env, "SLURM_JOB_ID", json_string(host)); /* not NCCL_*: never compared */
	json_t *fp = json_pack("{s:s,s:s,s:s,s:s,s:o}", "gpus", gpus, "driver", driver, "nccl_version", "2.27.7",
	                       "topology_hash", "abc", "env", env);
	run->h.extra = json_pack("{s:o,s:s}", "fingerprint", fp, "check_verdict", "pass");
}

static const struct nw_fleet_host *find(const struct nw_fleet *f, const char *host)
{
	for (size_t i = 0; i < f->nhosts; i++)
		if (!strcmp(f->hosts[i].host, host))
			return &f->hosts[i];
	return NULL;
}

static void test_outlier_and_diffs(void **state)
{
	(void)state;
	struct nw_run runs[6];
	make(&runs[0], "a", "8 x H200", 400, 450, "560", "mlx5");
	make(&runs[1], "b", "8 x H200", 404, 452, "560", "mlx5");
	make(&runs[2], "c", "8 x H200", 398, 400, "550", NULL);   /* 1G at 400 of 450: 88.9% */
	make(&runs[3], "d", "8 x H200", 402, 449, "560", "mlx5");
	make(&runs[4], "e", "4 x H100", 300, 100, "550", NULL);   /* alone in its group */
	make(&runs[5], "f", "8 x H200", 401, 451, "560", "mlx5");
	long long ids[6] = { 1, 2, 3, 4, 5, 6 };
	struct nw_fleet f;
	nw_fleet_analyze(&f, runs, ids, 6, 0.9);
	assert_int_equal(f.nhosts, 6);
	assert_int_equal(f.noutliers, 1);
	assert_string_equal(f.hosts[0].host, "c");
	assert_int_equal(f.hosts[0].run_id, 3);
	assert_true(f.hosts[0].outlier);
	assert_int_equal(f.hosts[0].group_size, 5);
	/* the 64M cell: the mean of both placements (398), median of 400,404,398,402,401 = 401 */
	assert_int_equal(f.hosts[0].ncells, 2);
	assert_float_equal(f.hosts[0].cells[0].busbw, 398, 1e-9);
	assert_float_equal(f.hosts[0].cells[0].median, 401, 1e-9);
	assert_float_equal(f.hosts[0].worst, 400.0 / 450.0, 1e-9);
	assert_int_equal(f.hosts[0].worst_cell, 1);
	/* driver and the unset NCCL_IB_HCA differ; SLURM_JOB_ID (not NCCL_*) is not compared */
	assert_int_equal(f.hosts[0].ndiffs, 2);
	assert_string_equal(f.hosts[0].diffs[0].field, "driver");
	assert_string_equal(f.hosts[0].diffs[0].value, "550");
	assert_string_equal(f.hosts[0].diffs[0].fleet, "560");
	assert_string_equal(f.hosts[0].diffs[1].field, "env.NCCL_IB_HCA");
	assert_string_equal(f.hosts[0].diffs[1].value, "");
	assert_string_equal(f.hosts[0].diffs[1].fleet, "mlx5");
	/* the others by name; the H100 alone is at its own median */
	assert_string_equal(f.hosts[1].host, "a");
	const struct nw_fleet_host *e = find(&f, "e");
	assert_non_null(e);
	assert_false(e->outlier);
	assert_int_equal(e->group_size, 1);
	assert_float_equal(e->worst, 1, 1e-12);
	assert_int_equal(e->ndiffs, 0);
	assert_int_equal(find(&f, "a")->ndiffs, 0);
	json_t *j = nw_fleet_to_json(&f);
	assert_int_equal(json_integer_value(json_object_get(j, "outliers")), 1);
	json_decref(j);
	nw_fleet_release(&f);
	assert_int_equal(f.nhosts, 0);
	/* a lower threshold: nobody */
	nw_fleet_analyze(&f, runs, ids, 6, 0.85);
	assert_int_equal(f.noutliers, 0);
	nw_fleet_release(&f);
	for (int i = 0; i < 6; i++)
		nw_run_release(&runs[i]);
}

static void test_empty(void **state)
{
	(void)state;
	struct nw_fleet f;
	nw_fleet_analyze(&f, NULL, NULL, 0, 0.9);
	assert_int_equal(f.nhosts, 0);
	assert_int_equal(f.noutliers, 0);
	nw_fleet_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outlier_and_diffs),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
