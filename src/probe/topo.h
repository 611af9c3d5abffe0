/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo: what is connected to what. GPUs (from NVML when it answers, else
 * from the PCI tree), the path class of every GPU pair with nvidia-smi's
 * meaning, NVLink counts and rates, peer-to-peer status, and the NICs
 * (InfiniBand, RoCE, Ethernet) with state, rate, NUMA node and nearest
 * GPUs. Every file read goes through a root prefix (probe/sysfs.h).
 */
#ifndef NW_PROBE_TOPO_H
#define NW_PROBE_TOPO_H

#include <stddef.h>

#include <jansson.h>

#include "gpu/nvml.h"
#include "probe/nvml_json.h" /* the recordings nw_probe_nvml replays, and their JSON */

/* Path classes, best first, as `nvidia-smi topo -m` names them. */
enum nw_path {
	NW_PATH_SELF,     /* X */
	NW_PATH_NVL,      /* NV#: a bonded set of # NVLinks (direct or through NVSwitch) */
	NW_PATH_PIX,      /* at most a single PCIe bridge */
	NW_PATH_PXB,      /* multiple PCIe bridges, no host bridge */
	NW_PATH_PHB,      /* a PCIe host bridge (typically the CPU) */
	NW_PATH_NODE,     /* between PCIe host bridges within a NUMA node */
	NW_PATH_SYS,      /* the SMP interconnect between NUMA nodes */
	NW_PATH_UNKNOWN
};

#define NW_TOPO_MAX_NICS 64

struct nw_topo_gpu {
	int index;                /* NVML index (or order on the PCI bus without NVML) */
	char bus_id[20];          /* "0000:00:06.0" */
	char model[96];           /* "NVIDIA H200", or "NVIDIA 10de:2335" without NVML */
	char uuid[96];
	char pci_path[512];       /* resolved sysfs path, "" when not in the tree */
	int numa;                 /* -1 unknown */
	char cpus[256];           /* local CPU list, "" unknown */
	int gen_cur, gen_max, width_cur, width_max; /* PCIe, -1 unknown */
	double pcie_gbs;          /* max PCIe bandwidth each way, GB/s; 0 unknown */
	int nvlinks_active, nvlinks_total;
	int nvlinks_to_switch;    /* active links whose far end is an NVSwitch */
	double nvlink_gbs;        /* per-link rate each way; 0 unknown */
};

struct nw_topo_pair {
	enum nw_path path;
	int nvlinks;              /* active links joining the pair (NV#) */
	double link_gbs;          /* bandwidth of that path each way; 0 unknown */
	int p2p;                  /* 1 supported, 0 not, -1 unknown */
	char p2p_why[48];         /* NVML's reason when not supported */
};

struct nw_topo_nic {
	char name[64];            /* "mlx5_0" (RDMA device) or "eth0" */
	char kind[8];             /* "ib", "roce", "eth" */
	int port;                 /* RDMA port, -1 for Ethernet */
	char netdev[64];          /* network interface of the device, "" none */
	char state[32];           /* "ACTIVE", "DOWN", "up", "down" ... */
	int up;                   /* 1 active/up, 0 not */
	double rate_gbps;         /* Gb/s, 0 unknown */
	char bus_id[20];          /* "" for a device not on PCI */
	char pci_path[512];
	int numa;
	enum nw_path nearest_path; /* best path class to any GPU */
	int nearest[NW_NVML_MAX_GPUS]; /* GPU positions (in gpus[]) at that class */
	int nnearest;
};

struct nw_topo {
	int ngpus;
	struct nw_topo_gpu gpus[NW_NVML_MAX_GPUS];
	struct nw_topo_pair pairs[NW_NVML_MAX_GPUS][NW_NVML_MAX_GPUS];
	int nnics;
	struct nw_topo_nic nics[NW_TOPO_MAX_NICS];
	char gpu_source[8];       /* "nvml" or "sysfs" */
	char nvml_lib[1024];      /* file loaded, "" none */
	char nvml_why[512];       /* why NVML did not answer, "" when it did */
	char driver[32];
	int cuda_driver;          /* 13000, -1 unknown */
};

/*
 * Probe the topology under root ("" = live) with the NVML answers in snap
 * (snap->loaded may be 0: GPUs then come from the PCI tree, without NVLink
 * or peer-to-peer facts). Fills *t (caller allocates). Returns 0.
 */
int nw_topo_probe(struct nw_topo *t, const char *root, const struct nw_nvml_snap *snap);

/* "X", "NV18", "PIX", ... into buf (which it returns). */
const char *nw_path_label(enum nw_path p, int nvlinks, char *buf, size_t len);
/* Class between two devices from their resolved sysfs paths and NUMA nodes. */
enum nw_path nw_pci_path_class(const char *path_a, const char *path_b, int numa_a, int numa_b);
/* PCIe bandwidth each way in GB/s from "32.0 GT/s PCIe" and a width; 0 when unknown. */
double nw_pcie_gbs(const char *speed, int width);
/* GT/s of a PCIe generation (1..6); 0 when unknown. */
double nw_pcie_gen_gts(int gen);

/*
 * The GPUs CUDA would show, in CUDA's order, from CUDA_VISIBLE_DEVICES
 * (cvd; NULL or unset: every GPU). Entries are indices or UUIDs (a unique
 * prefix of "GPU-..." is enough). Fills pos[] with positions in t->gpus and
 * returns the count, or -1 with err naming the entry that matches no GPU.
 */
int nw_topo_visible(const struct nw_topo *t, const char *cvd, int *pos, int max, char *err,
                    size_t errlen);
/* out = the GPUs pos[0..n) of in, in that order, with their pairs; NICs kept. */
void nw_topo_subset(const struct nw_topo *in, const int *pos, int n, struct nw_topo *out);

/*
 * NVML answers for topo/doctor: replayed from a recording when path (or
 * $NCCLWATCH_NVML_JSON) names one, else live. Returns 0, or -1 with err
 * when a named recording cannot be read.
 */
int nw_probe_nvml(struct nw_nvml_snap *s, const char *path, char *err, size_t errlen);

/*
 * One line naming the link of every pair of t's GPUs ("GPU0-GPU1 NV18
 * 478.1 GB/s; ..."; "N GPU" when there is no pair), for a run's
 * fingerprint, and its 64-bit FNV-1a hash as 16 hex digits in hash.
 */
void nw_topo_summary(const struct nw_topo *t, char *buf, size_t len, char hash[17]);

/* JSON of the topology (GPUs, pairs, NICs); caller owns the reference. */
json_t *nw_topo_to_json(const struct nw_topo *t);

#endif
