/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hang: the progress part of each stats file (nws_progress) and the
 * plugin's own hang verdict, kept by the publisher thread from the slots
 * the hot paths fill (they only store the time of each event).
 *
 * A communicator is hung when NCCL raised no event on it for
 * NCCLWATCH_HANG_S while an operation is in flight (its completion is
 * expected and has not come) or a peer rank on this node has enqueued
 * more collectives than this rank (this rank has not arrived). Each hang
 * is declared once: the header says so, one WARN line goes through NCCL's
 * logger and one trace dump is written; it ends with the next event.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define SEC 1000000000ull
#define PEER_CHECK_NS SEC

/* Note the slots enqueued since the last call: newest op and per-op counts. */
void nwp_note_enqueued(struct nwp_comm *c, uint64_t head)
{
	struct nws_progress *p = &c->prog;
	uint32_t mask = nwp_g.pool_size - 1;
	for (; c->seen < head; c->seen++) {
		const struct nwp_slot *s = &c->slots[c->seen & mask];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == NWP_FREE)
			break; /* taken by the launching thread, not filled yet */
		unsigned dtype;
		uint64_t bytes;
		unsigned op = nwp_slot_op(c, s, &dtype, &bytes);
		uint64_t seq = s->kind == NWP_KIND_COLL ? s->seq : p->enq_count[op];
		if (seq + 1 > p->enq_count[op])
			p->enq_count[op] = seq + 1;
		p->enq_op = op;
		p->enq_seq = seq;
		p->enq_bytes = bytes;
		p->enq_ns = s->enq_ns;
	}
}

/* Will a completion event tell when slot s ends? */
static int expects_done(const struct nwp_slot *s, int proxy_on)
{
	return __atomic_load_n(&s->expect_kch, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE) > 0 ||
	       (proxy_on && __atomic_load_n(&s->px_started, __ATOMIC_ACQUIRE) > 0);
}

/* Has it ended (every kernel channel, or every proxy op, stopped)? */
static int seen_done(const struct nwp_slot *s)
{
	uint32_t kst = __atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE);
	uint32_t ksp = __atomic_load_n(&s->kch_stopped, __ATOMIC_ACQUIRE);
	if (kst > 0)
		return ksp >= kst && (!s->nch || ksp >= s->nch);
	if (__atomic_load_n(&s->expect_kch, __ATOMIC_RELAXED))
		return 0;
	uint32_t pst = __atomic_load_n(&s->px_started, __ATOMIC_ACQUIRE);
	return pst > 0 && __atomic_load_n(&s->px_stopped, __ATOMIC_ACQUIRE) >= pst;
}

/* Which completions this mode sees (enum nws_done_src). */
static uint32_t completion_mode(int proxy_on)
{
	if (nwp_g.kmode == NWS_KMODE_ON || (nwp_g.kmode == NWS_KMODE_AUTO && nwp_g.kernel_on))
		return NWS_DONE_KERNEL;
	if (proxy_on)
		return NWS_DONE_PROXY;
	return nwp_g.kmode == NWS_KMODE_AUTO ? NWS_DONE_SAMPLED : NWS_DONE_NONE;
}

/* Count the ops of c in flight (slots tail..head, plus one given up on) and note the oldest. */
void nwp_note_inflight(struct nwp_comm *c, uint64_t tail, uint64_t head, int proxy_on)
{
	struct nws_progress *p = &c->prog;
	uint32_t mask = nwp_g.pool_size - 1;
	p->completion = completion_mode(proxy_on);
	p->hang_after_ns = nwp_g.hang_ns;
	p->inflight = 0;
	p->oldest_ns = 0;
	p->oldest_op = NWS_NOPS;
	if (c->stuck.on) {
		p->inflight = 1;
		p->oldest_ns = c->stuck.enq_ns;
		p->oldest_op = c->stuck.op;
		p->oldest_seq = c->stuck.seq;
		p->oldest_bytes = c->stuck.bytes;
	}
	for (uint64_t i = tail; i < head; i++) {
		const struct nwp_slot *s = &c->slots[i & mask];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if ((st != NWP_ACTIVE && st != NWP_STOPPED) || !expects_done(s, proxy_on) || seen_done(s))
			continue;
		if (!p->inflight++) {
			unsigned dtype;
			p->oldest_op = nwp_slot_op(c, s, &dtype, &p->oldest_bytes);
			p->oldest_seq = s->kind == NWP_KIND_COLL ? s->seq : 0;
			p->oldest_ns = s->enq_ns;
		}
	}
}

