/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logline: the periodic one-line summary of each communicator that the
 * publisher thread writes into the job's own log (docs/plugin.md, "Log
 * lines"), off unless NCCLWATCH_LOG_S is set: a training log is the
 * user's, and nothing is written into it unasked.
 *
 * Every NCCLWATCH_LOG_S seconds, on the ranks NCCLWATCH_LOG_RANKS names
 * (rank 0 of each communicator by default), one line goes through NCCL's
 * logger at INFO and, with NCCLWATCH_LOG=stderr, to stderr too:
 *
 *   NCCLWATCH v=1 t=<unix s.ms> comm=<16 hex> [name=<name>] rank=R nranks=N
 *     interval_s=S ops=N bytes=N [busy_pct=P] [top=op:GB/s[,op:GB/s]]
 *     slow_ops=N [exposed_pct=P] [hung=1] [via=interposer]
 *
 * The figures are differences of what the publisher already keeps (the
 * records of the stats file, busy time, counters), taken on the publisher
 * thread: nothing is added to NCCL's threads, the line is built in a stack
 * buffer without allocation, and stderr is written only when a write
 * cannot block. A failure turns the log lines off, once, with one message.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define SEC 1000000000ull
#define LOG_INFO 3   /* NCCL_LOG_INFO */
#define LOG_WARN 2   /* NCCL_LOG_WARN */
#define SUBSYS_INIT 1 /* NCCL_INIT: in NCCL's default NCCL_DEBUG_SUBSYS */

/* --- configuration --- */

/* Turn the log lines off for good with one message (kept until the publisher can log it). */
static void log_off(const char *why)
{
	nwp_g.log.off = 1;
	snprintf(nwp_g.log.msg, sizeof(nwp_g.log.msg), "%s", why);
}

/* NCCLWATCH_LOG_RANKS: "all", or a list of rank numbers "0,3,8"; 0 or -1 when malformed. */
static int config_ranks(const char *s)
{
	struct nwp_logcfg *l = &nwp_g.log;
	l->all_ranks = 0;
	l->nranks = 1;
	l->ranks[0] = 0;
	if (!s || !*s)
		return 0;
	if (!strcasecmp(s, "all")) {
		l->all_ranks = 1;
		return 0;
	}
	l->nranks = 0;
	while (*s) {
		char *end;
		errno = 0;
		long r = strtol(s, &end, 10);
		if (errno || end == s || r < 0 || r > 1000000000L || (*end && *end != ',') ||
		    l->nranks == NWP_LOG_MAXRANKS)
			return -1;
		l->ranks[l->nranks++] = (int)r;
		s = *end ? end + 1 : end;
	}
	return l->nranks ? 0 : -1;
}

/*
 * Read NCCLWATCH_LOG_S, NCCLWATCH_LOG and NCCLWATCH_LOG_RANKS into
 * nwp_g.log. Never fails the plugin: a bad value turns only the log lines
 * off, with a message the publisher logs once.
 */
void nwp_logline_config(void)
{
	struct nwp_logcfg *l = &nwp_g.log;
	memset(l, 0, sizeof(*l));
	const char *s = getenv("NCCLWATCH_LOG_S");
	char why[sizeof(l->msg)];
	if (s && *s) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || end == s || *end || v < 0 || v > 86400) {
			snprintf(why, sizeof(why), "NCCLWATCH_LOG_S='%.40s' is not a whole number of seconds in [0, 86400]", s);
			log_off(why);
			return;
		}
		l->every_ns = (uint64_t)v * SEC;
	}
	const char *to = getenv("NCCLWATCH_LOG");
	if (to && *to && strcasecmp(to, "nccl") && strcasecmp(to, "stderr")) {
		snprintf(why, sizeof(why), "NCCLWATCH_LOG='%.40s' is not nccl or stderr", to);
		log_off(why);
		return;
	}
	l->to_stderr = to && !strcasecmp(to, "stderr");
	const char *rk = getenv("NCCLWATCH_LOG_RANKS");
	if (config_ranks(rk) != 0) {
		snprintf(why, sizeof(why), "NCCLWATCH_LOG_RANKS='%.40s' is not 'all' or a list of ranks like 0,3 (at most %d)",
		         rk, NWP_LOG_MAXRANKS);
		log_off(why);
	}
}

