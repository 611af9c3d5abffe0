/* SPDX-License-Identifier: Apache-2.0 */
/* The log analyser's JSON report (schema ncclwatch.logscan/1, docs/logscan.md). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "util/util.h"

static const char *const group_kind_names[G_NKINDS] = { "nccl-warn", "nccl-trace", "pytorch", "nccl-tests", "error", "libfabric" };

static const char *severity_name(enum nw_log_severity s)
{
	return s == NW_LOG_ERROR ? "error" : s == NW_LOG_WARNING ? "warning" : "info";
}

static const char *pattern_name(int p)
{
	static const char *const names[] = { "?", "balanced-tree", "split-tree", "tree", "ring", "nvls", "collnet-direct" };
	return p >= 0 && p < (int)NW_ARRAY_LEN(names) ? names[p] : "?";
}

static json_t *jstr(const char *s)
{
	/* table strings come from the log: make sure they are valid UTF-8 for JSON */
	json_t *v = json_string(s);
	if (v)
		return v;
	char buf[512];
	size_t i = 0;
	for (; s[i] && i + 1 < sizeof(buf); i++)
		buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	buf[i] = '\0';
	return json_string(buf);
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* How much was read, and how much of it was understood and recorded. */
static json_t *report_input(const struct nw_log *lg)
{
	json_t *in = json_object();
	json_object_set(in, "files", lg->files);
	json_object_set_new(in, "lines", jint(lg->lines));
	json_object_set_new(in, "bytes", jint(lg->bytes));
	json_object_set_new(in, "nccl_lines", jint(lg->nccl_lines));
	json_object_set_new(in, "other_lines", jint(lg->other_lines));
	json_object_set_new(in, "unparsed", jint(lg->unparsed + lg->nw_bad));
	if (lg->nw_lines)
		json_object_set_new(in, "ncclwatch_lines", jint(lg->nw_lines));
	json_object_set_new(in, "long_lines", jint(lg->long_lines));
	if (lg->ray_dedup_lines) {
		json_object_set_new(in, "ray_dedup_lines", jint(lg->ray_dedup_lines));
		json_object_set_new(in, "ray_folded_lines", jint(lg->ray_folded_lines));
	}
	json_object_set_new(in, "not_recorded", jint(lg->dropped + lg->groups_overflow));
	return in;
}

/* One NCCL version string, the processes that loaded it and (the first 16 of) their hosts. */
struct version_row {
	const char *v;
	size_t np;
	long cuda;
	json_t *hosts;
	uint32_t last_host;
};

/* Count process p under its version's row (a new row while there are fewer than cap); returns the number of rows. */
static size_t version_add(const struct nw_log *lg, const struct lg_proc *p, struct version_row *vs, size_t nvs, size_t cap)
{
	size_t k = 0;
	while (k < nvs && strcmp(vs[k].v, p->version))
		k++;
	if (k == nvs) {
		if (nvs == cap)
			return nvs;
		vs[nvs] = (struct version_row){ p->version, 0, p->cuda_driver, json_array(), UINT32_MAX };
		nvs++;
	}
	if (p->host == UINT32_MAX)
		return nvs; /* a banner no process could be given */
	vs[k].np++;
	if (p->host != vs[k].last_host && json_array_size(vs[k].hosts) < 16) {
		const char *h = lg->hosts[p->host].name;
		int hdup = 0;
		size_t idx;
		json_t *x;
		json_array_foreach(vs[k].hosts, idx, x) hdup |= !strcmp(json_string_value(x), h);
		if (!hdup)
			json_array_append_new(vs[k].hosts, jstr(h));
		vs[k].last_host = p->host;
	}
	return nvs;
}

