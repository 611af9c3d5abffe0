/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL log reader: each diagnosis rule on short logs. The lines follow the
 * formats NCCL, PyTorch and nccl-tests print (the real fixture logs are
 * checked end to end by tests/cli/test_logscan.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "parse/lineprefix.h"
#include "parse/ncclog.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

static json_t *scan(const char *text, int *nerrors)
{
	struct nw_log *lg = nw_log_new();
	nw_log_feed_buf(lg, text, strlen(text));
	json_t *doc = nw_log_report(lg);
	if (nerrors)
		*nerrors = nw_log_nerrors(lg);
	nw_log_free(lg);
	return doc;
}

static const json_t *diag(const json_t *doc, const char *id)
{
	size_t i;
	const json_t *o;
	json_array_foreach(json_object_get(doc, "diagnoses"), i, o)
		if (!strcmp(json_string_value(json_object_get(o, "id")), id))
			return o;
	return NULL;
}

static const char *diag_msg(const json_t *doc, const char *id)
{
	const json_t *d = diag(doc, id);
	assert_non_null(d);
	return json_string_value(json_object_get(d, "message"));
}

static size_t ndiag(const json_t *doc)
{
	return json_array_size(json_object_get(doc, "diagnoses"));
}

/* The first version string of the report, or "". */
static const char *version_at(const json_t *doc, size_t i)
{
	const json_t *v = json_array_get(json_object_get(doc, "versions"), i);
	return v ? json_string_value(json_object_get(v, "version")) : "";
}

static void bare_banners(void **state)
{
	(void)state;
	/* NCCL at WARN level: the banner alone, no host:pid:tid prefix */
	json_t *doc = scan("NCCL version 2.18.3+cuda12.2\n", NULL);
	assert_string_equal(version_at(doc, 0), "2.18.3+cuda12.2");
	json_decref(doc);
	/* under mpirun --tag-output: the banner belongs to its rank's process */
	doc = scan("[1,0]<stdout>:nodeA:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
	           "[1,1]<stdout>:nodeB:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
	           "[1,0]<stdout>:NCCL version 2.18.3+cuda12.2\n"
	           "[1,1]<stdout>:NCCL version 2.21.5+cuda12.4\n", NULL);
	const char *m = diag_msg(doc, "nccl-version-mismatch");
	assert_non_null(strstr(m, "2.18.3+cuda12.2 (1 process, e.g. on 'nodeA')"));
	assert_non_null(strstr(m, "2.21.5+cuda12.4 (1 process, e.g. on 'nodeB')"));
	assert_string_equal(json_string_value(json_object_get(doc, "cause")), "version_mismatch");
	json_decref(doc);
	/* the job's rank count from connection and ring-order lines when no comm line says it */
	doc = scan("h:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"
	           "h:1:1 [0] NCCL INFO Channel 00/0 : 3[3] -> 0[0] via P2P/IPC\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nranks")), 4);
	json_decref(doc);
	/* PyTorch's own report of the version is no banner: listed as PyTorch's, no process */
	doc = scan("NCCL version: 2.21.5\n", NULL);
	assert_int_equal(json_array_size(json_object_get(doc, "versions")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "versions"), 0), "source")),
	                    "pytorch");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "versions"), 0), "processes")), 0);
	json_decref(doc);
	/* and the same version as NCCL's banner is not listed twice */
	doc = scan("h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
	           "h: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled cuda error, NCCL version 2.21.5\n", NULL);
	assert_int_equal(json_array_size(json_object_get(doc, "versions")), 1);
	assert_null(diag(doc, "nccl-version-mismatch"));
	json_decref(doc);
}

/* The top-level cause keyword of text. */
static void expect_cause(const char *text, const char *cause, const char *id)
{
	json_t *doc = scan(text, NULL);
	assert_string_equal(json_string_value(json_object_get(doc, "cause")), cause);
	if (id)
		assert_non_null(diag(doc, id));
	json_decref(doc);
}

