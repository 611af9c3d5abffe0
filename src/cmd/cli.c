/* SPDX-License-Identifier: Apache-2.0 */
/* What every command shares besides its option table (see cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "bench/bench.h"
#include "model/coll.h"
#include "probe/ncclenv.h"
#include "util/util.h"

const char *nw_cli_nearest(const char *typed, const char *const *names, size_t n)
{
	const char *best = NULL;
	int bestd = 9;
	size_t lt = strlen(typed);
	for (size_t i = 0; i < n; i++) {
		int d = nw_edit_distance(typed, names[i]);
		if (lt >= 3 && !strncmp(names[i], typed, lt))
			d = 1; /* a prefix of it */
		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	int limit = lt <= 4 ? 1 : lt <= 8 ? 2 : 3;
	return best && bestd <= limit ? best : NULL;
}

int nw_cli_colour(void)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	if (nc && *nc)
		return 0;
	if (term && !strcmp(term, "dumb"))
		return 0;
	return isatty(STDOUT_FILENO);
}

int nw_cli_json_text(const struct nw_opt_out *j)
{
	return !j->on || j->path;
}

int nw_cli_check_output(const char *cmd, const char *opt, const char *path)
{
	struct stat st;
	if (!path || !strcmp(path, "-"))
		return 0;
	if (!*path)
		return nw_error("%s: %s needs a file name", cmd, opt), 2;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return nw_error("%s: %s '%s' is a directory; give a file name", cmd, opt, path), 2;
		if (access(path, W_OK) != 0)
			return nw_error("%s: %s '%s' cannot be written: %m", cmd, opt, path), 2;
		return 0;
	}
	char dir[4096];
	nw_path_dir(path, dir, sizeof(dir));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return nw_error("%s: %s '%s': the directory '%s' does not exist", cmd, opt, path, dir), 2;
	if (access(dir, W_OK | X_OK) != 0)
		return nw_error("%s: %s '%s' cannot be created in '%s': %m", cmd, opt, path, dir), 2;
	return 0;
}

int nw_cli_json_write(const char *cmd, const struct nw_opt_out *j, const json_t *doc, size_t flags)
{
	if (!j->path) {
		json_dumpf(doc, stdout, flags);
		fputc('\n', stdout);
		return 0;
	}
	FILE *f = fopen(j->path, "w");
	if (!f)
		return nw_error("%s: --json '%s': %m", cmd, j->path);
	int bad = json_dumpf(doc, f, flags) != 0 || fputc('\n', f) == EOF;
	bad |= fclose(f) != 0;
	if (bad)
		return nw_error("%s: --json '%s': writing failed: %m", cmd, j->path);
	return 0;
}

void nw_cli_say_waiting(const char *path, double bound_s)
{
	fprintf(stderr, "ncclwatch: waiting for the history database '%s': another ncclwatch is writing it "
	        "(giving up after %g s; --lock-timeout S changes that)\n", path, bound_s);
}

void nw_cli_say_caveat(const char *path, const char *why)
{
	nw_warn("history database '%s': %s", path, why);
}

void nw_cli_say_recorded(const char *cmd, long long id)
{
	fprintf(stderr, "ncclwatch: %s: recorded as run %lld (ncclwatch history show %lld)\n", cmd, id, id);
}

int nw_cli_lock_timeout(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	double s;
	(void)opts;
	if (nw_parse_duration(arg, &s, err, errlen) || s <= 0)
		return nw_seterr(err, errlen, "%s '%s': give a duration above 0 (seconds, as in 15 or 2m)", name, arg);
	setenv("NCCLWATCH_LOCK_TIMEOUT", arg, 1);
	return 0;
}

/* names[] filled once from name(0..n-1), then "all" and NULL (names has n + 2 entries). */
static const char *const *name_list(const char **names, int n, const char *(*name)(int))
{
	if (!names[0]) {
		for (int i = 0; i < n; i++)
			names[i] = name(i);
		names[n] = "all";
		names[n + 1] = NULL;
	}
	return names;
}

static const char *op_name(int i)
{
	return nw_coll_get((enum nw_op)i)->name;
}

static const char *dtype_name(int i)
{
	return nw_dtype_name((enum nw_dtype)i);
}

static const char *redop_name(int i)
{
	return nw_redop_name((enum nw_redop)i);
}

const char *const *nw_cli_op_names(void)
{
	static const char *names[NW_NOPS + 2];
	return name_list(names, NW_NOPS, op_name);
}

const char *const *nw_cli_dtype_names(void)
{
	static const char *names[NW_NDTYPES + 2];
	return name_list(names, NW_NDTYPES, dtype_name);
}

const char *const *nw_cli_redop_names(void)
{
	static const char *names[NW_NREDOPS + 2];
	return name_list(names, NW_NREDOPS, redop_name);
}

int nw_cli_other_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK", "SLURM_PROCID" };
	for (size_t i = 0; i < NW_ARRAY_LEN(vars); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v && strcmp(v, "0") != 0)
			return 1;
	}
	return 0;
}

FILE *nw_cli_out_open(const char *cmd, const char *opt, const struct nw_opt_out *o)
{
	if (!o->path)
		return stdout;
	FILE *f = fopen(o->path, "w");
	if (!f)
		nw_error("%s: %s '%s': %m", cmd, opt, o->path);
	return f;
}

int nw_cli_out_close(const char *cmd, const char *opt, const struct nw_opt_out *o, FILE *f)
{
	if (!f || f == stdout)
		return 0;
	if (fclose(f) != 0)
		return nw_error("%s: %s '%s': writing failed: %m", cmd, opt, o->path);
	return 0;
}

const struct nw_opt_choice nw_cli_backends[] = {
	{ "nccl", NW_BACKEND_NCCL },
	{ "mpi", NW_BACKEND_MPI },
	{ NULL, 0 },
};
