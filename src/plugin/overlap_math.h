/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap_math: exposed communication from kernel intervals, pure
 * arithmetic (no clocks, no allocation, no CUPTI) so that it can be tested
 * exactly. Used by the plugin's overlap window (overlap.c).
 */
#ifndef NW_OVERLAP_MATH_H
#define NW_OVERLAP_MATH_H

#include <stddef.h>
#include <stdint.h>

/* One kernel's execution on the GPU: [start, end) in one clock, any stream. */
struct nwo_iv {
	uint64_t start, end;
	uint32_t is_nccl;          /* 1: an NCCL kernel, 0: compute (anything else) */
	uint32_t _pad;
};

/* What one window measured (nanoseconds). */
struct nwo_result {
	uint64_t wall_ns;          /* win_end - win_start */
	uint64_t compute_ns;       /* union of compute kernels inside the window */
	uint64_t nccl_ns;          /* union of NCCL kernels inside the window */
	uint64_t exposed_ns;       /* NCCL time during which no compute kernel ran */
};

/*
 * Clip the n intervals of iv to [win_start, win_end), merge each kind over
 * all streams and fill r. iv is reordered and overwritten (the caller's
 * scratch: it holds the merged lists afterwards). n may be 0.
 */
void nwo_compute(struct nwo_iv *iv, size_t n, uint64_t win_start, uint64_t win_end, struct nwo_result *r);

/*
 * 1 when a CUPTI kernel name is one of NCCL's: "ncclKernel_..." (NCCL up to
 * 2.18), "ncclDevKernel_..." (2.19 on), either as is or as the mangled
 * "_Z<len>ncclDevKernel_..." CUPTI reports by default.
 */
int nwo_is_nccl_kernel(const char *name);

#endif