static void root_causes(void **state)
{
	(void)state;
	expect_cause("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n", "healthy", NULL);
	expect_cause("[h:1:0:2] Caught signal 7 (Bus error: nonexistent physical address)\n"
	             "h:1:2 [0] NCCL WARN Cuda failure 'out of memory'\n", "shm_too_small", "crash-bus-error");
	expect_cause("h:1:2 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n"
	             "h2:5:6 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer h<1>\n",
	             "cuda_oom", "cuda-oom");
	/* the root cause leads, and says where it came from; the peer's closed socket follows as a symptom */
	json_t *doc = scan("h2:5:6 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer h<1>\n"
	                   "h:1:2 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n", NULL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "diagnoses"), 0), "id")),
	                    "cuda-oom");
	assert_non_null(strstr(diag_msg(doc, "cuda-oom"), "first on 'h'"));
	assert_non_null(strstr(diag_msg(doc, "peer-connection-closed"), "first on 'h2'"));
	json_decref(doc);
	expect_cause("h:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 "
	             "opcode=0 len=0 vendor err 129 (Recv)\n", "ib_completion_error", "ib-completion-error");
	expect_cause("h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43345> failed : "
	             "Software caused connection abort\n", "socket_connect_failed", "socket-connect-failed");
	expect_cause("h:1:2 [0] transport/nvls.cc:152 NCCL WARN Cuda failure 401 'the operation cannot be performed'\n",
	             "nvls_setup_failed", "nvls-setup-failed");
	expect_cause("h:1:2 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:01/../../0000:01:00.0\n",
	             "sysfs_not_visible", "sysfs-not-visible");
	/* a PyTorch error behind a pdsh prefix is still an error */
	expect_cause("node1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled cuda error, "
	             "NCCL version 2.18.3\n", "cuda_error", "nccl-error");
}

/* Setup and usage errors named by their text, and old or cut line formats. */
static void named_setup_errors(void **state)
{
	(void)state;
	expect_cause("h:1:2 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 peer 10.0.0.6<58683> "
	             "collective mismatch error, local size 496640 remote size 65536\n", "version_mismatch", "collective-mismatch");
	expect_cause(" Test CUDA failure common.cu:1045 'CUDA driver version is insufficient for CUDA runtime version'\n",
	             "cuda_driver_mismatch", "cuda-driver-too-old");
	expect_cause("h:1:1 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856\n",
	             "gpu_arch_unsupported", "gpu-unsupported");
	expect_cause("h:1:2 [0] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (14 != 0)\n",
	             "invalid_usage", "ring-inconsistent");
	expect_cause("h:1:2 [3] sharp_plugin.c:354 NCCL WARN SHARP group create: Streaming Tree lock failed (-18)\n",
	             "collnet_setup_failed", "collnet-setup-failed");
	expect_cause("h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 127.0.0.1<45069> failed : "
	             "Software caused connection abort\n", "wrong_socket_ifname", "socket-loopback");
	expect_cause("#0-0 (fa93daea854b060b) MISMATCH\n  Communicator ranks have different AllGather operation counts\n"
	             "  30 ranks have launched up to operation 640\n  2 ranks have launched up to operation 641\n",
	             "hang", "ras-mismatch");
	/* "file:line NCCL WARN" with its host cut, and NCCL 2.3's "file:line WARN" */
	expect_cause("include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n",
	             "shm_too_small", "shm-failure");
	expect_cause("h:1:2 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out\n",
	             "socket_connect_failed", "socket-connect-failed");
	/* a probe of IB verbs failing on a machine without them is no error */
	expect_cause("h:1:1 [0] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n"
	             "h:1:1 [0] NCCL INFO transport/net_ib/gdr.cc:56 -> 3\n"
	             "h:1:1 [0] NCCL INFO Using network Socket\n", "healthy", NULL);
}

/* Host names as clusters and pastes give them, and the cause after PyTorch's "Last error:". */
static void odd_hosts_and_last_error(void **state)
{
	(void)state;
	json_t *doc = scan("<cluster_name>:926:1151 [7] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3\n"
	                   "user@host:926:1151 [7] NCCL INFO Channel 04/0 : 15[7] -> 6[6] [send] via NET/Socket/3\n"
	                   "host[3]:926:1151 [7] NCCL INFO Channel 05/0 : 15[7] -> 6[6] [send] via NET/Socket/3\n", NULL);
	const json_t *hosts = json_object_get(doc, "hosts");
	assert_int_equal(json_array_size(hosts), 3);
	assert_string_equal(json_string_value(json_array_get(hosts, 0)), "<cluster_name>");
	assert_string_equal(json_string_value(json_array_get(hosts, 1)), "user@host");
	assert_string_equal(json_string_value(json_array_get(hosts, 2)), "host[3]");
	json_decref(doc);

	doc = scan("node1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled cuda "
	           "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3\n"
	           "node1: Last error:\nnode1: Cuda failure 'out of memory'\n", NULL);
	const json_t *g = json_array_get(json_object_get(doc, "errors"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "last_error")), "Cuda failure 'out of memory'");
	assert_string_equal(json_string_value(json_object_get(doc, "cause")), "cuda_oom");
	json_decref(doc);
	/* flattened on one line, with srun's label before the cause */
	doc = scan("10: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error, "
	           "NCCL version 2.18.5 10: Last error: 10: socketStartConnect: Connect to 127.0.0.1<45069> failed : "
	           "Software caused connection abort\n", NULL);
	g = json_array_get(json_object_get(doc, "errors"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "last_error")),
	                    "socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort");
	assert_string_equal(json_string_value(json_object_get(doc, "cause")), "wrong_socket_ifname");
	json_decref(doc);
}

