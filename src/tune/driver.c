/* SPDX-License-Identifier: Apache-2.0 */
/* tune driver: measure, replan, prune, confirm and analyze (see driver.h, docs/tune.md). */
#include "tune/driver.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/util.h"

extern char **environ;

/* The default runner: one bench child (ctx is the struct nw_tune_child). */
static int run_child(void *ctx, const struct nw_tune_request *rq, struct nw_tune_result *r, char *err,
                     size_t errlen)
{
	return nw_tune_run_child(ctx, rq, r, err, errlen);
}

void nw_tuner_init(struct nw_tuner *t, const struct nw_tuner_opts *o, const struct nw_tuner_hooks *h)
{
	memset(t, 0, sizeof(*t));
	t->o = o;
	if (h)
		t->h = *h;
	if (!t->h.run)
		t->h.run = run_child;
	if (!t->h.now)
		t->h.now = nw_now;
	nw_tune_variants_init(&t->vs);
	t->rec = t->candidate = -1;
}

void nw_tuner_release(struct nw_tuner *t)
{
	for (int i = 0; i < t->nruns; i++)
		nw_run_release(&t->runs[i]);
	free(t->runs);
	free(t->run_variant);
	free(t->run_repeat);
	free(t->done);
	free(t->est);
	free(t->keep);
	free(t->cmps);
	free(t->cells);
	free(t->also);
	nw_tune_data_release(&t->data);
	nw_tune_variants_release(&t->vs);
	const struct nw_tuner_opts *o = t->o;
	struct nw_tuner_hooks h = t->h;
	nw_tuner_init(t, o, &h);
}

void nw_tuner_note(const struct nw_tuner *t, enum nw_tune_note kind, const char *fmt, ...)
{
	if (!t->h.note)
		return;
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	t->h.note(t->h.note_ctx, kind, text);
}

static int stop_asked(const struct nw_tuner *t)
{
	return t->h.interrupted && *t->h.interrupted;
}

/* The status after a run that could not happen: interrupted, or failed. */
static int stop_status(const struct nw_tuner *t)
{
	return stop_asked(t) ? NW_TUNE_INTERRUPTED : NW_TUNE_FAILED;
}

void nw_tune_fmt_dur(double s, char *buf, size_t len)
{
	if (!(s >= 0) || !isfinite(s))
		s = 0;
	long t = lround(s);
	if (t >= 60)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%lds", t);
}

double nw_tuner_elapsed(const struct nw_tuner *t)
{
	return t->h.now() - t->t0;
}

/* Seconds the plan still needs, by the current estimates. */
static double remaining(const struct nw_tuner *t)
{
	double s = 0;
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < t->repeats)
			s += (double)(t->repeats - t->done[v]) * t->est[v];
	return s;
}

static int planned_runs(const struct nw_tuner *t)
{
	int n = t->runs_total;
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < t->repeats)
			n += t->repeats - t->done[v];
	return n;
}

/* Keeps run (moved: the caller's run is left empty) for history. */
static void keep_run(struct nw_tuner *t, struct nw_run *run, int v, int repeat)
{
	if (t->nruns == t->capruns) {
		t->capruns = t->capruns ? t->capruns * 2 : 32;
		t->runs = nw_realloc(t->runs, (size_t)t->capruns * sizeof(*t->runs));
		t->run_variant = nw_realloc(t->run_variant, (size_t)t->capruns * sizeof(int));
		t->run_repeat = nw_realloc(t->run_repeat, (size_t)t->capruns * sizeof(int));
	}
	t->runs[t->nruns] = *run;
	nw_run_init(run);
	t->run_variant[t->nruns] = v;
	t->run_repeat[t->nruns] = repeat;
	t->nruns++;
}

