/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus metrics from the plugin's stats files (see metrics.h, docs/metrics.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "model/result.h"
#include "export/hist.h"
#include "export/metrics.h"
#include "util/util.h"

void nw_metrics_init(struct nw_metrics *m, const char *dir, int all, double window_s)
{
	memset(m, 0, sizeof(*m));
	nw_strlcpy(m->dir, dir, sizeof(m->dir));
	m->all = all;
	m->window_s = window_s;
	m->late_window = 256;
	m->hist = NW_HIST_NONE;
	m->cache = nw_sf_cache_new();
	const char *node = getenv("NODE_NAME");
	if (node && *node)
		nw_strlcpy(m->node, node, sizeof(m->node));
	else
		nw_hostname(m->node, sizeof(m->node));
	nw_sf_sanitize(m->node);
}

int nw_metrics_parse_hist(const char *s, int *mode, char *err, size_t errlen)
{
	static const char *const names[] = { [NW_HIST_NONE] = "none", [NW_HIST_OP] = "op",
	                                     [NW_HIST_OP_SIZE] = "op,size" };
	for (int k = 0; k < (int)NW_ARRAY_LEN(names); k++)
		if (!strcmp(s, names[k])) {
			*mode = k;
			return 0;
		}
	return nw_seterr(err, errlen, "--histograms '%s' is not none, op or op,size", s);
}

int nw_metrics_parse_detail(const char *s, unsigned *detail, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned bits;
	} items[] = {
		{ "size", NW_DETAIL_SIZE }, { "source", NW_DETAIL_SOURCE }, { "rank", NW_DETAIL_RANK },
		{ "all", NW_DETAIL_SIZE | NW_DETAIL_SOURCE | NW_DETAIL_RANK },
	};
	*detail = 0;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ","), k;
		for (k = 0; k < NW_ARRAY_LEN(items); k++)
			if (n == strlen(items[k].name) && !strncmp(p, items[k].name, n))
				break;
		if (k == NW_ARRAY_LEN(items))
			return nw_seterr(err, errlen, "--detail '%s': '%.*s' is not size, source, rank or all", s, (int)n, p);
		*detail |= items[k].bits;
		p += n;
		if (*p == ',' && *++p == '\0')
			return nw_seterr(err, errlen, "--detail '%s' ends with a comma", s);
	}
	if (!*detail)
		return nw_seterr(err, errlen, "--detail needs size, source, rank or all (a comma list)");
	return 0;
}

void nw_metrics_procs(struct nw_metrics *m, const char *proc, const char *logs, int read_dir)
{
	m->procs = 1;
	m->read_dir = read_dir;
	nw_strlcpy(m->proc, proc, sizeof(m->proc));
	nw_strlcpy(m->logs, logs ? logs : "", sizeof(m->logs));
	if (!m->ps_cache)
		m->ps_cache = nw_ps_cache_new();
}

void nw_metrics_release(struct nw_metrics *m)
{
	nw_sample_release(&m->base);
	nw_sample_release(&m->cand);
	free(m->bl);
	nw_sf_cache_free(m->cache);
	nw_ps_cache_free(m->ps_cache);
	memset(m, 0, sizeof(*m));
}

void nw_metrics_size_label(unsigned bucket, char *buf, size_t len)
{
	nw_format_size(nws_bucket_lo(bucket), buf, len);
}

/* nws op number of a result row's op name; -1 when the plugin has no such op. */
static int op_by_name(const char *name)
{
	for (unsigned op = 0; op < NWS_NOPS; op++)
		if (!strcmp(nws_op_name(op), name))
			return (int)op;
	return -1;
}

int nw_metrics_load_baseline(struct nw_metrics *m, const char *path, char *err, size_t errlen)
{
	int rc = -1;
	json_error_t je;
	struct nw_run run;
	nw_run_init(&run);
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc) {
		nw_seterr(err, errlen, "cannot read baseline '%s': %s (line %d); give a JSON result of 'ncclwatch bench --json'",
		          path, je.text, je.line);
		goto out;
	}
	char e2[NW_ERRLEN];
	if (nw_run_from_json(doc, &run, e2, sizeof(e2)) < 0) {
		nw_seterr(err, errlen, "baseline '%s': %s", path, e2);
		goto out;
	}
	for (size_t i = 0; i < run.nrows; i++) {
		const struct nw_row *row = &run.rows[i];
		int op = op_by_name(row->op);
		if (op < 0 || !(row->busbw_gbs > 0) || row->nranks < 1)
			continue;
		unsigned b = nws_size_bucket(row->size_bytes);
		size_t k;
		for (k = 0; k < m->nbl; k++)
			if (m->bl[k].op == (unsigned)op && m->bl[k].bucket == b &&
			    m->bl[k].nranks == row->nranks)
				break;
		if (k == m->nbl) {
			m->bl = nw_realloc(m->bl, (m->nbl + 1) * sizeof(*m->bl));
			m->bl[k] = (struct nw_baseline){ (unsigned)op, b, row->nranks, 0 };
			m->nbl++;
		}
		if (row->busbw_gbs * 1e9 > m->bl[k].busbw)
			m->bl[k].busbw = row->busbw_gbs * 1e9;
	}
	if (!m->nbl) {
		nw_seterr(err, errlen, "baseline '%s' has no row with a busbw for an op the plugin knows", path);
		goto out;
	}
	rc = 0;
out:
	json_decref(doc);
	nw_run_release(&run);
	return rc;
}

/* Label values of one rank (strings kept here for the labels that point at them). */
struct rank_labels {
	const char *node;	/* Hostname: the node this exporter runs on */
	char comm[17];
	char rank[16];
	char pid[16];
	char nranks[16];
	char gpu[16];
};

