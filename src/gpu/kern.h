/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kern: bench's fill and check kernels (src/gpu/verify.ptx) on one GPU:
 * the PTX text compiled by the driver at run time (cuModuleLoadDataEx; the
 * driver caches the result), then launched on a stream. What the kernels
 * compute is described in verify.ptx; the tables they are given come from
 * bench/pattern.c. Each table has NW_KERN_PERIOD entries: the element at
 * index j of a block takes entry (k0 + j) mod NW_KERN_PERIOD.
 */
#ifndef NW_GPU_KERN_H
#define NW_GPU_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda.h"

#define NW_KERN_PERIOD 13

/* The module of one context and its kernels. */
struct nw_kern {
	nw_CUmodule mod;
	nw_CUfunction fill, bits, map, tol;
};

/* The PTX text (NUL-terminated), assembled into the binary from src/gpu/verify.ptx. */
extern const char nw_verify_ptx[];

/*
 * Compile and load the kernels into the current context. 0, or -1 with err
 * saying why (the driver lacks the JIT entry points, refuses the PTX
 * version: with the driver's own log).
 */
int nw_kern_load(const struct nw_cu *cu, struct nw_kern *k, char *err, size_t errlen);
/* Unload (nothing when not loaded). */
void nw_kern_unload(const struct nw_cu *cu, struct nw_kern *k);

/* Write n elements of es bytes at buf: element j gets tab[(k0 + j) mod 13] (the low es bytes). */
int nw_kern_fill(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf, uint64_t n,
                 unsigned es, unsigned k0, const uint64_t tab[NW_KERN_PERIOD], char *err, size_t errlen);

/* Add to the 64-bit counter at count the elements whose bytes differ from ref[(k0 + j) mod 13]. */
int nw_kern_verify_bits(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                        uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count,
                        const uint64_t ref[NW_KERN_PERIOD], char *err, size_t errlen);

/*
 * 1- or 2-byte elements: add those whose code is not set in the bitmap at
 * map (13 entries of 256 or 65536 bits as 32-bit words, in device memory).
 */
int nw_kern_verify_map(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                       uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count, nw_CUdeviceptr map, char *err,
                       size_t errlen);

/* float (es 4) or double (es 8): add those with |got - rep| > ts and |got - want| > ts (entry by entry). */
int nw_kern_verify_tol(const struct nw_cu *cu, const struct nw_kern *k, nw_CUstream s, nw_CUdeviceptr buf,
                       uint64_t n, unsigned es, unsigned k0, nw_CUdeviceptr count, const double rep[NW_KERN_PERIOD],
                       const double want[NW_KERN_PERIOD], const double ts[NW_KERN_PERIOD], char *err, size_t errlen);

#endif
