/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose_cuda: timing ops with CUDA events on the job's own streams, through
 * the driver API of the libcuda.so.1 the process already loaded (never
 * loading one; NCCLWATCH_CUDA_LIB names another, for tests).
 *
 * A timed op (or group) costs two cuEventRecord calls on the caller's
 * stream, one before and one after NCCL's; nothing ever synchronises.
 * Event pairs are made ahead, per CUDA context (an event must belong to
 * its stream's context): at registration in the thread's current
 * context, later by the publisher, which tops each pool up. A job thread
 * takes a free pair under its context's mutex (uncontended: at most one
 * op per communicator per NCCLWATCH_TIMED_PER_S interval asks), records,
 * and queues the pair on a lock-free stack. The publisher (its tick, with
 * nwp_g.lock held) polls the queued pairs with cuEventQuery, turns a
 * finished pair's cuEventElapsedTime into the kernel times of its ops'
 * slots, and puts the pair back. Its thread's capture mode is relaxed, so
 * its queries never disturb a graph the job captures. Pairs of an aborted
 * communicator are never touched again (leaked: a few per abort).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/ipose.h"

#define MAXCTX 32          /* CUDA contexts with a pool */
#define PAIRS_MAX 1024     /* pairs made per context at most (in flight at once) */
#define PAIRS_LOW 8        /* the publisher tops a pool up below this */
#define PAIRS_BATCH 16     /* pairs made at a time, at first; as many again as there are when a pool ran dry */
#define CTX_ERRORS 3       /* query errors in a row that put a context aside */

enum { CU_NOT_READY = 600, CAPTURE_MODE_RELAXED = 2 };

/* The driver entry points used (cuda.h), never under the driver's own names. */
static struct {
	int (*event_create)(void **ev, unsigned flags);
	int (*event_record)(void *ev, void *stream);
	int (*event_query)(void *ev);
	int (*event_elapsed)(float *ms, void *start, void *end);
	int (*event_destroy)(void *ev);
	int (*stream_is_capturing)(void *stream, int *status);
	int (*stream_get_ctx)(void *stream, void **ctx);
	int (*ctx_set_current)(void *ctx);
	int (*ctx_get_current)(void **ctx);
	int (*exchange_capture_mode)(int *mode); /* optional */
} cu;

/* One CUDA context's pool of pairs. */
struct ipo_ctx {
	void *cu;                  /* CUcontext; written before the entry is published */
	pthread_mutex_t mu;        /* free, nfree */
	struct ipo_timer *free;
	int nfree;
	int made;                  /* pairs made (under mu) */
	int want;                  /* atomic: a job thread found the pool empty */
	int dead;                  /* atomic: put aside after errors: never touched again */
	int errors;                /* publisher: query errors in a row */
};
static struct ipo_ctx ctxs[MAXCTX];
static int nctx;                           /* atomic: entries published */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER; /* adding entries */

static struct ipo_timer *queued;           /* atomic: pairs handed to the publisher (a stack) */
static struct ipo_timer *abandoned;        /* publisher: pairs never to be touched again (an aborted comm's, failed ones) */
static struct ipo_timer *pend, **pend_tail = &pend; /* publisher: pairs being polled, oldest first */
static int stopped;                        /* atomic: never call the driver again */
static __thread int relaxed __attribute__((tls_model("initial-exec"))); /* this thread's capture mode is relaxed */

/* The first symbol of names found in h. */
static void *sym(void *h, const char *a, const char *b)
{
	void *p = dlsym(h, a);
	return p || !b ? p : dlsym(h, b);
}

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_state;                     /* 0 not tried, 1 open, -1 failed */

int ipo_cuda_open(const char **why)
{
	pthread_mutex_lock(&open_lock);
	if (!open_state) {
		const char *alt = getenv("NCCLWATCH_CUDA_LIB");
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (!h && alt && *alt)
			h = dlopen(alt, RTLD_LAZY | RTLD_NOLOAD);
		open_state = -1;
		if (h) {
			*(void **)(void *)&cu.event_create = sym(h, "cuEventCreate", NULL);
			*(void **)(void *)&cu.event_record = sym(h, "cuEventRecord", NULL);
			*(void **)(void *)&cu.event_query = sym(h, "cuEventQuery", NULL);
			*(void **)(void *)&cu.event_elapsed = sym(h, "cuEventElapsedTime", NULL);
			*(void **)(void *)&cu.event_destroy = sym(h, "cuEventDestroy_v2", "cuEventDestroy");
			*(void **)(void *)&cu.stream_is_capturing = sym(h, "cuStreamIsCapturing", NULL);
			*(void **)(void *)&cu.stream_get_ctx = sym(h, "cuStreamGetCtx", NULL);
			*(void **)(void *)&cu.ctx_set_current = sym(h, "cuCtxSetCurrent", NULL);
			*(void **)(void *)&cu.ctx_get_current = sym(h, "cuCtxGetCurrent", NULL);
			*(void **)(void *)&cu.exchange_capture_mode = sym(h, "cuThreadExchangeStreamCaptureMode", NULL);
			if (cu.event_create && cu.event_record && cu.event_query && cu.event_elapsed && cu.event_destroy &&
			    cu.stream_is_capturing && cu.stream_get_ctx && cu.ctx_set_current && cu.ctx_get_current)
				open_state = 1;
			else
				open_state = -2;
		}
	}
	int st = open_state;
	pthread_mutex_unlock(&open_lock);
	if (why)
		*why = st == -1 ? "no CUDA driver (libcuda.so.1) is loaded in this process"
		     : st == -2 ? "the CUDA driver lacks the event functions (older than CUDA 10?)" : "";
	return st == 1 ? 0 : -1;
}

