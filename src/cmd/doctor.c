/*
 * ncclwatch doctor: run the table of checks (src/probe/doctor_checks.c)
 * over this machine, container and environment, print one table of
 * findings, and exit 0 (nothing above info), 1 (warnings) or 2 (errors).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/sysfs.h"
#include "probe/topo.h"
#include "util/util.h"

const char usage_doctor[] =
	"usage: ncclwatch doctor [options]\n"
	"\n"
	"Checks what in this machine, container or environment will hurt NCCL:\n"
	"versions (driver, CUDA, the NCCL that loads, other libnccl copies), NCCL_*\n"
	"variables (typos, missing interfaces, workarounds that cost bandwidth, debug\n"
	"logging), CUDA_VISIBLE_DEVICES, MASTER_ADDR, /dev/shm, locked memory,\n"
	"RemoveIPC, PCIe ACS, IOMMU, VMs, NVLink state and errors, PCIe link training,\n"
	"peer-to-peer, persistence, ECC, GPUDirect RDMA, fabric manager, CPU binding.\n"
	"Each finding names what it saw, why it matters and how to fix it; every\n"
	"check is listed in docs/doctor.md. Without a GPU it runs every check that\n"
	"needs none and says which it skipped and why.\n"
	"\n"
	"options:\n"
	"  --json              JSON (schema ncclwatch.doctor/1) on stdout\n"
	"  --only ID[,ID...]   run only these checks: ids (\"hw.nvlink\") or groups\n"
	"                      (\"version\", \"env\", \"os\", \"hw\", \"cpu\")\n"
	"  --problems          list only findings at info or above (text output)\n"
	"  --interval DUR      read NVLink error counters twice, DUR apart, to see\n"
	"                      them grow (\"2s\", \"500ms\"; default 1s with a live driver\n"
	"                      and NVLinks, 0 to read once)\n"
	"  --nccl-lib PATH     the NCCL to check instead of the one found\n"
	"  --sysroot DIR       read /sys, /proc and /etc under DIR (also $NCCLWATCH_SYSROOT)\n"
	"  --nvml-json FILE    replay recorded NVML answers (also $NCCLWATCH_NVML_JSON)\n"
	"  -h, --help          this text\n"
	"\n"
	"exit status: 0 nothing above info, 1 warnings, 2 errors (or a usage error).\n";

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

int cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "only", required_argument, NULL, 'o' },
		{ "problems", no_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "nccl-lib", required_argument, NULL, 'L' },
		{ "sysroot", required_argument, NULL, 'R' },
		{ "nvml-json", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, problems = 0, rc = 2;
	double interval = -1;
	const char *sysroot = NULL, *nvml_json = NULL, *nccl_lib = NULL;
	char *only_buf = NULL;
	const char *only[32];
	size_t nonly = 0;
	char err[NW_ERRLEN];
	struct doctor_state st;
	memset(&st, 0, sizeof(st));

	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'p': problems = 1; break;
		case 'o':
			free(only_buf);
			only_buf = nw_strdup(optarg);
			nonly = 0;
			for (char *p = only_buf, *e; p && *p && nonly < NW_ARRAY_LEN(only); p = e) {
				e = strchr(p, ',');
				if (e)
					*e++ = '\0';
				if (*p)
					only[nonly++] = p;
			}
			break;
		case 'i':
			if (nw_parse_duration(optarg, &interval, err, sizeof(err)) < 0 || interval > 600) {
				nw_error("--interval: %s", interval > 600 ? "at most 10m" : err);
				goto out;
			}
			break;
		case 'L': nccl_lib = optarg; break;
		case 'R': sysroot = optarg; break;
		case 'N': nvml_json = optarg; break;
		case 'h': fputs(usage_doctor, stdout); rc = 0; goto out;
		case ':': nw_error("option '%s' needs a value; see 'ncclwatch help doctor'", argv[optind - 1]); goto out;
		default: nw_error("unknown option '%s'; see 'ncclwatch help doctor'", argv[optind - 1]); goto out;
		}
	}
	if (optind < argc) {
		nw_error("unexpected argument '%s'; see 'ncclwatch help doctor'", argv[optind]);
		goto out;
	}
	size_t nchecks;
	const struct nw_doc_check *table = nw_doc_checks(&nchecks);
	for (size_t k = 0; k < nonly; k++) {
		int match = 0;
		for (size_t i = 0; i < nchecks; i++)
			match |= nw_doc_selects(only[k], table[i].id);
		if (!match) {
			nw_error("--only '%s' matches no check; 'ncclwatch help doctor' and docs/doctor.md list them", only[k]);
			goto out;
		}
	}

	st.snap = nw_calloc(1, sizeof(*st.snap));
	st.topo = nw_calloc(1, sizeof(*st.topo));
	if (nw_doc_probe_all(nw_sys_root(sysroot), nvml_json, nccl_lib, interval, st.snap, st.topo, &st.ctx,
	                     err, sizeof(err)) < 0) {
		nw_error("%s", err);
		goto out;
	}
	nw_doc_run(&st.ctx, only, nonly, &st.findings);

	if (json) {
		json_t *doc = json_object();
		json_object_set_new(doc, "schema", json_string("ncclwatch.doctor/1"));
		char host[256], when[32];
		nw_hostname(host, sizeof(host));
		nw_utc_iso(when, sizeof(when));
		json_object_set_new(doc, "host", json_string(host));
		json_object_set_new(doc, "time", json_string(when));
		json_object_set_new(doc, "worst", json_string(nw_sev_name(nw_findings_worst(&st.findings))));
		json_object_set_new(doc, "exit", json_integer(nw_findings_exit(&st.findings)));
		json_object_set_new(doc, "findings", nw_findings_to_json(&st.findings));
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else {
		size_t nrun = 0;
		for (size_t i = 0; i < nchecks; i++) {
			int sel = nonly == 0;
			for (size_t k = 0; k < nonly; k++)
				sel |= nw_doc_selects(only[k], table[i].id);
			nrun += (size_t)sel;
		}
		print_text(&st.findings, problems, nrun);
	}
	rc = nw_findings_exit(&st.findings);
out:
	free(only_buf);
	nw_findings_release(&st.findings);
	nw_doc_ctx_release(&st.ctx);
	free(st.snap);
	free(st.topo);
	return rc;
}
