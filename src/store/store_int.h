/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_int: internal to the history store, shared by store.c,
 * store_run.c and store_query.c and by nothing else: the store handle and
 * the helpers every query uses. Names carry the prefix st_.
 */
#ifndef NW_STORE_STORE_INT_H
#define NW_STORE_STORE_INT_H

#include <limits.h>
#include <stddef.h>

#include "store/db.h"
#include "store/store.h"

struct nw_store {
	struct nw_db *db;
	char path[PATH_MAX]; /* file path or connection string, as shown in messages */
};

/*
 * nw_store_open, saying in *cls why a PostgreSQL server could not be used;
 * every call on the handle gives up by deadline (a nw_now() time; 0: only
 * the lock bound applies).
 */
int st_open_store(const char *path, enum nw_store_mode mode, double deadline, struct nw_store **out,
                  enum nw_db_err *cls, char *err, size_t errlen);
/* The bound of every wait on the database: NCCLWATCH_LOCK_TIMEOUT, else 15 s. 0, or -1 with err. */
int st_lock_wait(double *out, char *err, size_t errlen);
/* Passwords of connection strings out of run's command lines, in its header and its fingerprint. */
void st_redact_run(struct nw_run *run);
/*
 * nw_store_insert with the run's content key given: a spooled run keeps
 * the key it had when it was recorded (its JSON copy rounds figures the
 * key covers), so a copy the server took late is recognised.
 */
int st_insert_keyed(struct nw_store *s, struct nw_run *run, const char *key, long long *id_out, char *err,
                    size_t errlen);
/* err from the database's last failure, named by class with what to do; returns -1. */
int st_db_err(struct nw_store *s, const char *what, char *err, size_t errlen);
/* Run one statement with no rows wanted; -1 with the class on the handle. */
int st_run_sql(struct nw_db *db, const char *sql, const struct nw_db_param *p, int np);
/* One integer from a one-parameter query (0 when it has no row): 1 or 0 rows, or -1 with the class on the handle. */
int st_query_int(struct nw_db *db, const char *sql, struct nw_db_param p, long long *out);
/* Text column k at the cursor into dst ("" for NULL). */
void st_col_text(struct nw_db_rows *r, const struct nw_db_driver *d, int k, char *dst, size_t len);

/*
 * One results row from the cursor's columns c to c + 13 into row (zeroed
 * first; its per-rank and per-iteration arrays allocated, freed with the
 * run), the columns being those of results in this order: op, dtype,
 * redop, root, size_bytes, count, nranks, inplace, time_us, algbw_gbs,
 * busbw_gbs, wrong, ranks, per_iter.
 */
void st_load_row(struct nw_db_rows *r, const struct nw_db_driver *d, int c, struct nw_row *row);

#endif