/*
 * The progress block of a peer's stats file, read with pread (never
 * mapped: the file may be truncated while it is read) and checked with its
 * seqlock; 0 when it is readable.
 */
static int peer_progress(const char *path, struct nws_progress *out)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	struct nws_header h;
	int rc = -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(h) ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != NWS_MAGIC || h.version != NWS_VERSION ||
	    h.header_size != sizeof(h)) {
		close(fd);
		return -1;
	}
	const off_t gen_off = (off_t)offsetof(struct nws_header, live_gen);
	for (int tries = 0; tries < 100 && rc != 0; tries++) {
		uint64_t again;
		if (tries && pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
			break;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (pread(fd, &again, sizeof(again), gen_off) != (ssize_t)sizeof(again))
			break;
		if (!(h.live_gen & 1) && h.live_gen == again) {
			memcpy(out, &h.prog, sizeof(*out));
			rc = 0;
		}
	}
	close(fd);
	return rc;
}

/* Has a rank of c on this node (another file of the same comm) enqueued a collective this rank has not? */
static int peers_ahead(const struct nwp_comm *c)
{
	char tag[40], path[1024];
	snprintf(tag, sizeof(tag), ".%016llx.r", (unsigned long long)c->comm_hash);
	DIR *d = opendir(nwp_g.dir);
	if (!d)
		return 0;
	int ahead = 0;
	struct dirent *e;
	while (!ahead && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 4, ".nws") || !strstr(e->d_name, tag))
			continue;
		snprintf(path, sizeof(path), "%s/%s", nwp_g.dir, e->d_name);
		struct nws_progress peer;
		if (!strcmp(path, c->path) || peer_progress(path, &peer) != 0)
			continue;
		for (unsigned op = 0; op < NWS_OP_SEND; op++)
			ahead |= peer.enq_count[op] > c->prog.enq_count[op];
	}
	closedir(d);
	return ahead;
}

/* Declare c hung (once): the header's verdict, one WARN line, a dump after this cycle. */
static void declare(struct nwp_comm *c, uint64_t now, uint32_t why)
{
	struct nws_progress *p = &c->prog;
	p->hang = NWS_HANG_YES;
	p->hang_why = why;
	p->hung_ns = now;
	p->hangs++;
	c->hung_event_ns = p->last_event_ns;
	nwp_g.hang_dump = 1;
	unsigned long long quiet = (unsigned long long)((now - p->last_event_ns) / SEC);
	if (why == NWS_HANG_WHY_INFLIGHT)
		nwp_log(NWP_LOG_WARN,
		        "ncclwatch: comm %016llx rank %d/%d hung: no NCCL event for %llu s, %llu op(s) in flight, oldest %s seq %llu; trace dump in %s",
		        (unsigned long long)c->comm_hash, c->rank, c->nranks, quiet, (unsigned long long)p->inflight,
		        nws_op_name(p->oldest_op), (unsigned long long)p->oldest_seq, nwp_g.dir);
	else
		nwp_log(NWP_LOG_WARN,
		        "ncclwatch: comm %016llx rank %d/%d hung: no NCCL event for %llu s and peers have enqueued collectives this rank has not (last: %s seq %llu); trace dump in %s",
		        (unsigned long long)c->comm_hash, c->rank, c->nranks, quiet, nws_op_name(p->enq_op),
		        (unsigned long long)p->enq_seq, nwp_g.dir);
}

/*
 * The hang verdict of c at now: a declared hang ends with the next NCCL
 * event; a new one is declared after NCCLWATCH_HANG_S without events while
 * an op is in flight or a peer on this node is ahead (peers are looked at
 * once a second at most, and only while nothing is in flight).
 */
void nwp_hang_check(struct nwp_comm *c, uint64_t now)
{
	struct nws_progress *p = &c->prog;
	uint64_t ev = __atomic_load_n(&c->last_event_ns, __ATOMIC_RELAXED);
	if (ev > p->last_event_ns)
		p->last_event_ns = ev;
	if (p->hang == NWS_HANG_YES) {
		if (p->last_event_ns == c->hung_event_ns)
			return;
		p->hang = NWS_HANG_NO;
		p->hang_why = NWS_HANG_WHY_NONE;
		p->hung_ns = 0;
	}
	if (!nwp_g.hang_ns || !p->last_event_ns || now < p->last_event_ns + nwp_g.hang_ns)
		return;
	if (p->inflight) {
		declare(c, now, NWS_HANG_WHY_INFLIGHT);
		return;
	}
	if (now - c->peer_check_ns < PEER_CHECK_NS)
		return;
	c->peer_check_ns = now;
	if (peers_ahead(c))
		declare(c, now, NWS_HANG_WHY_PEERS);
}

