/* SPDX-License-Identifier: Apache-2.0 */
/* Topology from recorded trees: path classes, NVLink pairs, NICs, visibility. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/nvml.h"
#include "probe/sysfs.h"
#include "probe/topo.h"

static char fixture[1024];

static const char *fx(const char *rel)
{
	const char *src = getenv("SRCDIR");
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/%s", src ? src : ".", rel);
	return fixture;
}

/* The 2xH200 tree and its NVML answers. */
static struct nw_topo *h200(struct nw_nvml_snap **snap_out)
{
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	struct nw_topo *t = calloc(1, sizeof(*t));
	char err[512], root[1024];
	assert_int_equal(nw_nvml_snap_load(fx("nvml/h200x2.json"), s, err, sizeof(err)), 0);
	snprintf(root, sizeof(root), "%s", fx("sysfs/h200x2"));
	assert_int_equal(nw_topo_probe(t, root, s), 0);
	if (snap_out)
		*snap_out = s;
	else
		free(s);
	return t;
}

static void path_classes(void **state)
{
	(void)state;
	const char *gpu0 = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
	const char *gpu1 = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0";
	const char *deep = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0";
	const char *root_port2 = "/sys/devices/pci0000:00/0000:00:02.0/0000:08:00.0";
	const char *other_hb = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
	/* Same switch: one bridge on each side below the common one. */
	assert_int_equal(nw_pci_path_class(gpu0, gpu1, 0, 0), NW_PATH_PIX);
	/* A second switch level below: several bridges. */
	assert_int_equal(nw_pci_path_class(gpu0, deep, 0, 0), NW_PATH_PXB);
	/* Different root ports of one host bridge. */
	assert_int_equal(nw_pci_path_class(gpu0, root_port2, 0, 0), NW_PATH_PHB);
	/* Different host bridges: same NUMA node, or not. */
	assert_int_equal(nw_pci_path_class(gpu0, other_hb, 0, 0), NW_PATH_NODE);
	assert_int_equal(nw_pci_path_class(gpu0, other_hb, 0, 1), NW_PATH_SYS);
	assert_int_equal(nw_pci_path_class(gpu0, gpu0, 0, 0), NW_PATH_SELF);
	assert_int_equal(nw_pci_path_class("", gpu0, 0, 0), NW_PATH_UNKNOWN);
	char lab[16];
	assert_string_equal(nw_path_label(NW_PATH_NVL, 18, lab, sizeof(lab)), "NV18");
	assert_string_equal(nw_path_label(NW_PATH_PXB, 0, lab, sizeof(lab)), "PXB");
}

static void pcie_bandwidth(void **state)
{
	(void)state;
	/* Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s each way. */
	assert_float_equal(nw_pcie_gbs("32.0 GT/s PCIe", 16), 63.015, 0.01);
	/* Gen2 x8: 8b/10b. */
	assert_float_equal(nw_pcie_gbs("5.0 GT/s PCIe", 8), 4.0, 0.001);
	assert_float_equal(nw_pcie_gbs("Unknown", 16), 0.0, 0.0);
	assert_float_equal(nw_pcie_gbs("16.0 GT/s", 0), 0.0, 0.0);
	assert_float_equal(nw_pcie_gen_gts(4), 16.0, 0.0);
	assert_float_equal(nw_pcie_gen_gts(9), 0.0, 0.0);
}

static void h200_pair_is_nv18(void **state)
{
	(void)state;
	struct nw_topo *t = h200(NULL);
	assert_int_equal(t->ngpus, 2);
	assert_string_equal(t->gpu_source, "nvml");
	assert_string_equal(t->gpus[0].model, "NVIDIA H200");
	assert_string_equal(t->gpus[1].bus_id, "0000:00:07.0");
	assert_string_equal(t->gpus[0].cpus, "0-31");
	assert_int_equal(t->gpus[0].numa, -1);
	assert_int_equal(t->pairs[0][1].path, NW_PATH_NVL);
	assert_int_equal(t->pairs[0][1].nvlinks, 18);
	assert_float_equal(t->pairs[0][1].link_gbs, 478.116, 0.001);
	assert_int_equal(t->pairs[1][0].p2p, 1);
	assert_int_equal(t->gpus[0].nvlinks_active, 18);
	/* eth0 (virtio on the root bus) is nearest both GPUs through the host bridge. */
	assert_int_equal(t->nnics, 1);
	assert_string_equal(t->nics[0].name, "eth0");
	assert_string_equal(t->nics[0].kind, "eth");
	assert_int_equal(t->nics[0].up, 1);
	assert_int_equal(t->nics[0].nearest_path, NW_PATH_PHB);
	assert_int_equal(t->nics[0].nnearest, 2);
	free(t);
}

/* The fingerprint's line of links and its FNV-1a hash. */
static void summary_line(void **state)
{
	(void)state;
	struct nw_topo *t = h200(NULL), *one = calloc(1, sizeof(*one));
	char sum[256], hash[17];
	nw_topo_summary(t, sum, sizeof(sum), hash);
	assert_string_equal(sum, "GPU0-GPU1 NV18 478.1 GB/s");
	assert_string_equal(hash, "af7d8b216e885f63");
	int pos[1] = { 1 };
	nw_topo_subset(t, pos, 1, one);
	nw_topo_summary(one, sum, sizeof(sum), hash);
	assert_string_equal(sum, "1 GPU");
	assert_string_equal(hash, "0e29e58849b91738");
	free(one);
	free(t);
}

