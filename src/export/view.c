/* SPDX-License-Identifier: Apache-2.0 */
/* The table of `ncclwatch top` (see view.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/hangsrc.h"
#include "export/hist.h"
#include "export/view.h"
#include "util/strbuf.h"
#include "util/util.h"

static const char *const sort_names[NW_VIEW_NSORT] = { "comm", "busbw", "rate", "time", "busy" };

int nw_view_sort_find(const char *name)
{
	if (!strcmp(name, "calls"))
		return NW_VIEW_SORT_RATE;
	for (int i = 0; i < NW_VIEW_NSORT; i++)
		if (!strcmp(name, sort_names[i]))
			return i;
	return -1;
}

const char *nw_view_sort_name(enum nw_view_sort s)
{
	return (unsigned)s < NW_VIEW_NSORT ? sort_names[s] : "comm";
}

/* 1 when r's communicator matches the filter (hex id prefix or name substring). */
static int comm_matches(const struct nw_sf_rank *r, const char *want)
{
	if (!want || !*want)
		return 1;
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)r->hdr.comm_hash);
	return !strncmp(hex, want, strlen(want)) || strstr(r->hdr.comm_name, want);
}

/* Sum of one rank's op over every size bucket: now minus prev (or life). */
static void op_delta(const struct nw_sf_rank *r, unsigned op, const struct nw_sample *now,
                     const struct nw_sample *prev, struct nw_sample_ent *sum,
                     struct nw_sample_ent *life)
{
	memset(sum, 0, sizeof(*sum));
	memset(life, 0, sizeof(*life));
	for (unsigned b = 0; b < NWS_NBUCKETS; b++) {
		const struct nw_sample_ent *e = nw_sample_find(now, r, op, b);
		if (!e)
			continue;
		struct nw_sample_ent d;
		nw_sample_delta(e, prev ? nw_sample_find(prev, r, op, b) : NULL, &d);
		nw_sample_add(sum, &d);
		nw_sample_add(life, e);
	}
}

/* Lateness of every rank of every communicator in set, into the rows. */
static void fill_lateness(const struct nw_sf_set *set, size_t window, struct nw_view *v)
{
	size_t ncomm = nw_sf_comms(set, NULL, 0);
	if (!ncomm)
		return;
	uint64_t *comms = nw_calloc(ncomm, sizeof(*comms));
	nw_sf_comms(set, comms, ncomm);
	struct nw_sf_late *late = nw_calloc(set->n ? set->n : 1, sizeof(*late));
	for (size_t c = 0; c < ncomm; c++) {
		size_t nl = nw_sf_stragglers(set, comms[c], window, late, set->n);
		for (size_t i = 0; i < nl; i++) {
			if (!late[i].nseq)
				continue;
			for (size_t k = 0; k < v->n; k++) {
				struct nw_view_row *row = &v->rows[k];
				if (row->comm_hash != comms[c] || row->rank != late[i].rank ||
				    row->pid != late[i].r->hdr.pid)
					continue;
				row->late_us = late[i].mean_late_us;
				/* a tie is nobody's fault: mark only a clear last */
				row->straggler = i == 0 && nl >= 2 && late[0].mean_late_us > late[1].mean_late_us;
			}
		}
	}
	free(late);
	free(comms);
}

/* Descending order of two figures (ascending when rev), unknown (NAN or negative) last. */
static int cmp_num_desc(double a, double b, int rev)
{
	/* unknown values (NAN, negative) sort last */
	int ua = isnan(a) || a < 0, ub = isnan(b) || b < 0;
	if (ua != ub)
		return ua - ub;
	if (ua)
		return 0;
	int c = a > b ? -1 : a < b ? 1 : 0;
	return rev ? -c : c;
}

