#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "util/util.h"

struct nw_store {
	sqlite3 *db;
	double busy_since;      /* busy_wait's clock */
	double lock_wait_s;     /* the longest wait for another process's lock (NCCLWATCH_LOCK_TIMEOUT) */
	double retry_until;     /* exec_retry's and query_ints' deadline (0: none running) */
	unsigned seed;          /* for pauses that differ between processes */
	int told;               /* the wait notice was given for this wait */
	char path[PATH_MAX];
};

/* Who hears that a command is waiting for a lock (nw_store_on_wait); NULL: nobody. */
static void (*wait_notice)(const char *path, double bound_s);

/*
 * The schema, as a table of forward steps: step k turns a version k-1
 * database into version k. A new version appends a step; existing steps are
 * never edited, since databases in the field were made by them.
 */
struct migration {
	int version;
	const char *sql;
};

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
	  "CREATE INDEX runs_time ON runs(time);" },
	{ 2,
	  "ALTER TABLE runs ADD COLUMN link_gbs REAL NOT NULL DEFAULT 0;"
	  "CREATE TABLE baselines("
	  " name TEXT PRIMARY KEY,"
	  " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	  " set_time TEXT NOT NULL);"
	  "CREATE INDEX runs_host ON runs(host);" },
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

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path, char *err, size_t errlen)
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

static int db_err(struct nw_store *s, const char *what, char *err, size_t errlen)
{
	int code = sqlite3_errcode(s->db);
	if (code == SQLITE_FULL || sqlite3_system_errno(s->db) == ENOSPC)
		return nw_seterr(err, errlen, "history database '%s': %s: disk full; free space on its file system or "
		                 "give another --db PATH", s->path, what);
	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		return nw_seterr(err, errlen, "history database '%s': %s: another process held it locked for %g s; "
		                 "try again, or wait longer with NCCLWATCH_LOCK_TIMEOUT=SECONDS", s->path, what,
		                 s->lock_wait_s);
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		return nw_seterr(err, errlen, "history database '%s' is damaged (%s: %s); move it aside, ncclwatch will start a new one",
		                 s->path, what, sqlite3_errmsg(s->db));
	return nw_seterr(err, errlen, "history database '%s': %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

#define LOCK_WAIT_S 15.0
#define NOTICE_AFTER_S 1.5 /* a wait this long is said (nw_store_on_wait) */

void nw_store_on_wait(void (*fn)(const char *path, double bound_s))
{
	wait_notice = fn;
}

/* Has the wait for a lock run out (this statement's, or the retries' in all)? */
static int waited_out(const struct nw_store *s, double now)
{
	return now - s->busy_since > s->lock_wait_s || (s->retry_until > 0 && now > s->retry_until);
}

/*
 * Busy handler: short random pauses (1-8 ms) for up to s->lock_wait_s.
 * SQLite's own timeout handler backs off to 100 ms sleeps, which with a
 * dozen writers leaves the lock idle most of the time; transactions here
 * last a few milliseconds, so waiters retry often instead.
 */
static int busy_wait(void *arg, int count)
{
	struct nw_store *s = arg;
	double now = nw_now();
	if (count == 0)
		s->busy_since = now;
	else if (waited_out(s, now))
		return 0;
	double since = s->retry_until > 0 ? s->retry_until - s->lock_wait_s : s->busy_since;
	if (!s->told && wait_notice && now - since > NOTICE_AFTER_S) {
		s->told = 1;
		wait_notice(s->path, s->lock_wait_s);
	}
	pause_ms(1 + rand_r(&s->seed) % (count < 8 ? count + 1 : 8));
	return 1;
}

/*
 * Run one statement that may meet SQLITE_BUSY (another process holds the
 * write lock past the busy timeout, or a WAL recovery is under way):
 * retried for up to s->lock_wait_s in all.
 */
static int exec_retry(struct nw_store *s, const char *sql)
{
	s->retry_until = nw_now() + s->lock_wait_s;
	for (int attempt = 0; ; attempt++) {
		int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 200 || nw_now() > s->retry_until) {
			s->retry_until = 0;
			return rc;
		}
		pause_ms(5 + rand_r(&s->seed) % 50);
	}
}

/*
 * Integers from the one row of a query with no parameters (out[0..nout));
 * -1 on error. One statement reads one snapshot of the database.
 */
static int query_ints(struct nw_store *s, const char *sql, long long *out, int nout)
{
	sqlite3_stmt *st = NULL;
	int rc;
	s->retry_until = nw_now() + s->lock_wait_s;
	for (int attempt = 0; ; attempt++) {
		rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW)
				for (int k = 0; k < nout; k++)
					out[k] = sqlite3_column_int64(st, k);
			sqlite3_finalize(st);
			st = NULL;
		}
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 200 || nw_now() > s->retry_until)
			break;
		pause_ms(5 + rand_r(&s->seed) % 50);
	}
	s->retry_until = 0;
	return rc == SQLITE_ROW ? 0 : -1;
}

