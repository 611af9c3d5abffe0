/* SPDX-License-Identifier: Apache-2.0 */
/* nvml_json: NVML snapshots as JSON ("ncclwatch.nvml/1"), for topo and doctor and their recordings. */
#include "probe/nvml_json.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

static void set_int(json_t *o, const char *k, long long v)
{
	if (v != NW_NVML_ABSENT)
		json_object_set_new(o, k, json_integer(v));
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v && *v)
		json_object_set_new(o, k, json_string(v));
}

static const char *err_names[NW_NVL_NERR] = { "replay", "recovery", "crc_flit", "crc_data" };

/* One NVLink: state, version, the far end and both readings of the error counters. */
static json_t *link_to_json(const struct nw_nvml_link *l)
{
	json_t *lj = json_object();
	json_object_set_new(lj, "link", json_integer(l->link));
	set_int(lj, "active", l->active);
	set_int(lj, "version", l->version);
	set_str(lj, "remote_bus_id", l->remote_bus_id);
	set_int(lj, "remote_type", l->remote_type);
	json_t *e = json_object(), *e2 = json_object();
	for (int c = 0; c < NW_NVL_NERR; c++) {
		set_int(e, err_names[c], l->err[c]);
		set_int(e2, err_names[c], l->err_later[c]);
	}
	json_object_set_new(lj, "errors", e);
	if (json_object_size(e2))
		json_object_set_new(lj, "errors_later", e2);
	else
		json_decref(e2);
	return lj;
}

/* One GPU: names, PCIe, ECC, fabric and its NVLinks. */
static json_t *gpu_to_json(const struct nw_nvml_gpu *g)
{
	json_t *j = json_object();
	json_object_set_new(j, "index", json_integer(g->index));
	set_str(j, "name", g->name);
	set_str(j, "uuid", g->uuid);
	set_str(j, "bus_id", g->bus_id);
	set_int(j, "persistence", g->persistence);
	set_int(j, "clocks_event_reasons", g->clock_reasons);
	json_t *pcie = json_object();
	set_int(pcie, "gen_cur", g->pcie_gen_cur);
	set_int(pcie, "gen_max", g->pcie_gen_max);
	set_int(pcie, "width_cur", g->pcie_width_cur);
	set_int(pcie, "width_max", g->pcie_width_max);
	json_object_set_new(j, "pcie", pcie);
	json_t *ecc = json_object();
	set_int(ecc, "mode", g->ecc_mode);
	set_int(ecc, "uncorrected_volatile", g->ecc_uncorrected);
	set_int(ecc, "remap_pending", g->remap_pending);
	set_int(ecc, "remap_failure", g->remap_failure);
	set_int(ecc, "retired_pending", g->retired_pending);
	json_object_set_new(j, "ecc", ecc);
	json_t *fab = json_object();
	set_int(fab, "state", g->fabric_state);
	set_int(fab, "status", g->fabric_status);
	json_object_set_new(j, "fabric", fab);
	json_t *nvl = json_object();
	if (g->nvlink_gbs > 0)
		json_object_set_new(nvl, "speed_mbps", json_integer((long long)(g->nvlink_gbs * 1000.0 + 0.5)));
	json_t *links = json_array();
	for (int k = 0; k < g->nlinks; k++)
		json_array_append_new(links, link_to_json(&g->links[k]));
	json_object_set_new(nvl, "links", links);
	json_object_set_new(j, "nvlink", nvl);
	return j;
}

json_t *nw_nvml_snap_to_json(const struct nw_nvml_snap *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "schema", json_string("ncclwatch.nvml/1"));
	json_object_set_new(o, "loaded", json_boolean(s->loaded));
	set_str(o, "lib", s->lib);
	set_str(o, "why", s->why);
	set_str(o, "driver", s->driver);
	set_int(o, "cuda_driver", s->cuda_driver);
	set_str(o, "nvml_version", s->nvml_version);
	json_t *gpus = json_array();
	for (int i = 0; i < s->ngpus; i++)
		json_array_append_new(gpus, gpu_to_json(&s->gpus[i]));
	json_object_set_new(o, "gpus", gpus);
	json_t *pairs = json_array();
	for (int i = 0; i < s->ngpus; i++)
		for (int k = 0; k < s->ngpus; k++) {
			if (i == k)
				continue;
			const struct nw_nvml_pair *p = &s->pairs[i][k];
			json_t *pj = json_object();
			json_object_set_new(pj, "a", json_integer(i));
			json_object_set_new(pj, "b", json_integer(k));
			set_int(pj, "p2p_read", p->p2p_read);
			set_int(pj, "p2p_write", p->p2p_write);
			set_int(pj, "p2p_nvlink", p->p2p_nvlink);
			set_int(pj, "topo_level", p->topo_level);
			json_array_append_new(pairs, pj);
		}
	json_object_set_new(o, "pairs", pairs);
	return o;
}

