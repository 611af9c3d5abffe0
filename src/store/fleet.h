/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet: every host's latest check against its peers. Hosts are grouped by
 * GPU model and count (the fingerprint's "gpus"); in each group, every
 * (op, size) a check measured has a median busbw over the group's hosts,
 * and a host's ratio there is its busbw over that median. A host whose
 * lowest ratio is under the threshold is an outlier; what differs in its
 * fingerprint from its group's majority (driver, NCCL version, topology
 * hash, NCCL_* variables) is listed with it.
 *
 * nw_fleet_analyze is pure (runs in, verdicts out); nw_fleet_build reads
 * the runs from a history database first.
 */
#ifndef NW_FLEET_H
#define NW_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "model/result.h"
#include "store/store.h"

/* One (op, size) of a host: its busbw (mean of the rows there) against its group's median. */
struct nw_fleet_cell {
	char op[24];
	uint64_t size_bytes;
	double busbw, median, ratio;
};

/* A fingerprint field where a host differs from its group's majority. */
struct nw_fleet_diff {
	char field[96];   /* "driver", "nccl_version", "topology_hash", "env.NCCL_IB_HCA" */
	char value[128];  /* this host's ("" when unset) */
	char fleet[128];  /* the majority's */
};

struct nw_fleet_host {
	long long run_id;
	char host[256];
	char time[32];
	char verdict[16];          /* the check's ("" when it recorded none) */
	char gpus[128];            /* the group: "8 x NVIDIA H200" */
	int group_size;            /* hosts in the group, this one included */
	struct nw_fleet_cell *cells;
	size_t ncells;
	double worst;              /* lowest ratio (1 when nothing to compare) */
	size_t worst_cell;         /* index of it in cells (when ncells) */
	int outlier;
	struct nw_fleet_diff *diffs;
	size_t ndiffs;
};

/* Hosts, outliers first (lowest ratio first), then the others by host name. */
struct nw_fleet {
	struct nw_fleet_host *hosts;
	size_t nhosts;
	size_t noutliers;
	double threshold;
};

#define NW_FLEET_THRESHOLD 0.9

/*
 * Analyze runs[0..n) (one per host, each a check with its fingerprint in
 * h.extra) against threshold (a fraction of the median, 0 < t <= 1). The
 * caller releases f with nw_fleet_release; the runs stay the caller's.
 */
void nw_fleet_analyze(struct nw_fleet *f, const struct nw_run *runs, const long long *ids, size_t n,
                      double threshold);

/* The latest check of every host in s, analyzed. -1 with err. */
int nw_fleet_build(struct nw_store *s, double threshold, struct nw_fleet *f, char *err, size_t errlen);

void nw_fleet_release(struct nw_fleet *f);

/* The fleet as JSON (a new reference). */
json_t *nw_fleet_to_json(const struct nw_fleet *f);

#endif
