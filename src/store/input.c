/* SPDX-License-Identifier: Apache-2.0 */
/* What a user may name as a run: an id, a file, or a baseline name. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "parse/nccltests.h"
#include "store/db.h"
#include "store/input.h"
#include "util/util.h"

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Load run id (from_name: the baseline name that led there, or NULL). */
static int load_from_db(const struct nw_store_opts *o, const char *spec, int by_name,
                        struct nw_run *run, char *label, size_t labellen, char *err, size_t errlen)
{
	char path[PATH_MAX];
	if (nw_store_path(o, path, sizeof(path), err, errlen))
		return -1;
	struct nw_store *s;
	struct stat st;
	if (by_name && !nw_db_is_pg(path) && stat(path, &st) != 0)
		return nw_seterr(err, errlen, "'%s' is not a run id, a file, or a baseline name (no history database at '%s')", spec, path);
	if (nw_store_open(path, NW_STORE_READ, &s, err, errlen))
		return -1;
	int rc = -1;
	long long id = 0;
	if (by_name) {
		int found = nw_store_baseline_get(s, spec, &id, err, errlen);
		if (found < 0)
			goto out;
		if (!found) {
			nw_seterr(err, errlen, "'%s' is not a run id, a file, or a baseline name in '%s': 'ncclwatch history baseline' lists the names",
			          spec, path);
			goto out;
		}
		snprintf(label, labellen, "%s (run %lld)", spec, id);
	} else {
		char *end;
		errno = 0;
		id = strtoll(spec, &end, 10);
		if (errno || *end || id <= 0) {
			nw_seterr(err, errlen, "bad run id '%s': 'ncclwatch history' lists the runs", spec);
			goto out;
		}
		snprintf(label, labellen, "run %lld", id);
	}
	rc = nw_store_load(s, id, run, err, errlen);
out:
	nw_store_close(s);
	return rc;
}

/* An ncclwatch results JSON file; 1 when the file is not one (try other kinds). */
static int load_json(const char *path, struct nw_run *run, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return 1;
	json_t *schema = json_object_get(doc, "schema");
	if (!json_is_string(schema) || strncmp(json_string_value(schema), "ncclwatch.results/", 18)) {
		json_decref(doc);
		return 1;
	}
	int rc = nw_run_from_json(doc, run, err, errlen);
	json_decref(doc);
	if (rc) {
		char inner[NW_ERRLEN];
		nw_strlcpy(inner, err ? err : "", sizeof(inner));
		return nw_seterr(err, errlen, "'%s': %s", path, inner);
	}
	return 0;
}

/*
 * nccl-tests output, text or -J JSON. Several runs in one file (one per op,
 * or repeats) are merged into one run: compare then matches them by key and
 * uses the spread of repeats as their noise.
 */
static int merge_runs(struct nw_run *runs, int n, struct nw_run *run, const char *what, char *err,
                      size_t errlen)
{
	if (n == 0) {
		free(runs);
		return nw_seterr(err, errlen, "%s is neither an ncclwatch results file nor nccl-tests output (no result table found)",
		                 what);
	}
	*run = runs[0];
	for (int i = 1; i < n; i++) {
		for (size_t k = 0; k < runs[i].nrows; k++) {
			nw_run_add(run, &runs[i].rows[k]);
			runs[i].rows[k].rank_times = NULL; /* moved */
			runs[i].rows[k].nrank_times = 0;
			runs[i].rows[k].iter_us = NULL;
			runs[i].rows[k].niter = 0;
		}
		nw_run_release(&runs[i]);
	}
	free(runs);
	return 0;
}

static int load_nccltests(const char *path, struct nw_run *run, char *err, size_t errlen)
{
	struct nw_run *runs = NULL;
	int n = nw_nt_parse_path(path, &runs, NULL, err, errlen);
	if (n < 0)
		return -1;
	char what[600];
	snprintf(what, sizeof(what), "'%.580s'", path);
	return merge_runs(runs, n, run, what, err, errlen);
}

/* Standard input: results JSON or nccl-tests output (text or -J JSON). */
static int load_stdin(struct nw_run *run, char *err, size_t errlen)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = nw_malloc(cap);
	size_t got;
	while ((got = fread(buf + len, 1, cap - len, stdin)) > 0) {
		len += got;
		if (len == cap) {
			if (cap >= ((size_t)1 << 30)) {
				free(buf);
				return nw_seterr(err, errlen, "standard input is larger than 1 GiB: give a file instead");
			}
			cap *= 2;
			buf = nw_realloc(buf, cap);
		}
	}
	if (ferror(stdin)) {
		free(buf);
		return nw_seterr(err, errlen, "cannot read standard input: %s", strerror(errno));
	}
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	const json_t *schema = json_object_get(doc, "schema");
	int rc;
	if (json_is_string(schema) && !strncmp(json_string_value(schema), "ncclwatch.results/", 18)) {
		rc = nw_run_from_json(doc, run, err, errlen);
	} else {
		struct nw_run *runs = NULL;
		int n = nw_nt_parse_buf(buf, len, "-", &runs, NULL, err, errlen);
		rc = n < 0 ? -1 : merge_runs(runs, n, run, "standard input", err, errlen);
	}
	if (doc)
		json_decref(doc);
	free(buf);
	return rc;
}

int nw_input_load(const struct nw_store_opts *o, const char *spec, struct nw_run *run,
                  char *label, size_t labellen, char *err, size_t errlen)
{
	nw_run_init(run);
	if (!spec || !*spec)
		return nw_seterr(err, errlen, "empty run name: give a run id, a baseline name or a results file");
	if (!strcmp(spec, "-")) {
		snprintf(label, labellen, "stdin");
		return load_stdin(run, err, errlen);
	}
	if (all_digits(spec))
		return load_from_db(o, spec, 0, run, label, labellen, err, errlen);
	struct stat st;
	if (stat(spec, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return nw_seterr(err, errlen, "'%s' is not a regular file: give a run id, a baseline name or a results file", spec);
		snprintf(label, labellen, "%s", base_name(spec));
		int rc = load_json(spec, run, err, errlen);
		if (rc <= 0)
			return rc;
		return load_nccltests(spec, run, err, errlen);
	}
	int stat_errno = errno;
	if (strchr(spec, '/'))
		return nw_seterr(err, errlen, "cannot read '%s': %s", spec, strerror(stat_errno));
	if (nw_store_baseline_name_ok(spec, NULL, 0))
		return nw_seterr(err, errlen, "'%s' is not a run id, a file, or a baseline name", spec);
	return load_from_db(o, spec, 1, run, label, labellen, err, errlen);
}
