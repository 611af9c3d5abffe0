/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store: opening the history database (SQLite file or PostgreSQL server),
 * checking whose it is and migrating its schema forward, the messages of
 * its failures, and the helpers store_run.c and store_query.c share.
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/spool.h"
#include "store/store_int.h"
#include "util/util.h"

void nw_store_on_wait(void (*fn)(const char *path, double bound_s))
{
	nw_db_wait_notice = fn;
}

void nw_store_stop_on(const volatile sig_atomic_t *flag)
{
	nw_db_stop = flag;
}

static void (*caveat_notice)(const char *path, const char *why);

void nw_store_on_caveat(void (*fn)(const char *path, const char *why))
{
	caveat_notice = fn;
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
	/* noise: the relative spread of a row's repeated batches (bench), compare's noise; NULL not measured */
	{ 6, "ALTER TABLE results ADD COLUMN noise REAL;", "ALTER TABLE results ADD COLUMN IF NOT EXISTS noise REAL;" },
};

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
int st_db_err(struct nw_store *s, const char *what, char *err, size_t errlen)
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
	case NW_DB_TIMEOUT:
		return nw_seterr(err, errlen, "history database '%s': %s: the server did not answer in time (%s; the bound "
		                 "is %g s, --lock-timeout or NCCLWATCH_LOCK_TIMEOUT); check that it is up and not overloaded",
		                 s->path, what, db->msg, db->lock_wait_s);
	case NW_DB_STOPPED:
		return nw_seterr(err, errlen, "history database '%s': %s: stopped by a signal (%s)", s->path, what, db->msg);
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
	if (cls == NW_DB_TIMEOUT)
		return nw_seterr(err, errlen, "the PostgreSQL server of '%s' did not answer in time (%s): check that it is "
		                 "up and not overloaded (--lock-timeout S or NCCLWATCH_LOCK_TIMEOUT sets how long to wait)",
		                 name, msg);
	if (cls == NW_DB_STOPPED)
		return nw_seterr(err, errlen, "connecting to the PostgreSQL server of '%s': stopped by a signal", name);
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
		return st_db_err(s, reading, err, errlen);
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
		return st_db_err(s, "cannot lock for the schema update", err, errlen);
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
			st_db_err(s, what, err, errlen);
			goto fail;
		}
	}
	if (db->drv->set_header(db, NW_STORE_SCHEMA_VERSION)) {
		st_db_err(s, "setting the schema version", err, errlen);
		goto fail;
	}
	if (db->drv->commit(db)) {
		st_db_err(s, "committing the schema update", err, errlen);
		goto fail;
	}
	return 0;
fail:
	db->drv->rollback(db);
	return -1;
}

/*
 * Checks ownership and schema of a freshly opened database and migrates it
 * when writable. A file opened to read is never written: an empty one is
 * refused, an older one read through a migrated copy in memory.
 */
static int settle(struct nw_store *s, char *err, size_t errlen)
{
	long long version;
	enum nw_db_owner own;
	if (check_usable(s, "reading its header", &own, &version, err, errlen))
		return -1;
	if (s->db->readonly) {
		if (own == NW_DB_EMPTY)
			return nw_seterr(err, errlen, "history database '%s' is empty: no run was ever recorded in it (it was "
			                 "left as it is); record a run there first, or give another --db", s->path);
		if (version == NW_STORE_SCHEMA_VERSION)
			return 0;
		if (nw_db_sqlite_to_memory(s->db))
			return st_db_err(s, "reading it into memory for its schema update", err, errlen);
	}
	/* Ours or empty from here on: safe to set the journal mode. */
	if (s->db->drv->ready(s->db))
		return st_db_err(s, "setting WAL mode", err, errlen);
	if (own == NW_DB_EMPTY || version < NW_STORE_SCHEMA_VERSION)
		return migrate(s, err, errlen);
	return 0;
}

/* The bound of every wait, NCCLWATCH_LOCK_TIMEOUT or 15 s. */
int st_lock_wait(double *out, char *err, size_t errlen)
{
	*out = 15.0;
	const char *lw = getenv("NCCLWATCH_LOCK_TIMEOUT");
	if (lw && *lw && nw_parse_duration(lw, out, err, errlen))
		return nw_seterr(err, errlen, "NCCLWATCH_LOCK_TIMEOUT='%s' is not a duration (seconds, as in 15 or 2m)", lw);
	return 0;
}

/* Remove path and the side files SQLite may have left beside it. */
static void remove_db_files(const char *path)
{
	static const char *const side[] = { "", "-journal", "-wal", "-shm" };
	char p[PATH_MAX + 16];
	for (size_t i = 0; i < NW_ARRAY_LEN(side); i++) {
		snprintf(p, sizeof(p), "%s%s", path, side[i]);
		unlink(p);
	}
}

/* Put the finished file tmp at path unless path exists; 0 when path exists now. */
static int link_into_place(const char *tmp, const char *path, char *err, size_t errlen)
{
	if (link(tmp, path) == 0 || errno == EEXIST)
		return 0;
	/* a file system without hard links: a rename that does not replace */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0 || errno == EEXIST)
		return 0;
	if (errno == EINVAL && access(path, F_OK) != 0 && rename(tmp, path) == 0)
		return 0;
	return nw_seterr(err, errlen, "cannot create history database '%s': %s", path, strerror(errno));
}

