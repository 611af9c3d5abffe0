/* SPDX-License-Identifier: Apache-2.0 */
/* tune output: the JSON document and the env file of a finished search (see driver.h). */
#include "tune/driver.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

static const char *status_name(enum nw_tune_status s)
{
	switch (s) {
	case NW_TV_ACTIVE: return "measured";
	case NW_TV_FAILED: return "failed";
	case NW_TV_WRONG: return "wrong";
	case NW_TV_PRUNED: return "pruned";
	case NW_TV_SKIPPED: return "skipped";
	}
	return "?";
}

static json_t *num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *samples_json(const struct nw_tune_samples *s)
{
	json_t *a = json_array();
	for (int k = 0; k < s->n; k++)
		json_array_append_new(a, json_real(s->x[k]));
	return a;
}

static json_t *variant_json(const struct nw_tuner *t, int v)
{
	const struct nw_tune_variant *var = &t->vs.v[v];
	json_t *env = json_object(), *ops = json_array();
	for (int i = 0; i < var->nset; i++)
		json_object_set_new(env, var->set[i].name, json_string(var->set[i].value));
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		if (t->o->opmask & var->opmask & (1u << op))
			json_array_append_new(ops, json_string(nw_coll_get(op)->name));
	return json_pack("{s:s, s:o, s:b, s:o, s:s, s:s, s:i, s:b, s:o}", "label", var->label, "env", env,
	                 "keeps_current_env", var->keep_env, "ops", ops, "status", status_name(var->status),
	                 "why", var->why, "runs", var->runs, "confirmed", var->confirmed,
	                 "cost_s", num_or_null(var->cost_s));
}

/* One table cell: the default's samples and every measured variant against them. */
static json_t *cell_json(const struct nw_tuner *t, const struct nw_tune_cell *c)
{
	json_t *cv = json_array();
	for (int v = 1; v < t->vs.n; v++) {
		const struct nw_tune_samples *s = nw_tune_data_at(&t->data, v, c->op, c->band);
		if (!s->n)
			continue;
		const struct nw_tune_cmp *m = nw_tuner_cmp(t, v, c->op, c->band);
		json_array_append_new(cv, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "label",
		                                    t->vs.v[v].label, "samples_us", samples_json(s), "median_us",
		                                    num_or_null(m->med_v), "min_us", num_or_null(m->lo_v), "max_us",
		                                    num_or_null(m->hi_v), "gain", num_or_null(m->gain), "ci_lo",
		                                    num_or_null(m->ci_lo), "ci_hi", num_or_null(m->ci_hi), "verdict",
		                                    nw_tune_verdict_name(m->verdict, t->o->check_env)));
	}
	return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "op", nw_coll_get(c->op)->name, "band",
	                 t->bands[c->band].name, "default_us", num_or_null(c->default_us), "default_samples_us",
	                 samples_json(nw_tune_data_at(&t->data, 0, c->op, c->band)), "best",
	                 c->best >= 0 ? json_string(t->vs.v[c->best].label) : json_null(), "gain",
	                 c->best >= 0 ? num_or_null(c->best_cmp.gain) : json_null(), "variants", cv);
}

static json_t *recommendation_json(const struct nw_tuner *t)
{
	json_t *rec = json_object(), *env = json_object(), *also = json_array();
	const struct nw_tune_variant *r = t->rec >= 0 ? &t->vs.v[t->rec] : NULL;
	json_object_set_new(rec, "verdict", json_boolean(!nw_tuner_no_verdict(t)));
	json_object_set_new(rec, "defaults_best", json_boolean(!r && !nw_tuner_no_verdict(t)));
	json_object_set_new(rec, "label", r ? json_string(r->label) : json_null());
	json_object_set_new(rec, "confirmed", json_boolean(r && r->confirmed));
	json_object_set_new(rec, "unconfirmed_candidate",
	                    t->candidate >= 0 ? json_string(t->vs.v[t->candidate].label) : json_null());
	json_object_set_new(rec, "unconfirmed_why", t->candidate >= 0 ? json_string(t->unconfirmed) : json_null());
	for (int i = 0; r && i < r->nset; i++)
		json_object_set_new(env, r->set[i].name, json_string(r->set[i].value));
	for (int i = 0; i < t->nalso; i++)
		json_array_append_new(also, json_string(t->vs.v[t->also[i]].label));
	json_object_set_new(rec, "env", env);
	json_object_set_new(rec, "also", also);
	return rec;
}