/* A file name made of the label's safe characters. */
static void safe_name(const char *label, char *buf, size_t len)
{
	size_t o = 0;
	for (const char *p = label; *p && o + 1 < len; p++)
		buf[o++] = (char)((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		                  (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.' ? *p : '_');
	buf[o] = '\0';
}

/* The progress line of run i: variant v, repeat, what it is for (why: NULL for a planned repeat). */
static void note_run(const struct nw_tuner *t, int i, int v, int repeat, int check, const char *why)
{
	char e1[32], e2[32];
	int n = planned_runs(t);
	nw_tune_fmt_dur(nw_tuner_elapsed(t), e1, sizeof(e1));
	nw_tune_fmt_dur(remaining(t), e2, sizeof(e2));
	if (why)
		nw_tuner_note(t, NW_TUNE_PROGRESS, "[%d] %s, repeat %d (%s)  elapsed %s", i, t->vs.v[v].label, repeat, why, e1);
	else
		nw_tuner_note(t, NW_TUNE_PROGRESS, "[%d/%d] %s, repeat %d/%d%s  elapsed %s  eta %s", i, n < i ? i : n,
		              t->vs.v[v].label, repeat, t->repeats, check ? " (verified)" : "", e1, e2);
}

/*
 * Files the outcome r of a run of variant v: its cost, and its scores
 * and run (kept for history), or why the variant failed (its status).
 * Releases r->run.
 */
static void take_result(struct nw_tuner *t, int v, int repeat, struct nw_tune_result *r)
{
	struct nw_tune_variant *var = &t->vs.v[v];
	var->cost_s = (var->cost_s * var->runs + r->wall_s) / (var->runs + 1);
	var->runs++;
	t->est[v] = var->cost_s;
	t->done[v]++;
	t->runs_total++;
	int64_t wrong = 0;
	for (size_t k = 0; r->have_run && k < r->run.nrows; k++)
		if (r->run.rows[k].wrong > 0)
			wrong += r->run.rows[k].wrong;
	if (!r->have_run || (r->rc != 0 && r->rc != 1)) {
		var->status = NW_TV_FAILED;
		snprintf(var->why, sizeof(var->why), "repeat %d: %.900s", repeat, r->err[0] ? r->err : "no results");
	} else if (r->rc == 1 && wrong == 0) {
		var->status = NW_TV_FAILED;
		snprintf(var->why, sizeof(var->why), "repeat %d: %.900s (but no wrong element in its results)", repeat, r->err);
	} else if (wrong > 0) {
		var->status = NW_TV_WRONG;
		snprintf(var->why, sizeof(var->why), "repeat %d: verification found %lld wrong element%s%s%.900s",
		         repeat, (long long)wrong, wrong == 1 ? "" : "s", r->err[0] ? "; " : "", r->err);
	} else {
		nw_tune_data_add_run(&t->data, v, &r->run);
		if (!t->nccl_version[0])
			nw_strlcpy(t->nccl_version, r->run.h.nccl_version, sizeof(t->nccl_version));
		if (!t->backend[0])
			nw_strlcpy(t->backend, r->run.h.backend, sizeof(t->backend));
		if (!t->gpus[0])
			nw_strlcpy(t->gpus, r->run.h.gpus, sizeof(t->gpus));
		if (!t->nranks)
			t->nranks = r->run.h.nranks;
		keep_run(t, &r->run, v, repeat);
	}
	nw_run_release(&r->run);
	if (var->status != NW_TV_ACTIVE)
		nw_tuner_note(t, NW_TUNE_PROGRESS, "%s %s: %s", var->label,
		              var->status == NW_TV_WRONG ? "gave wrong results" : "failed", var->why);
}

/*
 * One run of variant v (repeat numbering from 1; why, when not NULL, says
 * it is not a planned repeat). Returns 0 when measured or when the variant
 * failed (its status says which), -1 when the run could not be started
 * (err filled) or tune was interrupted.
 */
static int run_one(struct nw_tuner *t, int v, int repeat, int check, const char *why, char *err,
                   size_t errlen)
{
	struct nw_tune_variant *var = &t->vs.v[v];
	char ops[256];
	nw_tune_ops_list(t->o->opmask & var->opmask, ops, sizeof(ops));
	int i = t->runs_total + 1;
	note_run(t, i, v, repeat, check, why);
	char *keep_path = NULL;
	if (t->o->save_runs) {
		char nm[160];
		safe_name(var->label, nm, sizeof(nm));
		keep_path = nw_asprintf("%s/%03d-%s-r%d.json", t->o->save_runs, i, nm, repeat);
	}
	struct nw_tune_request rq = { var, ops, check, keep_path, t->timeout_s };
	struct nw_tune_result r;
	memset(&r, 0, sizeof(r));
	nw_run_init(&r.run);
	int rc = t->h.run(t->h.run_ctx, &rq, &r, err, errlen);
	free(keep_path);
	if (rc != 0 || stop_asked(t)) {
		nw_run_release(&r.run);
		return -1;
	}
	take_result(t, v, repeat, &r);
	return 0;
}

/*
 * Seconds kept back from the plan for confirming a winner (two runs per
 * round), at most a quarter of the budget so that a small budget still
 * measures something.
 */
static double reserve(const struct nw_tuner *t)
{
	if (t->o->check_env || t->o->confirm <= 0 || t->o->budget_s <= 0)
		return 0;
	double r = (double)t->o->confirm * 2 * t->est[0];
	return r < t->o->budget_s / 4 ? r : t->o->budget_s / 4;
}

/*
 * Variants left out earlier come back, in list order, when everything
 * kept still fits with 15% to spare: estimates improve as runs finish,
 * and the margin keeps a variant from coming and going. in and active
 * are the plan just made (active is updated); returns the repeats.
 */
static int readmit(struct nw_tuner *t, const struct nw_tune_plan_in *in, int *active, int repeats)
{
	int n = t->vs.n;
	int *trial = nw_calloc((size_t)n, sizeof(int));
	for (int v = 1; v < n; v++) {
		if (t->vs.v[v].status != NW_TV_SKIPPED)
			continue;
		active[v] = 1;
		struct nw_tune_plan_in tin = *in;
		tin.budget_left_s = in->budget_left_s * 0.85;
		struct nw_tune_plan_out tout = { .keep = trial };
		nw_tune_plan(&tin, &tout);
		if (tout.fits && tout.ndropped == 0) {
			memcpy(t->keep, trial, (size_t)n * sizeof(int));
			repeats = tout.repeats;
			t->vs.v[v].status = NW_TV_ACTIVE;
			t->vs.v[v].why[0] = '\0';
		} else {
			active[v] = 0;
			t->keep[v] = 0;
		}
	}
	free(trial);
	return repeats;
}

/* Re-plans repeats and variants for the time left; marks what is dropped. */
void nw_tuner_replan(struct nw_tuner *t)
{
	int n = t->vs.n;
	int *active = nw_calloc((size_t)n, sizeof(int));
	for (int v = 0; v < n; v++)
		active[v] = t->vs.v[v].status == NW_TV_ACTIVE;
	struct nw_tune_plan_in in = {
		.n = n, .cost_s = t->est, .active = active, .done = t->done,
		.budget_left_s = t->o->budget_s > 0 ? t->o->budget_s - nw_tuner_elapsed(t) - reserve(t) : 0,
		.min_repeats = t->o->repeats < NW_TUNE_MIN_REPEATS ? t->o->repeats : NW_TUNE_MIN_REPEATS,
		.max_repeats = t->o->repeats,
	};
	if (t->o->budget_s > 0 && in.budget_left_s <= 0)
		in.budget_left_s = 1e-9;
	struct nw_tune_plan_out out = { .keep = t->keep };
	nw_tune_plan(&in, &out);
	t->repeats = out.repeats;
	if (in.budget_left_s > 0 && out.fits && out.ndropped == 0)
		t->repeats = readmit(t, &in, active, out.repeats);
	for (int v = 1; v < n; v++) {
		struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status == NW_TV_ACTIVE && !t->keep[v]) {
			var->status = NW_TV_SKIPPED;
			snprintf(var->why, sizeof(var->why), "left out for lack of time after %d run%s",
			         t->done[v], t->done[v] == 1 ? "" : "s");
		}
	}
	if (!out.fits && !t->stopped[0])
		nw_tuner_note(t, NW_TUNE_ADVICE, "the budget does not fit %d repeats of the default (about %.0f s each): verdicts need %d; raise --budget",
		              in.min_repeats, t->est[0], NW_TUNE_MIN_REPEATS);
	free(active);
}

/* Drops variants slower than the default in every band they were measured in. */
void nw_tuner_prune(struct nw_tuner *t, int after)
{
	for (int v = 1; v < t->vs.n; v++) {
		struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status != NW_TV_ACTIVE)
			continue;
		int bands = 0, worse = 0;
		for (enum nw_op op = 0; op < NW_NOPS; op++)
			for (int b = 0; b < t->nbands; b++) {
				const struct nw_tune_samples *d = nw_tune_data_at(&t->data, 0, op, b);
				const struct nw_tune_samples *s = nw_tune_data_at(&t->data, v, op, b);
				if (d->n < 2 || s->n < 2)
					continue;
				bands++;
				worse += nw_tune_clearly_worse(d->x, d->n, s->x, s->n, 0.05);
			}
		if (bands > 0 && worse == bands) {
			var->status = NW_TV_PRUNED;
			snprintf(var->why, sizeof(var->why),
			         "after %d repeats its fastest run was over 5%% slower than the default's slowest in every band (%d)",
			         after, bands);
		}
	}
}

/*
 * The first default run: when it works, it sets the timeout of the next
 * runs and every variant's first cost estimate (by its share of the ops).
 */
static int measure_default(struct nw_tuner *t, char *err, size_t errlen)
{
	t->timeout_s = t->o->timeout_s > 0 ? t->o->timeout_s : 600;
	t->repeats = t->o->repeats;
	for (int v = 0; v < t->vs.n; v++)
		t->keep[v] = 1;
	if (run_one(t, 0, 1, 1, NULL, err, errlen) != 0)
		return stop_status(t);
	if (t->vs.v[0].status != NW_TV_ACTIVE) {
		nw_seterr(err, errlen, "the default run failed, so nothing can be compared: %s", t->vs.v[0].why);
		return NW_TUNE_FAILED;
	}
	double c0 = t->vs.v[0].cost_s;
	if (t->o->timeout_s <= 0)
		t->timeout_s = 5 * c0 > 30 ? 5 * c0 : 30;
	for (int v = 1; v < t->vs.n; v++) {
		int nv = 0;
		for (enum nw_op op = 0; op < NW_NOPS; op++)
			nv += (t->o->opmask & t->vs.v[v].opmask & (1u << op)) != 0;
		t->est[v] = c0 * (0.25 + 0.75 * nv / (t->nops ? t->nops : 1));
	}
	return NW_TUNE_OK;
}

/*
 * Round r: every variant still in the running and planned once more, in
 * an order rotated by one more each round (order: scratch of vs.n). Sets
 * t->stopped when the budget runs out.
 */
static int measure_round(struct nw_tuner *t, int r, int *order, char *err, size_t errlen)
{
	int m = 0;
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < r)
			order[m++] = v;
	for (int k = 0; k < m; k++) {
		int v = order[(k + r - 1) % m];
		struct nw_tune_variant *var = &t->vs.v[v];
		if (var->status != NW_TV_ACTIVE)
			continue;
		if (t->o->budget_s > 0 && nw_tuner_elapsed(t) + t->est[v] > t->o->budget_s) {
			snprintf(t->stopped, sizeof(t->stopped), "the budget ran out during repeat %d", r);
			return NW_TUNE_OK;
		}
		if (run_one(t, v, t->done[v] + 1, t->done[v] == 0, NULL, err, errlen) != 0)
			return stop_status(t);
		if (v == 0 && var->status != NW_TV_ACTIVE) {
			nw_seterr(err, errlen, "the default run failed on repeat %d, so the comparison stops: %s", r, var->why);
			return NW_TUNE_FAILED;
		}
	}
	return NW_TUNE_OK;
}

