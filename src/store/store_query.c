/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_query: what the history answers and how it is changed besides
 * recording: listing runs, deleting one, baselines, content keys of old
 * runs, the latest check of each host, and merging one history into another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/util.h"

/* "2026-11-30" or a longer ISO 8601 prefix; for until, a bare date covers the day. */
static int time_bound(const char *in, int until, char *buf, size_t len, char *err, size_t errlen)
{
	size_t n = strlen(in);
	int y, mo, d;
	char tail;
	if (n < 10 || sscanf(in, "%4d-%2d-%2d%c", &y, &mo, &d, &tail) < 3 || in[4] != '-' ||
	    in[7] != '-' || mo < 1 || mo > 12 || d < 1 || d > 31 || (n > 10 && in[10] != 'T' && in[10] != ' '))
		return nw_seterr(err, errlen, "bad date '%s': give YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)", in);
	if (n == 10 && until)
		snprintf(buf, len, "%sT99", in); /* sorts after every time of that day */
	else {
		snprintf(buf, len, "%s", in);
		if (n > 10)
			buf[10] = 'T';
	}
	return 0;
}

/* One listing line at the cursor into e. */
static void list_entry(struct nw_db_rows *r, const struct nw_db_driver *d, struct nw_store_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->id = d->integer(r, 0);
	st_col_text(r, d, 1, e->time, sizeof(e->time));
	st_col_text(r, d, 2, e->host, sizeof(e->host));
	st_col_text(r, d, 3, e->source, sizeof(e->source));
	st_col_text(r, d, 4, e->ops, sizeof(e->ops));
	st_col_text(r, d, 5, e->nccl_version, sizeof(e->nccl_version));
	e->peak_busbw = d->real(r, 6);
	e->nrows = (int)d->integer(r, 7);
	st_col_text(r, d, 8, e->baselines, sizeof(e->baselines));
	e->incomplete = d->integer(r, 9) != 0;
	e->interrupted = d->integer(r, 10) != 0;
}

int nw_store_list(struct nw_store *s, const struct nw_store_filter *f,
                  struct nw_store_entry **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char since[64] = "", until[64] = "";
	if (f && f->since && *f->since && time_bound(f->since, 0, since, sizeof(since), err, errlen))
		return -1;
	if (f && f->until && *f->until && time_bound(f->until, 1, until, sizeof(until), err, errlen))
		return -1;
	char sql[1280];
	/* extra is compact JSON (store_run.c): its top-level flags read as '"incomplete":true' */
	snprintf(sql, sizeof(sql),
	         "SELECT id, time, host, source, ops, nccl_version, peak_busbw, nrows,"
	         " (SELECT group_concat(name, ',') FROM baselines b WHERE b.run_id = runs.id),"
	         " CASE WHEN extra LIKE '%%\"incomplete\":true%%' THEN 1 ELSE 0 END,"
	         " CASE WHEN extra LIKE '%%\"interrupted\":true%%' THEN 1 ELSE 0 END"
	         " FROM runs WHERE %s"
	         " AND ($2 = '' OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = runs.id AND r.op = $2))"
	         " AND ($3 = '' OR time >= $3) AND ($4 = '' OR time <= $4) AND ($5 = '' OR source = $5)"
	         " ORDER BY id DESC%s%.0lld",
	         /* a plain "host = $1" lets the database use its index on host */
	         f && f->host && *f->host ? "host = $1" : "$1 = ''", f && f->limit > 0 ? " LIMIT " : "",
	         f && f->limit > 0 ? f->limit : 0LL);
	const struct nw_db_param p[] = {
		NW_DB_TEXT(f && f->host ? f->host : ""), NW_DB_TEXT(f && f->op ? f->op : ""),
		NW_DB_TEXT(since), NW_DB_TEXT(until), NW_DB_TEXT(f && f->source ? f->source : ""),
	};
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	if (d->query(s->db, sql, p, (int)NW_ARRAY_LEN(p), &r))
		return st_db_err(s, "listing runs", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = d->next(r)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		list_entry(r, d, &(*out)[(*n)++]);
	}
	d->done(r);
	if (step != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return st_db_err(s, "listing runs", err, errlen);
	}
	/* newest first from the query (so a limit keeps the latest); oldest first out */
	for (size_t i = 0; i < *n / 2; i++) {
		struct nw_store_entry t = (*out)[i];
		(*out)[i] = (*out)[*n - 1 - i];
		(*out)[*n - 1 - i] = t;
	}
	return 0;
}

