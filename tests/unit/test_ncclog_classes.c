/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL log reader on the classes of public logs it used to misread (libfabric
 * and NET/OFI errors, CloudWatch and Ray pastes, sockets between nodes,
 * aborts, RAS tables, networks and topology dumps, GPUDirect distance,
 * counts), each on the public log of tests/fixtures/corpus (their sources are
 * in its corpus.json) or, where a class has no public log of its own, on a
 * reproducer made of real lines around the line that shows it. And for every
 * diagnosis rule: it fires on a log, and quotes lines that are in that log.
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
#include "util/util.h"

/* The text of a file under the source tree (SRCDIR, else "."); caller frees. */
static char *slurp(const char *rel)
{
	const char *src = getenv("SRCDIR");
	char *p = nw_asprintf("%s/%s", src ? src : ".", rel);
	size_t len;
	char *buf = nw_read_file(p, 1 << 24, &len);
	if (!buf)
		fail_msg("cannot read '%s'", p);
	free(p);
	return buf;
}

static json_t *scan_text(const char *text)
{
	struct nw_log *lg = nw_log_new();
	nw_log_feed_buf(lg, text, strlen(text));
	json_t *doc = nw_log_report(lg);
	nw_log_free(lg);
	return doc;
}

/* The report of a corpus file; *text gets the file's text (caller frees) when text is not NULL. */
static json_t *scan_corpus(const char *name, char **text)
{
	char *rel = nw_asprintf("tests/fixtures/corpus/%s", name);
	char *t = slurp(rel);
	free(rel);
	json_t *doc = scan_text(t);
	if (text)
		*text = t;
	else
		free(t);
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

static const char *msg_of(const json_t *doc, const char *id)
{
	const json_t *d = diag(doc, id);
	assert_non_null(d);
	return json_string_value(json_object_get(d, "message"));
}

static const char *cause_of(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "cause"));
}

