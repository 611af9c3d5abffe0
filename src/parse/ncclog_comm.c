/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL INFO lines about communicators: init lines and ranks, channels, rings, and the transport of each peer pair. */
#include <stdint.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/* What rank_flags records per rank, so that repeated lines count once. */
enum { RANK_INIT_START = 1, RANK_INIT_COMPLETE = 2, RANK_BUS = 4 };

/* The communicator that process proc last set up on device dev, or NULL; *idx its index (idx may be NULL). */
static struct lg_comm *comm_of_dev(struct nw_log *lg, uint32_t proc, int dev, uint32_t *idx)
{
	uint32_t *v = lg_ht_get(&lg->comm_dev, proc, (uint64_t)(uint32_t)dev, 0, NULL);
	if (!v || *v == UINT32_MAX)
		return NULL;
	if (idx)
		*idx = *v;
	return &lg->comms[*v];
}

/* What a communicator line says about its communicator and rank. */
struct comm_line {
	uint64_t ptr;      /* the communicator's address in its process */
	uint64_t id;       /* commId (or commHash), when has_id */
	int has_id;
	long long rank, nranks;
};

/* Read a communicator line into cl; 0 when it is not one to record (Destroy, Abort, no valid rank and size). */
static int comm_line_parse(const char *s, size_t n, struct comm_line *cl)
{
	const char *v;
	size_t vn = after_key(s, n, "comm", &v), used;
	if (!vn)
		return 0;
	cl->ptr = parse_hex(v, vn, &used);
	if (find(s, n, "Destroy") || find(s, n, "Abort"))
		return 0;
	cl->rank = key_ll(s, n, "rank", -1);
	cl->nranks = key_ll(s, n, "nranks", -1);
	if (cl->nranks < 0)
		cl->nranks = key_ll(s, n, "nRanks", -1);
	if (cl->rank < 0 || cl->nranks <= 0 || cl->rank >= cl->nranks || cl->nranks > (1 << 20))
		return 0;
	cl->id = 0;
	cl->has_id = 0;
	if ((vn = after_key(s, n, "commId", &v)) || (vn = after_key(s, n, "commHash", &v))) {
		cl->id = parse_hex(v, vn, &used);
		cl->has_id = used > 0;
	}
	return 1;
}

/*
 * The communicator of a line: by its commId when it has one, else the one
 * this process already knows at that address, else the one of that size
 * (NCCL versions that print no id); created when new. UINT32_MAX when the
 * table is full.
 */
static uint32_t comm_find(struct nw_log *lg, uint32_t proc, const struct comm_line *cl)
{
	uint32_t *pv = lg_ht_get(&lg->comm_ptr, proc, cl->ptr, 0, NULL);
	if (!cl->has_id && pv && *pv != UINT32_MAX)
		return *pv;
	int created;
	uint32_t *kv = lg_ht_get(&lg->comm_key, cl->has_id ? cl->id : (uint64_t)cl->nranks, (uint64_t)cl->has_id, 1, &created);
	if (!kv) {
		lg->dropped++;
		return UINT32_MAX;
	}
	if (created) {
		lg->comms = lg_grow(lg->comms, &lg->cap_comms, lg->ncomms, sizeof(*lg->comms));
		*kv = (uint32_t)lg->ncomms++;
		struct lg_comm *c = &lg->comms[*kv];
		c->id = cl->id;
		c->has_id = cl->has_id;
		c->nranks = (int)cl->nranks;
		c->nnodes = c->local_ranks = -1;
	}
	return *kv;
}

/* "nNodes X localRanks L" of a communicator line. */
static void comm_counts(struct lg_comm *c, const char *s, size_t n)
{
	long long nnodes = key_ll(s, n, "nNodes", -1), local = key_ll(s, n, "localRanks", -1);
	if (nnodes > 0)
		c->nnodes = (int)nnodes;
	if (local > 0)
		c->local_ranks = (int)local;
}

