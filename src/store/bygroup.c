/* SPDX-License-Identifier: Apache-2.0 */
/* compare --by: the best busbw of the history's runs, grouped by one field. */
#include <stdlib.h>
#include <string.h>

#include "store/compare.h"
#include "util/util.h"

const char *nw_band_name(int band)
{
	static const char *const names[NW_NBANDS] = { "latency", "middle", "bandwidth" };
	return band >= 0 && band < NW_NBANDS ? names[band] : "?";
}

int nw_band_of(uint64_t size)
{
	return size < NW_BAND_MIDDLE_FROM ? NW_BAND_LATENCY : size < NW_BAND_BW_FROM ? NW_BAND_MIDDLE : NW_BAND_BW;
}

/* The group run h falls in for field by ("nccl_version", "gpu", "host"); "unknown" when not recorded. */
static void group_of(const struct nw_run_header *h, const char *by, char *buf, size_t len)
{
	const char *v = !strcmp(by, "nccl_version") ? h->nccl_version : !strcmp(by, "gpu") ? h->gpus : h->host;
	nw_strlcpy(buf, v[0] ? v : "unknown", len);
}

/* The cell of group/op in t, added (empty) when new. */
static struct nw_by_cell *cell_of(struct nw_by_table *t, size_t *cap, const char *group, const char *op)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->cells[i].group, group) && !strcmp(t->cells[i].op, op))
			return &t->cells[i];
	if (t->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		t->cells = nw_realloc(t->cells, *cap * sizeof(*t->cells));
	}
	struct nw_by_cell *c = &t->cells[t->n++];
	memset(c, 0, sizeof(*c));
	nw_strlcpy(c->group, group, sizeof(c->group));
	nw_strlcpy(c->op, op, sizeof(c->op));
	return c;
}

/* Every row of run id into t under its group. */
static void add_run(struct nw_by_table *t, size_t *cap, long long id, const struct nw_run *run)
{
	char group[sizeof(t->cells->group)];
	group_of(&run->h, t->by, group, sizeof(group));
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		struct nw_by_cell *c = cell_of(t, cap, group, r->op);
		if (c->last_run != id) {
			c->last_run = id;
			c->nruns++;
		}
		int b = nw_band_of(r->size_bytes);
		if (r->busbw_gbs > c->best[b]) {
			c->best[b] = r->busbw_gbs;
			c->best_run[b] = id;
		}
	}
}

static int cmp_cell(const void *pa, const void *pb)
{
	const struct nw_by_cell *a = pa, *b = pb;
	int c = strcmp(a->op, b->op);
	return c ? c : strcmp(a->group, b->group);
}

int nw_cmp_by(struct nw_store *s, const char *by, const struct nw_store_filter *f, struct nw_by_table *out,
              char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (strcmp(by, "nccl_version") && strcmp(by, "gpu") && strcmp(by, "host"))
		return nw_seterr(err, errlen, "--by takes nccl_version, gpu or host, not '%s'", by);
	nw_strlcpy(out->by, by, sizeof(out->by));
	struct nw_store_entry *e;
	size_t n, cap = 0;
	if (nw_store_list(s, f, &e, &n, err, errlen))
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct nw_run run;
		rc = nw_store_load(s, e[i].id, &run, err, errlen);
		if (!rc) {
			add_run(out, &cap, e[i].id, &run);
			nw_run_release(&run);
		}
	}
	free(e);
	if (!rc && !out->n)
		rc = nw_seterr(err, errlen, "no recorded run to group: record runs first (bench, check or import)");
	if (rc) {
		nw_by_table_release(out);
		return -1;
	}
	qsort(out->cells, out->n, sizeof(*out->cells), cmp_cell);
	return 0;
}

void nw_by_table_release(struct nw_by_table *t)
{
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

json_t *nw_by_table_to_json(const struct nw_by_table *t)
{
	json_t *groups = json_array();
	for (size_t i = 0; i < t->n; i++) {
		const struct nw_by_cell *c = &t->cells[i];
		json_t *bands = json_object();
		for (int b = 0; b < NW_NBANDS; b++)
			if (c->best_run[b])
				json_object_set_new(bands, nw_band_name(b),
				                    json_pack("{s:f,s:I}", "best_busbw_gbs", c->best[b], "run",
				                              (json_int_t)c->best_run[b]));
		json_array_append_new(groups, json_pack("{s:s,s:s,s:i,s:o}", "group", c->group, "op", c->op, "runs",
		                                        c->nruns, "bands", bands));
	}
	return json_pack("{s:s,s:s,s:{s:I,s:I},s:o}", "schema", "ncclwatch.compare-by/1", "by", t->by, "bands",
	                 "middle_from_bytes", (json_int_t)NW_BAND_MIDDLE_FROM, "bandwidth_from_bytes",
	                 (json_int_t)NW_BAND_BW_FROM, "groups", groups);
}
