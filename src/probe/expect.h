/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expect: the busbw a healthy machine should reach at large sizes. The
 * model (docs/expectations.md): expected busbw = bottleneck link bandwidth
 * (each way) x an efficiency per collective and path class, measured with
 * nccl-tests on real machines. bench prints "% of link" with it; check
 * compares against it.
 */
#ifndef NW_PROBE_EXPECT_H
#define NW_PROBE_EXPECT_H

#include <stdint.h>

#include "model/coll.h"
#include "probe/topo.h"

struct nw_expect {
	double link_gbs;      /* bottleneck link bandwidth, GB/s each way */
	double efficiency;    /* expected busbw / link_gbs */
	double busbw_gbs;     /* expected busbw at this size, GB/s */
	enum nw_path path;    /* the class that set the bottleneck */
	int nvlinks;          /* for NV#: links in the bottleneck bundle */
	int calibrated;       /* 1 when the efficiency was measured on this path class and op */
	char basis[192];      /* one line: where the figure comes from */
};

/*
 * Efficiency of op over a path class at size_bytes (nccl-tests' "size").
 * Between the calibration sizes (1 GB, 4 GB) it is interpolated in log2
 * of the size; below 1 GB the 1 GB figure, above 4 GB the 4 GB figure.
 * *calibrated (may be NULL) says whether it was measured for this class.
 */
double nw_expect_efficiency(enum nw_op op, enum nw_path path, uint64_t size_bytes, int *calibrated);

/* Expectation for a known link bandwidth and class. Returns 0, -1 with err when link_gbs <= 0. */
int nw_expect_for_link(enum nw_op op, int nranks, enum nw_path path, double link_gbs,
                       uint64_t size_bytes, struct nw_expect *e, char *err, size_t errlen);

/*
 * Expectation for nranks ranks of which nlocal run on this host, using
 * the topology's first nlocal GPUs (the visible ones). Inside one host,
 * the bottleneck is the slowest ring edge: with every GPU pair on NVLink
 * (directly or through NVSwitch), a GPU's NVLink bandwidth to the others
 * in the set; else the worst PCIe path. Across hosts, the host's active
 * RDMA NIC bandwidth divided among its local ranks. Returns 0, or -1 with
 * err (a single rank, no GPU, nothing known about the links).
 */
int nw_expect_for_topo(const struct nw_topo *t, enum nw_op op, int nranks, int nlocal,
                       uint64_t size_bytes, struct nw_expect *e, char *err, size_t errlen);

/*
 * What topo shows: the busbw each collective (all_reduce, all_gather,
 * reduce_scatter, broadcast, alltoall, sendrecv) should reach at 1 GB and
 * 4 GB on the visible GPUs vis of topology t. A JSON array (new reference)
 * of {op, link_gbs, path, busbw_1g, busbw_4g, efficiency_1g,
 * efficiency_4g, calibrated, basis}, or NULL with why saying why there is
 * none (no GPU, one visible GPU, nothing known about the links).
 */
json_t *nw_expect_table(const struct nw_topo *t, const struct nw_topo *vis, char *why, size_t whylen);

#endif
