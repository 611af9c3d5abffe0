#include "store/store.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/spool.h"
#include "util/util.h"

struct nw_store {
	struct nw_db *db;
	char path[PATH_MAX]; /* file path or connection string, as shown in messages */
};

void nw_store_on_wait(void (*fn)(const char *path, double bound_s))
{
	nw_db_wait_notice = fn;
}

/*
 * The schema, as a table of forward steps: step k turns a version k-1
 * database into version k. A new version appends a step; existing steps are
 * never edited, since databases in the field were made by them.
 */
struct migration {
	int version;
	const char *sql;
	const char *pg_sql; /* PostgreSQL's own form of the step; NULL: sql, translated as any query */
};

/*
 * Version 5: nranks of runs and results may be NULL (unknown: an nccl-tests
 * output that does not say how many ranks ran). SQLite cannot drop a NOT
 * NULL, so the three tables that hold or reference runs are rebuilt with
 * their ids; the children are dropped first and the new ones point at
 * runs_new, so that no cascade reaches them, and the renames carry the
 * references over. The AUTOINCREMENT high mark moves with runs, so a
 * deleted id is still never reused. Stored 0s become NULL: no run has 0
 * ranks, 0 was only ever "not said".
 */
#define NULL_NRANKS_DATA \
	"UPDATE runs SET nranks = NULL WHERE nranks <= 0;" \
	"UPDATE results SET nranks = NULL WHERE nranks <= 0;"

static const char v5_sqlite[] =
	"CREATE TABLE runs_new("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" time TEXT NOT NULL, host TEXT NOT NULL, source TEXT NOT NULL, backend TEXT NOT NULL,"
	" tool_version TEXT NOT NULL, nccl_version TEXT NOT NULL, nccl_path TEXT NOT NULL,"
	" driver TEXT NOT NULL, cuda_driver TEXT NOT NULL, gpus TEXT NOT NULL,"
	" cmdline TEXT NOT NULL, input TEXT NOT NULL, nranks INTEGER,"
	" nhosts INTEGER NOT NULL, ops TEXT NOT NULL, peak_busbw REAL NOT NULL,"
	" nrows INTEGER NOT NULL, extra TEXT, link_gbs REAL NOT NULL DEFAULT 0, content_key TEXT);"
	"INSERT INTO runs_new(id, time, host, source, backend, tool_version, nccl_version, nccl_path, driver,"
	" cuda_driver, gpus, cmdline, input, nranks, nhosts, ops, peak_busbw, nrows, extra, link_gbs, content_key)"
	" SELECT id, time, host, source, backend, tool_version, nccl_version, nccl_path, driver,"
	" cuda_driver, gpus, cmdline, input, nranks, nhosts, ops, peak_busbw, nrows, extra, link_gbs, content_key"
	" FROM runs;"
	"CREATE TABLE results_new("
	" run_id INTEGER NOT NULL REFERENCES runs_new(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL, redop TEXT NOT NULL,"
	" root INTEGER NOT NULL, size_bytes INTEGER NOT NULL, count INTEGER NOT NULL,"
	" nranks INTEGER, inplace INTEGER NOT NULL, time_us REAL NOT NULL,"
	" algbw_gbs REAL NOT NULL, busbw_gbs REAL NOT NULL, wrong INTEGER, ranks TEXT, per_iter TEXT,"
	" PRIMARY KEY(run_id, seq));"
	"INSERT INTO results_new(run_id, seq, op, dtype, redop, root, size_bytes, count, nranks, inplace,"
	" time_us, algbw_gbs, busbw_gbs, wrong, ranks, per_iter)"
	" SELECT run_id, seq, op, dtype, redop, root, size_bytes, count, nranks, inplace,"
	" time_us, algbw_gbs, busbw_gbs, wrong, ranks, per_iter FROM results;"
	"CREATE TABLE baselines_new("
	" name TEXT PRIMARY KEY,"
	" run_id INTEGER NOT NULL REFERENCES runs_new(id) ON DELETE CASCADE,"
	" set_time TEXT NOT NULL);"
	"INSERT INTO baselines_new(name, run_id, set_time) SELECT name, run_id, set_time FROM baselines;"
	"DELETE FROM sqlite_sequence WHERE name = 'runs_new';"
	"UPDATE sqlite_sequence SET name = 'runs_new' WHERE name = 'runs';"
	"DROP TABLE baselines;"
	"DROP TABLE results;"
	"DROP TABLE runs;"
	"ALTER TABLE runs_new RENAME TO runs;"
	"ALTER TABLE results_new RENAME TO results;"
	"ALTER TABLE baselines_new RENAME TO baselines;"
	"CREATE INDEX runs_time ON runs(time);"
	"CREATE INDEX runs_host ON runs(host);"
	"CREATE INDEX runs_content_key ON runs(content_key);"
	"CREATE INDEX runs_source_host_time ON runs(source, host, time);"
	NULL_NRANKS_DATA;