/* Fill lb with the Hostname, comm, rank, pid, nranks and gpu label values of r. */
static void rank_labels(const struct nw_metrics *m, const struct nw_sf_rank *r, struct rank_labels *lb)
{
	lb->node = m->node;
	snprintf(lb->comm, sizeof(lb->comm), "%016llx", (unsigned long long)r->hdr.comm_hash);
	snprintf(lb->rank, sizeof(lb->rank), "%d", r->hdr.rank);
	snprintf(lb->pid, sizeof(lb->pid), "%d", r->hdr.pid);
	snprintf(lb->nranks, sizeof(lb->nranks), "%d", r->hdr.nranks);
	lb->gpu[0] = '\0';
	if ((r->hdr.ident.flags & NWS_IDENT_GPU) && r->hdr.ident.gpu >= 0)
		snprintf(lb->gpu, sizeof(lb->gpu), "%d", r->hdr.ident.gpu);
}

/*
 * The labels every per-rank series starts with, into l[0..NW_BASE_LABELS):
 * Hostname (the node, as dcgm-exporter names it), comm, rank, then the
 * workload that runs the rank under dcgm-exporter's names where known (pod,
 * namespace, container, hpc_job: NCCLWATCH_JOB, else SLURM_JOB_ID, else
 * TORCHELASTIC_RUN_ID), so that every series can be filtered and every
 * alert routed by them. With device, the GPU too (gpu, UUID): only
 * ncclwatch_rank_info carries it (the join with dcgm-exporter's series), so
 * that a scrape stays small. Returns how many were set.
 */
#define NW_BASE_LABELS 9
static size_t base_labels(const struct nw_sf_rank *r, const struct rank_labels *lb, int device, struct nw_label *l)
{
	const struct nws_ident *id = &r->hdr.ident;
	const char *job = *id->job ? id->job : *id->slurm_job ? id->slurm_job : id->torchelastic;
	const struct nw_label opt[] = {
		{ "pod", id->pod }, { "namespace", id->pod_namespace }, { "container", id->container }, { "hpc_job", job },
		{ "gpu", device ? lb->gpu : "" }, { "UUID", device ? id->uuid : "" },
	};
	size_t n = 0;
	l[n++] = (struct nw_label){ "Hostname", lb->node };
	l[n++] = (struct nw_label){ "comm", lb->comm };
	l[n++] = (struct nw_label){ "rank", lb->rank };
	for (size_t k = 0; k < NW_ARRAY_LEN(opt); k++)
		if (*opt[k].value)
			l[n++] = opt[k];
	return n;
}

/* keep[] bits. */
enum { KEEP = 1u << 0, KEEP_PROC = 1u << 1 };

/* Files of one process together (host, pid), its largest communicator first, then set order. */
static int cmp_proc(const void *a, const void *b, void *arg)
{
	const struct nw_sf_set *set = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct nws_header *x = &set->ranks[i].hdr, *y = &set->ranks[j].hdr;
	int c = strcmp(x->hostname, y->hostname);
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->nranks != y->nranks)
		return x->nranks > y->nranks ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Which files of the set to export: not stale unless asked, and one file
 * per (comm, rank) (a stale leftover never doubles a live series: the
 * live one, else the most recently updated, wins); the set is sorted by
 * (comm, rank), so duplicates are neighbours. keep[i] gets KEEP, and
 * KEEP_PROC on the one file of each process that carries its per-process
 * figures (the file of its largest communicator).
 */
static void choose(const struct nw_metrics *m, const struct nw_sf_set *set, unsigned char *keep)
{
	size_t last = SIZE_MAX, nk = 0;
	for (size_t i = 0; i < set->n; i++) {
		keep[i] = m->all || set->ranks[i].live != NW_SF_STALE ? KEEP : 0;
		if (!keep[i])
			continue;
		const struct nws_header *b = &set->ranks[i].hdr;
		if (last != SIZE_MAX && set->ranks[last].hdr.comm_hash == b->comm_hash && set->ranks[last].hdr.rank == b->rank &&
		    set->ranks[last].origin == set->ranks[i].origin) {
			const struct nws_header *a = &set->ranks[last].hdr;
			int a_live = set->ranks[last].live != NW_SF_STALE, b_live = set->ranks[i].live != NW_SF_STALE;
			int take_b = b_live != a_live ? b_live : b->updated_ns > a->updated_ns;
			keep[take_b ? last : i] = 0;
			if (!take_b)
				continue;
		}
		last = i;
	}
	size_t *idx = nw_calloc(set->n ? set->n : 1, sizeof(*idx));
	for (size_t i = 0; i < set->n; i++)
		if (keep[i])
			idx[nk++] = i;
	qsort_r(idx, nk, sizeof(*idx), cmp_proc, (void *)set);
	for (size_t k = 0; k < nk; k++) {
		const struct nws_header *h = &set->ranks[idx[k]].hdr, *p = k ? &set->ranks[idx[k - 1]].hdr : NULL;
		if (!p || p->pid != h->pid || strcmp(p->hostname, h->hostname))
			keep[idx[k]] |= KEEP_PROC;
	}
	free(idx);
}

/* Per-rank gauges and counters taken from the header. */
enum rank_metric {
	RM_INFO, RM_AGE, RM_BUSY_RATIO, RM_BUSY_EXACT_RATIO, RM_BUSY_TOTAL, RM_WALL_TOTAL,
	RM_OPS_DROPPED, RM_EVENTS_BAD, RM_EVENTS_LATE, RM_SLOW_OPS, RM_MASK_SWITCHES, RM_DUMPS,
	RM_GRAPH_CALLS, RM_INFLIGHT, RM_OLDEST_INFLIGHT, RM_EVENT_AGE, RM_HUNG,
	/* exposed communication (per process: from the file of its largest communicator, see choose) */
	RM_OVL_ON, RM_OVL_WINDOWS, RM_OVL_WALL, RM_OVL_COMPUTE, RM_OVL_NCCL, RM_OVL_EXPOSED, RM_OVL_RATIO,
	RM_OVL_ALONE, RM_OVL_COST, RM_OVL_KERNELS, RM_OVL_DROPPED, RM_N
};

