/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run: `ncclwatch run [options] -- CMD ARGS...` runs any launch command
 * with monitoring set up for every rank it starts (the plugin or the
 * interposer, as `env` decides; a private stats directory; periodic log
 * lines; NCCL's debug output captured per process), watches it while it
 * runs and, when it ends, keeps its story: the node's part, a history run
 * (source "job"), one HTML report with the merged timeline beside it.
 * The job is never harmed: what cannot be set up is said, and the job runs
 * anyway; its exit status is run's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/run.h"
#include "util/util.h"

extern char **environ;

static const struct nw_opt run_options[] = {
	{ .kind = NW_OPTK_GROUP, .help = "where the job's files go" },
	{ .kind = NW_OPTK_STRING, .lname = "out", .off = NW_F_STR(struct run_opts, out), .argh = "DIR",
	  .help = "the job's directory (default ./ncclwatch-job-ID; on a shared\nfilesystem every node's part lands there)" },
	{ .kind = NW_OPTK_STRING, .lname = "job", .off = NW_F_STR(struct run_opts, job), .argh = "ID",
	  .help = "the job's id (default $NCCLWATCH_JOB, the launcher's job and\nstep, torchrun's --rdzv-id, or one made up)" },
	{ .kind = NW_OPTK_STRING, .lname = "node", .off = NW_F_STR(struct run_opts, node), .argh = "NAME",
	  .help = "this node's name in the job (default its host name; nodes\nwhose host names are alike need one each)" },
	{ .kind = NW_OPTK_STRING, .lname = "report", .off = NW_F_STR(struct run_opts, report), .argh = "FILE",
	  .help = "the HTML report (default DIR/report.html); the timeline\n(Chrome trace JSON) goes beside it" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-report", .off = NW_F_INT(struct run_opts, no_report),
	  .help = "no HTML report and timeline (the part and history still)" },
	{ .kind = NW_OPTK_STRING, .lname = "title", .off = NW_F_STR(struct run_opts, title), .argh = "TEXT",
	  .help = "the report's title (default \"ncclwatch job ID\")" },
	{ .kind = NW_OPTK_GROUP, .help = "what the job gets" },
	NW_OPT_NCCL_LIB(struct run_opts, nccl_lib),
	{ .kind = NW_OPTK_INT, .lname = "log-s", .off = NW_F_INT(struct run_opts, log_s), .argh = "S", .min = 0,
	  .max = 86400, .def = "60", .help = "a summary line per communicator in NCCL's log every S\nseconds (NCCLWATCH_LOG_S; 0: none)" },
	{ .kind = NW_OPTK_FLAG, .lname = "overlap", .off = NW_F_INT(struct run_opts, overlap),
	  .help = "measure exposed communication (NCCLWATCH_OVERLAP=1)" },
	{ .kind = NW_OPTK_DOUBLE, .lname = "hang-s", .off = NW_F_DBL(struct run_opts, hang_s), .argh = "S",
	  .dmin = 0.001, .dmax = 86400,
	  .help = "a hang after S seconds without an NCCL event while ranks\nwait (NCCLWATCH_HANG_S; default its value, else 120)" },
	{ .kind = NW_OPTK_STRING, .lname = "nccl-subsys", .off = NW_F_STR(struct run_opts, subsys), .argh = "LIST",
	  .def = "INIT,BOOTSTRAP,ENV,GRAPH,NET",
	  .help = "NCCL_DEBUG_SUBSYS of the captured logs (TUNING adds\nalgorithm and protocol per call, a line each)" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-nccl-log", .off = NW_F_INT(struct run_opts, no_nccl_log),
	  .help = "do not capture NCCL's debug output (NCCL_DEBUG=INFO)" },
	{ .kind = NW_OPTK_GROUP, .help = "while it runs" },
	{ .kind = NW_OPTK_DURATION, .lname = "sample-s", .off = NW_F_DBL(struct run_opts, sample_s), .argh = "S",
	  .dmin = 0.05, .dmax = 3600, .def = "1", .help = "read the stats every S seconds" },
	{ .kind = NW_OPTK_LONG, .lname = "trace-ops", .off = NW_F_LONG(struct run_opts, trace_ops), .argh = "N",
	  .min = 0, .max = 10000000, .def = "10000", .help = "operations kept per rank for the timeline (the newest)" },
	{ .kind = NW_OPTK_FLAG, .lname = "status", .off = NW_F_ENUM(struct run_opts, status), .min = RUN_STATUS_ON,
	  .excl = 0x7101, .help = "a status line on stderr's last row (default: when stderr\nis a terminal)" },
	{ .kind = NW_OPTK_FLAG, .lname = "no-status", .off = NW_F_ENUM(struct run_opts, status), .min = RUN_STATUS_OFF,
	  .excl = 0x7101, .help = "no status line" },
	{ .kind = NW_OPTK_DURATION, .lname = "wait", .off = NW_F_DBL(struct run_opts, wait_s), .argh = "S", .dmin = 0,
	  .dmax = 3600, .def = "10", .help = "at the end, wait up to S for ranks still running after\nthe launcher returned" },
	NW_OPT_QUIET(struct run_opts, quiet, 'q'),
	{ .kind = NW_OPTK_GROUP, .help = "history" },
	NW_OPTS_STORE(struct run_opts, store),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_run = {
	.name = "run",
	.synopsis = "[options] -- CMD [ARGS...]",
	.about = "Run a training job's launch command (python train.py, torchrun, srun,\n"
	         "mpirun, deepspeed ...) with every rank it starts watched: the profiler\n"
	         "plugin or the interposer, as 'ncclwatch env' decides for the job's NCCL;\n"
	         "a stats directory of its own; the plugin's log lines; NCCL's debug\n"
	         "output captured per process (NCCL_DEBUG=INFO into files, never the\n"
	         "job's stdout). While it runs: a status line when stderr is a terminal,\n"
	         "and a hang said as soon as 'ncclwatch hang' would say it. When it ends\n"
	         "(by itself, by a signal, or killed by its launcher): a short summary on\n"
	         "stderr, the job in history (source job), and one HTML report with\n"
	         "bandwidth, lateness and exposed communication over time, NCCL's choices,\n"
	         "every hang, abort and anomaly, and the merged timeline of every rank.\n"
	         "\n"
	         "Signals to run go to the job (Ctrl-C reaches it from the terminal\n"
	         "directly); its exit status is run's. A setting of yours (NCCL_DEBUG,\n"
	         "NCCL_DEBUG_FILE, NCCL_PROFILER_PLUGIN, NCCLWATCH_*) is kept and said.\n"
	         "What cannot be set up is said, and the job runs anyway.\n",
	.opts = run_options,
	.footer = "Many nodes: run it on each node, under the launcher (srun ... ncclwatch run --\n"
	          "python train.py), or around torchrun on every node: each node's part lands in\n"
	          "DIR/nodes/NODE (a shared filesystem) and in history; 'ncclwatch report --job\n"
	          "ID' merges them.\n"
	          "\n"
	          "exit status: the job's (0, 1, 137 ...); 127 when CMD is not found, 126\n"
	          "when it cannot be run; 2 bad usage (nothing run).\n"
	          "\n"
	          "examples:\n"
	          "  ncclwatch run -- torchrun --nproc-per-node 8 train.py\n"
	          "  srun -N 4 --ntasks-per-node 8 ncclwatch run --out /shared/jobs/j42 -- python train.py\n"
	          "  ncclwatch run -- mpirun -np 8 python train.py\n",
	.args = NW_ARGS_COMMAND,
	.width = 20,
};

/* The default hang time: NCCLWATCH_HANG_S as the plugin reads it, else 120. */
static double env_hang_s(void)
{
	const char *e = getenv("NCCLWATCH_HANG_S");
	long v;
	char err[NW_ERRLEN];
	if (e && *e && nw_parse_long(e, 0, 86400, &v, "NCCLWATCH_HANG_S", err, sizeof(err)) == 0 && v > 0)
		return (double)v;
	return 120;
}

/* mkdir -p with mode for what it makes; 0, or -1 with errno. */
static int mkdirs(const char *path, mode_t mode)
{
	char p[PATH_MAX];
	nw_strlcpy(p, path, sizeof(p));
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char keep = *s;
		*s = '\0';
		if (mkdir(p, mode) != 0 && errno != EEXIST)
			return -1;
		if (!keep)
			return 0;
		*s = keep;
	}
}

/* The stats directory of the job: /dev/shm/ncclwatch-UID/run-ID (else under $TMPDIR or /tmp). */
static void stats_dir(struct run_ctx *c)
{
	const char *base = "/dev/shm";
	struct stat st;
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) != 0)
		base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/ncclwatch-%u", base, (unsigned)getuid());
	snprintf(c->stats_dir, sizeof(c->stats_dir), "%s/run-%s", parent, c->job_id);
	if (mkdir(parent, 0700) == 0 || errno == EEXIST)
		(void)(mkdir(c->stats_dir, 0700) == 0 || errno == EEXIST);
	/* a directory of an earlier run of the same id (not a task of a launcher: nobody else writes it yet) */
	if (!c->task)
		nw_job_clear_stats(c->stats_dir), mkdir(c->stats_dir, 0700);
	if (stat(c->stats_dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(c->stats_dir, W_OK) != 0)
		nw_warn("run: cannot make the stats directory '%s' (%s): the job runs without live statistics (the "
		        "plugin turns itself off and says why)", c->stats_dir, strerror(errno));
}

