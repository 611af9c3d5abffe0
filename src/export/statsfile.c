/*
 * statsfile: read, validate and snapshot the plugin's per-rank stats files
 * (src/plugin/nwstats.h) without ever blocking their writer.
 */
#include "export/statsfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define SF_RETRIES 2000          /* seqlock attempts per part before giving up */
#define SF_MAX_RING (1u << 20)   /* sanity bound on ring_len */
#define SF_REMOTE_FRESH_NS (30ull * 1000000000ull)

const char *nw_sf_default_dir(char *buf, size_t len)
{
	const char *e = getenv("NCCLWATCH_DIR");
	if (e && *e)
		snprintf(buf, len, "%s", e);
	else
		snprintf(buf, len, "/dev/shm/ncclwatch-%u", (unsigned)getuid());
	return buf;
}

const char *nw_sf_live_name(enum nw_sf_live l)
{
	switch (l) {
	case NW_SF_LIVE: return "live";
	case NW_SF_FINISHED: return "finished";
	case NW_SF_DISABLED: return "disabled";
	case NW_SF_STALE: return "stale";
	}
	return "unknown";
}

/* Start time (field 22 of /proc/<pid>/stat) of pid; 0 when unknown. */
static uint64_t proc_start_time(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* p is at the end of field 2; each step moves to the space before the next field */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p + 1, &end, 10);
	if (errno || end == p + 1)
		return 0;
	return v;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Decide whether the writer of hdr is still there. */
static enum nw_sf_live judge_live(const struct nws_header *h)
{
	if (h->state == NWS_STATE_FINISHED)
		return NW_SF_FINISHED;
	if (h->state == NWS_STATE_DISABLED)
		return NW_SF_DISABLED;
	char host[256];
	nw_hostname(host, sizeof(host));
	if (strncmp(host, h->hostname, sizeof(h->hostname) - 1) != 0) {
		/* another host (or a renamed container): only the heartbeat tells */
		uint64_t now = realtime_ns();
		return (h->updated_ns && now - h->updated_ns < SF_REMOTE_FRESH_NS) ? NW_SF_LIVE : NW_SF_STALE;
	}
	if (h->pid <= 0)
		return NW_SF_STALE;
	if (kill(h->pid, 0) != 0 && errno != EPERM)
		return NW_SF_STALE;
	uint64_t st = proc_start_time(h->pid);
	if (st == 0 || st != h->proc_start)
		return NW_SF_STALE;
	return NW_SF_LIVE;
}

/* Copy n bytes under the seqlock gen at the start of src; -1 when the writer never settled. */
static int seq_copy(void *dst, const void *src, size_t n)
{
	const uint64_t *gen = (const uint64_t *)src;
	for (int i = 0; i < SF_RETRIES; i++) {
		uint64_t g = nws_read_begin(gen);
		if (g & 1)
			continue;
		memcpy(dst, src, n);
		if (!nws_read_retry(gen, g))
			return 0;
	}
	return -1;
}

/* Check every size and offset in h against the file size; -1 with the reason. */
static int validate(const struct nws_header *h, uint64_t fsize, char *err, size_t errlen)
{
	if (h->magic != NWS_MAGIC)
		return nw_seterr(err, errlen, "not a stats file (bad magic), or still being created");
	if (h->version != NWS_VERSION)
		return nw_seterr(err, errlen, "stats layout version %u, this ncclwatch reads %u: use the ncclwatch that matches the plugin",
		                 h->version, NWS_VERSION);
	if (h->header_size != sizeof(struct nws_header) || h->nops != NWS_NOPS ||
	    h->nbuckets != NWS_NBUCKETS || h->nhist != NWS_NHIST || h->nsrc != NWS_NSRC ||
	    h->record_size != sizeof(struct nws_record) || h->opent_size != sizeof(struct nws_opent))
		return nw_seterr(err, errlen, "stats layout sizes differ from version %u's", NWS_VERSION);
	if (h->file_size > fsize)
		return nw_seterr(err, errlen, "file is %llu bytes, header says %llu (truncated)",
		                 (unsigned long long)fsize, (unsigned long long)h->file_size);
	if (h->ring_len > SF_MAX_RING)
		return nw_seterr(err, errlen, "ring length %u is out of range", h->ring_len);
	uint64_t rec_bytes = (uint64_t)NWS_NOPS * NWS_NBUCKETS * sizeof(struct nws_record);
	uint64_t ring_bytes = (uint64_t)h->ring_len * sizeof(struct nws_opent);
	if (h->off_records % 8 || h->off_ring % 8 || h->off_records < sizeof(struct nws_header) ||
	    h->off_ring < sizeof(struct nws_header) || h->off_records > h->file_size ||
	    h->file_size - h->off_records < rec_bytes || h->off_ring > h->file_size ||
	    h->file_size - h->off_ring < ring_bytes)
		return nw_seterr(err, errlen, "offsets point outside the file");
	return 0;
}

