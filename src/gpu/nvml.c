/*
 * NVML through dlopen (see nvml.h). Only the entry points used are
 * declared, from NVML's documented ABI, and resolved once into static
 * pfn_ pointers from one table (gpu/dl.h), newest versioned name first.
 */
#include "gpu/nvml.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dl.h"
#include "util/util.h"

/* ---- NVML's ABI, as documented in nvml.h (only what is used) ---- */
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3

/* nvmlPciInfo_t (v2/v3 layout), with room to spare should it grow. */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
	char spare[64];
};

/* nvmlFieldValue_t */
struct nvml_field {
	unsigned field_id, scope_id;
	long long timestamp, latency_usec;
	int value_type, nvml_return;
	union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; } value;
};
#define NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON 90
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_NVLINK_MAX_LINKS 18

/* nvmlGpuFabricInfo_t (v1) and nvmlGpuFabricInfo_v2_t */
struct nvml_fabric_v1 {
	unsigned char cluster_uuid[16];
	int status;
	unsigned clique_id;
	unsigned char state;
};
struct nvml_fabric_v2 {
	unsigned version;
	unsigned char cluster_uuid[16];
	int status;
	unsigned clique_id;
	unsigned char state;
	unsigned health_mask;
};
#define NVML_FABRIC_INFO_V2 ((unsigned)(sizeof(struct nvml_fabric_v2) | (2u << 24)))

