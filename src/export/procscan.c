/* SPDX-License-Identifier: Apache-2.0 */
/* procscan: training processes' stats directories through /proc (see procscan.h). */
#include "export/procscan.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

#define PS_ENV_MAX ((size_t)1 << 20) /* environment bytes looked at per process */
#define PS_CID_LEN 64                /* a container id: 64 hex digits */
#define PS_UID_LEN 36                /* a pod UID: 8-4-4-4-12 */

/* What is known of one process (kept while its pid and start time stay). */
struct ps_proc {
	pid_t pid;
	unsigned long long start;
	int ours;                 /* its environment names the plugin */
	uid_t uid;
	char *dir;                /* its stats directory inside its root (ours only; owned) */
	char pod_uid[40], cid[96];
};

struct nw_ps_cache {
	struct ps_proc *p;        /* sorted by pid */
	size_t n;
};

struct nw_ps_cache *nw_ps_cache_new(void)
{
	return nw_calloc(1, sizeof(struct nw_ps_cache));
}

static void procs_free(struct ps_proc *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i].dir);
	free(p);
}

void nw_ps_cache_free(struct nw_ps_cache *c)
{
	if (!c)
		return;
	procs_free(c->p, c->n);
	free(c);
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return 0;
	return 1;
}

/* A pod UID at s (8-4-4-4-12 hex digits, '-' or '_' between, as the cgroupfs and systemd drivers write it). */
static int uid_at(const char *s, char *out, size_t outlen)
{
	static const int dash[] = { 8, 13, 18, 23 };
	if (strlen(s) < PS_UID_LEN)
		return 0;
	for (int i = 0, k = 0; i < PS_UID_LEN; i++) {
		if (k < 4 && i == dash[k]) {
			if (s[i] != '-' && s[i] != '_')
				return 0;
			k++;
		} else if (!is_hex(s + i, 1)) {
			return 0;
		}
	}
	if (outlen <= PS_UID_LEN)
		return 0;
	for (int i = 0; i < PS_UID_LEN; i++)
		out[i] = s[i] == '_' ? '-' : s[i];
	out[PS_UID_LEN] = '\0';
	return 1;
}

/* The container id of the last component of a kubepods path, with its runtime when the path names it. */
static void cid_of(const char *path, size_t len, char *cid, size_t cidlen)
{
	static const struct {
		const char *prefix, *runtime;
	} rt[] = { { "cri-containerd-", "containerd://" }, { "crio-", "cri-o://" }, { "docker-", "docker://" },
	           { "", "" } };
	const char *last = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			last = path + i + 1;
	size_t n = (size_t)(path + len - last);
	if (n > 6 && !strncmp(last + n - 6, ".scope", 6))
		n -= 6;
	for (size_t k = 0; k < NW_ARRAY_LEN(rt); k++) {
		size_t pl = strlen(rt[k].prefix);
		if (n == pl + PS_CID_LEN && !strncmp(last, rt[k].prefix, pl) && is_hex(last + pl, PS_CID_LEN)) {
			snprintf(cid, cidlen, "%s%.*s", rt[k].runtime, PS_CID_LEN, last + pl);
			return;
		}
	}
}

int nw_ps_parse_cgroup(const char *text, char *pod_uid, size_t uidlen, char *cid, size_t cidlen)
{
	*pod_uid = *cid = '\0';
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *k = memmem(line, len, "kubepods", 8);
		for (const char *p = k; p && p < line + len;) {
			p = memmem(p, (size_t)(line + len - p), "pod", 3);
			if (!p)
				break;
			char tmp[PS_UID_LEN + 1];
			size_t left = (size_t)(line + len - (p + 3));
			if (left >= PS_UID_LEN) {
				memcpy(tmp, p + 3, PS_UID_LEN);
				tmp[PS_UID_LEN] = '\0';
				if (uid_at(tmp, pod_uid, uidlen)) {
					cid_of(line, len, cid, cidlen);
					return 1;
				}
			}
			p += 3;
		}
		line = end ? end + 1 : NULL;
	}
	return 0;
}

int nw_ps_parse_logname(const char *name, char *pod, size_t podlen, char *ns, size_t nslen, char *container,
                        size_t containerlen, char *cid, size_t cidlen)
{
	size_t n = strlen(name);
	if (n < 4 + 1 + PS_CID_LEN + 6 || strcmp(name + n - 4, ".log"))
		return 0;
	n -= 4;
	const char *id = name + n - PS_CID_LEN;
	if (id[-1] != '-' || !is_hex(id, PS_CID_LEN))
		return 0;
	size_t head = (size_t)(id - 1 - name); /* <pod>_<namespace>_<container> */
	const char *u1 = memchr(name, '_', head);
	const char *u2 = u1 ? memchr(u1 + 1, '_', (size_t)(name + head - u1 - 1)) : NULL;
	if (!u1 || !u2 || u1 == name || u2 == u1 + 1 || u2 + 1 == name + head || memchr(u2 + 1, '_', (size_t)(name + head - u2 - 1)))
		return 0;
	snprintf(pod, podlen, "%.*s", (int)(u1 - name), name);
	snprintf(ns, nslen, "%.*s", (int)(u2 - u1 - 1), u1 + 1);
	snprintf(container, containerlen, "%.*s", (int)(name + head - u2 - 1), u2 + 1);
	snprintf(cid, cidlen, "%.*s", PS_CID_LEN, id);
	return 1;
}

