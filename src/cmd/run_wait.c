/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_wait: `ncclwatch run` while the job runs (cmd/run.h). Signals are
 * waited for, never handled (sigtimedwait): the job's end (SIGCHLD), the
 * terminal's size, and every signal meant for the job, which is passed on
 * (a Ctrl-C from the terminal already reached the job, which shares the
 * terminal's process group, so it is not sent twice). Between signals,
 * the stats are read every --sample-s: a hang is said once, as soon as
 * `hang` would say it, and the status line is redrawn on the terminal's
 * last row, kept out of the job's output by a scrolling region.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/run.h"
#include "util/util.h"

uint64_t run_realtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Write all of s to stderr (one write: the terminal gets the sequence whole). */
static void put(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t k = write(STDERR_FILENO, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static int term_size(struct run_ctx *c)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row < 3 || ws.ws_col < 20)
		return -1;
	c->rows = ws.ws_row;
	c->cols = ws.ws_col;
	return 0;
}

/* The rows above the last scroll; the last is the status line's. */
static void reserve(struct run_ctx *c)
{
	char b[96];
	snprintf(b, sizeof(b), "\n\0337\033[1;%dr\0338\033[1A", c->rows - 1);
	put(b);
}

void run_tty_begin(struct run_ctx *c)
{
	const char *term = getenv("TERM");
	int want = c->o.status == RUN_STATUS_ON ||
	           (c->o.status == RUN_STATUS_AUTO && isatty(STDERR_FILENO) && !c->o.quiet && c->speaker);
	if (!want || !isatty(STDERR_FILENO) || (term && !strcmp(term, "dumb")) || term_size(c) != 0)
		return;
	c->tty = 1;
	reserve(c);
}

void run_tty_end(struct run_ctx *c)
{
	if (!c->tty)
		return;
	char b[96];
	snprintf(b, sizeof(b), "\0337\033[%d;1H\033[2K\033[r\0338", c->rows);
	put(b);
	c->tty = 0;
}

static void draw(struct run_ctx *c)
{
	if (!c->tty)
		return;
	char b[700];
	int w = c->cols - 1 < (int)sizeof(c->line) - 1 ? c->cols - 1 : (int)sizeof(c->line) - 1;
	snprintf(b, sizeof(b), "\0337\033[%d;1H\033[2K%.*s\0338", c->rows, w, c->line);
	put(b);
}

static void resized(struct run_ctx *c)
{
	if (!c->tty || term_size(c) != 0)
		return;
	reserve(c);
	draw(c);
}

/* A line of text for the job's terminal: above the status line (the region scrolls it up). */
static void say(struct run_ctx *c, const char *text)
{
	char b[700];
	snprintf(b, sizeof(b), "ncclwatch run: %s\n", text);
	put(b);
	draw(c);
}

/* The status line: the verdict first, so that a narrow terminal cuts the least telling part. */
static void status_text(struct run_ctx *c, const struct nw_jobw_status *st)
{
	char busbw[64] = "", slow[96] = "";
	if (st->top_op[0] && st->top_busbw > 0)
		snprintf(busbw, sizeof(busbw), " | %s %.1f GB/s busbw", st->top_op, st->top_busbw);
	else if (st->top_op[0])
		snprintf(busbw, sizeof(busbw), " | %s (not timed)", st->top_op);
	if (st->slow_rank >= 0 && st->slow_late_us >= 1000)
		snprintf(slow, sizeof(slow), " | slowest rank %d (+%.2f ms)", st->slow_rank, st->slow_late_us / 1e3);
	else if (st->slow_rank >= 0 && st->slow_late_us >= 1)
		snprintf(slow, sizeof(slow), " | slowest rank %d (+%.0f us)", st->slow_rank, st->slow_late_us);
	if (!st->files)
		snprintf(c->line, sizeof(c->line), "ncclwatch: no rank has reported yet | job %s", c->job_id);
	else if (st->hung)
		snprintf(c->line, sizeof(c->line), "ncclwatch: HUNG: %s", st->hang_text);
	else
		snprintf(c->line, sizeof(c->line), "ncclwatch: no hang | %d rank%s | %.0f ops/s per rank%s%s | job %s",
		         st->ranks, st->ranks == 1 ? "" : "s", st->ops_per_s, busbw, slow, c->job_id);
}

static void tick(struct run_ctx *c)
{
	struct nw_jobw_status st;
	struct nw_jobw_news news;
	nw_jobw_tick(c->w, run_realtime(), &st, &news);
	for (int i = 0; i < news.n; i++) {
		if (!c->nhangs++)
			nw_strlcpy(c->first_hang, news.text[i], sizeof(c->first_hang));
		if (!c->o.quiet) {
			char t[600];
			snprintf(t, sizeof(t), "HUNG: %s", news.text[i]);
			say(c, t);
		}
	}
	status_text(c, &st);
	draw(c);
}

/* Whether the job has ended; its status into c->exit. */
static int reaped(struct run_ctx *c)
{
	int st;
	pid_t p;
	do
		p = waitpid(c->child, &st, WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p != c->child)
		return 0;
	if (WIFSIGNALED(st))
		c->exit.signal = WTERMSIG(st);
	else
		c->exit.code = WEXITSTATUS(st);
	return 1;
}

/* A signal for the job: passed on (unless the terminal sent it to the job too), and what it means said. */
static void forward(struct run_ctx *c, int sig, const siginfo_t *si)
{
	char name[32];
	nw_job_signame(sig, name, sizeof(name));
	int from_tty = si->si_code == SI_KERNEL && getpgid(c->child) == getpgrp();
	if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
		if (!c->exit.interrupted) {
			if (from_tty)
				snprintf(c->exit.by, sizeof(c->exit.by), "%s from the terminal%s", name,
				         sig == SIGINT ? " (Ctrl-C)" : "");
			else if (si->si_code == SI_USER || si->si_code == SI_QUEUE)
				snprintf(c->exit.by, sizeof(c->exit.by), "%s from pid %d", name, (int)si->si_pid);
			else
				snprintf(c->exit.by, sizeof(c->exit.by), "%s", name);
		}
		c->exit.interrupted = 1;
	}
	if (!from_tty)
		kill(c->child, sig);
}

void run_wait(struct run_ctx *c)
{
	double next = nw_now();
	for (;;) {
		double now = nw_now();
		if (now >= next) {
			tick(c);
			next = now + c->o.sample_s;
		}
		double left = next - nw_now();
		if (left < 0)
			left = 0;
		struct timespec ts = { .tv_sec = (time_t)left, .tv_nsec = (long)((left - (double)(time_t)left) * 1e9) };
		siginfo_t si;
		int sig = sigtimedwait(&c->sig.waited, &si, &ts);
		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			if (reaped(c))
				break;
		} else if (sig == SIGWINCH) {
			resized(c);
		} else {
			forward(c, sig, &si);
		}
	}
	c->end_ns = run_realtime();
}
