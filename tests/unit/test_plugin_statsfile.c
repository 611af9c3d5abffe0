/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the stats-file layout helpers (plugin/nwstats.h) and the
 * reader (export/statsfile.c): validation of bad files, liveness,
 * aggregates and straggler analysis, on files written here by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/statsfile.h"
#include "util/util.h"

static uint64_t self_start(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	return strtoull(p + 1, NULL, 10);
}

static uint64_t rt_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An in-memory stats file laid out as the plugin lays it out. */
struct img {
	unsigned char *buf;
	size_t len;
	struct nws_header *h;
	struct nws_record *rec;
	struct nws_opent *ring;
};

static void img_make(struct img *m, uint32_t ring_len, uint64_t hash, int rank, int nranks)
{
	uint64_t off_rec = (sizeof(struct nws_header) + 63) & ~63ull;
	uint64_t off_ring = off_rec + (uint64_t)NWS_NOPS * NWS_NBUCKETS * sizeof(struct nws_record);
	m->len = off_ring + ring_len * sizeof(struct nws_opent);
	m->buf = calloc(1, m->len);
	assert_non_null(m->buf);
	m->h = (struct nws_header *)m->buf;
	m->rec = (struct nws_record *)(m->buf + off_rec);
	m->ring = (struct nws_opent *)(m->buf + off_ring);
	struct nws_header *h = m->h;
	h->magic = NWS_MAGIC;
	h->version = NWS_VERSION;
	h->header_size = sizeof(*h);
	h->file_size = m->len;
	h->nops = NWS_NOPS;
	h->nbuckets = NWS_NBUCKETS;
	h->nhist = NWS_NHIST;
	h->nsrc = NWS_NSRC;
	h->record_size = sizeof(struct nws_record);
	h->opent_size = sizeof(struct nws_opent);
	h->off_records = off_rec;
	h->off_ring = off_ring;
	h->ring_len = ring_len;
	h->pid = (int32_t)getpid();
	h->proc_start = self_start();
	h->comm_hash = hash;
	h->rank = rank;
	h->nranks = nranks;
	h->nnodes = 1;
	h->abi = 5;
	nw_hostname(h->hostname, sizeof(h->hostname));
	snprintf(h->comm_name, sizeof(h->comm_name), "world");
	h->state = NWS_STATE_RUNNING;
	h->updated_ns = rt_ns();
}

