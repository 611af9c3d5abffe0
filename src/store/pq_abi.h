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
	PGRES_EMPTY_QUERY = 0,
	PGRES_COMMAND_OK,
	PGRES_TUPLES_OK,
} ExecStatusType;
#define PG_DIAG_SQLSTATE 'C'
#else
#include <libpq-fe.h>
#endif

struct nw_pq_api {
	PGconn *(*connectdb)(const char *conninfo);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	void (*reset)(PGconn *conn);
	PGresult *(*exec)(PGconn *conn, const char *query);
	PGresult *(*exec_params)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
	                         const char *const *paramValues, const int *paramLengths,
	                         const int *paramFormats, int resultFormat);
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