/* The job's directory and this node's, made; when they cannot be, the job still runs (said). */
static void job_dirs(struct run_ctx *c)
{
	char rel[PATH_MAX];
	if (c->o.out)
		nw_strlcpy(rel, c->o.out, sizeof(rel));
	else
		snprintf(rel, sizeof(rel), "ncclwatch-job-%s", c->job_id);
	if (rel[0] == '/')
		nw_strlcpy(c->jobdir, rel, sizeof(c->jobdir));
	else
		snprintf(c->jobdir, sizeof(c->jobdir), "%s/%s", c->cwd, rel);
	nw_job_node_dir(c->jobdir, c->host, c->nodedir, sizeof(c->nodedir));
	if (mkdirs(c->nodedir, 0755) != 0) {
		nw_warn("run: cannot make '%s' (%s): no NCCL logs, part or report will be kept; the job runs anyway",
		        c->nodedir, strerror(errno));
		return;
	}
	c->capture = 1;
	if (c->o.report)
		nw_strlcpy(c->report, c->o.report, sizeof(c->report));
	else
		snprintf(c->report, sizeof(c->report), "%s/report.html", c->jobdir);
}

/* Decide and set the job's variables (in this process: the job inherits them). */
static void setup_env(struct run_ctx *c)
{
	char pattern[PATH_MAX + 400];
	snprintf(pattern, sizeof(pattern), "%s/nccl.%%h.%%p.log", c->nodedir);
	struct nw_job_setup_in in = {
		.live = &c->live,
		.job_id = c->job_id,
		.stats_dir = c->stats_dir,
		.log_file = c->capture && !c->o.no_nccl_log ? pattern : NULL,
		.subsys = c->o.subsys,
		.log_s = c->o.log_s,
		.overlap = c->o.overlap,
		.hang_s = c->o.hang_s,
		.env = environ,
	};
	nw_job_setup(&in, &c->setup);
	for (int i = 0; i < c->setup.nset; i++)
		setenv(c->setup.set[i].name, c->setup.set[i].value, 1);
}

