/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gathering facts from a root-prefixed tree: PCIe config space (ACS),
 * /proc/mounts, limits, logind drop-ins, CPU affinity, a libnccl's CUDA
 * tag; and the NCCL variable names. Broken trees are built in a temp dir
 * from the recorded H200 tree's layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/ncclenv.h"
#include "probe/topo.h"

static char tmp[256];

static void mkdirs(const char *rel)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s%s", tmp, rel);
	for (char *s = p + strlen(tmp) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void put(const char *rel, const void *data, size_t len)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s%s", tmp, rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	mkdirs(p + strlen(tmp));
	*slash = '/';
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	fwrite(data, 1, len, f);
	fclose(f);
}

static void puts_(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

static void link_(const char *target, const char *rel)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s%s", tmp, rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	mkdirs(p + strlen(tmp));
	*slash = '/';
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/nwdoctor.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

/* A GPU behind a PCIe switch whose downstream port has ACS redirect on. */
static void acs_and_links(void **state)
{
	(void)state;
	const char *sw = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
	char dir[512];
	/* Root port 00:01.0: ACS capability at 0x100 with control 0 (off). */
	unsigned char cfg[4096];
	memset(cfg, 0, sizeof(cfg));
	cfg[0x100] = 0x0d; cfg[0x101] = 0x00; cfg[0x102] = 0x01; cfg[0x103] = 0x00; /* id 0xd, v1, next 0 */
	put("/sys/devices/pci0000:00/0000:00:01.0/config", cfg, sizeof(cfg));
	/* Switch upstream port 01:00.0: AER first (id 1, next 0x140), ACS at 0x140 with redirect on. */
	memset(cfg, 0, sizeof(cfg));
	cfg[0x100] = 0x01; cfg[0x102] = 0x01; cfg[0x103] = 0x14; /* next = 0x140 */
	cfg[0x140] = 0x0d; cfg[0x142] = 0x01;
	cfg[0x146] = 0x1d; /* SV RR CR UF */
	put("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/config", cfg, sizeof(cfg));
	/* Downstream port 02:00.0: only the first 64 bytes readable (not root). */
	put("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config", cfg, 64);
	puts_("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_speed", "16.0 GT/s PCIe\n");
	puts_("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_speed", "32.0 GT/s PCIe\n");
	puts_("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_width", "16\n");
	puts_("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_width", "16\n");
	snprintf(dir, sizeof(dir), "%s/0000:03:00.0", sw);
	char f[600];
	snprintf(f, sizeof(f), "%s/vendor", dir);
	puts_(f, "0x10de\n");
	snprintf(f, sizeof(f), "%s/class", dir);
	puts_(f, "0x030200\n");
	snprintf(f, sizeof(f), "%s/device", dir);
	puts_(f, "0x2335\n");
	snprintf(f, sizeof(f), "%s/numa_node", dir);
	puts_(f, "0\n");
	link_("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0",
	      "/sys/bus/pci/devices/0000:03:00.0");
	puts_("/proc/mounts", "proc /proc proc rw 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n");
	puts_("/proc/self/limits", "Limit                     Soft Limit           Hard Limit           Units     \n"
	                           "Max locked memory         65536                65536                bytes     \n");
	puts_("/proc/self/status", "Name:\tx\nCpus_allowed_list:\t4-7\n");
	puts_("/etc/systemd/logind.conf", "[Login]\nRemoveIPC=no\n");
	puts_("/etc/systemd/logind.conf.d/50-site.conf", "[Login]\nRemoveIPC=yes\n");
	mkdirs("/run/systemd/system");

	struct nw_nvml_snap *s = calloc(1, sizeof(*s));
	struct nw_topo *t = calloc(1, sizeof(*t));
	struct nw_doc_ctx c;
	char *env[] = { NULL };
	nw_nvml_snap_none(s, "no driver");
	nw_topo_probe(t, tmp, s);
	assert_int_equal(t->ngpus, 1);
	nw_doc_gather(&c, tmp, env, s, t);
	assert_int_equal(c.nacs, 3);
	assert_string_equal(c.acs[0].bdf, "0000:00:01.0");
	assert_true(c.acs[0].readable && c.acs[0].has_acs);
	assert_int_equal(c.acs[0].ctrl, 0);
	assert_string_equal(c.acs[1].bdf, "0000:01:00.0");
	assert_int_equal(c.acs[1].ctrl, 0x1d);
	assert_string_equal(c.acs[1].below, "GPU0");
	assert_false(c.acs[2].readable);
	assert_int_equal(c.nlinks, 1);
	assert_string_equal(c.links[0].speed_cur, "16.0 GT/s PCIe");
	assert_int_equal(c.shm_bytes, 64LL << 20);
	assert_int_equal(c.memlock, 65536);
	assert_true(c.have_affinity);
	assert_int_equal(c.affinity[0], 0xf0ULL);
	assert_true(c.logind_present && c.systemd_running);
	assert_non_null(strstr(c.logind, "50-site.conf"));

	struct nw_findings fd = { 0 };
	const char *only[] = { "os" };
	nw_doc_run(&c, only, 1, &fd);
	int acs_err = 0, shm_err = 0, ipc = 0;
	for (size_t i = 0; i < fd.n; i++) {
		acs_err |= !strcmp(fd.v[i].id, "os.pcie_acs") && fd.v[i].sev == NW_SEV_ERROR &&
		           strstr(fd.v[i].seen, "0000:01:00.0") != NULL;
		shm_err |= !strcmp(fd.v[i].id, "os.shm") && fd.v[i].sev == NW_SEV_ERROR;
		ipc |= !strcmp(fd.v[i].id, "os.removeipc") && strstr(fd.v[i].seen, "50-site.conf") != NULL;
	}
	assert_true(acs_err);
	assert_true(shm_err);
	assert_true(ipc);
	nw_findings_release(&fd);
	nw_doc_ctx_release(&c);
	free(s);
	free(t);
}

static void nccl_cuda_tag(void **state)
{
	(void)state;
	char lib[600], out[16];
	snprintf(lib, sizeof(lib), "%s/libnccl.so.2", tmp);
	FILE *f = fopen(lib, "wb");
	assert_non_null(f);
	for (int i = 0; i < 5000; i++)
		fputc(i & 0xff, f);
	fputs("NCCL version %s", f);
	fputc(0, f);
	fputs("NCCL version 2.28.9+cuda13.0", f);
	fputc(0, f);
	fclose(f);
	assert_int_equal(nw_doc_nccl_cuda(lib, out, sizeof(out)), 0);
	assert_string_equal(out, "13.0");
	assert_int_equal(nw_doc_nccl_cuda("/nonexistent/libnccl.so.2", out, sizeof(out)), -1);
	f = fopen(lib, "wb");
	fputs("no tag here", f);
	fclose(f);
	assert_int_equal(nw_doc_nccl_cuda(lib, out, sizeof(out)), -1);
}

static void nccl_names(void **state)
{
	(void)state;
	assert_true(nw_ncclenv_count() > 200);
	assert_true(nw_ncclenv_known("NCCL_IB_HCA"));
	assert_true(nw_ncclenv_known("NCCL_NVLS_ENABLE"));
	assert_true(nw_ncclenv_known("NCCL_PROFILER_PLUGIN"));
	assert_true(nw_ncclenv_known("NCCL_LL_THRESHOLD")); /* deprecated, still not a typo */
	assert_false(nw_ncclenv_known("NCCL_IBHCA"));
	assert_string_equal(nw_ncclenv_suggest("NCCL_IBHCA"), "NCCL_IB_HCA");
	assert_string_equal(nw_ncclenv_suggest("NCCL_SOCKET_IFNAM"), "NCCL_SOCKET_IFNAME");
	assert_string_equal(nw_ncclenv_suggest("NCCL_P2P_DISBALE"), "NCCL_P2P_DISABLE");
	assert_null(nw_ncclenv_suggest("NCCL_SOMETHING_ELSE_ENTIRELY"));
	assert_non_null(nw_ncclenv_owner("NCCL_ASYNC_ERROR_HANDLING"));
	assert_int_equal(nw_edit_distance("abc", "acb"), 1);
	assert_int_equal(nw_edit_distance("", "abc"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(acs_and_links),
		cmocka_unit_test(nccl_cuda_tag),
		cmocka_unit_test(nccl_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