static const struct {
	const char *name, *type, *help;
} rank_fam[RM_N] = {
	[RM_INFO] = { "ncclwatch_rank_info", "gauge",
	              "1 for each rank of each communicator the exporter reads; labels name its process and communicator" },
	[RM_AGE] = { "ncclwatch_stats_age_seconds", "gauge",
	             "seconds since the plugin last published this rank's stats (a heartbeat)" },
	[RM_BUSY_RATIO] = { "ncclwatch_comm_busy_ratio", "gauge",
	                    "share of wall time with a collective of this communicator executing on this rank, over the plugin's recent window, kernel-timed plus estimated untimed ops (0..1)" },
	[RM_BUSY_EXACT_RATIO] = { "ncclwatch_comm_busy_kernel_ratio", "gauge",
	                          "the part of ncclwatch_comm_busy_ratio measured from GPU kernel timestamps alone (0..1)" },
	[RM_BUSY_TOTAL] = { "ncclwatch_comm_busy_seconds_total", "counter",
	                    "seconds this rank had a collective of this communicator executing (kernel-timed plus estimated)" },
	[RM_WALL_TOTAL] = { "ncclwatch_comm_wall_seconds_total", "counter",
	                    "wall-clock seconds the busy counter covers" },
	[RM_OPS_DROPPED] = { "ncclwatch_plugin_ops_dropped_total", "counter",
	                     "operations the plugin could not record (its in-flight pool was full)" },
	[RM_EVENTS_BAD] = { "ncclwatch_plugin_events_bad_total", "counter",
	                    "malformed or unknown profiler events the plugin ignored" },
	[RM_EVENTS_LATE] = { "ncclwatch_plugin_events_late_total", "counter",
	                     "kernel events that arrived after their operation was accounted" },
	[RM_SLOW_OPS] = { "ncclwatch_plugin_slow_ops_total", "counter",
	                  "operations flagged far slower than their recent peers" },
	[RM_MASK_SWITCHES] = { "ncclwatch_plugin_mask_switches_total", "counter",
	                       "times the plugin switched GPU kernel timestamps on or off" },
	[RM_DUMPS] = { "ncclwatch_plugin_trace_dumps_total", "counter",
	               "trace dumps the plugin wrote" },
	[RM_GRAPH_CALLS] = { "ncclwatch_plugin_graph_captured_calls_total", "counter",
	                     "calls captured into CUDA graphs (NCCL raises no events when graphs replay them)" },
	[RM_INFLIGHT] = { "ncclwatch_inflight_operations", "gauge",
	                  "operations enqueued whose completion the plugin expects and has not seen (absent where this mode sees no completions)" },
	[RM_OLDEST_INFLIGHT] = { "ncclwatch_oldest_inflight_seconds", "gauge",
	                         "seconds since the oldest in-flight operation was enqueued (0 when none; absent where completions are not seen)" },
	[RM_EVENT_AGE] = { "ncclwatch_last_nccl_event_age_seconds", "gauge",
	                   "seconds since NCCL raised the last profiler event on this rank of the communicator (grows while NCCL is stuck or idle)" },
	[RM_HUNG] = { "ncclwatch_comm_hung", "gauge",
	              "1 while the plugin finds this rank hung: no NCCL event for NCCLWATCH_HANG_S with an operation in flight or a local peer ahead" },
	[RM_OVL_ON] = { "ncclwatch_overlap_enabled", "gauge",
	                "1 while the process measures exposed communication (NCCLWATCH_OVERLAP=1), 0 once it turned it off (see top for why)" },
	[RM_OVL_WINDOWS] = { "ncclwatch_overlap_windows_total", "counter",
	                     "CUPTI kernel-activity windows the process measured" },
	[RM_OVL_WALL] = { "ncclwatch_overlap_window_seconds", "gauge",
	                  "length of the last window (GPU clock)" },
	[RM_OVL_COMPUTE] = { "ncclwatch_compute_kernel_seconds", "gauge",
	                     "time in the last window with a non-NCCL kernel running on the process's GPU (union over streams)" },
	[RM_OVL_NCCL] = { "ncclwatch_nccl_kernel_seconds", "gauge",
	                  "time in the last window with an NCCL kernel running (union over streams)" },
	[RM_OVL_EXPOSED] = { "ncclwatch_exposed_communication_seconds", "gauge",
	                     "NCCL kernel time in the last window with no compute kernel running beside it" },
	[RM_OVL_RATIO] = { "ncclwatch_exposed_communication_ratio", "gauge",
	                   "exposed communication as a share of the last window's wall time (0..1)" },
	[RM_OVL_ALONE] = { "ncclwatch_overlap_alone_windows", "gauge",
	                   "windows in a row, up to the last, with over 90% of NCCL kernel time exposed" },
	[RM_OVL_COST] = { "ncclwatch_overlap_window_cpu_seconds", "gauge",
	                  "CPU time the last window cost the process (CUPTI callbacks and the arithmetic)" },
	[RM_OVL_KERNELS] = { "ncclwatch_overlap_window_kernels", "gauge",
	                     "kernel records CUPTI delivered for the last window" },
	[RM_OVL_DROPPED] = { "ncclwatch_overlap_window_dropped_records", "gauge",
	                     "losses in the last window (records over the room kept, buffers refused): its figures are low" },
};

/*
 * Which files a per-rank family is written for: every rank of every
 * communicator; one file per process (the figure is the process's, the same
 * in each of its files: its largest communicator's file carries it); or
 * only with --detail rank (then for every file).
 */
