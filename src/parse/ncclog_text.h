/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclog_text: small text helpers of the NCCL log analyser (s, n: not
 * NUL-terminated), internal to src/parse/ncclog*.c and the line-prefix
 * reader (lineprefix.c). No ncclog_text.c: they
 * are static inline so that the per-line hot path keeps them inlined in
 * every file that reads lines.
 */
#ifndef NW_NCCLOG_TEXT_H
#define NW_NCCLOG_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int starts(const char *s, size_t n, const char *w)
{
	size_t m = strlen(w);
	return n >= m && !memcmp(s, w, m);
}

/*
 * The first w[0..m) in s[0..n), or NULL. Log lines are short and the
 * needles a few bytes, where memmem's setup costs more than the search:
 * memchr for the needle's first byte that is not a space (spaces are
 * everywhere in a line), then one memcmp at each hit. (Its rarest byte
 * instead, an upper-case letter or a '[', measured slower on real logs.)
 */
static inline const char *find_n(const char *s, size_t n, const char *w, size_t m)
{
	if (m == 0)
		return s;
	if (m > n)
		return NULL;
	size_t k = 0;
	while (k + 1 < m && w[k] == ' ')
		k++;
	const char *p = s + k, *last = s + (n - m) + k; /* w[k] of the last place w fits */
	while (p <= last && (p = memchr(p, (unsigned char)w[k], (size_t)(last - p) + 1))) {
		if (!memcmp(p - k, w, m))
			return p - k;
		p++;
	}
	return NULL;
}

static inline const char *find(const char *s, size_t n, const char *w)
{
	return find_n(s, n, w, strlen(w));
}

/* s may be NULL when n is 0 (a key that was not found). */
static inline void copy_str(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

/* Leading decimal number of s (with sign), *used set to digits consumed (0 when none). */
static inline long long parse_ll(const char *s, size_t n, size_t *used)
{
	size_t i = 0;
	int neg = 0;
	long long v = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	size_t d = i;
	while (i < n && is_digit(s[i]) && i - d < 18)
		v = v * 10 + (s[i++] - '0');
	*used = i == d ? 0 : i;
	return neg ? -v : v;
}

/* Leading hex number (with or without 0x). */
static inline uint64_t parse_hex(const char *s, size_t n, size_t *used)
{
	size_t i = 0;
	uint64_t v = 0;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	size_t d = i;
	for (; i < n && i - d < 16; i++) {
		char c = s[i];
		int x = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
		if (x < 0)
			break;
		v = v * 16 + (uint64_t)x;
	}
	*used = i == d ? 0 : i;
	return v;
}

/* The value after "key " (or "key=") in s, as a token; returns its length, 0 when absent. */
static inline size_t after_key(const char *s, size_t n, const char *key, const char **val)
{
	size_t kl = strlen(key);
	const char *p = s;
	while ((p = find_n(p, n - (size_t)(p - s), key, kl))) {
		int left_ok = p == s || p[-1] == ' ' || p[-1] == '(' || p[-1] == ',';
		const char *v = p + kl;
		p += kl;
		if (!left_ok || v >= s + n || (*v != ' ' && *v != '='))
			continue;
		v++;
		const char *e = v;
		while (e < s + n && *e != ' ' && *e != ',' && *e != ')')
			e++;
		*val = v;
		return (size_t)(e - v);
	}
	return 0;
}

static inline long long key_ll(const char *s, size_t n, const char *key, long long dflt)
{
	const char *v;
	size_t vn = after_key(s, n, key, &v), used;
	if (!vn)
		return dflt;
	long long x = parse_ll(v, vn, &used);
	return used ? x : dflt;
}

#endif
