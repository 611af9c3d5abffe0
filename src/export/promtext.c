/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition format 0.0.4 writer (see promtext.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/promtext.h"
#include "util/util.h"

void nw_prom_init(struct nw_prom *p)
{
	p->cap = 4096;
	p->buf = nw_malloc(p->cap);
	p->buf[0] = '\0';
	p->len = 0;
}

void nw_prom_release(struct nw_prom *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

char *nw_prom_take(struct nw_prom *p, size_t *len)
{
	char *s = p->buf;
	if (len)
		*len = p->len;
	p->buf = NULL;
	p->len = p->cap = 0;
	return s;
}

/* Make room for n more bytes plus the terminating NUL. */
static void reserve(struct nw_prom *p, size_t n)
{
	if (p->len + n + 1 <= p->cap)
		return;
	size_t cap = p->cap ? p->cap : 4096;
	while (p->len + n + 1 > cap)
		cap *= 2;
	p->buf = nw_realloc(p->buf, cap);
	p->cap = cap;
}

static void put(struct nw_prom *p, const char *s, size_t n)
{
	reserve(p, n);
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void puts_(struct nw_prom *p, const char *s)
{
	put(p, s, strlen(s));
}

void nw_prom_escape(struct nw_prom *p, const char *s, int is_label)
{
	for (; *s; s++) {
		if (*s == '\\')
			put(p, "\\\\", 2);
		else if (*s == '\n')
			put(p, "\\n", 2);
		else if (*s == '"' && is_label)
			put(p, "\\\"", 2);
		else
			put(p, s, 1);
	}
}

void nw_prom_format_value(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, len, "%.0f", v);
	else {
		/* the shortest form that reads back as the same double */
		for (int prec = 6; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
}

int nw_prom_valid_name(const char *s)
{
	if (!s || !*s)
		return 0;
	for (const char *c = s; *c; c++) {
		int alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == ':';
		int digit = *c >= '0' && *c <= '9';
		if (!alpha && !(digit && c != s))
			return 0;
	}
	return 1;
}

void nw_prom_family(struct nw_prom *p, const char *name, const char *type, const char *help)
{
	puts_(p, "# HELP ");
	puts_(p, name);
	put(p, " ", 1);
	nw_prom_escape(p, help, 0);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	put(p, " ", 1);
	puts_(p, type);
	put(p, "\n", 1);
}

/* name{l1="v1",...,extra_name="extra_value"} value\n; extra may be NULL. */
static void line(struct nw_prom *p, const char *name, const char *suffix,
                 const struct nw_label *labels, size_t n, const char *extra_name,
                 const char *extra_value, double v)
{
	puts_(p, name);
	if (suffix)
		puts_(p, suffix);
	if (n || extra_name) {
		put(p, "{", 1);
		for (size_t i = 0; i < n; i++) {
			if (i)
				put(p, ",", 1);
			puts_(p, labels[i].name);
			put(p, "=\"", 2);
			nw_prom_escape(p, labels[i].value ? labels[i].value : "", 1);
			put(p, "\"", 1);
		}
		if (extra_name) {
			if (n)
				put(p, ",", 1);
			puts_(p, extra_name);
			put(p, "=\"", 2);
			nw_prom_escape(p, extra_value, 1);
			put(p, "\"", 1);
		}
		put(p, "}", 1);
	}
	char num[64];
	nw_prom_format_value(v, num, sizeof(num));
	put(p, " ", 1);
	puts_(p, num);
	put(p, "\n", 1);
}

void nw_prom_sample(struct nw_prom *p, const char *name, const struct nw_label *labels,
                    size_t nlabels, double value)
{
	line(p, name, NULL, labels, nlabels, NULL, NULL, value);
}

void nw_prom_histogram(struct nw_prom *p, const char *name, const struct nw_label *labels,
                       size_t nlabels, const double *le, const uint64_t *counts, size_t nbounds,
                       double sum)
{
	uint64_t cum = 0;
	char bound[64];
	for (size_t i = 0; i < nbounds; i++) {
		cum += counts[i];
		nw_prom_format_value(le[i], bound, sizeof(bound));
		line(p, name, "_bucket", labels, nlabels, "le", bound, (double)cum);
	}
	cum += counts[nbounds];
	line(p, name, "_bucket", labels, nlabels, "le", "+Inf", (double)cum);
	line(p, name, "_sum", labels, nlabels, NULL, NULL, sum);
	line(p, name, "_count", labels, nlabels, NULL, NULL, (double)cum);
}
