/* The log analyser's storage: a two-key hash map, growable arrays, and the host, process and transport tables. */
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

/* ---- host, process and transport tables ---- */

/* Most lines come from the host of the line before: a one-entry cache answers those without hashing. */
uint32_t lg_host_get(struct nw_log *lg, const char *s, size_t n, int create)
{
	if (n >= LG_NAME)
		n = LG_NAME - 1;
	if (create && n == lg->cached_host_len && n && !memcmp(s, lg->cached_host_name, n))
		return lg->cached_host;
	int created;
	uint32_t *v = lg_ht_get(&lg->host_idx, lg_hash_str(s, n), n, create, &created);
	if (!v) {
		if (create)
			lg->dropped++;
		return UINT32_MAX;
	}
	if (created) {
		lg->hosts = lg_grow(lg->hosts, &lg->cap_hosts, lg->nhosts, sizeof(*lg->hosts));
		*v = (uint32_t)lg->nhosts++;
		copy_str(lg->hosts[*v].name, LG_NAME, s, n);
	}
	if (create) {
		memcpy(lg->cached_host_name, s, n);
		lg->cached_host_len = n;
		lg->cached_host = *v;
	}
	return *v;
}

/* Also cached for the process of the line before (a full table counts one drop per line, cached or not). */
uint32_t lg_proc_get(struct nw_log *lg, uint32_t host, int pid)
{
	if (host == lg->last_host && pid == lg->last_pid && lg->last_valid) {
		if (lg->last_proc == UINT32_MAX)
			lg->dropped++;
		return lg->last_proc;
	}
	int created;
	uint32_t *v = lg_ht_get(&lg->proc_idx, host, (uint64_t)(uint32_t)pid, 1, &created);
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_valid = 1;
	if (!v) {
		lg->dropped++;
		lg->last_proc = UINT32_MAX;
		return UINT32_MAX;
	}
	if (created) {
		lg->procs = lg_grow(lg->procs, &lg->cap_procs, lg->nprocs, sizeof(*lg->procs));
		*v = (uint32_t)lg->nprocs++;
		lg->procs[*v].host = host;
		lg->procs[*v].pid = pid;
		lg->procs[*v].cuda_driver = -1;
	}
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_proc = *v;
	return *v;
}

uint32_t lg_transport_get(struct nw_log *lg, const char *s, size_t n)
{
	if (n >= LG_NAME)
		n = LG_NAME - 1;
	for (size_t i = 0; i < lg->ntransports; i++)
		if (strlen(lg->transports[i].name) == n && !memcmp(lg->transports[i].name, s, n))
			return (uint32_t)i;
	if (lg->ntransports == LG_MAX_TRANSPORTS) {
		lg->dropped++;
		return UINT32_MAX;
	}
	copy_str(lg->transports[lg->ntransports].name, LG_NAME, s, n);
	return (uint32_t)lg->ntransports++;
}
