/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_harness: load the ncclwatch profiler plugin with dlopen and drive
 * it through its real ABI exactly as NCCL would (profiler v4, v5 or v6
 * descriptor layouts, declared here from NCCL's documented headers), from
 * several processes (one per rank) with an optional late rank, then check
 * the stats files through the statsfile reader.
 *
 * What it fed is printed as lines
 *   fed comm=<16 hex> name=<name> rank=<r> nranks=<n> op=<op> count=<ops> bytes=<bytes>
 * so other tools' output (top --once, exporter --once) can be compared.
 * With --check it also prints "check ok ..." or "check FAIL ..." lines and
 * exits 1 on any mismatch. Scenarios other than "normal" feed bad input and
 * check that the plugin disables itself with one log line and never crashes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "export/statsfile.h"
#include "fakegpu/profiler_abi.h"
#include "util/util.h"

/* ---- NCCL's profiler ABI: tests/fakegpu/profiler_abi.h (v1 to v6, declared apart from the plugin's) ---- */

enum {
	ev_group = NP_GROUP, ev_coll = NP_COLL, ev_p2p = NP_P2P, ev_proxyop = NP_PROXYOP,
	ev_kernelch = NP_KERNELCH, ev_collapi = NP_COLLAPI, ev_cecoll = NP_CECOLL
};

/* ---- what the harness feeds ---- */

#define MAXR 64
#define NCOMMS 2

struct opdef {
	int op;               /* enum nws_op */
	const char *func;     /* NCCL's name */
	const char *dtype;
	size_t count;
	unsigned tsize;
	int coll;
	int root;
	int ce;               /* v6 only: a collective run on copy engines (CeColl event) */
};

static const struct opdef comm0_ops[] = {
	{ NWS_OP_ALL_REDUCE, "AllReduce", "ncclFloat32", 2, 4, 1, -1, 0 },
	{ NWS_OP_ALL_REDUCE, "AllReduce", "ncclFloat32", 65536, 4, 1, -1, 0 },
	{ NWS_OP_ALL_REDUCE, "AllReduce", "ncclFloat32", 2 << 20, 4, 1, -1, 0 },
	{ NWS_OP_ALL_GATHER, "AllGather", "ncclInt8", 4096, 1, 1, -1, 0 },
	{ NWS_OP_REDUCE_SCATTER, "ReduceScatter", "ncclFloat32", 1024, 4, 1, -1, 0 },
	{ NWS_OP_BROADCAST, "Broadcast", "ncclInt8", 4096, 1, 1, 0, 0 },
	{ NWS_OP_ALLTOALL, "AlltoAll", "ncclBfloat16", 512, 2, 1, -1, 0 },
	{ NWS_OP_SEND, "Send", "ncclFloat32", 256, 4, 0, -1, 0 },
	{ NWS_OP_RECV, "Recv", "ncclFloat32", 256, 4, 0, -1, 0 },
	{ NWS_OP_GATHER, "Gather", "ncclInt8", 8192, 1, 1, 0, 1 },
};
static const struct opdef comm1_ops[] = {
	{ NWS_OP_ALL_REDUCE, "AllReduce", "ncclBfloat16", 1 << 20, 2, 1, -1, 0 },
};

struct fed { uint64_t count, bytes, ce, graph; };

/* Shared between the parent and the rank processes. */
struct shared {
	int nranks;
	int arrived;            /* barrier */
	int sense;
	uint64_t release_ns;    /* time the last rank reached the barrier */
	uint64_t deadline_ns;   /* --seconds: feed rounds until then */
	int go;                 /* --seconds: rank 0's word on another round */
	uint64_t pub_cpu_ns;    /* hotpath --rate: CPU time of the plugin's publisher thread */
	uint64_t paced_ns;      /* ... over this much wall time */
	int warn_lines[MAXR];   /* WARN lines each rank's logger got */
	int final_mask[MAXR];
	int disabled_ok[MAXR];
	char last_warn[MAXR][200];
	struct fed fed[MAXR][NCOMMS][NWS_NOPS];
};

struct opts {
	const char *plugin;
	const char *dir;
	const char *scenario;
	int abi;
	int nranks;
	int ops;
	int late;
	long late_us;
	int check;
	long seconds;        /* normal scenario: feed rounds for this long instead of --ops rounds */
	long rate;           /* hotpath: feed this many ops per second (0: as fast as possible) */
	int expect_damage;   /* the files are damaged from outside meanwhile: one WARN line per rank expected */
	long hold_ms;
	const char *kernel;
	const char *cuda;   /* a CUDA driver to load and make a context current in, as NCCL would */
	int verbose;
};

static struct shared *sh;
static int my_rank;
static int verbose;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* NCCL's logger stand-in: counts WARN lines per rank, prints the periodic NCCLWATCH lines, shows the rest with -v. */
static void fake_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags;
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == 3 && !strncmp(msg, "NCCLWATCH ", 10)) {
		printf("logfn rank=%d %s\n", my_rank, msg);
		fflush(stdout);
		return;
	}
	/* exposed communication turning itself off is one expected line, not a plugin problem */
	if (level == 2 && !strstr(msg, "exposed communication off:")) {
		__atomic_fetch_add(&sh->warn_lines[my_rank], 1, __ATOMIC_RELAXED);
		snprintf(sh->last_warn[my_rank], sizeof(sh->last_warn[my_rank]), "%s", msg);
	}
	if (verbose || level == 2)
		fprintf(stderr, "[rank %d logfn level %d %s:%d] %s\n", my_rank, level, file, line, msg);
}

/*
 * v1 to v3 give the plugin no logger: its lines go to stderr. A rank's
 * stderr is kept in a file meanwhile and read back at its end, so WARN
 * lines count as the logger's do (and pass on to the real stderr).
 */
static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void)
{
	char path[] = "/tmp/nwharness.XXXXXX";
	fflush(stderr);
	cap_fd = mkstemp(path);
	if (cap_fd < 0)
		return;
	unlink(path);
	cap_saved = dup(2);
	dup2(cap_fd, 2);
}

static void capture_end(void)
{
	if (cap_fd < 0)
		return;
	fflush(stderr);
	dup2(cap_saved, 2);
	lseek(cap_fd, 0, SEEK_SET);
	FILE *f = fdopen(cap_fd, "r");
	char line[700];
	while (f && fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		line[strcspn(line, "\n")] = '\0';
		const char *w = strstr(line, " ncclwatch WARN ");
		const char *nl = strstr(line, "NCCLWATCH v=");
		if (nl && !w) {
			printf("logfn rank=%d %s\n", my_rank, nl);
		} else if (w && !strstr(w, "exposed communication off:")) {
			sh->warn_lines[my_rank]++;
			snprintf(sh->last_warn[my_rank], sizeof(sh->last_warn[my_rank]), "%s", w + strlen(" ncclwatch WARN "));
		}
	}
	if (f)
		fclose(f);
	cap_fd = -1;
}

/* Sense-reversing barrier across rank processes; -1 after 20 s (a rank died). */
static int barrier(void)
{
	int s = __atomic_load_n(&sh->sense, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&sh->arrived, 1, __ATOMIC_ACQ_REL) == sh->nranks) {
		__atomic_store_n(&sh->arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sh->release_ns, now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&sh->sense, !s, __ATOMIC_RELEASE);
		return 0;
	}
	uint64_t t0 = now_ns();
	while (__atomic_load_n(&sh->sense, __ATOMIC_ACQUIRE) == s) {
		if (now_ns() - t0 > 20000000000ull)
			return -1;
		sched_yield();
	}
	return 0;
}

/* One rank's view of the loaded plugin, whatever its ABI. */
struct drv {
	int abi;
	struct np_plugin p;
	int *mask;
};

/*
 * The communicators this process made, by context: v1 to v3 name the
 * communicator in every op (init does not), so the descriptors need it.
 * A context the plugin hands out again replaces its entry.
 */