/* Up to max bytes of proc/pid/what into buf (NUL-terminated); its length, or -1 (errno set). */
static ssize_t read_proc(const char *proc, pid_t pid, const char *what, char *buf, size_t max)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/%d/%s", proc, (int)pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < max) {
		ssize_t r = read(fd, buf + got, max - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0 && !got) {
				int e = errno;
				close(fd);
				errno = e;
				return -1;
			}
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Field 22 of proc/pid/stat (start time in clock ticks); 0 when unknown. */
static unsigned long long start_time(const char *proc, pid_t pid)
{
	char buf[1024];
	if (read_proc(proc, pid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* The real uid of pid (the first figure of "Uid:" in its status); -1 when unknown. */
static long real_uid(const char *proc, pid_t pid)
{
	char buf[4096];
	if (read_proc(proc, pid, "status", buf, sizeof(buf)) <= 0)
		return -1;
	const char *u = strstr(buf, "\nUid:");
	return u ? strtol(u + 5, NULL, 10) : -1;
}

/*
 * uid (as this exporter sees it) as the process sees it, through its user
 * namespace's map (/proc/PID/uid_map lines: inside outside count): the
 * plugin's default directory is named by the uid it sees. uid when there
 * is no map or it does not cover uid.
 */
static long inner_uid(const char *proc, pid_t pid, long uid)
{
	char buf[4096];
	if (read_proc(proc, pid, "uid_map", buf, sizeof(buf)) <= 0)
		return uid;
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		unsigned long in, out, count;
		if (sscanf(p, "%lu %lu %lu", &in, &out, &count) == 3 && (unsigned long)uid >= out &&
		    (unsigned long)uid - out < count)
			return (long)(in + ((unsigned long)uid - out));
	}
	return uid;
}

/* The value of NAME=value in an environment block (len bytes, entries NUL-separated); NULL when absent. */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = env; p < env + len; p += strlen(p) + 1)
		if (!strncmp(p, name, nl) && p[nl] == '=')
			return p + nl + 1;
	return NULL;
}

/*
 * Look at one process not seen before: does its environment name the
 * plugin, where are its stats, who runs it. 0, or -1 when its environment
 * cannot be read (counted unreadable; remembered so, like the others).
 */
static int examine(const char *proc, struct ps_proc *p, char *env, struct nw_ps_stats *st)
{
	ssize_t n = read_proc(proc, p->pid, "environ", env, PS_ENV_MAX);
	if (n < 0) {
		st->unreadable += errno == EACCES || errno == EPERM;
		return -1;
	}
	const char *plug = env_get(env, (size_t)n, "NCCL_PROFILER_PLUGIN");
	if (!plug || !strstr(plug, "ncclwatch"))
		return 0;
	long uid = real_uid(proc, p->pid);
	if (uid < 0)
		return 0;
	const char *dir = env_get(env, (size_t)n, "NCCLWATCH_DIR");
	p->ours = 1;
	p->uid = (uid_t)uid;
	p->dir = dir && dir[0] == '/' ? nw_strdup(dir)
	                              : nw_asprintf("/dev/shm/ncclwatch-%ld", inner_uid(proc, p->pid, uid));
	char cg[8192];
	if (read_proc(proc, p->pid, "cgroup", cg, sizeof(cg)) > 0)
		nw_ps_parse_cgroup(cg, p->pod_uid, sizeof(p->pod_uid), p->cid, sizeof(p->cid));
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = ((const struct ps_proc *)a)->pid, y = ((const struct ps_proc *)b)->pid;
	return x < y ? -1 : x > y;
}