/*
 * What a process said of a device before any communicator line named it
 * (NCCL 2.9 prints "comm 0x.. - Init COMPLETE" after the ring order and
 * trees): kept per process and device, given to the communicator when its
 * line comes. NULL when the table is full or there is no process.
 */
static struct lg_pending *pending_get(struct nw_log *lg, const struct lg_from *from, int create)
{
	if (from->proc == UINT32_MAX || (create && lg->ncomms == LG_MAX_COMMS))
		return NULL; /* no communicator can be recorded any more to take it */
	int created;
	uint32_t *v = lg_ht_get(&lg->pend_idx, from->proc, (uint64_t)(uint32_t)from->dev, create, &created);
	if (!v)
		return NULL;
	if (created) {
		lg->pend = lg_grow(lg->pend, &lg->cap_pend, lg->npend, sizeof(*lg->pend));
		*v = (uint32_t)lg->npend++;
		lg->pend[*v].proc = from->proc;
		lg->pend[*v].dev = from->dev;
	}
	return *v == UINT32_MAX ? NULL : &lg->pend[*v];
}

/* Give communicator c what its process said of the device before (pending_get), once. */
static void pending_take(struct nw_log *lg, const struct lg_from *from, struct lg_comm *c)
{
	if (!lg->npend)
		return;
	struct lg_pending *p = pending_get(lg, from, 0);
	if (!p || (!p->nchannels && !p->tree_lines))
		return;
	if (!c->ring[0])
		nw_strlcpy(c->ring, p->ring, sizeof(c->ring));
	if (p->nchannels > c->nchannels)
		c->nchannels = p->nchannels;
	if (!c->tree[0])
		nw_strlcpy(c->tree, p->tree, sizeof(c->tree));
	c->tree_lines += p->tree_lines;
	p->nchannels = p->tree_lines = 0;
	p->ring[0] = p->tree[0] = '\0';
}

/* Remember communicator ci as the one at this address and on this device of the process; note its node counts. */
static void comm_note(struct nw_log *lg, const struct lg_from *from, uint32_t ci, const struct comm_line *cl,
                      const char *s, size_t n)
{
	struct lg_comm *c = &lg->comms[ci];
	uint32_t *slot = lg_ht_get(&lg->comm_ptr, from->proc, cl->ptr, 1, NULL);
	if (slot)
		*slot = ci;
	slot = lg_ht_get(&lg->comm_dev, from->proc, (uint64_t)(uint32_t)from->dev, 1, NULL);
	if (slot)
		*slot = ci;
	if (cl->nranks == 1) {
		lg->procs[from->proc].size1 = 1;
		lg_fact(lg, F_SIZE1, from->host, s, n);
	}
	comm_counts(c, s, n);
	pending_take(lg, from, c);
}

/* The slot of rank in communicator ci (created, on the process's host, when new); UINT32_MAX when the table is full. */
static uint32_t rank_get(struct nw_log *lg, uint32_t ci, uint32_t proc, long long rank)
{
	int created;
	uint32_t *rv = lg_ht_get(&lg->rank_idx, ci, (uint64_t)rank, 1, &created);
	if (!rv) {
		lg->dropped++;
		return UINT32_MAX;
	}
	if (created) {
		lg->rank_host = lg_grow(lg->rank_host, &lg->cap_rank_host, lg->nranks, sizeof(*lg->rank_host));
		lg->rank_bus = lg_grow(lg->rank_bus, &lg->cap_rank_bus, lg->nranks, sizeof(*lg->rank_bus));
		lg->rank_flags = lg_grow(lg->rank_flags, &lg->cap_rank_flags, lg->nranks, 1);
		*rv = (uint32_t)lg->nranks++;
		lg->rank_host[*rv] = lg->procs[proc].host;
		lg->comms[ci].ranks_seen++;
	}
	return *rv;
}

