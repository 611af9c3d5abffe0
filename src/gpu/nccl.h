/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl: NCCL opened at run time (dlopen), never linked, no nccl.h needed.
 * Which NCCL is loaded, in order: --nccl-lib PATH, $NCCLWATCH_NCCL_LIB,
 * the one PyTorch would load (site-packages/nvidia/nccl/lib of the python3
 * on PATH, found without importing torch), then the system loader's search.
 */
#ifndef NW_GPU_NCCL_H
#define NW_GPU_NCCL_H

#include <stddef.h>

/* Where a candidate library came from. */
struct nw_nccl_where {
	char path[1024];
	char how[32];     /* "--nccl-lib", "NCCLWATCH_NCCL_LIB", "pytorch", "system" */
	char version[32]; /* "2.28.9" from the file's own version string, "" if unknown */
};

/*
 * Decide which NCCL would be loaded, without loading it. Returns 0 and
 * fills *w, or -1 with err naming what was tried and what to do.
 */
int nw_nccl_locate(const char *override_path, struct nw_nccl_where *w, char *err, size_t errlen);

/*
 * Every libnccl.so* visible on this machine (loader cache, LD_LIBRARY_PATH,
 * the python3's site-packages, CUDA and common prefixes), de-duplicated by
 * real path, with the version each file declares. *out is malloc'ed; the
 * caller frees it. Returns the count.
 */
size_t nw_nccl_find_all(struct nw_nccl_where **out);

/* The version a libnccl file declares ("NCCL version X" string); -1 if none. */
int nw_nccl_file_version(const char *path, char *ver, size_t len);

#endif

#ifndef NW_GPU_NCCL_API
#define NW_GPU_NCCL_API
#include "gpu/cuda.h"

/* The part of NCCL's ABI ncclwatch uses (nccl.h 2.x, declared here). */
typedef struct nw_ncclComm *nw_ncclComm_t;
typedef struct { char internal[128]; } nw_ncclUniqueId;
typedef int nw_ncclResult_t;
enum { NW_NCCL_SUCCESS = 0, NW_NCCL_IN_PROGRESS = 7 };
typedef struct nw_ncclWindow *nw_ncclWindow_t;
/* ncclCommWindowRegister's flag: a window every rank registers alike, for symmetric kernels (nccl.h 2.27) */
#define NW_NCCL_WIN_COLL_SYMMETRIC 0x01

/*
 * ncclConfig_t as of NCCL 2.28 (its size and version tell NCCL which
 * fields we know). NCCL 2.27's ncclConfig_v22700 is the same struct ending
 * after nvlsCTAs (NW_NCCL_CONFIG_SIZE_2_27).
 */
struct nw_ncclConfig {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs;
	const char *netName;
	int splitShare, trafficClass;
	const char *commName;
	int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};
#define NW_NCCL_CONFIG_SIZE_2_27 offsetof(struct nw_ncclConfig, nChannelsPerNetPeer)
#define NW_NCCL_SCALAR_HOST_IMMEDIATE 1

