/* SPDX-License-Identifier: Apache-2.0 */
/*
 * db: the two database drivers under the history store (store.c).
 *
 * The store's queries are written once, in SQLite's dialect with $1-style
 * parameters; db_sqlite.c runs them as they are, db_pg.c (PostgreSQL
 * through libpq) rewrites the few words the dialects spell differently
 * (column types, group_concat). Each driver opens, runs statements,
 * iterates rows, holds transactions and sorts its errors into the classes
 * below, so that store.c says what happened and what to do in one place.
 * Internal to src/store: commands use store.h.
 */
#ifndef NW_STORE_DB_H
#define NW_STORE_DB_H

#include <signal.h>
#include <stddef.h>

/* What went wrong with the last call on a handle. */
enum nw_db_err {
	NW_DB_OK = 0,
	NW_DB_BUSY,     /* another process held a lock past the wait bound (SQLite) */
	NW_DB_SERIAL,   /* serialization failure or deadlock: the transaction may be retried */
	NW_DB_LOST,     /* the server cannot be reached or the connection dropped */
	NW_DB_TIMEOUT,  /* the server did not answer (connect, statement) before the handle's deadline */
	NW_DB_STOPPED,  /* a wait was given up because the command was asked to stop (nw_db_stop) */
	NW_DB_AUTH,     /* the server refused the login */
	NW_DB_FULL,     /* no space left */
	NW_DB_DAMAGED,  /* the file is damaged */
	NW_DB_OTHER,
};

/* Whose database it is, from its header (SQLite) or its tables (PostgreSQL). */
enum nw_db_owner { NW_DB_OURS, NW_DB_EMPTY, NW_DB_FOREIGN };

enum nw_db_ptype { NW_DB_PNULL, NW_DB_PTEXT, NW_DB_PINT, NW_DB_PREAL };

/* One statement parameter ($k is params[k-1]). */
struct nw_db_param {
	enum nw_db_ptype type;
	const char *s;
	long long i;
	double d;
};

#define NW_DB_TEXT(v) ((struct nw_db_param){ .type = NW_DB_PTEXT, .s = (v) })
#define NW_DB_INT(v) ((struct nw_db_param){ .type = NW_DB_PINT, .i = (v) })
#define NW_DB_REAL(v) ((struct nw_db_param){ .type = NW_DB_PREAL, .d = (v) })
#define NW_DB_NULL ((struct nw_db_param){ .type = NW_DB_PNULL })

struct nw_db;
struct nw_db_rows;

struct nw_db_driver {
	const char *name; /* "SQLite", "PostgreSQL" */
	void (*close)(struct nw_db *db);
	/* Statements without parameters, ';'-separated. */
	int (*exec)(struct nw_db *db, const char *sql);
	/* One statement; rows to iterate (for a statement without rows, none). */
	int (*query)(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
	             struct nw_db_rows **out);
	/* 1: a row is current; 0: no more; -1: error (class on the handle). */
	int (*next)(struct nw_db_rows *r);
	const char *(*text)(struct nw_db_rows *r, int col); /* NULL for SQL NULL */
	long long (*integer)(struct nw_db_rows *r, int col);
	double (*real)(struct nw_db_rows *r, int col);
	void (*done)(struct nw_db_rows *r);
	/* Rows changed by the last statement run through query. */
	long long (*changes)(struct nw_db *db);
	/* An INSERT INTO runs; *id gets the new row's id. */
	int (*insert_id)(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np,
	                 long long *id);
	/* Transactions: exclusive holds off every other writer (schema changes). */
	int (*begin)(struct nw_db *db, int exclusive);
	int (*commit)(struct nw_db *db);
	void (*rollback)(struct nw_db *db);
	/* Whose database, and its schema version (0 when new). */
	int (*header)(struct nw_db *db, enum nw_db_owner *own, long long *version);
	/* Mark the database ours at this version (inside the schema transaction). */
	int (*set_header)(struct nw_db *db, int version);
	/* Once known ours or empty: settings a writer needs (WAL, foreign keys). */
	int (*ready)(struct nw_db *db);
};

