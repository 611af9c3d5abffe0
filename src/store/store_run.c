/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_run: one run into the history (its header and rows in one
 * transaction, retried on a busy PostgreSQL server, kept in the spool when
 * the server is away) and back out of it, and its content key.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "store/spool.h"
#include "store/store_int.h"
#include "util/strbuf.h"
#include "util/util.h"

static uint64_t fnv_add(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* run's content key with time standing for its header's (which may be empty before insert). */
static void run_key(const struct nw_run *run, const char *time, char *out, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char line[256];
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		snprintf(line, sizeof(line), "%s|%s|%s|%d|%" PRIu64 "|%" PRIu64 "|%d|%d|%.17g|%.17g|%.17g|%lld\n",
		         r->op, r->dtype, r->redop, r->root, r->size_bytes, r->count, r->nranks, r->inplace,
		         r->time_us, r->algbw_gbs, r->busbw_gbs, (long long)r->wrong);
		h = fnv_add(h, line);
	}
	const json_t *fp = run->h.extra ? json_object_get(run->h.extra, "fingerprint") : NULL;
	char *fps = fp ? json_dumps(fp, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	h = fnv_add(h, fps ? fps : "null");
	free(fps);
	const char *rid = run->h.extra ? json_string_value(json_object_get(run->h.extra, "record_id")) : NULL;
	if (rid) /* absent from runs recorded before it: their keys stay as they were */
		h = fnv_add(fnv_add(h, "\nrecord "), rid);
	snprintf(out, len, "%s %s %s %016" PRIx64, time, run->h.host, run->h.source, h);
}

void nw_store_stamp(struct nw_run *run)
{
	if (!json_is_object(run->h.extra)) {
		if (run->h.extra)
			json_decref(run->h.extra);
		run->h.extra = json_object();
	}
	if (json_object_get(run->h.extra, "record_id"))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u;
	char id[96];
	snprintf(id, sizeof(id), "%lld.%06ld-%ld-%08x", (long long)ts.tv_sec, ts.tv_nsec / 1000, (long)getpid(), r);
	json_object_set_new(run->h.extra, "record_id", json_string(id));
}

void nw_store_run_key(const struct nw_run *run, char *out, size_t len)
{
	run_key(run, run->h.time, out, len);
}

/* Distinct op names of a run, in order of appearance, comma-separated, as many whole names as fit in len. */
static void run_ops(const struct nw_run *run, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (size_t i = 0; i < run->nrows; i++) {
		const char *op = run->rows[i].op;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(run->rows[j].op, op);
		if (seen)
			continue;
		if (sb.len + 1 + strlen(op) >= len)
			break;
		nw_strbuf_addf(&sb, "%s%s", sb.len ? "," : "", op);
	}
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* A row's per-rank times (per_iter 0) or per-iteration times (1) as compact JSON text; NULL when it has none. */
static char *row_json_text(const struct nw_row *r, int per_iter)
{
	json_t *a = NULL;
	if (per_iter && r->niter > 0) {
		a = nw_row_iters_to_json(r);
	} else if (!per_iter && r->nrank_times) {
		a = json_array();
		for (int k = 0; k < r->nrank_times; k++) {
			const struct nw_rank_time *t = &r->rank_times[k];
			json_array_append_new(a, json_pack("{s:i,s:s,s:i,s:f}", "rank", t->rank, "host", t->host, "gpu",
			                                   t->gpu, "time_us", t->time_us));
		}
	}
	if (!a)
		return NULL;
	char *text = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return text;
}

static int insert_rows(struct nw_store *s, long long id, const struct nw_run *run, char *err,
                       size_t errlen)
{
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		char *ranks = row_json_text(r, 0), *iters = row_json_text(r, 1);
		const struct nw_db_param p[] = {
			NW_DB_INT(id), NW_DB_INT((long long)i), NW_DB_TEXT(r->op), NW_DB_TEXT(r->dtype),
			NW_DB_TEXT(r->redop), NW_DB_INT(r->root), NW_DB_INT((long long)r->size_bytes),
			NW_DB_INT((long long)r->count), r->nranks > 0 ? NW_DB_INT(r->nranks) : NW_DB_NULL, NW_DB_INT(r->inplace),
			NW_DB_REAL(r->time_us), NW_DB_REAL(r->algbw_gbs), NW_DB_REAL(r->busbw_gbs),
			r->wrong >= 0 ? NW_DB_INT(r->wrong) : NW_DB_NULL, ranks ? NW_DB_TEXT(ranks) : NW_DB_NULL,
			iters ? NW_DB_TEXT(iters) : NW_DB_NULL, r->noise > 0 ? NW_DB_REAL(r->noise) : NW_DB_NULL,
		};
		int rc = st_run_sql(s->db, "INSERT INTO results(run_id, seq, op, dtype, redop, root, size_bytes, count,"
		                        " nranks, inplace, time_us, algbw_gbs, busbw_gbs, wrong, ranks, per_iter, noise)"
		                        " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)",
		                 p, (int)NW_ARRAY_LEN(p));
		free(ranks);
		free(iters);
		if (rc)
			return st_db_err(s, "inserting a result row", err, errlen);
	}
	return 0;
}

/* The highest busbw of any row (0 with no rows). */
static double run_peak_busbw(const struct nw_run *run)
{
	double peak = 0;
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].busbw_gbs > peak)
			peak = run->rows[i].busbw_gbs;
	return peak;
}