static json_int_t int_of(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A diagnosis quotes at least one line, and every line it quotes is in the log's text. */
static void assert_quoted(const json_t *d, const char *text)
{
	const json_t *ev = json_object_get(d, "evidence");
	assert_true(json_array_size(ev) > 0);
	size_t i;
	const json_t *e;
	json_array_foreach(ev, i, e) {
		const char *line = json_string_value(json_object_get(e, "line"));
		assert_non_null(line);
		if (!strstr(text, line))
			fail_msg("quoted line not in the log: '%s'", line);
	}
}

/* Whether any diagnosis message or fix contains word. */
static int says(const json_t *doc, const char *word)
{
	size_t i;
	const json_t *o;
	json_array_foreach(json_object_get(doc, "diagnoses"), i, o)
		if (strstr(json_string_value(json_object_get(o, "message")), word))
			return 1;
	return 0;
}

/* 1. libfabric and NET/OFI: the provider is not usable where the job runs. */
static void ofi_provider_unusable(void **state)
{
	(void)state;
	char *text;
	/* CloudWatch paste: "provider efa output empty list" among INFO lines used to be "nothing wrong" */
	json_t *doc = scan_corpus("069-efa-empty-getinfo-cloudwatch-iso-timestamps.log", &text);
	const json_t *d = diag(doc, "ofi-provider-unusable");
	assert_non_null(d);
	assert_non_null(strstr(msg_of(doc, "ofi-provider-unusable"), "no usable efa provider"));
	assert_quoted(d, text);
	assert_string_equal(cause_of(doc), "no_ib_device");
	assert_non_null(strstr(json_string_value(json_object_get(d, "fix")), "/dev/infiniband"));
	json_decref(doc);
	free(text);
	/* the plugin's own WARN, one line with a bracketed timestamp */
	doc = scan_corpus("139-ofi-fi-getinfo-no-data-container-p5.log", &text);
	assert_quoted(diag(doc, "ofi-provider-unusable"), text);
	assert_string_equal(cause_of(doc), "no_ib_device");
	json_decref(doc);
	free(text);
	/* a CXI NIC without a VNI for the job (lines without their host) */
	doc = scan_corpus("142-ofi-cxi-rgroup-vni-warn-hostless-lines.log", &text);
	assert_non_null(strstr(msg_of(doc, "ofi-provider-unusable"), "no VNI"));
	assert_quoted(diag(doc, "ofi-provider-unusable"), text);
	const json_t *net = json_array_get(json_object_get(doc, "networks"), 0);
	assert_string_equal(json_string_value(json_object_get(net, "ofi_provider")), "cxi");
	assert_int_equal(int_of(net, "ofi_nics"), 8);
	json_decref(doc);
	free(text);
	/* the same provider selected after an empty probe: no diagnosis */
	doc = scan_text("libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider efa output empty list\n"
	                "8h200-3:6310:6318 [0] NCCL INFO NET/OFI Selected Provider is efa (found 16 nics)\n");
	assert_null(diag(doc, "ofi-provider-unusable"));
	json_decref(doc);
}

/* 1. libfabric's warnings are grouped as such; the benign one aws-ofi-nccl causes is no cause; the tcp provider is said. */
static void libfabric_lines(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("144-cloudwatch-table-libfabric-shm-permitted-warn-p4d.log", &text);
	const json_t *g = json_array_get(json_object_get(doc, "errors"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "kind")), "libfabric");
	assert_int_equal(int_of(g, "count"), 2);
	assert_string_equal(cause_of(doc), "healthy");
	json_decref(doc);
	free(text);
	doc = scan_corpus("138-ofi-libfabric-hmem-warn-efa-sagemaker-nccl2103.log", &text);
	assert_non_null(strstr(msg_of(doc, "gdr-disabled"), "EFA device cannot reach GPU memory"));
	assert_quoted(diag(doc, "gdr-disabled"), text);
	json_decref(doc);
	free(text);
	doc = scan_corpus("140-ofi-provider-tcp-bootstrap-lo-docker-p4d-nccl2234.log", &text);
	assert_quoted(diag(doc, "ofi-tcp-provider"), text);
	json_decref(doc);
	free(text);
	doc = scan_corpus("169-ofi-av-insert-failed-internal-error-p5-nccl2205.log", &text);
	assert_quoted(diag(doc, "ofi-setup-failed"), text);
	assert_string_equal(cause_of(doc), "internal_error");
	json_decref(doc);
	free(text);
}

/* 2. CloudWatch tables: the banner is NCCL's, not PyTorch's; a banner before any host line belongs to the lines after it. */
static void cloudwatch(void **state)
{
	(void)state;
	json_t *doc = scan_corpus("069-efa-empty-getinfo-cloudwatch-iso-timestamps.log", NULL);
	assert_null(json_object_get(doc, "pytorch_nccl_version"));
	const json_t *v = json_array_get(json_object_get(doc, "versions"), 0);
	assert_string_equal(json_string_value(json_object_get(v, "version")), "2.21.5+cuda12.8");
	assert_int_equal(int_of(v, "processes"), 1);
	assert_int_equal(int_of(doc, "nhosts"), 1);
	assert_int_equal(int_of(json_object_get(doc, "input"), "unparsed"), 0);
	json_decref(doc);
	/* the minimal line, before the first line of a process (lines of 069) */
	doc = scan_text("  | 2030-01-01T00:00:00.000+00:00 | NCCL version 2.21.5+cuda12.8\n"
	                "  | 2025-05-16T16:39:51.208-07:00 | ip-10-36-29-253:79:79 [0] NCCL INFO cudaDriverVersion 12040\n");
	v = json_array_get(json_object_get(doc, "versions"), 0);
	assert_int_equal(int_of(v, "processes"), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(v, "hosts"), 0)), "ip-10-36-29-253");
	json_decref(doc);
	doc = scan_corpus("143-cloudwatch-table-ofi-aws-options-sagemaker-p4d.log", NULL);
	assert_int_equal(int_of(json_object_get(doc, "input"), "nccl_lines"), 11);
	assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "hosts"), 0)), "algo-1");
	json_decref(doc);
}

