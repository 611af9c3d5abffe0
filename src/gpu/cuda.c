/* SPDX-License-Identifier: Apache-2.0 */
/* cuda: the CUDA driver API (libcuda.so.1) opened at run time, its table resolved once (see cuda.h, util/dl.h). */
#include "gpu/cuda.h"

#include <stdio.h>
#include <string.h>

#include "util/dl.h"
#include "util/util.h"

static struct nw_cu cu;
static struct nw_dl_once once = NW_DL_ONCE_INIT; /* cu is resolved and the driver initialised */
static const struct nw_dl_lib libcuda = { "NCCLWATCH_CUDA_LIB", { "libcuda.so.1" }, 0 };

/* Every entry point used, all required but the JIT's (CUDA 11.4 drivers have them all). */
static const struct nw_dl_sym syms[] = {
	{ (void **)&cu.pfn_cuInit, { "cuInit" }, 1 },
	{ (void **)&cu.pfn_cuDriverGetVersion, { "cuDriverGetVersion" }, 1 },
	{ (void **)&cu.pfn_cuDeviceGetCount, { "cuDeviceGetCount" }, 1 },
	{ (void **)&cu.pfn_cuDeviceGet, { "cuDeviceGet" }, 1 },
	{ (void **)&cu.pfn_cuDeviceGetName, { "cuDeviceGetName" }, 1 },
	{ (void **)&cu.pfn_cuDeviceGetAttribute, { "cuDeviceGetAttribute" }, 1 },
	{ (void **)&cu.pfn_cuDeviceTotalMem, { "cuDeviceTotalMem_v2" }, 1 },
	{ (void **)&cu.pfn_cuDevicePrimaryCtxRetain, { "cuDevicePrimaryCtxRetain" }, 1 },
	{ (void **)&cu.pfn_cuDevicePrimaryCtxRelease, { "cuDevicePrimaryCtxRelease_v2" }, 1 },
	{ (void **)&cu.pfn_cuCtxSetCurrent, { "cuCtxSetCurrent" }, 1 },
	{ (void **)&cu.pfn_cuCtxSynchronize, { "cuCtxSynchronize" }, 1 },
	{ (void **)&cu.pfn_cuMemGetInfo, { "cuMemGetInfo_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemAlloc, { "cuMemAlloc_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemFree, { "cuMemFree_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemHostAlloc, { "cuMemHostAlloc" }, 1 },
	{ (void **)&cu.pfn_cuMemFreeHost, { "cuMemFreeHost" }, 1 },
	{ (void **)&cu.pfn_cuMemcpyHtoD, { "cuMemcpyHtoD_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemcpyDtoH, { "cuMemcpyDtoH_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemcpyDtoD, { "cuMemcpyDtoD_v2" }, 1 },
	{ (void **)&cu.pfn_cuMemsetD32, { "cuMemsetD32_v2" }, 1 },
	{ (void **)&cu.pfn_cuStreamCreate, { "cuStreamCreate" }, 1 },
	{ (void **)&cu.pfn_cuStreamDestroy, { "cuStreamDestroy_v2" }, 1 },
	{ (void **)&cu.pfn_cuStreamQuery, { "cuStreamQuery" }, 1 },
	{ (void **)&cu.pfn_cuStreamSynchronize, { "cuStreamSynchronize" }, 1 },
	{ (void **)&cu.pfn_cuStreamBeginCapture, { "cuStreamBeginCapture_v2" }, 1 },
	{ (void **)&cu.pfn_cuStreamEndCapture, { "cuStreamEndCapture" }, 1 },
	{ (void **)&cu.pfn_cuGraphInstantiateWithFlags, { "cuGraphInstantiateWithFlags" }, 1 },
	{ (void **)&cu.pfn_cuGraphLaunch, { "cuGraphLaunch" }, 1 },
	{ (void **)&cu.pfn_cuGraphExecDestroy, { "cuGraphExecDestroy" }, 1 },
	{ (void **)&cu.pfn_cuGraphDestroy, { "cuGraphDestroy" }, 1 },
	{ (void **)&cu.pfn_cuModuleLoadDataEx, { "cuModuleLoadDataEx" }, 0 },
	{ (void **)&cu.pfn_cuModuleGetFunction, { "cuModuleGetFunction" }, 0 },
	{ (void **)&cu.pfn_cuModuleUnload, { "cuModuleUnload" }, 0 },
	{ (void **)&cu.pfn_cuLaunchKernel, { "cuLaunchKernel" }, 0 },
	{ (void **)&cu.pfn_cuGetErrorString, { "cuGetErrorString" }, 1 },
	{ (void **)&cu.pfn_cuGetErrorName, { "cuGetErrorName" }, 1 },
};

/* Open the driver ($NCCLWATCH_CUDA_LIB or libcuda.so.1), resolve the table, cuInit(0). 0, or -1 with err. */
static int load(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (nw_dl_load(&libcuda, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why))) {
		if (dl.missing)
			return nw_seterr(err, errlen, "%s: the NVIDIA driver is too old for ncclwatch (CUDA 11.4 or newer "
			                 "driver needed); update the driver", why);
		return nw_seterr(err, errlen,
		                 "no NVIDIA driver: %s; on a GPU machine install the NVIDIA driver, "
		                 "or in a container run with the NVIDIA container runtime (--gpus all); "
		                 "set NCCLWATCH_CUDA_LIB to point at libcuda.so.1 elsewhere", why);
	}
	nw_strlcpy(cu.path, dl.path, sizeof(cu.path));
	nw_CUresult r = cu.pfn_cuInit(0);
	if (r != NW_CUDA_SUCCESS) {
		char b[128];
		return nw_seterr(err, errlen,
		                 "the NVIDIA driver ('%s') failed to initialise: %s; check that a GPU is visible "
		                 "(nvidia-smi), that /dev/nvidia* exist in the container, and CUDA_VISIBLE_DEVICES",
		                 cu.path, nw_cuda_strerror(&cu, r, b, sizeof(b)));
	}
	cu.pfn_cuDriverGetVersion(&cu.driver_version);
	return 0;
}

const struct nw_cu *nw_cuda_load(char *err, size_t errlen)
{
	return nw_dl_once(&once, load, NULL, err, errlen) ? NULL : &cu;
}

const char *nw_cuda_strerror(const struct nw_cu *c, nw_CUresult r, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;
	if (c && c->pfn_cuGetErrorName)
		c->pfn_cuGetErrorName(r, &name);
	if (c && c->pfn_cuGetErrorString)
		c->pfn_cuGetErrorString(r, &str);
	snprintf(buf, len, "%s (%s)", name ? name : "CUDA error", str ? str : "unknown");
	if (!name)
		snprintf(buf, len, "CUDA error %d", r);
	return buf;
}

int nw_cuda_device_info(const struct nw_cu *c, int ordinal, struct nw_cu_device *d, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	nw_CUdevice dev;
	char b[128];
	nw_CUresult r = c->pfn_cuDeviceGet(&dev, ordinal);
	if (r)
		return nw_seterr(err, errlen, "GPU %d: %s", ordinal, nw_cuda_strerror(c, r, b, sizeof(b)));
	c->pfn_cuDeviceGetName(d->name, sizeof(d->name), dev);
	int bus = 0, devid = 0, dom = 0;
	c->pfn_cuDeviceGetAttribute(&bus, NW_CU_ATTR_PCI_BUS_ID, dev);
	c->pfn_cuDeviceGetAttribute(&devid, NW_CU_ATTR_PCI_DEVICE_ID, dev);
	c->pfn_cuDeviceGetAttribute(&dom, NW_CU_ATTR_PCI_DOMAIN_ID, dev);
	snprintf(d->bus_id, sizeof(d->bus_id), "%04x:%02x:%02x.0", dom, bus, devid);
	c->pfn_cuDeviceGetAttribute(&d->cc_major, NW_CU_ATTR_CC_MAJOR, dev);
	c->pfn_cuDeviceGetAttribute(&d->cc_minor, NW_CU_ATTR_CC_MINOR, dev);
	c->pfn_cuDeviceTotalMem(&d->total_mem, dev);
	return 0;
}