/* Communicator, op, rank, pid order. */
static int cmp_comm(const struct nw_view_row *a, const struct nw_view_row *b)
{
	if (a->comm_hash != b->comm_hash)
		return a->comm_hash < b->comm_hash ? -1 : 1;
	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/*
 * qsort_r comparator (ctx: the options): the chosen sort key, turned
 * around when reversed (unknown values still last), ties in communicator
 * order (the whole order turned around for a reversed comm sort).
 */
static int cmp_row(const void *pa, const void *pb, void *ctx)
{
	const struct nw_view_row *a = pa, *b = pb;
	const struct nw_view_opts *o = ctx;
	int c = 0;
	if (a->hung != b->hung)
		return a->hung ? -1 : 1;
	switch (o->sort) {
	case NW_VIEW_SORT_BUSBW:
		c = cmp_num_desc(a->src >= 0 ? a->busbw_gbs : NAN, b->src >= 0 ? b->busbw_gbs : NAN, o->reverse);
		break;
	case NW_VIEW_SORT_RATE:
		c = cmp_num_desc(a->calls_per_s, b->calls_per_s, o->reverse);
		break;
	case NW_VIEW_SORT_TIME:
		c = cmp_num_desc(a->p50_us, b->p50_us, o->reverse);
		break;
	case NW_VIEW_SORT_BUSY:
		c = cmp_num_desc(a->busy, b->busy, o->reverse);
		break;
	default:
		break;
	}
	if (c)
		return c;
	c = cmp_comm(a, b);
	return o->reverse && o->sort == NW_VIEW_SORT_COMM ? -c : c;
}

/* Count r in v's tally of live, finished, disabled and stale files. */
static void count_state(struct nw_view *v, const struct nw_sf_rank *r)
{
	switch (r->live) {
	case NW_SF_LIVE: v->nlive++; break;
	case NW_SF_FINISHED: v->nfinished++; break;
	case NW_SF_DISABLED: v->ndisabled++; break;
	default: v->nstale++; break;
	}
}

/* The figures of one rank's op: d over the interval (dt s; 0: none), life since the file began. */
static void fill_row(struct nw_view_row *row, const struct nw_sf_rank *r, unsigned op,
                     const struct nw_sample_ent *d, const struct nw_sample_ent *life, double dt,
                     const double *le)
{
	double life_s = r->hdr.updated_ns > r->hdr.created_ns
	                ? (double)(r->hdr.updated_ns - r->hdr.created_ns) * 1e-9 : 0;
	memset(row, 0, sizeof(*row));
	row->comm_hash = r->hdr.comm_hash;
	nw_strlcpy(row->comm_name, r->hdr.comm_name, sizeof(row->comm_name));
	nw_strlcpy(row->host, r->hdr.hostname, sizeof(row->host));
	row->pid = r->hdr.pid;
	row->rank = r->hdr.rank;
	row->nranks = r->hdr.nranks;
	row->op = op;
	row->live = r->live;
	row->calls = life->count;
	row->bytes = life->bytes;
	row->interval = dt > 0;
	if (dt > 0)
		row->calls_per_s = (double)d->count / dt;
	else
		row->calls_per_s = life_s > 0 ? (double)life->count / life_s : NAN;
	/* times: the interval's when it timed anything, else the life's */
	const struct nw_sample_timing *t;
	row->src = nw_sample_best(d, &t);
	if (row->src < 0)
		row->src = nw_sample_best(life, &t);
	row->p50_us = row->p99_us = NAN;
	if (row->src >= 0) {
		double secs = (double)t->sum_ns * 1e-9;
		row->busbw_gbs = (double)t->bytes / secs / 1e9 * nws_busbw_factor(op, row->nranks);
		row->p50_us = nw_hist_quantile(le, t->hist, NW_SAMPLE_NBOUNDS, 0.5) * 1e6;
		row->p99_us = nw_hist_quantile(le, t->hist, NW_SAMPLE_NBOUNDS, 0.99) * 1e6;
	}
	row->busy = nw_sf_busy_est(r);
	row->late_us = NAN;
}

/* One row per op of rank r that the filter keeps and that ran at least once, appended to v. */
static void add_rank_rows(struct nw_view *v, size_t *cap, const struct nw_sf_rank *r,
                          const struct nw_sample *now, const struct nw_sample *prev, double dt,
                          const struct nw_view_opts *o, const double *le)
{
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		if (o->op && *o->op && !strstr(nws_op_name(op), o->op))
			continue;
		struct nw_sample_ent d, life;
		op_delta(r, op, now, dt > 0 ? prev : NULL, &d, &life);
		if (!life.count)
			continue;
		if (v->n == *cap) {
			*cap = *cap ? *cap * 2 : 32;
			v->rows = nw_realloc(v->rows, *cap * sizeof(*v->rows));
		}
		fill_row(&v->rows[v->n++], r, op, &d, &life, dt, le);
	}
}

