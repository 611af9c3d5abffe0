/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every doctor check on recorded inputs, the healthy case and the broken
 * one: the 2xH200 tree and NVML answers (tests/fixtures/README.md says
 * which parts are recorded and which reconstructed), the GPU-less VM
 * recording, and facts changed one at a time to break each check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/doctor_checks.h"
#include "probe/topo.h"

struct fx {
	struct nw_nvml_snap snap;
	struct nw_topo topo;
	struct nw_doc_ctx ctx;
	struct nw_findings f;
	char *env[32];
	int nenv;
};

static const char *path(const char *rel)
{
	static char buf[4][1024];
	static int k;
	const char *src = getenv("SRCDIR");
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/tests/fixtures/%s", src ? src : ".", rel);
	return buf[k];
}

/* The healthy 2xH200 context with an environment of the given "NAME=value"s. */
static struct fx *h200(const char *const *env)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[512];
	assert_int_equal(nw_nvml_snap_load(path("nvml/h200x2.json"), &x->snap, err, sizeof(err)), 0);
	const char *root = path("sysfs/h200x2");
	nw_topo_probe(&x->topo, root, &x->snap);
	for (; env && *env; env++)
		x->env[x->nenv++] = (char *)*env;
	x->env[x->nenv] = NULL;
	nw_doc_gather(&x->ctx, root, x->env, &x->snap, &x->topo);
	/*
	 * NCCL as found on the H200 machine (reference/h200x2/machine.txt):
	 * PyTorch's 2.28.9, built for CUDA 13.0; not this machine's.
	 */
	free(x->ctx.all);
	x->ctx.nccl_state = 1;
	memset(&x->ctx.nccl, 0, sizeof(x->ctx.nccl));
	strcpy(x->ctx.nccl.path, "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2");
	strcpy(x->ctx.nccl.how, "pytorch");
	strcpy(x->ctx.nccl.version, "2.28.9");
	strcpy(x->ctx.nccl_cuda, "13.0");
	x->ctx.all = calloc(1, sizeof(*x->ctx.all));
	x->ctx.all[0] = x->ctx.nccl;
	x->ctx.nall = 1;
	x->ctx.all_state = 1;
	/* ncclwatch installed as the Debian package puts it (not what this machine has) */
	struct nw_live_facts *lf = &x->ctx.live;
	memset(lf, 0, sizeof(*lf));
	lf->nccl_found = 1;
	strcpy(lf->nccl_path, x->ctx.nccl.path);
	strcpy(lf->nccl_how, x->ctx.nccl.how);
	strcpy(lf->nccl_version, x->ctx.nccl.version);
	lf->plugin.found = 1;
	strcpy(lf->plugin.path, "/usr/lib/x86_64-linux-gnu/libnccl-profiler-ncclwatch.so");
	lf->plugin.abis = 1u << 4 | 1u << 5 | 1u << 6;
	strcpy(lf->interpose.looked, "/usr/bin, /usr/lib/x86_64-linux-gnu");
	x->ctx.live_state = 1;
	return x;
}

static void done(struct fx *x)
{
	nw_findings_release(&x->f);
	nw_doc_ctx_release(&x->ctx);
	free(x);
}

/* Run one check (by id) afresh; returns its worst severity. */
static enum nw_sev run1(struct fx *x, const char *id)
{
	nw_findings_release(&x->f);
	const char *only[1] = { id };
	nw_doc_run(&x->ctx, only, 1, &x->f);
	assert_true(x->f.n > 0);
	for (size_t i = 0; i < x->f.n; i++)
		assert_string_equal(x->f.v[i].id, id);
	return nw_findings_worst(&x->f);
}

/* Whether any finding's "seen" contains s. */
static int seen(const struct fx *x, const char *s)
{
	for (size_t i = 0; i < x->f.n; i++)
		if (strstr(x->f.v[i].seen, s))
			return 1;
	return 0;
}

static void table_is_whole(void **state)
{
	(void)state;
	size_t n;
	const struct nw_doc_check *t = nw_doc_checks(&n);
	assert_true(n >= 25);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(t[i].fn);
		assert_true(strlen(t[i].id) > 3 && strlen(t[i].title) > 3);
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(t[i].id, t[k].id);
	}
	/* The healthy 2xH200 with a clean environment: nothing above info. */
	struct fx *x = h200(NULL);
	nw_doc_run(&x->ctx, NULL, 0, &x->f);
	assert_true(x->f.n >= n);
	assert_int_equal(nw_findings_exit(&x->f), 0);
	done(x);
}