/* An integer member, or the absent value; -1 (err set) when of the wrong type. */
static int get_int(const json_t *o, const char *k, long long *out, char *err, size_t errlen)
{
	json_t *v = o ? json_object_get(o, k) : NULL;
	*out = NW_NVML_ABSENT;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (!json_is_integer(v))
		return nw_seterr(err, errlen, "'%s' must be an integer", k);
	*out = json_integer_value(v);
	return 0;
}

static int get_i(const json_t *o, const char *k, int *out, char *err, size_t errlen)
{
	long long v;
	if (get_int(o, k, &v, err, errlen) < 0)
		return -1;
	if (v != NW_NVML_ABSENT && (v < -1 || v > 0x7fffffff))
		return nw_seterr(err, errlen, "'%s' is out of range", k);
	*out = (int)v;
	return 0;
}

static void get_str(const json_t *o, const char *k, char *out, size_t len)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v))
		nw_strlcpy(out, json_string_value(v), len);
}

/* Link k of GPU idx from its JSON into l (cleared first); -1 with err on a malformed member. */
static int link_from_json(const json_t *lj, struct nw_nvml_link *l, int idx, size_t k, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	if (!json_is_object(lj))
		return nw_seterr(err, errlen, "gpus[%d] link %zu is not an object", idx, k);
	int link;
	if (get_i(lj, "link", &link, err, errlen) < 0 || get_i(lj, "active", &l->active, err, errlen) < 0 ||
	    get_i(lj, "version", &l->version, err, errlen) < 0 ||
	    get_i(lj, "remote_type", &l->remote_type, err, errlen) < 0)
		return -1;
	l->link = link == NW_NVML_ABSENT ? (int)k : link;
	char rb[64] = "";
	get_str(lj, "remote_bus_id", rb, sizeof(rb));
	if (rb[0] && nw_pci_bus_norm(rb, l->remote_bus_id, sizeof(l->remote_bus_id)) < 0)
		return nw_seterr(err, errlen, "gpus[%d] link %d: '%s' is not a PCI bus id", idx, l->link, rb);
	json_t *e = json_object_get(lj, "errors"), *e2 = json_object_get(lj, "errors_later");
	for (int c = 0; c < NW_NVL_NERR; c++)
		if (get_int(e, err_names[c], &l->err[c], err, errlen) < 0 ||
		    get_int(e2, err_names[c], &l->err_later[c], err, errlen) < 0)
			return -1;
	return 0;
}

static int gpu_from_json(const json_t *j, struct nw_nvml_gpu *g, int idx, char *err, size_t errlen)
{
	nw_nvml_gpu_init(g, idx);
	if (!json_is_object(j))
		return nw_seterr(err, errlen, "gpus[%d] is not an object", idx);
	int index;
	if (get_i(j, "index", &index, err, errlen) < 0)
		return -1;
	if (index != NW_NVML_ABSENT)
		g->index = index;
	get_str(j, "name", g->name, sizeof(g->name));
	get_str(j, "uuid", g->uuid, sizeof(g->uuid));
	char bus[64] = "";
	get_str(j, "bus_id", bus, sizeof(bus));
	if (bus[0] && nw_pci_bus_norm(bus, g->bus_id, sizeof(g->bus_id)) < 0)
		return nw_seterr(err, errlen, "gpus[%d]: '%s' is not a PCI bus id", idx, bus);
	json_t *pcie = json_object_get(j, "pcie"), *ecc = json_object_get(j, "ecc");
	json_t *fab = json_object_get(j, "fabric"), *nvl = json_object_get(j, "nvlink");
	if (get_i(j, "persistence", &g->persistence, err, errlen) < 0 ||
	    get_i(pcie, "gen_cur", &g->pcie_gen_cur, err, errlen) < 0 ||
	    get_i(pcie, "gen_max", &g->pcie_gen_max, err, errlen) < 0 ||
	    get_i(pcie, "width_cur", &g->pcie_width_cur, err, errlen) < 0 ||
	    get_i(pcie, "width_max", &g->pcie_width_max, err, errlen) < 0 ||
	    get_i(ecc, "mode", &g->ecc_mode, err, errlen) < 0 ||
	    get_int(ecc, "uncorrected_volatile", &g->ecc_uncorrected, err, errlen) < 0 ||
	    get_i(ecc, "remap_pending", &g->remap_pending, err, errlen) < 0 ||
	    get_i(ecc, "remap_failure", &g->remap_failure, err, errlen) < 0 ||
	    get_i(ecc, "retired_pending", &g->retired_pending, err, errlen) < 0 ||
	    get_i(fab, "state", &g->fabric_state, err, errlen) < 0 ||
	    get_i(fab, "status", &g->fabric_status, err, errlen) < 0 ||
	    get_int(j, "clocks_event_reasons", &g->clock_reasons, err, errlen) < 0)
		return -1;
	long long mbps;
	if (get_int(nvl, "speed_mbps", &mbps, err, errlen) < 0)
		return -1;
	if (mbps > 0)
		g->nvlink_gbs = (double)mbps / 1000.0;
	json_t *links = json_object_get(nvl, "links");
	int replay_rate_unknown = mbps <= 0;
	if (links && !json_is_array(links))
		return nw_seterr(err, errlen, "gpus[%d].nvlink.links is not an array", idx);
	size_t n = json_array_size(links);
	if (n > NW_NVML_MAX_LINKS)
		return nw_seterr(err, errlen, "gpus[%d] has %zu NVLinks; at most %d are supported", idx, n,
		                 NW_NVML_MAX_LINKS);
	for (size_t k = 0; k < n; k++)
		if (link_from_json(json_array_get(links, k), &g->links[g->nlinks++], idx, k, err, errlen) < 0)
			return -1;
	if (replay_rate_unknown && g->nlinks)
		g->nvlink_gbs = nw_nvlink_rate_gbs(g->name, g->links[0].version);
	return 0;
}

