/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor: one table of checks of what in this machine, container or
 * environment will hurt NCCL. Each check is a small function over a
 * context of facts (gathered from a root-prefixed tree, the environment,
 * NVML answers and the NCCL locator, or filled by a test from recorded
 * inputs) and adds findings: id, severity, what was seen, why it matters,
 * how to fix it. docs/doctor.md lists every check.
 */
#ifndef NW_PROBE_DOCTOR_H
#define NW_PROBE_DOCTOR_H

#include <stddef.h>

#include <jansson.h>

#include "gpu/nccl.h"
#include "gpu/nvml.h"
#include "probe/livemode.h"
#include "probe/topo.h"

enum nw_sev { NW_SEV_OK, NW_SEV_SKIP, NW_SEV_INFO, NW_SEV_WARN, NW_SEV_ERROR };

struct nw_finding {
	char id[32];          /* the check's id: "env.unknown" */
	enum nw_sev sev;
	char seen[640];       /* the evidence, with where it came from */
	char why[320];        /* why it matters */
	char fix[320];        /* what to do; "" for ok/skip */
};

struct nw_findings {
	struct nw_finding *v;
	size_t n, cap;
};

#define NW_DOC_MAX_ACS 64
#define NW_DOC_CPU_BITS 4096

/* A PCIe bridge above a GPU or NIC, and what its ACS control register says. */
struct nw_doc_acs {
	char bdf[20];
	char below[64];       /* the device under it: "GPU0", "mlx5_0" */
	int readable;         /* 1 config space read, 0 could not (needs root) */
	int has_acs;          /* the bridge has an ACS capability */
	unsigned ctrl;        /* ACS control register */
};

/* A PCIe link of a NIC or bridge that trained low. */
struct nw_doc_link {
	char what[64];        /* "mlx5_0 (0000:17:00.0)" */
	char speed_cur[32], speed_max[32];
	int width_cur, width_max;
	int is_gpu;
};

/* InfiniBand port error counters doctor reads (sysfs ports/N/counters/). */
enum nw_doc_ibcnt {
	NW_IBC_LINK_DOWNED, NW_IBC_LINK_RECOVERY, NW_IBC_SYMBOL, NW_IBC_RCV_ERRORS, NW_IBC_INTEGRITY,
	NW_IBC_OVERRUN, NW_IBC_N
};
#define NW_DOC_MAX_IBPORTS 64
#define NW_DOC_MAX_XIDS 32

/* An InfiniBand or RoCE port as /sys/class/infiniband shows it. */
struct nw_doc_ibport {
	char name[48];            /* "mlx5_0:1" */
	int ethernet;             /* link_layer "Ethernet" (RoCE), 0 InfiniBand */
	char state[24];           /* "ACTIVE" (from "4: ACTIVE"), "" unread */
	char phys[24];            /* "LinkUp" (from "5: LinkUp") */
	char rate[48];            /* "400 Gb/sec (4X NDR)" as written */
	double rate_gbps;         /* 400; 0 unknown */
	long long cnt[NW_IBC_N];  /* -1 absent */
};

/* One GPU Xid code on one GPU in the kernel log, with how often it came. */
struct nw_doc_xid {
	int code;                 /* 79 */
	char pci[24];             /* "0000:44:00" as the driver prints it */
	int count;
	char text[160];           /* the first message after the code */
};

