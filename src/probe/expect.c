/* SPDX-License-Identifier: Apache-2.0 */
/* Expected busbw at large sizes (see expect.h, docs/expectations.md). */
#include "probe/expect.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

#define GB1 1073741824.0
#define GB4 4294967296.0

/*
 * Efficiencies over NVLink (NV18, 2 x H200, NCCL 2.28.9, nccl-tests 2.19.6,
 * out-of-place busbw / 478.116 GB/s) at 1 GB and 4 GB; from
 * reference/h200x2/nt_*.txt. Ops not measured there borrow the nearest
 * measured op and are marked uncalibrated.
 */
static const struct {
	enum nw_op op;
	double eff_1g, eff_4g;
	int measured;
	enum nw_op like;          /* the op borrowed from when not measured */
} nvlink_eff[] = {
	{ NW_ALL_REDUCE, 324.85 / 478.116, 339.68 / 478.116, 1, NW_ALL_REDUCE },
	{ NW_ALL_GATHER, 270.95 / 478.116, 289.01 / 478.116, 1, NW_ALL_GATHER },
	{ NW_REDUCE_SCATTER, 275.04 / 478.116, 290.82 / 478.116, 1, NW_REDUCE_SCATTER },
	{ NW_BROADCAST, 364.71 / 478.116, 366.28 / 478.116, 1, NW_BROADCAST },
	{ NW_REDUCE, 364.71 / 478.116, 366.28 / 478.116, 0, NW_BROADCAST },
	{ NW_ALLTOALL, 332.01 / 478.116, 337.01 / 478.116, 1, NW_ALLTOALL },
	{ NW_SENDRECV, 359.52 / 478.116, 365.07 / 478.116, 1, NW_SENDRECV },
	{ NW_GATHER, 332.01 / 478.116, 337.01 / 478.116, 0, NW_ALLTOALL },
	{ NW_SCATTER, 332.01 / 478.116, 337.01 / 478.116, 0, NW_ALLTOALL },
};

double nw_expect_efficiency(enum nw_op op, enum nw_path path, uint64_t size_bytes, int *calibrated)
{
	size_t i = 0;
	while (i < NW_ARRAY_LEN(nvlink_eff) && nvlink_eff[i].op != op)
		i++;
	if (i == NW_ARRAY_LEN(nvlink_eff)) {
		if (calibrated)
			*calibrated = 0;
		return 0.0;
	}
	double s = (double)size_bytes, eff;
	if (s <= GB1)
		eff = nvlink_eff[i].eff_1g;
	else if (s >= GB4)
		eff = nvlink_eff[i].eff_4g;
	else {
		double x = (log2(s) - 30.0) / 2.0;
		eff = nvlink_eff[i].eff_1g + x * (nvlink_eff[i].eff_4g - nvlink_eff[i].eff_1g);
	}
	/* Only NVLink is calibrated so far; other classes use the same figures, flagged. */
	if (calibrated)
		*calibrated = nvlink_eff[i].measured && path == NW_PATH_NVL;
	return eff;
}

int nw_expect_for_link(enum nw_op op, int nranks, enum nw_path path, double link_gbs,
                       uint64_t size_bytes, struct nw_expect *e, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (!(link_gbs > 0))
		return nw_seterr(err, errlen, "no link bandwidth known");
	if (nranks < 2)
		return nw_seterr(err, errlen, "%d rank: nothing crosses a link", nranks);
	const struct nw_coll *c = nw_coll_get(op);
	if (!c)
		return nw_seterr(err, errlen, "unknown collective");
	e->link_gbs = link_gbs;
	e->path = path;
	e->efficiency = nw_expect_efficiency(op, path, size_bytes, &e->calibrated);
	e->busbw_gbs = e->efficiency * link_gbs;
	char lab[16];
	snprintf(e->basis, sizeof(e->basis), "%s %.0f%% of %.1f GB/s (%s%s)", c->name,
	         e->efficiency * 100.0, link_gbs, nw_path_label(path, e->nvlinks, lab, sizeof(lab)),
	         e->calibrated ? ", calibrated on 2xH200 NV18" : ", uncalibrated for this path");
	return 0;
}

