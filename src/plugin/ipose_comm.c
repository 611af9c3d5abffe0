/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose_comm: the interposer's communicators and settings. The first
 * communicator made decides, once per process, whether the interposer
 * records (NCCLWATCH_INTERPOSE, and never beside ncclwatch's profiler
 * plugin: when the NCCL loaded has a profiler interface and loaded the
 * plugin, the plugin records and the interposer passes every call
 * through). Each communicator made then gets an entry in a map from NCCL's
 * handle and, through nwp_init, the recording's communicator and its stats
 * file, named by a hash that is the same on every rank: NCCL's own
 * commHash for a unique id (DJB2a over its 128 bytes); for a split, the
 * one NCCL 2.18 to 2.25 give (the same hash over "<parent hash>-<color>"),
 * with the split's count added from the second split of a parent on; for
 * ncclCommInitAll, whose ranks are all in this process, one of its own.
 * Destroy and abort stop recording a communicator before NCCL is called,
 * wait for the job's threads to leave the short sections that touch it,
 * and finalize its file; an aborted communicator's events are never
 * touched again.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "plugin/ipose.h"

#define MAPSIZE 4096                 /* communicators (with handles NCCL gave again) a process may have had */
#define USERS_WAIT_NS NWP_SEC        /* destroy and abort wait at most this long for the job's threads to leave */

struct ipo_global ipo_g;
static struct ipo_entry map[MAPSIZE];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static int ipo_mask;                 /* the "activation mask" nwp_init asks for: unused, 0 once disabled */
static struct nwp_front front;
static char front_what[96];

/* --- hashes --- */

/* DJB2a over n bytes, as NCCL hashes a unique id into its commHash (as the platform's char, as NCCL reads them). */
static uint64_t djb2a(const char *p, size_t n)
{
	uint64_t h = 5381;
	for (size_t i = 0; i < n; i++)
		h = ((h << 5) + h) ^ (uint64_t)(int64_t)p[i];
	return h;
}

uint64_t ipo_hash_id(const ipo_uid_t *id)
{
	return djb2a(id->internal, sizeof(id->internal));
}

uint64_t ipo_hash_split(struct ipo_entry *parent, int color)
{
	char buf[128];
	memset(buf, 0, sizeof(buf));
	if (!parent)
		return ipo_hash_local();
	uint32_t n = __atomic_fetch_add(&parent->splits, 1, __ATOMIC_RELAXED);
	if (n == 0)
		snprintf(buf, sizeof(buf), "%016llx-%d", (unsigned long long)parent->hash, color);
	else
		snprintf(buf, sizeof(buf), "%016llx-%d-%u", (unsigned long long)parent->hash, color, n);
	return djb2a(buf, sizeof(buf));
}

uint64_t ipo_hash_local(void)
{
	static uint64_t count;
	char buf[128];
	memset(buf, 0, sizeof(buf));
	snprintf(buf, sizeof(buf), "ncclwatch-%d-%llu-%llu", (int)getpid(),
	         (unsigned long long)__atomic_add_fetch(&count, 1, __ATOMIC_RELAXED),
	         (unsigned long long)nwp_realtime_ns());
	return djb2a(buf, sizeof(buf));
}

/* --- saying things once --- */