/* The first line on stderr: how the job is watched, what of the user's was kept. */
static void say_start(const struct run_ctx *c)
{
	if (c->o.quiet || !c->speaker)
		return;
	if (c->live.mode == NW_LIVE_NONE)
		nw_warn("run: no live monitoring for this job: %s; it runs anyway (NCCL logs%s kept)", c->live.why,
		        c->setup.logs ? "" : " not");
	else
		fprintf(stderr, "ncclwatch run: job %s: %s (%s)%s%s\n", c->job_id, nw_live_mode_name(c->live.mode),
		        c->live.why, c->capture ? "; files in " : "", c->capture ? c->jobdir : "");
	for (int i = 0; i < c->setup.nnotes; i++)
		fprintf(stderr, "ncclwatch run: %s\n", c->setup.notes[i]);
	char why[128];
	if (!c->task && nw_job_spans_nodes(c->cmd, why, sizeof(why)))
		nw_warn("run: this launch spans several nodes (%s): run reads the ranks of this node only; to keep every "
		        "node's, run it on each node, as in 'srun ... ncclwatch run -- python train.py' (docs/run.md, "
		        "\"Many nodes\")", why);
}

/* Options, checks between them, and the command. 0, or the exit status of a usage error (or 0 after help) in *rc. */
static int parse(int argc, char **argv, struct run_ctx *c, int *rc)
{
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_run, &c->o, argc, argv, &res);
	if (st != NW_OPT_OK) {
		*rc = nw_opt_exit(&nw_spec_run, st);
		return -1;
	}
	*rc = 2;
	if (!res.nargs)
		return nw_opt_error(&nw_spec_run, "no command to run: give it after the options, as in 'ncclwatch run -- "
		                                  "torchrun --nproc-per-node 8 train.py'");
	if (c->o.report && !strcmp(c->o.report, "-"))
		return nw_opt_error(&nw_spec_run, "--report is a file ('-' is not: the job's stdout is its own)");
	if (c->o.no_report && c->o.report)
		return nw_opt_error(&nw_spec_run, "--no-report excludes --report");
	if (c->o.report && nw_cli_check_output("run", "--report", c->o.report) != 0)
		return -1;
	if (c->o.job && !*c->o.job)
		return nw_opt_error(&nw_spec_run, "--job needs a value");
	c->cmd = res.args;
	return 0;
}

