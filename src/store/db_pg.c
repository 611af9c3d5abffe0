/*
 * db_pg: the PostgreSQL driver of the history store (db.h), through libpq
 * (pq_abi.h). Ownership and schema version live in the meta table the
 * first schema step creates; schema changes hold an advisory lock so that
 * nodes starting at once migrate one after the other.
 */
#include "store/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pq_abi.h"
#include "store/store.h"
#include "util/util.h"

struct pg {
	PGconn *conn;
	long long changes; /* rows the last statement changed */
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

int nw_db_is_pg(const char *name)
{
	if (!strncmp(name, "postgresql://", 13) || !strncmp(name, "postgres://", 11))
		return 1;
	/* libpq key=value: "host=/run/pg dbname=nw" */
	const char *p = name;
	while (islower((unsigned char)*p) || *p == '_')
		p++;
	while (*p == ' ')
		p++;
	return p > name && *p == '=';
}

/* Does the connection string carry a password (URI user:pass@, or a password key)? */
static int has_password(const char *s)
{
	if (!strncmp(s, "postgresql://", 13) || !strncmp(s, "postgres://", 11)) {
		const char *auth = strstr(s, "://") + 3;
		size_t n = strcspn(auth, "/?");
		const char *at = memchr(auth, '@', n);
		if (at && memchr(auth, ':', (size_t)(at - auth)))
			return 1;
		const char *q = strchr(auth, '?');
		for (; q; q = strchr(q + 1, '&'))
			if (!strncmp(q + 1, "password=", 9))
				return 1;
		return 0;
	}
	for (const char *p = s; (p = strstr(p, "password")) != NULL; p += 8) {
		const char *e = p + 8;
		while (*e == ' ')
			e++;
		if (*e == '=' && (p == s || p[-1] == ' ' || p[-1] == '\t'))
			return 1;
	}
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

/* Sort a failure (res may be NULL) into a class and record it; returns -1. */
static int pg_fail(struct nw_db *db, PGresult *res)
{
	PGconn *c = P(db)->conn;
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
	else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01")))
		cls = NW_DB_SERIAL;
	else if (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3)))
		cls = NW_DB_LOST;
	else if (state && !strcmp(state, "53100"))
		cls = NW_DB_FULL;
	else if (state && !strncmp(state, "28", 2))
		cls = NW_DB_AUTH;
	return nw_db_fail(db, cls, msg);
}

/* Run res's statement check; clears res on failure. 0 when it succeeded. */
static int pg_ok(struct nw_db *db, PGresult *res)
{
	ExecStatusType st = res ? nw_pq.result_status(res) : PGRES_EMPTY_QUERY;
	if (res && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK))
		return 0;
	pg_fail(db, res);
	if (res)
		nw_pq.clear(res);
	return -1;
}

static int pg_exec(struct nw_db *db, const char *sql)
{
	char *q = dialect(sql);
	PGresult *res = nw_pq.exec(P(db)->conn, q);
	free(q);
	if (pg_ok(db, res))
		return -1;
	nw_pq.clear(res);
	return 0;
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
	PGresult *res = nw_pq.exec_params(P(db)->conn, q, np, NULL, vals, NULL, NULL, 0);
	free(q);
	if (pg_ok(db, res))
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

static void pg_rollback(struct nw_db *db)
{
	PGresult *res = nw_pq.exec(P(db)->conn, "ROLLBACK");
	if (res)
		nw_pq.clear(res);
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
	if (P(db)->conn)
		nw_pq.finish(P(db)->conn);
	free(db->h);
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
	nw_pq.reset(P(db)->conn);
	if (nw_pq.status(P(db)->conn) != CONNECTION_OK)
		return pg_fail(db, NULL);
	PGresult *res = nw_pq.exec(P(db)->conn, "SET client_min_messages = warning");
	if (res)
		nw_pq.clear(res);
	return 0;
}

int nw_db_pg_open(const char *conninfo, struct nw_db **out, enum nw_db_err *cls, char *err,
                  size_t errlen)
{
	*out = NULL;
	*cls = NW_DB_OTHER;
	if (has_password(conninfo))
		return nw_seterr(err, errlen, "--db/NCCLWATCH_DB carries a password, which would show in process lists and "
		                 "history: remove it and put it in ~/.pgpass (host:port:db:user:password, mode 0600) or PGPASSWORD");
	if (nw_pq_load(err, errlen))
		return -1;
	struct nw_db *db = nw_calloc(1, sizeof(*db));
	db->drv = &pg_driver;
	db->h = nw_calloc(1, sizeof(struct pg));
	nw_strlcpy(db->name, conninfo, sizeof(db->name));
	P(db)->conn = nw_pq.connectdb(conninfo);
	if (!P(db)->conn) {
		nw_db_close(db);
		return nw_seterr(err, errlen, "PostgreSQL '%s': out of memory", conninfo);
	}
	if (nw_pq.status(P(db)->conn) != CONNECTION_OK) {
		pg_fail(db, NULL);
		*cls = db->err;
		nw_seterr(err, errlen, "%s", db->msg);
		nw_db_close(db);
		return -1;
	}
	PGresult *res = nw_pq.exec(P(db)->conn, "SET client_min_messages = warning");
	if (res)
		nw_pq.clear(res);
	*out = db;
	return 0;
}