/* GDR off with the distance NCCL printed, and the variable that decides it. */
static void gdr_detail(void **state)
{
	(void)state;
	json_t *doc = scan("h:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PIX\n"
	                   "h:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)\n", NULL);
	const char *m = diag_msg(doc, "gdr-disabled");
	assert_non_null(strstr(m, "the NIC is too far from the GPU: PCIe distance 5, beyond the 4"));
	assert_non_null(strstr(m, "set by the environment to PIX"));
	assert_null(strstr(m, "peermem"));
	const json_t *ev = json_object_get(diag(doc, "gdr-disabled"), "evidence");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "line")),
	                    "GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 1), "line")),
	                    "NCCL_NET_GDR_LEVEL set by environment to PIX");
	json_decref(doc);
}

static void version_mismatch(void **state)
{
	(void)state;
	json_t *doc = scan("nodeA:100:100 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
	                   "nodeB:200:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
	                   "nodeC:300:300 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n", NULL);
	const char *m = diag_msg(doc, "nccl-version-mismatch");
	assert_non_null(strstr(m, "2.28.9+cuda13.0 (2 processes"));
	assert_non_null(strstr(m, "2.21.5+cuda12.4 (1 process, e.g. on 'nodeB')"));
	assert_int_equal(json_array_size(json_object_get(doc, "versions")), 2);
	json_decref(doc);
	doc = scan("nodeA:100:100 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
	           "nodeB:200:200 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n", NULL);
	assert_null(diag(doc, "nccl-version-mismatch"));
	json_decref(doc);
}

static void size1_communicators(void **state)
{
	(void)state;
	int nerr;
	json_t *doc = scan("vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId 0xaaa - Init START\n"
	                   "vm:11:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId 0xbbb - Init START\n"
	                   "vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId 0xaaa - Init COMPLETE\n"
	                   "vm:11:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId 0xbbb - Init COMPLETE\n",
	                   &nerr);
	assert_non_null(strstr(diag_msg(doc, "size1-communicators"), "2 processes"));
	assert_int_equal(nerr, 1);
	assert_null(diag(doc, "duplicate-gpu")); /* two communicators, not one */
	assert_null(diag(doc, "init-incomplete"));
	json_decref(doc);
	/* nccl-tests built without MPI: each process prints itself as rank 0 */
	doc = scan("#  Rank  0 Group  0 Pid   4242 on         vm device  0 [0000:00:06] NVIDIA H200\n"
	           "#  Rank  0 Group  0 Pid   4243 on         vm device  0 [0000:00:06] NVIDIA H200\n", NULL);
	assert_non_null(diag(doc, "size1-communicators"));
	json_decref(doc);
	doc = scan("#  Rank  0 Group  0 Pid   4242 on         vm device  0 [0000:00:06] NVIDIA H200\n"
	           "#  Rank  1 Group  0 Pid   4242 on         vm device  1 [0000:00:07] NVIDIA H200\n", NULL);
	assert_null(diag(doc, "size1-communicators"));
	json_decref(doc);
}

static void duplicate_gpu(void **state)
{
	(void)state;
	json_t *doc = scan("vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	                   "vm:11:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	                   "vm:11:11 [0] init.cc:1100 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60\n"
	                   "vm:11:11 [0] NCCL INFO init.cc:1700 -> 5\n", NULL);
	const char *m = diag_msg(doc, "duplicate-gpu");
	assert_non_null(strstr(m, "ranks 0 and 1"));
	assert_non_null(strstr(m, "busId 60"));
	assert_non_null(strstr(diag_msg(doc, "nccl-error"), "ncclInvalidUsage"));
	assert_non_null(diag(doc, "init-incomplete"));
	assert_non_null(diag(doc, "nccl-warnings"));
	json_decref(doc);
}

/* Two ranks on one GPU of one host that NCCL_HOSTID made two nodes for
 * NCCL (it accepts them and connects them over sockets): not an error,
 * but the sockets within one host are, with the reason. */
static void hostid_two_nodes_one_gpu(void **state)
{
	(void)state;
	json_t *doc = scan("vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	                   "vm:11:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	                   "vm:11:11 [0] NCCL INFO NCCL_HOSTID set by environment to nwhost1\n"
	                   "vm:10:10 [0] NCCL INFO NCCL_HOSTID set by environment to nwhost0\n"
	                   "vm:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
	                   "vm:11:11 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
	                   "vm:11:11 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n"
	                   "vm:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n", NULL);
	assert_null(diag(doc, "duplicate-gpu"));
	const char *m = diag_msg(doc, "net-within-node");
	assert_non_null(strstr(m, "NCCL_HOSTID is set"));
	assert_non_null(strstr(m, "ranks 0 and 1 share the GPU at busId 60 on 'vm'"));
	json_decref(doc);
	/* the same ranks in a communicator of one node: NCCL would refuse them */
	doc = scan("vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	           "vm:11:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xabc - Init START\n"
	           "vm:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n", NULL);
	assert_non_null(strstr(diag_msg(doc, "duplicate-gpu"), "ranks 0 and 1"));
	json_decref(doc);
}

