/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress: merging views of a communicator's progress and the
 * cross-rank diagnosis over them (see progress.h and docs/hang.md).
 *
 * One model for stragglers and hangs: ranks that have not enqueued the
 * sequence number others are waiting in are "not arrived"; ranks that
 * started it and whose completion has not been seen are "inside". While
 * events still flow that is a straggler (or just work in progress); when
 * no rank raised an event for hang_s it is a hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/progress.h"
#include "util/util.h"

void nw_prog_rank_init(struct nw_prog_rank *r, int rank)
{
	memset(r, 0, sizeof(*r));
	r->rank = rank;
	for (int op = 0; op < NWS_NOPS; op++)
		r->done[op] = NW_PROG_UNKNOWN;
	r->last_op = -1;
	r->last_bytes = NW_PROG_UNKNOWN;
	r->inflight = NW_PROG_UNKNOWN;
	r->oldest_op = -1;
}

/* arr (n elements of size sz) grown by one, with room made at index at; NULL (arr untouched) when out of memory. */
static void *insert_at(void *arr, size_t n, size_t sz, size_t at)
{
	char *grown = realloc(arr, (n + 1) * sz);
	if (grown)
		memmove(grown + (at + 1) * sz, grown + at * sz, (n - at) * sz);
	return grown;
}

struct nw_prog_rank *nw_prog_rank_get(struct nw_prog_comm *c, int rank)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->ranks[mid].rank == rank)
			return &c->ranks[mid];
		if (c->ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct nw_prog_rank *grown = insert_at(c->ranks, c->n, sizeof(*grown), lo);
	if (!grown)
		return NULL;
	c->ranks = grown;
	c->n++;
	nw_prog_rank_init(&c->ranks[lo], rank);
	return &c->ranks[lo];
}

void nw_prog_comm_release(struct nw_prog_comm *c)
{
	free(c->ranks);
	c->ranks = NULL;
	c->n = 0;
}

/* The larger of two counts where NW_PROG_UNKNOWN means unknown (not large). */
static uint64_t max_known(uint64_t a, uint64_t b)
{
	if (a == NW_PROG_UNKNOWN)
		return b;
	if (b == NW_PROG_UNKNOWN)
		return a;
	return a > b ? a : b;
}

/* Merge one rank's view b into a. */
static void rank_merge(struct nw_prog_rank *a, const struct nw_prog_rank *b)
{
	for (int op = 0; op < NWS_NOPS; op++) {
		a->enq[op] = a->enq[op] > b->enq[op] ? a->enq[op] : b->enq[op];
		a->done[op] = max_known(a->done[op], b->done[op]);
	}
	if (!a->host[0])
		snprintf(a->host, sizeof(a->host), "%s", b->host);
	if (!a->pid)
		a->pid = b->pid;
	if (b->last_op >= 0 && (a->last_op < 0 || b->last_enq_ns > a->last_enq_ns)) {
		a->last_op = b->last_op;
		a->last_seq = b->last_seq;
		a->last_bytes = b->last_bytes;
		a->last_enq_ns = b->last_enq_ns;
	}
	/* in-flight figures and verdicts: the fresher view (the one that saw a later event) */
	int fresher = b->last_event_ns > a->last_event_ns || (!a->src && b->src);
	if (fresher || a->inflight == NW_PROG_UNKNOWN) {
		if (b->inflight != NW_PROG_UNKNOWN || fresher) {
			a->inflight = b->inflight;
			a->oldest_inflight_ns = b->oldest_inflight_ns;
			a->oldest_op = b->oldest_op;
			a->oldest_seq = b->oldest_seq;
			a->completion = b->completion;
		}
	}
	if (fresher) {
		a->hung = b->hung;
		a->finished = b->finished;
		a->seen_ns = b->seen_ns;
	}
	a->last_event_ns = a->last_event_ns > b->last_event_ns ? a->last_event_ns : b->last_event_ns;
	a->dead |= b->dead;
	a->src |= b->src;
}

int nw_prog_merge(struct nw_prog_comm *into, const struct nw_prog_comm *from, char *err, size_t errlen)
{
	if (!into->nranks)
		into->nranks = from->nranks;
	if (!into->name[0])
		snprintf(into->name, sizeof(into->name), "%s", from->name);
	for (size_t i = 0; i < from->n; i++) {
		struct nw_prog_rank *r = nw_prog_rank_get(into, from->ranks[i].rank);
		if (!r)
			return nw_seterr(err, errlen, "out of memory merging progress");
		if (!r->src && !r->last_event_ns && r->last_op < 0)
			*r = from->ranks[i];
		else
			rank_merge(r, &from->ranks[i]);
	}
	return 0;
}

