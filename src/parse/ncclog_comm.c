/* NCCL INFO lines about communicators: init lines and ranks, channels, rings, and the transport of each peer pair. */
#include <stdint.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"

struct lg_comm *lg_comm_of_dev(struct nw_log *lg, uint32_t proc, int dev, uint32_t *idx)
{
	uint32_t *v = lg_ht_get(&lg->comm_dev, proc, (uint64_t)(uint32_t)dev, 0, NULL);
	if (!v || *v == UINT32_MAX)
		return NULL;
	if (idx)
		*idx = *v;
	return &lg->comms[*v];
}

/*
 * "ncclCommInitRank[Config] comm 0x.. rank R nranks N cudaDev D [nvmlDev X] busId B [commId 0x..] - Init START|COMPLETE"
 * "comm 0x.. rank R nranks N cudaDev D busId B - Init COMPLETE" (older, no commId)
 * "comm 0x.. rank R nRanks N nNodes X localRanks L localRank l MNNVL m"
 */
void lg_info_comm(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n)
{
	const char *v;
	size_t vn = after_key(s, n, "comm", &v), used;
	if (!vn || proc == UINT32_MAX)
		return;
	uint64_t ptr = parse_hex(v, vn, &used);
	if (find(s, n, "Destroy") || find(s, n, "Abort"))
		return;
	long long rank = key_ll(s, n, "rank", -1);
	long long nranks = key_ll(s, n, "nranks", -1);
	if (nranks < 0)
		nranks = key_ll(s, n, "nRanks", -1);
	if (rank < 0 || nranks <= 0 || rank >= nranks || nranks > (1 << 20))
		return;
	uint64_t id = 0;
	int has_id = 0;
	if ((vn = after_key(s, n, "commId", &v)) || (vn = after_key(s, n, "commHash", &v))) {
		id = parse_hex(v, vn, &used);
		has_id = used > 0;
	}
	uint32_t ci = UINT32_MAX;
	uint32_t *pv = lg_ht_get(&lg->comm_ptr, proc, ptr, 0, NULL);
	if (pv && *pv != UINT32_MAX)
		ci = *pv;
	if (has_id || ci == UINT32_MAX) {
		int created;
		uint32_t *kv = lg_ht_get(&lg->comm_key, has_id ? id : (uint64_t)nranks, (uint64_t)has_id, 1, &created);
		if (!kv) {
			lg->dropped++;
			return;
		}
		if (created) {
			lg->comms = lg_grow(lg->comms, &lg->cap_comms, lg->ncomms, sizeof(*lg->comms));
			*kv = (uint32_t)lg->ncomms++;
			struct lg_comm *c = &lg->comms[*kv];
			c->id = id;
			c->has_id = has_id;
			c->nranks = (int)nranks;
			c->nnodes = c->local_ranks = -1;
		}
		ci = *kv;
	}
	struct lg_comm *c = &lg->comms[ci];
	uint32_t *slot = lg_ht_get(&lg->comm_ptr, proc, ptr, 1, NULL);
	if (slot)
		*slot = ci;
	slot = lg_ht_get(&lg->comm_dev, proc, (uint64_t)(uint32_t)dev, 1, NULL);
	if (slot)
		*slot = ci;
	if (nranks == 1)
		lg->procs[proc].size1 = 1;
	long long nnodes = key_ll(s, n, "nNodes", -1), local = key_ll(s, n, "localRanks", -1);
	if (nnodes > 0)
		c->nnodes = (int)nnodes;
	if (local > 0)
		c->local_ranks = (int)local;

	int created;
	uint32_t *rv = lg_ht_get(&lg->rank_idx, ci, (uint64_t)rank, 1, &created);
	if (!rv) {
		lg->dropped++;
		return;
	}
	if (created) {
		lg->rank_host = lg_grow(lg->rank_host, &lg->cap_rank_host, lg->nranks, sizeof(*lg->rank_host));
		lg->rank_bus = lg_grow(lg->rank_bus, &lg->cap_rank_bus, lg->nranks, sizeof(*lg->rank_bus));
		lg->rank_flags = lg_grow(lg->rank_flags, &lg->cap_rank_flags, lg->nranks, 1);
		*rv = (uint32_t)lg->nranks++;
		lg->rank_host[*rv] = lg->procs[proc].host;
		c->ranks_seen++;
	}
	uint32_t ri = *rv;
	if ((vn = after_key(s, n, "busId", &v))) {
		uint64_t bus = parse_hex(v, vn, &used);
		if (used && !(lg->rank_flags[ri] & 4)) {
			lg->rank_flags[ri] |= 4;
			lg->rank_bus[ri] = bus;
			uint32_t *gv = lg_ht_get(&lg->gpu_idx, ((uint64_t)ci << 32) | lg->procs[proc].host, bus, 1, &created);
			if (gv && created)
				*gv = (uint32_t)rank;
			else if (gv && *gv != (uint32_t)rank && lg->ndups < LG_MAX_DUPS)
				lg->dups[lg->ndups++] = (struct lg_dup){ ci, (int)*gv, (int)rank, lg->procs[proc].host, bus };
		}
	}
	if (find(s, n, "Init START") && !(lg->rank_flags[ri] & 1)) {
		lg->rank_flags[ri] |= 1;
		c->init_started++;
	}
	if (find(s, n, "Init COMPLETE") && !(lg->rank_flags[ri] & 2)) {
		lg->rank_flags[ri] |= 2;
		c->init_completed++;
	}
}