/* Is the database ours, new, or something else? Reads only. */
enum owner { OWN_OURS, OWN_EMPTY, OWN_FOREIGN, OWN_ERROR };

static enum owner check_owner(struct nw_store *s, long long *version)
{
	long long v[3] = { 0, 0, 0 };
	/* one statement, so a database being created meanwhile is seen before or after, never half */
	if (query_ints(s, "SELECT (SELECT application_id FROM pragma_application_id),"
	                  " (SELECT user_version FROM pragma_user_version),"
	                  " (SELECT count(*) FROM sqlite_master)", v, 3))
		return OWN_ERROR;
	long long appid = v[0], ntables = v[2];
	*version = v[1];
	if (appid == NW_STORE_APP_ID)
		return OWN_OURS;
	if (appid == 0 && ntables == 0 && *version == 0)
		return OWN_EMPTY;
	return OWN_FOREIGN;
}

static int foreign_err(struct nw_store *s, char *err, size_t errlen)
{
	return nw_seterr(err, errlen, "'%s' is not an ncclwatch history database (another application's SQLite file); it was left untouched: give another --db PATH",
	                 s->path);
}

/*
 * Bring a new or older database to NW_STORE_SCHEMA_VERSION in one write
 * transaction, re-checking inside it since another process may have done
 * the work meanwhile.
 */
/*
 * Whose file this is and which schema it has: -1 with err when it cannot
 * be read, is not ours, or is newer than this code; 0 otherwise.
 */
static int check_usable(struct nw_store *s, const char *path, const char *reading, enum owner *own,
                        long long *version, char *err, size_t errlen)
{
	*own = check_owner(s, version);
	if (*own == OWN_ERROR)
		return db_err(s, reading, err, errlen);
	if (*own == OWN_FOREIGN)
		return foreign_err(s, err, errlen);
	if (*version > NW_STORE_SCHEMA_VERSION)
		return nw_seterr(err, errlen, "history database '%s' has schema version %lld, newer than this ncclwatch knows (%d): use a newer ncclwatch",
		                 path, *version, NW_STORE_SCHEMA_VERSION);
	return 0;
}

static int migrate(struct nw_store *s, char *err, size_t errlen)
{
	if (exec_retry(s, "BEGIN IMMEDIATE") != SQLITE_OK)
		return db_err(s, "cannot lock for the schema update", err, errlen);
	long long version;
	enum owner own;
	if (check_usable(s, s->path, "reading the schema version", &own, &version, err, errlen))
		goto fail;
	for (size_t k = 0; k < NW_ARRAY_LEN(migrations); k++) {
		if (migrations[k].version <= version)
			continue;
		if (sqlite3_exec(s->db, migrations[k].sql, NULL, NULL, NULL) != SQLITE_OK) {
			char what[64];
			snprintf(what, sizeof(what), "schema step to version %d", migrations[k].version);
			db_err(s, what, err, errlen);
			goto fail;
		}
	}
	char sql[128];
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d",
	         NW_STORE_APP_ID, NW_STORE_SCHEMA_VERSION);
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		db_err(s, "setting the schema version", err, errlen);
		goto fail;
	}
	if (exec_retry(s, "COMMIT") != SQLITE_OK) {
		db_err(s, "committing the schema update", err, errlen);
		goto fail;
	}
	return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
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

