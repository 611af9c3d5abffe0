/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nccl_prof: the fake NCCL loads and drives a profiler plugin as NCCL
 * 2.23 to 2.30 do (fake_nccl_prof.h says what it raises and when).
 */
#include "fake_nccl_prof.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "profiler_abi.h"

static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;              /* 0 not tried, 1 a plugin, -1 none */
static struct np_plugin plugin;
static int mask;                /* NCCL's activation mask: one int per process */

/* Kernel events to come: the op's handle by token (a ring: a token pushed out just loses them). */
#define NPEND 4096
static struct { uint64_t token; void *handle; } pend[NPEND];
static uint64_t next_token;

/* NCCL_DEBUG as NCCL reads it: 2 (INFO and WARN), 1 (WARN), 0 (nothing). */
static int debug_level(void)
{
	const char *d = getenv("NCCL_DEBUG");
	if (!d)
		return 0;
	return !strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE") ? 2 : !strcasecmp(d, "WARN") ? 1 : 0;
}

static FILE *debug_file;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

/* NCCL_DEBUG_FILE as NCCL reads it: %h the host, %p the pid; stderr when unset or not writable. */
static void debug_open(void)
{
	const char *pat = getenv("NCCL_DEBUG_FILE");
	char path[1024], host[256];
	size_t n = 0;
	debug_file = stderr;
	if (!pat || !*pat || gethostname(host, sizeof(host)) != 0)
		return;
	host[sizeof(host) - 1] = '\0';
	for (const char *c = pat; *c && n + 300 < sizeof(path); c++) {
		if (c[0] == '%' && c[1] == 'h')
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%s", host), c++;
		else if (c[0] == '%' && c[1] == 'p')
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid()), c++;
		else
			path[n++] = *c;
	}
	path[n] = '\0';
	FILE *f = fopen(path, "a");
	if (f) {
		setvbuf(f, NULL, _IOLBF, 0);
		debug_file = f;
	}
}

/* Where NCCL's debug lines go. */
static FILE *debug_out(void)
{
	pthread_once(&debug_once, debug_open);
	return debug_file;
}

/* The logger v4+ plugins get: NCCL's line format into NCCL_DEBUG_FILE (else stderr), as NCCL_DEBUG asks. */
__attribute__((format(printf, 5, 6))) static void fake_logger(int level, unsigned long flags, const char *file,
                                                                int line, const char *fmt, ...)
{
	(void)flags;
	(void)file;
	(void)line;
	int d = debug_level();
	if (!(d == 2 || (d == 1 && level == 2)))
		return;
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(debug_out(), "fake:%d:%d [0] NCCL %s %s\n", (int)getpid(), (int)gettid(), level == 2 ? "WARN" : "INFO", msg);
}

/* Open the plugin once, the way NCCL version does (pmu held). */
static void load(int version)
{
	char why[600];
	loaded = -1;
	if (np_open(&plugin, version, getenv("NCCL_PROFILER_PLUGIN"), why, sizeof(why)) != 0) {
		if (debug_level() == 2 && getenv("NCCL_PROFILER_PLUGIN"))
			fprintf(debug_out(), "fake:%d:%d [0] NCCL INFO PROFILER/Plugin: %s\n", (int)getpid(), (int)gettid(), why);
		return;
	}
	loaded = 1;
	if (debug_level() == 2)
		fprintf(debug_out(), "fake:%d:%d [0] NCCL INFO PROFILER/Plugin: Loaded %s (v%d)\n", (int)getpid(), (int)gettid(),
		        plugin.name ? plugin.name : "?", plugin.abi);
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

void fprof_comm_init(struct fprof_comm *p, const unsigned char *id, int n, int rank, int version)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_lock(&pmu);
	if (!loaded)
		load(version);
	pthread_mutex_unlock(&pmu);
	if (loaded != 1 || n < 2)
		return; /* NCCL raises no events on a one-rank communicator */
	p->hash = fnv1a(id, 128);
	p->n = n;
	p->rank = rank;
	void *ctx = NULL;
	if (np_init(&plugin, &ctx, &mask, p->hash, "", 1, n, rank, fake_logger) == 0)
		p->ctx = ctx;
}

void fprof_comm_fini(struct fprof_comm *p)
{
	if (p->ctx)
		np_fini(&plugin, p->ctx);
	p->ctx = NULL;
}

/* Bytes per element of ncclDataType_t t (0 unknown). */
static unsigned tsize(int t)
{
	static const unsigned char s[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return t >= 0 && (size_t)t < sizeof(s) ? s[t] : 0;
}

static const char *dtype_name(int t)
{
	static const char *const n[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
		                         "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
		                         "ncclFloat8e5m2" };
	return t >= 0 && (size_t)t < sizeof(n) / sizeof(n[0]) ? n[t] : "Unknown";
}

uint64_t fprof_launch(struct fprof_comm *p, int kind, const char *func, int coll, int dtype, size_t count, int root)
{
	if (!p->ctx)
		return 0;
	int m = __atomic_load_n(&mask, __ATOMIC_RELAXED);
	if (!(m & (NP_COLL | NP_P2P)))
		return 0;
	union np_descr gd, d;
	struct np_op op = { coll, 0, func, dtype_name(dtype), "RING", "SIMPLE", 1, 2,
	                    coll && kind >= 0 && kind < 16 ? p->seq[kind]++ : 0, count, tsize(dtype), root, 1, 8,
	                    p->hash, "", p->n, NULL };
	void *group = NULL, *h = NULL;
	np_head(&plugin, &gd, NP_GROUP, NULL, 0);
	np_start(&plugin, p->ctx, &group, &gd);
	/* NCCL 2.23 to 2.27 (v1 to v4) raise an op's events only under a group handle that is not NULL */
	if (!group && plugin.abi <= 4)
		return 0;
	np_start(&plugin, p->ctx, &h, np_op_descr(&plugin, &d, &op, group, p->rank));
	if (h)
		np_stop(&plugin, h); /* enqueued */
	if (group)
		np_stop(&plugin, group);
	if (!h || plugin.abi < 3 || !(m & NP_KERNELCH))
		return 0;
	pthread_mutex_lock(&pmu);
	uint64_t t = ++next_token;
	pend[t % NPEND].token = t;
	pend[t % NPEND].handle = h;
	pthread_mutex_unlock(&pmu);
	return t;
}

void fprof_ran(uint64_t token)
{
	if (!token)
		return;
	pthread_mutex_lock(&pmu);
	void *h = pend[token % NPEND].token == token ? pend[token % NPEND].handle : NULL;
	if (h)
		pend[token % NPEND].token = 0;
	pthread_mutex_unlock(&pmu);
	if (!h)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	union np_descr kd;
	void *kh = NULL;
	np_start(&plugin, NULL, &kh, np_kernelch_descr(&plugin, &kd, h, 0, now > 1000 ? now - 1000 : now));
	if (kh)
		np_kernelch_end(&plugin, kh, now);
}