struct nw_nccl {
	nw_ncclResult_t (*pfn_ncclGetVersion)(int *v);
	nw_ncclResult_t (*pfn_ncclGetUniqueId)(nw_ncclUniqueId *id);
	nw_ncclResult_t (*pfn_ncclCommInitRank)(nw_ncclComm_t *c, int n, nw_ncclUniqueId id, int rank);
	nw_ncclResult_t (*pfn_ncclCommInitRankConfig)(nw_ncclComm_t *c, int n, nw_ncclUniqueId id, int rank,
	                                      struct nw_ncclConfig *cfg); /* NULL before 2.14 */
	nw_ncclResult_t (*pfn_ncclCommDestroy)(nw_ncclComm_t c);
	nw_ncclResult_t (*pfn_ncclCommAbort)(nw_ncclComm_t c);
	nw_ncclResult_t (*pfn_ncclCommGetAsyncError)(nw_ncclComm_t c, nw_ncclResult_t *e);
	const char *(*pfn_ncclGetErrorString)(nw_ncclResult_t r);
	const char *(*pfn_ncclGetLastError)(nw_ncclComm_t c); /* NULL before 2.13 */
	nw_ncclResult_t (*pfn_ncclGroupStart)(void);
	nw_ncclResult_t (*pfn_ncclGroupEnd)(void);
	nw_ncclResult_t (*pfn_ncclAllReduce)(const void *s, void *r, size_t n, int t, int op, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclAllGather)(const void *s, void *r, size_t n, int t, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclReduceScatter)(const void *s, void *r, size_t n, int t, int op, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclBroadcast)(const void *s, void *r, size_t n, int t, int root, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclReduce)(const void *s, void *r, size_t n, int t, int op, int root, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclSend)(const void *s, size_t n, int t, int peer, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclRecv)(void *r, size_t n, int t, int peer, nw_ncclComm_t c, nw_CUstream st);
	/* NCCL 2.28+; NULL before (grouped send/recv are used instead) */
	nw_ncclResult_t (*pfn_ncclAlltoAll)(const void *s, void *r, size_t n, int t, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclGather)(const void *s, void *r, size_t n, int t, int root, nw_ncclComm_t c, nw_CUstream st);
	nw_ncclResult_t (*pfn_ncclScatter)(const void *s, void *r, size_t n, int t, int root, nw_ncclComm_t c, nw_CUstream st);
	/* NCCL_TESTS_SPLIT: ncclCommSplit is NCCL 2.18+ (NULL before); config NULL inherits the parent's */
	nw_ncclResult_t (*pfn_ncclCommSplit)(nw_ncclComm_t c, int color, int key, nw_ncclComm_t *out, void *config);
	nw_ncclResult_t (*pfn_ncclCommUserRank)(nw_ncclComm_t c, int *rank);
	nw_ncclResult_t (*pfn_ncclCommCount)(nw_ncclComm_t c, int *n);
	/* buffer registration (-R): NULL when absent; checked where used */
	nw_ncclResult_t (*pfn_ncclMemAlloc)(void **p, size_t bytes);          /* 2.19+ */
	nw_ncclResult_t (*pfn_ncclMemFree)(void *p);
	nw_ncclResult_t (*pfn_ncclCommRegister)(nw_ncclComm_t c, void *buf, size_t bytes, void **handle); /* 2.19+ */
	nw_ncclResult_t (*pfn_ncclCommDeregister)(nw_ncclComm_t c, void *handle);
	nw_ncclResult_t (*pfn_ncclCommWindowRegister)(nw_ncclComm_t c, void *buf, size_t bytes, nw_ncclWindow_t *win,
	                                               int flags); /* 2.27+ */
	nw_ncclResult_t (*pfn_ncclCommWindowDeregister)(nw_ncclComm_t c, nw_ncclWindow_t win);
	/* -o mulsum: the pre-multiplied sum, NCCL 2.11+ (NULL before); residence 1 is ncclScalarHostImmediate */
	nw_ncclResult_t (*pfn_ncclRedOpCreatePreMulSum)(int *op, void *scalar, int t, int residence, nw_ncclComm_t c);
	nw_ncclResult_t (*pfn_ncclRedOpDestroy)(int op, nw_ncclComm_t c);
	int version_code;            /* 22809 */
	char version[32];            /* "2.28.9" */
	struct nw_nccl_where where;  /* the file loaded and why */
	char interposer[256];        /* the calls an LD_PRELOADed libncclwatch-interpose.so wraps go through it: its path; "" none */
};

/*
 * Locate (nw_nccl_locate) and dlopen NCCL, resolve its symbols and ask its
 * version. The table lives for the process. NULL with err on failure.
 */
const struct nw_nccl *nw_nccl_load(const char *override_path, char *err, size_t errlen);

/* "ncclUnhandledCudaError: ... (last error: ...)" for a result code. */
const char *nw_nccl_strerror(const struct nw_nccl *nc, nw_ncclComm_t comm, nw_ncclResult_t r,
                             char *buf, size_t len);
#endif
