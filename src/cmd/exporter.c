/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch exporter: Prometheus /metrics from the profiler plugin's stats
 * files of this host (docs/metrics.md). --once prints one scrape to stdout
 * for node_exporter's textfile collector.
 */
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "export/httpd.h"
#include "export/metrics.h"
#include "export/statsfile.h"
#include "util/util.h"

#define EXPORTER_DEFAULT_LISTEN "127.0.0.1:9850"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct server {
	struct nw_metrics m;
	char last_err[NW_ERRLEN];
};

/*
 * Called by the server's rendering thread once per cache interval (every
 * scrape in it shares the text); returns malloc'd text. served counts the
 * scrapes answered with this rendering included.
 */
static char *render(void *ctx, uint64_t served, size_t *len)
{
	struct server *s = ctx;
	struct nw_prom p;
	char err[NW_ERRLEN] = "";
	nw_prom_init(&p);
	s->m.scrapes = served;
	s->m.renders++;
	nw_metrics_scrape(&s->m, nw_now(), &p, err, sizeof(err));
	/* say each new problem once, not at every scrape */
	if (*err && strcmp(err, s->last_err))
		nw_warn("%s", err);
	nw_strlcpy(s->last_err, err, sizeof(s->last_err));
	return nw_prom_take(&p, len);
}

/* What the command line asks for. */
struct exporter_args {
	const char *listen, *dir, *baseline, *pod_logs;
	int once, all, procs;
	double window, cache;
	int hist;
	unsigned detail;
};

/* --listen ADDR:PORT, checked before anything is served. */
static int listen_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct exporter_args *a = opts;
	struct sockaddr_storage ss;
	size_t alen;
	char e2[NW_ERRLEN];
	if (nw_httpd_parse_listen(arg, &ss, &alen, e2, sizeof(e2)) < 0)
		return nw_seterr(err, errlen, "%s: %s", name, e2);
	a->listen = arg;
	return 0;
}

static int hist_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	(void)name;
	return nw_metrics_parse_hist(arg, &((struct exporter_args *)opts)->hist, err, errlen) < 0 ? -1 : 0;
}

static int detail_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	(void)name;
	return nw_metrics_parse_detail(arg, &((struct exporter_args *)opts)->detail, err, errlen) < 0 ? -1 : 0;
}

static const char *const *hist_modes(void)
{
	static const char *const m[] = { "op", "op,size", "none", NULL };
	return m;
}

static const char *const *detail_items(void)
{
	static const char *const m[] = { "size", "source", "rank", "all", NULL };
	return m;
}

static const struct nw_opt exporter_options[] = {
	{ .kind = NW_OPTK_CALL, .lname = "listen", .argh = "ADDR:PORT", .call = listen_opt, .def = EXPORTER_DEFAULT_LISTEN,
	  .help = "where to listen (default " EXPORTER_DEFAULT_LISTEN ", loopback only;\n"
	          "0.0.0.0:9850 or :9850 (no address) for every IPv4 address,\n"
	          "[::1]:9850 for IPv6; so :0 is every address, a free port;\n"
	          "port 0 picks a free port and prints it)" },
	NW_OPT_STATS_DIR(struct exporter_args, dir),
	{ .kind = NW_OPTK_FLAG, .lname = "procs", .off = NW_F_INT(struct exporter_args, procs),
	  .help = "find the stats of every training process of the node\n"
	          "through /proc/PID/root (its NCCLWATCH_DIR, else\n"
	          "/dev/shm/ncclwatch-UID in its own file system), instead\n"
	          "of reading one directory (and --dir too when given);\n"
	          "needs hostPID in a pod and CAP_SYS_PTRACE (docs/deploy.md)" },
	{ .kind = NW_OPTK_STRING, .lname = "pod-logs", .off = NW_F_STR(struct exporter_args, pod_logs), .argh = "DIR",
	  .help = "with --procs: the node's /var/log as mounted here\n"
	          "(default /var/log); its containers/ and pods/ names give\n"
	          "the pod, namespace and container of each process" },
	{ .kind = NW_OPTK_FLAG, .lname = "once", .off = NW_F_INT(struct exporter_args, once),
	  .help = "print the metrics of one scrape to stdout and exit\n"
	          "(for node_exporter's textfile collector; write to a\n"
	          "temporary file and rename it into place)" },
	{ .kind = NW_OPTK_FLAG, .lname = "all", .off = NW_F_INT(struct exporter_args, all),
	  .help = "also export ranks whose process is gone (stale files)" },
	{ .kind = NW_OPTK_DURATION, .lname = "window", .off = NW_F_DBL(struct exporter_args, window), .argh = "S",
	  .dmin = 0.001, .dmax = 3600, .def = "10", .help = "busbw gauges cover at least the last S seconds\n"
	                                                    "(e.g. 500ms, 30s, 1m)" },
	{ .kind = NW_OPTK_DURATION, .lname = "cache", .off = NW_F_DBL(struct exporter_args, cache), .argh = "S",
	  .dmin = 0, .dmax = 3600, .def = "1", .help = "serve one rendering to every scrape for S seconds; scrapes\n"
	                                               "that come while it renders share it (0: render for\n"
	                                               "every scrape not sharing one)" },
	{ .kind = NW_OPTK_FILE, .lname = "baseline", .off = NW_F_STR(struct exporter_args, baseline), .argh = "FILE",
	  .help = "a bench result ('ncclwatch bench --json'): its best\n"
	          "busbw per op and size becomes\n"
	          "ncclwatch_busbw_baseline_bytes_per_second, which the\n"
	          "NcclwatchBusbwBelowBaseline alert prefers to its own" },
	{ .kind = NW_OPTK_CALL, .lname = "histograms", .argh = "MODE", .call = hist_opt, .values = hist_modes,
	  .help = "duration histograms: none (default), per op, or per op\nand size bucket (op,size: many series)" },
	{ .kind = NW_OPTK_CALL, .lname = "detail", .argh = "LIST", .call = detail_opt, .values = detail_items,
	  .flags = NW_OPTF_LIST, .help = "more series (docs/metrics.md gives their cost): size\n"
	                                 "(ops, bytes, busbw per size bucket), source (timings by\n"
	                                 "kernel and proxy), rank (every per-rank family), all" },
	{ 0 },
};