struct nw_doc_ctx {
	/* every field may be left empty by a test; a check then skips or says so */
	char **env;                       /* NULL-terminated "NAME=value" list */
	const struct nw_nvml_snap *snap;  /* never NULL (snap->loaded may be 0) */
	const struct nw_topo *topo;       /* never NULL */
	char ifaces[64][32];              /* network interfaces (/sys/class/net) */
	char ifstate[64][16];             /* their operstate */
	int nifaces;                      /* -1 when /sys/class/net could not be read */
	/* versions */
	const char *nccl_override;        /* --nccl-lib, read by nw_doc_gather */
	int nccl_state;                   /* 1 located, 0 not found, -1 not looked for */
	struct nw_nccl_where nccl;        /* the NCCL that would load */
	char nccl_err[512];
	char nccl_cuda[16];               /* CUDA it was built for, "13.0"; "" unknown */
	struct nw_nccl_where *all;        /* every libnccl found (owned by the caller) */
	size_t nall;
	int all_state;                    /* 1 searched, -1 not searched */
	int live_state;                   /* 1 the live-monitoring libraries were looked for, -1 not */
	struct nw_live_facts live;        /* the NCCL above and ncclwatch's plugin and interposer (probe/livemode.h) */
	/* OS and container */
	char *cmdline;                    /* /proc/cmdline, NULL unknown (owned) */
	char *modules;                    /* /proc/modules (owned) */
	int peermem_sysmodule;            /* /sys/module/nvidia_peermem exists: 1/0/-1 */
	int hypervisor;                   /* cpuinfo "hypervisor" flag: 1/0/-1 */
	char dmi[160];                    /* "QEMU Standard PC" from DMI; "" unknown */
	char *logind;                     /* logind.conf and .d, "# file\n" headers (owned) */
	int logind_present;               /* 0 when no logind configuration exists */
	int systemd_running;              /* /run/systemd/system exists: 1/0 */
	long uid;                         /* effective user id, -1 unknown */
	long long shm_bytes;              /* /dev/shm size, -1 unknown */
	long long memlock;                /* RLIMIT_MEMLOCK bytes, -2 unlimited, -1 unknown */
	int iommu_units;                  /* entries in /sys/class/iommu, -1 unknown */
	struct nw_doc_acs acs[NW_DOC_MAX_ACS];
	int nacs;
	struct nw_doc_link links[64];     /* PCIe links of NICs and bridges above GPUs/NICs */
	int nlinks;
	/* node health */
	int expect_gpus;                  /* --expect-gpus, -1 not given */
	struct nw_doc_ibport ibports[NW_DOC_MAX_IBPORTS];
	int nibports;                     /* -1 when /sys/class/infiniband was not read */
	int kmsg_state;                   /* 1 kernel log read, 0 not readable (kmsg_why), -1 not looked */
	char kmsg_why[200];
	struct nw_doc_xid xids[NW_DOC_MAX_XIDS];
	int nxids;
	/* CPU binding */
	int have_affinity;
	unsigned long long affinity[NW_DOC_CPU_BITS / 64];
	int ncpus_online;                 /* -1 unknown */
};

struct nw_doc_check {
	const char *id;
	const char *title;                /* for docs and the table */
	void (*fn)(const struct nw_doc_ctx *c, struct nw_findings *out);
};

/* The table of every check, in report order. */
const struct nw_doc_check *nw_doc_checks(size_t *n);
/* Whether a check id is selected by a name: the id itself or its group ("env" for "env.debug"). */
int nw_doc_selects(const char *name, const char *id);

/* How many checks of the table only[] selects (every check when nonly is 0). */
size_t nw_doc_nselected(const char *const *only, size_t nonly);
/* The first name in only[] that selects no check, or NULL when each selects one. */
const char *nw_doc_unmatched(const char *const *only, size_t nonly);

/* Run every check, or only those named in only[]: a check id ("hw.nvlink") or a group ("env"). */
void nw_doc_run(const struct nw_doc_ctx *c, const char *const *only, size_t nonly,
                struct nw_findings *out);

/* Add a finding (printf into seen); why/fix may be NULL. */
void nw_doc_add(struct nw_findings *out, const char *id, enum nw_sev sev, const char *why,
                const char *fix, const char *seen_fmt, ...) __attribute__((format(printf, 6, 7)));
void nw_findings_release(struct nw_findings *f);
/* Highest severity present. */
enum nw_sev nw_findings_worst(const struct nw_findings *f);
/* 0 nothing above info, 1 warnings, 2 errors. */
int nw_findings_exit(const struct nw_findings *f);
const char *nw_sev_name(enum nw_sev s);
json_t *nw_findings_to_json(const struct nw_findings *f);

/*
 * Gather every fact under root for the live process: env (NULL: environ),
 * snap and topo (already probed by the caller). Fills c; free what it owns
 * with nw_doc_ctx_release.
 */
void nw_doc_gather(struct nw_doc_ctx *c, const char *root, char **env,
                   const struct nw_nvml_snap *snap, const struct nw_topo *topo);
void nw_doc_ctx_release(struct nw_doc_ctx *c);

/*
 * Everything doctor needs, probed once: NVML (replayed from nvml_json or
 * $NCCLWATCH_NVML_JSON, else live), the topology under root, the facts;
 * with interval > 0 (seconds) and a live driver with NVLinks, the NVLink
 * error counters are read again after that long. interval < 0 picks 1 s
 * for a live driver with NVLinks, else 0. snap, topo and c are the
 * caller's (c released with nw_doc_ctx_release). -1 with err when a
 * named recording cannot be read.
 */
int nw_doc_probe_all(const char *root, const char *nvml_json, const char *nccl_lib, double interval,
                     struct nw_nvml_snap *snap, struct nw_topo *topo, struct nw_doc_ctx *c, char *err,
                     size_t errlen);
/* An empty context (nothing known) over snap and topo, for tests. */
void nw_doc_ctx_init(struct nw_doc_ctx *c, const struct nw_nvml_snap *snap, const struct nw_topo *topo);

/* Value of NAME in a "NAME=value" list; NULL when unset. */
const char *nw_doc_getenv(char *const *env, const char *name);
/* "13.0" from a libnccl's version string ("NCCL version 2.28.9+cuda13.0"); -1 if none. */
int nw_doc_nccl_cuda(const char *path, char *out, size_t len);

#endif