static void img_write(const struct img *m, const char *path, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(m->buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nwsf.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_buckets_and_bins(void **state)
{
	(void)state;
	assert_int_equal(nws_size_bucket(0), 0);
	assert_int_equal(nws_size_bucket(1), 1);
	assert_int_equal(nws_size_bucket(7), 3);
	assert_int_equal(nws_size_bucket(8), 4);
	assert_int_equal(nws_bucket_lo(4), 8);
	assert_int_equal(nws_size_bucket(256 << 10), 19);
	assert_int_equal(nws_bucket_lo(nws_size_bucket(1ull << 30)), 1ull << 30);
	assert_int_equal(nws_size_bucket(1ull << 40), NWS_NBUCKETS - 1);
	assert_int_equal(nws_size_bucket(UINT64_MAX), NWS_NBUCKETS - 1);
	assert_int_equal(nws_time_bin(999), 0);
	assert_int_equal(nws_time_bin(1000), 1);
	assert_int_equal(nws_time_bin(1999), 1);
	assert_int_equal(nws_time_bin(2000), 2);
	assert_int_equal(nws_time_bin(UINT64_MAX), NWS_NHIST - 1);
	assert_int_equal(nws_bin_hi_us(0), 1);
	assert_int_equal(nws_bin_hi_us(NWS_NHIST - 1), 0);
	assert_string_equal(nws_op_name(NWS_OP_ALLTOALL), "alltoall");
	assert_string_equal(nws_op_name(999), "other");
	assert_true(nws_busbw_factor(NWS_OP_ALL_REDUCE, 2) == 1.0);
	assert_true(nws_busbw_factor(NWS_OP_ALL_GATHER, 4) == 0.75);
	assert_true(nws_busbw_factor(NWS_OP_SEND, 8) == 1.0);
}

/* Each way a file can be wrong is reported with its reason, never read. */
static void test_bad_files(void **state)
{
	(void)state;
	struct img m;
	char path[512], err[NW_ERRLEN];
	struct nw_sf_rank r;
	snprintf(path, sizeof(path), "%s/x.nws", tmpdir);

	img_make(&m, 16, 1, 0, 1);
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_LIVE);
	nw_sf_rank_release(&r);

	img_write(&m, path, 100);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too small"));

	img_write(&m, path, m.len - 8);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));

	m.h->magic ^= 1;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad magic"));
	m.h->magic ^= 1;

	m.h->version = 9;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version 9"));
	m.h->version = NWS_VERSION;

	m.h->record_size += 8;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "sizes differ"));
	m.h->record_size -= 8;

	m.h->ring_len = 1000;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "outside the file"));
	m.h->ring_len = 16;

	m.h->off_records = 12;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "outside the file"));
	m.h->off_records = (sizeof(struct nws_header) + 63) & ~63ull;

	/* counts that would make a reader allocate: bounded by the documented maxima */
	m.h->nranks = 2147483647;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "2147483647 ranks"));
	m.h->nranks = 4;
	m.h->rank = 4;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "rank 4 of"));
	m.h->rank = 0;
	m.h->nranks = 1;
	m.h->ring_len = NW_SF_MAX_RING + 1;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ring length"));
	m.h->ring_len = 16;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	nw_sf_rank_release(&r);
	m.h->off_records = 12;
	img_write(&m, path, m.len); /* x.nws stays broken for what follows */
	free(m.buf);

	/* a directory with one good and two bad files: the good one is read */
	struct nw_sf_set set;
	img_make(&m, 16, 7, 0, 1);
	snprintf(path, sizeof(path), "%s/good.nws", tmpdir);
	img_write(&m, path, m.len);
	free(m.buf);
	snprintf(path, sizeof(path), "%s/other.txt", tmpdir);
	FILE *f = fopen(path, "w");
	fputs("ignored: not .nws", f);
	fclose(f);
	assert_int_equal(nw_sf_load(tmpdir, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.nbad, 1); /* x.nws, still broken */
	assert_int_equal(set.ranks[0].hdr.comm_hash, 7);
	nw_sf_set_release(&set);

	snprintf(path, sizeof(path), "%s/none", tmpdir);
	assert_int_equal(nw_sf_load(path, &set, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no stats directory"));
	const char *names[] = { "x.nws", "good.nws", "other.txt" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
}

/*
 * Version 4 carries the mode part, version 3 the overlap part; files of
 * versions 3 and 2 (shorter headers) still read, the missing parts zero.
 */
static void test_versions(void **state)
{
	(void)state;
	struct img m;
	char path[512], err[NW_ERRLEN];
	struct nw_sf_rank r;
	snprintf(path, sizeof(path), "%s/v.nws", tmpdir);
	img_make(&m, 16, 3, 0, 1);

	/* profiler v2 (NCCL 2.24): no size at init, learned from the ops; what it cannot give */
	m.h->nranks = 0;
	m.h->abi = 2;
	m.h->mode.nranks = 16;
	m.h->mode.blind = NWS_BLIND_KERNEL | NWS_BLIND_NRANKS;
	m.h->mode.repairs = 3;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.hdr.nranks, 16);
	assert_int_equal(r.hdr.mode.blind, NWS_BLIND_KERNEL | NWS_BLIND_NRANKS);
	assert_int_equal(r.hdr.mode.repairs, 3);
	nw_sf_rank_release(&r);

	/* what a version-3 plugin wrote: the bytes after its header are not mode figures */
	m.h->version = 3;
	m.h->header_size = NWS_HEADER_V3_SIZE;
	m.h->nranks = 16;
	m.h->abi = 5;
	memset(&m.h->mode, 0x5a, sizeof(m.h->mode));
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.hdr.mode.blind, 0);
	assert_int_equal(r.hdr.mode.nranks, 0);
	assert_int_equal(r.hdr.nranks, 16);
	nw_sf_rank_release(&r);

	m.h->ovl.state = NWS_OVL_ON;
	m.h->ovl.windows = 4;
	m.h->ovl.wall_ns = 2000000000ull;
	m.h->ovl.exposed_ns = 123456000ull;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.hdr.ovl.state, NWS_OVL_ON);
	assert_int_equal(r.hdr.ovl.windows, 4);
	assert_int_equal(r.hdr.ovl.exposed_ns, 123456000ull);
	nw_sf_rank_release(&r);

	/* what a version-2 plugin wrote: the bytes after its header are not overlap figures */
	m.h->version = 2;
	m.h->header_size = NWS_HEADER_V2_SIZE;
	memset(&m.h->ovl, 0x5a, sizeof(m.h->ovl));
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.hdr.ovl.state, NWS_OVL_UNKNOWN);
	assert_int_equal(r.hdr.ovl.windows, 0);
	assert_int_equal(r.hdr.ovl.reason[0], '\0');
	assert_int_equal(r.hdr.comm_hash, 3);
	nw_sf_rank_release(&r);

	/* a version-2 file claiming version 4's header size is refused */
	m.h->header_size = sizeof(struct nws_header);
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "sizes differ from version 2"));
	free(m.buf);
	unlink(path);
}

