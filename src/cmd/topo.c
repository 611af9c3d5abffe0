/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch topo: GPUs, the path between every pair (nvidia-smi's
 * classes), NVLink, peer-to-peer, NICs, and the busbw each collective
 * should reach at large sizes on the visible GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "gpu/nvml.h"
#include "probe/expect.h"
#include "probe/nvml_json.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "util/util.h"

static void print_gpus(const struct nw_topo *t)
{
	if (t->nvml_lib[0])
		printf("GPUs (NVML from %s; driver %s, CUDA %d.%d)\n", t->nvml_lib,
		       t->driver[0] ? t->driver : "unknown", t->cuda_driver > 0 ? t->cuda_driver / 1000 : 0,
		       t->cuda_driver > 0 ? (t->cuda_driver % 1000) / 10 : 0);
	else
		printf("GPUs (PCI tree only; skipped NVLink, peer-to-peer and GPU names: %s)\n",
		       t->nvml_why[0] ? t->nvml_why : "NVML not available");
	if (!t->ngpus) {
		printf("  none found\n");
		return;
	}
	for (int i = 0; i < t->ngpus; i++) {
		const struct nw_topo_gpu *g = &t->gpus[i];
		printf("  GPU%-2d %-22s %s", g->index, g->model, g->bus_id);
		if (g->numa >= 0)
			printf("  NUMA %d", g->numa);
		if (g->cpus[0])
			printf("  CPUs %s", g->cpus);
		if (g->width_max > 0 || g->gen_max > 0) {
			printf("  PCIe");
			if (g->gen_cur > 0 || g->width_cur > 0)
				printf(" Gen%d x%d now", g->gen_cur, g->width_cur);
			printf(" (max Gen%d x%d", g->gen_max, g->width_max);
			if (g->pcie_gbs > 0)
				printf(", %.1f GB/s", g->pcie_gbs);
			printf(")");
		}
		if (g->nvlinks_total > 0) {
			printf("  NVLink %d/%d up", g->nvlinks_active, g->nvlinks_total);
			if (g->nvlink_gbs > 0)
				printf(" x %.3f GB/s = %.1f GB/s", g->nvlink_gbs, g->nvlinks_active * g->nvlink_gbs);
			if (g->nvlinks_to_switch)
				printf(" (%d to NVSwitch)", g->nvlinks_to_switch);
		}
		printf("\n");
	}
}

static void print_matrix(const struct nw_topo *t)
{
	char lab[16];
	if (t->ngpus < 1)
		return;
	printf("\n      ");
	for (int j = 0; j < t->ngpus; j++)
		printf(" GPU%-3d", t->gpus[j].index);
	printf(" CPU Affinity     NUMA Affinity\n");
	for (int i = 0; i < t->ngpus; i++) {
		printf("GPU%-3d", t->gpus[i].index);
		for (int j = 0; j < t->ngpus; j++)
			printf(" %-6s", nw_path_label(t->pairs[i][j].path, t->pairs[i][j].nvlinks, lab, sizeof(lab)));
		printf(" %-16s %s\n", t->gpus[i].cpus[0] ? t->gpus[i].cpus : "N/A",
		       t->gpus[i].numa >= 0 ? (snprintf(lab, sizeof(lab), "%d", t->gpus[i].numa), lab) : "N/A");
	}
	if (t->ngpus > 1) {
		printf("\nLinks between GPUs (each way)\n");
		for (int i = 0; i < t->ngpus; i++)
			for (int j = i + 1; j < t->ngpus; j++) {
				const struct nw_topo_pair *p = &t->pairs[i][j];
				printf("  GPU%d-GPU%d  %-5s", t->gpus[i].index, t->gpus[j].index,
				       nw_path_label(p->path, p->nvlinks, lab, sizeof(lab)));
				if (p->link_gbs > 0)
					printf("  %7.1f GB/s", p->link_gbs);
				else
					printf("  %12s", "rate unknown");
				if (p->p2p == 1)
					printf("  P2P ok");
				else if (p->p2p == 0)
					printf("  P2P not supported (%s)", p->p2p_why);
				else
					printf("  P2P unknown");
				printf("\n");
			}
	}
}

