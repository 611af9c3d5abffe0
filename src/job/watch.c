/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch: the live watcher of a job's stats directory (job.h). Every tick
 * reads the directory once (export/statsfile), and adds: the bandwidth
 * figures since the last tick per communicator, op and size bucket; the
 * ranks' lateness; exposed-communication windows; the flight recorders'
 * new operations (the newest trace_ops per rank kept); hangs as `hang`
 * diagnoses them (model/progress), each said once; anomalies the plugin
 * flagged (slow ops, trace dumps, dropped ops, a disabled plugin).
 */
#include "job/job_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/hangsrc.h"
#include "export/statsfile.h"
#include "model/progress.h"
#include "util/strbuf.h"
#include "util/util.h"

struct nw_jobw *nw_jobw_new(const struct nw_jobw_opts *opts)
{
	struct nw_jobw *w = nw_calloc(1, sizeof(*w));
	w->o = *opts;
	nw_strlcpy(w->dir, opts->dir ? opts->dir : "", sizeof(w->dir));
	w->o.dir = w->dir;
	if (!w->o.trace_ops)
		w->o.trace_ops = 10000;
	if (w->o.hang_s <= 0)
		w->o.hang_s = 120;
	w->stride = w->late_stride = 1;
	w->iv = nw_calloc(JW_MAX_INTERVALS + 1, sizeof(*w->iv));
	return w;
}

void nw_jobw_free(struct nw_jobw *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nf; i++)
		free(w->f[i].ops);
	free(w->f);
	for (size_t i = 0; i <= JW_MAX_INTERVALS; i++)
		free(w->iv[i].c);
	free(w->iv);
	for (size_t i = 0; i < w->nlate; i++) {
		free(w->late[i].rank);
		free(w->late[i].late_us);
	}
	free(w->late);
	free(w->ovl);
	free(w->ovl_windows);
	free(w->inc);
	nw_sample_release(&w->prev);
	free(w);
}

void jw_incident(struct nw_jobw *w, uint64_t t, const char *kind, const char *fmt, ...)
{
	if (w->ninc >= JW_MAX_INC) {
		w->inc_dropped++;
		return;
	}
	if (!w->inc)
		w->inc = nw_calloc(JW_MAX_INC, sizeof(*w->inc));
	struct jw_inc *x = &w->inc[w->ninc++];
	x->t = t;
	nw_strlcpy(x->kind, kind, sizeof(x->kind));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->text, sizeof(x->text), fmt, ap);
	va_end(ap);
}

/* The file of r (added when new). */
static struct jw_file *file_get(struct nw_jobw *w, const struct nw_sf_rank *r)
{
	const struct nws_header *h = &r->hdr;
	for (size_t i = 0; i < w->nf; i++) {
		struct jw_file *f = &w->f[i];
		if (f->comm == h->comm_hash && f->rank == h->rank && f->pid == h->pid && f->proc_start == h->proc_start)
			return f;
	}
	if (w->nf == w->capf) {
		w->capf = w->capf ? w->capf * 2 : 16;
		w->f = nw_realloc(w->f, w->capf * sizeof(*w->f));
	}
	struct jw_file *f = &w->f[w->nf++];
	memset(f, 0, sizeof(*f));
	f->comm = h->comm_hash;
	f->rank = h->rank;
	f->pid = h->pid;
	f->proc_start = h->proc_start;
	f->cap = w->o.trace_ops;
	f->gpu = (h->ident.flags & NWS_IDENT_GPU) ? h->ident.gpu : -1;
	nw_strlcpy(f->host, h->hostname, sizeof(f->host));
	nw_strlcpy(f->name, h->comm_name, sizeof(f->name));
	f->created_ns = h->created_ns;
	return f;
}

