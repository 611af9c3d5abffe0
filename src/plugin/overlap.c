/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap: exposed communication, measured with CUPTI (NCCLWATCH_OVERLAP=1;
 * docs/plugin.md, "Exposed communication").
 *
 * Every period the publisher thread opens a window: it subscribes to CUPTI
 * (which fails when another tool, such as PyTorch's profiler, holds it),
 * registers buffer callbacks and enables concurrent-kernel activity. When
 * the window is over it disables the activity, flushes (CUPTI hands every
 * buffer back through the completion callback), unsubscribes, and runs the
 * interval arithmetic (overlap_math.c) over the kernels recorded.
 *
 * Threads: everything here runs on the publisher thread with nwp_g.lock
 * held, except the two buffer callbacks, which CUPTI may call from its own
 * thread; they share only the buffer pool and the interval array, under
 * pool_lock. NCCL's event paths never come here. All memory is allocated
 * once, at the first window. Any failure turns overlap off (one log line)
 * and leaves the rest of the plugin running.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/cupti_abi.h"
#include "plugin/nwp.h"
#include "plugin/overlap_math.h"

#define SEC 1000000000ull
#define NBUF 8                        /* CUPTI activity buffers in the pool */
#define BUF_BYTES (1u << 20)          /* 1 MiB each: about 5,000 kernel records */
#define MAX_IV (1u << 18)             /* kernels kept per window (6 MiB) */
#define BUDGET_SHARE 0.01             /* a window may cost 1% of the period in CPU time */
#define DRAIN_MAX_NS (2 * SEC)        /* longest wait for a window's last records (or a quarter of the period) */

/* CUPTI's entry points, resolved by name (never defined under CUPTI's own names). */
static nwc_subscribe_fn pfn_subscribe;
static nwc_unsubscribe_fn pfn_unsubscribe;
static nwc_register_fn pfn_register;
static nwc_kind_fn pfn_enable, pfn_disable;
static nwc_flush_fn pfn_flush;
static nwc_next_fn pfn_next;
static nwc_timestamp_fn pfn_timestamp;
static nwc_errstr_fn pfn_errstr;

/* Shared with CUPTI's callbacks, under pool_lock. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *bufs;                 /* NBUF * BUF_BYTES, 8-aligned */
static uint8_t *free_bufs[NBUF];
static int nfree;
static struct nwo_iv *iv;             /* MAX_IV entries */
static size_t niv;
static uint64_t lost;                 /* records dropped: no free buffer or no room */
static uint64_t cb_cost_ns;           /* CPU time spent in the callbacks this window */

/* Publisher state. */
static struct {
	int want;                         /* NCCLWATCH_OVERLAP=1 */
	uint64_t period_ns, window_ns;
	char lib[400];                    /* NCCLWATCH_CUPTI_LIB, "" when unset */
	void *dl;                         /* CUPTI once opened */
	char dl_path[400];
	int stopped;
	enum {
		OV_IDLE,                  /* between windows */
		OV_RECORDING,             /* the window's length is running */
		OV_EXTENDING,             /* length measured; recording goes on for the GPU's lag */
		OV_DRAINING,              /* recording stopped; waiting for the window's kernels' records */
	} phase;
	void *sub;                        /* CUPTI subscriber while in a window */
	uint64_t drain_until;             /* when a drain gives up waiting */
	uint64_t end_gpu;                 /* the window's end on the GPU clock */
	uint64_t next_mono;               /* when the next window opens */
	uint64_t end_mono;                /* when the window's length is reached (then, extending: when recording stops) */
	uint64_t mid_gpu;                 /* the GPU clock when the window's length was reached */
	uint64_t start_rt, start_gpu;
	uint64_t cost_ns;                 /* publisher CPU time for the open window */
	struct nws_overlap pub;           /* what the headers show */
} ov;

/* Parse a duration in seconds ("60", "0.5") from name into *ns; -1 with err when out of [lo, hi] s. */
static int env_seconds(const char *name, double def, double lo, double hi, uint64_t *ns, char *err, size_t errlen)
{
	const char *s = getenv(name);
	double v = def;
	if (s && *s) {
		char *end;
		errno = 0;
		v = strtod(s, &end);
		if (errno || end == s || *end || !(v >= lo && v <= hi)) {
			snprintf(err, errlen, "%s='%s' is not a number of seconds in [%g, %g]", name, s, lo, hi);
			return -1;
		}
	}
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

/*
 * Read NCCLWATCH_OVERLAP (0 or 1), NCCLWATCH_OVERLAP_PERIOD_S (default 60),
 * NCCLWATCH_OVERLAP_WINDOW_S (default 2, under half the period) and
 * NCCLWATCH_CUPTI_LIB; -1 with err naming a bad value.
 */
int nwp_overlap_config(char *err, size_t errlen)
{
	memset(&ov, 0, sizeof(ov));
	const char *on = getenv("NCCLWATCH_OVERLAP");
	if (on && *on && strcmp(on, "0") && strcmp(on, "1")) {
		snprintf(err, errlen, "NCCLWATCH_OVERLAP='%s' is not 0 or 1", on);
		return -1;
	}
	ov.want = on && !strcmp(on, "1");
	if (env_seconds("NCCLWATCH_OVERLAP_PERIOD_S", 60, 0.1, 86400, &ov.period_ns, err, errlen) ||
	    env_seconds("NCCLWATCH_OVERLAP_WINDOW_S", 2, 0.01, 3600, &ov.window_ns, err, errlen))
		return -1;
	if (ov.window_ns * 2 > ov.period_ns) {
		snprintf(err, errlen, "NCCLWATCH_OVERLAP_WINDOW_S is more than half of NCCLWATCH_OVERLAP_PERIOD_S: "
		         "shorten the window or lengthen the period");
		return -1;
	}
	const char *lib = getenv("NCCLWATCH_CUPTI_LIB");
	if (lib && strlen(lib) >= sizeof(ov.lib)) {
		snprintf(err, errlen, "NCCLWATCH_CUPTI_LIB is too long");
		return -1;
	}
	snprintf(ov.lib, sizeof(ov.lib), "%s", lib ? lib : "");
	ov.pub.state = ov.want ? NWS_OVL_ON : NWS_OVL_OFF;
	ov.pub.period_ns = ov.period_ns;
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* Turn overlap off for good: the reason in the headers and one WARN line through NCCL's logger. */
static void stop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stop(const char *fmt, ...)
{
	if (ov.stopped)
		return;
	ov.stopped = 1;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ov.pub.reason, sizeof(ov.pub.reason), "%s", msg); /* the file keeps its start */
	ov.pub.state = NWS_OVL_STOPPED;
	nwp_log(NWP_LOG_WARN, "ncclwatch: exposed communication off: %s", msg);
}

static const char *errstr(nwc_result r)
{
	const char *s = NULL;
	if (pfn_errstr && pfn_errstr(r, &s) == NWC_SUCCESS && s)
		return s;
	return "CUPTI error";
}

/* --- CUPTI's buffer callbacks (any thread) --- */

static void buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint64_t t0 = thread_cpu_ns();
	pthread_mutex_lock(&pool_lock);
	*buffer = nfree ? free_bufs[--nfree] : NULL;
	*size = *buffer ? BUF_BYTES : 0;
	*max_records = 0;
	if (!*buffer)
		lost++;
	cb_cost_ns += thread_cpu_ns() - t0;
	pthread_mutex_unlock(&pool_lock);
}

/* One kernel record into the interval array (caller holds pool_lock). */
static void take_kernel(const uint8_t *rec)
{
	uint32_t kind;
	memcpy(&kind, rec, sizeof(kind));
	if (kind != NWC_KIND_CONCURRENT_KERNEL && kind != NWC_KIND_KERNEL)
		return;
	if (niv >= MAX_IV) {
		lost++;
		return;
	}
	struct nwo_iv *v = &iv[niv++];
	const char *name;
	memcpy(&v->start, rec + NWC_OFF_START, sizeof(v->start));
	memcpy(&v->end, rec + NWC_OFF_END, sizeof(v->end));
	if (!v->start || v->end < v->start) { /* never ran while recorded (no timestamps): not measurable */
		niv--;
		return;
	}
	memcpy(&name, rec + NWC_OFF_NAME, sizeof(name));
	v->is_nccl = (uint32_t)nwo_is_nccl_kernel(name);
	v->_pad = 0;
}

static void buf_complete(void *ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid)
{
	(void)ctx;
	(void)stream_id;
	(void)size;
	uint64_t t0 = thread_cpu_ns();
	pthread_mutex_lock(&pool_lock);
	int ours = buffer && bufs && buffer >= bufs && buffer < bufs + (size_t)NBUF * BUF_BYTES &&
	           (size_t)(buffer - bufs) % BUF_BYTES == 0;
	if (ours && valid <= BUF_BYTES) {
		void *rec = NULL;
		while (pfn_next(buffer, valid, &rec) == NWC_SUCCESS && rec)
			take_kernel(rec);
	}
	if (ours && nfree < NBUF)
		free_bufs[nfree++] = buffer;
	cb_cost_ns += thread_cpu_ns() - t0;
	pthread_mutex_unlock(&pool_lock);
}

static void no_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata)
{
	(void)userdata;
	(void)domain;
	(void)cbid;
	(void)cbdata;
}