/* One entry per distinct NCCL version string (the first 64), in the order first seen. */
static json_t *report_versions(const struct nw_log *lg)
{
	struct version_row vs[64];
	size_t nvs = 0;
	for (size_t i = 0; i < lg->nprocs; i++)
		if (lg->procs[i].version[0])
			nvs = version_add(lg, &lg->procs[i], vs, nvs, NW_ARRAY_LEN(vs));
	struct lg_proc banner[NW_ARRAY_LEN(lg->banners)]; /* rows point into these */
	for (size_t k = 0; k < lg->nbanners; k++) {
		banner[k] = (struct lg_proc){ .host = UINT32_MAX, .cuda_driver = -1 };
		nw_strlcpy(banner[k].version, lg->banners[k], sizeof(banner[k].version));
		nvs = version_add(lg, &banner[k], vs, nvs, NW_ARRAY_LEN(vs));
	}
	json_t *vers = json_array();
	for (size_t k = 0; k < nvs; k++) {
		json_t *o = json_object();
		json_object_set_new(o, "version", jstr(vs[k].v));
		json_object_set_new(o, "processes", jint(vs[k].np));
		json_object_set_new(o, "hosts", vs[k].hosts);
		if (vs[k].cuda > 0)
			json_object_set_new(o, "cuda_driver", json_integer(vs[k].cuda));
		json_array_append_new(vers, o);
	}
	/* PyTorch's error text names the NCCL it loaded: a version even when NCCL printed none */
	const char *tv = lg->torch_nccl_version;
	size_t tn = strcspn(tv, "+");
	int known = !tv[0];
	for (size_t k = 0; k < nvs && !known; k++)
		known = strlen(vs[k].v) >= tn && !strncmp(vs[k].v, tv, tn) && (vs[k].v[tn] == '\0' || vs[k].v[tn] == '+');
	if (!known) {
		json_t *o = json_object();
		json_object_set_new(o, "version", jstr(tv));
		json_object_set_new(o, "processes", json_integer(0));
		json_object_set_new(o, "hosts", json_array());
		json_object_set_new(o, "source", json_string("pytorch"));
		json_array_append_new(vers, o);
	}
	return vers;
}

/* A communicator's name in the report: its commId, or "size-N" when NCCL printed none. */
static json_t *comm_name(const struct lg_comm *c)
{
	char id[32];
	if (c->has_id)
		snprintf(id, sizeof(id), "0x%" PRIx64, c->id);
	else
		snprintf(id, sizeof(id), "size-%d", c->nranks);
	return json_string(id);
}

static json_t *report_comms(const struct nw_log *lg)
{
	json_t *comms = json_array();
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		json_t *o = json_object();
		json_object_set_new(o, "id", comm_name(c));
		json_object_set_new(o, "nranks", json_integer(c->nranks));
		json_object_set_new(o, "ranks_seen", json_integer(c->ranks_seen));
		json_object_set_new(o, "nnodes", c->nnodes > 0 ? json_integer(c->nnodes) : json_null());
		json_object_set_new(o, "local_ranks", c->local_ranks > 0 ? json_integer(c->local_ranks) : json_null());
		json_object_set_new(o, "init_started", json_integer(c->init_started));
		json_object_set_new(o, "init_completed", json_integer(c->init_completed));
		json_object_set_new(o, "channels", json_integer(c->nchannels));
		json_object_set_new(o, "ring", jstr(c->ring));
		json_object_set_new(o, "ring_lines", json_integer(c->ring_lines));
		json_object_set_new(o, "tree_lines", json_integer(c->tree_lines));
		json_object_set_new(o, "tree", jstr(c->tree));
		json_array_append_new(comms, o);
	}
	return comms;
}

/* Every transport that connected a pair, with its class and how many pairs inside and between nodes. */
/* The NIC indexes of a bit set, as a JSON array. */
static json_t *nic_list(uint64_t nics)
{
	json_t *a = json_array();
	for (int k = 0; k < 64; k++)
		if (nics & (1ull << k))
			json_array_append_new(a, json_integer(k));
	return a;
}

static json_t *report_transports(const struct nw_log *lg, const struct lg_facts *f)
{
	json_t *tr = json_array();
	for (size_t i = 0; i < lg->ntransports; i++) {
		const struct lg_tstat *t = &f->t[i];
		if (!t->pairs)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "transport", jstr(lg->transports[i].name));
		json_object_set_new(o, "class", json_string(lg_tclass_names[lg_transport_class(lg->transports[i].name)]));
		json_object_set_new(o, "gdrdma", json_boolean(t->gdr > 0));
		json_object_set_new(o, "pairs", jint(t->pairs));
		json_object_set_new(o, "connections", jint(t->connections));
		json_object_set_new(o, "nics", nic_list(t->nics));
		json_object_set_new(o, "intra_node_pairs", jint(t->intra));
		json_object_set_new(o, "inter_node_pairs", jint(t->inter));
		char ex[64];
		if (t->example->dst < 0)
			snprintf(ex, sizeof(ex), "%d -> the collective network", t->example->src);
		else
			snprintf(ex, sizeof(ex), "%d -> %d", t->example->src, t->example->dst);
		json_object_set_new(o, "example", json_string(ex));
		json_array_append_new(tr, o);
	}
	return tr;
}

