/* SPDX-License-Identifier: Apache-2.0 */
/* tune analysis: band scores, the op x band table, the recommendation, the env file. */
#include "tune/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void nw_tune_data_init(struct nw_tune_data *d, int nvariants, const struct nw_tune_band *bands,
                       int nbands)
{
	memset(d, 0, sizeof(*d));
	d->nvariants = nvariants;
	d->nbands = nbands;
	memcpy(d->bands, bands, (size_t)nbands * sizeof(*bands));
	d->s = nw_calloc((size_t)nvariants * NW_NOPS * (size_t)nbands, sizeof(*d->s));
}

void nw_tune_data_release(struct nw_tune_data *d)
{
	if (d->s)
		for (int i = 0; i < d->nvariants * NW_NOPS * d->nbands; i++)
			free(d->s[i].x);
	free(d->s);
	memset(d, 0, sizeof(*d));
}

struct nw_tune_samples *nw_tune_data_at(const struct nw_tune_data *d, int variant, enum nw_op op,
                                        int band)
{
	return &d->s[((size_t)variant * NW_NOPS + (size_t)op) * (size_t)d->nbands + (size_t)band];
}

static void push(struct nw_tune_samples *s, double x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->x = nw_realloc(s->x, (size_t)s->cap * sizeof(*s->x));
	}
	s->x[s->n++] = x;
}

/* One score per (op, band): the geometric mean of its rows' times. */
void nw_tune_data_add_run(struct nw_tune_data *d, int variant, const struct nw_run *run)
{
	double sum[NW_NOPS][NW_TUNE_MAXBANDS];
	int cnt[NW_NOPS][NW_TUNE_MAXBANDS];
	memset(sum, 0, sizeof(sum));
	memset(cnt, 0, sizeof(cnt));
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		const struct nw_coll *c = nw_coll_find(r->op);
		int b = nw_tune_band_of(d->bands, d->nbands, r->size_bytes);
		if (!c || b < 0 || !(r->time_us > 0) || !isfinite(r->time_us))
			continue;
		sum[c->op][b] += log(r->time_us);
		cnt[c->op][b]++;
	}
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		for (int b = 0; b < d->nbands; b++)
			if (cnt[op][b])
				push(nw_tune_data_at(d, variant, op, b), exp(sum[op][b] / cnt[op][b]));
}

static size_t cmp_index(const struct nw_tune_data *d, int v, enum nw_op op, int b)
{
	return ((size_t)v * NW_NOPS + (size_t)op) * (size_t)d->nbands + (size_t)b;
}

/* Fills cmps and the table cells; see tune.h. */
int nw_tune_analyze(const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                    double min_gain, struct nw_tune_cmp *cmps, struct nw_tune_cell *cells)
{
	int ncells = 0;
	for (enum nw_op op = 0; op < NW_NOPS; op++) {
		for (int b = 0; b < d->nbands; b++) {
			const struct nw_tune_samples *def = nw_tune_data_at(d, 0, op, b);
			for (int v = 0; v < vs->n; v++) {
				const struct nw_tune_samples *s = nw_tune_data_at(d, v, op, b);
				uint64_t seed = 0x5eed0000ULL + (uint64_t)v * 4099 + (uint64_t)op * 131 + (uint64_t)b;
				nw_tune_compare(def->x, def->n, s->x, s->n, min_gain, seed, &cmps[cmp_index(d, v, op, b)]);
			}
			if (!def->n)
				continue;
			struct nw_tune_cell *c = &cells[ncells++];
			memset(c, 0, sizeof(*c));
			c->op = op;
			c->band = b;
			c->default_us = nw_tune_median(def->x, def->n);
			c->best = -1;
			for (int v = 1; v < vs->n; v++) {
				const struct nw_tune_cmp *m = &cmps[cmp_index(d, v, op, b)];
				if (vs->v[v].status == NW_TV_FAILED || vs->v[v].status == NW_TV_WRONG)
					continue;
				if (m->verdict == NW_TC_BETTER)
					c->nbetter++;
				else if (m->verdict == NW_TC_WORSE)
					c->nworse++;
				else if (m->verdict == NW_TC_SAME)
					c->nsame++;
				if (vs->v[v].status != NW_TV_ACTIVE || m->verdict != NW_TC_BETTER)
					continue;
				if (c->best < 0 || m->gain > c->best_cmp.gain) {
					c->best = v;
					c->best_cmp = *m;
				}
			}
		}
	}
	return ncells;
}

static void tally(const struct nw_tune_data *d, const struct nw_tune_cmp *cmps, int v,
                  int *better, int *worse, double *gain)
{
	*better = *worse = 0;
	*gain = 0;
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		for (int b = 0; b < d->nbands; b++) {
			const struct nw_tune_cmp *m = &cmps[cmp_index(d, v, op, b)];
			if (m->verdict == NW_TC_BETTER) {
				(*better)++;
				*gain += m->gain;
			} else if (m->verdict == NW_TC_WORSE) {
				(*worse)++;
			}
		}
}

/* The one variant to set; see tune.h. */
int nw_tune_recommend(const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                      const struct nw_tune_cmp *cmps, int *also, int *nalso)
{
	int best = -1;
	double best_gain = 0;
	*nalso = 0;
	for (int v = 1; v < vs->n; v++) {
		if (vs->v[v].status != NW_TV_ACTIVE)
			continue;
		int nb, nwr;
		double g;
		tally(d, cmps, v, &nb, &nwr, &g);
		if (nb == 0 || nwr > 0)
			continue;
		if (best < 0 || g > best_gain) {
			if (best >= 0)
				also[(*nalso)++] = best;
			best = v;
			best_gain = g;
		} else {
			also[(*nalso)++] = v;
		}
	}
	return best;
}

/* Writes value for a POSIX shell: bare when safe, else single-quoted. */
static void shell_quote(FILE *f, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:/+-=@%") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else if (*p == '\n')
			fputc(' ', f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

/* The env file; see tune.h. */
int nw_tune_write_env(FILE *f, const struct nw_tune_data *d, const struct nw_tune_variants *vs,
                      const struct nw_tune_cmp *cmps, int rec, const char *date, const char *host,
                      const char *nccl_version)
{
	fprintf(f, "# NCCL settings measured by ncclwatch tune on %s, %s%s%s%s\n", host, date,
	        nccl_version && *nccl_version ? " (NCCL " : "", nccl_version ? nccl_version : "",
	        nccl_version && *nccl_version ? ")" : "");
	if (rec < 0) {
		fprintf(f, "# defaults are best here: no setting measured faster beyond the noise; nothing to set.\n");
	} else {
		const struct nw_tune_variant *v = &vs->v[rec];
		fprintf(f, "# %s measured faster than the defaults (speed gain, median of repeats, 95%% interval):\n", v->label);
		for (enum nw_op op = 0; op < NW_NOPS; op++)
			for (int b = 0; b < d->nbands; b++) {
				const struct nw_tune_cmp *m = &cmps[cmp_index(d, rec, op, b)];
				if (m->verdict != NW_TC_BETTER)
					continue;
				fprintf(f, "#   %s %s: %+.1f%% (%+.1f%% to %+.1f%%), %.2f us -> %.2f us\n",
				        nw_coll_get(op)->name, d->bands[b].name, 100 * m->gain,
				        100 * m->ci_lo, 100 * m->ci_hi, m->med_d, m->med_v);
			}
		fprintf(f, "# and slower in no measured size band.\n");
		for (int i = 0; i < v->nset; i++) {
			fprintf(f, "export %s=", v->set[i].name);
			shell_quote(f, v->set[i].value);
			fputc('\n', f);
		}
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
