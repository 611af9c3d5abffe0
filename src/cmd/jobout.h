/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobout: the files made from a job's parts, shared by `run` (at the end
 * of a job) and `report --job`: the HTML report, the merged timeline
 * beside it, and, in a job directory, results.json (the job as a result
 * run that compare reads).
 */
#ifndef NW_CMD_JOBOUT_H
#define NW_CMD_JOBOUT_H

#include <stddef.h>

#include <jansson.h>

#include "job/job.h"

/* Where the outputs go: the report page; the timeline and results beside it. */
struct nw_jobout {
	const char *report;     /* the page */
	const char *jobdir;     /* the job directory (its kept files are linked; results.json goes there), or NULL */
	const char *title;      /* NULL: "ncclwatch job ID" */
	char trace[4096];       /* filled: the timeline written */
	char results[4096];     /* filled: results.json written, or "" */
};

/*
 * Merge parts into v (nw_job_view_release it) and write the outputs, each
 * whole or not at all. 0, or -1 with err (a part malformed, a file not
 * writable).
 */
int nw_jobout_write(const json_t *parts, struct nw_jobout *o, struct nw_job_view *v, char *err, size_t errlen);

struct nw_store_opts;

/*
 * report --job ID: the parts of job ID (a job directory, ./ncclwatch-job-ID,
 * or the history's runs of source "job" with that id) merged into one
 * report at out (default: DIR/report.html, or ./ncclwatch-job-ID.html
 * when the parts come from the history). Prints; returns the exit status.
 */
int nw_jobout_report(const char *id, const char *out, const char *title, const struct nw_store_opts *so);

#endif
