/* tune runner: one bench child per run, in a fresh environment, with a timeout. */
#include "tune/tune.h"

#include <errno.h>
#include <fcntl.h>
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

static int listed(char **list, const char *name, size_t len)
{
	for (char **p = list; p && *p; p++)
		if (strlen(*p) == len && !strncmp(*p, name, len))
			return 1;
	return 0;
}

/* Whether the environment entry "NAME=..." is an NCCL_* variable the child must not see. */
static int stripped(const struct nw_tune_child *c, const struct nw_tune_variant *v, const char *entry)
{
	if (v->keep_env || strncmp(entry, "NCCL_", 5) != 0)
		return 0;
	size_t len = strcspn(entry, "=");
	if (len == strlen("NCCL_NVLS_ENABLE") && !strncmp(entry, "NCCL_NVLS_ENABLE", len))
		return 0;
	return !listed(c->keep, entry, len);
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

/* Runs one child; see tune.h. */
int nw_tune_run_child(const struct nw_tune_child *c, const struct nw_tune_variant *v,
                      const char *ops, int check, const char *json_keep,
                      struct nw_tune_result *r, char *err, size_t errlen)
{
	static unsigned serial;
	struct strv args = { 0 }, env = { 0 };
	int rc = -1;
	memset(r, 0, sizeof(*r));
	nw_run_init(&r->run);
	unsigned id = ++serial;
	char *json = nw_asprintf("%s/run-%u.json", c->tmpdir, id);
	char *outp = nw_asprintf("%s/run-%u.out", c->tmpdir, id);
	char *errp = nw_asprintf("%s/run-%u.err", c->tmpdir, id);
	unlink(json);

	/* Environment: ours, filtered, plus the variant's settings. */
	for (char **e = environ; *e; e++)
		if (!stripped(c, v, *e) && !set_by_variant(v, *e))
			sv_push(&env, nw_strdup(*e));
	for (int i = 0; i < v->nset; i++)
		sv_push(&env, nw_asprintf("%s=%s", v->set[i].name, v->set[i].value));

	/* Command line: [launcher [env -u X ... NAME=v ...]] bench-cmd bench ... */
	int nlaunch = 0;
	for (char **p = c->launcher; p && *p; p++, nlaunch++)
		sv_push(&args, nw_strdup(*p));
	if (nlaunch) {
		sv_push(&args, nw_strdup("env"));
		for (char **e = environ; *e; e++)
			if (stripped(c, v, *e)) {
				sv_push(&args, nw_strdup("-u"));
				sv_push(&args, nw_asprintf("%.*s", (int)strcspn(*e, "="), *e));
			}
		for (int i = 0; i < v->nset; i++)
			sv_push(&args, nw_asprintf("%s=%s", v->set[i].name, v->set[i].value));
	}
	sv_push(&args, nw_strdup(c->bench_cmd));
	sv_push(&args, nw_strdup("bench"));
	sv_push(&args, nw_strdup("--op"));
	sv_push(&args, nw_strdup(ops));
	for (char **p = c->bench_args; p && *p; p++)
		sv_push(&args, nw_strdup(*p));
	sv_push(&args, nw_strdup("-c"));
	sv_push(&args, nw_strdup(check ? "1" : "0"));
	sv_push(&args, nw_strdup("--json"));
	sv_push(&args, nw_strdup(json));
	sv_push(&args, nw_strdup("--no-history"));

	double t0 = nw_now();
	pid_t pid = fork();
	if (pid < 0) {
		nw_seterr(err, errlen, "cannot start a bench child: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int in = open("/dev/null", O_RDONLY);
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || o < 0 || e < 0)
			_exit(127);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execvpe(args.v[0], args.v, env.v);
		dprintf(2, "cannot run '%s': %s\n", args.v[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			nw_seterr(err, errlen, "waiting for the bench child: %s", strerror(errno));
			goto out;
		}
		if (c->interrupted && *c->interrupted) {
			kill_group(pid);
			nw_seterr(err, errlen, "interrupted");
			goto out;
		}
		if (nw_now() - t0 > c->timeout_s) {
			status = kill_group(pid);
			r->timed_out = 1;
			break;
		}
		sleep_s(0.005);
	}
	r->wall_s = nw_now() - t0;

	char tail[700];
	file_tail(errp, tail, sizeof(tail));
	if (r->timed_out) {
		r->rc = -1;
		snprintf(r->err, sizeof(r->err), "killed after %.0f s without finishing (hung?)%s%s",
		         c->timeout_s, tail[0] ? "; stderr: " : "", tail);
	} else if (WIFSIGNALED(status)) {
		r->rc = -1;
		snprintf(r->err, sizeof(r->err), "killed by signal %d%s%s", WTERMSIG(status),
		         tail[0] ? "; stderr: " : "", tail);
	} else {
		r->rc = WEXITSTATUS(status);
		if (r->rc != 0)
			snprintf(r->err, sizeof(r->err), "exit %d%s%s", r->rc, tail[0] ? "; stderr: " : "", tail);
	}
	if (!r->timed_out && (r->rc == 0 || r->rc == 1)) {
		json_error_t jerr;
		json_t *doc = json_load_file(json, 0, &jerr);
		char perr[256];
		if (!doc) {
			snprintf(r->err, sizeof(r->err), "exit %d but no readable results in '%s': %s", r->rc,
			         json, jerr.text);
		} else if (nw_run_from_json(doc, &r->run, perr, sizeof(perr)) != 0) {
			snprintf(r->err, sizeof(r->err), "exit %d but bad results: %s", r->rc, perr);
		} else {
			r->have_run = 1;
		}
		json_decref(doc);
		if (doc && json_keep && copy_file(json, json_keep) != 0) {
			nw_seterr(err, errlen, "cannot write '%s': %s", json_keep, strerror(errno));
			goto out;
		}
	}
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
