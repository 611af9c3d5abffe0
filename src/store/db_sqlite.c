/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db_sqlite: the embedded driver of the history store (db.h). One file,
 * WAL mode, writers waiting for each other with short random pauses up to
 * NCCLWATCH_LOCK_TIMEOUT; ownership and schema version in the file's header
 * (PRAGMA application_id, user_version).
 */
#include "store/db.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "util/strbuf.h"
#include "util/util.h"

struct lite {
	sqlite3 *db;
	double busy_since;  /* busy_wait's clock */
	double retry_until; /* retry loops' deadline (0: none running) */
	unsigned seed;      /* for pauses that differ between processes */
	int told;           /* the wait was said (nw_db_wait_notice), once per open database */
};

void (*nw_db_wait_notice)(const char *path, double bound_s);
const volatile sig_atomic_t *nw_db_stop;

int nw_db_stopping(void)
{
	return nw_db_stop && *nw_db_stop;
}

double nw_db_until(const struct nw_db *db, double now)
{
	double until = now + db->lock_wait_s;
	return db->deadline > 0 && db->deadline < until ? db->deadline : until;
}

struct nw_db_rows {
	struct nw_db *db;
	sqlite3_stmt *st;
	int first; /* the statement's first step, taken by query, is pending */
	int step;
};

static struct lite *L(struct nw_db *db)
{
	return db->h;
}