/* --- loading CUPTI --- */

/* Try to open dir/name (or name alone on the loader's path when dir is NULL); 0 when opened. */
static int try_open(const char *dir, const char *name)
{
	char path[sizeof(ov.dl_path)];
	if (dir)
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	else
		snprintf(path, sizeof(path), "%s", name);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	ov.dl = h;
	snprintf(ov.dl_path, sizeof(ov.dl_path), "%s", path);
	return 0;
}

/*
 * CUPTI next to the NCCL or CUDA runtime this process loaded (from
 * /proc/self/maps): the same directory, then the wheels' layouts
 * (site-packages/nvidia/nccl/lib -> nvidia/cuda_cupti/lib, nvidia/cu13/lib).
 */
static int open_beside_loaded(void)
{
	static const char *const rel[] = { ".", "../../cuda_cupti/lib", "../../cu13/lib", "../../cu12/lib" };
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12" };
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[1024], seen[2][512] = { "", "" };
	int nseen = 0, rc = -1;
	while (rc != 0 && nseen < 2 && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		char *slash = p ? strrchr(p, '/') : NULL;
		if (!p || (!strstr(slash, "/libnccl.so") && !strstr(slash, "/libcudart.so")))
			continue;
		*slash = '\0';
		if ((nseen && !strcmp(seen[0], p)) || strlen(p) >= sizeof(seen[0]))
			continue;
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", p);
		for (size_t i = 0; rc != 0 && i < sizeof(rel) / sizeof(rel[0]); i++) {
			char dir[600];
			snprintf(dir, sizeof(dir), "%s/%s", p, rel[i]);
			for (size_t j = 0; rc != 0 && j < sizeof(names) / sizeof(names[0]); j++)
				rc = try_open(dir, names[j]);
		}
	}
	fclose(f);
	return rc;
}