/* Drop NIC/port indexes from a transport: "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA". */
static size_t normalize_transport(const char *s, size_t n, char *out, size_t len)
{
	size_t w = 0, i = 0;
	while (i < n && w + 1 < len) {
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		int numeric = j > i;
		for (size_t k = i; k < j; k++)
			if (!is_digit(s[k]) && s[k] != '(' && s[k] != ')')
				numeric = 0;
		if (!numeric && j > i) {
			if (w && w + 1 < len)
				out[w++] = '/';
			for (size_t k = i; k < j && w + 1 < len; k++)
				out[w++] = s[k];
		}
		i = j + 1;
	}
	out[w] = '\0';
	return w;
}

/* "Channel 00/0 : 0[0] -> 1[1] [send] via P2P/direct pointer" (also "Ring 00 : ..." before 2.5). */
void lg_info_connection(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n, const char *via)
{
	const char *colon = memchr(s, ':', (size_t)(via - s));
	if (!colon || proc == UINT32_MAX)
		return;
	const char *p = colon + 1, *e = via;
	while (p < e && *p == ' ')
		p++;
	size_t used;
	long long src = parse_ll(p, (size_t)(e - p), &used);
	if (!used)
		return;
	const char *arrow = memmem(p, (size_t)(e - p), "->", 2);
	if (!arrow)
		return;
	p = arrow + 2;
	while (p < e && *p == ' ')
		p++;
	long long dst = parse_ll(p, (size_t)(e - p), &used);
	if (!used || src < 0 || dst < 0 || src > (1 << 20) || dst > (1 << 20))
		return;
	const char *t = via + 5, *te = s + n;
	const char *cut = memmem(t, (size_t)(te - t), " comm ", 6);
	if (cut)
		te = cut;
	while (te > t && (te[-1] == ' ' || te[-1] == '\r'))
		te--;
	char name[LG_NAME];
	size_t nn = normalize_transport(t, (size_t)(te - t), name, sizeof(name));
	uint32_t ti = lg_transport_get(lg, name, nn);
	uint32_t ci = UINT32_MAX;
	lg_comm_of_dev(lg, proc, dev, &ci);
	int created;
	uint32_t *v = lg_ht_get(&lg->pair_idx, ci, ((uint64_t)src << 32) | (uint64_t)dst, 1, &created);
	if (!v) {
		lg->dropped++;
		return;
	}
	if (created) {
		lg->pairs = lg_grow(lg->pairs, &lg->cap_pairs, lg->npairs, sizeof(*lg->pairs));
		*v = (uint32_t)lg->npairs++;
		lg->pairs[*v] = (struct lg_pair){ ci, (int)src, (int)dst, ti, 0 };
	}
	lg->pairs[*v].connections++;
	if (lg->pairs[*v].transport == UINT32_MAX)
		lg->pairs[*v].transport = ti;
}

/* "Channel 00/24 : 0 1" (ring order, 2.5+) or "Ring 00 : 0 1 2 3" (older). */
void lg_info_ring_order(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n)
{
	struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
	if (!c)
		return;
	const char *slash = memchr(s, '/', n), *colon = memchr(s, ':', n);
	if (!colon)
		return;
	if (slash && slash < colon) {
		size_t used;
		long long total = parse_ll(slash + 1, (size_t)(colon - slash - 1), &used);
		if (used && total > c->nchannels && total < 4096)
			c->nchannels = (int)total;
	} else {
		size_t used;
		long long ch = parse_ll(s + 5, n > 5 ? n - 5 : 0, &used);
		if (used && ch + 1 > c->nchannels && ch < 4096)
			c->nchannels = (int)ch + 1;
	}
	if (!c->ring[0]) {
		const char *p = colon + 1, *e = s + n;
		size_t w = 0;
		int space = 0;
		while (p < e && w + 2 < sizeof(c->ring)) {
			if (*p == ' ') {
				space = w > 0;
			} else {
				if (space)
					c->ring[w++] = ' ';
				space = 0;
				c->ring[w++] = (unsigned char)*p < 0x20 ? '?' : *p;
			}
			p++;
		}
		c->ring[w] = '\0';
	}
}