static const char v5_pg[] =
	"ALTER TABLE runs ALTER COLUMN nranks DROP NOT NULL;"
	"ALTER TABLE results ALTER COLUMN nranks DROP NOT NULL;"
	NULL_NRANKS_DATA;

static const struct migration migrations[] = {
	{ 1,
	  "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	  "INSERT INTO meta(key, value) VALUES('application', 'ncclwatch history');"
	  "CREATE TABLE runs("
	  " id INTEGER PRIMARY KEY AUTOINCREMENT,"
	  " time TEXT NOT NULL, host TEXT NOT NULL, source TEXT NOT NULL, backend TEXT NOT NULL,"
	  " tool_version TEXT NOT NULL, nccl_version TEXT NOT NULL, nccl_path TEXT NOT NULL,"
	  " driver TEXT NOT NULL, cuda_driver TEXT NOT NULL, gpus TEXT NOT NULL,"
	  " cmdline TEXT NOT NULL, input TEXT NOT NULL, nranks INTEGER NOT NULL,"
	  " nhosts INTEGER NOT NULL, ops TEXT NOT NULL, peak_busbw REAL NOT NULL,"
	  " nrows INTEGER NOT NULL, extra TEXT);"
	  "CREATE TABLE results("
	  " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	  " seq INTEGER NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL, redop TEXT NOT NULL,"
	  " root INTEGER NOT NULL, size_bytes INTEGER NOT NULL, count INTEGER NOT NULL,"
	  " nranks INTEGER NOT NULL, inplace INTEGER NOT NULL, time_us REAL NOT NULL,"
	  " algbw_gbs REAL NOT NULL, busbw_gbs REAL NOT NULL, wrong INTEGER, ranks TEXT,"
	  " PRIMARY KEY(run_id, seq));"
	  "CREATE INDEX runs_time ON runs(time);", NULL },
	{ 2,
	  "ALTER TABLE runs ADD COLUMN link_gbs REAL NOT NULL DEFAULT 0;"
	  "CREATE TABLE baselines("
	  " name TEXT PRIMARY KEY,"
	  " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	  " set_time TEXT NOT NULL);"
	  "CREATE INDEX runs_host ON runs(host);", NULL },
	{ 3,
	  /* content_key: what identifies a run across databases (history merge);
	     NULL in runs recorded before version 3 until a merge fills it */
	  "ALTER TABLE runs ADD COLUMN content_key TEXT;"
	  "CREATE INDEX runs_content_key ON runs(content_key);"
	  "CREATE INDEX runs_source_host_time ON runs(source, host, time);", NULL },
	{ 4, "ALTER TABLE results ADD COLUMN per_iter TEXT;", NULL },
	{ 5, v5_sqlite, v5_pg },
};

static void run_key(const struct nw_run *run, const char *time, char *out, size_t len);
static int query_int(struct nw_db *db, const char *sql, struct nw_db_param p, long long *out);

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == NW_STORE_SCHEMA_VERSION,
               "one migration step per schema version");