static struct comm_reg { void *ctx; uint64_t hash; const char *name; int nranks; } comm_reg[512];

static void reg_add(void *ctx, uint64_t hash, const char *name, int nranks)
{
	size_t i, n = NW_ARRAY_LEN(comm_reg);
	for (i = 0; i < n && comm_reg[i].ctx && comm_reg[i].ctx != ctx; i++)
		;
	if (i < n)
		comm_reg[i] = (struct comm_reg){ ctx, hash, name, nranks };
}

static const struct comm_reg *reg_find(const void *ctx)
{
	static const struct comm_reg none = { NULL, 0, NULL, 0 };
	for (size_t i = 0; i < NW_ARRAY_LEN(comm_reg) && comm_reg[i].ctx; i++)
		if (comm_reg[i].ctx == ctx)
			return &comm_reg[i];
	return &none;
}

static int drv_init_nodes(struct drv *d, void **ctx, uint64_t hash, int *mask, const char *name, int nnodes,
                          int nranks, int rank)
{
	int rc = np_init(&d->p, ctx, mask, hash, name, nnodes, nranks, rank, fake_log);
	reg_add(*ctx, hash, name, nranks);
	return rc;
}

static int drv_init(struct drv *d, void **ctx, uint64_t hash, int *mask, const char *name, int nranks, int rank)
{
	return drv_init_nodes(d, ctx, hash, mask, name, 1, nranks, rank);
}

static int drv_start(struct drv *d, void *ctx, void **h, void *descr) { return np_start(&d->p, ctx, h, descr); }
static int drv_stop(struct drv *d, void *h) { return np_stop(&d->p, h); }
static int drv_record(struct drv *d, void *h, int st, void *a) { return np_record(&d->p, h, st, a); }
static int drv_fini(struct drv *d, void *ctx) { return np_fini(&d->p, ctx); }

/* A Group descriptor in d's layout, in buf. */
static void *group_descr(struct drv *d, void *buf)
{
	np_head(&d->p, buf, ev_group, NULL, 0);
	return buf;
}

/* Build the descriptor of one op of the communicator behind ctx in the layout of d->abi, in buf. */
static void *make_descr(struct drv *d, void *ctx, void *buf, const struct opdef *o, uint64_t seq, int rank,
                        int nranks, void *group)
{
	const struct comm_reg *c = reg_find(ctx);
	struct np_op op = { o->coll, o->ce, o->func, o->dtype, "RING", "LL", 1, 0, seq, o->count, o->tsize,
	                    o->coll ? o->root : o->op == NWS_OP_SEND ? (rank + 1) % nranks : (rank + nranks - 1) % nranks,
	                    o->coll ? 2 : 1, o->coll ? 8 : 0, c->hash, c->name, nranks, buf };
	return np_op_descr(&d->p, buf, &op, group, rank);
}

static uint64_t op_bytes(const struct opdef *o, int nranks)
{
	uint64_t b = (uint64_t)o->count * o->tsize;
	if (o->op == NWS_OP_ALL_GATHER || o->op == NWS_OP_REDUCE_SCATTER || o->op == NWS_OP_ALLTOALL ||
	    o->op == NWS_OP_GATHER || o->op == NWS_OP_SCATTER)
		b *= (uint64_t)nranks;
	return b;
}

/* Kernel channel events of one op, as NCCL's proxy thread would send them (none before v3). */
static void feed_kernel(struct drv *d, void *h, int nch, uint64_t kstart, uint64_t kend)
{
	for (int ch = 0; d->abi >= 3 && ch < nch; ch++) {
		union np_descr buf;
		void *kh = NULL;
		drv_start(d, NULL, &kh, np_kernelch_descr(&d->p, &buf, h, ch, kstart + (uint64_t)ch * 100));
		if (kh)
			np_kernelch_end(&d->p, kh, kend - (uint64_t)ch * 100);
	}
}

/*
 * Feed one op the way NCCL does: the mask is read at the call; a Group
 * event, the Coll/P2p event (stopped once enqueued), then KernelCh events
 * for each channel when the mask asked for them. dur_ns is the simulated
 * kernel time; late_ns delays this rank's arrival.
 */
static void feed_op(struct drv *d, void *ctx, const struct opdef *o, uint64_t seq, int rank, int nranks,
                    uint64_t dur_ns, int synced, long late_us, int is_late, int comm, int kernel_first)
{
	int mask = __atomic_load_n(d->mask, __ATOMIC_RELAXED);
	if (!(mask & (ev_coll | ev_p2p)))
		return;
	if (o->ce && (d->abi < 6 || !(mask & ev_cecoll)))
		return; /* NCCL before 2.29 has no copy-engine collectives */
	if (d->abi <= 4 && (o->op == NWS_OP_ALLTOALL || o->op == NWS_OP_GATHER || o->op == NWS_OP_SCATTER))
		return; /* ... and before 2.28 no alltoall, gather or scatter collectives (v1 has no number for them) */
	if (synced) {
		if (barrier() != 0) {
			fprintf(stderr, "rank %d: barrier timed out (another rank died?)\n", rank);
			exit(3);
		}
		if (is_late)
			sleep_us(late_us);
	}
	union np_descr gbuf, buf;
	void *group = NULL, *h = NULL;
	if (d->abi >= 5 && comm == 1 && o->coll) {
		/* v5+: NCCL sends the API call first; the solo comm's calls are "captured into a graph" */
		union np_descr abuf;
		struct np_op api = { .func = o->func, .dtype = o->dtype, .count = o->count, .root = o->root };
		void *ah = NULL;
		drv_start(d, ctx, &ah, np_collapi_descr(&d->p, &abuf, &api, true));
		if (ah)
			drv_stop(d, ah);
		sh->fed[my_rank][comm][o->op].graph++;
	}
	if (!o->ce) /* a CeColl's parent is the CollApi event, not a Group */
		drv_start(d, ctx, &group, group_descr(d, &gbuf));
	void *descr = make_descr(d, ctx, &buf, o, seq, rank, nranks, group);
	uint64_t enq = now_ns();
	drv_start(d, ctx, &h, descr);
	uint64_t kstart = enq + 5000;
	uint64_t kend = kstart + dur_ns;
	if (synced && late_us > 0) {
		/* simulated GPU clock: kernels start when their rank arrives (the late
		 * one late_us after the others) and all end when the late one is done,
		 * whatever the scheduler did to these processes */
		uint64_t rel = __atomic_load_n(&sh->release_ns, __ATOMIC_RELAXED);
		kstart = rel + (is_late ? (uint64_t)late_us * 1000 : 0) + 5000;
		kend = rel + (uint64_t)late_us * 1000 + 5000 + dur_ns;
	}
	int nch = o->coll ? 2 : 1;
	if (o->ce)
		mask &= ~ev_kernelch; /* copy engines: no kernel, no KernelCh events */
	if (kernel_first && h && (mask & ev_kernelch))
		feed_kernel(d, h, nch, kstart, kend);
	if (h)
		drv_stop(d, h);
	if (!kernel_first && h && (mask & ev_kernelch))
		feed_kernel(d, h, nch, kstart, kend);
	if (group)
		drv_stop(d, group);
	struct fed *f = &sh->fed[my_rank][comm][o->op];
	f->count++;
	f->bytes += op_bytes(o, nranks);
	f->ce += o->ce != 0;
}

static int load_plugin(const struct opts *o, struct drv *d, void **lib)
{
	*lib = dlopen(o->plugin, RTLD_NOW | RTLD_LOCAL);
	if (!*lib) {
		fprintf(stderr, "plugin_harness: cannot load '%s': %s\n", o->plugin, dlerror());
		return -1;
	}
	/* as NCCL would whose newest interface is --abi: the plugin exports every one, so it is that one */
	if (np_take(&d->p, *lib, o->abi) != 0 || d->p.abi != o->abi) {
		fprintf(stderr, "plugin_harness: '%s' does not export ncclProfiler_v%d\n", o->plugin, o->abi);
		return -1;
	}
	d->abi = o->abi;
	if (!d->p.name || strcmp(d->p.name, "ncclwatch") != 0) {
		fprintf(stderr, "plugin_harness: ncclProfiler_v%d.name is '%s', wanted 'ncclwatch'\n", o->abi,
		        d->p.name ? d->p.name : "(null)");
		return -1;
	}
	return 0;
}