/* The first 1024 peer pairs with a transport. */
static json_t *report_pairs(const struct nw_log *lg)
{
	json_t *pairs = json_array();
	for (size_t i = 0; i < lg->npairs && i < 1024; i++) {
		const struct lg_pair *p = &lg->pairs[i];
		if (p->transport == UINT32_MAX)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "comm", p->comm != UINT32_MAX ? comm_name(&lg->comms[p->comm]) : json_string(""));
		json_object_set_new(o, "src", json_integer(p->src));
		json_object_set_new(o, "dst", json_integer(p->dst));
		json_object_set_new(o, "transport", jstr(lg->transports[p->transport].name));
		json_object_set_new(o, "connections", json_integer(p->connections));
		json_object_set_new(o, "nics", nic_list(p->nics));
		int same = lg_pair_same_node(lg, p);
		json_object_set_new(o, "same_node", same < 0 ? json_null() : json_boolean(same));
		json_array_append_new(pairs, o);
	}
	return pairs;
}

static json_t *report_collective_transports(const struct nw_log *lg, const struct lg_facts *f)
{
	json_t *nv = json_object();
	json_object_set_new(nv, "nvls_available", json_boolean(lg->nvls_available));
	json_object_set_new(nv, "nvls_channels", json_integer(lg->nvls_channels_max));
	json_object_set_new(nv, "collnet_connected", json_boolean(lg->collnet_connected > 0));
	json_object_set_new(nv, "nvlink_seen", json_boolean(f->any_nvlink));
	return nv;
}

/* The network devices NCCL found on each host, and the network it used (the first 64 hosts that said). */
static json_t *report_networks(const struct nw_log *lg)
{
	json_t *nets = json_array();
	for (size_t i = 0; i < lg->nhosts && json_array_size(nets) < 64; i++) {
		const struct lg_host *h = &lg->hosts[i];
		if (!h->ib_devs[0] && !h->socket_ifs[0] && !h->ib_absent && !h->network[0] && !h->ofi_provider[0])
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "host", jstr(h->name));
		json_object_set_new(o, "ib", jstr(h->ib_devs[0] ? h->ib_devs : h->ib_absent ? "none found" : ""));
		json_object_set_new(o, "socket", jstr(h->socket_ifs));
		json_object_set_new(o, "network", jstr(h->network));
		json_object_set_new(o, "ofi_provider", jstr(h->ofi_provider));
		json_object_set_new(o, "ofi_nics", h->ofi_nics >= 0 ? json_integer(h->ofi_nics) : json_null());
		json_object_set_new(o, "net_plugin", jstr(h->net_plugin));
		json_array_append_new(nets, o);
	}
	if (lg->hostless_net[0] || lg->hostless_provider[0]) {
		json_t *o = json_object();
		json_object_set_new(o, "host", json_string(""));
		json_object_set_new(o, "ib", json_string(""));
		json_object_set_new(o, "socket", json_string(""));
		json_object_set_new(o, "network", jstr(lg->hostless_net));
		json_object_set_new(o, "ofi_provider", jstr(lg->hostless_provider));
		json_object_set_new(o, "ofi_nics", lg->hostless_nics >= 0 ? json_integer(lg->hostless_nics) : json_null());
		json_object_set_new(o, "net_plugin", json_string(""));
		json_array_append_new(nets, o);
	}
	return nets;
}

static json_t *jfloat(float v)
{
	return v >= 0 ? json_real((double)((long long)(v * 10 + 0.5f)) / 10) : json_null();
}