/* An open database; drivers keep their own handle in h. */
struct nw_db {
	const struct nw_db_driver *drv;
	void *h;
	enum nw_db_err err;  /* class of the last failure */
	char msg[512];       /* the driver's words for it */
	char name[1024];     /* path or connection string, as shown in messages */
	double lock_wait_s;  /* the bound of any one wait: a lock, a connection, a statement's answer */
	double deadline;     /* nw_now() by which every call gives up (0: none but the bound) */
	int readonly;        /* SQLite: opened for reading only; nothing is ever written through it */
	int stale;           /* SQLite: read without the runs its write-ahead log may hold */
};

/* How nw_db_sqlite_open opens a file. */
enum nw_db_lite_mode {
	NW_DB_LITE_READ,   /* must exist; read only, nothing created or written (see below) */
	NW_DB_LITE_WRITE,  /* must exist (an empty file is a new database); read and written */
};

/*
 * Open SQLite database path. Refuses a file that is not SQLite without
 * writing to it. NW_DB_LITE_READ never creates a side file nor writes: a
 * file with a write-ahead log is read with it (mode=ro); one without is read
 * as it is (immutable); where the log exists but cannot be read, db->stale
 * says the view may lack its latest runs. 0 with *out (close with
 * nw_db_close); -1 with err.
 */
int nw_db_sqlite_open(const char *path, enum nw_db_lite_mode mode, double lock_wait_s, struct nw_db **out,
                      char *err, size_t errlen);

/*
 * Replace a read-only SQLite handle by a copy of its database in memory,
 * which can then be migrated without touching the file. 0, or -1 with the
 * class on the handle.
 */
int nw_db_sqlite_to_memory(struct nw_db *db);

/* mkdir -p of the directory part of path (mode 0755); 0, or -1 with err. */
int nw_db_make_parent_dirs(const char *path, char *err, size_t errlen);

/*
 * Check a PostgreSQL connection string as libpq reads it (PQconninfoParse):
 * -1 with err when it cannot be read or carries a password however spelled
 * (user:password@, password=, an %-encoded key, sslpassword, a user name
 * holding ':'); err never quotes the string. 0 otherwise.
 */
int nw_db_pg_check(const char *conninfo, char *err, size_t errlen);

/*
 * Connect to PostgreSQL with a libpq URI or key=value string (checked by
 * nw_db_pg_check first). Every wait (the connection, each statement's
 * answer, a lock on the server) ends after lock_wait_s, or at deadline
 * (nw_now() time, 0: none) when sooner, or within 0.1 s of a stop
 * (nw_db_stop). 0 with *out; -1 with err and its class in *cls.
 */
int nw_db_pg_open(const char *conninfo, double lock_wait_s, double deadline, struct nw_db **out,
                  enum nw_db_err *cls, char *err, size_t errlen);

/* Is this --db value a PostgreSQL URI or libpq key=value string (not a file path)? */
int nw_db_is_pg(const char *name);

/* Reconnect a PostgreSQL handle whose connection dropped or timed out; 0 when it is back. */
int nw_db_pg_reset(struct nw_db *db);

/*
 * The flag a command's SIGINT/SIGTERM handler sets (nw_store_stop_on): once
 * it is non-zero, every wait of every handle gives up with NW_DB_STOPPED.
 */
extern const volatile sig_atomic_t *nw_db_stop;
/* Whether a stop has been asked. */
int nw_db_stopping(void);
/* When a wait on db that starts at now must end: its bound from now, or its deadline when sooner. */
double nw_db_until(const struct nw_db *db, double now);

void nw_db_close(struct nw_db *db);

/* Who hears that a SQLite writer or reader has waited NW_DB_NOTICE_AFTER_S for another process's lock (nw_store_on_wait). */
extern void (*nw_db_wait_notice)(const char *path, double bound_s);
#define NW_DB_NOTICE_AFTER_S 1.5

/* Record the class and words of a failure on db; returns -1. */
int nw_db_fail(struct nw_db *db, enum nw_db_err cls, const char *msg);

#endif