/* The whole result as JSON; see driver.h. */
json_t *nw_tuner_json(const struct nw_tuner *t)
{
	char now[32], host[256];
	nw_utc_iso(now, sizeof(now));
	nw_hostname(host, sizeof(host));
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.tune/1"));
	json_object_set_new(doc, "mode", json_string(t->o->check_env ? "check-env" : "tune"));
	json_object_set_new(doc, "host", json_string(host));
	json_object_set_new(doc, "time", json_string(now));
	json_object_set_new(doc, "nccl_version", json_string(t->nccl_version));
	json_object_set_new(doc, "backend", json_string(t->backend));
	json_object_set_new(doc, "gpus", json_string(t->gpus));
	json_object_set_new(doc, "nranks", json_integer(t->nranks));
	json_object_set_new(doc, "budget_s", t->o->budget_s > 0 ? json_real(t->o->budget_s) : json_null());
	json_object_set_new(doc, "elapsed_s", json_real(nw_tuner_elapsed(t)));
	json_object_set_new(doc, "runs", json_integer(t->runs_total));
	json_object_set_new(doc, "repeats_planned", json_integer(t->repeats));
	json_object_set_new(doc, "min_gain", json_real(t->o->min_gain));
	json_object_set_new(doc, "stopped", t->stopped[0] ? json_string(t->stopped) : json_null());
	json_object_set_new(doc, "interrupted", json_boolean(!strcmp(t->stopped, "interrupted")));
	json_object_set_new(doc, "unset_env", json_string(t->stripped));
	json_t *bands = json_array();
	for (int b = 0; b < t->nbands; b++)
		json_array_append_new(bands, json_pack("{s:s, s:I, s:o}", "name", t->bands[b].name,
		                                       "lo_bytes", (json_int_t)t->bands[b].lo, "hi_bytes",
		                                       t->bands[b].hi == UINT64_MAX ? json_null() : json_integer((json_int_t)t->bands[b].hi)));
	json_object_set_new(doc, "bands", bands);
	json_t *vars = json_array();
	for (int v = 0; v < t->vs.n; v++)
		json_array_append_new(vars, variant_json(t, v));
	json_object_set_new(doc, "variants", vars);
	json_t *cells = json_array();
	for (int i = 0; i < t->ncells; i++)
		json_array_append_new(cells, cell_json(t, &t->cells[i]));
	json_object_set_new(doc, "cells", cells);
	if (!t->o->check_env)
		json_object_set_new(doc, "recommendation", recommendation_json(t));
	return doc;
}

/* The env file's text; see driver.h. */
int nw_tuner_write_env(const struct nw_tuner *t, FILE *f)
{
	char now[32], host[256];
	nw_utc_iso(now, sizeof(now));
	nw_hostname(host, sizeof(host));
	int rc;
	if (nw_tuner_no_verdict(t))
		rc = fprintf(f, "# ncclwatch tune on %s, %s: no verdict (too few repeats%s%s); nothing to set.\n", host, now,
		             t->stopped[0] ? ", " : "", t->stopped) < 0 ? -1 : 0;
	else
		rc = nw_tune_write_env(f, &t->data, &t->vs, t->cmps, t->rec, now, host, t->nccl_version);
	if (rc == 0 && t->candidate >= 0 && fprintf(f, "# (%s looked faster but was not confirmed: %s)\n",
	                                             t->vs.v[t->candidate].label, t->unconfirmed) < 0)
		rc = -1;
	return rc;
}