/* Open CUPTI in the documented order; 0, or -1 after stop(). */
static int open_cupti(void)
{
	if (ov.lib[0]) {
		if (try_open(NULL, ov.lib) != 0) {
			stop("cannot open NCCLWATCH_CUPTI_LIB='%s': %s", ov.lib, dlerror());
			return -1;
		}
		return 0;
	}
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (try_open(NULL, names[i]) == 0)
			return 0;
	if (open_beside_loaded() == 0 || try_open("/usr/local/cuda/extras/CUPTI/lib64", "libcupti.so") == 0 ||
	    try_open("/usr/local/cuda/lib64", "libcupti.so") == 0)
		return 0;
	stop("no CUPTI found (libcupti.so.13/.12, beside NCCL, CUDA toolkit): set NCCLWATCH_CUPTI_LIB=path");
	return -1;
}

/* Open CUPTI, resolve the entry points, allocate the pool; 0, or -1 after stop(). */
static int load(void)
{
	if (open_cupti() != 0)
		return -1;
	struct { void **pfn; const char *name; } syms[] = {
		{ (void **)&pfn_subscribe, "cuptiSubscribe" }, { (void **)&pfn_unsubscribe, "cuptiUnsubscribe" },
		{ (void **)&pfn_register, "cuptiActivityRegisterCallbacks" },
		{ (void **)&pfn_enable, "cuptiActivityEnable" }, { (void **)&pfn_disable, "cuptiActivityDisable" },
		{ (void **)&pfn_flush, "cuptiActivityFlushAll" }, { (void **)&pfn_next, "cuptiActivityGetNextRecord" },
		{ (void **)&pfn_timestamp, "cuptiGetTimestamp" }, { (void **)&pfn_errstr, "cuptiGetResultString" },
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].pfn = dlsym(ov.dl, syms[i].name);
		if (!*syms[i].pfn) {
			stop("'%s' lacks %s: use the CUPTI of your CUDA (NCCLWATCH_CUPTI_LIB)", ov.dl_path, syms[i].name);
			return -1;
		}
	}
	if (posix_memalign((void **)&bufs, NWC_RECORD_ALIGN, (size_t)NBUF * BUF_BYTES) != 0 ||
	    !(iv = malloc(MAX_IV * sizeof(*iv)))) {
		free(bufs);
		bufs = NULL;
		stop("cannot allocate %u MiB for kernel records", (unsigned)(NBUF * BUF_BYTES >> 20) + 6);
		return -1;
	}
	for (int i = 0; i < NBUF; i++)
		free_bufs[i] = bufs + (size_t)i * BUF_BYTES;
	nfree = NBUF;
	nwp_log(NWP_LOG_INFO, "ncclwatch: exposed communication from CUPTI %s, a %.3g s window every %.3g s", ov.dl_path,
	        (double)ov.window_ns / 1e9, (double)ov.period_ns / 1e9);
	return 0;
}

