/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpq for the PostgreSQL store driver (see pq_abi.h): linked, or opened at
 * run time in the portable build.
 */
#include "store/pq_abi.h"

#include "util/util.h"

#if NW_PQ_DL
#include "util/dl.h"
#endif

struct nw_pq_api nw_pq;

#if NW_PQ_DL

#define FN(f, sym) { (void **)(void *)&nw_pq.f, { sym }, 1 }

static const struct nw_dl_sym syms[] = {
	FN(connect_start, "PQconnectStartParams"), FN(connect_poll, "PQconnectPoll"), FN(socket, "PQsocket"),
	FN(status, "PQstatus"), FN(error_message, "PQerrorMessage"), FN(finish, "PQfinish"),
	FN(set_nonblocking, "PQsetnonblocking"), FN(send_query, "PQsendQuery"),
	FN(send_query_params, "PQsendQueryParams"), FN(flush, "PQflush"), FN(consume_input, "PQconsumeInput"),
	FN(is_busy, "PQisBusy"), FN(get_result, "PQgetResult"), FN(conninfo_parse, "PQconninfoParse"),
	FN(conninfo_free, "PQconninfoFree"), FN(freemem, "PQfreemem"), FN(result_status, "PQresultStatus"), FN(result_error_field, "PQresultErrorField"),
	FN(result_error_message, "PQresultErrorMessage"), FN(ntuples, "PQntuples"), FN(getvalue, "PQgetvalue"),
	FN(getisnull, "PQgetisnull"), FN(cmd_tuples, "PQcmdTuples"), FN(clear, "PQclear"),
};

static const struct nw_dl_lib libpq = { "NCCLWATCH_PQ_LIB", { "libpq.so.5" }, 0 };
static struct nw_dl_once once = NW_DL_ONCE_INIT;

static int load(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (!nw_dl_load(&libpq, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why)))
		return 0;
	if (dl.missing)
		return nw_seterr(err, errlen, "%s: it is not libpq; point NCCLWATCH_PQ_LIB at libpq.so.5", why);
	return nw_seterr(err, errlen,
	                 "a PostgreSQL history database needs libpq, which could not be opened (%s); "
	                 "install it (Debian/Ubuntu: libpq5, RHEL: libpq) or set NCCLWATCH_PQ_LIB=PATH, "
	                 "or give --db a file path for a local SQLite history", dl.why);
}

int nw_pq_load(char *err, size_t errlen)
{
	return nw_dl_once(&once, load, NULL, err, errlen);
}

#else

int nw_pq_load(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	nw_pq = (struct nw_pq_api){
		PQconnectStartParams, PQconnectPoll, PQsocket, PQstatus, PQerrorMessage, PQfinish, PQsetnonblocking,
		PQsendQuery, PQsendQueryParams, PQflush, PQconsumeInput, PQisBusy, PQgetResult, PQconninfoParse,
		PQconninfoFree, PQfreemem, PQresultStatus, PQresultErrorField, PQresultErrorMessage, PQntuples,
		PQgetvalue, PQgetisnull, PQcmdTuples, PQclear,
	};
	return 0;
}

#endif