/* The whole insert, inside a transaction the caller holds. */
static int insert_run(struct nw_store *s, const struct nw_run *run, const char *key, long long *id_out, char *err,
                      size_t errlen)
{
	const struct nw_run_header *h = &run->h;
	char ops[1024];
	run_ops(run, ops, sizeof(ops));
	double peak = run_peak_busbw(run);
	char now[32];
	const char *t = h->time;
	if (!t[0]) {
		nw_utc_iso(now, sizeof(now));
		t = now;
	}
	char *extra = h->extra ? json_dumps(h->extra, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	const struct nw_db_param p[] = {
		NW_DB_TEXT(t), NW_DB_TEXT(h->host), NW_DB_TEXT(h->source), NW_DB_TEXT(h->backend),
		NW_DB_TEXT(h->tool_version), NW_DB_TEXT(h->nccl_version), NW_DB_TEXT(h->nccl_path),
		NW_DB_TEXT(h->driver), NW_DB_TEXT(h->cuda_driver), NW_DB_TEXT(h->gpus), NW_DB_TEXT(h->cmdline),
		NW_DB_TEXT(h->input), h->nranks > 0 ? NW_DB_INT(h->nranks) : NW_DB_NULL, NW_DB_INT(h->nhosts), NW_DB_TEXT(ops),
		NW_DB_REAL(peak), NW_DB_INT((long long)run->nrows), extra ? NW_DB_TEXT(extra) : NW_DB_NULL,
		NW_DB_REAL(h->link_gbs), NW_DB_TEXT(key),
	};
	long long id = 0;
	int rc = s->db->drv->insert_id(s->db,
	                               "INSERT INTO runs(time, host, source, backend, tool_version, nccl_version,"
	                               " nccl_path, driver, cuda_driver, gpus, cmdline, input, nranks, nhosts, ops,"
	                               " peak_busbw, nrows, extra, link_gbs, content_key)"
	                               " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20)",
	                               p, (int)NW_ARRAY_LEN(p), &id);
	free(extra);
	if (rc)
		return st_db_err(s, "inserting the run", err, errlen);
	if (insert_rows(s, id, run, err, errlen))
		return -1;
	*id_out = id;
	return 0;
}

/*
 * On a server, an earlier attempt at this run may still be going on after
 * its connection was given up (a deadline during COMMIT): the server
 * finishes it all the same. So each attempt holds a lock named by the run's
 * content key for its transaction, which waits for any earlier one to end,
 * and then looks for the key: found, the run is stored, and *id is its id.
 * 1 found, 0 not, -1 with err.
 */
static int already_in(struct nw_store *s, const char *key, long long *id, char *err, size_t errlen)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	h = fnv_add(h, key);
	const struct nw_db_param p[] = { NW_DB_INT(NW_STORE_APP_ID), NW_DB_INT((int32_t)(uint32_t)(h ^ (h >> 32))) };
	if (st_run_sql(s->db, "SELECT pg_advisory_xact_lock(CAST($1 AS int4), CAST($2 AS int4))", p, 2))
		return st_db_err(s, "waiting for an earlier attempt at this run", err, errlen);
	int rc = st_query_int(s->db, "SELECT max(id) FROM runs WHERE content_key = $1", NW_DB_TEXT(key), id);
	if (rc < 0)
		return st_db_err(s, "looking for an earlier attempt at this run", err, errlen);
	return rc == 1 && *id > 0;
}