int nw_nvml_snap_from_json(const json_t *doc, struct nw_nvml_snap *s, char *err, size_t errlen)
{
	nw_nvml_snap_init(s);
	if (!json_is_object(doc))
		return nw_seterr(err, errlen, "an NVML recording must be a JSON object");
	json_t *sch = json_object_get(doc, "schema");
	if (!json_is_string(sch) || strcmp(json_string_value(sch), "ncclwatch.nvml/1"))
		return nw_seterr(err, errlen, "not an NVML recording (\"schema\" is not \"ncclwatch.nvml/1\")");
	json_t *loaded = json_object_get(doc, "loaded");
	s->loaded = loaded ? json_is_true(loaded) : 1;
	get_str(doc, "lib", s->lib, sizeof(s->lib));
	get_str(doc, "why", s->why, sizeof(s->why));
	get_str(doc, "driver", s->driver, sizeof(s->driver));
	get_str(doc, "nvml_version", s->nvml_version, sizeof(s->nvml_version));
	if (get_i(doc, "cuda_driver", &s->cuda_driver, err, errlen) < 0)
		return -1;
	json_t *gpus = json_object_get(doc, "gpus");
	if (gpus && !json_is_array(gpus))
		return nw_seterr(err, errlen, "\"gpus\" must be an array");
	if (json_array_size(gpus) > NW_NVML_MAX_GPUS)
		return nw_seterr(err, errlen, "%zu GPUs recorded; at most %d are supported",
		                 json_array_size(gpus), NW_NVML_MAX_GPUS);
	for (size_t i = 0; i < json_array_size(gpus); i++) {
		if (gpu_from_json(json_array_get(gpus, i), &s->gpus[i], (int)i, err, errlen) < 0)
			return -1;
		s->ngpus++;
	}
	json_t *pairs = json_object_get(doc, "pairs");
	if (pairs && !json_is_array(pairs))
		return nw_seterr(err, errlen, "\"pairs\" must be an array");
	for (size_t k = 0; k < json_array_size(pairs); k++) {
		json_t *pj = json_array_get(pairs, k);
		int a, b;
		if (get_i(pj, "a", &a, err, errlen) < 0 || get_i(pj, "b", &b, err, errlen) < 0)
			return -1;
		if (a < 0 || b < 0 || a >= s->ngpus || b >= s->ngpus || a == b)
			return nw_seterr(err, errlen, "pairs[%zu] names GPUs %d and %d of %d", k, a, b, s->ngpus);
		struct nw_nvml_pair *p = &s->pairs[a][b];
		if (get_i(pj, "p2p_read", &p->p2p_read, err, errlen) < 0 ||
		    get_i(pj, "p2p_write", &p->p2p_write, err, errlen) < 0 ||
		    get_i(pj, "p2p_nvlink", &p->p2p_nvlink, err, errlen) < 0 ||
		    get_i(pj, "topo_level", &p->topo_level, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int nw_nvml_snap_load(const char *path, struct nw_nvml_snap *s, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return nw_seterr(err, errlen, "cannot read NVML recording '%s': %s (line %d)", path, je.text,
		                 je.line);
	char e2[NW_ERRLEN];
	int rc = nw_nvml_snap_from_json(doc, s, e2, sizeof(e2));
	json_decref(doc);
	if (rc < 0)
		return nw_seterr(err, errlen, "NVML recording '%s': %s", path, e2);
	if (!s->lib[0] || s->loaded)
		snprintf(s->lib, sizeof(s->lib), "%s (replayed)", path);
	return 0;
}
