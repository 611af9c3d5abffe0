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
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "export/sample.h"
#include "export/statsfile.h"
#include "export/view.h"
#include "util/util.h"

const char usage_top[] =
	"usage: ncclwatch top [--dir DIR] [--interval S] [--once] [--all]\n"
	"                     [--sort KEY] [--op OP] [--comm COMM]\n"
	"\n"
	"Live view of every rank on this host of every job run with\n"
	"NCCL_PROFILER_PLUGIN=ncclwatch: per communicator, rank and op, the calls,\n"
	"bytes, calls/s, busbw, p50/p99 execution time, busy %, the time source\n"
	"(kernel: GPU timestamps; proxy: network progress only) and each rank's\n"
	"lateness. The straggler (the rank the others wait for) is marked '*' and\n"
	"highlighted.\n"
	"\n"
	"options:\n"
	"  --dir DIR      stats directory (default $NCCLWATCH_DIR, else\n"
	"                 /dev/shm/ncclwatch-<uid>)\n"
	"  --interval S   refresh every S seconds (default 1; e.g. 0.5, 2s, 500ms)\n"
	"  --once         print one plain-text snapshot and exit; rates are then\n"
	"                 averages over each rank's life\n"
	"  --all          also show ranks whose process is gone (stale files)\n"
	"  --sort KEY     comm (default: by communicator, op, rank), busbw, rate\n"
	"                 (calls/s), time (p50), busy\n"
	"  --op OP        only ops whose name contains OP (all_reduce, send, ...)\n"
	"  --comm COMM    only communicators whose id starts with, or name contains, COMM\n"
	"  -h, --help     this text\n"
	"\n"
	"keys: b busbw, c calls/s, t time, u busy, g by communicator (sort);\n"
	"      o filter by op, m filter by communicator, x clear filters;\n"
	"      a show/hide stale; p or space pause; arrows, PgUp/PgDn, Home scroll;\n"
	"      q quit.\n";

struct top_opts {
	const char *dir;
	double interval;
	int once;
	struct nw_view_opts view;
	char op[64], comm[64];
};

static volatile sig_atomic_t quit_flag;
static struct termios saved_tio;
static int have_tio, curses_on;

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
	         o->dir, v->nfiles, v->nfiles == 1 ? "" : "s", v->nlive, v->nfinished, v->ndisabled,
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
		         (unsigned long long)r->comm_hash, r->comm_name[0] ? " (" : "", r->comm_name,
		         r->comm_name[0] ? ")" : "", r->rank, (int)r->pid, r->host, late);
		return i + 1;
	}
	return 0;
}