/* One attempt at the whole run: begin, insert, commit; rolled back on failure. */
static int insert_once(struct nw_store *s, struct nw_run *run, const char *key, long long *id, char *err,
                       size_t errlen)
{
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 0))
		return st_db_err(s, "cannot lock the database to record", err, errlen);
	int found = nw_db_is_pg(s->path) ? already_in(s, key, id, err, errlen) : 0;
	if (found) {
		db->drv->rollback(db); /* nothing written; the lock ends with the transaction */
		return found > 0 ? 0 : -1;
	}
	if (insert_run(s, run, key, id, err, errlen)) {
		db->drv->rollback(db);
		return -1;
	}
	if (db->drv->commit(db)) {
		st_db_err(s, "committing the run", err, errlen);
		db->drv->rollback(db);
		return -1;
	}
	return 0;
}

static void pause_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* Passwords of connection strings out of the run's command lines (header and fingerprint). */
void st_redact_run(struct nw_run *run)
{
	char *clean = nw_store_redact(run->h.cmdline);
	nw_strlcpy(run->h.cmdline, clean, sizeof(run->h.cmdline));
	free(clean);
	json_t *fp = run->h.extra ? json_object_get(run->h.extra, "fingerprint") : NULL;
	const char *cmd = json_string_value(json_object_get(fp, "cmdline"));
	if (cmd) {
		clean = nw_store_redact(cmd);
		json_object_set_new(fp, "cmdline", json_string(clean));
		free(clean);
	}
}

/* Worth another attempt after a pause: a busy server or a dropped connection (PostgreSQL). */
static int retryable(const struct nw_store *s)
{
	enum nw_db_err cls = s->db->err;
	return nw_db_is_pg(s->path) && (cls == NW_DB_SERIAL || cls == NW_DB_LOST || cls == NW_DB_TIMEOUT);
}

/*
 * Insert a run, retried on serialization failures, timeouts and dropped
 * connections (reconnecting) with growing random pauses, for up to the lock
 * bound in all (or the handle's deadline). Each attempt on a server first
 * waits for any earlier one and looks the run up by its content key
 * (already_in), which is this run's alone: stored once, whatever was cut.
 */
int nw_store_insert(struct nw_store *s, struct nw_run *run, long long *id_out, char *err,
                    size_t errlen)
{
	if (!run->h.time[0])
		nw_utc_iso(run->h.time, sizeof(run->h.time)); /* one time, so every attempt has one content key */
	st_redact_run(run);
	char key[NW_STORE_KEY_LEN];
	run_key(run, run->h.time, key, sizeof(key));
	return st_insert_keyed(s, run, key, id_out, err, errlen);
}

int st_insert_keyed(struct nw_store *s, struct nw_run *run, const char *key, long long *id_out, char *err,
                    size_t errlen)
{
	long long id = 0;
	double until = nw_db_until(s->db, nw_now()), pause = 0.02;
	unsigned seed = (unsigned)getpid() ^ (unsigned)(nw_now() * 1e6);
	for (;;) {
		if (insert_once(s, run, key, &id, err, errlen) == 0)
			break;
		if (!retryable(s) || nw_now() + pause > until || nw_db_stopping())
			return -1;
		pause_s(pause * (0.5 + (double)(rand_r(&seed) % 1000) / 1000.0));
		pause = pause * 2 > 1.0 ? 1.0 : pause * 2;
		/* a dropped connection: again on a new one (the next attempt finds the run if the server took it) */
		if (s->db->err != NW_DB_SERIAL)
			nw_db_pg_reset(s->db);
	}
	if (id_out)
		*id_out = id;
	return 0;
}

