/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logscan: read NCCL_DEBUG=INFO logs as an expert would: what NCCL did
 * (versions, communicators, transports, rings and trees, algorithms, the
 * environment) and what went wrong (grouped errors, then diagnoses).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "parse/ncclog.h"
#include "util/strbuf.h"
#include "util/util.h"

struct logscan_opts {
	struct nw_opt_out json;
	int brief, list;
};

static const struct nw_opt logscan_options[] = {
	NW_OPT_JSON(struct logscan_opts, json, "\n(the report, schema ncclwatch.logscan/1)"),
	{ .kind = NW_OPTK_FLAG, .lname = "brief", .off = NW_F_INT(struct logscan_opts, brief),
	  .help = "only the errors and the diagnoses" },
	{ .kind = NW_OPTK_FLAG, .lname = "list-diagnoses", .off = NW_F_INT(struct logscan_opts, list),
	  .help = "every diagnosis this version can make: id, severity,\nwhat it means, the fix (tab-separated), then exit" },
	{ 0 },
};

const struct nw_cmd_spec nw_spec_logscan = {
	.name = "logscan",
	.synopsis = "[options] [FILE...]",
	.about = "Read NCCL_DEBUG=INFO logs (NCCL 2.4 to 2.28+; several ranks and nodes\n"
	         "interleaved; mixed with PyTorch, nccl-tests and launcher output; prefixes\n"
	         "such as \"[1,3]<stdout>:\", \"[rank3]:\", \"host: \", timestamps and ANSI\n"
	         "colours are stripped) and report what NCCL did and what went wrong.\n"
	         "FILE \"-\" (or no FILE, with standard input not a terminal) reads stdin.\n",
	.opts = logscan_options,
	.footer = "The report: NCCL versions per process and host, communicators, the\n"
	          "transport of every connected peer pair (P2P and its mode, SHM, NET/IB with\n"
	          "or without GDRDMA, NET/Socket, NET plugins, NVLS, CollNet), ring and tree\n"
	          "graphs, algorithms and protocols when logged, NCCL_* variables set by the\n"
	          "environment, WARN and error lines grouped by cause, then a list of\n"
	          "diagnoses with a fix each (docs/logscan.md lists every diagnosis id).\n"
	          "One pass, bounded memory: logs of any size.\n"
	          "\n"
	          "Exit status: 0 no error found, 1 errors found (error diagnoses or\n"
	          "WARN/error lines), 2 usage or read error, 3 the input is no NCCL log\n"
	          "(nccl-tests output, a topology matrix, empty or binary: said on stderr,\n"
	          "and with --json as a document with input_kind, verdict, nranks, hosts).\n",
	.args = NW_ARGS_FILES,
	.width = 18,
};

static const char *s_of(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : "";
}

