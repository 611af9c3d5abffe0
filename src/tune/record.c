/* SPDX-License-Identifier: Apache-2.0 */
/* tune record: every successful run of a search into history (see driver.h). */
#include "tune/driver.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

extern char **environ;

/* Copies of this process's NCCL_* entries, NULL-terminated (free with nw_tune_argv_free). */
static char **save_nccl_env(void)
{
	int n = 0;
	for (char **e = environ; *e; e++)
		n += !strncmp(*e, "NCCL_", 5);
	char **saved = nw_calloc((size_t)n + 1, sizeof(char *));
	n = 0;
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "NCCL_", 5))
			saved[n++] = nw_strdup(*e);
	return saved;
}

/*
 * Makes this process's NCCL_* variables those a child of v had, from the
 * originals in saved; with v NULL, the originals themselves.
 */
static void env_as_child(char *const *keep, char **saved, const struct nw_tune_variant *v)
{
	for (;;) { /* unset every NCCL_* (restart: unsetenv changes environ) */
		char **e = environ;
		while (*e && strncmp(*e, "NCCL_", 5) != 0)
			e++;
		if (!*e)
			break;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
		unsetenv(name);
	}
	for (char **e = saved; e && *e; e++) {
		if (v && nw_tune_env_unset(keep, v->keep_env, *e))
			continue;
		char name[256];
		size_t n = strcspn(*e, "=");
		snprintf(name, sizeof(name), "%.*s", (int)n, *e);
		setenv(name, *e + n + 1, 1);
	}
	for (int i = 0; v && i < v->nset; i++)
		setenv(v->set[i].name, v->set[i].value, 1);
}

/* Marks kept run i as tune's: source, extra "tune", and the fingerprint of its environment. */
static void label_run(struct nw_tuner *t, int i, char **saved)
{
	struct nw_run *run = &t->runs[i];
	const struct nw_tune_variant *v = &t->vs.v[t->run_variant[i]];
	nw_strlcpy(run->h.source, "tune", sizeof(run->h.source));
	if (!json_is_object(run->h.extra)) {
		json_decref(run->h.extra);
		run->h.extra = json_object();
	}
	json_t *env = json_object();
	for (int k = 0; k < v->nset; k++)
		json_object_set_new(env, v->set[k].name, json_string(v->set[k].value));
	json_object_set_new(run->h.extra, "tune",
	                    json_pack("{s:s, s:o, s:i, s:s, s:b, s:s}", "variant", v->label, "env", env,
	                              "repeat", t->run_repeat[i], "mode", t->o->check_env ? "check-env" : "tune",
	                              "keeps_current_env", v->keep_env, "started", t->started));
	json_object_del(run->h.extra, "fingerprint");
	env_as_child(t->o->keep, saved, v);
	nw_fingerprint_collect(run);
	nw_store_stamp(run);
}

/* Records the runs in history; see driver.h. */
int nw_tuner_record(struct nw_tuner *t, const struct nw_store_opts *so)
{
	char err[NW_ERRLEN], path[4096];
	struct nw_store *db = NULL;
	if (so->disabled || t->nruns == 0)
		return 0;
	if (nw_store_path(so, path, sizeof(path), err, sizeof(err)) != 0 ||
	    nw_store_open(path, NW_STORE_WRITE, &db, err, sizeof(err)) != 0) {
		nw_tuner_note(t, NW_TUNE_WARNING, "history: %s; the runs are not recorded (--no-history to skip it)", err);
		return 0;
	}
	char **saved = save_nccl_env();
	long long first = 0, last = 0;
	int recorded = 0;
	for (int i = 0; i < t->nruns; i++) {
		label_run(t, i, saved);
		long long id = 0;
		if (nw_store_insert(db, &t->runs[i], &id, err, sizeof(err)) != 0) {
			nw_tuner_note(t, NW_TUNE_WARNING, "history: %s; %d of %d runs recorded", err, recorded, t->nruns);
			break;
		}
		if (!recorded++)
			first = id;
		last = id;
	}
	env_as_child(t->o->keep, saved, NULL);
	nw_tune_argv_free(saved);
	nw_store_close(db);
	if (recorded)
		nw_tuner_note(t, NW_TUNE_PROGRESS, "recorded %d run%s in history (ids %lld-%lld, source tune)", recorded,
		              recorded == 1 ? "" : "s", first, last);
	return recorded;
}