/* Whether a run that failed to go in with class cls is kept in the spool for later. */
static int spool_worthy(const char *path, enum nw_db_err cls)
{
	/* a server away, restarting, overrun or not answering, or a stop: the run keeps; a wrong database does not */
	if (cls == NW_DB_STOPPED)
		return 1;
	return nw_db_is_pg(path) && (cls == NW_DB_LOST || cls == NW_DB_AUTH || cls == NW_DB_SERIAL ||
	                             cls == NW_DB_TIMEOUT || cls == NW_DB_BUSY);
}

int nw_store_record(const struct nw_store_opts *o, struct nw_run *run, long long *id_out,
                    char *err, size_t errlen)
{
	if (id_out)
		*id_out = 0;
	if (o && o->disabled)
		return 0;
	char path[PATH_MAX];
	if (nw_store_path(o, path, sizeof(path), err, errlen))
		return -1;
	const json_t *fp = run->h.extra ? json_object_get(run->h.extra, "fingerprint") : NULL;
	if (!json_is_object(fp) || !json_object_get(fp, "host"))
		nw_fingerprint_collect(run);
	/* what identifies the run, fixed before it is stored or spooled, so every copy of it has one content key */
	nw_store_stamp(run);
	if (!run->h.time[0])
		nw_utc_iso(run->h.time, sizeof(run->h.time));
	st_redact_run(run);
	double bound;
	if (st_lock_wait(&bound, err, errlen))
		return -1;
	double deadline = nw_now() + (o && o->record_s > 0 ? o->record_s : bound);
	struct nw_store *s;
	enum nw_db_err cls;
	int rc = st_open_store(path, NW_STORE_WRITE, deadline, &s, &cls, err, errlen);
	if (rc == 0) {
		rc = nw_store_insert(s, run, id_out, err, errlen);
		cls = s->db->err;
		if (rc == 0 && !nw_db_stopping())
			nw_spool_send(s, path, NULL, NULL, 0); /* runs kept earlier, as long as the deadline allows */
		nw_store_close(s);
	}
	if (rc && spool_worthy(path, cls))
		nw_spool_keep(path, run, err, errlen);
	return rc;
}

/* The run's header columns (runs row id) into run->h; -1 with err when there is no such run. */
static int load_header(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	struct nw_db *db = s->db;
	const struct nw_db_driver *d = db->drv;
	struct nw_db_rows *r;
	struct nw_db_param p = NW_DB_INT(id);
	if (d->query(db, "SELECT time, host, source, backend, tool_version, nccl_version, nccl_path,"
	                 " driver, cuda_driver, gpus, cmdline, input, nranks, nhosts, extra, link_gbs"
	                 " FROM runs WHERE id = $1", &p, 1, &r))
		return st_db_err(s, "reading a run", err, errlen);
	int step = d->next(r);
	if (step != 1) {
		if (step == 0)
			nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		else
			st_db_err(s, "reading a run", err, errlen);
		d->done(r);
		return -1;
	}
	struct nw_run_header *h = &run->h;
	struct { char *dst; size_t len; } cols[] = {
		{ h->time, sizeof(h->time) }, { h->host, sizeof(h->host) }, { h->source, sizeof(h->source) },
		{ h->backend, sizeof(h->backend) }, { h->tool_version, sizeof(h->tool_version) },
		{ h->nccl_version, sizeof(h->nccl_version) }, { h->nccl_path, sizeof(h->nccl_path) },
		{ h->driver, sizeof(h->driver) }, { h->cuda_driver, sizeof(h->cuda_driver) },
		{ h->gpus, sizeof(h->gpus) }, { h->cmdline, sizeof(h->cmdline) }, { h->input, sizeof(h->input) },
	};
	for (int k = 0; k < (int)NW_ARRAY_LEN(cols); k++) {
		const char *v = d->text(r, k);
		nw_strlcpy(cols[k].dst, v ? v : "", cols[k].len);
	}
	h->nranks = (int)d->integer(r, 12); /* NULL (unknown) reads as 0 */
	h->nhosts = (int)d->integer(r, 13);
	const char *extra = d->text(r, 14);
	if (extra) {
		json_t *x = json_loads(extra, 0, NULL);
		if (json_is_object(x))
			h->extra = x;
		else if (x)
			json_decref(x);
	}
	h->link_gbs = d->real(r, 15);
	d->done(r);
	return 0;
}

