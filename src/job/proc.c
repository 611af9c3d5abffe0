/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proc: the job's process. run waits for signals with sigtimedwait (no
 * handlers), so they are blocked in run; the job gets its signal mask and
 * SIGPIPE's disposition back before exec, and an exec that fails is told
 * through a close-on-exec pipe (job.h).
 */
#include "job/job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

extern char **environ;

void nw_job_signals_take(struct nw_job_sig *s)
{
	static const int sigs[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM };
	sigemptyset(&s->waited);
	for (size_t i = 0; i < NW_ARRAY_LEN(sigs); i++)
		sigaddset(&s->waited, sigs[i]);
	sigprocmask(SIG_BLOCK, &s->waited, &s->saved_mask);
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &s->saved_pipe);
}

void nw_job_signals_give_back(const struct nw_job_sig *s)
{
	sigaction(SIGPIPE, &s->saved_pipe, NULL);
	sigprocmask(SIG_SETMASK, &s->saved_mask, NULL);
}

int nw_job_start(char *const *argv, char *const *env, const struct nw_job_sig *s, pid_t *pid, int *errno_out,
                 char *err, size_t errlen)
{
	int p[2];
	*errno_out = 0;
	if (pipe2(p, O_CLOEXEC) != 0) {
		*errno_out = errno;
		return nw_seterr(err, errlen, "cannot start '%s': pipe: %s", argv[0], strerror(errno));
	}
	fflush(NULL);
	pid_t c = fork();
	if (c < 0) {
		*errno_out = errno;
		close(p[0]);
		close(p[1]);
		return nw_seterr(err, errlen, "cannot start '%s': fork: %s", argv[0], strerror(*errno_out));
	}
	if (c == 0) {
		close(p[0]);
		sigaction(SIGPIPE, &s->saved_pipe, NULL);
		sigprocmask(SIG_SETMASK, &s->saved_mask, NULL);
		if (env)
			environ = (char **)env;
		execvp(argv[0], argv);
		int e = errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(p[1]);
	int e = 0;
	ssize_t n;
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	*pid = c;
	if (n == (ssize_t)sizeof(e)) {
		*errno_out = e;
		return nw_seterr(err, errlen, "cannot run '%s': %s", argv[0], strerror(e));
	}
	return 0;
}

const char *nw_job_signame(int sig, char *buf, size_t len)
{
	/* a table, not sigabbrev_np: that is glibc 2.32, and the portable files need 2.31 alone */
	static const struct {
		int sig;
		const char *name;
	} t[] = { { SIGHUP, "SIGHUP" },   { SIGINT, "SIGINT" },   { SIGQUIT, "SIGQUIT" }, { SIGILL, "SIGILL" },
		  { SIGTRAP, "SIGTRAP" }, { SIGABRT, "SIGABRT" }, { SIGBUS, "SIGBUS" },   { SIGFPE, "SIGFPE" },
		  { SIGKILL, "SIGKILL" }, { SIGUSR1, "SIGUSR1" }, { SIGSEGV, "SIGSEGV" }, { SIGUSR2, "SIGUSR2" },
		  { SIGPIPE, "SIGPIPE" }, { SIGALRM, "SIGALRM" }, { SIGTERM, "SIGTERM" }, { SIGCHLD, "SIGCHLD" },
		  { SIGCONT, "SIGCONT" }, { SIGSTOP, "SIGSTOP" }, { SIGTSTP, "SIGTSTP" }, { SIGXCPU, "SIGXCPU" },
		  { SIGXFSZ, "SIGXFSZ" }, { SIGSYS, "SIGSYS" },   { SIGWINCH, "SIGWINCH" } };
	for (size_t i = 0; i < NW_ARRAY_LEN(t); i++)
		if (t[i].sig == sig) {
			nw_strlcpy(buf, t[i].name, len);
			return buf;
		}
	snprintf(buf, len, "signal %d", sig);
	return buf;
}
