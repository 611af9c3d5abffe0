/* SPDX-License-Identifier: Apache-2.0 */
/* Samples of the stats files for live rates (see sample.h). */
#include <stdlib.h>
#include <string.h>

#include "export/sample.h"
#include "util/util.h"

static const unsigned kept_src[NW_SAMPLE_NSRC] = { NWS_SRC_KERNEL, NWS_SRC_PROXY };

static int cmp_key(const struct nw_sample_ent *a, const struct nw_sample_ent *b)
{
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
	CMP(comm_hash);
	CMP(rank);
	CMP(pid);
	CMP(proc_start);
	CMP(op);
	CMP(bucket);
#undef CMP
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	return cmp_key(a, b);
}

static void set_key(struct nw_sample_ent *e, const struct nw_sf_rank *r, unsigned op,
                    unsigned bucket)
{
	e->comm_hash = r->hdr.comm_hash;
	e->proc_start = r->hdr.proc_start;
	e->pid = r->hdr.pid;
	e->rank = r->hdr.rank;
	e->op = op;
	e->bucket = bucket;
}

void nw_sample_take(const struct nw_sf_set *set, double t, struct nw_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->t = t;
	size_t cap = 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct nw_sf_rank *r = &set->ranks[i];
		for (unsigned op = 0; r->rec && op < NWS_NOPS; op++) {
			for (unsigned b = 0; b < NWS_NBUCKETS; b++) {
				const struct nws_record *rec = &r->rec[op][b];
				if (!rec->count)
					continue;
				if (s->n == cap) {
					cap = cap ? cap * 2 : 64;
					s->e = nw_realloc(s->e, cap * sizeof(*s->e));
				}
				struct nw_sample_ent *e = &s->e[s->n++];
				memset(e, 0, sizeof(*e));
				set_key(e, r, op, b);
				e->count = rec->count;
				e->bytes = rec->bytes;
				for (unsigned k = 0; k < NW_SAMPLE_NSRC; k++) {
					const struct nws_timing *src = &rec->t[kept_src[k]];
					e->t[k].count = src->count;
					e->t[k].bytes = src->bytes;
					e->t[k].sum_ns = src->sum_ns;
					memcpy(e->t[k].hist, src->hist, sizeof(e->t[k].hist));
				}
			}
		}
	}
	if (s->n > 1)
		qsort(s->e, s->n, sizeof(*s->e), cmp_ent);
}

void nw_sample_release(struct nw_sample *s)
{
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

void nw_sample_move(struct nw_sample *dst, struct nw_sample *src)
{
	nw_sample_release(dst);
	*dst = *src;
	src->e = NULL;
	src->n = 0;
}

const struct nw_sample_ent *nw_sample_find(const struct nw_sample *s, const struct nw_sf_rank *r,
                                           unsigned op, unsigned bucket)
{
	if (!s || !s->n)
		return NULL;
	struct nw_sample_ent key;
	memset(&key, 0, sizeof(key));
	set_key(&key, r, op, bucket);
	return bsearch(&key, s->e, s->n, sizeof(*s->e), cmp_ent);
}

/* 1 when any counter of now is below before's (the series restarted). */
static int went_back(const struct nw_sample_ent *now, const struct nw_sample_ent *before)
{
	if (now->count < before->count || now->bytes < before->bytes)
		return 1;
	for (unsigned k = 0; k < NW_SAMPLE_NSRC; k++) {
		const struct nw_sample_timing *a = &now->t[k], *b = &before->t[k];
		if (a->count < b->count || a->bytes < b->bytes || a->sum_ns < b->sum_ns)
			return 1;
		for (unsigned i = 0; i < NWS_NHIST; i++)
			if (a->hist[i] < b->hist[i])
				return 1;
	}
	return 0;
}

void nw_sample_delta(const struct nw_sample_ent *now, const struct nw_sample_ent *before,
                     struct nw_sample_ent *out)
{
	*out = *now;
	if (!before || went_back(now, before))
		return;
	out->count -= before->count;
	out->bytes -= before->bytes;
	for (unsigned k = 0; k < NW_SAMPLE_NSRC; k++) {
		struct nw_sample_timing *o = &out->t[k];
		const struct nw_sample_timing *b = &before->t[k];
		o->count -= b->count;
		o->bytes -= b->bytes;
		o->sum_ns -= b->sum_ns;
		for (unsigned i = 0; i < NWS_NHIST; i++)
			o->hist[i] -= b->hist[i];
	}
}

int nw_sample_best(const struct nw_sample_ent *e, const struct nw_sample_timing **t)
{
	for (unsigned k = 0; k < NW_SAMPLE_NSRC; k++) {
		if (e->t[k].count && e->t[k].sum_ns) {
			*t = &e->t[k];
			return (int)kept_src[k];
		}
	}
	*t = NULL;
	return -1;
}

void nw_sample_add(struct nw_sample_ent *a, const struct nw_sample_ent *b)
{
	a->count += b->count;
	a->bytes += b->bytes;
	for (unsigned k = 0; k < NW_SAMPLE_NSRC; k++) {
		a->t[k].count += b->t[k].count;
		a->t[k].bytes += b->t[k].bytes;
		a->t[k].sum_ns += b->t[k].sum_ns;
		for (unsigned i = 0; i < NWS_NHIST; i++)
			a->t[k].hist[i] += b->t[k].hist[i];
	}
}

void nw_sample_bounds(double le[NW_SAMPLE_NBOUNDS])
{
	for (unsigned i = 0; i < NW_SAMPLE_NBOUNDS; i++)
		le[i] = (double)nws_bin_hi_us(i) * 1e-6;
}
