/* SPDX-License-Identifier: Apache-2.0 */
/* The log analyser's storage: a capped two-key hash map, growable arrays, and a string hash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/* Fresh empty slots for cap entries: the map starts at 16 and doubles, keeping at most half the slots used, until max entries. */
static void ht_alloc(struct lg_htab *t, size_t cap)
{
	t->cap = cap;
	t->ka = nw_calloc(cap, sizeof(*t->ka));
	t->kb = nw_calloc(cap, sizeof(*t->kb));
	t->val = nw_calloc(cap, sizeof(*t->val));
	t->used = nw_calloc(cap, 1);
}

void lg_ht_init(struct lg_htab *t, size_t max)
{
	t->max = max;
	t->n = 0;
	ht_alloc(t, 16);
}

void lg_ht_release(struct lg_htab *t)
{
	free(t->ka);
	free(t->kb);
	free(t->val);
	free(t->used);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* The slot holding (a, b), or the empty slot where it would go. */
static size_t ht_slot(const struct lg_htab *t, uint64_t a, uint64_t b)
{
	size_t mask = t->cap - 1;
	size_t i = (size_t)(mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL))) & mask;
	while (t->used[i] && !(t->ka[i] == a && t->kb[i] == b))
		i = (i + 1) & mask;
	return i;
}

/* Twice the slots, every entry moved to its new slot. */
static void ht_grow(struct lg_htab *t)
{
	struct lg_htab old = *t;
	ht_alloc(t, old.cap * 2);
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.used[i])
			continue;
		size_t j = ht_slot(t, old.ka[i], old.kb[i]);
		t->used[j] = 1;
		t->ka[j] = old.ka[i];
		t->kb[j] = old.kb[i];
		t->val[j] = old.val[i];
	}
	lg_ht_release(&old);
}

uint32_t *lg_ht_get(struct lg_htab *t, uint64_t a, uint64_t b, int create, int *created)
{
	if (created)
		*created = 0;
	size_t i = ht_slot(t, a, b);
	if (t->used[i])
		return &t->val[i];
	if (!create || t->n >= t->max)
		return NULL;
	if ((t->n + 1) * 2 > t->cap) {
		ht_grow(t);
		i = ht_slot(t, a, b);
	}
	t->used[i] = 1;
	t->ka[i] = a;
	t->kb[i] = b;
	t->val[i] = UINT32_MAX;
	t->n++;
	if (created)
		*created = 1;
	return &t->val[i];
}

void *lg_grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc <= n)
		nc *= 2;
	p = nw_realloc(p, nc * elem);
	memset((char *)p + *cap * elem, 0, (nc - *cap) * elem);
	*cap = nc;
	return p;
}

uint64_t lg_hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}