/* Whether a kept variant still in the running has fewer runs than the planned repeats. */
static int behind(const struct nw_tuner *t)
{
	for (int v = 0; v < t->vs.n; v++)
		if (t->vs.v[v].status == NW_TV_ACTIVE && t->keep[v] && t->done[v] < t->repeats)
			return 1;
	return 0;
}

/* The default first, then interleaved rounds; see driver.h. */
int nw_tuner_measure(struct nw_tuner *t, char *err, size_t errlen)
{
	nw_utc_iso(t->started, sizeof(t->started));
	t->t0 = t->h.now();
	int rc = measure_default(t, err, errlen);
	if (rc == NW_TUNE_OK) {
		nw_tuner_replan(t);
		int *order = nw_calloc((size_t)t->vs.n, sizeof(int));
		/*
		 * Round r brings every kept variant to r repeats; past the planned
		 * repeats, rounds go on while a variant let back in late (readmit)
		 * still lacks some, so that no kept variant ends with fewer runs
		 * than the others and nothing said about it.
		 */
		for (int r = 1; r <= t->repeats || behind(t); r++) {
			rc = measure_round(t, r <= t->repeats ? r : t->repeats, order, err, errlen);
			if (rc != NW_TUNE_OK || t->stopped[0])
				break;
			if (!t->o->check_env && t->o->prune_after > 0 && r == t->o->prune_after)
				nw_tuner_prune(t, r);
			nw_tuner_replan(t);
		}
		free(order);
	}
	if (rc == NW_TUNE_INTERRUPTED)
		snprintf(t->stopped, sizeof(t->stopped), "interrupted");
	return rc;
}