/*
 * A new SQLite history: built under a temporary name beside path (0600,
 * its schema committed), then linked into place. A failure (a full disk)
 * leaves nothing behind, and another process never finds a half-made
 * file. 0 when path exists now, made here or by a process that won the race.
 */
static int create_file(const char *path, double wait, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32];
	if (nw_db_make_parent_dirs(path, err, errlen))
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s.new-%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return nw_seterr(err, errlen, "history database path '%s' is too long", path);
	remove_db_files(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return nw_seterr(err, errlen, "cannot create history database '%s': %s", path, strerror(errno));
	close(fd);
	struct nw_db *db;
	int rc = nw_db_sqlite_open(tmp, NW_DB_LITE_WRITE, wait, &db, err, errlen);
	if (rc == 0) {
		struct nw_store *s = nw_calloc(1, sizeof(*s));
		s->db = db;
		nw_strlcpy(s->path, path, sizeof(s->path));
		rc = migrate(s, err, errlen);
		nw_store_close(s);
	}
	if (rc == 0)
		rc = link_into_place(tmp, path, err, errlen);
	remove_db_files(tmp);
	return rc;
}

/* nw_store_open, saying in *cls why a PostgreSQL server could not be used; deadline as for nw_db_pg_open. */
int st_open_store(const char *path, enum nw_store_mode mode, double deadline, struct nw_store **out,
                  enum nw_db_err *cls, char *err, size_t errlen)
{
	*out = NULL;
	*cls = NW_DB_OTHER;
	double wait;
	if (st_lock_wait(&wait, err, errlen))
		return -1;
	struct nw_db *db = NULL;
	char *shown = nw_store_redact(path);
	int rc;
	if (nw_db_is_pg(path)) {
		char why[NW_ERRLEN];
		rc = nw_db_pg_open(path, wait, deadline, &db, cls, why, sizeof(why));
		if (rc)
			pg_open_err(shown, *cls, why, err, errlen);
	} else {
		struct stat st;
		rc = mode == NW_STORE_WRITE && stat(path, &st) != 0 && errno == ENOENT ? create_file(path, wait, err, errlen) : 0;
		if (rc == 0)
			rc = nw_db_sqlite_open(path, mode == NW_STORE_READ ? NW_DB_LITE_READ : NW_DB_LITE_WRITE, wait, &db, err,
			                       errlen);
		if (rc == 0)
			db->deadline = deadline;
	}
	if (rc) {
		free(shown);
		return -1;
	}
	struct nw_store *s = nw_calloc(1, sizeof(*s));
	s->db = db;
	nw_strlcpy(s->path, shown, sizeof(s->path));
	free(shown);
	if (settle(s, err, errlen) == 0) {
		if (db->stale && caveat_notice)
			caveat_notice(s->path, "its write-ahead log (the -wal file beside it) cannot be read here, so runs "
			              "recorded since its last checkpoint may be missing; read it where its -wal and -shm "
			              "files are readable");
		*out = s;
		return 0;
	}
	*cls = db->err;
	nw_store_close(s);
	return -1;
}

int nw_store_open(const char *path, enum nw_store_mode mode, struct nw_store **out, char *err,
                  size_t errlen)
{
	enum nw_db_err cls;
	return st_open_store(path, mode, 0, out, &cls, err, errlen);
}


void nw_store_close(struct nw_store *s)
{
	if (!s)
		return;
	nw_db_close(s->db);
	free(s);
}

/* Run one statement with no rows wanted; -1 with the class on the handle. */
int st_run_sql(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np)
{
	struct nw_db_rows *r;
	if (db->drv->query(db, sql, p, np, &r))
		return -1;
	db->drv->done(r);
	return 0;
}

/* One integer from a one-parameter query (0 when it has no row); -1 with the class on the handle. */
int st_query_int(struct nw_db *db, const char *sql, struct nw_db_param p, long long *out)
{
	struct nw_db_rows *r;
	if (db->drv->query(db, sql, &p, 1, &r))
		return -1;
	int step = db->drv->next(r);
	*out = step == 1 ? db->drv->integer(r, 0) : 0;
	db->drv->done(r);
	return step < 0 ? -1 : step;
}

void st_col_text(struct nw_db_rows *r, const struct nw_db_driver *d, int k, char *dst, size_t len)
{
	const char *v = d->text(r, k);
	nw_strlcpy(dst, v ? v : "", len);
}

int nw_store_sync(const struct nw_store_opts *o, struct nw_spool_counts *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	char path[PATH_MAX];
	if (nw_store_path(o, path, sizeof(path), err, errlen))
		return -1;
	struct nw_store *s;
	if (nw_store_open(path, NW_STORE_WRITE, &s, err, errlen))
		return -1;
	int rc = nw_spool_send(s, path, c, err, errlen);
	nw_store_close(s);
	return rc;
}