/* Record sqlite's last error on db, sorted into a class; returns -1. */
static int lite_fail(struct nw_db *db, int code)
{
	sqlite3 *h = L(db)->db;
	enum nw_db_err cls = NW_DB_OTHER;
	if (code == SQLITE_FULL || sqlite3_system_errno(h) == ENOSPC)
		cls = NW_DB_FULL;
	else if ((code == SQLITE_BUSY || code == SQLITE_LOCKED) && nw_db_stopping())
		return nw_db_fail(db, NW_DB_STOPPED, "interrupted while waiting for another process's lock");
	else if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		cls = NW_DB_BUSY;
	else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		cls = NW_DB_DAMAGED;
	return nw_db_fail(db, cls, sqlite3_errmsg(h));
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Has the wait for a lock run out (this statement's, the retries' in all, the handle's deadline), or a stop come? */
static int waited_out(struct nw_db *db, double now)
{
	struct lite *l = L(db);
	return now - l->busy_since > db->lock_wait_s || (l->retry_until > 0 && now > l->retry_until) ||
	       (db->deadline > 0 && now > db->deadline) || nw_db_stopping();
}

/*
 * Busy handler: short random pauses (1-8 ms) for up to db->lock_wait_s.
 * SQLite's own timeout handler backs off to 100 ms sleeps, which with a
 * dozen writers leaves the lock idle most of the time; transactions here
 * last a few milliseconds, so waiters retry often instead.
 */
static int busy_wait(void *arg, int count)
{
	struct nw_db *db = arg;
	struct lite *l = L(db);
	double now = nw_now();
	if (count == 0)
		l->busy_since = now;
	if (waited_out(db, now))
		return 0;
	/* waiting since the retry loop began (its deadline minus the bound), else since this statement's first busy */
	double since = l->retry_until > 0 ? l->retry_until - db->lock_wait_s : l->busy_since;
	if (!l->told && nw_db_wait_notice && now - since > NW_DB_NOTICE_AFTER_S) {
		l->told = 1;
		nw_db_wait_notice(db->name, db->lock_wait_s);
	}
	pause_ms(1 + rand_r(&l->seed) % (count < 8 ? count + 1 : 8));
	return 1;
}

/*
 * Run statements that may meet SQLITE_BUSY (another process holds the
 * write lock past the busy timeout, or a WAL recovery is under way):
 * retried for up to db->lock_wait_s in all.
 */
static int exec_retry(struct nw_db *db, const char *sql)
{
	struct lite *l = L(db);
	l->retry_until = nw_db_until(db, nw_now());
	for (int attempt = 0; ; attempt++) {
		int rc = sqlite3_exec(l->db, sql, NULL, NULL, NULL);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 200 || nw_now() > l->retry_until ||
		    nw_db_stopping()) {
			l->retry_until = 0;
			return rc == SQLITE_OK ? 0 : lite_fail(db, rc);
		}
		pause_ms(5 + rand_r(&l->seed) % 50);
	}
}

static int lite_exec(struct nw_db *db, const char *sql)
{
	int rc = sqlite3_exec(L(db)->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : lite_fail(db, rc);
}

/* Bind params to $1..$np wherever the statement names them. */
static void bind_all(sqlite3_stmt *st, const struct nw_db_param *p, int np)
{
	for (int k = 0; k < np; k++) {
		char name[16];
		snprintf(name, sizeof(name), "$%d", k + 1);
		int i = sqlite3_bind_parameter_index(st, name);
		if (i <= 0)
			continue;
		switch (p[k].type) {
		case NW_DB_PTEXT:
			sqlite3_bind_text(st, i, p[k].s ? p[k].s : "", -1, SQLITE_TRANSIENT);
			break;
		case NW_DB_PINT:
			sqlite3_bind_int64(st, i, p[k].i);
			break;
		case NW_DB_PREAL:
			sqlite3_bind_double(st, i, p[k].d);
			break;
		case NW_DB_PNULL:
			sqlite3_bind_null(st, i);
			break;
		}
	}
}

/* Prepare, bind and take the first step (so errors show here, as PostgreSQL's do). */
static int lite_query(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
                      struct nw_db_rows **out)
{
	*out = NULL;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(L(db)->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return lite_fail(db, rc);
	bind_all(st, p, np);
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW && step != SQLITE_DONE) {
		lite_fail(db, step);
		sqlite3_finalize(st);
		return -1;
	}
	struct nw_db_rows *r = nw_calloc(1, sizeof(*r));
	r->db = db;
	r->st = st;
	r->first = 1;
	r->step = step;
	*out = r;
	return 0;
}

static int lite_next(struct nw_db_rows *r)
{
	if (r->first)
		r->first = 0;
	else if (r->step == SQLITE_ROW)
		r->step = sqlite3_step(r->st);
	if (r->step == SQLITE_ROW)
		return 1;
	if (r->step == SQLITE_DONE)
		return 0;
	return lite_fail(r->db, r->step);
}

static const char *lite_text(struct nw_db_rows *r, int col)
{
	return (const char *)sqlite3_column_text(r->st, col);
}

static long long lite_integer(struct nw_db_rows *r, int col)
{
	return sqlite3_column_int64(r->st, col);
}

static double lite_real(struct nw_db_rows *r, int col)
{
	return sqlite3_column_double(r->st, col);
}

static void lite_done(struct nw_db_rows *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->st);
	free(r);
}

static long long lite_changes(struct nw_db *db)
{
	return sqlite3_changes(L(db)->db);
}

static int lite_insert_id(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
                          long long *id)
{
	struct nw_db_rows *r;
	if (lite_query(db, sql, p, np, &r))
		return -1;
	lite_done(r);
	*id = sqlite3_last_insert_rowid(L(db)->db);
	return 0;
}

static int lite_begin(struct nw_db *db, int exclusive)
{
	(void)exclusive; /* IMMEDIATE already holds off every other writer */
	return exec_retry(db, "BEGIN IMMEDIATE");
}

static int lite_commit(struct nw_db *db)
{
	return exec_retry(db, "COMMIT");
}

static void lite_rollback(struct nw_db *db)
{
	sqlite3_exec(L(db)->db, "ROLLBACK", NULL, NULL, NULL);
}

/*
 * Integers from the one row of a query with no parameters (out[0..nout)),
 * retried while another process holds the file; -1 on error. One statement
 * reads one snapshot of the database.
 */
static int query_ints(struct nw_db *db, const char *sql, long long *out, int nout)
{
	struct lite *l = L(db);
	sqlite3_stmt *st = NULL;
	int rc;
	l->retry_until = nw_db_until(db, nw_now());
	for (int attempt = 0; ; attempt++) {
		rc = sqlite3_prepare_v2(l->db, sql, -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW)
				for (int k = 0; k < nout; k++)
					out[k] = sqlite3_column_int64(st, k);
			sqlite3_finalize(st);
			st = NULL;
		}
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 200 || nw_now() > l->retry_until ||
		    nw_db_stopping())
			break;
		pause_ms(5 + rand_r(&l->seed) % 50);
	}
	l->retry_until = 0;
	return rc == SQLITE_ROW ? 0 : lite_fail(db, rc);
}