static void test_liveness(void **state)
{
	(void)state;
	struct img m;
	char path[512], err[NW_ERRLEN];
	struct nw_sf_rank r;
	snprintf(path, sizeof(path), "%s/l.nws", tmpdir);
	img_make(&m, 4, 1, 0, 1);

	m.h->proc_start += 1; /* same pid, another process (pid reused) */
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_STALE);
	nw_sf_rank_release(&r);
	m.h->proc_start -= 1;

	m.h->state = NWS_STATE_FINISHED;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_FINISHED);
	nw_sf_rank_release(&r);

	m.h->state = NWS_STATE_DISABLED;
	snprintf(m.h->disabled_reason, sizeof(m.h->disabled_reason), "why");
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_DISABLED);
	assert_string_equal(r.hdr.disabled_reason, "why");
	nw_sf_rank_release(&r);

	/* another PID namespace of this host (a pod, unshare --pid): the pid means
	   nothing here, so a reused or absent pid does not matter, only the heartbeat */
	m.h->state = NWS_STATE_RUNNING;
	m.h->ident.pidns = 1; /* no real namespace has inode 1 */
	m.h->pid = 0x7ffffff0;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_LIVE);
	nw_sf_rank_release(&r);
	m.h->updated_ns -= 60ull * 1000000000ull;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_STALE);
	nw_sf_rank_release(&r);
	m.h->updated_ns += 60ull * 1000000000ull;
	m.h->ident.pidns = 0;
	m.h->pid = (int32_t)getpid();

	/* another host: only the heartbeat tells */
	snprintf(m.h->hostname, sizeof(m.h->hostname), "elsewhere-host-name");
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_LIVE);
	nw_sf_rank_release(&r);
	m.h->updated_ns -= 3600ull * 1000000000ull;
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.live, NW_SF_STALE);
	nw_sf_rank_release(&r);
	free(m.buf);
	unlink(path);
}


/* Strings from a file are made printable: no control byte, C1 control or non-UTF-8 byte survives. */
static void test_sanitize(void **state)
{
	(void)state;
	char s[] = "a\x1b[31mb\n\xc2\x9b" "c\xff\xc3\xa9\x07";
	nw_sf_sanitize(s);
	assert_string_equal(s, "a?[31mb???c?\xc3\xa9?");
	char t[] = "dp-\xe2\x82\xac ok";
	nw_sf_sanitize(t);
	assert_string_equal(t, "dp-\xe2\x82\xac ok");
}

/*
 * What the reader refuses or cleans: a FIFO (at once, never blocking), a
 * directory others can write, a truncated copy; files of a gone process
 * older than NCCLWATCH_STALE_KEEP are removed, another host's are not;
 * hidden stale files are counted, not kept, and a cache answers for them
 * at the next load without opening them.
 */
