/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statsfile: the stats file of each communicator (the layout of nwstats.h).
 *
 * The file is never mapped. A process that writes through a shared
 * mapping dies of SIGBUS the moment anyone shortens the file (`: > file`,
 * `truncate`, a cleanup script), and the stats directory is shared with
 * whatever else runs as the user. So the figures live in a private image
 * of the file (the publisher writes it as it would the file), and nwp_sync
 * copies what changed into the file with pwrite: a write to a file that
 * was shortened, removed or is on a full file system returns an error or
 * extends the file; it never raises a signal.
 *
 * Readers keep their seqlocks (nwstats.h): each part written goes odd,
 * then gets its new body, then goes even, in three separate writes, since
 * the stores inside one write may become visible in any order. A span of
 * several parts is made odd with one write of the bytes the file holds
 * (read back just before) with odd generations. What a sync writes: the
 * records and ring entries that changed and the header's live part, at most
 * every SYNC_NS; the header alone (nothing else changed) every HEARTBEAT_NS.
 *
 * Damage from outside is found by fstat before each sync (unlinked,
 * shorter, or a modification time that is not that of our last write) and
 * repaired by writing the whole image again (a new file when it was
 * removed), with one WARN line per process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define SYNC_NS (50 * NWP_MS)       /* least time between two syncs of one file */
#define HEARTBEAT_NS NWP_SEC        /* the header (updated_ns) is written at least this often */
#define RETRY_NS NWP_SEC            /* a file that cannot be written is tried again after this */
#define STAGE_MAX (64 * 1024)       /* largest span written at once */
#define REC_GAP 2                   /* clean records a span may cover between two dirty ones */

static unsigned char stage[STAGE_MAX]; /* spans being written (callers hold nwp_g.lock) */
static int damage_said;                /* the one WARN line about damage was written */
static int failure_said;               /* ... about a file that cannot be written */

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

void nwp_copy_str(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	if (src)
		for (; i + 1 < len && src[i]; i++)
			dst[i] = src[i];
	for (; i < len; i++)
		dst[i] = '\0';
}

/* The identity part of c's new header in the image (the magic that says the file is ready is set last). */
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
	h->abi = nwp_g.front ? nwp_g.front->abi_word : (uint32_t)nwp_g.abi;
	nwp_copy_str(h->hostname, sizeof(h->hostname), nwp_g.host);
	nwp_copy_str(h->comm_name, sizeof(h->comm_name), c->name);
	nwp_copy_str(h->plugin_version, sizeof(h->plugin_version), NW_VERSION);
	h->state = NWS_STATE_RUNNING;
	h->kernel_mode = (uint32_t)nwp_g.kmode;
	h->busy_window_ns = 0;
	h->mode.blind = nwp_blind(nwp_g.abi, c->nranks > 0);
	h->mode.nranks = c->nranks;
	nwp_ident_fill(&h->ident);
	h->magic = NWS_MAGIC;
}

/* Write n bytes of buf at off, whole; 0, or -1 with errno. */
static int put(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Modification time of fd in ns; -1 when it cannot be read. */
static int64_t file_mtime(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
}

/*
 * Write the whole image into c's file: the magic cleared first (readers
 * take the file as being made), then everything after it, then the magic.
 * Space is reserved first, so a full file system fails here, not halfway.
 * 0, or an errno value.
 */
static int write_all(struct nwp_comm *c)
{
	static const uint64_t zero;
	int rc = posix_fallocate(c->fd, 0, (off_t)c->img_len);
	if (rc != 0)
		return rc;
	if (put(c->fd, &zero, sizeof(zero), 0) != 0 ||
	    put(c->fd, (char *)c->img + sizeof(zero), c->img_len - sizeof(zero), sizeof(zero)) != 0 ||
	    put(c->fd, c->img, sizeof(zero), 0) != 0)
		return errno;
	struct stat st;
	if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_size > c->img_len && ftruncate(c->fd, (off_t)c->img_len) != 0)
		return errno;
	memcpy(c->fs.pub, c->hdr, sizeof(*c->hdr));
	memset(c->fs.rec_dirty, 0, sizeof(c->fs.rec_dirty));
	c->fs.ring_synced = c->ring_head;
	c->fs.mtime_ns = file_mtime(c->fd);
	c->fs.rewrite = 0;
	return 0;
}

