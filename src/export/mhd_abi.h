/*
 * The part of libmicrohttpd that export/httpd.c uses.
 *
 * Built with NW_MHD_DL=1 (the portable build), libmicrohttpd is neither
 * linked nor needed to start: its ABI (stable since 0.9.x, soname
 * libmicrohttpd.so.12) is declared here, and nw_mhd_load() opens it when the
 * exporter starts serving. Without the library only the HTTP endpoint is
 * missing; `exporter --once` never opens it. (Debian ships
 * libmicrohttpd.a built with GnuTLS, which has no static library, so it
 * cannot be linked in.)
 *
 * Without NW_MHD_DL this is <microhttpd.h> and nw_mhd_load() does nothing.
 * The MHD_* names are macros over one table of pointers: ncclwatch defines
 * no symbol of libmicrohttpd's own name.
 * (No mhd_abi.c: mhd_dl.c implements the loader.)
 */
#ifndef NW_EXPORT_MHD_ABI_H
#define NW_EXPORT_MHD_ABI_H

#include <stddef.h>
#include <stdint.h>

#if NW_MHD_DL

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

enum MHD_Result { MHD_NO = 0, MHD_YES = 1 };
enum MHD_ValueKind { MHD_HEADER_KIND = 1 };
enum MHD_ResponseMemoryMode { MHD_RESPMEM_PERSISTENT = 0, MHD_RESPMEM_MUST_FREE = 1 };
enum MHD_DaemonInfoType { MHD_DAEMON_INFO_BIND_PORT = 6 };
union MHD_DaemonInfo {
	size_t key_size;
	int listen_fd;
	uint16_t port;
	unsigned num_connections;
	unsigned flags;
};

#define MHD_USE_INTERNAL_POLLING_THREAD 8u
#define MHD_USE_IPv6 16u
#define MHD_USE_EPOLL 512u
#define MHD_OPTION_END 0
#define MHD_OPTION_CONNECTION_LIMIT 2
#define MHD_OPTION_CONNECTION_TIMEOUT 3
#define MHD_OPTION_PER_IP_CONNECTION_LIMIT 5
#define MHD_OPTION_SOCK_ADDR 6
#define MHD_HTTP_OK 200
#define MHD_HTTP_NOT_FOUND 404
#define MHD_HTTP_METHOD_NOT_ALLOWED 405
#define MHD_HTTP_INTERNAL_SERVER_ERROR 500
#define MHD_HTTP_HEADER_CONTENT_TYPE "Content-Type"

typedef enum MHD_Result (*MHD_AccessHandlerCallback)(void *, struct MHD_Connection *, const char *,
                                                     const char *, const char *, const char *,
                                                     size_t *, void **);

/* The entry points httpd.c uses, filled by nw_mhd_load(). */
struct nw_mhd_api {
	struct MHD_Daemon *(*start_daemon)(unsigned, uint16_t, void *, void *, MHD_AccessHandlerCallback,
	                                   void *, ...);
	void (*stop_daemon)(struct MHD_Daemon *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned, struct MHD_Response *);
	void (*destroy_response)(struct MHD_Response *);
	const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
};
extern struct nw_mhd_api nw_mhd;

#define MHD_start_daemon nw_mhd.start_daemon
#define MHD_stop_daemon nw_mhd.stop_daemon
#define MHD_get_daemon_info nw_mhd.get_daemon_info
#define MHD_create_response_from_buffer nw_mhd.create_response_from_buffer
#define MHD_add_response_header nw_mhd.add_response_header
#define MHD_queue_response nw_mhd.queue_response
#define MHD_destroy_response nw_mhd.destroy_response
#define MHD_lookup_connection_value nw_mhd.lookup_connection_value

/*
 * Opens libmicrohttpd.so.12 (or $NCCLWATCH_MHD_LIB) once and fills nw_mhd.
 * 0 on success; -1 with err saying what to install or to use instead.
 */
int nw_mhd_load(char *err, size_t errlen);

#else

#include <stdarg.h>
#include <sys/socket.h>
#include <microhttpd.h>

static inline int nw_mhd_load(char *err, size_t errlen)
{
	(void)err; (void)errlen;
	return 0;
}

#endif
#endif