/* 4. Sockets between nodes: one end of a NET/Socket pair logged next to P2P pairs; hosts without IB and no channel lines. */
static void sockets_between_nodes(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("158-cluster-name-hosts-net-socket-between-nodes-p2p-ipc-read.log", &text);
	const json_t *d = diag(doc, "socket-between-nodes");
	assert_non_null(d);
	assert_quoted(d, text);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(json_object_get(d, "evidence"), 0), "line")),
	                       "via NET/Socket/3"));
	assert_null(diag(doc, "net-within-node"));
	json_decref(doc);
	free(text);
	doc = scan_corpus("157-nccl247-ec2-eight-hosts-no-ib-device-net-socket.log", &text);
	d = diag(doc, "socket-between-nodes");
	assert_non_null(d);
	assert_quoted(d, text);
	assert_int_equal(json_array_size(json_object_get(d, "evidence")), 2);
	assert_string_equal(cause_of(doc), "no_ib_device");
	json_decref(doc);
	free(text);
	doc = scan_corpus("160-nccl-tests-2node-no-ib-device-using-network-socket-4ranks.log", &text);
	assert_non_null(strstr(msg_of(doc, "socket-between-nodes"), "2 hosts use TCP sockets"));
	assert_quoted(diag(doc, "socket-between-nodes"), text);
	json_decref(doc);
	free(text);
}

/* 5. Abort COMPLETE: reported, with the ranks and the error logged before the first abort. */
static void aborted(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("145-abort-complete-socket-traces-teardown-dgx1v.log", &text);
	const char *m = msg_of(doc, "comm-aborted");
	assert_non_null(strstr(m, "on ranks 0,3"));
	assert_non_null(strstr(m, "no error is logged before it"));
	assert_quoted(diag(doc, "comm-aborted"), text);
	assert_int_equal(int_of(doc, "nranks"), 4);
	json_decref(doc);
	free(text);
	/* a real run: the watchdog fires, PyTorch aborts the communicator */
	text = slurp("tests/fixtures/logs/h200x1_watchdog_timeout.log");
	doc = scan_text(text);
	m = msg_of(doc, "comm-aborted");
	assert_non_null(strstr(m, "the error logged before the first abort: [E1130"));
	assert_quoted(diag(doc, "comm-aborted"), text);
	json_decref(doc);
	free(text);
}

/* 6. Nothing the log does not say: UNDELIVERABLE is the fabric's, not a crashed peer; SHM without NCCL_P2P_DISABLE. */
static void only_what_the_log_says(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("108-torchrun-ofi-undeliverable-slingshot-nccl2288.log", &text);
	const char *m = msg_of(doc, "ofi-completion-error");
	assert_non_null(strstr(m, "could not deliver the message to the peer's endpoint"));
	assert_quoted(diag(doc, "ofi-completion-error"), text);
	assert_null(diag(doc, "peer-connection-closed"));
	assert_false(says(doc, "crash"));
	assert_false(says(doc, "closed"));
	assert_string_equal(cause_of(doc), "ofi_completion_error");
	assert_null(strstr(json_string_value(json_object_get(diag(doc, "nccl-error"), "fix")), "died"));
	json_decref(doc);
	free(text);
	doc = scan_corpus("147-ray-esc-text-shm-direct-dedup-note-vllm-4gpu.log", &text);
	m = msg_of(doc, "shm-instead-of-p2p");
	assert_null(strstr(m, "NCCL_P2P_DISABLE"));
	assert_null(strstr(json_string_value(json_object_get(diag(doc, "shm-instead-of-p2p"), "fix")), "unset NCCL_P2P_DISABLE;"));
	assert_non_null(strstr(m, "the log does not say why"));
	assert_quoted(diag(doc, "shm-instead-of-p2p"), text);
	json_decref(doc);
	free(text);
}

