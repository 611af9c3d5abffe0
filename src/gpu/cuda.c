#include "gpu/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static struct nw_cu cu;
static int loaded;
static char load_err[NW_ERRLEN];
static pthread_once_t once = PTHREAD_ONCE_INIT;

struct sym {
	void **pfn;
	const char *name;
};

/* Open the driver once; later calls return the same answer. */
static void load(void)
{
	const char *path = getenv("NCCLWATCH_CUDA_LIB");
	if (!path || !*path)
		path = "libcuda.so.1";
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_err, sizeof(load_err),
		         "no NVIDIA driver: cannot open '%s' (%s); on a GPU machine install the NVIDIA driver, "
		         "or in a container run with the NVIDIA container runtime (--gpus all); "
		         "set NCCLWATCH_CUDA_LIB to point at libcuda.so.1 elsewhere",
		         path, dlerror());
		return;
	}
	const struct sym syms[] = {
		{ (void **)&cu.Init, "cuInit" },
		{ (void **)&cu.DriverGetVersion, "cuDriverGetVersion" },
		{ (void **)&cu.DeviceGetCount, "cuDeviceGetCount" },
		{ (void **)&cu.DeviceGet, "cuDeviceGet" },
		{ (void **)&cu.DeviceGetName, "cuDeviceGetName" },
		{ (void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute" },
		{ (void **)&cu.DeviceTotalMem, "cuDeviceTotalMem_v2" },
		{ (void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
		{ (void **)&cu.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2" },
		{ (void **)&cu.CtxSetCurrent, "cuCtxSetCurrent" },
		{ (void **)&cu.CtxSynchronize, "cuCtxSynchronize" },
		{ (void **)&cu.MemGetInfo, "cuMemGetInfo_v2" },
		{ (void **)&cu.MemAlloc, "cuMemAlloc_v2" },
		{ (void **)&cu.MemFree, "cuMemFree_v2" },
		{ (void **)&cu.MemHostAlloc, "cuMemHostAlloc" },
		{ (void **)&cu.MemFreeHost, "cuMemFreeHost" },
		{ (void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2" },
		{ (void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2" },
		{ (void **)&cu.MemcpyDtoD, "cuMemcpyDtoD_v2" },
		{ (void **)&cu.MemsetD32, "cuMemsetD32_v2" },
		{ (void **)&cu.StreamCreate, "cuStreamCreate" },
		{ (void **)&cu.StreamDestroy, "cuStreamDestroy_v2" },
		{ (void **)&cu.StreamQuery, "cuStreamQuery" },
		{ (void **)&cu.StreamSynchronize, "cuStreamSynchronize" },
		{ (void **)&cu.StreamBeginCapture, "cuStreamBeginCapture_v2" },
		{ (void **)&cu.StreamEndCapture, "cuStreamEndCapture" },
		{ (void **)&cu.GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags" },
		{ (void **)&cu.GraphLaunch, "cuGraphLaunch" },
		{ (void **)&cu.GraphExecDestroy, "cuGraphExecDestroy" },
		{ (void **)&cu.GraphDestroy, "cuGraphDestroy" },
		{ (void **)&cu.GetErrorString, "cuGetErrorString" },
		{ (void **)&cu.GetErrorName, "cuGetErrorName" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(syms); i++) {
		*syms[i].pfn = dlsym(h, syms[i].name);
		if (!*syms[i].pfn) {
			snprintf(load_err, sizeof(load_err),
			         "the NVIDIA driver at '%s' lacks %s: it is too old for ncclwatch "
			         "(CUDA 11.4 or newer driver needed); update the driver", path, syms[i].name);
			dlclose(h);
			return;
		}
	}
	Dl_info info;
	if (dladdr((void *)cu.Init, &info) && info.dli_fname)
		nw_strlcpy(cu.path, info.dli_fname, sizeof(cu.path));
	else
		nw_strlcpy(cu.path, path, sizeof(cu.path));
	nw_CUresult r = cu.Init(0);
	if (r != NW_CUDA_SUCCESS) {
		char b[128];
		snprintf(load_err, sizeof(load_err),
		         "the NVIDIA driver ('%s') failed to initialise: %s; check that a GPU is visible "
		         "(nvidia-smi), that /dev/nvidia* exist in the container, and CUDA_VISIBLE_DEVICES",
		         cu.path, nw_cuda_strerror(&cu, r, b, sizeof(b)));
		return;
	}
	cu.DriverGetVersion(&cu.driver_version);
	loaded = 1;
}

const struct nw_cu *nw_cuda_load(char *err, size_t errlen)
{
	pthread_once(&once, load);
	if (!loaded) {
		nw_seterr(err, errlen, "%s", load_err);
		return NULL;
	}
	return &cu;
}

const char *nw_cuda_strerror(const struct nw_cu *c, nw_CUresult r, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;
	if (c && c->GetErrorName)
		c->GetErrorName(r, &name);
	if (c && c->GetErrorString)
		c->GetErrorString(r, &str);
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
	nw_CUresult r = c->DeviceGet(&dev, ordinal);
	if (r)
		return nw_seterr(err, errlen, "GPU %d: %s", ordinal, nw_cuda_strerror(c, r, b, sizeof(b)));
	c->DeviceGetName(d->name, sizeof(d->name), dev);
	int bus = 0, devid = 0, dom = 0;
	c->DeviceGetAttribute(&bus, NW_CU_ATTR_PCI_BUS_ID, dev);
	c->DeviceGetAttribute(&devid, NW_CU_ATTR_PCI_DEVICE_ID, dev);
	c->DeviceGetAttribute(&dom, NW_CU_ATTR_PCI_DOMAIN_ID, dev);
	snprintf(d->bus_id, sizeof(d->bus_id), "%04x:%02x:%02x.0", dom, bus, devid);
	c->DeviceGetAttribute(&d->cc_major, NW_CU_ATTR_CC_MAJOR, dev);
	c->DeviceGetAttribute(&d->cc_minor, NW_CU_ATTR_CC_MINOR, dev);
	c->DeviceTotalMem(&d->total_mem, dev);
	return 0;
}