/* "busId B": the rank's GPU (the first one said), and a rank of the same communicator already on that host and GPU. */
static void rank_bus(struct nw_log *lg, uint32_t ci, uint32_t ri, uint32_t proc, long long rank, const char *s, size_t n)
{
	const char *v;
	size_t vn = after_key(s, n, "busId", &v), used;
	if (!vn)
		return;
	uint64_t bus = parse_hex(v, vn, &used);
	if (!used || (lg->rank_flags[ri] & RANK_BUS))
		return;
	lg->rank_flags[ri] |= RANK_BUS;
	lg->rank_bus[ri] = bus;
	uint32_t host = lg->procs[proc].host;
	int created;
	uint32_t *gv = lg_ht_get(&lg->gpu_idx, ((uint64_t)ci << 32) | host, bus, 1, &created);
	if (gv && created)
		*gv = (uint32_t)rank;
	else if (gv && *gv != (uint32_t)rank && lg->ndups < LG_MAX_DUPS) {
		struct lg_dup *d = &lg->dups[lg->ndups++];
		*d = (struct lg_dup){ ci, (int)*gv, (int)rank, host, bus, "" };
		copy_str(d->line, sizeof(d->line), s, n);
	}
}

/*
 * "Init START" and "Init COMPLETE", once per rank. The communicator keeps
 * an "Init START" line of a rank that has not completed yet (its evidence
 * of an init that did not finish): the first, or a later one once the
 * kept rank completed.
 */
static void rank_init(struct nw_log *lg, uint32_t ci, uint32_t ri, long long rank, const char *s, size_t n)
{
	struct lg_comm *c = &lg->comms[ci];
	if (find(s, n, "Init START") && !(lg->rank_flags[ri] & RANK_INIT_START)) {
		lg->rank_flags[ri] |= RANK_INIT_START;
		c->init_started++;
		if (!c->start_line[0]) {
			copy_str(c->start_line, sizeof(c->start_line), s, n);
			c->start_rank = (int)rank;
		}
	}
	if (find(s, n, "Init COMPLETE") && !(lg->rank_flags[ri] & RANK_INIT_COMPLETE)) {
		lg->rank_flags[ri] |= RANK_INIT_COMPLETE;
		c->init_completed++;
		if (c->start_line[0] && c->start_rank == rank)
			c->start_line[0] = '\0';
	}
}

/*
 * "ncclCommInitRank[Config] comm 0x.. rank R nranks N cudaDev D [nvmlDev X] busId B [commId 0x..] - Init START|COMPLETE"
 * "comm 0x.. rank R nranks N cudaDev D busId B - Init COMPLETE" (older, no commId)
 * "comm 0x.. rank R nRanks N nNodes X localRanks L localRank l MNNVL m"
 */
/*
 * "comm 0x55aa rank 1 nranks 4 cudaDev 1 busId 41000 - Abort COMPLETE": a
 * communicator aborted (ncclCommAbort), with the error line read last
 * before the first abort. Returns 1 when the line was one.
 */
static int comm_abort(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	size_t e = n;
	while (e && (s[e - 1] == ' ' || s[e - 1] == '\r'))
		e--;
	/* the line ends so: a tail test, not a search of every communicator line */
	if (!(e >= 14 && !memcmp(s + e - 14, "Abort COMPLETE", 14)) && !(e >= 11 && !memcmp(s + e - 11, "Abort START", 11)))
		return 0;
	long long rank = key_ll(s, n, "rank", -1), nranks = key_ll(s, n, "nranks", -1);
	if (nranks > 0)
		lg_note_rank(lg, nranks - 1);
	for (size_t k = 0; k < lg->nabort_ranks; k++)
		if (lg->abort_ranks[k] == rank)
			return 1;
	if (!lg->facts[F_ABORT].n)
		nw_strlcpy(lg->abort_after, lg->last_error_line, sizeof(lg->abort_after));
	lg_fact(lg, F_ABORT, from->host, s, n);
	if (lg->nabort_ranks < NW_ARRAY_LEN(lg->abort_ranks))
		lg->abort_ranks[lg->nabort_ranks++] = rank >= 0 && rank < (1 << 24) ? (int)rank : -1;
	return 1;
}