/* Communicator ids; --job J moves them all by J << 32, so several jobs can share one directory. */
static uint64_t job_salt;
#define HASH0 (0x5eed000000c0ffeeull + job_salt)
#define HASH1 (0x5eed0000000007a1ull + job_salt)

/*
 * What NCCL's init thread has when it calls the profiler: the CUDA driver
 * loaded and the rank's device (rank modulo 2) current. 0, or -1.
 */
static int cuda_current(const char *path, int rank)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "cannot load '%s': %s\n", path, dlerror());
		return -1;
	}
	int (*cu_init)(unsigned), (*dev_get)(int *, int), (*retain)(void **, int), (*set_cur)(void *);
	*(void **)(void *)&cu_init = dlsym(h, "cuInit");
	*(void **)(void *)&dev_get = dlsym(h, "cuDeviceGet");
	*(void **)(void *)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)(void *)&set_cur = dlsym(h, "cuCtxSetCurrent");
	int dev;
	void *ctx;
	if (!cu_init || !dev_get || !retain || !set_cur || cu_init(0) || dev_get(&dev, rank % 2) ||
	    retain(&ctx, dev) || set_cur(ctx)) {
		fprintf(stderr, "'%s': cannot make a context current\n", path);
		return -1;
	}
	return 0;
}

/*
 * With --seconds: whether every rank feeds one more round (rank 0 decides,
 * so all ranks feed the same collectives), 1 ms apart.
 */
static int another_round(const struct opts *o, int rank)
{
	if (o->nranks == 1)
		return now_ns() < sh->deadline_ns;
	sleep_us(1000);
	if (rank == 0)
		__atomic_store_n(&sh->go, now_ns() < sh->deadline_ns, __ATOMIC_RELAXED);
	if (barrier() != 0) {
		fprintf(stderr, "rank %d: barrier timed out (another rank died?)\n", rank);
		exit(3);
	}
	return __atomic_load_n(&sh->go, __ATOMIC_RELAXED);
}

/* The normal run of one rank: two communicators, every op kind, -o ops each (or rounds for --seconds). */
static int rank_normal(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (o->cuda && cuda_current(o->cuda, rank) != 0)
		return 2;
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	/* NCCL passes the address of one process-wide int to every init */
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx0 = NULL, *ctx1 = NULL;
	if (drv_init(&d, &ctx0, HASH0, &nccl_mask, "world", o->nranks, rank) != 0 ||
	    drv_init(&d, &ctx1, HASH1 + (uint64_t)rank, &nccl_mask, "solo", 1, 0) != 0) {
		fprintf(stderr, "rank %d: init failed\n", rank);
		return 2;
	}
	uint64_t seq[NWS_NOPS] = { 0 };
	int k = 0;
	for (int i = 0; o->seconds ? another_round(o, rank) : i < o->ops; i++) {
		for (size_t j = 0; j < NW_ARRAY_LEN(comm0_ops); j++) {
			const struct opdef *op = &comm0_ops[j];
			uint64_t dur = 5000 + op_bytes(op, o->nranks) / 100;
			uint64_t s = op->coll ? seq[op->op]++ : 0;
			feed_op(&d, ctx0, op, s, rank, o->nranks, dur, op->coll && o->nranks > 1,
			        o->late >= 0 ? o->late_us : 0,
			        rank == o->late, 0, (k++ % 7) == 3);
		}
		if (i % 2 == 0)
			feed_op(&d, ctx1, &comm1_ops[0], (uint64_t)(i / 2), 0, 1, 20000, 0, 0, 0, 1, 0);
	}
	if (o->hold_ms)
		sleep_us(o->hold_ms * 1000); /* files are live meanwhile: for top/exporter checks */
	drv_fini(&d, ctx1);
	drv_fini(&d, ctx0);
	sh->final_mask[rank] = nccl_mask;
	/* the library stays loaded: NCCL unloads it only at exit */
	return 0;
}

/* d zeroed, the plugin loaded into it, and NCCL's one process-wide mask int as d->mask; -1 when it cannot load. */
static int drv_open(const struct opts *o, struct drv *d, void **lib)
{
	static int nccl_mask;
	memset(d, 0, sizeof(*d));
	if (load_plugin(o, d, lib) != 0)
		return -1;
	d->mask = &nccl_mask;
	return 0;
}

/*
 * An FSDP-like job for series counts: 4 communicators, 6 ops (all_reduce,
 * all_gather, reduce_scatter, broadcast, send, recv), 12 sizes (4 KiB to
 * 8 MiB of float32 elements per rank, doubling), each op fed -o times.
 */
static int rank_fsdp(const struct opts *o, int rank)
{
	static const struct opdef kinds[6] = {
		{ NWS_OP_ALL_REDUCE, "AllReduce", "ncclFloat32", 0, 4, 1, -1, 0 },
		{ NWS_OP_ALL_GATHER, "AllGather", "ncclFloat32", 0, 4, 1, -1, 0 },
		{ NWS_OP_REDUCE_SCATTER, "ReduceScatter", "ncclFloat32", 0, 4, 1, -1, 0 },
		{ NWS_OP_BROADCAST, "Broadcast", "ncclFloat32", 0, 4, 1, 0, 0 },
		{ NWS_OP_SEND, "Send", "ncclFloat32", 0, 4, 0, -1, 0 },
		{ NWS_OP_RECV, "Recv", "ncclFloat32", 0, 4, 0, -1, 0 },
	};
	void *lib, *ctx[4];
	struct drv d;
	if (drv_open(o, &d, &lib) != 0)
		return 2;
	for (int c = 0; c < 4; c++)
		if (drv_init(&d, &ctx[c], HASH0 + (uint64_t)c, d.mask, "fsdp", o->nranks, rank) != 0)
			return 2;
	uint64_t seq[4][NWS_NOPS] = { { 0 } };
	for (int i = 0; i < o->ops; i++)
		for (int c = 0; c < 4; c++)
			for (int k = 0; k < 6; k++)
				for (int sz = 0; sz < 12; sz++) {
					struct opdef op = kinds[k];
					op.count = (size_t)1024 << sz;
					uint64_t s = op.coll ? seq[c][op.op]++ : 0;
					feed_op(&d, ctx[c], &op, s, rank, o->nranks, 5000 + op_bytes(&op, o->nranks) / 100, 0, 0,
					        0, 0, 0);
				}
	if (o->hold_ms)
		sleep_us(o->hold_ms * 1000);
	for (int c = 3; c >= 0; c--)
		drv_fini(&d, ctx[c]);
	return 0;
}

/* ---- threads: NCCL's threads, as NCCL runs them (for ThreadSanitizer) ---- */

/* Ops handed by the launching thread to the proxy thread, as NCCL's proxy gets them. */
static struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	void *h[256];
	unsigned head, tail;
	int done;
} tq = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, 0, 0, 0 };

struct thr_arg {
	struct drv *d;
	void *ctx;
	int ops;
};

static void tq_push(void *h)
{
	pthread_mutex_lock(&tq.m);
	while (tq.head - tq.tail == NW_ARRAY_LEN(tq.h))
		pthread_cond_wait(&tq.c, &tq.m);
	tq.h[tq.head++ % NW_ARRAY_LEN(tq.h)] = h;
	pthread_cond_broadcast(&tq.c);
	pthread_mutex_unlock(&tq.m);
}