static json_int_t i_of(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static void print_header(const json_t *doc)
{
	const json_t *in = json_object_get(doc, "input");
	printf("%" JSON_INTEGER_FORMAT " lines (%" JSON_INTEGER_FORMAT " from NCCL), %" JSON_INTEGER_FORMAT
	       " process%s on %" JSON_INTEGER_FORMAT " host%s",
	       i_of(in, "lines"), i_of(in, "nccl_lines"), i_of(doc, "processes"), i_of(doc, "processes") == 1 ? "" : "es",
	       i_of(doc, "nhosts"), i_of(doc, "nhosts") == 1 ? "" : "s");
	json_int_t nranks = i_of(doc, "nranks"), seen = i_of(doc, "ranks_seen"), nnodes = i_of(doc, "nnodes");
	if (nranks > 0)
		printf("; a job of %" JSON_INTEGER_FORMAT " rank%s", nranks, nranks == 1 ? "" : "s");
	if (nnodes > 0)
		printf(" on %" JSON_INTEGER_FORMAT " node%s", nnodes, nnodes == 1 ? "" : "s");
	if (seen > 0 && seen != nranks)
		printf("; %" JSON_INTEGER_FORMAT " rank%s seen", seen, seen == 1 ? "" : "s");
	if (i_of(in, "unparsed") > 0)
		printf("; %" JSON_INTEGER_FORMAT " NCCL-looking lines not understood", i_of(in, "unparsed"));
	if (i_of(in, "long_lines") > 0)
		printf("; %" JSON_INTEGER_FORMAT " over-long lines cut", i_of(in, "long_lines"));
	if (i_of(in, "not_recorded") > 0)
		printf("; %" JSON_INTEGER_FORMAT " lines not recorded (tables full)", i_of(in, "not_recorded"));
	printf("\n");
}

/* The NCCL versions, per process and host, and the one PyTorch reports. */
static void print_versions(const json_t *doc)
{
	size_t i;
	const json_t *o;

	printf("\nNCCL versions\n");
	size_t nlines = 0;
	json_array_foreach(json_object_get(doc, "versions"), i, o) nlines += !s_of(o, "source")[0];
	if (!nlines)
		printf("  (no \"NCCL version\" line)\n");
	json_array_foreach(json_object_get(doc, "versions"), i, o) {
		if (s_of(o, "source")[0])
			continue; /* PyTorch's: printed below */
		if (i_of(o, "processes") == 0) {
			printf("  %-24s a banner without a process before or after it\n", s_of(o, "version"));
			continue;
		}
		printf("  %-24s %" JSON_INTEGER_FORMAT " process%s on", s_of(o, "version"), i_of(o, "processes"),
		       i_of(o, "processes") == 1 ? "" : "es");
		size_t k;
		const json_t *h;
		json_array_foreach(json_object_get(o, "hosts"), k, h) printf("%s %s", k ? "," : "", json_string_value(h));
		if (i_of(o, "cuda_driver") > 0)
			printf("  (CUDA driver %" JSON_INTEGER_FORMAT ".%" JSON_INTEGER_FORMAT ")", i_of(o, "cuda_driver") / 1000,
			       (i_of(o, "cuda_driver") % 1000) / 10);
		printf("\n");
	}
	if (s_of(doc, "pytorch_nccl_version")[0])
		printf("  PyTorch reports NCCL %s\n", s_of(doc, "pytorch_nccl_version"));
}

/* Communicators: ranks, nodes, init progress, channels, rings and trees. */
static void print_comms(const json_t *doc)
{
	size_t i;
	const json_t *o;

	printf("\nCommunicators\n");
	if (!json_array_size(json_object_get(doc, "communicators")))
		printf("  (no communicator init line)\n");
	json_array_foreach(json_object_get(doc, "communicators"), i, o) {
		printf("  %-20s %" JSON_INTEGER_FORMAT " rank%s (%" JSON_INTEGER_FORMAT " in the log)", s_of(o, "id"),
		       i_of(o, "nranks"), i_of(o, "nranks") == 1 ? "" : "s", i_of(o, "ranks_seen"));
		if (i_of(o, "nnodes") > 0)
			printf(", %" JSON_INTEGER_FORMAT " node%s, %" JSON_INTEGER_FORMAT " local ranks", i_of(o, "nnodes"),
			       i_of(o, "nnodes") == 1 ? "" : "s", i_of(o, "local_ranks"));
		printf(", init complete %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT, i_of(o, "init_completed"),
		       i_of(o, "init_started") > i_of(o, "init_completed") ? i_of(o, "init_started") : i_of(o, "ranks_seen"));
		if (i_of(o, "channels") > 0)
			printf(", %" JSON_INTEGER_FORMAT " channels, ring %s", i_of(o, "channels"), s_of(o, "ring"));
		if (s_of(o, "tree")[0])
			printf(", tree %s", s_of(o, "tree"));
		printf("\n");
	}
}

/* One host's network: what NCCL used, aws-ofi-nccl's provider and plugin, the IB devices and socket interfaces. */
static void print_network(const json_t *o)
{
	printf("  network on %s:", s_of(o, "host")[0] ? s_of(o, "host") : "(host not in the lines)");
	if (s_of(o, "network")[0])
		printf(" using %s;", s_of(o, "network"));
	if (s_of(o, "ofi_provider")[0])
		printf(" libfabric provider %s", s_of(o, "ofi_provider"));
	if (s_of(o, "ofi_provider")[0] && i_of(o, "ofi_nics") >= 0)
		printf(" (%" JSON_INTEGER_FORMAT " NICs)", i_of(o, "ofi_nics"));
	if (s_of(o, "ofi_provider")[0])
		printf(";");
	if (s_of(o, "net_plugin")[0])
		printf(" plugin %s;", s_of(o, "net_plugin"));
	printf(" IB %s; sockets %s\n", s_of(o, "ib")[0] ? s_of(o, "ib") : "-", s_of(o, "socket")[0] ? s_of(o, "socket") : "-");
}

/* The transport of every connected peer pair, NVLS, CollNet and the networks. */
static void print_transports(const json_t *doc)
{
	size_t i;
	const json_t *o;

	printf("\nTransports (connected peer pairs)\n");
	size_t ncomms = json_array_size(json_object_get(doc, "communicators")), nsingle = 0;
	json_array_foreach(json_object_get(doc, "communicators"), i, o)
		nsingle += i_of(o, "nranks") == 1;
	if (!json_array_size(json_object_get(doc, "transports")) && ncomms && nsingle == ncomms)
		printf("  (none: every communicator has 1 rank, so there is no peer to connect)\n");
	else if (!json_array_size(json_object_get(doc, "transports")))
		printf("  (no connection line: NCCL connects lazily, at the first collective, and logs it at INFO)\n");
	json_array_foreach(json_object_get(doc, "transports"), i, o) {
		json_int_t np = i_of(o, "pairs"), intra = i_of(o, "intra_node_pairs"), inter = i_of(o, "inter_node_pairs");
		char where[96];
		if (!strcmp(s_of(o, "class"), "CollNet"))
			snprintf(where, sizeof(where), "rank to the collective network");
		else if (intra + inter == 0)
			snprintf(where, sizeof(where), "the log does not tell their nodes");
		else if (intra + inter < np)
			snprintf(where, sizeof(where), "%" JSON_INTEGER_FORMAT " in-node, %" JSON_INTEGER_FORMAT
			         " between nodes, %" JSON_INTEGER_FORMAT " whose nodes the log does not tell", intra, inter, np - intra - inter);
		else
			snprintf(where, sizeof(where), "%" JSON_INTEGER_FORMAT " in-node, %" JSON_INTEGER_FORMAT " between nodes",
			         intra, inter);
		struct nw_strbuf nics;
		nw_strbuf_init(&nics);
		size_t k;
		const json_t *x;
		json_array_foreach(json_object_get(o, "nics"), k, x)
			nw_strbuf_addf(&nics, "%s%" JSON_INTEGER_FORMAT, k ? "," : "; NIC ", json_integer_value(x));
		printf("  %-26s %4" JSON_INTEGER_FORMAT " pair%s (%s), %" JSON_INTEGER_FORMAT " channel connections, e.g. %s%s\n",
		       s_of(o, "transport"), np, np == 1 ? "" : "s", where, i_of(o, "connections"), s_of(o, "example"),
		       nics.buf);
		nw_strbuf_release(&nics);
	}
	if (i_of(doc, "npairs") > 0 && i_of(doc, "npairs") <= 16) {
		json_array_foreach(json_object_get(doc, "pairs"), i, o) {
			char dst[32] = "the collective network";
			if (i_of(o, "dst") >= 0)
				snprintf(dst, sizeof(dst), "%" JSON_INTEGER_FORMAT, i_of(o, "dst"));
			printf("    %s rank %" JSON_INTEGER_FORMAT " -> %s: %s (%" JSON_INTEGER_FORMAT " channel%s)\n",
			       s_of(o, "comm"), i_of(o, "src"), dst, s_of(o, "transport"), i_of(o, "connections"),
			       i_of(o, "connections") == 1 ? "" : "s");
		}
	}
	const json_t *ct = json_object_get(doc, "collective_transports");
	if (json_is_true(json_object_get(ct, "nvls_available")) || i_of(ct, "nvls_channels") > 0)
		printf("  NVLS: %s, %" JSON_INTEGER_FORMAT " channels\n",
		       json_is_true(json_object_get(ct, "nvls_available")) ? "available" : "not reported", i_of(ct, "nvls_channels"));
	if (json_is_true(json_object_get(ct, "collnet_connected")))
		printf("  CollNet: connected\n");
	json_array_foreach(json_object_get(doc, "networks"), i, o) print_network(o);
	json_array_foreach(json_object_get(doc, "notes"), i, o) printf("  %s\n", json_string_value(o));
}

/* Graphs, algorithms and protocols when logged, and the NCCL_* environment. */
static void print_tuning(const json_t *doc)
{
	size_t i;
	const json_t *o;

	if (json_array_size(json_object_get(doc, "graphs"))) {
		printf("\nGraphs\n");
		json_array_foreach(json_object_get(doc, "graphs"), i, o) {
			printf("  %-15s %3" JSON_INTEGER_FORMAT " channels, bw %s, type %s\n", s_of(o, "pattern"),
			       i_of(o, "channels"), s_of(o, "bw"), s_of(o, "type"));
		}
	}
	if (json_array_size(json_object_get(doc, "algorithms"))) {
		printf("\nAlgorithms and protocols\n");
		json_array_foreach(json_object_get(doc, "algorithms"), i, o) {
			printf("  %-14s %-15s %-7s %6" JSON_INTEGER_FORMAT " call%s, %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT " bytes\n",
			       s_of(o, "op"), s_of(o, "algo"), s_of(o, "proto"), i_of(o, "calls"), i_of(o, "calls") == 1 ? "" : "s",
			       i_of(o, "min_bytes"), i_of(o, "max_bytes"));
		}
	}
	printf("\nNCCL_* set by the environment\n");
	if (!json_array_size(json_object_get(doc, "env")))
		printf("  (none logged: NCCL_DEBUG_SUBSYS needs ENV, the default INIT,ENV has it)\n");
	json_array_foreach(json_object_get(doc, "env"), i, o) printf("  %s=%s\n", s_of(o, "name"), s_of(o, "value"));
}

static double r_of(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* The ncclwatch plugin's periodic lines: per communicator and rank, the span, busy % and busbw per op. */
static void print_bandwidth(const json_t *doc)
{
	const json_t *bw = json_object_get(doc, "bandwidth");
	size_t i, k;
	const json_t *o, *p;
	if (!json_array_size(bw))
		return;
	printf("\nBandwidth over time (ncclwatch plugin log lines)\n");
	json_array_foreach(bw, i, o) {
		const char *name = s_of(o, "name");
		printf("  comm %s%s%s%s rank %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT ": %" JSON_INTEGER_FORMAT
		       " lines, %s to %s, %" JSON_INTEGER_FORMAT " ops, %" JSON_INTEGER_FORMAT " bytes",
		       s_of(o, "comm"), name[0] ? " (" : "", name, name[0] ? ")" : "", i_of(o, "rank"), i_of(o, "nranks"),
		       i_of(o, "lines"), s_of(o, "first"), s_of(o, "last"), i_of(o, "ops"), i_of(o, "bytes"));
		if (json_is_number(json_object_get(o, "busy_pct_min")))
			printf(", busy %.1f-%.1f%%", r_of(o, "busy_pct_min"), r_of(o, "busy_pct_max"));
		if (i_of(o, "slow_ops") > 0)
			printf(", %" JSON_INTEGER_FORMAT " slow ops", i_of(o, "slow_ops"));
		printf("\n");
		json_array_foreach(json_object_get(o, "busbw"), k, p)
			printf("    %-15s busbw min %.2f median %.2f max %.2f GB/s (%" JSON_INTEGER_FORMAT " lines)\n",
			       s_of(p, "op"), r_of(p, "min_gbs"), r_of(p, "median_gbs"), r_of(p, "max_gbs"), i_of(p, "samples"));
		if (i_of(o, "hung_lines") > 0)
			printf("    HUNG from %s (%" JSON_INTEGER_FORMAT " lines)\n", s_of(o, "first_hung"), i_of(o, "hung_lines"));
	}
}

static void print_report(const json_t *doc)
{
	print_header(doc);
	print_versions(doc);
	print_comms(doc);
	print_transports(doc);
	print_tuning(doc);
	print_bandwidth(doc);
}

static void print_problems(const json_t *doc)
{
	size_t i;
	const json_t *o;
	printf("\nErrors and warnings, grouped by cause\n");
	if (!json_array_size(json_object_get(doc, "errors")))
		printf("  none\n");
	json_array_foreach(json_object_get(doc, "errors"), i, o) {
		printf("  %6" JSON_INTEGER_FORMAT " x [%s] %s%s%s%s\n", i_of(o, "count"), s_of(o, "kind"), s_of(o, "first"),
		       s_of(o, "first_host")[0] ? " (first on " : "", s_of(o, "first_host"),
		       s_of(o, "first_host")[0] ? (json_is_true(json_object_get(o, "several_hosts")) ? ", and other hosts)" : ")") : "");
		if (s_of(o, "last_error")[0])
			printf("           last error: %s\n", s_of(o, "last_error"));
	}
	if (i_of(doc, "errors_not_grouped") > 0)
		printf("  %6" JSON_INTEGER_FORMAT " x lines of further causes (beyond the table's limit)\n", i_of(doc, "errors_not_grouped"));

	printf("\nDiagnosis\n");
	if (!json_array_size(json_object_get(doc, "diagnoses")))
		printf("  nothing wrong found\n");
	json_array_foreach(json_object_get(doc, "diagnoses"), i, o) {
		printf("  %-7s %s: %s\n", s_of(o, "severity"), s_of(o, "id"), s_of(o, "message"));
		size_t k;
		const json_t *e;
		json_array_foreach(json_object_get(o, "evidence"), k, e)
			printf("          line: %s%s%s%s\n", s_of(e, "line"), s_of(e, "host")[0] ? " (on " : "", s_of(e, "host"),
			       s_of(e, "host")[0] ? ")" : "");
		printf("          fix: %s\n", s_of(o, "fix"));
	}
}

static void list_diagnoses(void)
{
	const struct nw_log_rule_info *r;
	size_t n = nw_log_rules(&r);
	static const char *const sev[] = { "info", "warning", "error" };
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s\t%s\t%s\n", r[i].id, sev[r[i].severity], r[i].summary, r[i].fix);
}

/* "; its header lists 8 ranks on 1 host (gpu59)" from the report, or "" when it names none. */
static void seen_in_header(const json_t *doc, char *buf, size_t len)
{
	json_int_t nranks = i_of(doc, "nranks"), nhosts = i_of(doc, "nhosts");
	buf[0] = '\0';
	if (nranks <= 0 && nhosts <= 0)
		return;
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addf(&sb, "; its header lists %" JSON_INTEGER_FORMAT " rank%s on %" JSON_INTEGER_FORMAT " host%s (",
	               nranks > 0 ? nranks : 0, nranks == 1 ? "" : "s", nhosts, nhosts == 1 ? "" : "s");
	size_t i;
	const json_t *h;
	json_array_foreach(json_object_get(doc, "hosts"), i, h) {
		if (i == 8)
			break;
		nw_strbuf_addf(&sb, "%s%s", i ? ", " : "", json_string_value(h));
	}
	nw_strbuf_addf(&sb, "%s)", i < json_array_size(json_object_get(doc, "hosts")) ? ", ..." : "");
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/*
 * When the input held no NCCL line and no error: say what it looks like (on
 * stderr; with json, also as a small document naming the kind, the verdict
 * and the ranks and hosts seen) and return 1.
 */
static int not_a_log(const struct nw_log *lg, const json_t *doc, const struct nw_opt_out *json)
{
	char msg[600], seen[400];
	switch (nw_log_input_kind(lg)) {
	case NW_LOG_INPUT_LOG:
		return 0;
	case NW_LOG_INPUT_EMPTY:
		snprintf(msg, sizeof(msg), "no NCCL lines found: the input is empty");
		break;
	case NW_LOG_INPUT_BINARY:
		snprintf(msg, sizeof(msg), "could not read this as text (binary data, or an encoding other than UTF-8/UTF-16)");
		break;
	case NW_LOG_INPUT_NCCLTESTS:
		seen_in_header(doc, seen, sizeof(seen));
		snprintf(msg, sizeof(msg), "this is nccl-tests output, not an NCCL log%s: use 'ncclwatch import'", seen);
		break;
	case NW_LOG_INPUT_TOPO:
		snprintf(msg, sizeof(msg), "this is 'nvidia-smi topo -m' output, not an NCCL log: 'ncclwatch topo' reads this machine's topology");
		break;
	case NW_LOG_INPUT_NO_NCCL:
	default:
		snprintf(msg, sizeof(msg), "no NCCL lines found (run with NCCL_DEBUG=INFO to get them)");
		break;
	}
	nw_error("%s", msg);
	if (json->on) {
		static const char *const kinds[] = { "log", "empty", "binary", "nccl-tests", "topo", "no-nccl" };
		json_t *o = json_pack("{s:s, s:s, s:s, s:O, s:O, s:O}", "schema", "ncclwatch.logscan/1", "input_kind",
		                      kinds[nw_log_input_kind(lg)], "verdict", msg, "nranks", json_object_get(doc, "nranks"),
		                      "nhosts", json_object_get(doc, "nhosts"), "hosts", json_object_get(doc, "hosts"));
		if (o) {
			nw_cli_json_write("logscan", json, o, JSON_INDENT(1));
			json_decref(o);
		}
	}
	return 1;
}

/* Feed every file ("-": standard input) to the log; 0, or 2 when one could not be read. */
static int feed_files(struct nw_log *lg, char **files, int nfiles)
{
	int rc = 0;
	for (int i = 0; i < nfiles; i++) {
		int is_stdin = !strcmp(files[i], "-");
		FILE *f = is_stdin ? stdin : fopen(files[i], "rb");
		if (!f) {
			nw_error("cannot open '%s': %s", files[i], strerror(errno));
			rc = 2;
			continue;
		}
		char err[NW_ERRLEN];
		if (nw_log_feed_file(lg, f, is_stdin ? "(stdin)" : files[i], err, sizeof(err)) < 0) {
			nw_error("%s", err);
			rc = 2;
		}
		if (!is_stdin)
			fclose(f);
	}
	return rc;
}

int cmd_logscan(int argc, char **argv)
{
	struct logscan_opts o = { 0 };
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_logscan, &o, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_logscan, st);
	if (o.list) {
		list_diagnoses();
		return 0;
	}
	const struct nw_opt_out json = o.json;
	int brief = o.brief;
	char *stdin_only[] = { "-" };
	char **files = res.args;
	int nfiles = res.nargs;
	if (nfiles == 0) {
		if (isatty(STDIN_FILENO))
			return nw_error("no log given; name log files, or pipe one in ('-' reads standard input)"), 2;
		files = stdin_only;
		nfiles = 1;
	}
	struct nw_log *lg = nw_log_new();
	int rc = feed_files(lg, files, nfiles);
	if (rc) {
		nw_log_free(lg); /* the error is said; a report of what was read would look complete */
		return rc;
	}
	json_t *doc = nw_log_report(lg);
	if (not_a_log(lg, doc, &json)) {
		json_decref(doc);
		nw_log_free(lg);
		return 3;
	}
	if (nw_cli_json_text(&json)) {
		if (!brief)
			print_report(doc);
		else
			print_header(doc);
		print_problems(doc);
	}
	if (rc == 0 && nw_log_nerrors(lg) > 0)
		rc = 1;
	if (json.on && nw_cli_json_write("logscan", &json, doc, JSON_INDENT(1)))
		rc = 2;
	json_decref(doc);
	nw_log_free(lg);
	return rc;
}
