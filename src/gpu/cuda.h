/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda: the CUDA driver API (libcuda.so.1) opened at run time. Only the
 * symbols ncclwatch uses are declared, from the documented ABI; they are
 * reached through nw_cu (a table of pointers), never under the vendor's
 * own names.
 */
#ifndef NW_GPU_CUDA_H
#define NW_GPU_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int nw_CUresult;
typedef int nw_CUdevice;
typedef unsigned long long nw_CUdeviceptr;
typedef struct nw_CUctx_st *nw_CUcontext;
typedef struct nw_CUstream_st *nw_CUstream;
typedef struct nw_CUgraph_st *nw_CUgraph;
typedef struct nw_CUgraphExec_st *nw_CUgraphExec;
typedef struct nw_CUmod_st *nw_CUmodule;
typedef struct nw_CUfunc_st *nw_CUfunction;

enum {
	NW_CUDA_SUCCESS = 0,
	NW_CUDA_ERROR_NOT_READY = 600,
	NW_CU_ATTR_PCI_BUS_ID = 33,
	NW_CU_ATTR_PCI_DEVICE_ID = 34,
	NW_CU_ATTR_PCI_DOMAIN_ID = 50,
	NW_CU_ATTR_CC_MAJOR = 75,
	NW_CU_ATTR_CC_MINOR = 76,
	NW_CU_STREAM_NON_BLOCKING = 1,
	NW_CU_CAPTURE_MODE_GLOBAL = 0,
	NW_CU_CAPTURE_MODE_THREAD_LOCAL = 1,
	NW_CU_CAPTURE_MODE_RELAXED = 2,
	NW_CU_JIT_ERROR_LOG_BUFFER = 5,
	NW_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

struct nw_cu {
	nw_CUresult (*pfn_cuInit)(unsigned int flags);
	nw_CUresult (*pfn_cuDriverGetVersion)(int *v);
	nw_CUresult (*pfn_cuDeviceGetCount)(int *n);
	nw_CUresult (*pfn_cuDeviceGet)(nw_CUdevice *d, int ordinal);
	nw_CUresult (*pfn_cuDeviceGetName)(char *name, int len, nw_CUdevice d);
	nw_CUresult (*pfn_cuDeviceGetAttribute)(int *v, int attr, nw_CUdevice d);
	nw_CUresult (*pfn_cuDeviceTotalMem)(size_t *bytes, nw_CUdevice d);
	nw_CUresult (*pfn_cuDevicePrimaryCtxRetain)(nw_CUcontext *ctx, nw_CUdevice d);
	nw_CUresult (*pfn_cuDevicePrimaryCtxRelease)(nw_CUdevice d);
	nw_CUresult (*pfn_cuCtxSetCurrent)(nw_CUcontext ctx);
	nw_CUresult (*pfn_cuCtxSynchronize)(void);
	nw_CUresult (*pfn_cuMemGetInfo)(size_t *free_b, size_t *total_b);
	nw_CUresult (*pfn_cuMemAlloc)(nw_CUdeviceptr *p, size_t bytes);
	nw_CUresult (*pfn_cuMemFree)(nw_CUdeviceptr p);
	nw_CUresult (*pfn_cuMemHostAlloc)(void **p, size_t bytes, unsigned int flags);
	nw_CUresult (*pfn_cuMemFreeHost)(void *p);
	nw_CUresult (*pfn_cuMemcpyHtoD)(nw_CUdeviceptr dst, const void *src, size_t bytes);
	nw_CUresult (*pfn_cuMemcpyDtoH)(void *dst, nw_CUdeviceptr src, size_t bytes);
	nw_CUresult (*pfn_cuMemcpyDtoD)(nw_CUdeviceptr dst, nw_CUdeviceptr src, size_t bytes);
	nw_CUresult (*pfn_cuMemsetD32)(nw_CUdeviceptr dst, unsigned int v, size_t n);
	nw_CUresult (*pfn_cuStreamCreate)(nw_CUstream *s, unsigned int flags);
	nw_CUresult (*pfn_cuStreamDestroy)(nw_CUstream s);
	nw_CUresult (*pfn_cuStreamQuery)(nw_CUstream s);
	nw_CUresult (*pfn_cuStreamSynchronize)(nw_CUstream s);
	nw_CUresult (*pfn_cuStreamBeginCapture)(nw_CUstream s, int mode);
	nw_CUresult (*pfn_cuStreamEndCapture)(nw_CUstream s, nw_CUgraph *g);
	nw_CUresult (*pfn_cuGraphInstantiateWithFlags)(nw_CUgraphExec *e, nw_CUgraph g, unsigned long long flags);
	nw_CUresult (*pfn_cuGraphLaunch)(nw_CUgraphExec e, nw_CUstream s);
	nw_CUresult (*pfn_cuGraphExecDestroy)(nw_CUgraphExec e);
	nw_CUresult (*pfn_cuGraphDestroy)(nw_CUgraph g);
	/* the JIT of src/gpu/verify.ptx (gpu/kern.c); all in CUDA 11.4 drivers, looked up as optional */
	nw_CUresult (*pfn_cuModuleLoadDataEx)(nw_CUmodule *m, const void *image, unsigned int nopts, int *opts,
	                                      void **vals);
	nw_CUresult (*pfn_cuModuleGetFunction)(nw_CUfunction *f, nw_CUmodule m, const char *name);
	nw_CUresult (*pfn_cuModuleUnload)(nw_CUmodule m);
	nw_CUresult (*pfn_cuLaunchKernel)(nw_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	                                  unsigned by, unsigned bz, unsigned shmem, nw_CUstream s, void **params,
	                                  void **extra);
	nw_CUresult (*pfn_cuGetErrorString)(nw_CUresult r, const char **s);
	nw_CUresult (*pfn_cuGetErrorName)(nw_CUresult r, const char **s);
	char path[1024]; /* the file loaded */
	int driver_version; /* cuDriverGetVersion: 13000 */
};

/*
 * Open libcuda.so.1 (or $NCCLWATCH_CUDA_LIB) and cuInit(0). Returns the
 * table (valid for the life of the process) or NULL with err saying what
 * is missing and what to do (no driver, driver too old, no device).
 */
const struct nw_cu *nw_cuda_load(char *err, size_t errlen);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code. */
const char *nw_cuda_strerror(const struct nw_cu *cu, nw_CUresult r, char *buf, size_t len);

/* What a process can say about one device. */
struct nw_cu_device {
	int ordinal;
	char name[96];
	char bus_id[20];     /* "0000:00:06.0" */
	int cc_major, cc_minor;
	size_t total_mem;
};
int nw_cuda_device_info(const struct nw_cu *cu, int ordinal, struct nw_cu_device *d, char *err, size_t errlen);

#endif