static void print_nics(const struct nw_topo *t)
{
	char lab[16];
	printf("\nNICs\n");
	if (!t->nnics) {
		printf("  none with a device (only virtual interfaces, or none)\n");
		return;
	}
	for (int i = 0; i < t->nnics; i++) {
		const struct nw_topo_nic *n = &t->nics[i];
		char name[96];
		if (n->port >= 0)
			snprintf(name, sizeof(name), "%s:%d", n->name, n->port);
		else
			nw_strlcpy(name, n->name, sizeof(name));
		printf("  %-12s %-4s %-8s", name, n->kind, n->state[0] ? n->state : "?");
		if (n->rate_gbps > 0)
			printf(" %6.0f Gb/s", n->rate_gbps);
		else
			printf(" %11s", "rate ?");
		if (n->netdev[0] && strcmp(n->netdev, n->name))
			printf("  %s", n->netdev);
		if (n->bus_id[0])
			printf("  %s", n->bus_id);
		if (n->numa >= 0)
			printf("  NUMA %d", n->numa);
		if (n->nnearest) {
			printf("  nearest");
			for (int k = 0; k < n->nnearest; k++)
				printf("%sGPU%d", k ? "," : " ", t->gpus[n->nearest[k]].index);
			printf(" (%s)", nw_path_label(n->nearest_path, 0, lab, sizeof(lab)));
		}
		printf("\n");
	}
}

static void print_expect(const struct nw_topo *vis, const json_t *ops, const char *why)
{
	printf("\nExpected busbw at large sizes (%d visible GPU%s", vis->ngpus, vis->ngpus == 1 ? "" : "s");
	for (int i = 0; i < vis->ngpus; i++)
		printf("%sGPU%d", i ? "," : ": ", vis->gpus[i].index);
	printf(")\n");
	if (!ops) {
		printf("  skipped: %s\n", why);
		return;
	}
	json_t *first = json_array_get(ops, 0);
	printf("  bottleneck link %.1f GB/s each way (%s)\n",
	       json_real_value(json_object_get(first, "link_gbs")),
	       json_string_value(json_object_get(first, "path")));
	printf("  %-15s %9s %9s  %s\n", "collective", "1 GB", "4 GB", "efficiency at 4 GB");
	size_t i;
	json_t *o;
	json_array_foreach(ops, i, o) {
		printf("  %-15s %9.1f %9.1f  %.0f%%%s\n", json_string_value(json_object_get(o, "op")),
		       json_real_value(json_object_get(o, "busbw_1g")),
		       json_real_value(json_object_get(o, "busbw_4g")),
		       100.0 * json_real_value(json_object_get(o, "efficiency_4g")),
		       json_is_true(json_object_get(o, "calibrated")) ? "" : " (uncalibrated)");
	}
	printf("  GB/s busbw as nccl-tests reports it; model and calibration: docs/expectations.md\n");
}

/* What the command line asks for. */
struct topo_args {
	struct nw_opt_out json;
	int dump;
	long long ngpus;
	const char *sysroot, *nvml_json;
};

static const struct nw_opt topo_options[] = {
	NW_OPT_JSON(struct topo_args, json, "\n(schema ncclwatch.topo/1)"),
	{ .kind = NW_OPTK_LONG, .sname = 'g', .lname = "ngpus", .off = NW_F_LONG(struct topo_args, ngpus), .argh = "N",
	  .min = 1, .max = NW_NVML_MAX_GPUS, .help = "expectations for the first N visible GPUs (default: all)" },
	NW_OPTS_MACHINE(struct topo_args, sysroot, nvml_json),
	{ .kind = NW_OPTK_FLAG, .lname = "nvml-dump", .off = NW_F_INT(struct topo_args, dump),
	  .help = "print the NVML answers as JSON (the --nvml-json format) and exit\n"
	          "(scripts/gpu/record-fixtures.sh records a machine this way)" },
	{ 0 },
};

