/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML through dlopen (see nvml.h). Only the entry points used are
 * declared, from NVML's documented ABI, and resolved once into static
 * pfn_ pointers from one table (util/dl.h), newest versioned name first.
 */
#include "gpu/nvml.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dl.h"
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
static int (*pfn_nvmlDeviceGetClocksEventReasons)(nvmlDevice_t, unsigned long long *);
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
	{ (void **)&pfn_nvmlDeviceGetClocksEventReasons,
	  { "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetP2PStatus, { "nvmlDeviceGetP2PStatus" }, 0 },
	{ (void **)&pfn_nvmlDeviceGetTopologyCommonAncestor,
	  { "nvmlDeviceGetTopologyCommonAncestor" }, 0 },
};

static struct nw_dl_once once = NW_DL_ONCE_INIT; /* the table is resolved */
static const struct nw_dl_lib libnvml = { "NCCLWATCH_NVML_LIB", { "libnvidia-ml.so.1" }, 0 };
static char nvml_lib[1024];      /* under once: the file loaded, "" until loaded */
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

/*
 * Per-link NVLink bandwidth, GB/s each way, when NVML does not give the
 * speed field (seen on 2xH200 VMs with driver 580.159.04: "rate unknown").
 * The GPU's part name decides first; else nvmlDeviceGetNvLinkVersion's
 * answer, nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1,
 * 6 = 4.0, 7 = 5.0), which is known to say 5.0 for Hopper parts.
 */
double nw_nvlink_rate_gbs(const char *name, int version)
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
		g->nvlink_gbs = nw_nvlink_rate_gbs(g->name, version);
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
	if (pfn_nvmlDeviceGetClocksEventReasons && pfn_nvmlDeviceGetClocksEventReasons(d, &ull) == NVML_SUCCESS)
		g->clock_reasons = (long long)(ull & 0x7fffffffffffffffULL);
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

void nw_nvml_gpu_init(struct nw_nvml_gpu *g, int index)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->persistence = g->pcie_gen_cur = g->pcie_gen_max = NW_NVML_ABSENT;
	g->pcie_width_cur = g->pcie_width_max = g->ecc_mode = NW_NVML_ABSENT;
	g->ecc_uncorrected = NW_NVML_ABSENT;
	g->remap_pending = g->remap_failure = g->retired_pending = NW_NVML_ABSENT;
	g->fabric_state = g->fabric_status = NW_NVML_ABSENT;
	g->clock_reasons = NW_NVML_ABSENT;
}

/* Every pair answer absent. */
static void pairs_clear(struct nw_nvml_snap *s)
{
	for (int i = 0; i < NW_NVML_MAX_GPUS; i++)
		for (int j = 0; j < NW_NVML_MAX_GPUS; j++) {
			struct nw_nvml_pair *p = &s->pairs[i][j];
			p->p2p_read = p->p2p_write = p->p2p_nvlink = p->topo_level = NW_NVML_ABSENT;
		}
}

void nw_nvml_snap_init(struct nw_nvml_snap *snap)
{
	nw_nvml_snap_none(snap, "%s", "");
	pairs_clear(snap);
}

/* Open the library ($NCCLWATCH_NVML_LIB or libnvidia-ml.so.1) and resolve the table; 0, or -1 with err. */
static int open_nvml(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (nw_dl_load(&libnvml, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why))) {
		if (dl.missing)
			return nw_seterr(err, errlen, "%s: the NVIDIA driver is too old or not NVML", why);
		if (strstr(dl.why, "cannot open shared object file"))
			return nw_seterr(err, errlen, "no NVIDIA driver (%s not found)", dl.file);
		return nw_seterr(err, errlen, "no NVIDIA driver (%s: %s)", dl.file, dl.why);
	}
	nw_strlcpy(nvml_lib, dl.path, sizeof(nvml_lib));
	return 0;
}

/* Load NVML once (a failure is tried again next time); 0 with snap->lib set, or -1 with snap->why. */
static int load(struct nw_nvml_snap *snap)
{
	char err[NW_ERRLEN];
	if (nw_dl_once(&once, open_nvml, NULL, err, sizeof(err))) {
		nw_nvml_snap_none(snap, "%s", err);
		return -1;
	}
	nw_strlcpy(snap->lib, nvml_lib, sizeof(snap->lib));
	return 0;
}

/* Peer-to-peer status (read, write, NVLink) and the common ancestor of every ordered pair of GPUs. */
static void read_pairs(struct nw_nvml_snap *snap)
{
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
}

void nw_nvml_snapshot(struct nw_nvml_snap *snap)
{
	nw_nvml_snap_init(snap);
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
		nw_nvml_gpu_init(g, (int)i);
		struct nvml_pci p;
		memset(&p, 0, sizeof(p));
		if (pfn_nvmlDeviceGetPciInfo(d, &p) == NVML_SUCCESS)
			pci_to_bus(&p, g->bus_id, sizeof(g->bus_id));
		read_gpu(d, g);
		handles[snap->ngpus++] = d;
	}
	read_pairs(snap);
	/* NVML stays initialised for nw_nvml_reread_errors; the process exit ends it. */
}

int nw_nvml_reread_errors(struct nw_nvml_snap *snap)
{
	if (!nvml_lib[0] || !snap->loaded || strstr(snap->lib, ".json"))
		return -1;
	for (int i = 0; i < snap->ngpus; i++)
		for (int k = 0; k < snap->gpus[i].nlinks; k++)
			read_link_errors(handles[i], &snap->gpus[i].links[k], snap->gpus[i].links[k].err_later);
	return 0;
}
