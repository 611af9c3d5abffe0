/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's GPU checks: driver and NCCL versions, NVLink, PCIe, P2P, ECC, GPUDirect RDMA, fabric manager. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/doctor_checks.h"
#include "util/strbuf.h"

/* ---------------- versions ---------------- */

void nw_doc_chk_driver(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.driver";
	if (!c->snap->loaded) {
		ADD(out, id, nw_doc_has_gpus(c) ? NW_SEV_ERROR : NW_SEV_SKIP,
		    nw_doc_has_gpus(c) ? "NCCL needs the NVIDIA driver; without it no GPU can be used" : NULL,
		    nw_doc_has_gpus(c) ? "install the NVIDIA driver on the host and expose it to the container "
		                  "(NVIDIA Container Toolkit: --gpus all)" : NULL,
		    "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	char cuda[16] = "unknown";
	if (c->snap->cuda_driver > 0)
		snprintf(cuda, sizeof(cuda), "%d.%d", c->snap->cuda_driver / 1000, (c->snap->cuda_driver % 1000) / 10);
	ADD(out, id, NW_SEV_OK, NULL, NULL, "driver %s, CUDA driver API %s, %d GPU%s (NVML: %s)",
	    c->snap->driver[0] ? c->snap->driver : "unknown", cuda, c->snap->ngpus,
	    c->snap->ngpus == 1 ? "" : "s", c->snap->lib);
}

/* "2.28.9" -> 22809; "13.0" -> 13000 style numbers for comparisons. */
static long ver_num(const char *v, int cuda_style)
{
	int a = 0, b = 0, c = 0;
	if (sscanf(v, "%d.%d.%d", &a, &b, &c) < 2)
		return -1;
	return cuda_style ? a * 1000L + b * 10L : a * 10000L + b * 100L + c;
}

void nw_doc_chk_nccl(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl";
	if (c->nccl_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NCCL was not looked for");
		return;
	}
	if (c->nccl_state == 0) {
		ADD(out, id, nw_doc_has_gpus(c) ? NW_SEV_ERROR : NW_SEV_INFO,
		    "nothing can run NCCL collectives without libnccl.so.2",
		    "install NCCL (pip's nvidia-nccl-cu* or the system package) or point "
		    "--nccl-lib / NCCLWATCH_NCCL_LIB at libnccl.so.2",
		    "no NCCL found: %s", c->nccl_err);
		return;
	}
	ADD(out, id, NW_SEV_OK, NULL, NULL, "NCCL %s%s%s%s from %s (%s)",
	    c->nccl.version[0] ? c->nccl.version : "(version unknown)", c->nccl_cuda[0] ? " built for CUDA " : "",
	    c->nccl_cuda, "", c->nccl.path, c->nccl.how);
}

/* How a training job's NCCL on this node is watched live: the plugin, the interposer, or not at all. */
void nw_doc_chk_live(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.live";
	if (c->live_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: the live-monitoring libraries were not looked for");
		return;
	}
	struct nw_live l;
	nw_live_decide(&c->live, &l);
	if (l.mode == NW_LIVE_NONE)
		ADD(out, id, NW_SEV_WARN, "a job here cannot be watched live (top, exporter, hang, 'ncclwatch run' statistics)",
		    "install ncclwatch with its libraries, or give the job an NCCL of 2.23 or newer (2.18 or newer with "
		    "the interposer); 'ncclwatch env' prints what to set",
		    "no live monitoring: %s", l.why);
	else
		ADD(out, id, l.version_code ? NW_SEV_OK : NW_SEV_INFO, NULL, NULL,
		    "a job gets the %s: %s", nw_live_mode_name(l.mode), l.why);
}

void nw_doc_chk_nccl_cuda(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl_cuda";
	if (c->nccl_state != 1 || !c->nccl_cuda[0] || !c->snap->loaded || c->snap->cuda_driver <= 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s",
		    c->nccl_state != 1 ? "no NCCL located" :
		    !c->nccl_cuda[0] ? "the NCCL library does not say which CUDA it was built for" :
		    nw_doc_nvml_why(c));
		return;
	}
	long need = ver_num(c->nccl_cuda, 1), have = c->snap->cuda_driver;
	if (need > have)
		ADD(out, id, NW_SEV_ERROR,
		    "a library built for a newer CUDA than the driver supports fails at init "
		    "(\"CUDA driver version is insufficient\")",
		    "update the NVIDIA driver, or use an NCCL built for the driver's CUDA (or older)",
		    "NCCL %s at %s was built for CUDA %s; the driver supports CUDA %ld.%ld",
		    c->nccl.version, c->nccl.path, c->nccl_cuda, have / 1000, (have % 1000) / 10);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "NCCL built for CUDA %s; the driver supports CUDA %ld.%ld",
		    c->nccl_cuda, have / 1000, (have % 1000) / 10);
}

