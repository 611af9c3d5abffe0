/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch doctor: run the table of checks (src/probe/doctor_checks.c)
 * over this machine, container and environment, print one table of
 * findings, and exit 0 (nothing above info), 1 (warnings) or 2 (errors).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "util/util.h"

/* What one doctor run holds; released at the command's exit. */
struct doctor_state {
	struct nw_nvml_snap *snap;
	struct nw_topo *topo;
	struct nw_doc_ctx ctx;
	struct nw_findings findings;
};

static void print_finding(const struct nw_finding *f)
{
	printf("%-6s %-20s %s\n", nw_sev_name(f->sev), f->id, f->seen);
	if (f->sev >= NW_SEV_INFO) {
		if (f->why[0])
			printf("%-27s why: %s\n", "", f->why);
		if (f->fix[0])
			printf("%-27s fix: %s\n", "", f->fix);
	}
}

static void print_text(const struct nw_findings *f, int problems_only, size_t nchecks)
{
	size_t cnt[NW_SEV_ERROR + 1] = { 0 };
	for (size_t i = 0; i < f->n; i++)
		cnt[f->v[i].sev]++;
	printf("ncclwatch doctor: %zu check%s: %zu error%s, %zu warning%s, %zu info, %zu ok, %zu skipped\n\n",
	       nchecks, nchecks == 1 ? "" : "s", cnt[NW_SEV_ERROR], cnt[NW_SEV_ERROR] == 1 ? "" : "s", cnt[NW_SEV_WARN],
	       cnt[NW_SEV_WARN] == 1 ? "" : "s", cnt[NW_SEV_INFO], cnt[NW_SEV_OK], cnt[NW_SEV_SKIP]);
	printf("%-6s %-20s %s\n", "LEVEL", "CHECK", "SEEN");
	for (int s = NW_SEV_ERROR; s >= NW_SEV_OK; s--) {
		if (s == NW_SEV_INFO - 1 && problems_only)
			break;
		/* Order: error, warn, info, then ok and skip in table order. */
		if (s == NW_SEV_SKIP)
			continue;
		for (size_t i = 0; i < f->n; i++) {
			enum nw_sev v = f->v[i].sev;
			if (s == NW_SEV_OK ? (v == NW_SEV_OK || v == NW_SEV_SKIP) : v == (enum nw_sev)s)
				print_finding(&f->v[i]);
		}
	}
}

/* What the command line asks for; only[] points into only_buf (freed by the command). */
struct doctor_args {
	struct nw_opt_out json;
	int problems;
	long long expect_gpus;  /* -1 not given */
	double interval;        /* -1 not given */
	const char *sysroot, *nvml_json, *nccl_lib;
	char *only_buf;
	const char *only[32];
	size_t nonly;
};

/* --only ID[,ID...]: the names, empty ones left out (a later --only replaces an earlier one). */
static int only_opt(void *opts, const char *arg, const char *name, char *err, size_t errlen)
{
	struct doctor_args *a = opts;
	(void)name, (void)err, (void)errlen;
	free(a->only_buf);
	a->only_buf = nw_strdup(arg);
	a->nonly = 0;
	for (char *p = a->only_buf, *e; p && *p && a->nonly < NW_ARRAY_LEN(a->only); p = e) {
		e = strchr(p, ',');
		if (e)
			*e++ = '\0';
		if (*p)
			a->only[a->nonly++] = p;
	}
	return 0;
}

