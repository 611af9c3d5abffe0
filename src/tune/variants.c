/* SPDX-License-Identifier: Apache-2.0 */
/* tune variants: which settings to try, and for which collectives. */
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/util.h"

#define OP(x) (1u << (x))
#define ALL_OPS ((1u << NW_NOPS) - 1)
/* Ops that NCCL runs through its collective algorithms (not point-to-point). */
#define COLL_OPS (OP(NW_ALL_REDUCE) | OP(NW_ALL_GATHER) | OP(NW_REDUCE_SCATTER) | \
                  OP(NW_BROADCAST) | OP(NW_REDUCE))

struct builtin {
	unsigned group;
	const char *name, *value;
	unsigned ops;
	int needs_nvls;
};

/*
 * NCCL 2.28's algorithms and the collectives each can run (NCCL's
 * algorithm table): Ring all five; Tree all_reduce only; PAT all_gather
 * and reduce_scatter (NCCL uses it with one GPU per node); NVLS and
 * NVLSTree need NVLink SHARP (NVSwitch) and are tried only when
 * NCCL_NVLS_ENABLE is not 0. CollNet needs a SHARP network plugin and is
 * left to --var. Protocols, channels, threads and buffers apply to every op
 * (send/recv included).
 */
static const struct builtin builtins[] = {
	{ NW_TG_PROTO, "NCCL_PROTO", "LL", ALL_OPS, 0 },
	{ NW_TG_PROTO, "NCCL_PROTO", "LL128", ALL_OPS, 0 },
	{ NW_TG_PROTO, "NCCL_PROTO", "Simple", ALL_OPS, 0 },
	{ NW_TG_ALGO, "NCCL_ALGO", "Ring", COLL_OPS, 0 },
	{ NW_TG_ALGO, "NCCL_ALGO", "Tree", OP(NW_ALL_REDUCE), 0 },
	{ NW_TG_ALGO, "NCCL_ALGO", "PAT", OP(NW_ALL_GATHER) | OP(NW_REDUCE_SCATTER), 0 },
	{ NW_TG_ALGO, "NCCL_ALGO", "NVLS", OP(NW_ALL_REDUCE) | OP(NW_ALL_GATHER) | OP(NW_REDUCE_SCATTER), 1 },
	{ NW_TG_ALGO, "NCCL_ALGO", "NVLSTree", OP(NW_ALL_REDUCE), 1 },
	{ NW_TG_CHANNELS, "NCCL_MIN_NCHANNELS", "16", ALL_OPS, 0 },
	{ NW_TG_CHANNELS, "NCCL_MIN_NCHANNELS", "32", ALL_OPS, 0 },
	{ NW_TG_CHANNELS, "NCCL_MAX_NCHANNELS", "4", ALL_OPS, 0 },
	{ NW_TG_CHANNELS, "NCCL_MAX_NCHANNELS", "8", ALL_OPS, 0 },
	{ NW_TG_NTHREADS, "NCCL_NTHREADS", "256", ALL_OPS, 0 },
	{ NW_TG_NTHREADS, "NCCL_NTHREADS", "512", ALL_OPS, 0 },
	{ NW_TG_BUFFSIZE, "NCCL_BUFFSIZE", "1048576", ALL_OPS, 0 },
	{ NW_TG_BUFFSIZE, "NCCL_BUFFSIZE", "16777216", ALL_OPS, 0 },
};

static const struct { const char *name; unsigned bit; } groups[] = {
	{ "algo", NW_TG_ALGO }, { "proto", NW_TG_PROTO }, { "channels", NW_TG_CHANNELS },
	{ "nthreads", NW_TG_NTHREADS }, { "buffsize", NW_TG_BUFFSIZE },
};