/* Keep op in f's timeline (the oldest goes when it is full). */
static void keep_op(struct jw_file *f, const struct nws_opent *e)
{
	if (!f->cap)
		return;
	if (!f->ops)
		f->ops = nw_calloc(f->cap, sizeof(*f->ops));
	struct nw_jop *o;
	if (f->n < f->cap) {
		o = &f->ops[f->n++];
	} else {
		o = &f->ops[f->head];
		f->head = (f->head + 1) % f->cap;
		f->tl_dropped++;
	}
	memset(o, 0, sizeof(*o));
	o->seq = e->seq;
	o->bytes = e->bytes;
	o->enq_ns = e->enq_ns;
	o->start_ns = e->start_ns;
	o->end_ns = e->end_ns;
	o->op = e->op < NWS_NOPS ? e->op : NWS_OP_OTHER;
	o->src = e->src;
	o->flags = e->flags;
	o->nch = e->nchannels;
	o->dtype = e->dtype;
	memcpy(o->algo, e->algo, sizeof(o->algo) - 1);
	memcpy(o->proto, e->proto, sizeof(o->proto) - 1);
	nw_sf_sanitize(o->algo);
	nw_sf_sanitize(o->proto);
}

/* An op flagged slow by the plugin, as an incident (the first 20 of a file). */
static void slow_incident(struct nw_jobw *w, struct jw_file *f, const struct nws_opent *e)
{
	if (f->said_slow >= 20)
		return;
	f->said_slow++;
	char sz[32];
	nw_format_size(e->bytes, sz, sizeof(sz));
	double us = e->end_ns > e->start_ns ? (double)(e->end_ns - e->start_ns) / 1e3 : 0;
	jw_incident(w, e->end_ns, "slow",
	            "slow %s seq %" PRIu64 " of %s B on rank %d of communicator %016" PRIx64 "%s%s%s (%s pid %d): "
	            "%.1f us, far slower than its recent peers (the plugin wrote a trace dump)",
	            nws_op_name(e->op), e->seq, sz, f->rank, f->comm, f->name[0] ? " (" : "", f->name,
	            f->name[0] ? ")" : "", f->host, f->pid, us);
}

/* The flight recorder's entries newer than the last read into the timeline. */
static void take_ring(struct nw_jobw *w, struct jw_file *f, const struct nw_sf_rank *r)
{
	for (size_t i = 0; i < r->nring; i++) {
		const struct nws_opent *e = &r->ring[i];
		if (!e->idx || e->idx <= f->last_idx)
			continue;
		if (e->idx > f->last_idx + 1)
			f->missed += e->idx - f->last_idx - 1;
		f->last_idx = e->idx;
		keep_op(f, e);
		if (e->flags & NWS_OPF_SLOW)
			slow_incident(w, f, e);
	}
}

/* Header figures of r into f, and the anomalies they show for the first time. */
static void file_update(struct nw_jobw *w, struct jw_file *f, const struct nw_sf_rank *r, uint64_t now)
{
	const struct nws_header *h = &r->hdr;
	f->live = (int)r->live;
	f->nranks = h->nranks;
	f->abi = h->abi;
	f->state = h->state;
	f->ops_total = h->ops_total;
	f->ops_dropped = h->ops_dropped;
	f->slow_ops = h->slow_ops;
	f->dumps = h->dumps;
	f->prog = h->prog;
	f->updated_ns = h->updated_ns;
	if (h->comm_name[0] && !f->name[0])
		nw_strlcpy(f->name, h->comm_name, sizeof(f->name));
	nw_strlcpy(f->disabled, h->disabled_reason, sizeof(f->disabled));
	nw_sf_sanitize(f->disabled);
	take_ring(w, f, r);
	if (r->live == NW_SF_DISABLED && !f->said_disabled) {
		f->said_disabled = 1;
		jw_incident(w, now, "disabled", "the plugin disabled itself on rank %d of communicator %016" PRIx64
		            " (%s pid %d): %s; that rank's figures stop there", f->rank, f->comm, f->host, f->pid,
		            f->disabled[0] ? f->disabled : "no reason given");
	}
	if (f->dumps > f->said_dumps) {
		nw_strlcpy(f->last_dump, h->last_dump, sizeof(f->last_dump));
		nw_sf_sanitize(f->last_dump);
		f->new_dump = 1;
		f->said_dumps = f->dumps;
	}
	if (f->ops_dropped && !f->said_dropped) {
		f->said_dropped = 1;
		jw_incident(w, now, "dropped", "rank %d of communicator %016" PRIx64 " (%s pid %d) could not record every "
		            "operation: its in-flight pool was full (%" PRIu64 " dropped so far; NCCLWATCH_POOL)", f->rank,
		            f->comm, f->host, f->pid, f->ops_dropped);
	}
}