struct nw_prog_comm *nw_prog_set_get(struct nw_prog_set *s, uint64_t comm_hash)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->comms[mid].comm_hash == comm_hash)
			return &s->comms[mid];
		if (s->comms[mid].comm_hash < comm_hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct nw_prog_comm *grown = insert_at(s->comms, s->n, sizeof(*grown), lo);
	if (!grown)
		return NULL;
	s->comms = grown;
	s->n++;
	memset(&s->comms[lo], 0, sizeof(*s->comms));
	s->comms[lo].comm_hash = comm_hash;
	return &s->comms[lo];
}

int nw_prog_set_merge(struct nw_prog_set *s, const struct nw_prog_comm *list, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		struct nw_prog_comm *c = nw_prog_set_get(s, list[i].comm_hash);
		if (!c)
			return nw_seterr(err, errlen, "out of memory merging progress");
		if (nw_prog_merge(c, &list[i], err, errlen) != 0)
			return -1;
	}
	return 0;
}

void nw_prog_set_release(struct nw_prog_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		nw_prog_comm_release(&s->comms[i]);
	free(s->comms);
	s->comms = NULL;
	s->n = 0;
}

void nw_prog_diag_release(struct nw_prog_diag *d)
{
	free(d->missing);
	free(d->inside);
	free(d->unseen);
	memset(d, 0, sizeof(*d));
	d->op = -1;
}

const char *nw_prog_verdict_name(enum nw_prog_verdict v)
{
	static const char *const names[] = { "none", "idle", "straggler", "hung" };
	return (unsigned)v < NW_ARRAY_LEN(names) ? names[v] : "unknown";
}

/* Does rank r count in the diagnosis (some source saw it)? */
static int counted(const struct nw_prog_rank *r)
{
	return r->src != 0 || r->last_event_ns != 0 || r->last_op >= 0;
}

static int in_flight(const struct nw_prog_rank *r)
{
	return r->inflight != NW_PROG_UNKNOWN && r->inflight > 0;
}

/*
 * The collective where the ranks diverge: among ops whose enqueued counts
 * differ between ranks, the one the leading rank waits in (its oldest
 * in-flight op), else its newest op, else the first. -1 when none.
 */