/* "file:PATH?immutable=1", PATH escaped as a URI wants. */
static void immutable_uri(const char *path, char *out, size_t outlen)
{
	size_t n = (size_t)snprintf(out, outlen, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p && n + 4 < outlen; p++)
		n += (size_t)snprintf(out + n, outlen - n, strchr("%?#", *p) || *p < 0x21 || *p > 0x7e ? "%%%02X" : "%c", *p);
	snprintf(out + n, outlen - n, "?immutable=1");
}

/*
 * Opens path's database as SQLite (read-only: flags lack READWRITE), sets
 * WAL (not when read-only: that is a write) and brings the schema up to
 * date. 0 with *out; -1 with err (the handle closed).
 */
static int open_db(const char *path, int flags, double lock_wait_s, struct nw_store **out, char *err,
                   size_t errlen)
{
	struct nw_store *s = nw_calloc(1, sizeof(*s));
	nw_strlcpy(s->path, path, sizeof(s->path));
	s->lock_wait_s = lock_wait_s;
	*out = NULL;
	char uri[PATH_MAX * 3 + 32];
	if (flags & SQLITE_OPEN_READONLY) {
		/* WAL needs side files it cannot create here; nobody can change the file through this directory */
		immutable_uri(path, uri, sizeof(uri));
		path = uri;
		flags |= SQLITE_OPEN_URI;
	}
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		nw_seterr(err, errlen, "cannot open history database '%s': %s", path,
		          s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto fail;
	}
	s->seed = (unsigned)getpid() ^ (unsigned)(nw_now() * 1e6);
	sqlite3_busy_handler(s->db, busy_wait, s);
	sqlite3_extended_result_codes(s->db, 0);

	long long version;
	enum owner own;
	if (check_usable(s, path, "reading its header", &own, &version, err, errlen))
		goto fail;
	if (flags & SQLITE_OPEN_READONLY) {
		if (own == OWN_EMPTY || version < NW_STORE_SCHEMA_VERSION) {
			nw_seterr(err, errlen, "history database '%s' needs a schema update that cannot be written here "
			          "(read-only); record once where it is writable", path);
			goto fail;
		}
		*out = s;
		return 0;
	}
	/* Ours or empty from here on: safe to set the journal mode. */
	long long dummy;
	if (query_ints(s, "PRAGMA journal_mode = WAL", &dummy, 1) ||
	    sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK) {
		db_err(s, "setting WAL mode", err, errlen);
		goto fail;
	}
	if (own == OWN_EMPTY || version < NW_STORE_SCHEMA_VERSION) {
		if (migrate(s, err, errlen))
			goto fail;
	}
	*out = s;
	return 0;
fail:
	nw_store_close(s);
	return -1;
}

/* Is path's directory (or the file) one this process cannot write? Then a reader opens read-only. */
static int read_only_place(const char *path)
{
	char dir[PATH_MAX];
	nw_path_dir(path, dir, sizeof(dir));
	return access(dir, W_OK) != 0 || access(path, W_OK) != 0;
}