/* Each host's first topology dump, summed up (the first 64 hosts that printed one). */
static json_t *report_topology(const struct nw_log *lg)
{
	json_t *topo = json_array();
	for (size_t i = 0; i < lg->nhosts && json_array_size(topo) < 64; i++) {
		const struct lg_topo *t = &lg->hosts[i].topo;
		if (!t->state)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "host", jstr(lg->hosts[i].name));
		json_object_set_new(o, "max_bw", jfloat(t->max_bw));
		json_object_set_new(o, "total_bw", jfloat(t->total_bw));
		json_object_set_new(o, "gpus", json_integer(t->gpus));
		json_object_set_new(o, "nvswitch", json_boolean(t->nvswitch));
		json_object_set_new(o, "nvlink_peers", json_integer(t->nvl_peers));
		json_object_set_new(o, "nvlink_gbs", jfloat(t->nvl_bw > 0 ? t->nvl_bw : -1));
		json_object_set_new(o, "gpu_pci_gbs", jfloat(t->gpu_pci_bw > 0 ? t->gpu_pci_bw : -1));
		json_object_set_new(o, "nics", json_integer(t->nics));
		json_object_set_new(o, "net_ports", json_integer(t->nets));
		json_object_set_new(o, "net_gbs", jfloat(t->net_bw > 0 ? t->net_bw : -1));
		json_object_set_new(o, "complete", json_boolean(t->state == 2));
		json_array_append_new(topo, o);
	}
	return topo;
}

static json_t *report_graphs(const struct nw_log *lg)
{
	json_t *gr = json_array();
	for (size_t i = 0; i < lg->ngraphs; i++) {
		const struct lg_graph *g = &lg->graphs[i];
		json_t *o = json_object();
		json_object_set_new(o, "pattern", json_string(pattern_name(g->pattern)));
		json_object_set_new(o, "pattern_id", json_integer(g->pattern));
		json_object_set_new(o, "channels", json_integer(g->nchannels));
		json_object_set_new(o, "bw", jstr(g->bw));
		json_object_set_new(o, "type", jstr(g->type));
		json_object_set_new(o, "lines", json_integer(g->count));
		json_array_append_new(gr, o);
	}
	return gr;
}

static json_t *report_algorithms(const struct nw_log *lg)
{
	json_t *al = json_array();
	for (size_t i = 0; i < lg->nalgos; i++) {
		const struct lg_algo *a = &lg->algos[i];
		json_t *o = json_object();
		json_object_set_new(o, "op", jstr(a->op));
		json_object_set_new(o, "algo", jstr(a->algo));
		json_object_set_new(o, "proto", jstr(a->proto));
		json_object_set_new(o, "calls", jint(a->calls));
		json_object_set_new(o, "min_bytes", jint(a->min_bytes));
		json_object_set_new(o, "max_bytes", jint(a->max_bytes));
		json_array_append_new(al, o);
	}
	return al;
}

static json_t *report_env(const struct nw_log *lg)
{
	json_t *env = json_array();
	for (size_t i = 0; i < lg->nenvs; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "name", jstr(lg->envs[i].name));
		json_object_set_new(o, "value", jstr(lg->envs[i].value));
		json_object_set_new(o, "lines", json_integer(lg->envs[i].lines));
		json_array_append_new(env, o);
	}
	return env;
}

/* WARN and error lines, one entry per cause. */
static json_t *report_errors(const struct nw_log *lg)
{
	json_t *errs = json_array();
	for (size_t i = 0; i < lg->ngroups; i++) {
		const struct lg_group *g = &lg->groups[i];
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(group_kind_names[g->kind]));
		json_object_set_new(o, "cause", jstr(g->cause));
		json_object_set_new(o, "count", jint(g->count));
		json_object_set_new(o, "first", jstr(g->first));
		json_object_set_new(o, "first_host", jstr(g->first_host));
		json_object_set_new(o, "several_hosts", json_boolean(g->several_hosts));
		if (g->last_error[0])
			json_object_set_new(o, "last_error", jstr(g->last_error));
		json_array_append_new(errs, o);
	}
	return errs;
}

