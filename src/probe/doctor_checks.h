/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor_checks: what the doctor's check files share, inside src/probe
 * only (callers use doctor.h). doctor_checks.c holds the one table of
 * checks and the helpers below; each group of checks lives in its own
 * file: doctor_gpu.c (driver and NCCL versions, GPU hardware),
 * doctor_env.c (environment variables), doctor_os.c (container, OS, CPU
 * binding). Every check has the signature of struct nw_doc_check's fn.
 */
#ifndef NW_PROBE_DOCTOR_CHECKS_H
#define NW_PROBE_DOCTOR_CHECKS_H

#include <stddef.h>

#include "probe/doctor.h"

#define ADD nw_doc_add

/* Whether the topology has any GPU. */
int nw_doc_has_gpus(const struct nw_doc_ctx *c);
/* Why NVML gave nothing ("NVML did not answer" when it did not say). */
const char *nw_doc_nvml_why(const struct nw_doc_ctx *c);
/* Active RDMA (InfiniBand or RoCE) ports: how many, and "name:port,..." into names. */
int nw_doc_rdma_active(const struct nw_doc_ctx *c, char *names, size_t len);
/* Whether any RDMA NIC is present, up or not. */
int nw_doc_rdma_present(const struct nw_doc_ctx *c);
/* A non-negative whole number from env's NAME; -1 when unset, empty or not one. */
long nw_doc_env_long(char *const *env, const char *name);

/* doctor_gpu.c */
void nw_doc_chk_driver(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_nccl(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_nccl_cuda(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_nccl_many(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_live(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_nvlink(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_pcie(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_p2p(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_persistence(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_ecc(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_peermem(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_fabric(const struct nw_doc_ctx *c, struct nw_findings *out);

/* doctor_env.c */
void nw_doc_chk_env_names(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_socket_ifname(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_ib_hca(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_workarounds(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_debug(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_cuda_visible(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_master_addr(const struct nw_doc_ctx *c, struct nw_findings *out);

/* doctor_node.c: node health (gathering included) */
void nw_doc_gather_node(struct nw_doc_ctx *c, const char *root);
/* Xid codes from kernel log text (kmsg records or dmesg lines) into c->xids. */
void nw_doc_parse_xids(struct nw_doc_ctx *c, const char *text);
void nw_doc_chk_gpu_count(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_xid(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_clocks(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_ib_ports(const struct nw_doc_ctx *c, struct nw_findings *out);

/* doctor_os.c */
void nw_doc_chk_shm(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_memlock(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_removeipc(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_acs(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_iommu(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_vm(const struct nw_doc_ctx *c, struct nw_findings *out);
void nw_doc_chk_affinity(const struct nw_doc_ctx *c, struct nw_findings *out);

#endif
