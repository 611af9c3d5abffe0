/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact: passwords of PostgreSQL connection strings taken out of any text
 * (a --db value, a whole command line) before it is shown or stored.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/util.h"

#define MASK "***"

/* A growing copy: out[0..n) of capacity cap. */
struct buf {
	char *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->s = nw_realloc(b->s, b->cap);
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Whether s[0..n), %-decoded and in any case, holds "password" (sslpassword included). */
static int names_password(const char *s, size_t n)
{
	char d[64];
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < sizeof(d); i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
			d[k++] = (char)tolower(hi * 16 + lo);
			i += 2;
		} else {
			d[k++] = (char)tolower((unsigned char)s[i]);
		}
	}
	d[k] = '\0';
	return strstr(d, "password") != NULL;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* A URI at s (after its scheme's "://" at s + skip): user:password@ and password-named query values masked. Returns its length. */
static size_t uri(struct buf *b, const char *s, size_t skip)
{
	size_t end = skip;
	while (s[end] && !is_space(s[end]))
		end++;
	size_t auth_end = skip;
	while (auth_end < end && s[auth_end] != '/' && s[auth_end] != '?')
		auth_end++;
	const char *at = NULL;
	for (size_t i = skip; i < auth_end; i++)
		if (s[i] == '@')
			at = s + i;
	size_t i = 0;
	if (at) {
		/* the user part ends at the first ':' (raw or %3A); what follows up to '@' is a password */
		const char *colon = NULL;
		for (const char *p = s + skip; p < at && !colon; p++)
			if (*p == ':' || (*p == '%' && p + 2 < at && p[1] == '3' && (p[2] == 'a' || p[2] == 'A')))
				colon = p;
		if (colon) {
			size_t keep = (size_t)(colon - s) + (*colon == ':' ? 1 : 3);
			put(b, s, keep);
			put(b, MASK, strlen(MASK));
			i = (size_t)(at - s);
		}
	}
	while (i < end) {
		size_t j = i;
		while (j < end && s[j] != '?' && s[j] != '&')
			j++;
		if (j < end)
			j++; /* the separator goes with what precedes it */
		put(b, s + i, j - i);
		i = j;
		if (i >= end || (s[i - 1] != '?' && s[i - 1] != '&'))
			continue;
		size_t eq = i;
		while (eq < end && s[eq] != '=' && s[eq] != '&')
			eq++;
		if (eq < end && s[eq] == '=' && names_password(s + i, eq - i)) {
			put(b, s + i, eq + 1 - i);
			put(b, MASK, strlen(MASK));
			i = eq + 1;
			while (i < end && s[i] != '&')
				i++;
		}
	}
	return end;
}

/* A key=value password at s ("password", any case, then '='): the key kept, the value masked. Returns its length or 0. */
static size_t keyval(struct buf *b, const char *s)
{
	if (strncasecmp(s, "password", 8))
		return 0;
	size_t i = 8;
	while (s[i] == ' ')
		i++;
	if (s[i] != '=')
		return 0;
	i++;
	while (s[i] == ' ')
		i++;
	put(b, s, i);
	put(b, MASK, strlen(MASK));
	if (s[i] == '\'') {
		for (i++; s[i] && s[i] != '\''; i++)
			if (s[i] == '\\' && s[i + 1])
				i++;
		return s[i] ? i + 1 : i;
	}
	while (s[i] && !is_space(s[i]))
		i++;
	return i;
}

char *nw_store_redact(const char *text)
{
	struct buf b = { NULL, 0, 0 };
	put(&b, "", 0);
	for (const char *p = text; *p;) {
		size_t n = 0;
		if (!strncasecmp(p, "postgresql://", 13))
			n = uri(&b, p, 13);
		else if (!strncasecmp(p, "postgres://", 11))
			n = uri(&b, p, 11);
		else
			n = keyval(&b, p);
		if (n) {
			p += n;
			continue;
		}
		put(&b, p, 1);
		p++;
	}
	return b.s;
}