static json_t *report_timeouts(const struct nw_log *lg)
{
	json_t *to = json_array();
	for (size_t i = 0; i < lg->ntimeouts; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		json_t *o = json_object();
		json_object_set_new(o, "rank", t->rank >= 0 ? json_integer(t->rank) : json_null());
		json_object_set_new(o, "op", jstr(t->op));
		json_object_set_new(o, "seq", t->seq >= 0 ? json_integer(t->seq) : json_null());
		json_object_set_new(o, "timeout_ms", t->timeout_ms >= 0 ? json_integer(t->timeout_ms) : json_null());
		json_object_set_new(o, "ran_ms", t->ran_ms >= 0 ? json_integer(t->ran_ms) : json_null());
		json_array_append_new(to, o);
	}
	return to;
}

/* Causes that make a log unhealthy when no error was found: a warning about a setup that hurts. */
static int cause_of_warning(const char *c)
{
	return !strcmp(c, "gdr_disabled") || !strcmp(c, "no_ib_device") || !strcmp(c, "p2p_not_supported");
}

/* Whether the log has WARN or error lines beyond those NCCL and libfabric print on healthy machines (lg_benign). */
static int unexplained_warnings(const struct nw_log *lg)
{
	for (size_t i = 0; i < lg->ngroups; i++)
		if (!lg_benign(lg->groups[i].cause))
			return 1;
	return 0;
}

/* The lines a diagnosis rests on: [{"line": ..., "host": ...}]. */
static json_t *report_evidence(const struct lg_evidence *ev)
{
	json_t *a = json_array();
	for (size_t k = 0; k < ev->n; k++) {
		json_t *o = json_object();
		json_object_set_new(o, "line", jstr(ev->e[k].line));
		if (ev->e[k].host[0])
			json_object_set_new(o, "host", jstr(ev->e[k].host));
		json_array_append_new(a, o);
	}
	return a;
}

/*
 * Every rule that fires, in the table's order; *nerrors: how many are of
 * error severity; *cause: the cause keyword of the first error (else of the
 * first warning about the setup, else "unknown" when the log has WARN or
 * error lines, else "healthy"), a static string.
 */
static json_t *report_diagnoses(const struct nw_log *lg, const struct lg_facts *f, int *nerrors, const char **cause)
{
	const char *warn_cause = NULL;
	*cause = NULL;
	json_t *dg = json_array();
	const struct nw_log_rule_info *rules;
	size_t nrules = nw_log_rules(&rules);
	*nerrors = 0;
	for (size_t i = 0; i < nrules; i++) {
		char msg[1024];
		struct lg_evidence ev;
		if (!lg_rule_check(i, lg, f, msg, sizeof(msg), &ev))
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "id", json_string(rules[i].id));
		json_object_set_new(o, "severity", json_string(severity_name(rules[i].severity)));
		json_object_set_new(o, "message", jstr(msg));
		json_object_set_new(o, "evidence", report_evidence(&ev));
		json_object_set_new(o, "fix", json_string(rules[i].fix));
		const char *c = lg_rule_cause(i, lg);
		json_object_set_new(o, "cause", json_string(c));
		json_array_append_new(dg, o);
		if (rules[i].severity == NW_LOG_ERROR) {
			(*nerrors)++;
			if (!*cause)
				*cause = c;
		} else if (!warn_cause && cause_of_warning(c)) {
			warn_cause = c;
		}
	}
	/* WARN or error lines that no rule explains: something is wrong, and we do not know what */
	if (!*cause)
		*cause = warn_cause ? warn_cause : unexplained_warnings(lg) ? "unknown" : "healthy";
	return dg;
}

/*
 * The job's size: "nranks" from what the lines say of it (communicator
 * sizes, the highest rank any line names, nccl-tests' device list, the
 * launcher's world size, RAS's GPUs), else null; "ranks_seen": the ranks
 * whose NCCL lines the log holds (a process and a device), a lower bound
 * only (an excerpt shows some ranks); "nnodes" where the log states it
 * (RAS's job summary), else null.
 */