const struct nw_tune_cmp *nw_tuner_cmp(const struct nw_tuner *t, int v, enum nw_op op, int band)
{
	return &t->cmps[((size_t)v * NW_NOPS + (size_t)op) * (size_t)t->nbands + (size_t)band];
}

void nw_tuner_count_verdicts(const struct nw_tuner *t, int v, int *better, int *worse)
{
	*better = *worse = 0;
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		for (int b = 0; b < t->nbands; b++) {
			enum nw_tune_verdict x = nw_tuner_cmp(t, v, op, b)->verdict;
			*better += x == NW_TC_BETTER;
			*worse += x == NW_TC_WORSE;
		}
}

void nw_tuner_analyze(struct nw_tuner *t)
{
	free(t->cmps);
	free(t->cells);
	free(t->also);
	size_t n = (size_t)t->vs.n * NW_NOPS * (size_t)t->nbands;
	t->cmps = nw_calloc(n, sizeof(*t->cmps));
	t->cells = nw_calloc((size_t)NW_NOPS * (size_t)t->nbands, sizeof(*t->cells));
	t->also = nw_calloc((size_t)t->vs.n, sizeof(int));
	t->ncells = nw_tune_analyze(&t->data, &t->vs, t->o->min_gain, t->cmps, t->cells);
	t->rec = t->o->check_env ? -1 : nw_tune_recommend(&t->data, &t->vs, t->cmps, t->also, &t->nalso);
}