void nw_doc_chk_nccl_many(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl_many";
	if (c->all_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NCCL was not looked for");
		return;
	}
	struct nw_strbuf list;
	nw_strbuf_init(&list);
	int differ = 0;
	for (size_t i = 0; i < c->nall; i++) {
		const struct nw_nccl_where *w = &c->all[i];
		nw_strbuf_addf(&list, "%s%s %s (%s)", i ? "; " : "", w->path, w->version[0] ? w->version : "?", w->how);
		if (c->nccl_state == 1 && w->version[0] && c->nccl.version[0] &&
		    strcmp(w->version, c->nccl.version))
			differ++;
	}
	/* A PyTorch NCCL with another version than the one that loads: what we measure is not what trains. */
	int pytorch_other = 0;
	for (size_t i = 0; i < c->nall; i++)
		if (!strcmp(c->all[i].how, "pytorch") && c->nccl_state == 1 && strcmp(c->nccl.how, "pytorch") &&
		    c->all[i].version[0] && strcmp(c->all[i].version, c->nccl.version))
			pytorch_other = 1;
	if (c->nall == 0)
		ADD(out, id, NW_SEV_INFO, NULL, NULL, "no libnccl found on this machine");
	else if (differ && pytorch_other)
		ADD(out, id, NW_SEV_WARN,
		    "PyTorch loads its own NCCL, and it is not the one measured here: results and tuning "
		    "apply to a different library than the training job uses",
		    "measure PyTorch's NCCL (--nccl-lib PATH, or NCCLWATCH_NCCL_LIB), or make the job load the "
		    "same library",
		    "NCCL %s loads (%s, %s) but PyTorch's is another version: %s", c->nccl.version, c->nccl.how,
		    c->nccl.path, list.buf);
	else if (differ)
		ADD(out, id, NW_SEV_INFO,
		    "two NCCLs on one machine: a tool built against the other one (nccl-tests, the system's) "
		    "measures a different library than the one that loads here",
		    "compare like with like: give such tools the same libnccl (LD_LIBRARY_PATH), or remove the stale copy",
		    "%zu libnccl files, versions differ from the one that loads (%s): %s", c->nall,
		    c->nccl_state == 1 ? c->nccl.version : "?", list.buf);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%zu libnccl file%s, one version: %s", c->nall,
		    c->nall == 1 ? "" : "s", list.buf);
	nw_strbuf_release(&list);
}

/* ---------------- hardware ---------------- */

void nw_doc_chk_nvlink(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.nvlink";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	int total = 0, up = 0, bad = 0;
	struct nw_strbuf downs; /* one GPU's links that are down */
	nw_strbuf_init(&downs);
	static const char *names[] = { "replay", "recovery", "CRC flit", "CRC data" };
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		int gup = 0;
		nw_strbuf_reset(&downs);
		for (int k = 0; k < x->nlinks; k++) {
			const struct nw_nvml_link *l = &x->links[k];
			total++;
			if (l->active == 1)
				up++, gup++;
			else
				nw_strbuf_addf(&downs, "%s%d", downs.len ? "," : "", l->link);
			for (int e = 0; e < NW_NVL_NERR; e++) {
				if (l->err_later[e] >= 0 && l->err[e] >= 0 && l->err_later[e] > l->err[e]) {
					bad++;
					ADD(out, id, NW_SEV_ERROR,
					    "errors growing while you watch: the link retrains or replays, bandwidth drops and may fail",
					    "reseat/replace the NVLink bridge or board; call the vendor if it persists after a reset",
					    "GPU%d link %d: %s errors grew %lld -> %lld", x->index, l->link, names[e], l->err[e],
					    l->err_later[e]);
				} else if (l->err[e] > 0 && (e == NW_NVL_ERR_RECOVERY || e == NW_NVL_ERR_CRC_DATA ||
				                             l->err[e] >= 1000)) {
					bad++;
					ADD(out, id, NW_SEV_WARN, "a link that has had to recover or corrupts data may be failing",
					    "watch it (ncclwatch doctor --interval 10s); reset counters with nvidia-smi nvlink -r",
					    "GPU%d link %d: %lld %s errors since the counters were cleared", x->index, l->link,
					    l->err[e], names[e]);
				}
			}
		}
		if (x->nlinks && gup < x->nlinks) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "a link that is down cuts this GPU's NVLink bandwidth by its share; NCCL may route around it "
			    "through PCIe",
			    "check nvidia-smi nvlink -s; reset the GPU (nvidia-smi -r) or service the board",
			    "GPU%d: %d of %d NVLinks up; down: %s", x->index, gup, x->nlinks, downs.buf);
		}
	}
	nw_strbuf_release(&downs);
	if (!total)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no NVLink on %d GPU%s", c->snap->ngpus, c->snap->ngpus == 1 ? "" : "s");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d/%d NVLinks up on %d GPUs, no link errors", up, total,
		    c->snap->ngpus);
}

