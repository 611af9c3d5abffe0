/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statsfile_int.h: what statsfile.c (one file: open, validate, copy) shares
 * with sfdir.c (directories: listing, the cache, cleaning old files). Both
 * implement export/statsfile.h; nothing outside them includes this.
 */
#ifndef NW_EXPORT_STATSFILE_INT_H
#define NW_EXPORT_STATSFILE_INT_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "export/statsfile.h"

/* How much of a file sf_read_rank copies. */
enum sf_want {
	SF_WANT_HEADER, /* the header alone */
	SF_WANT_SHOWN,  /* records and ring too, unless the writer is gone */
	SF_WANT_ALL     /* records and ring whatever the writer's state */
};

/*
 * One file into r (zeroed first): path must be a regular file of owner (or
 * of the group NCCLWATCH_GROUP names); with expect, the file fstatat saw
 * (same device and inode). 0, or -1 with the reason in err (r released).
 */
int sf_read_rank(const char *path, uid_t owner, const struct stat *expect, enum sf_want want, struct nw_sf_rank *r,
                 char *err, size_t errlen);

/* Is gid the group NCCLWATCH_GROUP names (a name or a number)? */
int sf_trusted_group(gid_t gid);
/* Can the writer of h be judged by its pid from here (same host and PID namespace)? */
int sf_pid_visible(const struct nws_header *h);
/* Is the writer of h a process of this host that is gone (or whose pid was reused)? */
int sf_writer_gone(const struct nws_header *h);
/* CLOCK_REALTIME in nanoseconds: the plugin's clock. */
uint64_t sf_realtime_ns(void);

#endif
