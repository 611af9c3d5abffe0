/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobpage_nccl: the parts of a job's page that come from NCCL itself and
 * from the job's files (report/jobpage_int.h): per node, what logscan read
 * in the captured NCCL_DEBUG=INFO logs (versions, communicators and their
 * channels, the transport of every pair, algorithms and protocols, the
 * NCCL_* variables NCCL read, its diagnosis and errors); the nodes'
 * clocks; the kept files.
 */
#include "report/jobpage_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

static void esc(FILE *f, const char *s)
{
	nw_xml_escape(f, s ? s : "");
}

/* A JSON value as table text: strings as they are, numbers, true/false, lists joined. */
static void cell(FILE *f, const json_t *v)
{
	if (json_is_string(v))
		esc(f, json_string_value(v));
	else if (json_is_integer(v))
		fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		fputs(json_is_true(v) ? "yes" : "no", f);
	else if (json_is_array(v)) {
		const json_t *x;
		size_t i;
		json_array_foreach(v, i, x) {
			fputs(i ? ", " : "", f);
			cell(f, x);
		}
	}
}

/* A table of the objects of arr with the given keys as columns (at most max rows; the rest counted). */
static void table(FILE *f, const char *title, const json_t *arr, const char *const *keys, const char *const *heads,
                  size_t nkeys, size_t max)
{
	size_t n = json_array_size(arr);
	if (!n)
		return;
	fprintf(f, "<h3>%s (%zu)</h3>\n<table>\n<tr>", title, n);
	for (size_t k = 0; k < nkeys; k++)
		fprintf(f, "<th>%s</th>", heads[k]);
	fputs("</tr>\n", f);
	for (size_t i = 0; i < n && i < max; i++) {
		const json_t *o = json_array_get(arr, i);
		fputs("<tr>", f);
		for (size_t k = 0; k < nkeys; k++) {
			fputs("<td>", f);
			cell(f, json_object_get(o, keys[k]));
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	if (n > max)
		fprintf(f, "<p class=\"meta\">and %zu more (the node's part.json holds them)</p>\n", n - max);
}

#define T(f, title, arr, keys, heads, max) table(f, title, arr, keys, heads, NW_ARRAY_LEN(keys), max)

static void node_nccl(FILE *f, const json_t *n)
{
	static const char *const vk[] = { "version", "processes", "hosts", "cuda_driver" };
	static const char *const vh[] = { "version", "processes", "hosts", "CUDA driver" };
	static const char *const ck[] = { "id", "nranks", "nnodes", "local_ranks", "init_completed", "channels", "ring", "tree" };
	static const char *const ch[] = { "communicator", "ranks", "nodes", "local ranks", "init completed", "channels",
		                          "ring", "tree (channel 0)" };
	static const char *const tk[] = { "transport", "pairs", "intra_node_pairs", "inter_node_pairs", "connections", "nics",
		                          "example" };
	static const char *const th[] = { "transport", "pairs", "in a node", "between nodes", "channel connections",
		                          "NICs", "example" };
	static const char *const pk[] = { "comm", "src", "dst", "transport", "connections", "same_node" };
	static const char *const ph[] = { "communicator", "from", "to", "transport", "connections", "same node" };
	static const char *const ak[] = { "op", "algo", "proto", "calls", "min_bytes", "max_bytes" };
	static const char *const ah[] = { "op", "algorithm", "protocol", "calls", "smallest", "largest" };
	static const char *const gk[] = { "pattern", "channels", "bw", "type" };
	static const char *const gh[] = { "graph", "channels", "bw (intra/inter)", "link type" };
	static const char *const ek[] = { "name", "value" };
	static const char *const eh[] = { "variable", "value" };
	static const char *const dk[] = { "severity", "id", "message", "fix" };
	static const char *const dh[] = { "severity", "diagnosis", "what", "fix" };
	static const char *const xk[] = { "kind", "count", "cause", "first_host", "first" };
	static const char *const xh[] = { "kind", "count", "cause", "first on", "first line" };
	T(f, "NCCL versions", json_object_get(n, "versions"), vk, vh, 16);
	T(f, "Communicators", json_object_get(n, "communicators"), ck, ch, 64);
	T(f, "Transports", json_object_get(n, "transports"), tk, th, 32);
	T(f, "Transport of each pair", json_object_get(n, "pairs"), pk, ph, 64);
	T(f, "Algorithms and protocols", json_object_get(n, "algorithms"), ak, ah, 64);
	T(f, "Graphs", json_object_get(n, "graphs"), gk, gh, 16);
	T(f, "NCCL_* variables NCCL read", json_object_get(n, "env"), ek, eh, 128);
	T(f, "Diagnosis (logscan)", json_object_get(n, "diagnoses"), dk, dh, 64);
	T(f, "Errors and warnings", json_object_get(n, "errors"), xk, xh, 32);
	if (!json_array_size(json_object_get(n, "algorithms")))
		fputs("<p class=\"meta\">Algorithms and protocols per call are logged only with NCCL_DEBUG_SUBSYS=TUNING (one "
		      "line per call: run leaves it out by default; --nccl-subsys adds it).</p>\n",
		      f);
}

void nw_report_job_nccl(FILE *f, const struct nw_job_view *v)
{
	fputs("<h2>NCCL's choices and environment</h2>\n", f);
	for (size_t i = 0; i < v->nnodes; i++) {
		const json_t *p = v->nodes[i].part, *n = json_object_get(p, "nccl");
		fputs("<h3>", f);
		esc(f, v->nodes[i].host);
		if (json_is_object(n))
			fprintf(f, ": %" JSON_INTEGER_FORMAT " NCCL log%s read</h3>\n", json_integer_value(json_object_get(n, "logs")),
			        json_integer_value(json_object_get(n, "logs")) == 1 ? "" : "s");
		else
			fputs("</h3>\n<p>No NCCL log was read on this node (no process wrote one: NCCL never initialised, or "
			      "NCCL_DEBUG / NCCL_DEBUG_FILE were yours and sent it elsewhere).</p>\n",
			      f);
		if (json_is_object(n))
			node_nccl(f, n);
	}
}

void nw_report_job_clocks(FILE *f, const struct nw_job_view *v)
{
	if (v->nnodes < 2)
		return;
	fputs("<h2>Clocks of the nodes</h2>\n<p class=\"meta\">Every time on this page and in the timeline is on the first "
	      "node's clock: each node's offset is estimated from collectives its ranks share with a node already "
	      "placed, which end at the same moment on every rank.</p>\n<table>\n<tr><th>node</th><th>offset</th>"
	      "<th>spread (IQR)</th><th>how</th></tr>\n",
	      f);
	for (size_t i = 0; i < v->nnodes; i++) {
		const struct nw_jv_node *n = &v->nodes[i];
		fputs("<tr><td>", f);
		esc(f, n->host);
		if (n->offset_known && i)
			fprintf(f, "</td><td class=\"n\">%+.1f us</td><td class=\"n\">%.1f us</td><td>", (double)n->offset_ns / 1e3,
			        n->offset_spread_us);
		else
			fputs("</td><td class=\"n\">0</td><td></td><td>", f);
		esc(f, n->offset_how);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

void nw_report_job_files(FILE *f, const struct nw_report_job_links *links)
{
	if (!links || !links->nfiles)
		return;
	fprintf(f, "<h2>Files kept with the job (%zu)</h2>\n<ul>\n", links->nfiles);
	for (size_t i = 0; i < links->nfiles; i++) {
		fputs("<li><a href=\"", f);
		esc(f, links->files[i]);
		fputs("\">", f);
		esc(f, links->files[i]);
		fputs("</a></li>\n", f);
	}
	fputs("</ul>\n", f);
}