/* Per-rank times from a results row's "ranks" JSON text (NULL: none) into r (rank_times allocated). */
static void load_rank_times(const unsigned char *text, struct nw_row *r)
{
	json_t *a = text ? json_loads((const char *)text, 0, NULL) : NULL;
	if (json_is_array(a) && json_array_size(a)) {
		size_t k;
		json_t *x;
		r->rank_times = nw_calloc(json_array_size(a), sizeof(*r->rank_times));
		json_array_foreach(a, k, x) {
			struct nw_rank_time *t = &r->rank_times[r->nrank_times++];
			json_t *v;
			t->rank = json_is_integer(v = json_object_get(x, "rank")) ? (int)json_integer_value(v) : (int)k;
			t->gpu = json_is_integer(v = json_object_get(x, "gpu")) ? (int)json_integer_value(v) : -1;
			v = json_object_get(x, "host");
			nw_strlcpy(t->host, json_is_string(v) ? json_string_value(v) : "", sizeof(t->host));
			v = json_object_get(x, "time_us");
			t->time_us = json_is_number(v) ? json_number_value(v) : 0;
		}
	}
	if (a)
		json_decref(a);
}

void st_load_row(struct nw_db_rows *r, const struct nw_db_driver *d, int c, struct nw_row *row)
{
	memset(row, 0, sizeof(*row));
	st_col_text(r, d, c, row->op, sizeof(row->op));
	st_col_text(r, d, c + 1, row->dtype, sizeof(row->dtype));
	st_col_text(r, d, c + 2, row->redop, sizeof(row->redop));
	row->root = (int)d->integer(r, c + 3);
	long long sz = d->integer(r, c + 4), cnt = d->integer(r, c + 5);
	row->size_bytes = sz > 0 ? (uint64_t)sz : 0;
	row->count = cnt > 0 ? (uint64_t)cnt : 0;
	row->nranks = (int)d->integer(r, c + 6); /* NULL (unknown) reads as 0 */
	row->inplace = d->integer(r, c + 7) != 0;
	row->time_us = d->real(r, c + 8);
	row->algbw_gbs = d->real(r, c + 9);
	row->busbw_gbs = d->real(r, c + 10);
	row->wrong = d->text(r, c + 11) ? d->integer(r, c + 11) : -1;
	load_rank_times((const unsigned char *)d->text(r, c + 12), row);
	const char *iters = d->text(r, c + 13);
	json_t *pi = iters ? json_loads(iters, 0, NULL) : NULL;
	nw_row_iters_from_json(pi, row);
	if (pi)
		json_decref(pi);
	row->noise = d->text(r, 14) ? d->real(r, 14) : 0; /* NULL: not measured */
	if (!(row->noise > 0))
		row->noise = 0;
}

/* Every results row of run id, in recorded order, appended to run. -1 with err. */
static int load_rows(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	struct nw_db_param p = NW_DB_INT(id);
	if (d->query(s->db, "SELECT op, dtype, redop, root, size_bytes, count, nranks, inplace, time_us,"
	                    " algbw_gbs, busbw_gbs, wrong, ranks, per_iter, noise FROM results WHERE run_id = $1 ORDER BY seq",
	             &p, 1, &r))
		return st_db_err(s, "reading results", err, errlen);
	int step;
	while ((step = d->next(r)) == 1) {
		struct nw_row row;
		st_load_row(r, d, 0, &row);
		nw_run_add(run, &row);
	}
	d->done(r);
	return step == 0 ? 0 : st_db_err(s, "reading results", err, errlen);
}

int nw_store_load(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	nw_run_init(run);
	if (load_header(s, id, run, err, errlen))
		return -1;
	if (load_rows(s, id, run, err, errlen)) {
		nw_run_release(run);
		return -1;
	}
	return 0;
}