/* --- windows --- */

/* Subscribe, register the buffers, start recording kernels; -1 after stop(). */
static int window_open(uint64_t now_mono)
{
	nwc_result r = pfn_subscribe(&ov.sub, no_callback, NULL);
	if (r == NWC_ERROR_MULTIPLE_SUBSCRIBERS) {
		stop("CUPTI is in use by another tool (a profiler such as torch.profiler or Nsight): staying off");
		return -1;
	}
	if (r != NWC_SUCCESS) {
		stop("cuptiSubscribe failed: %s", errstr(r));
		return -1;
	}
	pthread_mutex_lock(&pool_lock);
	niv = 0;
	lost = 0;
	cb_cost_ns = 0;
	pthread_mutex_unlock(&pool_lock);
	if ((r = pfn_register(buf_request, buf_complete)) != NWC_SUCCESS ||
	    (r = pfn_timestamp(&ov.start_gpu)) != NWC_SUCCESS ||
	    (r = pfn_enable(NWC_KIND_CONCURRENT_KERNEL)) != NWC_SUCCESS) {
		pfn_unsubscribe(ov.sub);
		stop("CUPTI kernel activity cannot be enabled (%s): another tool may hold CUPTI", errstr(r));
		return -1;
	}
	ov.phase = OV_RECORDING;
	ov.start_rt = nwp_realtime_ns();
	ov.end_mono = now_mono + ov.window_ns;
	ov.next_mono = now_mono + ov.period_ns;
	return 0;
}