void ipo_timing_off(const char *fmt, ...)
{
	static int said;
	__atomic_store_n(&ipo_g.timing, 0, __ATOMIC_RELEASE);
	if (__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
		return;
	char why[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	nwp_log(NWP_LOG_WARN, "ncclwatch: interposer timing off: %s; every op is still counted", why);
}

/* --- settings and the decision --- */

/* NCCLWATCH_TIMED_PER_S: ops (or groups) timed per second and communicator at most; "all"; 0 none. -1 when bad. */
static int config_rate(char *err, size_t errlen)
{
	const char *s = getenv("NCCLWATCH_TIMED_PER_S");
	ipo_g.every_ns = NWP_SEC / 100;
	__atomic_store_n(&ipo_g.timing, 1, __ATOMIC_RELEASE);
	if (!s || !*s)
		return 0;
	if (!strcasecmp(s, "all")) {
		ipo_g.every_ns = 0;
		return 0;
	}
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 0 || v > 1000000) {
		snprintf(err, errlen, "NCCLWATCH_TIMED_PER_S='%.40s' is not 'all' or a whole number in [0, 1000000]", s);
		return -1;
	}
	if (v == 0)
		__atomic_store_n(&ipo_g.timing, 0, __ATOMIC_RELEASE);
	else
		ipo_g.every_ns = NWP_SEC / (uint64_t)v;
	return 0;
}

/* At exit: no CUDA call after this (the driver may be going), and none in progress. */
static void at_exit(void)
{
	__atomic_store_n(&ipo_g.shutdown, 1, __ATOMIC_RELEASE);
	ipo_cuda_shutdown();
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 100 * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if (pthread_mutex_timedlock(&nwp_g.lock, &dl) == 0)
		pthread_mutex_unlock(&nwp_g.lock);
}

/* A child after fork has none of its parent's threads: it passes every call through. */
static void in_child(void)
{
	__atomic_store_n(&ipo_g.shutdown, 1, __ATOMIC_RELAXED);
	ipo_cuda_shutdown();
}

/* The front end's settings, once recording is decided (NCCL nc): the header's word, the mode, the line. */
static void front_setup(const struct ipo_nccl *nc)
{
	const char *why = "";
	int timing = __atomic_load_n(&ipo_g.timing, __ATOMIC_ACQUIRE);
	if (timing && ipo_cuda_open(&why) != 0) {
		ipo_timing_off("%s", why);
		timing = 0;
	}
	front.abi_word = NWS_ABI_INTERPOSER | ((uint32_t)(nc->version > 0 ? nc->version : 0) << 8);
	front.kmode = !timing ? NWS_KMODE_OFF : ipo_g.every_ns ? NWS_KMODE_AUTO : NWS_KMODE_ON;
	if (!timing)
		snprintf(front_what, sizeof(front_what), "ops counted, not timed");
	else if (ipo_g.every_ns)
		snprintf(front_what, sizeof(front_what), "CUDA events on at most %llu ops or groups per second",
		         (unsigned long long)(NWP_SEC / ipo_g.every_ns));
	else
		snprintf(front_what, sizeof(front_what), "CUDA events on every op or group");
	front.what = front_what;
	front.tick = ipo_cuda_tick;
	nwp_g.front = &front;
}

/* Record (1) or pass through (2), decided at the first communicator made with NCCL nc (map_lock held). */
static int decide(const struct ipo_nccl *nc)
{
	int d = __atomic_load_n(&ipo_g.decided, __ATOMIC_ACQUIRE);
	if (d)
		return d;
	char err[200] = "", plugin[256];
	const char *mode = getenv("NCCLWATCH_INTERPOSE");
	int v = nc->version, major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
	d = 1;
	if (mode && *mode && strcasecmp(mode, "auto") && strcasecmp(mode, "off")) {
		nwp_log(NWP_LOG_WARN, "ncclwatch: NCCLWATCH_INTERPOSE='%.40s' is not auto or off; the interposer passes "
		        "every call through", mode);
		d = 2;
	} else if (mode && !strcasecmp(mode, "off")) {
		nwp_log(NWP_LOG_INFO, "ncclwatch: NCCLWATCH_INTERPOSE=off: the interposer passes every call through");
		d = 2;
	} else if (config_rate(err, sizeof(err)) != 0) {
		nwp_log(NWP_LOG_WARN, "ncclwatch: %s; the interposer passes every call through", err);
		d = 2;
	} else if (v >= 22300 && ipo_plugin_loaded(plugin, sizeof(plugin))) {
		nwp_log(NWP_LOG_WARN, "ncclwatch: NCCL %d.%d.%d loaded the ncclwatch profiler plugin ('%s'), which records "
		        "this job; the interposer passes every call through (never both: each op would count twice)",
		        major, minor, v % 100, plugin);
		d = 2;
	}
	if (d == 1) {
		front_setup(nc);
		atexit(at_exit);
		pthread_atfork(NULL, NULL, in_child);
		nwp_log(NWP_LOG_INFO, "ncclwatch: interposer recording NCCL %d.%d.%d ('%s'): %s", major, minor, v % 100,
		        nc->path, front.what);
	}
	__atomic_store_n(&ipo_g.decided, d, __ATOMIC_RELEASE);
	return d;
}

/* --- the map --- */

static size_t home(ipo_comm_t k)
{
	uint64_t x = (uint64_t)(uintptr_t)k;
	x ^= x >> 29;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 40) % MAPSIZE;
}