/* NCCL's proxy thread: a ProxyOp and the kernel channels of every op it is handed. */
static void *proxy_main(void *p)
{
	struct thr_arg *a = p;
	for (;;) {
		pthread_mutex_lock(&tq.m);
		while (tq.head == tq.tail && !tq.done)
			pthread_cond_wait(&tq.c, &tq.m);
		if (tq.head == tq.tail) {
			pthread_mutex_unlock(&tq.m);
			return NULL;
		}
		void *h = tq.h[tq.tail++ % NW_ARRAY_LEN(tq.h)];
		pthread_cond_broadcast(&tq.c);
		pthread_mutex_unlock(&tq.m);
		union np_descr buf;
		void *ph = NULL;
		np_proxyop_descr(&a->d->p, &buf, h, 0, getpid(), 0, 1, 1);
		if (__atomic_load_n(a->d->mask, __ATOMIC_RELAXED) & ev_proxyop)
			drv_start(a->d, a->ctx, &ph, &buf);
		uint64_t t = now_ns();
		feed_kernel(a->d, h, 2, t, t + 20000);
		if (ph)
			drv_stop(a->d, ph);
	}
}

/* NCCL's launching thread: Group, Coll (handed to the proxy when KernelCh is on), stop, stop. */
static void *launch_main(void *p)
{
	struct thr_arg *a = p;
	for (int i = 0; i < a->ops; i++) {
		const struct opdef *o = &comm0_ops[i % 3]; /* all_reduces of three sizes */
		int mask = __atomic_load_n(a->d->mask, __ATOMIC_RELAXED);
		union np_descr gbuf, buf;
		void *group = NULL, *h = NULL;
		drv_start(a->d, a->ctx, &group, group_descr(a->d, &gbuf));
		drv_start(a->d, a->ctx, &h, make_descr(a->d, a->ctx, &buf, o, (uint64_t)i, 0, 2, group));
		if (h && (mask & (ev_kernelch | ev_proxyop)))
			tq_push(h);
		if (h)
			drv_stop(a->d, h);
		if (group)
			drv_stop(a->d, group);
		sh->fed[0][0][o->op].count++;
		sh->fed[0][0][o->op].bytes += op_bytes(o, 2);
	}
	return NULL;
}

/*
 * The plugin driven from NCCL's threads at once: a launching thread runs
 * ops on a two-node communicator while a proxy thread sends their ProxyOp
 * and KernelCh events, and the main thread (another rank's init thread, a
 * second launching thread) makes, uses and finalizes communicators all
 * along; kernel timestamps on the auto policy with 1 s samples, so the
 * mask changes under the launching thread. For ThreadSanitizer (make
 * TSAN=1 tsan); the check is comm 0's counts.
 */
static int rank_threads(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	if (drv_open(o, &d, &lib) != 0)
		return 2;
	void *ctx0 = NULL;
	drv_init_nodes(&d, &ctx0, HASH0, d.mask, "threads", 2, 2, rank);
	struct thr_arg a = { &d, ctx0, o->ops * 10 };
	pthread_t launch, proxy;
	if (pthread_create(&proxy, NULL, proxy_main, &a) != 0 || pthread_create(&launch, NULL, launch_main, &a) != 0) {
		fprintf(stderr, "cannot start threads\n");
		return 2;
	}
	for (int j = 0; j < o->ops; j++) {
		void *ctx = NULL;
		drv_init(&d, &ctx, HASH1 + 100 + (uint64_t)j, d.mask, "churn", 1, 0);
		for (int i = 0; i < 3; i++)
			feed_op(&d, ctx, &comm1_ops[0], (uint64_t)i, 0, 1, 20000, 0, 0, 0, 1, 0);
		drv_fini(&d, ctx);
	}
	pthread_join(launch, NULL);
	pthread_mutex_lock(&tq.m);
	tq.done = 1;
	pthread_cond_broadcast(&tq.c);
	pthread_mutex_unlock(&tq.m);
	pthread_join(proxy, NULL);
	drv_fini(&d, ctx0);
	return 0;
}

/* A bad-input scenario in one process: the plugin must disable itself, log once, not crash. */
static int rank_bad(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx = NULL;
	drv_init(&d, &ctx, HASH0, &nccl_mask, "bad", 1, 0);
	const struct opdef *op = &comm0_ops[0];
	/* a few good ops first */
	for (int i = 0; i < 5; i++)
		feed_op(&d, ctx, op, (uint64_t)i, rank, 1, 10000, 0, 0, 0, 0, 0);
	union np_descr buf;
	memset(&buf, 0, sizeof(buf));
	void *h = (void *)0x1;
	if (!strcmp(o->scenario, "null-descr")) {
		drv_start(&d, ctx, &h, NULL);
	} else if (!strcmp(o->scenario, "bad-type")) {
		/* up to v4 two kinds at once (no such event), from v5 a bit no version defines */
		np_head(&d.p, &buf, d.abi <= 4 ? 0x03 : 1ull << 40, NULL, 0);
		drv_start(&d, ctx, &h, &buf);
	} else if (!strcmp(o->scenario, "null-handle")) {
		make_descr(&d, ctx, &buf, op, 99, 0, 1, NULL);
		drv_start(&d, ctx, NULL, &buf);
	} else if (!strcmp(o->scenario, "bad-handle")) {
		static char junk[64];
		drv_stop(&d, junk + 8);
	} else if (!strcmp(o->scenario, "misaligned-handle")) {
		/* inside the pool but not at a slot start, tagged as a kernel channel */
		void *oh = NULL;
		make_descr(&d, ctx, &buf, op, 98, 0, 1, NULL);
		drv_start(&d, ctx, &oh, &buf);
		union np_state_args a;
		memset(&a, 0, sizeof(a));
		if (oh)
			drv_record(&d, (char *)oh + 64 + 1, NP_KERNELCH_STOP, &a);
	} else if (!strcmp(o->scenario, "bad-context")) {
		static char junk[64];
		make_descr(&d, ctx, &buf, op, 99, 0, 1, NULL);
		drv_start(&d, junk, &h, &buf);
	}
	int after_mask = nccl_mask;
	/* more events after the bad one: all ignored, none may crash */
	for (int i = 0; i < 5; i++)
		feed_op(&d, ctx, op, (uint64_t)(10 + i), rank, 1, 10000, 0, 0, 0, 0, 0);
	h = (void *)0x1;
	make_descr(&d, ctx, &buf, op, 50, 0, 1, NULL);
	drv_start(&d, ctx, &h, &buf);
	sh->disabled_ok[rank] = after_mask == 0 && h == NULL;
	drv_fini(&d, ctx);
	sh->final_mask[rank] = nccl_mask;
	return 0;
}

/* Pool exhaustion: kernel events never come, the pool fills, drops are counted. */
static int rank_pool(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx = NULL;
	drv_init(&d, &ctx, HASH0, &nccl_mask, "pool", 1, 0);
	const struct opdef *op = &comm0_ops[0];
	union np_descr buf;
	for (int i = 0; i < o->ops; i++) {
		void *h = NULL;
		make_descr(&d, ctx, &buf, op, (uint64_t)i, 0, 1, NULL);
		drv_start(&d, ctx, &h, &buf);
		if (h)
			drv_stop(&d, h);
		/* no KernelCh: as if the GPU never ran them */
		sh->fed[rank][0][op->op].count++;
		sh->fed[rank][0][op->op].bytes += op_bytes(op, 1);
	}
	sleep_us(50000);
	sh->disabled_ok[rank] = nccl_mask != 0; /* still enabled */
	drv_fini(&d, ctx);
	sh->final_mask[rank] = nccl_mask;
	return 0;
}

/* Slow op and trigger-file dumps: 40 similar ops, one 50x slower, then a touch of the trigger. */
static int rank_dump(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx = NULL;
	drv_init(&d, &ctx, HASH0, &nccl_mask, "dump", 1, 0);
	const struct opdef *op = &comm0_ops[1];
	for (int i = 0; i < 40; i++)
		feed_op(&d, ctx, op, (uint64_t)i, 0, 1, 200000, 0, 0, 0, 0, 0);
	sleep_us(100000); /* let them be accounted first */
	feed_op(&d, ctx, op, 40, 0, 1, 10000000, 0, 0, 0, 0, 0);
	sleep_us(300000);
	if (!strcmp(o->scenario, "trigger")) {
		char p[600];
		snprintf(p, sizeof(p), "%s/dump", o->dir);
		FILE *f = fopen(p, "w");
		if (f)
			fclose(f);
		sleep_us(600000);
	}
	drv_fini(&d, ctx);
	sh->final_mask[rank] = nccl_mask;
	return 0;
}