static int rank_wanted(int rank)
{
	const struct nwp_logcfg *l = &nwp_g.log;
	if (l->all_ranks)
		return 1;
	for (int i = 0; i < l->nranks; i++)
		if (l->ranks[i] == rank)
			return 1;
	return 0;
}

/* --- building the line (no allocation, no locale) --- */

struct lbuf {
	char *p;
	size_t len, n;   /* n: characters written so far (truncated at len - 1) */
};

static void put_str(struct lbuf *b, const char *s)
{
	for (; *s; s++, b->n++)
		if (b->n + 1 < b->len)
			b->p[b->n] = *s;
}

static void put_u64(struct lbuf *b, uint64_t v)
{
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	char out[24];
	for (int k = 0; k < i; k++)
		out[k] = tmp[i - 1 - k];
	out[i] = '\0';
	put_str(b, out);
}

/* v >= 0 with `dec` decimals (rounded), capped at 1e15. */
static void put_fixed(struct lbuf *b, double v, int dec)
{
	uint64_t scale = 1;
	for (int i = 0; i < dec; i++)
		scale *= 10;
	if (!(v >= 0))
		v = 0;
	if (v > 1e15)
		v = 1e15;
	uint64_t x = (uint64_t)(v * (double)scale + 0.5);
	put_u64(b, x / scale);
	if (!dec)
		return;
	put_str(b, ".");
	char frac[8];
	uint64_t f = x % scale;
	for (int i = dec - 1; i >= 0; i--, f /= 10)
		frac[i] = (char)('0' + f % 10);
	frac[dec] = '\0';
	put_str(b, frac);
}

static void put_hex16(struct lbuf *b, uint64_t v)
{
	char out[17];
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = "0123456789abcdef"[v & 15];
	out[16] = '\0';
	put_str(b, out);
}