/* The value an environment variable got, as the report says; "" when none. */
static const char *env_value(const json_t *doc, const char *name)
{
	size_t i;
	const json_t *o;
	json_array_foreach(json_object_get(doc, "env"), i, o)
		if (!strcmp(json_string_value(json_object_get(o, "name")), name))
			return json_string_value(json_object_get(o, "value"));
	return "";
}

/* 7. Ray's dedup tails: cut from values, no false job size, counted as what they are. */
static void ray_dedup(void **state)
{
	(void)state;
	json_t *doc = scan_corpus("146-ray-repeated-across-cluster-truncated-channel-vllm-8gpu.log", NULL);
	assert_int_equal(int_of(doc, "nranks"), 8);
	assert_string_equal(env_value(doc, "NCCL_P2P_LEVEL"), "NVL");
	assert_string_equal(env_value(doc, "NCCL_CUMEM_ENABLE"), "0");
	const json_t *in = json_object_get(doc, "input");
	assert_int_equal(int_of(in, "ray_dedup_lines"), 8);
	assert_int_equal(int_of(in, "ray_folded_lines"), 15 * 7 + 27);
	assert_non_null(strstr(json_string_value(json_array_get(json_object_get(doc, "notes"), 0)), "Ray deduplicated"));
	json_decref(doc);
	/* the colour codes pasted as text ("ESC[36m", a Windows console's arrow) hide no Ray tag */
	doc = scan_corpus("147-ray-esc-text-shm-direct-dedup-note-vllm-4gpu.log", NULL);
	assert_int_equal(int_of(doc, "nranks"), 4);
	assert_int_equal(int_of(json_object_get(doc, "input"), "ray_folded_lines"), 4);
	json_decref(doc);
	doc = scan_corpus("167-ray-windows-console-arrow-esc-p2p-disabled-eks-vllm.log", NULL);
	assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "hosts"), 0)), "vllm-0");
	assert_int_equal(int_of(json_object_get(doc, "input"), "nccl_lines"), 7);
	json_decref(doc);
}

/* 8. NCCL RAS tables: the job's state, and what it says of a watchdog timeout. */
static void ras_state(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("156-ras-running-ok-then-watchdog-timeout-256ranks-nccl2262.log", &text);
	const char *m = msg_of(doc, "watchdog-timeout");
	assert_non_null(strstr(m, "NCCL RAS shows every communicator RUNNING with no error and all ranks alive"));
	assert_quoted(diag(doc, "watchdog-timeout"), text);
	const json_t *ras = json_object_get(doc, "ras");
	assert_int_equal(int_of(ras, "groups"), 1);
	assert_int_equal(int_of(ras, "groups_ok"), 1);
	assert_int_equal(int_of(ras, "nodes"), 32);
	json_decref(doc);
	free(text);
	/* RAS's example of a dead process (tests/fixtures/ras), then a watchdog line of a real run */
	char *ras_text = slurp("tests/fixtures/ras/example_2.30.7_dead.txt");
	text = nw_asprintf("%s[rank0]:[E1130 12:28:49.871376368 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective "
	                   "operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
	                   "Timeout(ms)=10000) ran for 10080 milliseconds before timing out.\n", ras_text);
	doc = scan_text(text);
	assert_non_null(strstr(msg_of(doc, "watchdog-timeout"), "names a process it considers dead"));
	assert_non_null(strstr(msg_of(doc, "ras-ranks-missing"), "considers 1 process of the job dead"));
	assert_quoted(diag(doc, "ras-ranks-missing"), text);
	assert_quoted(diag(doc, "watchdog-timeout"), text);
	json_decref(doc);
	free(text);
	free(ras_text);
	ras_text = slurp("tests/fixtures/ras/docs_2.24_incomplete.txt");
	doc = scan_text(ras_text);
	assert_non_null(strstr(msg_of(doc, "ras-ranks-missing"), "no data from 1 process"));
	assert_int_equal(int_of(json_object_get(doc, "ras"), "missing_processes"), 1);
	json_decref(doc);
	free(ras_text);
}