/* --only: ids and groups select checks; a name that selects none is found. */
static void only_selection(void **state)
{
	(void)state;
	size_t n, nenv = 0;
	const struct nw_doc_check *t = nw_doc_checks(&n);
	for (size_t i = 0; i < n; i++)
		nenv += !strncmp(t[i].id, "env.", 4);
	assert_true(nenv > 1);
	assert_int_equal(nw_doc_nselected(NULL, 0), n);
	const char *env[] = { "env" };
	assert_int_equal(nw_doc_nselected(env, 1), nenv);
	const char *two[] = { "env", "hw.nvlink" };
	assert_int_equal(nw_doc_nselected(two, 2), nenv + 1);
	/* a prefix that is not a group selects nothing */
	const char *bad[] = { "hw.nvlink", "en", "nosuch" };
	assert_int_equal(nw_doc_nselected(&bad[1], 1), 0);
	assert_string_equal(nw_doc_unmatched(bad, 3), "en");
	assert_null(nw_doc_unmatched(two, 2));
	assert_null(nw_doc_unmatched(NULL, 0));
}

static void env_names(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "NCCL_IB_HCA=mlx5_0", "NCCL_DEBUG=WARN", NULL });
	assert_int_equal(run1(x, "env.nccl_names"), NW_SEV_OK);
	done(x);
	x = h200((const char *[]){ "NCCL_IBHCA=mlx5_0", "NCCL_SOCKET_IFNAM=eth0", "NCCL_TOTALLY_MADE_UP=1", NULL });
	assert_int_equal(run1(x, "env.nccl_names"), NW_SEV_WARN);
	assert_true(seen(x, "NCCL_IBHCA=mlx5_0 is not an NCCL variable (did you mean NCCL_IB_HCA?)"));
	assert_true(seen(x, "did you mean NCCL_SOCKET_IFNAME?"));
	assert_true(seen(x, "NCCL_TOTALLY_MADE_UP=1 is not an NCCL variable"));
	assert_false(seen(x, "NCCL_TOTALLY_MADE_UP=1 is not an NCCL variable (did"));
	done(x);
	/* Set by NGC images and PyTorch: said whose, not flagged. */
	x = h200((const char *[]){ "NCCL_VERSION=2.28.3-1", "NCCL_ASYNC_ERROR_HANDLING=1", NULL });
	assert_int_equal(run1(x, "env.nccl_names"), NW_SEV_INFO);
	assert_true(seen(x, "PyTorch"));
	done(x);
}

static void socket_ifname(void **state)
{
	(void)state;
	static const char *good[] = { "NCCL_SOCKET_IFNAME=eth", "NCCL_SOCKET_IFNAME==eth0",
	                              "NCCL_SOCKET_IFNAME=^docker,lo", "NCCL_SOCKET_IFNAME=eth0,ib" };
	for (size_t i = 0; i < 4; i++) {
		struct fx *x = h200((const char *[]){ good[i], NULL });
		enum nw_sev s = run1(x, "env.socket_ifname");
		/* "eth0,ib": eth0 exists, ib does not: part of the list is unusable. */
		assert_int_equal(s, i == 3 ? NW_SEV_WARN : NW_SEV_OK);
		done(x);
	}
	struct fx *x = h200((const char *[]){ "NCCL_SOCKET_IFNAME=nosuchif0", NULL });
	assert_int_equal(run1(x, "env.socket_ifname"), NW_SEV_ERROR);
	assert_true(seen(x, "NCCL_SOCKET_IFNAME=nosuchif0: no interface matches 'nosuchif0'"));
	done(x);
	/* "=" asks for the exact name: "=eth" matches nothing. */
	x = h200((const char *[]){ "NCCL_SOCKET_IFNAME==eth", NULL });
	assert_int_equal(run1(x, "env.socket_ifname"), NW_SEV_ERROR);
	done(x);
	/* An interface that exists but is down. */
	x = h200((const char *[]){ "NCCL_SOCKET_IFNAME=eth0", NULL });
	strcpy(x->ctx.ifstate[0], "down");
	strcpy(x->ctx.ifstate[1], "down");
	strcpy(x->ctx.ifstate[2], "down");
	strcpy(x->ctx.ifstate[3], "down");
	assert_int_equal(run1(x, "env.socket_ifname"), NW_SEV_ERROR);
	assert_true(seen(x, "down: eth0"));
	done(x);
}

static void ib_hca(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "NCCL_IB_HCA=mlx5_0:1", NULL });
	assert_int_equal(run1(x, "env.ib_hca"), NW_SEV_ERROR);
	assert_true(seen(x, "no RDMA device matches 'mlx5_0'"));
	/* With that port present and active. */
	struct nw_topo_nic *n = &x->topo.nics[x->topo.nnics++];
	memset(n, 0, sizeof(*n));
	strcpy(n->name, "mlx5_0");
	strcpy(n->kind, "ib");
	n->port = 1;
	n->up = 1;
	assert_int_equal(run1(x, "env.ib_hca"), NW_SEV_OK);
	done(x);
}

