/* SPDX-License-Identifier: Apache-2.0 */
/* boot_text: the text of messages: rank lists, fingerprint differences, names of ranks and calls. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comm/boot_int.h"

void boot_app(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

void nw_boot_ranklist(const int *ranks, int n, char *out, size_t outlen)
{
	if (outlen)
		out[0] = '\0';
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		const char *sep = i ? "," : "";
		if (j >= i + 2)
			boot_app(out, outlen, "%s%d-%d", sep, ranks[i], ranks[j]);
		else if (j == i + 1)
			boot_app(out, outlen, "%s%d,%d", sep, ranks[i], ranks[j]);
		else
			boot_app(out, outlen, "%s%d", sep, ranks[i]);
		i = j + 1;
	}
}

/* Byte offset of the start of the word holding position i. */
static size_t word_start(const char *s, size_t i)
{
	while (i > 0 && s[i - 1] != ' ')
		i--;
	return i;
}

/* Copy s[from, to) quoted short, with "..." where cut. */
static void span(const char *s, size_t from, size_t to, char *out, size_t outlen)
{
	const size_t keep = 72;
	out[0] = '\0';
	if (from > 0)
		boot_app(out, outlen, "...");
	if (to - from > keep)
		boot_app(out, outlen, "%.*s...", (int)keep, s + from);
	else
		boot_app(out, outlen, "%.*s", (int)(to - from), s + from);
	if (s[to] && to - from <= keep)
		boot_app(out, outlen, "...");
}

void nw_boot_fpdiff(const char *a, const char *b, char *da, size_t dalen, char *db, size_t dblen)
{
	size_t la = strlen(a), lb = strlen(b), pre = 0, suf = 0;
	da[0] = db[0] = '\0';
	if (!strcmp(a, b))
		return;
	while (pre < la && pre < lb && a[pre] == b[pre])
		pre++;
	while (suf < la - pre && suf < lb - pre && a[la - 1 - suf] == b[lb - 1 - suf])
		suf++;
	/* widen to whole words on both sides, with the word before for context
	 * (the option whose value differs) */
	size_t s = word_start(a, pre);
	if (s > 0) {
		size_t t = s - 1;
		while (t > 0 && a[t - 1] == ' ')
			t--;
		s = word_start(a, t);
	}
	size_t ea = la - suf, eb = lb - suf;
	while (ea < la && a[ea] != ' ' && (ea == 0 || a[ea - 1] != ' '))
		ea++;
	while (eb < lb && b[eb] != ' ' && (eb == 0 || b[eb - 1] != ' '))
		eb++;
	if (ea < s)
		ea = s;
	if (eb < s)
		eb = s;
	/* a difference that is all on one side ("-c" added) shows its neighbour too */
	if (ea == s || eb == s) {
		if (ea < la)
			while (ea < la && a[ea] == ' ')
				ea++;
		while (ea < la && a[ea] != ' ')
			ea++;
		if (eb < lb)
			while (eb < lb && b[eb] == ' ')
				eb++;
		while (eb < lb && b[eb] != ' ')
			eb++;
	}
	span(a, s, ea, da, dalen);
	span(b, s, eb, db, dblen);
	if (!da[0])
		nw_strlcpy(da, "(nothing)", dalen);
	if (!db[0])
		nw_strlcpy(db, "(nothing)", dblen);
}

const char *boot_errtext(int e, char *buf, size_t len)
{
	nw_strlcpy(buf, strerror(e), len);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

const char *boot_op_name(int type)
{
	switch (type) {
	case NW_BOOT_HELLO: return "startup";
	case NW_BOOT_GATHER: return "allgather";
	case NW_BOOT_BCAST: return "broadcast";
	case NW_BOOT_BARRIER: return "barrier";
	case NW_BOOT_ABORT: return "abort";
	case NW_BOOT_WELCOME: return "startup answer";
	case NW_BOOT_ENTER: return "collective start";
	case NW_BOOT_RESULT: return "collective result";
	default: return "unknown message";
	}
}

const char *boot_who(const struct nw_boot *b, int r, char *buf, size_t len)
{
	buf[0] = '\0';
	boot_app(buf, len, "rank %d on %s", r, nw_boot_host(b, r));
	return buf;
}

void boot_ranks_text(char *const *hosts, const int *ranks, int n, char *out, size_t outlen)
{
	out[0] = '\0';
	boot_app(out, outlen, "%s ", n == 1 ? "rank" : "ranks");
	for (int i = 0; i < n;) {
		int j = i;
		while (hosts && j + 1 < n && !strcmp(hosts[ranks[j + 1]], hosts[ranks[i]]))
			j++;
		char list[256];
		nw_boot_ranklist(ranks + i, (hosts ? j : n - 1) - i + 1, list, sizeof(list));
		boot_app(out, outlen, "%s%s", i ? ", " : "", list);
		if (hosts)
			boot_app(out, outlen, " on %s", hosts[ranks[i]]);
		i = hosts ? j + 1 : n;
	}
}
