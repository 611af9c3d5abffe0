/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzip: compress a /metrics reply for scrapers that send
 * "Accept-Encoding: gzip". zlib (libz.so.1, present on every Linux
 * distribution) is opened at run time, so neither the build nor the
 * portable binary depends on it; where it cannot be opened, replies go
 * uncompressed.
 */
#ifndef NW_GZIP_H
#define NW_GZIP_H

#include <stddef.h>

/*
 * A gzip member (RFC 1952) holding in[0..n): a malloc'd buffer the caller
 * frees, its length in *outlen; NULL with err filled when zlib cannot be
 * opened or fails (the caller then sends the text as it is).
 */
char *nw_gzip(const char *in, size_t n, size_t *outlen, char *err, size_t errlen);

/* Does an Accept-Encoding header value accept gzip (and not with q=0)? */
int nw_gzip_accepted(const char *accept_encoding);

#endif