static void report_sizes(const struct nw_log *lg, json_t *doc)
{
	int nranks = lg->ranks_hint, seen = 0;
	if (lg->nt_ndev > (size_t)nranks)
		nranks = (int)lg->nt_ndev;
	for (size_t i = 0; i < lg->ncomms; i++)
		if (lg->comms[i].nranks > nranks)
			nranks = lg->comms[i].nranks;
	if (lg->world_hint > nranks)
		nranks = lg->world_hint;
	if (lg->ras_gpus > nranks)
		nranks = lg->ras_gpus;
	int used = 0;
	for (size_t i = 0; i < lg->nprocs; i++) {
		/* a process's lines before it set its device (bootstrap, plugin) say "[0]": count the devices it ran a communicator on */
		const struct lg_proc *p = &lg->procs[i];
		seen += __builtin_popcountll(p->devs_used ? p->devs_used : p->devs);
		used += __builtin_popcountll(p->devs_used);
	}
	if (used > nranks)
		nranks = used; /* each process and device that ran a communicator is a rank of the job */
	json_object_set_new(doc, "nranks", nranks ? json_integer(nranks) : json_null());
	json_object_set_new(doc, "ranks_seen", json_integer(seen));
	json_object_set_new(doc, "nnodes", lg->ras_nodes ? json_integer(lg->ras_nodes) : json_null());
}