static int diverging_op(const struct nw_prog_comm *c, uint64_t *seq)
{
	int first = -1, lead = -1;
	uint64_t lo_of[NWS_NOPS], best = 0;
	for (int op = 0; op < NWS_OP_SEND; op++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (size_t i = 0; i < c->n; i++) {
			if (!counted(&c->ranks[i]))
				continue;
			uint64_t v = c->ranks[i].enq[op];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		lo_of[op] = lo;
		if (lo == UINT64_MAX || hi == lo)
			continue;
		if (first < 0)
			first = op;
		for (size_t i = 0; i < c->n; i++) /* a leading rank: its waiting op says which divergence matters */
			if (c->ranks[i].enq[op] == hi && c->ranks[i].last_enq_ns >= best) {
				best = c->ranks[i].last_enq_ns;
				lead = c->ranks[i].oldest_op >= 0 && c->ranks[i].oldest_op < NWS_OP_SEND
				       ? c->ranks[i].oldest_op : c->ranks[i].last_op;
			}
	}
	if (first < 0)
		return -1;
	int op = lead >= 0 && lead < NWS_OP_SEND && lo_of[lead] != UINT64_MAX ? lead : first;
	if (op != first) {
		uint64_t hi = 0;
		for (size_t i = 0; i < c->n; i++)
			hi = c->ranks[i].enq[op] > hi ? c->ranks[i].enq[op] : hi;
		if (hi == lo_of[op])
			op = first; /* the leader's op does not diverge */
	}
	*seq = lo_of[op];
	return op;
}

/*
 * Ranks 0..nranks-1 that no source reported, into d->unseen as ranges: their
 * memory grows with the ranks reported (c->n), never with the size a source
 * claims for the communicator.
 */
static int find_unseen(const struct nw_prog_comm *c, struct nw_prog_diag *d)
{
	if (c->nranks <= 0)
		return 0;
	d->unseen = calloc(c->n + 1, sizeof(*d->unseen));
	if (!d->unseen)
		return -1;
	int next = 0; /* lowest rank not yet placed */
	for (size_t j = 0; j < c->n && next < c->nranks; j++) {
		const struct nw_prog_rank *r = &c->ranks[j];
		if (r->rank < next || !counted(r))
			continue;
		if (r->rank > next)
			d->unseen[d->nunseen_ranges++] = (struct nw_prog_range){ next, r->rank - 1 };
		next = r->rank + 1;
	}
	if (next < c->nranks)
		d->unseen[d->nunseen_ranges++] = (struct nw_prog_range){ next, c->nranks - 1 };
	for (size_t k = 0; k < d->nunseen_ranges; k++)
		d->nunseen += (size_t)(d->unseen[k].hi - d->unseen[k].lo) + 1;
	return 0;
}

/* Time since the op began, from what the waiting ranks say (0 unknown). */
static uint64_t wait_since(const struct nw_prog_comm *c, const struct nw_prog_diag *d, uint64_t now)
{
	uint64_t first = 0;
	for (size_t k = 0; k < d->ninside; k++) {
		const struct nw_prog_rank *r = &c->ranks[d->inside[k]];
		if (r->oldest_inflight_ns && (!first || r->oldest_inflight_ns < first))
			first = r->oldest_inflight_ns;
	}
	return first && now > first ? now - first : 0;
}

/* Sort the ranks into not arrived / inside for (op, seq); with op < 0, inside is every rank with ops in flight. */
static void classify_ranks(const struct nw_prog_comm *c, struct nw_prog_diag *d, uint64_t *quiet, uint64_t now)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct nw_prog_rank *r = &c->ranks[i];
		if (!counted(r))
			continue;
		uint64_t seen = r->seen_ns ? r->seen_ns : now;
		if (r->last_event_ns && !r->dead) {
			uint64_t q = seen > r->last_event_ns ? seen - r->last_event_ns : 0;
			*quiet = *quiet == NW_PROG_UNKNOWN || q < *quiet ? q : *quiet;
		}
		if (r->inflight == NW_PROG_UNKNOWN || r->completion == NWS_DONE_NONE)
			d->done_blind = 1;
		if (d->op >= 0 && r->enq[d->op] <= d->seq) {
			d->missing[d->nmissing++] = i;
			continue;
		}
		if (d->op >= 0)
			d->narrived++;
		if (in_flight(r))
			d->inside[d->ninside++] = i;
	}
}

int nw_prog_diagnose(const struct nw_prog_comm *c, uint64_t now, uint64_t hang_ns, struct nw_prog_diag *d,
                     char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->op = -1;
	d->missing = calloc(c->n + 1, sizeof(size_t));
	d->inside = calloc(c->n + 1, sizeof(size_t));
	if (!d->missing || !d->inside || find_unseen(c, d) != 0) {
		nw_prog_diag_release(d);
		return nw_seterr(err, errlen, "out of memory diagnosing communicator %016llx",
		                 (unsigned long long)c->comm_hash);
	}
	d->op = diverging_op(c, &d->seq);
	uint64_t quiet = NW_PROG_UNKNOWN;
	classify_ranks(c, d, &quiet, now);
	d->quiet_ns = quiet;
	int self_hung = 0, all_finished = c->n > 0; /* finished, or whose process is gone: nobody waits any more */
	for (size_t i = 0; i < c->n; i++) {
		const struct nw_prog_rank *r = &c->ranks[i];
		self_hung |= r->hung && !r->finished && !r->dead;
		all_finished &= r->finished || r->dead;
	}
	if (d->op < 0 && d->ninside) { /* nobody behind: the op the ranks are inside */
		const struct nw_prog_rank *old = &c->ranks[d->inside[0]];
		for (size_t k = 1; k < d->ninside; k++)
			if (c->ranks[d->inside[k]].oldest_inflight_ns < old->oldest_inflight_ns)
				old = &c->ranks[d->inside[k]];
		d->op = old->oldest_op;
		d->seq = old->oldest_seq;
	}
	d->wait_ns = wait_since(c, d, now);
	int waiting = d->nmissing > 0 || d->ninside > 0;
	int quiet_long = quiet != NW_PROG_UNKNOWN && quiet >= hang_ns;
	if (all_finished)
		d->verdict = NW_PROG_NONE;
	else if ((waiting && quiet_long) || self_hung)
		d->verdict = NW_PROG_HUNG;
	else if (d->nmissing)
		d->verdict = NW_PROG_STRAGGLER;
	else if (!waiting && quiet_long)
		d->verdict = NW_PROG_IDLE;
	else
		d->verdict = NW_PROG_NONE;
	return 0;
}
