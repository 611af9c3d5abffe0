/* SPDX-License-Identifier: Apache-2.0 */
/* What the exporter's process scan reads: cgroup paths and container log names (export/procscan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "export/procscan.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "0a1b2c3d-1111-4222-8333-444455556666"

static void cgroup_paths(void **state)
{
	(void)state;
	char uid[40], cid[96];
	/* cgroup v1, the cgroupfs driver: the runtime is not named */
	assert_int_equal(nw_ps_parse_cgroup("12:pids:/kubepods/besteffort/pod" UID "/" CID "\n11:cpu:/\n", uid,
	                                    sizeof(uid), cid, sizeof(cid)), 1);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, CID);
	/* cgroup v2, the systemd driver, containerd; seen from another cgroup namespace */
	assert_int_equal(nw_ps_parse_cgroup("0::/../../kubepods-burstable-pod0a1b2c3d_1111_4222_8333_444455556666.slice/"
	                                    "cri-containerd-" CID ".scope\n", uid, sizeof(uid), cid, sizeof(cid)), 1);
	assert_string_equal(uid, UID);
	assert_string_equal(cid, "containerd://" CID);
	assert_int_equal(nw_ps_parse_cgroup("0::/kubepods.slice/kubepods-pod0a1b2c3d_1111_4222_8333_444455556666.slice/"
	                                    "crio-" CID ".scope", uid, sizeof(uid), cid, sizeof(cid)), 1);
	assert_string_equal(cid, "cri-o://" CID);
	/* a pod's own cgroup (no container): the UID alone */
	assert_int_equal(nw_ps_parse_cgroup("0::/kubepods/pod" UID "\n", uid, sizeof(uid), cid, sizeof(cid)), 1);
	assert_string_equal(cid, "");
	/* not a pod: a user session, a Docker container outside Kubernetes, garbage */
	assert_int_equal(nw_ps_parse_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n", uid, sizeof(uid), cid,
	                                    sizeof(cid)), 0);
	assert_int_equal(nw_ps_parse_cgroup("0::/system.slice/docker-" CID ".scope\n", uid, sizeof(uid), cid, sizeof(cid)), 0);
	assert_int_equal(nw_ps_parse_cgroup("0::/kubepods/podnot-a-uid\n", uid, sizeof(uid), cid, sizeof(cid)), 0);
	assert_int_equal(nw_ps_parse_cgroup("", uid, sizeof(uid), cid, sizeof(cid)), 0);
	assert_int_equal(nw_ps_parse_cgroup("kubepodspod", uid, sizeof(uid), cid, sizeof(cid)), 0);
}

static void log_names(void **state)
{
	(void)state;
	char pod[128], ns[64], ctr[64], cid[80];
	assert_int_equal(nw_ps_parse_logname("train-llm-0_ml-research_pytorch-" CID ".log", pod, sizeof(pod), ns,
	                                     sizeof(ns), ctr, sizeof(ctr), cid, sizeof(cid)), 1);
	assert_string_equal(pod, "train-llm-0");
	assert_string_equal(ns, "ml-research");
	assert_string_equal(ctr, "pytorch");
	assert_string_equal(cid, CID);
	static const char *const bad[] = {
		"train_ml_pytorch-" CID ".txt",          /* not a log */
		"train_ml_pytorch-0123.log",             /* no container id */
		"train_ml-" CID ".log",                  /* two parts */
		"a_b_c_d-" CID ".log",                   /* four parts */
		"_ml_pytorch-" CID ".log",               /* empty pod */
		"train__pytorch-" CID ".log",            /* empty namespace */
		"train_ml_-" CID ".log",                 /* empty container */
		"",
		".log",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(nw_ps_parse_logname(bad[i], pod, sizeof(pod), ns, sizeof(ns), ctr, sizeof(ctr), cid,
		                                     sizeof(cid)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cgroup_paths),
		cmocka_unit_test(log_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