static void workarounds(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "NCCL_P2P_DISABLE=0", "NCCL_IB_DISABLE=1", NULL });
	/* NCCL_P2P_DISABLE=0 costs nothing; IB off without RDMA ports costs nothing. */
	assert_true(run1(x, "env.workarounds") <= NW_SEV_INFO);
	done(x);
	x = h200((const char *[]){ "NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_P2P_LEVEL=LOC",
	                           "NCCL_ALGO=Ring", "NCCL_PROTO=LL", NULL });
	assert_int_equal(run1(x, "env.workarounds"), NW_SEV_WARN);
	assert_true(seen(x, "NCCL_P2P_DISABLE=1"));
	assert_true(seen(x, "NCCL_SHM_DISABLE=1"));
	assert_true(seen(x, "NCCL_P2P_LEVEL=LOC"));
	assert_true(seen(x, "NCCL_ALGO=Ring"));
	assert_true(seen(x, "NCCL_PROTO=LL"));
	assert_int_equal(x->f.n, 5);
	done(x);
	/* IB disabled while an IB port is active. */
	x = h200((const char *[]){ "NCCL_IB_DISABLE=1", NULL });
	struct nw_topo_nic *n = &x->topo.nics[x->topo.nnics++];
	memset(n, 0, sizeof(*n));
	strcpy(n->name, "mlx5_2");
	strcpy(n->kind, "ib");
	n->port = 1;
	n->up = 1;
	assert_int_equal(run1(x, "env.workarounds"), NW_SEV_WARN);
	assert_true(seen(x, "active RDMA ports mlx5_2:1"));
	done(x);
}

static void debug_level(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "NCCL_DEBUG=WARN", NULL });
	assert_int_equal(run1(x, "env.debug"), NW_SEV_OK);
	done(x);
	x = h200((const char *[]){ "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=ALL", NULL });
	assert_int_equal(run1(x, "env.debug"), NW_SEV_WARN);
	assert_true(seen(x, "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL"));
	done(x);
	x = h200((const char *[]){ "NCCL_DEBUG=trace", NULL });
	assert_int_equal(run1(x, "env.debug"), NW_SEV_WARN);
	done(x);
}

static void cuda_visible(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "CUDA_VISIBLE_DEVICES=0,1", NULL });
	assert_int_equal(run1(x, "env.cuda_visible"), NW_SEV_OK);
	done(x);
	x = h200((const char *[]){ "CUDA_VISIBLE_DEVICES=1,0", NULL });
	assert_int_equal(run1(x, "env.cuda_visible"), NW_SEV_INFO);
	assert_true(seen(x, "not in nvidia-smi order"));
	done(x);
	x = h200((const char *[]){ "CUDA_VISIBLE_DEVICES=0,5", NULL });
	assert_int_equal(run1(x, "env.cuda_visible"), NW_SEV_ERROR);
	assert_true(seen(x, "'5' matches no GPU"));
	done(x);
	x = h200((const char *[]){ "CUDA_VISIBLE_DEVICES=", NULL });
	assert_int_equal(run1(x, "env.cuda_visible"), NW_SEV_ERROR);
	done(x);
}

