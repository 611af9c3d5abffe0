/* SPDX-License-Identifier: Apache-2.0 */
/* Exposed communication arithmetic (src/plugin/overlap_math.c): exact
 * figures for timelines drawn by hand, and NCCL kernel names as CUPTI and
 * Nsight report them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plugin/overlap_math.h"

#define US 1000ull
#define C(a, b) { (a) * US, (b) * US, 0, 0 }
#define N(a, b) { (a) * US, (b) * US, 1, 0 }

static void run(struct nwo_iv *iv, size_t n, uint64_t lo_us, uint64_t hi_us, uint64_t wall, uint64_t comp,
                uint64_t nccl, uint64_t exposed)
{
	struct nwo_result r;
	nwo_compute(iv, n, lo_us * US, hi_us * US, &r);
	assert_int_equal(r.wall_ns, wall * US);
	assert_int_equal(r.compute_ns, comp * US);
	assert_int_equal(r.nccl_ns, nccl * US);
	assert_int_equal(r.exposed_ns, exposed * US);
}

/* compute |=====|     NCCL inside it: nothing exposed */
static void fully_overlapped(void **state)
{
	(void)state;
	struct nwo_iv iv[] = { C(0, 1000), N(100, 400), N(500, 900) };
	run(iv, 3, 0, 2000, 2000, 1000, 700, 0);
}

/* compute then NCCL alone: all NCCL time exposed */
static void not_overlapped(void **state)
{
	(void)state;
	struct nwo_iv iv[] = { N(1000, 1600), C(0, 1000), C(1600, 1900) };
	run(iv, 3, 0, 2000, 2000, 1300, 600, 600);
}

/* NCCL [800,1400) over compute [0,1000): 400 exposed */
static void partly_overlapped(void **state)
{
	(void)state;
	struct nwo_iv iv[] = { C(0, 1000), N(800, 1400) };
	run(iv, 2, 0, 2000, 2000, 1000, 600, 400);
}

/* Two compute streams and two NCCL streams: unions first, then the gaps. */
static void several_streams(void **state)
{
	(void)state;
	struct nwo_iv iv[] = {
		C(0, 300), C(200, 500),     /* stream 7 and 13: compute union [0,500) */
		C(900, 1000),               /* [900,1000) */
		N(400, 700), N(600, 950),   /* NCCL union [400,950): 550 */
		N(1500, 1600),              /* alone: 100 */
	};
	/* exposed: [500,900) = 400 plus [1500,1600) = 100 */
	run(iv, 6, 0, 2000, 2000, 600, 650, 500);
}

/* Kernels that straddle the window count only inside it; empty ones are dropped. */
static void clipped_to_window(void **state)
{
	(void)state;
	struct nwo_iv iv[] = { C(0, 150), N(50, 300), N(1900, 2500), C(2100, 2200), N(700, 700) };
	/* window [100, 2000): compute [100,150), NCCL [100,300) and [1900,2000) */
	run(iv, 5, 100, 2000, 1900, 50, 300, 250);
}

static void empty_and_bad_window(void **state)
{
	(void)state;
	run(NULL, 0, 0, 2000, 2000, 0, 0, 0);
	struct nwo_iv iv[] = { N(0, 10) };
	run(iv, 1, 50, 50, 0, 0, 0, 0);
}

/* Names as CUPTI (mangled), Nsight (demangled) and old NCCLs give them. */
static void nccl_names(void **state)
{
	(void)state;
	assert_true(nwo_is_nccl_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
	assert_true(nwo_is_nccl_kernel("_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
	assert_true(nwo_is_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm *, unsigned long, ncclWork *)"));
	assert_true(nwo_is_nccl_kernel("ncclDevKernel_Generic"));
	assert_false(nwo_is_nccl_kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(Params)"));
	assert_false(nwo_is_nccl_kernel("_Z13ncclish_kernelv"));
	assert_false(nwo_is_nccl_kernel("vllm::cross_device_reduce_2stage"));
	assert_false(nwo_is_nccl_kernel(""));
	assert_false(nwo_is_nccl_kernel(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fully_overlapped),
		cmocka_unit_test(not_overlapped),
		cmocka_unit_test(partly_overlapped),
		cmocka_unit_test(several_streams),
		cmocka_unit_test(clipped_to_window),
		cmocka_unit_test(empty_and_bad_window),
		cmocka_unit_test(nccl_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