/* Note that process proc ran a communicator on device dev (its lines before that, on "[0]", are not a rank). */
static void dev_used(struct nw_log *lg, const struct lg_from *from)
{
	if (from->proc != UINT32_MAX && from->dev >= 0 && from->dev < 64)
		lg->procs[from->proc].devs_used |= 1ull << from->dev;
}

int lg_info_comm(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "comm 0x") && !starts(s, n, "ncclComm"))
		return 0;
	if (comm_abort(lg, from, s, n))
		return 1;
	struct comm_line cl;
	if (!comm_line_parse(s, n, &cl))
		return 1;
	uint32_t ci = comm_find(lg, from->proc, &cl);
	if (ci == UINT32_MAX)
		return 1;
	if (!lg->comms[ci].first_line[0])
		copy_str(lg->comms[ci].first_line, sizeof(lg->comms[ci].first_line), s, n);
	dev_used(lg, from);
	if (from->proc == UINT32_MAX) {
		/* its host was cut in pasting: the communicator's size and nodes, no rank of a process */
		comm_counts(&lg->comms[ci], s, n);
		lg->comms[ci].hostless = 1;
		lg_note_rank(lg, cl.rank);
		return 1;
	}
	comm_note(lg, from, ci, &cl, s, n);
	uint32_t ri = rank_get(lg, ci, from->proc, cl.rank);
	if (ri == UINT32_MAX)
		return 1;
	rank_bus(lg, ci, ri, from->proc, cl.rank, s, n);
	rank_init(lg, ci, ri, cl.rank, s, n);
	return 1;
}

/* The transport named s[0..n), created when new. */
static uint32_t transport_get(struct nw_log *lg, const char *s, size_t n)
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

/* "... : 0[0] -> 1[1] [send] via ...": the two ranks between the colon and " via "; 0 when they are not there. */
static int connection_ranks(const char *s, const char *via, long long *src, long long *dst)
{
	const char *colon = memchr(s, ':', (size_t)(via - s));
	if (!colon)
		return 0;
	const char *p = colon + 1, *e = via;
	while (p < e && *p == ' ')
		p++;
	size_t used;
	*src = parse_ll(p, (size_t)(e - p), &used);
	if (!used)
		return 0;
	const char *arrow = find_n(p, (size_t)(e - p), "->", 2);
	if (!arrow)
		return 0;
	p = arrow + 2;
	while (p < e && *p == ' ')
		p++;
	*dst = parse_ll(p, (size_t)(e - p), &used);
	return used && *src >= 0 && *dst >= 0 && *src <= (1 << 20) && *dst <= (1 << 20);
}

/* The transport named after " via " (up to " comm ", NIC indexes dropped); UINT32_MAX when its table is full. */
/* The NIC index of a network transport ("NET/IB/2/GDRDMA", "COLLNET/SHARP/5"), as a bit (0 when none or over 63). */
static uint64_t transport_nic(const char *t, size_t n)
{
	if (!starts(t, n, "NET/") && !starts(t, n, "COLLNET/") && !starts(t, n, "CollNet/"))
		return 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && t[j] != '/')
			j++;
		if (j > i && is_digit(t[i])) {
			size_t used;
			long long v = parse_ll(t + i, j - i, &used);
			return used && v >= 0 && v < 64 ? 1ull << v : 0;
		}
		i = j + 1;
	}
	return 0;
}

static uint32_t connection_transport(struct nw_log *lg, const char *s, size_t n, const char *via, uint64_t *nic)
{
	const char *t = via + 5, *te = s + n;
	const char *cut = find_n(t, (size_t)(te - t), " comm ", 6);
	if (cut)
		te = cut;
	while (te > t && (te[-1] == ' ' || te[-1] == '\r'))
		te--;
	*nic = transport_nic(t, (size_t)(te - t));
	char name[LG_NAME];
	size_t nn = normalize_transport(t, (size_t)(te - t), name, sizeof(name));
	return transport_get(lg, name, nn);
}

