/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's container, OS and CPU-binding checks: /dev/shm, memlock, RemoveIPC, ACS, IOMMU, VMs, affinity. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "probe/doctor_checks.h"
#include "probe/sysfs.h"
#include "util/strbuf.h"
#include "util/util.h"

/* ---------------- container and OS ---------------- */

void nw_doc_chk_shm(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.shm";
	if (c->shm_bytes < 0) {
		ADD(out, id, NW_SEV_WARN, "NCCL's shared-memory transport needs /dev/shm",
		    "mount a tmpfs on /dev/shm (docker: --ipc=host or --shm-size=8g)",
		    "/dev/shm: not mounted or size unknown (/proc/mounts)");
		return;
	}
	double mb = (double)c->shm_bytes / (1024.0 * 1024.0);
	if (c->shm_bytes < 256LL << 20)
		ADD(out, id, NW_SEV_ERROR,
		    "NCCL puts its intra-node buffers in /dev/shm; Docker's 64 MB default fails with "
		    "\"unhandled system error\" or bus errors as soon as several GPUs talk",
		    "docker run --ipc=host or --shm-size=8g; Kubernetes: an emptyDir with medium: Memory on /dev/shm",
		    "/dev/shm is %.0f MB", mb);
	else if (c->shm_bytes < 1LL << 30)
		ADD(out, id, NW_SEV_WARN, "large jobs with many peers can exhaust a small /dev/shm",
		    "give /dev/shm at least 1 GB (--shm-size=8g or --ipc=host)", "/dev/shm is %.0f MB", mb);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "/dev/shm is %.1f GB", mb / 1024.0);
}

void nw_doc_chk_memlock(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.memlock";
	int rdma = nw_doc_rdma_present(c);
	if (c->memlock == -1) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: locked-memory limit unknown (/proc/self/limits)");
		return;
	}
	if (c->memlock == -2) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "locked-memory limit: unlimited");
		return;
	}
	double mb = (double)c->memlock / (1024.0 * 1024.0);
	if (rdma)
		ADD(out, id, NW_SEV_ERROR,
		    "RDMA registers (pins) NCCL's buffers; a low limit makes ibv_reg_mr fail and NCCL falls back or aborts",
		    "ulimit -l unlimited (docker: --ulimit memlock=-1; Slurm: PropagateResourceLimits; "
		    "systemd: LimitMEMLOCK=infinity)",
		    "locked-memory limit %.1f MB with RDMA NICs present", mb);
	else
		ADD(out, id, NW_SEV_INFO, "matters only for RDMA (InfiniBand/RoCE), which this host does not have",
		    NULL, "locked-memory limit %.1f MB (no RDMA NIC)", mb);
}

/*
 * The last RemoveIPC= in logind's configuration text (files in order,
 * each after a "# file NAME" line; later files override earlier ones):
 * its value into value ("" when none) and the file it is in into where.
 */