static void master_addr(void **state)
{
	(void)state;
	static const struct { const char *env[4]; enum nw_sev want; } cases[] = {
		{ { "MASTER_ADDR=10.1.2.3", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", NULL }, NW_SEV_OK },
		{ { "MASTER_ADDR=127.0.0.1", "WORLD_SIZE=8", "LOCAL_WORLD_SIZE=8", NULL }, NW_SEV_OK },
		{ { "MASTER_ADDR=127.0.0.1", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", NULL }, NW_SEV_ERROR },
		{ { "MASTER_ADDR=localhost", "SLURM_NNODES=2", NULL }, NW_SEV_ERROR },
		{ { "MASTER_ADDR=::1", NULL }, NW_SEV_WARN },
		{ { "MASTER_ADDR=8.8.4.4", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", NULL }, NW_SEV_WARN },
		{ { "MASTER_ADDR=node001", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", NULL }, NW_SEV_OK },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx *x = h200(cases[i].env);
		enum nw_sev s = run1(x, "env.master_addr");
		if (s != cases[i].want)
			fail_msg("case %zu (%s): got %d", i, cases[i].env[0], (int)s);
		done(x);
	}
}

static void shm(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	/* Recorded: 256 GB (df on the H200 machine). */
	assert_int_equal(run1(x, "os.shm"), NW_SEV_OK);
	x->ctx.shm_bytes = 64LL << 20; /* Docker's default */
	assert_int_equal(run1(x, "os.shm"), NW_SEV_ERROR);
	assert_true(seen(x, "/dev/shm is 64 MB"));
	x->ctx.shm_bytes = 512LL << 20;
	assert_int_equal(run1(x, "os.shm"), NW_SEV_WARN);
	x->ctx.shm_bytes = -1;
	assert_int_equal(run1(x, "os.shm"), NW_SEV_WARN);
	done(x);
}

static void memlock(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "os.memlock"), NW_SEV_OK);
	x->ctx.memlock = 64 << 10;
	assert_int_equal(run1(x, "os.memlock"), NW_SEV_INFO);
	struct nw_topo_nic *n = &x->topo.nics[x->topo.nnics++];
	memset(n, 0, sizeof(*n));
	strcpy(n->kind, "roce");
	assert_int_equal(run1(x, "os.memlock"), NW_SEV_ERROR);
	assert_true(seen(x, "0.1 MB with RDMA NICs"));
	done(x);
}

static void removeipc(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	/* The H200 container has no logind.conf. */
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_SKIP);
	free(x->ctx.logind);
	x->ctx.logind = strdup("# file /etc/systemd/logind.conf\n[Login]\n#RemoveIPC=yes\n"
	                       "# file /etc/systemd/logind.conf.d/10-hpc.conf\n[Login]\nRemoveIPC=no\n");
	x->ctx.logind_present = 1;
	x->ctx.systemd_running = 1;
	x->ctx.uid = 1234;
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_OK);
	assert_true(seen(x, "10-hpc.conf"));
	free(x->ctx.logind);
	x->ctx.logind = strdup("# file /etc/systemd/logind.conf\n[Login]\n#RemoveIPC=no\n");
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_WARN);
	assert_true(seen(x, "default is yes"));
	free(x->ctx.logind);
	x->ctx.logind = strdup("# file /etc/systemd/logind.conf\n[Login]\nRemoveIPC = yes\n");
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_WARN);
	assert_true(seen(x, "RemoveIPC=yes in /etc/systemd/logind.conf"));
	/* Root and system users are spared by logind. */
	x->ctx.uid = 0;
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_INFO);
	x->ctx.uid = 1234;
	x->ctx.systemd_running = 0;
	assert_int_equal(run1(x, "os.removeipc"), NW_SEV_INFO);
	done(x);
}

static void acs(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "os.pcie_acs"), NW_SEV_OK);
	assert_true(seen(x, "root bus"));
	x->ctx.nacs = 3;
	memset(x->ctx.acs, 0, sizeof(x->ctx.acs));
	strcpy(x->ctx.acs[0].bdf, "0000:16:02.0");
	strcpy(x->ctx.acs[0].below, "GPU0");
	x->ctx.acs[0].readable = 1;
	x->ctx.acs[0].has_acs = 1;
	x->ctx.acs[0].ctrl = 0x001d; /* SV, RR, CR, UF: what a BIOS with ACS on sets */
	strcpy(x->ctx.acs[1].bdf, "0000:16:03.0");
	x->ctx.acs[1].readable = 1;
	x->ctx.acs[1].has_acs = 1;
	x->ctx.acs[1].ctrl = 0x0000;
	strcpy(x->ctx.acs[2].bdf, "0000:15:00.0");
	x->ctx.acs[2].readable = 0;
	assert_int_equal(run1(x, "os.pcie_acs"), NW_SEV_ERROR);
	assert_true(seen(x, "bridge 0000:16:02.0 above GPU0: ACS control 0x001d"));
	assert_true(seen(x, "could not read the ACS control of 1 bridge (0000:15:00.0)"));
	x->ctx.acs[0].ctrl = 0;
	/* ok for the two read, skip for the one that could not be. */
	assert_int_equal(run1(x, "os.pcie_acs"), NW_SEV_SKIP);
	assert_true(seen(x, "ACS peer redirect off on 2 bridges"));
	done(x);
}

static void iommu(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	/* The H200 command line was not recorded. */
	assert_int_equal(run1(x, "os.iommu"), NW_SEV_SKIP);
	x->ctx.cmdline = strdup("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on\n");
	assert_int_equal(run1(x, "os.iommu"), NW_SEV_WARN);
	assert_true(seen(x, "no iommu=pt"));
	free(x->ctx.cmdline);
	x->ctx.cmdline = strdup("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt\n");
	assert_int_equal(run1(x, "os.iommu"), NW_SEV_OK);
	free(x->ctx.cmdline);
	x->ctx.cmdline = strdup("BOOT_IMAGE=/vmlinuz quiet\n");
	x->ctx.iommu_units = 2;
	assert_int_equal(run1(x, "os.iommu"), NW_SEV_WARN);
	done(x);
}

static void vm(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	/* A VM whose GPUs are NVLink-joined: said, not a problem. */
	assert_int_equal(run1(x, "os.vm"), NW_SEV_INFO);
	assert_true(seen(x, "hypervisor"));
	/* Without NVLink between the GPUs, the hidden PCIe tree matters. */
	x->topo.pairs[0][1].path = x->topo.pairs[1][0].path = NW_PATH_PHB;
	assert_int_equal(run1(x, "os.vm"), NW_SEV_WARN);
	x->ctx.hypervisor = 0;
	x->ctx.dmi[0] = '\0';
	assert_int_equal(run1(x, "os.vm"), NW_SEV_OK);
	strcpy(x->ctx.dmi, "QEMU Standard PC (Q35 + ICH9, 2009)");
	assert_int_equal(run1(x, "os.vm"), NW_SEV_WARN);
	assert_true(seen(x, "QEMU"));
	done(x);
}

