/* SPDX-License-Identifier: Apache-2.0 */
/* Percentiles from bucketed histograms (see hist.h). */
#include <math.h>
#include <string.h>

#include "export/hist.h"

double nw_hist_quantile(const double *le, const uint64_t *counts, size_t nbounds, double q)
{
	if (!(q >= 0 && q <= 1) || nbounds == 0)
		return NAN;
	uint64_t total = 0;
	for (size_t i = 0; i <= nbounds; i++)
		total += counts[i];
	if (total == 0)
		return NAN;
	double rank = q * (double)total;
	uint64_t cum = 0;
	for (size_t i = 0; i < nbounds; i++) {
		uint64_t prev = cum;
		cum += counts[i];
		if (counts[i] && (double)cum >= rank) {
			double lo = i ? le[i - 1] : 0;
			double frac = (rank - (double)prev) / (double)counts[i];
			if (frac < 0)
				frac = 0;
			return lo + (le[i] - lo) * frac;
		}
	}
	return le[nbounds - 1];
}

uint64_t nw_hist_delta(const uint64_t *now, const uint64_t *before, size_t nbounds,
                       uint64_t *out)
{
	int reset = 0;
	for (size_t i = 0; i <= nbounds; i++)
		if (now[i] < before[i])
			reset = 1;
	uint64_t total = 0;
	for (size_t i = 0; i <= nbounds; i++) {
		out[i] = reset ? now[i] : now[i] - before[i];
		total += out[i];
	}
	return total;
}
