/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db_pg: the PostgreSQL driver of the history store (db.h), through libpq
 * (pq_abi.h). Ownership and schema version live in the meta table the
 * first schema step creates; schema changes hold an advisory lock so that
 * nodes starting at once migrate one after the other.
 *
 * Connections and statements go through libpq's asynchronous calls and a
 * poll() of our own, so that no wait outlasts the handle's bound
 * (lock_wait_s) or deadline, and a stop (nw_db_stop, set by a command's
 * SIGINT/SIGTERM handler) ends a wait within 0.1 s. A connection that timed
 * out is dropped (its state is unknown); the next statement fails at once
 * and nw_db_pg_reset connects again. The server is told the same bound for
 * its own lock and statement waits (lock_timeout, statement_timeout).
 *
 * A connection string is read by libpq itself (PQconninfoParse) and refused
 * when it holds a password in any spelling; messages never quote it.
 */
#include "store/db.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pq_abi.h"
#include "store/store.h"
#include "util/util.h"

struct pg {
	PGconn *conn;       /* NULL once dropped (a timeout, a stop): statements fail until a reset */
	long long changes;  /* rows the last statement changed */
	PQconninfoOption *opts;        /* the parsed connection string */
	const char **kw, **val;        /* its given parameters, NULL-terminated, for (re)connecting */
};

struct nw_db_rows {
	struct nw_db *db;
	PGresult *res;
	int row;   /* current row; -1 before the first */
	int nrows;
};

static struct pg *P(struct nw_db *db)
{
	return db->h;
}

/* libpq's keywords, for telling a key=value string from a file path whatever the case of its first word. */
static const char *const pg_keywords[] = {
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode",
	"sslpassword", "connect_timeout", "options", "application_name", "target_session_attrs",
};

int nw_db_is_pg(const char *name)
{
	if (!strncmp(name, "postgresql://", 13) || !strncmp(name, "postgres://", 11))
		return 1;
	/* libpq key=value: "host=/run/pg dbname=nw" */
	const char *p = name;
	int lower = 1;
	while (isalpha((unsigned char)*p) || *p == '_')
		lower &= !isupper((unsigned char)*p++);
	size_t n = (size_t)(p - name);
	while (*p == ' ')
		p++;
	if (!n || *p != '=')
		return 0;
	for (size_t i = 0; !lower && i < NW_ARRAY_LEN(pg_keywords); i++)
		if (strlen(pg_keywords[i]) == n && !strncasecmp(name, pg_keywords[i], n))
			lower = 1;
	return lower;
}

/* Decoded value of hex digit c, or -1. */
static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
 * Whether s names a password in a way libpq may not read as one, but a
 * person meant: "password" in any case, %-encoded or not, followed by '='.
 */
static int spells_password(const char *s)
{
	size_t n = strlen(s);
	char *d = nw_malloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
			d[k++] = (char)tolower(hi * 16 + lo);
			i += 2;
		} else {
			d[k++] = (char)tolower((unsigned char)s[i]);
		}
	}
	d[k] = '\0';
	int found = 0;
	for (const char *p = d; !found && (p = strstr(p, "password")) != NULL; p += 8) {
		const char *e = p + 8;
		while (*e == ' ')
			e++;
		found = *e == '=';
	}
	free(d);
	return found;
}

/* libpq's words with every quoted part (which may be a piece of the connection string) left out. */
static void unquoted(const char *msg, char *out, size_t len)
{
	size_t k = 0;
	int in = 0;
	for (const char *p = msg; *p && k + 4 < len; p++) {
		if (*p == '"') {
			if (!in) {
				memcpy(out + k, "\"...\"", 5);
				k += 5;
			}
			in = !in;
		} else if (!in && *p != '\n') {
			out[k++] = *p;
		}
	}
	out[k] = '\0';
}

#define NO_PASSWORD "put the password in ~/.pgpass (host:port:db:user:password, mode 0600) or PGPASSWORD"

