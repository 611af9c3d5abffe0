/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strbuf: a growable string (as git's strbuf, redis's sds), so that
 * messages and lists are built with nw_strbuf_addf instead of
 * snprintf(buf + used, len - used, ...) arithmetic.
 *
 *	struct nw_strbuf sb;
 *	nw_strbuf_init(&sb);
 *	for (int i = 0; i < n; i++)
 *		nw_strbuf_addf(&sb, "%s%d", i ? "," : "", v[i]);
 *	nw_strlcpy(out, sb.buf, outlen);   (or keep nw_strbuf_detach(&sb))
 *	nw_strbuf_release(&sb);
 *
 * It never fails silently: running out of memory ends the program as
 * nw_malloc does, and a format vsnprintf cannot render is a bug (NW_BUG).
 */
#ifndef NW_UTIL_STRBUF_H
#define NW_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct nw_strbuf {
	char *buf;    /* always NUL-terminated ("" when empty); read it, never free it */
	size_t len;   /* bytes before the NUL */
	size_t cap;   /* bytes allocated; 0 while buf is the shared "" */
};

/* Prepare sb (storage the caller owns) as "", without allocating. */
void nw_strbuf_init(struct nw_strbuf *sb);
/* Free what sb holds and leave it "" and reusable. */
void nw_strbuf_release(struct nw_strbuf *sb);
/* Empty sb, keeping its memory for what comes next. */
void nw_strbuf_reset(struct nw_strbuf *sb);
/* Room for n more bytes (and the NUL) without another allocation. */
void nw_strbuf_grow(struct nw_strbuf *sb, size_t n);

/* Append n bytes of s (which may hold NULs). */
void nw_strbuf_add(struct nw_strbuf *sb, const void *s, size_t n);
/* Append the string s. */
void nw_strbuf_addstr(struct nw_strbuf *sb, const char *s);
/* Append one character. */
void nw_strbuf_addch(struct nw_strbuf *sb, char c);
/* Append printf-formatted text. */
void nw_strbuf_addf(struct nw_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nw_strbuf_vaddf(struct nw_strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Bytes in sb (before the NUL). */
size_t nw_strbuf_len(const struct nw_strbuf *sb);
/* The text of sb: the caller takes it (free() it) and sb is left "" and reusable. */
char *nw_strbuf_detach(struct nw_strbuf *sb);

#endif
