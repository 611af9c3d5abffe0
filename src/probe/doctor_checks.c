/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's table of checks, in report order, and the helpers the
 * checks share. Every check reads only the context (struct nw_doc_ctx)
 * and adds at least one finding, an "ok" or "skip" included, so the
 * report shows what was looked at. The checks live by group in
 * doctor_gpu.c, doctor_env.c and doctor_os.c; docs/doctor.md describes
 * each one.
 */
#include "probe/doctor_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/util.h"

int nw_doc_has_gpus(const struct nw_doc_ctx *c)
{
	return c->topo->ngpus > 0;
}

const char *nw_doc_nvml_why(const struct nw_doc_ctx *c)
{
	return c->snap->why[0] ? c->snap->why : "NVML did not answer";
}

/* Whether any RDMA (InfiniBand or RoCE) port is active. */
int nw_doc_rdma_active(const struct nw_doc_ctx *c, char *names, size_t len)
{
	int n = 0;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int i = 0; i < c->topo->nnics; i++) {
		const struct nw_topo_nic *x = &c->topo->nics[i];
		if (strcmp(x->kind, "eth") && x->up)
			nw_strbuf_addf(&sb, "%s%s:%d", n++ ? "," : "", x->name, x->port);
	}
	if (len)
		nw_strlcpy(names, sb.buf, len);
	nw_strbuf_release(&sb);
	return n;
}

int nw_doc_rdma_present(const struct nw_doc_ctx *c)
{
	for (int i = 0; i < c->topo->nnics; i++)
		if (strcmp(c->topo->nics[i].kind, "eth"))
			return 1;
	return 0;
}

long nw_doc_env_long(char *const *env, const char *name)
{
	const char *v = nw_doc_getenv(env, name);
	char *end;
	if (!v || !*v)
		return -1;
	long x = strtol(v, &end, 10);
	return *end || x < 0 ? -1 : x;
}

static const struct nw_doc_check checks[] = {
	/* doctor_gpu.c: versions */
	{ "version.driver", "NVIDIA driver and CUDA driver API version", nw_doc_chk_driver },
	{ "version.nccl", "the NCCL that will be loaded", nw_doc_chk_nccl },
	{ "version.nccl_cuda", "NCCL built for a CUDA newer than the driver supports", nw_doc_chk_nccl_cuda },
	{ "version.nccl_many", "other libnccl copies with other versions (PyTorch's vs the system's)", nw_doc_chk_nccl_many },
	{ "version.live", "how a job's NCCL is watched live here: the plugin, the interposer, or not", nw_doc_chk_live },
	/* doctor_env.c: environment */
	{ "env.nccl_names", "NCCL_* variables NCCL does not know (typos)", nw_doc_chk_env_names },
	{ "env.socket_ifname", "NCCL_SOCKET_IFNAME names interfaces that exist and are up", nw_doc_chk_socket_ifname },
	{ "env.ib_hca", "NCCL_IB_HCA names RDMA devices that exist and are up", nw_doc_chk_ib_hca },
	{ "env.workarounds", "workarounds that cost bandwidth (P2P/SHM/IB disabled, P2P_LEVEL, ALGO, PROTO)", nw_doc_chk_workarounds },
	{ "env.debug", "NCCL_DEBUG=INFO or TRACE", nw_doc_chk_debug },
	{ "env.cuda_visible", "CUDA_VISIBLE_DEVICES valid and ordered", nw_doc_chk_cuda_visible },
	{ "env.master_addr", "MASTER_ADDR loopback or public in a multi-node job", nw_doc_chk_master_addr },
	/* doctor_os.c: container and OS */
	{ "os.shm", "/dev/shm large enough for NCCL", nw_doc_chk_shm },
	{ "os.memlock", "locked-memory limit for RDMA", nw_doc_chk_memlock },
	{ "os.removeipc", "systemd-logind RemoveIPC", nw_doc_chk_removeipc },
	{ "os.pcie_acs", "PCIe ACS on bridges above GPUs and NICs", nw_doc_chk_acs },
	{ "os.iommu", "IOMMU not in passthrough", nw_doc_chk_iommu },
	{ "os.vm", "virtual machine hiding the PCIe topology", nw_doc_chk_vm },
	/* doctor_gpu.c: hardware */
	{ "hw.nvlink", "NVLink links down or with errors", nw_doc_chk_nvlink },
	{ "hw.pcie_link", "PCIe links trained below maximum width or speed", nw_doc_chk_pcie },
	{ "hw.p2p", "GPU peer-to-peer where the topology allows it", nw_doc_chk_p2p },
	{ "hw.persistence", "persistence mode", nw_doc_chk_persistence },
	{ "hw.ecc", "ECC: pending retirement/remapping, uncorrected errors", nw_doc_chk_ecc },
	{ "hw.gpudirect_rdma", "nvidia_peermem with InfiniBand/RoCE NICs", nw_doc_chk_peermem },
	{ "hw.fabric_manager", "fabric manager on NVSwitch systems", nw_doc_chk_fabric },
	/* doctor_node.c: node health */
	{ "node.gpu_count", "the GPUs this node should have (--expect-gpus N)", nw_doc_chk_gpu_count },
	{ "node.xid", "GPU Xid errors in the kernel log since boot", nw_doc_chk_xid },
	{ "node.clocks", "GPU clocks held down now (thermal, power brake, HW slowdown)", nw_doc_chk_clocks },
	{ "node.ib_ports", "InfiniBand/RoCE ports: state, rate, link-down and error counters", nw_doc_chk_ib_ports },
	/* doctor_os.c: CPU binding */
	{ "cpu.affinity", "this process's CPUs versus its GPU's local CPUs", nw_doc_chk_affinity },
};

const struct nw_doc_check *nw_doc_checks(size_t *n)
{
	*n = NW_ARRAY_LEN(checks);
	return checks;
}