/*
 * An all_reduce that enters and never leaves: the Coll event (enqueued),
 * then each channel's kernel starts and never reports its end, as a
 * kernel waiting for a peer that never comes.
 */
static void feed_stuck(struct drv *d, void *ctx, const struct opdef *o, uint64_t seq, int rank, int nranks)
{
	union np_descr buf, kbuf;
	void *h = NULL;
	drv_start(d, ctx, &h, make_descr(d, ctx, &buf, o, seq, rank, nranks, NULL));
	if (!h)
		return;
	drv_stop(d, h);
	for (int ch = 0; d->abi >= 3 && ch < 2; ch++) {
		void *kh = NULL;
		drv_start(d, NULL, &kh, np_kernelch_descr(&d->p, &kbuf, h, ch, now_ns()));
	}
	sh->fed[my_rank][0][o->op].count++;
	sh->fed[my_rank][0][o->op].bytes += op_bytes(o, nranks);
}

/*
 * Hang scenarios on one communicator of --ranks ranks (NCCLWATCH_HANG_S
 * set by the caller), --ops synchronised all_reduces first, then:
 *   hang-missing   rank --late never issues the next all_reduce; the
 *                  others enter it and wait (not arrived)
 *   hang-inside    every rank enqueues the next all_reduce; rank --late's
 *                  kernel starts and never ends, the others' complete
 *   hang-idle      nothing more: every op completed (idle, not hung)
 *   hang-straggler all_reduces go on for --hold-ms, rank --late arriving
 *                  --late-us late at each (a straggler, not a hang)
 * then the files stay live for --hold-ms before finalize.
 */
static int rank_hang(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx = NULL;
	if (drv_init(&d, &ctx, HASH0, &nccl_mask, "world", o->nranks, rank) != 0)
		return 2;
	const struct opdef *op = &comm0_ops[1];
	uint64_t seq = 0;
	for (; seq < (uint64_t)o->ops; seq++)
		feed_op(&d, ctx, op, seq, rank, o->nranks, 20000, o->nranks > 1, 0, 0, 0, 0);
	int straggle = !strcmp(o->scenario, "hang-straggler");
	if (!strcmp(o->scenario, "hang-missing") && rank != o->late) {
		feed_stuck(&d, ctx, op, seq, rank, o->nranks);
	} else if (!strcmp(o->scenario, "hang-inside")) {
		if (rank == o->late)
			feed_stuck(&d, ctx, op, seq, rank, o->nranks);
		else
			feed_op(&d, ctx, op, seq, rank, o->nranks, 20000, 0, 0, 0, 0, 0);
	}
	/* every rank stops after the same round: the time the last one reached the barrier decides */
	uint64_t until = now_ns() + (uint64_t)o->hold_ms * 1000000ull;
	while (straggle) {
		if (barrier() != 0)
			return 3;
		if (__atomic_load_n(&sh->release_ns, __ATOMIC_RELAXED) > until)
			break;
		if (rank == o->late)
			sleep_us(o->late_us);
		feed_op(&d, ctx, op, seq++, rank, o->nranks, 20000, 0, 0, 0, 0, 0);
	}
	if (!straggle && o->hold_ms)
		sleep_us(o->hold_ms * 1000);
	drv_fini(&d, ctx);
	return 0;
}

/*
 * Periodic log lines: one communicator "world" of --ranks ranks, --ops
 * all_reduces of 1 MiB (float32) each timed 100 us on the GPU clock, one
 * after another, then the communicator stays open --hold-ms (NCCLWATCH_LOG_*
 * set by the caller).
 */
static int rank_logline(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	if (drv_open(o, &d, &lib) != 0)
		return 2;
	void *ctx = NULL;
	if (drv_init(&d, &ctx, HASH0, d.mask, "world", o->nranks, rank) != 0)
		return 2;
	static const struct opdef mib = { NWS_OP_ALL_REDUCE, "AllReduce", "ncclFloat32", 1 << 18, 4, 1, -1, 0 };
	for (int i = 0; i < o->ops; i++) {
		feed_op(&d, ctx, &mib, (uint64_t)i, rank, o->nranks, 100000, 0, 0, 0, 0, 0);
		sleep_us(110); /* kernels one after another: busy time is ops x 100 us */
	}
	if (o->hold_ms)
		sleep_us(o->hold_ms * 1000);
	drv_fini(&d, ctx);
	return 0;
}

static int null_start(void *ctx, void **h, void *d) { (void)ctx; (void)d; *h = NULL; return 0; }
static int null_stop(void *h) { (void)h; return 0; }

/* CPU time of the calling thread, ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until op i of a run that started at t0 is due at rate ops per second. */
static void pace(uint64_t t0, int i, long rate)
{
	uint64_t due = t0 + (uint64_t)i * 1000000000ull / (uint64_t)rate, now = now_ns();
	if (due > now)
		sleep_us((long)((due - now) / 1000));
}

/*
 * CPU time (ns) of this process's other threads (the harness has one: what
 * runs beside it is the plugin's publisher), from /proc's schedstat.
 */
static uint64_t publisher_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;
	char self[32];
	snprintf(self, sizeof(self), "%d", (int)gettid());
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, self))
			continue;
		char p[300];
		snprintf(p, sizeof(p), "/proc/self/task/%s/schedstat", e->d_name);
		FILE *f = fopen(p, "r");
		unsigned long long v = 0;
		if (f && fscanf(f, "%llu", &v) == 1)
			ns += v;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return ns;
}

/*
 * Hot-path cost on this CPU: ops fed as NCCL feeds them with kernel
 * timestamps off (Group start, Coll start, Coll stop, Group stop), timed
 * (this thread's CPU time) against the same loop calling do-nothing
 * functions. Prints figures only. Unpaced, the pool fills and most ops
 * take the (cheaper) drop path; with --rate, paced so none is dropped, and
 * the publisher's CPU time is kept for the check.
 */
static int rank_hotpath(const struct opts *o, int rank)
{
	void *lib;
	struct drv d;
	memset(&d, 0, sizeof(d));
	if (load_plugin(o, &d, &lib) != 0)
		return 2;
	static int nccl_mask;
	d.mask = &nccl_mask;
	void *ctx = NULL;
	drv_init(&d, &ctx, HASH0, &nccl_mask, "hotpath", 1, 0);
	const struct opdef *op = &comm0_ops[0];
	union np_descr gbuf, buf;
	struct np_table_v1 null1 = { "null", NULL, null_start, null_stop, NULL, NULL };
	struct np_table_v4 null4 = { "null", NULL, null_start, null_stop, NULL, NULL };
	struct np_table_v5 null5 = { "null", NULL, null_start, null_stop, NULL, NULL };
	struct drv nd = d; /* the same layouts into do-nothing callbacks */
	nd.p.t1 = &null1;
	nd.p.t4 = &null4;
	nd.p.t5 = &null5;
	double ns[2];
	uint64_t wall = 0;
	for (int pass = 0; pass < 2; pass++) {
		struct drv *dv = pass == 0 ? &nd : &d;
		uint64_t t0 = now_ns(), c0 = thread_cpu_ns();
		for (int i = 0; i < o->ops; i++) {
			if (o->rate && i % 64 == 0)
				pace(t0, i, o->rate);
			void *group = NULL, *h = NULL;
			drv_start(dv, ctx, &group, group_descr(dv, &gbuf));
			make_descr(dv, ctx, &buf, op, (uint64_t)i, 0, 1, group);
			drv_start(dv, ctx, &h, &buf);
			if (h)
				drv_stop(dv, h);
			if (group)
				drv_stop(dv, group);
		}
		/* CPU time of this thread: time the scheduler gave to others on a loaded machine is not counted */
		ns[pass] = (double)(thread_cpu_ns() - c0) / o->ops;
		wall = now_ns() - t0;
	}
	sh->fed[rank][0][op->op].count += (uint64_t)o->ops;
	sh->fed[rank][0][op->op].bytes += (uint64_t)o->ops * op_bytes(op, 1);
	if (o->rate) {
		/* paced: what the plugin's own thread spent accounting and publishing those ops */
		sleep_us(300000); /* the last ops are accounted and published */
		sh->paced_ns = wall + 300000000ull;
		sh->pub_cpu_ns = publisher_cpu_ns();
	}
	printf("%s abi=%d ops=%d plugin_ns_per_op=%.1f null_ns_per_op=%.1f added_ns_per_op=%.1f\n",
	       o->rate ? "paced" : "hotpath", o->abi, o->ops, ns[1], ns[0], ns[1] - ns[0]);
	drv_fini(&d, ctx);
	return 0;
}

