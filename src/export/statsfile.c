/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statsfile: read, validate and snapshot the plugin's per-rank stats files
 * (src/plugin/nwstats.h) without ever blocking their writer.
 */
#include "export/statsfile.h"
#include "export/statsfile_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/progress.h"
#include "util/util.h"

#define SF_RETRIES 2000          /* seqlock attempts per part before giving up */
#define SF_FRESH_NS (30ull * 1000000000ull) /* a heartbeat older than this: the writer is gone */

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

/* Start time (field 22 of /proc/<pid>/stat) of pid; 0 when unknown, or when pid is dead and not yet reaped (a zombie). */
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
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
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

uint64_t sf_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Inode of this process's PID namespace; 0 when unknown. */
static uint64_t own_pidns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Was hdr written on this host (same host name)? */
static int same_host(const struct nws_header *h)
{
	char host[256];
	nw_hostname(host, sizeof(host));
	return strncmp(host, h->hostname, sizeof(h->hostname) - 1) == 0;
}

/*
 * Does hdr's pid name its writer from here: same host and same PID
 * namespace (a file that recorded no namespace counts as ours)? Across
 * namespaces (a pod, `unshare --pid`) the number means another process or
 * none, so only the heartbeat tells.
 */
int sf_pid_visible(const struct nws_header *h)
{
	if (!same_host(h))
		return 0;
	uint64_t ns = own_pidns();
	return !h->ident.pidns || !ns || h->ident.pidns == ns;
}

/* Did the writer publish within SF_FRESH_NS? (It publishes every few ms while alive.) */
static int heartbeat_fresh(const struct nws_header *h)
{
	uint64_t now = sf_realtime_ns();
	return h->updated_ns && (now < h->updated_ns || now - h->updated_ns < SF_FRESH_NS);
}

/* Decide whether the writer of hdr is still there: by pid where it is visible, else by heartbeat. */
static enum nw_sf_live judge_live(const struct nws_header *h)
{
	if (h->state == NWS_STATE_FINISHED)
		return NW_SF_FINISHED;
	if (h->state == NWS_STATE_DISABLED)
		return NW_SF_DISABLED;
	if (!sf_pid_visible(h))
		return heartbeat_fresh(h) ? NW_SF_LIVE : NW_SF_STALE;
	if (h->pid <= 0)
		return NW_SF_STALE;
	if (kill(h->pid, 0) != 0 && errno != EPERM)
		return NW_SF_STALE;
	uint64_t st = proc_start_time(h->pid);
	if (st == 0 || st != h->proc_start)
		return NW_SF_STALE;
	return NW_SF_LIVE;
}

/*
 * Is the writer of hdr a process of this host that is gone (or whose pid
 * was reused)? Another host's file: never (only that host can tell); one
 * from another PID namespace of this host: when its heartbeat stopped.
 */
int sf_writer_gone(const struct nws_header *h)
{
	if (!same_host(h))
		return 0;
	if (!sf_pid_visible(h))
		return !heartbeat_fresh(h);
	if (h->pid <= 0 || (kill(h->pid, 0) != 0 && errno == ESRCH))
		return 1;
	uint64_t st = proc_start_time(h->pid);
	return st != 0 && st != h->proc_start;
}

/*
 * Read exactly n bytes at off; 0, or -1 when the file is shorter than that
 * (it was truncated under us) or the read failed.
 */