/* The first object of a report array whose "host" is host. */
static const json_t *of_host(const json_t *doc, const char *key, const char *host)
{
	size_t i;
	const json_t *o;
	json_array_foreach(json_object_get(doc, key), i, o)
		if (!strcmp(json_string_value(json_object_get(o, "host")), host))
			return o;
	fail_msg("no %s entry for '%s'", key, host);
	return NULL;
}

/* 9. The network without channel lines, and NCCL's topology dump summed up. */
static void network_and_topology(void **state)
{
	(void)state;
	json_t *doc = scan_corpus("141-efa-p5en-h200-nic-groups-using-network-libfabric.log", NULL);
	assert_string_equal(json_string_value(json_object_get(of_host(doc, "networks", "8h200-2"), "network")), "Libfabric");
	const json_t *n3 = of_host(doc, "networks", "8h200-3");
	assert_string_equal(json_string_value(json_object_get(n3, "ofi_provider")), "efa");
	assert_int_equal(int_of(n3, "ofi_nics"), 16);
	json_decref(doc);
	doc = scan_corpus("149-topology-dump-h200-vm-nics-nvswitch.log", NULL);
	const json_t *t = of_host(doc, "topology", "node_2");
	assert_int_equal(int_of(t, "gpus"), 3);
	assert_true(json_is_true(json_object_get(t, "nvswitch")));
	assert_int_equal(int_of(t, "nics"), 3);
	assert_true(json_real_value(json_object_get(t, "nvlink_gbs")) > 370.7);
	assert_true(json_real_value(json_object_get(t, "net_gbs")) > 49.9);
	assert_true(json_real_value(json_object_get(t, "max_bw")) > 47.9);
	json_decref(doc);
	/* V100s joined to each other by NVLink, no NVSwitch */
	doc = scan_corpus("165-sagemaker-p3-topology-dump-nvl-no-nvswitch.log", NULL);
	t = of_host(doc, "topology", "ip-10-0-103-105");
	assert_false(json_is_true(json_object_get(t, "nvswitch")));
	assert_int_equal(int_of(t, "nvlink_peers"), 1);
	json_decref(doc);
	/* the older "maxWidth" wording */
	doc = scan_corpus("151-topology-maxwidth-socket-ipoib-no-ibverbs-hgx-a100.log", NULL);
	t = of_host(doc, "topology", "node2");
	assert_true(json_real_value(json_object_get(t, "max_bw")) > 251.9);
	assert_int_equal(int_of(t, "gpus"), 1);
	json_decref(doc);
}