/* ---- checking ---- */

static int fails;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("check FAIL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fails++;
}

static const struct nw_sf_rank *find_rank(const struct nw_sf_set *set, uint64_t hash, int rank)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->ranks[i].hdr.comm_hash == hash && set->ranks[i].hdr.rank == rank)
			return &set->ranks[i];
	return NULL;
}

/*
 * Compare one rank file's per-op counts and bytes with what was fed. split:
 * what an all_gather's or reduce_scatter's bytes are divided by in the file
 * (v3: the communicator size is never told, the file has one rank's part).
 */
static void check_counts(const struct nw_sf_rank *r, const struct fed *fed, int want_kernel, int split, const char *who)
{
	for (int op = 0; op < NWS_NOPS; op++) {
		uint64_t c = 0, b = 0, k = 0, want_b = fed[op].bytes;
		if (op == NWS_OP_ALL_GATHER || op == NWS_OP_REDUCE_SCATTER)
			want_b /= (uint64_t)split;
		for (int bk = 0; bk < NWS_NBUCKETS; bk++) {
			c += r->rec[op][bk].count;
			b += r->rec[op][bk].bytes;
			k += r->rec[op][bk].t[NWS_SRC_KERNEL].count;
		}
		if (c != fed[op].count || b != want_b)
			fail("%s op=%s count=%llu bytes=%llu, fed count=%llu bytes=%llu", who, nws_op_name((unsigned)op),
			     (unsigned long long)c, (unsigned long long)b, (unsigned long long)fed[op].count,
			     (unsigned long long)want_b);
		if (want_kernel && k != c - fed[op].ce)
			fail("%s op=%s %llu of %llu ops timed by kernel timestamps", who, nws_op_name((unsigned)op),
			     (unsigned long long)k, (unsigned long long)c);
	}
}

/* Every trace dump in dir must be JSON with ph "X" events; returns how many there are. */
static int check_dumps(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "trace.", 6) != 0 || len < 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		char p[1024];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		json_error_t jerr;
		json_t *j = json_load_file(p, 0, &jerr);
		json_t *ev = j ? json_object_get(j, "traceEvents") : NULL;
		size_t nx = 0, i;
		json_t *e;
		int slow = 0;
		json_array_foreach(ev, i, e) {
			const char *ph = json_string_value(json_object_get(e, "ph"));
			if (ph && !strcmp(ph, "X") && json_is_number(json_object_get(e, "ts")) &&
			    json_is_number(json_object_get(e, "dur")) && json_is_integer(json_object_get(e, "pid")) &&
			    json_is_integer(json_object_get(e, "tid")))
				nx++;
			if (json_is_true(json_object_get(json_object_get(e, "args"), "slow")))
				slow++;
		}
		if (!j || !json_is_array(ev) || nx == 0)
			fail("trace dump '%s' is not a trace with ph X events (%s)", de->d_name, j ? "no events" : jerr.text);
		else
			printf("dump %s events=%zu slow=%d\n", de->d_name, nx, slow);
		json_decref(j);
		n++;
	}
	closedir(d);
	return n;
}

/*
 * What the file of a communicator of nranks must say under interface abi:
 * its size (v1, v2 learn it from an all_gather or reduce_scatter when one
 * ran: learns; v3 never) and what the interface cannot give (NWS_BLIND_*,
 * written out here from docs/plugin.md, not taken from the plugin).
 */
static int want_nranks(int abi, int nranks, int learns)
{
	return abi >= 4 || (abi <= 2 && learns) ? nranks : 0;
}

static uint32_t want_blind(int abi)
{
	static const uint32_t b[7] = {
		0,
		NWS_BLIND_KERNEL | NWS_BLIND_NRANKS | NWS_BLIND_NNODES | NWS_BLIND_IDLE | NWS_BLIND_GRAPH,
		NWS_BLIND_KERNEL | NWS_BLIND_NRANKS | NWS_BLIND_NNODES | NWS_BLIND_IDLE | NWS_BLIND_GRAPH,
		NWS_BLIND_GPUCLOCK | NWS_BLIND_SPLIT_BYTES | NWS_BLIND_NRANKS | NWS_BLIND_NNODES | NWS_BLIND_IDLE |
			NWS_BLIND_GRAPH,
		NWS_BLIND_GRAPH, 0, 0
	};
	return abi >= 1 && abi <= 6 ? b[abi] : 0;
}

