/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup: the variables run sets in a job's environment, and what of the
 * user's own it keeps (job.h). A user's setting wins over run's wherever
 * it is a choice about NCCL (its profiler, its debug level, file and
 * subsystems) or about the plugin (log lines, overlap, hang time); only
 * the stats directory is always the job's own, so that the report holds
 * this job and nothing else.
 */
#include "job/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe/livemode.h"
#include "util/util.h"

static const char *getenv_in(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (; env && *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static void put(struct nw_job_setup *o, const char *name, const char *value)
{
	if (o->nset >= NW_JOB_MAX_SET)
		return;
	nw_strlcpy(o->set[o->nset].name, name, sizeof(o->set[0].name));
	nw_strlcpy(o->set[o->nset].value, value, sizeof(o->set[0].value));
	o->nset++;
}

static void note(struct nw_job_setup *o, const char *fmt, const char *a, const char *b)
{
	if (o->nnotes < NW_JOB_MAX_NOTES)
		snprintf(o->notes[o->nnotes++], sizeof(o->notes[0]), fmt, a, b ? b : "");
}

/* The library: NCCL_PROFILER_PLUGIN or LD_PRELOAD, unless the user's own profiler is set. */
static void library(const struct nw_job_setup_in *in, struct nw_job_setup *o)
{
	const struct nw_live *l = in->live;
	const char *theirs = getenv_in(in->env, "NCCL_PROFILER_PLUGIN");
	if (l->mode == NW_LIVE_PLUGIN && theirs && *theirs && strcmp(theirs, l->file) &&
	    !strstr(theirs, "ncclwatch")) {
		note(o, "NCCL_PROFILER_PLUGIN=%s is yours: kept; NCCL loads one profiler plugin, so ncclwatch's is not "
		        "loaded and the job has no live statistics%s", theirs, "");
		return;
	}
	if (l->mode == NW_LIVE_NONE)
		return;
	char name[64], value[4096];
	nw_live_setting(l, getenv_in(in->env, "LD_PRELOAD"), name, sizeof(name), value, sizeof(value));
	put(o, name, value);
	o->stats = 1;
}

/* NCCL's debug output: INFO into run's files, unless the user chose a level or a file. */
static void debug(const struct nw_job_setup_in *in, struct nw_job_setup *o)
{
	const char *lvl = getenv_in(in->env, "NCCL_DEBUG"), *file = getenv_in(in->env, "NCCL_DEBUG_FILE");
	const char *sub = getenv_in(in->env, "NCCL_DEBUG_SUBSYS");
	if (!in->log_file)
		return;
	if ((lvl && *lvl) || (file && *file)) {
		if (lvl && *lvl)
			note(o, "NCCL_DEBUG=%s is yours: kept, with NCCL's output where you send it%s; the report has no "
			        "NCCL log to read", lvl, file && *file ? " (NCCL_DEBUG_FILE)" : "");
		else
			note(o, "NCCL_DEBUG_FILE=%s is yours: kept%s; the report has no NCCL log to read", file, "");
		return;
	}
	put(o, "NCCL_DEBUG", "INFO");
	put(o, "NCCL_DEBUG_FILE", in->log_file);
	if (sub && *sub)
		note(o, "NCCL_DEBUG_SUBSYS=%s is yours: kept for the captured logs%s", sub, "");
	else
		put(o, "NCCL_DEBUG_SUBSYS", in->subsys);
	o->logs = 1;
}

/* A plugin variable: run's value unless the user set one. */
static void plugin_var(const struct nw_job_setup_in *in, struct nw_job_setup *o, const char *name, const char *value)
{
	const char *theirs = getenv_in(in->env, name);
	if (theirs && *theirs) {
		if (strcmp(theirs, value))
			note(o, "%s=%s is yours: kept", name, theirs);
		return;
	}
	put(o, name, value);
}

void nw_job_setup(const struct nw_job_setup_in *in, struct nw_job_setup *o)
{
	memset(o, 0, sizeof(*o));
	library(in, o);
	const char *dir = getenv_in(in->env, "NCCLWATCH_DIR");
	if (dir && *dir && strcmp(dir, in->stats_dir))
		note(o, "NCCLWATCH_DIR=%s is replaced by the job's own directory %s for this job", dir, in->stats_dir);
	put(o, "NCCLWATCH_DIR", in->stats_dir);
	char v[64];
	if (in->log_s > 0) {
		snprintf(v, sizeof(v), "%g", in->log_s);
		plugin_var(in, o, "NCCLWATCH_LOG_S", v);
	}
	if (in->overlap)
		plugin_var(in, o, "NCCLWATCH_OVERLAP", "1");
	if (in->hang_s > 0) {
		snprintf(v, sizeof(v), "%g", in->hang_s);
		put(o, "NCCLWATCH_HANG_S", v);
	}
	plugin_var(in, o, "NCCLWATCH_JOB", in->job_id);
	debug(in, o);
}

/* s made of letters, digits, '.', '_' and '-' (others become '-'). */
static void safe_id(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			*s = '-';
}

/* torchrun's --rdzv-id (or --rdzv_id) in argv, when argv runs torchrun. */
static const char *rdzv_id(char *const *argv)
{
	int torchrun = 0;
	for (char *const *a = argv; a && *a; a++) {
		const char *base = strrchr(*a, '/') ? strrchr(*a, '/') + 1 : *a;
		if (!strcmp(base, "torchrun") || !strcmp(*a, "torch.distributed.run"))
			torchrun = 1;
		if (!torchrun)
			continue;
		if ((!strcmp(*a, "--rdzv-id") || !strcmp(*a, "--rdzv_id")) && a[1])
			return a[1];
		if (!strncmp(*a, "--rdzv-id=", 10) || !strncmp(*a, "--rdzv_id=", 10))
			return *a + 10;
	}
	return NULL;
}

void nw_job_id(char *const *argv, char *const *env, uint64_t now_ns, int pid, char *out, size_t len)
{
	const char *job = getenv_in(env, "NCCLWATCH_JOB"), *sj = getenv_in(env, "SLURM_JOB_ID");
	const char *step = getenv_in(env, "SLURM_STEP_ID"), *ns = getenv_in(env, "PMIX_NAMESPACE");
	const char *ompi = getenv_in(env, "OMPI_MCA_ess_base_jobid"), *rz = rdzv_id(argv);
	int local, global;
	int task = nw_job_task(env, &local, &global);
	if (job && *job)
		snprintf(out, len, "%s", job);
	else if (task && sj && *sj && step && *step)
		snprintf(out, len, "slurm-%s.%s", sj, step);
	else if (task && ns && *ns)
		snprintf(out, len, "mpi-%s", ns);
	else if (task && ompi && *ompi)
		snprintf(out, len, "mpi-%s", ompi);
	else if (rz && *rz)
		snprintf(out, len, "torchrun-%s", rz);
	else {
		time_t t = (time_t)(now_ns / 1000000000u);
		struct tm tm;
		char stamp[32];
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
		if (sj && *sj)
			snprintf(out, len, "slurm-%s-%s-%d", sj, stamp, pid);
		else
			snprintf(out, len, "job-%s-%d", stamp, pid);
	}
	safe_id(out);
}

/* A variable holding a whole number, or -1. */
static int env_int(char *const *env, const char *name)
{
	const char *v = getenv_in(env, name);
	char *end;
	if (!v || !*v)
		return -1;
	long x = strtol(v, &end, 10);
	return *end || x < 0 || x > 1000000 ? -1 : (int)x;
}

int nw_job_task(char *const *env, int *local, int *global)
{
	static const char *const pairs[][2] = {
		{ "SLURM_LOCALID", "SLURM_PROCID" },
		{ "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK" },
		{ "MPI_LOCALRANKID", "PMI_RANK" },
		{ "PMIX_LOCAL_RANK", "PMIX_RANK" },
		{ "LOCAL_RANK", "RANK" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(pairs); i++) {
		int l = env_int(env, pairs[i][0]);
		if (l >= 0) {
			*local = l;
			*global = env_int(env, pairs[i][1]);
			return 1;
		}
	}
	*local = 0;
	*global = -1;
	return 0;
}

/* The value of option name in argv at a (as "--name V" or "--name=V"); NULL when a is not it. */
static const char *opt_value(char *const *a, const char *name)
{
	size_t n = strlen(name);
	if (!strcmp(*a, name))
		return a[1];
	if (!strncmp(*a, name, n) && (*a)[n] == '=')
		return *a + n + 1;
	return NULL;
}

/* Whether a node count ("2", "2-4", "1:4") allows more than one node. */
static int several(const char *v)
{
	if (!v)
		return 0;
	const char *last = v + strcspn(v, "-:");
	long lo = strtol(v, NULL, 10), hi = *last ? strtol(last + 1, NULL, 10) : lo;
	return lo > 1 || hi > 1;
}

/* The launcher argv[i] names: 1 srun, 2 mpirun or mpiexec, 3 torchrun, 4 deepspeed; 0 none. */
static int launcher(const char *a)
{
	const char *b = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
	if (!strcmp(b, "srun"))
		return 1;
	if (!strcmp(b, "mpirun") || !strcmp(b, "mpiexec") || !strcmp(b, "mpiexec.hydra"))
		return 2;
	if (!strcmp(b, "torchrun") || !strcmp(a, "torch.distributed.run"))
		return 3;
	return !strcmp(b, "deepspeed") ? 4 : 0;
}

int nw_job_spans_nodes(char *const *argv, char *why, size_t len)
{
	/* per launcher: options that count nodes, options that list hosts (a file, or several names) */
	static const char *const counts[5][3] = { { NULL }, { "-N", "--nodes", NULL }, { NULL },
		                                  { "--nnodes", NULL }, { "--num_nodes", "--num-nodes", NULL } };
	static const char *const lists[5][6] = { { NULL }, { NULL },
		                                 { "-H", "--host", "-host", "--hostfile", "-hostfile", "--machinefile" },
		                                 { NULL }, { "--hostfile", "-H", NULL } };
	int l = 0;
	for (char *const *a = argv; a && *a; a++) {
		if (launcher(*a)) {
			l = launcher(*a);
			continue;
		}
		for (size_t i = 0; i < 3 && counts[l][i]; i++) {
			const char *v = opt_value(a, counts[l][i]);
			if (!v && l == 1 && !strcmp(counts[l][i], "-N") && !strncmp(*a, "-N", 2) && (*a)[2] >= '0' && (*a)[2] <= '9')
				v = *a + 2;
			if (several(v)) {
				snprintf(why, len, "%s %s", counts[l][i], v);
				return 1;
			}
		}
		for (size_t i = 0; i < 6 && lists[l][i]; i++) {
			const char *v = opt_value(a, lists[l][i]);
			if (v && (strstr(lists[l][i], "file") || strchr(v, ','))) {
				snprintf(why, len, "%s %s", lists[l][i], v);
				return 1;
			}
		}
	}
	return 0;
}