static int cmp_opent(const void *a, const void *b)
{
	const struct nws_opent *x = a, *y = b;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Open path and map all of it read-only, once it is known to be a regular
 * file large enough for a header. -1 with err; *fd and *map are set to
 * what the caller must close and unmap either way (-1 and MAP_FAILED when none).
 */
static int map_file(const char *path, int *fd, void **map, size_t *len, char *err, size_t errlen)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (*fd < 0)
		return nw_seterr(err, errlen, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode))
		return nw_seterr(err, errlen, "not a regular file");
	if ((uint64_t)st.st_size < sizeof(struct nws_header))
		return nw_seterr(err, errlen, "too small for a stats file (%lld bytes)", (long long)st.st_size);
	*len = (size_t)st.st_size;
	*map = mmap(NULL, *len, PROT_READ, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED)
		return nw_seterr(err, errlen, "cannot map: %s", strerror(errno));
	return 0;
}

/* A validated copy of the header of the mapped file (fsize bytes) into r->hdr; -1 with err. */
static int copy_header(struct nw_sf_rank *r, const void *map, uint64_t fsize, char *err, size_t errlen)
{
	const struct nws_header *h = map;
	/* identity part first (written once before magic) */
	memcpy(&r->hdr, h, offsetof(struct nws_header, live_gen));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (validate(&r->hdr, fsize, err, errlen) != 0)
		return -1;
	if (seq_copy(&r->hdr.live_gen, &h->live_gen,
	             sizeof(struct nws_header) - offsetof(struct nws_header, live_gen)) != 0)
		return nw_seterr(err, errlen, "writer kept the header busy; try again");
	r->hdr.hostname[sizeof(r->hdr.hostname) - 1] = '\0';
	r->hdr.comm_name[sizeof(r->hdr.comm_name) - 1] = '\0';
	r->hdr.plugin_version[sizeof(r->hdr.plugin_version) - 1] = '\0';
	r->hdr.last_dump[sizeof(r->hdr.last_dump) - 1] = '\0';
	r->hdr.disabled_reason[sizeof(r->hdr.disabled_reason) - 1] = '\0';
	return 0;
}

/* Consistent copies of every (op, bucket) record into r->rec; -1 with err when one stays busy. */
static int copy_records(struct nw_sf_rank *r, const void *map, char *err, size_t errlen)
{
	const struct nws_record *rec = (const struct nws_record *)((const char *)map + r->hdr.off_records);
	for (unsigned o = 0; o < NWS_NOPS; o++)
		for (unsigned b = 0; b < NWS_NBUCKETS; b++)
			if (seq_copy(&r->rec[o][b], &rec[o * NWS_NBUCKETS + b], sizeof(struct nws_record)) != 0)
				return nw_seterr(err, errlen, "writer kept a record busy; try again");
	return 0;
}

/* The ring's settled, used entries into r->ring (allocated), oldest first. */
static void copy_ring(struct nw_sf_rank *r, const void *map)
{
	const struct nws_opent *ring = (const struct nws_opent *)((const char *)map + r->hdr.off_ring);
	if (!r->hdr.ring_len)
		return;
	r->ring = nw_calloc(r->hdr.ring_len, sizeof(struct nws_opent));
	for (uint32_t i = 0; i < r->hdr.ring_len; i++) {
		struct nws_opent e;
		if (seq_copy(&e, &ring[i], sizeof(e)) != 0 || e.idx == 0)
			continue; /* busy or empty: leave it out */
		e.algo[sizeof(e.algo) - 1] = '\0';
		e.proto[sizeof(e.proto) - 1] = '\0';
		r->ring[r->nring++] = e;
	}
	qsort(r->ring, r->nring, sizeof(struct nws_opent), cmp_opent);
}

