/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL environment variable names NCCL 2.28 reads or documents, for
 * doctor's typo check. Built from NCCL 2.28.9's source (every NCCL_PARAM
 * and every "NCCL_..." string under src/, ext-profiler/, ext-tuner/,
 * ext-net/, plugins/) and the "Environment Variables" page of NCCL's user
 * guide (docs/userguide/source/env.rst), deprecated names included: a
 * deprecated name is not a typo. Sorted, for bsearch.
 */
#include "probe/ncclenv.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const char *const known[] = {
	"NCCL_ALGO",
	"NCCL_ALLOC_P2P_NET_LL_BUFFERS",
	"NCCL_BUFFSIZE",
	"NCCL_CGA_CLUSTER_SIZE",
	"NCCL_CHECKS_DISABLE",
	"NCCL_CHECK_MODE",
	"NCCL_CHECK_POINTERS",
	"NCCL_CHUNK_SIZE",
	"NCCL_COLLNET_ENABLE",
	"NCCL_COLLNET_NODE_THRESHOLD",
	"NCCL_COMM_BLOCKING",
	"NCCL_COMM_ID",
	"NCCL_COMM_SHRINK_SHARE_RESOURCES",
	"NCCL_COMM_SPLIT_SHARE_RESOURCES",
	"NCCL_CONF_FILE",
	"NCCL_CONNECT_ROUND_MAX_PEERS",
	"NCCL_CREATE_THREAD_CONTEXT",
	"NCCL_CROSS_NIC",
	"NCCL_CTA_POLICY",
	"NCCL_CUMEM_ENABLE",
	"NCCL_CUMEM_HOST_ENABLE",
	"NCCL_DEBUG",
	"NCCL_DEBUG_FILE",
	"NCCL_DEBUG_SUBSYS",
	"NCCL_DEBUG_TIMESTAMP_FORMAT",
	"NCCL_DEBUG_TIMESTAMP_LEVELS",
	"NCCL_DMABUF_ENABLE",
	"NCCL_ENV_PLUGIN",
	"NCCL_GDRCOPY_ENABLE",
	"NCCL_GDRCOPY_FIFO_ENABLE",
	"NCCL_GDRCOPY_FLUSH_ENABLE",
	"NCCL_GDRCOPY_SYNC_ENABLE",
	"NCCL_GDR_FLUSH_DISABLE",
	"NCCL_GIN_COUNTER_POOL_SIZE",
	"NCCL_GIN_ENABLE",
	"NCCL_GIN_ERROR_QUERY_SEC",
	"NCCL_GIN_GDAKI_NIC_HANDLER",
	"NCCL_GIN_GDAKI_QP_DEPTH",
	"NCCL_GIN_NCONTEXTS",
	"NCCL_GIN_PROXY_QUEUE_SIZE",
	"NCCL_GIN_SIGNAL_POOL_SIZE",
	"NCCL_GIN_TYPE",
	"NCCL_GRAPH_DUMP_FILE",
	"NCCL_GRAPH_DUMP_FILE_RANK",
	"NCCL_GRAPH_FILE",
	"NCCL_GRAPH_HELPER_DISABLE",
	"NCCL_GRAPH_MIXING_SUPPORT",
	"NCCL_GRAPH_REGISTER",
	"NCCL_GRAPH_STREAM_ORDERING",
	"NCCL_GROUP_CUDA_STREAM",
	"NCCL_HOSTID",
	"NCCL_IB_ADAPTIVE_ROUTING",
	"NCCL_IB_ADDR_FAMILY",
	"NCCL_IB_ADDR_RANGE",
	"NCCL_IB_AR_THRESHOLD",
	"NCCL_IB_CUDA_SUPPORT",
	"NCCL_IB_DATA_DIRECT",
	"NCCL_IB_DISABLE",
	"NCCL_IB_ECE_ENABLE",
	"NCCL_IB_FIFO_TC",
	"NCCL_IB_GDR_LEVEL",
	"NCCL_IB_GID_INDEX",
	"NCCL_IB_HCA",
	"NCCL_IB_MERGE_NICS",
	"NCCL_IB_MERGE_VFS",
	"NCCL_IB_MQP_RETRY_ALL",
	"NCCL_IB_MQP_RETRY_CNT",
	"NCCL_IB_MQP_RETRY_SLEEP_MSEC",
	"NCCL_IB_OOO_RQ",
	"NCCL_IB_PCI_RELAXED_ORDERING",
	"NCCL_IB_PKEY",
	"NCCL_IB_QPS_PER_CONNECTION",
	"NCCL_IB_RETRY_CNT",
	"NCCL_IB_RETURN_ASYNC_EVENTS",
	"NCCL_IB_ROCE_VERSION_NUM",
	"NCCL_IB_ROUTABLE_FLID_GID_INDEX",
	"NCCL_IB_SL",
	"NCCL_IB_SPLIT_DATA_ON_QPS",
	"NCCL_IB_TC",
	"NCCL_IB_TIMEOUT",
	"NCCL_IB_USE_INLINE",
	"NCCL_IB_WARN_RAIL_LOCAL",
	"NCCL_IGNORE_COLLNET_MISMATCH",
	"NCCL_IGNORE_CPU_AFFINITY",
	"NCCL_IGNORE_DISABLED_P2P",
	"NCCL_IGNORE_NET_MISMATCH",
	"NCCL_INSPECTOR_DUMP_DIR",
	"NCCL_INSPECTOR_DUMP_THREAD_ENABLE",
	"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS",
	"NCCL_INSPECTOR_DUMP_VERBOSE",
	"NCCL_INSPECTOR_ENABLE",
	"NCCL_IPC_USE_ABSTRACT_SOCKET",
	"NCCL_L1_SHARED_MEMORY_CARVEOUT",
	"NCCL_LAUNCH_MODE",
	"NCCL_LAUNCH_ORDER_IMPLICIT",
	"NCCL_LAUNCH_RACE_FATAL",
	"NCCL_LEGACY_CUDA_REGISTER",
	"NCCL_LL128_BUFFSIZE",
	"NCCL_LL128_C2C",
	"NCCL_LL128_NTHREADS",
	"NCCL_LL_BUFFSIZE",
	"NCCL_LL_THRESHOLD",
	"NCCL_LOCAL_REGISTER",
	"NCCL_MAX_CTAS",
	"NCCL_MAX_NCHANNELS",
	"NCCL_MAX_NRINGS",
	"NCCL_MAX_P2P_NCHANNELS",
	"NCCL_MEM_SYNC_DOMAIN",
	"NCCL_MIN_CTAS",
	"NCCL_MIN_NCHANNELS",
	"NCCL_MIN_NRINGS",
	"NCCL_MIN_P2P_NCHANNELS",
	"NCCL_MNNVL_CLIQUE_ID",
	"NCCL_MNNVL_ENABLE",
	"NCCL_MNNVL_RAIL_PER_HOST",
	"NCCL_MNNVL_SCATTER_NETS_ENABLE",
	"NCCL_MNNVL_UUID",
	"NCCL_MULTI_RANK_GPU_ENABLE",
	"NCCL_NCHANNELS_PER_NET_PEER",
	"NCCL_NET",
	"NCCL_NETDEVS_POLICY",
	"NCCL_NET_DISABLE_INTRA",
	"NCCL_NET_FORCE_FLUSH",
	"NCCL_NET_FORCE_MERGE",
	"NCCL_NET_GDR_C2C",
	"NCCL_NET_GDR_LEVEL",
	"NCCL_NET_GDR_READ",
	"NCCL_NET_MERGE_LEVEL",
	"NCCL_NET_MERGE_POLICY",
	"NCCL_NET_OPTIONAL_RECV_COMPLETION",
	"NCCL_NET_OVERHEAD",
	"NCCL_NET_PLUGIN",
	"NCCL_NET_PLUGIN_REF_COUNT",
	"NCCL_NET_SHARED_BUFFERS",
	"NCCL_NET_SHARED_COMMS",
	"NCCL_NSOCKS_PERTHREAD",
	"NCCL_NTHREADS",
	"NCCL_NVB_DISABLE",
	"NCCL_NVB_PRECONNECT",
	"NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE",
	"NCCL_NVLSTREE_MAX_CHUNKSIZE",
	"NCCL_NVLS_CHUNKSIZE",
	"NCCL_NVLS_ENABLE",
	"NCCL_NVLS_NCHANNELS",
	"NCCL_NVTX_DISABLE",
	"NCCL_OOB_NET_ENABLE",
	"NCCL_OOB_NET_IFNAME",
	"NCCL_P2P_DIRECT_DISABLE",
	"NCCL_P2P_DISABLE",
	"NCCL_P2P_LEVEL",
	"NCCL_P2P_LL_THRESHOLD",
	"NCCL_P2P_NET_CHUNKSIZE",
	"NCCL_P2P_NVL_CHUNKSIZE",
	"NCCL_P2P_PCI_CHUNKSIZE",
	"NCCL_P2P_PXN_LEVEL",
	"NCCL_P2P_READ_ENABLE",
	"NCCL_P2P_SCHEDULE_GROUP_SIZE",
	"NCCL_P2P_USE_CUDA_MEMCPY",
	"NCCL_PAT_ENABLE",
	"NCCL_PROFILER_PLUGIN",
	"NCCL_PROFILE_COLL_API_POOL_SIZE",
	"NCCL_PROFILE_COLL_POOL_SIZE",
	"NCCL_PROFILE_DUMP_FILE",
	"NCCL_PROFILE_EVENT_MASK",
	"NCCL_PROFILE_GROUP_API_POOL_SIZE",
	"NCCL_PROFILE_GROUP_POOL_SIZE",
	"NCCL_PROFILE_KERNEL_LAUNCH_POOL_SIZE",
	"NCCL_PROFILE_P2P_API_POOL_SIZE",
	"NCCL_PROFILE_P2P_POOL_SIZE",
	"NCCL_PROFILE_PROXY_CTRL_POOL_SIZE",
	"NCCL_PROFILE_PROXY_DETACH_POOL_SIZE",
	"NCCL_PROGRESS_APPENDOP_FREQ",
	"NCCL_PROTO",
	"NCCL_PROXY_APPEND_BATCH_SIZE",
	"NCCL_PROXY_CPUSET",
	"NCCL_PROXY_DUMP_SIGNAL",
	"NCCL_PXN_C2C",
	"NCCL_PXN_DISABLE",
	"NCCL_RAS_ADDR",
	"NCCL_RAS_ENABLE",
	"NCCL_RAS_TIMEOUT_FACTOR",
	"NCCL_REPORT_CONNECT_PROGRESS",
	"NCCL_RUNTIME_CONNECT",
	"NCCL_SET_CPU_STACK_SIZE",
	"NCCL_SET_STACK_SIZE",
	"NCCL_SET_THREAD_NAME",
	"NCCL_SHM_DISABLE",
	"NCCL_SHM_LOCALITY",
	"NCCL_SHM_MEMCPY_MODE",
	"NCCL_SHM_USE_CUDA_MEMCPY",
	"NCCL_SINGLE_PROC_MEM_REG_ENABLE",
	"NCCL_SINGLE_RING_THRESHOLD",
	"NCCL_SOCKET_FAMILY",
	"NCCL_SOCKET_IFNAME",
	"NCCL_SOCKET_INLINE",
	"NCCL_SOCKET_MAGIC",
	"NCCL_SOCKET_MIN_TASKSIZE",
	"NCCL_SOCKET_NTHREADS",
	"NCCL_SOCKET_POLL_TIMEOUT_MSEC",
	"NCCL_SOCKET_RCVBUF",
	"NCCL_SOCKET_RETRY_CNT",
	"NCCL_SOCKET_RETRY_SLEEP_MSEC",
	"NCCL_SOCKET_SNDBUF",
	"NCCL_SYM_CTAS",
	"NCCL_SYM_GIN_KERNELS_ENABLE",
	"NCCL_SYM_KERNEL",
	"NCCL_THREAD_THRESHOLDS",
	"NCCL_TOPO_DUMP_FILE",
	"NCCL_TOPO_DUMP_FILE_RANK",
	"NCCL_TOPO_FILE",
	"NCCL_TREE_THRESHOLD",
	"NCCL_TUNER_CONFIG_FILE",
	"NCCL_TUNER_PLUGIN",
	"NCCL_UID_STAGGER_RATE",
	"NCCL_UID_STAGGER_THRESHOLD",
	"NCCL_UNPACK_DOUBLE_NCHANNELS",
	"NCCL_WARN_ENABLE_DEBUG_INFO",
	"NCCL_WIN_ENABLE",
	"NCCL_WIN_STRIDE",
	"NCCL_WORK_ARGS_BYTES",
	"NCCL_WORK_FIFO_BYTES",
};

