/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclinfo: NCCL's debug output captured per process by run
 * (NCCL_DEBUG_FILE=DIR/nccl.%h.%p.log), read by logscan (parse/ncclog.h)
 * all together, and the report kept to what a job report shows (job.h).
 */
#include "job/job.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/ncclog.h"
#include "util/util.h"

/* Whether a file name is a captured log: nccl.<...>.log. */
static int is_log(const char *name)
{
	size_t n = strlen(name);
	return n > 9 && !strncmp(name, "nccl.", 5) && !strcmp(name + n - 4, ".log");
}

/* Keys of the logscan report a job report shows; pairs are cut to the first 256. */
static json_t *trim(json_t *rep, size_t nfiles)
{
	static const char *const keep[] = { "hosts", "nhosts", "versions", "pytorch_nccl_version", "nranks", "nnodes",
		                            "communicators", "transports", "npairs", "collective_transports", "networks",
		                            "graphs", "algorithms", "env", "errors", "timeouts", "diagnoses", "cause",
		                            "bandwidth" };
	json_t *o = json_object();
	for (size_t i = 0; i < NW_ARRAY_LEN(keep); i++) {
		json_t *v = json_object_get(rep, keep[i]);
		if (v)
			json_object_set(o, keep[i], v);
	}
	json_t *pairs = json_object_get(rep, "pairs");
	json_t *cut = json_array();
	for (size_t i = 0; json_is_array(pairs) && i < json_array_size(pairs) && i < 256; i++)
		json_array_append(cut, json_array_get(pairs, i));
	json_object_set_new(o, "pairs", cut);
	json_object_set_new(o, "logs", json_integer((json_int_t)nfiles));
	return o;
}

json_t *nw_job_nccl_info(const char *dir, size_t *nfiles)
{
	*nfiles = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	struct nw_log *lg = nw_log_new();
	struct dirent *e;
	char err[NW_ERRLEN];
	while ((e = readdir(d)) != NULL) {
		if (!is_log(e->d_name))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (nw_log_feed_file(lg, f, e->d_name, err, sizeof(err)) == 0)
			(*nfiles)++;
		fclose(f);
	}
	closedir(d);
	json_t *out = NULL;
	if (*nfiles) {
		json_t *rep = nw_log_report(lg);
		if (nw_log_input_kind(lg) == NW_LOG_INPUT_LOG)
			out = trim(rep, *nfiles);
		json_decref(rep);
	}
	nw_log_free(lg);
	return out;
}