/* conninfo parsed by libpq and checked for secrets; *out for PQconninfoFree. 0, or -1 with err. */
static int pg_parse(const char *conninfo, PQconninfoOption **out, char *err, size_t errlen)
{
	*out = NULL;
	if (spells_password(conninfo))
		return nw_seterr(err, errlen, "--db/NCCLWATCH_DB carries a password, which would show in process lists and "
		                 "history (it is not repeated here): remove it and " NO_PASSWORD);
	if (nw_pq_load(err, errlen))
		return -1;
	char *why = NULL;
	PQconninfoOption *o = nw_pq.conninfo_parse(conninfo, &why);
	if (!o) {
		char msg[NW_ERRLEN];
		unquoted(why ? why : "out of memory", msg, sizeof(msg));
		if (why)
			nw_pq.freemem(why);
		return nw_seterr(err, errlen, "--db/NCCLWATCH_DB is not a connection string libpq can read (%s); it is not "
		                 "repeated here, as it may hold a password: give postgresql://USER@HOST:PORT/DB or "
		                 "key=value pairs, with %%-escapes where needed", msg);
	}
	for (PQconninfoOption *k = o; k->keyword; k++) {
		if (!k->val)
			continue;
		if (k->dispchar && k->dispchar[0] == '*') {
			nw_seterr(err, errlen, "--db/NCCLWATCH_DB carries a password (its '%s'), which would show in process lists "
			          "and history (it is not repeated here): remove it and " NO_PASSWORD, k->keyword);
			nw_pq.conninfo_free(o);
			return -1;
		}
		if (!strcmp(k->keyword, "user") && strchr(k->val, ':')) {
			nw_seterr(err, errlen, "the user name in --db/NCCLWATCH_DB holds ':', which reads as USER:PASSWORD (it is "
			          "not repeated here): give the user alone and " NO_PASSWORD);
			nw_pq.conninfo_free(o);
			return -1;
		}
	}
	*out = o;
	return 0;
}

int nw_db_pg_check(const char *conninfo, char *err, size_t errlen)
{
	PQconninfoOption *o;
	if (pg_parse(conninfo, &o, err, errlen))
		return -1;
	nw_pq.conninfo_free(o);
	return 0;
}

/*
 * The store's SQL (SQLite's spelling) in PostgreSQL's: 64-bit integer and
 * double columns, a serial id, string_agg. The caller frees the result.
 */
static char *dialect(const char *sql)
{
	static const struct { const char *from, *to; } words[] = {
		{ "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY" },
		{ "INTEGER", "BIGINT" },
		{ "REAL", "DOUBLE PRECISION" },
		{ "group_concat(", "string_agg(" },
	};
	size_t cap = strlen(sql) * 2 + 64, n = 0;
	char *out = nw_calloc(1, cap);
	for (const char *p = sql; *p;) {
		size_t k;
		for (k = 0; k < NW_ARRAY_LEN(words); k++) {
			size_t len = strlen(words[k].from);
			if (strncmp(p, words[k].from, len))
				continue; /* first: p[len] is only readable when p holds the whole word */
			int word_start = p == sql || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
			int word_end = words[k].from[len - 1] == '(' || !(isalnum((unsigned char)p[len]) || p[len] == '_');
			if (word_start && word_end)
				break;
		}
		const char *add = k < NW_ARRAY_LEN(words) ? words[k].to : NULL;
		size_t alen = add ? strlen(add) : 1;
		if (n + alen + 1 >= cap) {
			cap = cap * 2 + alen;
			out = nw_realloc(out, cap);
		}
		if (add) {
			memcpy(out + n, add, alen);
			p += strlen(words[k].from);
		} else {
			out[n] = *p++;
		}
		n += alen;
		out[n] = '\0';
	}
	return out;
}

/* Close the connection (its state is unknown after a timeout or a stop). */
static void drop(struct nw_db *db)
{
	if (P(db)->conn)
		nw_pq.finish(P(db)->conn);
	P(db)->conn = NULL;
}

/* Sort a failure (res may be NULL) into a class and record it; returns -1. */
static int pg_fail(struct nw_db *db, PGresult *res)
{
	PGconn *c = P(db)->conn;
	if (!c)
		return nw_db_fail(db, NW_DB_LOST, "not connected: an earlier statement got no answer");
	const char *state = res ? nw_pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? nw_pq.result_error_message(res) : NULL;
	if (!msg || !*msg)
		msg = nw_pq.error_message(c);
	enum nw_db_err cls = NW_DB_OTHER;
	/*
	 * No SQLSTATE: libpq made the error itself, which is the connection
	 * failing, even while PQstatus still says OK (a send that hit a closed
	 * socket: "server closed the connection unexpectedly" before the read
	 * that marks the connection bad). Treated as lost, so the run is
	 * retried or kept in the spool rather than dropped.
	 */
	if (nw_pq.status(c) != CONNECTION_OK || !state || !*state)
		cls = strstr(msg, "authentication failed") || strstr(msg, "no password supplied") ? NW_DB_AUTH : NW_DB_LOST;
	else if (!strcmp(state, "40001") || !strcmp(state, "40P01"))
		cls = NW_DB_SERIAL;
	else if (!strcmp(state, "55P03")) /* lock_timeout */
		cls = NW_DB_BUSY;
	else if (!strcmp(state, "57014")) /* statement_timeout */
		cls = NW_DB_TIMEOUT;
	else if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3))
		cls = NW_DB_LOST;
	else if (!strcmp(state, "53100"))
		cls = NW_DB_FULL;
	else if (!strncmp(state, "28", 2))
		cls = NW_DB_AUTH;
	return nw_db_fail(db, cls, msg);
}

