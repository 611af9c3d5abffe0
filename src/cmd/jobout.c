/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobout: a job's report, timeline and results written from its parts
 * (cmd/jobout.h), for run and report --job.
 */
#include "cmd/jobout.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/result.h"
#include "report/report.h"
#include "util/util.h"

/* Write path through a temporary file renamed into place: fn writes the content. */
static int write_whole(const char *path, int (*fn)(FILE *f, const void *arg, char *err, size_t errlen),
                       const void *arg, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return nw_seterr(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	int rc = fn(f, arg, err, errlen);
	if (fclose(f) != 0 && rc == 0)
		rc = nw_seterr(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = nw_seterr(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	if (rc != 0)
		unlink(tmp);
	return rc;
}

static int put_json(FILE *f, const void *arg, char *err, size_t errlen)
{
	if (json_dumpf((const json_t *)arg, f, JSON_COMPACT) != 0 || fputc('\n', f) == EOF)
		return nw_seterr(err, errlen, "write error");
	return 0;
}

struct page {
	const struct nw_job_view *v;
	const char *title;
	const struct nw_report_job_links *links;
};

static int put_page(FILE *f, const void *arg, char *err, size_t errlen)
{
	const struct page *p = arg;
	return nw_report_job_html(f, p->v, p->title, p->links, err, errlen);
}

/* The timeline's path beside the report: DIR/timeline.json for DIR/report.html, else STEM.timeline.json. */
static void trace_path(const char *report, char *out, size_t len)
{
	const char *base = strrchr(report, '/') ? strrchr(report, '/') + 1 : report;
	size_t n = strlen(report);
	if (!strcmp(base, "report.html"))
		snprintf(out, len, "%.*stimeline.json", (int)(base - report), report);
	else if (n > 5 && !strcmp(report + n - 5, ".html"))
		snprintf(out, len, "%.*s.timeline.json", (int)(n - 5), report);
	else
		snprintf(out, len, "%s.timeline.json", report);
}

/* Whether a and b name the same directory. */
static int same_dir(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The kept files of the job directory (dumps, NCCL logs), as links relative to the report's directory. */
static size_t kept_files(const char *jobdir, const char *report, char ***out)
{
	char rdir[PATH_MAX], nodes[PATH_MAX];
	nw_path_dir(report, rdir, sizeof(rdir));
	int rel = same_dir(rdir, jobdir);
	char absdir[PATH_MAX];
	if (!realpath(jobdir, absdir))
		nw_strlcpy(absdir, jobdir, sizeof(absdir));
	snprintf(nodes, sizeof(nodes), "%s/nodes", jobdir);
	size_t n = 0;
	*out = NULL;
	DIR *d = opendir(nodes);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		static const char *const subs[] = { "", "/dumps" };
		for (size_t s = 0; s < NW_ARRAY_LEN(subs); s++) {
			char p[PATH_MAX + 300];
			snprintf(p, sizeof(p), "%s/%s%s", nodes, e->d_name, subs[s]);
			DIR *d2 = opendir(p);
			struct dirent *f;
			while (d2 && (f = readdir(d2)) != NULL && n < 4096) {
				size_t len = strlen(f->d_name);
				int log = !s && !strncmp(f->d_name, "nccl.", 5) && len > 4 && !strcmp(f->d_name + len - 4, ".log");
				int dump = s && len > 5 && !strcmp(f->d_name + len - 5, ".json");
				if (!log && !dump)
					continue;
				*out = nw_realloc(*out, (n + 1) * sizeof(**out));
				(*out)[n++] = nw_asprintf("%s%snodes/%s%s/%s", rel ? "" : absdir, rel ? "" : "/", e->d_name, subs[s],
				                          f->d_name);
			}
			if (d2)
				closedir(d2);
		}
	}
	if (d)
		closedir(d);
	return n;
}

int nw_jobout_write(const json_t *parts, struct nw_jobout *o, struct nw_job_view *v, char *err, size_t errlen)
{
	o->trace[0] = o->results[0] = '\0';
	if (nw_job_view_build(parts, v, err, errlen) != 0)
		return -1;
	trace_path(o->report, o->trace, sizeof(o->trace));
	json_t *tr = nw_job_trace(v);
	int rc = write_whole(o->trace, put_json, tr, err, errlen);
	json_decref(tr);
	if (rc == 0 && o->jobdir) {
		struct nw_run run;
		nw_job_to_run(v, &run);
		json_t *doc = nw_run_to_json(&run, 0);
		snprintf(o->results, sizeof(o->results), "%s/results.json", o->jobdir);
		rc = write_whole(o->results, put_json, doc, err, errlen);
		json_decref(doc);
		nw_run_release(&run);
	}
	char **files = NULL;
	size_t nfiles = o->jobdir ? kept_files(o->jobdir, o->report, &files) : 0;
	const char *tb = strrchr(o->trace, '/') ? strrchr(o->trace, '/') + 1 : o->trace;
	struct nw_report_job_links links = { .trace = tb, .files = (const char *const *)files, .nfiles = nfiles };
	struct page pg = { .v = v, .title = o->title, .links = &links };
	if (rc == 0)
		rc = write_whole(o->report, put_page, &pg, err, errlen);
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	return rc;
}
