/*
 * libmicrohttpd opened at run time (see mhd_abi.h): only the exporter's
 * HTTP endpoint needs it, so the portable build opens it there.
 */
#if NW_MHD_DL

#include "export/mhd_abi.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct nw_mhd_api nw_mhd;

int nw_mhd_load(char *err, size_t errlen)
{
	static int loaded;
	if (loaded)
		return 0;
	const char *env = getenv("NCCLWATCH_MHD_LIB");
	const char *path = env && *env ? env : "libmicrohttpd.so.12";
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		return nw_seterr(err, errlen,
		                 "the HTTP endpoint needs libmicrohttpd, which could not be opened (%s); install "
		                 "it (Debian/Ubuntu: libmicrohttpd12, RHEL: libmicrohttpd) or set "
		                 "NCCLWATCH_MHD_LIB=PATH, or use --once (for node_exporter's textfile collector), "
		                 "which needs no HTTP server",
		                 why ? why : path);
	}
	const struct { void **slot; const char *name; } syms[] = {
		{ (void **)(void *)&nw_mhd.start_daemon, "MHD_start_daemon" },
		{ (void **)(void *)&nw_mhd.stop_daemon, "MHD_stop_daemon" },
		{ (void **)(void *)&nw_mhd.get_daemon_info, "MHD_get_daemon_info" },
		{ (void **)(void *)&nw_mhd.create_response_from_buffer, "MHD_create_response_from_buffer" },
		{ (void **)(void *)&nw_mhd.add_response_header, "MHD_add_response_header" },
		{ (void **)(void *)&nw_mhd.queue_response, "MHD_queue_response" },
		{ (void **)(void *)&nw_mhd.destroy_response, "MHD_destroy_response" },
		{ (void **)(void *)&nw_mhd.lookup_connection_value, "MHD_lookup_connection_value" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(syms); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			nw_seterr(err, errlen, "'%s' lacks %s: it is not libmicrohttpd 0.9 or newer; point "
			          "NCCLWATCH_MHD_LIB at libmicrohttpd.so.12", path, syms[i].name);
			memset(&nw_mhd, 0, sizeof(nw_mhd));
			dlclose(h);
			return -1;
		}
	}
	loaded = 1;
	return 0;
}

#else

/* Built with libmicrohttpd linked in: nothing is opened at run time. */
typedef int nw_mhd_dl_unused;

#endif