/* The cached entry of pid with this start time, or NULL. */
static const struct ps_proc *cache_find(const struct nw_ps_cache *c, pid_t pid, unsigned long long start)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->p[mid].pid == pid)
			return c->p[mid].start == start ? &c->p[mid] : NULL;
		if (c->p[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The names of the pod and container of job j from the log links and pod log directories under logs. */
static void name_job(const char *logs, struct nw_ps_job *j)
{
	char path[600], pod[128], ns[64], ctr[64], cid[80];
	const char *bare = strstr(j->container_id, "://");
	bare = bare ? bare + 3 : j->container_id;
	snprintf(path, sizeof(path), "%s/containers", logs);
	DIR *d = *bare ? opendir(path) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (nw_ps_parse_logname(e->d_name, pod, sizeof(pod), ns, sizeof(ns), ctr, sizeof(ctr), cid, sizeof(cid)) &&
		    !strcmp(cid, bare)) {
			nw_strlcpy(j->pod, pod, sizeof(j->pod));
			nw_strlcpy(j->ns, ns, sizeof(j->ns));
			nw_strlcpy(j->container, ctr, sizeof(j->container));
			break;
		}
	if (d)
		closedir(d);
	if (j->pod[0] || !j->pod_uid[0])
		return;
	/* the pod alone: <namespace>_<pod>_<uid> */
	snprintf(path, sizeof(path), "%s/pods", logs);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), ul = strlen(j->pod_uid);
		const char *u1 = strchr(e->d_name, '_');
		if (!u1 || l <= ul + 1 || strcmp(e->d_name + l - ul, j->pod_uid) || e->d_name[l - ul - 1] != '_' ||
		    e->d_name + l - ul - 1 <= u1 + 1)
			continue;
		snprintf(j->ns, sizeof(j->ns), "%.*s", (int)(u1 - e->d_name), e->d_name);
		snprintf(j->pod, sizeof(j->pod), "%.*s", (int)(e->d_name + l - ul - 1 - u1 - 1), u1 + 1);
		break;
	}
	if (d)
		closedir(d);
}

/* A directory's identity, to find it again through another process. */
struct ps_dirid {
	dev_t dev;
	ino_t ino;
};

/* Add process p's stats directory to *jobs unless it is missing or already there (same device and inode). */
static void add_job(const struct nw_ps_opts *o, const struct ps_proc *p, struct nw_ps_job **jobs, size_t *n,
                    struct ps_dirid **ids, size_t *cap)
{
	char dir[512];
	struct stat st;
	int len = snprintf(dir, sizeof(dir), "%s/%d/root%s", o->proc, (int)p->pid, p->dir);
	if (len < 0 || (size_t)len >= sizeof(dir) || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i].dev == st.st_dev && (*ids)[i].ino == st.st_ino)
			return;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*jobs = nw_realloc(*jobs, *cap * sizeof(**jobs));
		*ids = nw_realloc(*ids, *cap * sizeof(**ids));
	}
	struct nw_ps_job *j = &(*jobs)[*n];
	memset(j, 0, sizeof(*j));
	(*ids)[*n] = (struct ps_dirid){ st.st_dev, st.st_ino };
	nw_strlcpy(j->dir, dir, sizeof(j->dir));
	j->uid = p->uid;
	j->pid = p->pid;
	nw_strlcpy(j->pod_uid, p->pod_uid, sizeof(j->pod_uid));
	nw_strlcpy(j->container_id, p->cid, sizeof(j->container_id));
	if (o->logs && (j->pod_uid[0] || j->container_id[0]))
		name_job(o->logs, j);
	(*n)++;
}

/* One process of the listing: from the cache when its pid and start time match, else examined. */
static void scan_pid(const struct nw_ps_opts *o, const struct nw_ps_cache *old, pid_t pid, char *env,
                     struct nw_ps_stats *st, struct ps_proc *out)
{
	unsigned long long start = start_time(o->proc, pid);
	const struct ps_proc *c = cache_find(old, pid, start);
	memset(out, 0, sizeof(*out));
	if (c) {
		*out = *c;
		out->dir = c->dir ? nw_strdup(c->dir) : NULL;
		return;
	}
	out->pid = pid;
	out->start = start;
	examine(o->proc, out, env, st);
}

int nw_ps_scan(struct nw_ps_cache *c, const struct nw_ps_opts *o, struct nw_ps_job **jobs, size_t *n,
               struct nw_ps_stats *st, char *err, size_t errlen)
{
	*jobs = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	DIR *d = opendir(o->proc);
	if (!d)
		return nw_seterr(err, errlen, "cannot list processes in '%s': %s", o->proc, strerror(errno));
	struct ps_proc *now = NULL;
	size_t nnow = 0, capnow = 0, capjobs = 0;
	struct ps_dirid *ids = NULL;
	char *env = nw_malloc(PS_ENV_MAX);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || !isdigit((unsigned char)e->d_name[0]))
			continue;
		if (nnow == capnow) {
			capnow = capnow ? capnow * 2 : 256;
			now = nw_realloc(now, capnow * sizeof(*now));
		}
		struct ps_proc *p = &now[nnow++];
		scan_pid(o, c, (pid_t)pid, env, st, p);
		st->processes++;
		if (p->ours) {
			st->plugin++;
			add_job(o, p, jobs, n, &ids, &capjobs);
		}
	}
	closedir(d);
	free(env);
	free(ids);
	/* the listing is the new memory: processes that are gone are forgotten */
	procs_free(c->p, c->n);
	c->p = now;
	c->n = nnow;
	if (c->n > 1)
		qsort(c->p, c->n, sizeof(*c->p), cmp_pid);
	return 0;
}