static void nvlink(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "hw.nvlink"), NW_SEV_OK);
	assert_true(seen(x, "36/36 NVLinks up"));
	x->snap.gpus[1].links[5].active = 0;
	x->snap.gpus[1].links[11].active = 0;
	assert_int_equal(run1(x, "hw.nvlink"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU1: 16 of 18 NVLinks up; down: 5,11"));
	x->snap.gpus[1].links[5].active = x->snap.gpus[1].links[11].active = 1;
	/* Replays that stand still: none; recoveries: a warning; counters that grow: an error. */
	x->snap.gpus[0].links[2].err[NW_NVL_ERR_REPLAY] = 3;
	assert_int_equal(run1(x, "hw.nvlink"), NW_SEV_OK);
	x->snap.gpus[0].links[2].err[NW_NVL_ERR_RECOVERY] = 2;
	assert_int_equal(run1(x, "hw.nvlink"), NW_SEV_WARN);
	x->snap.gpus[0].links[2].err_later[NW_NVL_ERR_CRC_FLIT] = 40;
	assert_int_equal(run1(x, "hw.nvlink"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU0 link 2: CRC flit errors grew 0 -> 40"));
	done(x);
}

static void pcie_link(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	/* Link widths were not recorded on the H200 VM. */
	assert_int_equal(run1(x, "hw.pcie_link"), NW_SEV_SKIP);
	x->topo.gpus[0].width_cur = 16;
	x->topo.gpus[0].width_max = 16;
	x->topo.gpus[0].gen_cur = 1;
	x->topo.gpus[0].gen_max = 5;
	/* An idle GPU at Gen1: normal. */
	assert_int_equal(run1(x, "hw.pcie_link"), NW_SEV_INFO);
	x->topo.gpus[0].width_cur = 8;
	assert_int_equal(run1(x, "hw.pcie_link"), NW_SEV_WARN);
	assert_true(seen(x, "GPU0 (0000:00:06.0): PCIe x8 of x16"));
	x->topo.gpus[0].width_cur = 16;
	x->ctx.nlinks = 1;
	memset(&x->ctx.links[0], 0, sizeof(x->ctx.links[0]));
	strcpy(x->ctx.links[0].what, "mlx5_0 (0000:17:00.0)");
	strcpy(x->ctx.links[0].speed_cur, "16.0 GT/s PCIe");
	strcpy(x->ctx.links[0].speed_max, "32.0 GT/s PCIe");
	x->ctx.links[0].width_cur = x->ctx.links[0].width_max = 16;
	assert_int_equal(run1(x, "hw.pcie_link"), NW_SEV_WARN);
	assert_true(seen(x, "mlx5_0 (0000:17:00.0): PCIe 16.0 GT/s PCIe x16, max 32.0 GT/s PCIe x16"));
	done(x);
}

static void p2p(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "hw.p2p"), NW_SEV_OK);
	x->topo.pairs[0][1].p2p = 0;
	strcpy(x->topo.pairs[0][1].p2p_why, "disabled by regkey");
	assert_int_equal(run1(x, "hw.p2p"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU0-GPU1 (NV18): peer-to-peer not supported (disabled by regkey)"));
	/* Across sockets P2P is often off by design: not flagged. */
	x->topo.pairs[0][1].path = NW_PATH_SYS;
	assert_int_equal(run1(x, "hw.p2p"), NW_SEV_OK);
	done(x);
}

static void persistence_and_ecc(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "hw.persistence"), NW_SEV_OK);
	x->snap.gpus[1].persistence = 0;
	assert_int_equal(run1(x, "hw.persistence"), NW_SEV_WARN);
	assert_true(seen(x, "persistence mode off on GPU1"));
	assert_int_equal(run1(x, "hw.ecc"), NW_SEV_OK);
	x->snap.gpus[0].remap_pending = 1;
	assert_int_equal(run1(x, "hw.ecc"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU0: row remapping pending"));
	x->snap.gpus[0].remap_pending = 0;
	x->snap.gpus[1].ecc_uncorrected = 4;
	assert_int_equal(run1(x, "hw.ecc"), NW_SEV_WARN);
	done(x);
}

static void gpudirect_rdma(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "hw.gpudirect_rdma"), NW_SEV_OK);
	struct nw_topo_nic *n = &x->topo.nics[x->topo.nnics++];
	memset(n, 0, sizeof(*n));
	strcpy(n->kind, "ib");
	x->ctx.peermem_sysmodule = 0;
	x->ctx.modules = strdup("nvidia_uvm 4956160 0 - Live 0x0\nnvidia 11231232 1 nvidia_uvm, Live 0x0\n");
	assert_int_equal(run1(x, "hw.gpudirect_rdma"), NW_SEV_WARN);
	free(x->ctx.modules);
	x->ctx.modules = strdup("nvidia_peermem 16384 0 - Live 0x0\nnvidia 11231232 1 nvidia_peermem, Live 0x0\n");
	assert_int_equal(run1(x, "hw.gpudirect_rdma"), NW_SEV_OK);
	done(x);
}

static void fabric(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "hw.fabric_manager"), NW_SEV_OK);
	x->snap.gpus[0].fabric_state = NW_FABRIC_NOT_STARTED;
	assert_int_equal(run1(x, "hw.fabric_manager"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU0: fabric registration not started"));
	x->snap.gpus[0].fabric_state = NW_FABRIC_COMPLETED;
	x->snap.gpus[0].fabric_status = 0;
	assert_int_equal(run1(x, "hw.fabric_manager"), NW_SEV_OK);
	done(x);
}

static void affinity(void **state)
{
	(void)state;
	struct fx *x = h200((const char *[]){ "LOCAL_RANK=1", NULL });
	/* Recorded Cpus_allowed_list 0-31, both GPUs local to 0-31. */
	assert_int_equal(run1(x, "cpu.affinity"), NW_SEV_OK);
	/* Bound to CPUs 40-47 on a machine whose GPU1 is local to 0-31. */
	memset(x->ctx.affinity, 0, sizeof(x->ctx.affinity));
	x->ctx.affinity[0] = 0xffULL << 40;
	assert_int_equal(run1(x, "cpu.affinity"), NW_SEV_WARN);
	assert_true(seen(x, "this process runs on CPUs 40-47; GPU1's local CPUs are 0-31"));
	x->ctx.have_affinity = 0;
	assert_int_equal(run1(x, "cpu.affinity"), NW_SEV_SKIP);
	done(x);
}

/* Which way a job here is watched live, from recorded facts: the plugin, the interposer, none. */
static void live_mode(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	struct nw_live_facts *lf = &x->ctx.live;
	assert_int_equal(run1(x, "version.live"), NW_SEV_OK);
	assert_true(seen(x, "a job gets the plugin: NCCL 2.28.9"));
	assert_true(seen(x, "has profiler interface v5"));
	/* NCCL 2.23 asks for v1, which this plugin build lacks, and there is no interposer: said, with what it exports. */
	strcpy(lf->nccl_version, "2.23.4");
	assert_int_equal(run1(x, "version.live"), NW_SEV_WARN);
	assert_true(seen(x, "exports no ncclProfiler_v1 (only v4, v5, v6"));
	assert_true(seen(x, "libncclwatch-interpose.so is not installed (looked in /usr/bin"));
	/* NCCL 2.21 with the interposer installed. */
	strcpy(lf->nccl_version, "2.21.5");
	lf->interpose.found = 1;
	strcpy(lf->interpose.path, "/usr/lib/x86_64-linux-gnu/libncclwatch-interpose.so");
	assert_int_equal(run1(x, "version.live"), NW_SEV_OK);
	assert_true(seen(x, "a job gets the interposer"));
	/* NCCL 2.17: nothing serves it. */
	strcpy(lf->nccl_version, "2.17.1");
	assert_int_equal(run1(x, "version.live"), NW_SEV_WARN);
	assert_true(seen(x, "older than 2.18"));
	x->ctx.live_state = -1;
	assert_int_equal(run1(x, "version.live"), NW_SEV_SKIP);
	done(x);
}

static void versions(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "version.driver"), NW_SEV_OK);
	assert_true(seen(x, "driver 580.159.04, CUDA driver API 13.0"));
	/* The NCCL that loads: PyTorch's 2.28.9 built for CUDA 13.0, the system's 2.28.3 beside it. */
	assert_int_equal(run1(x, "version.nccl"), NW_SEV_OK);
	assert_true(seen(x, "NCCL 2.28.9 built for CUDA 13.0 from /opt/torch"));
	assert_int_equal(run1(x, "version.nccl_cuda"), NW_SEV_OK);
	assert_int_equal(run1(x, "version.nccl_many"), NW_SEV_OK);
	x->ctx.all = realloc(x->ctx.all, 2 * sizeof(*x->ctx.all));
	memset(&x->ctx.all[1], 0, sizeof(x->ctx.all[1]));
	strcpy(x->ctx.all[1].path, "/lib/x86_64-linux-gnu/libnccl.so.2");
	strcpy(x->ctx.all[1].how, "system");
	strcpy(x->ctx.all[1].version, "2.28.3");
	x->ctx.nall = 2;
	/* PyTorch's loads and the system's is older: said, not a problem for what is measured. */
	assert_int_equal(run1(x, "version.nccl_many"), NW_SEV_INFO);
	assert_true(seen(x, "/lib/x86_64-linux-gnu/libnccl.so.2 2.28.3 (system)"));
	/* The system's loads while PyTorch has another: what is measured is not what trains. */
	struct nw_nccl_where torch = x->ctx.nccl;
	x->ctx.nccl = x->ctx.all[1];
	assert_int_equal(run1(x, "version.nccl_many"), NW_SEV_WARN);
	assert_true(seen(x, "NCCL 2.28.3 loads (system, /lib/x86_64-linux-gnu/libnccl.so.2) but PyTorch's is another version"));
	x->ctx.nccl = torch;
	/* An NCCL built for CUDA 13.0 on a driver that supports 12.4. */
	x->snap.cuda_driver = 12040;
	assert_int_equal(run1(x, "version.nccl_cuda"), NW_SEV_ERROR);
	assert_true(seen(x, "built for CUDA 13.0; the driver supports CUDA 12.4"));
	x->ctx.nccl_state = 0;
	strcpy(x->ctx.nccl_err, "no libnccl.so.2 in the loader path");
	assert_int_equal(run1(x, "version.nccl"), NW_SEV_ERROR);
	done(x);
}