int nw_sf_read(const char *path, struct nw_sf_rank *r, char *err, size_t errlen)
{
	int ret = -1, fd = -1;
	void *map = MAP_FAILED;
	size_t maplen = 0;
	memset(r, 0, sizeof(*r));
	nw_strlcpy(r->path, path, sizeof(r->path));
	if (map_file(path, &fd, &map, &maplen, err, errlen) == 0 &&
	    copy_header(r, map, (uint64_t)maplen, err, errlen) == 0 && copy_records(r, map, err, errlen) == 0) {
		copy_ring(r, map);
		r->live = judge_live(&r->hdr);
		ret = 0;
	}
	if (map != MAP_FAILED)
		munmap(map, maplen);
	if (fd >= 0)
		close(fd);
	if (ret != 0)
		nw_sf_rank_release(r);
	return ret;
}

void nw_sf_rank_release(struct nw_sf_rank *r)
{
	free(r->ring);
	r->ring = NULL;
	r->nring = 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct nw_sf_rank *x = a, *y = b;
	if (x->hdr.comm_hash != y->hdr.comm_hash)
		return x->hdr.comm_hash < y->hdr.comm_hash ? -1 : 1;
	if (x->hdr.rank != y->hdr.rank)
		return x->hdr.rank < y->hdr.rank ? -1 : 1;
	if (x->live != y->live)
		return (int)x->live - (int)y->live;
	return strcmp(x->path, y->path);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n > m && strcmp(s + n - m, suf) == 0;
}

int nw_sf_load(const char *dir, struct nw_sf_set *set, char *err, size_t errlen)
{
	memset(set, 0, sizeof(*set));
	nw_strlcpy(set->dir, dir, sizeof(set->dir));
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return nw_seterr(err, errlen, "no stats directory '%s': is a job running with "
			                 "NCCL_PROFILER_PLUGIN=ncclwatch (or set NCCLWATCH_DIR)?", dir);
		return nw_seterr(err, errlen, "cannot read stats directory '%s': %s", dir, strerror(errno));
	}
	size_t cap = 0, capbad = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!has_suffix(de->d_name, ".nws"))
			continue;
		char path[512];
		int pn = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (pn < 0 || (size_t)pn >= sizeof(path))
			continue;
		if (set->n == cap) {
			cap = cap ? cap * 2 : 8;
			set->ranks = nw_realloc(set->ranks, cap * sizeof(*set->ranks));
		}
		char why[160];
		if (nw_sf_read(path, &set->ranks[set->n], why, sizeof(why)) == 0) {
			set->n++;
			continue;
		}
		if (set->nbad == capbad) {
			capbad = capbad ? capbad * 2 : 4;
			set->bad = nw_realloc(set->bad, capbad * sizeof(*set->bad));
		}
		nw_strlcpy(set->bad[set->nbad].path, path, sizeof(set->bad[set->nbad].path));
		nw_strlcpy(set->bad[set->nbad].why, why, sizeof(set->bad[set->nbad].why));
		set->nbad++;
	}
	closedir(d);
	if (set->n > 1)
		qsort(set->ranks, set->n, sizeof(*set->ranks), cmp_rank);
	return 0;
}

void nw_sf_set_release(struct nw_sf_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		nw_sf_rank_release(&set->ranks[i]);
	free(set->ranks);
	free(set->bad);
	memset(set, 0, sizeof(*set));
}

/* Value (us) at quantile q of a histogram; max_us caps the open last bin. */
static double hist_quantile(const uint64_t *hist, uint64_t total, double q, double max_us)
{
	if (total == 0)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total);
	if (want >= total)
		want = total - 1;
	uint64_t acc = 0;
	for (unsigned i = 0; i < NWS_NHIST; i++) {
		acc += hist[i];
		if (acc > want) {
			uint64_t hi = nws_bin_hi_us(i);
			double v = hi ? (double)hi : max_us;
			return v > max_us && max_us > 0 ? max_us : v;
		}
	}
	return max_us;
}