static void h200_without_nvml_uses_pci_tree(void **state)
{
	(void)state;
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	struct nw_topo *t = calloc(1, sizeof(*t));
	nw_nvml_snap_none(s, "no NVIDIA driver (libnvidia-ml.so.1 not found)");
	nw_topo_probe(t, fx("sysfs/h200x2"), s);
	assert_string_equal(t->gpu_source, "sysfs");
	assert_int_equal(t->ngpus, 2);
	assert_string_equal(t->gpus[0].model, "NVIDIA 10de:2335");
	/* Without NVML the pair is a PCIe path; P2P unknown, never "0". */
	assert_int_equal(t->pairs[0][1].path, NW_PATH_PHB);
	assert_int_equal(t->pairs[0][1].p2p, -1);
	assert_string_equal(t->nvml_why, "no NVIDIA driver (libnvidia-ml.so.1 not found)");
	free(s);
	free(t);
}

static void nogpu_vm_recording(void **state)
{
	(void)state;
	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	struct nw_topo *t = calloc(1, sizeof(*t));
	nw_nvml_snap_none(s, "no NVIDIA driver");
	nw_topo_probe(t, fx("sysfs/nogpu-vm"), s);
	assert_int_equal(t->ngpus, 0);
	assert_int_equal(t->nnics, 1);
	assert_string_equal(t->nics[0].bus_id, "0000:00:03.0");
	json_t *j = nw_topo_to_json(t);
	assert_int_equal(json_array_size(json_object_get(j, "gpus")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "nvml_unavailable")), "no NVIDIA driver");
	json_decref(j);
	free(s);
	free(t);
}

static void visible_devices(void **state)
{
	(void)state;
	struct nw_topo *t = h200(NULL);
	int pos[8];
	char err[256];
	assert_int_equal(nw_topo_visible(t, NULL, pos, 8, err, sizeof(err)), 2);
	assert_int_equal(nw_topo_visible(t, "1,0", pos, 8, err, sizeof(err)), 2);
	assert_int_equal(pos[0], 1);
	assert_int_equal(nw_topo_visible(t, "GPU-bd4d", pos, 8, err, sizeof(err)), 1);
	assert_int_equal(pos[0], 1);
	assert_int_equal(nw_topo_visible(t, "0,7", pos, 8, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'7'"));
	assert_int_equal(nw_topo_visible(t, "GPU-", pos, 8, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "several"));
	assert_int_equal(nw_topo_visible(t, "0,0", pos, 8, err, sizeof(err)), -1);
	struct nw_topo *sub = calloc(1, sizeof(*sub));
	int one[1] = { 1 };
	nw_topo_subset(t, one, 1, sub);
	assert_int_equal(sub->ngpus, 1);
	assert_int_equal(sub->gpus[0].index, 1);
	assert_int_equal(sub->pairs[0][0].path, NW_PATH_SELF);
	free(sub);
	free(t);
}

static void cpulists(void **state)
{
	(void)state;
	unsigned long long b[4];
	char buf[64];
	assert_int_equal(nw_cpulist_parse("0-3,8,10-11", b, 256), 7);
	nw_cpulist_format(b, 256, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,8,10-11");
	assert_int_equal(nw_cpulist_parse("", b, 256), 0);
	assert_int_equal(nw_cpulist_parse("3-1", b, 256), -1);
	assert_int_equal(nw_cpulist_parse("0-300", b, 256), -1);
	assert_int_equal(nw_cpulist_parse("1,x", b, 256), -1);
}

static void root_prefix(void **state)
{
	(void)state;
	char out[512], line[64];
	long v;
	const char *root = fx("sysfs/h200x2");
	char r[1024];
	snprintf(r, sizeof(r), "%s", root);
	assert_int_equal(nw_sys_resolve(r, "/sys/bus/pci/devices/0000:00:06.0", out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/devices/pci0000:00/0000:00:06.0");
	assert_int_equal(nw_sys_long(r, "/sys/bus/pci/devices/0000:00:06.0/vendor", &v), 0);
	assert_int_equal(v, 0x10de);
	assert_int_equal(nw_sys_line(r, "/sys/nothing/here", line, sizeof(line)), -1);
	assert_string_equal(line, "");
	/* A link that leaves the tree is refused rather than followed onto the host. */
	assert_int_equal(nw_sys_resolve(r, "/../../../../../../../../etc", out, sizeof(out)), -1);
	setenv("NCCLWATCH_SYSROOT", "/x", 1);
	assert_string_equal(nw_sys_root(NULL), "/x");
	assert_string_equal(nw_sys_root("/y"), "/y");
	unsetenv("NCCLWATCH_SYSROOT");
	assert_string_equal(nw_sys_root(NULL), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(path_classes),
		cmocka_unit_test(pcie_bandwidth),
		cmocka_unit_test(h200_pair_is_nv18),
		cmocka_unit_test(summary_line),
		cmocka_unit_test(h200_without_nvml_uses_pci_tree),
		cmocka_unit_test(nogpu_vm_recording),
		cmocka_unit_test(visible_devices),
		cmocka_unit_test(cpulists),
		cmocka_unit_test(root_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
