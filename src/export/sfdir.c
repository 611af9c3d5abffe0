/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sfdir: the stats directories (see statsfile.h): listing one safely, each
 * file's header read before anything else, only the files a reader shows
 * copied whole, a cache of the hidden ones by identity, and the removal of
 * old files of gone processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/statsfile.h"
#include "export/statsfile_int.h"
#include "util/util.h"

#define SF_STALE_KEEP_S (24.0 * 3600) /* files of gone processes are removed after this */
#define SF_RECHECK_S 10.0             /* a file judged gone by its heartbeat is looked at again after this */
#define SF_FORGET_S 60.0              /* cache entries of files not seen for this long are dropped */

/* What the cache knows of one hidden file. */
struct sf_centry {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	uint64_t updated_ns;    /* the file's last publish (for removal by age) */
	double judged;          /* monotonic seconds when the verdict was reached */
	double seen;            /* ... when the file was last listed */
	unsigned char by_beat;  /* judged gone by its heartbeat (another PID namespace): looked at again */
	unsigned char removable;/* its writer is a gone process of this host */
};

struct nw_sf_cache {
	struct sf_centry *e;    /* sorted by (dev, ino) */
	size_t n, cap;
	uint64_t hits;
};

struct nw_sf_cache *nw_sf_cache_new(void)
{
	return nw_calloc(1, sizeof(struct nw_sf_cache));
}

void nw_sf_cache_free(struct nw_sf_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c);
}

uint64_t nw_sf_cache_hits(const struct nw_sf_cache *c)
{
	return c ? c->hits : 0;
}

static int cmp_centry(const void *a, const void *b)
{
	const struct sf_centry *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The entry of the file st names, when it still describes it (same size and times, verdict not due again). */
static struct sf_centry *cache_find(struct nw_sf_cache *c, const struct stat *st, double now)
{
	if (!c || !c->n)
		return NULL;
	struct sf_centry key = { .dev = st->st_dev, .ino = st->st_ino };
	struct sf_centry *e = bsearch(&key, c->e, c->n, sizeof(*c->e), cmp_centry);
	if (!e || e->size != st->st_size || !same_time(&e->mtime, &st->st_mtim) || !same_time(&e->ctime, &st->st_ctim))
		return NULL;
	if (e->by_beat && now - e->judged >= SF_RECHECK_S)
		return NULL;
	return e;
}

/* Remember a hidden file (appended; cache_settle sorts). An entry for the same file is replaced there. */
static void cache_add(struct nw_sf_cache *c, const struct stat *st, const struct nws_header *h, double now)
{
	if (!c || c->n >= 16 * (size_t)NW_SF_MAX_FILES)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->e = nw_realloc(c->e, c->cap * sizeof(*c->e));
	}
	c->e[c->n++] = (struct sf_centry){
		.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtime = st->st_mtim, .ctime = st->st_ctim,
		.updated_ns = h->updated_ns, .judged = now, .seen = now, .by_beat = !sf_pid_visible(h),
		.removable = (unsigned char)sf_writer_gone(h),
	};
}

/*
 * Sort the entries and keep one per file (the newest verdict) and only
 * those listed within SF_FORGET_S: the cache holds files that exist.
 */
static void cache_settle(struct nw_sf_cache *c, double now)
{
	if (!c || !c->n)
		return;
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++)
		if (now - c->e[i].seen < SF_FORGET_S)
			c->e[k++] = c->e[i];
	c->n = k;
	qsort(c->e, c->n, sizeof(*c->e), cmp_centry);
	k = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (k && !cmp_centry(&c->e[k - 1], &c->e[i])) {
			if (c->e[i].judged >= c->e[k - 1].judged)
				c->e[k - 1] = c->e[i];
			continue;
		}
		c->e[k++] = c->e[i];
	}
	c->n = k;
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Was a file last updated at updated_ns more than keep_s ago (keep_s 0: never)? */
static int old_enough(uint64_t updated_ns, double keep_s)
{
	uint64_t now = sf_realtime_ns();
	return keep_s > 0 && now >= updated_ns && (double)(now - updated_ns) / 1e9 >= keep_s;
}

/*
 * Remove path when its writer, a process of this host, is gone and its
 * last publish is more than keep_s seconds old (any state: a finished
 * communicator's file too). 1 when it was removed.
 */