/* o->confirm rounds of variant v and the default, alternating which goes first. */
static int confirm_rounds(struct nw_tuner *t, int v, char *err, size_t errlen)
{
	for (int k = 0; k < t->o->confirm && t->vs.v[v].status == NW_TV_ACTIVE; k++) {
		int order[2] = { k % 2 ? v : 0, k % 2 ? 0 : v };
		for (int j = 0; j < 2; j++) {
			int w = order[j];
			if (run_one(t, w, t->done[w] + 1, 0, "confirming", err, errlen) != 0)
				return stop_status(t);
			if (w == 0 && t->vs.v[0].status != NW_TV_ACTIVE) {
				nw_seterr(err, errlen, "the default run failed while confirming: %s", t->vs.v[0].why);
				return NW_TUNE_FAILED;
			}
		}
	}
	return NW_TUNE_OK;
}

/*
 * A winner is measured again before it is recommended, then the verdicts
 * are recomputed over all runs. When it no longer wins the next candidate
 * gets the same treatment (three candidates at most).
 */
int nw_tuner_confirm(struct nw_tuner *t, char *err, size_t errlen)
{
	t->candidate = -1;
	nw_tuner_analyze(t);
	if (t->o->check_env || t->o->confirm <= 0)
		return NW_TUNE_OK;
	for (int attempt = 0; attempt < 3 && t->rec >= 0 && !t->vs.v[t->rec].confirmed; attempt++) {
		int v = t->rec;
		double need = (double)t->o->confirm * (t->est[0] + t->est[v]);
		if (t->stopped[0] || (t->o->budget_s > 0 && nw_tuner_elapsed(t) + need > t->o->budget_s)) {
			snprintf(t->unconfirmed, sizeof(t->unconfirmed), "no time left for %d confirmation rounds (about %.0f s)",
			         t->o->confirm, need);
			break;
		}
		int rc = confirm_rounds(t, v, err, errlen);
		if (rc != NW_TUNE_OK)
			return rc;
		t->vs.v[v].confirmed = 1;
		nw_tuner_analyze(t);
	}
	if (t->rec >= 0 && !t->vs.v[t->rec].confirmed) {
		t->candidate = t->rec;
		if (!t->unconfirmed[0])
			snprintf(t->unconfirmed, sizeof(t->unconfirmed), "three candidates in a row lost their lead when measured again");
		t->rec = -1;
		t->nalso = 0;
	}
	return NW_TUNE_OK;
}

/* Confirms after complete measuring, else analyzes what there is; see driver.h. */
int nw_tuner_conclude(struct nw_tuner *t, int measured, char *err, size_t errlen)
{
	if (measured != NW_TUNE_OK) {
		t->candidate = -1;
		nw_tuner_analyze(t);
		return measured;
	}
	int rc = nw_tuner_confirm(t, err, errlen);
	if (rc == NW_TUNE_INTERRUPTED)
		snprintf(t->stopped, sizeof(t->stopped), "interrupted");
	return rc;
}