/* The dumps written since the last tick: one incident per communicator, its ranks and files named. */
static void dump_incidents(struct nw_jobw *w, uint64_t now)
{
	for (size_t i = 0; i < w->nf; i++) {
		if (!w->f[i].new_dump)
			continue;
		struct nw_strbuf ranks, files;
		nw_strbuf_init(&ranks);
		nw_strbuf_init(&files);
		int n = 0;
		for (size_t k = i; k < w->nf; k++) {
			struct jw_file *f = &w->f[k];
			if (!f->new_dump || f->comm != w->f[i].comm)
				continue;
			nw_strbuf_addf(&ranks, "%s%d", n ? ", " : "", f->rank);
			if (n < 8)
				nw_strbuf_addf(&files, "%s%s", n ? ", " : "", f->last_dump);
			n++;
			f->new_dump = 0;
		}
		jw_incident(w, now, "dump", "rank%s %s of communicator %016" PRIx64 "%s%s%s wrote %s trace dump%s (the "
		            "flight recorder, kept in dumps/): %s%s", n == 1 ? "" : "s", ranks.buf, w->f[i].comm,
		            w->f[i].name[0] ? " (" : "", w->f[i].name, w->f[i].name[0] ? ")" : "", n == 1 ? "a" : "their",
		            n == 1 ? "" : "s", files.buf, n > 8 ? ", ..." : "");
		nw_strbuf_release(&ranks);
		nw_strbuf_release(&files);
	}
}

/* The open interval's cell of (comm, op, bucket). */
static struct jw_cell *cell_get(struct jw_interval *iv, uint64_t comm, unsigned op, unsigned bucket)
{
	for (size_t i = 0; i < iv->n; i++)
		if (iv->c[i].comm == comm && iv->c[i].op == op && iv->c[i].bucket == bucket)
			return &iv->c[i];
	if (iv->n == iv->cap) {
		iv->cap = iv->cap ? iv->cap * 2 : 16;
		iv->c = nw_realloc(iv->c, iv->cap * sizeof(*iv->c));
	}
	struct jw_cell *c = &iv->c[iv->n++];
	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->op = (uint16_t)op;
	c->bucket = (uint16_t)bucket;
	return c;
}

static void cell_add(struct jw_cell *a, const struct jw_cell *b)
{
	a->count += b->count;
	a->bytes += b->bytes;
	for (int k = 0; k < 2; k++) {
		a->t_count[k] += b->t_count[k];
		a->t_bytes[k] += b->t_bytes[k];
		a->t_ns[k] += b->t_ns[k];
	}
}

/* Intervals full: merge neighbours, and from now on make each interval of twice as many samples. */
static void halve_intervals(struct nw_jobw *w)
{
	size_t k = 0;
	for (size_t i = 0; i + 1 < w->niv; i += 2, k++) {
		struct jw_interval a = w->iv[i], *b = &w->iv[i + 1];
		for (size_t j = 0; j < b->n; j++)
			cell_add(cell_get(&a, b->c[j].comm, b->c[j].op, b->c[j].bucket), &b->c[j]);
		a.t1 = b->t1;
		free(b->c);
		b->c = NULL;
		w->iv[k] = a;
	}
	if (w->niv % 2)
		w->iv[k++] = w->iv[w->niv - 1];
	for (size_t i = k; i < w->niv; i++)
		memset(&w->iv[i], 0, sizeof(w->iv[i]));
	w->niv = k;
	w->stride *= 2;
}

