/* SPDX-License-Identifier: Apache-2.0 */
/*
 * part: a node's part of a job as one JSON document (ncclwatch.jobpart/1,
 * docs/run.md): what run knew (command, times, exit, mode, settings) and
 * what the watcher kept (ranks with their final figures and timelines,
 * bandwidth intervals, lateness, exposed-communication windows,
 * incidents). Written into the job directory whole or not at all, and
 * read back from there (job.h).
 */
#include "job/job_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/strbuf.h"
#include "util/util.h"

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *hex(uint64_t v)
{
	char b[17];
	snprintf(b, sizeof(b), "%016" PRIx64, v);
	return json_string(b);
}

static json_t *iso(uint64_t ns)
{
	if (!ns)
		return json_null();
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char b[40];
	gmtime_r(&t, &tm);
	snprintf(b, sizeof(b), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	         tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns / 1000000u % 1000u));
	return json_string(b);
}

/* A file's flight-recorder operations, oldest first, one line each (docs/run.md: timeline). */
static json_t *timeline_text(const struct jw_file *f)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (size_t k = 0; k < f->n; k++) {
		const struct nw_jop *o = &f->ops[f->n < f->cap ? k : (f->head + k) % f->cap];
		nw_strbuf_addf(&sb, "%" PRIu64 " %" PRIu64 " %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %u %u %u %u %s %s\n",
		               o->seq, o->bytes, o->op, o->enq_ns, o->start_ns, o->end_ns, o->src, o->flags, o->nch,
		               o->dtype, o->algo[0] ? o->algo : "-", o->proto[0] ? o->proto : "-");
	}
	json_t *s = json_string(sb.buf);
	nw_strbuf_release(&sb);
	return s;
}

/* The final figures of f per op and size bucket (the last sample). */
static json_t *per_op(const struct nw_jobw *w, const struct jw_file *f)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->prev.n; i++) {
		const struct nw_sample_ent *e = &w->prev.e[i];
		if (e->comm_hash != f->comm || e->rank != f->rank || e->pid != f->pid || e->proc_start != f->proc_start)
			continue;
		json_array_append_new(a, json_pack("[s, i, o, o, o, o, o, o, o, o]", nws_op_name(e->op), (int)e->bucket,
		                                   jint(e->count), jint(e->bytes), jint(e->t[0].count), jint(e->t[0].bytes),
		                                   jint(e->t[0].sum_ns), jint(e->t[1].count), jint(e->t[1].bytes),
		                                   jint(e->t[1].sum_ns)));
	}
	return a;
}

static const char *live_name(int live)
{
	return nw_sf_live_name((enum nw_sf_live)live);
}

static json_t *ranks_json(const struct nw_jobw *w)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->nf; i++) {
		const struct jw_file *f = &w->f[i];
		json_t *r = json_pack("{s:o, s:s, s:i, s:i, s:s, s:i, s:i, s:s, s:i}", "comm", hex(f->comm), "name", f->name,
		                      "rank", f->rank, "nranks", f->nranks, "host", f->host, "pid", f->pid, "gpu", f->gpu,
		                      "state", live_name(f->live), "abi", (int)f->abi);
		json_object_set_new(r, "ops", jint(f->ops_total));
		json_object_set_new(r, "dropped", jint(f->ops_dropped));
		json_object_set_new(r, "slow_ops", jint(f->slow_ops));
		json_object_set_new(r, "dumps", jint(f->dumps));
		json_object_set_new(r, "missed", jint(f->missed));
		json_object_set_new(r, "timeline_dropped", jint(f->tl_dropped));
		json_object_set_new(r, "disabled", json_string(f->disabled));
		json_object_set_new(r, "per_op", per_op(w, f));
		json_object_set_new(r, "timeline", timeline_text(f));
		json_array_append_new(a, r);
	}
	return a;
}

static json_t *series_json(const struct nw_jobw *w)
{
	json_t *a = json_array();
	size_t n = w->niv + (w->open ? 1 : 0);
	for (size_t i = 0; i < n; i++) {
		const struct jw_interval *iv = &w->iv[i];
		json_t *cells = json_array();
		for (size_t k = 0; k < iv->n; k++) {
			const struct jw_cell *c = &iv->c[k];
			json_array_append_new(cells, json_pack("[o, s, i, o, o, o, o, o, o, o, o]", hex(c->comm), nws_op_name(c->op),
			                                       (int)c->bucket, jint(c->count), jint(c->bytes), jint(c->t_count[0]),
			                                       jint(c->t_bytes[0]), jint(c->t_ns[0]), jint(c->t_count[1]),
			                                       jint(c->t_bytes[1]), jint(c->t_ns[1])));
		}
		json_array_append_new(a, json_pack("{s:o, s:o, s:o}", "t0", jint(iv->t0), "t1", jint(iv->t1), "cells", cells));
	}
	return a;
}