int nw_store_ids(struct nw_store *s, long long **ids, size_t *n, char *err, size_t errlen)
{
	struct nw_store_entry *e;
	if (nw_store_list(s, NULL, &e, n, err, errlen))
		return -1;
	*ids = nw_calloc(*n ? *n : 1, sizeof(**ids));
	for (size_t i = 0; i < *n; i++)
		(*ids)[i] = e[i].id;
	free(e);
	return 0;
}

/* Run one statement with one parameter in its own transaction; returns rows changed or -1. */
static long long change(struct nw_store *s, const char *sql, struct nw_db_param p, const char *what,
                        char *err, size_t errlen)
{
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 0))
		return st_db_err(s, what, err, errlen);
	if (st_run_sql(db, sql, &p, 1))
		goto fail;
	long long changed = db->drv->changes(db);
	if (db->drv->commit(db))
		goto fail;
	return changed;
fail:
	st_db_err(s, what, err, errlen);
	db->drv->rollback(db);
	return -1;
}

int nw_store_delete(struct nw_store *s, long long id, char *err, size_t errlen)
{
	long long n = change(s, "DELETE FROM runs WHERE id = $1", NW_DB_INT(id), "deleting a run", err, errlen);
	if (n < 0)
		return -1;
	if (n == 0)
		return nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
	return 0;
}

int nw_store_baseline_name_ok(const char *name, char *err, size_t errlen)
{
	size_t n = strlen(name);
	int digits = 1;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return nw_seterr(err, errlen, "bad baseline name '%s': use letters, digits, '.', '_' and '-'", name);
		if (c < '0' || c > '9')
			digits = 0;
	}
	if (n == 0 || n > 63)
		return nw_seterr(err, errlen, "bad baseline name '%s': give 1 to 63 characters", name);
	if (digits)
		return nw_seterr(err, errlen, "bad baseline name '%s': a name cannot be all digits (that reads as a run id)", name);
	return 0;
}

int nw_store_baseline_set(struct nw_store *s, const char *name, long long id, char *err,
                          size_t errlen)
{
	if (nw_store_baseline_name_ok(name, err, errlen))
		return -1;
	char now[32];
	nw_utc_iso(now, sizeof(now));
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 0))
		return st_db_err(s, "setting a baseline", err, errlen);
	long long exists = 0;
	if (st_query_int(db, "SELECT count(*) FROM runs WHERE id = $1", NW_DB_INT(id), &exists) < 0)
		goto dberr;
	if (!exists) {
		nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		goto fail;
	}
	const struct nw_db_param p[] = { NW_DB_TEXT(name), NW_DB_INT(id), NW_DB_TEXT(now) };
	if (st_run_sql(db, "INSERT INTO baselines(name, run_id, set_time) VALUES($1, $2, $3)"
	                " ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id, set_time = excluded.set_time",
	            p, 3) ||
	    db->drv->commit(db))
		goto dberr;
	return 0;
dberr:
	st_db_err(s, "setting a baseline", err, errlen);
fail:
	db->drv->rollback(db);
	return -1;
}

int nw_store_baseline_delete(struct nw_store *s, const char *name, char *err, size_t errlen)
{
	long long n = change(s, "DELETE FROM baselines WHERE name = $1", NW_DB_TEXT(name), "deleting a baseline",
	                     err, errlen);
	if (n < 0)
		return -1;
	if (n == 0)
		return nw_seterr(err, errlen, "no baseline '%s': 'ncclwatch history baseline' lists them", name);
	return 0;
}

int nw_store_baseline_get(struct nw_store *s, const char *name, long long *id, char *err,
                          size_t errlen)
{
	*id = 0;
	int rc = st_query_int(s->db, "SELECT run_id FROM baselines WHERE name = $1", NW_DB_TEXT(name), id);
	if (rc < 0)
		return st_db_err(s, "reading baselines", err, errlen);
	return rc;
}

int nw_store_baseline_list(struct nw_store *s, struct nw_store_baseline **out, size_t *n,
                           char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	if (d->query(s->db, "SELECT name, run_id, set_time FROM baselines ORDER BY name", NULL, 0, &r))
		return st_db_err(s, "reading baselines", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = d->next(r)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		struct nw_store_baseline *b = &(*out)[(*n)++];
		st_col_text(r, d, 0, b->name, sizeof(b->name));
		b->run_id = d->integer(r, 1);
		st_col_text(r, d, 2, b->set_time, sizeof(b->set_time));
	}
	d->done(r);
	if (step != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return st_db_err(s, "reading baselines", err, errlen);
	}
	return 0;
}

int nw_store_has_key(struct nw_store *s, const char *key, char *err, size_t errlen)
{
	long long n = 0;
	if (st_query_int(s->db, "SELECT count(*) FROM runs WHERE content_key = $1", NW_DB_TEXT(key), &n) < 0)
		return st_db_err(s, "looking a run up", err, errlen);
	return n > 0;
}