/* Figures of a finished window into the published part. */
static void window_result(const struct nwo_result *r, uint64_t kernels)
{
	struct nws_overlap *p = &ov.pub;
	p->win_start_ns = ov.start_rt;
	p->win_end_ns = nwp_realtime_ns();
	p->wall_ns = r->wall_ns;
	p->compute_ns = r->compute_ns;
	p->nccl_ns = r->nccl_ns;
	p->exposed_ns = r->exposed_ns;
	p->kernels = kernels;
	p->windows++;
	if (r->nccl_ns && (double)r->exposed_ns > NWS_OVL_ALONE_SHARE * (double)r->nccl_ns)
		p->alone_windows++;
	else if (r->nccl_ns)
		p->alone_windows = 0;
}

/*
 * Stop recording at the window's end. Kernels launched in the window may
 * still run (an NCCL kernel waiting for its peers): CUPTI holds back a
 * buffer with a record not yet complete, so the buffers are collected
 * over the next ticks (window_drain) rather than now. -1 after stop().
 */
static int window_end(uint64_t now_mono)
{
	ov.phase = OV_IDLE;
	nwc_result r = pfn_timestamp(&ov.end_gpu);
	nwc_result rd = pfn_disable(NWC_KIND_CONCURRENT_KERNEL);
	if (r != NWC_SUCCESS || rd != NWC_SUCCESS) {
		pfn_unsubscribe(ov.sub);
		stop("CUPTI failed at the end of a window (%s)", errstr(r ? r : rd));
		return -1;
	}
	uint64_t wait = ov.period_ns / 4 < DRAIN_MAX_NS ? ov.period_ns / 4 : DRAIN_MAX_NS;
	ov.phase = OV_DRAINING;
	ov.drain_until = now_mono + wait;
	return 0;
}

/*
 * The window on the GPU's clock. CUPTI records the kernels *launched*
 * while recording is on, and a job's CPU runs ahead of its GPU (by a
 * second or more when it queues many collectives): those kernels run
 * later, and a kernel that has not run when recording stops gets no
 * timestamps at all. So recording goes on past the window's length
 * (OV_EXTENDING, half a window more) and the window measured is that
 * length of GPU time from the first kernel recorded, [lo, lo + length],
 * cut at the moment recording stopped when the lag was longer still.
 * Without kernels it is the recording's own first length. Caller holds
 * pool_lock.
 */
static void gpu_window(uint64_t *lo, uint64_t *hi)
{
	uint64_t len = ov.mid_gpu > ov.start_gpu ? ov.mid_gpu - ov.start_gpu : 0;
	*lo = ov.start_gpu;
	*hi = ov.start_gpu + len;
	if (!niv)
		return;
	uint64_t first = UINT64_MAX;
	for (size_t i = 0; i < niv; i++)
		if (iv[i].start < first)
			first = iv[i].start;
	*lo = first;
	*hi = first + len < ov.end_gpu || first >= ov.end_gpu ? first + len : ov.end_gpu;
}

/*
 * Ask CUPTI for the window's buffers; once every buffer is back (or the
 * drain's time is up: the ones still out count as lost), compute the
 * window. Returns 1 when the window is done, 0 to try again next tick,
 * -1 after stop(). *cb gets the CPU time the callbacks took.
 */
static int window_drain(uint64_t now_mono, uint64_t *cb)
{
	nwc_result rf = pfn_flush(NWC_FLUSH_FORCED);
	if (rf != NWC_SUCCESS) {
		ov.phase = OV_IDLE;
		pfn_unsubscribe(ov.sub);
		stop("CUPTI failed to flush a window's records (%s)", errstr(rf));
		return -1;
	}
	pthread_mutex_lock(&pool_lock);
	int out = NBUF - nfree;
	pthread_mutex_unlock(&pool_lock);
	if (out > 0 && now_mono < ov.drain_until)
		return 0;
	ov.phase = OV_IDLE;
	pfn_unsubscribe(ov.sub);
	struct nwo_result res;
	pthread_mutex_lock(&pool_lock);
	uint64_t kernels = niv;
	uint64_t lost_all = lost + (uint64_t)out;
	ov.pub.dropped = lost_all > UINT32_MAX ? UINT32_MAX : (uint32_t)lost_all;
	uint64_t lo, hi;
	gpu_window(&lo, &hi);
	nwo_compute(iv, niv, lo, hi, &res);
	*cb = cb_cost_ns;
	pthread_mutex_unlock(&pool_lock);
	window_result(&res, kernels);
	return 1;
}

