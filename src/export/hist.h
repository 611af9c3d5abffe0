/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hist: percentiles from bucketed duration histograms, as top shows them
 * and as Prometheus' histogram_quantile() computes them, so the p50/p99 in
 * the terminal and in Grafana agree.
 */
#ifndef NW_HIST_H
#define NW_HIST_H

#include <stddef.h>
#include <stdint.h>

/*
 * The q-quantile (0 <= q <= 1) of a histogram with upper bounds
 * le[0..nbounds-1] (ascending, finite, > 0) and per-bucket counts
 * counts[0..nbounds] (counts[nbounds]: above the last bound).
 * Within a bucket the value is interpolated linearly between its lower
 * bound (0 for the first bucket) and its upper bound. When the quantile
 * falls above the last bound, the last bound is returned (a lower limit,
 * as histogram_quantile does). NAN when the histogram is empty or q is out
 * of range.
 */
double nw_hist_quantile(const double *le, const uint64_t *counts, size_t nbounds, double q);

/*
 * Per-bucket difference now - before (counts of the same histogram at two
 * times) into out[0..nbounds]; a bucket that went backwards (the process
 * restarted) makes the whole result equal to now. Returns the total count
 * of out.
 */
uint64_t nw_hist_delta(const uint64_t *now, const uint64_t *before, size_t nbounds,
                       uint64_t *out);

#endif
