/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_end: `ncclwatch run` after the job ended (cmd/run.h): the last
 * figures, the node's part (with the stats files, dumps and NCCL logs kept
 * beside it), the history run, the report and timeline of every node's
 * part found, the summary on stderr, and the job's own exit status.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/jobout.h"
#include "cmd/run.h"
#include "model/result.h"
#include "store/store.h"
#include "util/util.h"

/* Ranks still running after the launcher returned: waited for up to --wait (a signal cuts it short). */
static void wait_ranks(struct run_ctx *c)
{
	double until = nw_now() + (c->exit.interrupted ? (c->o.wait_s < 3 ? c->o.wait_s : 3) : c->o.wait_s);
	int live;
	while (!nw_jobw_all_ended(c->w, &live) && nw_now() < until) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 200000000 };
		siginfo_t si;
		int sig = sigtimedwait(&c->sig.waited, &si, &ts);
		if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
			break;
	}
}

static json_t *mode_json(const struct run_ctx *c)
{
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:s}", "mode", nw_live_mode_name(c->live.mode), "nccl_version",
	                      c->facts.nccl_version, "nccl_path", c->facts.nccl_path, "file", c->live.file, "why",
	                      c->live.why);
	json_object_set_new(m, "profiler_interface", c->live.abi ? json_integer(c->live.abi) : json_null());
	return m;
}

/* The job's NCCL_* and launcher variables (the families history keeps), without run's own plumbing. */
static json_t *job_env(void)
{
	struct nw_run tmp;
	nw_run_init(&tmp);
	nw_fingerprint_collect(&tmp);
	json_t *env = json_deep_copy(json_object_get(json_object_get(tmp.h.extra, "fingerprint"), "env"));
	nw_run_release(&tmp);
	if (!env)
		env = json_object();
	json_object_del(env, "NCCL_DEBUG_FILE");
	return env;
}

/* This node's part, written into its directory, with its files kept beside it. NULL when it cannot be. */
static json_t *node_part(struct run_ctx *c)
{
	char err[NW_ERRLEN];
	size_t nstats, ndumps, nlogs;
	if (nw_job_keep_files(c->stats_dir, c->nodedir, &nstats, &ndumps, err, sizeof(err)) != 0)
		nw_warn("run: %s (the stats files and dumps are not kept)", err);
	json_t *nccl = c->setup.logs ? nw_job_nccl_info(c->nodedir, &nlogs) : NULL;
	json_t *settings = json_object(), *kept = json_array(), *env = job_env(), *mode = mode_json(c);
	for (int i = 0; i < c->setup.nset; i++)
		json_object_set_new(settings, c->setup.set[i].name, json_string(c->setup.set[i].value));
	for (int i = 0; i < c->setup.nnotes; i++)
		json_array_append_new(kept, json_string(c->setup.notes[i]));
	char files[PATH_MAX + 64];
	const char *h = strrchr(c->nodedir, '/');
	snprintf(files, sizeof(files), "nodes/%s", h ? h + 1 : c->host);
	struct nw_job_meta m = {
		.job_id = c->job_id, .host = c->host, .argv = c->cmd, .cwd = c->cwd, .start_ns = c->start_ns,
		.end_ns = c->end_ns, .exit = c->exit, .mode = mode, .settings = settings, .kept = kept, .nccl = nccl,
		.env = env, .sample_s = c->o.sample_s, .hang_s = c->hang_s, .log_s = c->o.log_s, .overlap = c->o.overlap,
		.files_dir = files,
	};
	json_t *part = nw_job_part(c->w, &m);
	json_decref(settings);
	json_decref(kept);
	json_decref(env);
	json_decref(mode);
	json_decref(nccl);
	if (nw_job_part_write(c->nodedir, part, err, sizeof(err)) != 0)
		nw_warn("run: %s", err);
	return part;
}

/* The node's part as a history run (source job), the part itself kept in it for report --job. */
static long long record(struct run_ctx *c, json_t *part)
{
	if (c->o.store.disabled)
		return 0;
	json_t *one = json_array();
	json_array_append(one, part);
	struct nw_job_view v;
	char err[NW_ERRLEN];
	long long id = 0;
	if (nw_job_view_build(one, &v, err, sizeof(err)) == 0) {
		struct nw_run run;
		nw_job_to_run(&v, &run);
		json_object_set(json_object_get(run.h.extra, "job"), "part", part);
		nw_store_on_wait(nw_cli_say_waiting);
		if (nw_store_record(&c->o.store, &run, &id, err, sizeof(err)) != 0) {
			nw_warn("run: the job is not in history: %s", err);
			id = 0;
		}
		nw_run_release(&run);
	} else
		nw_warn("run: the job is not in history: %s", err);
	nw_job_view_release(&v);
	json_decref(one);
	return id;
}

/* Every node's part found in the job directory (ours alone when they cannot be read); *n gets how many. */
static json_t *all_parts(const struct run_ctx *c, json_t *part, size_t *n)
{
	json_t *parts = NULL;
	char err[NW_ERRLEN];
	if (nw_job_parts_dir(c->jobdir, &parts, err, sizeof(err)) != 0) {
		nw_warn("run: %s; the report holds this node alone", err);
		parts = json_array();
		json_array_append(parts, part);
	}
	*n = json_array_size(parts);
	return parts;
}

/*
 * The report of every part found, written again while more parts arrive
 * (nodes ending together). *parts gets the parts v borrows from (the
 * caller decrefs it after v).
 */