void nw_sf_aggregate(const struct nw_sf_rank *r, int op, int bucket, struct nw_sf_agg *out)
{
	memset(out, 0, sizeof(*out));
	out->src = -1;
	if (op < 0 || op >= NWS_NOPS || bucket >= NWS_NBUCKETS)
		return;
	int b0 = bucket < 0 ? 0 : bucket, b1 = bucket < 0 ? NWS_NBUCKETS - 1 : bucket;
	struct nws_timing t[NWS_NSRC];
	memset(t, 0, sizeof(t));
	for (int b = b0; b <= b1; b++) {
		const struct nws_record *rec = &r->rec[op][b];
		out->count += rec->count;
		out->bytes += rec->bytes;
		for (int s = 0; s < NWS_NSRC; s++) {
			const struct nws_timing *x = &rec->t[s];
			if (!x->count)
				continue;
			if (!t[s].count || x->min_ns < t[s].min_ns)
				t[s].min_ns = x->min_ns;
			if (x->max_ns > t[s].max_ns)
				t[s].max_ns = x->max_ns;
			t[s].count += x->count;
			t[s].bytes += x->bytes;
			t[s].sum_ns += x->sum_ns;
			for (int i = 0; i < NWS_NHIST; i++)
				t[s].hist[i] += x->hist[i];
		}
	}
	int src = t[NWS_SRC_KERNEL].count ? NWS_SRC_KERNEL : t[NWS_SRC_PROXY].count ? NWS_SRC_PROXY : -1;
	if (src < 0)
		return;
	const struct nws_timing *x = &t[src];
	out->src = src;
	out->timed = x->count;
	out->timed_bytes = x->bytes;
	out->max_us = (double)x->max_ns / 1e3;
	out->mean_us = (double)x->sum_ns / 1e3 / (double)x->count;
	out->p50_us = hist_quantile(x->hist, x->count, 0.50, out->max_us);
	out->p99_us = hist_quantile(x->hist, x->count, 0.99, out->max_us);
	if (x->sum_ns) {
		out->algbw_gbs = (double)x->bytes / (double)x->sum_ns; /* bytes/ns == GB/s */
		out->busbw_gbs = out->algbw_gbs * nws_busbw_factor((unsigned)op, r->hdr.nranks);
	}
	out->valid = 1;
}

double nw_sf_busy_exact(const struct nw_sf_rank *r)
{
	if (!r->hdr.busy_window_ns)
		return -1;
	double f = (double)r->hdr.busy_kernel_ns / (double)r->hdr.busy_window_ns;
	return f > 1 ? 1 : f;
}

double nw_sf_busy_est(const struct nw_sf_rank *r)
{
	if (!r->hdr.busy_window_ns)
		return -1;
	double f = (double)r->hdr.busy_est_ns / (double)r->hdr.busy_window_ns;
	return f > 1 ? 1 : f;
}

size_t nw_sf_comms(const struct nw_sf_set *set, uint64_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++) {
		uint64_t h = set->ranks[i].hdr.comm_hash;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = set->ranks[j].hdr.comm_hash == h;
		if (seen)
			continue;
		if (n < max)
			out[n] = h;
		n++;
	}
	return n;
}

/* Collective entries of one rank, sorted by (op, seq) for lookup. */
struct seqidx {
	const struct nws_opent **e;
	size_t n;
};

static int cmp_key(const void *a, const void *b)
{
	const struct nws_opent *x = *(const struct nws_opent *const *)a;
	const struct nws_opent *y = *(const struct nws_opent *const *)b;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const struct nws_opent *find_key(const struct seqidx *s, uint16_t op, uint64_t seq)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nws_opent *e = s->e[mid];
		if (e->op == op && e->seq == seq)
			return e;
		if (e->op < op || (e->op == op && e->seq < seq))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_late(const void *a, const void *b)
{
	const struct nw_sf_late *x = a, *y = b;
	if (x->mean_late_us != y->mean_late_us)
		return x->mean_late_us > y->mean_late_us ? -1 : 1;
	return x->rank - y->rank;
}

/* The ranks of one communicator (one file each) and their collectives indexed by (op, seq). */
struct comm_ranks {
	const struct nw_sf_rank **rk; /* point into the set */
	struct seqidx *idx;
	size_t n;
};

/* Collect the ranks of comm_hash (at most nr) from set into cr; free with comm_ranks_release. */
static void comm_ranks_collect(const struct nw_sf_set *set, uint64_t comm_hash, size_t nr, struct comm_ranks *cr)
{
	cr->rk = nw_calloc(nr, sizeof(*cr->rk));
	cr->idx = nw_calloc(nr, sizeof(*cr->idx));
	size_t k = 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct nw_sf_rank *r = &set->ranks[i];
		if (r->hdr.comm_hash != comm_hash)
			continue;
		if (k > 0 && cr->rk[k - 1]->hdr.rank == r->hdr.rank)
			continue; /* duplicate rank (older file): the set is sorted live first */
		cr->rk[k] = r;
		struct seqidx *x = &cr->idx[k];
		x->e = nw_calloc(r->nring ? r->nring : 1, sizeof(*x->e));
		for (size_t j = 0; j < r->nring; j++)
			if (r->ring[j].flags & NWS_OPF_SEQ)
				x->e[x->n++] = &r->ring[j];
		qsort(x->e, x->n, sizeof(*x->e), cmp_key);
		k++;
	}
	cr->n = k;
}