/* A GPU's NVLink bandwidth toward the others of the set; 0 if a pair lacks NVLink. */
static double nvlink_share(const struct nw_topo *t, int g, int n, int *min_links)
{
	const struct nw_topo_gpu *gpu = &t->gpus[g];
	if (gpu->nvlinks_to_switch > 0) {
		if (*min_links == 0 || gpu->nvlinks_to_switch < *min_links)
			*min_links = gpu->nvlinks_to_switch;
		return gpu->nvlinks_to_switch * gpu->nvlink_gbs;
	}
	double sum = 0.0;
	int links = 0;
	for (int k = 0; k < n; k++) {
		if (k == g)
			continue;
		const struct nw_topo_pair *p = &t->pairs[g][k];
		if (p->path != NW_PATH_NVL || !(p->link_gbs > 0))
			return 0.0;
		sum += p->link_gbs;
		links += p->nvlinks;
	}
	if (*min_links == 0 || links < *min_links)
		*min_links = links;
	return sum;
}

/* Across hosts: the host's active RDMA (else Ethernet) bandwidth, shared by its nlocal ranks. */
static int expect_network(const struct nw_topo *t, enum nw_op op, int nranks, int nlocal, uint64_t size_bytes,
                          struct nw_expect *e, char *err, size_t errlen)
{
	double rdma = 0, eth = 0;
	for (int i = 0; i < t->nnics; i++) {
		if (!t->nics[i].up)
			continue;
		if (strcmp(t->nics[i].kind, "eth"))
			rdma += t->nics[i].rate_gbps;
		else
			eth += t->nics[i].rate_gbps;
	}
	double gbps = rdma > 0 ? rdma : eth;
	if (!(gbps > 0))
		return nw_seterr(err, errlen, "ranks on several hosts but no active NIC with a known rate");
	if (nw_expect_for_link(op, nranks, NW_PATH_SYS, gbps / 8.0 / nlocal, size_bytes, e, err,
	                       errlen) < 0)
		return -1;
	e->calibrated = 0;
	snprintf(e->basis, sizeof(e->basis), "%s %.0f%% of %.1f GB/s (%s NICs %.0f Gb/s / %d ranks, uncalibrated)",
	         nw_coll_get(op)->name, e->efficiency * 100.0, e->link_gbs, rdma > 0 ? "RDMA" : "Ethernet",
	         gbps, nlocal);
	return 0;
}

/*
 * Within the host when the first nlocal GPUs all reach each other over
 * NVLink: 1 with e filled (the slowest GPU's NVLink share); 0 when some
 * pair is not NVLink; -1 with err.
 */
static int expect_nvlink(const struct nw_topo *t, enum nw_op op, int nranks, int nlocal, uint64_t size_bytes,
                         struct nw_expect *e, char *err, size_t errlen)
{
	double best = 0.0;
	int min_links = 0;
	for (int g = 0; g < nlocal; g++) {
		double s = nvlink_share(t, g, nlocal, &min_links);
		if (!(s > 0))
			return 0;
		if (best == 0.0 || s < best)
			best = s;
	}
	if (nw_expect_for_link(op, nranks, NW_PATH_NVL, best, size_bytes, e, err, errlen) < 0)
		return -1;
	e->nvlinks = min_links;
	/* Calibrated on two GPUs joined directly; more GPUs or NVSwitch are extrapolated. */
	if (nlocal > 2 || t->gpus[0].nvlinks_to_switch > 0)
		e->calibrated = 0;
	char lab[16];
	snprintf(e->basis, sizeof(e->basis), "%s %.0f%% of %.1f GB/s (%s x %.3f GB/s%s)",
	         nw_coll_get(op)->name, e->efficiency * 100.0, best,
	         nw_path_label(NW_PATH_NVL, min_links, lab, sizeof(lab)), t->gpus[0].nvlink_gbs,
	         e->calibrated ? ", calibrated on 2xH200 NV18" : ", extrapolated from 2 GPUs");
	return 1;
}