/* A communicator name as one token: [A-Za-z0-9._:/@+-] kept, anything else '_', at most 48 characters. */
static void put_name(struct lbuf *b, const char *s)
{
	char out[49];
	size_t i = 0;
	for (; s[i] && i < 48; i++) {
		unsigned char ch = (unsigned char)s[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		         (ch && strchr("._:/@+-", ch));
		out[i] = ok ? (char)ch : '_';
	}
	out[i] = '\0';
	put_str(b, out);
}

/*
 * The line of figures f into buf[0..len) (NUL-terminated, no newline);
 * returns its length, or the length it would have had when buf was too
 * small (then it is cut). Fields that are unknown (negative percentages,
 * no top ops, no name) are left out; exposed_pct is one of them until
 * a window of exposed communication is done (or when it is not asked for).
 */
size_t nwp_logline_format(char *buf, size_t len, const struct nwp_logfig *f)
{
	struct lbuf b = { buf, len, 0 };
	put_str(&b, "NCCLWATCH v=1 t=");
	put_fixed(&b, (double)f->t_ms / 1000.0, 3);
	put_str(&b, " comm=");
	put_hex16(&b, f->comm_hash);
	if (f->name && f->name[0]) {
		put_str(&b, " name=");
		put_name(&b, f->name);
	}
	put_str(&b, " rank=");
	put_u64(&b, (uint64_t)(f->rank < 0 ? 0 : f->rank));
	put_str(&b, " nranks=");
	put_u64(&b, (uint64_t)(f->nranks < 0 ? 0 : f->nranks));
	put_str(&b, " interval_s=");
	put_fixed(&b, (double)f->interval_ms / 1000.0, 3);
	put_str(&b, " ops=");
	put_u64(&b, f->ops);
	put_str(&b, " bytes=");
	put_u64(&b, f->bytes);
	if (f->busy_pct >= 0) {
		put_str(&b, " busy_pct=");
		put_fixed(&b, f->busy_pct, 1);
	}
	for (int i = 0; i < f->ntop && i < 2; i++) {
		put_str(&b, i ? "," : " top=");
		put_str(&b, nws_op_name(f->top_op[i]));
		put_str(&b, ":");
		put_fixed(&b, f->top_gbs[i], 2);
	}
	put_str(&b, " slow_ops=");
	put_u64(&b, f->slow_ops);
	if (f->exposed_pct >= 0) {
		put_str(&b, " exposed_pct=");
		put_fixed(&b, f->exposed_pct, 1);
	}
	if (f->hung)
		put_str(&b, " hung=1");
	if (f->via) {
		put_str(&b, " via=");
		put_str(&b, f->via);
	}
	if (len)
		buf[b.n < len ? b.n : len - 1] = '\0';
	return b.n;
}

/* --- figures of one interval --- */

/* c's running totals now: ops, bytes, kernel-timed time and bytes per op, busy time, slow ops. */
static void totals(const struct nwp_comm *c, struct nwp_logsnap *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		for (unsigned bk = 0; bk < NWS_NBUCKETS; bk++) {
			const struct nws_record *r = &c->rec[op * NWS_NBUCKETS + bk];
			t->bytes += r->bytes;
			t->kns[op] += r->t[NWS_SRC_KERNEL].sum_ns;
			t->kbytes[op] += r->t[NWS_SRC_KERNEL].bytes;
		}
	}
	t->ops = c->ops_total;
	t->busy_ns = c->busy_k_total + c->busy_e_total;
	t->kernel_ops = c->kernel_ops;
	t->slow_ops = c->slow_ops;
}

/* The two ops with the most kernel-timed time in the interval (cur - prev), with their busbw in GB/s. */
static void top_ops(const struct nwp_comm *c, const struct nwp_logsnap *cur, const struct nwp_logsnap *prev,
                    struct nwp_logfig *f)
{
	uint64_t best[2] = { 0, 0 };
	f->ntop = 0;
	for (unsigned op = 0; op < NWS_NOPS; op++) {
		uint64_t ns = cur->kns[op] - prev->kns[op], by = cur->kbytes[op] - prev->kbytes[op];
		if (!ns || !by)
			continue;
		double gbs = (double)by / (double)ns * nws_busbw_factor(op, c->nranks);
		if (isnan(gbs))
			continue; /* the communicator's size is not known (profiler v1 to v3): no busbw */
		int at = ns > best[0] ? 0 : ns > best[1] ? 1 : 2;
		if (at == 2)
			continue;
		if (at == 0) {
			best[1] = best[0];
			f->top_op[1] = f->top_op[0];
			f->top_gbs[1] = f->top_gbs[0];
		}
		best[at] = ns;
		f->top_op[at] = op;
		f->top_gbs[at] = gbs;
		if (f->ntop < 2)
			f->ntop++;
	}
}

