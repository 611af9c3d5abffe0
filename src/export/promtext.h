/* SPDX-License-Identifier: Apache-2.0 */
/*
 * promtext: a writer for Prometheus' text exposition format 0.0.4.
 *
 * The writer appends to a growable buffer the caller owns (nw_prom_init,
 * nw_prom_release). It escapes label values and HELP text as the format
 * requires, prints numbers so Prometheus parses them back exactly enough
 * (integers exactly, NaN and +Inf/-Inf by name), and writes histograms with
 * cumulative buckets, a final le="+Inf" bucket equal to _count, and _sum.
 * Metric and label names are the caller's constants; they are checked
 * (nw_prom_valid_name) by the unit tests, not on every call.
 */
#ifndef NW_PROMTEXT_H
#define NW_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

/* The Content-Type a /metrics response in this format carries. */
#define NW_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct nw_prom {
	char *buf;  /* NUL-terminated text written so far; owned by the struct */
	size_t len;
	size_t cap;
};

struct nw_label {
	const char *name;   /* [a-zA-Z_][a-zA-Z0-9_]* */
	const char *value;  /* any UTF-8; escaped on output */
};

void nw_prom_init(struct nw_prom *p);
/* Free the buffer; the struct may be initialised again. */
void nw_prom_release(struct nw_prom *p);
/* Take the text out of the writer: the caller frees it; the writer is left empty. */
char *nw_prom_take(struct nw_prom *p, size_t *len);

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge, histogram, untyped). */
void nw_prom_family(struct nw_prom *p, const char *name, const char *type, const char *help);
/* One sample line: name{labels} value. */
void nw_prom_sample(struct nw_prom *p, const char *name, const struct nw_label *labels,
                    size_t nlabels, double value);

/*
 * One histogram series: name_bucket{labels,le="..."} for each upper bound in
 * le[0..nbounds-1] (ascending, finite), then le="+Inf", name_sum and
 * name_count. counts[0..nbounds] are per-bucket (not cumulative) counts:
 * counts[i] observations fell at or below le[i] and above le[i-1], and
 * counts[nbounds] above the last bound. The writer makes them cumulative.
 */
void nw_prom_histogram(struct nw_prom *p, const char *name, const struct nw_label *labels,
                       size_t nlabels, const double *le, const uint64_t *counts, size_t nbounds,
                       double sum);

/* Append a label value or HELP text escaped: backslash, newline (and '"' for labels). */
void nw_prom_escape(struct nw_prom *p, const char *s, int is_label);
/* Format a sample value as the format reads it ("NaN", "+Inf", "42", "0.25"). */
void nw_prom_format_value(double v, char *buf, size_t len);
/* 1 when s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), else 0. */
int nw_prom_valid_name(const char *s);

#endif