/* Keep line s as a sample of transport ti for the pair (ci, src, dst), among its first LG_TR_SAMPLES pairs. */
static void transport_sample(struct nw_log *lg, uint32_t ti, uint32_t ci, int src, int dst, const char *s, size_t n)
{
	if (ti == UINT32_MAX)
		return;
	struct lg_transport *t = &lg->transports[ti];
	if (t->nsamples == LG_TR_SAMPLES)
		return;
	t->samples[t->nsamples].comm = ci;
	t->samples[t->nsamples].src = src;
	t->samples[t->nsamples].dst = dst;
	copy_str(t->samples[t->nsamples].line, LG_QUOTE, s, n);
	t->nsamples++;
}

/*
 * One more connection of pair (src, dst) of communicator ci (dst -1: the
 * collective network) over transport ti, said by line s (kept as a sample
 * of the transport when the pair is new).
 */
static void pair_add(struct nw_log *lg, uint32_t ci, int src, int dst, uint32_t ti, uint64_t nic, const char *s, size_t n)
{
	int created;
	uint32_t *v = lg_ht_get(&lg->pair_idx, ci, ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst, 1, &created);
	if (!v) {
		lg->dropped++;
		return;
	}
	if (created) {
		lg->pairs = lg_grow(lg->pairs, &lg->cap_pairs, lg->npairs, sizeof(*lg->pairs));
		*v = (uint32_t)lg->npairs++;
		lg->pairs[*v] = (struct lg_pair){ ci, src, dst, ti, 0, 0 };
		transport_sample(lg, ti, ci, src, dst, s, n);
	}
	lg->pairs[*v].connections++;
	lg->pairs[*v].nics |= nic;
	if (lg->pairs[*v].transport == UINT32_MAX)
		lg->pairs[*v].transport = ti;
}

/* "Channel 00/0 : 0[0] -> 1[1] [send] via P2P/direct pointer" (also "Ring 00 : ..." before 2.5). */
static void info_connection(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n, const char *via)
{
	long long src, dst;
	if (!connection_ranks(s, via, &src, &dst))
		return;
	lg_note_rank(lg, src);
	lg_note_rank(lg, dst);
	long long nr = key_ll(s, n, "nRanks", -1); /* "... via P2P/IPC comm 0x.. nRanks 32" */
	if (nr > 0)
		lg_note_rank(lg, nr - 1);
	if (from->proc == UINT32_MAX)
		return;
	uint64_t nic;
	uint32_t ti = connection_transport(lg, s, n, via, &nic);
	uint32_t ci = UINT32_MAX;
	comm_of_dev(lg, from->proc, from->dev, &ci);
	/* the rank that prints a connection is its receiver for "[receive]", else its sender: it runs on this host */
	uint32_t *own = lg_ht_get(&lg->conn_host, ci, (uint64_t)(find(s, n, "[receive]") ? dst : src), 1, NULL);
	if (own && *own == UINT32_MAX)
		*own = lg->procs[from->proc].host;
	dev_used(lg, from);
	pair_add(lg, ci, (int)src, (int)dst, ti, nic, s, n);
}