/* The GPU-less VM, recorded here: every GPU check says it skipped and why. */
static void no_gpu_machine(void **state)
{
	(void)state;
	struct fx *x = calloc(1, sizeof(*x));
	nw_nvml_snap_none(&x->snap, "no NVIDIA driver (libnvidia-ml.so.1 not found)");
	const char *root = path("sysfs/nogpu-vm");
	nw_topo_probe(&x->topo, root, &x->snap);
	x->env[0] = NULL;
	nw_doc_gather(&x->ctx, root, x->env, &x->snap, &x->topo);
	assert_non_null(x->ctx.cmdline);
	assert_int_equal(x->ctx.hypervisor, 1);
	assert_int_equal(x->ctx.memlock, 8388608);
	assert_true(x->ctx.logind_present);
	nw_doc_run(&x->ctx, NULL, 0, &x->f);
	assert_true(nw_findings_exit(&x->f) <= 1);
	int skipped_driver = 0;
	for (size_t i = 0; i < x->f.n; i++)
		if (!strcmp(x->f.v[i].id, "hw.nvlink") && x->f.v[i].sev == NW_SEV_SKIP &&
		    strstr(x->f.v[i].seen, "skipped: no NVIDIA driver (libnvidia-ml.so.1 not found)"))
			skipped_driver = 1;
	assert_true(skipped_driver);
	done(x);
}