/*
 * Open or close the window as the clock says (publisher thread, nwp_g.lock
 * held, plugin enabled). The first call loads CUPTI; its CPU time is not
 * counted against the budget, nor is the first window's (CUPTI starts up
 * in it); every later window's own is.
 */
void nwp_overlap_tick(uint64_t now_mono)
{
	if (!ov.want || ov.stopped)
		return;
	if (!ov.dl) {
		if (load() != 0)
			return;
		ov.next_mono = now_mono;
	}
	if (ov.phase == OV_IDLE && now_mono < ov.next_mono)
		return;
	if ((ov.phase == OV_RECORDING || ov.phase == OV_EXTENDING) && now_mono < ov.end_mono)
		return;
	uint64_t t0 = thread_cpu_ns();
	if (ov.phase == OV_RECORDING) {
		/* the window's length is reached on the CPU: note it on the GPU clock, record on for the GPU's lag */
		if (pfn_timestamp(&ov.mid_gpu) != NWC_SUCCESS)
			ov.mid_gpu = ov.start_gpu + ov.window_ns;
		ov.phase = OV_EXTENDING;
		ov.end_mono = now_mono + ov.window_ns / 2;
		ov.cost_ns += thread_cpu_ns() - t0;
		return;
	}
	if (ov.phase == OV_IDLE) {
		ov.cost_ns = 0;
		if (window_open(now_mono) == 0)
			ov.cost_ns = thread_cpu_ns() - t0;
		return;
	}
	if (ov.phase == OV_EXTENDING) {
		int rc = window_end(now_mono);
		ov.cost_ns += thread_cpu_ns() - t0;
		if (rc != 0)
			return;
		t0 = thread_cpu_ns();
	}
	uint64_t cb = 0;
	int done = window_drain(now_mono, &cb);
	ov.cost_ns += thread_cpu_ns() - t0;
	if (done != 1)
		return;
	ov.pub.cost_ns = ov.cost_ns + cb;
	double budget = BUDGET_SHARE * (double)ov.period_ns;
	/* the first window also pays for CUPTI's own start-up (its first subscribe and enable): reported, not held against the budget */
	if (!ov.stopped && ov.pub.windows > 1 && (double)ov.pub.cost_ns > budget)
		stop("a window cost %.1f ms of CPU, over the budget of %.1f ms (1%% of the period)",
		     (double)ov.pub.cost_ns / 1e6, budget / 1e6);
}

/* The publisher is stopping: end an open window without using it (publisher thread). */
void nwp_overlap_shutdown(void)
{
	if (ov.phase == OV_IDLE)
		return;
	if (ov.phase != OV_DRAINING)
		pfn_disable(NWC_KIND_CONCURRENT_KERNEL);
	ov.phase = OV_IDLE;
	pfn_flush(NWC_FLUSH_FORCED);
	pfn_unsubscribe(ov.sub);
}

void nwp_overlap_fill(struct nws_overlap *o)
{
	*o = ov.pub;
}

int nwp_overlap_latest(double *exposed_share_of_wall, double *exposed_share_of_nccl)
{
	const struct nws_overlap *p = &ov.pub;
	if (!p->windows || !p->wall_ns)
		return 0;
	*exposed_share_of_wall = (double)p->exposed_ns / (double)p->wall_ns;
	*exposed_share_of_nccl = p->nccl_ns ? (double)p->exposed_ns / (double)p->nccl_ns : 0.0;
	return 1;
}