struct ipo_entry *ipo_lookup(ipo_comm_t k)
{
	struct ipo_entry *any = NULL;
	size_t i = home(k);
	for (size_t n = 0; k && n < MAPSIZE; n++, i = (i + 1) % MAPSIZE) {
		ipo_comm_t key = __atomic_load_n(&map[i].key, __ATOMIC_ACQUIRE);
		if (!key)
			break;
		if (key != k)
			continue;
		int st = __atomic_load_n(&map[i].state, __ATOMIC_ACQUIRE);
		if (st == IPO_LIVE || st == IPO_PENDING)
			return &map[i];
		if (!any)
			any = &map[i];
	}
	return any;
}

/*
 * An entry for handle k (map_lock held): its old one when that is done
 * with, else the first free one on its probe chain; NULL when k is live
 * already (NCCL would not hand a live handle out again) or the map is full.
 */
static struct ipo_entry *claim(ipo_comm_t k)
{
	struct ipo_entry *same = NULL, *first = NULL;
	size_t i = home(k);
	for (size_t n = 0; n < MAPSIZE; n++, i = (i + 1) % MAPSIZE) {
		ipo_comm_t key = map[i].key;
		int st = __atomic_load_n(&map[i].state, __ATOMIC_ACQUIRE);
		if (key == k && (st == IPO_LIVE || st == IPO_PENDING))
			return NULL;
		int reusable = st == IPO_FREE && !__atomic_load_n(&map[i].users, __ATOMIC_ACQUIRE);
		if (reusable && key == k && !same)
			same = &map[i];
		if (reusable && !first)
			first = &map[i];
		if (!key)
			break; /* the end of k's chain */
	}
	struct ipo_entry *e = same ? same : first;
	if (!e)
		return NULL;
	__atomic_add_fetch(&e->gen, 1, __ATOMIC_RELEASE);
	e->c = NULL;
	e->nc = NULL;
	e->hash = 0;
	e->rank = e->nranks = -1;
	__atomic_store_n(&e->errored, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->last_timed_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->splits, 0, __ATOMIC_RELAXED);
	for (unsigned op = 0; op < NWS_NOPS; op++)
		__atomic_store_n(&e->seq[op], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->key, k, __ATOMIC_RELEASE);
	return e;
}

/* Ask NCCL for the rank and size of a comm that did not say them (a split, or one made in a way not wrapped). */
static int ask_size(const struct ipo_nccl *nc, ipo_comm_t k, int *rank, int *nranks)
{
	ipo_res_t (*count)(ipo_comm_t, int *), (*user_rank)(ipo_comm_t, int *);
	memcpy(&count, &nc->fn[IPO_COMM_COUNT], sizeof(count));
	memcpy(&user_rank, &nc->fn[IPO_COMM_USER_RANK], sizeof(user_rank));
	return count && user_rank && count(k, nranks) == IPO_SUCCESS && user_rank(k, rank) == IPO_SUCCESS &&
	       *nranks > 0 && *rank >= 0 && *rank < *nranks ? 0 : -1;
}

/* Watch e's communicator (map_lock held): its recording comm and stats file, its first event pairs. */
static void watch(struct ipo_entry *e)
{
	void *ctx = NULL;
	nwp_init(NWP_ABI_INTERPOSER, 1, &ctx, e->hash, &ipo_mask, NULL, 0, e->nranks, e->rank, NULL);
	e->c = nwp_ctx_comm(ctx); /* NULL: not watched (more than NCCLWATCH_MAX_COMMS), or recording is disabled */
	__atomic_store_n(&e->state, IPO_LIVE, __ATOMIC_RELEASE);
	if (e->c)
		ipo_cuda_prepare();
}

