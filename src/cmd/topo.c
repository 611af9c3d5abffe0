/*
 * ncclwatch topo: GPUs, the path between every pair (nvidia-smi's
 * classes), NVLink, peer-to-peer, NICs, and the busbw each collective
 * should reach at large sizes on the visible GPUs.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/coll.h"
#include "cmd/cmd.h"
#include "gpu/nvml.h"
#include "probe/expect.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "util/util.h"

const char usage_topo[] =
	"usage: ncclwatch topo [options]\n"
	"\n"
	"GPUs (model, bus id, NUMA node, local CPUs, PCIe), the path class of every\n"
	"GPU pair as `nvidia-smi topo -m` names it (NV#, PIX, PXB, PHB, NODE, SYS),\n"
	"NVLink counts and rates, peer-to-peer status, NICs (InfiniBand, RoCE,\n"
	"Ethernet: state, rate, NUMA node, nearest GPUs), and the busbw each\n"
	"collective should reach at 1 GB and 4 GB on the visible GPUs\n"
	"(docs/expectations.md). Works without a GPU: it says what it could not see.\n"
	"\n"
	"options:\n"
	"  --json             one JSON document (schema ncclwatch.topo/1) on stdout\n"
	"  -g, --ngpus N      expectations for the first N visible GPUs (default: all)\n"
	"  --sysroot DIR      read /sys, /proc and /etc under DIR (also $NCCLWATCH_SYSROOT)\n"
	"  --nvml-json FILE   replay recorded NVML answers instead of asking the driver\n"
	"                     (also $NCCLWATCH_NVML_JSON; scripts/gpu/record-fixtures.sh)\n"
	"  --nvml-dump        print the NVML answers as JSON (the --nvml-json format) and exit\n"
	"  -h, --help         this text\n"
	"\n"
	"environment: CUDA_VISIBLE_DEVICES picks and orders the visible GPUs;\n"
	"NCCLWATCH_NVML_LIB names the NVML library to load (default libnvidia-ml.so.1).\n"
	"exit status: 0, or 2 on a usage error or an unreadable recording.\n";

static const enum nw_op expect_ops[] = { NW_ALL_REDUCE, NW_ALL_GATHER, NW_REDUCE_SCATTER,
                                         NW_BROADCAST, NW_ALLTOALL, NW_SENDRECV };

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

/* Expectations for the visible set; "why" says why there are none. */
static json_t *expectations(const struct nw_topo *vis, char *why, size_t whylen)
{
	json_t *ops = json_array();
	char err[NW_ERRLEN];
	why[0] = '\0';
	for (size_t i = 0; i < NW_ARRAY_LEN(expect_ops); i++) {
		struct nw_expect e1, e4;
		if (nw_expect_for_topo(vis, expect_ops[i], vis->ngpus, vis->ngpus, 1ULL << 30, &e1, err, sizeof(err)) < 0 ||
		    nw_expect_for_topo(vis, expect_ops[i], vis->ngpus, vis->ngpus, 4ULL << 30, &e4, err, sizeof(err)) < 0) {
			nw_strlcpy(why, err, whylen);
			json_decref(ops);
			return NULL;
		}
		json_t *o = json_object();
		char lab[16];
		json_object_set_new(o, "op", json_string(nw_coll_get(expect_ops[i])->name));
		json_object_set_new(o, "link_gbs", json_real(e1.link_gbs));
		json_object_set_new(o, "path", json_string(nw_path_label(e1.path, e1.nvlinks, lab, sizeof(lab))));
		json_object_set_new(o, "busbw_1g", json_real(e1.busbw_gbs));
		json_object_set_new(o, "busbw_4g", json_real(e4.busbw_gbs));
		json_object_set_new(o, "efficiency_1g", json_real(e1.efficiency));
		json_object_set_new(o, "efficiency_4g", json_real(e4.efficiency));
		json_object_set_new(o, "calibrated", json_boolean(e1.calibrated));
		json_object_set_new(o, "basis", json_string(e4.basis));
		json_array_append_new(ops, o);
	}
	return ops;
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

int cmd_topo(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "ngpus", required_argument, NULL, 'g' },
		{ "sysroot", required_argument, NULL, 'R' },
		{ "nvml-json", required_argument, NULL, 'N' },
		{ "nvml-dump", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, dump = 0, rc = 2;
	long ngpus = 0;
	const char *sysroot = NULL, *nvml_json = NULL;
	char err[NW_ERRLEN];
	struct nw_nvml_snap *snap = NULL;
	struct nw_topo *t = NULL, *vis = NULL;
	json_t *ops = NULL;

	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":g:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'D': dump = 1; break;
		case 'R': sysroot = optarg; break;
		case 'N': nvml_json = optarg; break;
		case 'g':
			if (nw_parse_long(optarg, 1, NW_NVML_MAX_GPUS, &ngpus, "--ngpus", err, sizeof(err)) < 0)
				return nw_error("%s", err), 2;
			break;
		case 'h': fputs(usage_topo, stdout); return 0;
		case ':': return nw_error("option '%s' needs a value; see 'ncclwatch help topo'", argv[optind - 1]), 2;
		default: return nw_error("unknown option '%s'; see 'ncclwatch help topo'", argv[optind - 1]), 2;
		}
	}
	if (optind < argc)
		return nw_error("unexpected argument '%s'; see 'ncclwatch help topo'", argv[optind]), 2;

	const char *root = nw_sys_root(sysroot);
	snap = nw_calloc(1, sizeof(*snap));
	if (nw_probe_nvml(snap, nvml_json, err, sizeof(err)) < 0) {
		nw_error("%s", err);
		goto out;
	}
	if (dump) {
		json_t *d = nw_nvml_snap_to_json(snap);
		json_dumpf(d, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(d);
		rc = 0;
		goto out;
	}
	t = nw_calloc(1, sizeof(*t));
	vis = nw_calloc(1, sizeof(*vis));
	nw_topo_probe(t, root, snap);

	int pos[NW_NVML_MAX_GPUS];
	char why[NW_ERRLEN + 600] = "";
	int nvis = nw_topo_visible(t, getenv("CUDA_VISIBLE_DEVICES"), pos, NW_NVML_MAX_GPUS, err, sizeof(err));
	if (nvis < 0) {
		snprintf(why, sizeof(why), "%s", err);
		nvis = 0;
	}
	if (ngpus > 0 && nvis > ngpus)
		nvis = (int)ngpus;
	nw_topo_subset(t, pos, nvis, vis);
	if (!why[0]) {
		if (t->ngpus == 0)
			snprintf(why, sizeof(why), "no GPU%s%s", t->nvml_why[0] ? ": " : "", t->nvml_why);
		else if (vis->ngpus == 1)
			snprintf(why, sizeof(why), "1 visible GPU: nothing crosses a link");
		else
			ops = expectations(vis, why, sizeof(why));
	}

	if (json) {
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
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else {
		print_gpus(t);
		print_matrix(t);
		print_nics(t);
		print_expect(vis, ops, why);
		printf("\nLegend: X self; NV# a bonded set of # NVLinks; PIX at most one PCIe bridge;\n"
		       "PXB several PCIe bridges; PHB a PCIe host bridge (the CPU); NODE between host\n"
		       "bridges in one NUMA node; SYS across NUMA nodes (QPI/UPI/Infinity Fabric).\n");
	}
	rc = 0;
out:
	json_decref(ops);
	free(snap);
	free(t);
	free(vis);
	return rc;
}
