/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: the exporter's Prometheus metrics (docs/metrics.md) from the
 * plugin's stats files of one host.
 *
 * struct nw_metrics is the exporter's memory between scrapes: the stats
 * directory, a sample a little older than the scrape window (for live busbw
 * gauges), counters of scrapes and scrape errors, and an optional busbw
 * baseline read from a bench result file. Owned by the caller; one scrape
 * at a time (the HTTP server serialises them).
 */
#ifndef NW_METRICS_H
#define NW_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "export/procscan.h"
#include "export/promtext.h"
#include "export/sample.h"
#include "export/statsfile.h"

struct nw_baseline {
	unsigned op;       /* enum nws_op */
	unsigned bucket;   /* nws size bucket */
	int nranks;
	double busbw;      /* bytes/s */
};

/* Duration histograms: none, per op (the default), per op and size bucket. */
enum nw_hist_mode { NW_HIST_NONE, NW_HIST_OP, NW_HIST_OP_SIZE };

/*
 * Detail beyond the default series (nw_metrics.detail bits, --detail):
 * by default each rank gets a few series per communicator and one set per
 * op (operations, bytes, busbw of its busiest size bucket); docs/metrics.md
 * gives the cost of each.
 */
enum {
	NW_DETAIL_SIZE = 1u << 0,   /* operations, bytes and busbw per size bucket */
	NW_DETAIL_SOURCE = 1u << 1, /* timings by source (kernel, proxy) instead of summed */
	NW_DETAIL_RANK = 1u << 2,   /* every per-rank family: busy ratios, plugin counters, lateness max... */
};

struct nw_metrics {
	char dir[512];
	int hist;            /* enum nw_hist_mode (nw_metrics_init: NW_HIST_NONE) */
	unsigned detail;     /* NW_DETAIL_* */
	char node[256];      /* the Hostname label: $NODE_NAME, else this host's name */
	int all;             /* also export stale files (dead processes) */
	size_t late_window;  /* collectives compared for lateness (0: whole rings) */
	double window_s;     /* busbw gauges cover at least this many seconds */
	struct nw_sample base, cand;
	int have_base, have_cand;
	uint64_t scrapes;        /* scrapes answered, this one included: the caller's count */
	uint64_t renders;        /* renderings (one serves every scrape of a cache interval): the caller's count */
	uint64_t scrape_errors;
	struct nw_baseline *bl;  /* owned */
	size_t nbl;
	struct nw_sf_cache *cache; /* hidden files between scrapes; owned */
	/* the node's processes instead of (or besides) dir: nw_metrics_procs */
	int procs;               /* find stats directories through /proc (procscan.h) */
	int read_dir;            /* read dir too (it was given) */
	char proc[256], logs[256];
	struct nw_ps_cache *ps_cache; /* owned */
	struct nw_ps_stats ps;   /* what the last scan saw */
};

/* Set up m for dir (copied): the default series (no histograms, no detail). */
void nw_metrics_init(struct nw_metrics *m, const char *dir, int all, double window_s);
void nw_metrics_release(struct nw_metrics *m);

/*
 * Find the stats through the node's processes (procscan.h): proc is the
 * proc file system ("/proc"), logs the node's /var/log as mounted here
 * (NULL or "": no pod names, pod UIDs only); read_dir keeps m->dir read too.
 */
void nw_metrics_procs(struct nw_metrics *m, const char *proc, const char *logs, int read_dir);

/* --histograms TEXT ("none", "op", "op,size") into *mode; -1 with err naming the choices. */
int nw_metrics_parse_hist(const char *s, int *mode, char *err, size_t errlen);

/* --detail TEXT (a comma list of size, source, rank, all) into *detail (NW_DETAIL_*); -1 with err. */
int nw_metrics_parse_detail(const char *s, unsigned *detail, char *err, size_t errlen);

/*
 * Read a bench result (ncclwatch JSON, docs/results.md) as the busbw
 * baseline: per op, size bucket and rank count, the best busbw of its
 * rows. Returns 0, or -1 with err filled.
 */
int nw_metrics_load_baseline(struct nw_metrics *m, const char *path, char *err, size_t errlen);

/*
 * One scrape at monotonic time now: load the directory, append every
 * metric to out. A directory that cannot be read still yields the
 * exporter's own metrics (with the error counted); returns -1 then, with
 * err filled, else 0. Bad files are counted as scrape errors and named in
 * err (the first one) while the scrape still returns 0.
 */
int nw_metrics_scrape(struct nw_metrics *m, double now, struct nw_prom *out, char *err,
                      size_t errlen);

/*
 * The metrics of one loaded set: now is a sample of set, prev an older one
 * or NULL (busbw gauges then cover each file's whole life).
 */
void nw_metrics_write(const struct nw_metrics *m, const struct nw_sf_set *set,
                      const struct nw_sample *now, const struct nw_sample *prev,
                      struct nw_prom *out);

/* Size-bucket label of a bucket: its smallest size, "0", "1", ..., "64K", "1G". */
void nw_metrics_size_label(unsigned bucket, char *buf, size_t len);

#endif