enum rank_class { RC_RANK, RC_PROCESS, RC_DETAIL, RC_OVERLAP };

static enum rank_class rank_class_of(enum rank_metric which)
{
	switch (which) {
	case RM_INFO: case RM_BUSY_TOTAL: case RM_OPS_DROPPED: case RM_OLDEST_INFLIGHT: case RM_EVENT_AGE: case RM_HUNG:
		return RC_RANK;
	case RM_AGE: case RM_EVENTS_BAD: case RM_EVENTS_LATE:
		return RC_PROCESS;
	default:
		return which >= RM_OVL_ON ? RC_OVERLAP : RC_DETAIL;
	}
}

/* Is family `which` written for kept file i (keep bits ki)? */
static int rank_family_wanted(const struct nw_metrics *m, enum rank_metric which, unsigned ki)
{
	int detail = !!(m->detail & NW_DETAIL_RANK);
	switch (rank_class_of(which)) {
	case RC_RANK: return 1;
	case RC_PROCESS: return detail || (ki & KEEP_PROC);
	case RC_OVERLAP: return !!(ki & KEEP_PROC);
	default: return detail;
	}
}

/* part / whole, NAN when whole is 0 (the figure is then left out). */
static double ratio(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : NAN;
}

/*
 * The info family's extra labels, appended to l[*nl..]; abi, kmode and
 * blind are the caller's buffers for three of them (blind: what the
 * profiler interface cannot give, NWS_BLIND_* names, "" when nothing).
 */
static void info_labels(const struct nw_sf_rank *r, const struct rank_labels *lb, struct nw_label *l, size_t *nl,
                        char *abi, size_t abilen, char *kmode, size_t kmodelen, char *blind, size_t blindlen)
{
	const struct nws_header *h = &r->hdr;
	snprintf(abi, abilen, nws_abi_interposer(h->abi) ? "interposer" : "%u", h->abi);
	size_t n = 0;
	blind[0] = '\0';
	for (unsigned b = 0; b < NWS_NBLIND && n < blindlen; b++)
		if (h->mode.blind & (1u << b))
			n += (size_t)snprintf(blind + n, blindlen - n, "%s%s", n ? "," : "", nws_blind_name(b));
	snprintf(kmode, kmodelen, "%s",
	         h->kernel_mode == NWS_KMODE_ON ? "on" : h->kernel_mode == NWS_KMODE_OFF ? "off" : "auto");
	l[(*nl)++] = (struct nw_label){ "comm_name", h->comm_name };
	l[(*nl)++] = (struct nw_label){ "nranks", lb->nranks };
	l[(*nl)++] = (struct nw_label){ "pid", lb->pid };
	l[(*nl)++] = (struct nw_label){ "state", nw_sf_live_name(r->live) };
	l[(*nl)++] = (struct nw_label){ "profiler_abi", abi };
	l[(*nl)++] = (struct nw_label){ "kernel_timing", kmode };
	l[(*nl)++] = (struct nw_label){ "plugin_version", h->plugin_version };
	l[(*nl)++] = (struct nw_label){ "cannot_see", blind };
	if (r->pod_uid[0])
		l[(*nl)++] = (struct nw_label){ "uid", r->pod_uid };
	if (r->container_id[0])
		l[(*nl)++] = (struct nw_label){ "container_id", r->container_id };
}

/* The progress families (nws_progress); NAN where the plugin cannot see it. A finished communicator waits for nothing. */
static double progress_value(enum rank_metric which, const struct nws_header *h, double now_real)
{
	const struct nws_progress *p = &h->prog;
	int blind = p->completion == NWS_DONE_NONE, done = h->state != NWS_STATE_RUNNING;
	double v;
	switch (which) {
	case RM_INFLIGHT:
		return blind ? NAN : done ? 0 : (double)p->inflight;
	case RM_OLDEST_INFLIGHT:
		if (blind)
			return NAN;
		v = p->inflight && p->oldest_ns && !done ? now_real - (double)p->oldest_ns / 1e9 : 0;
		return v < 0 ? 0 : v;
	case RM_EVENT_AGE:
		if (!p->last_event_ns)
			return NAN;
		v = now_real - (double)p->last_event_ns / 1e9;
		return v < 0 ? 0 : v;
	default:
		return p->hang == NWS_HANG_YES && !done ? 1 : 0;
	}
}

/* The exposed-communication families; NAN before the first window (or for files without them). */
static double ovl_value(enum rank_metric which, const struct nws_overlap *o)
{
	if (which == RM_OVL_ON)
		return o->state == NWS_OVL_ON ? 1 : 0;
	if (which == RM_OVL_WINDOWS)
		return (double)o->windows;
	if (!o->windows)
		return NAN;
	switch (which) {
	case RM_OVL_WALL: return (double)o->wall_ns / 1e9;
	case RM_OVL_COMPUTE: return (double)o->compute_ns / 1e9;
	case RM_OVL_NCCL: return (double)o->nccl_ns / 1e9;
	case RM_OVL_EXPOSED: return (double)o->exposed_ns / 1e9;
	case RM_OVL_RATIO: return ratio(o->exposed_ns, o->wall_ns);
	case RM_OVL_ALONE: return (double)o->alone_windows;
	case RM_OVL_KERNELS: return (double)o->kernels;
	case RM_OVL_DROPPED: return (double)o->dropped;
	default: return (double)o->cost_ns / 1e9;
	}
}