static int clean_old(const char *path, const struct nws_header *h, double keep_s)
{
	return old_enough(h->updated_ns, keep_s) && sf_writer_gone(h) && unlink(path) == 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct nw_sf_rank *x = a, *y = b;
	if (x->hdr.comm_hash != y->hdr.comm_hash)
		return x->hdr.comm_hash < y->hdr.comm_hash ? -1 : 1;
	if (x->hdr.rank != y->hdr.rank)
		return x->hdr.rank < y->hdr.rank ? -1 : 1;
	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	if (x->live != y->live)
		return (int)x->live - (int)y->live;
	return strcmp(x->path, y->path);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n > m && strcmp(s + n - m, suf) == 0;
}

/*
 * Open dir for listing once it is known to be safe to read: owned by owner
 * or root (or the trusted group) and not writable by anyone else (who could
 * plant files in it). NULL with err.
 */
static DIR *open_dir(const char *dir, uid_t owner, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			nw_seterr(err, errlen, "no stats directory '%s': is a job running with "
			          "NCCL_PROFILER_PLUGIN=ncclwatch (or set NCCLWATCH_DIR)?", dir);
		else
			nw_seterr(err, errlen, "cannot read stats directory '%s': %s", dir, strerror(errno));
		return NULL;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = strerror(errno);
	else if (st.st_uid != owner && st.st_uid != 0 && !sf_trusted_group(st.st_gid))
		why = "it belongs to another user, who could put any file in it (set NCCLWATCH_GROUP to its group "
		      "to trust that group)";
	else if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && !sf_trusted_group(st.st_gid)))
		why = "other users can write in it and put any file there; chmod go-w it (or set NCCLWATCH_GROUP "
		      "to trust its group)";
	DIR *d = why ? NULL : fdopendir(fd);
	if (!d) {
		nw_seterr(err, errlen, "refusing to read stats directory '%s': %s", dir, why ? why : strerror(errno));
		close(fd);
	}
	return d;
}

int nw_sf_check_dir(const char *dir, char *err, size_t errlen)
{
	DIR *d = open_dir(dir, geteuid(), err, errlen);
	if (!d)
		return -1;
	closedir(d);
	return 0;
}

/* Append (path, why) to set->bad while there is room (NW_SF_MAX_BAD), else count it; the path is made printable. */
static void add_bad(struct nw_sf_set *set, const char *path, const char *why)
{
	if (set->nbad >= NW_SF_MAX_BAD) {
		set->nbad_more++;
		return;
	}
	set->bad = nw_realloc(set->bad, (set->nbad + 1) * sizeof(*set->bad));
	struct nw_sf_bad *b = &set->bad[set->nbad++];
	nw_strlcpy(b->path, path, sizeof(b->path));
	nw_sf_sanitize(b->path);
	nw_strlcpy(b->why, why, sizeof(b->why));
}

/* How long files of gone processes are kept: $NCCLWATCH_STALE_KEEP, default 24 h; 0 keeps them. */
static int stale_keep(double *keep_s, char *err, size_t errlen)
{
	const char *e = getenv("NCCLWATCH_STALE_KEEP");
	char why[NW_ERRLEN];
	*keep_s = SF_STALE_KEEP_S;
	if (!e || !*e)
		return 0;
	if (nw_parse_duration(e, keep_s, why, sizeof(why)) != 0 || *keep_s < 0)
		return nw_seterr(err, errlen, "NCCLWATCH_STALE_KEEP='%s' is not a duration (e.g. 24h, 30m, 0 to keep "
		                 "every file)", e);
	return 0;
}

/* One directory's listing, with what every file of it needs. */
struct sf_scan {
	const struct nw_sf_opts *o;
	uid_t owner;
	double keep_s, now;
	size_t cap;     /* ranks allocated in the set */
	size_t nfiles;  /* *.nws names seen */
};

/*
 * A hidden file the cache still describes: counted, removed when old, never
 * opened. 1 when the cache answered for it.
 */