static void no_socket_interface(void **state)
{
	(void)state;
	json_t *doc = scan("vm:10:10 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to nosuchif0\n"
	                   "vm:10:10 [0] misc/socket.cc:484 NCCL WARN Bootstrap : no socket interface found\n", NULL);
	assert_non_null(strstr(diag_msg(doc, "no-socket-interface"), "NCCL_SOCKET_IFNAME=nosuchif0"));
	json_decref(doc);
}

static void shm_failure(void **state)
{
	(void)state;
	json_t *doc = scan("vm:10:30 [0] include/shmutils.h:52 NCCL WARN Error: failed to extend /dev/shm/nccl-D1Ti8A to 9637892 bytes\n", NULL);
	assert_non_null(diag(doc, "shm-failure"));
	json_decref(doc);
}

static void watchdog_and_pytorch(void **state)
{
	(void)state;
	int nerr;
	json_t *doc = scan(
		"[rank0]:[E1130 11:39:33.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=5000) ran for 5081 milliseconds before timing out.\n"
		"[rank0]:[E1130 11:39:33.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=5000) ran for 5081 milliseconds before timing out.\n"
		"Traceback (most recent call last):\n"
		"torch.distributed.DistStoreError: Timed out after 31 seconds waiting for clients. 1/2 clients joined.\n",
		&nerr);
	assert_non_null(strstr(diag_msg(doc, "watchdog-timeout"), "ALLREDUCE SeqNum=3 on rank 0 (timeout 5000 ms, ran 5081 ms)"));
	assert_int_equal(json_array_size(json_object_get(doc, "timeouts")), 1);
	assert_non_null(strstr(diag_msg(doc, "rendezvous-timeout"), "1 of 2 joined"));
	assert_int_equal(json_array_size(json_object_get(doc, "errors")), 2);
	assert_true(nerr >= 2);
	json_decref(doc);
	/* grouped by collective: the ranks in each, the rank behind, the ranks that said nothing */
	doc = scan("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
	           "[rank0]:[E1201 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
	           "[rank1]:[E1201 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
	           "[rank5]:[E1201 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48212, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n",
	           NULL);
	const char *m = diag_msg(doc, "watchdog-timeout");
	assert_non_null(strstr(m, "ALLREDUCE SeqNum=48213 on ranks 0-1"));
	assert_non_null(strstr(m, "ALLREDUCE SeqNum=48212 on rank 5 (timeout 600000 ms, ran 600010 ms), behind: never reached SeqNum=48213"));
	assert_non_null(strstr(m, "no timeout from ranks 2-4,6-7 of 8"));
	json_decref(doc);
	doc = scan("torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 10000ms\n", &nerr);
	assert_int_equal(json_array_size(json_object_get(doc, "errors")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "errors"), 0), "kind")), "pytorch");
	assert_int_equal(nerr, 1);
	json_decref(doc);
}

/* A one-node, two-rank communicator whose pair uses the given transport. */
static json_t *one_node(const char *transport, const char *extra)
{
	char text[4096];
	snprintf(text, sizeof(text),
	         "%s"
	         "vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xc0 - Init START\n"
	         "vm:10:11 [1] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 commId 0xc0 - Init START\n"
	         "vm:10:11 [1] NCCL INFO + PCI[48.0] - GPU/0-70 (1)\n"
	         "vm:10:11 [1] NCCL INFO               + NVL[370.8] - NVS/0-0\n"
	         "vm:10:11 [1] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n"
	         "vm:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
	         "vm:10:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via %s\n"
	         "vm:10:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via %s\n"
	         "vm:10:21 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via %s\n"
	         "vm:10:10 [0] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 commId 0xc0 - Init COMPLETE\n"
	         "vm:10:11 [1] NCCL INFO ncclCommInitRankConfig comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 commId 0xc0 - Init COMPLETE\n",
	         extra, transport, transport, transport);
	return scan(text, NULL);
}

