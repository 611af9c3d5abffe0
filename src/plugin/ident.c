/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ident: who runs a rank, for its stats file (struct nws_ident): the GPU it
 * drives, read from the CUDA driver the process already loaded (never
 * loading one), the job identifiers a scheduler puts in the environment,
 * and the writer's PID namespace, so that a reader in another namespace
 * knows the pid means nothing to it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/nwp.h"

/* The two driver entry points used (CUDA driver API, cuda.h). */
typedef int (*cu_ctx_get_device_fn)(int *dev);
typedef int (*cu_device_get_uuid_fn)(unsigned char uuid[16], int dev);

/* Copy the environment variable name into dst (len bytes, NUL-padded); "" when unset. */
static void env_copy(char *dst, size_t len, const char *name)
{
	const char *v = getenv(name);
	size_t i = 0;
	if (v)
		for (; i + 1 < len && v[i]; i++)
			dst[i] = v[i];
	memset(dst + i, 0, len - i);
}

/*
 * Map a device ordinal through a visible-devices list (CUDA_VISIBLE_DEVICES
 * or NVIDIA_VISIBLE_DEVICES): unset, empty or "all" leave it; a list of
 * whole numbers picks its ordinal-th entry; anything else (UUIDs, MIG
 * names, "none") makes the index unknown (-1): the UUID still names the GPU.
 */
static int map_visible(int ordinal, const char *list)
{
	if (ordinal < 0 || !list || !*list || !strcmp(list, "all"))
		return ordinal;
	const char *p = list;
	for (int i = 0;; i++) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 0 || v > 4096 || (*end && *end != ','))
			return -1;
		if (i == ordinal)
			return (int)v;
		if (!*end)
			return -1;
		p = end + 1;
	}
}

/* The CUDA driver this process already loaded (libcuda.so.1, or NCCLWATCH_CUDA_LIB); NULL when none. */
static void *loaded_cuda(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	const char *alt = getenv("NCCLWATCH_CUDA_LIB");
	if (!h && alt && *alt)
		h = dlopen(alt, RTLD_LAZY | RTLD_NOLOAD);
	return h;
}

/* GPU index and UUID of the calling thread's current CUDA context, when the driver is loaded and a context is current (else left unset). */
static void gpu_ident(struct nws_ident *id)
{
	void *h = loaded_cuda();
	if (!h)
		return;
	cu_ctx_get_device_fn get_dev;
	cu_device_get_uuid_fn get_uuid;
	*(void **)(void *)&get_dev = dlsym(h, "cuCtxGetDevice");
	*(void **)(void *)&get_uuid = dlsym(h, "cuDeviceGetUuid_v2");
	if (!get_uuid)
		*(void **)(void *)&get_uuid = dlsym(h, "cuDeviceGetUuid");
	int dev = -1;
	if (get_dev && get_dev(&dev) == 0 && dev >= 0) {
		id->gpu = map_visible(map_visible(dev, getenv("CUDA_VISIBLE_DEVICES")), getenv("NVIDIA_VISIBLE_DEVICES"));
		if (id->gpu >= 0)
			id->flags |= NWS_IDENT_GPU;
		unsigned char u[16];
		if (get_uuid && get_uuid(u, dev) == 0)
			snprintf(id->uuid, sizeof(id->uuid),
			         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
			         u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	dlclose(h);
}

void nwp_ident_fill(struct nws_ident *id)
{
	memset(id, 0, sizeof(*id));
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) == 0)
		id->pidns = (uint64_t)st.st_ino;
	gpu_ident(id);
	env_copy(id->pod, sizeof(id->pod), "POD_NAME");
	env_copy(id->pod_namespace, sizeof(id->pod_namespace), "POD_NAMESPACE");
	env_copy(id->container, sizeof(id->container), "CONTAINER_NAME");
	env_copy(id->slurm_job, sizeof(id->slurm_job), "SLURM_JOB_ID");
	env_copy(id->torchelastic, sizeof(id->torchelastic), "TORCHELASTIC_RUN_ID");
	env_copy(id->job, sizeof(id->job), "NCCLWATCH_JOB");
}