static void test_reader_hygiene(void **state)
{
	(void)state;
	char dir[300], path[512], err[NW_ERRLEN];
	struct nw_sf_rank r;
	struct nw_sf_set set;
	struct img m;
	snprintf(dir, sizeof(dir), "%s/hy", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);

	snprintf(path, sizeof(path), "%s/f.nws", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "FIFO"));
	unlink(path);

	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(nw_sf_load(dir, &set, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "other users can write"));
	assert_int_equal(chmod(dir, 0700), 0);

	/* a gone writer (pid reused), last update two hours ago */
	img_make(&m, 4, 1, 0, 1);
	m.h->proc_start += 1;
	m.h->updated_ns -= 7200ull * 1000000000ull;
	snprintf(path, sizeof(path), "%s/old.nws", dir);
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_load_flags(dir, NW_SF_HIDE_STALE, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 0);
	assert_int_equal(set.nhidden, 1);
	nw_sf_set_release(&set);
	struct nw_sf_cache *cache = nw_sf_cache_new();
	const struct nw_sf_opts co = { .flags = NW_SF_HIDE_STALE, .cache = cache, .owner = -1 };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(nw_sf_load_opts(dir, &co, &set, err, sizeof(err)), 0);
		assert_int_equal(set.nhidden, 1);
		nw_sf_set_release(&set);
	}
	assert_int_equal(nw_sf_cache_hits(cache), 1);
	assert_int_equal(chmod(path, 0644), 0); /* a changed file is read again */
	assert_int_equal(nw_sf_load_opts(dir, &co, &set, err, sizeof(err)), 0);
	assert_int_equal(set.nhidden, 1);
	nw_sf_set_release(&set);
	assert_int_equal(nw_sf_cache_hits(cache), 1);
	nw_sf_cache_free(cache);
	assert_int_equal(nw_sf_load_flags(dir, NW_SF_HEADERS, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.ranks[0].live, NW_SF_STALE);
	assert_null(set.ranks[0].rec);
	assert_null(set.ranks[0].ring);
	nw_sf_set_release(&set);
	setenv("NCCLWATCH_STALE_KEEP", "1h", 1);
	snprintf(m.h->hostname, sizeof(m.h->hostname), "elsewhere-host-name");
	snprintf(path, sizeof(path), "%s/remote.nws", dir);
	img_write(&m, path, m.len);
	assert_int_equal(nw_sf_load(dir, &set, err, sizeof(err)), 0);
	assert_int_equal(set.nremoved, 1);
	assert_int_equal(set.n, 1);
	assert_string_equal(set.ranks[0].hdr.hostname, "elsewhere-host-name");
	nw_sf_set_release(&set);
	unsetenv("NCCLWATCH_STALE_KEEP");
	snprintf(path, sizeof(path), "%s/old.nws", dir);
	assert_int_equal(access(path, F_OK), -1);

	/* a copy cut short of what its header says */
	snprintf(path, sizeof(path), "%s/cut.nws", dir);
	img_write(&m, path, m.len / 2);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));
	free(m.buf);
}

/* busbw from kernel times only; CPU enqueue times never count. */
static void test_aggregate(void **state)
{
	(void)state;
	struct img m;
	char path[512], err[NW_ERRLEN];
	struct nw_sf_rank r;
	struct nw_sf_agg a;
	snprintf(path, sizeof(path), "%s/a.nws", tmpdir);
	img_make(&m, 4, 1, 0, 2);
	unsigned b = nws_size_bucket(1 << 20);
	struct nws_record *rec = &m.rec[NWS_OP_ALL_REDUCE * NWS_NBUCKETS + b];
	rec->count = 10;
	rec->bytes = 10ull << 20;
	struct nws_timing *k = &rec->t[NWS_SRC_KERNEL];
	k->count = 4;
	k->bytes = 4ull << 20;
	k->sum_ns = 4 * 10000; /* 10 us each */
	k->min_ns = 9000;
	k->max_ns = 12000;
	k->hist[nws_time_bin(10000)] = 4;
	struct nws_timing *c = &rec->t[NWS_SRC_CPU];
	c->count = 6;
	c->bytes = 6ull << 20;
	c->sum_ns = 6 * 1000;
	/* a CPU-only record elsewhere */
	struct nws_record *rc2 = &m.rec[NWS_OP_BROADCAST * NWS_NBUCKETS + 3];
	rc2->count = 5;
	rc2->bytes = 20;
	rc2->t[NWS_SRC_CPU].count = 5;
	img_write(&m, path, m.len);
	free(m.buf);
	assert_int_equal(nw_sf_read(path, &r, err, sizeof(err)), 0);

	nw_sf_aggregate(&r, NWS_OP_ALL_REDUCE, (int)b, &a);
	assert_true(a.valid);
	assert_int_equal(a.src, NWS_SRC_KERNEL);
	assert_int_equal(a.count, 10);
	assert_int_equal(a.timed, 4);
	assert_true(a.mean_us > 9.99 && a.mean_us < 10.01);
	/* algbw = 1 MiB / 10 us = 104.8576 GB/s; busbw x 2(n-1)/n = x1 for n=2 */
	assert_true(a.algbw_gbs > 104.85 && a.algbw_gbs < 104.87);
	assert_true(a.busbw_gbs > 104.85 && a.busbw_gbs < 104.87);
	assert_true(a.p50_us <= 16.0 && a.p50_us >= 8.0);
	assert_true(a.max_us > 11.99 && a.max_us < 12.01);

	nw_sf_aggregate(&r, NWS_OP_ALL_REDUCE, -1, &a); /* all buckets */
	assert_int_equal(a.count, 10);
	assert_true(a.valid);

	nw_sf_aggregate(&r, NWS_OP_BROADCAST, -1, &a);
	assert_int_equal(a.count, 5);
	assert_false(a.valid);
	assert_int_equal(a.src, -1);

	nw_sf_aggregate(&r, 99, -1, &a);
	assert_int_equal(a.count, 0);
	nw_sf_rank_release(&r);
	unlink(path);
}