static int check_all(const struct opts *o)
{
	struct nw_sf_set set;
	char err[NW_ERRLEN];
	if (nw_sf_load(o->dir, &set, err, sizeof(err)) != 0) {
		fail("%s", err);
		return 1;
	}
	for (size_t i = 0; i < set.nbad; i++)
		fail("bad stats file '%s': %s", set.bad[i].path, set.bad[i].why);
	int want_kernel = o->kernel && !strcmp(o->kernel, "on") && o->abi >= 3; /* no KernelCh before v3 */
	int split = o->abi == 3 ? o->nranks : 1;
	const char *sc = o->scenario;
	if (!strcmp(sc, "normal")) {
		for (int r = 0; r < o->nranks; r++) {
			char who[64];
			const struct nw_sf_rank *f = find_rank(&set, HASH0, r);
			snprintf(who, sizeof(who), "comm=world rank=%d", r);
			if (!f) {
				fail("%s: no stats file", who);
				continue;
			}
			if (f->live != NW_SF_FINISHED)
				fail("%s: state %s, wanted finished", who, nw_sf_live_name(f->live));
			if (f->hdr.nranks != want_nranks(o->abi, o->nranks, 1) || (int)f->hdr.abi != o->abi)
				fail("%s: nranks %d abi %u, wanted %d and %d", who, f->hdr.nranks, f->hdr.abi,
				     want_nranks(o->abi, o->nranks, 1), o->abi);
			if (f->hdr.mode.blind != want_blind(o->abi))
				fail("%s: the file says profiler v%d cannot give 0x%x, wanted 0x%x", who, o->abi, f->hdr.mode.blind,
				     want_blind(o->abi));
			if (f->hdr.ops_dropped || f->hdr.events_bad)
				fail("%s: %llu dropped, %llu bad events", who, (unsigned long long)f->hdr.ops_dropped,
				     (unsigned long long)f->hdr.events_bad);
			check_counts(f, sh->fed[r][0], want_kernel, split, who);
			const struct nw_sf_rank *g = find_rank(&set, HASH1 + (uint64_t)r, 0);
			snprintf(who, sizeof(who), "comm=solo(rank %d's)", r);
			if (!g)
				fail("%s: no stats file", who);
			else {
				check_counts(g, sh->fed[r][1], want_kernel, 1, who);
				uint64_t gf = 0;
				for (int op = 0; op < NWS_NOPS; op++)
					gf += sh->fed[r][1][op].graph;
				if (g->hdr.graph_ops != gf)
					fail("%s: %u calls marked as captured into graphs, fed %llu", who, g->hdr.graph_ops,
					     (unsigned long long)gf);
			}
			if (o->expect_damage && (sh->warn_lines[r] != 1 || !strstr(sh->last_warn[r], "from outside")))
				fail("rank %d: %d warning lines from the plugin, wanted one saying its file was damaged (last: %s)",
				     r, sh->warn_lines[r], sh->last_warn[r]);
			else if (!o->expect_damage && sh->warn_lines[r])
				fail("rank %d: %d warning lines from the plugin (last: %s)", r, sh->warn_lines[r], sh->last_warn[r]);
			else if (o->expect_damage)
				printf("damage rank=%d said: %s\n", r, sh->last_warn[r]);
		}
		if (o->nranks > 1 && o->late >= 0) {
			struct nw_sf_late late[MAXR];
			size_t n = nw_sf_stragglers(&set, HASH0, 0, late, MAXR);
			if (n == 0)
				fail("no straggler analysis for comm world");
			else {
				printf("straggler comm=%016llx rank=%d mean_late_us=%.1f nlast=%llu nseq=%llu kernel=%d\n",
				       (unsigned long long)HASH0, late[0].rank, late[0].mean_late_us,
				       (unsigned long long)late[0].nlast, (unsigned long long)late[0].nseq, late[0].kernel_based);
				if (late[0].rank != o->late)
					fail("straggler is rank %d, the late rank was %d", late[0].rank, o->late);
				if (late[0].mean_late_us < 0.5 * (double)o->late_us)
					fail("late rank's mean lateness %.1f us, it was %ld us late", late[0].mean_late_us, o->late_us);
			}
		}
	} else if (!strcmp(sc, "threads")) {
		const struct nw_sf_rank *f = find_rank(&set, HASH0, 0);
		if (!f)
			fail("no stats file");
		else
			check_counts(f, sh->fed[0][0], 0, 1, "comm=threads");
		if (sh->warn_lines[0])
			fail("%d warning lines from the plugin (last: %s)", sh->warn_lines[0], sh->last_warn[0]);
	} else if (!strcmp(sc, "pool")) {
		const struct nw_sf_rank *f = find_rank(&set, HASH0, 0);
		if (!f)
			fail("no stats file");
		else {
			uint64_t c = f->hdr.ops_total, d = f->hdr.ops_dropped;
			printf("pool ops_total=%llu ops_dropped=%llu state=%s\n", (unsigned long long)c,
			       (unsigned long long)d, nw_sf_live_name(f->live));
			if (d == 0)
				fail("no drops counted with a full pool");
			if (c + d != sh->fed[0][0][NWS_OP_ALL_REDUCE].count)
				fail("accounted %llu + dropped %llu != fed %llu", (unsigned long long)c, (unsigned long long)d,
				     (unsigned long long)sh->fed[0][0][NWS_OP_ALL_REDUCE].count);
			if (f->live != NW_SF_FINISHED)
				fail("state %s, wanted finished (a full pool must not disable the plugin)", nw_sf_live_name(f->live));
		}
		if (!sh->disabled_ok[0])
			fail("the plugin cleared the activation mask when the pool filled");
	} else if (!strcmp(sc, "hotpath")) {
		const struct nw_sf_rank *f = find_rank(&set, HASH0, 0);
		if (!f)
			fail("no stats file");
		else if (f->hdr.ops_total + f->hdr.ops_dropped != sh->fed[0][0][NWS_OP_ALL_REDUCE].count)
			fail("accounted %llu + dropped %llu != fed %llu", (unsigned long long)f->hdr.ops_total,
			     (unsigned long long)f->hdr.ops_dropped,
			     (unsigned long long)sh->fed[0][0][NWS_OP_ALL_REDUCE].count);
		else if (o->rate && f->hdr.ops_total)
			printf("paced accounted=%llu dropped=%llu publisher_cpu_ns_per_op=%.1f publisher_core_pct=%.3f\n",
			       (unsigned long long)f->hdr.ops_total, (unsigned long long)f->hdr.ops_dropped,
			       (double)sh->pub_cpu_ns / (double)f->hdr.ops_total,
			       100.0 * (double)sh->pub_cpu_ns / (double)sh->paced_ns);
		else
			printf("hotpath accounted=%llu dropped=%llu\n", (unsigned long long)f->hdr.ops_total,
			       (unsigned long long)f->hdr.ops_dropped);
	} else if (!strcmp(sc, "slow") || !strcmp(sc, "trigger")) {
		const struct nw_sf_rank *f = find_rank(&set, HASH0, 0);
		if (!f)
			fail("no stats file");
		else if (f->hdr.slow_ops != 1)
			fail("slow_ops=%llu, wanted 1", (unsigned long long)f->hdr.slow_ops);
		int nd = check_dumps(o->dir);
		int want = !strcmp(sc, "trigger") ? 2 : 1;
		if (nd != want)
			fail("%d trace dumps, wanted %d", nd, want);
	} else {
		/* bad input: disabled, one log line, file says why */
		if (sh->warn_lines[0] != 1)
			fail("%d warning lines from the plugin, wanted exactly 1", sh->warn_lines[0]);
		else
			printf("logged: %s\n", sh->last_warn[0]);
		if (!sh->disabled_ok[0])
			fail("after bad input the mask is not 0 or events are still taken");
		const struct nw_sf_rank *f = find_rank(&set, HASH0, 0);
		if (!f)
			fail("no stats file");
		else if (f->live != NW_SF_DISABLED || !f->hdr.disabled_reason[0])
			fail("state %s reason '%s', wanted disabled with a reason", nw_sf_live_name(f->live),
			     f->hdr.disabled_reason);
	}
	if (!fails)
		printf("check ok scenario=%s abi=%d ranks=%d files=%zu\n", sc, o->abi, o->nranks, set.n);
	nw_sf_set_release(&set);
	return fails ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: plugin_harness --plugin PATH --dir DIR [options]\n"
	        "  --abi 1..6           profiler interface to drive, as NCCL 2.23, 2.24-2.25, 2.26, 2.27, 2.28\n"
	        "                       and 2.29+ drive theirs (default 5)\n"
	        "  --ranks N            rank processes (default 4, at most %d)\n"
	        "  --ops N              rounds of every op kind per rank (default 20)\n"
	        "  --late R             rank that arrives late at every collective (default -1: none)\n"
	        "  --late-us U          how late, microseconds (default 2000)\n"
	        "  --job J              communicator ids of job J (0 to 65535, default 0): jobs apart in one --dir\n"
	        "  --kernel on|off|auto NCCLWATCH_KERNEL for the plugin (default on)\n"
	        "  --scenario S         normal, fsdp (4 comms x 6 ops x 12 sizes), pool, slow, trigger,\n"
	        "                       threads (launching, proxy and init threads at once: for TSan),\n"
	        "                       hotpath (prints ns per op), null-descr,\n"
	        "                       hang-missing, hang-inside, hang-idle, hang-straggler (--late is the rank),\n"
	        "                       logline (--ops all_reduces of 1 MiB, 100 us each, on one comm),\n"
	        "                       bad-type, null-handle,\n"
	        "                       bad-handle, misaligned-handle, bad-context (default normal)\n"
	        "  --hold-ms MS         keep the communicators open MS ms after feeding (files live)\n"
	        "  --seconds S          normal scenario: feed rounds for S seconds, 1 ms apart, instead of --ops\n"
	        "  --rate N             hotpath: feed N ops per second and report (with --check) the CPU time\n"
	        "                       the plugin's publisher thread spent per op\n"
	        "  --expect-damage      the files are damaged from outside meanwhile: --check wants one WARN\n"
	        "                       line per rank saying so (and the counts still exact)\n"
	        "  --cuda LIB           load this CUDA driver and make device (rank %% 2) current first\n"
	        "  --check              read the stats files back and compare (exit 1 on mismatch)\n"
	        "  -v                   show the plugin's INFO log lines\n",
	        MAXR);
}

