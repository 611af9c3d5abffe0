/*
 * publish: the plugin's one background thread. It turns finished in-flight
 * slots into aggregates in each communicator's stats file (nwstats.h),
 * keeps the flight-recorder ring, runs the KernelCh activation-mask
 * policy, detects slow operations and writes Chrome/Perfetto trace dumps
 * on request. None of this runs on NCCL's threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define GIVEUP_NS (30 * SEC)        /* an op whose events never all came is accounted anyway */
#define QUIET_NS (100 * MS)         /* wait this long for events NCCL may still send */
#define PROXY_QUIET_NS (2 * MS)
#define TRIGGER_EVERY_NS (200 * MS)
#define BURST_OPS 16                /* ops timed by one KernelCh sample */
#define POLICY_EVERY_NS SEC
#define SWITCH_DWELL_NS (2 * SEC)   /* least time between two policy switches */
#define ON_RATIO 0.005              /* KernelCh on when it costs <= 0.5% of execution time */
#define OFF_RATIO 0.01              /* ... and off again above 1% */
#define COST_SMALL_NS 8000.0        /* measured: KernelCh adds 4-10 us to a short op */
#define COST_LARGE_NS 1000.0        /* ... and under 1 us to one over ~100 us */
#define LARGE_OP_NS 100000.0

/* --- configuration --- */