/* Create c->path afresh (an old file of this pid and comm is replaced); the fd, or -1 with err. */
static int file_create(const struct nwp_comm *c, char *err, size_t errlen)
{
	int fd = -1;
	for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
		fd = open(c->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			unlink(c->path); /* an old file of this pid and comm, or one put in its place: ours to replace */
	}
	if (fd < 0)
		snprintf(err, errlen, "cannot create stats file '%s': %s", c->path, strerror(errno));
	return fd;
}

/* (Re)create c's file from the image: 0, or -1 with err (the file is gone again then). */
static int file_make(struct nwp_comm *c, char *err, size_t errlen)
{
	if (ensure_dir(err, errlen) != 0)
		return -1;
	c->fd = file_create(c, err, errlen);
	if (c->fd < 0)
		return -1;
	int rc = write_all(c);
	if (rc != 0) {
		snprintf(err, errlen, "cannot write %llu bytes to '%s': %s", (unsigned long long)c->img_len, c->path,
		         strerror(rc));
		close(c->fd);
		c->fd = -1;
		unlink(c->path);
		return -1;
	}
	return 0;
}

/* Make c's private image and its file. */
int nwp_comm_open(struct nwp_comm *c, char *err, size_t errlen)
{
	int n = snprintf(c->path, sizeof(c->path), "%s/%s.%d.%016llx.r%d.nws", nwp_g.dir, nwp_g.host,
	                 nwp_g.pid, (unsigned long long)c->comm_hash, c->rank);
	if (n < 0 || (size_t)n >= sizeof(c->path)) {
		snprintf(err, errlen, "stats file name too long");
		return -1;
	}
	uint64_t off_records = (sizeof(struct nws_header) + 63) & ~63ull;
	uint64_t off_ring = off_records + (uint64_t)NWS_NOPS * NWS_NBUCKETS * sizeof(struct nws_record);
	uint64_t size = off_ring + (uint64_t)nwp_g.ring_len * sizeof(struct nws_opent);
	void *img = NULL;
	c->fs.pub = malloc(sizeof(struct nws_header));
	if (!c->fs.pub || posix_memalign(&img, 64, size) != 0) {
		free(c->fs.pub);
		c->fs.pub = NULL;
		snprintf(err, errlen, "cannot allocate %llu bytes for the stats of a communicator", (unsigned long long)size);
		return -1;
	}
	memset(img, 0, size);
	c->img = img;
	c->img_len = size;
	c->hdr = img;
	c->rec = (struct nws_record *)((char *)img + off_records);
	c->ring = (struct nws_opent *)((char *)img + off_ring);
	c->ring_len = nwp_g.ring_len;
	header_init(c, size, off_records, off_ring);
	c->fd = -1;
	if (file_make(c, err, errlen) != 0) {
		nwp_comm_close(c);
		return -1;
	}
	c->fs.sync_ns = c->fs.hdr_ns = nwp_mono_ns();
	return 0;
}

void nwp_comm_close(struct nwp_comm *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->img);
	free(c->fs.pub);
	c->img = NULL;
	c->fs.pub = NULL;
	c->hdr = NULL;
	c->rec = NULL;
	c->ring = NULL;
	c->fd = -1;
}

/* Write the live part of c's header into the image under its seqlock. */
void nwp_publish_header(struct nwp_comm *c, uint64_t now, uint32_t state)
{
	struct nws_header *h = c->hdr;
	if (!h)
		return;
	uint64_t win = nwp_g.busy_window_s * NWP_SEC, age = now > h->created_ns ? now - h->created_ns : 0;
	uint64_t now_sec = now / NWP_SEC, bk = 0, be = 0;
	for (uint64_t i = 0; i < nwp_g.busy_window_s; i++) {
		uint64_t s = now_sec - i;
		if (s <= c->busy_sec_start && c->busy_sec_start - s < 64) {
			bk += c->busy_k[s % 64];
			be += c->busy_e[s % 64];
		}
	}
	int *mp = nwp_mask_ptr();
	nwp_w_begin(&h->live_gen);
	h->updated_ns = now;
	h->state = state;
	h->kernel_mode = (uint32_t)nwp_g.kmode;
	h->mask = (uint32_t)(mp ? __atomic_load_n(mp, __ATOMIC_RELAXED) : 0);
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
	nwp_copy_str(h->last_dump, sizeof(h->last_dump), nwp_g.last_dump);
	nwp_copy_str(h->disabled_reason, sizeof(h->disabled_reason), nwp_g.disabled_reason);
	h->prog = c->prog;
	nwp_overlap_fill(&h->ovl);
	h->mode.blind = nwp_blind(nwp_g.abi, c->nranks > 0);
	h->mode.nranks = c->nranks;
	h->mode.repairs = c->fs.repairs;
	nwp_w_end(&h->live_gen);
}