int nw_tuner_few_repeats(const struct nw_tuner *t)
{
	int n = 0;
	for (int v = 1; v < t->vs.n; v++)
		n += t->vs.v[v].status == NW_TV_ACTIVE && t->done[v] < NW_TUNE_MIN_REPEATS;
	return n;
}

int nw_tuner_no_verdict(const struct nw_tuner *t)
{
	int active = 0;
	for (int v = 1; v < t->vs.n; v++)
		active += t->vs.v[v].status == NW_TV_ACTIVE;
	return t->done[0] < NW_TUNE_MIN_REPEATS || (active && nw_tuner_few_repeats(t) == active);
}

const char *nw_tune_verdict_name(enum nw_tune_verdict v, int check_env)
{
	switch (v) {
	case NW_TC_BETTER: return check_env ? "helps" : "better";
	case NW_TC_WORSE: return check_env ? "hurts" : "worse";
	case NW_TC_SAME: return "no difference within noise";
	case NW_TC_FEW: return "too few repeats for a verdict";
	}
	return "?";
}

/*
 * The environment entries of this process a run will not have, appended
 * to buf blank-separated: as names (values 0) or as NAME=value (values 1).
 * Returns how many there are (all of them, even when buf is too short).
 */
static int unset_entries(const struct nw_tuner *t, int values, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	int count = 0;
	for (char **e = environ; *e; e++) {
		if (!nw_tune_env_unset(t->o->keep, 0, *e))
			continue;
		count++;
		nw_strbuf_addstr(&sb, sb.len ? " " : "");
		nw_strbuf_add(&sb, *e, values ? strlen(*e) : strcspn(*e, "="));
	}
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
	return count;
}

/* check-env's two variants: "defaults", and "current (NAME=v ...)" keeping the user's NCCL_*. */
static int variants_check_env(struct nw_tuner *t)
{
	char cur[sizeof(((struct nw_tune_variant *)0)->label) - 16];
	unset_entries(t, 1, cur, sizeof(cur));
	if (!cur[0])
		return 1;
	nw_tune_variants_add(&t->vs, "defaults", NULL, NULL, t->o->opmask);
	struct nw_tune_variant *v = nw_tune_variants_add(&t->vs, NULL, NULL, NULL, t->o->opmask);
	snprintf(v->label, sizeof(v->label), "current (%s)", cur);
	v->keep_env = 1;
	return 0;
}

/* tune's variants: the default, --var values and the built-in groups. */
static int variants_tune(struct nw_tuner *t, char *err, size_t errlen)
{
	const struct nw_tuner_opts *o = t->o;
	const char *nvls = getenv("NCCL_NVLS_ENABLE");
	int nvls_on = !nvls || strcmp(nvls, "0") != 0;
	if (nw_tune_variants_build(&t->vs, o->groups, o->opmask, nvls_on, o->vars, o->nvars, err, errlen) != 0)
		return -1;
	if (t->vs.n < 2)
		return nw_seterr(err, errlen, "nothing to compare: --settings none and no --var; give --var NAME=v1,v2 or --settings all");
	if (t->nstripped)
		nw_tuner_note(t, NW_TUNE_ADVICE, "unset in every measured run so that 'default' means NCCL's defaults: %s (keep one with --keep NAME)",
		              t->stripped);
	return 0;
}

/* Bands, variants and what the runs will not inherit; see driver.h. */
int nw_tuner_prepare(struct nw_tuner *t, char *err, size_t errlen)
{
	const struct nw_tuner_opts *o = t->o;
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		t->nops += (o->opmask >> op) & 1;
	t->nbands = nw_tune_bands_parse(o->bands, t->bands, err, errlen);
	if (t->nbands < 0)
		return -1;
	t->nstripped = unset_entries(t, 0, t->stripped, sizeof(t->stripped));
	if (o->check_env && (o->nvars || o->groups != NW_TG_ALL))
		nw_tuner_note(t, NW_TUNE_WARNING, "--check-env measures the current settings only; --var and --settings are ignored");
	int rc = o->check_env ? variants_check_env(t) : variants_tune(t, err, errlen);
	if (rc != 0)
		return rc;
	nw_tune_data_init(&t->data, t->vs.n, t->bands, t->nbands);
	t->done = nw_calloc((size_t)t->vs.n, sizeof(int));
	t->est = nw_calloc((size_t)t->vs.n, sizeof(double));
	t->keep = nw_calloc((size_t)t->vs.n, sizeof(int));
	return 0;
}