/* The value of a per-rank family for header h; NAN when the plugin does not have it. */
static double rank_value(enum rank_metric which, const struct nws_header *h, double now_real)
{
	double v;
	switch (which) {
	case RM_INFO:
		return 1;
	case RM_AGE:
		v = now_real - (double)h->updated_ns / 1e9;
		return v < 0 ? 0 : v;
	case RM_BUSY_RATIO: return ratio(h->busy_est_ns, h->busy_window_ns);
	case RM_BUSY_EXACT_RATIO: return ratio(h->busy_kernel_ns, h->busy_window_ns);
	case RM_BUSY_TOTAL: return (double)h->busy_est_total_ns / 1e9;
	case RM_WALL_TOTAL: return (double)h->wall_total_ns / 1e9;
	case RM_OPS_DROPPED: return (double)h->ops_dropped;
	case RM_EVENTS_BAD: return (double)h->events_bad;
	case RM_EVENTS_LATE: return (double)h->events_late;
	case RM_SLOW_OPS: return (double)h->slow_ops;
	case RM_MASK_SWITCHES: return (double)h->mask_switches;
	case RM_GRAPH_CALLS: return (double)h->graph_ops;
	case RM_INFLIGHT:
	case RM_OLDEST_INFLIGHT:
	case RM_EVENT_AGE:
	case RM_HUNG: return progress_value(which, h, now_real);
	case RM_DUMPS: return (double)h->dumps;
	default: return ovl_value(which, &h->ovl);
	}
}

/* One per-rank family (header fields of each kept file it is wanted for); nothing when no rank has a value. */
static void write_rank_family(struct nw_prom *out, const struct nw_metrics *m, enum rank_metric which,
                              const struct nw_sf_set *set, const unsigned char *keep, double now_real)
{
	int started = 0;
	for (size_t i = 0; i < set->n; i++) {
		if (!keep[i] || !rank_family_wanted(m, which, keep[i]))
			continue;
		if (which >= RM_OVL_ON && set->ranks[i].hdr.ovl.state != NWS_OVL_ON &&
		    set->ranks[i].hdr.ovl.state != NWS_OVL_STOPPED)
			continue;
		const struct nw_sf_rank *r = &set->ranks[i];
		const struct nws_header *h = &r->hdr;
		struct rank_labels lb;
		rank_labels(m, r, &lb);
		struct nw_label l[NW_BASE_LABELS + 10];
		size_t nl = base_labels(r, &lb, which == RM_INFO, l);
		char abi[16], kmode[16], blind[160];
		if (which == RM_INFO)
			info_labels(r, &lb, l, &nl, abi, sizeof(abi), kmode, sizeof(kmode), blind, sizeof(blind));
		double v = rank_value(which, h, now_real);
		if (isnan(v))
			continue; /* a figure the plugin does not have is absent, not 0 */
		if (!started) {
			nw_prom_family(out, rank_fam[which].name, rank_fam[which].type, rank_fam[which].help);
			started = 1;
		}
		nw_prom_sample(out, rank_fam[which].name, l, nl, v);
	}
}

/* Per (rank, op, bucket) families. */
enum coll_metric { CM_OPS, CM_BYTES, CM_DURATION, CM_TIMED_BYTES, CM_BUSBW, CM_N };

static const struct {
	const char *name, *type, *help;
} coll_fam[CM_N] = {
	[CM_OPS] = { "ncclwatch_coll_ops_total", "counter",
	             "collective and point-to-point operations, by op and size bucket (size: the bucket's smallest byte count; it holds sizes up to twice that)" },
	[CM_BYTES] = { "ncclwatch_coll_bytes_total", "counter",
	               "bytes of those operations, counted as nccl-tests counts size" },
	[CM_DURATION] = { "ncclwatch_coll_duration_seconds", "histogram",
	                  "execution time of timed operations; source is kernel (GPU timestamps, exact) or proxy (network progress only)" },
	[CM_TIMED_BYTES] = { "ncclwatch_coll_timed_bytes_total", "counter",
	                     "bytes of the timed operations (busbw = rate of this / rate of duration _sum x busbw factor)" },
	[CM_BUSBW] = { "ncclwatch_coll_busbw_bytes_per_second", "gauge",
	               "bus bandwidth (nccl-tests busbw, bytes/s) of the operations timed in the exporter's recent window" },
};

static const unsigned sample_src[NW_SAMPLE_NSRC] = { NWS_SRC_KERNEL, NWS_SRC_PROXY };

/*
 * The figures of rank r for op in sample s: of size bucket b, or summed
 * over every bucket when b < 0; with merge, the proxy timing is added into
 * the kernel one (each op is timed by one source, so the sum counts every
 * timed op once). Returns 0 when s has nothing for them.
 */
static int entry_of(const struct nw_sample *s, const struct nw_sf_rank *r, unsigned op, int b, int merge,
                    struct nw_sample_ent *out)
{
	int found = 0;
	memset(out, 0, sizeof(*out));
	for (unsigned k = b < 0 ? 0 : (unsigned)b; k < (b < 0 ? NWS_NBUCKETS : (unsigned)b + 1); k++) {
		const struct nw_sample_ent *e = s ? nw_sample_find(s, r, op, k) : NULL;
		if (!e)
			continue;
		if (!found)
			*out = *e;
		else
			nw_sample_add(out, e);
		found = 1;
	}
	if (found && merge) {
		struct nw_sample_ent proxy;
		memset(&proxy, 0, sizeof(proxy));
		proxy.t[0] = out->t[1];
		memset(&out->t[1], 0, sizeof(out->t[1]));
		nw_sample_add(out, &proxy);
	}
	return found;
}

/* What one coll family writes for one (rank, op, size or all sizes) entry. */
struct coll_ctx {
	const struct nw_metrics *m;
	const struct nw_sf_rank *r;
	const struct rank_labels *lb;
	const struct nw_sample *prev;
	unsigned op;
	int bucket;                 /* -1: every size bucket */
	const double *le;           /* histogram bounds */
};

/*
 * The samples of one coll family for entry e, labelled l[0..nl) (l has
 * room for one more: source, or nranks for busbw).
 */