int nw_tune_groups_parse(const char *spec, unsigned *mask, char *err, size_t errlen)
{
	*mask = 0;
	if (!spec || !*spec)
		return nw_seterr(err, errlen, "--settings: empty; give e.g. 'proto,algo', 'all' or 'none'");
	if (!strcmp(spec, "all")) {
		*mask = NW_TG_ALL;
		return 0;
	}
	if (!strcmp(spec, "none"))
		return 0;
	const char *p = spec;
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i;
		for (i = 0; i < NW_ARRAY_LEN(groups); i++)
			if (strlen(groups[i].name) == len && !strncmp(groups[i].name, p, len))
				break;
		if (i == NW_ARRAY_LEN(groups))
			return nw_seterr(err, errlen, "--settings: unknown group '%.*s' (use algo, proto, channels, nthreads, buffsize, all or none)",
			                 (int)len, p);
		*mask |= groups[i].bit;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

void nw_tune_variants_init(struct nw_tune_variants *vs)
{
	memset(vs, 0, sizeof(*vs));
}

void nw_tune_variants_release(struct nw_tune_variants *vs)
{
	free(vs->v);
	memset(vs, 0, sizeof(*vs));
}

/* Appends a variant (name may be NULL for one that sets nothing); returns it, owned by vs. */
struct nw_tune_variant *nw_tune_variants_add(struct nw_tune_variants *vs, const char *label,
                                             const char *name, const char *value, unsigned opmask)
{
	if (vs->n == vs->cap) {
		vs->cap = vs->cap ? vs->cap * 2 : 16;
		vs->v = nw_realloc(vs->v, (size_t)vs->cap * sizeof(*vs->v));
	}
	struct nw_tune_variant *v = &vs->v[vs->n++];
	memset(v, 0, sizeof(*v));
	v->opmask = opmask;
	v->status = NW_TV_ACTIVE;
	if (name) {
		nw_strlcpy(v->set[0].name, name, sizeof(v->set[0].name));
		nw_strlcpy(v->set[0].value, value, sizeof(v->set[0].value));
		v->nset = 1;
	}
	if (label)
		nw_strlcpy(v->label, label, sizeof(v->label));
	else
		snprintf(v->label, sizeof(v->label), "%s=%s", name ? name : "", value ? value : "");
	return v;
}

static int has(const struct nw_tune_variants *vs, const char *name, const char *value)
{
	for (int i = 0; i < vs->n; i++)
		if (vs->v[i].nset == 1 && !strcmp(vs->v[i].set[0].name, name) &&
		    !strcmp(vs->v[i].set[0].value, value))
			return 1;
	return 0;
}

static int valid_name(const char *s, size_t len)
{
	if (len == 0 || len >= sizeof(((struct nw_tune_setting *)0)->name) || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/* One --var "NAME=v1,v2": a variant per value. */
static int add_var(struct nw_tune_variants *vs, const char *spec, unsigned opmask, char *err,
                   size_t errlen)
{
	const char *eq = strchr(spec, '=');
	if (!eq || !valid_name(spec, (size_t)(eq - spec)))
		return nw_seterr(err, errlen, "--var '%s': expected NAME=v1,v2,... with NAME made of letters, digits and '_'", spec);
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
	if (!strcmp(name, "NCCL_NVLS_ENABLE"))
		return nw_seterr(err, errlen, "--var: NCCL_NVLS_ENABLE is left as it is set; set it before running tune instead");
	const char *p = eq + 1;
	if (!*p)
		return nw_seterr(err, errlen, "--var '%s': no values after '='", spec);
	while (*p) {
		size_t len = strcspn(p, ",");
		char value[128];
		if (len == 0)
			return nw_seterr(err, errlen, "--var '%s': empty value", spec);
		if (len >= sizeof(value))
			return nw_seterr(err, errlen, "--var '%s': value longer than %zu characters", spec, sizeof(value) - 1);
		snprintf(value, sizeof(value), "%.*s", (int)len, p);
		if (!has(vs, name, value))
			nw_tune_variants_add(vs, NULL, name, value, opmask);
		p += len;
		if (*p == ',' && !*++p)
			return nw_seterr(err, errlen, "--var '%s': empty value", spec);
	}
	return 0;
}

/* Builds the list; see tune.h. */
int nw_tune_variants_build(struct nw_tune_variants *vs, unsigned groups_mask, unsigned opmask,
                           int nvls_enabled, char *const *vars, int nvars, char *err,
                           size_t errlen)
{
	nw_tune_variants_add(vs, "default", NULL, NULL, opmask);
	for (int i = 0; i < nvars; i++)
		if (add_var(vs, vars[i], opmask, err, errlen) != 0)
			return -1;
	for (size_t i = 0; i < NW_ARRAY_LEN(builtins); i++) {
		const struct builtin *b = &builtins[i];
		if (!(groups_mask & b->group) || (b->needs_nvls && !nvls_enabled))
			continue;
		if (!(b->ops & opmask) || has(vs, b->name, b->value))
			continue;
		nw_tune_variants_add(vs, NULL, b->name, b->value, b->ops & opmask);
	}
	return 0;
}

/* The ops of mask as a comma list, in enum order; see tune.h. */
void nw_tune_ops_list(unsigned mask, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (enum nw_op op = 0; op < NW_NOPS; op++)
		if (mask & (1u << op))
			nw_strbuf_addf(&sb, "%s%s", sb.len ? "," : "", nw_coll_get(op)->name);
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* A comma list of collectives into an op mask; see tune.h. */
int nw_tune_ops_parse(const char *spec, const char *what, unsigned *mask, char *err, size_t errlen)
{
	*mask = 0;
	const char *p = spec;
	if (!*p)
		return nw_seterr(err, errlen, "%s: empty list; give e.g. all_reduce,all_gather", what);
	while (*p) {
		size_t n = strcspn(p, ",");
		char name[32];
		if (n == 0 || n >= sizeof(name))
			return nw_seterr(err, errlen, "%s: bad list '%s'", what, spec);
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		const struct nw_coll *c = nw_coll_find(name);
		if (!c)
			return nw_seterr(err, errlen, "%s: unknown collective '%s' (all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, gather, scatter)",
			                 what, name);
		*mask |= 1u << c->op;
		p += n;
		if (*p)
			p++;
	}
	return 0;
}
