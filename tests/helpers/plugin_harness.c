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
#include "util/util.h"

/* ---- NCCL's profiler ABI (profiler_v4.h / profiler_v5.h / profiler_v6.h) ---- */

enum {
	ev_group = 1 << 0, ev_coll = 1 << 1, ev_p2p = 1 << 2, ev_proxyop = 1 << 3,
	ev_kernelch = 1 << 6, ev_collapi = 1 << 9, ev_cecoll = 1 << 12
};
#define KERNELCH_STOP 22

typedef void (*logfn_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

struct coll_v4 {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count;
	int root; const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto;
};
struct coll_v5 {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count;
	int root; const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo; const char *proto;
	void *parentGroup;
};
struct p2p_v4 { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; };
struct p2p_v5 {
	const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels;
	void *parentGroup;
};
struct kernelch { uint8_t channelId; uint64_t pTimer; };
struct collapi_v5 { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; };
struct cecoll_v6 {
	uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count; int root;
	const char *datatype; const char *syncStrategy; bool intraBatchSync; uint32_t batchSize;
	uint32_t numBatches; uint32_t ceSeqNum; void *stream;
};

struct descr_v4 {
	uint8_t type; void *parentObj; int rank;
	union { struct coll_v4 coll; struct p2p_v4 p2p; struct kernelch kernelCh; };
};
/* v6 extends v5's union with CE members (largest: ceColl, 13 words); same prefix. */
struct descr_v5 {
	uint64_t type; void *parentObj; int rank;
	union { struct coll_v5 coll; struct p2p_v5 p2p; struct kernelch kernelCh; struct cecoll_v6 ceColl;
		struct collapi_v5 collApi; uint64_t v6room[13]; };
};
union state_args { struct { size_t transSize; } proxyStep; struct { uint64_t pTimer; } kernelCh; };

struct table_v4 {
	const char *name;
	int (*init)(void **ctx, int *mask, const char *commName, uint64_t commHash, int nNodes, int nranks,
	            int rank, logfn_t logfn);
	int (*startEvent)(void *ctx, void **h, void *d);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
};
struct table_v5 {
	const char *name;
	int (*init)(void **ctx, uint64_t commId, int *mask, const char *commName, int nNodes, int nranks,
	            int rank, logfn_t logfn);
	int (*startEvent)(void *ctx, void **h, void *d);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
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
	const struct table_v4 *t4;
	const struct table_v5 *t5;
	int *mask;
};

static int drv_init(struct drv *d, void **ctx, uint64_t hash, int *mask, const char *name, int nranks, int rank)
{
	if (d->abi == 4)
		return d->t4->init(ctx, mask, name, hash, 1, nranks, rank, fake_log);
	return d->t5->init(ctx, hash, mask, name, 1, nranks, rank, fake_log);
}

static int drv_start(struct drv *d, void *ctx, void **h, void *descr)
{
	return d->abi == 4 ? d->t4->startEvent(ctx, h, descr) : d->t5->startEvent(ctx, h, descr);
}

static int drv_stop(struct drv *d, void *h)
{
	return d->abi == 4 ? d->t4->stopEvent(h) : d->t5->stopEvent(h);
}

static int drv_record(struct drv *d, void *h, int st, void *a)
{
	return d->abi == 4 ? d->t4->recordEventState(h, st, a) : d->t5->recordEventState(h, st, a);
}

static int drv_fini(struct drv *d, void *ctx)
{
	return d->abi == 4 ? d->t4->finalize(ctx) : d->t5->finalize(ctx);
}

/* Build the descriptor of one op in the layout of d->abi (buf is zeroed). */
static void *make_descr(struct drv *d, void *buf, const struct opdef *o, uint64_t seq, int rank, int nranks,
                        void *group)
{
	memset(buf, 0, 256);
	if (d->abi == 4) {
		struct descr_v4 *e = buf;
		e->type = o->coll ? ev_coll : ev_p2p;
		e->parentObj = group;
		e->rank = rank;
		if (o->coll) {
			e->coll = (struct coll_v4){ seq, o->func, buf, buf, o->count, o->root, o->dtype, 2, 8, "Ring", "LL", };
		} else {
			int peer = o->op == NWS_OP_SEND ? (rank + 1) % nranks : (rank + nranks - 1) % nranks;
			e->p2p = (struct p2p_v4){ o->func, buf, o->dtype, o->count, peer, 0xCC /* v4: never filled */ };
		}
		return e;
	}
	struct descr_v5 *e = buf;
	e->type = o->ce ? ev_cecoll : o->coll ? ev_coll : ev_p2p;
	e->parentObj = NULL; /* the CollApi event: not asked for */
	e->rank = rank;
	if (o->ce) {
		e->ceColl = (struct cecoll_v6){ seq, o->func, buf, buf, o->count, o->root, o->dtype, "ucMemcpy", false,
		                                1, 1, (uint32_t)seq, NULL };
	} else if (o->coll) {
		e->coll = (struct coll_v5){ seq, o->func, buf, buf, o->count, o->root, o->dtype, 2, 8, "Ring", "LL", group };
	} else {
		int peer = o->op == NWS_OP_SEND ? (rank + 1) % nranks : (rank + nranks - 1) % nranks;
		e->p2p = (struct p2p_v5){ o->func, buf, o->dtype, o->count, peer, 1, group };
	}
	return e;
}

static uint64_t op_bytes(const struct opdef *o, int nranks)
{
	uint64_t b = (uint64_t)o->count * o->tsize;
	if (o->op == NWS_OP_ALL_GATHER || o->op == NWS_OP_REDUCE_SCATTER || o->op == NWS_OP_ALLTOALL ||
	    o->op == NWS_OP_GATHER || o->op == NWS_OP_SCATTER)
		b *= (uint64_t)nranks;
	return b;
}

/* Kernel channel events of one op, as NCCL's proxy thread would send them. */
static void feed_kernel(struct drv *d, void *h, int nch, uint64_t kstart, uint64_t kend)
{
	for (int ch = 0; ch < nch; ch++) {
		unsigned char buf[256];
		memset(buf, 0, sizeof(buf));
		void *kh = NULL;
		if (d->abi == 4) {
			struct descr_v4 *e = (struct descr_v4 *)buf;
			e->type = ev_kernelch;
			e->parentObj = h;
			e->kernelCh.channelId = (uint8_t)ch;
			e->kernelCh.pTimer = kstart + (uint64_t)ch * 100;
		} else {
			struct descr_v5 *e = (struct descr_v5 *)buf;
			e->type = ev_kernelch;
			e->parentObj = h;
			e->kernelCh.channelId = (uint8_t)ch;
			e->kernelCh.pTimer = kstart + (uint64_t)ch * 100;
		}
		drv_start(d, NULL, &kh, buf);
		if (!kh)
			continue;
		union state_args a;
		memset(&a, 0, sizeof(a));
		a.kernelCh.pTimer = kend - (uint64_t)ch * 100;
		drv_record(d, kh, KERNELCH_STOP, &a);
		drv_stop(d, kh);
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
	if (synced) {
		if (barrier() != 0) {
			fprintf(stderr, "rank %d: barrier timed out (another rank died?)\n", rank);
			exit(3);
		}
		if (is_late)
			sleep_us(late_us);
	}
	unsigned char gbuf[256], buf[256];
	memset(gbuf, 0, sizeof(gbuf));
	void *group = NULL, *h = NULL;
	if (d->abi == 4)
		((struct descr_v4 *)gbuf)->type = ev_group;
	else
		((struct descr_v5 *)gbuf)->type = ev_group;
	if (d->abi >= 5 && comm == 1 && o->coll) {
		/* v5+: NCCL sends the API call first; the solo comm's calls are "captured into a graph" */
		unsigned char abuf[256];
		memset(abuf, 0, sizeof(abuf));
		struct descr_v5 *ae = (struct descr_v5 *)abuf;
		ae->type = ev_collapi;
		ae->collApi = (struct collapi_v5){ o->func, o->count, o->dtype, o->root, NULL, true };
		void *ah = NULL;
		drv_start(d, ctx, &ah, abuf);
		if (ah)
			drv_stop(d, ah);
		sh->fed[my_rank][comm][o->op].graph++;
	}
	if (!o->ce) /* a CeColl's parent is the CollApi event, not a Group */
		drv_start(d, ctx, &group, gbuf);
	void *descr = make_descr(d, buf, o, seq, rank, nranks, group);
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
	d->abi = o->abi;
	const char *sym = o->abi == 4 ? "ncclProfiler_v4" : o->abi == 5 ? "ncclProfiler_v5" : "ncclProfiler_v6";
	void *t = dlsym(*lib, sym);
	if (!t) {
		fprintf(stderr, "plugin_harness: '%s' does not export %s\n", o->plugin, sym);
		return -1;
	}
	if (o->abi == 4)
		d->t4 = t;
	else
		d->t5 = t;
	const char *name = o->abi == 4 ? d->t4->name : d->t5->name;
	if (!name || strcmp(name, "ncclwatch") != 0) {
		fprintf(stderr, "plugin_harness: %s.name is '%s', wanted 'ncclwatch'\n", sym, name ? name : "(null)");
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

/* The normal run of one rank: two communicators, every op kind, -o ops each. */
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
	for (int i = 0; i < o->ops; i++) {
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
	unsigned char buf[256];
	memset(buf, 0, sizeof(buf));
	void *h = (void *)0x1;
	if (!strcmp(o->scenario, "null-descr")) {
		drv_start(&d, ctx, &h, NULL);
	} else if (!strcmp(o->scenario, "bad-type")) {
		if (d.abi == 4)
			((struct descr_v4 *)buf)->type = 0x03; /* two kinds at once: no such event */
		else
			((struct descr_v5 *)buf)->type = 1ull << 40;
		drv_start(&d, ctx, &h, buf);
	} else if (!strcmp(o->scenario, "null-handle")) {
		make_descr(&d, buf, op, 99, 0, 1, NULL);
		drv_start(&d, ctx, NULL, buf);
	} else if (!strcmp(o->scenario, "bad-handle")) {
		static char junk[64];
		drv_stop(&d, junk + 8);
	} else if (!strcmp(o->scenario, "misaligned-handle")) {
		/* inside the pool but not at a slot start, tagged as a kernel channel */
		void *oh = NULL;
		make_descr(&d, buf, op, 98, 0, 1, NULL);
		drv_start(&d, ctx, &oh, buf);
		union state_args a;
		memset(&a, 0, sizeof(a));
		if (oh)
			drv_record(&d, (char *)oh + 64 + 1, KERNELCH_STOP, &a);
	} else if (!strcmp(o->scenario, "bad-context")) {
		static char junk[64];
		make_descr(&d, buf, op, 99, 0, 1, NULL);
		drv_start(&d, junk, &h, buf);
	}
	int after_mask = nccl_mask;
	/* more events after the bad one: all ignored, none may crash */
	for (int i = 0; i < 5; i++)
		feed_op(&d, ctx, op, (uint64_t)(10 + i), rank, 1, 10000, 0, 0, 0, 0, 0);
	h = (void *)0x1;
	make_descr(&d, buf, op, 50, 0, 1, NULL);
	drv_start(&d, ctx, &h, buf);
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
	unsigned char buf[256];
	for (int i = 0; i < o->ops; i++) {
		void *h = NULL;
		make_descr(&d, buf, op, (uint64_t)i, 0, 1, NULL);
		drv_start(&d, ctx, &h, buf);
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
	unsigned char buf[256], kbuf[256];
	void *h = NULL;
	drv_start(d, ctx, &h, make_descr(d, buf, o, seq, rank, nranks, NULL));
	if (!h)
		return;
	drv_stop(d, h);
	for (int ch = 0; ch < 2; ch++) {
		memset(kbuf, 0, sizeof(kbuf));
		void *kh = NULL;
		if (d->abi == 4) {
			struct descr_v4 *e = (struct descr_v4 *)kbuf;
			e->type = ev_kernelch;
			e->parentObj = h;
			e->kernelCh = (struct kernelch){ (uint8_t)ch, now_ns() };
		} else {
			struct descr_v5 *e = (struct descr_v5 *)kbuf;
			e->type = ev_kernelch;
			e->parentObj = h;
			e->kernelCh = (struct kernelch){ (uint8_t)ch, now_ns() };
		}
		drv_start(d, NULL, &kh, kbuf);
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

/*
 * Hot-path cost on this CPU: ops fed as NCCL feeds them with kernel
 * timestamps off (Group start, Coll start, Coll stop, Group stop), timed
 * against the same loop calling do-nothing functions. Prints figures only.
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
	unsigned char gbuf[256], buf[256];
	struct table_v5 nulltab = { "null", NULL, null_start, null_stop, NULL, NULL };
	struct drv nd = d;
	nd.abi = 5;
	nd.t5 = &nulltab;
	double ns[2];
	for (int pass = 0; pass < 2; pass++) {
		struct drv *dv = pass == 0 ? &nd : &d;
		uint64_t t0 = now_ns();
		for (int i = 0; i < o->ops; i++) {
			void *group = NULL, *h = NULL;
			memset(gbuf, 0, 32);
			if (dv->abi == 4)
				((struct descr_v4 *)gbuf)->type = ev_group;
			else
				((struct descr_v5 *)gbuf)->type = ev_group;
			drv_start(dv, ctx, &group, gbuf);
			make_descr(dv, buf, op, (uint64_t)i, 0, 1, group);
			drv_start(dv, ctx, &h, buf);
			if (h)
				drv_stop(dv, h);
			if (group)
				drv_stop(dv, group);
			if (pass == 1) {
				sh->fed[rank][0][op->op].count++;
				sh->fed[rank][0][op->op].bytes += op_bytes(op, 1);
			}
		}
		ns[pass] = (double)(now_ns() - t0) / o->ops;
	}
	printf("hotpath abi=%d ops=%d plugin_ns_per_op=%.1f null_ns_per_op=%.1f added_ns_per_op=%.1f\n", o->abi,
	       o->ops, ns[1], ns[0], ns[1] - ns[0]);
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

/* Compare one rank file's per-op counts and bytes with what was fed. */
static void check_counts(const struct nw_sf_rank *r, const struct fed *fed, int want_kernel, const char *who)
{
	for (int op = 0; op < NWS_NOPS; op++) {
		uint64_t c = 0, b = 0, k = 0;
		for (int bk = 0; bk < NWS_NBUCKETS; bk++) {
			c += r->rec[op][bk].count;
			b += r->rec[op][bk].bytes;
			k += r->rec[op][bk].t[NWS_SRC_KERNEL].count;
		}
		if (c != fed[op].count || b != fed[op].bytes)
			fail("%s op=%s count=%llu bytes=%llu, fed count=%llu bytes=%llu", who, nws_op_name((unsigned)op),
			     (unsigned long long)c, (unsigned long long)b, (unsigned long long)fed[op].count,
			     (unsigned long long)fed[op].bytes);
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
	int want_kernel = o->kernel && !strcmp(o->kernel, "on");
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
			if (f->hdr.nranks != o->nranks || (int)f->hdr.abi != o->abi)
				fail("%s: nranks %d abi %u, wanted %d and %d", who, f->hdr.nranks, f->hdr.abi, o->nranks, o->abi);
			if (f->hdr.ops_dropped || f->hdr.events_bad)
				fail("%s: %llu dropped, %llu bad events", who, (unsigned long long)f->hdr.ops_dropped,
				     (unsigned long long)f->hdr.events_bad);
			check_counts(f, sh->fed[r][0], want_kernel, who);
			const struct nw_sf_rank *g = find_rank(&set, HASH1 + (uint64_t)r, 0);
			snprintf(who, sizeof(who), "comm=solo(rank %d's)", r);
			if (!g)
				fail("%s: no stats file", who);
			else {
				check_counts(g, sh->fed[r][1], want_kernel, who);
				uint64_t gf = 0;
				for (int op = 0; op < NWS_NOPS; op++)
					gf += sh->fed[r][1][op].graph;
				if (g->hdr.graph_ops != gf)
					fail("%s: %u calls marked as captured into graphs, fed %llu", who, g->hdr.graph_ops,
					     (unsigned long long)gf);
			}
			if (sh->warn_lines[r])
				fail("rank %d: %d warning lines from the plugin (last: %s)", r, sh->warn_lines[r], sh->last_warn[r]);
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
	        "  --abi 4|5|6          profiler interface to drive (default 5)\n"
	        "  --ranks N            rank processes (default 4, at most %d)\n"
	        "  --ops N              rounds of every op kind per rank (default 20)\n"
	        "  --late R             rank that arrives late at every collective (default -1: none)\n"
	        "  --late-us U          how late, microseconds (default 2000)\n"
	        "  --job J              communicator ids of job J (0 to 65535, default 0): jobs apart in one --dir\n"
	        "  --kernel on|off|auto NCCLWATCH_KERNEL for the plugin (default on)\n"
	        "  --scenario S         normal, fsdp (4 comms x 6 ops x 12 sizes), pool, slow, trigger,\n"
	        "                       hotpath (prints ns per op), null-descr,\n"
	        "                       hang-missing, hang-inside, hang-idle, hang-straggler (--late is the rank),\n"
	        "                       logline (--ops all_reduces of 1 MiB, 100 us each, on one comm),\n"
	        "                       bad-type, null-handle,\n"
	        "                       bad-handle, misaligned-handle, bad-context (default normal)\n"
	        "  --hold-ms MS         keep the communicators open MS ms after feeding (files live)\n"
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
		{ "scenario", 1, 0, 's' }, { "check", 0, 0, 'c' }, { "hold-ms", 1, 0, 'H' }, { "cuda", 1, 0, 'C' }, { "job", 1, 0, 'j' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	char err[NW_ERRLEN];
	long v;
	int ch;
	while ((ch = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o.plugin = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'a':
			if (nw_parse_long(optarg, 4, 6, &v, "--abi", err, sizeof(err)))
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
	static const char *const scen[] = { "normal", "fsdp", "pool", "slow", "trigger", "hotpath", "null-descr", "bad-type",
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
	int normal = !strcmp(o.scenario, "normal"), fsdp = !strcmp(o.scenario, "fsdp");
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

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(sh, 0, sizeof(*sh));
	sh->nranks = o.nranks;
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
			if (normal)
				rc = rank_normal(&o, r);
			else if (fsdp)
				rc = rank_fsdp(&o, r);
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
