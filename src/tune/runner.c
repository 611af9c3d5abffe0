/* SPDX-License-Identifier: Apache-2.0 */
/* tune runner: one bench child per run, in a fresh environment, with a timeout. */
#include "tune/tune.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

extern char **environ;

/* A growable NULL-terminated array of owned strings. */
struct strv {
	char **v;
	int n, cap;
};

static void sv_push(struct strv *s, char *owned)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->v = nw_realloc(s->v, (size_t)s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

char **nw_tune_split_words(const char *s)
{
	struct strv out = { 0 };
	out.cap = 8;
	out.v = nw_calloc((size_t)out.cap, sizeof(*out.v));
	const char *p = s ? s : "";
	for (;;) {
		p += strspn(p, " \t\n");
		if (!*p)
			break;
		size_t len = strcspn(p, " \t\n");
		char *w = nw_malloc(len + 1);
		memcpy(w, p, len);
		w[len] = '\0';
		sv_push(&out, w);
		p += len;
	}
	return out.v;
}

void nw_tune_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

static int listed(char *const *list, const char *name, size_t len)
{
	for (char *const *p = list; p && *p; p++)
		if (strlen(*p) == len && !strncmp(*p, name, len))
			return 1;
	return 0;
}

/* The one rule for what a child does not inherit; see tune.h. */
int nw_tune_env_unset(char *const *keep, int keep_env, const char *entry)
{
	if (keep_env || strncmp(entry, "NCCL_", 5) != 0)
		return 0;
	size_t len = strcspn(entry, "=");
	if (len == strlen("NCCL_NVLS_ENABLE") && !strncmp(entry, "NCCL_NVLS_ENABLE", len))
		return 0;
	return !listed(keep, entry, len);
}

static int set_by_variant(const struct nw_tune_variant *v, const char *entry)
{
	size_t len = strcspn(entry, "=");
	for (int i = 0; i < v->nset; i++)
		if (strlen(v->set[i].name) == len && !strncmp(v->set[i].name, entry, len))
			return 1;
	return 0;
}

/* The tail of a small text file, on one line ("; " between lines). */
static void file_tail(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	size_t n = 0;
	char *text = nw_read_file(path, 1 << 20, &n);
	if (!text)
		return;
	size_t keep = len > 1 ? len - 1 : 0;
	const char *start = n > keep ? text + n - keep : text;
	if (start != text) {
		const char *nl = strchr(start, '\n');
		if (nl && nl[1])
			start = nl + 1;
	}
	size_t o = 0;
	for (const char *p = start; *p && o + 3 < len; p++) {
		if (*p == '\n') {
			if (p[1] && o)
				buf[o++] = ';', buf[o++] = ' ';
		} else if (*p != '\r') {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	free(text);
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Ends the child's whole process group: TERM, then KILL after 3 s; reaps it. */
static int kill_group(pid_t pid)
{
	int status = 0;
	kill(-pid, SIGTERM);
	double until = nw_now() + 3;
	while (nw_now() < until) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			kill(-pid, SIGKILL); /* what the leader left behind */
			return status;
		}
		sleep_s(0.01);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

static int copy_file(const char *from, const char *to)
{
	size_t n = 0;
	char *text = nw_read_file(from, (size_t)1 << 30, &n);
	if (!text)
		return -1;
	FILE *f = fopen(to, "wb");
	int rc = -1;
	if (f) {
		rc = fwrite(text, 1, n, f) == n ? 0 : -1;
		if (fclose(f) != 0)
			rc = -1;
	}
	free(text);
	return rc;
}


/* The child's environment: ours without what it must not inherit, plus the variant's settings. */
static void child_env(const struct nw_tune_child *c, const struct nw_tune_variant *v, struct strv *env)
{
	for (char **e = environ; *e; e++)
		if (!nw_tune_env_unset(c->keep, v->keep_env, *e) && !set_by_variant(v, *e))
			sv_push(env, nw_strdup(*e));
	for (int i = 0; i < v->nset; i++)
		sv_push(env, nw_asprintf("%s=%s", v->set[i].name, v->set[i].value));
}

/* The child's command line: [launcher env -u X ... NAME=v ...] bench-cmd bench ... --json json. */
static void child_argv(const struct nw_tune_child *c, const struct nw_tune_request *rq, const char *json,
                       struct strv *args)
{
	const struct nw_tune_variant *v = rq->v;
	int nlaunch = 0;
	for (char **p = c->launcher; p && *p; p++, nlaunch++)
		sv_push(args, nw_strdup(*p));
	if (nlaunch) {
		sv_push(args, nw_strdup("env"));
		for (char **e = environ; *e; e++)
			if (nw_tune_env_unset(c->keep, v->keep_env, *e)) {
				sv_push(args, nw_strdup("-u"));
				sv_push(args, nw_asprintf("%.*s", (int)strcspn(*e, "="), *e));
			}
		for (int i = 0; i < v->nset; i++)
			sv_push(args, nw_asprintf("%s=%s", v->set[i].name, v->set[i].value));
	}
	sv_push(args, nw_strdup(c->bench_cmd));
	sv_push(args, nw_strdup("bench"));
	sv_push(args, nw_strdup("--op"));
	sv_push(args, nw_strdup(rq->ops));
	for (char **p = c->bench_args; p && *p; p++)
		sv_push(args, nw_strdup(*p));
	sv_push(args, nw_strdup("-c"));
	sv_push(args, nw_strdup(rq->check ? "1" : "0"));
	sv_push(args, nw_asprintf("--json=%s", json));
	sv_push(args, nw_strdup("--no-history"));
}

/*
 * Starts argv with envp in a process group of its own, standard input
 * from /dev/null, output and errors to the files outp and errp. Returns
 * the child's pid, or -1 (errno says why).
 */
static pid_t spawn(char **argv, char **envp, const char *outp, const char *errp)
{
	pid_t pid = fork();
	if (pid != 0) {
		if (pid > 0)
			setpgid(pid, pid);
		return pid;
	}
	setpgid(0, 0);
	int in = open("/dev/null", O_RDONLY);
	int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || o < 0 || e < 0)
		_exit(127);
	dup2(in, 0);
	dup2(o, 1);
	dup2(e, 2);
	execvpe(argv[0], argv, envp);
	dprintf(2, "cannot run '%s': %s\n", argv[0], strerror(errno));
	_exit(127);
}

/*
 * Waits for the child pid started at t0; past timeout_s its process group
 * is ended and r->timed_out set. Returns 0 with *status, or -1 with err
 * filled (waiting failed, or c->interrupted was set: the child is ended).
 */
static int wait_child(const struct nw_tune_child *c, pid_t pid, double t0, double timeout_s,
                      int *status, struct nw_tune_result *r, char *err, size_t errlen)
{
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return nw_seterr(err, errlen, "waiting for the bench child: %s", strerror(errno));
		if (c->interrupted && *c->interrupted) {
			kill_group(pid);
			return nw_seterr(err, errlen, "interrupted");
		}
		if (nw_now() - t0 > timeout_s) {
			*status = kill_group(pid);
			r->timed_out = 1;
			return 0;
		}
		sleep_s(0.005);
	}
}

/* r->rc and r->err from how the child ended, with the tail of its stderr (the file errp). */
static void judge_exit(struct nw_tune_result *r, int status, double timeout_s, const char *errp)
{
	char tail[700];
	file_tail(errp, tail, sizeof(tail));
	if (r->timed_out) {
		r->rc = -1;
		snprintf(r->err, sizeof(r->err), "killed after %.0f s without finishing (hung?)%s%s",
		         timeout_s, tail[0] ? "; stderr: " : "", tail);
	} else if (WIFSIGNALED(status)) {
		r->rc = -1;
		snprintf(r->err, sizeof(r->err), "killed by signal %d%s%s", WTERMSIG(status),
		         tail[0] ? "; stderr: " : "", tail);
	} else {
		r->rc = WEXITSTATUS(status);
		if (r->rc != 0)
			snprintf(r->err, sizeof(r->err), "exit %d%s%s", r->rc, tail[0] ? "; stderr: " : "", tail);
	}
}

/*
 * Parses the child's results file json into r->run (r->have_run, or
 * r->err says why not) and copies it to json_keep when that is not NULL.
 * Returns -1 with err filled only when the copy fails.
 */
static int read_results(struct nw_tune_result *r, const char *json, const char *json_keep, char *err,
                        size_t errlen)
{
	json_error_t jerr;
	json_t *doc = json_load_file(json, 0, &jerr);
	char perr[256];
	if (!doc) {
		snprintf(r->err, sizeof(r->err), "exit %d but no readable results in '%s': %s", r->rc, json,
		         jerr.text);
		return 0;
	}
	if (nw_run_from_json(doc, &r->run, perr, sizeof(perr)) != 0)
		snprintf(r->err, sizeof(r->err), "exit %d but bad results: %s", r->rc, perr);
	else
		r->have_run = 1;
	json_decref(doc);
	if (json_keep && copy_file(json, json_keep) != 0)
		return nw_seterr(err, errlen, "cannot write '%s': %s", json_keep, strerror(errno));
	return 0;
}

/* Runs one child; see tune.h. */
int nw_tune_run_child(const struct nw_tune_child *c, const struct nw_tune_request *rq,
                      struct nw_tune_result *r, char *err, size_t errlen)
{
	static unsigned serial;
	struct strv args = { 0 }, env = { 0 };
	int rc = -1, status = 0;
	memset(r, 0, sizeof(*r));
	nw_run_init(&r->run);
	unsigned id = ++serial;
	char *json = nw_asprintf("%s/run-%u.json", c->tmpdir, id);
	char *outp = nw_asprintf("%s/run-%u.out", c->tmpdir, id);
	char *errp = nw_asprintf("%s/run-%u.err", c->tmpdir, id);
	unlink(json);
	child_env(c, rq->v, &env);
	child_argv(c, rq, json, &args);
	double t0 = nw_now();
	pid_t pid = spawn(args.v, env.v, outp, errp);
	if (pid < 0) {
		nw_seterr(err, errlen, "cannot start a bench child: %s", strerror(errno));
		goto out;
	}
	if (wait_child(c, pid, t0, rq->timeout_s, &status, r, err, errlen) != 0)
		goto out;
	r->wall_s = nw_now() - t0;
	judge_exit(r, status, rq->timeout_s, errp);
	if (!r->timed_out && (r->rc == 0 || r->rc == 1) && read_results(r, json, rq->json_keep, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	unlink(json);
	unlink(outp);
	unlink(errp);
	free(json);
	free(outp);
	free(errp);
	nw_tune_argv_free(args.v);
	nw_tune_argv_free(env.v);
	return rc;
}

/* Bench's arguments: the options in b, in bench's order; a library path stays one word. */
static char **bench_argv(const struct nw_tune_bench_opts *b)
{
	char spec[1024];
	snprintf(spec, sizeof(spec), "-b %s -e %s -f %s -n %s -w %s -d %s -o %s%s%s%s%s", b->b, b->e, b->f, b->n,
	         b->w, b->d, b->o, b->g ? " -g " : "", b->g ? b->g : "", b->backend ? " --backend " : "",
	         b->backend ? b->backend : "");
	char **argv = nw_tune_split_words(spec);
	if (b->nccl_lib) {
		int n = 0;
		while (argv[n])
			n++;
		argv = nw_realloc(argv, (size_t)(n + 3) * sizeof(*argv));
		argv[n] = nw_strdup("--nccl-lib");
		argv[n + 1] = nw_strdup(b->nccl_lib);
		argv[n + 2] = NULL;
	}
	return argv;
}

/* Prepares the children's program, directories and arguments; see tune.h. */
int nw_tune_child_open(struct nw_tune_child *c, const struct nw_tune_child_spec *s, char *err,
                       size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->keep = s->keep;
	c->interrupted = s->interrupted;
	if (s->bench_cmd) {
		c->bench_cmd = nw_strdup(s->bench_cmd);
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0) {
			nw_seterr(err, errlen, "cannot find this program's path (/proc/self/exe): %s; give --bench-cmd PATH",
			          strerror(errno));
			return NW_TUNE_FAILED;
		}
		self[n] = '\0';
		c->bench_cmd = nw_strdup(self);
	}
	if (s->save_runs && mkdir(s->save_runs, 0777) != 0 && errno != EEXIST) {
		nw_seterr(err, errlen, "cannot create '%s': %s", s->save_runs, strerror(errno));
		return NW_TUNE_USAGE;
	}
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	char *dir = nw_asprintf("%s/ncclwatch-tune.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		nw_seterr(err, errlen, "cannot create a directory under '%s': %s; set TMPDIR", tmp, strerror(errno));
		free(dir);
		return NW_TUNE_FAILED;
	}
	c->tmpdir = dir;
	c->launcher = s->launcher ? nw_tune_split_words(s->launcher) : NULL;
	c->bench_args = bench_argv(&s->bench);
	return NW_TUNE_OK;
}

void nw_tune_child_close(struct nw_tune_child *c)
{
	if (c->tmpdir)
		rmdir(c->tmpdir);
	free(c->tmpdir);
	free(c->bench_cmd);
	nw_tune_argv_free(c->launcher);
	nw_tune_argv_free(c->bench_args);
	memset(c, 0, sizeof(*c));
}