int nw_store_path(const struct nw_store_opts *o, char *buf, size_t len, char *err, size_t errlen)
{
	const char *p = o ? o->db_path : NULL;
	if (!p || !*p)
		p = getenv("NCCLWATCH_DB");
	int n;
	if (p && *p) {
		n = snprintf(buf, len, "%s", p);
	} else {
		const char *xdg = getenv("XDG_DATA_HOME");
		const char *home = getenv("HOME");
		if (xdg && xdg[0] == '/')
			n = snprintf(buf, len, "%s/ncclwatch/history.db", xdg);
		else if (home && *home)
			n = snprintf(buf, len, "%s/.local/share/ncclwatch/history.db", home);
		else
			return nw_seterr(err, errlen, "no place for the history database: HOME and XDG_DATA_HOME are unset; give --db PATH or set NCCLWATCH_DB");
	}
	if (n < 0 || (size_t)n >= len)
		return nw_seterr(err, errlen, "history database path is too long");
	return 0;
}


/* err from db's last failure, named by class with what to do; returns -1. */
static int db_err(struct nw_store *s, const char *what, char *err, size_t errlen)
{
	struct nw_db *db = s->db;
	switch (db->err) {
	case NW_DB_FULL:
		return nw_seterr(err, errlen, "history database '%s': %s: disk full; free space on its file system or "
		                 "give another --db PATH", s->path, what);
	case NW_DB_BUSY:
		return nw_seterr(err, errlen, "history database '%s': %s: another process held it locked for %g s; "
		                 "try again, or wait longer with NCCLWATCH_LOCK_TIMEOUT=SECONDS", s->path, what,
		                 db->lock_wait_s);
	case NW_DB_DAMAGED:
		return nw_seterr(err, errlen, "history database '%s' is damaged (%s: %s); move it aside, ncclwatch will start a new one",
		                 s->path, what, db->msg);
	case NW_DB_LOST:
		return nw_seterr(err, errlen, "history database '%s': %s: the connection to the server was lost (%s); "
		                 "check that the server is up, then 'ncclwatch history sync'", s->path, what, db->msg);
	case NW_DB_SERIAL:
		return nw_seterr(err, errlen, "history database '%s': %s: too many concurrent writers for %g s (%s); try again",
		                 s->path, what, db->lock_wait_s, db->msg);
	default:
		return nw_seterr(err, errlen, "history database '%s': %s: %s", s->path, what, db->msg);
	}
}

/* Open failure of a PostgreSQL server, by class, with what to do. */
static int pg_open_err(const char *name, enum nw_db_err cls, const char *why, char *err, size_t errlen)
{
	char msg[NW_ERRLEN];
	nw_strlcpy(msg, why, sizeof(msg));
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (cls == NW_DB_AUTH)
		return nw_seterr(err, errlen, "PostgreSQL server of '%s' refused the login (%s): check the user, and give "
		                 "the password in ~/.pgpass or PGPASSWORD", name, msg);
	if (cls == NW_DB_LOST)
		return nw_seterr(err, errlen, "cannot reach the PostgreSQL server of '%s' (%s): check that it is up and the "
		                 "host, port or socket directory in --db", name, msg);
	return nw_seterr(err, errlen, "%s", msg);
}

static int foreign_err(struct nw_store *s, char *err, size_t errlen)
{
	if (nw_db_is_pg(s->path))
		return nw_seterr(err, errlen, "'%s' is not an ncclwatch history database (it holds another application's "
		                 "tables); it was left untouched: give an empty database or another --db", s->path);
	return nw_seterr(err, errlen, "'%s' is not an ncclwatch history database (another application's SQLite file); it was left untouched: give another --db PATH",
	                 s->path);
}

/*
 * Whose database this is and which schema it has: -1 with err when it
 * cannot be read, is not ours, or is newer than this code; 0 otherwise.
 */
