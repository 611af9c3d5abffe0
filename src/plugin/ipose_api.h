/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose_api: the NCCL functions the interposer exports, with NCCL's own
 * names and signatures (declared here from nccl.h, 2.18 to 2.30, never
 * included; pointer types NCCL names are the interposer's own in ipose.h:
 * ncclComm_t, ncclUniqueId by value, cudaStream_t, ncclConfig_t and
 * ncclSimInfo_t as void *). The version script interpose.map exports these
 * and nothing else. Internal to ipose.c.
 */
#ifndef NW_PLUGIN_IPOSE_API_H
#define NW_PLUGIN_IPOSE_API_H

#include "plugin/ipose.h"

ipo_res_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclAllGather(const void *s, void *r, size_t n, int t, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclAlltoAll(const void *s, void *r, size_t n, int t, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclBcast(void *b, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclGather(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclScatter(const void *s, void *r, size_t n, int t, int root, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclSend(const void *s, size_t n, int t, int peer, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclRecv(void *r, size_t n, int t, int peer, ipo_comm_t c, ipo_stream_t st);
ipo_res_t ncclGroupStart(void);
ipo_res_t ncclGroupEnd(void);
ipo_res_t ncclGroupSimulateEnd(void *sim);
ipo_res_t ncclCommInitRank(ipo_comm_t *k, int nranks, ipo_uid_t id, int rank);
ipo_res_t ncclCommInitRankConfig(ipo_comm_t *k, int nranks, ipo_uid_t id, int rank, void *config);
ipo_res_t ncclCommInitRankScalable(ipo_comm_t *k, int nranks, int rank, int nid, ipo_uid_t *ids, void *config);
ipo_res_t ncclCommInitAll(ipo_comm_t *ks, int ndev, const int *devlist);
ipo_res_t ncclCommSplit(ipo_comm_t k, int color, int key, ipo_comm_t *child, void *config);
ipo_res_t ncclCommDestroy(ipo_comm_t k);
ipo_res_t ncclCommAbort(ipo_comm_t k);
ipo_res_t ncclCommFinalize(ipo_comm_t k);
ipo_res_t ncclCommGetAsyncError(ipo_comm_t k, ipo_res_t *err);

#endif