/* Three ranks; rank 1 arrives 100 us after the others at every collective. */
static void test_stragglers(void **state)
{
	(void)state;
	char path[512], err[NW_ERRLEN];
	for (int rank = 0; rank < 3; rank++) {
		struct img m;
		img_make(&m, 64, 0xabc, rank, 3);
		uint64_t t0 = 1000000000000ull;
		for (int i = 0; i < 20; i++) {
			struct nws_opent *e = &m.ring[i];
			e->idx = (uint64_t)i + 1;
			e->seq = (uint64_t)i;
			e->op = NWS_OP_ALL_REDUCE;
			e->flags = NWS_OPF_SEQ;
			e->src = NWS_SRC_KERNEL;
			e->enq_ns = t0 + (uint64_t)i * 1000000 + (rank == 1 ? 100000 : 0) + (uint64_t)rank * 10;
			e->start_ns = e->enq_ns + 5000;
			e->end_ns = t0 + (uint64_t)i * 1000000 + 200000;
		}
		/* rank 2 misses seq 0 in its ring: only common seqs count */
		if (rank == 2)
			m.ring[0].flags = 0;
		/* p2p entries (no seq) are ignored */
		m.ring[30].idx = 31;
		m.ring[30].op = NWS_OP_SEND;
		snprintf(path, sizeof(path), "%s/s%d.nws", tmpdir, rank);
		img_write(&m, path, m.len);
		free(m.buf);
	}
	struct nw_sf_set set;
	assert_int_equal(nw_sf_load(tmpdir, &set, err, sizeof(err)), 0);
	struct nw_sf_late late[8];
	size_t n = nw_sf_stragglers(&set, 0xabc, 0, late, 8);
	assert_int_equal(n, 3);
	assert_int_equal(late[0].rank, 1);
	assert_int_equal(late[0].nseq, 19);
	assert_int_equal(late[0].nlast, 19);
	assert_true(late[0].kernel_based);
	assert_true(late[0].mean_late_us > 99.9 && late[0].mean_late_us < 100.1);
	assert_true(late[1].mean_late_us < 0.1);
	/* only the newest 5 */
	n = nw_sf_stragglers(&set, 0xabc, 5, late, 8);
	assert_int_equal(n, 3);
	assert_int_equal(late[0].nseq, 5);
	/* unknown comm, or fewer than 2 ranks */
	assert_int_equal(nw_sf_stragglers(&set, 0xdef, 0, late, 8), 0);
	uint64_t comms[4];
	assert_int_equal(nw_sf_comms(&set, comms, 4), 1);
	assert_int_equal(comms[0], 0xabc);
	nw_sf_set_release(&set);
	for (int rank = 0; rank < 3; rank++) {
		snprintf(path, sizeof(path), "%s/s%d.nws", tmpdir, rank);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets_and_bins),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_liveness),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_reader_hygiene),
		cmocka_unit_test(test_aggregate),
		cmocka_unit_test(test_stragglers),
		cmocka_unit_test(test_versions),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