static const struct nw_opt doctor_options[] = {
	NW_OPT_JSON(struct doctor_args, json, "\n(schema ncclwatch.doctor/1)"),
	{ .kind = NW_OPTK_CALL, .lname = "only", .argh = "ID[,ID...]", .call = only_opt, .flags = NW_OPTF_LIST,
	  .help = "run only these checks: ids (\"hw.nvlink\") or groups\n(\"version\", \"env\", \"os\", \"hw\", \"cpu\", \"node\")" },
	{ .kind = NW_OPTK_FLAG, .lname = "problems", .off = NW_F_INT(struct doctor_args, problems),
	  .help = "list only findings at info or above (text output)" },
	{ .kind = NW_OPTK_DURATION, .lname = "interval", .off = NW_F_DBL(struct doctor_args, interval), .argh = "DUR",
	  .dmax = 600, .help = "read NVLink error counters twice, DUR apart, to see\n"
	                        "them grow (\"2s\", \"500ms\"; default 1s with a live driver\n"
	                        "and NVLinks, 0 to read once)" },
	{ .kind = NW_OPTK_LONG, .lname = "expect-gpus", .off = NW_F_LONG(struct doctor_args, expect_gpus), .argh = "N",
	  .max = NW_NVML_MAX_GPUS, .help = "this node should have N GPUs (an error otherwise)" },
	{ .kind = NW_OPTK_FILE, .lname = "nccl-lib", .off = NW_F_STR(struct doctor_args, nccl_lib), .argh = "PATH",
	  .help = "the NCCL to check instead of the one found" },
	NW_OPTS_MACHINE(struct doctor_args, sysroot, nvml_json),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_doctor = {
	.name = "doctor",
	.about = "Checks what in this machine, container or environment will hurt NCCL:\n"
	         "versions (driver, CUDA, the NCCL that loads, other libnccl copies), NCCL_*\n"
	         "variables (typos, missing interfaces, workarounds that cost bandwidth, debug\n"
	         "logging), CUDA_VISIBLE_DEVICES, MASTER_ADDR, /dev/shm, locked memory,\n"
	         "RemoveIPC, PCIe ACS, IOMMU, VMs, NVLink state and errors, PCIe link training,\n"
	         "peer-to-peer, persistence, ECC, GPUDirect RDMA, fabric manager, CPU binding,\n"
	         "and node health: GPU count, Xid errors since boot, clocks held down,\n"
	         "InfiniBand/RoCE port state, rate and error counters.\n"
	         "Each finding names what it saw, why it matters and how to fix it; every\n"
	         "check is listed in docs/doctor.md. Without a GPU it runs every check that\n"
	         "needs none and says which it skipped and why.\n",
	.opts = doctor_options,
	.footer = "exit status: 0 nothing above info, 1 warnings, 2 errors (or a usage error).\n",
};

/* The JSON report (schema ncclwatch.doctor/1) where --json says. 0, or -1 after printing why. */
static int print_json(const struct nw_opt_out *j, const struct nw_findings *f)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.doctor/1"));
	char host[256], when[32];
	nw_hostname(host, sizeof(host));
	nw_utc_iso(when, sizeof(when));
	json_object_set_new(doc, "host", json_string(host));
	json_object_set_new(doc, "time", json_string(when));
	json_object_set_new(doc, "worst", json_string(nw_sev_name(nw_findings_worst(f))));
	json_object_set_new(doc, "exit", json_integer(nw_findings_exit(f)));
	json_object_set_new(doc, "findings", nw_findings_to_json(f));
	int rc = nw_cli_json_write("doctor", j, doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	return rc;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_args a;
	struct doctor_state st;
	char err[NW_ERRLEN];
	int rc = 2;
	memset(&a, 0, sizeof(a));
	memset(&st, 0, sizeof(st));
	a.interval = -1;
	a.expect_gpus = -1;
	struct nw_opt_res res;
	enum nw_opt_status ps = nw_opt_parse(&nw_spec_doctor, &a, argc, argv, &res);
	if (ps != NW_OPT_OK) {
		rc = nw_opt_exit(&nw_spec_doctor, ps);
		goto out;
	}
	const char *bad = nw_doc_unmatched(a.only, a.nonly);
	if (bad) {
		nw_error("--only '%s' matches no check; 'ncclwatch help doctor' and docs/doctor.md list them", bad);
		goto out;
	}
	st.snap = nw_calloc(1, sizeof(*st.snap));
	st.topo = nw_calloc(1, sizeof(*st.topo));
	if (nw_doc_probe_all(nw_sys_root(a.sysroot), a.nvml_json, a.nccl_lib, a.interval, st.snap, st.topo, &st.ctx,
	                     err, sizeof(err)) < 0) {
		nw_error("%s", err);
		goto out;
	}
	st.ctx.expect_gpus = (int)a.expect_gpus;
	nw_doc_run(&st.ctx, a.only, a.nonly, &st.findings);
	if (nw_cli_json_text(&a.json))
		print_text(&st.findings, a.problems, nw_doc_nselected(a.only, a.nonly));
	rc = nw_findings_exit(&st.findings);
	if (a.json.on && print_json(&a.json, &st.findings))
		rc = 2;
out:
	free(a.only_buf);
	nw_findings_release(&st.findings);
	nw_doc_ctx_release(&st.ctx);
	free(st.snap);
	free(st.topo);
	return rc;
}
