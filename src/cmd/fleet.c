/* SPDX-License-Identifier: Apache-2.0 */
/* ncclwatch fleet: which host's latest check is slow against its peers, and what differs on it. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "store/fleet.h"
#include "store/store.h"
#include "util/termtext.h"
#include "util/util.h"

struct fleet_args {
	struct nw_store_opts so;
	double threshold;
	struct nw_opt_out json;
};

static const struct nw_opt fleet_options[] = {
	{ .kind = NW_OPTK_PERCENT, .lname = "threshold", .off = NW_F_DBL(struct fleet_args, threshold), .argh = "PCT",
	  .dmin = 0.0001, .dmax = 1, .def = "90", .help = "outlier below PCT% of the median busbw" },
	NW_OPT_JSON(struct fleet_args, json, ""),
	NW_OPTS_STORE_READ(struct fleet_args, so),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_fleet = {
	.name = "fleet",
	.synopsis = "[--threshold PCT] [--json[=FILE]] [--db PATH]",
	.about = "Every host's latest check in the history, against the median of the\n"
	         "hosts with the same GPU model and count, at each op and size the checks\n"
	         "measured. A host below the threshold at any of them is an outlier: those\n"
	         "are listed first, with what differs in their fingerprint from the\n"
	         "majority of their peers (driver, NCCL version, topology hash, NCCL_*\n"
	         "variables). Record checks from every node into one database (--db, or\n"
	         "history merge FILE.db for nodes that kept their own).\n",
	.opts = fleet_options,
	.footer = "exit status: 0 no outlier, 1 at least one outlier, 2 usage or history error\n",
};

/* "all_reduce 128M: 350.12 GB/s, 89.9% of 389.30" for h's worst cell. */
static void worst_text(const struct nw_fleet_host *h, char *buf, size_t len)
{
	if (!h->ncells) {
		snprintf(buf, len, "no results");
		return;
	}
	const struct nw_fleet_cell *c = &h->cells[h->worst_cell];
	char size[32];
	nw_format_size(c->size_bytes, size, sizeof(size));
	snprintf(buf, len, "%s %s: %.2f GB/s, %.1f%% of %.2f", NW_TT(c->op), size, c->busbw, c->ratio * 100, c->median);
}

/* One host's line; what the history holds (host names, versions) is shown safe for a terminal. */
static void print_host(const struct nw_fleet_host *h, int wh)
{
	char worst[160], host[NW_TT_BUF];
	worst_text(h, worst, sizeof(worst));
	nw_tt(h->host, host);
	printf("  %-*s  %-7s  %-20s  %6.1f%%  %s\n", wh + (int)(strlen(host) - nw_tt_width(host)), host,
	       h->verdict[0] ? NW_TT(h->verdict) : "-", NW_TT(h->time), h->worst * 100, worst);
	if (!h->outlier)
		return;
	if (!h->ndiffs)
		printf("  %-*s  same fingerprint as its peers (driver, NCCL, topology, NCCL_* variables)\n", wh, "");
	for (size_t k = 0; k < h->ndiffs; k++)
		printf("  %-*s  differs: %s %s (fleet: %s)\n", wh, "", NW_TT(h->diffs[k].field),
		       h->diffs[k].value[0] ? NW_TT(h->diffs[k].value) : "unset",
		       h->diffs[k].fleet[0] ? NW_TT(h->diffs[k].fleet) : "unset");
}

static void print_text(const struct nw_fleet *f)
{
	int wh = 4;
	for (size_t i = 0; i < f->nhosts; i++)
		if ((int)nw_tt_width(NW_TT(f->hosts[i].host)) > wh)
			wh = (int)nw_tt_width(NW_TT(f->hosts[i].host));
	printf("fleet: %zu host%s, latest check each; outlier below %.0f%% of the median of the same GPUs\n",
	       f->nhosts, f->nhosts == 1 ? "" : "s", f->threshold * 100);
	printf("  %-*s  %-7s  %-20s  %7s  %s\n", wh, "host", "verdict", "checked (UTC)", "worst", "at (busbw, share of median)");
	for (size_t i = 0; i < f->nhosts; i++) {
		if (i == 0 && f->noutliers)
			printf("outliers (%zu):\n", f->noutliers);
		if (i == f->noutliers)
			printf("%s (%zu):\n", f->noutliers ? "the others" : "hosts", f->nhosts - f->noutliers);
		print_host(&f->hosts[i], wh);
	}
}

/* Runs of source job are counted up to this many (a note says how many the fleet leaves out). */
#define JOBS_COUNTED 10000

/* How many runs of source job the history holds (at most JOBS_COUNTED); 0 when it cannot say. */
static long long count_jobs(struct nw_store *s)
{
	struct nw_store_filter f = { .source = "job", .limit = JOBS_COUNTED };
	struct nw_store_entry *e = NULL;
	size_t n = 0;
	char err[NW_ERRLEN];
	if (nw_store_list(s, &f, &e, &n, err, sizeof(err)) != 0)
		return 0;
	free(e);
	return (long long)n;
}

int cmd_fleet(int argc, char **argv)
{
	struct fleet_args a;
	memset(&a, 0, sizeof(a));
	a.threshold = NW_FLEET_THRESHOLD;
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_fleet, &a, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_fleet, st);
	char path[PATH_MAX], err[NW_ERRLEN];
	struct nw_store *s;
	struct nw_fleet f;
	if (nw_store_path(&a.so, path, sizeof(path), err, sizeof(err)) ||
	    nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)))
		return nw_error("%s", NW_TT_MSG(err)), 2;
	int rc = nw_fleet_build(s, a.threshold, &f, err, sizeof(err));
	long long njobs = rc ? 0 : count_jobs(s);
	nw_store_close(s);
	if (rc)
		return nw_error("%s", NW_TT_MSG(err)), 2;
	if (!nw_cli_json_text(&a.json)) {
	} else if (!f.nhosts) {
		fprintf(stderr, "no check runs in '%s': record one per node with 'ncclwatch check' (into this --db, "
		        "or merge their files with 'history merge')\n", NW_TT(path));
	} else {
		print_text(&f);
	}
	if (njobs && nw_cli_json_text(&a.json))
		printf("note: %lld%s run%s of source job ('ncclwatch run') not in this view: a job measures the sizes "
		       "its model sends, not the checks' fixed set, so hosts are not put side by side on them; "
		       "compare jobs with 'ncclwatch compare' or 'ncclwatch report --job'\n",
		       njobs, njobs >= JOBS_COUNTED ? " or more" : "", njobs == 1 ? "" : "s");
	rc = f.noutliers ? 1 : 0;
	if (a.json.on) {
		json_t *doc = nw_fleet_to_json(&f);
		json_object_set_new(doc, "jobs_not_compared", json_integer(njobs));
		if (nw_cli_json_write("fleet", &a.json, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)))
			rc = 2;
		json_decref(doc);
	}
	nw_fleet_release(&f);
	return rc;
}