static void last_removeipc(const char *logind, char *value, size_t vlen, char *where, size_t wlen)
{
	char file[256] = "";
	for (const char *line = logind; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (!strncmp(line, "# file ", 7) && len - 7 < sizeof(file)) {
			memcpy(file, line + 7, len - 7);
			file[len - 7] = '\0';
		} else {
			const char *p = line;
			while (p < line + len && isspace((unsigned char)*p))
				p++;
			if (!strncmp(p, "RemoveIPC", 9)) {
				p += 9;
				while (*p == ' ' || *p == '\t')
					p++;
				if (*p == '=') {
					p++;
					while (*p == ' ' || *p == '\t')
						p++;
					size_t k = strcspn(p, " \t\n#");
					if (k < vlen) {
						memcpy(value, p, k);
						value[k] = '\0';
						nw_strlcpy(where, file, wlen);
					}
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
}

void nw_doc_chk_removeipc(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.removeipc";
	if (!c->logind_present || !c->logind) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL,
		    "skipped: no systemd-logind configuration (/etc/systemd/logind.conf), as in most containers");
		return;
	}
	char value[16] = "", where[256] = "";
	last_removeipc(c->logind, value, sizeof(value), where, sizeof(where));
	if (!c->systemd_running) {
		ADD(out, id, NW_SEV_INFO, "logind is not running here (a container?): the host's setting is what counts",
		    NULL, "RemoveIPC=%s in %s, but /run/systemd/system is absent", value[0] ? value : "(default yes)",
		    where[0] ? where : "logind.conf");
		return;
	}
	int yes = !value[0] || !strcasecmp(value, "yes") || !strcmp(value, "1") || !strcasecmp(value, "true") ||
	          !strcasecmp(value, "on");
	if (yes && c->uid >= 0 && c->uid < 1000)
		ADD(out, id, NW_SEV_INFO, "RemoveIPC spares system users; jobs run as a regular user are exposed",
		    "set RemoveIPC=no if jobs run as regular users", "RemoveIPC=%s in %s; this process runs as uid %ld",
		    value[0] ? value : "yes (default)", where[0] ? where : "logind.conf", c->uid);
	else if (yes)
		ADD(out, id, NW_SEV_WARN,
		    "logind removes a user's shared memory and semaphores when their last session ends: "
		    "a job started from a login that closes loses NCCL's /dev/shm segments mid-run",
		    "set RemoveIPC=no in /etc/systemd/logind.conf (or a .d drop-in) and restart systemd-logind",
		    value[0] ? "RemoveIPC=%s in %s" : "RemoveIPC not set (systemd's default is yes)%s", value[0] ? value : "",
		    where);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "RemoveIPC=%s in %s", value, where);
}

void nw_doc_chk_acs(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.pcie_acs";
	if (c->nacs == 0) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no PCIe bridge above the GPUs and NICs (%s)",
		    c->topo->ngpus || c->topo->nnics ? "devices sit on the root bus" : "no GPU or NIC found");
		return;
	}
	int on = 0, unread = 0, checked = 0;
	struct nw_strbuf unread_list;
	nw_strbuf_init(&unread_list);
	for (int i = 0; i < c->nacs; i++) {
		const struct nw_doc_acs *a = &c->acs[i];
		if (!a->readable) {
			nw_strbuf_addf(&unread_list, "%s%s", unread_list.len ? "," : "", a->bdf);
			unread++;
			continue;
		}
		checked++;
		/* P2P Request Redirect (bit 2) and Completion Redirect (bit 3) send peer traffic to the root. */
		if (a->has_acs && (a->ctrl & 0x000c)) {
			on++;
			ADD(out, id, NW_SEV_ERROR,
			    "ACS redirects peer-to-peer traffic up to the root complex: GPU-GPU and GPU-NIC P2P "
			    "(GPUDirect RDMA) slow down or hang",
			    "disable ACS on the bridge (setpci -s BDF ECAP_ACS+0x6.w=0000 at boot, or the BIOS option); "
			    "with an IOMMU, use iommu=pt",
			    "bridge %s above %s: ACS control 0x%04x (P2P redirect on)", a->bdf, a->below, a->ctrl);
		}
	}
	if (unread)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL,
		    "could not read the ACS control of %d bridge%s (%s): extended config space needs root",
		    unread, unread == 1 ? "" : "s", unread_list.buf);
	nw_strbuf_release(&unread_list);
	if (checked && !on)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "ACS peer redirect off on %d bridge%s above GPUs/NICs", checked,
		    checked == 1 ? "" : "s");
}

static int cmdline_has(const char *cmdline, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = cmdline; (p = strstr(p, word)); p += n)
		if ((p == cmdline || isspace((unsigned char)p[-1])) &&
		    (p[n] == '\0' || isspace((unsigned char)p[n]) || p[n] == ','))
			return 1;
	return 0;
}

void nw_doc_chk_iommu(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.iommu";
	if (!c->cmdline) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: /proc/cmdline could not be read");
		return;
	}
	int pt = cmdline_has(c->cmdline, "iommu=pt") || cmdline_has(c->cmdline, "iommu.passthrough=1");
	int on = cmdline_has(c->cmdline, "intel_iommu=on") || cmdline_has(c->cmdline, "amd_iommu=on") ||
	         cmdline_has(c->cmdline, "amd_iommu=force_isolation");
	int units = c->iommu_units;
	if ((on || units > 0) && !pt)
		ADD(out, id, NW_SEV_WARN,
		    "an IOMMU that translates DMA adds latency to every GPU and NIC transfer, and with ACS "
		    "breaks peer-to-peer",
		    "add iommu=pt to the kernel command line (keeps the IOMMU for VMs, passthrough for the host)",
		    "IOMMU %s (%d unit%s in /sys/class/iommu) and no iommu=pt on /proc/cmdline",
		    on ? "enabled on the command line" : "active", units > 0 ? units : 0, units == 1 ? "" : "s");
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s", pt ? "IOMMU in passthrough (iommu=pt)"
		                                              : "no IOMMU translating DMA (/proc/cmdline, /sys/class/iommu)");
}