static int lite_header(struct nw_db *db, enum nw_db_owner *own, long long *version)
{
	long long v[3] = { 0, 0, 0 };
	/* one statement, so a database being created meanwhile is seen before or after, never half */
	if (query_ints(db, "SELECT (SELECT application_id FROM pragma_application_id),"
	                   " (SELECT user_version FROM pragma_user_version),"
	                   " (SELECT count(*) FROM sqlite_master)", v, 3))
		return -1;
	*version = v[1];
	if (v[0] == NW_STORE_APP_ID)
		*own = NW_DB_OURS;
	else if (v[0] == 0 && v[2] == 0 && v[1] == 0)
		*own = NW_DB_EMPTY;
	else
		*own = NW_DB_FOREIGN;
	return 0;
}

static int lite_set_header(struct nw_db *db, int version)
{
	char sql[128];
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d", NW_STORE_APP_ID,
	         version);
	return lite_exec(db, sql);
}

static int lite_ready(struct nw_db *db)
{
	long long dummy;
	if (query_ints(db, "PRAGMA journal_mode = WAL", &dummy, 1))
		return -1;
	return lite_exec(db, "PRAGMA foreign_keys = ON");
}

static void lite_close(struct nw_db *db)
{
	sqlite3_close(L(db)->db);
	free(db->h);
}

static const struct nw_db_driver sqlite_driver = {
	.name = "SQLite",
	.close = lite_close,
	.exec = lite_exec,
	.query = lite_query,
	.next = lite_next,
	.text = lite_text,
	.integer = lite_integer,
	.real = lite_real,
	.done = lite_done,
	.changes = lite_changes,
	.insert_id = lite_insert_id,
	.begin = lite_begin,
	.commit = lite_commit,
	.rollback = lite_rollback,
	.header = lite_header,
	.set_header = lite_set_header,
	.ready = lite_ready,
};

