/* SPDX-License-Identifier: Apache-2.0 */
/* tune planner: repeats and variants that fit a time budget. */
#include "tune/tune.h"

#include <string.h>

/* Seconds still needed to bring every kept active variant to repeats. */
static double need(const struct nw_tune_plan_in *in, const int *keep, int repeats)
{
	double s = 0;
	for (int i = 0; i < in->n; i++) {
		if (!in->active[i] || !keep[i] || in->done[i] >= repeats)
			continue;
		s += (double)(repeats - in->done[i]) * in->cost_s[i];
	}
	return s;
}

/* See tune.h. The default (index 0) is never dropped. */
void nw_tune_plan(const struct nw_tune_plan_in *in, struct nw_tune_plan_out *out)
{
	int lo = in->min_repeats < 1 ? 1 : in->min_repeats;
	int hi = in->max_repeats < lo ? lo : in->max_repeats;
	out->ndropped = 0;
	out->fits = 1;
	for (int i = 0; i < in->n; i++)
		out->keep[i] = in->active[i] ? 1 : 0;
	if (in->budget_left_s <= 0) {
		out->repeats = hi;
		out->est_s = need(in, out->keep, hi);
		return;
	}
	for (int r = hi; r >= lo; r--) {
		double s = need(in, out->keep, r);
		if (s <= in->budget_left_s) {
			out->repeats = r;
			out->est_s = s;
			return;
		}
	}
	/* Not even lo repeats for all: drop from the end of the list. */
	out->repeats = lo;
	for (int i = in->n - 1; i > 0; i--) {
		if (!out->keep[i])
			continue;
		out->keep[i] = 0;
		out->ndropped++;
		if (need(in, out->keep, lo) <= in->budget_left_s)
			break;
	}
	out->est_s = need(in, out->keep, lo);
	if (out->est_s > in->budget_left_s)
		out->fits = 0;
}
