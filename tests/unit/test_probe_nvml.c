/* SPDX-License-Identifier: Apache-2.0 */
/* NVML: recorded answers replayed, JSON round trip, a library that is missing or not NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/nvml.h"
#include "probe/nvml_json.h"

static const char *fx(const char *rel)
{
	static char buf[1024];
	const char *src = getenv("SRCDIR");
	snprintf(buf, sizeof(buf), "%s/tests/fixtures/%s", src ? src : ".", rel);
	return buf;
}

static void replay_h200(void **state)
{
	(void)state;
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	char err[512];
	assert_int_equal(nw_nvml_snap_load(fx("nvml/h200x2.json"), s, err, sizeof(err)), 0);
	assert_true(s->loaded);
	assert_string_equal(s->driver, "580.159.04");
	assert_int_equal(s->cuda_driver, 13000);
	assert_int_equal(s->ngpus, 2);
	assert_int_equal(s->gpus[1].nlinks, 18);
	assert_float_equal(s->gpus[0].nvlink_gbs, 26.562, 1e-9);
	assert_string_equal(s->gpus[0].links[3].remote_bus_id, "0000:00:07.0");
	assert_int_equal(s->gpus[0].links[3].err[2], 0);
	/* Not recorded: absent, never 0. */
	assert_int_equal(s->gpus[0].pcie_width_cur, NW_NVML_ABSENT);
	assert_int_equal(s->gpus[0].links[0].err_later[0], NW_NVML_ABSENT);
	assert_int_equal(s->gpus[0].remap_pending, NW_NVML_ABSENT);
	assert_int_equal(s->pairs[0][1].p2p_read, 0);
	assert_int_equal(s->pairs[0][1].topo_level, NW_NVML_ABSENT);
	assert_int_equal(nw_nvml_find_bus(s, "00000000:00:07.0"), 1);
	assert_int_equal(nw_nvml_find_bus(s, "0000:00:08.0"), -1);
	free(s);
}

static void round_trip(void **state)
{
	(void)state;
	struct nw_nvml_snap *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	char err[512];
	assert_int_equal(nw_nvml_snap_load(fx("nvml/h200x2.json"), a, err, sizeof(err)), 0);
	a->gpus[0].links[4].err_later[1] = 7;
	a->gpus[1].fabric_state = NW_FABRIC_COMPLETED;
	json_t *j = nw_nvml_snap_to_json(a);
	assert_int_equal(nw_nvml_snap_from_json(j, b, err, sizeof(err)), 0);
	json_decref(j);
	assert_int_equal(b->ngpus, 2);
	assert_int_equal(b->gpus[0].links[4].err_later[1], 7);
	assert_int_equal(b->gpus[0].links[4].err_later[0], NW_NVML_ABSENT);
	assert_int_equal(b->gpus[1].fabric_state, NW_FABRIC_COMPLETED);
	assert_int_equal(b->gpus[1].fabric_status, NW_NVML_ABSENT);
	assert_float_equal(b->gpus[1].nvlink_gbs, 26.562, 1e-9);
	assert_string_equal(b->gpus[1].uuid, a->gpus[1].uuid);
	free(a);
	free(b);
}

static void bad_recordings(void **state)
{
	(void)state;
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	char err[512];
	static const char *docs[] = {
		"[]",
		"{\"schema\":\"other/1\"}",
		"{\"schema\":\"ncclwatch.nvml/1\",\"gpus\":{}}",
		"{\"schema\":\"ncclwatch.nvml/1\",\"gpus\":[{\"bus_id\":\"zz\"}]}",
		"{\"schema\":\"ncclwatch.nvml/1\",\"gpus\":[{\"persistence\":\"on\"}]}",
		"{\"schema\":\"ncclwatch.nvml/1\",\"gpus\":[{}],\"pairs\":[{\"a\":0,\"b\":3}]}",
		"{\"schema\":\"ncclwatch.nvml/1\",\"gpus\":[{\"nvlink\":{\"links\":[1]}}]}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *d = json_loads(docs[i], 0, NULL);
		assert_non_null(d);
		err[0] = '\0';
		assert_int_equal(nw_nvml_snap_from_json(d, s, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
		json_decref(d);
	}
	assert_int_equal(nw_nvml_snap_load("/nonexistent/nvml.json", s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/nvml.json"));
	free(s);
}

static void missing_library(void **state)
{
	(void)state;
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	setenv("NCCLWATCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	nw_nvml_snapshot(s);
	assert_false(s->loaded);
	assert_non_null(strstr(s->why, "no NVIDIA driver"));
	assert_non_null(strstr(s->why, "/nonexistent/libnvidia-ml.so.1"));
	assert_int_equal(s->ngpus, 0);
	/* A library that is not NVML: the first required entry point is named. */
	setenv("NCCLWATCH_NVML_LIB", "libm.so.6", 1);
	nw_nvml_snapshot(s);
	assert_false(s->loaded);
	assert_non_null(strstr(s->why, "nvmlInit_v2"));
	unsetenv("NCCLWATCH_NVML_LIB");
	free(s);
}

static void bus_ids(void **state)
{
	(void)state;
	char b[20];
	assert_int_equal(nw_pci_bus_norm("00000000:1A:00.0", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:1a:00.0");
	assert_int_equal(nw_pci_bus_norm("3b:00.1", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:3b:00.1");
	assert_int_equal(nw_pci_bus_norm("0000:00:20.0", b, sizeof(b)), -1);
	assert_int_equal(nw_pci_bus_norm("eth0", b, sizeof(b)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(replay_h200),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(bad_recordings),
		cmocka_unit_test(missing_library),
		cmocka_unit_test(bus_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