/* 10. GPUDirect RDMA off: NCCL's own reason, both options, no nvidia-peermem for a distance. */
static void gdr_reason(void **state)
{
	(void)state;
	char *text;
	json_t *doc = scan_corpus("152-gdr-disabled-distance-7-gt-4-one-line.log", &text);
	const char *m = msg_of(doc, "gdr-disabled");
	assert_non_null(strstr(m, "PCIe distance 7, beyond the 4 that NCCL_NET_GDR_LEVEL allows (its default"));
	assert_null(strstr(m, "peermem"));
	const char *fix = json_string_value(json_object_get(diag(doc, "gdr-disabled"), "fix"));
	assert_true(strstr(fix, "raise NCCL_NET_GDR_LEVEL") < strstr(fix, "nvidia-peermem"));
	assert_quoted(diag(doc, "gdr-disabled"), text);
	json_decref(doc);
	free(text);
	/* the newer wording, "GPU 2[2]" and ">=" (with a real prefix of the H200 fixture) */
	doc = scan_text("vm:3650:3712 [2] NCCL INFO GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)\n");
	assert_non_null(strstr(msg_of(doc, "gdr-disabled"), "PCIe distance 3, beyond the 2"));
	json_decref(doc);
	doc = scan_corpus("154-gdr-disabled-for-hca-roce-16ranks-peermem-loaded.log", &text);
	assert_non_null(strstr(msg_of(doc, "gdr-disabled"), "nvidia-peermem not loaded or not working"));
	assert_quoted(diag(doc, "gdr-disabled"), text);
	json_decref(doc);
	free(text);
	/* NET/Socket's "GPU Direct RDMA Disabled for HCA 0 'lo'" is every socket's, not a finding */
	doc = scan_corpus("150-socket-lo-loopback-bgp-unnumbered-topology-dump.log", NULL);
	assert_null(diag(doc, "gdr-disabled"));
	json_decref(doc);
}

/* 11. Counts and labels: early "[0]" lines, 2.9 trees, trace places, a cut Ray line. */
static void counts_and_labels(void **state)
{
	(void)state;
	/* a process logs bootstrap lines on device [0] before it sets its device (lines of the H200 fixture's kind) */
	json_t *doc = scan_text("vm:100:100 [0] NCCL INFO Bootstrap : Using eth0:192.0.2.2<0>\n"
	                        "vm:101:101 [0] NCCL INFO Bootstrap : Using eth0:192.0.2.2<0>\n"
	                        "vm:100:200 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 commId 0x5 - Init START\n"
	                        "vm:101:201 [1] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2a000 commId 0x5 - Init START\n");
	assert_int_equal(int_of(doc, "ranks_seen"), 2);
	assert_int_equal(int_of(doc, "nranks"), 2);
	json_decref(doc);
	/* NCCL 2.10 under mpirun: ring order and trees come before the communicator's only line */
	doc = scan_corpus("014-nccl-tests-efa-kubeflow-mpijob-t4.txt", NULL);
	const json_t *c = json_array_get(json_object_get(doc, "communicators"), 0);
	assert_int_equal(int_of(c, "channels"), 2);
	assert_string_equal(json_string_value(json_object_get(c, "ring")), "0 1");
	assert_string_equal(json_string_value(json_object_get(c, "tree")), "[0] -1/-1/-1->1->0");
	json_decref(doc);
	/* one file and code from four places: said as four places, not four times the first */
	doc = scan_corpus("161-gke-a3ultra-network-gib-not-found-init-traces.log", NULL);
	const json_t *g = json_array_get(json_object_get(doc, "errors"), 1);
	assert_string_equal(json_string_value(json_object_get(g, "first")),
	                    "init.cc:321, :1533, :1799, :1837 -> 5 (ncclInvalidUsage; 4 places)");
	assert_string_equal(cause_of(doc), "invalid_usage");
	json_decref(doc);
	/* two lines glued in pasting are two lines; a masked prefix is read without a process */
	doc = scan_corpus("168-ofi-libfabric-v10-plugin-glued-lines-p5-nccl2273.log", NULL);
	assert_int_equal(int_of(doc, "nhosts"), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "versions"), 0), "version")),
	                    "2.27.3+cuda12.9");
	json_decref(doc);
	doc = scan_corpus("162-masked-prefix-roce-ib-error12-then-5-sglang-2node.log", NULL);
	assert_string_equal(cause_of(doc), "ib_completion_error");
	json_decref(doc);
}