void *ipo_ctx_swap(void *ctx)
{
	void *cur = NULL;
	if (ipo_cuda_open(NULL) != 0 || __atomic_load_n(&stopped, __ATOMIC_ACQUIRE) || cu.ctx_get_current(&cur) != 0)
		return NULL;
	if (ctx && ctx != cur && cu.ctx_set_current(ctx) != 0)
		return NULL;
	return cur;
}

int ipo_capturing(ipo_stream_t st)
{
	int status = 0;
	if (__atomic_load_n(&stopped, __ATOMIC_RELAXED) || cu.stream_is_capturing(st, &status) != 0)
		return -1;
	return status != 0; /* ACTIVE, or INVALIDATED: a capture either way */
}

/* The pool of context c; with add, made (empty, wanted) when new. NULL when none and no room. */
static struct ipo_ctx *ctx_find(void *c, int add)
{
	int n = __atomic_load_n(&nctx, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (ctxs[i].cu == c)
			return &ctxs[i];
	if (!add)
		return NULL;
	pthread_mutex_lock(&ctx_lock);
	struct ipo_ctx *x = NULL;
	n = __atomic_load_n(&nctx, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && !x; i++)
		if (ctxs[i].cu == c)
			x = &ctxs[i];
	if (!x && n < MAXCTX) {
		x = &ctxs[n];
		x->cu = c;
		pthread_mutex_init(&x->mu, NULL);
		__atomic_store_n(&x->want, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&nctx, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx_lock);
	return x;
}

/*
 * Make up to n pairs in x's context, which must be the calling thread's
 * current one, onto its free list. A failure puts timing off (said once).
 */
static void pairs_make(struct ipo_ctx *x, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&x->mu);
		int room = x->made < PAIRS_MAX;
		if (room)
			x->made++;
		pthread_mutex_unlock(&x->mu);
		if (!room)
			return;
		struct ipo_timer *t = calloc(1, sizeof(*t));
		int r = t ? cu.event_create(&t->ev[0], 0) : -1;
		if (t && !r && (r = cu.event_create(&t->ev[1], 0)) != 0)
			cu.event_destroy(t->ev[0]);
		if (r) {
			free(t);
			ipo_timing_off("cuEventCreate failed (%d)", r);
			return;
		}
		t->ctx = x;
		ipo_timer_put(t);
	}
}

void ipo_cuda_prepare(void)
{
	void *c = NULL;
	if (!__atomic_load_n(&ipo_g.timing, __ATOMIC_ACQUIRE) || cu.ctx_get_current(&c) != 0 || !c)
		return;
	struct ipo_ctx *x = ctx_find(c, 1);
	if (x && x->made < PAIRS_BATCH) /* the first op after init is timed: its pairs are there */
		pairs_make(x, PAIRS_BATCH);
}

void ipo_timer_put(struct ipo_timer *t)
{
	struct ipo_ctx *x = t->ctx;
	t->e = NULL;
	pthread_mutex_lock(&x->mu);
	t->next = x->free;
	x->free = t;
	x->nfree++;
	pthread_mutex_unlock(&x->mu);
}