/* --expect-gpus: the 2xH200 has 2; 8 expected is an error naming both. */
static void gpu_count(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "node.gpu_count"), NW_SEV_SKIP);
	x->ctx.expect_gpus = 2;
	assert_int_equal(run1(x, "node.gpu_count"), NW_SEV_OK);
	assert_true(seen(x, "NVML sees 2 GPUs, as expected"));
	x->ctx.expect_gpus = 8;
	assert_int_equal(run1(x, "node.gpu_count"), NW_SEV_ERROR);
	assert_true(seen(x, "NVML sees 2 GPUs, expected 8"));
	done(x);
}

/* Xid lines as the driver writes them (real lines, tests/fixtures/README.md), kmsg records and dmesg text alike. */
static void xid(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	x->ctx.kmsg_state = 0;
	strcpy(x->ctx.kmsg_why, "cannot read /dev/kmsg: Operation not permitted");
	assert_int_equal(run1(x, "node.xid"), NW_SEV_SKIP);
	assert_true(seen(x, "Operation not permitted"));
	x->ctx.kmsg_state = 1;
	nw_doc_parse_xids(&x->ctx, "6,1202,15893410,-;mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n");
	assert_int_equal(run1(x, "node.xid"), NW_SEV_OK);
	nw_doc_parse_xids(&x->ctx, "[ 1399.140323] NVRM: Xid (PCI:0000:01:00): 31, pid=1 CE0\n");
	assert_int_equal(run1(x, "node.xid"), NW_SEV_INFO);
	nw_doc_parse_xids(&x->ctx, "4,2215,1899140323,-;NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000009 intr 00800000\n"
	                           "4,2216,1899140655,-;NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000009 intr 00800000\n");
	assert_int_equal(run1(x, "node.xid"), NW_SEV_WARN);
	assert_true(seen(x, "Xid 32 x2 on 0000:01:00 (Channel ID 00000009 intr 00800000)"));
	nw_doc_parse_xids(&x->ctx, "NVRM: Xid (PCI:0000:44:00): 79, pid=0, GPU has fallen off the bus.");
	assert_int_equal(run1(x, "node.xid"), NW_SEV_ERROR);
	assert_true(seen(x, "Xid 79 on 0000:44:00 (pid=0, GPU has fallen off the bus.)"));
	/* Not an Xid: no code, or a line that only mentions one. */
	int n = x->ctx.nxids;
	nw_doc_parse_xids(&x->ctx, "NVRM: Xid (PCI:0000:44:00): \nsomething about NVRM: Xid\n");
	assert_int_equal(x->ctx.nxids, n);
	done(x);
}

