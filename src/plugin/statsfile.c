/*
 * statsfile: the stats file of each communicator (the layout of nwstats.h):
 * the stats directory checked, the file created, sized and mapped, its
 * identity written once, and its live header published under its seqlock
 * by the publisher thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/nwp.h"

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
	nwp_copy_str(h->hostname, sizeof(h->hostname), nwp_g.host);
	nwp_copy_str(h->comm_name, sizeof(h->comm_name), c->name);
	nwp_copy_str(h->plugin_version, sizeof(h->plugin_version), NW_VERSION);
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

/* Write the live part of c's header under its seqlock. */
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
	nwp_w_begin(&h->live_gen);
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
	nwp_copy_str(h->last_dump, sizeof(h->last_dump), nwp_g.last_dump);
	nwp_copy_str(h->disabled_reason, sizeof(h->disabled_reason), nwp_g.disabled_reason);
	h->prog = c->prog;
	nwp_overlap_fill(&h->ovl);
	nwp_w_end(&h->live_gen);
}