static void coll_samples(struct nw_prom *out, enum coll_metric which, const struct coll_ctx *c,
                         const struct nw_sample_ent *e, struct nw_label *l, size_t nl)
{
	const char *name = coll_fam[which].name;
	int merge = !(c->m->detail & NW_DETAIL_SOURCE);
	switch (which) {
	case CM_OPS:
		nw_prom_sample(out, name, l, nl, (double)e->count);
		break;
	case CM_BYTES:
		nw_prom_sample(out, name, l, nl, (double)e->bytes);
		break;
	case CM_DURATION:
	case CM_TIMED_BYTES:
		for (unsigned k = 0; k < (merge ? 1u : NW_SAMPLE_NSRC); k++) {
			const struct nw_sample_timing *t = &e->t[k];
			if (!t->count)
				continue;
			l[nl] = (struct nw_label){ "source", nws_src_name(sample_src[k]) };
			size_t n = nl + !merge;
			if (which == CM_DURATION)
				nw_prom_histogram(out, name, l, n, c->le, t->hist, NW_SAMPLE_NBOUNDS, (double)t->sum_ns / 1e9);
			else
				nw_prom_sample(out, name, l, n, (double)t->bytes);
		}
		break;
	default: {
		struct nw_sample_ent d, before;
		int have = entry_of(c->prev, c->r, c->op, c->bucket, merge, &before);
		nw_sample_delta(e, have ? &before : NULL, &d);
		const struct nw_sample_timing *t;
		if (nw_sample_best(&d, &t) < 0)
			break; /* nothing timed in the window: absent, not 0 */
		l[nl] = (struct nw_label){ "nranks", c->lb->nranks };
		double bw = (double)t->bytes / ((double)t->sum_ns / 1e9) * nws_busbw_factor(c->op, c->r->hdr.nranks);
		if (!isnan(bw)) /* NAN: the communicator's size is not known (profiler v1 to v3): absent */
			nw_prom_sample(out, name, l, nl + 1, bw);
		break;
	}
	}
}

/*
 * The size bucket of rank c->r's op c->op that moved the most timed bytes
 * in the window (now minus prev), whose busbw the default gauge shows; -1
 * when the window timed nothing.
 */
static int busiest_bucket(const struct coll_ctx *c, const struct nw_sample *now)
{
	int best = -1;
	uint64_t most = 0;
	for (int b = 0; b < NWS_NBUCKETS; b++) {
		struct nw_sample_ent e, before, d;
		if (!entry_of(now, c->r, c->op, b, 1, &e))
			continue;
		int have = entry_of(c->prev, c->r, c->op, b, 1, &before);
		nw_sample_delta(&e, have ? &before : NULL, &d);
		const struct nw_sample_timing *t;
		if (nw_sample_best(&d, &t) >= 0 && t->bytes >= most) {
			most = t->bytes;
			best = b;
		}
	}
	return best;
}

/*
 * Whether family `which` is written, and with the size label: the duration
 * histogram and the timed bytes (its partner for busbw over any range) only
 * with --histograms, by size with op,size; the others by size with
 * --detail size. 0 when not written.
 */
static int coll_family_shape(const struct nw_metrics *m, enum coll_metric which, int *sized)
{
	if ((which == CM_DURATION || which == CM_TIMED_BYTES) && m->hist == NW_HIST_NONE)
		return 0;
	*sized = which == CM_DURATION ? m->hist == NW_HIST_OP_SIZE : !!(m->detail & NW_DETAIL_SIZE);
	return 1;
}

/*
 * One per (rank, op[, size bucket]) family from the sample now; the busbw
 * gauge subtracts prev (NULL: the whole life) and is left out when the
 * window timed nothing. Without the size label, counters are summed over
 * every size, and the busbw gauge is that of the op's busiest size bucket
 * in the window, labelled with it (so it compares with a baseline of the
 * same size).
 */
static void write_coll_family(struct nw_prom *out, const struct nw_metrics *m, enum coll_metric which,
                              const struct nw_sf_set *set, const unsigned char *keep,
                              const struct nw_sample *now, const struct nw_sample *prev)
{
	int sized, started = 0, merge = !(m->detail & NW_DETAIL_SOURCE);
	if (!coll_family_shape(m, which, &sized))
		return;
	double le[NW_SAMPLE_NBOUNDS];
	nw_sample_bounds(le);
	for (size_t i = 0; i < set->n; i++) {
		if (!keep[i])
			continue;
		struct rank_labels lb;
		rank_labels(m, &set->ranks[i], &lb);
		struct coll_ctx c = { m, &set->ranks[i], &lb, prev, 0, -1, le };
		for (c.op = 0; c.op < NWS_NOPS; c.op++) {
			int one = which == CM_BUSBW && !sized ? busiest_bucket(&c, now) : -2;
			if (one == -1)
				continue;
			for (c.bucket = sized ? 0 : one; c.bucket < (sized ? NWS_NBUCKETS : one + 1); c.bucket++) {
				struct nw_sample_ent e;
				if (!entry_of(now, c.r, c.op, c.bucket < 0 ? -1 : c.bucket, merge, &e))
					continue;
				struct nw_label l[NW_BASE_LABELS + 3];
				size_t nl = base_labels(c.r, &lb, 0, l);
				char size[32];
				l[nl++] = (struct nw_label){ "op", nws_op_name(c.op) };
				if (c.bucket >= 0) {
					nw_metrics_size_label((unsigned)c.bucket, size, sizeof(size));
					l[nl++] = (struct nw_label){ "size", size };
				}
				if (!started) {
					nw_prom_family(out, coll_fam[which].name, coll_fam[which].type, coll_fam[which].help);
					started = 1;
				}
				coll_samples(out, which, &c, &e, l, nl);
			}
		}
	}
}