static void transports_within_node(void **state)
{
	(void)state;
	json_t *doc = one_node("NET/Socket/0", "vm:10:10 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n"
	                                       "vm:10:10 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n");
	assert_non_null(strstr(diag_msg(doc, "net-within-node"), "2 peer pairs on the same node talk through the network (TCP sockets), although the GPUs are joined by NVLink"));
	assert_non_null(strstr(diag_msg(doc, "transport-disabled"), "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1"));
	assert_null(diag(doc, "socket-between-nodes"));
	const json_t *t = json_array_get(json_object_get(doc, "transports"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "transport")), "NET/Socket");
	assert_int_equal(json_integer_value(json_object_get(t, "pairs")), 2);
	assert_int_equal(json_integer_value(json_object_get(t, "connections")), 3);
	json_decref(doc);

	doc = one_node("SHM/direct/direct", "vm:10:10 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n");
	const char *m = diag_msg(doc, "shm-instead-of-p2p");
	assert_non_null(strstr(m, "because NCCL_P2P_DISABLE is set"));
	assert_non_null(strstr(m, "NVLink"));
	json_decref(doc);

	doc = one_node("P2P/CUMEM/read", "");
	assert_int_equal(ndiag(doc), 0);
	t = json_array_get(json_object_get(doc, "transports"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "transport")), "P2P/CUMEM/read");
	assert_string_equal(json_string_value(json_object_get(t, "class")), "P2P");
	json_decref(doc);
}

/* Two nodes, one rank each. */
static json_t *two_nodes(const char *transport, const char *extra)
{
	char text[4096];
	snprintf(text, sizeof(text),
	         "%s"
	         "nodeA:10:10 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xd0 - Init START\n"
	         "nodeB:20:20 [0] NCCL INFO ncclCommInitRank comm 0x9 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xd0 - Init START\n"
	         "nodeA:10:30 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via %s\n"
	         "nodeA:10:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via %s\n"
	         "nodeA:10:10 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xd0 - Init COMPLETE\n"
	         "nodeB:20:20 [0] NCCL INFO ncclCommInitRank comm 0x9 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0xd0 - Init COMPLETE\n",
	         extra, transport, transport);
	return scan(text, NULL);
}

static void transports_between_nodes(void **state)
{
	(void)state;
	json_t *doc = two_nodes("NET/Socket/0", "nodeA:10:10 [0] NCCL INFO NET/IB : No device found.\n");
	assert_non_null(strstr(diag_msg(doc, "socket-between-nodes"), "no InfiniBand/RoCE device"));
	assert_null(diag(doc, "net-within-node"));
	assert_null(diag(doc, "duplicate-gpu")); /* same busId, different hosts */
	json_decref(doc);
	doc = two_nodes("NET/Socket/0", "nodeA:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n");
	assert_non_null(strstr(diag_msg(doc, "socket-between-nodes"), "although InfiniBand/RoCE devices were found (on 'nodeA')"));
	json_decref(doc);
	doc = two_nodes("NET/IB/0", "");
	assert_non_null(diag(doc, "gdr-disabled"));
	assert_null(diag(doc, "socket-between-nodes"));
	json_decref(doc);
	doc = two_nodes("NET/IB/1/GDRDMA", "");
	assert_int_equal(ndiag(doc), 0);
	const json_t *t = json_array_get(json_object_get(doc, "transports"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "transport")), "NET/IB/GDRDMA");
	assert_true(json_is_true(json_object_get(t, "gdrdma")));
	assert_int_equal(json_integer_value(json_object_get(t, "inter_node_pairs")), 2);
	json_decref(doc);
	doc = two_nodes("NET/AWS Libfabric/0/GDRDMA", "");
	t = json_array_get(json_object_get(doc, "transports"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "class")), "NET/plugin");
	json_decref(doc);
}

static void forced_algo_proto(void **state)
{
	(void)state;
	int nerr;
	json_t *doc = scan("vm:10:10 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
	                   "vm:10:10 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
	                   "vm:10:10 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}\n"
	                   "vm:10:10 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo 1 proto 2 time 12.5\n", &nerr);
	assert_non_null(strstr(diag_msg(doc, "forced-algorithm"), "NCCL_ALGO=Ring"));
	assert_non_null(strstr(diag_msg(doc, "forced-protocol"), "NCCL_PROTO=Simple"));
	assert_int_equal(nerr, 0);
	const json_t *a = json_array_get(json_object_get(doc, "algorithms"), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "algorithms")), 1); /* numbers mapped to names */
	assert_int_equal(json_integer_value(json_object_get(a, "calls")), 2);
	assert_int_equal(json_integer_value(json_object_get(a, "min_bytes")), 1024);
	json_decref(doc);
}

