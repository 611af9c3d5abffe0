/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostmem: how much host memory this process may still take, and how much
 * a host backend's sweep will take, so that it refuses a size before
 * allocating it instead of being killed by the kernel's OOM killer halfway
 * through (with no message, and a neighbour's job perhaps with it).
 */
#ifndef NW_BENCH_HOSTMEM_H
#define NW_BENCH_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

#include "model/coll.h"

/*
 * Bytes that can still be allocated and touched: MemAvailable from
 * /proc/meminfo, lowered by the memory limit of this process's cgroup
 * (v1 or v2, and each parent's) less what the cgroup already uses.
 * UINT64_MAX when nothing could be read. 'why' (at least 64 bytes) says
 * which limit it was: "MemAvailable" or "cgroup memory limit".
 * /proc and /sys are read under $NCCLWATCH_SYSROOT when it is set (a
 * recorded or made-up machine, as doctor and check read it).
 */
uint64_t nw_host_mem_available(char *why, size_t whylen);

/* What the host memory of one process of a host backend's sweep is made of (nw_host_mem_need). */
struct nw_host_mem_need {
	uint64_t buffers;   /* its send and receive buffers */
	uint64_t library;   /* what MPI (or the backend) allocates besides for the heaviest op */
	uint64_t fixed;     /* the staging buffer of verification and the runtime */
	enum nw_op heaviest;
	uint64_t total;
};

/* The runtime's and the verification staging buffer's share of a process, measured: 64 MiB + 32 MiB. */
#define NW_HOST_MEM_FIXED (96ull << 20)

/*
 * The peak host memory of one process sweeping ops[0..nops) (with
 * --pairs: send/recv too) with buffers of buf bytes: two buffers, plus
 * what the library takes for the heaviest op, plus NW_HOST_MEM_FIXED.
 * The library's share, measured with Open MPI 4.1 (peak RSS of 2 and 4
 * ranks at 128M and 512M): all_reduce one buffer more; reduce and
 * reduce_scatter up to two (1.5 and 2 measured with 4 ranks); alltoall up
 * to one (its in-place copy); in-place sendrecv and alltoallv one (the
 * backend's own swap buffer); the others none.
 */
void nw_host_mem_need(uint64_t buf, const enum nw_op *ops, int nops, int pairs, struct nw_host_mem_need *need);

#endif