/* The lateness families, from one straggler analysis per communicator. */
static void write_lateness(struct nw_prom *out, const struct nw_metrics *m, const struct nw_sf_set *set,
                           const unsigned char *keep)
{
	size_t ncomm = nw_sf_comms(set, NULL, 0);
	if (!ncomm || !set->n)
		return;
	uint64_t *comms = nw_calloc(ncomm, sizeof(*comms));
	nw_sf_comms(set, comms, ncomm);
	/* every rank appears in at most one communicator's analysis: set->n entries suffice */
	struct nw_sf_late *late = nw_calloc(set->n, sizeof(*late));
	size_t nl = 0;
	for (size_t c = 0; c < ncomm; c++)
		nl += nw_sf_stragglers(set, comms[c], m->late_window, late + nl, set->n - nl);
	static const char *const names[3] = {
		"ncclwatch_rank_lateness_seconds", "ncclwatch_rank_lateness_max_seconds",
		"ncclwatch_rank_last_arrival_ratio",
	};
	static const char *const helps[3] = {
		"mean time this rank reached the recent collectives its local peers also ran after the earliest of them (a straggler makes the others wait)",
		"largest such lateness over the same collectives",
		"share of those collectives this rank reached last (0..1)",
	};
	/* the mean always; the largest and the share of last arrivals with --detail rank */
	for (int f = 0; f < ((m->detail & NW_DETAIL_RANK) ? 3 : 1); f++) {
		int started = 0;
		for (size_t i = 0; i < nl; i++) {
			const struct nw_sf_rank *r = late[i].r;
			if (!late[i].nseq || !r || !keep[r - set->ranks])
				continue;
			struct rank_labels lb;
			rank_labels(m, r, &lb);
			struct nw_label l[NW_BASE_LABELS + 1];
			size_t n = base_labels(r, &lb, 0, l);
			l[n++] = (struct nw_label){ "basis", late[i].kernel_based ? "kernel" : "enqueue" };
			double v = f == 0 ? late[i].mean_late_us / 1e6
			         : f == 1 ? late[i].max_late_us / 1e6
			         : (double)late[i].nlast / (double)late[i].nseq;
			if (!started) {
				nw_prom_family(out, names[f], "gauge", helps[f]);
				started = 1;
			}
			nw_prom_sample(out, names[f], l, n, v);
		}
	}
	free(late);
	free(comms);
}

/* The exporter's own figures and the file counts (always written). */
static void write_exporter(struct nw_prom *out, const struct nw_metrics *m, const struct nw_sf_set *set)
{
	size_t count[5] = { 0 };
	static const char *const state[5] = { "live", "finished", "disabled", "stale", "bad" };
	for (size_t i = 0; set && i < set->n; i++) {
		switch (set->ranks[i].live) {
		case NW_SF_LIVE: count[0]++; break;
		case NW_SF_FINISHED: count[1]++; break;
		case NW_SF_DISABLED: count[2]++; break;
		default: count[3]++; break;
		}
	}
	count[3] += set ? set->nhidden : 0;
	count[4] = set ? nw_sf_nbad(set) : 0;
	nw_prom_family(out, "ncclwatch_stats_files", "gauge",
	               "stats files in the exporter's directory, by state (stale: the process is gone; bad: unreadable)");
	for (int s = 0; s < 5; s++) {
		struct nw_label l[2] = { { "Hostname", m->node }, { "state", state[s] } };
		nw_prom_sample(out, "ncclwatch_stats_files", l, 2, (double)count[s]);
	}
	struct nw_label hl[1] = { { "Hostname", m->node } };
	nw_prom_family(out, "ncclwatch_exporter_scrapes_total", "counter", "scrapes the exporter answered");
	nw_prom_sample(out, "ncclwatch_exporter_scrapes_total", hl, 1, (double)m->scrapes);
	nw_prom_family(out, "ncclwatch_exporter_renders_total", "counter",
	               "renderings of the metrics: one serves every scrape within the exporter's --cache interval");
	nw_prom_sample(out, "ncclwatch_exporter_renders_total", hl, 1, (double)m->renders);
	nw_prom_family(out, "ncclwatch_exporter_scrape_errors_total", "counter",
	               "scrapes that could not read the stats directory, plus stats files that could not be used");
	nw_prom_sample(out, "ncclwatch_exporter_scrape_errors_total", hl, 1, (double)m->scrape_errors);
	if (m->procs) {
		nw_prom_family(out, "ncclwatch_exporter_plugin_processes", "gauge",
		               "processes of the node whose environment names the plugin (exporter --procs)");
		nw_prom_sample(out, "ncclwatch_exporter_plugin_processes", hl, 1, (double)m->ps.plugin);
		nw_prom_family(out, "ncclwatch_exporter_unreadable_processes", "gauge",
		               "processes whose environment the exporter could not read (it lacks CAP_SYS_PTRACE)");
		nw_prom_sample(out, "ncclwatch_exporter_unreadable_processes", hl, 1, (double)m->ps.unreadable);
	}
	struct nw_label vl[2] = { { "Hostname", m->node }, { "version", NW_VERSION } };
	nw_prom_family(out, "ncclwatch_exporter_build_info", "gauge", "1, with the exporter's version");
	nw_prom_sample(out, "ncclwatch_exporter_build_info", vl, 2, 1);
	if (m->nbl) {
		nw_prom_family(out, "ncclwatch_busbw_baseline_bytes_per_second", "gauge",
		               "expected busbw per op, size bucket and rank count, from the bench result given with --baseline");
		for (size_t k = 0; k < m->nbl; k++) {
			char size[32], nr[16];
			nw_metrics_size_label(m->bl[k].bucket, size, sizeof(size));
			snprintf(nr, sizeof(nr), "%d", m->bl[k].nranks);
			struct nw_label l[3] = { { "op", nws_op_name(m->bl[k].op) }, { "size", size }, { "nranks", nr } };
			nw_prom_sample(out, "ncclwatch_busbw_baseline_bytes_per_second", l, 3, m->bl[k].busbw);
		}
	}
}

