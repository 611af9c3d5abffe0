/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl_abi: NCCL's profiler plugin interface, versions 1 to 6, as the
 * plugin reads it: the event descriptors, the state arguments and the
 * exported tables. A layout-only header (internal to the plugin), declared
 * from NCCL's documented headers (src/include/plugin/profiler/profiler_v1.h
 * to _v6.h; ext-profiler/ and plugins/profiler/ in tags v2.23.4-1 to
 * v2.30.x), never copied from them.
 *
 * Which NCCL loads which: 2.23 looks for ncclProfiler_v1 only; 2.24 and
 * 2.25 try v2 then v1; 2.26 v3, v2, v1; 2.27 v4 down; 2.28 v5 down; 2.29
 * and 2.30 v6 down. Every version's descriptor starts with the event type
 * (a uint8_t up to v4, a uint64_t from v5), the parent handle and the
 * rank; the union after it differs:
 *
 *  - v1 (2.23): collectives and p2p name the communicator (commName,
 *    commHash) and give the function, data type, algorithm and protocol as
 *    NCCL's enum numbers; the collective carries trafficBytes (count x type
 *    size x 2 for all_reduce, x nranks for all_gather and reduce_scatter);
 *  - v2 (2.24, 2.25): the same with names (strings) instead of numbers;
 *  - v3 (2.26): v2 without trafficBytes, plus KernelCh events (channel id
 *    only: NCCL's proxy thread starts and stops them when it sees the
 *    channel's work start and end; no GPU timestamps) and NetPlugin;
 *  - v4 (2.27): init names the communicator (hash, name, nodes, ranks,
 *    rank) and gives a logger; collectives lose name and commHash; KernelCh
 *    gets GPU timestamps (start pTimer, stop through recordEventState);
 *  - v5 (2.28): a uint64_t type, parentGroup, the API events (CollApi,
 *    P2pApi, say whether a call is captured into a CUDA graph);
 *  - v6 (2.29+): v5's table, plus copy-engine collectives (CeColl).
 *
 * init in v1 to v3 is (void **context, int *activationMask): nothing about
 * the communicator, and no logger.
 */
#ifndef NW_NCCL_ABI_H
#define NW_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plugin/nwp.h"

/* --- v4 to v6 --- */

struct d_coll {
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
	void *parentGroup;      /* v5 and v6 only */
};

struct d_p2p {
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t nChannels;      /* not filled by NCCL's v4 adapter */
	void *parentGroup;      /* v5 and v6 only */
};

struct d_proxyop {             /* the same in every version */
	pid_t pid;
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
};

struct d_kernelch {
	uint8_t channelId;
	uint64_t pTimer;        /* v4+: GPU globaltimer at the channel's start (v3 has only channelId) */
};

/* v5/v6: the API call behind an op (sent whenever Coll/P2p events are on) */
struct d_collapi {
	const char *func;
	size_t count;
	const char *datatype;
	int root;
	void *stream;
	_Bool graphCaptured;
};

struct d_p2papi {
	const char *func;
	size_t count;
	const char *datatype;
	void *stream;
	_Bool graphCaptured;
};

/* v6: a collective NCCL runs on copy engines (no kernel, no KernelCh events) */
struct d_cecoll {
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	const char *syncStrategy;
	_Bool intraBatchSync;
	uint32_t batchSize;
	uint32_t numBatches;
	uint32_t ceSeqNum;
	void *stream;
};

union d_body {
	struct d_coll coll;
	struct d_cecoll ceColl;
	struct d_collapi collApi;
	struct d_p2papi p2pApi;
	struct d_p2p p2p;
	struct d_proxyop proxyOp;
	struct d_kernelch kernelCh;
	struct { int64_t id; void *data; } netPlugin;
	uint64_t _v6_room[13];
};
_Static_assert(sizeof(struct d_cecoll) <= 13 * sizeof(uint64_t), "v6 union room");

struct descr_v4 {               /* also v1 to v3: the same prefix (their unions below) */
	uint8_t type;
	void *parentObj;
	int rank;
	union d_body u;
};

struct descr_v5 {               /* also v6: same prefix, same members we read */
	uint64_t type;
	void *parentObj;
	int rank;
	union d_body u;
};

union state_args {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
};

/* --- v1 to v3 --- */

struct d_coll_v1 {
	const char *name;       /* the communicator's name (may be NULL) */
	uint64_t commHash;
	uint64_t seqNumber;
	uint8_t func;           /* ncclFunc_t */
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	uint8_t datatype;       /* ncclDataType_t */
	uint32_t op;            /* ncclRedOp_t */
	size_t trafficBytes;
	uint8_t nMaxChannels;
	uint8_t nWarps;
	uint8_t algo;           /* NCCL_ALGO_* */
	uint8_t proto;          /* NCCL_PROTO_* */
	int isCollnet;
	int isNvls;
};

struct d_p2p_v1 {
	const char *name;
	uint64_t commHash;
	uint8_t func;
	void *buff;
	uint8_t datatype;
	size_t count;
	int peer;
};

struct d_coll_v2 {
	const char *name;
	uint64_t commHash;
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	size_t trafficBytes;
	uint8_t nMaxChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
};

struct d_coll_v3 {              /* v2's without trafficBytes */
	const char *name;
	uint64_t commHash;
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nMaxChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
};

struct d_p2p_v2 {               /* also v3 */
	const char *name;
	uint64_t commHash;
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
};

union d_body_old {
	struct d_coll_v1 coll1;
	struct d_p2p_v1 p2p1;
	struct d_coll_v2 coll2;
	struct d_coll_v3 coll3;
	struct d_p2p_v2 p2p2;
	struct d_proxyop proxyOp;
	struct { int step; } proxyStep;
	struct { uint8_t channelId; } kernelCh;  /* v3 */
	struct { int64_t id; void *data; } netPlugin; /* v3 */
};

struct descr_old {
	uint8_t type;
	void *parentObj;
	int rank;
	union d_body_old u;
};

/* --- the tables NCCL looks up --- */

struct nwp_table_v1 {           /* also v2 and v3 */
	const char *name;
	int (*init)(void **, int *);
	int (*startEvent)(void *, void **, void *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, void *);
	int (*finalize)(void *);
};

struct nwp_table_v4 {
	const char *name;
	int (*init)(void **, int *, const char *, uint64_t, int, int, int, nwp_logfn_t);
	int (*startEvent)(void *, void **, void *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, void *);
	int (*finalize)(void *);
};

struct nwp_table_v5 {           /* also v6 */
	const char *name;
	int (*init)(void **, uint64_t, int *, const char *, int, int, int, nwp_logfn_t);
	int (*startEvent)(void *, void **, void *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, void *);
	int (*finalize)(void *);
};

#endif