/* What entry e of the newest sample added since the previous one (all of it without one). */
static void ent_delta(const struct nw_jobw *w, const struct nw_sample_ent *e, struct nw_sample_ent *d)
{
	const struct nw_sample_ent *b = NULL;
	if (w->have_prev) {
		struct nw_sf_rank key;
		memset(&key, 0, sizeof(key));
		key.hdr.comm_hash = e->comm_hash;
		key.hdr.proc_start = e->proc_start;
		key.hdr.pid = e->pid;
		key.hdr.rank = e->rank;
		b = nw_sample_find(&w->prev, &key, e->op, e->bucket);
	}
	nw_sample_delta(e, b, d);
}

/* What every file did since the last sample, into the open interval. */
static void series_add(struct nw_jobw *w, const struct nw_sample *now, uint64_t now_ns)
{
	struct jw_interval *iv = &w->iv[w->niv];
	if (!w->open) {
		memset(iv, 0, sizeof(*iv));
		iv->t0 = w->prev_ns ? w->prev_ns : now_ns;
		w->open = 1;
		w->in_open = 0;
	}
	for (size_t i = 0; i < now->n; i++) {
		const struct nw_sample_ent *e = &now->e[i];
		struct nw_sample_ent d;
		ent_delta(w, e, &d);
		if (!d.count && !d.t[0].count && !d.t[1].count)
			continue;
		struct jw_cell x = { .count = d.count, .bytes = d.bytes };
		for (int k = 0; k < 2; k++) {
			x.t_count[k] = d.t[k].count;
			x.t_bytes[k] = d.t[k].bytes;
			x.t_ns[k] = d.t[k].sum_ns;
		}
		cell_add(cell_get(iv, e->comm_hash, e->op, e->bucket), &x);
	}
	iv->t1 = now_ns;
	if (++w->in_open >= w->stride) {
		w->open = 0;
		if (++w->niv >= JW_MAX_INTERVALS)
			halve_intervals(w);
	}
}

/* Lateness of each communicator's ranks on this node, every late_stride-th tick. */
static void late_add(struct nw_jobw *w, const struct nw_sf_set *set, uint64_t now_ns)
{
	if (++w->late_skip < w->late_stride)
		return;
	w->late_skip = 0;
	uint64_t comms[JW_MAX_COMMS];
	size_t nc = nw_sf_comms(set, comms, JW_MAX_COMMS);
	struct nw_sf_late *out = nw_calloc(set->n + 1, sizeof(*out));
	for (size_t c = 0; c < nc && c < JW_MAX_COMMS; c++) {
		size_t n = nw_sf_stragglers(set, comms[c], 64, out, set->n);
		if (!n || !out[0].nseq)
			continue;
		if (w->nlate >= JW_MAX_LATE) {
			size_t k = 0;
			for (size_t i = 0; i < w->nlate; i++) {
				if (i % 2) {
					free(w->late[i].rank);
					free(w->late[i].late_us);
				} else
					w->late[k++] = w->late[i];
			}
			w->nlate = k;
			w->late_stride *= 2;
		}
		if (!w->late)
			w->late = nw_calloc(JW_MAX_LATE, sizeof(*w->late));
		struct jw_late *l = &w->late[w->nlate++];
		l->t = now_ns;
		l->comm = comms[c];
		l->n = (int)n;
		l->rank = nw_calloc(n, sizeof(*l->rank));
		l->late_us = nw_calloc(n, sizeof(*l->late_us));
		for (size_t i = 0; i < n; i++) {
			l->rank[i] = out[i].rank;
			l->late_us[i] = out[i].mean_late_us;
		}
	}
	free(out);
}

