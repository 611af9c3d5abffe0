/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch top: a live terminal view of every local rank's collectives,
 * read from the profiler plugin's stats files (docs/top.md). --once prints
 * one plain-text snapshot instead (no terminal needed).
 *
 * Terminal hygiene: signal handlers only set flags; endwin() runs on every
 * way out (the loop's end, atexit), and on a crash the saved terminal mode
 * is put back (tcsetattr and write are async-signal-safe) before the signal
 * is raised again.
 */
#include <curses.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "export/sample.h"
#include "export/statsfile.h"
#include "export/view.h"
#include "util/termtext.h"
#include "util/util.h"

/* The keys of the live view, for --help and its '?' screen. */
#define KEYS_HELP \
	"keys: b busbw, c calls/s, t time, u busy, g by communicator (sort; the\n" \
	"      same key again, or r, reverses it);\n" \
	"      o filter by op, m filter by communicator, x clear filters;\n" \
	"      a show/hide stale; p or space pause; arrows, PgUp/PgDn, Home scroll;\n" \
	"      ? this help; q quit.\n"

struct top_opts {
	const char *dir;
	double interval;
	int once;
	struct nw_view_opts view;
	const char *op_arg, *comm_arg; /* --op, --comm as given; copied into op[], comm[] */
	char op[64], comm[64];
};
/* --op and --comm are read into either through one length check */
_Static_assert(sizeof(((struct top_opts *)0)->op) == sizeof(((struct top_opts *)0)->comm), "op and comm differ");

static const struct nw_opt_choice sort_keys[] = {
	{ "comm", NW_VIEW_SORT_COMM }, { "busbw", NW_VIEW_SORT_BUSBW }, { "rate", NW_VIEW_SORT_RATE },
	{ "time", NW_VIEW_SORT_TIME }, { "busy", NW_VIEW_SORT_BUSY },   { NULL, 0 },
};

static const struct nw_opt top_options[] = {
	NW_OPT_STATS_DIR(struct top_opts, dir),
	{ .kind = NW_OPTK_DURATION, .lname = "interval", .off = NW_F_DBL(struct top_opts, interval), .argh = "S",
	  .dmin = 0.05, .dmax = 3600, .def = "1", .help = "refresh every S seconds (e.g. 0.5, 2s, 500ms)" },
	{ .kind = NW_OPTK_FLAG, .lname = "once", .off = NW_F_INT(struct top_opts, once),
	  .help = "print one plain-text snapshot and exit; rates are then\naverages over each rank's life" },
	{ .kind = NW_OPTK_FLAG, .lname = "all", .off = NW_F_INT(struct top_opts, view.all),
	  .help = "also show ranks whose process is gone (stale files)" },
	{ .kind = NW_OPTK_CHOICE, .lname = "sort", .off = NW_F_ENUM(struct top_opts, view.sort), .argh = "KEY",
	  .choices = sort_keys, .help = "comm (default: by communicator, op, rank), busbw, rate\n(calls/s), time (p50), busy" },
	{ .kind = NW_OPTK_FLAG, .lname = "reverse", .off = NW_F_INT(struct top_opts, view.reverse),
	  .help = "the sort turned around (lowest busbw first, ...)" },
	{ .kind = NW_OPTK_STRING, .lname = "op", .off = NW_F_STR(struct top_opts, op_arg), .argh = "OP",
	  .values = nw_cli_op_names, .help = "only ops whose name contains OP (all_reduce, send, ...)" },
	{ .kind = NW_OPTK_STRING, .lname = "comm", .off = NW_F_STR(struct top_opts, comm_arg), .argh = "COMM",
	  .help = "only communicators whose id starts with, or name contains, COMM" },
	{ 0 },
};

const struct nw_cmd_spec nw_spec_top = {
	.name = "top",
	.synopsis = "[--dir DIR] [--interval S] [--once] [--all]\n[--sort KEY] [--op OP] [--comm COMM]",
	.about = "Live view of every rank on this host of every job run with\n"
	         "NCCL_PROFILER_PLUGIN=ncclwatch: per communicator, rank and op, the calls,\n"
	         "bytes, mean message size, calls/s, busbw, p50/p99 execution time, busy %, the time source\n"
	         "(kernel: GPU timestamps; proxy: network progress only) and each rank's\n"
	         "lateness. The straggler (the rank the others wait for) is marked '*' and\n"
	         "highlighted. A hung communicator (see 'ncclwatch hang') comes first, in\n"
	         "red, with the ranks that have not arrived.\n",
	.opts = top_options,
	.footer = KEYS_HELP,
	.width = 17,
};

static volatile sig_atomic_t quit_flag;
static struct termios saved_tio;
static int have_tio, curses_on;
static int colour_on; /* colours started: a terminal and NO_COLOR unset */

static void on_quit(int sig)
{
	(void)sig;
	quit_flag = 1;
}

/* A crash: give the terminal its mode back, then die of the same signal. */
static void on_fatal(int sig)
{
	static const char reset[] = "\033[?1049l\033[?25h\r\n";
	if (have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (write(STDOUT_FILENO, reset, sizeof(reset) - 1) < 0) {
		/* nothing more can be done here */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Leave curses mode once (atexit and normal exit both call it). */
static void end_curses(void)
{
	if (curses_on && !isendwin())
		endwin();
	curses_on = 0;
}

/* Quit signals set a flag; crash signals restore the terminal and die. */
static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_quit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
}

/* One summary line: where, how many files in which state. */
static void summary(char *buf, size_t len, const struct top_opts *o, const struct nw_view *v)
{
	snprintf(buf, len, "ncclwatch top: '%s': %zu file%s (%zu live, %zu finished, %zu disabled, %zu stale%s, %zu bad)",
	         NW_TT(o->dir), v->nfiles, v->nfiles == 1 ? "" : "s", v->nlive, v->nfinished, v->ndisabled,
	         v->nstale, v->nhidden ? " hidden: --all shows them" : "", v->nbad);
}

/* "straggler: comm X (name) rank R on HOST arrives 1.2ms late on average" lines. */
/* Why some files stay empty: NCCL raises no profiler events on one-rank communicators. */
static const char *solo_note(char *buf, size_t len, size_t n)
{
	snprintf(buf, len, "%zu one-rank communicator%s with no operations: NCCL sends no profiler events for a "
	         "communicator of one rank (it copies locally), so there is nothing to show for %s",
	         n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
	return buf;
}

/* Calls captured into CUDA graphs: NCCL raises no profiler events on replay. */
static const char *graph_note(char *buf, size_t len, uint64_t n)
{
	snprintf(buf, len, "%llu call%s captured into CUDA graphs: NCCL raises no profiler events when a graph "
	         "replays them, so replays are not in these figures",
	         (unsigned long long)n, n == 1 ? " was" : "s were");
	return buf;
}

static size_t straggler_line(char *buf, size_t len, const struct nw_view *v, size_t from)
{
	for (size_t i = from; i < v->n; i++) {
		const struct nw_view_row *r = &v->rows[i];
		if (!r->straggler)
			continue;
		int seen = 0;
		for (size_t k = 0; k < i; k++)
			if (v->rows[k].straggler && v->rows[k].comm_hash == r->comm_hash)
				seen = 1;
		if (seen)
			continue;
		char late[16];
		nw_view_format_us(r->late_us, late, sizeof(late));
		snprintf(buf, len, "straggler: communicator %016llx%s%s%s rank %d (pid %d on %s) arrives %s after the earliest rank on average; the others wait for it",
		         (unsigned long long)r->comm_hash, r->comm_name[0] ? " (" : "", NW_TT(r->comm_name),
		         r->comm_name[0] ? ")" : "", r->rank, (int)r->pid, NW_TT(r->host), late);
		return i + 1;
	}
	return 0;
}

/* --once: load, build the table with life-long rates, print it plainly. */
static int print_once(const struct top_opts *o)
{
	struct nw_sf_set set;
	char err[NW_ERRLEN], line[1024];
	if (nw_sf_load_flags(o->dir, o->view.all ? 0 : NW_SF_HIDE_STALE, &set, err, sizeof(err)) < 0)
		return nw_error("%s", NW_TT_MSG(err)), 1;
	for (size_t i = 0; i < set.nbad; i++)
		nw_warn("skipping '%s': %s", NW_TT(set.bad[i].path), NW_TT(set.bad[i].why));
	if (set.nbad_more)
		nw_warn("skipping %zu more unusable files", set.nbad_more);
	if (set.nremoved)
		nw_warn("removed %zu old stats file%s of processes that are gone (NCCLWATCH_STALE_KEEP)", set.nremoved,
		        set.nremoved == 1 ? "" : "s");
	struct nw_sample now;
	nw_sample_take(&set, nw_now(), &now);
	struct nw_view v;
	nw_view_build(&set, &now, NULL, &o->view, &v);
	summary(line, sizeof(line), o, &v);
	printf("%s; rates over each rank's life\n", line);
	for (size_t i = 0; i < v.nhangs; i++)
		printf("%s\n", v.hangs[i].text);
	nw_view_format_header(line, sizeof(line));
	printf("%s\n", line);
	for (size_t i = 0; i < v.n; i++) {
		nw_view_format_row(line, sizeof(line), &v.rows[i]);
		printf("%s\n", line);
	}
	if (!v.n)
		printf("(no operations recorded%s)\n", v.nhidden ? "; stale files are hidden, --all shows them" : "");
	if (v.nsolo)
		printf("note: %s\n", solo_note(line, sizeof(line), v.nsolo));
	if (v.ngraph)
		printf("note: %s\n", graph_note(line, sizeof(line), v.ngraph));
	for (unsigned i = 1; i < NWS_NMODES; i++)
		if (nw_view_mode_note(line, sizeof(line), &v.modes, i))
			printf("note: %s\n", line);
	for (size_t i = 0; i < v.novl; i++) {
		nw_view_format_ovl(line, sizeof(line), &v.ovl[i]);
		printf("%s\n", line);
		if (nw_view_alone_note(line, sizeof(line), &v.ovl[i]))
			printf("note: %s\n", line);
	}
	for (size_t at = 0; (at = straggler_line(line, sizeof(line), &v, at)) != 0;)
		printf("%s\n", line);
	nw_view_release(&v);
	nw_sample_release(&now);
	nw_sf_set_release(&set);
	return 0;
}

/* Ask for a line of text at the bottom of the screen (blocking). */
static void prompt(const char *what, char *buf, size_t len)
{
	char tmp[64] = "";
	int rows = LINES;
	move(rows - 1, 0);
	clrtoeol();
	attron(A_BOLD);
	printw("%s (empty: all): ", what);
	attroff(A_BOLD);
	echo();
	curs_set(1);
	timeout(-1);
	if (getnstr(tmp, (int)sizeof(tmp) - 1) == OK)
		nw_strlcpy(buf, tmp, len);
	noecho();
	curs_set(0);
}

/* Rows of the table that fit on the screen. */
static int table_rows(void)
{
	int n = LINES - 6;
	return n > 1 ? n : 1;
}

/* The top of the screen: summary, key help, error line, column header; returns whether the table is compact. */
static int draw_head(const struct top_opts *o, const struct nw_view *v, const char *err, int paused, int live_rates)
{
	char line[1024];
	summary(line, sizeof(line), o, v);
	mvaddnstr(0, 0, line, COLS);
	snprintf(line, sizeof(line), "sort %s%s%s%s%s%s | %s%s | b c t u g sort  r reverse  o m x filter  a stale  "
	         "p pause  ? help  q quit",
	         nw_view_sort_name(o->view.sort), o->view.reverse ? " (reversed)" : "", *o->op ? "  op~" : "", o->op,
	         *o->comm ? "  comm~" : "",
	         o->comm, live_rates ? "rates over the last interval" : "rates over each rank's life",
	         paused ? "  [PAUSED]" : "");
	mvaddnstr(1, 0, line, COLS);
	if (err && *err) {
		attron(A_BOLD);
		mvaddnstr(2, 0, err, COLS);
		attroff(A_BOLD);
	} else if (v->nhangs) { /* the first hung communicator, in red, where errors go */
		attr_t a = A_BOLD | (has_colors() ? COLOR_PAIR(1) : A_STANDOUT);
		attron(a);
		mvaddnstr(2, 0, v->hangs[0].text, COLS);
		attroff(a);
	}
	/* the full table when it fits, else the compact one */
	char probe[NW_VIEW_LINE];
	nw_view_format_header(probe, sizeof(probe));
	int compact = (int)strlen(probe) > COLS;
	if (compact)
		nw_view_format_header_compact(line, sizeof(line));
	else
		nw_strlcpy(line, probe, sizeof(line));
	attron(A_REVERSE);
	mvaddnstr(3, 0, line, COLS);
	for (int x = (int)strlen(line); x < COLS; x++)
		addch(' ');
	attroff(A_REVERSE);
	return compact;
}

/* The page of rows from *first (kept on the table), stragglers highlighted; returns the next free line. */
static int draw_rows(const struct nw_view *v, int compact, size_t *first)
{
	char line[1024];
	int y = 4, bottom = 4 + table_rows();
	size_t page = (size_t)table_rows();
	if (*first + page > v->n)
		*first = v->n > page ? v->n - page : 0;
	if (v->n > page) {
		snprintf(line, sizeof(line), "rows %zu-%zu of %zu (arrows, PgUp/PgDn scroll)", *first + 1,
		         *first + page < v->n ? *first + page : v->n, v->n);
		mvaddnstr(LINES - 2, 0, line, COLS);
	}
	for (size_t i = *first; i < v->n && y < bottom; i++, y++) {
		const struct nw_view_row *r = &v->rows[i];
		attr_t a = A_NORMAL;
		if (r->straggler || r->hung)
			a = A_BOLD | (colour_on ? COLOR_PAIR(1) : A_STANDOUT);
		else if (r->live == NW_SF_STALE)
			a = A_DIM;
		if (compact)
			nw_view_format_row_compact(line, sizeof(line), r);
		else
			nw_view_format_row(line, sizeof(line), r);
		attron(a);
		mvaddnstr(y, 0, line, COLS);
		attroff(a);
	}
	return y;
}

/* Paint one screen: summary, key help, error line, table page, notes, straggler line. */
static void draw(const struct top_opts *o, const struct nw_view *v, const char *err, int paused,
                 int live_rates, size_t *first)
{
	char line[1024];
	erase();
	int compact = draw_head(o, v, err, paused, live_rates);
	int y = draw_rows(v, compact, first);
	if (!v->n)
		mvaddnstr(y, 0, "no operations recorded yet: is a job running with NCCL_PROFILER_PLUGIN=ncclwatch?", COLS);
	int ny = v->n ? y : y + 1;
	if (v->nsolo && ny < LINES - 2)
		mvaddnstr(ny++, 0, solo_note(line, sizeof(line), v->nsolo), COLS);
	if (v->ngraph && ny < LINES - 2)
		mvaddnstr(ny++, 0, graph_note(line, sizeof(line), v->ngraph), COLS);
	for (unsigned i = 1; i < NWS_NMODES; i++)
		if (ny < LINES - 2 && nw_view_mode_note(line, sizeof(line), &v->modes, i))
			mvaddnstr(ny++, 0, line, COLS);
	for (size_t i = 0; i < v->novl && ny < LINES - 2; i++) {
		nw_view_format_ovl(line, sizeof(line), &v->ovl[i]);
		mvaddnstr(ny++, 0, line, COLS);
		if (ny < LINES - 2 && nw_view_alone_note(line, sizeof(line), &v->ovl[i]))
			mvaddnstr(ny++, 0, line, COLS);
	}
	if (straggler_line(line, sizeof(line), v, 0)) {
		attron(A_BOLD);
		mvaddnstr(LINES - 1, 0, line, COLS);
		attroff(A_BOLD);
	}
	refresh();
}

/* The live view's state between refreshes. */
struct live {
	struct nw_sample prev, now;
	struct nw_sf_set set;
	struct nw_sf_cache *cache; /* hidden files between refreshes */
	struct nw_view v;
	char err[NW_ERRLEN];
	int have_prev, paused;
	size_t first; /* first table row on screen */
	double next;  /* when to refresh; 0: at once */
};

/* Why the terminal view cannot start: no TERM, or no description of it (terminfo), and what to do. */
static void no_terminal(void)
{
	const char *term = getenv("TERM");
	if (!term || !*term)
		nw_error("'top' cannot draw: TERM is not set; set it to your terminal (e.g. TERM=xterm-256color), "
		         "or use 'ncclwatch top --once' for a plain-text snapshot");
	else
		nw_error("'top' cannot draw: no description of terminal '%s' in the terminfo database (this image may "
		         "have none: /usr/share/terminfo, /lib/terminfo); set TERM to a terminal it has, point "
		         "TERMINFO at a directory holding '%s', or use 'ncclwatch top --once'", term, term);
}

/*
 * Checks before the terminal is taken (a terminal, something to watch),
 * then curses mode with the terminal restored on every way out. 0, or the
 * exit status after printing.
 */
static int live_start(const struct top_opts *o)
{
	char err[NW_ERRLEN];
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return nw_error("'top' needs a terminal; use 'ncclwatch top --once' for a plain-text snapshot"), 2;
	/* fail early and plainly when there is nothing to watch */
	if (nw_sf_check_dir(o->dir, err, sizeof(err)) < 0)
		return nw_error("%s", NW_TT_MSG(err)), 1;
	if (tcgetattr(STDIN_FILENO, &saved_tio) == 0)
		have_tio = 1;
	install_signals();
	atexit(end_curses);
	/* newterm, not initscr: initscr exits with curses' own words when the
	   terminal has no description; we say what to do instead */
	if (!newterm(NULL, stdout, stdin))
		return no_terminal(), 1;
	curses_on = 1;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors() && nw_cli_colour()) {
		colour_on = 1;
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
	}
	return 0;
}

/* Load the stats files again and rebuild the table with rates since the last sample taken at t. */
static void live_reload(const struct top_opts *o, struct live *l, double t)
{
	l->next = t + o->interval;
	nw_view_release(&l->v);
	nw_sf_set_release(&l->set);
	l->err[0] = '\0';
	const struct nw_sf_opts so = { .flags = o->view.all ? 0 : NW_SF_HIDE_STALE, .cache = l->cache, .owner = -1 };
	if (nw_sf_load_opts(o->dir, &so, &l->set, l->err, sizeof(l->err)) < 0)
		memset(&l->set, 0, sizeof(l->set));
	else if (l->set.nbad)
		snprintf(l->err, sizeof(l->err), "%zu unusable file%s, e.g. '%.200s': %.150s", nw_sf_nbad(&l->set),
		         nw_sf_nbad(&l->set) == 1 ? "" : "s", NW_TT(l->set.bad[0].path), NW_TT(l->set.bad[0].why));
	nw_sample_take(&l->set, t, &l->now);
	nw_view_build(&l->set, &l->now, l->have_prev ? &l->prev : NULL, &o->view, &l->v);
	nw_sample_move(&l->prev, &l->now);
	l->have_prev = 1;
}

/* The '?' screen: the keys, until any key is pressed. */
static void show_help(void)
{
	erase();
	attron(A_BOLD);
	mvaddnstr(0, 0, "ncclwatch top: keys (any key returns)", COLS);
	attroff(A_BOLD);
	int y = 2;
	for (const char *p = KEYS_HELP; *p && y < LINES; y++) {
		size_t n = strcspn(p, "\n");
		mvaddnstr(y, 0, p, n < (size_t)COLS ? (int)n : COLS);
		p += n + (p[n] == '\n');
	}
	if (y + 1 < LINES)
		mvaddnstr(y + 1, 0, "columns: SIZE is the mean message size; LATE how long the others wait for a rank "
		          "(the straggler is marked '*')", COLS);
	refresh();
	timeout(-1);
	getch();
}

/* One key: sort, filter, stale, pause, scroll, help, quit. */
static void live_key(struct top_opts *o, struct live *l, int ch)
{
	static const struct { int key; enum nw_view_sort sort; } sorts[] = {
		{ 'b', NW_VIEW_SORT_BUSBW }, { 'c', NW_VIEW_SORT_RATE }, { 't', NW_VIEW_SORT_TIME },
		{ 'u', NW_VIEW_SORT_BUSY },  { 'g', NW_VIEW_SORT_COMM },
	};
	size_t page = (size_t)table_rows();
	for (size_t i = 0; i < NW_ARRAY_LEN(sorts); i++)
		if (ch == sorts[i].key) {
			/* the key of the sort shown turns it around; another key starts in its usual order */
			o->view.reverse = o->view.sort == sorts[i].sort ? !o->view.reverse : 0;
			o->view.sort = sorts[i].sort;
			l->next = 0;
			return;
		}
	switch (ch) {
	case 'q': case 'Q': quit_flag = 1; break;
	case 'r': o->view.reverse = !o->view.reverse; l->next = 0; break;
	case '?': show_help(); l->next = 0; break;
	case 'a': o->view.all = !o->view.all; l->next = 0; break;
	case 'p': case ' ': l->paused = !l->paused; l->next = 0; break;
	case 'o': prompt("show ops containing", o->op, sizeof(o->op)); l->next = 0; break;
	case 'm': prompt("show communicators (id prefix or name)", o->comm, sizeof(o->comm)); l->next = 0; break;
	case 'x': o->op[0] = o->comm[0] = '\0'; l->next = 0; break;
	case KEY_DOWN: l->first++; break;
	case KEY_UP: if (l->first) l->first--; break;
	case KEY_NPAGE: l->first += page; break;
	case KEY_PPAGE: l->first = l->first > page ? l->first - page : 0; break;
	case KEY_HOME: l->first = 0; break;
	default: break;
	}
}

/* Paused: sorting and filtering apply at once to the files last loaded. */
static void live_resort(const struct top_opts *o, struct live *l)
{
	struct nw_sample cur;
	nw_view_release(&l->v);
	nw_sample_take(&l->set, nw_now(), &cur);
	nw_view_build(&l->set, &cur, NULL, &o->view, &l->v);
	nw_sample_release(&cur);
	l->next = nw_now() + o->interval;
}

/*
 * The terminal view: refresh every interval (rates between the last two
 * samples), keys between refreshes; returns the exit status.
 */
static int run_live(struct top_opts *o)
{
	int rc = live_start(o);
	if (rc)
		return rc;
	struct live l;
	memset(&l, 0, sizeof(l));
	l.cache = nw_sf_cache_new();
	while (!quit_flag) {
		double t = nw_now();
		if (t >= l.next && !l.paused)
			live_reload(o, &l, t);
		draw(o, &l.v, l.err, l.paused, l.have_prev && l.v.n && l.v.rows[0].interval, &l.first);
		/* wait for a key, at most until the next refresh */
		double wait = l.next - nw_now();
		int ms = l.paused ? 250 : wait > 0 ? (int)(wait * 1000) + 1 : 0;
		timeout(ms > 250 ? 250 : ms);
		live_key(o, &l, getch());
		if (l.next == 0 && l.paused && l.set.n)
			live_resort(o, &l);
	}
	end_curses();
	nw_view_release(&l.v);
	nw_sf_set_release(&l.set);
	nw_sample_release(&l.prev);
	nw_sample_release(&l.now);
	nw_sf_cache_free(l.cache);
	return 0;
}

/* --op and --comm into their buffers; 0, or -1 after printing that one is too long. */
static int take_filters(struct top_opts *o)
{
	const char *v[2] = { o->op_arg, o->comm_arg }, *names[2] = { "--op", "--comm" };
	char *dst[2] = { o->op, o->comm };
	for (int i = 0; i < 2; i++) {
		if (!v[i])
			continue;
		if (strlen(v[i]) >= sizeof(o->op))
			return nw_error("%s '%s' is too long", names[i], NW_TT(v[i]));
		nw_strlcpy(dst[i], v[i], sizeof(o->op));
	}
	return 0;
}

/* Parse options, then the snapshot (--once) or the live view. */
int cmd_top(int argc, char **argv)
{
	struct top_opts o;
	char dirbuf[512];
	memset(&o, 0, sizeof(o));
	o.view.sort = NW_VIEW_SORT_COMM;
	o.view.late_window = 256;
	o.view.op = o.op;
	o.view.comm = o.comm;
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_top, &o, argc, argv, &res);
	if (st == NW_OPT_OK && take_filters(&o))
		st = NW_OPT_BAD;
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_top, st);
	if (!o.dir)
		o.dir = nw_sf_default_dir(dirbuf, sizeof(dirbuf));
	return o.once ? print_once(&o) : run_live(&o);
}