/* A task of a launcher that is not its node's first: set the job's variables up and become the job. */
static int exec_task(struct run_ctx *c)
{
	nw_job_signals_give_back(&c->sig);
	execvp(c->cmd[0], c->cmd);
	int e = errno;
	nw_error("run: cannot run '%s': %s", c->cmd[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}

int cmd_run(int argc, char **argv)
{
	static struct run_ctx c;
	int rc;
	if (parse(argc, argv, &c, &rc) != 0)
		return rc;
	c.start_ns = run_realtime();
	if (c.o.node)
		nw_strlcpy(c.host, c.o.node, sizeof(c.host));
	else
		nw_hostname(c.host, sizeof(c.host));
	if (!getcwd(c.cwd, sizeof(c.cwd)))
		nw_strlcpy(c.cwd, ".", sizeof(c.cwd));
	c.task = nw_job_task(environ, &c.local, &c.global);
	c.collector = !c.task || c.local == 0;
	c.speaker = !c.task || c.global == 0 || (c.global < 0 && c.local == 0);
	if (c.o.job)
		nw_strlcpy(c.job_id, c.o.job, sizeof(c.job_id));
	else
		nw_job_id(c.cmd, environ, c.start_ns, (int)getpid(), c.job_id, sizeof(c.job_id));
	c.hang_s = c.o.hang_s > 0 ? c.o.hang_s : env_hang_s();
	nw_live_probe(c.o.nccl_lib, &c.facts, &c.live);
	if (c.o.nccl_lib && !c.facts.nccl_found)
		nw_warn("run: %s; the job runs with the plugin set in case its NCCL has a profiler interface",
		        c.facts.nccl_err);
	stats_dir(&c);
	job_dirs(&c);
	setup_env(&c);
	nw_job_signals_take(&c.sig);
	if (!c.collector)
		return exec_task(&c);
	say_start(&c);
	struct nw_jobw_opts wo = { .dir = c.stats_dir, .hang_s = c.hang_s, .trace_ops = (size_t)c.o.trace_ops };
	c.w = nw_jobw_new(&wo);
	char err[NW_ERRLEN];
	int e = 0;
	if (nw_job_start(c.cmd, NULL, &c.sig, &c.child, &e, err, sizeof(err)) != 0) {
		nw_error("run: %s", err);
		c.exit.not_started = 1;
		c.exit.code = e == ENOENT ? 127 : 126;
		int st;
		if (c.child > 0)
			waitpid(c.child, &st, 0);
		c.end_ns = run_realtime();
		nw_jobw_free(c.w);
		nw_job_clear_stats(c.stats_dir);
		nw_job_signals_give_back(&c.sig);
		return c.exit.code;
	}
	run_tty_begin(&c);
	run_wait(&c);
	run_tty_end(&c);
	return run_end(&c);
}