/* Ids of the runs without a content key; *ids is the caller's to free(). */
static int keyless_ids(struct nw_store *s, long long **ids, size_t *n, char *err, size_t errlen)
{
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	*ids = NULL;
	*n = 0;
	if (d->query(s->db, "SELECT id FROM runs WHERE content_key IS NULL ORDER BY id", NULL, 0, &r))
		return st_db_err(s, "finding runs without a key", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = d->next(r)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*ids = nw_realloc(*ids, cap * sizeof(**ids));
		}
		(*ids)[(*n)++] = d->integer(r, 0);
	}
	d->done(r);
	if (step != 0) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return st_db_err(s, "finding runs without a key", err, errlen);
	}
	return 0;
}

/* Key run id (already loaded as run) inside the caller's transaction. */
static int set_key(struct nw_store *s, long long id, const struct nw_run *run, char *err, size_t errlen)
{
	char key[NW_STORE_KEY_LEN];
	nw_store_run_key(run, key, sizeof(key));
	const struct nw_db_param p[] = { NW_DB_TEXT(key), NW_DB_INT(id) };
	if (st_run_sql(s->db, "UPDATE runs SET content_key = $1 WHERE id = $2", p, 2))
		return st_db_err(s, "keying a run", err, errlen);
	return 0;
}

int nw_store_fill_keys(struct nw_store *s, size_t *n, char *err, size_t errlen)
{
	long long *ids;
	size_t nids;
	if (n)
		*n = 0;
	if (keyless_ids(s, &ids, &nids, err, errlen))
		return -1;
	if (!nids) {
		free(ids);
		return 0;
	}
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 0)) {
		free(ids);
		return st_db_err(s, "cannot lock the database to key old runs", err, errlen);
	}
	int rc = 0;
	for (size_t i = 0; i < nids && !rc; i++) {
		struct nw_run run;
		rc = nw_store_load(s, ids[i], &run, err, errlen);
		if (!rc) {
			rc = set_key(s, ids[i], &run, err, errlen);
			nw_run_release(&run);
		}
	}
	free(ids);
	if (!rc && db->drv->commit(db))
		rc = st_db_err(s, "committing the keys of old runs", err, errlen);
	if (rc) {
		db->drv->rollback(db);
		return -1;
	}
	if (n)
		*n = nids;
	return 0;
}

/*
 * The latest check of every host with its rows, in one statement: one
 * round trip to a server, and one snapshot of a database that others write
 * meanwhile (a host's newer check is either wholly there or not at all).
 * The newest time of each host comes from the index runs(source, host,
 * time), the rows by the primary key of results. Each row carries its
 * run's short header columns; the run's extra (the fingerprint, the
 * largest column) only on its first row, so a server sends it once. The
 * per-rank and per-iteration times are not read (NULL columns 28, 29).
 */
static const char latest_sql[] =
	"SELECT r.id, r.time, r.host, r.source, r.backend, r.tool_version, r.nccl_version, r.nccl_path,"
	" r.driver, r.cuda_driver, r.gpus, r.nranks, r.nhosts, r.link_gbs,"
	" CASE WHEN res.seq IS NULL OR res.seq = 0 THEN r.extra END, res.seq,"
	" res.op, res.dtype, res.redop, res.root, res.size_bytes, res.count, res.nranks, res.inplace,"
	" res.time_us, res.algbw_gbs, res.busbw_gbs, res.wrong, NULL, NULL"
	" FROM runs r"
	" JOIN (SELECT host, max(time) AS t FROM runs WHERE source = 'check' GROUP BY host) m"
	" ON r.host = m.host AND r.time = m.t"
	" LEFT JOIN results res ON res.run_id = r.id"
	" WHERE r.source = 'check' ORDER BY r.host, r.id DESC, res.seq";

enum { LATEST_EXTRA = 14, LATEST_SEQ = 15, LATEST_ROW = 16 };