static int check_usable(struct nw_store *s, const char *reading, enum nw_db_owner *own,
                        long long *version, char *err, size_t errlen)
{
	if (s->db->drv->header(s->db, own, version))
		return db_err(s, reading, err, errlen);
	if (*own == NW_DB_FOREIGN)
		return foreign_err(s, err, errlen);
	if (*version > NW_STORE_SCHEMA_VERSION)
		return nw_seterr(err, errlen, "history database '%s' has schema version %lld, newer than this ncclwatch knows (%d): use a newer ncclwatch",
		                 s->path, *version, NW_STORE_SCHEMA_VERSION);
	return 0;
}

/*
 * Bring a new or older database to NW_STORE_SCHEMA_VERSION in one write
 * transaction, re-checking inside it since another process may have done
 * the work meanwhile.
 */
static int migrate(struct nw_store *s, char *err, size_t errlen)
{
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 1))
		return db_err(s, "cannot lock for the schema update", err, errlen);
	long long version;
	enum nw_db_owner own;
	if (check_usable(s, "reading the schema version", &own, &version, err, errlen))
		goto fail;
	for (size_t k = 0; k < NW_ARRAY_LEN(migrations); k++) {
		if (migrations[k].version <= version)
			continue;
		const char *sql = migrations[k].sql;
		if (migrations[k].pg_sql && nw_db_is_pg(s->path))
			sql = migrations[k].pg_sql;
		if (db->drv->exec(db, sql)) {
			char what[64];
			snprintf(what, sizeof(what), "schema step to version %d", migrations[k].version);
			db_err(s, what, err, errlen);
			goto fail;
		}
	}
	if (db->drv->set_header(db, NW_STORE_SCHEMA_VERSION)) {
		db_err(s, "setting the schema version", err, errlen);
		goto fail;
	}
	if (db->drv->commit(db)) {
		db_err(s, "committing the schema update", err, errlen);
		goto fail;
	}
	return 0;
fail:
	db->drv->rollback(db);
	return -1;
}

/* Checks ownership and schema of a freshly opened database and migrates it when writable. */
static int settle(struct nw_store *s, char *err, size_t errlen)
{
	long long version;
	enum nw_db_owner own;
	if (check_usable(s, "reading its header", &own, &version, err, errlen))
		return -1;
	if (s->db->readonly) {
		if (own == NW_DB_EMPTY || version < NW_STORE_SCHEMA_VERSION)
			return nw_seterr(err, errlen, "history database '%s' needs a schema update that cannot be written here "
			                 "(read-only); record once where it is writable", s->path);
		return 0;
	}
	/* Ours or empty from here on: safe to set the journal mode. */
	if (s->db->drv->ready(s->db))
		return db_err(s, "setting WAL mode", err, errlen);
	if (own == NW_DB_EMPTY || version < NW_STORE_SCHEMA_VERSION)
		return migrate(s, err, errlen);
	return 0;
}

/* The lock and retry bound, NCCLWATCH_LOCK_TIMEOUT or 15 s. */
static int lock_wait(double *out, char *err, size_t errlen)
{
	*out = 15.0;
	const char *lw = getenv("NCCLWATCH_LOCK_TIMEOUT");
	if (lw && *lw && nw_parse_duration(lw, out, err, errlen))
		return nw_seterr(err, errlen, "NCCLWATCH_LOCK_TIMEOUT='%s' is not a duration (seconds, as in 15 or 2m)", lw);
	return 0;
}