/* Ray's tail and CloudWatch's cells as lineprefix strips them. */
static void prefixes(void **state)
{
	(void)state;
	char line[512];
	size_t n;
	struct nw_lp lp;
	strcpy(line, "(RayWorkerWrapper pid=539) vllm-0:539:539 [6] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL [repeated 15x across cluster]");
	size_t off = nw_lp_strip(line, strlen(line), &n, &lp);
	assert_int_equal(lp.repeated, 15);
	assert_memory_equal(line + off + n - 3, "NVL", 3);
	strcpy(line, "  | 2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0> | "
	             "ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>");
	off = nw_lp_strip(line, strlen(line), &n, &lp);
	assert_int_equal(n, strlen("ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>"));
	assert_memory_equal(line + off, "ip-10-36-29-253:79:79", 21);
	strcpy(line, "ESC[36m(RayWorkerVllm pid=4095)ESC[0m mwh:4095:4484 [1] NCCL INFO P2P Chunksize set to 131072");
	off = nw_lp_strip(line, strlen(line), &n, &lp);
	assert_memory_equal(line + off, "mwh:4095:4484", 13);
	assert_string_equal(lp.tag, "RayWorkerVllm pid=4095");
}

/* A log for each diagnosis rule: the public log that shows it, or the lines it needs where none does. */
static const struct { const char *id, *file, *text; } rule_logs[] = {
	{ "nccl-version-mismatch", NULL,
	  "[1,0]<stdout>:nodeA:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
	  "[1,1]<stdout>:nodeB:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
	  "[1,0]<stdout>:NCCL version 2.18.3+cuda12.2\n[1,1]<stdout>:NCCL version 2.21.5+cuda12.4\n" },
	{ "collective-mismatch", "corpus/072-collective-mismatch-pdsh-ip-prefix-nccl2143.log", NULL },
	{ "cuda-driver-too-old", "corpus/073-nccl-tests-cuda-driver-insufficient.txt", NULL },
	{ "gpu-unsupported", "corpus/124-rtx5090-maxsharedmem-warp-iface-nccl2251.log", NULL },
	{ "ring-inconsistent", "corpus/098-ring-not-loop-back-hostid-line-numbers.log", NULL },
	{ "ras-mismatch", "corpus/074-ncclras-mismatch-report-nccl2262.txt", NULL },
	{ "ras-ranks-missing", "ras/example_2.30.7_dead.txt", NULL },
	{ "plugin-hang", NULL,
	  "NCCLWATCH v=1 t=1764506373.250 comm=9a1c2e5f4b3d7a10 name=default_pg rank=3 nranks=8 interval_s=10.0 ops=0 "
	  "bytes=0 busy_pct=0.0 slow_ops=0 hung=1 top=\n" },
	{ "collnet-setup-failed", "corpus/163-sharp-streaming-tree-lock-failed-2node-plugin.log", NULL },
	{ "socket-loopback", "corpus/096-srun-label-flattened-software-abort-nccl2185.log", NULL },
	{ "size1-communicators", "logs/h200x1_mpirun_size1.log", NULL },
	{ "duplicate-gpu", "logs/h200x1_dup_gpu.log", NULL },
	{ "no-socket-interface", "logs/h200x1_bad_socket_ifname.log", NULL },
	{ "crash-bus-error", "corpus/033-buserror-deepspeed-docker-8gpu.log", NULL },
	{ "crash-segv", "corpus/029-segv-libnccl-timestamp-k8s.log", NULL },
	{ "cuda-oom", "corpus/006-oom-calloc-peer-closed-slurm.log", NULL },
	{ "ib-completion-error", "corpus/001-ib-status12-vendor129-k8s.log", NULL },
	{ "ofi-completion-error", "corpus/108-torchrun-ofi-undeliverable-slingshot-nccl2288.log", NULL },
	{ "ofi-provider-unusable", "corpus/139-ofi-fi-getinfo-no-data-container-p5.log", NULL },
	{ "ofi-setup-failed", "corpus/071-efa-2019-mpirun-tag-ofi-open-av-failed.log", NULL },
	{ "socket-connect-failed", "corpus/052-nccl2213-old-format-connect-timed-out.log", NULL },
	{ "nvls-setup-failed", "corpus/015-nvls-invalid-argument-timestamp.log", NULL },
	{ "sysfs-not-visible", "corpus/005-sysfs-realpath-wsl2-nccl278.log", NULL },
	{ "shm-failure", "corpus/002-shm-fallocate-nccl273-docker.log", NULL },
	{ "watchdog-timeout", "logs/h200x1_watchdog_timeout.log", NULL },
	{ "rendezvous-timeout", "logs/h200x1_rank1_never_joins.log", NULL },
	{ "nccl-error", "corpus/108-torchrun-ofi-undeliverable-slingshot-nccl2288.log", NULL },
	{ "peer-connection-closed", "corpus/076-peer-connection-closed-socket-recv-failed.log", NULL },
	{ "comm-aborted", "corpus/145-abort-complete-socket-traces-teardown-dgx1v.log", NULL },
	{ "init-incomplete", "corpus/050-mpirun-tag-32ranks-eks-bert-init-start.log", NULL },
	{ "net-within-node", "logs/h200x1_two_ranks_one_gpu_hostid.log", NULL },
	{ "socket-between-nodes", "corpus/158-cluster-name-hosts-net-socket-between-nodes-p2p-ipc-read.log", NULL },
	{ "ofi-tcp-provider", "corpus/140-ofi-provider-tcp-bootstrap-lo-docker-p4d-nccl2234.log", NULL },
	{ "shm-instead-of-p2p", "corpus/077-software-caused-connection-abort-shm-direct.log", NULL },
	{ "gdr-disabled", "corpus/023-gdr-distance-5-gt-4-bert-multinode.log", NULL },
	{ "forced-algorithm", "corpus/080-h800-p2p-direct-pointer-0-nvls-channels.log", NULL },
	{ "forced-protocol", NULL,
	  "vm:3650:3650 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n" },
	{ "transport-disabled", "logs/h200x1_p2p_disable.log", NULL },
	{ "nccl-warnings", "corpus/001-ib-status12-vendor129-k8s.log", NULL },
	{ "ranks-missing", "corpus/103-nvls-64rank-init-complete-then-ib-status12.log", NULL },
};