/* Has the header changed since it was last written, leaving aside the clocks that move by themselves? */
static int header_changed(const struct nwp_comm *c)
{
	struct nws_header now = *c->hdr;
	const struct nws_header *pub = c->fs.pub;
	now.live_gen = pub->live_gen;
	now.updated_ns = pub->updated_ns;
	now.busy_window_ns = pub->busy_window_ns;
	now.wall_total_ns = pub->wall_total_ns;
	return memcmp(&now, pub, sizeof(now)) != 0;
}

/* One seqlocked part of len bytes at off (its generation first): odd, body, even. */
static int sync_part(int fd, const void *img, size_t len, uint64_t off)
{
	const char *p = (const char *)img + off;
	uint64_t gen;
	memcpy(&gen, p, sizeof(gen));
	uint64_t odd = gen - 1;
	return put(fd, &odd, sizeof(odd), off) || put(fd, p + sizeof(gen), len - sizeof(gen), off + sizeof(gen)) ||
	       put(fd, &gen, sizeof(gen), off);
}

/* Every part's generation in buf (n parts of size part) made odd: one below the image's. */
static void odd_gens(unsigned char *buf, const unsigned char *img, size_t n, size_t part)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t g;
		memcpy(&g, img + i * part, sizeof(g));
		g -= 1;
		memcpy(buf + i * part, &g, sizeof(g));
	}
}

/*
 * n seqlocked parts of size part at off (n * part <= STAGE_MAX): the bytes
 * the file holds with odd generations, then the image's bodies with odd
 * generations, then the image. A part that did not change goes odd and
 * back to its value with the same body, which a reader can only retry.
 * 0; -1 with errno when a write failed; SYNC_SHORT when the file turned
 * out shorter than it should be (damaged since it was looked at).
 */
#define SYNC_SHORT (-2)
static int sync_span(int fd, const void *img, size_t n, size_t part, uint64_t off)
{
	const unsigned char *src = (const unsigned char *)img + off;
	size_t len = n * part;
	if (n == 1)
		return sync_part(fd, img, part, off);
	ssize_t got = pread(fd, stage, len, (off_t)off);
	if (got != (ssize_t)len)
		return got < 0 ? -1 : SYNC_SHORT;
	odd_gens(stage, src, n, part);
	if (put(fd, stage, len, off) != 0)
		return -1;
	memcpy(stage, src, len);
	odd_gens(stage, src, n, part);
	return put(fd, stage, len, off) || put(fd, src, len, off);
}

/* The records changed since the last sync, in spans of neighbours. */
static int sync_records(struct nwp_comm *c)
{
	const size_t nrec = (size_t)NWS_NOPS * NWS_NBUCKETS, part = sizeof(struct nws_record);
	const size_t maxn = STAGE_MAX / part;
	uint64_t *bits = c->fs.rec_dirty;
	uint64_t base = c->hdr->off_records;
	size_t i = 0;
	while (i < nrec) {
		if (!(bits[i / 64] & (1ull << (i % 64)))) {
			i++;
			continue;
		}
		size_t first = i, last = i;
		for (size_t j = i + 1; j < nrec && j - first < maxn && j - last <= REC_GAP + 1; j++)
			if (bits[j / 64] & (1ull << (j % 64)))
				last = j;
		for (size_t j = first; j <= last; j++)
			bits[j / 64] &= ~(1ull << (j % 64));
		int rc = sync_span(c->fd, c->img, last - first + 1, part, base + first * part);
		if (rc != 0)
			return rc;
		i = last + 1;
	}
	return 0;
}

/* The ring entries added since the last sync, in spans of at most STAGE_MAX bytes. */
static int sync_ring(struct nwp_comm *c)
{
	const size_t part = sizeof(struct nws_opent), maxn = STAGE_MAX / part;
	uint64_t from = c->fs.ring_synced, to = c->ring_head;
	if (to - from > c->ring_len)
		from = to - c->ring_len;
	while (from < to) {
		size_t slot = (size_t)(from % c->ring_len), n = (size_t)(to - from);
		if (n > c->ring_len - slot)
			n = c->ring_len - slot;
		if (n > maxn)
			n = maxn;
		int rc = sync_span(c->fd, c->img, n, part, c->hdr->off_ring + slot * part);
		if (rc != 0)
			return rc;
		from += n;
	}
	c->fs.ring_synced = to;
	return 0;
}