struct ipo_timer *ipo_timer_start(ipo_stream_t st)
{
	void *c = NULL;
	if (!__atomic_load_n(&ipo_g.timing, __ATOMIC_ACQUIRE) || cu.stream_get_ctx(st, &c) != 0 || !c)
		return NULL;
	struct ipo_ctx *x = ctx_find(c, 1);
	if (!x || __atomic_load_n(&x->dead, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&x->mu);
	struct ipo_timer *t = x->free;
	if (t) {
		x->free = t->next;
		x->nfree--;
	}
	pthread_mutex_unlock(&x->mu);
	if (!t) {
		__atomic_store_n(&x->want, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&ipo_g.untimed_busy, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	int r = cu.event_record(t->ev[0], st);
	if (r) {
		ipo_timer_put(t);
		ipo_timing_off("cuEventRecord failed (%d)", r);
		return NULL;
	}
	return t;
}

int ipo_timer_stop(struct ipo_timer *t, ipo_stream_t st)
{
	int r = cu.event_record(t->ev[1], st);
	if (!r)
		return 0;
	ipo_timer_put(t);
	ipo_timing_off("cuEventRecord failed (%d)", r);
	return -1;
}

/* Hand t to the publisher (a lock-free stack; the publisher takes it whole). */
static void push(struct ipo_timer *t)
{
	struct ipo_timer *top = __atomic_load_n(&queued, __ATOMIC_RELAXED);
	do
		t->next = top;
	while (!__atomic_compare_exchange_n(&queued, &top, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void ipo_timer_queue(struct ipo_timer *t, struct ipo_entry *e, uint32_t gen, uint64_t first, uint64_t last)
{
	t->dead = 0;
	t->e = e;
	t->gen = gen;
	t->first = first;
	t->last = last;
	push(t);
}

void ipo_timer_abandon(struct ipo_timer *t)
{
	t->dead = 1;
	t->e = NULL;
	push(t);
}

/* Move the queued pairs to the end of the pending list, oldest first (publisher, lock held). */
static void take_queued(void)
{
	struct ipo_timer *s = __atomic_exchange_n(&queued, NULL, __ATOMIC_ACQUIRE), *rev = NULL;
	while (s) {
		struct ipo_timer *nx = s->next;
		s->next = rev;
		rev = s;
		s = nx;
	}
	for (; rev; rev = rev->next)
		*pend_tail = rev, pend_tail = &rev->next;
	*pend_tail = NULL;
}

/* Which bytes a slot's time is shared with (collectives, sends, receives): 0, 1, 2. */
static int share_class(const struct nwp_slot *s)
{
	if (s->kind != NWP_KIND_P2P || !s->func)
		return 0;
	return s->func[0] == 'S' ? 1 : 2;
}

/*
 * The ops of t (slots first..last of its communicator) ran in dur ns,
 * seen finished at now: each gets a share of the time by its bytes,
 * collectives, sends and receives apart (they run at once, in opposite
 * directions), laid end to end from the group's start, as kernel times.
 */
static void fill(struct ipo_timer *t, uint64_t dur, uint64_t now)
{
	struct nwp_comm *c = t->e->c;
	uint32_t mask = nwp_g.pool_size - 1;
	if (!c || t->first < __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE) ||
	    t->last >= __atomic_load_n(&c->head, __ATOMIC_ACQUIRE) || t->last - t->first >= nwp_g.pool_size) {
		__atomic_fetch_add(&nwp_g.late_events, 1, __ATOMIC_RELAXED); /* its slots were given up on */
		return;
	}
	uint64_t sum[3] = { 0, 0, 0 }, cnt[3] = { 0, 0, 0 }, enq = UINT64_MAX;
	for (uint64_t i = t->first; i <= t->last; i++) {
		const struct nwp_slot *s = &c->slots[i & mask];
		unsigned dt;
		uint64_t by;
		nwp_slot_op(c, s, &dt, &by);
		sum[share_class(s)] += by;
		cnt[share_class(s)]++;
		if (s->enq_ns < enq)
			enq = s->enq_ns;
	}
	uint64_t start = now > dur ? now - dur : 0;
	if (start < enq) /* it cannot have started before it was enqueued: the poll came late */
		start = enq;
	uint64_t at[3] = { start, start, start };
	for (uint64_t i = t->first; i <= t->last; i++) {
		struct nwp_slot *s = &c->slots[i & mask];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != NWP_STOPPED)
			continue;
		unsigned dt;
		uint64_t by;
		nwp_slot_op(c, s, &dt, &by);
		int k = share_class(s);
		uint64_t part = sum[k] ? (uint64_t)((double)dur * (double)by / (double)sum[k]) : dur / cnt[k];
		__atomic_store_n(&s->kstart_gpu, at[k], __ATOMIC_RELAXED);
		__atomic_store_n(&s->kend_gpu, at[k] + part, __ATOMIC_RELAXED);
		at[k] += part;
		__atomic_store_n(&s->kch_started, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&s->kch_stopped, 1, __ATOMIC_RELEASE);
	}
	if (now > __atomic_load_n(&c->last_event_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&c->last_event_ns, now, __ATOMIC_RELAXED); /* a completion is an event (hangs) */
}

/* Say once that a context was put aside. */
static void ctx_aside(struct ipo_ctx *x, int r)
{
	static int said;
	__atomic_store_n(&x->dead, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		nwp_log(NWP_LOG_WARN, "ncclwatch: CUDA events of a context keep failing (%d): ops there are counted, "
		        "not timed, from now on", r);
}

/*
 * Poll pair t once: 1 when it is done with (finished, its ops filled when
 * fill_it, and back in its pool), 2 when it failed (never to be touched
 * again), 0 while it waits.
 */
static int poll_one(struct ipo_timer *t, int fill_it, uint64_t now)
{
	struct ipo_ctx *x = t->ctx;
	if (__atomic_load_n(&x->dead, __ATOMIC_RELAXED))
		return 2;
	int r = cu.event_query(t->ev[1]);
	if (r == CU_NOT_READY)
		return 0;
	float ms = 0;
	if (!r)
		r = cu.event_elapsed(&ms, t->ev[0], t->ev[1]);
	if (r) {
		if (++x->errors >= CTX_ERRORS)
			ctx_aside(x, r);
		return 2;
	}
	x->errors = 0;
	if (fill_it)
		fill(t, ms > 0 ? (uint64_t)((double)ms * 1e6) : 0, now);
	__atomic_fetch_add(&ipo_g.timed, 1, __ATOMIC_RELAXED);
	ipo_timer_put(t);
	return 1;
}

/*
 * One pass over the pending pairs (publisher, nwp_g.lock held). With
 * only, just those of that entry, whose communicator goes: with
 * aborted they are dropped unseen (no call on an aborted communicator's
 * events), else polled once more and what has not finished is kept,
 * without its ops, to be recycled when it does. A pair fills its ops
 * while its entry has not been claimed again (the communicator is only
 * finalized after this pass).
 */
static void poll_pending(uint64_t now, struct ipo_entry *only, int aborted)
{
	take_queued();
	struct ipo_timer **pp = &pend;
	while (*pp) {
		struct ipo_timer *t = *pp, *next = t->next; /* a pair done with goes back to its pool, next and all */
		struct ipo_entry *e = t->e;
		int done;
		if (only && (e != only || t->dead)) {
			pp = &t->next;
			continue;
		}
		if (t->dead || aborted || (e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == IPO_ABORTED))
			done = 2; /* abandoned */
		else
			done = poll_one(t, e && __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) == t->gen, now);
		if (!done && only)
			t->e = NULL; /* its communicator goes: the pair is recycled once it finishes */
		if (done == 2) { /* kept where it can be found, never touched */
			t->next = abandoned;
			abandoned = t;
		}
		if (done)
			*pp = next;
		else
			pp = &t->next;
	}
	pend_tail = pp;
	while (*pend_tail)
		pend_tail = &(*pend_tail)->next;
}

/* Top the pools up in the publisher's thread (its current context is its own business). */
static void refill(void)
{
	int n = __atomic_load_n(&nctx, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && __atomic_load_n(&ipo_g.timing, __ATOMIC_ACQUIRE); i++) {
		struct ipo_ctx *x = &ctxs[i];
		pthread_mutex_lock(&x->mu);
		int low = x->nfree < PAIRS_LOW && x->made < PAIRS_MAX;
		pthread_mutex_unlock(&x->mu);
		int dry = __atomic_exchange_n(&x->want, 0, __ATOMIC_RELAXED);
		if (__atomic_load_n(&x->dead, __ATOMIC_RELAXED) || !low)
			continue;
		int r = cu.ctx_set_current(x->cu);
		if (r)
			ctx_aside(x, r);
		else /* a pool that ran dry doubles: ops come faster than the publisher's period */
			pairs_make(x, dry && x->made > PAIRS_BATCH ? x->made : PAIRS_BATCH);
	}
}

void ipo_cuda_tick(uint64_t now)
{
	if (__atomic_load_n(&stopped, __ATOMIC_ACQUIRE) || open_state != 1)
		return;
	if (!relaxed) { /* this thread's queries must not invalidate a graph being captured elsewhere */
		int mode = CAPTURE_MODE_RELAXED;
		if (cu.exchange_capture_mode)
			cu.exchange_capture_mode(&mode);
		relaxed = 1;
	}
	poll_pending(now, NULL, 0);
	refill();
}

void ipo_cuda_release(struct ipo_entry *e, int aborted)
{
	if (open_state != 1)
		return;
	if (__atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
		aborted = 1; /* the process exits: no more calls at all */
	poll_pending(nwp_realtime_ns(), e, aborted);
}

void ipo_cuda_shutdown(void)
{
	__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ipo_g.timing, 0, __ATOMIC_RELEASE);
}