/* Within the host over PCIe: the worst path class and the slowest GPU link among the first nlocal GPUs. */
static int expect_pcie(const struct nw_topo *t, enum nw_op op, int nranks, int nlocal, uint64_t size_bytes,
                       struct nw_expect *e, char *err, size_t errlen)
{
	enum nw_path worst = NW_PATH_SELF;
	double link = 0.0;
	for (int a = 0; a < nlocal; a++)
		for (int b = 0; b < nlocal; b++) {
			if (a == b)
				continue;
			const struct nw_topo_pair *p = &t->pairs[a][b];
			if (p->path > worst)
				worst = p->path;
			double l = p->path == NW_PATH_NVL ? t->gpus[a].pcie_gbs : p->link_gbs;
			if (l > 0 && (link == 0.0 || l < link))
				link = l;
		}
	if (!(link > 0))
		return nw_seterr(err, errlen, "the GPUs' PCIe link speed is unknown");
	return nw_expect_for_link(op, nranks, worst, link, size_bytes, e, err, errlen);
}

int nw_expect_for_topo(const struct nw_topo *t, enum nw_op op, int nranks, int nlocal,
                       uint64_t size_bytes, struct nw_expect *e, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (nranks < 2)
		return nw_seterr(err, errlen, "%d rank: nothing crosses a link", nranks);
	if (nlocal < 1 || nlocal > t->ngpus)
		return nw_seterr(err, errlen, "%d local ranks but %d GPUs found", nlocal, t->ngpus);
	if (nlocal < nranks)
		return expect_network(t, op, nranks, nlocal, size_bytes, e, err, errlen);
	if (nlocal < 2)
		return nw_seterr(err, errlen, "1 GPU: nothing crosses a link");
	int nvl = expect_nvlink(t, op, nranks, nlocal, size_bytes, e, err, errlen);
	if (nvl != 0)
		return nvl < 0 ? -1 : 0;
	return expect_pcie(t, op, nranks, nlocal, size_bytes, e, err, errlen);
}

static const enum nw_op table_ops[] = { NW_ALL_REDUCE, NW_ALL_GATHER, NW_REDUCE_SCATTER,
                                        NW_BROADCAST, NW_ALLTOALL, NW_SENDRECV };

/* One row of nw_expect_table: op at 1 GB (e1) and 4 GB (e4). */
static json_t *table_row(enum nw_op op, const struct nw_expect *e1, const struct nw_expect *e4)
{
	json_t *o = json_object();
	char lab[16];
	json_object_set_new(o, "op", json_string(nw_coll_get(op)->name));
	json_object_set_new(o, "link_gbs", json_real(e1->link_gbs));
	json_object_set_new(o, "path", json_string(nw_path_label(e1->path, e1->nvlinks, lab, sizeof(lab))));
	json_object_set_new(o, "busbw_1g", json_real(e1->busbw_gbs));
	json_object_set_new(o, "busbw_4g", json_real(e4->busbw_gbs));
	json_object_set_new(o, "efficiency_1g", json_real(e1->efficiency));
	json_object_set_new(o, "efficiency_4g", json_real(e4->efficiency));
	json_object_set_new(o, "calibrated", json_boolean(e1->calibrated));
	json_object_set_new(o, "basis", json_string(e4->basis));
	return o;
}

json_t *nw_expect_table(const struct nw_topo *t, const struct nw_topo *vis, char *why, size_t whylen)
{
	char err[NW_ERRLEN];
	why[0] = '\0';
	if (t->ngpus == 0) {
		snprintf(why, whylen, "no GPU%s%s", t->nvml_why[0] ? ": " : "", t->nvml_why);
		return NULL;
	}
	if (vis->ngpus == 1) {
		snprintf(why, whylen, "1 visible GPU: nothing crosses a link");
		return NULL;
	}
	json_t *ops = json_array();
	for (size_t i = 0; i < NW_ARRAY_LEN(table_ops); i++) {
		struct nw_expect e1, e4;
		if (nw_expect_for_topo(vis, table_ops[i], vis->ngpus, vis->ngpus, 1ULL << 30, &e1, err, sizeof(err)) < 0 ||
		    nw_expect_for_topo(vis, table_ops[i], vis->ngpus, vis->ngpus, 4ULL << 30, &e4, err, sizeof(err)) < 0) {
			nw_strlcpy(why, err, whylen);
			json_decref(ops);
			return NULL;
		}
		json_array_append_new(ops, table_row(table_ops[i], &e1, &e4));
	}
	return ops;
}