/* Every rule of the table has a log above, fires on it, and quotes only lines that are in it. */
static void every_rule_quotes_its_lines(void **state)
{
	(void)state;
	const struct nw_log_rule_info *rules;
	size_t nrules = nw_log_rules(&rules);
	for (size_t i = 0; i < nrules; i++) {
		size_t k = 0;
		while (k < NW_ARRAY_LEN(rule_logs) && strcmp(rule_logs[k].id, rules[i].id))
			k++;
		if (k == NW_ARRAY_LEN(rule_logs))
			fail_msg("rule '%s' has no log in rule_logs[]", rules[i].id);
		char *text;
		if (rule_logs[k].file) {
			char *rel = nw_asprintf("tests/fixtures/%s", rule_logs[k].file);
			text = slurp(rel);
			free(rel);
		} else {
			text = nw_strdup(rule_logs[k].text);
		}
		json_t *doc = scan_text(text);
		const json_t *d = diag(doc, rules[i].id);
		if (!d)
			fail_msg("rule '%s' does not fire on its log", rules[i].id);
		assert_quoted(d, text);
		json_decref(doc);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ofi_provider_unusable),
		cmocka_unit_test(libfabric_lines),
		cmocka_unit_test(cloudwatch),
		cmocka_unit_test(sockets_between_nodes),
		cmocka_unit_test(aborted),
		cmocka_unit_test(only_what_the_log_says),
		cmocka_unit_test(ray_dedup),
		cmocka_unit_test(ras_state),
		cmocka_unit_test(network_and_topology),
		cmocka_unit_test(gdr_reason),
		cmocka_unit_test(counts_and_labels),
		cmocka_unit_test(prefixes),
		cmocka_unit_test(every_rule_quotes_its_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