static int report(struct run_ctx *c, json_t *part, struct nw_job_view *v, struct nw_jobout *o, json_t **parts)
{
	char err[NW_ERRLEN];
	size_t n, again;
	for (int round = 0; round < 3; round++) {
		nw_job_view_release(v);
		json_decref(*parts);
		*parts = all_parts(c, part, &n);
		memset(o, 0, sizeof(*o));
		o->report = c->report;
		o->jobdir = c->jobdir;
		o->title = c->o.title;
		if (nw_jobout_write(*parts, o, v, err, sizeof(err)) != 0) {
			nw_warn("run: no report: %s", err);
			return -1;
		}
		json_decref(all_parts(c, part, &again));
		if (again == n)
			break;
	}
	return 0;
}

/* "all_reduce 40 calls per rank, 1.23 GB/s busbw; ..." over the view's ranks. */
static void ops_text(const struct nw_job_view *v, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (unsigned op = 0; op < NWS_NOPS && used + 1 < len; op++) {
		uint64_t calls = 0, tns = 0;
		double fb = 0;
		int ranks = 0;
		for (size_t i = 0; i < v->nranks; i++) {
			if (!v->ranks[i].per_op[op][0])
				continue;
			ranks++;
			calls += v->ranks[i].per_op[op][0];
			tns += v->ranks[i].per_op[op][4];
			fb += v->ranks[i].per_op_fb[op];
		}
		if (!ranks)
			continue;
		char bw[48] = ", not timed";
		if (tns)
			snprintf(bw, sizeof(bw), ", busbw %.2f GB/s", fb / (double)tns);
		int k = snprintf(out + used, len - used, "%s%s %.0f calls per rank%s", used ? "; " : "", nws_op_name(op),
		                 (double)calls / ranks, bw);
		used += k > 0 ? (size_t)k : 0;
	}
}

static void summary(const struct run_ctx *c, const struct nw_job_view *v, const struct nw_jobout *o, long long id)
{
	char sig[32] = "", how[200] = "";
	if (c->exit.signal)
		snprintf(how, sizeof(how), "ended by %s (status %d)", nw_job_signame(c->exit.signal, sig, sizeof(sig)),
		         128 + c->exit.signal);
	else
		snprintf(how, sizeof(how), "exited with status %d", c->exit.code);
	fprintf(stderr, "ncclwatch run: job %s %s after %.1f s%s%s\n", c->job_id, how,
	        (double)(c->end_ns - c->start_ns) / 1e9, c->exit.interrupted ? ", interrupted by " : "",
	        c->exit.interrupted ? c->exit.by : "");
	if (v && v->nranks) {
		char ops[1024];
		ops_text(v, ops, sizeof(ops));
		size_t nh = 0, na = 0, nx = 0;
		for (size_t i = 0; i < v->ninc; i++) {
			nh += !strcmp(v->inc[i].kind, "hang");
			na += !strcmp(v->inc[i].kind, "abort");
			nx += strcmp(v->inc[i].kind, "hang") && strcmp(v->inc[i].kind, "abort");
		}
		fprintf(stderr, "ncclwatch run: %d ranks on %zu node%s, watched by the %s: %s\n", v->world, v->nnodes,
		        v->nnodes == 1 ? "" : "s", nw_live_mode_name(c->live.mode), ops[0] ? ops : "no operation");
		fprintf(stderr, "ncclwatch run: %zu hang%s, %zu abort%s, %zu other incident%s%s\n", nh, nh == 1 ? "" : "s",
		        na, na == 1 ? "" : "s", nx, nx == 1 ? "" : "s", v->ninc ? " (the report lists them)" : "");
	} else if (c->setup.stats)
		fprintf(stderr, "ncclwatch run: no rank reported statistics (the job's NCCL never loaded the %s, or "
		                "created no communicator of two ranks or more)\n", nw_live_mode_name(c->live.mode));
	if (o && o->report && o->report[0])
		fprintf(stderr, "ncclwatch run: report %s, timeline %s\n", o->report, o->trace);
	if (id)
		nw_cli_say_recorded("run", id);
}

/* The job's status as run's: exit with it, or die of the same signal when that kills without a core. */
static int job_status(struct run_ctx *c)
{
	nw_job_signals_give_back(&c->sig);
	if (c->exit.not_started || !c->exit.signal)
		return c->exit.code;
	int s = c->exit.signal;
	if (s == SIGINT || s == SIGTERM || s == SIGHUP || s == SIGKILL || s == SIGPIPE || s == SIGALRM ||
	    s == SIGUSR1 || s == SIGUSR2) {
		fflush(NULL);
		signal(s, SIG_DFL);
		raise(s);
	}
	return 128 + s;
}

int run_end(struct run_ctx *c)
{
	wait_ranks(c);
	nw_jobw_tick(c->w, run_realtime(), NULL, NULL);
	nw_jobw_finish(c->w, run_realtime());
	struct nw_job_view v;
	struct nw_jobout o;
	memset(&v, 0, sizeof(v));
	memset(&o, 0, sizeof(o));
	long long id = 0;
	int have = 0;
	json_t *parts = NULL;
	if (c->capture) {
		json_t *part = node_part(c);
		id = record(c, part);
		have = !c->o.no_report && report(c, part, &v, &o, &parts) == 0;
		json_decref(part);
	}
	if (c->speaker && !c->o.quiet)
		summary(c, have ? &v : NULL, have ? &o : NULL, id);
	nw_job_view_release(&v);
	json_decref(parts);
	nw_jobw_free(c->w);
	nw_job_clear_stats(c->stats_dir);
	return job_status(c);
}