/*
 * Wait until the connection's socket is ready for events, up to until (a
 * nw_now() time); a stop or the time running out drops the connection.
 * 0 when ready; -1 with the class on the handle.
 */
static int pg_wait(struct nw_db *db, short events, double start, double until, const char *doing)
{
	int fd = nw_pq.socket(P(db)->conn);
	char msg[160];
	for (;;) {
		if (nw_db_stopping()) {
			drop(db);
			snprintf(msg, sizeof(msg), "interrupted while %s", doing);
			return nw_db_fail(db, NW_DB_STOPPED, msg);
		}
		double now = nw_now(), left = until - now;
		if (fd < 0) {
			drop(db);
			snprintf(msg, sizeof(msg), "the connection has no socket while %s", doing);
			return nw_db_fail(db, NW_DB_LOST, msg);
		}
		if (left <= 0) {
			drop(db);
			snprintf(msg, sizeof(msg), "no answer from the server within %.3g s while %s", now - start, doing);
			return nw_db_fail(db, NW_DB_TIMEOUT, msg);
		}
		struct pollfd p = { .fd = fd, .events = events };
		int rc = poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR) {
			snprintf(msg, sizeof(msg), "waiting for the server: %s", strerror(errno));
			drop(db);
			return nw_db_fail(db, NW_DB_LOST, msg);
		}
	}
}

/*
 * Send a statement (np < 0: one or more without parameters) and collect
 * its results within the handle's bound. 0 with *out (the last result, the
 * caller's to clear); -1 with the class on the handle.
 */
static int pg_run(struct nw_db *db, const char *sql, int np, const char *const *vals, PGresult **out)
{
	*out = NULL;
	PGconn *c = P(db)->conn;
	if (!c)
		return pg_fail(db, NULL);
	double start = nw_now(), until = nw_db_until(db, start);
	int sent = np < 0 ? nw_pq.send_query(c, sql) : nw_pq.send_query_params(c, sql, np, NULL, vals, NULL, NULL, 0);
	if (!sent)
		return pg_fail(db, NULL);
	int f;
	while ((f = nw_pq.flush(c)) == 1) {
		if (pg_wait(db, POLLIN | POLLOUT, start, until, "sending a statement"))
			return -1;
		if (!nw_pq.consume_input(c))
			return pg_fail(db, NULL);
	}
	if (f < 0)
		return pg_fail(db, NULL);
	PGresult *last = NULL, *bad = NULL, *r;
	for (;;) {
		while (nw_pq.is_busy(c)) {
			if (pg_wait(db, POLLIN, start, until, "waiting for a statement's answer") ||
			    (!nw_pq.consume_input(c) && pg_fail(db, NULL))) {
				nw_pq.clear(last);
				nw_pq.clear(bad);
				return -1;
			}
		}
		if (!(r = nw_pq.get_result(c)))
			break;
		ExecStatusType st = nw_pq.result_status(r);
		PGresult **keep = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? &last : bad ? NULL : &bad;
		if (keep && *keep)
			nw_pq.clear(*keep);
		if (keep)
			*keep = r;
		else
			nw_pq.clear(r);
	}
	if (bad || !last) {
		pg_fail(db, bad);
		nw_pq.clear(bad);
		nw_pq.clear(last);
		return -1;
	}
	*out = last;
	return 0;
}

/*
 * Connect with the handle's parameters within its bound, then tell the
 * server the same bound for its lock and statement waits. 0, or -1 with
 * the class on the handle (the connection dropped).
 */