const struct nw_cmd_spec nw_spec_topo = {
	.name = "topo",
	.about = "GPUs (model, bus id, NUMA node, local CPUs, PCIe), the path class of every\n"
	         "GPU pair as `nvidia-smi topo -m` names it (NV#, PIX, PXB, PHB, NODE, SYS),\n"
	         "NVLink counts and rates, peer-to-peer status, NICs (InfiniBand, RoCE,\n"
	         "Ethernet: state, rate, NUMA node, nearest GPUs), and the busbw each\n"
	         "collective should reach at 1 GB and 4 GB on the visible GPUs\n"
	         "(docs/expectations.md). Works without a GPU: it says what it could not see.\n",
	.opts = topo_options,
	.footer = "environment: CUDA_VISIBLE_DEVICES picks and orders the visible GPUs;\n"
	          "NCCLWATCH_NVML_LIB names the NVML library to load (default libnvidia-ml.so.1).\n"
	          "exit status: 0, or 2 on a usage error or an unreadable recording.\n",
};

/* The visible GPUs of t (CUDA_VISIBLE_DEVICES, at most ngpus when > 0) into vis; why says what went wrong. */
static void visible(const struct nw_topo *t, long ngpus, struct nw_topo *vis, char *why, size_t whylen)
{
	char err[NW_ERRLEN];
	int pos[NW_NVML_MAX_GPUS];
	int nvis = nw_topo_visible(t, getenv("CUDA_VISIBLE_DEVICES"), pos, NW_NVML_MAX_GPUS, err, sizeof(err));
	if (nvis < 0) {
		snprintf(why, whylen, "%s", err);
		nvis = 0;
	}
	if (ngpus > 0 && nvis > ngpus)
		nvis = (int)ngpus;
	nw_topo_subset(t, pos, nvis, vis);
}

/* The JSON document (schema ncclwatch.topo/1) where --json says. 0, or -1 after printing why. */
static int print_json(const struct nw_opt_out *j, const struct nw_topo *t, const struct nw_topo *vis, json_t *ops, const char *why)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.topo/1"));
	json_object_set_new(doc, "topology", nw_topo_to_json(t));
	json_t *v = json_array();
	for (int i = 0; i < vis->ngpus; i++)
		json_array_append_new(v, json_integer(vis->gpus[i].index));
	json_object_set_new(doc, "visible_gpus", v);
	json_t *ex = json_object();
	if (ops)
		json_object_set(ex, "ops", ops);
	else
		json_object_set_new(ex, "skipped", json_string(why));
	json_object_set_new(doc, "expected", ex);
	int rc = nw_cli_json_write("topo", j, doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	return rc;
}

/* The NVML answers as JSON (the --nvml-json format). */
static void print_dump(const struct nw_nvml_snap *snap)
{
	json_t *d = nw_nvml_snap_to_json(snap);
	json_dumpf(d, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("\n");
	json_decref(d);
}

static void print_text(const struct nw_topo *t, const struct nw_topo *vis, const json_t *ops, const char *why)
{
	print_gpus(t);
	print_matrix(t);
	print_nics(t);
	print_expect(vis, ops, why);
	printf("\nLegend: X self; NV# a bonded set of # NVLinks; PIX at most one PCIe bridge;\n"
	       "PXB several PCIe bridges; PHB a PCIe host bridge (the CPU); NODE between host\n"
	       "bridges in one NUMA node; SYS across NUMA nodes (QPI/UPI/Infinity Fabric).\n");
}

int cmd_topo(int argc, char **argv)
{
	struct topo_args a;
	memset(&a, 0, sizeof(a));
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_topo, &a, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_topo, st);
	char err[NW_ERRLEN], why[NW_ERRLEN + 600] = "";
	struct nw_nvml_snap *snap = nw_calloc(1, sizeof(*snap));
	struct nw_topo *t = NULL, *vis = NULL;
	json_t *ops = NULL;
	int rc = 2;
	if (nw_probe_nvml(snap, a.nvml_json, err, sizeof(err)) < 0) {
		nw_error("%s", err);
		goto out;
	}
	rc = 0;
	if (a.dump) {
		print_dump(snap);
		goto out;
	}
	t = nw_calloc(1, sizeof(*t));
	vis = nw_calloc(1, sizeof(*vis));
	nw_topo_probe(t, nw_sys_root(a.sysroot), snap);
	visible(t, a.ngpus, vis, why, sizeof(why));
	if (!why[0])
		ops = nw_expect_table(t, vis, why, sizeof(why));
	if (nw_cli_json_text(&a.json))
		print_text(t, vis, ops, why);
	if (a.json.on && print_json(&a.json, t, vis, ops, why))
		rc = 2;
out:
	json_decref(ops);
	free(snap);
	free(t);
	free(vis);
	return rc;
}