static json_t *late_json(const struct nw_jobw *w)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->nlate; i++) {
		const struct jw_late *l = &w->late[i];
		json_t *ranks = json_array(), *late = json_array();
		for (int k = 0; k < l->n; k++) {
			json_array_append_new(ranks, json_integer(l->rank[k]));
			json_array_append_new(late, json_real(l->late_us[k]));
		}
		json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:o}", "t", jint(l->t), "comm", hex(l->comm), "ranks", ranks,
		                                   "late_us", late));
	}
	return a;
}

static json_t *ovl_json(const struct nw_jobw *w)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->novl; i++) {
		const struct jw_ovl *o = &w->ovl[i];
		json_array_append_new(a, json_pack("{s:o, s:o, s:i, s:i, s:o, s:o, s:o, s:o}", "t0", jint(o->t0), "t1",
		                                   jint(o->t1), "pid", o->pid, "rank", o->rank, "wall_ns", jint(o->wall),
		                                   "nccl_ns", jint(o->nccl), "compute_ns", jint(o->compute), "exposed_ns",
		                                   jint(o->exposed)));
	}
	return a;
}

static json_t *inc_json(const struct nw_jobw *w)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->ninc; i++)
		json_array_append_new(a, json_pack("{s:o, s:s, s:s}", "t_ns", jint(w->inc[i].t), "kind", w->inc[i].kind,
		                                   "text", w->inc[i].text));
	return a;
}

static json_t *exit_json(const struct nw_job_exit *x)
{
	char sig[32];
	json_t *o = json_pack("{s:i, s:b, s:s, s:b}", "code", x->code, "interrupted", x->interrupted, "by", x->by,
	                      "not_started", x->not_started);
	json_object_set_new(o, "signal", x->signal ? json_string(nw_job_signame(x->signal, sig, sizeof(sig))) : json_null());
	json_object_set_new(o, "status", json_integer(x->signal ? 128 + x->signal : x->code));
	return o;
}

static json_t *borrowed(json_t *x)
{
	return x ? json_incref(x) : json_null();
}

json_t *nw_job_part(const struct nw_jobw *w, const struct nw_job_meta *m)
{
	json_t *cmd = json_array();
	for (char *const *a = m->argv; a && *a; a++)
		json_array_append_new(cmd, json_string(*a));
	json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s}", "schema", "ncclwatch.jobpart/1", "job", m->job_id, "host",
	                      m->host, "files", m->files_dir ? m->files_dir : "", "command", cmd, "cwd", m->cwd ? m->cwd : "");
	json_object_set_new(p, "start_ns", jint(m->start_ns));
	json_object_set_new(p, "end_ns", jint(m->end_ns));
	json_object_set_new(p, "start", iso(m->start_ns));
	json_object_set_new(p, "end", iso(m->end_ns));
	json_object_set_new(p, "exit", exit_json(&m->exit));
	json_object_set_new(p, "mode", borrowed(m->mode));
	json_object_set_new(p, "settings", m->settings ? json_incref(m->settings) : json_object());
	json_object_set_new(p, "kept", m->kept ? json_incref(m->kept) : json_array());
	json_object_set_new(p, "env", m->env ? json_incref(m->env) : json_object());
	json_object_set_new(p, "nccl", borrowed(m->nccl));
	json_object_set_new(p, "sample_s", json_real(m->sample_s));
	json_object_set_new(p, "hang_s", json_real(m->hang_s));
	json_object_set_new(p, "log_s", json_integer(m->log_s));
	json_object_set_new(p, "overlap", json_boolean(m->overlap));
	json_object_set_new(p, "reads", json_integer(w ? w->reads : 0));
	json_object_set_new(p, "ranks", w ? ranks_json(w) : json_array());
	json_object_set_new(p, "series", w ? series_json(w) : json_array());
	json_object_set_new(p, "lateness", w ? late_json(w) : json_array());
	json_object_set_new(p, "overlap_windows", w ? ovl_json(w) : json_array());
	json_object_set_new(p, "incidents", w ? inc_json(w) : json_array());
	json_object_set_new(p, "incidents_dropped", jint(w ? w->inc_dropped : 0));
	return p;
}

void nw_job_node_dir(const char *jobdir, const char *host, char *out, size_t len)
{
	char safe[128];
	size_t k = 0;
	for (const char *h = host; *h && k + 1 < sizeof(safe); h++, k++)
		safe[k] = (char)(strchr("/\\ \t\n", *h) || (unsigned char)*h < 32 || (k == 0 && *h == '.') ? '_' : *h);
	safe[k] = '\0';
	snprintf(out, len, "%s/nodes/%s", jobdir, k ? safe : "_");
}

