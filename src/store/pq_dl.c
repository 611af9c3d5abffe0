/*
 * libpq for the PostgreSQL store driver (see pq_abi.h): linked, or opened at
 * run time in the portable build.
 */
#include "store/pq_abi.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#if NW_PQ_DL
#include <dlfcn.h>
#endif

struct nw_pq_api nw_pq;

#if NW_PQ_DL

int nw_pq_load(char *err, size_t errlen)
{
	static int loaded;
	if (loaded)
		return 0;
	const char *env = getenv("NCCLWATCH_PQ_LIB");
	const char *path = env && *env ? env : "libpq.so.5";
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		return nw_seterr(err, errlen,
		                 "a PostgreSQL history database needs libpq, which could not be opened (%s); "
		                 "install it (Debian/Ubuntu: libpq5, RHEL: libpq) or set NCCLWATCH_PQ_LIB=PATH, "
		                 "or give --db a file path for a local SQLite history",
		                 why ? why : path);
	}
	const struct { void **slot; const char *name; } syms[] = {
		{ (void **)(void *)&nw_pq.connectdb, "PQconnectdb" },
		{ (void **)(void *)&nw_pq.status, "PQstatus" },
		{ (void **)(void *)&nw_pq.error_message, "PQerrorMessage" },
		{ (void **)(void *)&nw_pq.finish, "PQfinish" },
		{ (void **)(void *)&nw_pq.reset, "PQreset" },
		{ (void **)(void *)&nw_pq.exec, "PQexec" },
		{ (void **)(void *)&nw_pq.exec_params, "PQexecParams" },
		{ (void **)(void *)&nw_pq.result_status, "PQresultStatus" },
		{ (void **)(void *)&nw_pq.result_error_field, "PQresultErrorField" },
		{ (void **)(void *)&nw_pq.result_error_message, "PQresultErrorMessage" },
		{ (void **)(void *)&nw_pq.ntuples, "PQntuples" },
		{ (void **)(void *)&nw_pq.getvalue, "PQgetvalue" },
		{ (void **)(void *)&nw_pq.getisnull, "PQgetisnull" },
		{ (void **)(void *)&nw_pq.cmd_tuples, "PQcmdTuples" },
		{ (void **)(void *)&nw_pq.clear, "PQclear" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(syms); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			nw_seterr(err, errlen, "'%s' lacks %s: it is not libpq; point NCCLWATCH_PQ_LIB at libpq.so.5",
			          path, syms[i].name);
			memset(&nw_pq, 0, sizeof(nw_pq));
			dlclose(h);
			return -1;
		}
	}
	loaded = 1;
	return 0;
}

#else

int nw_pq_load(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	nw_pq = (struct nw_pq_api){
		PQconnectdb, PQstatus, PQerrorMessage, PQfinish, PQreset, PQexec, PQexecParams,
		PQresultStatus, PQresultErrorField, PQresultErrorMessage, PQntuples, PQgetvalue,
		PQgetisnull, PQcmdTuples, PQclear,
	};
	return 0;
}

#endif