/* Say once per process that a stats file was damaged from outside. */
static void say_damage(const struct nwp_comm *c, const char *how)
{
	if (__atomic_exchange_n(&damage_said, 1, __ATOMIC_RELAXED))
		return;
	nwp_log(NWP_LOG_WARN, "ncclwatch: stats file '%s' was %s from outside; rewritten from the plugin's copy "
	        "(later damage is repaired silently)", c->path, how);
}

/* Say once per process that a stats file cannot be written; the plugin goes on and tries again. */
static void say_failure(const char *what)
{
	if (__atomic_exchange_n(&failure_said, 1, __ATOMIC_RELAXED))
		return;
	nwp_log(NWP_LOG_WARN, "ncclwatch: %s; the figures are kept and the file is tried again every second", what);
}

/* What fstat says happened to c's file since our last write; NULL when nothing did. *gone: it must be made anew. */
static const char *damage_of(const struct nwp_comm *c, int *gone)
{
	struct stat st;
	*gone = 1;
	if (fstat(c->fd, &st) != 0)
		return "made unreadable";
	if (st.st_nlink == 0)
		return "removed or replaced";
	*gone = 0;
	if ((uint64_t)st.st_size < c->img_len)
		return "truncated";
	if ((int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec != c->fs.mtime_ns)
		return "modified";
	return NULL;
}

/* Look at c's file from outside: damage found is repaired (made anew or written whole). -1 when it cannot be. */
static int check_file(struct nwp_comm *c)
{
	char err[600];
	int gone = 0;
	const char *how = c->fd >= 0 ? damage_of(c, &gone) : NULL;
	if (how) {
		say_damage(c, how);
		c->fs.repairs++;
		c->fs.rewrite = 1;
		if (gone) {
			close(c->fd);
			c->fd = -1;
		}
	}
	if (c->fd < 0) {
		if (file_make(c, err, sizeof(err)) != 0) {
			say_failure(err);
			return -1;
		}
		return 0;
	}
	if (c->fs.rewrite) {
		int rc = write_all(c);
		if (rc != 0) {
			snprintf(err, sizeof(err), "cannot write stats file '%s': %s", c->path, strerror(rc));
			say_failure(err);
			return -1;
		}
	}
	return 0;
}

/*
 * Copy what changed in c's image into its file: records, ring entries,
 * then the header's live part (when it changed or the heartbeat is due).
 * With force (finalize), now and whatever the time.
 */
void nwp_sync(struct nwp_comm *c, int force)
{
	if (!c->img)
		return;
	uint64_t now = nwp_mono_ns();
	if (!force && (now - c->fs.sync_ns < SYNC_NS || now < c->fs.retry_ns))
		return;
	c->fs.sync_ns = now;
	if (check_file(c) != 0) {
		c->fs.retry_ns = now + RETRY_NS;
		return;
	}
	int wrote = c->fs.ring_synced != c->ring_head;
	for (size_t i = 0; i < sizeof(c->fs.rec_dirty) / sizeof(c->fs.rec_dirty[0]); i++)
		wrote |= c->fs.rec_dirty[i] != 0;
	int bad = sync_records(c);
	if (!bad)
		bad = sync_ring(c);
	if (!bad && (force || wrote || now - c->fs.hdr_ns >= HEARTBEAT_NS || header_changed(c))) {
		const uint64_t live = offsetof(struct nws_header, live_gen);
		bad = sync_part(c->fd, c->img, c->hdr->header_size - live, live);
		if (!bad) {
			memcpy(c->fs.pub, c->hdr, sizeof(*c->hdr));
			c->fs.hdr_ns = now;
			wrote = 1;
		}
	}
	if (bad == SYNC_SHORT) {
		/* shortened between the look and the writes: damage, written whole at the next sync */
		say_damage(c, "truncated");
		c->fs.repairs++;
		c->fs.rewrite = 1;
		return;
	}
	if (bad) {
		char err[600];
		snprintf(err, sizeof(err), "cannot write stats file '%s': %s", c->path, strerror(errno));
		say_failure(err);
		c->fs.rewrite = 1;
		c->fs.retry_ns = now + RETRY_NS;
		return;
	}
	if (wrote)
		c->fs.mtime_ns = file_mtime(c->fd);
}
