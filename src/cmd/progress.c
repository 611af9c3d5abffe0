/* One line of progress on stderr, redrawn in place (see progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/progress.h"
#include "util/util.h"

int nw_progress_wanted(enum nw_progress_mode mode)
{
	if (mode != NW_PROGRESS_AUTO)
		return mode == NW_PROGRESS_ON;
	const char *env = getenv("NCCLWATCH_PROGRESS");
	if (env && *env)
		return strcmp(env, "0") != 0;
	const char *term = getenv("TERM");
	return isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

void nw_progress_init(struct nw_progress *p, int on, int total_n, double total_w)
{
	memset(p, 0, sizeof(*p));
	p->on = on;
	p->t0 = nw_now();
	p->total_n = total_n;
	p->total_w = total_w;
}

/* "1m05s" or "42s" into buf. */
static void fmt_secs(double s, char *buf, size_t len)
{
	long t = (long)(s + 0.5);
	if (t >= 60)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%lds", t);
}

/*
 * Draw the line: what, done/total, and time left once a step is done
 * (elapsed time scaled by the weight still to do).
 */
static void draw(struct nw_progress *p, int force)
{
	double now = nw_now();
	if (!p->on || (!force && p->drawn && now - p->last < 0.1))
		return;
	p->last = now;
	char left[48] = "";
	if (p->done_w > 0 && p->total_w > p->done_w) {
		char t[16];
		fmt_secs((now - p->t0) * (p->total_w - p->done_w) / p->done_w, t, sizeof(t));
		snprintf(left, sizeof(left), ", about %s left", t);
	}
	if (p->total_n > 0)
		fprintf(stderr, "\r%s (%d/%d done%s)\033[K", p->what, p->done_n, p->total_n, left);
	else
		fprintf(stderr, "\r%s\033[K", p->what);
	fflush(stderr);
	p->drawn = 1;
}

void nw_progress_begin(struct nw_progress *p, const char *what)
{
	nw_strlcpy(p->what, what, sizeof(p->what));
	draw(p, 0);
}

void nw_progress_done(struct nw_progress *p, double w)
{
	p->done_n++;
	p->done_w += w;
	draw(p, 0);
}

void nw_progress_clear(struct nw_progress *p)
{
	if (!p->on || !p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = 0;
}

/* Append s to buf (of len, at *at), for the signal-safe message. */
static void put(char *buf, size_t len, size_t *at, const char *s)
{
	while (*s && *at + 1 < len)
		buf[(*at)++] = *s++;
}

/* Decimal n into a small buffer, without stdio (signal-safe). */
static const char *num(int n, char *buf, size_t len)
{
	char *e = buf + len - 1;
	*e = '\0';
	unsigned v = n < 0 ? 0u : (unsigned)n;
	do {
		*--e = (char)('0' + v % 10);
		v /= 10;
	} while (v && e > buf);
	return e;
}

void nw_progress_interrupted(const struct nw_progress *p, const char *cmd)
{
	if (!p)
		return;
	char msg[320], a[16], b[16];
	size_t at = 0;
	put(msg, sizeof(msg), &at, p->on && p->drawn ? "\r\033[K" : "");
	put(msg, sizeof(msg), &at, "ncclwatch: ");
	put(msg, sizeof(msg), &at, cmd);
	put(msg, sizeof(msg), &at, ": interrupted");
	if (p->what[0]) {
		put(msg, sizeof(msg), &at, " during ");
		put(msg, sizeof(msg), &at, p->what);
	}
	put(msg, sizeof(msg), &at, "; ");
	put(msg, sizeof(msg), &at, num(p->done_n, a, sizeof(a)));
	put(msg, sizeof(msg), &at, " of ");
	put(msg, sizeof(msg), &at, num(p->total_n, b, sizeof(b)));
	put(msg, sizeof(msg), &at, " steps were measured (printed above)\n");
	ssize_t w = write(STDERR_FILENO, msg, at);
	(void)w;
}