/* nw_store_open, saying in *cls why a PostgreSQL server could not be used. */
static int open_store(const char *path, enum nw_store_mode mode, struct nw_store **out,
                      enum nw_db_err *cls, char *err, size_t errlen)
{
	*out = NULL;
	*cls = NW_DB_OTHER;
	double wait;
	if (lock_wait(&wait, err, errlen))
		return -1;
	struct nw_db *db = NULL;
	if (nw_db_is_pg(path)) {
		char why[NW_ERRLEN];
		if (nw_db_pg_open(path, &db, cls, why, sizeof(why)))
			return pg_open_err(path, *cls, why, err, errlen);
		db->lock_wait_s = wait;
	} else if (nw_db_sqlite_open(path, mode == NW_STORE_WRITE, wait, &db, err, errlen)) {
		return -1;
	}
	struct nw_store *s = nw_calloc(1, sizeof(*s));
	s->db = db;
	nw_strlcpy(s->path, path, sizeof(s->path));
	if (settle(s, err, errlen) == 0) {
		*out = s;
		return 0;
	}
	int created = db->created;
	*cls = db->err;
	nw_store_close(s);
	/* a failed first open leaves no empty file behind for the next run to trip on */
	struct stat st;
	if (created && stat(path, &st) == 0 && st.st_size == 0)
		unlink(path);
	return -1;
}

int nw_store_open(const char *path, enum nw_store_mode mode, struct nw_store **out, char *err,
                  size_t errlen)
{
	enum nw_db_err cls;
	return open_store(path, mode, out, &cls, err, errlen);
}

void nw_store_close(struct nw_store *s)
{
	if (!s)
		return;
	nw_db_close(s->db);
	free(s);
}

/* Run one statement with no rows wanted; -1 with the class on the handle. */
static int run_sql(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np)
{
	struct nw_db_rows *r;
	if (db->drv->query(db, sql, p, np, &r))
		return -1;
	db->drv->done(r);
	return 0;
}

/* Distinct op names of a run, in order of appearance, comma-separated. */
static void run_ops(const struct nw_run *run, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < run->nrows; i++) {
		const char *op = run->rows[i].op;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(run->rows[j].op, op);
		if (seen)
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", op);
		if (n < 0 || (size_t)n >= len - used) {
			buf[used] = '\0';
			return;
		}
		used += (size_t)n;
	}
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
			iters ? NW_DB_TEXT(iters) : NW_DB_NULL,
		};
		int rc = run_sql(s->db, "INSERT INTO results(run_id, seq, op, dtype, redop, root, size_bytes, count,"
		                        " nranks, inplace, time_us, algbw_gbs, busbw_gbs, wrong, ranks, per_iter)"
		                        " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)",
		                 p, (int)NW_ARRAY_LEN(p));
		free(ranks);
		free(iters);
		if (rc)
			return db_err(s, "inserting a result row", err, errlen);
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
static int insert_run(struct nw_store *s, const struct nw_run *run, long long *id_out, char *err,
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
	char key[NW_STORE_KEY_LEN];
	run_key(run, t, key, sizeof(key));
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
		return db_err(s, "inserting the run", err, errlen);
	if (insert_rows(s, id, run, err, errlen))
		return -1;
	*id_out = id;
	return 0;
}

