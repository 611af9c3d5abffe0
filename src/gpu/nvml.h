/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvml: what topo and doctor need from NVML (libnvidia-ml.so.1, opened with
 * dlopen, never linked), gathered into one snapshot. The snapshot is also
 * what a test or a recording replays: probe/nvml_json.h reads and writes
 * it as the JSON that scripts/gpu/record-fixtures.sh records on a GPU
 * machine, so every check runs on recorded answers.
 *
 * A value the hardware or driver does not report is absent: integers are
 * -1 (NW_NVML_ABSENT), strings "", doubles 0 with a has_ flag. Never 0.
 */
#ifndef NW_GPU_NVML_H
#define NW_GPU_NVML_H

#include <stddef.h>
#include <stdint.h>

#define NW_NVML_ABSENT (-1)
#define NW_NVML_MAX_GPUS 32
#define NW_NVML_MAX_LINKS 32

/* NVLink error counters, in NVML's order (nvmlNvLinkErrorCounter_t). */
enum { NW_NVL_ERR_REPLAY, NW_NVL_ERR_RECOVERY, NW_NVL_ERR_CRC_FLIT, NW_NVL_ERR_CRC_DATA,
       NW_NVL_NERR };

/* What is at the other end of an NVLink. */
enum nw_nvl_remote { NW_NVL_REMOTE_UNKNOWN = -1, NW_NVL_REMOTE_GPU = 0, NW_NVL_REMOTE_NPU = 1,
                     NW_NVL_REMOTE_SWITCH = 2 };

/* NVML's topology levels (nvmlGpuTopologyLevel_t). */
enum { NW_TOPO_INTERNAL = 0, NW_TOPO_SINGLE = 10, NW_TOPO_MULTIPLE = 20,
       NW_TOPO_HOSTBRIDGE = 30, NW_TOPO_NODE = 40, NW_TOPO_SYSTEM = 50 };

/* NVML's fabric registration states (NVSwitch systems). */
enum { NW_FABRIC_NOT_SUPPORTED = 0, NW_FABRIC_NOT_STARTED = 1, NW_FABRIC_IN_PROGRESS = 2,
       NW_FABRIC_COMPLETED = 3 };

struct nw_nvml_link {
	int link;                 /* link number */
	int active;               /* 1 up, 0 down, -1 absent */
	int version;              /* NVLink version, -1 absent */
	char remote_bus_id[20];   /* "0000:00:07.0", "" absent */
	int remote_type;          /* enum nw_nvl_remote */
	long long err[NW_NVL_NERR];      /* -1 absent */
	long long err_later[NW_NVL_NERR]; /* a second reading, -1 absent */
};

struct nw_nvml_gpu {
	int index;
	char name[96];
	char uuid[96];
	char bus_id[20];          /* "0000:00:06.0" (domain 4 digits, lower case) */
	int persistence;          /* 1 on, 0 off, -1 absent */
	int pcie_gen_cur, pcie_gen_max, pcie_width_cur, pcie_width_max;
	int ecc_mode;             /* 1 on, 0 off, -1 absent */
	long long ecc_uncorrected; /* volatile uncorrected count, -1 absent */
	int remap_pending, remap_failure, retired_pending; /* 0/1, -1 absent */
	int fabric_state;         /* NW_FABRIC_*, -1 absent */
	int fabric_status;        /* NVML return code of the registration, -1 absent */
	long long clock_reasons;  /* nvmlClocksEventReasons bits (why clocks are held down now), -1 absent */
	double nvlink_gbs;        /* per-link rate each way, GB/s; 0 when absent */
	int nlinks;
	struct nw_nvml_link links[NW_NVML_MAX_LINKS];
};

/* Pair answers; -1 absent. p2p_* hold nvmlGpuP2PStatus_t (0 = OK). */
struct nw_nvml_pair {
	int p2p_read, p2p_write, p2p_nvlink;
	int topo_level;           /* NW_TOPO_*, -1 absent */
};

struct nw_nvml_snap {
	int loaded;               /* NVML answered (live or replayed) */
	char lib[1024];           /* file loaded, or the recording replayed */
	char why[512];            /* when not loaded: why, in words */
	char driver[32];          /* "580.159.04" or "" */
	int cuda_driver;          /* 13000 for 13.0, -1 absent */
	char nvml_version[32];
	int ngpus;
	struct nw_nvml_gpu gpus[NW_NVML_MAX_GPUS];
	struct nw_nvml_pair pairs[NW_NVML_MAX_GPUS][NW_NVML_MAX_GPUS];
};

/*
 * Fill a fresh snapshot (caller allocates; this clears it) from the live
 * NVML. Library: $NCCLWATCH_NVML_LIB when set, else libnvidia-ml.so.1.
 * Never fails: when NVML cannot be used, loaded is 0 and why says why
 * ("libnvidia-ml.so.1 not found: ..."). snap->lib names the file loaded.
 */
void nw_nvml_snapshot(struct nw_nvml_snap *snap);

/* Re-read the NVLink error counters into err_later (live NVML only); 0 or -1. */
int nw_nvml_reread_errors(struct nw_nvml_snap *snap);

/* A snapshot with nothing loaded and why set (printf-style). */
void nw_nvml_snap_none(struct nw_nvml_snap *snap, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* An empty snapshot (caller's storage): nothing loaded, no reason given, every value absent. */
void nw_nvml_snap_init(struct nw_nvml_snap *snap);
/* A GPU (caller's storage) with this index and every value absent. */
void nw_nvml_gpu_init(struct nw_nvml_gpu *g, int index);
/*
 * Per-link NVLink rate each way, GB/s, for a GPU whose NVML gives no speed:
 * by part name ("NVIDIA H200" -> 26.5625), else by NVLink version
 * (nvmlNvlinkVersion_t); 0 when neither is known.
 */
double nw_nvlink_rate_gbs(const char *name, int version);

/* The GPU with this bus id (any case, 4- or 8-digit domain), or -1. */
int nw_nvml_find_bus(const struct nw_nvml_snap *snap, const char *bus_id);
/* Normalise a PCI bus id to "dddd:bb:dd.f" lower case; -1 when it is not one. */
int nw_pci_bus_norm(const char *in, char *out, size_t len);

#endif