static int from_cache(struct sf_scan *sc, const char *path, const struct stat *st, struct nw_sf_set *set)
{
	struct sf_centry *e = cache_find(sc->o->cache, st, sc->now);
	if (!e)
		return 0;
	e->seen = sc->now;
	sc->o->cache->hits++;
	if (!(sc->o->flags & NW_SF_NO_CLEAN) && e->removable && old_enough(e->updated_ns, sc->keep_s) &&
	    unlink(path) == 0)
		set->nremoved++;
	else
		set->nhidden++;
	return 1;
}

/* One *.nws file of the directory into set: kept, hidden (counted), removed, or bad. */
static void scan_file(struct sf_scan *sc, int dfd, const char *name, const char *path, struct nw_sf_set *set)
{
	unsigned flags = sc->o->flags;
	struct stat st;
	int have_st = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if ((flags & NW_SF_HIDE_STALE) && have_st && S_ISREG(st.st_mode) && from_cache(sc, path, &st, set))
		return;
	if (set->n == sc->cap) {
		sc->cap = sc->cap ? sc->cap * 2 : 8;
		set->ranks = nw_realloc(set->ranks, sc->cap * sizeof(*set->ranks));
	}
	char why[160];
	struct nw_sf_rank *r = &set->ranks[set->n];
	enum sf_want want = (flags & NW_SF_HEADERS) ? SF_WANT_HEADER : (flags & NW_SF_HIDE_STALE) ? SF_WANT_SHOWN
	                                                                                          : SF_WANT_ALL;
	if (sf_read_rank(path, sc->owner, have_st ? &st : NULL, want, r, why, sizeof(why)) != 0) {
		add_bad(set, path, why);
		return;
	}
	if (!(flags & NW_SF_NO_CLEAN) && clean_old(path, &r->hdr, sc->keep_s)) {
		set->nremoved++;
	} else if ((flags & NW_SF_HIDE_STALE) && r->live == NW_SF_STALE) {
		if (have_st)
			cache_add(sc->o->cache, &st, &r->hdr, sc->now);
		set->nhidden++;
	} else {
		r->origin = sc->o->origin;
		set->n++;
		return;
	}
	nw_sf_rank_release(r);
}

int nw_sf_load_more(const char *dir, const struct nw_sf_opts *o, struct nw_sf_set *set, char *err, size_t errlen)
{
	struct sf_scan sc = { .o = o, .owner = o->owner >= 0 ? (uid_t)o->owner : geteuid(), .cap = set->n,
	                      .now = mono_now() };
	if (stale_keep(&sc.keep_s, err, errlen) != 0)
		return -1;
	DIR *d = open_dir(dir, sc.owner, err, errlen);
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!has_suffix(de->d_name, ".nws"))
			continue;
		char path[512];
		int pn = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (pn < 0 || (size_t)pn >= sizeof(path))
			continue;
		if (++sc.nfiles > NW_SF_MAX_FILES) {
			add_bad(set, path, "more stats files in the directory than the 65536 read: left out");
			continue;
		}
		scan_file(&sc, dirfd(d), de->d_name, path, set);
	}
	closedir(d);
	cache_settle(o->cache, sc.now);
	return 0;
}

void nw_sf_set_sort(struct nw_sf_set *set)
{
	if (set->n > 1)
		qsort(set->ranks, set->n, sizeof(*set->ranks), cmp_rank);
}

int nw_sf_load_opts(const char *dir, const struct nw_sf_opts *o, struct nw_sf_set *set, char *err, size_t errlen)
{
	memset(set, 0, sizeof(*set));
	nw_strlcpy(set->dir, dir, sizeof(set->dir));
	if (nw_sf_load_more(dir, o, set, err, errlen) != 0)
		return -1;
	nw_sf_set_sort(set);
	return 0;
}

int nw_sf_load_flags(const char *dir, unsigned flags, struct nw_sf_set *set, char *err, size_t errlen)
{
	const struct nw_sf_opts o = { .flags = flags, .owner = -1 };
	return nw_sf_load_opts(dir, &o, set, err, errlen);
}

int nw_sf_load(const char *dir, struct nw_sf_set *set, char *err, size_t errlen)
{
	return nw_sf_load_flags(dir, 0, set, err, errlen);
}

void nw_sf_set_release(struct nw_sf_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		nw_sf_rank_release(&set->ranks[i]);
	free(set->ranks);
	free(set->bad);
	memset(set, 0, sizeof(*set));
}