/* The figures of c's interval from prev to cur, ending at now and lasting span_ns. */
static void figures(const struct nwp_comm *c, const struct nwp_logsnap *cur, const struct nwp_logsnap *prev,
                    uint64_t now, uint64_t span_ns, struct nwp_logfig *f)
{
	memset(f, 0, sizeof(*f));
	f->comm_hash = c->comm_hash;
	f->name = c->name;
	f->rank = c->rank;
	f->nranks = c->nranks;
	f->t_ms = now / 1000000;
	f->interval_ms = span_ns / 1000000;
	f->ops = cur->ops - prev->ops;
	f->bytes = cur->bytes - prev->bytes;
	f->slow_ops = cur->slow_ops - prev->slow_ops;
	/* busy time needs kernel timings: without any so far it is unknown, not 0 */
	f->busy_pct = cur->kernel_ops && span_ns ? 100.0 * (double)(cur->busy_ns - prev->busy_ns) / (double)span_ns : -1;
	if (f->busy_pct > 100.0)
		f->busy_pct = 100.0;
	/* exposed communication of the process's last CUPTI window (NCCLWATCH_OVERLAP=1), unknown before one */
	double wall_share, nccl_share;
	f->exposed_pct = nwp_overlap_latest(&wall_share, &nccl_share) ? 100.0 * wall_share : -1;
	f->hung = c->prog.hang == NWS_HANG_YES;
	f->via = nwp_g.front ? "interposer" : NULL; /* the profiler plugin's lines stay as they were */
	top_ops(c, cur, prev, f);
}

/* --- writing --- */

/* Write the whole of s[0..n) to stderr when that cannot block; 0 (written or skipped), -1 on an error. */
static int to_stderr(const char *s, size_t n)
{
	struct pollfd p = { STDERR_FILENO, POLLOUT, 0 };
	int r = poll(&p, 1, 0);
	if (r == 0) {
		nwp_g.log.skipped++; /* a full pipe: this line is dropped, the job is not held */
		return 0;
	}
	if (r < 0 || (p.revents & (POLLERR | POLLNVAL)))
		return -1;
	while (n) {
		ssize_t w = write(STDERR_FILENO, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Log the message that turned the log lines off, once. */
static void say_off(void)
{
	if (!nwp_g.log.msg[0] || nwp_g.log.said)
		return;
	nwp_g.log.said = 1;
	nwp_log(NWP_LOG_WARN, "ncclwatch: log lines off: %s", nwp_g.log.msg);
}

/*
 * Send one finished line out (line has room for a newline after n): NCCL's
 * logger, and stderr when asked or when NCCL gave no logger (profiler v1
 * to v3).
 */
static void emit(char *line, size_t n)
{
	nwp_logfn_t fn = __atomic_load_n(&nwp_g.logfn, __ATOMIC_ACQUIRE);
	if (fn)
		fn(LOG_INFO, SUBSYS_INIT, __FILE__, __LINE__, "%s", line);
	if (!nwp_g.log.to_stderr && fn)
		return;
	line[n] = '\n';
	if (to_stderr(line, n + 1) != 0) {
		char why[sizeof(nwp_g.log.msg)];
		snprintf(why, sizeof(why), "cannot write to stderr: %s", strerror(errno));
		log_off(why);
		say_off();
	}
	line[n] = '\0';
}

/*
 * The publisher's look at c (caller holds nwp_g.lock): once
 * NCCLWATCH_LOG_S has passed since the last line (or since c's stats file
 * was made), write the line of the interval and start the next one.
 */
void nwp_logline_tick(struct nwp_comm *c, uint64_t now)
{
	struct nwp_logcfg *l = &nwp_g.log;
	say_off();
	if (l->off || !l->every_ns || !c->rec || !rank_wanted(c->rank))
		return;
	struct nwp_logstate *st = &c->logst;
	if (!st->last_ns) /* the first interval starts with the stats file, from totals of zero */
		st->last_ns = c->hdr && c->hdr->created_ns && c->hdr->created_ns <= now ? c->hdr->created_ns : now;
	if (now < st->last_ns + l->every_ns)
		return;
	struct nwp_logsnap cur;
	struct nwp_logfig f;
	totals(c, &cur);
	figures(c, &cur, &st->prev, now, now - st->last_ns, &f);
	char line[512];
	size_t n = nwp_logline_format(line, sizeof(line) - 1, &f);
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	emit(line, n);
	st->prev = cur;
	/* keep the cadence; after a long stall start again from now */
	st->last_ns = now - st->last_ns < 2 * l->every_ns ? st->last_ns + l->every_ns : now;
}