/* The line that names a hung communicator, where it stopped and who has not arrived. */
static void hang_text(char *buf, size_t len, const struct nw_prog_comm *c, const struct nw_prog_diag *d)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addf(&sb, "HUNG: communicator %016" PRIx64 "%s%s%s", c->comm_hash, c->name[0] ? " (" : "", c->name,
	               c->name[0] ? ")" : "");
	if (d->op >= 0)
		nw_strbuf_addf(&sb, " at %s seq %" PRIu64, nws_op_name((unsigned)d->op), d->seq);
	if (d->quiet_ns != NW_PROG_UNKNOWN)
		nw_strbuf_addf(&sb, ", no NCCL event for %.0f s", (double)d->quiet_ns / 1e9);
	for (size_t k = 0; k < d->nmissing; k++) {
		const struct nw_prog_rank *r = &c->ranks[d->missing[k]];
		nw_strbuf_addf(&sb, "%s %d", k ? "," : "; not arrived: rank", r->rank);
		if (r->last_op >= 0)
			nw_strbuf_addf(&sb, " (last %s seq %" PRIu64 ")", nws_op_name((unsigned)r->last_op), r->last_seq);
	}
	for (size_t k = 0; k < d->ninside; k++)
		nw_strbuf_addf(&sb, "%s %d", k ? "" : "; inside:", c->ranks[d->inside[k]].rank);
	if (d->nunseen)
		nw_strbuf_addf(&sb, "; %zu rank%s not on this node", d->nunseen, d->nunseen == 1 ? "" : "s");
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* How long without events makes waiting a hang for c: what its plugins use (NCCLWATCH_HANG_S), else 120 s. */
static uint64_t hang_after(const struct nw_sf_set *set, uint64_t comm_hash)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->ranks[i].hdr.comm_hash == comm_hash && set->ranks[i].hdr.prog.hang_after_ns > ns)
			ns = set->ranks[i].hdr.prog.hang_after_ns;
	return ns ? ns : 120 * 1000000000ull;
}

/* Diagnose every shown communicator; the hung ones into v->hangs, their rows marked. */
static void find_hangs(const struct nw_sf_set *set, const struct nw_view_opts *o, struct nw_view *v)
{
	struct nw_prog_set ps = { 0 };
	char err[NW_ERRLEN];
	size_t ndisabled;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (nw_hangsrc_stats(set, &ps, &ndisabled, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < ps.n; i++) {
			const struct nw_prog_comm *c = &ps.comms[i];
			struct nw_prog_diag d;
			if (nw_prog_diagnose(c, now, hang_after(set, c->comm_hash), &d, err, sizeof(err)) != 0)
				continue;
			int hung = d.verdict == NW_PROG_HUNG, shown = 0;
			for (size_t k = 0; k < v->n; k++)
				if (v->rows[k].comm_hash == c->comm_hash) {
					v->rows[k].hung = hung;
					shown = 1;
				}
			if (hung && (shown || !o->comm)) {
				v->hangs = nw_realloc(v->hangs, (v->nhangs + 1) * sizeof(*v->hangs));
				v->hangs[v->nhangs].comm_hash = c->comm_hash;
				hang_text(v->hangs[v->nhangs].text, sizeof(v->hangs[v->nhangs].text), c, &d);
				v->nhangs++;
			}
			nw_prog_diag_release(&d);
		}
	}
	nw_prog_set_release(&ps);
}

/* Note r's process's exposed communication once per process (the entry of its largest communicator). */
static void add_ovl(struct nw_view *v, size_t *cap, const struct nw_sf_rank *r)
{
	const struct nws_header *h = &r->hdr;
	if (h->ovl.state != NWS_OVL_ON && h->ovl.state != NWS_OVL_STOPPED)
		return;
	struct nw_view_ovl *p = NULL;
	for (size_t i = 0; i < v->novl && !p; i++)
		if (v->ovl[i].pid == h->pid && !strcmp(v->ovl[i].host, h->hostname))
			p = &v->ovl[i];
	if (p && p->nranks >= h->nranks)
		return;
	if (!p) {
		if (v->novl == *cap) {
			size_t ncap = *cap ? *cap * 2 : 8;
			struct nw_view_ovl *n = realloc(v->ovl, ncap * sizeof(*n));
			if (!n)
				return;
			v->ovl = n;
			*cap = ncap;
		}
		p = &v->ovl[v->novl++];
	}
	snprintf(p->host, sizeof(p->host), "%s", h->hostname);
	snprintf(p->comm_name, sizeof(p->comm_name), "%s", h->comm_name[0] ? h->comm_name : "-");
	p->pid = h->pid;
	p->rank = h->rank;
	p->nranks = h->nranks;
	p->o = h->ovl;
}