int nw_store_open(const char *path, enum nw_store_mode mode, struct nw_store **out, char *err,
                  size_t errlen)
{
	*out = NULL;
	struct stat st;
	double lock_wait = LOCK_WAIT_S;
	const char *lw = getenv("NCCLWATCH_LOCK_TIMEOUT");
	if (lw && *lw && nw_parse_duration(lw, &lock_wait, err, errlen))
		return nw_seterr(err, errlen, "NCCLWATCH_LOCK_TIMEOUT='%s' is not a duration (seconds, as in 15 or 2m)", lw);
	int exists = stat(path, &st) == 0;
	if (exists && !S_ISREG(st.st_mode))
		return nw_seterr(err, errlen, "history database '%s' is not a regular file; give another --db PATH", path);
	if (!exists && mode == NW_STORE_READ)
		return nw_seterr(err, errlen, "no history database at '%s': record a run first (bench, check or import) or give --db PATH", path);
	if (exists && check_magic(path, err, errlen))
		return -1;
	if (!exists && make_parent_dirs(path, err, errlen))
		return -1;
	int created = 0;
	if (!exists) {
		/* a new history is the user's alone (SQLite gives its side files the same mode) */
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return nw_seterr(err, errlen, "cannot create history database '%s': %s", path, strerror(errno));
		created = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	int flags = SQLITE_OPEN_READWRITE | (mode == NW_STORE_WRITE ? SQLITE_OPEN_CREATE : 0);
	if (mode == NW_STORE_READ && read_only_place(path))
		flags = SQLITE_OPEN_READONLY;
	if (open_db(path, flags, lock_wait, out, err, errlen) == 0)
		return 0;
	/* a failed first open leaves no empty file behind for the next run to trip on */
	if (created && stat(path, &st) == 0 && st.st_size == 0)
		unlink(path);
	return -1;
}

void nw_store_close(struct nw_store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	free(s);
}

static void bind_text(sqlite3_stmt *st, int k, const char *v)
{
	sqlite3_bind_text(st, k, v ? v : "", -1, SQLITE_TRANSIENT);
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

static int insert_rows(struct nw_store *s, long long id, const struct nw_run *run, char *err,
                       size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
	                       "INSERT INTO results(run_id, seq, op, dtype, redop, root, size_bytes, count,"
	                       " nranks, inplace, time_us, algbw_gbs, busbw_gbs, wrong, ranks)"
	                       " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "preparing the results insert", err, errlen);
	int rc = 0;
	for (size_t i = 0; i < run->nrows; i++) {
		const struct nw_row *r = &run->rows[i];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		bind_text(st, 3, r->op);
		bind_text(st, 4, r->dtype);
		bind_text(st, 5, r->redop);
		sqlite3_bind_int(st, 6, r->root);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)r->size_bytes);
		sqlite3_bind_int64(st, 8, (sqlite3_int64)r->count);
		sqlite3_bind_int(st, 9, r->nranks);
		sqlite3_bind_int(st, 10, r->inplace);
		sqlite3_bind_double(st, 11, r->time_us);
		sqlite3_bind_double(st, 12, r->algbw_gbs);
		sqlite3_bind_double(st, 13, r->busbw_gbs);
		if (r->wrong >= 0)
			sqlite3_bind_int64(st, 14, r->wrong);
		else
			sqlite3_bind_null(st, 14);
		char *ranks = NULL;
		if (r->nrank_times) {
			json_t *a = json_array();
			for (int k = 0; k < r->nrank_times; k++) {
				const struct nw_rank_time *t = &r->rank_times[k];
				json_array_append_new(a, json_pack("{s:i,s:s,s:i,s:f}", "rank", t->rank, "host",
				                                   t->host, "gpu", t->gpu, "time_us", t->time_us));
			}
			ranks = json_dumps(a, JSON_COMPACT);
			json_decref(a);
		}
		if (ranks)
			sqlite3_bind_text(st, 15, ranks, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(st, 15);
		int step = sqlite3_step(st);
		free(ranks);
		if (step != SQLITE_DONE) {
			rc = db_err(s, "inserting a result row", err, errlen);
			break;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* The whole insert, inside a transaction the caller holds. */
static int insert_run(struct nw_store *s, const struct nw_run *run, long long *id_out, char *err,
                      size_t errlen)
{
	const struct nw_run_header *h = &run->h;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
	                       "INSERT INTO runs(time, host, source, backend, tool_version, nccl_version,"
	                       " nccl_path, driver, cuda_driver, gpus, cmdline, input, nranks, nhosts, ops,"
	                       " peak_busbw, nrows, extra, link_gbs)"
	                       " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "preparing the run insert", err, errlen);
	char ops[1024];
	run_ops(run, ops, sizeof(ops));
	double peak = 0;
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].busbw_gbs > peak)
			peak = run->rows[i].busbw_gbs;
	char now[32];
	const char *t = h->time;
	if (!t[0]) {
		nw_utc_iso(now, sizeof(now));
		t = now;
	}
	bind_text(st, 1, t);
	bind_text(st, 2, h->host);
	bind_text(st, 3, h->source);
	bind_text(st, 4, h->backend);
	bind_text(st, 5, h->tool_version);
	bind_text(st, 6, h->nccl_version);
	bind_text(st, 7, h->nccl_path);
	bind_text(st, 8, h->driver);
	bind_text(st, 9, h->cuda_driver);
	bind_text(st, 10, h->gpus);
	bind_text(st, 11, h->cmdline);
	bind_text(st, 12, h->input);
	sqlite3_bind_int(st, 13, h->nranks);
	sqlite3_bind_int(st, 14, h->nhosts);
	bind_text(st, 15, ops);
	sqlite3_bind_double(st, 16, peak);
	sqlite3_bind_int64(st, 17, (sqlite3_int64)run->nrows);
	char *extra = h->extra ? json_dumps(h->extra, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (extra)
		sqlite3_bind_text(st, 18, extra, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 18);
	sqlite3_bind_double(st, 19, h->link_gbs);
	int step = sqlite3_step(st);
	free(extra);
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return db_err(s, "inserting the run", err, errlen);
	long long id = sqlite3_last_insert_rowid(s->db);
	if (insert_rows(s, id, run, err, errlen))
		return -1;
	*id_out = id;
	return 0;
}

int nw_store_insert(struct nw_store *s, struct nw_run *run, long long *id_out, char *err,
                    size_t errlen)
{
	long long id = 0;
	if (exec_retry(s, "BEGIN IMMEDIATE") != SQLITE_OK)
		return db_err(s, "cannot lock the database to record", err, errlen);
	if (insert_run(s, run, &id, err, errlen)) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (exec_retry(s, "COMMIT") != SQLITE_OK) {
		db_err(s, "committing the run", err, errlen);
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
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
	if (nw_store_open(path, NW_STORE_WRITE, &s, err, errlen))
		return -1;
	int rc = nw_store_insert(s, run, id_out, err, errlen);
	nw_store_close(s);
	return rc;
}

static void col_text(sqlite3_stmt *st, int k, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, k);
	nw_strlcpy(dst, v ? (const char *)v : "", len);
}

/* The run's header columns (runs row id) into run->h; -1 with err when there is no such run. */
static int load_header(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT time, host, source, backend, tool_version, nccl_version, nccl_path,"
	                       " driver, cuda_driver, gpus, cmdline, input, nranks, nhosts, extra, link_gbs"
	                       " FROM runs WHERE id = ?",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "reading a run", err, errlen);
	sqlite3_bind_int64(st, 1, id);
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW) {
		if (step == SQLITE_DONE)
			nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		else
			db_err(s, "reading a run", err, errlen);
		sqlite3_finalize(st);
		return -1;
	}
	struct nw_run_header *h = &run->h;
	col_text(st, 0, h->time, sizeof(h->time));
	col_text(st, 1, h->host, sizeof(h->host));
	col_text(st, 2, h->source, sizeof(h->source));
	col_text(st, 3, h->backend, sizeof(h->backend));
	col_text(st, 4, h->tool_version, sizeof(h->tool_version));
	col_text(st, 5, h->nccl_version, sizeof(h->nccl_version));
	col_text(st, 6, h->nccl_path, sizeof(h->nccl_path));
	col_text(st, 7, h->driver, sizeof(h->driver));
	col_text(st, 8, h->cuda_driver, sizeof(h->cuda_driver));
	col_text(st, 9, h->gpus, sizeof(h->gpus));
	col_text(st, 10, h->cmdline, sizeof(h->cmdline));
	col_text(st, 11, h->input, sizeof(h->input));
	h->nranks = sqlite3_column_int(st, 12);
	h->nhosts = sqlite3_column_int(st, 13);
	const unsigned char *extra = sqlite3_column_text(st, 14);
	if (extra) {
		json_t *x = json_loads((const char *)extra, 0, NULL);
		if (json_is_object(x))
			h->extra = x;
		else if (x)
			json_decref(x);
	}
	h->link_gbs = sqlite3_column_double(st, 15);
	sqlite3_finalize(st);
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

/* One results row at the statement's cursor into r (zeroed first). */
static void load_row(sqlite3_stmt *st, struct nw_row *r)
{
	memset(r, 0, sizeof(*r));
	col_text(st, 0, r->op, sizeof(r->op));
	col_text(st, 1, r->dtype, sizeof(r->dtype));
	col_text(st, 2, r->redop, sizeof(r->redop));
	r->root = sqlite3_column_int(st, 3);
	sqlite3_int64 sz = sqlite3_column_int64(st, 4), cnt = sqlite3_column_int64(st, 5);
	r->size_bytes = sz > 0 ? (uint64_t)sz : 0;
	r->count = cnt > 0 ? (uint64_t)cnt : 0;
	r->nranks = sqlite3_column_int(st, 6);
	r->inplace = sqlite3_column_int(st, 7) != 0;
	r->time_us = sqlite3_column_double(st, 8);
	r->algbw_gbs = sqlite3_column_double(st, 9);
	r->busbw_gbs = sqlite3_column_double(st, 10);
	r->wrong = sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 11);
	load_rank_times(sqlite3_column_text(st, 12), r);
}

/* Every results row of run id, in recorded order, appended to run. -1 with err. */
static int load_rows(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT op, dtype, redop, root, size_bytes, count, nranks, inplace, time_us,"
	                       " algbw_gbs, busbw_gbs, wrong, ranks FROM results WHERE run_id = ? ORDER BY seq",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "reading results", err, errlen);
	sqlite3_bind_int64(st, 1, id);
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct nw_row r;
		load_row(st, &r);
		nw_run_add(run, &r);
	}
	int rc = 0;
	if (step != SQLITE_DONE)
		rc = db_err(s, "reading results", err, errlen);
	sqlite3_finalize(st);
	return rc;
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
	const char *sql =
		"SELECT id, time, host, source, ops, nccl_version, peak_busbw, nrows,"
		" (SELECT group_concat(name, ',') FROM baselines b WHERE b.run_id = runs.id)"
		" FROM runs WHERE (?1 = '' OR host = ?1)"
		" AND (?2 = '' OR EXISTS (SELECT 1 FROM results r WHERE r.run_id = runs.id AND r.op = ?2))"
		" AND (?3 = '' OR time >= ?3) AND (?4 = '' OR time <= ?4)"
		" ORDER BY id DESC LIMIT ?5";
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "listing runs", err, errlen);
	bind_text(st, 1, f && f->host ? f->host : "");
	bind_text(st, 2, f && f->op ? f->op : "");
	bind_text(st, 3, since);
	bind_text(st, 4, until);
	sqlite3_bind_int64(st, 5, f && f->limit > 0 ? f->limit : -1);
	size_t cap = 0;
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		struct nw_store_entry *e = &(*out)[(*n)++];
		memset(e, 0, sizeof(*e));
		e->id = sqlite3_column_int64(st, 0);
		col_text(st, 1, e->time, sizeof(e->time));
		col_text(st, 2, e->host, sizeof(e->host));
		col_text(st, 3, e->source, sizeof(e->source));
		col_text(st, 4, e->ops, sizeof(e->ops));
		col_text(st, 5, e->nccl_version, sizeof(e->nccl_version));
		e->peak_busbw = sqlite3_column_double(st, 6);
		e->nrows = sqlite3_column_int(st, 7);
		col_text(st, 8, e->baselines, sizeof(e->baselines));
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE) {
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

/* Run one statement with an integer or text parameter; returns rows changed or -1. */
static int change(struct nw_store *s, const char *sql, const char *text, long long num,
                  const char *what, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (exec_retry(s, "BEGIN IMMEDIATE") != SQLITE_OK)
		return db_err(s, what, err, errlen);
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	int k = 1;
	if (text)
		bind_text(st, k++, text);
	if (num)
		sqlite3_bind_int64(st, k, num);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	int changed = sqlite3_changes(s->db);
	if (exec_retry(s, "COMMIT") != SQLITE_OK)
		goto fail;
	return changed;
fail:
	db_err(s, what, err, errlen);
	sqlite3_finalize(st);
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int nw_store_delete(struct nw_store *s, long long id, char *err, size_t errlen)
{
	int n = change(s, "DELETE FROM runs WHERE id = ?", NULL, id, "deleting a run", err, errlen);
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
	sqlite3_stmt *st = NULL;
	if (exec_retry(s, "BEGIN IMMEDIATE") != SQLITE_OK)
		return db_err(s, "setting a baseline", err, errlen);
	long long exists = 0;
	if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		goto dberr;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto dberr;
	exists = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (!exists) {
		nw_seterr(err, errlen, "no run %lld in '%s': 'ncclwatch history' lists the runs", id, s->path);
		goto fail;
	}
	if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO baselines(name, run_id, set_time) VALUES(?,?,?)",
	                       -1, &st, NULL) != SQLITE_OK)
		goto dberr;
	bind_text(st, 1, name);
	sqlite3_bind_int64(st, 2, id);
	bind_text(st, 3, now);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto dberr;
	sqlite3_finalize(st);
	st = NULL;
	if (exec_retry(s, "COMMIT") != SQLITE_OK)
		goto dberr;
	return 0;
dberr:
	db_err(s, "setting a baseline", err, errlen);
fail:
	sqlite3_finalize(st);
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int nw_store_baseline_delete(struct nw_store *s, const char *name, char *err, size_t errlen)
{
	int n = change(s, "DELETE FROM baselines WHERE name = ?", name, 0, "deleting a baseline", err, errlen);
	if (n < 0)
		return -1;
	if (n == 0)
		return nw_seterr(err, errlen, "no baseline '%s': 'ncclwatch history baseline' lists them", name);
	return 0;
}

int nw_store_baseline_get(struct nw_store *s, const char *name, long long *id, char *err,
                          size_t errlen)
{
	sqlite3_stmt *st = NULL;
	*id = 0;
	if (sqlite3_prepare_v2(s->db, "SELECT run_id FROM baselines WHERE name = ?", -1, &st, NULL) != SQLITE_OK)
		return db_err(s, "reading baselines", err, errlen);
	bind_text(st, 1, name);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return db_err(s, "reading baselines", err, errlen);
	return step == SQLITE_ROW ? 1 : 0;
}

int nw_store_baseline_list(struct nw_store *s, struct nw_store_baseline **out, size_t *n,
                           char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT name, run_id, set_time FROM baselines ORDER BY name", -1, &st,
	                       NULL) != SQLITE_OK)
		return db_err(s, "reading baselines", err, errlen);
	size_t cap = 0;
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = nw_realloc(*out, cap * sizeof(**out));
		}
		struct nw_store_baseline *b = &(*out)[(*n)++];
		col_text(st, 0, b->name, sizeof(b->name));
		b->run_id = sqlite3_column_int64(st, 1);
		col_text(st, 2, b->set_time, sizeof(b->set_time));
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return db_err(s, "reading baselines", err, errlen);
	}
	return 0;
}
