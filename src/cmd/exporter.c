/*
 * ncclwatch exporter: Prometheus /metrics from the profiler plugin's stats
 * files of this host (docs/metrics.md). --once prints one scrape to stdout
 * for node_exporter's textfile collector.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "export/httpd.h"
#include "export/metrics.h"
#include "export/statsfile.h"
#include "util/util.h"

#define EXPORTER_DEFAULT_LISTEN "127.0.0.1:9850"

const char usage_exporter[] =
	"usage: ncclwatch exporter [--listen ADDR:PORT] [--dir DIR] [--once] [--all]\n"
	"                          [--window S] [--baseline FILE]\n"
	"\n"
	"Serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics for\n"
	"every rank on this host of every job run with NCCL_PROFILER_PLUGIN=ncclwatch:\n"
	"per communicator, rank, op and size bucket: operations, bytes, duration\n"
	"histograms, busbw; per rank: busy ratio, straggler lateness, plugin drop\n"
	"counters; stale-file counts and the exporter's own scrape errors.\n"
	"docs/metrics.md lists every metric; deploy/ has alert rules and a dashboard.\n"
	"\n"
	"options:\n"
	"  --listen ADDR:PORT  where to listen (default " EXPORTER_DEFAULT_LISTEN ", loopback only;\n"
	"                      0.0.0.0:9850 for every IPv4 address, [::1]:9850 for IPv6;\n"
	"                      port 0 picks a free port and prints it)\n"
	"  --dir DIR           stats directory (default $NCCLWATCH_DIR, else\n"
	"                      /dev/shm/ncclwatch-<uid>)\n"
	"  --once              print the metrics of one scrape to stdout and exit\n"
	"                      (for node_exporter's textfile collector; write to a\n"
	"                      temporary file and rename it into place)\n"
	"  --all               also export ranks whose process is gone (stale files)\n"
	"  --window S          busbw gauges cover at least the last S seconds\n"
	"                      (default 10; e.g. 500ms, 30s, 1m)\n"
	"  --baseline FILE     a bench result ('ncclwatch bench --json'): its best\n"
	"                      busbw per op and size becomes\n"
	"                      ncclwatch_busbw_baseline_bytes_per_second, which the\n"
	"                      NcclwatchBusbwBelowBaseline alert prefers to its own\n"
	"  -h, --help          this text\n"
	"\n"
	"exit status: 0 after SIGINT/SIGTERM (or after --once), 1 when the directory\n"
	"cannot be read with --once or the address cannot be bound, 2 on bad usage.\n";

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

/* Called by the HTTP thread for each GET /metrics; returns malloc'd text. */
static char *render(void *ctx, size_t *len)
{
	struct server *s = ctx;
	struct nw_prom p;
	char err[NW_ERRLEN] = "";
	nw_prom_init(&p);
	nw_metrics_scrape(&s->m, nw_now(), &p, err, sizeof(err));
	/* say each new problem once, not at every scrape */
	if (*err && strcmp(err, s->last_err))
		nw_warn("%s", err);
	nw_strlcpy(s->last_err, err, sizeof(s->last_err));
	return nw_prom_take(&p, len);
}

/* Parse options; --once prints one scrape, else serve until SIGINT/SIGTERM. */
int cmd_exporter(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "dir", required_argument, NULL, 'd' },
		{ "once", no_argument, NULL, 'o' },
		{ "all", no_argument, NULL, 'a' },
		{ "window", required_argument, NULL, 'w' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = EXPORTER_DEFAULT_LISTEN, *dir = NULL, *baseline = NULL;
	int once = 0, all = 0, rc = 1, c;
	double window = 10;
	char err[NW_ERRLEN], dirbuf[512];
	struct server *s = NULL;
	struct nw_httpd *h = NULL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': listen = optarg; break;
		case 'd': dir = optarg; break;
		case 'o': once = 1; break;
		case 'a': all = 1; break;
		case 'b': baseline = optarg; break;
		case 'w':
			if (nw_parse_duration(optarg, &window, err, sizeof(err)) < 0)
				return nw_error("--window: %s", err), 2;
			if (window <= 0 || window > 3600)
				return nw_error("--window '%s' is out of range: give 1ms to 1h", optarg), 2;
			break;
		case 'h':
			fputs(usage_exporter, stdout);
			return 0;
		default:
			if (optopt)
				nw_error("option '-%c' needs a value or is unknown; 'ncclwatch help exporter' lists the options", optopt);
			else
				nw_error("unknown option '%s'; 'ncclwatch help exporter' lists the options", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		return nw_error("unexpected argument '%s'; 'ncclwatch help exporter' lists the options", argv[optind]), 2;
	if (!dir)
		dir = nw_sf_default_dir(dirbuf, sizeof(dirbuf));

	s = nw_calloc(1, sizeof(*s));
	nw_metrics_init(&s->m, dir, all, window);
	if (baseline && nw_metrics_load_baseline(&s->m, baseline, err, sizeof(err)) < 0) {
		nw_error("%s", err);
		rc = 2;
		goto out;
	}

	if (once) {
		struct nw_prom p;
		nw_prom_init(&p);
		*err = '\0';
		int r = nw_metrics_scrape(&s->m, nw_now(), &p, err, sizeof(err));
		if (r < 0) {
			nw_error("%s", err);
			nw_prom_release(&p);
			goto out;
		}
		if (*err)
			nw_warn("%s", err);
		fwrite(p.buf, 1, p.len, stdout);
		nw_prom_release(&p);
		rc = 0;
		goto out;
	}

	/* a missing or unreadable directory is worth a word now, not a refusal:
	   the job may start later */
	struct nw_sf_set probe;
	if (nw_sf_load(dir, &probe, err, sizeof(err)) < 0)
		nw_warn("%s (serving anyway; metrics appear when it does)", err);
	else
		nw_sf_set_release(&probe);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	h = nw_httpd_start(listen, render, s, err, sizeof(err));
	if (!h) {
		nw_error("%s", err);
		goto out;
	}
	/* the bound port, so that port 0 is usable by scripts */
	fprintf(stderr, "ncclwatch exporter: serving /metrics on %s (port %u) from '%s'\n",
	        listen, nw_httpd_port(h), dir);
	fflush(stderr);
	while (!stop_flag) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	rc = 0;
out:
	nw_httpd_stop(h);
	if (s)
		nw_metrics_release(&s->m);
	free(s);
	return rc;
}
