/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of libpq that store/db_pg.c uses, as one table of pointers
 * (nw_pq) that nw_pq_load() fills.
 *
 * Built with NW_PQ_DL=1 (make PQ=dl, as make portable does), libpq is
 * neither linked nor needed to start: its ABI (soname libpq.so.5, stable
 * since PostgreSQL 8.x) is declared here and nw_pq_load() opens it the
 * first time a --db names a PostgreSQL server. Without NW_PQ_DL this is
 * <libpq-fe.h> and the table points at the linked functions.
 */
#ifndef NW_STORE_PQ_ABI_H
#define NW_STORE_PQ_ABI_H

#include <stddef.h>

#if NW_PQ_DL
typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;
typedef enum { CONNECTION_OK, CONNECTION_BAD } ConnStatusType;
typedef enum {
	PGRES_POLLING_FAILED = 0,
	PGRES_POLLING_READING,
	PGRES_POLLING_WRITING,
	PGRES_POLLING_OK,
} PostgresPollingStatusType;
typedef enum {
	PGRES_EMPTY_QUERY = 0,
	PGRES_COMMAND_OK,
	PGRES_TUPLES_OK,
} ExecStatusType;
typedef struct _PQconninfoOption {
	char *keyword;
	char *envvar;
	char *compiled;
	char *val;
	char *label;
	char *dispchar; /* "*": a password field, never to be shown */
	int dispsize;
} PQconninfoOption;
#define PG_DIAG_SQLSTATE 'C'
#else
#include <libpq-fe.h>
#endif

/* Connections and statements are asynchronous (connect_start, send_*), so that every wait has a deadline. */
struct nw_pq_api {
	PGconn *(*connect_start)(const char *const *keywords, const char *const *values, int expand_dbname);
	PostgresPollingStatusType (*connect_poll)(PGconn *conn);
	int (*socket)(const PGconn *conn);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	int (*set_nonblocking)(PGconn *conn, int arg);
	int (*send_query)(PGconn *conn, const char *query);
	int (*send_query_params)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
	                         const char *const *paramValues, const int *paramLengths,
	                         const int *paramFormats, int resultFormat);
	int (*flush)(PGconn *conn);
	int (*consume_input)(PGconn *conn);
	int (*is_busy)(PGconn *conn);
	PGresult *(*get_result)(PGconn *conn);
	PQconninfoOption *(*conninfo_parse)(const char *conninfo, char **errmsg);
	void (*conninfo_free)(PQconninfoOption *opts);
	void (*freemem)(void *ptr);
	ExecStatusType (*result_status)(const PGresult *res);
	char *(*result_error_field)(const PGresult *res, int fieldcode);
	char *(*result_error_message)(const PGresult *res);
	int (*ntuples)(const PGresult *res);
	char *(*getvalue)(const PGresult *res, int tup_num, int field_num);
	int (*getisnull)(const PGresult *res, int tup_num, int field_num);
	char *(*cmd_tuples)(PGresult *res);
	void (*clear)(PGresult *res);
};

extern struct nw_pq_api nw_pq;

/* Fill nw_pq (opening libpq.so.5 when built with NW_PQ_DL); -1 with err saying what to install. */
int nw_pq_load(char *err, size_t errlen);

#endif