/* Append a formatted sentence to the notes array a. */
static void note(json_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(json_t *a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(a, jstr(buf));
}

/* "3 GPUs, an NVSwitch (NVLink 370.8 GB/s), 3 NICs (ports of 50.0 GB/s)..." for a host's topology dump. */
static void note_topology(json_t *a, const struct lg_host *h)
{
	const struct lg_topo *t = &h->topo;
	char nv[96] = "no NVLink", net[96] = "no NIC";
	if (t->nvswitch)
		snprintf(nv, sizeof(nv), "NVLink to an NVSwitch (%.1f GB/s per GPU)", (double)t->nvl_bw);
	else if (t->nvl_peers)
		snprintf(nv, sizeof(nv), "%u NVLink links between GPUs, no NVSwitch (up to %.1f GB/s)", t->nvl_peers, (double)t->nvl_bw);
	if (t->nics)
		snprintf(net, sizeof(net), "%u NIC%s (%u network port%s%s%.1f GB/s)", t->nics, t->nics == 1 ? "" : "s", t->nets,
		         t->nets == 1 ? "" : "s", t->net_bw > 0 ? " of " : ", ", t->net_bw > 0 ? (double)t->net_bw : 0.0);
	note(a, "topology on %s (its first dump%s): %u GPU%s of the communicator, %s, %s%s; maxBw %.1f, totalBw %.1f GB/s",
	     h->name, t->state == 2 ? "" : ", cut", t->gpus, t->gpus == 1 ? "" : "s", nv, net,
	     t->gpu_pci_bw > 0 ? ", PCIe to the GPUs" : "", (double)t->max_bw, (double)t->total_bw);
}

/*
 * Sentences for the text report about what the log shows beyond its
 * tables: each host's topology dump, Ray's folded lines, NCCL RAS's view of
 * the job, and the network of lines whose host was cut.
 */
static json_t *report_notes(const struct nw_log *lg)
{
	json_t *a = json_array();
	for (size_t i = 0, n = 0; i < lg->nhosts && n < 8; i++)
		if (lg->hosts[i].topo.state)
			note_topology(a, &lg->hosts[i]), n++;
	if (lg->hostless_net[0] || lg->hostless_provider[0])
		note(a, "network (lines without their host): %s%s%s%s", lg->hostless_net[0] ? lg->hostless_net : "not said",
		     lg->hostless_provider[0] ? ", libfabric provider " : "", lg->hostless_provider,
		     lg->hostless_nics >= 0 ? " (NICs found as the plugin said)" : "");
	if (lg->ray_dedup_lines)
		note(a, "Ray deduplicated the log: %" PRIu64 " line%s end '[repeated Nx across cluster]', standing for %" PRIu64
		     " lines of other workers that are not in the log (RAY_DEDUP_LOGS=0 keeps them)",
		     lg->ray_dedup_lines, lg->ray_dedup_lines == 1 ? "" : "s", lg->ray_folded_lines);
	if (lg->ras_groups)
		note(a, "NCCL RAS: %d communicator group%s, %d with no error%s%s", lg->ras_groups, lg->ras_groups == 1 ? "" : "s",
		     lg->ras_groups_ok, lg->ras_dead ? "; processes considered dead" : "",
		     lg->ras_missing ? "; processes that did not answer" : "");
	return a;
}

/* NCCL RAS's answer, when the log holds one: its communicator table and the processes it names; null when none. */
static json_t *report_ras(const struct nw_log *lg)
{
	if (!lg->ras_groups && !lg->ras_nodes && !lg_nfact(lg, F_RAS_MISSING) && !lg_nfact(lg, F_RAS_MISMATCH))
		return json_null();
	json_t *o = json_object();
	json_object_set_new(o, "nodes", lg->ras_nodes ? json_integer(lg->ras_nodes) : json_null());
	json_object_set_new(o, "gpus", lg->ras_gpus ? json_integer(lg->ras_gpus) : json_null());
	json_object_set_new(o, "groups", json_integer(lg->ras_groups));
	json_object_set_new(o, "groups_ok", json_integer(lg->ras_groups_ok));
	json_object_set_new(o, "dead_processes", json_integer(lg->ras_dead));
	json_object_set_new(o, "missing_processes", json_integer(lg->ras_missing));
	json_object_set_new(o, "mismatch", jstr(lg->ras_mismatch));
	json_object_set_new(o, "status_line", jstr(lg->facts[F_RAS_STATUS].line));
	return o;
}

/* The sections in the order of the schema (docs/logscan.md); every WARN/error group counts as an error. */
json_t *nw_log_report(struct nw_log *lg)
{
	lg_banners_unclaimed(lg);
	struct lg_facts f;
	lg_compute_facts(lg, &f);
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.logscan/1"));
	json_object_set_new(doc, "input", report_input(lg));
	json_t *hosts = json_array();
	for (size_t i = 0; i < lg->nhosts && i < 256; i++)
		json_array_append_new(hosts, jstr(lg->hosts[i].name));
	json_object_set_new(doc, "hosts", hosts);
	json_object_set_new(doc, "nhosts", jint(lg->nhosts));
	json_object_set_new(doc, "processes", jint(lg->nprocs));
	json_object_set_new(doc, "versions", report_versions(lg));
	if (lg->torch_nccl_version[0])
		json_object_set_new(doc, "pytorch_nccl_version", jstr(lg->torch_nccl_version));
	report_sizes(lg, doc);
	json_object_set_new(doc, "communicators", report_comms(lg));
	json_object_set_new(doc, "transports", report_transports(lg, &f));
	json_object_set_new(doc, "pairs", report_pairs(lg));
	json_object_set_new(doc, "npairs", jint(lg->npairs));
	json_object_set_new(doc, "collective_transports", report_collective_transports(lg, &f));
	json_object_set_new(doc, "networks", report_networks(lg));
	json_object_set_new(doc, "graphs", report_graphs(lg));
	json_object_set_new(doc, "algorithms", report_algorithms(lg));
	json_object_set_new(doc, "env", report_env(lg));
	json_object_set_new(doc, "errors", report_errors(lg));
	if (lg->groups_overflow)
		json_object_set_new(doc, "errors_not_grouped", jint(lg->groups_overflow));
	json_object_set_new(doc, "timeouts", report_timeouts(lg));
	if (lg->nnw)
		json_object_set_new(doc, "bandwidth", lg_nw_report(lg));
	json_object_set_new(doc, "topology", report_topology(lg));
	json_object_set_new(doc, "ras", report_ras(lg));
	json_object_set_new(doc, "notes", report_notes(lg));
	int ndiag;
	const char *cause;
	json_object_set_new(doc, "diagnoses", report_diagnoses(lg, &f, &ndiag, &cause));
	json_object_set_new(doc, "cause", json_string(cause));
	lg->nerrors = (int)lg->ngroups + ndiag;
	return doc;
}

enum nw_log_input_kind nw_log_input_kind(const struct nw_log *lg)
{
	if (lg->nccl_lines || lg->nerrors || lg->nprocs || lg->nbanners || lg->nw_lines)
		return NW_LOG_INPUT_LOG;
	if (lg->binary)
		return NW_LOG_INPUT_BINARY;
	if (lg->lines == lg->blank_lines)
		return NW_LOG_INPUT_EMPTY;
	if (lg->nt_table_lines)
		return NW_LOG_INPUT_NCCLTESTS;
	if (lg->topo_lines)
		return NW_LOG_INPUT_TOPO;
	return NW_LOG_INPUT_NO_NCCL;
}

int nw_log_nerrors(const struct nw_log *lg)
{
	return lg->nerrors;
}