const struct nw_cmd_spec nw_spec_exporter = {
	.name = "exporter",
	.synopsis = "[--listen ADDR:PORT] [--dir DIR] [--once] [--all]\n[--window S] [--cache S] [--baseline FILE]\n"
	            "[--histograms none|op|op,size] [--detail size,source,rank,all]\n[--procs [--pod-logs DIR]]",
	.about = "Serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics for\n"
	         "every rank on this host of every job run with NCCL_PROFILER_PLUGIN=ncclwatch:\n"
	         "per communicator, rank and op: operations, bytes and the busbw of its busiest\n"
	         "size bucket; per rank: busy time, hang figures, straggler lateness, dropped\n"
	         "operations; stale-file counts and the exporter's own scrape errors. Size\n"
	         "buckets, time sources, duration histograms and every other per-rank figure\n"
	         "are opt-in (--detail, --histograms). docs/metrics.md lists every metric and\n"
	         "what each option costs; deploy/ has alert rules and a dashboard.\n",
	.opts = exporter_options,
	.footer = "Series carry Hostname (the node: $NODE_NAME, else the host name), comm, rank\n"
	          "and, where known, gpu, UUID, pod, namespace, container and hpc_job\n"
	          "(dcgm-exporter's names). Replies are gzip-compressed when the scraper accepts\n"
	          "gzip (zlib is opened at run time).\n"
	          "\n"
	          "exit status: 0 after SIGINT/SIGTERM (or after --once), 1 when the directory\n"
	          "cannot be read with --once or the address cannot be bound, 2 on bad usage.\n",
	.width = 22,
};

/* --once: one scrape to stdout; the exit status (1 when the directory cannot be read). */
static int scrape_once(struct server *s)
{
	struct nw_prom p;
	char err[NW_ERRLEN] = "";
	nw_prom_init(&p);
	s->m.scrapes = s->m.renders = 1;
	if (nw_metrics_scrape(&s->m, nw_now(), &p, err, sizeof(err)) < 0) {
		nw_error("%s", err);
		nw_prom_release(&p);
		return 1;
	}
	if (*err)
		nw_warn("%s", err);
	fwrite(p.buf, 1, p.len, stdout);
	nw_prom_release(&p);
	return 0;
}

/* Serve /metrics on listen until SIGINT or SIGTERM; the exit status (1 when it cannot listen). */
static int serve(struct server *s, const struct exporter_args *a)
{
	char err[NW_ERRLEN];
	/* a missing or unreadable directory is worth a word now, not a refusal:
	   the job may start later (no file is read: that is the first scrape's work) */
	if ((!s->m.procs || s->m.read_dir) && nw_sf_check_dir(a->dir, err, sizeof(err)) < 0)
		nw_warn("%s (serving anyway; metrics appear when it does)", err);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	const struct nw_httpd_opts ho = { .listen = a->listen, .cache_s = a->cache, .render = render, .ctx = s };
	struct nw_httpd *h = nw_httpd_start(&ho, err, sizeof(err));
	if (!h)
		return nw_error("%s", err), 1;
	/* the bound port, so that port 0 is usable by scripts */
	if (s->m.procs)
		fprintf(stderr, "ncclwatch exporter: serving /metrics on %s (port %u) from the node's processes%s%s%s\n",
		        a->listen, nw_httpd_port(h), s->m.read_dir ? " and '" : "", s->m.read_dir ? a->dir : "",
		        s->m.read_dir ? "'" : "");
	else
		fprintf(stderr, "ncclwatch exporter: serving /metrics on %s (port %u) from '%s'\n", a->listen,
		        nw_httpd_port(h), a->dir);
	fflush(stderr);
	while (!stop_flag) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	nw_httpd_stop(h);
	return 0;
}

/* Parse options; --once prints one scrape, else serve until SIGINT/SIGTERM. */
int cmd_exporter(int argc, char **argv)
{
	struct exporter_args a = { .hist = NW_HIST_NONE };
	char err[NW_ERRLEN], dirbuf[512];
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_exporter, &a, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_exporter, st);
	int dir_given = a.dir != NULL;
	if (!a.dir)
		a.dir = nw_sf_default_dir(dirbuf, sizeof(dirbuf));
	if (a.pod_logs && !a.procs) {
		nw_error("exporter: --pod-logs goes with --procs");
		return 2;
	}
	struct server *s = nw_calloc(1, sizeof(*s));
	int rc;
	nw_metrics_init(&s->m, a.dir, a.all, a.window);
	if (a.procs)
		nw_metrics_procs(&s->m, "/proc", a.pod_logs ? a.pod_logs : "/var/log", dir_given);
	s->m.hist = a.hist;
	s->m.detail = a.detail;
	if (a.baseline && nw_metrics_load_baseline(&s->m, a.baseline, err, sizeof(err)) < 0) {
		nw_error("%s", err);
		rc = 2;
	} else {
		rc = a.once ? scrape_once(s) : serve(s, &a);
	}
	nw_metrics_release(&s->m);
	free(s);
	return rc;
}
