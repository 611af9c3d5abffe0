/*
 * libmicrohttpd opened at run time (see mhd_abi.h): only the exporter's
 * HTTP endpoint needs it, so the portable build opens it there.
 */
#if NW_MHD_DL

#include "export/mhd_abi.h"

#include "util/dl.h"
#include "util/util.h"

struct nw_mhd_api nw_mhd;

#define FN(f, sym) { (void **)(void *)&nw_mhd.f, { sym }, 1 }

static const struct nw_dl_sym syms[] = {
	FN(start_daemon, "MHD_start_daemon"),
	FN(stop_daemon, "MHD_stop_daemon"),
	FN(get_daemon_info, "MHD_get_daemon_info"),
	FN(create_response_from_buffer, "MHD_create_response_from_buffer"),
	FN(add_response_header, "MHD_add_response_header"),
	FN(queue_response, "MHD_queue_response"),
	FN(destroy_response, "MHD_destroy_response"),
	FN(lookup_connection_value, "MHD_lookup_connection_value"),
};

static const struct nw_dl_lib libmhd = { "NCCLWATCH_MHD_LIB", { "libmicrohttpd.so.12" }, 0 };
static struct nw_dl_once once = NW_DL_ONCE_INIT;

static int load(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (!nw_dl_load(&libmhd, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why)))
		return 0;
	if (dl.missing)
		return nw_seterr(err, errlen, "%s: it is not libmicrohttpd 0.9 or newer; point NCCLWATCH_MHD_LIB at "
		                 "libmicrohttpd.so.12", why);
	return nw_seterr(err, errlen,
	                 "the HTTP endpoint needs libmicrohttpd, which could not be opened (%s); install "
	                 "it (Debian/Ubuntu: libmicrohttpd12, RHEL: libmicrohttpd) or set "
	                 "NCCLWATCH_MHD_LIB=PATH, or use --once (for node_exporter's textfile collector), "
	                 "which needs no HTTP server", dl.why);
}

int nw_mhd_load(char *err, size_t errlen)
{
	return nw_dl_once(&once, load, NULL, err, errlen);
}

#else

/* Built with libmicrohttpd linked in: nothing is opened at run time. */
typedef int nw_mhd_dl_unused;

#endif