static int pg_connect(struct nw_db *db)
{
	struct pg *g = P(db);
	double start = nw_now(), until = nw_db_until(db, start);
	drop(db);
	g->conn = nw_pq.connect_start(g->kw, g->val, 0);
	if (!g->conn)
		return nw_db_fail(db, NW_DB_OTHER, "out of memory");
	PostgresPollingStatusType ps = nw_pq.status(g->conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
	while (ps != PGRES_POLLING_OK) {
		if (ps == PGRES_POLLING_FAILED) {
			pg_fail(db, NULL);
			drop(db);
			return -1;
		}
		if (pg_wait(db, ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, start, until, "connecting"))
			return -1;
		ps = nw_pq.connect_poll(g->conn);
	}
	nw_pq.set_nonblocking(g->conn, 1);
	long long ms = (long long)(db->lock_wait_s * 1000) + 1;
	char set[200];
	snprintf(set, sizeof(set), "SET client_min_messages = warning; SET lock_timeout = %lld; SET statement_timeout = %lld",
	         ms, ms);
	PGresult *res;
	if (pg_run(db, set, -1, NULL, &res))
		return -1;
	nw_pq.clear(res);
	return 0;
}

static int pg_exec(struct nw_db *db, const char *sql)
{
	char *q = dialect(sql);
	PGresult *res;
	int rc = pg_run(db, q, -1, NULL, &res);
	free(q);
	if (!rc)
		nw_pq.clear(res);
	return rc;
}

static int pg_query(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
                    struct nw_db_rows **out)
{
	*out = NULL;
	const char *vals[32];
	char nums[32][32];
	if (np > 32)
		return nw_db_fail(db, NW_DB_OTHER, "too many parameters");
	for (int k = 0; k < np; k++) {
		vals[k] = nums[k];
		if (p[k].type == NW_DB_PTEXT)
			vals[k] = p[k].s ? p[k].s : "";
		else if (p[k].type == NW_DB_PINT)
			snprintf(nums[k], sizeof(nums[k]), "%lld", p[k].i);
		else if (p[k].type == NW_DB_PREAL)
			snprintf(nums[k], sizeof(nums[k]), "%.17g", p[k].d);
		else
			vals[k] = NULL;
	}
	char *q = dialect(sql);
	PGresult *res;
	int rc = pg_run(db, q, np, vals, &res);
	free(q);
	if (rc)
		return -1;
	const char *ct = nw_pq.cmd_tuples(res);
	P(db)->changes = ct && *ct ? atoll(ct) : 0;
	struct nw_db_rows *r = nw_calloc(1, sizeof(*r));
	r->db = db;
	r->res = res;
	r->row = -1;
	r->nrows = nw_pq.ntuples(res);
	*out = r;
	return 0;
}

static int pg_next(struct nw_db_rows *r)
{
	if (r->row + 1 >= r->nrows)
		return 0;
	r->row++;
	return 1;
}

static const char *pg_text(struct nw_db_rows *r, int col)
{
	if (nw_pq.getisnull(r->res, r->row, col))
		return NULL;
	return nw_pq.getvalue(r->res, r->row, col);
}

static long long pg_integer(struct nw_db_rows *r, int col)
{
	const char *v = pg_text(r, col);
	return v ? strtoll(v, NULL, 10) : 0;
}

static double pg_real(struct nw_db_rows *r, int col)
{
	const char *v = pg_text(r, col);
	return v ? strtod(v, NULL) : 0;
}

static void pg_done(struct nw_db_rows *r)
{
	if (!r)
		return;
	nw_pq.clear(r->res);
	free(r);
}

static long long pg_changes(struct nw_db *db)
{
	return P(db)->changes;
}

static int pg_insert_id(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
                        long long *id)
{
	size_t n = strlen(sql) + 16;
	char *q = nw_calloc(1, n);
	snprintf(q, n, "%s RETURNING id", sql);
	struct nw_db_rows *r;
	int rc = pg_query(db, q, p, np, &r);
	free(q);
	if (rc)
		return -1;
	rc = pg_next(r) == 1 ? 0 : nw_db_fail(db, NW_DB_OTHER, "the insert returned no id");
	if (!rc)
		*id = pg_integer(r, 0);
	pg_done(r);
	return rc;
}

static int pg_begin(struct nw_db *db, int exclusive)
{
	char sql[96];
	/* the schema's writers queue on one advisory lock, keyed by our application id */
	snprintf(sql, sizeof(sql), exclusive ? "BEGIN; SELECT pg_advisory_xact_lock(%d)" : "BEGIN", NW_STORE_APP_ID);
	return pg_exec(db, sql);
}

static int pg_commit(struct nw_db *db)
{
	return pg_exec(db, "COMMIT");
}

/* Rolled back where the connection still stands; the failure being reported stays on the handle. */
static void pg_rollback(struct nw_db *db)
{
	if (!P(db)->conn)
		return;
	enum nw_db_err cls = db->err;
	char msg[sizeof(db->msg)];
	memcpy(msg, db->msg, sizeof(msg));
	PGresult *res;
	if (pg_run(db, "ROLLBACK", -1, NULL, &res) == 0)
		nw_pq.clear(res);
	db->err = cls;
	memcpy(db->msg, msg, sizeof(msg));
}

/* One integer from a query with text parameters; -1 on error. */
static int pg_int(struct nw_db *db, const char *sql, const char *arg, long long *out)
{
	struct nw_db_param p = NW_DB_TEXT(arg);
	struct nw_db_rows *r;
	if (pg_query(db, sql, &p, arg ? 1 : 0, &r))
		return -1;
	*out = pg_next(r) == 1 ? pg_integer(r, 0) : 0;
	pg_done(r);
	return 0;
}

/*
 * Ours when the schema has our meta table with our application row; empty
 * when the schema has no table at all; anyone else's otherwise.
 */
static int pg_header(struct nw_db *db, enum nw_db_owner *own, long long *version)
{
	long long ntables, metacols, ours = 0;
	*version = 0;
	if (pg_int(db, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", NULL, &ntables) ||
	    pg_int(db, "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()"
	               " AND table_name = 'meta' AND column_name IN ('key', 'value')", NULL, &metacols))
		return -1;
	if (metacols == 2 &&
	    (pg_int(db, "SELECT count(*) FROM meta WHERE key = 'application' AND value = $1", "ncclwatch history", &ours) ||
	     pg_int(db, "SELECT COALESCE(MAX(CAST(value AS BIGINT)), 0) FROM meta WHERE key = $1", "schema_version", version)))
		return -1;
	*own = ours ? NW_DB_OURS : ntables == 0 ? NW_DB_EMPTY : NW_DB_FOREIGN;
	return 0;
}

static int pg_set_header(struct nw_db *db, int version)
{
	struct nw_db_param p = NW_DB_INT(version);
	struct nw_db_rows *r;
	if (pg_query(db, "INSERT INTO meta(key, value) VALUES('schema_version', CAST($1 AS TEXT))"
	                 " ON CONFLICT(key) DO UPDATE SET value = excluded.value", &p, 1, &r))
		return -1;
	pg_done(r);
	return 0;
}

static int pg_ready(struct nw_db *db)
{
	(void)db;
	return 0;
}

static void pg_close(struct nw_db *db)
{
	struct pg *g = P(db);
	drop(db);
	if (g->opts)
		nw_pq.conninfo_free(g->opts);
	free(g->kw);
	free(g->val);
	free(g);
}

static const struct nw_db_driver pg_driver = {
	.name = "PostgreSQL",
	.close = pg_close,
	.exec = pg_exec,
	.query = pg_query,
	.next = pg_next,
	.text = pg_text,
	.integer = pg_integer,
	.real = pg_real,
	.done = pg_done,
	.changes = pg_changes,
	.insert_id = pg_insert_id,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.header = pg_header,
	.set_header = pg_set_header,
	.ready = pg_ready,
};

int nw_db_pg_reset(struct nw_db *db)
{
	return pg_connect(db);
}

int nw_db_pg_open(const char *conninfo, double lock_wait_s, double deadline, struct nw_db **out,
                  enum nw_db_err *cls, char *err, size_t errlen)
{
	*out = NULL;
	*cls = NW_DB_OTHER;
	PQconninfoOption *opts;
	if (pg_parse(conninfo, &opts, err, errlen))
		return -1;
	struct nw_db *db = nw_calloc(1, sizeof(*db));
	struct pg *g = nw_calloc(1, sizeof(*g));
	db->drv = &pg_driver;
	db->h = g;
	db->lock_wait_s = lock_wait_s;
	db->deadline = deadline;
	nw_strlcpy(db->name, conninfo, sizeof(db->name));
	g->opts = opts;
	size_t n = 0;
	for (PQconninfoOption *k = opts; k->keyword; k++)
		n++;
	g->kw = nw_calloc(n + 1, sizeof(*g->kw));
	g->val = nw_calloc(n + 1, sizeof(*g->val));
	n = 0;
	for (PQconninfoOption *k = opts; k->keyword; k++)
		if (k->val) {
			g->kw[n] = k->keyword;
			g->val[n++] = k->val;
		}
	if (pg_connect(db)) {
		*cls = db->err;
		nw_seterr(err, errlen, "%s", db->msg);
		nw_db_close(db);
		return -1;
	}
	*out = db;
	return 0;
}