static int read_at(int fd, void *dst, size_t n, uint64_t off)
{
	char *p = dst;
	while (n) {
		ssize_t got = pread(fd, p, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

/* The seqlock generation at the start of a copied part. */
static uint64_t gen_of(const void *part)
{
	uint64_t g;
	memcpy(&g, part, sizeof(g));
	return g;
}

/*
 * Copy one seqlock-protected part of n bytes at off (its generation at the
 * start) into dst: read it, then read the generation again; the copy counts
 * when both generations are the same even number. -1 when the writer never
 * settled or the file got shorter.
 */
static int seq_read(int fd, void *dst, size_t n, uint64_t off)
{
	for (int i = 0; i < SF_RETRIES; i++) {
		uint64_t again;
		if (read_at(fd, dst, n, off) != 0)
			return -1;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (read_at(fd, &again, sizeof(again), off) != 0)
			return -1;
		uint64_t g = gen_of(dst);
		if (!(g & 1) && g == again)
			return 0;
	}
	return -1;
}

/*
 * Copy an array of count seqlock-protected parts of size bytes each at off
 * into dst with two reads of the whole array: a part whose generation is
 * the same even number in both copies is consistent in the first; any other
 * is read again on its own. ok[i] (caller-owned, count entries) says which
 * parts settled. -1 only when the file got shorter.
 */
static int seq_read_array(int fd, void *dst, size_t count, size_t size, uint64_t off, unsigned char *ok)
{
	char *d = dst;
	char *again = nw_calloc(count ? count : 1, size);
	int ret = -1;
	if (read_at(fd, d, count * size, off) != 0)
		goto out;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (read_at(fd, again, count * size, off) != 0)
		goto out;
	for (size_t i = 0; i < count; i++) {
		uint64_t g = gen_of(d + i * size);
		ok[i] = !(g & 1) && g == gen_of(again + i * size);
		if (!ok[i] && seq_read(fd, d + i * size, size, off + i * size) == 0)
			ok[i] = 1;
	}
	ret = 0;
out:
	free(again);
	return ret;
}

/* Check every size and offset in h against the file size; -1 with the reason. */
static int validate(const struct nws_header *h, uint64_t fsize, char *err, size_t errlen)
{
	if (h->magic != NWS_MAGIC)
		return nw_seterr(err, errlen, "not a stats file (bad magic), or still being created");
	if (h->version < 2 || h->version > NWS_VERSION)
		return nw_seterr(err, errlen, "stats layout version %u, this ncclwatch reads 2 to %u: use the ncclwatch that matches the plugin",
		                 h->version, NWS_VERSION);
	uint32_t hsize = h->version == 2 ? NWS_HEADER_V2_SIZE : h->version == 3 ? NWS_HEADER_V3_SIZE
	                 : (uint32_t)sizeof(struct nws_header);
	if (h->header_size != hsize || h->nops != NWS_NOPS ||
	    h->nbuckets != NWS_NBUCKETS || h->nhist != NWS_NHIST || h->nsrc != NWS_NSRC ||
	    h->record_size != sizeof(struct nws_record) || h->opent_size != sizeof(struct nws_opent))
		return nw_seterr(err, errlen, "stats layout sizes differ from version %u's", h->version);
	if (h->file_size > fsize)
		return nw_seterr(err, errlen, "file is %llu bytes, header says %llu (truncated)",
		                 (unsigned long long)fsize, (unsigned long long)h->file_size);
	if (h->ring_len > NW_SF_MAX_RING)
		return nw_seterr(err, errlen, "ring length %u is more than the %u the plugin can write", h->ring_len,
		                 NW_SF_MAX_RING);
	/* nranks 0: not told (profiler v1 to v3) */
	if (h->nranks < 0 || h->nranks > NW_PROG_MAX_RANKS)
		return nw_seterr(err, errlen, "communicator of %d ranks: not between 1 and %d", h->nranks,
		                 NW_PROG_MAX_RANKS);
	if (h->rank < 0 || h->rank >= (h->nranks ? h->nranks : NW_PROG_MAX_RANKS))
		return nw_seterr(err, errlen, "rank %d of a communicator of %d ranks", h->rank, h->nranks);
	uint64_t rec_bytes = (uint64_t)NWS_NOPS * NWS_NBUCKETS * sizeof(struct nws_record);
	uint64_t ring_bytes = (uint64_t)h->ring_len * sizeof(struct nws_opent);
	if (h->off_records % 8 || h->off_ring % 8 || h->off_records < h->header_size ||
	    h->off_ring < h->header_size || h->off_records > h->file_size ||
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
 * Whether gid is the group named by NCCLWATCH_GROUP (a name or a number):
 * a node exporter reading a directory that training pods of another uid
 * write may trust that group's files. Unset: no group is trusted.
 */
int sf_trusted_group(gid_t gid)
{
	const char *g = getenv("NCCLWATCH_GROUP");
	if (!g || !*g)
		return 0;
	char *end;
	unsigned long n = strtoul(g, &end, 10);
	if (*end == '\0')
		return (gid_t)n == gid;
	char buf[4096];
	struct group gr, *res = NULL;
	return getgrnam_r(g, &gr, buf, sizeof(buf), &res) == 0 && res && res->gr_gid == gid;
}

/*
 * Open path without following a link or blocking (a FIFO would), and check
 * that it is a regular file of owner (or of the group NCCLWATCH_GROUP
 * names) large enough for a header; with expect, that it is still that
 * file (device and inode). -1 with err; *fd is set to what the caller must
 * close either way (-1 when none).
 */
static int open_file(const char *path, uid_t owner, const struct stat *expect, int *fd, uint64_t *size, char *err,
                     size_t errlen)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (*fd < 0)
		return nw_seterr(err, errlen, errno == ELOOP ? "a symbolic link, not a stats file: skipped"
		                                              : "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(*fd, &st) != 0)
		return nw_seterr(err, errlen, "cannot stat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return nw_seterr(err, errlen, "not a regular file (%s): skipped", S_ISFIFO(st.st_mode) ? "a FIFO"
		                 : S_ISDIR(st.st_mode) ? "a directory" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
	if (expect && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino))
		return nw_seterr(err, errlen, "replaced while being read; try again");
	if (st.st_uid != owner && !(sf_trusted_group(st.st_gid) && !(st.st_mode & S_IWOTH)))
		return nw_seterr(err, errlen, "owned by uid %u, not by uid %u (%s): skipped, only the stats files of "
		                 "that user are read, or those of the group NCCLWATCH_GROUP names",
		                 (unsigned)st.st_uid, (unsigned)owner, owner == geteuid() ? "this user" : "the directory's");
	if ((uint64_t)st.st_size < sizeof(struct nws_header))
		return nw_seterr(err, errlen, "too small for a stats file (%lld bytes)", (long long)st.st_size);
	*size = (uint64_t)st.st_size;
	return 0;
}

/*
 * Replace, in place, what a terminal could take as a command: control
 * bytes, C1 controls (U+0080..U+009F) and bytes that are not UTF-8 all
 * become '?'. Valid UTF-8 text is kept.
 */
void nw_sf_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		size_t k = 1;
		while (n > 1 && k < n && (p[k] & 0xc0) == 0x80)
			k++;
		int bad = n == 0 || k < n || c < 0x20 || c == 0x7f || c == 0xc0 || c == 0xc1 ||
		          (c == 0xc2 && p[1] < 0xa0);
		if (bad) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

/* A validated copy of the header of the open file (fsize bytes) into r->hdr; -1 with err. */
static int copy_header(struct nw_sf_rank *r, int fd, uint64_t fsize, char *err, size_t errlen)
{
	const size_t live = offsetof(struct nws_header, live_gen);
	/* identity part first (written once before magic), then the live part under its seqlock */
	if (read_at(fd, &r->hdr, live, 0) != 0)
		return nw_seterr(err, errlen, "file got shorter while being read (truncated)");
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (validate(&r->hdr, fsize, err, errlen) != 0)
		return -1;
	/* older headers end before the overlap part (2) or the mode part (3): those read as zeros */
	memset((char *)&r->hdr + r->hdr.header_size, 0, sizeof(r->hdr) - r->hdr.header_size);
	if (seq_read(fd, &r->hdr.live_gen, r->hdr.header_size - live, live) != 0)
		return nw_seterr(err, errlen, "writer kept the header busy, or the file got shorter; try again");
	if (r->hdr.nranks <= 0 && r->hdr.mode.nranks > 0) {
		/* profiler v1, v2: the size learned from the ops, bounded as the header's is */
		if (r->hdr.mode.nranks > NW_PROG_MAX_RANKS || r->hdr.rank >= r->hdr.mode.nranks)
			return nw_seterr(err, errlen, "communicator of %d ranks (rank %d): not between 1 and %d",
			                 r->hdr.mode.nranks, r->hdr.rank, NW_PROG_MAX_RANKS);
		r->hdr.nranks = r->hdr.mode.nranks;
	}
	r->hdr.ovl.reason[sizeof(r->hdr.ovl.reason) - 1] = '\0';
	nw_sf_sanitize(r->hdr.ovl.reason);
	struct nws_ident *id = &r->hdr.ident;
	char *str[] = { r->hdr.hostname, r->hdr.comm_name, r->hdr.plugin_version, r->hdr.last_dump,
	                r->hdr.disabled_reason, id->uuid, id->pod, id->pod_namespace, id->container,
	                id->slurm_job, id->torchelastic, id->job };
	size_t len[] = { sizeof(r->hdr.hostname), sizeof(r->hdr.comm_name), sizeof(r->hdr.plugin_version),
	                 sizeof(r->hdr.last_dump), sizeof(r->hdr.disabled_reason), sizeof(id->uuid),
	                 sizeof(id->pod), sizeof(id->pod_namespace), sizeof(id->container),
	                 sizeof(id->slurm_job), sizeof(id->torchelastic), sizeof(id->job) };
	for (size_t i = 0; i < NW_ARRAY_LEN(str); i++) {
		str[i][len[i] - 1] = '\0';
		nw_sf_sanitize(str[i]);
	}
	return 0;
}

/* Consistent copies of every (op, bucket) record into r->rec; -1 with err when one stays busy. */
static int copy_records(struct nw_sf_rank *r, int fd, char *err, size_t errlen)
{
	unsigned char ok[NWS_NOPS * NWS_NBUCKETS];
	r->rec = nw_calloc(NWS_NOPS, sizeof(*r->rec));
	if (seq_read_array(fd, r->rec, NWS_NOPS * NWS_NBUCKETS, sizeof(struct nws_record), r->hdr.off_records,
	                   ok) != 0)
		return nw_seterr(err, errlen, "file got shorter while being read (truncated)");
	for (size_t i = 0; i < sizeof(ok); i++)
		if (!ok[i])
			return nw_seterr(err, errlen, "writer kept a record busy; try again");
	return 0;
}

/* The ring's settled, used entries into r->ring (allocated), oldest first; -1 when the file shrank. */
static int copy_ring(struct nw_sf_rank *r, int fd)
{
	if (!r->hdr.ring_len)
		return 0;
	r->ring = nw_calloc(r->hdr.ring_len, sizeof(struct nws_opent));
	unsigned char *ok = nw_calloc(r->hdr.ring_len, 1);
	int ret = seq_read_array(fd, r->ring, r->hdr.ring_len, sizeof(struct nws_opent), r->hdr.off_ring, ok);
	for (uint32_t i = 0; ret == 0 && i < r->hdr.ring_len; i++) {
		struct nws_opent e = r->ring[i];
		if (!ok[i] || e.idx == 0)
			continue; /* busy or empty: leave it out */
		e.algo[sizeof(e.algo) - 1] = '\0';
		e.proto[sizeof(e.proto) - 1] = '\0';
		nw_sf_sanitize(e.algo);
		nw_sf_sanitize(e.proto);
		r->ring[r->nring++] = e;
	}
	free(ok);
	qsort(r->ring, r->nring, sizeof(struct nws_opent), cmp_opent);
	return ret;
}

/*
 * Everything of one file that want asks for into r: the file is read with
 * pread into private copies and never mapped, so a writer that truncates or
 * replaces it under us makes this read fail, never the process. The header
 * comes first; the records and ring only when want asks for them (a file
 * whose writer is gone, with SF_WANT_SHOWN, keeps only its header).
 */
int sf_read_rank(const char *path, uid_t owner, const struct stat *expect, enum sf_want want, struct nw_sf_rank *r,
                 char *err, size_t errlen)
{
	int ret = -1, fd = -1;
	uint64_t size = 0;
	memset(r, 0, sizeof(*r));
	nw_strlcpy(r->path, path, sizeof(r->path));
	if (open_file(path, owner, expect, &fd, &size, err, errlen) == 0 && copy_header(r, fd, size, err, errlen) == 0) {
		r->live = judge_live(&r->hdr);
		if (want == SF_WANT_HEADER || (want == SF_WANT_SHOWN && r->live == NW_SF_STALE))
			ret = 0;
		else if (copy_records(r, fd, err, errlen) == 0)
			ret = copy_ring(r, fd) == 0 ? 0 : nw_seterr(err, errlen, "file got shorter while being read (truncated)");
	}
	if (fd >= 0)
		close(fd);
	if (ret != 0)
		nw_sf_rank_release(r);
	return ret;
}

int nw_sf_read(const char *path, struct nw_sf_rank *r, char *err, size_t errlen)
{
	return sf_read_rank(path, geteuid(), NULL, SF_WANT_ALL, r, err, errlen);
}

void nw_sf_rank_release(struct nw_sf_rank *r)
{
	free(r->rec);
	r->rec = NULL;
	free(r->ring);
	r->ring = NULL;
	r->nring = 0;
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
	if (op < 0 || op >= NWS_NOPS || bucket >= NWS_NBUCKETS || !r->rec)
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