static void ranks_missing_and_old_formats(void **state)
{
	(void)state;
	/* NCCL 2.7-era lines: no commId, busId in the channel lines, "Ring" connections of 2.4 */
	json_t *doc = scan("host1:500:500 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 busId 1a000 - Init COMPLETE\n"
	                   "host1:501:501 [1] NCCL INFO comm 0x56d0 rank 1 nranks 4 cudaDev 1 busId 1b000 - Init COMPLETE\n"
	                   "host1:500:510 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\n"
	                   "host1:500:510 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC\n"
	                   "host1:500:510 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 busId 1a000 - Destroy COMPLETE\n", NULL);
	const json_t *c = json_array_get(json_object_get(doc, "communicators"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "id")), "size-4");
	assert_int_equal(json_integer_value(json_object_get(c, "ranks_seen")), 2);
	assert_int_equal(json_integer_value(json_object_get(c, "init_completed")), 2);
	const json_t *t = json_array_get(json_object_get(doc, "transports"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "transport")), "P2P/IPC");
	assert_int_equal(json_integer_value(json_object_get(t, "connections")), 2);
	assert_null(diag(doc, "ranks-missing")); /* only said for communicators with an id */
	json_decref(doc);
	doc = scan("vm:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1a000 commId 0x77 - Init COMPLETE\n", NULL);
	assert_non_null(strstr(diag_msg(doc, "ranks-missing"), "has 4 ranks but only 1 appear"));
	json_decref(doc);
}

/* The first w[0..m) in s[0..n) by trying every place: what find_n must agree with. */
static const char *plain_find(const char *s, size_t n, const char *w, size_t m)
{
	for (size_t i = 0; i + m <= n; i++)
		if (!memcmp(s + i, w, m))
			return s + i;
	return NULL;
}

/* find_n, the readers' substring search, against a plain scan: every place, spaces first, none, the edges. */
static void substring_search(void **state)
{
	(void)state;
	static const char *const hay[] = { "", "a", " via ", "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM comm 0x1 nRanks 2",
	                                   "  via  via", "vi", "x via", "via x", "   ", "->->", "[receive]" };
	static const char *const needles[] = { " via ", "via", " ", "   ", "->", "nRanks", " comm ", "[receive]", "x",
	                                       "", "a", " x", "x " };
	for (size_t h = 0; h < sizeof(hay) / sizeof(hay[0]); h++)
		for (size_t k = 0; k < sizeof(needles) / sizeof(needles[0]); k++) {
			const char *s = hay[h], *w = needles[k];
			size_t n = strlen(s), m = strlen(w);
			assert_ptr_equal(find_n(s, n, w, m), plain_find(s, n, w, m));
			if (n) /* a haystack cut short: no match past its end */
				assert_ptr_equal(find_n(s, n - 1, w, m), plain_find(s, n - 1, w, m));
		}
}

