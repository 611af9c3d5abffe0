/*
 * hostmem: how much host memory this process may still take, so that a
 * host backend refuses a size before allocating it instead of being
 * killed by the kernel's OOM killer halfway through touching it.
 */
#ifndef NW_BENCH_HOSTMEM_H
#define NW_BENCH_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Bytes that can still be allocated and touched: MemAvailable from
 * /proc/meminfo, lowered by the memory limit of this process's cgroup
 * (v1 or v2, and each parent's) less what the cgroup already uses.
 * UINT64_MAX when nothing could be read. 'why' (at least 64 bytes) says
 * which limit it was: "MemAvailable" or "cgroup memory limit".
 */
uint64_t nw_host_mem_available(char *why, size_t whylen);

#endif