/* --once: load, build the table with life-long rates, print it plainly. */
static int print_once(const struct top_opts *o)
{
	struct nw_sf_set set;
	char err[NW_ERRLEN], line[1024];
	if (nw_sf_load(o->dir, &set, err, sizeof(err)) < 0)
		return nw_error("%s", err), 1;
	for (size_t i = 0; i < set.nbad; i++)
		nw_warn("skipping '%s': %s", set.bad[i].path, set.bad[i].why);
	struct nw_sample now;
	nw_sample_take(&set, nw_now(), &now);
	struct nw_view v;
	nw_view_build(&set, &now, NULL, &o->view, &v);
	summary(line, sizeof(line), o, &v);
	printf("%s; rates over each rank's life\n", line);
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

/* Paint one screen: summary, key help, error line, table page, straggler line. */
static void draw(const struct top_opts *o, const struct nw_view *v, const char *err, int paused,
                 int live_rates, size_t *first)
{
	char line[1024];
	erase();
	summary(line, sizeof(line), o, v);
	mvaddnstr(0, 0, line, COLS);
	snprintf(line, sizeof(line), "sort %s%s%s%s%s | %s%s | b c t u g sort  o m x filter  a stale  p pause  q quit",
	         nw_view_sort_name(o->view.sort), *o->op ? "  op~" : "", o->op, *o->comm ? "  comm~" : "",
	         o->comm, live_rates ? "rates over the last interval" : "rates over each rank's life",
	         paused ? "  [PAUSED]" : "");
	mvaddnstr(1, 0, line, COLS);
	if (err && *err) {
		attron(A_BOLD);
		mvaddnstr(2, 0, err, COLS);
		attroff(A_BOLD);
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
		if (r->straggler)
			a = A_BOLD | (has_colors() ? COLOR_PAIR(1) : A_STANDOUT);
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
	if (!v->n)
		mvaddnstr(y, 0, "no operations recorded yet: is a job running with NCCL_PROFILER_PLUGIN=ncclwatch?", COLS);
	int ny = v->n ? y : y + 1;
	if (v->nsolo && ny < LINES - 2)
		mvaddnstr(ny++, 0, solo_note(line, sizeof(line), v->nsolo), COLS);
	if (v->ngraph && ny < LINES - 2)
		mvaddnstr(ny, 0, graph_note(line, sizeof(line), v->ngraph), COLS);
	if (straggler_line(line, sizeof(line), v, 0)) {
		attron(A_BOLD);
		mvaddnstr(LINES - 1, 0, line, COLS);
		attroff(A_BOLD);
	}
	refresh();
}

/*
 * The terminal view: refresh every interval (rates between the last two
 * samples), keys between refreshes; returns the exit status.
 */
static int run_live(struct top_opts *o)
{
	int rc = 1, paused = 0;
	size_t first = 0;
	struct nw_sample prev, now;
	struct nw_sf_set set;
	struct nw_view v;
	char err[NW_ERRLEN] = "";
	memset(&prev, 0, sizeof(prev));
	memset(&now, 0, sizeof(now));
	memset(&set, 0, sizeof(set));
	memset(&v, 0, sizeof(v));
	int have_prev = 0;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return nw_error("'top' needs a terminal; use 'ncclwatch top --once' for a plain-text snapshot"), 2;
	/* fail early and plainly when there is nothing to watch */
	if (nw_sf_load(o->dir, &set, err, sizeof(err)) < 0)
		return nw_error("%s", err), 1;
	nw_sf_set_release(&set);
	*err = '\0';

	if (tcgetattr(STDIN_FILENO, &saved_tio) == 0)
		have_tio = 1;
	install_signals();
	atexit(end_curses);
	if (!initscr())
		return nw_error("cannot start the terminal view (TERM='%s'); try --once",
		                getenv("TERM") ? getenv("TERM") : ""), 1;
	curses_on = 1;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
	}
	double next = 0;
	while (!quit_flag) {
		double t = nw_now();
		if (t >= next && !paused) {
			next = t + o->interval;
			nw_view_release(&v);
			nw_sf_set_release(&set);
			*err = '\0';
			if (nw_sf_load(o->dir, &set, err, sizeof(err)) < 0) {
				memset(&set, 0, sizeof(set));
			} else if (set.nbad) {
				snprintf(err, sizeof(err), "%zu unusable file%s, e.g. '%.200s': %.150s", set.nbad,
				         set.nbad == 1 ? "" : "s", set.bad[0].path, set.bad[0].why);
			}
			nw_sample_take(&set, t, &now);
			nw_view_build(&set, &now, have_prev ? &prev : NULL, &o->view, &v);
			nw_sample_move(&prev, &now);
			have_prev = 1;
		}
		draw(o, &v, err, paused, have_prev && v.n && v.rows[0].interval, &first);
		/* wait for a key, at most until the next refresh */
		double wait = next - nw_now();
		int ms = paused ? 250 : wait > 0 ? (int)(wait * 1000) + 1 : 0;
		timeout(ms > 250 ? 250 : ms);
		int ch = getch();
		switch (ch) {
		case 'q': case 'Q': quit_flag = 1; break;
		case 'b': o->view.sort = NW_VIEW_SORT_BUSBW; next = 0; break;
		case 'c': o->view.sort = NW_VIEW_SORT_RATE; next = 0; break;
		case 't': o->view.sort = NW_VIEW_SORT_TIME; next = 0; break;
		case 'u': o->view.sort = NW_VIEW_SORT_BUSY; next = 0; break;
		case 'g': o->view.sort = NW_VIEW_SORT_COMM; next = 0; break;
		case 'a': o->view.all = !o->view.all; next = 0; break;
		case 'p': case ' ': paused = !paused; next = 0; break;
		case 'o':
			prompt("show ops containing", o->op, sizeof(o->op));
			next = 0;
			break;
		case 'm':
			prompt("show communicators (id prefix or name)", o->comm, sizeof(o->comm));
			next = 0;
			break;
		case 'x': o->op[0] = o->comm[0] = '\0'; next = 0; break;
		case KEY_DOWN: first++; break;
		case KEY_UP: if (first) first--; break;
		case KEY_NPAGE: first += (size_t)table_rows(); break;
		case KEY_PPAGE: first = first > (size_t)table_rows() ? first - (size_t)table_rows() : 0; break;
		case KEY_HOME: first = 0; break;
		default: break;
		}
		/* sorting and filtering apply at once, even when paused */
		if (next == 0 && paused && set.n) {
			nw_view_release(&v);
			struct nw_sample cur;
			nw_sample_take(&set, nw_now(), &cur);
			nw_view_build(&set, &cur, NULL, &o->view, &v);
			nw_sample_release(&cur);
			next = nw_now() + o->interval;
		}
	}
	rc = 0;
	end_curses();
	nw_view_release(&v);
	nw_sf_set_release(&set);
	nw_sample_release(&prev);
	nw_sample_release(&now);
	return rc;
}

/* Parse options, then the snapshot (--once) or the live view. */
int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, '1' },
		{ "all", no_argument, NULL, 'a' },
		{ "sort", required_argument, NULL, 's' },
		{ "op", required_argument, NULL, 'o' },
		{ "comm", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_opts o;
	char err[NW_ERRLEN], dirbuf[512];
	int c;
	memset(&o, 0, sizeof(o));
	o.interval = 1;
	o.view.sort = NW_VIEW_SORT_COMM;
	o.view.late_window = 256;
	o.view.op = o.op;
	o.view.comm = o.comm;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'i':
			if (nw_parse_duration(optarg, &o.interval, err, sizeof(err)) < 0)
				return nw_error("--interval: %s", err), 2;
			if (o.interval < 0.05 || o.interval > 3600)
				return nw_error("--interval '%s' is out of range: give 50ms to 1h", optarg), 2;
			break;
		case '1': o.once = 1; break;
		case 'a': o.view.all = 1; break;
		case 's': {
			int k = nw_view_sort_find(optarg);
			if (k < 0)
				return nw_error("unknown --sort key '%s': use comm, busbw, rate, time or busy", optarg), 2;
			o.view.sort = (enum nw_view_sort)k;
			break;
		}
		case 'o':
			if (strlen(optarg) >= sizeof(o.op))
				return nw_error("--op '%s' is too long", optarg), 2;
			nw_strlcpy(o.op, optarg, sizeof(o.op));
			break;
		case 'm':
			if (strlen(optarg) >= sizeof(o.comm))
				return nw_error("--comm '%s' is too long", optarg), 2;
			nw_strlcpy(o.comm, optarg, sizeof(o.comm));
			break;
		case 'h':
			fputs(usage_top, stdout);
			return 0;
		default:
			if (optopt)
				nw_error("option '-%c' needs a value or is unknown; 'ncclwatch help top' lists the options", optopt);
			else
				nw_error("unknown option '%s'; 'ncclwatch help top' lists the options", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		return nw_error("unexpected argument '%s'; 'ncclwatch help top' lists the options", argv[optind]), 2;
	if (!o.dir)
		o.dir = nw_sf_default_dir(dirbuf, sizeof(dirbuf));
	return o.once ? print_once(&o) : run_live(&o);
}