/* The ops of c still in flight as trace events from their enqueue to now, marked incomplete. */
void nwp_dump_inflight(FILE *f, const struct nwp_comm *c, uint64_t now)
{
	uint32_t mask = nwp_g.pool_size - 1;
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	for (uint64_t i = tail; i < head; i++) {
		const struct nwp_slot *s = &c->slots[i & mask];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st != NWP_ACTIVE && st != NWP_STOPPED)
			continue;
		unsigned dtype;
		uint64_t bytes;
		unsigned op = nwp_slot_op(c, s, &dtype, &bytes);
		uint64_t dur = now > s->enq_ns ? now - s->enq_ns : 0;
		fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"inflight\",\"ph\":\"X\",\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,"
		        "\"pid\":%d,\"tid\":%d,\"args\":{\"bytes\":%llu,\"count\":%llu,",
		        nws_op_name(op), (unsigned long long)(s->enq_ns / 1000), (unsigned long long)(s->enq_ns % 1000),
		        (unsigned long long)(dur / 1000), (unsigned long long)(dur % 1000), c->rank, c->index,
		        (unsigned long long)bytes, (unsigned long long)s->count);
		if (s->kind == NWP_KIND_COLL)
			fprintf(f, "\"seq\":%llu,", (unsigned long long)s->seq);
		fprintf(f, "\"enqueue_us\":%llu.%03llu,\"kernel_channels_started\":%u,\"kernel_channels_stopped\":%u,"
		        "\"incomplete\":true}}",
		        (unsigned long long)(s->enq_ns / 1000), (unsigned long long)(s->enq_ns % 1000),
		        __atomic_load_n(&s->kch_started, __ATOMIC_RELAXED),
		        __atomic_load_n(&s->kch_stopped, __ATOMIC_RELAXED));
	}
}

static void dump_counts(FILE *f, const char *key, const uint64_t *v)
{
	fprintf(f, ",\"%s\":[", key);
	for (unsigned op = 0; op < NWS_NOPS; op++)
		fprintf(f, "%s%llu", op ? "," : "", (unsigned long long)v[op]);
	fputc(']', f);
}

static const char *completion_name(uint32_t m)
{
	static const char *const names[] = { "none", "sampled", "kernel", "proxy" };
	return m < 4 ? names[m] : "none";
}

/*
 * c's progress as one JSON object of the dump's otherData.progress array
 * (what `ncclwatch hang` reads from dumps gathered on several nodes).
 */
void nwp_dump_progress(FILE *f, const struct nwp_comm *c, int first)
{
	const struct nws_progress *p = &c->prog;
	fprintf(f, "%s{\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d,\"pid\":%d,\"host\":",
	        first ? "" : ",", (unsigned long long)c->comm_hash, c->rank, c->nranks, nwp_g.pid);
	nwp_json_str(f, nwp_g.host);
	fputs(",\"name\":", f);
	nwp_json_str(f, c->name);
	fprintf(f, ",\"completion\":\"%s\",\"last_event_ns\":%llu,\"inflight\":%llu,\"oldest_ns\":%llu",
	        completion_name(p->completion), (unsigned long long)p->last_event_ns,
	        (unsigned long long)p->inflight, (unsigned long long)p->oldest_ns);
	fprintf(f, ",\"oldest_op\":\"%s\",\"oldest_seq\":%llu,\"enq_op\":\"%s\",\"enq_seq\":%llu,\"enq_bytes\":%llu,\"enq_ns\":%llu",
	        p->oldest_op < NWS_NOPS ? nws_op_name(p->oldest_op) : "", (unsigned long long)p->oldest_seq,
	        p->enq_op < NWS_NOPS && p->enq_ns ? nws_op_name(p->enq_op) : "", (unsigned long long)p->enq_seq,
	        (unsigned long long)p->enq_bytes, (unsigned long long)p->enq_ns);
	fprintf(f, ",\"hung\":%s,\"now_ns\":%llu", p->hang == NWS_HANG_YES ? "true" : "false",
	        (unsigned long long)nwp_realtime_ns());
	dump_counts(f, "enq", p->enq_count);
	dump_counts(f, "done", p->done_count);
	fputc('}', f);
}