/* One attempt at the whole run: begin, insert, commit; rolled back on failure. */
static int insert_once(struct nw_store *s, struct nw_run *run, long long *id, char *err, size_t errlen)
{
	struct nw_db *db = s->db;
	if (db->drv->begin(db, 0))
		return db_err(s, "cannot lock the database to record", err, errlen);
	if (insert_run(s, run, id, err, errlen)) {
		db->drv->rollback(db);
		return -1;
	}
	if (db->drv->commit(db)) {
		db_err(s, "committing the run", err, errlen);
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

/*
 * Insert a run, retried on serialization failures and dropped connections
 * (reconnecting) with growing random pauses, for up to the lock bound in all.
 */
int nw_store_insert(struct nw_store *s, struct nw_run *run, long long *id_out, char *err,
                    size_t errlen)
{
	long long id = 0;
	double until = nw_now() + s->db->lock_wait_s, pause = 0.02;
	unsigned seed = (unsigned)getpid() ^ (unsigned)(nw_now() * 1e6);
	if (!run->h.time[0])
		nw_utc_iso(run->h.time, sizeof(run->h.time)); /* one time, so every attempt has one content key */
	char key[NW_STORE_KEY_LEN];
	run_key(run, run->h.time, key, sizeof(key));
	for (;;) {
		if (insert_once(s, run, &id, err, errlen) == 0)
			break;
		enum nw_db_err cls = s->db->err;
		if ((cls != NW_DB_SERIAL && cls != NW_DB_LOST) || !nw_db_is_pg(s->path) || nw_now() + pause > until)
			return -1;
		pause_s(pause * (0.5 + (double)(rand_r(&seed) % 1000) / 1000.0));
		pause = pause * 2 > 1.0 ? 1.0 : pause * 2;
		/* the connection may have dropped after the server committed: then the run is there */
		if (cls == NW_DB_LOST && !nw_db_pg_reset(s->db) &&
		    query_int(s->db, "SELECT max(id) FROM runs WHERE content_key = $1", NW_DB_TEXT(key), &id) == 1 && id > 0)
			break;
	}
	if (id_out)
		*id_out = id;
	return 0;
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
	struct nw_store *s;
	enum nw_db_err cls;
	int rc = open_store(path, NW_STORE_WRITE, &s, &cls, err, errlen);
	if (rc == 0) {
		rc = nw_store_insert(s, run, id_out, err, errlen);
		cls = s->db->err;
		if (rc == 0 && nw_db_is_pg(path))
			nw_spool_send(s, path, NULL, NULL, NULL, 0); /* runs kept while the server was away */
		nw_store_close(s);
	}
	/* a server away, restarting or overrun keeps the run for later; a wrong database does not */
	if (rc && nw_db_is_pg(path) && (cls == NW_DB_LOST || cls == NW_DB_AUTH || cls == NW_DB_SERIAL))
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
		return db_err(s, "reading a run", err, errlen);
	int step = d->next(r);
	if (step != 1) {
		if (step == 0)
			nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		else
			db_err(s, "reading a run", err, errlen);
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


static void col_text(struct nw_db_rows *r, const struct nw_db_driver *d, int k, char *dst, size_t len)
{
	const char *v = d->text(r, k);
	nw_strlcpy(dst, v ? v : "", len);
}

/* One results row at the cursor into row (zeroed first). */
static void load_row(struct nw_db_rows *r, const struct nw_db_driver *d, struct nw_row *row)
{
	memset(row, 0, sizeof(*row));
	col_text(r, d, 0, row->op, sizeof(row->op));
	col_text(r, d, 1, row->dtype, sizeof(row->dtype));
	col_text(r, d, 2, row->redop, sizeof(row->redop));
	row->root = (int)d->integer(r, 3);
	long long sz = d->integer(r, 4), cnt = d->integer(r, 5);
	row->size_bytes = sz > 0 ? (uint64_t)sz : 0;
	row->count = cnt > 0 ? (uint64_t)cnt : 0;
	row->nranks = (int)d->integer(r, 6); /* NULL (unknown) reads as 0 */
	row->inplace = d->integer(r, 7) != 0;
	row->time_us = d->real(r, 8);
	row->algbw_gbs = d->real(r, 9);
	row->busbw_gbs = d->real(r, 10);
	row->wrong = d->text(r, 11) ? d->integer(r, 11) : -1;
	load_rank_times((const unsigned char *)d->text(r, 12), row);
	const char *iters = d->text(r, 13);
	json_t *pi = iters ? json_loads(iters, 0, NULL) : NULL;
	nw_row_iters_from_json(pi, row);
	if (pi)
		json_decref(pi);
}

/* Every results row of run id, in recorded order, appended to run. -1 with err. */
static int load_rows(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	struct nw_db_param p = NW_DB_INT(id);
	if (d->query(s->db, "SELECT op, dtype, redop, root, size_bytes, count, nranks, inplace, time_us,"
	                    " algbw_gbs, busbw_gbs, wrong, ranks, per_iter FROM results WHERE run_id = $1 ORDER BY seq",
	             &p, 1, &r))
		return db_err(s, "reading results", err, errlen);
	int step;
	while ((step = d->next(r)) == 1) {
		struct nw_row row;
		load_row(r, d, &row);
		nw_run_add(run, &row);
	}
	d->done(r);
	return step == 0 ? 0 : db_err(s, "reading results", err, errlen);
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
	col_text(r, d, 1, e->time, sizeof(e->time));
	col_text(r, d, 2, e->host, sizeof(e->host));
	col_text(r, d, 3, e->source, sizeof(e->source));
	col_text(r, d, 4, e->ops, sizeof(e->ops));
	col_text(r, d, 5, e->nccl_version, sizeof(e->nccl_version));
	e->peak_busbw = d->real(r, 6);
	e->nrows = (int)d->integer(r, 7);
	col_text(r, d, 8, e->baselines, sizeof(e->baselines));
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
	char sql[1024];
	snprintf(sql, sizeof(sql),
	         "SELECT id, time, host, source, ops, nccl_version, peak_busbw, nrows,"
	         " (SELECT group_concat(name, ',') FROM baselines b WHERE b.run_id = runs.id)"
	         " FROM runs WHERE %s"
	         " AND ($2 = '' OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = runs.id AND r.op = $2))"
	         " AND ($3 = '' OR time >= $3) AND ($4 = '' OR time <= $4)"
	         " ORDER BY id DESC%s%.0lld",
	         /* a plain "host = $1" lets the database use its index on host */
	         f && f->host && *f->host ? "host = $1" : "$1 = ''", f && f->limit > 0 ? " LIMIT " : "",
	         f && f->limit > 0 ? f->limit : 0LL);
	const struct nw_db_param p[] = {
		NW_DB_TEXT(f && f->host ? f->host : ""), NW_DB_TEXT(f && f->op ? f->op : ""),
		NW_DB_TEXT(since), NW_DB_TEXT(until),
	};
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	if (d->query(s->db, sql, p, (int)NW_ARRAY_LEN(p), &r))
		return db_err(s, "listing runs", err, errlen);
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
		return db_err(s, "listing runs", err, errlen);
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
		return db_err(s, what, err, errlen);
	if (run_sql(db, sql, &p, 1))
		goto fail;
	long long changed = db->drv->changes(db);
	if (db->drv->commit(db))
		goto fail;
	return changed;
fail:
	db_err(s, what, err, errlen);
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


/* One integer from a one-parameter query (0 when it has no row); -1 with the class on the handle. */
static int query_int(struct nw_db *db, const char *sql, struct nw_db_param p, long long *out)
{
	struct nw_db_rows *r;
	if (db->drv->query(db, sql, &p, 1, &r))
		return -1;
	int step = db->drv->next(r);
	*out = step == 1 ? db->drv->integer(r, 0) : 0;
	db->drv->done(r);
	return step < 0 ? -1 : step;
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
		return db_err(s, "setting a baseline", err, errlen);
	long long exists = 0;
	if (query_int(db, "SELECT count(*) FROM runs WHERE id = $1", NW_DB_INT(id), &exists) < 0)
		goto dberr;
	if (!exists) {
		nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		goto fail;
	}
	const struct nw_db_param p[] = { NW_DB_TEXT(name), NW_DB_INT(id), NW_DB_TEXT(now) };
	if (run_sql(db, "INSERT INTO baselines(name, run_id, set_time) VALUES($1, $2, $3)"
	                " ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id, set_time = excluded.set_time",
	            p, 3) ||
	    db->drv->commit(db))
		goto dberr;
	return 0;
dberr:
	db_err(s, "setting a baseline", err, errlen);
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
	int rc = query_int(s->db, "SELECT run_id FROM baselines WHERE name = $1", NW_DB_TEXT(name), id);
	if (rc < 0)
		return db_err(s, "reading baselines", err, errlen);
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
		return db_err(s, "reading baselines", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = d->next(r)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		struct nw_store_baseline *b = &(*out)[(*n)++];
		col_text(r, d, 0, b->name, sizeof(b->name));
		b->run_id = d->integer(r, 1);
		col_text(r, d, 2, b->set_time, sizeof(b->set_time));
	}
	d->done(r);
	if (step != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return db_err(s, "reading baselines", err, errlen);
	}
	return 0;
}

int nw_store_sync(const struct nw_store_opts *o, size_t *sent, size_t *left, char *err, size_t errlen)
{
	*sent = *left = 0;
	char path[PATH_MAX];
	if (nw_store_path(o, path, sizeof(path), err, errlen))
		return -1;
	struct nw_store *s;
	if (nw_store_open(path, NW_STORE_WRITE, &s, err, errlen))
		return -1;
	int rc = nw_spool_send(s, path, sent, left, err, errlen);
	nw_store_close(s);
	return rc;
}

/* ---- fleet queries and merging (schema version 3) ---- */

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
	snprintf(out, len, "%s %s %s %016" PRIx64, time, run->h.host, run->h.source, h);
}

void nw_store_run_key(const struct nw_run *run, char *out, size_t len)
{
	run_key(run, run->h.time, out, len);
}

int nw_store_has_key(struct nw_store *s, const char *key, char *err, size_t errlen)
{
	long long n = 0;
	if (query_int(s->db, "SELECT count(*) FROM runs WHERE content_key = $1", NW_DB_TEXT(key), &n) < 0)
		return db_err(s, "looking a run up", err, errlen);
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
		return db_err(s, "finding runs without a key", err, errlen);
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
		return db_err(s, "finding runs without a key", err, errlen);
	}
	return 0;
}

/* Key run id (already loaded as run) inside the caller's transaction. */
static int set_key(struct nw_store *s, long long id, const struct nw_run *run, char *err, size_t errlen)
{
	char key[NW_STORE_KEY_LEN];
	nw_store_run_key(run, key, sizeof(key));
	const struct nw_db_param p[] = { NW_DB_TEXT(key), NW_DB_INT(id) };
	if (run_sql(s->db, "UPDATE runs SET content_key = $1 WHERE id = $2", p, 2))
		return db_err(s, "keying a run", err, errlen);
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
		return db_err(s, "cannot lock the database to key old runs", err, errlen);
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
		rc = db_err(s, "committing the keys of old runs", err, errlen);
	if (rc) {
		db->drv->rollback(db);
		return -1;
	}
	if (n)
		*n = nids;
	return 0;
}

int nw_store_latest_checks(struct nw_store *s, struct nw_store_latest **out, size_t *n, char *err,
                           size_t errlen)
{
	const struct nw_db_driver *d = s->db->drv;
	struct nw_db_rows *r;
	*out = NULL;
	*n = 0;
	if (d->query(s->db,
	             "SELECT r.id, r.host, r.time FROM runs r"
	             " JOIN (SELECT host, max(time) AS t FROM runs WHERE source = 'check' GROUP BY host) m"
	             " ON r.host = m.host AND r.time = m.t"
	             " WHERE r.source = 'check' ORDER BY r.host, r.id DESC",
	             NULL, 0, &r))
		return db_err(s, "finding the latest checks", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = d->next(r)) == 1) {
		const char *host = d->text(r, 1);
		if (*n && host && !strcmp((*out)[*n - 1].host, host))
			continue; /* the same host at the same time: the highest id came first */
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		struct nw_store_latest *l = &(*out)[(*n)++];
		l->id = d->integer(r, 0);
		col_text(r, d, 1, l->host, sizeof(l->host));
		col_text(r, d, 2, l->time, sizeof(l->time));
	}
	d->done(r);
	if (step != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return db_err(s, "finding the latest checks", err, errlen);
	}
	return 0;
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