/* CLOCK_REALTIME in seconds: the plugin's heartbeat clock. */
static double realtime_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void nw_metrics_write(const struct nw_metrics *m, const struct nw_sf_set *set,
                      const struct nw_sample *now, const struct nw_sample *prev,
                      struct nw_prom *out)
{
	unsigned char *keep = nw_calloc(set->n ? set->n : 1, 1);
	choose(m, set, keep);
	double t = realtime_now();
	for (int k = 0; k < RM_N; k++)
		write_rank_family(out, m, (enum rank_metric)k, set, keep, t);
	for (int k = 0; k < CM_N; k++)
		write_coll_family(out, m, (enum coll_metric)k, set, keep, now, prev);
	write_lateness(out, m, set, keep);
	free(keep);
}

/*
 * The ranks of one process-scan job just added to set (from index first):
 * who runs them, as the scan found it (it knows better than the files,
 * whose pod names are only what the processes were told).
 */
static void attribute(struct nw_sf_set *set, size_t first, const struct nw_ps_job *j)
{
	for (size_t i = first; i < set->n; i++) {
		struct nw_sf_rank *r = &set->ranks[i];
		struct nws_ident *id = &r->hdr.ident;
		nw_strlcpy(r->pod_uid, j->pod_uid, sizeof(r->pod_uid));
		nw_strlcpy(r->container_id, j->container_id, sizeof(r->container_id));
		if (j->pod[0]) {
			nw_strlcpy(id->pod, j->pod, sizeof(id->pod));
			nw_strlcpy(id->pod_namespace, j->ns, sizeof(id->pod_namespace));
		}
		if (j->container[0])
			nw_strlcpy(id->container, j->container, sizeof(id->container));
		nw_sf_sanitize(id->pod);
		nw_sf_sanitize(id->pod_namespace);
		nw_sf_sanitize(id->container);
		nw_sf_sanitize(r->container_id);
	}
}

/*
 * The stats of every process of the node (procscan) into set: each
 * directory read as its process's uid, never cleaned (not ours), its ranks
 * attributed. A directory that cannot be read is named in err (the scrape
 * goes on). -1 only when the processes cannot be listed.
 */
static int load_procs(struct nw_metrics *m, unsigned flags, struct nw_sf_set *set, char *err, size_t errlen)
{
	const struct nw_ps_opts po = { .proc = m->proc, .logs = m->logs[0] ? m->logs : NULL };
	struct nw_ps_job *jobs;
	size_t njobs;
	if (nw_ps_scan(m->ps_cache, &po, &jobs, &njobs, &m->ps, err, errlen) < 0)
		return -1;
	for (size_t k = 0; k < njobs; k++) {
		const struct nw_sf_opts o = { .flags = flags | NW_SF_NO_CLEAN, .cache = m->cache,
		                              .owner = (long)jobs[k].uid, .origin = (unsigned)k + 1 };
		size_t first = set->n;
		char e2[NW_ERRLEN];
		if (nw_sf_load_more(jobs[k].dir, &o, set, e2, sizeof(e2)) < 0) {
			m->scrape_errors++;
			nw_seterr(err, errlen, "%s", e2);
			continue;
		}
		attribute(set, first, &jobs[k]);
	}
	if (!njobs && m->ps.unreadable && !m->ps.plugin)
		nw_seterr(err, errlen, "no training process found, and the environment of %zu processes could not be "
		          "read: the exporter needs to trace them (root with CAP_SYS_PTRACE, and hostPID in a pod)",
		          m->ps.unreadable);
	free(jobs);
	return 0;
}

/*
 * This scrape's files: the directory (unless only processes are scanned),
 * then every process's. -1 with err when nothing could be listed.
 */
static int load_set(struct nw_metrics *m, struct nw_sf_set *set, char *err, size_t errlen)
{
	unsigned flags = m->all ? 0 : NW_SF_HIDE_STALE;
	memset(set, 0, sizeof(*set));
	nw_strlcpy(set->dir, m->dir, sizeof(set->dir));
	if (!m->procs || m->read_dir) {
		const struct nw_sf_opts o = { .flags = flags, .cache = m->cache, .owner = -1 };
		if (nw_sf_load_more(m->dir, &o, set, err, errlen) < 0 && !m->procs)
			return -1;
	}
	if (m->procs && load_procs(m, flags, set, err, errlen) < 0) {
		nw_sf_set_release(set);
		return -1;
	}
	nw_sf_set_sort(set);
	return 0;
}

int nw_metrics_scrape(struct nw_metrics *m, double now, struct nw_prom *out, char *err,
                      size_t errlen)
{
	struct nw_sf_set set;
	if (load_set(m, &set, err, errlen) < 0) {
		m->scrape_errors++;
		write_exporter(out, m, NULL);
		return -1;
	}
	if (nw_sf_nbad(&set)) {
		m->scrape_errors += nw_sf_nbad(&set);
		nw_seterr(err, errlen, "cannot use '%s': %s", set.bad[0].path, set.bad[0].why);
	}
	struct nw_sample cur;
	nw_sample_take(&set, now, &cur);
	const struct nw_sample *prev = m->have_base ? &m->base : NULL;
	nw_metrics_write(m, &set, &cur, prev, out);
	write_exporter(out, m, &set);
	/* keep a sample about one window old for the next scrapes' busbw */
	if (!m->have_cand) {
		nw_sample_move(&m->cand, &cur);
		m->have_cand = 1;
	} else if (now - m->cand.t >= m->window_s) {
		nw_sample_move(&m->base, &m->cand);
		m->have_base = 1;
		nw_sample_move(&m->cand, &cur);
	}
	nw_sample_release(&cur);
	nw_sf_set_release(&set);
	return 0;
}
