/* SPDX-License-Identifier: Apache-2.0 */
/* strbuf: a growable NUL-terminated string (see strbuf.h). */
#include "util/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* What an empty buffer points at until it first grows; never written. */
static char empty[1];

void nw_strbuf_init(struct nw_strbuf *sb)
{
	sb->buf = empty;
	sb->len = 0;
	sb->cap = 0;
}

void nw_strbuf_release(struct nw_strbuf *sb)
{
	if (sb->cap)
		free(sb->buf);
	nw_strbuf_init(sb);
}

void nw_strbuf_reset(struct nw_strbuf *sb)
{
	sb->len = 0;
	if (sb->cap)
		sb->buf[0] = '\0';
}

void nw_strbuf_grow(struct nw_strbuf *sb, size_t n)
{
	if (n >= SIZE_MAX - sb->len - 1)
		NW_BUG("string buffer of %zu bytes cannot grow by %zu", sb->len, n);
	size_t need = sb->len + n + 1;
	if (need <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (sb->cap) {
		sb->buf = nw_realloc(sb->buf, cap);
	} else {
		sb->buf = nw_malloc(cap);
		sb->buf[0] = '\0';
	}
	sb->cap = cap;
}

void nw_strbuf_add(struct nw_strbuf *sb, const void *s, size_t n)
{
	if (!n)
		return;
	nw_strbuf_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void nw_strbuf_addstr(struct nw_strbuf *sb, const char *s)
{
	nw_strbuf_add(sb, s, strlen(s));
}

void nw_strbuf_addch(struct nw_strbuf *sb, char c)
{
	nw_strbuf_add(sb, &c, 1);
}

void nw_strbuf_vaddf(struct nw_strbuf *sb, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	/* try in the room there is; grow once to the size asked and try again */
	size_t room = sb->cap ? sb->cap - sb->len : 0;
	int n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
	if (n < 0)
		NW_BUG("vsnprintf cannot render the format \"%s\"", fmt);
	if ((size_t)n >= room) {
		nw_strbuf_grow(sb, (size_t)n);
		if (vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, again) != n)
			NW_BUG("vsnprintf rendered the format \"%s\" in two lengths", fmt);
	}
	va_end(again);
	sb->len += (size_t)n;
}

void nw_strbuf_addf(struct nw_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nw_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

size_t nw_strbuf_len(const struct nw_strbuf *sb)
{
	return sb->len;
}

char *nw_strbuf_detach(struct nw_strbuf *sb)
{
	char *s = sb->cap ? sb->buf : nw_strdup("");
	nw_strbuf_init(sb);
	return s;
}