/* The windows seen so far of pid's exposed-communication measurement (a slot added when new). */
static uint64_t *ovl_seen(struct nw_jobw *w, int pid)
{
	for (size_t i = 0; i < w->novl_pids; i++)
		if ((int)w->ovl_windows[2 * i] == pid)
			return &w->ovl_windows[2 * i + 1];
	w->ovl_windows = nw_realloc(w->ovl_windows, (w->novl_pids + 1) * 2 * sizeof(*w->ovl_windows));
	w->ovl_windows[2 * w->novl_pids] = (uint64_t)pid;
	w->ovl_windows[2 * w->novl_pids + 1] = 0;
	return &w->ovl_windows[2 * w->novl_pids++ + 1];
}

/* New exposed-communication windows (every file of a process holds the same; the largest communicator's rank names it). */
static void ovl_add(struct nw_jobw *w, const struct nw_sf_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct nw_sf_rank *r = &set->ranks[i];
		const struct nws_overlap *o = &r->hdr.ovl;
		if (o->state != NWS_OVL_ON || !o->windows)
			continue;
		const struct nw_sf_rank *big = r;
		for (size_t k = 0; k < set->n; k++)
			if (set->ranks[k].hdr.pid == r->hdr.pid && set->ranks[k].hdr.nranks > big->hdr.nranks)
				big = &set->ranks[k];
		uint64_t *seen = ovl_seen(w, r->hdr.pid);
		if (*seen >= o->windows || w->novl >= JW_MAX_OVL)
			continue;
		*seen = o->windows;
		if (!w->ovl)
			w->ovl = nw_calloc(JW_MAX_OVL, sizeof(*w->ovl));
		w->ovl[w->novl++] = (struct jw_ovl){ .t0 = o->win_start_ns, .t1 = o->win_end_ns, .pid = r->hdr.pid,
			                             .rank = big->hdr.rank, .wall = o->wall_ns, .nccl = o->nccl_ns,
			                             .compute = o->compute_ns, .exposed = o->exposed_ns };
		if (o->alone_windows == 3)
			jw_incident(w, o->win_end_ns, "alone", "collectives run alone on rank %d (%s pid %d): over 90%% of "
			            "NCCL kernel time exposed in 3 windows in a row; check DDP bucket sizes "
			            "(bucket_cap_mb), gradient_as_bucket_view, stream priorities", big->hdr.rank,
			            r->hdr.hostname, r->hdr.pid);
	}
}