/* Clocks event reasons (NVML bits): idle is fine, a power cap informs, HW slowdown is an error. */
static void clocks(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "node.clocks"), NW_SEV_SKIP); /* the reconstructed answers have none */
	x->snap.gpus[0].clock_reasons = 0x1; /* GPU idle */
	x->snap.gpus[1].clock_reasons = 0;
	assert_int_equal(run1(x, "node.clocks"), NW_SEV_OK);
	x->snap.gpus[1].clock_reasons = 0x4;
	assert_int_equal(run1(x, "node.clocks"), NW_SEV_INFO);
	x->snap.gpus[1].clock_reasons = 0x20;
	assert_int_equal(run1(x, "node.clocks"), NW_SEV_WARN);
	x->snap.gpus[1].clock_reasons = 0x48;
	assert_int_equal(run1(x, "node.clocks"), NW_SEV_ERROR);
	assert_true(seen(x, "GPU1 clocks held down: HW slowdown, HW thermal slowdown (reasons 0x48)"));
	done(x);
}

/* The 8-rail node (tests/fixtures/sysfs/ib8), healthy, then broken one port at a time. */
static void ib_ports(void **state)
{
	(void)state;
	struct fx *x = h200(NULL);
	assert_int_equal(run1(x, "node.ib_ports"), NW_SEV_SKIP);
	nw_doc_ctx_release(&x->ctx);
	nw_doc_gather(&x->ctx, path("sysfs/ib8"), x->env, &x->snap, &x->topo);
	assert_int_equal(x->ctx.nibports, 12);
	assert_int_equal(run1(x, "node.ib_ports"), NW_SEV_INFO); /* two spare RoCE ports down */
	assert_true(seen(x, "8 InfiniBand ports ACTIVE, 2 of 4 RoCE ports ACTIVE"));
	struct nw_doc_ibport *p = NULL;
	for (int i = 0; i < x->ctx.nibports; i++)
		if (!strcmp(x->ctx.ibports[i].name, "mlx5_9:1"))
			p = &x->ctx.ibports[i];
	assert_non_null(p);
	assert_string_equal(p->state, "ACTIVE");
	assert_string_equal(p->phys, "LinkUp");
	assert_true(p->rate_gbps == 400 && p->cnt[NW_IBC_LINK_DOWNED] == 0 && !p->ethernet);
	p->cnt[NW_IBC_LINK_DOWNED] = 2;
	assert_int_equal(run1(x, "node.ib_ports"), NW_SEV_WARN);
	assert_true(seen(x, "mlx5_9:1 (link_downed 2)"));
	p->cnt[NW_IBC_LINK_DOWNED] = 0;
	strcpy(p->rate, "200 Gb/sec (2X NDR)");
	p->rate_gbps = 200;
	assert_int_equal(run1(x, "node.ib_ports"), NW_SEV_WARN);
	assert_true(seen(x, "mlx5_9:1 (200 Gb/sec (2X NDR); others at 400 Gb/s)"));
	strcpy(p->state, "INIT");
	assert_int_equal(run1(x, "node.ib_ports"), NW_SEV_ERROR);
	assert_true(seen(x, "not ACTIVE: mlx5_9:1 (INIT, LinkUp)"));
	done(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_is_whole),
		cmocka_unit_test(only_selection),
		cmocka_unit_test(env_names),
		cmocka_unit_test(socket_ifname),
		cmocka_unit_test(ib_hca),
		cmocka_unit_test(workarounds),
		cmocka_unit_test(debug_level),
		cmocka_unit_test(cuda_visible),
		cmocka_unit_test(master_addr),
		cmocka_unit_test(live_mode),
		cmocka_unit_test(shm),
		cmocka_unit_test(memlock),
		cmocka_unit_test(removeipc),
		cmocka_unit_test(acs),
		cmocka_unit_test(iommu),
		cmocka_unit_test(vm),
		cmocka_unit_test(nvlink),
		cmocka_unit_test(pcie_link),
		cmocka_unit_test(p2p),
		cmocka_unit_test(persistence_and_ecc),
		cmocka_unit_test(gpudirect_rdma),
		cmocka_unit_test(fabric),
		cmocka_unit_test(affinity),
		cmocka_unit_test(versions),
		cmocka_unit_test(no_gpu_machine),
		cmocka_unit_test(gpu_count),
		cmocka_unit_test(xid),
		cmocka_unit_test(clocks),
		cmocka_unit_test(ib_ports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
