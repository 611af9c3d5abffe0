/* SPDX-License-Identifier: Apache-2.0 */
/*
 * split: NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK read into a rule, the
 * color of a rank, and the job split into its groups (hypercube's
 * power-of-two rule checked in each).
 */
#include "bench/split.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/bench_int.h"
#include "comm/backend.h"
#include "util/util.h"

/*
 * A whole number as nccl-tests reads it (leading blanks, "0b" binary, else
 * C's base prefixes), but strictly: trailing blanks only, no sign, at most
 * INT_MAX. 0, or -1.
 */
static int parse_value(const char *s, int base, unsigned long *out)
{
	while (isspace((unsigned char)*s))
		s++;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	if (base == 0 && (s[0] == '0') && (s[1] == 'b' || s[1] == 'B')) {
		s += 2;
		base = 2;
	}
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, base);
	if (end == s || errno || v > INT_MAX)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

int nw_split_parse(const char *split, const char *mask, struct nw_split *s, char *err, size_t errlen)
{
	static const struct { const char *word; enum nw_split_kind kind; } forms[] = {
		{ "AND", NW_SPLIT_AND }, { "&", NW_SPLIT_AND }, { "OR", NW_SPLIT_OR }, { "|", NW_SPLIT_OR },
		{ "MOD", NW_SPLIT_MOD }, { "%", NW_SPLIT_MOD }, { "DIV", NW_SPLIT_DIV }, { "/", NW_SPLIT_DIV },
	};
	s->kind = NW_SPLIT_NONE;
	s->value = 0;
	s->text[0] = '\0';
	if (mask && !*mask)
		mask = NULL; /* set but empty: as if unset */
	if (split && !*split)
		split = NULL;
	if (mask) {
		if (parse_value(mask, 16, &s->value))
			return nw_seterr(err, errlen, "NCCL_TESTS_SPLIT_MASK='%s' is not a hex mask; give one such as "
			                 "0x1 (ranks with the same rank & mask form a group), or unset it", mask);
		s->kind = NW_SPLIT_AND;
		snprintf(s->text, sizeof(s->text), "NCCL_TESTS_SPLIT_MASK=%s", mask);
		return 0;
	}
	if (!split)
		return 0;
	for (size_t i = 0; i < NW_ARRAY_LEN(forms); i++) {
		size_t n = strlen(forms[i].word);
		if (strncasecmp(split, forms[i].word, n) || parse_value(split + n, 0, &s->value))
			continue;
		s->kind = forms[i].kind;
		if ((s->kind == NW_SPLIT_MOD || s->kind == NW_SPLIT_DIV) && s->value == 0)
			return nw_seterr(err, errlen, "NCCL_TESTS_SPLIT='%s' divides by 0; give a number above 0", split);
		snprintf(s->text, sizeof(s->text), "NCCL_TESTS_SPLIT=%s", split);
		return 0;
	}
	return nw_seterr(err, errlen, "NCCL_TESTS_SPLIT='%s' is not understood; it takes %s, e.g. "
	                 "NCCL_TESTS_SPLIT=\"MOD 2\"", split, NW_SPLIT_FORMS);
}

int nw_split_color(const struct nw_split *s, int rank)
{
	unsigned long r = (unsigned long)rank, v = s->value;
	switch (s->kind) {
	case NW_SPLIT_AND: return (int)(r & v);
	case NW_SPLIT_OR: return (int)(r | v);
	case NW_SPLIT_MOD: return (int)(r % v);
	case NW_SPLIT_DIV: return (int)(r / v);
	default: return 0;
	}
}

/* Is n a power of two (hypercube's need)? */
static int pow2(int n)
{
	return n > 0 && !(n & (n - 1));
}

/*
 * hypercube needs a power-of-two number of ranks in every group (nccl-tests
 * skips it otherwise; here it is refused by name). sizes[k]: ranks of group
 * k, for ngroups groups. 0, or -1 with err (the same on every rank: a usage error).
 */
static int hypercube_fits(const struct nw_bench_opts *o, const int *sizes, int ngroups, char *err, size_t errlen)
{
	int asked = 0;
	for (int i = 0; i < o->nops; i++)
		asked |= o->ops[i] == NW_HYPERCUBE;
	for (int k = 0; asked && k < ngroups; k++)
		if (sizes[k] && !pow2(sizes[k]))
			return nw_seterr(err, errlen, "hypercube needs a power-of-two number of ranks%s (%s has %d); "
			                 "start 2, 4, 8 ... ranks%s", ngroups > 1 ? " in every group" : "",
			                 ngroups > 1 ? "a group" : "this run", sizes[k],
			                 ngroups > 1 ? " per group (NCCL_TESTS_SPLIT)" : "");
	return 0;
}

/* Colors gathered, groups counted, the backend split; see bench_int.h. */
enum nw_bench_status bs_split_job(const struct nw_bench_opts *o, struct nw_backend *be, struct nw_group *g,
                                  struct nw_run *run, char *err, size_t errlen)
{
	if (o->split.kind == NW_SPLIT_NONE)
		return hypercube_fits(o, &be->nranks, 1, err, errlen) ? NW_BENCH_USAGE : NW_BENCH_OK;
	if (!be->ops->split) {
		nw_seterr(err, errlen, "%s: the %s backend cannot split into groups", o->split.text, be->name);
		return NW_BENCH_USAGE;
	}
	int mine = nw_split_color(&o->split, g->rank);
	int *colors = nw_calloc((size_t)g->size, sizeof(int)), *sizes = nw_calloc((size_t)g->size, sizeof(int));
	enum nw_bench_status rc = NW_BENCH_FAILED;
	if (nw_group_allgather(g, &mine, colors, sizeof(int), err, errlen))
		goto out;
	/* group k: the k-th distinct color, in rank order */
	int ngroups = 0, *ids = nw_calloc((size_t)g->size, sizeof(int));
	for (int p = 0; p < g->size; p++) {
		int k = 0;
		while (k < p && colors[k] != colors[p])
			k++;
		ids[p] = k < p ? ids[k] : ngroups++;
		sizes[ids[p]] += be->nlocal;
	}
	free(ids);
	if (hypercube_fits(o, sizes, ngroups, err, errlen)) {
		rc = NW_BENCH_USAGE;
		goto out;
	}
	if (be->ops->split(be, mine, err, errlen))
		goto out;
	rc = NW_BENCH_OK;
	run->h.nranks = be->nranks;
	json_t *devs = run->h.extra ? json_object_get(run->h.extra, "devices") : NULL;
	for (size_t i = 0; i < json_array_size(devs); i++)
		json_object_set_new(json_array_get(devs, i), "group", json_integer(colors[i / (size_t)be->nlocal]));
	if (run->h.extra)
		json_object_set_new(run->h.extra, "split", json_string(o->split.text));
out:
	free(colors);
	free(sizes);
	return rc;
}