static double speed_gts(const char *s)
{
	return strtod(s, NULL);
}

void nw_doc_chk_pcie(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.pcie_link";
	int bad = 0, looked = 0;
	for (int i = 0; i < c->topo->ngpus; i++) {
		const struct nw_topo_gpu *g = &c->topo->gpus[i];
		if (g->width_cur <= 0 || g->width_max <= 0)
			continue;
		looked++;
		if (g->width_cur < g->width_max) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a GPU trained at fewer lanes has that much less PCIe bandwidth (host copies, NIC traffic "
			    "without NVLink)",
			    "reseat the GPU or riser; check the slot's wiring and BIOS bifurcation settings",
			    "GPU%d (%s): PCIe x%d of x%d", g->index, g->bus_id, g->width_cur, g->width_max);
		}
		if (g->gen_cur > 0 && g->gen_max > 0 && g->gen_cur < g->gen_max)
			ADD(out, id, NW_SEV_INFO, "idle GPUs lower their PCIe speed to save power; it rises under load",
			    NULL, "GPU%d (%s): PCIe Gen%d now, Gen%d max (normal when idle)", g->index, g->bus_id,
			    g->gen_cur, g->gen_max);
	}
	for (int i = 0; i < c->nlinks; i++) {
		const struct nw_doc_link *l = &c->links[i];
		looked++;
		int slow = speed_gts(l->speed_cur) > 0 && speed_gts(l->speed_cur) < speed_gts(l->speed_max);
		int narrow = l->width_cur > 0 && l->width_max > 0 && l->width_cur < l->width_max;
		if (slow || narrow) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a NIC or bridge trained below its maximum caps the bandwidth of everything behind it",
			    "reseat the card or cable; check BIOS PCIe speed settings",
			    "%s: PCIe %s x%d, max %s x%d", l->what, l->speed_cur, l->width_cur, l->speed_max,
			    l->width_max);
		}
	}
	if (!looked)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: no PCIe link widths readable for GPUs, NICs or bridges");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d PCIe link%s at full width%s", looked, looked == 1 ? "" : "s",
		    c->nlinks ? " and speed" : "");
}

void nw_doc_chk_p2p(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.p2p";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	if (c->topo->ngpus < 2) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d GPU: no pair to check", c->topo->ngpus);
		return;
	}
	int bad = 0, known = 0;
	char lab[16];
	for (int i = 0; i < c->topo->ngpus; i++)
		for (int k = i + 1; k < c->topo->ngpus; k++) {
			const struct nw_topo_pair *p = &c->topo->pairs[i][k];
			if (p->p2p < 0)
				continue;
			known++;
			if (p->p2p == 0 && (p->path == NW_PATH_NVL || p->path == NW_PATH_PIX || p->path == NW_PATH_PXB)) {
				bad++;
				ADD(out, id, p->path == NW_PATH_NVL ? NW_SEV_ERROR : NW_SEV_WARN,
				    "GPUs that should talk directly go through host memory instead, at a fraction of the bandwidth",
				    "check ACS and IOMMU (os.pcie_acs, os.iommu), the driver's P2P registry keys, and that "
				    "fabric manager runs on NVSwitch systems",
				    "GPU%d-GPU%d (%s): peer-to-peer not supported (%s)", c->topo->gpus[i].index,
				    c->topo->gpus[k].index, nw_path_label(p->path, p->nvlinks, lab, sizeof(lab)), p->p2p_why);
			}
		}
	if (!known)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NVML gave no peer-to-peer status");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "peer-to-peer supported on every GPU pair that should have it (%d pair%s)",
		    known, known == 1 ? "" : "s");
}