/* "Channel 00/24 : 0 1" (ring order, 2.5+) or "Ring 00 : 0 1 2 3" (older). */
static void info_ring_order(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n), *colon = memchr(s, ':', n);
	if (!colon || memchr(colon, '[', (size_t)(s + n - colon)))
		return; /* "Channel 00/0 : 6[" is a connection line cut short (by Ray), not a ring */
	for (const char *p = colon + 1; p < s + n;) {
		size_t used;
		long long r = parse_ll(p, (size_t)(s + n - p), &used);
		if (used)
			lg_note_rank(lg, r);
		p += used ? used : 1;
	}
	dev_used(lg, from);
	/* the communicator of the device, or, before its line (NCCL 2.9), the device's pending record */
	struct lg_comm *c = comm_of_dev(lg, from->proc, from->dev, NULL);
	struct lg_pending *pd = c ? NULL : pending_get(lg, from, 1);
	int *nch = c ? &c->nchannels : pd ? &pd->nchannels : NULL;
	char *ring = c ? c->ring : pd ? pd->ring : NULL;
	if (!nch)
		return;
	if (slash && slash < colon) {
		size_t used;
		long long total = parse_ll(slash + 1, (size_t)(colon - slash - 1), &used);
		if (used && total > *nch && total < 4096)
			*nch = (int)total;
	} else {
		size_t used;
		long long ch = parse_ll(s + 5, n > 5 ? n - 5 : 0, &used);
		if (used && ch + 1 > *nch && ch < 4096)
			*nch = (int)ch + 1;
	}
	if (!ring[0]) {
		const char *p = colon + 1, *e = s + n;
		size_t w = 0, cap = sizeof(c->ring);
		int space = 0;
		while (p < e && w + 2 < cap) {
			if (*p == ' ') {
				space = w > 0;
			} else {
				if (space)
					ring[w++] = ' ';
				space = 0;
				ring[w++] = (unsigned char)*p < 0x20 ? '?' : *p;
			}
			p++;
		}
		ring[w] = '\0';
	}
}

void lg_note_rank(struct nw_log *lg, long long r)
{
	if (r >= 0 && r < (1 << 20) && r + 1 > lg->ranks_hint)
		lg->ranks_hint = (int)r + 1;
}

int lg_info_channel(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "Channel "))
		return 0;
	const char *via = find(s, n, " via ");
	if (via)
		info_connection(lg, from, s, n, via);
	else
		info_ring_order(lg, from, s, n);
	return 1;
}

/*
 * "CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA": rank 5's
 * connection to the collective network (SHARP), a pair whose other end is
 * the network (dst -1).
 */
int lg_info_collnet_channel(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	const char *via = find(s, n, " via "), *colon = memchr(s, ':', n);
	if (!starts(s, n, "CollNet ") || !via || !colon || colon > via)
		return 0;
	size_t used;
	const char *r = colon + 1;
	while (r < via && *r == ' ')
		r++;
	long long rank = parse_ll(r, (size_t)(via - r), &used);
	if (!used || rank < 0 || rank >= (1 << 20))
		return 1;
	lg_note_rank(lg, rank);
	if (from->proc == UINT32_MAX)
		return 1;
	uint64_t nic;
	uint32_t ti = connection_transport(lg, s, n, via, &nic);
	uint32_t ci = UINT32_MAX;
	comm_of_dev(lg, from->proc, from->dev, &ci);
	dev_used(lg, from);
	pair_add(lg, ci, (int)rank, -1, ti, nic, s, n);
	return 1;
}

/* Before 2.5 "Ring" lines gave connections ("via"), ring order, or ring neighbours ("->"), which are only counted. */
int lg_info_ring(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "Ring "))
		return 0;
	const char *via = find(s, n, " via ");
	if (via) {
		info_connection(lg, from, s, n, via);
	} else if (find(s, n, "->")) {
		struct lg_comm *c = comm_of_dev(lg, from->proc, from->dev, NULL);
		if (c)
			c->ring_lines++;
	} else {
		info_ring_order(lg, from, s, n);
	}
	return 1;
}

int lg_info_tree(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "Tree ") && !starts(s, n, "Trees "))
		return 0;
	struct lg_comm *c = comm_of_dev(lg, from->proc, from->dev, NULL);
	struct lg_pending *pd = c ? NULL : pending_get(lg, from, 1);
	if (!c && !pd)
		return 1;
	char *tree = c ? c->tree : pd->tree;
	if (c)
		c->tree_lines++;
	else
		pd->tree_lines++;
	dev_used(lg, from);
	if (!tree[0] && starts(s, n, "Trees ")) {
		/* "Trees [0] -1/-1/-1->1->0 [1] ...": keep channel 0's */
		const char *e = s + 6;
		while (e < s + n && *e != ' ')
			e++;
		if (e < s + n)
			e++;
		while (e < s + n && *e != ' ')
			e++;
		copy_str(tree, sizeof(c->tree), s + 6, (size_t)(e - (s + 6)));
	}
	return 1;
}