static void prefixes(void **state)
{
	(void)state;
	static const char *lines[] = {
		"[1,3]<stdout>:vm:803:803 [0] NCCL INFO x",
		"[rank3]:vm:803:803 [0] NCCL INFO x",
		"[default3]:vm:803:803 [0] NCCL INFO x",
		"gpu-node-07: vm:803:803 [0] NCCL INFO x",
		"3: vm:803:803 [0] NCCL INFO x",
		"2026-11-30T11:39:33.123456Z vm:803:803 [0] NCCL INFO x",
		"[2026-11-30 11:39:33] vm:803:803 [0] NCCL INFO x",
		"\x1b[36m(RayWorkerWrapper pid=803, ip=10.0.0.7)\x1b[0m vm:803:803 [0] NCCL INFO x",
		"gpu-node-07: [1,3]<stderr>: 2026-11-30 11:39:33,123 vm:803:803 [0] NCCL INFO x",
		"\x1b[1mvm:803:803 [0] \x1b[32mNCCL INFO x\x1b[0m",
		"vm:803 [0] NCCL INFO x",
		"Fri Aug 11 12:31:45 2023[1,0]<stdout>:vm:803:803 [0] NCCL INFO x",
		"Tue Aug  1 02:03:04 2023 vm:803:803 [0] NCCL INFO x",
		"Aug 11 12:31:45 gpu01 python3[803]: vm:803:803 [0] NCCL INFO x",
		"Aug  1 12:31:45.123456 gpu01 torchrun: vm:803:803 [0] NCCL INFO x",
		"2026-11-30T11:39:33.123+00:00 gpu01 python3[803]: vm:803:803 [0] NCCL INFO x",
		"[pod/trainer-0/pytorch] vm:803:803 [0] NCCL INFO x",
		"[pod/trainer-0/pytorch] 2026-11-30T11:39:33.123456789Z vm:803:803 [0] NCCL INFO x",
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(lines); i++) {
		char buf[256];
		size_t n;
		nw_strlcpy(buf, lines[i], sizeof(buf));
		size_t off = nw_lp_strip(buf, strlen(buf), &n, NULL);
		assert_true(nw_lp_nccl_prefix(buf + off, n) > 0);
		assert_int_equal(n - nw_lp_nccl_prefix(buf + off, n), strlen("NCCL INFO x"));
	}
	/* text that only looks like a prefix stays */
	static const char *kept[] = {
		"RuntimeError: NCCL error in: x",
		"torch.distributed.DistBackendError: [1] is setting up NCCL communicator",
		"Epoch: 3 loss 0.5",
	};
	char buf[128];
	size_t n, off;
	for (size_t i = 0; i < NW_ARRAY_LEN(kept); i++) {
		nw_strlcpy(buf, kept[i], sizeof(buf));
		off = nw_lp_strip(buf, strlen(buf), &n, NULL);
		assert_int_equal(off, 0);
	}
	struct nw_lp lp;
	nw_strlcpy(buf, "gpu-node-07: [1,3]<stdout>:#x", sizeof(buf));
	off = nw_lp_strip(buf, strlen(buf), &n, &lp);
	assert_string_equal(buf + off, "#x");
	assert_string_equal(lp.tag, "gpu-node-07/1,3");
	/* who wrote it, where the prefix says */
	static const struct { const char *line, *tag, *host, *rest; long pid; } who[] = {
		{ "Aug 11 12:31:45 gpu01 python3[803]: NCCL version 2.18.3", "gpu01", "", "NCCL version 2.18.3", 0 },
		{ "[pod/trainer-0/pytorch] NCCL version 2.18.3", "trainer-0", "", "NCCL version 2.18.3", 0 },
		{ "[k8s-slave03:00956] *** Process received signal ***", "", "k8s-slave03", "*** Process received signal ***", 956 },
		{ "[n125-011-039:288505:0:296459] Caught signal 11 (Segmentation fault)", "", "n125-011-039",
		  "Caught signal 11 (Segmentation fault)", 288505 },
		{ "2026-08-31 12:27:50 [k8s-slave03:00956] Signal: Segmentation fault (11)", "", "k8s-slave03",
		  "Signal: Segmentation fault (11)", 956 },
		/* a syslog-like start that is not one: no "prog:" after the host */
		{ "Aug 11 12:31:45 gpu01 went down", "", "", "gpu01 went down", 0 },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(who); i++) {
		nw_strlcpy(buf, who[i].line, sizeof(buf));
		off = nw_lp_strip(buf, strlen(buf), &n, &lp);
		assert_string_equal(buf + off, who[i].rest);
		assert_string_equal(lp.tag, who[i].tag);
		assert_string_equal(lp.host, who[i].host);
		assert_int_equal(lp.pid, who[i].pid);
	}
	/* the crash reports' hosts count as the log's hosts */
	json_t *doc = scan("[k8s-slave03:956] *** Process received signal ***\n"
	                   "[k8s-slave03:956] Signal: Segmentation fault (11)\n"
	                   "[k8s-slave03:957] Signal: Segmentation fault (11)\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nhosts")), 1);
	assert_int_equal(json_integer_value(json_object_get(doc, "processes")), 2);
	json_decref(doc);
}

/* The job's size from what launchers and NCCL RAS say, and the ranks seen, which are no size. */
static void job_size(void **state)
{
	(void)state;
	json_t *doc = scan("All distributed processes registered. Starting with 2 processes\n"
	                   "gpu01:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nranks")), 2);
	assert_int_equal(json_integer_value(json_object_get(doc, "ranks_seen")), 1);
	assert_true(json_is_null(json_object_get(doc, "nnodes")));
	json_decref(doc);
	doc = scan("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nranks")), 8);
	json_decref(doc);
	doc = scan("NCCL version 2.26.2 compiled with CUDA 12.6\n\nJob summary\n===========\n\n"
	           "  Nodes  Processes         GPUs  Processes     GPUs\n"
	           "(total)   per node  per process    (total)  (total)\n"
	           "      4          8            1         32       32\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nranks")), 32);
	assert_int_equal(json_integer_value(json_object_get(doc, "nnodes")), 4);
	json_decref(doc);
	doc = scan("WARNING: There was an error initializing an OpenFabrics device.\n\n  Local host:   rtptest1621\n"
	           "  Local device: mlx5_0\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "nhosts")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "hosts"), 0)), "rtptest1621");
	json_decref(doc);
	/* two processes, two devices: seen, but the size stays unknown */
	doc = scan("vm:1:1 [0] NCCL INFO cudaDriverVersion 12080\nvm:2:2 [1] NCCL INFO cudaDriverVersion 12080\n", NULL);
	assert_true(json_is_null(json_object_get(doc, "nranks")));
	assert_int_equal(json_integer_value(json_object_get(doc, "ranks_seen")), 2);
	json_decref(doc);
}