/* The diagnosis of a hung communicator as one sentence (docs/hang.md's terms). */
static void hang_text(const struct nw_prog_comm *c, const struct nw_prog_diag *d, uint64_t now, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addf(&sb, "communicator %016" PRIx64 "%s%s%s (%d ranks) is hung", c->comm_hash, c->name[0] ? " \"" : "",
	               c->name, c->name[0] ? "\"" : "", c->nranks);
	if (d->op >= 0)
		nw_strbuf_addf(&sb, " at %s seq %" PRIu64, nws_op_name((unsigned)d->op), d->seq);
	for (size_t k = 0; k < d->nmissing && k < 8; k++) {
		const struct nw_prog_rank *r = &c->ranks[d->missing[k]];
		nw_strbuf_addf(&sb, "%s rank %d (%s pid %d%s", k ? "," : ": not arrived:", r->rank, r->host[0] ? r->host : "?",
		               r->pid, r->dead ? ", process gone" : "");
		if (r->last_op >= 0)
			nw_strbuf_addf(&sb, ", last %s seq %" PRIu64 ")", nws_op_name((unsigned)r->last_op), r->last_seq);
		else
			nw_strbuf_addstr(&sb, ", no operation yet)");
	}
	if (d->nmissing > 8)
		nw_strbuf_addf(&sb, " and %zu more", d->nmissing - 8);
	if (d->ninside) {
		nw_strbuf_addstr(&sb, d->nmissing ? "; inside it:" : ": inside it:");
		for (size_t k = 0; k < d->ninside && k < 16; k++)
			nw_strbuf_addf(&sb, " %d", c->ranks[d->inside[k]].rank);
		if (d->ninside > 16)
			nw_strbuf_addstr(&sb, " ...");
		if (d->wait_ns && now > 0)
			nw_strbuf_addf(&sb, ", waiting %.1f s", (double)d->wait_ns / 1e9);
	}
	if (d->quiet_ns != NW_PROG_UNKNOWN)
		nw_strbuf_addf(&sb, "; no NCCL event for %.1f s", (double)d->quiet_ns / 1e9);
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

static struct jw_hang *hang_slot(struct nw_jobw *w, uint64_t comm)
{
	for (size_t i = 0; i < w->nhang; i++)
		if (w->hang[i].comm == comm)
			return &w->hang[i];
	if (w->nhang >= JW_MAX_COMMS)
		return NULL;
	w->hang[w->nhang] = (struct jw_hang){ .comm = comm };
	return &w->hang[w->nhang++];
}

/* Diagnose every communicator as `hang` would; a hang newly seen becomes an incident and news. */
static void hang_check(struct nw_jobw *w, const struct nw_sf_set *set, uint64_t now, struct nw_jobw_status *st,
                       struct nw_jobw_news *news)
{
	struct nw_prog_set ps = { 0 };
	size_t ndis = 0;
	char err[NW_ERRLEN];
	if (nw_hangsrc_stats(set, &ps, &ndis, err, sizeof(err)) != 0) {
		nw_prog_set_release(&ps);
		return;
	}
	for (size_t i = 0; i < ps.n; i++) {
		struct nw_prog_diag d;
		if (nw_prog_diagnose(&ps.comms[i], now, (uint64_t)(w->o.hang_s * 1e9), &d, err, sizeof(err)) != 0)
			continue;
		struct jw_hang *h = hang_slot(w, ps.comms[i].comm_hash);
		int hung = d.verdict == NW_PROG_HUNG;
		if (hung) {
			char text[512];
			hang_text(&ps.comms[i], &d, now, text, sizeof(text));
			if (st && !st->hung++)
				nw_strlcpy(st->hang_text, text, sizeof(st->hang_text));
			if (h && !h->hung) {
				jw_incident(w, now, "hang", "%s", text);
				if (news && news->n < (int)NW_ARRAY_LEN(news->text))
					nw_strlcpy(news->text[news->n++], text, sizeof(news->text[0]));
			}
		}
		if (h)
			h->hung = hung;
		nw_prog_diag_release(&d);
	}
	nw_prog_set_release(&ps);
}

/* The status figures of the interval just added, and the newest lateness. */
static void status_fill(const struct nw_jobw *w, const struct nw_sf_set *set, const struct nw_sample *now,
                        double dt, struct nw_jobw_status *st)
{
	st->files = (int)set->n;
	int pids[1024], np = 0;
	for (size_t i = 0; i < set->n && np < 1024; i++) {
		int k = 0;
		while (k < np && pids[k] != set->ranks[i].hdr.pid)
			k++;
		if (k == np)
			pids[np++] = set->ranks[i].hdr.pid;
	}
	st->ranks = np;
	st->slow_rank = -1;
	uint64_t calls = 0, bytes[NWS_NOPS] = { 0 }, tb[NWS_NOPS] = { 0 }, tns[NWS_NOPS] = { 0 };
	double fb[NWS_NOPS] = { 0 };
	for (size_t i = 0; i < now->n; i++) {
		const struct nw_sample_ent *e = &now->e[i];
		struct nw_sample_ent d;
		ent_delta(w, e, &d);
		calls += d.count;
		unsigned op = e->op < NWS_NOPS ? e->op : NWS_OP_OTHER;
		bytes[op] += d.bytes;
		int nr = 1;
		for (size_t k = 0; k < set->n; k++)
			if (set->ranks[k].hdr.comm_hash == e->comm_hash)
				nr = set->ranks[k].hdr.nranks > nr ? set->ranks[k].hdr.nranks : nr;
		const struct nw_sample_timing *t;
		if (nw_sample_best(&d, &t) >= 0) {
			tb[op] += t->bytes;
			tns[op] += t->sum_ns;
			fb[op] += nws_busbw_factor(op, nr) * (double)t->bytes;
		}
	}
	st->ops_per_s = dt > 0 && np ? (double)calls / dt / np : 0;
	unsigned top = NWS_NOPS;
	for (unsigned op = 0; op < NWS_NOPS; op++)
		if (bytes[op] && (top == NWS_NOPS || bytes[op] > bytes[top]))
			top = op;
	if (top < NWS_NOPS) {
		nw_strlcpy(st->top_op, nws_op_name(top), sizeof(st->top_op));
		st->top_busbw = tns[top] ? fb[top] / (double)tns[top] : 0;
	}
	for (size_t i = w->nlate; i-- > 0;) {
		const struct jw_late *l = &w->late[i];
		if (l->t != w->late[w->nlate - 1].t)
			break;
		if (l->n && l->late_us[0] > st->slow_late_us) {
			st->slow_rank = l->rank[0];
			st->slow_late_us = l->late_us[0];
			snprintf(st->slow_comm, sizeof(st->slow_comm), "%016" PRIx64, l->comm);
		}
	}
}

int nw_jobw_tick(struct nw_jobw *w, uint64_t now_ns, struct nw_jobw_status *st, struct nw_jobw_news *news)
{
	if (st)
		memset(st, 0, sizeof(*st)), st->slow_rank = -1;
	if (news)
		news->n = 0;
	struct nw_sf_set set;
	char err[NW_ERRLEN];
	if (nw_sf_load(w->dir, &set, err, sizeof(err)) != 0)
		return 0;
	if (!w->first_ns)
		w->first_ns = now_ns;
	w->last_ns = now_ns;
	w->reads++;
	for (size_t i = 0; i < set.n; i++)
		file_update(w, file_get(w, &set.ranks[i]), &set.ranks[i], now_ns);
	dump_incidents(w, now_ns);
	struct nw_sample now;
	nw_sample_take(&set, nw_now(), &now);
	double dt = w->prev_ns && now_ns > w->prev_ns ? (double)(now_ns - w->prev_ns) / 1e9 : 0;
	series_add(w, &now, now_ns);
	late_add(w, &set, now_ns);
	ovl_add(w, &set);
	hang_check(w, &set, now_ns, st, news);
	if (st)
		status_fill(w, &set, &now, dt, st);
	nw_sample_move(&w->prev, &now);
	w->have_prev = 1;
	w->prev_ns = now_ns;
	nw_sf_set_release(&set);
	return 0;
}

int nw_jobw_all_ended(struct nw_jobw *w, int *live)
{
	struct nw_sf_set set;
	char err[NW_ERRLEN];
	*live = 0;
	if (nw_sf_load(w->dir, &set, err, sizeof(err)) != 0)
		return 1;
	for (size_t i = 0; i < set.n; i++)
		*live += set.ranks[i].live == NW_SF_LIVE;
	nw_sf_set_release(&set);
	return *live == 0;
}

void nw_jobw_finish(struct nw_jobw *w, uint64_t now_ns)
{
	for (size_t i = 0; i < w->nf; i++) {
		const struct jw_file *f = &w->f[i];
		if (f->state != NWS_STATE_RUNNING || f->live != NW_SF_STALE)
			continue;
		char last[96] = "no operation enqueued";
		if (f->prog.enq_op < NWS_NOPS)
			snprintf(last, sizeof(last), "its last operation enqueued: %s seq %" PRIu64, nws_op_name(f->prog.enq_op),
			         f->prog.enq_seq);
		jw_incident(w, f->updated_ns ? f->updated_ns : now_ns, "abort",
		            "rank %d of communicator %016" PRIx64 "%s%s%s (%s pid %d) ended without destroying the "
		            "communicator (crashed, killed or aborted); %s%s", f->rank, f->comm, f->name[0] ? " (" : "",
		            f->name, f->name[0] ? ")" : "", f->host, f->pid, last,
		            f->prog.inflight && f->prog.inflight != NW_PROG_UNKNOWN ? ", with operations in flight" : "");
	}
}