static int env_long(const char *name, long def, long min, long max, long *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	*out = def;
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		snprintf(err, errlen, "%s='%s' is not a whole number in [%ld, %ld]", name, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static void on_sigusr2(int sig)
{
	(void)sig;
	__atomic_store_n(&nwp_g.dump_requested, 1, __ATOMIC_RELAXED);
}

/* The stats directory: NCCLWATCH_DIR, else /dev/shm/ncclwatch-<uid>; -1 with err when too long. */
static int config_dir(char *err, size_t errlen)
{
	const char *dir = getenv("NCCLWATCH_DIR");
	if (dir && *dir) {
		if (strlen(dir) >= sizeof(nwp_g.dir) - 80) {
			snprintf(err, errlen, "NCCLWATCH_DIR is too long");
			return -1;
		}
		snprintf(nwp_g.dir, sizeof(nwp_g.dir), "%s", dir);
	} else {
		snprintf(nwp_g.dir, sizeof(nwp_g.dir), "/dev/shm/ncclwatch-%u", (unsigned)getuid());
	}
	return 0;
}

/* NCCLWATCH_KERNEL: auto (default), on or 1, off or 0; -1 with err otherwise. */
static int config_kernel(char *err, size_t errlen)
{
	const char *k = getenv("NCCLWATCH_KERNEL");
	if (!k || !*k || !strcasecmp(k, "auto"))
		nwp_g.kmode = NWS_KMODE_AUTO;
	else if (!strcasecmp(k, "on") || !strcmp(k, "1"))
		nwp_g.kmode = NWS_KMODE_ON;
	else if (!strcasecmp(k, "off") || !strcmp(k, "0"))
		nwp_g.kmode = NWS_KMODE_OFF;
	else {
		snprintf(err, errlen, "NCCLWATCH_KERNEL='%s' is not auto, on or off", k);
		return -1;
	}
	return 0;
}

/* Let SIGUSR2 request a dump, unless the job already handles SIGUSR2. */
static void sigusr2_install(void)
{
	struct sigaction old;
	if (sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigusr2;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR2, &sa, NULL);
	}
}

/* Read the NCCLWATCH_* environment into nwp_g; -1 with err naming a bad variable. */
int nwp_config(char *err, size_t errlen)
{
	long v;
	if (config_dir(err, errlen) || config_kernel(err, errlen))
		return -1;
	if (env_long("NCCLWATCH_SAMPLE_S", 10, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.sample_ns = (uint64_t)v * SEC;
	if (env_long("NCCLWATCH_POOL", 4096, 64, 1 << 20, &v, err, errlen))
		return -1;
	if (v & (v - 1)) {
		snprintf(err, errlen, "NCCLWATCH_POOL=%ld is not a power of two", v);
		return -1;
	}
	nwp_g.pool_size = (uint32_t)v;
	if (env_long("NCCLWATCH_RING", NWS_RING_DEFAULT, 16, 1 << 16, &v, err, errlen))
		return -1;
	nwp_g.ring_len = (uint32_t)v;
	if (env_long("NCCLWATCH_SLOW_FACTOR", 10, 2, 100000, &v, err, errlen))
		return -1;
	nwp_g.slow_factor = (double)v;
	if (env_long("NCCLWATCH_SLOW_MIN_US", 50, 0, 1000000000L, &v, err, errlen))
		return -1;
	nwp_g.slow_floor_ns = (uint64_t)v * 1000;
	if (env_long("NCCLWATCH_DUMP_MIN_S", 60, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.dump_min_ns = (uint64_t)v * SEC;
	if (env_long("NCCLWATCH_PERIOD_MS", 5, 1, 1000, &v, err, errlen))
		return -1;
	nwp_g.period_ns = (uint64_t)v * MS;
	if (env_long("NCCLWATCH_BUSY_WINDOW_S", 10, 1, 60, &v, err, errlen))
		return -1;
	nwp_g.busy_window_s = (uint64_t)v;
	if (env_long("NCCLWATCH_MAX_COMMS", 64, 1, 4096, &v, err, errlen))
		return -1;
	nwp_g.max_comms = (int)v;
	if (env_long("NCCLWATCH_HANG_S", 120, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.hang_ns = (uint64_t)v * SEC;
	if (env_long("NCCLWATCH_SIGUSR2", 0, 0, 1, &v, err, errlen))
		return -1;
	if (nwp_overlap_config(err, errlen))
		return -1;
	if (v)
		sigusr2_install();
	nwp_logline_config(); /* NCCLWATCH_LOG_S, _LOG, _LOG_RANKS: a bad one turns off only the log lines */
	return 0;
}

/* --- stats files --- */

/* Create the stats directory (0700) or check that an existing one is ours. */
static int ensure_dir(char *err, size_t errlen)
{
	if (mkdir(nwp_g.dir, 0700) == 0)
		return 0;
	if (errno != EEXIST) {
		snprintf(err, errlen, "cannot create stats directory '%s': %s", nwp_g.dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(nwp_g.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "stats path '%s' is not a directory", nwp_g.dir);
		return -1;
	}
	if (st.st_uid != getuid()) {
		snprintf(err, errlen, "stats directory '%s' belongs to another user; set NCCLWATCH_DIR", nwp_g.dir);
		return -1;
	}
	return 0;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	if (src)
		for (; i + 1 < len && src[i]; i++)
			dst[i] = src[i];
	for (; i < len; i++)
		dst[i] = '\0';
}

/* The identity part of c's new file header (written once, before the magic that says the file is ready). */
static void header_init(struct nwp_comm *c, uint64_t size, uint64_t off_records, uint64_t off_ring)
{
	struct nws_header *h = c->hdr;
	h->version = NWS_VERSION;
	h->header_size = sizeof(struct nws_header);
	h->file_size = size;
	h->nops = NWS_NOPS;
	h->nbuckets = NWS_NBUCKETS;
	h->nhist = NWS_NHIST;
	h->nsrc = NWS_NSRC;
	h->record_size = sizeof(struct nws_record);
	h->opent_size = sizeof(struct nws_opent);
	h->off_records = off_records;
	h->off_ring = off_ring;
	h->ring_len = c->ring_len;
	h->pid = nwp_g.pid;
	h->proc_start = nwp_g.proc_start;
	h->created_ns = nwp_realtime_ns();
	h->comm_hash = c->comm_hash;
	h->rank = c->rank;
	h->nranks = c->nranks;
	h->nnodes = c->nnodes;
	h->abi = (uint32_t)nwp_g.abi;
	copy_str(h->hostname, sizeof(h->hostname), nwp_g.host);
	copy_str(h->comm_name, sizeof(h->comm_name), c->name);
	copy_str(h->plugin_version, sizeof(h->plugin_version), NW_VERSION);
	h->state = NWS_STATE_RUNNING;
	h->kernel_mode = (uint32_t)nwp_g.kmode;
	h->busy_window_ns = 0;
	nwp_ident_fill(&h->ident);
}

/* Create c->path afresh (an old file of this pid and comm is replaced) and reserve size bytes; the fd, or -1 with err. */
static int file_create(const struct nwp_comm *c, uint64_t size, char *err, size_t errlen)
{
	int fd = -1;
	for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
		fd = open(c->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			unlink(c->path); /* an old file of this pid and comm: ours to replace */
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot create stats file '%s': %s", c->path, strerror(errno));
		return -1;
	}
	int rc = posix_fallocate(fd, 0, (off_t)size);
	if (rc != 0) {
		snprintf(err, errlen, "cannot reserve %llu bytes for '%s': %s", (unsigned long long)size,
		         c->path, strerror(rc));
		close(fd);
		unlink(c->path);
		return -1;
	}
	return fd;
}

/* Create, size (space reserved, so writes can never fault) and map c's file. */
int nwp_comm_open(struct nwp_comm *c, char *err, size_t errlen)
{
	if (ensure_dir(err, errlen) != 0)
		return -1;
	int n = snprintf(c->path, sizeof(c->path), "%s/%s.%d.%016llx.r%d.nws", nwp_g.dir, nwp_g.host,
	                 nwp_g.pid, (unsigned long long)c->comm_hash, c->rank);
	if (n < 0 || (size_t)n >= sizeof(c->path)) {
		snprintf(err, errlen, "stats file name too long");
		return -1;
	}
	uint64_t off_records = (sizeof(struct nws_header) + 63) & ~63ull;
	uint64_t off_ring = off_records + (uint64_t)NWS_NOPS * NWS_NBUCKETS * sizeof(struct nws_record);
	uint64_t size = off_ring + (uint64_t)nwp_g.ring_len * sizeof(struct nws_opent);
	int fd = file_create(c, size, err, errlen);
	if (fd < 0)
		return -1;
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "cannot map '%s': %s", c->path, strerror(errno));
		close(fd);
		unlink(c->path);
		return -1;
	}
	memset(map, 0, size);
	c->fd = fd;
	c->map = map;
	c->map_len = size;
	c->hdr = map;
	c->rec = (struct nws_record *)((char *)map + off_records);
	c->ring = (struct nws_opent *)((char *)map + off_ring);
	c->ring_len = nwp_g.ring_len;
	header_init(c, size, off_records, off_ring);
	__atomic_store_n(&c->hdr->magic, NWS_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

void nwp_comm_close(struct nwp_comm *c)
{
	if (c->map)
		munmap(c->map, c->map_len);
	if (c->fd >= 0)
		close(c->fd);
	c->map = NULL;
	c->hdr = NULL;
	c->rec = NULL;
	c->ring = NULL;
	c->fd = -1;
}

/* Seqlock writer: make gen odd before writing, even after. */
static inline void w_begin(uint64_t *gen)
{
	uint64_t g = __atomic_load_n(gen, __ATOMIC_RELAXED);
	__atomic_store_n(gen, g + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void w_end(uint64_t *gen)
{
	uint64_t g = __atomic_load_n(gen, __ATOMIC_RELAXED);
	__atomic_store_n(gen, g + 1, __ATOMIC_RELEASE);
}

/* --- turning slots into aggregates --- */

static unsigned op_of(const char *f)
{
	static const struct { const char *name; unsigned op; } map[] = {
		{ "AllReduce", NWS_OP_ALL_REDUCE }, { "AllGather", NWS_OP_ALL_GATHER },
		{ "ReduceScatter", NWS_OP_REDUCE_SCATTER }, { "Broadcast", NWS_OP_BROADCAST },
		{ "Reduce", NWS_OP_REDUCE }, { "AlltoAll", NWS_OP_ALLTOALL }, { "Gather", NWS_OP_GATHER },
		{ "Scatter", NWS_OP_SCATTER }, { "Send", NWS_OP_SEND }, { "Recv", NWS_OP_RECV },
		{ "SendRecv", NWS_OP_SENDRECV },
	};
	if (!f)
		return NWS_OP_OTHER;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcasecmp(f, map[i].name))
			return map[i].op;
	return NWS_OP_OTHER;
}

/* ncclDataType_t number and size of NCCL's type name; 255 and size 1 when unknown. */
static unsigned dtype_of(const char *d, unsigned *size)
{
	static const struct { const char *name; unsigned size; } map[] = {
		{ "ncclInt8", 1 }, { "ncclUint8", 1 }, { "ncclInt32", 4 }, { "ncclUint32", 4 },
		{ "ncclInt64", 8 }, { "ncclUint64", 8 }, { "ncclFloat16", 2 }, { "ncclFloat32", 4 },
		{ "ncclFloat64", 8 }, { "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 }, { "ncclFloat8e5m2", 1 },
	};
	*size = 1;
	if (!d)
		return 255;
	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (!strcmp(d, map[i].name)) {
			*size = map[i].size;
			return i;
		}
	}
	return 255;
}

static int op_is_split(unsigned op)
{
	return op == NWS_OP_ALL_GATHER || op == NWS_OP_REDUCE_SCATTER || op == NWS_OP_ALLTOALL ||
	       op == NWS_OP_GATHER || op == NWS_OP_SCATTER;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t recent_median(const struct nwp_recent *r)
{
	uint64_t v[NWP_RECENT];
	memcpy(v, r->ns, r->n * sizeof(uint64_t));
	qsort(v, r->n, sizeof(uint64_t), cmp_u64);
	return v[r->n / 2];
}

/* Add busy time (kernel-exact k, estimated e) to the second sec of c's window. */
static void busy_add(struct nwp_comm *c, uint64_t sec, uint64_t k, uint64_t e)
{
	c->busy_k_total += k;
	c->busy_e_total += e;
	if (sec > c->busy_sec_start) {
		uint64_t from = c->busy_sec_start + 1;
		if (sec - c->busy_sec_start > 64)
			from = sec - 63;
		for (uint64_t s = from; s <= sec; s++) {
			c->busy_k[s % 64] = 0;
			c->busy_e[s % 64] = 0;
		}
		c->busy_sec_start = sec;
	}
	if (c->busy_sec_start - sec >= 64)
		return;
	c->busy_k[sec % 64] += k;
	c->busy_e[sec % 64] += e;
}

/* One finished op as it is accounted: what it was, how big, when it ran and how that was timed. */
struct done_op {
	unsigned op, dtype, bucket, src, flags;
	uint64_t bytes;
	uint64_t start, end, dur;  /* realtime ns, and the execution time */
};

/* The op's execution interval from its time source: GPU kernel times mapped to realtime, proxy times, or the launch. */
NWP_HOT void op_interval(const struct nwp_comm *c, struct nwp_slot *s, struct done_op *d)
{
	if (d->src == NWS_SRC_KERNEL) {
		uint64_t ks = __atomic_load_n(&s->kstart_gpu, __ATOMIC_RELAXED);
		uint64_t ke = __atomic_load_n(&s->kend_gpu, __ATOMIC_RELAXED);
		/* GPU globaltimer -> realtime: the smallest (arrival - timestamp) seen over the
		 * last 10-20 s is the offset plus the proxy thread's least delay */
		int64_t cur = __atomic_load_n(&c->off_min, __ATOMIC_RELAXED);
		int64_t off = c->off_prev < cur ? c->off_prev : cur;
		if (off == INT64_MAX)
			off = 0;
		if (!ks || ke < ks)
			ke = ks;
		d->dur = ke - ks;
		d->start = (uint64_t)((int64_t)ks + off);
		d->end = (uint64_t)((int64_t)ke + off);
	} else if (d->src == NWS_SRC_PROXY) {
		d->start = __atomic_load_n(&s->px_first_ns, __ATOMIC_RELAXED);
		d->end = __atomic_load_n(&s->px_last_ns, __ATOMIC_RELAXED);
		if (d->end < d->start)
			d->end = d->start;
		d->dur = d->end - d->start;
	} else {
		d->start = s->enq_ns;
		d->end = s->enq_end_ns >= s->enq_ns ? s->enq_end_ns : s->enq_ns;
		d->dur = d->end - d->start;
	}
}

/* Add the op to its (op, bucket) record under the seqlock; returns the record's mean kernel time (0: none). */
NWP_HOT uint64_t record_add(struct nwp_comm *c, const struct done_op *d)
{
	struct nws_record *r = &c->rec[d->op * NWS_NBUCKETS + d->bucket];
	w_begin(&r->gen);
	r->count++;
	r->bytes += d->bytes;
	r->last_ns = d->end;
	struct nws_timing *t = &r->t[d->src];
	if (!t->count || d->dur < t->min_ns)
		t->min_ns = d->dur;
	if (d->dur > t->max_ns)
		t->max_ns = d->dur;
	t->count++;
	t->bytes += d->bytes;
	t->sum_ns += d->dur;
	t->hist[nws_time_bin(d->dur)]++;
	uint64_t kmean = r->t[NWS_SRC_KERNEL].count ? r->t[NWS_SRC_KERNEL].sum_ns / r->t[NWS_SRC_KERNEL].count : 0;
	w_end(&r->gen);
	return kmean;
}

/* Kernel-timed ops: flag one far slower than recent peers of its comm/op/bucket (and ask for a dump), then remember its time. */
NWP_HOT void slow_check(struct nwp_comm *c, struct done_op *d, uint64_t now)
{
	struct nwp_recent *rc = &c->recent[d->op][d->bucket];
	if (rc->n >= 8) {
		uint64_t med = recent_median(rc);
		if ((double)d->dur > nwp_g.slow_factor * (double)med && d->dur - med > nwp_g.slow_floor_ns) {
			d->flags |= NWS_OPF_SLOW;
			c->slow_ops++;
			if (!nwp_g.last_auto_dump_ns || now - nwp_g.last_auto_dump_ns >= nwp_g.dump_min_ns) {
				nwp_g.last_auto_dump_ns = now ? now : 1;
				__atomic_store_n(&nwp_g.dump_requested, 2, __ATOMIC_RELAXED);
			}
		}
	}
	rc->ns[rc->pos] = d->dur;
	rc->pos = (rc->pos + 1) % NWP_RECENT;
	if (rc->n < NWP_RECENT)
		rc->n++;
	c->kernel_ops++;
}

/* Busy time (union of kernel intervals, plus estimates for untimed ops) and the KernelCh cost model. */
NWP_HOT void busy_and_cost(struct nwp_comm *c, const struct done_op *d, uint64_t kmean)
{
	if (d->src == NWS_SRC_KERNEL) {
		uint64_t from = d->start > c->last_end_ns ? d->start : c->last_end_ns;
		uint64_t add = d->end > from ? d->end - from : 0;
		if (d->end > c->last_end_ns)
			c->last_end_ns = d->end;
		busy_add(c, d->end / SEC, add, 0);
	} else if (kmean) {
		busy_add(c, d->end / SEC, 0, kmean);
	}
	/* cost model for the KernelCh policy (all comms of the process) */
	double est = d->src == NWS_SRC_KERNEL ? (double)d->dur : kmean ? (double)kmean
	             : 10000.0 + (double)d->bytes / 50.0; /* no sample yet: 10 us + 50 GB/s */
	nwp_g.win_exec_ns += est;
	nwp_g.win_cost_ns += est >= LARGE_OP_NS ? COST_LARGE_NS : COST_SMALL_NS;
}

/* The op's entry in the flight recorder. */
NWP_HOT void ring_add(struct nwp_comm *c, const struct nwp_slot *s, const struct done_op *d)
{
	uint64_t idx = ++c->ring_head;
	struct nws_opent *e = &c->ring[(idx - 1) % c->ring_len];
	w_begin(&e->gen);
	e->idx = idx;
	e->seq = s->seq;
	e->bytes = d->bytes;
	e->count = s->count;
	e->enq_ns = s->enq_ns;
	e->enq_end_ns = s->enq_end_ns;
	e->start_ns = d->start;
	e->end_ns = d->end;
	e->op = (uint16_t)d->op;
	e->src = (uint8_t)d->src;
	e->flags = (uint8_t)(d->flags | (s->kind == NWP_KIND_COLL ? NWS_OPF_SEQ : 0));
	e->nchannels = s->nch;
	e->nwarps = s->nwarps;
	e->dtype = (uint8_t)d->dtype;
	e->nkch = (uint8_t)(s->kch_stopped > 255 ? 255 : s->kch_stopped);
	e->peer = s->peer;
	copy_str(e->algo, sizeof(e->algo), s->algo);
	copy_str(e->proto, sizeof(e->proto), s->proto);
	w_end(&e->gen);
}

/* The op, ncclDataType_t number and nccl-tests size of the operation in slot s of c. */
unsigned nwp_slot_op(const struct nwp_comm *c, const struct nwp_slot *s, unsigned *dtype, uint64_t *bytes)
{
	unsigned tsize, op = op_of(s->func);
	*dtype = dtype_of(s->dtype, &tsize);
	*bytes = s->count * tsize * (op_is_split(op) && c->nranks > 0 ? (uint64_t)c->nranks : 1);
	return op;
}

/* Progress of an accounted op: a completion that was seen, or one given up on (kept as in flight). */
static void progress_done(struct nwp_comm *c, const struct nwp_slot *s, const struct done_op *d, int final)
{
	struct nws_progress *p = &c->prog;
	if (d->flags & NWS_OPF_INCOMPLETE) {
		if (!final && !c->stuck.on)
			c->stuck = (struct nwp_stuck){ 1, d->op, s->seq, d->bytes, s->enq_ns };
		return;
	}
	if (d->src == NWS_SRC_CPU || (d->flags & NWS_OPF_PARTIAL))
		return; /* no completion event: nothing seen */
	uint64_t n = s->kind == NWP_KIND_COLL ? s->seq + 1 : p->done_count[d->op] + 1;
	if (n > p->done_count[d->op])
		p->done_count[d->op] = n;
	p->done_op = d->op;
	p->done_seq = n - 1;
	p->done_bytes = d->bytes;
	p->done_ns = d->end;
	if (c->stuck.on && s->enq_ns > c->stuck.enq_ns)
		c->stuck.on = 0; /* a later op completed: the stuck one did too (one stream) */
}

/* Account one finished op: record, ring entry, busy time, slow check, cost model, progress. */
static void account(struct nwp_comm *c, struct nwp_slot *s, unsigned src, unsigned flags, uint64_t now, int final)
{
	struct done_op d;
	d.op = nwp_slot_op(c, s, &d.dtype, &d.bytes);
	d.bucket = nws_size_bucket(d.bytes);
	d.src = src;
	d.flags = flags;
	op_interval(c, s, &d);
	uint64_t kmean = record_add(c, &d);
	if (src == NWS_SRC_KERNEL)
		slow_check(c, &d, now);
	busy_and_cost(c, &d, kmean);
	ring_add(c, s, &d);
	if (s->kind == NWP_KIND_COLL && s->seq + 1 > c->last_seq[d.op])
		c->last_seq[d.op] = s->seq + 1;
	c->ops_total++;
	progress_done(c, s, &d, final);
}

/* What one drain pass knows beyond the slot: the time, final, and the newest slot with kernel activity. */
struct drain_pass {
	uint64_t now, head;
	int final, proxy_on;
	uint64_t newest_k;   /* 1 + index of the newest slot with kernel activity */
	int newest_k_known;
};

/* Kernel events of slot i: sets *src (and *flags) when they tell how to account it; 0, or -1 to wait. */
static int classify_kernel(struct nwp_comm *c, struct nwp_slot *s, uint64_t i, struct drain_pass *dp,
                           int *src, unsigned *flags)
{
	uint32_t mask = nwp_g.pool_size - 1;
	uint64_t age = dp->now > s->enq_end_ns ? dp->now - s->enq_end_ns : 0;
	uint32_t kst = __atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE);
	uint32_t ksp = __atomic_load_n(&s->kch_stopped, __ATOMIC_ACQUIRE);
	if (!dp->newest_k_known) {
		for (uint64_t j = dp->head; j > i; j--)
			if (__atomic_load_n(&c->slots[(j - 1) & mask].kch_started, __ATOMIC_RELAXED)) {
				dp->newest_k = j;
				break;
			}
		dp->newest_k_known = 1;
	}
	int later = dp->newest_k > i + 1, giveup = dp->final || age > GIVEUP_NS;
	if (kst > 0 && ksp >= kst && (s->nch ? ksp >= s->nch : (later || age > QUIET_NS || dp->final)))
		*src = NWS_SRC_KERNEL;
	else if (kst > 0 && ksp > 0 && (giveup || (later && age > QUIET_NS))) {
		*src = NWS_SRC_KERNEL;
		*flags = NWS_OPF_PARTIAL | (later ? 0 : NWS_OPF_INCOMPLETE);
	} else if (kst == 0 && !(giveup || later))
		return -1; /* kernel events may still come */
	else if (kst > 0 && !giveup)
		return -1;
	else if (!later)
		*flags = NWS_OPF_INCOMPLETE; /* the kernel never reported its end: given up */
	return 0;
}

/*
 * How to account stopped slot i: its time source and flags, or -1 while
 * events may still come. An op is complete when its kernel events all
 * came (KernelCh was on), or NCCL will send none (CPU, or PROXY once its
 * proxy ops stopped), or it waited too long (then it is marked incomplete
 * unless a later op shows it ended).
 */
static int classify(struct nwp_comm *c, struct nwp_slot *s, uint64_t i, struct drain_pass *dp, unsigned *flags)
{
	int src = -1;
	*flags = 0;
	uint64_t age = dp->now > s->enq_end_ns ? dp->now - s->enq_end_ns : 0;
	if ((__atomic_load_n(&s->kch_started, __ATOMIC_ACQUIRE) > 0 || s->expect_kch) &&
	    classify_kernel(c, s, i, dp, &src, flags) != 0)
		return -1;
	if (src >= 0)
		return src;
	uint32_t pst = __atomic_load_n(&s->px_started, __ATOMIC_ACQUIRE);
	uint32_t psp = __atomic_load_n(&s->px_stopped, __ATOMIC_ACQUIRE);
	uint64_t plast = __atomic_load_n(&s->px_last_ns, __ATOMIC_RELAXED);
	if (pst > 0 && psp >= pst && (dp->final || dp->now - plast > PROXY_QUIET_NS))
		return NWS_SRC_PROXY;
	if (pst > 0 && (dp->final || age > GIVEUP_NS)) {
		*flags |= NWS_OPF_PARTIAL | NWS_OPF_INCOMPLETE;
		return NWS_SRC_PROXY;
	}
	if (pst == 0 && (!dp->proxy_on || dp->final || age > QUIET_NS))
		return NWS_SRC_CPU;
	return -1;
}

/* Account every slot of c that is complete (or, with final, everything started), then free finished slots in order. */
void nwp_drain(struct nwp_comm *c, uint64_t now, int final)
{
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint32_t mask = nwp_g.pool_size - 1;
	struct drain_pass dp = { now, head, final, (nwp_g.base_mask & NWP_EV_PROXYOP) && c->nnodes > 1, 0, 0 };
	nwp_note_enqueued(c, head);
	for (uint64_t i = tail; i < head; i++) {
		struct nwp_slot *s = &c->slots[i & mask];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == NWP_ACTIVE && final) {
			s->enq_end_ns = s->enq_ns;
			st = NWP_STOPPED;
		}
		if (st != NWP_STOPPED)
			continue;
		unsigned flags;
		int src = classify(c, s, i, &dp, &flags);
		if (src < 0)
			continue;
		account(c, s, (unsigned)src, flags, now, final);
		__atomic_store_n(&s->state, NWP_DONE, __ATOMIC_RELAXED);
	}
	while (tail < head) {
		struct nwp_slot *s = &c->slots[tail & mask];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != NWP_DONE)
			break;
		__atomic_store_n(&s->state, NWP_FREE, __ATOMIC_RELEASE);
		tail++;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	nwp_note_inflight(c, tail, head, dp.proxy_on);
}

/* Write the live part of c's header under its seqlock. */
void nwp_publish_header(struct nwp_comm *c, uint64_t now, uint32_t state)
{
	struct nws_header *h = c->hdr;
	if (!h)
		return;
	uint64_t win = nwp_g.busy_window_s * SEC, age = now > h->created_ns ? now - h->created_ns : 0;
	uint64_t now_sec = now / SEC, bk = 0, be = 0;
	for (uint64_t i = 0; i < nwp_g.busy_window_s; i++) {
		uint64_t s = now_sec - i;
		if (s <= c->busy_sec_start && c->busy_sec_start - s < 64) {
			bk += c->busy_k[s % 64];
			be += c->busy_e[s % 64];
		}
	}
	w_begin(&h->live_gen);
	h->updated_ns = now;
	h->state = state;
	h->kernel_mode = (uint32_t)nwp_g.kmode;
	h->mask = (uint32_t)(nwp_g.mask_ptr ? __atomic_load_n(nwp_g.mask_ptr, __ATOMIC_RELAXED) : 0);
	h->ops_total = c->ops_total;
	uint64_t gops = __atomic_load_n(&c->graph_ops, __ATOMIC_RELAXED);
	h->graph_ops = gops > UINT32_MAX ? UINT32_MAX : (uint32_t)gops;
	h->ops_dropped = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
	h->events_bad = nwp_bad_events();
	h->events_late = nwp_late_events();
	h->mask_switches = nwp_g.mask_switches;
	h->kernel_ops = c->kernel_ops;
	h->slow_ops = c->slow_ops;
	h->dumps = nwp_g.dumps;
	h->ring_head = c->ring_head;
	memcpy(h->last_seq, c->last_seq, sizeof(h->last_seq));
	h->busy_window_ns = win < age ? win : age;
	h->busy_kernel_ns = bk;
	h->busy_est_ns = bk + be;
	h->busy_kernel_total_ns = c->busy_k_total;
	h->busy_est_total_ns = c->busy_k_total + c->busy_e_total;
	h->wall_total_ns = age;
	copy_str(h->last_dump, sizeof(h->last_dump), nwp_g.last_dump);
	copy_str(h->disabled_reason, sizeof(h->disabled_reason), nwp_g.disabled_reason);
	h->prog = c->prog;
	nwp_overlap_fill(&h->ovl);
	w_end(&h->live_gen);
}

/* --- activation-mask policy --- */

static void set_mask(int m)
{
	if (!nwp_g.mask_ptr)
		return;
	int cur = __atomic_load_n(nwp_g.mask_ptr, __ATOMIC_RELAXED);
	if (cur == m)
		return;
	__atomic_store_n(nwp_g.mask_ptr, m, __ATOMIC_RELAXED);
	nwp_g.mask_switches++;
}

/*
 * NCCL reads the mask (one int per process, shared by every communicator)
 * at each collective or p2p call. KernelCh stays on only while the cost
 * model says it is cheap relative to the ops being run; otherwise a burst
 * of BURST_OPS ops is sampled every NCCLWATCH_SAMPLE_S seconds.
 */
static void policy(uint64_t now)
{
	int base = nwp_g.base_mask;
	if (nwp_g.kmode != NWS_KMODE_AUTO) {
		nwp_g.kernel_on = nwp_g.kmode == NWS_KMODE_ON;
		nwp_g.mask = base | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
		set_mask(nwp_g.mask);
		return;
	}
	int burst = __atomic_load_n(&nwp_g.burst_left, __ATOMIC_RELAXED);
	if (burst > 0 && now - nwp_g.burst_started_ns > SEC) {
		__atomic_store_n(&nwp_g.burst_left, 0, __ATOMIC_RELAXED); /* no ops came: end it */
		burst = 0;
	}
	if (!nwp_g.win_start_ns)
		nwp_g.win_start_ns = now;
	if (now - nwp_g.win_start_ns >= POLICY_EVERY_NS) {
		if (nwp_g.win_exec_ns > 0 && now - nwp_g.last_switch_ns >= SWITCH_DWELL_NS) {
			double ratio = nwp_g.win_cost_ns / nwp_g.win_exec_ns;
			int want = nwp_g.kernel_on ? ratio <= OFF_RATIO : ratio <= ON_RATIO;
			if (want != nwp_g.kernel_on) {
				nwp_g.kernel_on = want;
				nwp_g.last_switch_ns = now;
			}
		}
		nwp_g.win_start_ns = now;
		nwp_g.win_exec_ns = 0;
		nwp_g.win_cost_ns = 0;
	}
	nwp_g.mask = base | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
	if (burst > 0)
		return; /* the hot path ends the burst */
	if (!nwp_g.kernel_on && nwp_g.sample_ns && now - nwp_g.last_sample_ns >= nwp_g.sample_ns) {
		nwp_g.last_sample_ns = now;
		nwp_g.burst_started_ns = now;
		__atomic_store_n(&nwp_g.burst_left, BURST_OPS, __ATOMIC_RELAXED);
		set_mask(base | NWP_EV_KERNELCH);
		nwp_g.mask_switches++; /* the hot path switches it back */
		return;
	}
	set_mask(nwp_g.mask);
}

/* --- trace dumps --- */

/* s as a JSON string (quoted, escaped). */
void nwp_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

/* One flight-recorder entry of c as a complete ("X") trace event. */
static void dump_op(FILE *f, const struct nwp_comm *c, const struct nws_opent *e)
{
	fputs(",\n{\"name\":", f);
	nwp_json_str(f, nws_op_name(e->op));
	fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", nws_src_name(e->src));
	json_us(f, e->start_ns);
	fputs(",\"dur\":", f);
	json_us(f, e->end_ns - e->start_ns);
	fprintf(f, ",\"pid\":%d,\"tid\":%d,\"args\":{\"bytes\":%llu,\"count\":%llu,\"src\":\"%s\"",
	        c->rank, c->index, (unsigned long long)e->bytes, (unsigned long long)e->count,
	        nws_src_name(e->src));
	if (e->flags & NWS_OPF_SEQ)
		fprintf(f, ",\"seq\":%llu", (unsigned long long)e->seq);
	fputs(",\"algo\":", f);
	nwp_json_str(f, e->algo);
	fputs(",\"proto\":", f);
	nwp_json_str(f, e->proto);
	fprintf(f, ",\"nchannels\":%u,\"peer\":%d,\"enqueue_us\":", e->nchannels, e->peer);
	json_us(f, e->enq_ns);
	fprintf(f, ",\"slow\":%s,\"partial\":%s,\"incomplete\":%s}}", (e->flags & NWS_OPF_SLOW) ? "true" : "false",
	        (e->flags & NWS_OPF_PARTIAL) ? "true" : "false", (e->flags & NWS_OPF_INCOMPLETE) ? "true" : "false");
}

/* c's process and thread names (metadata events), its flight recorder, oldest first, then the ops in flight. */
static void dump_comm(FILE *f, const struct nwp_comm *c, int first, uint64_t now)
{
	fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d (",
	        first ? "" : ",\n", c->rank, c->rank);
	fprintf(f, "%s pid %d)\"}}", nwp_g.host, nwp_g.pid);
	char tname[128];
	snprintf(tname, sizeof(tname), "comm %s%s%016llx", c->name, c->name[0] ? " " : "",
	         (unsigned long long)c->comm_hash);
	fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
	        c->rank, c->index);
	nwp_json_str(f, tname);
	fputs("}}", f);
	uint64_t n = c->ring_head < c->ring_len ? c->ring_head : c->ring_len;
	for (uint64_t k = c->ring_head - n; k < c->ring_head; k++) {
		const struct nws_opent *e = &c->ring[k % c->ring_len];
		if (e->idx)
			dump_op(f, c, e);
	}
	nwp_dump_inflight(f, c, now);
}

/*
 * Write the flight recorder of every communicator of this process as one
 * Chrome/Perfetto trace (traceEvents, ph "X", ts/dur in us, pid = rank,
 * tid = communicator) to $NCCLWATCH_DIR/trace.<host>.<pid>.<ms>.json,
 * through a temporary file and rename. Returns 0 or -1.
 */
int nwp_dump_all(const char *why)
{
	uint64_t now = nwp_realtime_ns();
	char name[128], path[600], tmp[620];
	snprintf(name, sizeof(name), "trace.%s.%d.%llu.json", nwp_g.host, nwp_g.pid,
	         (unsigned long long)(now / MS));
	snprintf(path, sizeof(path), "%s/%s", nwp_g.dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	fputs("{\"traceEvents\":[\n", f);
	int first = 1;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		struct nwp_comm *c = nwp_comm_at(i);
		if (!c || !c->alive || !c->ring)
			continue;
		dump_comm(f, c, first, now);
		first = 0;
	}
	fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"reason\":", f);
	nwp_json_str(f, why);
	fputs(",\"progress\":[", f);
	first = 1;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		struct nwp_comm *c = nwp_comm_at(i);
		if (!c || !c->alive || !c->ring)
			continue;
		nwp_dump_progress(f, c, first);
		first = 0;
	}
	fputs("]", f);
	fputs(",\"host\":", f);
	nwp_json_str(f, nwp_g.host);
	fprintf(f, ",\"pid\":%d}}\n", nwp_g.pid);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	copy_str(nwp_g.last_dump, sizeof(nwp_g.last_dump), name);
	nwp_g.dumps++;
	return 0;
}

/* mtime of $NCCLWATCH_DIR/dump in ns, 0 when absent. */
static int64_t trigger_mtime(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/dump", nwp_g.dir);
	struct stat st;
	if (stat(p, &st) != 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
}

/* --- the thread --- */

/* The dumps asked for this cycle: one after a hang was declared (the headers then name it), else a trigger, SIGUSR2 or slow op. */
static void dumps(uint64_t now)
{
	if (now - nwp_g.last_trigger_check_ns >= TRIGGER_EVERY_NS) {
		nwp_g.last_trigger_check_ns = now;
		int64_t m = trigger_mtime();
		if (m && m != nwp_g.trigger_mtime) {
			nwp_g.trigger_mtime = m;
			__atomic_store_n(&nwp_g.dump_requested, 1, __ATOMIC_RELAXED);
		}
	}
	int req = __atomic_exchange_n(&nwp_g.dump_requested, 0, __ATOMIC_ACQ_REL);
	if (nwp_g.hang_dump) {
		nwp_g.hang_dump = 0;
		nwp_dump_all("hang");
		for (int i = 0; i < nwp_g.max_comms; i++) {
			struct nwp_comm *c = nwp_comm_at(i);
			if (c && __atomic_load_n(&c->alive, __ATOMIC_ACQUIRE))
				nwp_publish_header(c, now, NWS_STATE_RUNNING);
		}
	} else if (req) {
		nwp_dump_all(req == 2 ? "slow operation" : "requested");
	}
}

static void *thread_main(void *arg)
{
	int gen = (int)(intptr_t)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* the job's signals go to the job's threads */
	int disabled_seen = 0;
	nwp_g.trigger_mtime = trigger_mtime();
	while (__atomic_load_n(nwp_thread_gen(), __ATOMIC_ACQUIRE) == gen) {
		struct timespec ts = { 0, (long)nwp_g.period_ns };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&nwp_g.lock);
		uint64_t now = nwp_realtime_ns();
		int disabled = __atomic_load_n(&nwp_g.disabled, __ATOMIC_ACQUIRE);
		for (int i = 0; i < nwp_g.max_comms; i++) {
			struct nwp_comm *c = nwp_comm_at(i);
			if (!c || !__atomic_load_n(&c->alive, __ATOMIC_ACQUIRE))
				continue;
			if (disabled) {
				if (!disabled_seen)
					nwp_publish_header(c, now, NWS_STATE_DISABLED);
				continue;
			}
			nwp_drain(c, now, 0);
			nwp_hang_check(c, now);
			/* GPU clock offset: keep the minimum of this and the previous 10 s window,
			 * so a drifting clock is followed and one delayed event changes nothing */
			if (now / (10 * SEC) != c->off_window) {
				c->off_window = now / (10 * SEC);
				c->off_prev = __atomic_exchange_n(&c->off_min, INT64_MAX, __ATOMIC_RELAXED);
			}
			nwp_publish_header(c, now, NWS_STATE_RUNNING);
			nwp_logline_tick(c, now);
		}
		if (disabled) {
			disabled_seen = 1;
			pthread_mutex_unlock(&nwp_g.lock);
			continue;
		}
		policy(now);
		dumps(now);
		nwp_overlap_tick(nwp_mono_ns());
		pthread_mutex_unlock(&nwp_g.lock);
	}
	pthread_mutex_lock(&nwp_g.lock);
	nwp_overlap_shutdown();
	pthread_mutex_unlock(&nwp_g.lock);
	return NULL;
}

/* Start the publisher (caller holds nwp_g.lock). */
int nwp_thread_start(void)
{
	int gen = __atomic_add_fetch(nwp_thread_gen(), 1, __ATOMIC_ACQ_REL);
	return pthread_create(&nwp_g.thread, NULL, thread_main, (void *)(intptr_t)gen) == 0 ? 0 : -1;
}

/* Tell the publisher to stop (caller holds nwp_g.lock); returns the thread to join. */
pthread_t nwp_thread_stop(void)
{
	__atomic_add_fetch(nwp_thread_gen(), 1, __ATOMIC_ACQ_REL);
	return nwp_g.thread;
}