/*
 * Names that start with NCCL_ but belong to someone else: set by container
 * images or read by PyTorch. Not typos; doctor says whose they are.
 */
static const struct { const char *name, *owner; } foreign[] = {
	{ "NCCL_ASYNC_ERROR_HANDLING", "PyTorch (renamed TORCH_NCCL_ASYNC_ERROR_HANDLING)" },
	{ "NCCL_BLOCKING_WAIT", "PyTorch (renamed TORCH_NCCL_BLOCKING_WAIT)" },
	{ "NCCL_DESYNC_DEBUG", "PyTorch (renamed TORCH_NCCL_DESYNC_DEBUG)" },
	{ "NCCL_INCLUDE_DIR", "PyTorch's build" },
	{ "NCCL_LIB_DIR", "PyTorch's build" },
	{ "NCCL_ROOT", "build systems (PyTorch, nccl-tests)" },
	{ "NCCL_HOME", "build systems (nccl-tests)" },
	{ "NCCL_TESTS_SPLIT", "nccl-tests" },
	{ "NCCL_TESTS_SPLIT_MASK", "nccl-tests" },
	{ "NCCL_TESTS_DEVICE", "nccl-tests" },
	{ "NCCL_VERSION", "NVIDIA's container images (the NCCL the image ships, not the one loaded)" },
};

static int cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, *(const char *const *)b);
}

int nw_ncclenv_known(const char *name)
{
	return bsearch(name, known, NW_ARRAY_LEN(known), sizeof(known[0]), cmp) != NULL;
}

const char *nw_ncclenv_owner(const char *name)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(foreign); i++)
		if (!strcmp(foreign[i].name, name))
			return foreign[i].owner;
	return NULL;
}

/* Damerau-Levenshtein (optimal string alignment) distance, capped inputs. */
int nw_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 64;
	int d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *nw_ncclenv_suggest(const char *name)
{
	const char *best = NULL;
	int bestd = 1 << 30;
	size_t len = strlen(name);
	/* At most 3 edits, and fewer than a third of the name: else nothing fits. */
	int limit = len >= 12 ? 3 : 2;
	for (size_t i = 0; i < NW_ARRAY_LEN(known); i++) {
		int d = nw_edit_distance(name, known[i]);
		if (d < bestd) {
			bestd = d;
			best = known[i];
		}
	}
	return bestd <= limit ? best : NULL;
}

size_t nw_ncclenv_count(void)
{
	return NW_ARRAY_LEN(known);
}
