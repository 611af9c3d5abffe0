/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_job: `report --job ID` (cmd/jobout.h): a job's parts found in its
 * directory or in the history (each node records its part as a run of
 * source "job"), merged into one report and one timeline.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/jobout.h"
#include "model/result.h"
#include "store/store.h"
#include "util/util.h"

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The parts of job id in the history: every run of source job whose extra.job.id is id. -1 with err. */
static int parts_from_history(const char *id, const struct nw_store_opts *so, json_t **parts, char *err,
                              size_t errlen)
{
	char path[PATH_MAX];
	struct nw_store *s;
	if (nw_store_path(so, path, sizeof(path), err, errlen) || nw_store_open(path, NW_STORE_READ, &s, err, errlen))
		return -1;
	struct nw_store_filter f = { .source = "job" };
	struct nw_store_entry *e = NULL;
	size_t n = 0;
	if (nw_store_list(s, &f, &e, &n, err, errlen) != 0) {
		nw_store_close(s);
		return -1;
	}
	json_t *a = json_array();
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (strcmp(e[i].source, "job"))
			continue;
		struct nw_run run;
		if (nw_store_load(s, e[i].id, &run, err, errlen) != 0) {
			rc = -1;
			break;
		}
		const json_t *job = run.h.extra ? json_object_get(run.h.extra, "job") : NULL;
		const char *jid = json_string_value(json_object_get(job, "id"));
		const json_t *part = json_object_get(job, "part");
		if (jid && !strcmp(jid, id) && json_is_object(part))
			json_array_append(a, (json_t *)part);
		nw_run_release(&run);
	}
	free(e);
	nw_store_close(s);
	if (rc == 0 && !json_array_size(a))
		rc = nw_seterr(err, errlen, "no job '%s': not a directory, no ./ncclwatch-job-%s, and no run of source job "
		                            "with that id in the history '%s'", id, id, path);
	if (rc != 0) {
		json_decref(a);
		return -1;
	}
	*parts = a;
	return 0;
}

int nw_jobout_report(const char *id, const char *out, const char *title, const struct nw_store_opts *so)
{
	char dir[PATH_MAX + 32] = "", report[PATH_MAX + 64], err[NW_ERRLEN];
	json_t *parts = NULL;
	if (is_dir(id))
		nw_strlcpy(dir, id, sizeof(dir));
	else if (snprintf(dir, sizeof(dir), "ncclwatch-job-%s", id), !is_dir(dir))
		dir[0] = '\0';
	int rc = dir[0] ? nw_job_parts_dir(dir, &parts, err, sizeof(err)) : parts_from_history(id, so, &parts, err, sizeof(err));
	if (rc != 0)
		return nw_error("report --job: %s", err), 2;
	if (out)
		nw_strlcpy(report, out, sizeof(report));
	else if (dir[0])
		snprintf(report, sizeof(report), "%s/report.html", dir);
	else
		snprintf(report, sizeof(report), "ncclwatch-job-%s.html", id);
	struct nw_jobout o = { .report = report, .jobdir = dir[0] ? dir : NULL, .title = title };
	struct nw_job_view v;
	rc = nw_jobout_write(parts, &o, &v, err, sizeof(err));
	if (rc == 0) {
		fprintf(stderr, "wrote %s (%zu node%s, %zu stats files); timeline %s%s%s\n", report, v.nnodes,
		        v.nnodes == 1 ? "" : "s", v.nranks, o.trace, o.results[0] ? "; results " : "", o.results);
		for (size_t i = 1; i < v.nnodes; i++)
			fprintf(stderr, "  clock of %s: %+.1f us (%s)\n", v.nodes[i].host, (double)v.nodes[i].offset_ns / 1e3,
			        v.nodes[i].offset_how);
	} else
		nw_error("report --job: %s", err);
	nw_job_view_release(&v);
	json_decref(parts);
	return rc == 0 ? 0 : 2;
}