static int (*pfn_nvmlInit)(void);
static int (*pfn_nvmlShutdown)(void);
static const char *(*pfn_nvmlErrorString)(int);
static int (*pfn_nvmlSystemGetDriverVersion)(char *, unsigned);
static int (*pfn_nvmlSystemGetCudaDriverVersion)(int *);
static int (*pfn_nvmlSystemGetNVMLVersion)(char *, unsigned);
static int (*pfn_nvmlDeviceGetCount)(unsigned *);
static int (*pfn_nvmlDeviceGetHandleByIndex)(unsigned, nvmlDevice_t *);
static int (*pfn_nvmlDeviceGetName)(nvmlDevice_t, char *, unsigned);
static int (*pfn_nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned);
static int (*pfn_nvmlDeviceGetPciInfo)(nvmlDevice_t, struct nvml_pci *);
static int (*pfn_nvmlDeviceGetPersistenceMode)(nvmlDevice_t, int *);
static int (*pfn_nvmlDeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned *);
static int (*pfn_nvmlDeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned *);
static int (*pfn_nvmlDeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned *);
static int (*pfn_nvmlDeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned *);
static int (*pfn_nvmlDeviceGetEccMode)(nvmlDevice_t, int *, int *);
static int (*pfn_nvmlDeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
static int (*pfn_nvmlDeviceGetRemappedRows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *,
                                            unsigned *);
static int (*pfn_nvmlDeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, int *);
static int (*pfn_nvmlDeviceGetGpuFabricInfoV)(nvmlDevice_t, struct nvml_fabric_v2 *);
static int (*pfn_nvmlDeviceGetGpuFabricInfo)(nvmlDevice_t, struct nvml_fabric_v1 *);
static int (*pfn_nvmlDeviceGetFieldValues)(nvmlDevice_t, int, struct nvml_field *);
static int (*pfn_nvmlDeviceGetNvLinkState)(nvmlDevice_t, unsigned, int *);
static int (*pfn_nvmlDeviceGetNvLinkVersion)(nvmlDevice_t, unsigned, unsigned *);
static int (*pfn_nvmlDeviceGetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned, struct nvml_pci *);
static int (*pfn_nvmlDeviceGetNvLinkRemoteDeviceType)(nvmlDevice_t, unsigned, int *);
static int (*pfn_nvmlDeviceGetNvLinkErrorCounter)(nvmlDevice_t, unsigned, int,
                                                  unsigned long long *);
static int (*pfn_nvmlDeviceGetP2PStatus)(nvmlDevice_t, nvmlDevice_t, int, int *);
static int (*pfn_nvmlDeviceGetTopologyCommonAncestor)(nvmlDevice_t, nvmlDevice_t, int *);

/* Each pointer is tried under its names in order (newest first); the first found wins. */
static const struct nw_dl_sym syms[] = {
	{ (void **)&pfn_nvmlInit, { "nvmlInit_v2", "nvmlInit" }, 1 },
	{ (void **)&pfn_nvmlShutdown, { "nvmlShutdown" }, 1 },
	{ (void **)&pfn_nvmlErrorString, { "nvmlErrorString" }, 1 },
	{ (void **)&pfn_nvmlDeviceGetCount, { "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount" }, 1 },
	{ (void **)&pfn_nvmlDeviceGetHandleByIndex,
	  { "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex" }, 1 },
	{ (void **)&pfn_nvmlDeviceGetPciInfo,
	  { "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2" }, 1 },
	{ (void **)&pfn_nvmlSystemGetDriverVersion, { "nvmlSystemGetDriverVersion" }, 0 },
	{ (void **)&pfn_nvmlSystemGetCudaDriverVersion,
	  { "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion" }, 0 },
	{ (void **)&pfn_nvmlSystemGetNVMLVersion, { "nvmlSystemGetNVMLVersion" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetName, { "nvmlDeviceGetName" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetUUID, { "nvmlDeviceGetUUID" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetPersistenceMode, { "nvmlDeviceGetPersistenceMode" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetCurrPcieLinkGeneration,
	  { "nvmlDeviceGetCurrPcieLinkGeneration" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetMaxPcieLinkGeneration,
	  { "nvmlDeviceGetMaxPcieLinkGeneration" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetCurrPcieLinkWidth, { "nvmlDeviceGetCurrPcieLinkWidth" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetMaxPcieLinkWidth, { "nvmlDeviceGetMaxPcieLinkWidth" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetEccMode, { "nvmlDeviceGetEccMode" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetTotalEccErrors, { "nvmlDeviceGetTotalEccErrors" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetRemappedRows, { "nvmlDeviceGetRemappedRows" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetRetiredPagesPendingStatus,
	  { "nvmlDeviceGetRetiredPagesPendingStatus" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetGpuFabricInfoV, { "nvmlDeviceGetGpuFabricInfoV" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetGpuFabricInfo, { "nvmlDeviceGetGpuFabricInfo" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetFieldValues, { "nvmlDeviceGetFieldValues" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetNvLinkState, { "nvmlDeviceGetNvLinkState" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetNvLinkVersion, { "nvmlDeviceGetNvLinkVersion" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetNvLinkRemotePciInfo,
	  { "nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetNvLinkRemoteDeviceType,
	  { "nvmlDeviceGetNvLinkRemoteDeviceType" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetNvLinkErrorCounter, { "nvmlDeviceGetNvLinkErrorCounter" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetP2PStatus, { "nvmlDeviceGetP2PStatus" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetTopologyCommonAncestor,
	  { "nvmlDeviceGetTopologyCommonAncestor" }, 0 },
};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static void *nvml_handle;        /* under load_mu: set once the table is resolved */
static char nvml_lib[1024];      /* the file loaded */
static nvmlDevice_t handles[NW_NVML_MAX_GPUS];

void nw_nvml_snap_none(struct nw_nvml_snap *snap, const char *fmt, ...)
{
	memset(snap, 0, sizeof(*snap));
	snap->cuda_driver = NW_NVML_ABSENT;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(snap->why, sizeof(snap->why), fmt, ap);
	va_end(ap);
}

int nw_pci_bus_norm(const char *in, char *out, size_t len)
{
	unsigned dom = 0, bus, dev, fn;
	char extra;
	if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &extra) != 4) {
		dom = 0;
		if (sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &extra) != 3)
			return -1;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -1;
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int nw_nvml_find_bus(const struct nw_nvml_snap *snap, const char *bus_id)
{
	char want[20];
	if (nw_pci_bus_norm(bus_id, want, sizeof(want)) < 0)
		return -1;
	for (int i = 0; i < snap->ngpus; i++)
		if (!strcmp(snap->gpus[i].bus_id, want))
			return i;
	return -1;
}

static void pci_to_bus(const struct nvml_pci *p, char *out, size_t len)
{
	snprintf(out, len, "%04x:%02x:%02x.0", p->domain & 0xffff, p->bus & 0xff, p->device & 0x1f);
}

/* Per-link rate each way by NVLink version, when NVML has no speed field. */
/*
 * Per-link NVLink bandwidth, GB/s each way, when NVML does not give the
 * speed field (seen on 2xH200 VMs with driver 580.159.04: "rate unknown").
 * The GPU's generation decides first: nvmlDeviceGetNvLinkVersion answers
 * with nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1,
 * 6 = 4.0, 7 = 5.0), and is known to say 5.0 for Hopper parts.
 */
static double nvlink_rate(const char *name, int version)
{
	static const struct { const char *part; double gbs; } by_name[] = {
		{ "H100", 26.5625 }, { "H200", 26.5625 }, { "H800", 26.5625 }, { "H20", 26.5625 },
		{ "GH200", 26.5625 }, { "B100", 50.0 }, { "B200", 50.0 }, { "B300", 50.0 },
		{ "GB200", 50.0 }, { "GB300", 50.0 }, { "A100", 25.0 }, { "A800", 25.0 },
		{ "V100", 25.0 }, { "P100", 20.0 },
	};
	for (size_t i = 0; name && i < sizeof(by_name) / sizeof(by_name[0]); i++)
		if (strstr(name, by_name[i].part))
			return by_name[i].gbs;
	switch (version) {
	case 1: return 20.0;
	case 2: case 3: case 4: case 5: return 25.0;
	case 6: return 26.5625;
	case 7: return 50.0;
	default: return 0.0;
	}
}

static int field_uint(nvmlDevice_t d, unsigned id, unsigned scope, unsigned long long *out)
{
	if (!pfn_nvmlDeviceGetFieldValues)
		return -1;
	struct nvml_field f;
	memset(&f, 0, sizeof(f));
	f.field_id = id;
	f.scope_id = scope;
	if (pfn_nvmlDeviceGetFieldValues(d, 1, &f) != NVML_SUCCESS || f.nvml_return != NVML_SUCCESS)
		return -1;
	switch (f.value_type) {
	case 0: *out = (unsigned long long)f.value.d; break;
	case 1: *out = f.value.ui; break;
	case 2: *out = f.value.ul; break;
	case 3: *out = f.value.ull; break;
	case 4: *out = (unsigned long long)f.value.sll; break;
	default: return -1;
	}
	return 0;
}

static void read_link_errors(nvmlDevice_t d, struct nw_nvml_link *l, long long *dst)
{
	for (int c = 0; c < NW_NVL_NERR; c++) {
		unsigned long long v;
		dst[c] = NW_NVML_ABSENT;
		if (pfn_nvmlDeviceGetNvLinkErrorCounter &&
		    pfn_nvmlDeviceGetNvLinkErrorCounter(d, (unsigned)l->link, c, &v) == NVML_SUCCESS)
			dst[c] = (long long)v;
	}
}

static void read_links(nvmlDevice_t d, struct nw_nvml_gpu *g)
{
	unsigned long long v;
	int max = NVML_NVLINK_MAX_LINKS;
	if (field_uint(d, NVML_FI_DEV_NVLINK_LINK_COUNT, 0, &v) == 0 && v <= NW_NVML_MAX_LINKS)
		max = (int)v;
	int version = -1;
	for (int i = 0; i < max && pfn_nvmlDeviceGetNvLinkState; i++) {
		int st;
		if (pfn_nvmlDeviceGetNvLinkState(d, (unsigned)i, &st) != NVML_SUCCESS)
			continue;
		struct nw_nvml_link *l = &g->links[g->nlinks++];
		memset(l, 0, sizeof(*l));
		l->link = i;
		l->active = st ? 1 : 0;
		l->version = NW_NVML_ABSENT;
		l->remote_type = NW_NVL_REMOTE_UNKNOWN;
		unsigned ver;
		if (pfn_nvmlDeviceGetNvLinkVersion &&
		    pfn_nvmlDeviceGetNvLinkVersion(d, (unsigned)i, &ver) == NVML_SUCCESS) {
			l->version = (int)ver;
			version = (int)ver;
		}
		struct nvml_pci p;
		memset(&p, 0, sizeof(p));
		if (pfn_nvmlDeviceGetNvLinkRemotePciInfo &&
		    pfn_nvmlDeviceGetNvLinkRemotePciInfo(d, (unsigned)i, &p) == NVML_SUCCESS)
			pci_to_bus(&p, l->remote_bus_id, sizeof(l->remote_bus_id));
		int rt;
		if (pfn_nvmlDeviceGetNvLinkRemoteDeviceType &&
		    pfn_nvmlDeviceGetNvLinkRemoteDeviceType(d, (unsigned)i, &rt) == NVML_SUCCESS &&
		    rt >= 0 && rt <= 2)
			l->remote_type = rt;
		read_link_errors(d, l, l->err);
		for (int c = 0; c < NW_NVL_NERR; c++)
			l->err_later[c] = NW_NVML_ABSENT;
	}
	if (field_uint(d, NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON, 0, &v) == 0 && v > 0 && v < 10000000)
		g->nvlink_gbs = (double)v / 1000.0;
	else if (g->nlinks)
		g->nvlink_gbs = nvlink_rate(g->name, version);
}

static void read_gpu(nvmlDevice_t d, struct nw_nvml_gpu *g)
{
	unsigned u;
	int a, b;
	if (pfn_nvmlDeviceGetName)
		pfn_nvmlDeviceGetName(d, g->name, sizeof(g->name));
	if (pfn_nvmlDeviceGetUUID)
		pfn_nvmlDeviceGetUUID(d, g->uuid, sizeof(g->uuid));
	g->name[sizeof(g->name) - 1] = g->uuid[sizeof(g->uuid) - 1] = '\0';
	if (pfn_nvmlDeviceGetPersistenceMode && pfn_nvmlDeviceGetPersistenceMode(d, &a) == NVML_SUCCESS)
		g->persistence = a ? 1 : 0;
#define PCIE(fn, field) \
	if (pfn_##fn && pfn_##fn(d, &u) == NVML_SUCCESS && u < 1000) \
		g->field = (int)u;
	PCIE(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen_cur)
	PCIE(nvmlDeviceGetMaxPcieLinkGeneration, pcie_gen_max)
	PCIE(nvmlDeviceGetCurrPcieLinkWidth, pcie_width_cur)
	PCIE(nvmlDeviceGetMaxPcieLinkWidth, pcie_width_max)
#undef PCIE
	if (pfn_nvmlDeviceGetEccMode && pfn_nvmlDeviceGetEccMode(d, &a, &b) == NVML_SUCCESS)
		g->ecc_mode = a ? 1 : 0;
	unsigned long long ull;
	/* NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0 */
	if (g->ecc_mode == 1 && pfn_nvmlDeviceGetTotalEccErrors &&
	    pfn_nvmlDeviceGetTotalEccErrors(d, 1, 0, &ull) == NVML_SUCCESS)
		g->ecc_uncorrected = (long long)ull;
	unsigned corr, unc, pend, fail;
	if (pfn_nvmlDeviceGetRemappedRows &&
	    pfn_nvmlDeviceGetRemappedRows(d, &corr, &unc, &pend, &fail) == NVML_SUCCESS) {
		g->remap_pending = pend ? 1 : 0;
		g->remap_failure = fail ? 1 : 0;
	}
	if (pfn_nvmlDeviceGetRetiredPagesPendingStatus &&
	    pfn_nvmlDeviceGetRetiredPagesPendingStatus(d, &a) == NVML_SUCCESS)
		g->retired_pending = a ? 1 : 0;
	struct nvml_fabric_v2 f2;
	struct nvml_fabric_v1 f1;
	memset(&f2, 0, sizeof(f2));
	memset(&f1, 0, sizeof(f1));
	f2.version = NVML_FABRIC_INFO_V2;
	if (pfn_nvmlDeviceGetGpuFabricInfoV && pfn_nvmlDeviceGetGpuFabricInfoV(d, &f2) == NVML_SUCCESS) {
		g->fabric_state = f2.state;
		g->fabric_status = f2.status;
	} else if (pfn_nvmlDeviceGetGpuFabricInfo &&
	           pfn_nvmlDeviceGetGpuFabricInfo(d, &f1) == NVML_SUCCESS) {
		g->fabric_state = f1.state;
		g->fabric_status = f1.status;
	}
	read_links(d, g);
}

static void gpu_clear(struct nw_nvml_gpu *g, int index)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->persistence = g->pcie_gen_cur = g->pcie_gen_max = NW_NVML_ABSENT;
	g->pcie_width_cur = g->pcie_width_max = g->ecc_mode = NW_NVML_ABSENT;
	g->ecc_uncorrected = NW_NVML_ABSENT;
	g->remap_pending = g->remap_failure = g->retired_pending = NW_NVML_ABSENT;
	g->fabric_state = g->fabric_status = NW_NVML_ABSENT;
}

static void pairs_clear(struct nw_nvml_snap *s)
{
	for (int i = 0; i < NW_NVML_MAX_GPUS; i++)
		for (int j = 0; j < NW_NVML_MAX_GPUS; j++) {
			struct nw_nvml_pair *p = &s->pairs[i][j];
			p->p2p_read = p->p2p_write = p->p2p_nvlink = p->topo_level = NW_NVML_ABSENT;
		}
}

/* dlopen the library ($NCCLWATCH_NVML_LIB or libnvidia-ml.so.1) and resolve the table; 0, or -1 with snap->why set. */
static int open_nvml(struct nw_nvml_snap *snap)
{
	const char *env = getenv("NCCLWATCH_NVML_LIB");
	const char *name = env && *env ? env : "libnvidia-ml.so.1";
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		if (!e || strstr(e, "cannot open shared object file"))
			nw_nvml_snap_none(snap, "no NVIDIA driver (%s not found)", name);
		else
			nw_nvml_snap_none(snap, "no NVIDIA driver (%s: %s)", name, e);
		return -1;
	}
	const struct nw_dl_sym *miss = nw_dl_resolve(h, syms, NW_ARRAY_LEN(syms));
	if (miss) {
		nw_nvml_snap_none(snap, "'%s' lacks '%s': the NVIDIA driver is too old or not NVML", name, miss->names[0]);
		dlclose(h);
		return -1;
	}
	/* Say which file was loaded: the path of any resolved symbol's object. */
	nw_dl_path(*syms[0].pfn, name, nvml_lib, sizeof(nvml_lib));
	nvml_handle = h;
	return 0;
}

/* Load NVML once (a failure is tried again next time); 0 with snap->lib set, or -1 with snap->why. */
static int load(struct nw_nvml_snap *snap)
{
	int rc = 0;
	pthread_mutex_lock(&load_mu);
	if (!nvml_handle)
		rc = open_nvml(snap);
	pthread_mutex_unlock(&load_mu);
	if (!rc)
		nw_strlcpy(snap->lib, nvml_lib, sizeof(snap->lib));
	return rc;
}

void nw_nvml_snapshot(struct nw_nvml_snap *snap)
{
	nw_nvml_snap_none(snap, "%s", "");
	pairs_clear(snap);
	if (load(snap) < 0) {
		pairs_clear(snap);
		return;
	}
	char lib[sizeof(snap->lib)];
	nw_strlcpy(lib, snap->lib, sizeof(lib));
	int rc = pfn_nvmlInit();
	if (rc != NVML_SUCCESS) {
		nw_nvml_snap_none(snap, "NVML in '%s' did not start: %s", lib, pfn_nvmlErrorString(rc));
		pairs_clear(snap);
		return;
	}
	nw_strlcpy(snap->lib, lib, sizeof(snap->lib));
	snap->loaded = 1;
	if (pfn_nvmlSystemGetDriverVersion)
		pfn_nvmlSystemGetDriverVersion(snap->driver, sizeof(snap->driver));
	int cv;
	if (pfn_nvmlSystemGetCudaDriverVersion && pfn_nvmlSystemGetCudaDriverVersion(&cv) == NVML_SUCCESS)
		snap->cuda_driver = cv;
	if (pfn_nvmlSystemGetNVMLVersion)
		pfn_nvmlSystemGetNVMLVersion(snap->nvml_version, sizeof(snap->nvml_version));
	unsigned n = 0;
	if (pfn_nvmlDeviceGetCount(&n) != NVML_SUCCESS)
		n = 0;
	if (n > NW_NVML_MAX_GPUS)
		n = NW_NVML_MAX_GPUS;
	for (unsigned i = 0; i < n; i++) {
		struct nw_nvml_gpu *g = &snap->gpus[snap->ngpus];
		nvmlDevice_t d;
		if (pfn_nvmlDeviceGetHandleByIndex(i, &d) != NVML_SUCCESS)
			continue;
		gpu_clear(g, (int)i);
		struct nvml_pci p;
		memset(&p, 0, sizeof(p));
		if (pfn_nvmlDeviceGetPciInfo(d, &p) == NVML_SUCCESS)
			pci_to_bus(&p, g->bus_id, sizeof(g->bus_id));
		read_gpu(d, g);
		handles[snap->ngpus++] = d;
	}
	for (int i = 0; i < snap->ngpus; i++)
		for (int j = 0; j < snap->ngpus; j++) {
			if (i == j)
				continue;
			struct nw_nvml_pair *pr = &snap->pairs[i][j];
			int st;
			if (pfn_nvmlDeviceGetP2PStatus) {
				if (pfn_nvmlDeviceGetP2PStatus(handles[i], handles[j], 0, &st) == NVML_SUCCESS)
					pr->p2p_read = st;
				if (pfn_nvmlDeviceGetP2PStatus(handles[i], handles[j], 1, &st) == NVML_SUCCESS)
					pr->p2p_write = st;
				if (pfn_nvmlDeviceGetP2PStatus(handles[i], handles[j], 2, &st) == NVML_SUCCESS)
					pr->p2p_nvlink = st;
			}
			if (pfn_nvmlDeviceGetTopologyCommonAncestor &&
			    pfn_nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j], &st) == NVML_SUCCESS)
				pr->topo_level = st;
		}
	/* NVML stays initialised for nw_nvml_reread_errors; the process exit ends it. */
}

int nw_nvml_reread_errors(struct nw_nvml_snap *snap)
{
	if (!nvml_handle || !snap->loaded || strstr(snap->lib, ".json"))
		return -1;
	for (int i = 0; i < snap->ngpus; i++)
		for (int k = 0; k < snap->gpus[i].nlinks; k++)
			read_link_errors(handles[i], &snap->gpus[i].links[k], snap->gpus[i].links[k].err_later);
	return 0;
}

/* ---- JSON ---- */

static void set_int(json_t *o, const char *k, long long v)
{
	if (v != NW_NVML_ABSENT)
		json_object_set_new(o, k, json_integer(v));
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v && *v)
		json_object_set_new(o, k, json_string(v));
}

static const char *err_names[NW_NVL_NERR] = { "replay", "recovery", "crc_flit", "crc_data" };

json_t *nw_nvml_snap_to_json(const struct nw_nvml_snap *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "schema", json_string("ncclwatch.nvml/1"));
	json_object_set_new(o, "loaded", json_boolean(s->loaded));
	set_str(o, "lib", s->lib);
	set_str(o, "why", s->why);
	set_str(o, "driver", s->driver);
	set_int(o, "cuda_driver", s->cuda_driver);
	set_str(o, "nvml_version", s->nvml_version);
	json_t *gpus = json_array();
	for (int i = 0; i < s->ngpus; i++) {
		const struct nw_nvml_gpu *g = &s->gpus[i];
		json_t *j = json_object();
		json_object_set_new(j, "index", json_integer(g->index));
		set_str(j, "name", g->name);
		set_str(j, "uuid", g->uuid);
		set_str(j, "bus_id", g->bus_id);
		set_int(j, "persistence", g->persistence);
		json_t *pcie = json_object();
		set_int(pcie, "gen_cur", g->pcie_gen_cur);
		set_int(pcie, "gen_max", g->pcie_gen_max);
		set_int(pcie, "width_cur", g->pcie_width_cur);
		set_int(pcie, "width_max", g->pcie_width_max);
		json_object_set_new(j, "pcie", pcie);
		json_t *ecc = json_object();
		set_int(ecc, "mode", g->ecc_mode);
		set_int(ecc, "uncorrected_volatile", g->ecc_uncorrected);
		set_int(ecc, "remap_pending", g->remap_pending);
		set_int(ecc, "remap_failure", g->remap_failure);
		set_int(ecc, "retired_pending", g->retired_pending);
		json_object_set_new(j, "ecc", ecc);
		json_t *fab = json_object();
		set_int(fab, "state", g->fabric_state);
		set_int(fab, "status", g->fabric_status);
		json_object_set_new(j, "fabric", fab);
		json_t *nvl = json_object();
		if (g->nvlink_gbs > 0)
			json_object_set_new(nvl, "speed_mbps", json_integer((long long)(g->nvlink_gbs * 1000.0 + 0.5)));
		json_t *links = json_array();
		for (int k = 0; k < g->nlinks; k++) {
			const struct nw_nvml_link *l = &g->links[k];
			json_t *lj = json_object();
			json_object_set_new(lj, "link", json_integer(l->link));
			set_int(lj, "active", l->active);
			set_int(lj, "version", l->version);
			set_str(lj, "remote_bus_id", l->remote_bus_id);
			set_int(lj, "remote_type", l->remote_type);
			json_t *e = json_object(), *e2 = json_object();
			for (int c = 0; c < NW_NVL_NERR; c++) {
				set_int(e, err_names[c], l->err[c]);
				set_int(e2, err_names[c], l->err_later[c]);
			}
			json_object_set_new(lj, "errors", e);
			if (json_object_size(e2))
				json_object_set_new(lj, "errors_later", e2);
			else
				json_decref(e2);
			json_array_append_new(links, lj);
		}
		json_object_set_new(nvl, "links", links);
		json_object_set_new(j, "nvlink", nvl);
		json_array_append_new(gpus, j);
	}
	json_object_set_new(o, "gpus", gpus);
	json_t *pairs = json_array();
	for (int i = 0; i < s->ngpus; i++)
		for (int k = 0; k < s->ngpus; k++) {
			if (i == k)
				continue;
			const struct nw_nvml_pair *p = &s->pairs[i][k];
			json_t *pj = json_object();
			json_object_set_new(pj, "a", json_integer(i));
			json_object_set_new(pj, "b", json_integer(k));
			set_int(pj, "p2p_read", p->p2p_read);
			set_int(pj, "p2p_write", p->p2p_write);
			set_int(pj, "p2p_nvlink", p->p2p_nvlink);
			set_int(pj, "topo_level", p->topo_level);
			json_array_append_new(pairs, pj);
		}
	json_object_set_new(o, "pairs", pairs);
	return o;
}

/* An integer member, or the absent value; -1 (err set) when of the wrong type. */
static int get_int(const json_t *o, const char *k, long long *out, char *err, size_t errlen)
{
	json_t *v = o ? json_object_get(o, k) : NULL;
	*out = NW_NVML_ABSENT;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (!json_is_integer(v))
		return nw_seterr(err, errlen, "'%s' must be an integer", k);
	*out = json_integer_value(v);
	return 0;
}

static int get_i(const json_t *o, const char *k, int *out, char *err, size_t errlen)
{
	long long v;
	if (get_int(o, k, &v, err, errlen) < 0)
		return -1;
	if (v != NW_NVML_ABSENT && (v < -1 || v > 0x7fffffff))
		return nw_seterr(err, errlen, "'%s' is out of range", k);
	*out = (int)v;
	return 0;
}

static void get_str(const json_t *o, const char *k, char *out, size_t len)
{
	json_t *v = json_object_get(o, k);
	if (json_is_string(v))
		nw_strlcpy(out, json_string_value(v), len);
}

static int gpu_from_json(const json_t *j, struct nw_nvml_gpu *g, int idx, char *err, size_t errlen)
{
	gpu_clear(g, idx);
	if (!json_is_object(j))
		return nw_seterr(err, errlen, "gpus[%d] is not an object", idx);
	int index;
	if (get_i(j, "index", &index, err, errlen) < 0)
		return -1;
	if (index != NW_NVML_ABSENT)
		g->index = index;
	get_str(j, "name", g->name, sizeof(g->name));
	get_str(j, "uuid", g->uuid, sizeof(g->uuid));
	char bus[64] = "";
	get_str(j, "bus_id", bus, sizeof(bus));
	if (bus[0] && nw_pci_bus_norm(bus, g->bus_id, sizeof(g->bus_id)) < 0)
		return nw_seterr(err, errlen, "gpus[%d]: '%s' is not a PCI bus id", idx, bus);
	json_t *pcie = json_object_get(j, "pcie"), *ecc = json_object_get(j, "ecc");
	json_t *fab = json_object_get(j, "fabric"), *nvl = json_object_get(j, "nvlink");
	if (get_i(j, "persistence", &g->persistence, err, errlen) < 0 ||
	    get_i(pcie, "gen_cur", &g->pcie_gen_cur, err, errlen) < 0 ||
	    get_i(pcie, "gen_max", &g->pcie_gen_max, err, errlen) < 0 ||
	    get_i(pcie, "width_cur", &g->pcie_width_cur, err, errlen) < 0 ||
	    get_i(pcie, "width_max", &g->pcie_width_max, err, errlen) < 0 ||
	    get_i(ecc, "mode", &g->ecc_mode, err, errlen) < 0 ||
	    get_int(ecc, "uncorrected_volatile", &g->ecc_uncorrected, err, errlen) < 0 ||
	    get_i(ecc, "remap_pending", &g->remap_pending, err, errlen) < 0 ||
	    get_i(ecc, "remap_failure", &g->remap_failure, err, errlen) < 0 ||
	    get_i(ecc, "retired_pending", &g->retired_pending, err, errlen) < 0 ||
	    get_i(fab, "state", &g->fabric_state, err, errlen) < 0 ||
	    get_i(fab, "status", &g->fabric_status, err, errlen) < 0)
		return -1;
	long long mbps;
	if (get_int(nvl, "speed_mbps", &mbps, err, errlen) < 0)
		return -1;
	if (mbps > 0)
		g->nvlink_gbs = (double)mbps / 1000.0;
	json_t *links = json_object_get(nvl, "links");
	int replay_rate_unknown = mbps <= 0;
	if (links && !json_is_array(links))
		return nw_seterr(err, errlen, "gpus[%d].nvlink.links is not an array", idx);
	size_t n = json_array_size(links);
	if (n > NW_NVML_MAX_LINKS)
		return nw_seterr(err, errlen, "gpus[%d] has %zu NVLinks; at most %d are supported", idx, n,
		                 NW_NVML_MAX_LINKS);
	for (size_t k = 0; k < n; k++) {
		json_t *lj = json_array_get(links, k);
		struct nw_nvml_link *l = &g->links[g->nlinks++];
		memset(l, 0, sizeof(*l));
		if (!json_is_object(lj))
			return nw_seterr(err, errlen, "gpus[%d] link %zu is not an object", idx, k);
		int link;
		if (get_i(lj, "link", &link, err, errlen) < 0 || get_i(lj, "active", &l->active, err, errlen) < 0 ||
		    get_i(lj, "version", &l->version, err, errlen) < 0 ||
		    get_i(lj, "remote_type", &l->remote_type, err, errlen) < 0)
			return -1;
		l->link = link == NW_NVML_ABSENT ? (int)k : link;
		char rb[64] = "";
		get_str(lj, "remote_bus_id", rb, sizeof(rb));
		if (rb[0] && nw_pci_bus_norm(rb, l->remote_bus_id, sizeof(l->remote_bus_id)) < 0)
			return nw_seterr(err, errlen, "gpus[%d] link %d: '%s' is not a PCI bus id", idx, l->link, rb);
		json_t *e = json_object_get(lj, "errors"), *e2 = json_object_get(lj, "errors_later");
		for (int c = 0; c < NW_NVL_NERR; c++)
			if (get_int(e, err_names[c], &l->err[c], err, errlen) < 0 ||
			    get_int(e2, err_names[c], &l->err_later[c], err, errlen) < 0)
				return -1;
	}
	if (replay_rate_unknown && g->nlinks)
		g->nvlink_gbs = nvlink_rate(g->name, g->links[0].version);
	return 0;
}

int nw_nvml_snap_from_json(const json_t *doc, struct nw_nvml_snap *s, char *err, size_t errlen)
{
	nw_nvml_snap_none(s, "%s", "");
	pairs_clear(s);
	if (!json_is_object(doc))
		return nw_seterr(err, errlen, "an NVML recording must be a JSON object");
	json_t *sch = json_object_get(doc, "schema");
	if (!json_is_string(sch) || strcmp(json_string_value(sch), "ncclwatch.nvml/1"))
		return nw_seterr(err, errlen, "not an NVML recording (\"schema\" is not \"ncclwatch.nvml/1\")");
	json_t *loaded = json_object_get(doc, "loaded");
	s->loaded = loaded ? json_is_true(loaded) : 1;
	get_str(doc, "lib", s->lib, sizeof(s->lib));
	get_str(doc, "why", s->why, sizeof(s->why));
	get_str(doc, "driver", s->driver, sizeof(s->driver));
	get_str(doc, "nvml_version", s->nvml_version, sizeof(s->nvml_version));
	if (get_i(doc, "cuda_driver", &s->cuda_driver, err, errlen) < 0)
		return -1;
	json_t *gpus = json_object_get(doc, "gpus");
	if (gpus && !json_is_array(gpus))
		return nw_seterr(err, errlen, "\"gpus\" must be an array");
	if (json_array_size(gpus) > NW_NVML_MAX_GPUS)
		return nw_seterr(err, errlen, "%zu GPUs recorded; at most %d are supported",
		                 json_array_size(gpus), NW_NVML_MAX_GPUS);
	for (size_t i = 0; i < json_array_size(gpus); i++) {
		if (gpu_from_json(json_array_get(gpus, i), &s->gpus[i], (int)i, err, errlen) < 0)
			return -1;
		s->ngpus++;
	}
	json_t *pairs = json_object_get(doc, "pairs");
	if (pairs && !json_is_array(pairs))
		return nw_seterr(err, errlen, "\"pairs\" must be an array");
	for (size_t k = 0; k < json_array_size(pairs); k++) {
		json_t *pj = json_array_get(pairs, k);
		int a, b;
		if (get_i(pj, "a", &a, err, errlen) < 0 || get_i(pj, "b", &b, err, errlen) < 0)
			return -1;
		if (a < 0 || b < 0 || a >= s->ngpus || b >= s->ngpus || a == b)
			return nw_seterr(err, errlen, "pairs[%zu] names GPUs %d and %d of %d", k, a, b, s->ngpus);
		struct nw_nvml_pair *p = &s->pairs[a][b];
		if (get_i(pj, "p2p_read", &p->p2p_read, err, errlen) < 0 ||
		    get_i(pj, "p2p_write", &p->p2p_write, err, errlen) < 0 ||
		    get_i(pj, "p2p_nvlink", &p->p2p_nvlink, err, errlen) < 0 ||
		    get_i(pj, "topo_level", &p->topo_level, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int nw_nvml_snap_load(const char *path, struct nw_nvml_snap *s, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return nw_seterr(err, errlen, "cannot read NVML recording '%s': %s (line %d)", path, je.text,
		                 je.line);
	char e2[NW_ERRLEN];
	int rc = nw_nvml_snap_from_json(doc, s, e2, sizeof(e2));
	json_decref(doc);
	if (rc < 0)
		return nw_seterr(err, errlen, "NVML recording '%s': %s", path, e2);
	if (!s->lib[0] || s->loaded)
		snprintf(s->lib, sizeof(s->lib), "%s (replayed)", path);
	return 0;
}