void nw_doc_chk_vm(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.vm";
	static const char *vms[] = { "QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Amazon EC2",
	                             "Google Compute Engine", "Virtual Machine", "OpenStack", "Firecracker" };
	const char *hit = NULL;
	for (size_t i = 0; i < NW_ARRAY_LEN(vms) && c->dmi[0]; i++)
		if (strstr(c->dmi, vms[i]))
			hit = vms[i];
	if (c->hypervisor != 1 && !hit) {
		ADD(out, id, c->hypervisor < 0 && !c->dmi[0] ? NW_SEV_SKIP : NW_SEV_OK, NULL, NULL, "%s",
		    c->hypervisor < 0 && !c->dmi[0] ? "skipped: neither /proc/cpuinfo nor DMI could be read"
		                                    : "bare metal (no hypervisor flag in /proc/cpuinfo)");
		return;
	}
	int flat = nw_doc_has_gpus(c) > 0;
	/* A VM that puts every GPU straight on its root bus hides the host's PCIe switches. */
	int nvl_all = 1;
	for (int i = 0; i < c->topo->ngpus; i++)
		for (int k = i + 1; k < c->topo->ngpus; k++)
			if (c->topo->pairs[i][k].path != NW_PATH_NVL)
				nvl_all = 0;
	if (c->topo->ngpus > 1 && !nvl_all)
		ADD(out, id, NW_SEV_WARN,
		    "the VM's virtual PCIe tree hides the real one: NCCL may pick rings and NICs that cross "
		    "the host's CPU sockets, and P2P may be off",
		    "give NCCL the host's topology with NCCL_TOPO_FILE (the cloud vendor publishes one), or "
		    "use a VM shape that exposes the PCIe switches",
		    "virtual machine (%s%s%s) with GPUs not all joined by NVLink", c->hypervisor == 1 ? "hypervisor flag" : "",
		    c->hypervisor == 1 && hit ? ", " : "", hit ? c->dmi : "");
	else
		ADD(out, id, NW_SEV_INFO,
		    flat ? "PCIe path classes come from the VM's virtual tree; NVLink paths are real" : NULL, NULL,
		    "virtual machine (%s%s%s)", c->hypervisor == 1 ? "hypervisor flag in /proc/cpuinfo" : "",
		    c->hypervisor == 1 && hit ? "; DMI " : "", hit ? c->dmi : "");
}

/* ---------------- CPU binding ---------------- */

void nw_doc_chk_affinity(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "cpu.affinity";
	if (!c->have_affinity) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: this process's CPU affinity is unknown (/proc/self/status)");
		return;
	}
	char mine[256];
	nw_cpulist_format(c->affinity, NW_DOC_CPU_BITS, mine, sizeof(mine));
	int nmine = 0;
	for (int i = 0; i < NW_DOC_CPU_BITS / 64; i++)
		nmine += __builtin_popcountll(c->affinity[i]);
	/* The GPU this process would drive: LOCAL_RANK's (or SLURM_LOCALID's) visible GPU, else all. */
	int pos[NW_NVML_MAX_GPUS];
	int nvis = nw_topo_visible(c->topo, nw_doc_getenv(c->env, "CUDA_VISIBLE_DEVICES"), pos,
	                           NW_NVML_MAX_GPUS, NULL, 0);
	long lr = nw_doc_env_long(c->env, "LOCAL_RANK");
	if (lr < 0)
		lr = nw_doc_env_long(c->env, "SLURM_LOCALID");
	if (lr < 0)
		lr = nw_doc_env_long(c->env, "OMPI_COMM_WORLD_LOCAL_RANK");
	if (nvis <= 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: no visible GPU to compare this process's CPUs (%s) with", mine);
		return;
	}
	int first = 0, last = nvis;
	if (lr >= 0 && lr < nvis)
		first = (int)lr, last = (int)lr + 1;
	int bad = 0, compared = 0;
	for (int k = first; k < last; k++) {
		const struct nw_topo_gpu *g = &c->topo->gpus[pos[k]];
		unsigned long long gb[NW_DOC_CPU_BITS / 64];
		if (!g->cpus[0] || nw_cpulist_parse(g->cpus, gb, NW_DOC_CPU_BITS) <= 0)
			continue;
		compared++;
		int inside = 0;
		for (int i = 0; i < NW_DOC_CPU_BITS / 64; i++)
			inside += __builtin_popcountll(c->affinity[i] & gb[i]);
		if (inside == 0) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a process bound away from its GPU's NUMA node sends every host-side copy and NCCL proxy "
			    "thread across the CPU interconnect",
			    "bind each rank to its GPU's local CPUs (numactl --cpunodebind, srun --cpu-bind, "
			    "torchrun with a launcher that binds)",
			    "this process runs on CPUs %s; GPU%d's local CPUs are %s (NUMA %d)", mine, g->index, g->cpus,
			    g->numa);
		} else if (inside < nmine && lr >= 0)
			ADD(out, id, NW_SEV_INFO, "part of this process's CPUs are remote to its GPU", NULL,
			    "this process runs on CPUs %s; %d of them are local to GPU%d (%s)", mine, inside, g->index, g->cpus);
	}
	if (!compared)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: the GPUs' local CPUs are unknown (sysfs local_cpulist)");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "this process runs on CPUs %s%s, which include %s local CPUs", mine,
		    c->ncpus_online > 0 && nmine == c->ncpus_online ? " (not bound)" : "",
		    lr >= 0 ? "its GPU's" : "the visible GPUs'");
}