/* Which node a pair is on without any init line: from who printed each end, else from the transport. */
static void placement_without_init(void **state)
{
	(void)state;
	json_t *doc = scan("a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
	                   "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n"
	                   "a:1:1 [0] NCCL INFO Channel 00/0 : 2[1] -> 0[0] [receive] via NET/Socket/0\n"
	                   "a:3:3 [1] NCCL INFO Channel 00/0 : 2[1] -> 0[0] [send] via NET/Socket/0\n"
	                   "c:4:4 [0] NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/IPC\n"
	                   "c:4:4 [0] NCCL INFO CollNet 05/0 : 4 [receive] via COLLNET/SHARP/5/GDRDMA\n", NULL);
	const json_t *tr = json_object_get(doc, "transports"), *t;
	size_t i;
	int seen = 0;
	json_array_foreach(tr, i, t) {
		const char *name = json_string_value(json_object_get(t, "transport"));
		if (!strcmp(name, "NET/Socket")) {
			assert_int_equal(json_array_size(json_object_get(t, "nics")), 1);
			assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "nics"), 0)), 0);
			assert_int_equal(json_integer_value(json_object_get(t, "inter_node_pairs")), 1);
			assert_int_equal(json_integer_value(json_object_get(t, "intra_node_pairs")), 1);
			seen |= 1;
		} else if (!strcmp(name, "P2P/IPC")) {
			assert_int_equal(json_integer_value(json_object_get(t, "intra_node_pairs")), 1);
			seen |= 2;
		} else if (!strcmp(name, "COLLNET/SHARP/GDRDMA")) {
			assert_string_equal(json_string_value(json_object_get(t, "class")), "CollNet");
			assert_string_equal(json_string_value(json_object_get(t, "example")), "4 -> the collective network");
			assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "nics"), 0)), 5);
			seen |= 4;
		}
	}
	assert_int_equal(seen, 7);
	assert_non_null(diag(doc, "net-within-node"));
	json_decref(doc);
}

/* Every table is capped: a log with more processes and causes than fit is read whole, the rest counted. */
static void bounded_tables(void **state)
{
	(void)state;
	struct nw_log *lg = nw_log_new();
	char line[256];
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(line, sizeof(line), "host%d:%d:%d [0] NCCL INFO NCCL version 2.%d.3+cuda12.4", i % 5000, i, i, i % 30);
		nw_log_feed_line(lg, line, (size_t)n);
		n = snprintf(line, sizeof(line), "host%d:%d:%d [0] misc.cc:%d NCCL WARN cause %c%c%c", i % 5000, i, i, i,
		             'a' + i % 26, 'a' + i / 26 % 26, 'a' + i / 676 % 26);
		nw_log_feed_line(lg, line, (size_t)n);
	}
	json_t *doc = nw_log_report(lg);
	const json_t *in = json_object_get(doc, "input");
	assert_int_equal(json_integer_value(json_object_get(in, "lines")), 40000);
	assert_true(json_integer_value(json_object_get(in, "not_recorded")) > 0);
	assert_true(json_array_size(json_object_get(doc, "errors")) <= 512);
	assert_non_null(diag(doc, "nccl-version-mismatch"));
	json_decref(doc);
	nw_log_free(lg);
}

static void garbage(void **state)
{
	(void)state;
	size_t len = 1 << 20;
	char *buf = nw_malloc(len);
	uint32_t x = 7;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (char)(x >> 16);
		if (i % 97 == 0)
			buf[i] = '\n';
		if (i % 389 == 0)
			buf[i] = '\0';
	}
	struct nw_log *lg = nw_log_new();
	nw_log_feed_buf(lg, buf, len);
	json_t *doc = nw_log_report(lg);
	char *text = json_dumps(doc, 0);
	assert_non_null(text); /* strings from the log are valid JSON */
	free(text);
	json_decref(doc);
	nw_log_free(lg);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(version_mismatch),
		cmocka_unit_test(bare_banners),
		cmocka_unit_test(root_causes),
		cmocka_unit_test(named_setup_errors),
		cmocka_unit_test(gdr_detail),
		cmocka_unit_test(odd_hosts_and_last_error),
		cmocka_unit_test(size1_communicators),
		cmocka_unit_test(duplicate_gpu),
		cmocka_unit_test(hostid_two_nodes_one_gpu),
		cmocka_unit_test(no_socket_interface),
		cmocka_unit_test(shm_failure),
		cmocka_unit_test(watchdog_and_pytorch),
		cmocka_unit_test(transports_within_node),
		cmocka_unit_test(transports_between_nodes),
		cmocka_unit_test(forced_algo_proto),
		cmocka_unit_test(ranks_missing_and_old_formats),
		cmocka_unit_test(substring_search),
		cmocka_unit_test(prefixes),
		cmocka_unit_test(job_size),
		cmocka_unit_test(placement_without_init),
		cmocka_unit_test(bounded_tables),
		cmocka_unit_test(garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
