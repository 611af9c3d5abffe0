/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kern: loading src/gpu/verify.ptx through the driver's JIT and launching
 * its kernels (see kern.h). Launches are asynchronous on the stream given;
 * the caller synchronises before reading a counter.
 */
#include "gpu/kern.h"

#include <string.h>

#include "util/util.h"

/* Threads per block (at least 13: the first 13 copy the table into shared memory) and the most blocks. */
#define KERN_THREADS 256
#define KERN_MAX_BLOCKS 4096

_Static_assert(KERN_THREADS >= NW_KERN_PERIOD, "a block must have a thread per table entry");

int nw_kern_load(const struct nw_cu *cu, struct nw_kern *k, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if (!cu->pfn_cuModuleLoadDataEx || !cu->pfn_cuModuleGetFunction || !cu->pfn_cuLaunchKernel ||
	    !cu->pfn_cuModuleUnload)
		return nw_seterr(err, errlen, "the driver '%s' lacks the run-time compiler's entry points", cu->path);
	char log[2048] = "";
	int opts[] = { NW_CU_JIT_ERROR_LOG_BUFFER, NW_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { log, (void *)(uintptr_t)sizeof(log) };
	nw_CUresult r = cu->pfn_cuModuleLoadDataEx(&k->mod, nw_verify_ptx, 2, opts, vals);
	char b[160];
	if (r != NW_CUDA_SUCCESS) {
		k->mod = NULL;
		log[sizeof(log) - 1] = '\0';
		for (char *c = log; *c; c++)
			if (*c == '\n')
				*c = ' ';
		return nw_seterr(err, errlen, "the driver did not compile the check kernels: %s%s%s",
		                 nw_cuda_strerror(cu, r, b, sizeof(b)), log[0] ? ": " : "", log);
	}
	static const char *const names[] = { "nw_fill", "nw_verify_bits", "nw_verify_map", "nw_verify_tol" };
	nw_CUfunction *fn[] = { &k->fill, &k->bits, &k->map, &k->tol };
	for (size_t i = 0; i < NW_ARRAY_LEN(names); i++) {
		r = cu->pfn_cuModuleGetFunction(fn[i], k->mod, names[i]);
		if (r != NW_CUDA_SUCCESS) {
			nw_kern_unload(cu, k);
			return nw_seterr(err, errlen, "the check kernels have no '%s': %s", names[i],
			                 nw_cuda_strerror(cu, r, b, sizeof(b)));
		}
	}
	return 0;
}

void nw_kern_unload(const struct nw_cu *cu, struct nw_kern *k)
{
	if (k->mod && cu->pfn_cuModuleUnload)
		cu->pfn_cuModuleUnload(k->mod);
	memset(k, 0, sizeof(*k));
}

/* Launch f over n elements with params. 0, or -1 with err. */
static int launch(const struct nw_cu *cu, nw_CUfunction f, const char *what, nw_CUstream s, uint64_t n,
                  void **params, char *err, size_t errlen)
{
	if (n == 0)
		return 0;
	uint64_t blocks = (n + KERN_THREADS - 1) / KERN_THREADS;
	if (blocks > KERN_MAX_BLOCKS)
		blocks = KERN_MAX_BLOCKS;
	nw_CUresult r = cu->pfn_cuLaunchKernel(f, (unsigned)blocks, 1, 1, KERN_THREADS, 1, 1, 0, s, params, NULL);
	char b[160];
	if (r != NW_CUDA_SUCCESS)
		return nw_seterr(err, errlen, "launching the %s kernel failed: %s", what, nw_cuda_strerror(cu, r, b, sizeof(b)));
	return 0;
}

int nw_kern_fill(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf, uint64_t n,
                 unsigned es, unsigned k0, const uint64_t tab[NW_KERN_PERIOD], char *err, size_t errlen)
{
	uint64_t t[NW_KERN_PERIOD];
	memcpy(t, tab, sizeof(t));
	void *params[] = { &buf, &n, &es, &k0, t };
	return launch(cu, k->fill, "fill", s, n, params, err, errlen);
}

int nw_kern_verify_bits(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                        uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count,
                        const uint64_t ref[NW_KERN_PERIOD], char *err, size_t errlen)
{
	uint64_t t[NW_KERN_PERIOD];
	memcpy(t, ref, sizeof(t));
	void *params[] = { &buf, &n, &es, &k0, &count, t };
	return launch(cu, k->bits, "check", s, n, params, err, errlen);
}

int nw_kern_verify_map(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                       uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count, nw_CUdeviceptr map, char *err,
                       size_t errlen)
{
	void *params[] = { &buf, &n, &es, &k0, &count, &map };
	return launch(cu, k->map, "check", s, n, params, err, errlen);
}

int nw_kern_verify_tol(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                       uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count, const double rep[NW_KERN_PERIOD],
                       const double want[NW_KERN_PERIOD], const double ts[NW_KERN_PERIOD], char *err, size_t errlen)
{
	double r[NW_KERN_PERIOD], w[NW_KERN_PERIOD], t[NW_KERN_PERIOD];
	memcpy(r, rep, sizeof(r));
	memcpy(w, want, sizeof(w));
	memcpy(t, ts, sizeof(t));
	void *params[] = { &buf, &n, &es, &k0, &count, r, w, t };
	return launch(cu, k->tol, "check", s, n, params, err, errlen);
}