static void comm_ranks_release(struct comm_ranks *cr)
{
	for (size_t i = 0; i < cr->n; i++)
		free(cr->idx[i].e);
	free(cr->idx);
	free(cr->rk);
}

/*
 * Every rank's entry for the collective of e0 (rank 0's) into row[]; 0 when
 * a rank lacks it. *allk says whether every entry has a kernel time.
 */
static int match_row(const struct comm_ranks *cr, const struct nws_opent *e0, const struct nws_opent **row,
                     int *allk)
{
	*allk = 1;
	for (size_t i = 0; i < cr->n; i++) {
		row[i] = i == 0 ? e0 : find_key(&cr->idx[i], e0->op, e0->seq);
		if (!row[i])
			return 0;
		if (row[i]->src != NWS_SRC_KERNEL)
			*allk = 0;
	}
	return 1;
}

/* Add each rank's lateness at one collective (row[], nr ranks) to out[0..max) and sum[]. */
static void add_lateness(const struct nws_opent *const *row, size_t nr, int allk, struct nw_sf_late *out,
                         size_t max, double *sum)
{
	uint64_t first = UINT64_MAX, last = 0;
	size_t lasti = 0;
	for (size_t i = 0; i < nr; i++) {
		uint64_t a = allk ? row[i]->start_ns : row[i]->enq_ns;
		if (a < first)
			first = a;
		if (a >= last) {
			last = a;
			lasti = i;
		}
	}
	for (size_t i = 0; i < nr && i < max; i++) {
		uint64_t a = allk ? row[i]->start_ns : row[i]->enq_ns;
		double late = (double)(a - first) / 1e3;
		sum[i] += late;
		if (late > out[i].max_late_us)
			out[i].max_late_us = late;
		out[i].nseq++;
		if (!allk)
			out[i].kernel_based = 0;
	}
	if (lasti < max && last > first)
		out[lasti].nlast++;
}

/*
 * Lateness of cr's ranks over the newest `window` collectives every rank
 * has (0: all), walking rank 0's ring newest first, into out[0..max)
 * sorted latest first. Returns the entries written; 0 when none was common.
 */
static size_t rank_lateness(const struct comm_ranks *cr, size_t window, struct nw_sf_late *out, size_t max)
{
	double *sum = nw_calloc(cr->n, sizeof(*sum));
	const struct nws_opent **row = nw_calloc(cr->n, sizeof(*row));
	for (size_t i = 0; i < cr->n && i < max; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].rank = cr->rk[i]->hdr.rank;
		out[i].r = cr->rk[i];
		out[i].kernel_based = 1;
	}
	const struct nw_sf_rank *r0 = cr->rk[0];
	size_t used = 0;
	for (size_t j = r0->nring; j-- > 0;) {
		const struct nws_opent *e0 = &r0->ring[j];
		int allk;
		if (!(e0->flags & NWS_OPF_SEQ))
			continue;
		if (window && used >= window)
			break;
		if (!match_row(cr, e0, row, &allk))
			continue;
		add_lateness(row, cr->n, allk, out, max, sum);
		used++;
	}
	size_t written = used == 0 ? 0 : cr->n < max ? cr->n : max;
	for (size_t i = 0; i < written; i++)
		out[i].mean_late_us = sum[i] / (double)out[i].nseq;
	if (written)
		qsort(out, written, sizeof(*out), cmp_late);
	free(sum);
	free(row);
	return written;
}

size_t nw_sf_stragglers(const struct nw_sf_set *set, uint64_t comm_hash, size_t window,
                        struct nw_sf_late *out, size_t max)
{
	size_t nr = 0, written = 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->ranks[i].hdr.comm_hash == comm_hash)
			nr++;
	if (nr < 2 || max == 0)
		return 0;
	struct comm_ranks cr;
	comm_ranks_collect(set, comm_hash, nr, &cr);
	if (cr.n >= 2)
		written = rank_lateness(&cr, window, out, max);
	comm_ranks_release(&cr);
	return written;
}