void nw_view_build(const struct nw_sf_set *set, const struct nw_sample *now,
                   const struct nw_sample *prev, const struct nw_view_opts *o, struct nw_view *v)
{
	memset(v, 0, sizeof(*v));
	v->nfiles = set->n + set->nhidden;
	v->nbad = nw_sf_nbad(set);
	v->nstale = v->nhidden = set->nhidden;
	double le[NW_SAMPLE_NBOUNDS];
	nw_sample_bounds(le);
	size_t cap = 0, ocap = 0;
	double dt = prev && now ? now->t - prev->t : 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct nw_sf_rank *r = &set->ranks[i];
		count_state(v, r);
		if (r->live == NW_SF_STALE && !o->all) {
			v->nhidden++;
			continue;
		}
		if (!comm_matches(r, o->comm))
			continue;
		if (r->hdr.nranks == 1 && !r->hdr.ops_total)
			v->nsolo++; /* NCCL sends no events for them: say so, do not look broken */
		v->ngraph += r->hdr.graph_ops;
		nw_view_modes_add(&v->modes, &r->hdr);
		add_rank_rows(v, &cap, r, now, prev, dt, o, le);
		add_ovl(v, &ocap, r);
	}
	fill_lateness(set, o->late_window, v);
	find_hangs(set, o, v);
	if (v->n > 1)
		qsort_r(v->rows, v->n, sizeof(*v->rows), cmp_row, (void *)o);
}

void nw_view_release(struct nw_view *v)
{
	free(v->rows);
	free(v->hangs);
	free(v->ovl);
	memset(v, 0, sizeof(*v));
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void nw_view_format_ovl(char *buf, size_t len, const struct nw_view_ovl *p)
{
	const struct nws_overlap *o = &p->o;
	char who[200];
	snprintf(who, sizeof(who), "rank %d/%d (%s, pid %d on %s)", p->rank, p->nranks, p->comm_name, (int)p->pid,
	         p->host);
	if (o->state == NWS_OVL_STOPPED)
		snprintf(buf, len, "exposed communication: %s: off: %s", who, o->reason);
	else if (!o->windows)
		snprintf(buf, len, "exposed communication: %s: no window done yet (one every %.0fs)", who,
		         (double)o->period_ns / 1e9);
	else
		snprintf(buf, len, "exposed communication: %s: %.1f%% of wall time; NCCL kernels %.1f%%, %.1f%% of that "
		         "exposed; compute kernels %.1f%% (last %.2fs window: %llu kernels%s%s; %llu window%s)", who,
		         pct(o->exposed_ns, o->wall_ns), pct(o->nccl_ns, o->wall_ns), pct(o->exposed_ns, o->nccl_ns),
		         pct(o->compute_ns, o->wall_ns), (double)o->wall_ns / 1e9, (unsigned long long)o->kernels,
		         o->dropped ? ", records lost: " : "", o->dropped ? "figures low" : "",
		         (unsigned long long)o->windows, o->windows == 1 ? "" : "s");
}

void nw_view_modes_add(struct nw_view_modes *m, const struct nws_header *h)
{
	unsigned i = nws_mode_index(h->abi);
	if (!i)
		return;
	m->n[i]++;
	m->blind[i] |= h->mode.blind;
	if (i == NWS_MODE_INTERPOSER)
		m->nccl[i] = nws_abi_nccl_code(h->abi);
}

int nw_view_mode_note(char *buf, size_t len, const struct nw_view_modes *m, unsigned i)
{
	if (i >= NWS_NMODES || !m->n[i] || !m->blind[i])
		return 0;
	size_t nfiles = m->n[i];
	uint32_t blind = m->blind[i];
	unsigned v = m->nccl[i];
	char who[64];
	if (i == NWS_MODE_INTERPOSER && v)
		snprintf(who, sizeof(who), "interposer (NCCL %u.%u.%u)", v / 10000, v / 100 % 100, v % 100);
	else if (i == NWS_MODE_INTERPOSER)
		snprintf(who, sizeof(who), "interposer");
	else
		snprintf(who, sizeof(who), "profiler v%u (NCCL %s)", i, nws_abi_nccl(i));
	size_t n = (size_t)snprintf(buf, len, "%s, %zu file%s, cannot see: ", who, nfiles, nfiles == 1 ? "" : "s");
	const char *sep = "";
	for (unsigned b = 0; b < NWS_NBLIND && n < len; b++) {
		if (!(blind & (1u << b)))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, nws_blind_text(b));
		sep = "; ";
	}
	return 1;
}

int nw_view_alone_note(char *buf, size_t len, const struct nw_view_ovl *p)
{
	if (p->o.alone_windows < NW_VIEW_ALONE_WINDOWS)
		return 0;
	snprintf(buf, len, "collectives run alone on rank %d/%d (%s, pid %d on %s): over %.0f%% of NCCL kernel time "
	         "had no compute kernel beside it in the last %llu windows: check DDP bucket sizes (bucket_cap_mb), "
	         "gradient_as_bucket_view, stream priorities", p->rank, p->nranks, p->comm_name, (int)p->pid, p->host,
	         NWS_OVL_ALONE_SHARE * 100, (unsigned long long)p->o.alone_windows);
	return 1;
}