int nw_db_make_parent_dirs(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	if (nw_strlcpy(dir, path, sizeof(dir)) >= sizeof(dir))
		return nw_seterr(err, errlen, "path '%s' is too long", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(dir, 0755) != 0 && errno != EEXIST)
				return nw_seterr(err, errlen, "cannot create directory '%s': %s", dir, strerror(errno));
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* Refuse a file that exists but does not start as an SQLite database. */
static int check_magic(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return nw_seterr(err, errlen, "cannot read history database '%s': %s", path, strerror(errno));
	char magic[16];
	size_t n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (n == 0)
		return 0; /* an empty file: SQLite treats it as a new database */
	if (n < sizeof(magic) || memcmp(magic, "SQLite format 3", 16))
		return nw_seterr(err, errlen, "'%s' is not an ncclwatch history database (not an SQLite file); it was left untouched: give another --db PATH",
		                 path);
	return 0;
}

/* "file:PATH?QUERY" into uri, PATH escaped as a URI wants. */
static void file_uri(const char *path, const char *query, struct nw_strbuf *uri)
{
	nw_strbuf_release(uri);
	nw_strbuf_addstr(uri, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (strchr("%?#", *p) || *p < 0x21 || *p > 0x7e)
			nw_strbuf_addf(uri, "%%%02X", *p);
		else
			nw_strbuf_addch(uri, (char)*p);
	nw_strbuf_addf(uri, "?%s", query);
}

/* The size of path's side file ("-wal"), or -1 when there is none. */
static long long side_size(const char *path, const char *suffix)
{
	char p[PATH_MAX + 16];
	struct stat st;
	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* The file must be there, a regular file, and SQLite's or empty. */
static int check_file(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return nw_seterr(err, errlen, "no history database at '%s': record a run first (bench, check or import) or give --db PATH", path);
	if (!S_ISREG(st.st_mode))
		return nw_seterr(err, errlen, "history database '%s' is not a regular file; give another --db PATH", path);
	return check_magic(path, err, errlen);
}

/* Whether the file's header says WAL mode (its read and write versions, bytes 18 and 19, are 2). */
static int wal_mode(const char *path)
{
	unsigned char h[20];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(h, 1, sizeof(h), f) : 0;
	if (f)
		fclose(f);
	return n == sizeof(h) && h[18] == 2 && h[19] == 2;
}

/*
 * Open for reading without writing or creating anything. A read-only
 * connection to a file in WAL mode makes -wal and -shm files where it can,
 * so such a file without a log is read as it is (immutable: nothing is in
 * a log to miss); one with a log, and a file in rollback mode (whose
 * readers make nothing, and take the lock a writer's transaction holds),
 * are read with mode=ro. Where that fails for want of the log or its index,
 * the file alone is read and db->stale says runs still in the log are not
 * seen.
 */
static int open_reader(struct nw_db *db, const char *path, char *err, size_t errlen)
{
	struct lite *l = L(db);
	struct nw_strbuf uri;
	nw_strbuf_init(&uri);
	int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
	int rc = SQLITE_CANTOPEN;
	if (side_size(path, "-wal") >= 0 || !wal_mode(path)) {
		file_uri(path, "mode=ro", &uri);
		rc = sqlite3_open_v2(uri.buf, &l->db, flags, NULL);
		/* the log's index cannot be made or read here: the open succeeds, the first read fails (a lock is waited for) */
		if (rc == SQLITE_OK) {
			sqlite3_busy_handler(l->db, busy_wait, db);
			int probe = sqlite3_exec(l->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
			if (probe != SQLITE_OK && probe != SQLITE_BUSY && probe != SQLITE_LOCKED) {
				sqlite3_close(l->db);
				l->db = NULL;
				rc = SQLITE_CANTOPEN;
			}
		}
	}
	if (rc != SQLITE_OK) {
		sqlite3_close(l->db);
		l->db = NULL;
		db->stale = side_size(path, "-wal") > 0;
		file_uri(path, "immutable=1", &uri);
		rc = sqlite3_open_v2(uri.buf, &l->db, flags, NULL);
	}
	nw_strbuf_release(&uri);
	if (rc != SQLITE_OK)
		return nw_seterr(err, errlen, "cannot open history database '%s': %s", path,
		                 l->db ? sqlite3_errmsg(l->db) : "out of memory");
	return 0;
}

int nw_db_sqlite_open(const char *path, enum nw_db_lite_mode mode, double lock_wait_s, struct nw_db **out,
                      char *err, size_t errlen)
{
	*out = NULL;
	if (check_file(path, err, errlen))
		return -1;
	struct nw_db *db = nw_calloc(1, sizeof(*db));
	struct lite *l = nw_calloc(1, sizeof(*l));
	db->drv = &sqlite_driver;
	db->h = l;
	db->lock_wait_s = lock_wait_s;
	nw_strlcpy(db->name, path, sizeof(db->name));
	l->seed = (unsigned)getpid() ^ (unsigned)(nw_now() * 1e6);
	if (mode == NW_DB_LITE_READ) {
		db->readonly = 1;
		if (open_reader(db, path, err, errlen)) {
			nw_db_close(db);
			return -1;
		}
	} else if (sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		nw_seterr(err, errlen, "cannot open history database '%s': %s", path,
		          l->db ? sqlite3_errmsg(l->db) : "out of memory");
		nw_db_close(db);
		return -1;
	}
	sqlite3_busy_handler(l->db, busy_wait, db);
	sqlite3_extended_result_codes(l->db, 0);
	*out = db;
	return 0;
}

int nw_db_sqlite_to_memory(struct nw_db *db)
{
	struct lite *l = L(db);
	sqlite3 *mem = NULL;
	if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		sqlite3_close(mem);
		return nw_db_fail(db, NW_DB_OTHER, "out of memory for a copy of the database");
	}
	sqlite3_backup *b = sqlite3_backup_init(mem, "main", l->db, "main");
	int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
	if (b)
		sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		int fail = lite_fail(db, rc == SQLITE_OK ? SQLITE_ERROR : rc);
		sqlite3_close(mem);
		return fail;
	}
	sqlite3_close(l->db);
	l->db = mem;
	sqlite3_busy_handler(l->db, busy_wait, db);
	sqlite3_extended_result_codes(l->db, 0);
	db->readonly = 0; /* the copy, not the file */
	return 0;
}

void nw_db_close(struct nw_db *db)
{
	if (!db)
		return;
	db->drv->close(db);
	free(db);
}

int nw_db_fail(struct nw_db *db, enum nw_db_err cls, const char *msg)
{
	db->err = cls;
	nw_strlcpy(db->msg, msg ? msg : "", sizeof(db->msg));
	/* drop libpq's trailing newline */
	size_t n = strlen(db->msg);
	while (n && (db->msg[n - 1] == '\n' || db->msg[n - 1] == ' '))
		db->msg[--n] = '\0';
	return -1;
}
