/* SPDX-License-Identifier: Apache-2.0 */
/* tune statistics: size bands, medians, spreads, bootstrap, the win/lose rule. */
#include "tune/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define NW_TUNE_BOOT 2000

static void band_name(struct nw_tune_band *b, int first, int last)
{
	char lo[16], hi[16];
	nw_format_size(b->lo, lo, sizeof(lo));
	nw_format_size(b->hi, hi, sizeof(hi));
	const char *word = first ? "small" : last ? "large" : "medium";
	if (first && last)
		snprintf(b->name, sizeof(b->name), "all sizes");
	else if (first)
		snprintf(b->name, sizeof(b->name), "%s (<%s)", word, hi);
	else if (last)
		snprintf(b->name, sizeof(b->name), "%s (>=%s)", word, lo);
	else
		snprintf(b->name, sizeof(b->name), "%s (%s-%s)", word, lo, hi);
}

/* Parses the boundary list; see tune.h. */
int nw_tune_bands_parse(const char *spec, struct nw_tune_band *bands, char *err, size_t errlen)
{
	uint64_t bounds[NW_TUNE_MAXBANDS];
	int nb = 0;
	if (!spec || !*spec) {
		bounds[nb++] = 64ULL << 10;
		bounds[nb++] = 16ULL << 20;
	} else if (strcmp(spec, "none") != 0) {
		char *copy = nw_strdup(spec);
		int rc = 0;
		for (char *tok = copy; tok; ) {
			char *comma = strchr(tok, ',');
			if (comma)
				*comma = '\0';
			uint64_t b;
			char perr[256];
			if (nb == NW_TUNE_MAXBANDS - 1) {
				rc = nw_seterr(err, errlen, "--bands: at most %d boundaries", NW_TUNE_MAXBANDS - 1);
				break;
			}
			if (nw_parse_size(tok, &b, perr, sizeof(perr)) != 0) {
				rc = nw_seterr(err, errlen, "--bands: %s", perr);
				break;
			}
			if (b == 0 || (nb > 0 && b <= bounds[nb - 1])) {
				rc = nw_seterr(err, errlen, "--bands: boundaries must be above zero and increasing ('%s')", spec);
				break;
			}
			bounds[nb++] = b;
			tok = comma ? comma + 1 : NULL;
		}
		free(copy);
		if (rc)
			return -1;
		if (nb == 0)
			return nw_seterr(err, errlen, "--bands: give boundaries such as 64K,16M (or 'none')");
	}
	int n = nb + 1;
	for (int i = 0; i < n; i++) {
		bands[i].lo = i ? bounds[i - 1] : 0;
		bands[i].hi = i < nb ? bounds[i] : UINT64_MAX;
		band_name(&bands[i], i == 0, i == n - 1);
	}
	return n;
}

int nw_tune_band_of(const struct nw_tune_band *bands, int nbands, uint64_t size)
{
	for (int i = 0; i < nbands; i++)
		if (size >= bands[i].lo && size < bands[i].hi)
			return i;
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of a copy (so the caller's order, which is repeat order, stays). */
double nw_tune_median(const double *x, int n)
{
	if (n <= 0)
		return NAN;
	double small[64];
	double *t = n <= 64 ? small : nw_malloc((size_t)n * sizeof(*t));
	memcpy(t, x, (size_t)n * sizeof(*t));
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	if (t != small)
		free(t);
	return m;
}

static void range(const double *x, int n, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < n; i++) {
		if (x[i] < *lo)
			*lo = x[i];
		if (x[i] > *hi)
			*hi = x[i];
	}
}

/* splitmix64: small, repeatable, good enough for resampling. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double resample_median(const double *x, int n, double *buf, uint64_t *seed)
{
	for (int i = 0; i < n; i++)
		buf[i] = x[next_rand(seed) % (uint64_t)n];
	return nw_tune_median(buf, n);
}

/* Bootstrap 95% interval (2.5th and 97.5th percentiles) of med(d)/med(v) - 1. */
static void bootstrap(const double *d, int nd, const double *v, int nv, uint64_t seed,
                      double *lo, double *hi)
{
	double *g = nw_malloc(NW_TUNE_BOOT * sizeof(*g));
	double *bd = nw_malloc((size_t)nd * sizeof(*bd)), *bv = nw_malloc((size_t)nv * sizeof(*bv));
	uint64_t s = seed ? seed : 1;
	for (int b = 0; b < NW_TUNE_BOOT; b++) {
		double md = resample_median(d, nd, bd, &s);
		double mv = resample_median(v, nv, bv, &s);
		g[b] = mv > 0 ? md / mv - 1 : 0;
	}
	qsort(g, NW_TUNE_BOOT, sizeof(*g), cmp_double);
	*lo = g[(int)(0.025 * NW_TUNE_BOOT)];
	*hi = g[(int)(0.975 * NW_TUNE_BOOT) - 1];
	free(g);
	free(bd);
	free(bv);
}

/* The win/lose rule; see tune.h and docs/tune.md. */
void nw_tune_compare(const double *d, int nd, const double *v, int nv, double min_gain,
                     uint64_t seed, struct nw_tune_cmp *out)
{
	memset(out, 0, sizeof(*out));
	out->n_d = nd;
	out->n_v = nv;
	out->verdict = NW_TC_FEW;
	out->med_d = out->med_v = out->gain = out->ci_lo = out->ci_hi = NAN;
	if (nd <= 0 || nv <= 0)
		return;
	out->med_d = nw_tune_median(d, nd);
	out->med_v = nw_tune_median(v, nv);
	range(d, nd, &out->lo_d, &out->hi_d);
	range(v, nv, &out->lo_v, &out->hi_v);
	double sd = out->med_d > 0 ? (out->hi_d - out->lo_d) / out->med_d : 0;
	double sv = out->med_v > 0 ? (out->hi_v - out->lo_v) / out->med_v : 0;
	out->noise = sd > sv ? sd : sv;
	out->gain = out->med_v > 0 ? out->med_d / out->med_v - 1 : 0;
	if (nd < 2 || nv < 2) {
		out->ci_lo = out->ci_hi = out->gain;
		return;
	}
	bootstrap(d, nd, v, nv, seed, &out->ci_lo, &out->ci_hi);
	if (nd < NW_TUNE_MIN_REPEATS || nv < NW_TUNE_MIN_REPEATS)
		return;
	double need = out->noise > min_gain ? out->noise : min_gain;
	double loss = out->med_d > 0 ? out->med_v / out->med_d - 1 : 0;
	if (out->gain > need && out->hi_v < out->lo_d && out->ci_lo > 0)
		out->verdict = NW_TC_BETTER;
	else if (loss > need && out->lo_v > out->hi_d && out->ci_hi < 0)
		out->verdict = NW_TC_WORSE;
	else
		out->verdict = NW_TC_SAME;
}

int nw_tune_clearly_worse(const double *d, int nd, const double *v, int nv, double margin)
{
	if (nd < 2 || nv < 2)
		return 0;
	double lo_d, hi_d, lo_v, hi_v;
	range(d, nd, &lo_d, &hi_d);
	range(v, nv, &lo_v, &hi_v);
	return lo_v > hi_d * (1 + margin);
}
