/* SPDX-License-Identifier: Apache-2.0 */
/* termtext: outside text made safe for a terminal (see termtext.h). */
#include "util/termtext.h"

#include <stdio.h>
#include <string.h>

/*
 * Length of the UTF-8 sequence at p (1-4), or 0 when p does not start a
 * well-formed one (a stray continuation byte, an overlong form, a
 * surrogate, beyond U+10FFFF, cut short).
 */
static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* s escaped into out (size bytes, room for max characters at 6 bytes each and the note), cut after max. */
static const char *escape(const char *s, size_t max, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t total = strlen((const char *)p), k = 0, shown = 0;
	out[0] = '\0';
	while (*p) {
		if (shown == max) {
			snprintf(out + k, size - k, "\xe2\x80\xa6(%zu bytes)", total);
			return out;
		}
		size_t n = utf8_len(p);
		if (n == 1 && *p >= 0x20 && *p != 0x7f) {
			out[k++] = (char)*p;
		} else if (n == 1) {
			const char *e = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
			k += e ? (size_t)snprintf(out + k, size - k, "%s", e) : (size_t)snprintf(out + k, size - k, "\\x%02x", *p);
		} else if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
			k += (size_t)snprintf(out + k, size - k, "\\u%04x", p[1]); /* a C1 control: U+0080-U+009F */
		} else if (n) {
			memcpy(out + k, p, n);
			k += n;
		} else {
			k += (size_t)snprintf(out + k, size - k, "\\x%02x", *p);
			n = 1;
		}
		p += n;
		shown++;
		out[k] = '\0';
	}
	return out;
}

const char *nw_tt(const char *s, char *out)
{
	return escape(s, NW_TT_MAX, out, NW_TT_BUF);
}

const char *nw_tt_msg(const char *s, char *out)
{
	return escape(s, NW_TT_MSG_MAX, out, NW_TT_MSG_BUF);
}

size_t nw_tt_width(const char *tt)
{
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)tt; *p; p++)
		w += (*p & 0xc0) != 0x80;
	return w;
}