void nw_view_format_us(double us, char *buf, size_t len)
{
	if (isnan(us))
		snprintf(buf, len, "-");
	else if (us < 1)
		snprintf(buf, len, "%.0fns", us * 1e3);
	else if (us < 1e3)
		snprintf(buf, len, "%.1fus", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.2fms", us / 1e3);
	else
		snprintf(buf, len, "%.2fs", us / 1e6);
}

#define ROW_FMT "%-16s %-10.10s %-9.9s %5s %-14s %-8s %10s %16s %8s %9s %10s %8s %8s %5s %-6s %9s"

void nw_view_format_header(char *buf, size_t len)
{
	snprintf(buf, len, ROW_FMT, "COMM", "NAME", "STATE", "RANK", "OP", "HOST", "CALLS", "BYTES", "SIZE",
	         "CALLS/S", "BUSBW GB/s", "P50", "P99", "BUSY%", "SRC", "LATE");
}

void nw_view_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	double v = (double)bytes / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < NW_ARRAY_LEN(unit)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* The figures of a row as text, shared by both layouts. */
struct row_text {
	char comm[17], rank[16], calls[24], bytes[24], size[24], rate[24], bw[24], p50[16], p99[16], busy[16], late[16];
};

static void row_text(const struct nw_view_row *r, struct row_text *t)
{
	snprintf(t->comm, sizeof(t->comm), "%016llx", (unsigned long long)r->comm_hash);
	snprintf(t->rank, sizeof(t->rank), "%d%s", r->rank, r->straggler ? "*" : "");
	snprintf(t->calls, sizeof(t->calls), "%llu", (unsigned long long)r->calls);
	snprintf(t->bytes, sizeof(t->bytes), "%llu", (unsigned long long)r->bytes);
	if (r->calls)
		nw_view_format_bytes(r->bytes / r->calls, t->size, sizeof(t->size));
	else
		snprintf(t->size, sizeof(t->size), "-");
	if (isnan(r->calls_per_s))
		snprintf(t->rate, sizeof(t->rate), "-");
	else
		snprintf(t->rate, sizeof(t->rate), "%.1f", r->calls_per_s);
	if (r->src >= 0 && !isnan(r->busbw_gbs)) /* NAN: the communicator's size is not known */
		snprintf(t->bw, sizeof(t->bw), "%.2f", r->busbw_gbs);
	else
		snprintf(t->bw, sizeof(t->bw), "-");
	nw_view_format_us(r->p50_us, t->p50, sizeof(t->p50));
	nw_view_format_us(r->p99_us, t->p99, sizeof(t->p99));
	if (r->busy >= 0)
		snprintf(t->busy, sizeof(t->busy), "%.1f", r->busy * 100);
	else
		snprintf(t->busy, sizeof(t->busy), "-");
	nw_view_format_us(r->late_us, t->late, sizeof(t->late));
}

void nw_view_format_row(char *buf, size_t len, const struct nw_view_row *r)
{
	struct row_text t;
	row_text(r, &t);
	snprintf(buf, len, ROW_FMT, t.comm, r->comm_name[0] ? r->comm_name : "-", nw_sf_live_name(r->live),
	         t.rank, nws_op_name(r->op), r->host, t.calls, t.bytes, t.size, t.rate, t.bw, t.p50, t.p99, t.busy,
	         r->src >= 0 ? nws_src_name((unsigned)r->src) : "-", t.late);
}

/* Narrow terminals: who is late comes right after the rank, so a cut line keeps it. */
#define COMPACT_FMT "%-8.8s %5s %-14s %8s %8s %8s %10s %8s %8s %5s"

void nw_view_format_header_compact(char *buf, size_t len)
{
	snprintf(buf, len, COMPACT_FMT, "COMM", "RANK", "OP", "LATE", "SIZE", "CALLS/S", "BUSBW GB/s", "P50", "P99",
	         "BUSY%");
}

void nw_view_format_row_compact(char *buf, size_t len, const struct nw_view_row *r)
{
	struct row_text t;
	row_text(r, &t);
	snprintf(buf, len, COMPACT_FMT, t.comm, t.rank, nws_op_name(r->op), t.late, t.size, t.rate, t.bw, t.p50,
	         t.p99, t.busy);
}