void nw_doc_chk_persistence(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.persistence";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	struct nw_strbuf off;
	nw_strbuf_init(&off);
	int n = 0, known = 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		if (c->snap->gpus[g].persistence < 0)
			continue;
		known++;
		if (c->snap->gpus[g].persistence == 0)
			nw_strbuf_addf(&off, "%sGPU%d", n++ ? "," : "", c->snap->gpus[g].index);
	}
	if (n)
		ADD(out, id, NW_SEV_WARN,
		    "without persistence the driver tears GPUs down between processes: every start pays seconds of "
		    "initialisation, and clocks/ECC state reset",
		    "nvidia-smi -pm 1, or run nvidia-persistenced", "persistence mode off on %s", off.buf);
	else if (known)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "persistence mode on for %d GPU%s", known, known == 1 ? "" : "s");
	else
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NVML does not report persistence mode");
	nw_strbuf_release(&off);
}

void nw_doc_chk_ecc(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.ecc";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	int bad = 0, known = 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		if (x->remap_pending >= 0 || x->retired_pending >= 0 || x->ecc_uncorrected >= 0)
			known++;
		if (x->remap_pending == 1 || x->retired_pending == 1) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "memory rows/pages wait to be retired: until the GPU is reset, bad memory stays in use",
			    "drain the node and reset the GPU (nvidia-smi -r -i N), then re-check",
			    "GPU%d: %s pending", x->index, x->remap_pending == 1 ? "row remapping" : "page retirement");
		}
		if (x->remap_failure == 1) {
			bad++;
			ADD(out, id, NW_SEV_ERROR, "the GPU ran out of spare rows: memory errors can no longer be repaired",
			    "replace the GPU", "GPU%d: row remapping failure", x->index);
		}
		if (x->ecc_uncorrected > 0) {
			bad++;
			ADD(out, id, NW_SEV_WARN, "uncorrectable memory errors since the driver loaded: results may be wrong",
			    "reset the GPU; replace it if they come back",
			    "GPU%d: %lld uncorrected ECC errors (volatile)", x->index, x->ecc_uncorrected);
		}
	}
	if (!bad)
		ADD(out, id, known ? NW_SEV_OK : NW_SEV_SKIP, NULL, NULL, "%s",
		    known ? "no pending row remapping or page retirement, no uncorrected ECC errors"
		          : "skipped: NVML reports no ECC state");
}

void nw_doc_chk_peermem(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.gpudirect_rdma";
	if (!nw_doc_rdma_present(c) || !nw_doc_has_gpus(c)) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "not needed: %s", !nw_doc_has_gpus(c) ? "no GPU" : "no InfiniBand/RoCE NIC");
		return;
	}
	int loaded = c->peermem_sysmodule == 1;
	if (c->modules && (strstr(c->modules, "nvidia_peermem ") || strstr(c->modules, "nv_peer_mem ")))
		loaded = 1;
	if (!c->modules && c->peermem_sysmodule < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: neither /proc/modules nor /sys/module could be read");
		return;
	}
	if (!loaded)
		ADD(out, id, NW_SEV_WARN,
		    "without GPUDirect RDMA the NIC cannot read GPU memory: network traffic is staged through host "
		    "memory (unless NCCL uses DMA-BUF, which needs the open kernel modules and Linux 5.12+)",
		    "modprobe nvidia_peermem on the host (or load it from the GPU operator)",
		    "RDMA NICs present, nvidia_peermem not in /proc/modules or /sys/module");
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "nvidia_peermem loaded, RDMA NICs present");
}

void nw_doc_chk_fabric(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.fabric_manager";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	int nvswitch = 0, bad = 0;
	for (int g = 0; g < c->topo->ngpus; g++)
		nvswitch |= c->topo->gpus[g].nvlinks_to_switch > 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		if (x->fabric_state > NW_FABRIC_NOT_SUPPORTED)
			nvswitch = 1;
		if (x->fabric_state == NW_FABRIC_NOT_STARTED || x->fabric_state == NW_FABRIC_IN_PROGRESS ||
		    (x->fabric_state == NW_FABRIC_COMPLETED && x->fabric_status > 0)) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "on NVSwitch systems GPUs cannot use NVLink until fabric manager has registered them: CUDA "
			    "init fails or NCCL falls back to PCIe",
			    "start nvidia-fabricmanager on the host (systemctl start nvidia-fabricmanager) with the "
			    "driver's exact version",
			    "GPU%d: fabric registration %s%s", x->index,
			    x->fabric_state == NW_FABRIC_NOT_STARTED ? "not started" :
			    x->fabric_state == NW_FABRIC_IN_PROGRESS ? "in progress" : "completed with an error",
			    x->fabric_state == NW_FABRIC_COMPLETED ? "" : " (fabric manager not running?)");
		}
	}
	if (!nvswitch)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no NVSwitch: fabric manager not needed");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "NVSwitch fabric registered for every GPU");
}