/* mkdir -p of path (mode 0755 for what it makes). -1 with err. */
static int mkdirs(const char *path, char *err, size_t errlen)
{
	char p[PATH_MAX];
	nw_strlcpy(p, path, sizeof(p));
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return nw_seterr(err, errlen, "cannot make directory '%s': %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0755) != 0 && errno != EEXIST)
		return nw_seterr(err, errlen, "cannot make directory '%s': %s", p, strerror(errno));
	return 0;
}

int nw_job_part_write(const char *node_dir, const json_t *part, char *err, size_t errlen)
{
	if (mkdirs(node_dir, err, errlen) != 0)
		return -1;
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/part.json", node_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return nw_seterr(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
	int bad = json_dumpf(part, f, JSON_COMPACT) != 0;
	bad |= fputc('\n', f) == EOF;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return nw_seterr(err, errlen, "cannot write '%s': %s", path, e ? strerror(e) : "write failed");
	}
	return 0;
}

static int by_host(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *hx = json_string_value(json_object_get(x, "host")), *hy = json_string_value(json_object_get(y, "host"));
	return strcmp(hx ? hx : "", hy ? hy : "");
}

int nw_job_parts_dir(const char *dir, json_t **parts, char *err, size_t errlen)
{
	char nodes[PATH_MAX];
	snprintf(nodes, sizeof(nodes), "%s/nodes", dir);
	DIR *d = opendir(nodes);
	if (!d)
		return nw_seterr(err, errlen, "'%s' is no job directory of 'ncclwatch run' (no nodes/ in it: %s)", dir,
		                 strerror(errno));
	json_t *list[4096];
	size_t n = 0;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL && n < NW_ARRAY_LEN(list)) {
		if (e->d_name[0] == '.')
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s/part.json", nodes, e->d_name);
		if (access(p, F_OK) != 0)
			continue;
		json_error_t je;
		json_t *x = json_load_file(p, 0, &je);
		const char *schema = x ? json_string_value(json_object_get(x, "schema")) : NULL;
		if (!x || !schema || strcmp(schema, "ncclwatch.jobpart/1") != 0) {
			rc = nw_seterr(err, errlen, "'%s' is no job part (%s)", p, x ? "schema is not ncclwatch.jobpart/1" : je.text);
			json_decref(x);
			break;
		}
		list[n++] = x;
	}
	closedir(d);
	if (rc == 0 && !n)
		rc = nw_seterr(err, errlen, "'%s' holds no node's part yet (nodes/*/part.json): the job is still running, or "
		                            "no node finished", dir);
	if (n > 1)
		qsort(list, n, sizeof(*list), by_host);
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, list[i]);
	if (rc != 0) {
		json_decref(a);
		return -1;
	}
	*parts = a;
	return 0;
}

/* Whether name is a stats file (.nws) or a trace dump (trace.*.json): 1, 2, or 0. */
static int kind_of(const char *name)
{
	size_t n = strlen(name);
	if (n > 4 && !strcmp(name + n - 4, ".nws"))
		return 1;
	if (n > 11 && !strncmp(name, "trace.", 6) && !strcmp(name + n - 5, ".json"))
		return 2;
	return 0;
}

/* Copy the regular file from into to (0600). -1 on failure. */
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -1;
	struct stat st;
	if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return -1;
	}
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -1;
			break;
		}
	rc |= n < 0 ? -1 : 0;
	rc |= close(out);
	close(in);
	return rc;
}

int nw_job_keep_files(const char *stats_dir, const char *node_dir, size_t *nstats, size_t *ndumps, char *err,
                      size_t errlen)
{
	*nstats = *ndumps = 0;
	DIR *d = opendir(stats_dir);
	if (!d)
		return 0;
	char sub[2][PATH_MAX];
	snprintf(sub[0], sizeof(sub[0]), "%s/stats", node_dir);
	snprintf(sub[1], sizeof(sub[1]), "%s/dumps", node_dir);
	int made[2] = { 0, 0 }, rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int k = kind_of(e->d_name);
		if (!k)
			continue;
		if (!made[k - 1]) {
			if (mkdirs(sub[k - 1], err, errlen) != 0) {
				rc = -1;
				break;
			}
			made[k - 1] = 1;
		}
		char from[PATH_MAX + 300], to[PATH_MAX + 300];
		snprintf(from, sizeof(from), "%s/%s", stats_dir, e->d_name);
		snprintf(to, sizeof(to), "%s/%s", sub[k - 1], e->d_name);
		if (copy_file(from, to) == 0)
			(*(k == 1 ? nstats : ndumps))++;
	}
	closedir(d);
	return rc;
}

void nw_job_clear_stats(const char *stats_dir)
{
	DIR *d = opendir(stats_dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!kind_of(e->d_name) && strcmp(e->d_name, "dump"))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", stats_dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(stats_dir);
}