void ipo_register(const struct ipo_nccl *nc, ipo_comm_t k, uint64_t hash, int rank, int nranks)
{
	if (!nc || !k || __atomic_load_n(&ipo_g.shutdown, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&map_lock);
	struct ipo_entry *e = decide(nc) == 1 ? claim(k) : NULL;
	if (e) {
		e->nc = nc;
		e->hash = hash;
		if (nranks > 0 && rank >= 0 && rank < nranks) {
			e->rank = rank;
			e->nranks = nranks;
		}
		if (e->nranks > 0 || ask_size(nc, k, &e->rank, &e->nranks) == 0)
			watch(e);
		else
			__atomic_store_n(&e->state, IPO_PENDING, __ATOMIC_RELEASE); /* still being made (nonblocking) */
	} else if (__atomic_load_n(&ipo_g.decided, __ATOMIC_RELAXED) == 1) {
		static int said;
		if (!said++)
			nwp_log(NWP_LOG_WARN, "ncclwatch: the interposer's table of %d communicators is full; later ones "
			        "are not recorded", MAPSIZE);
	}
	pthread_mutex_unlock(&map_lock);
}

struct ipo_entry *ipo_live(const struct ipo_nccl *nc, ipo_comm_t k)
{
	struct ipo_entry *e = ipo_lookup(k);
	int st = e ? __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) : IPO_FREE;
	if (st == IPO_LIVE)
		return e->c ? e : NULL;
	if (e && st != IPO_PENDING)
		return NULL; /* going, or gone */
	if (__atomic_load_n(&ipo_g.decided, __ATOMIC_ACQUIRE) == 2)
		return NULL;
	if (!e) /* made by a call the interposer does not wrap (ncclCommShrink ...): watched from its first op */
		ipo_register(nc, k, ipo_hash_local(), -1, -1);
	pthread_mutex_lock(&map_lock);
	e = ipo_lookup(k);
	if (e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == IPO_PENDING &&
	    ask_size(e->nc, k, &e->rank, &e->nranks) == 0)
		watch(e);
	pthread_mutex_unlock(&map_lock);
	return e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == IPO_LIVE && e->c ? e : NULL;
}

/* --- the end of a communicator --- */

/* Wait (bounded) until no job thread is in a section that touches e. */
static void wait_users(struct ipo_entry *e)
{
	uint64_t t0 = nwp_mono_ns();
	while (__atomic_load_n(&e->users, __ATOMIC_SEQ_CST) && nwp_mono_ns() - t0 < USERS_WAIT_NS)
		sched_yield();
}

/* Take nwp_g.lock, waiting at most a second (a driver call stuck in the publisher must not hold an abort). */
static int lock_publisher(void)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 1;
	return pthread_mutex_timedlock(&nwp_g.lock, &dl);
}

struct ipo_entry *ipo_end_begin(ipo_comm_t k, int abort)
{
	pthread_mutex_lock(&map_lock);
	struct ipo_entry *e = ipo_lookup(k);
	int st = e ? __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) : IPO_FREE;
	if (st == IPO_LIVE || st == IPO_PENDING)
		__atomic_store_n(&e->state, abort ? IPO_ABORTED : IPO_DEAD, __ATOMIC_SEQ_CST);
	else
		e = NULL;
	pthread_mutex_unlock(&map_lock);
	if (!e)
		return NULL;
	wait_users(e);
	if (abort && lock_publisher() == 0) { /* before NCCL aborts: the pairs are dropped unseen */
		ipo_cuda_release(e, 1);
		pthread_mutex_unlock(&nwp_g.lock);
	}
	return e;
}

void ipo_end_finish(struct ipo_entry *e, int abort)
{
	if (!e)
		return;
	if (!abort && lock_publisher() == 0) {
		ipo_cuda_release(e, 0);
		pthread_mutex_unlock(&nwp_g.lock);
	}
	if (e->c)
		nwp_finalize(e->c);
	pthread_mutex_lock(&map_lock);
	__atomic_store_n(&e->state, IPO_FREE, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_lock);
}