/* The header columns of latest_sql (1 to 14) into run->h (initialised). */
static void latest_header(struct nw_db_rows *r, const struct nw_db_driver *d, struct nw_run *run)
{
	struct nw_run_header *h = &run->h;
	struct { char *dst; size_t len; } cols[] = {
		{ h->time, sizeof(h->time) }, { h->host, sizeof(h->host) }, { h->source, sizeof(h->source) },
		{ h->backend, sizeof(h->backend) }, { h->tool_version, sizeof(h->tool_version) },
		{ h->nccl_version, sizeof(h->nccl_version) }, { h->nccl_path, sizeof(h->nccl_path) },
		{ h->driver, sizeof(h->driver) }, { h->cuda_driver, sizeof(h->cuda_driver) }, { h->gpus, sizeof(h->gpus) },
	};
	for (int k = 0; k < (int)NW_ARRAY_LEN(cols); k++)
		st_col_text(r, d, 1 + k, cols[k].dst, cols[k].len);
	h->nranks = (int)d->integer(r, 11);
	h->nhosts = (int)d->integer(r, 12);
	h->link_gbs = d->real(r, 13);
	const char *extra = d->text(r, LATEST_EXTRA);
	json_t *x = extra ? json_loads(extra, 0, NULL) : NULL;
	if (json_is_object(x))
		h->extra = x;
	else if (x)
		json_decref(x);
}

/* Frees runs[0..n) and the arrays; returns -1. */
static int latest_fail(struct nw_run **runs, long long **ids, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		nw_run_release(&(*runs)[i]);
	free(*runs);
	free(*ids);
	*runs = NULL;
	*ids = NULL;
	*n = 0;
	return -1;
}

/*
 * Runs whose first row is not numbered 0 (never one ncclwatch stored: it
 * numbers rows from 0) came without their extra: loaded again, whole, by id.
 */
static int latest_refetch(struct nw_store *s, struct nw_run *runs, const long long *ids, const char *again,
                          size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		if (!again[i])
			continue;
		nw_run_release(&runs[i]);
		if (nw_store_load(s, ids[i], &runs[i], err, errlen)) {
			nw_run_init(&runs[i]);
			return -1;
		}
	}
	return 0;
}

int nw_store_latest_check_runs(struct nw_store *s, struct nw_run **runs, long long **ids, size_t *n, char *err,
                               size_t errlen)
{
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	*runs = NULL;
	*ids = NULL;
	*n = 0;
	if (d->query(s->db, latest_sql, NULL, 0, &r))
		return st_db_err(s, "reading the latest checks", err, errlen);
	size_t cap = 0;
	char *again = NULL;
	long long cur = 0;
	int skip = 0, step;
	while ((step = d->next(r)) == 1) {
		long long id = d->integer(r, 0);
		if (id != cur || !*n) {
			cur = id;
			const char *host = d->text(r, 2);
			/* the same host twice at its latest time: the highest id came first and is the one kept */
			skip = *n && !strcmp((*runs)[*n - 1].h.host, host ? host : "");
			if (skip)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 256;
				*runs = nw_realloc(*runs, cap * sizeof(**runs));
				*ids = nw_realloc(*ids, cap * sizeof(**ids));
				again = nw_realloc(again, cap);
			}
			nw_run_init(&(*runs)[*n]);
			latest_header(r, d, &(*runs)[*n]);
			(*ids)[*n] = id;
			again[*n] = d->text(r, LATEST_SEQ) && d->integer(r, LATEST_SEQ) != 0;
			(*n)++;
		}
		if (skip || !d->text(r, LATEST_SEQ))
			continue; /* a NULL seq: a run without rows */
		struct nw_row row;
		st_load_row(r, d, LATEST_ROW, &row);
		nw_run_add(&(*runs)[*n - 1], &row);
	}
	d->done(r);
	int rc = step == 0 ? 0 : st_db_err(s, "reading the latest checks", err, errlen);
	if (!rc)
		rc = latest_refetch(s, *runs, *ids, again, *n, err, errlen);
	free(again);
	return rc ? latest_fail(runs, ids, n) : 0;
}

int nw_store_merge(struct nw_store *dst, struct nw_store *src, size_t *added, size_t *skipped,
                   char *err, size_t errlen)
{
	size_t nadd = 0, nskip = 0, nids = 0;
	long long *ids = NULL;
	int rc = nw_store_fill_keys(dst, NULL, err, errlen);
	if (!rc)
		rc = nw_store_ids(src, &ids, &nids, err, errlen);
	for (size_t i = 0; i < nids && !rc; i++) {
		struct nw_run run;
		if ((rc = nw_store_load(src, ids[i], &run, err, errlen)))
			break;
		char key[NW_STORE_KEY_LEN];
		nw_store_run_key(&run, key, sizeof(key));
		int have = nw_store_has_key(dst, key, err, errlen);
		if (have < 0)
			rc = -1;
		else if (have)
			nskip++;
		else if (!(rc = nw_store_insert(dst, &run, NULL, err, errlen)))
			nadd++;
		nw_run_release(&run);
	}
	free(ids);
	if (added)
		*added = nadd;
	if (skipped)
		*skipped = nskip;
	return rc;
}