int main(int argc, char **argv)
{
	struct opts o = { .abi = 5, .nranks = 4, .ops = 20, .late = -1, .late_us = 2000, .scenario = "normal",
	                  .kernel = "on" };
	static const struct option lo[] = {
		{ "plugin", 1, 0, 'p' }, { "dir", 1, 0, 'd' }, { "abi", 1, 0, 'a' }, { "ranks", 1, 0, 'r' },
		{ "ops", 1, 0, 'n' }, { "late", 1, 0, 'l' }, { "late-us", 1, 0, 'u' }, { "kernel", 1, 0, 'k' },
		{ "scenario", 1, 0, 's' }, { "check", 0, 0, 'c' }, { "hold-ms", 1, 0, 'H' }, { "seconds", 1, 0, 'S' },
		{ "expect-damage", 0, 0, 'D' }, { "rate", 1, 0, 'R' }, { "cuda", 1, 0, 'C' }, { "job", 1, 0, 'j' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	char err[NW_ERRLEN];
	long v;
	int ch;
	while ((ch = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o.plugin = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'a':
			if (nw_parse_long(optarg, 1, 6, &v, "--abi", err, sizeof(err)))
				goto bad;
			o.abi = (int)v;
			break;
		case 'r':
			if (nw_parse_long(optarg, 1, MAXR, &v, "--ranks", err, sizeof(err)))
				goto bad;
			o.nranks = (int)v;
			break;
		case 'n':
			if (nw_parse_long(optarg, 0, 1000000, &v, "--ops", err, sizeof(err)))
				goto bad;
			o.ops = (int)v;
			break;
		case 'l':
			if (nw_parse_long(optarg, -1, MAXR - 1, &v, "--late", err, sizeof(err)))
				goto bad;
			o.late = (int)v;
			break;
		case 'u':
			if (nw_parse_long(optarg, 0, 10000000, &v, "--late-us", err, sizeof(err)))
				goto bad;
			o.late_us = v;
			break;
		case 'H':
			if (nw_parse_long(optarg, 0, 3600000, &v, "--hold-ms", err, sizeof(err)))
				goto bad;
			o.hold_ms = v;
			break;
		case 'S':
			if (nw_parse_long(optarg, 0, 86400, &v, "--seconds", err, sizeof(err)))
				goto bad;
			o.seconds = v;
			break;
		case 'D': o.expect_damage = 1; break;
		case 'R':
			if (nw_parse_long(optarg, 0, 100000000, &v, "--rate", err, sizeof(err)))
				goto bad;
			o.rate = v;
			break;
		case 'j':
			if (nw_parse_long(optarg, 0, 65535, &v, "--job", err, sizeof(err)))
				goto bad;
			job_salt = (uint64_t)v << 32;
			break;
		case 'k': o.kernel = optarg; break;
		case 'C': o.cuda = optarg; break;
		case 's': o.scenario = optarg; break;
		case 'c': o.check = 1; break;
		case 'v': o.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.plugin || !o.dir) {
		usage(stderr);
		return 2;
	}
	if (o.late >= o.nranks) {
		fprintf(stderr, "plugin_harness: --late %d is not a rank of %d\n", o.late, o.nranks);
		return 2;
	}
	static const char *const scen[] = { "normal", "fsdp", "threads", "pool", "slow", "trigger", "hotpath", "null-descr", "bad-type",
	                                    "null-handle", "bad-handle", "misaligned-handle",
	                                    "bad-context", "hang-missing", "hang-inside", "hang-idle",
	                                    "hang-straggler", "logline" };
	int known = 0;
	for (size_t i = 0; i < NW_ARRAY_LEN(scen); i++)
		known |= !strcmp(o.scenario, scen[i]);
	if (!known) {
		fprintf(stderr, "plugin_harness: unknown --scenario '%s'\n", o.scenario);
		return 2;
	}
	int normal = !strcmp(o.scenario, "normal"), fsdp = !strcmp(o.scenario, "fsdp"), threads = !strcmp(o.scenario, "threads");
	int hang = !strncmp(o.scenario, "hang-", 5), logline = !strcmp(o.scenario, "logline");
	if (!normal && !fsdp && !hang && !logline)
		o.nranks = 1;
	if (hang && (o.late < 0 || o.late >= o.nranks)) {
		fprintf(stderr, "plugin_harness: --scenario %s needs --late R, a rank of --ranks\n", o.scenario);
		return 2;
	}
	verbose = o.verbose;
	setenv("NCCLWATCH_DIR", o.dir, 1);
	setenv("NCCLWATCH_KERNEL", o.kernel, 1);
	if (!strcmp(o.scenario, "pool"))
		setenv("NCCLWATCH_POOL", "64", 1);
	if (!strcmp(o.scenario, "slow") || !strcmp(o.scenario, "trigger"))
		setenv("NCCLWATCH_DUMP_MIN_S", "0", 1);
	if (threads) {
		setenv("NCCLWATCH_SAMPLE_S", "1", 1);
		setenv("NCCLWATCH_PERIOD_MS", "1", 1);
	}

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(sh, 0, sizeof(*sh));
	sh->nranks = o.nranks;
	sh->deadline_ns = now_ns() + (uint64_t)o.seconds * 1000000000ull;
	fflush(NULL);
	pid_t pids[MAXR];
	for (int r = 0; r < o.nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("fork");
			return 2;
		}
		if (pids[r] == 0) {
			my_rank = r;
			int rc;
			if (o.abi <= 3)
				capture_begin();
			if (normal)
				rc = rank_normal(&o, r);
			else if (fsdp)
				rc = rank_fsdp(&o, r);
			else if (threads)
				rc = rank_threads(&o, r);
			else if (!strcmp(o.scenario, "pool"))
				rc = rank_pool(&o, r);
			else if (!strcmp(o.scenario, "slow") || !strcmp(o.scenario, "trigger"))
				rc = rank_dump(&o, r);
			else if (!strcmp(o.scenario, "hotpath"))
				rc = rank_hotpath(&o, r);
			else if (hang)
				rc = rank_hang(&o, r);
			else if (logline)
				rc = rank_logline(&o, r);
			else
				rc = rank_bad(&o, r);
			capture_end();
			fflush(NULL);
			_exit(rc);
		}
	}
	int bad = 0;
	for (int r = 0; r < o.nranks; r++) {
		int st;
		while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
			;
		if (WIFSIGNALED(st)) {
			printf("check FAIL rank %d crashed: signal %d (%s)\n", r, WTERMSIG(st), strsignal(WTERMSIG(st)));
			bad = 1;
		} else if (WEXITSTATUS(st) != 0) {
			printf("check FAIL rank %d exited %d\n", r, WEXITSTATUS(st));
			bad = 1;
		}
	}
	for (int r = 0; r < o.nranks; r++) {
		for (int c = 0; c < NCOMMS; c++) {
			uint64_t hash = c == 0 ? HASH0 : HASH1 + (uint64_t)r;
			for (int op = 0; op < NWS_NOPS; op++) {
				const struct fed *f = &sh->fed[r][c][op];
				if (!f->count)
					continue;
				printf("fed comm=%016llx name=%s rank=%d nranks=%d op=%s count=%llu bytes=%llu\n",
				       (unsigned long long)hash, c == 0 ? (normal || hang || logline ? "world" : o.scenario) : "solo",
				       c == 0 ? r : 0, c == 0 ? o.nranks : 1, nws_op_name((unsigned)op),
				       (unsigned long long)f->count, (unsigned long long)f->bytes);
			}
		}
	}
	for (int r = 0; (hang || logline) && r < o.nranks; r++)
		printf("warn rank=%d lines=%d last=%s\n", r, sh->warn_lines[r], sh->last_warn[r]);
	if (bad)
		return 1;
	if (o.check)
		return check_all(&o);
	return nw_finish_stdout() ? 1 : 0;
bad:
	fprintf(stderr, "plugin_harness: %s\n", err);
	return 2;
}
