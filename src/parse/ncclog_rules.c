/* SPDX-License-Identifier: Apache-2.0 */
/* The log analyser's diagnosis rules: one table of small pure functions over the tables and the derived facts. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/*
 * What every rule reads: the tables as the log filled them and the facts
 * derived from them once (ncclog_facts.c). A rule writes nothing else: it
 * returns 1 when it fires, with its message in msg, and 0 otherwise. A new
 * rule is one function here and one row in rules[] below (and its line in
 * docs/logscan.md); a fact several rules need goes into struct lg_facts.
 */
struct rule_ctx {
	const struct nw_log *lg;
	const struct lg_facts *f;
	struct lg_evidence *ev;   /* the lines the diagnosis rests on: a rule with none does not fire */
};

typedef int (*rule_fn)(const struct rule_ctx *x, char *msg, size_t len);

/* Quote line (of host, UINT32_MAX unknown) as evidence, once. */
static void ev_add(const struct rule_ctx *x, const char *line, uint32_t host)
{
	struct lg_evidence *ev = x->ev;
	if (!line || !line[0] || ev->n == LG_MAX_EVIDENCE)
		return;
	const char *hn = host != UINT32_MAX ? x->lg->hosts[host].name : "";
	for (size_t k = 0; k < ev->n; k++)
		if (!strcmp(ev->e[k].line, line) && !strcmp(ev->e[k].host, hn))
			return;
	nw_strlcpy(ev->e[ev->n].line, line, sizeof(ev->e[0].line));
	nw_strlcpy(ev->e[ev->n].host, hn, sizeof(ev->e[0].host));
	ev->n++;
}

/* Quote the first line of fact f; returns how many lines said it. */
static uint64_t ev_fact(const struct rule_ctx *x, enum lg_fact f)
{
	const struct lg_fact_rec *r = &x->lg->facts[f];
	if (r->n)
		ev_add(x, r->line, r->host);
	return r->n;
}

/* Quote the environment line that set var ("NCCL_ALGO set by environment to Ring"); returns its entry or NULL. */
static const struct lg_env *ev_env(const struct rule_ctx *x, const char *var)
{
	const struct lg_env *e = lg_env_find(x->lg, var);
	if (e) {
		char line[LG_QUOTE];
		snprintf(line, sizeof(line), "%s set by environment to %s", e->name, e->value);
		ev_add(x, line, UINT32_MAX);
	}
	return e;
}

/*
 * Quote a connection line of a transport of class k whose pair is, by
 * same (1 inside a node, 0 between nodes, -1 either), placed so; returns 1
 * when one was found.
 */
static int ev_transport(const struct rule_ctx *x, enum lg_tclass k, int same)
{
	const struct nw_log *lg = x->lg;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < lg->ntransports; i++) {
			const struct lg_transport *t = &lg->transports[i];
			if (lg_transport_class(t->name) != k || !x->f->t[i].pairs)
				continue;
			for (size_t s = 0; s < t->nsamples; s++) {
				struct lg_pair p = { t->samples[s].comm, t->samples[s].src, t->samples[s].dst, (uint32_t)i, 0, 0 };
				if (pass == 1 || same < 0 || lg_pair_same_node(lg, &p) == same) {
					ev_add(x, t->samples[s].line, UINT32_MAX);
					return 1;
				}
			}
		}
	return 0;
}

/* The distinct NCCL versions the processes (and bare banners) printed, the first 8, into seen; returns how many. */
static size_t versions_seen(const struct nw_log *lg, const char **seen, size_t cap)
{
	size_t nseen = 0;
	for (size_t i = 0; i < lg->nprocs + lg->nbanners && nseen < cap; i++) {
		const char *v = i < lg->nprocs ? lg->procs[i].version : lg->banners[i - lg->nprocs];
		if (!v[0])
			continue;
		int dup = 0;
		for (size_t k = 0; k < nseen; k++)
			dup |= !strcmp(seen[k], v);
		if (!dup)
			seen[nseen++] = v;
	}
	return nseen;
}

static int r_version_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	const char *seen[8];
	size_t nseen = versions_seen(lg, seen, NW_ARRAY_LEN(seen)), used = 0;
	if (nseen < 2)
		return 0;
	used += (size_t)snprintf(msg, len, "processes load different NCCL versions:");
	for (size_t k = 0; k < nseen && used < len; k++) {
		size_t np = 0;
		uint32_t host = UINT32_MAX;
		for (size_t i = 0; i < lg->nprocs; i++)
			if (!strcmp(lg->procs[i].version, seen[k]))
				np++, host = lg->procs[i].host;
		char line[LG_QUOTE];
		snprintf(line, sizeof(line), "NCCL version %s", seen[k]);
		ev_add(x, line, host);
		if (np)
			used += (size_t)snprintf(msg + used, len - used, "%s %s (%zu process%s, e.g. on '%s')",
			                         k ? "," : "", seen[k], np, np == 1 ? "" : "es", lg->hosts[host].name);
		else
			used += (size_t)snprintf(msg + used, len - used, "%s %s (a banner)", k ? "," : "", seen[k]);
	}
	return 1;
}

static int r_size1(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (x->f->size1_procs >= 2 && x->f->max_nranks == 1) {
		ev_fact(x, F_SIZE1);
		snprintf(msg, len, "%zu processes each formed a communicator of 1 rank and no communicator has more: "
		         "the launcher started processes that NCCL never connected", x->f->size1_procs);
		return 1;
	}
	if (lg->nt_rank0 >= 2) {
		ev_fact(x, F_NT_RANK0);
		snprintf(msg, len, "%zu different processes each printed nccl-tests' device list as rank 0: "
		         "each ran its own test instead of one test across all", lg->nt_rank0);
		return 1;
	}
	return 0;
}

/* The first pair of ranks seen on one host name and bus id; with
 * local_only, only in a communicator that NCCL did not count as several
 * nodes (ranks told apart by NCCL_HOSTID, or same-named hosts, are on
 * different nodes for NCCL, which then accepts the shared bus id).
 * Returns a pointer into lg or NULL. */
static const struct lg_dup *first_dup(const struct nw_log *lg, int local_only)
{
	for (size_t i = 0; i < lg->ndups; i++)
		if (!local_only || lg->comms[lg->dups[i].comm].nnodes <= 1)
			return &lg->dups[i];
	return NULL;
}

static int r_duplicate_gpu(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	uint64_t warned = lg_nfact(lg, F_DUP_GPU_WARN);
	const struct lg_dup *d = first_dup(lg, warned == 0);
	if (d) {
		ev_add(x, d->line, d->host);
		ev_fact(x, F_DUP_GPU_WARN);
		snprintf(msg, len, "ranks %d and %d of one communicator use the same GPU (busId %" PRIx64 ") on '%s'%s",
		         d->rank_a, d->rank_b, d->bus, lg->hosts[d->host].name,
		         warned ? "; NCCL refused it (\"Duplicate GPU detected\")" : "");
		return 1;
	}
	if (warned) {
		ev_fact(x, F_DUP_GPU_WARN);
		snprintf(msg, len, "NCCL reported \"Duplicate GPU detected\" (%" PRIu64 " line%s): two ranks of one communicator are on one GPU",
		         warned, warned == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static int r_no_iface(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!ev_fact(x, F_NO_IFACE))
		return 0;
	const struct lg_env *e = ev_env(x, "NCCL_SOCKET_IFNAME");
	snprintf(msg, len, "NCCL found no usable network interface for its sockets%s%s%s",
	         e ? " (NCCL_SOCKET_IFNAME=" : "", e ? e->value : "", e ? " matches none)" : "");
	return 1;
}

static int r_shm_failure(const struct rule_ctx *x, char *msg, size_t len)
{
	uint64_t n = ev_fact(x, F_SHM_FAIL);
	if (!n)
		return 0;
	snprintf(msg, len, "shared memory (/dev/shm) failures: %" PRIu64 " line%s", n, n == 1 ? "" : "s");
	return 1;
}

/* Append "0-3,5" for the set ranks of in[0..n) to msg at *used. */
static void rank_list(char *msg, size_t len, size_t *used, const unsigned char *in, int n)
{
	int first = 1;
	for (int r = 0; r < n && *used < len; r++) {
		if (!in[r])
			continue;
		int e = r;
		while (e + 1 < n && in[e + 1])
			e++;
		*used += (size_t)snprintf(msg + *used, len - *used, e > r ? "%s%d-%d" : "%s%d", first ? "" : ",", r, e);
		first = 0;
		r = e;
	}
}

enum { MAXR = 4096 };

/* The watchdog's timeouts, one clause per collective (op, SeqNum) with its ranks; marks in any[] the ranks that timed out. */
static size_t watchdog_groups(const struct nw_log *lg, char *msg, size_t len, size_t used, unsigned char *any)
{
	unsigned char in[MAXR];
	long long newest = -1;
	for (size_t i = 0; i < lg->ntimeouts; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		newest = t->seq > newest ? t->seq : newest;
		if (t->rank >= 0 && t->rank < MAXR)
			any[t->rank] = 1;
	}
	unsigned char done[64] = { 0 };
	for (size_t i = 0; i < lg->ntimeouts && i < NW_ARRAY_LEN(done) && used < len; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		if (done[i])
			continue;
		memset(in, 0, sizeof(in));
		int nin = 0;
		for (size_t k = i; k < lg->ntimeouts && k < NW_ARRAY_LEN(done); k++) {
			const struct lg_timeout *u = &lg->timeouts[k];
			if (u->seq == t->seq && !strcmp(u->op, t->op)) {
				done[k] = 1;
				if (u->rank >= 0 && u->rank < MAXR)
					nin += !in[u->rank], in[u->rank] = 1;
			}
		}
		used += (size_t)snprintf(msg + used, len - used, "%s %s SeqNum=%lld on rank%s ", i ? ";" : "",
		                         t->op[0] ? t->op : "?", t->seq, nin == 1 ? "" : "s");
		rank_list(msg, len, &used, in, MAXR);
		if (used < len && t->timeout_ms >= 0)
			used += (size_t)snprintf(msg + used, len - used, " (timeout %lld ms, ran %lld ms)", t->timeout_ms, t->ran_ms);
		if (used < len && t->seq < newest)
			used += (size_t)snprintf(msg + used, len - used, ", behind: never reached SeqNum=%lld", newest);
	}
	return used;
}

/* What NCCL RAS, when its answer is in the log, says of the job a watchdog timed out in. */
static size_t watchdog_ras(const struct rule_ctx *x, char *msg, size_t len, size_t used)
{
	const struct nw_log *lg = x->lg;
	if (used >= len)
		return used;
	if (lg->ras_dead || lg->ras_missing || lg_nfact(lg, F_RAS_MISSING)) {
		ev_fact(x, F_RAS_MISSING);
		return used + (size_t)snprintf(msg + used, len - used,
		                               "; NCCL RAS names %s (quoted): the ranks wait for that one",
		                               lg->ras_dead ? "a process it considers dead" : "a process it has no data from");
	}
	if (lg_nfact(lg, F_RAS_MISMATCH)) {
		ev_fact(x, F_RAS_MISMATCH);
		return used + (size_t)snprintf(msg + used, len - used,
		                               "; NCCL RAS shows ranks at different operation counts: those behind are the ones the others wait for");
	}
	if (lg->ras_groups && lg->ras_groups == lg->ras_groups_ok) {
		ev_fact(x, F_RAS_STATUS);
		return used + (size_t)snprintf(msg + used, len - used,
		                               "; NCCL RAS shows every communicator RUNNING with no error and all ranks alive: "
		                               "a rank is slow, or waits on something other than NCCL (data loading, the host, another code path)");
	}
	return used;
}

/*
 * PyTorch's watchdog timeouts, grouped by collective (op and SeqNum): which
 * ranks timed out in each, which are behind (a lower SeqNum: they never
 * reached the newest one), which ranks of the job did not report, and what
 * NCCL RAS says of the job when its answer is in the log.
 */
static int r_watchdog(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (!lg->ntimeouts || !ev_fact(x, F_WATCHDOG))
		return 0;
	unsigned char in[MAXR], any[MAXR];
	int nranks = x->f->max_nranks > lg->ranks_hint ? x->f->max_nranks : lg->ranks_hint;
	memset(any, 0, sizeof(any));
	if (nranks > MAXR)
		nranks = MAXR;
	size_t used = (size_t)snprintf(msg, len, "PyTorch's watchdog timed out:");
	used = watchdog_groups(lg, msg, len, used, any);
	if (nranks > 0 && used < len) {
		memset(in, 0, sizeof(in));
		int missing = 0;
		for (int r = 0; r < nranks; r++)
			missing += in[r] = !any[r];
		if (missing && used < len) {
			used += (size_t)snprintf(msg + used, len - used, "; no timeout from rank%s ", missing == 1 ? "" : "s");
			rank_list(msg, len, &used, in, nranks);
			if (used < len)
				used += (size_t)snprintf(msg + used, len - used, " of %d (their logs are missing, or they hang elsewhere)", nranks);
		}
	}
	watchdog_ras(x, msg, len, used);
	return 1;
}

static int r_rendezvous(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!ev_fact(x, F_RENDEZVOUS))
		return 0;
	if (x->lg->rdv_expected > 0)
		snprintf(msg, len, "the rendezvous (c10d store) timed out waiting for ranks to join: %lld of %lld joined",
		         x->lg->rdv_joined, x->lg->rdv_expected);
	else
		snprintf(msg, len, "the rendezvous (c10d store) timed out waiting for ranks to join");
	return 1;
}

static int r_nccl_error(const struct rule_ctx *x, char *msg, size_t len)
{
	size_t used = 0;
	for (int i = 1; i < 7; i++) {
		uint64_t n = ev_fact(x, (enum lg_fact)(F_ERR + i));
		if (n && used < len)
			used += (size_t)snprintf(msg + used, len - used, "%s%s (%" PRIu64 " line%s)",
			                         used ? ", " : "NCCL returned errors: ", lg_nccl_results[i], n, n == 1 ? "" : "s");
	}
	if (used && used < len && lg_nfact(x->lg, F_ERR + 6))
		snprintf(msg + used, len - used, "; ncclRemoteError means a peer or the network between failed, NCCL cannot tell which");
	return used > 0;
}

/* "what (N lines: detail; first on 'host')" when fact f was said (its first line quoted); 0 when not. */
static int said_lines(const struct rule_ctx *x, char *msg, size_t len, enum lg_fact f, const char *what, const char *detail)
{
	uint64_t n = ev_fact(x, f);
	if (!n)
		return 0;
	uint32_t h = x->lg->facts[f].host;
	const char *host = h != UINT32_MAX ? x->lg->hosts[h].name : NULL;
	snprintf(msg, len, "%s (%" PRIu64 " line%s%s%s%s%s%s)", what, n, n == 1 ? "" : "s", detail ? ": " : "",
	         detail ? detail : "", host ? "; first on '" : "", host ? host : "", host ? "'" : "");
	return 1;
}

/* A crash: NCCL's "Caught signal 7 (Bus error)" or the process's own report; SIGBUS in NCCL is /dev/shm running out. */
static int r_bus_error(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_BUS_ERROR, "a process crashed with SIGBUS (Bus error): NCCL's shared-memory segment "
	                  "outgrew /dev/shm", NULL);
}

static int r_segv(const struct rule_ctx *x, char *msg, size_t len)
{
	if (lg_nfact(x->lg, F_BUS_ERROR))
		return 0;
	return said_lines(x, msg, len, F_SEGV, "a process crashed with SIGSEGV", NULL);
}

static int r_oom(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_OOM, "the GPU ran out of memory", "Cuda failure 'out of memory' or a failed CUDA calloc");
}

/* What an ibverbs work-completion status means (enum ibv_wc_status). */
static const char *ib_status_text(int st)
{
	static const struct { int st; const char *text; } t[] = {
		{ 2, "local QP operation error" },
		{ 4, "local protection error: memory registration (nvidia-peermem, DMA-BUF, NCCL_NET_GDR_LEVEL)" },
		{ 5, "work request flushed: the QP had already failed, look for an earlier error" },
		{ 9, "remote invalid request" },
		{ 10, "remote access error: the peer's memory registration" },
		{ 11, "remote operation error" },
		{ 12, "transport retry counter exceeded: the link, a switch, or the GID/RoCE configuration (NCCL_IB_GID_INDEX)" },
		{ 13, "RNR retry counter exceeded: the peer stopped posting receives (it died or hung)" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(t); i++)
		if (t[i].st == st)
			return t[i].text;
	return "see ibv_wc_status";
}

static int r_ib_completion(const struct rule_ctx *x, char *msg, size_t len)
{
	uint64_t n = ev_fact(x, F_IB_STATUS);
	if (!n)
		return 0;
	snprintf(msg, len, "InfiniBand/RoCE completion error, status=%d (%s); %" PRIu64 " line%s", x->lg->ib_status,
	         ib_status_text(x->lg->ib_status), n, n == 1 ? "" : "s");
	return 1;
}

/* What a NET/OFI completion error's provider error means, from its text ("Error: 2 (UNDELIVERABLE)"). */
static const char *ofi_error_text(const char *e)
{
	static const struct { const char *word, *text; } t[] = {
		{ "UNDELIVERABLE", "the fabric could not deliver the message to the peer's endpoint: no route to it, "
		                   "or the endpoint or the peer's node was down" },
		{ "No route to host", "the fabric had no route to the peer" },
		{ "Connection reset", "the peer's endpoint reset the connection" },
		{ "Input/output error", "the NIC reported an I/O error" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(t); i++)
		if (strstr(e, t[i].word))
			return t[i].text;
	return strstr(e, "RC: 113") ? "no route to the peer (EHOSTUNREACH)" : "the provider's error; the message does not say more";
}

/*
 * A NET/OFI request completed with an error: what the provider said, and
 * nothing it did not (a completion error is not, by itself, a peer that
 * closed its connections or crashed).
 */
static int r_ofi_completion(const struct rule_ctx *x, char *msg, size_t len)
{
	uint64_t n = ev_fact(x, F_OFI_COMPLETION);
	if (!n)
		return 0;
	const char *e = x->lg->ofi_error;
	snprintf(msg, len, "a libfabric (NET/OFI) transfer completed with an error%s%s%s: %s; %" PRIu64 " line%s",
	         e[0] ? " (" : "", e, e[0] ? ")" : "", ofi_error_text(e), n, n == 1 ? "" : "s");
	return 1;
}

/* Whether a host's aws-ofi-nccl selected libfabric provider prov ("efa"). */
static int ofi_selected(const struct nw_log *lg, const char *prov)
{
	if (!strcmp(lg->hostless_provider, prov))
		return 1;
	for (size_t i = 0; i < lg->nhosts; i++)
		if (!strcmp(lg->hosts[i].ofi_provider, prov))
			return 1;
	return 0;
}

/*
 * No usable libfabric provider where the job runs: "fi_getinfo: provider
 * efa output empty list" (unless that provider was selected after all),
 * "OFI fi_getinfo() call failed", "Couldn't find any optimal provider", a
 * CXI NIC with no VNI for the job.
 */
static int r_ofi_provider(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	const struct lg_fact_rec *r = &lg->facts[F_OFI_NO_PROVIDER];
	if (!r->n || (lg->ofi_empty_provider[0] && strstr(r->line, "output empty list") && ofi_selected(lg, lg->ofi_empty_provider)))
		return 0;
	ev_fact(x, F_OFI_NO_PROVIDER);
	const struct lg_env *fp = ev_env(x, "FI_PROVIDER");
	if (strstr(r->line, "rgroup and vni"))
		snprintf(msg, len, "libfabric's cxi provider found no VNI (service) for this job on the Slingshot NIC: "
		         "the job was not started through the launcher that grants one");
	else
		snprintf(msg, len, "libfabric found no usable %s provider where the job runs%s%s%s: the NCCL net plugin (aws-ofi-nccl) "
		         "cannot use the fabric", lg->ofi_empty_provider[0] ? lg->ofi_empty_provider : "network",
		         fp ? " (FI_PROVIDER=" : "", fp ? fp->value : "", fp ? ")" : "");
	return 1;
}

static int r_ofi_setup(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_OFI_SETUP,
	                  "the NCCL net plugin aws-ofi-nccl could not set up a libfabric endpoint, domain or address vector for a peer",
	                  NULL);
}

static int r_ofi_tcp(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_OFI_TCP,
	                  "aws-ofi-nccl selected libfabric's tcp provider: traffic between nodes goes over TCP, not over EFA or RDMA",
	                  NULL);
}

static int r_socket_connect(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_SOCK_CONNECT, "socket connections between ranks failed", "refused, aborted or timed out");
}

static int r_socket_loopback(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_SOCK_LOOPBACK,
	                  "ranks tried to reach each other on a loopback address (127.x or ::1): "
	                  "NCCL chose the lo interface or a hostname that resolves to it", NULL);
}

static int r_coll_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_COLL_MISMATCH,
	                  "the two sides of a connection disagree on a collective's size", "collective mismatch error");
}

static int r_driver_old(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_DRIVER_OLD, "the CUDA driver is older than the CUDA runtime the program was built with",
	                  "driver version is insufficient");
}

static int r_collnet(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_COLLNET_FAIL,
	                  "CollNet/SHARP setup failed (the SHARP plugin could not create a group or lock an aggregation tree)", NULL);
}

static int r_ring_loop(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_RING_LOOP,
	                  "NCCL built an inconsistent ring: ranks disagree on which of them share a node", "does not loop back");
}

static int r_smem(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_SMEM_EXCEED,
	                  "this NCCL build's kernels need more shared memory than the GPU has: it does not support this GPU",
	                  "ncclMaxSharedMem ... exceeds");
}

static int r_ras_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	const char *m = x->lg->ras_mismatch;
	if (!m[0] || !ev_fact(x, F_RAS_MISMATCH))
		return 0;
	snprintf(msg, len, "NCCL RAS: ranks of a communicator have different %s: the ranks behind have not "
	         "reached the next collective, the others wait in it", m);
	return 1;
}

/* NCCL RAS names processes it considers dead or has no data from. */
static int r_ras_missing(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (!ev_fact(x, F_RAS_MISSING))
		return 0;
	if (lg->ras_dead)
		snprintf(msg, len, "NCCL RAS considers %d process%s of the job dead (unreachable): the other ranks will wait for %s",
		         lg->ras_dead, lg->ras_dead == 1 ? "" : "es", lg->ras_dead == 1 ? "it" : "them");
	else if (lg->ras_missing)
		snprintf(msg, len, "NCCL RAS has no data from %d process%s of the job (it did not answer): it is hung, dead or unreachable",
		         lg->ras_missing, lg->ras_missing == 1 ? "" : "es");
	else
		snprintf(msg, len, "NCCL RAS is missing ranks of a communicator: their processes did not answer");
	return 1;
}

/* The ncclwatch plugin's periodic lines said hung=1: the first such communicator, when, and how many more. */
static int r_plugin_hang(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_nwseries *first = NULL;
	size_t more = 0;
	for (size_t i = 0; i < x->lg->nnw; i++) {
		const struct lg_nwseries *s = &x->lg->nw[i];
		if (!s->hung_lines)
			continue;
		if (!first || s->first_hung_t < first->first_hung_t) {
			more += first != NULL;
			first = s;
		} else {
			more++;
		}
	}
	if (!first || !ev_fact(x, F_PLUGIN_HANG))
		return 0;
	char when[40] = "?";
	time_t t = (time_t)first->first_hung_t;
	struct tm tm;
	if (first->first_hung_t >= 0 && first->first_hung_t < 1e12 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(msg, len, "the ncclwatch plugin declared communicator %016" PRIx64 "%s%s%s hung on rank %d at %s "
	         "(%" PRIu64 " of its %" PRIu64 " log lines say hung)%s",
	         first->comm, first->name[0] ? " (" : "", first->name, first->name[0] ? ")" : "", first->rank, when,
	         first->hung_lines, first->lines, more ? ", and other communicators too" : "");
	return 1;
}

static int r_nvls(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_NVLS_FAIL, "NVLink SHARP (NVLS) setup failed", NULL);
}

static int r_sysfs(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_SYSFS, "NCCL could not read the PCI topology in /sys", "Could not find real path");
}

static int r_peer_closed(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, F_PEER_CLOSED,
	                  "a peer closed or reset its connection: it exited or crashed first, and its own log holds the cause", NULL);
}

/* Communicators aborted (ncclCommAbort): which ranks, and the error line read before the first abort. */
static int r_aborted(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (!ev_fact(x, F_ABORT))
		return 0;
	size_t used = (size_t)snprintf(msg, len, "communicators were aborted (ncclCommAbort) on rank%s ", lg->nabort_ranks == 1 ? "" : "s");
	for (size_t k = 0; k < lg->nabort_ranks && used < len; k++)
		used += (size_t)snprintf(msg + used, len - used, lg->abort_ranks[k] >= 0 ? "%s%d" : "%s?", k ? "," : "",
		                         lg->abort_ranks[k]);
	if (used < len && lg->abort_after[0]) {
		ev_add(x, lg->abort_after, UINT32_MAX);
		snprintf(msg + used, len - used, "; the error logged before the first abort: %.160s", lg->abort_after);
	} else if (used < len) {
		snprintf(msg + used, len - used, "; no error is logged before it: the program aborted them (PyTorch does on a "
		         "timeout or an error on another rank, or when it destroys a process group early)");
	}
	return 1;
}

static int r_init_incomplete(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->init_started > c->init_completed) {
			ev_add(x, c->start_line[0] ? c->start_line : c->first_line, UINT32_MAX);
			snprintf(msg, len, "%d of %d rank%s of communicator %s%" PRIx64 " started init but never logged Init COMPLETE",
			         c->init_started - c->init_completed, c->init_started, c->init_started == 1 ? "" : "s",
			         c->has_id ? "0x" : "of size ", c->has_id ? c->id : (uint64_t)c->nranks);
			return 1;
		}
	}
	return 0;
}

/* "; NAME is set by the environment (quoted): unset it" for each of vars set to a value other than "0"; returns used. */
static size_t env_set_note(const struct rule_ctx *x, char *msg, size_t len, size_t used, const char *const *vars, size_t nvars)
{
	for (size_t i = 0; i < nvars && used < len; i++) {
		const struct lg_env *e = lg_env_find(x->lg, vars[i]);
		if (!e || !strcmp(e->value, "0"))
			continue;
		ev_env(x, vars[i]);
		used += (size_t)snprintf(msg + used, len - used, "; %s=%s is set by the environment: unset it", vars[i], e->value);
	}
	return used;
}

static int r_net_within_node(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_intra[T_SOCKET] + f->class_intra[T_IB] + f->class_intra[T_NET_OTHER];
	if (!n)
		return 0;
	if (!ev_transport(x, T_SOCKET, 1) && !ev_transport(x, T_IB, 1))
		ev_transport(x, T_NET_OTHER, 1);
	size_t used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s on the same node talk through the network (%s)%s", n,
	                               n == 1 ? "" : "s", f->class_intra[T_SOCKET] ? "TCP sockets" : "NIC loopback",
	                               f->any_nvlink ? ", although the GPUs are joined by NVLink" : "");
	static const char *const vars[] = { "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE" };
	used = env_set_note(x, msg, len, used, vars, NW_ARRAY_LEN(vars));
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_HOSTID");
	if (e && used < len) {
		ev_env(x, "NCCL_HOSTID");
		used += (size_t)snprintf(msg + used, len - used,
		                         "; NCCL_HOSTID is set by the environment (e.g. to %s): NCCL counts ranks with different host ids as different nodes, unset it",
		                         e->value);
	}
	const struct lg_dup *d = first_dup(x->lg, 0);
	if (d && used < len) {
		ev_add(x, d->line, d->host);
		snprintf(msg + used, len - used, "; ranks %d and %d share the GPU at busId %" PRIx64 " on '%s'", d->rank_a,
		         d->rank_b, d->bus, x->lg->hosts[d->host].name);
	}
	return 1;
}

/* Hosts whose network is TCP sockets for lack of an IB device ("NET/IB : No device found", "Using network Socket"); quotes two. */
static size_t socket_hosts(const struct rule_ctx *x)
{
	size_t k = 0;
	for (size_t i = 0; i < x->lg->nhosts; i++) {
		const struct lg_host *h = &x->lg->hosts[i];
		if (!h->net_line[0] || !(h->socket_net || (h->ib_absent && h->socket_ifs[0] && !h->network[0])))
			continue;
		if (k++ < 2)
			ev_add(x, h->net_line, (uint32_t)i);
	}
	return k;
}

static int r_socket_between_nodes(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_inter[T_SOCKET];
	size_t used;
	if (n) {
		ev_transport(x, T_SOCKET, 0);
		if (f->any_ib_devs)
			used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets although InfiniBand/RoCE devices were found (on '%s')",
			                        n, n == 1 ? "" : "s", f->ib_host);
		else
			used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets: NCCL found no InfiniBand/RoCE device", n,
			                        n == 1 ? "" : "s");
	} else {
		size_t nh = socket_hosts(x);
		if (nh < 2) {
			x->ev->n = 0;
			return 0;
		}
		used = (size_t)snprintf(msg, len, "%zu hosts use TCP sockets as NCCL's network: NCCL found no InfiniBand/RoCE device there, "
		                        "so traffic between the nodes goes over TCP", nh);
	}
	static const char *const vars[] = { "NCCL_IB_DISABLE", "NCCL_NET" };
	env_set_note(x, msg, len, used, vars, NW_ARRAY_LEN(vars));
	return 1;
}

static int r_shm(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	if (!f->class_pairs[T_SHM] || !ev_transport(x, T_SHM, -1))
		return 0;
	size_t used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s go through host shared memory (SHM) instead of GPU peer-to-peer%s",
	                               f->class_pairs[T_SHM], f->class_pairs[T_SHM] == 1 ? "" : "s",
	                               f->any_nvlink ? "; the GPUs are joined by NVLink" : "");
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_P2P_DISABLE");
	if (e && strcmp(e->value, "0") && used < len) {
		ev_env(x, "NCCL_P2P_DISABLE");
		snprintf(msg + used, len - used, " because NCCL_P2P_DISABLE is set (to %s): unset it", e->value);
	} else if (used < len) {
		snprintf(msg + used, len - used, "; the log does not say why NCCL found P2P unusable between them");
	}
	return 1;
}

/* "distance 5 > 4": the distance and the limit of a GPU Direct RDMA line; 0 when it has none. */
static int gdr_distance(const char *s, long long *d, long long *l)
{
	const char *p = strstr(s, "(distance ");
	size_t used;
	if (!p)
		return 0;
	*d = parse_ll(p + 10, strlen(p + 10), &used);
	if (!used)
		return 0;
	p += 10 + used;
	while (*p == ' ' || *p == '>' || *p == '=')
		p++;
	*l = parse_ll(p, strlen(p), &used);
	return used > 0;
}

/* Why NCCL turned GPUDirect RDMA off, as its own line says (quoted), at msg+used; returns used. */
static size_t gdr_reason(const struct rule_ctx *x, char *msg, size_t len, size_t used)
{
	const struct nw_log *lg = x->lg;
	long long d, l;
	if (used >= len)
		return used;
	if (ev_fact(x, F_GDR_DISTANCE) && gdr_distance(lg->facts[F_GDR_DISTANCE].line, &d, &l)) {
		const struct lg_env *lv = ev_env(x, "NCCL_NET_GDR_LEVEL");
		return used + (size_t)snprintf(msg + used, len - used,
		        "%sthe NIC is too far from the GPU: PCIe distance %lld, beyond the %lld that NCCL_NET_GDR_LEVEL allows (%s%s)",
		        used ? "; " : "", d, l, lv ? "set by the environment to " : "its default, the variable is not set",
		        lv ? lv->value : "");
	}
	if (ev_fact(x, F_GDR_HCA)) {
		const char *q = lg->facts[F_GDR_HCA].line;
		return used + (size_t)snprintf(msg + used, len - used, "%s%s", used ? "; " : "",
		        strstr(q, "FI_HMEM") ? "libfabric says the EFA device cannot reach GPU memory (no RDMA on this instance type)"
		                             : "NCCL found no way to let the NIC reach GPU memory (nvidia-peermem not loaded or not "
		                               "working, and no DMA-BUF)");
	}
	return used;
}

static int r_gdr(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	size_t used = 0;
	if (f->class_pairs[T_IB] && !f->ib_gdr_pairs) {
		ev_transport(x, T_IB, -1);
		used = (size_t)snprintf(msg, len, "%" PRIu64 " InfiniBand peer pair%s copy through host memory: GPUDirect RDMA is not used",
		                        f->class_pairs[T_IB], f->class_pairs[T_IB] == 1 ? "" : "s");
		if (!lg_nfact(x->lg, F_GDR_DISTANCE) && !lg_nfact(x->lg, F_GDR_HCA) && used < len)
			snprintf(msg + used, len - used, "; the log does not say why (NCCL_DEBUG_SUBSYS=NET shows it)");
	} else if (lg_nfact(x->lg, F_GDR_DISTANCE) || lg_nfact(x->lg, F_GDR_HCA)) {
		used = (size_t)snprintf(msg, len, "NCCL turned GPUDirect RDMA off");
	} else {
		return 0;
	}
	gdr_reason(x, msg, len, used);
	return 1;
}

static int r_forced(const struct rule_ctx *x, char *msg, size_t len, const char *var, const char *what)
{
	const struct lg_env *e = ev_env(x, var);
	if (!e)
		return 0;
	snprintf(msg, len, "%s is forced by the environment: %s=%s", what, var, e->value);
	return 1;
}

static int r_forced_algo(const struct rule_ctx *x, char *msg, size_t len)
{
	return r_forced(x, msg, len, "NCCL_ALGO", "the algorithm");
}

static int r_forced_proto(const struct rule_ctx *x, char *msg, size_t len)
{
	return r_forced(x, msg, len, "NCCL_PROTO", "the protocol");
}

static int r_transport_disabled(const struct rule_ctx *x, char *msg, size_t len)
{
	static const struct { const char *var, *bad[3]; } vars[] = {
		{ "NCCL_P2P_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_SHM_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_IB_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_NET_GDR_LEVEL", { "0", "LOC", NULL } },
		{ "NCCL_P2P_LEVEL", { "0", "LOC", NULL } },
	};
	size_t used = 0;
	for (size_t i = 0; i < NW_ARRAY_LEN(vars); i++) {
		const struct lg_env *e = lg_env_find(x->lg, vars[i].var);
		if (!e)
			continue;
		for (int k = 0; k < 3 && vars[i].bad[k]; k++)
			if (!strcmp(e->value, vars[i].bad[k]) && used < len) {
				ev_env(x, vars[i].var);
				used += (size_t)snprintf(msg + used, len - used, "%s%s=%s", used ? ", " : "transports disabled by the environment: ",
				                         vars[i].var, e->value);
			}
	}
	return used > 0;
}

static int r_ranks_missing(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->has_id && c->ranks_seen < c->nranks && !c->hostless) {
			ev_add(x, c->first_line, UINT32_MAX);
			snprintf(msg, len, "communicator 0x%" PRIx64 " has %d ranks but only %d appear in the log", c->id,
			         c->nranks, c->ranks_seen);
			return 1;
		}
	}
	return 0;
}

static int r_nccl_warn(const struct rule_ctx *x, char *msg, size_t len)
{
	uint64_t lines = 0, groups = 0;
	const struct lg_group *first = NULL;
	for (size_t i = 0; i < x->lg->ngroups; i++)
		if (x->lg->groups[i].kind == G_NCCL_WARN) {
			lines += x->lg->groups[i].count;
			groups++;
			if (!first)
				first = &x->lg->groups[i];
		}
	if (!lines)
		return 0;
	ev_add(x, first->first, first->first_host_idx);
	snprintf(msg, len, "%" PRIu64 " NCCL WARN line%s, %" PRIu64 " distinct cause%s; first: %.200s", lines,
	         lines == 1 ? "" : "s", groups, groups == 1 ? "" : "s", first->first);
	return 1;
}

struct rule {
	struct nw_log_rule_info info;
	rule_fn fn;
};

static const struct rule rules[] = {
	{ { "nccl-version-mismatch", NW_LOG_ERROR, "processes load different NCCL versions",
	    "load one NCCL everywhere: same container image, or set LD_LIBRARY_PATH/LD_PRELOAD to one libnccl.so.2 on every node", "version_mismatch" }, r_version_mismatch },
	{ { "collective-mismatch", NW_LOG_ERROR, "ranks disagree on a collective's size",
	    "load one NCCL and the same NCCL_* settings on every rank, and make every rank call the same collectives with the same counts", "version_mismatch" }, r_coll_mismatch },
	{ { "cuda-driver-too-old", NW_LOG_ERROR, "the CUDA driver is older than the program's CUDA runtime",
	    "upgrade the driver on the nodes, or use a build (container image, NCCL, nccl-tests) made for the installed driver's CUDA version (nvidia-smi shows it)", "cuda_driver_mismatch" }, r_driver_old },
	{ { "gpu-unsupported", NW_LOG_ERROR, "this NCCL build does not support the GPU",
	    "use an NCCL built for this GPU architecture (a newer NCCL release or a build with its sm_ in NVCC_GENCODE)", "gpu_arch_unsupported" }, r_smem },
	{ { "ring-inconsistent", NW_LOG_ERROR, "NCCL built a ring that does not close",
	    "unset NCCL_HOSTID (or give every rank of one node the same value), and check that hostnames are unique per node", "invalid_usage" }, r_ring_loop },
	{ { "ras-mismatch", NW_LOG_ERROR, "NCCL RAS shows ranks at different collective counts (a hang)",
	    "find what the ranks behind are doing (py-spy dump, their logs): a data-loader stall, a crash, or a code path that skipped a collective", "hang" }, r_ras_mismatch },
	{ { "ras-ranks-missing", NW_LOG_ERROR, "NCCL RAS names processes it considers dead or has no data from",
	    "look at the named process on its node (is it alive, stuck: py-spy dump, its log's last lines); the rest of the job waits for it", "hang" }, r_ras_missing },
	{ { "plugin-hang", NW_LOG_ERROR, "the ncclwatch plugin's log lines say a communicator hung",
	    "run 'ncclwatch hang' on the nodes while the job is stuck (or read the trace dumps in NCCLWATCH_DIR): it names the collective and the rank that did not arrive", "hang" }, r_plugin_hang },
	{ { "collnet-setup-failed", NW_LOG_ERROR, "CollNet/SHARP setup failed",
	    "check the SHARP aggregation manager and the switch's SHARP resources, or set NCCL_COLLNET_ENABLE=0", "collnet_setup_failed" }, r_collnet },
	{ { "socket-loopback", NW_LOG_ERROR, "ranks connected to a loopback address",
	    "set NCCL_SOCKET_IFNAME to the interface the nodes reach each other by (not lo), and make the hostname resolve to that address, not 127.0.1.1", "wrong_socket_ifname" }, r_socket_loopback },
	{ { "size1-communicators", NW_LOG_ERROR, "every process formed its own 1-rank communicator (processes not connected)",
	    "nccl-tests under mpirun must be built with MPI=1; torch.distributed needs WORLD_SIZE/RANK from the launcher (torchrun, srun) rather than defaults", "invalid_usage" }, r_size1 },
	{ { "duplicate-gpu", NW_LOG_ERROR, "two ranks of one communicator on the same GPU",
	    "give each local rank its own device: torch.cuda.set_device(LOCAL_RANK), or CUDA_VISIBLE_DEVICES per rank; do not start more ranks per node than GPUs", "invalid_usage" }, r_duplicate_gpu },
	{ { "no-socket-interface", NW_LOG_ERROR, "no usable network interface for NCCL's sockets",
	    "set NCCL_SOCKET_IFNAME to an interface that exists and is up on every node (ip -br addr), or unset it", "wrong_socket_ifname" }, r_no_iface },
	{ { "crash-bus-error", NW_LOG_ERROR, "a process died of SIGBUS (Bus error)",
	    "give the container more /dev/shm (docker --shm-size=1g or --ipc=host; Kubernetes: an emptyDir of medium Memory on /dev/shm)", "shm_too_small" }, r_bus_error },
	{ { "crash-segv", NW_LOG_ERROR, "a process died of SIGSEGV",
	    "read the backtrace: a frame in libnccl points at NCCL (try the newest NCCL, report it with NCCL_DEBUG=INFO); otherwise at the program or another library", "segv_in_nccl" }, r_segv },
	{ { "cuda-oom", NW_LOG_ERROR, "the GPU ran out of memory",
	    "free GPU memory before NCCL init (smaller batch, fewer processes per GPU), or lower NCCL's buffers (NCCL_BUFFSIZE, NCCL_NCHANNELS_PER_NET_PEER)", "cuda_oom" }, r_oom },
	{ { "ib-completion-error", NW_LOG_ERROR, "an InfiniBand/RoCE work completion failed",
	    "by status: 12 the link, switch or GID/RoCE config (check ibstat, NCCL_IB_GID_INDEX); 13 a peer that died; 4/10 memory registration (nvidia-peermem, DMA-BUF); 5 follows an earlier error", "ib_completion_error" }, r_ib_completion },
	{ { "ofi-completion-error", NW_LOG_ERROR, "a libfabric (NET/OFI) transfer completed with an error",
	    "check the fabric between the nodes at that time (link and switch state, routes; EFA: the security group lets all traffic between the instances; Slingshot: cxi_stat, the fabric manager's events), and whether the peer's node and process were still up (its own log)", "ofi_completion_error" }, r_ofi_completion },
	{ { "ofi-provider-unusable", NW_LOG_ERROR, "libfabric has no usable provider where the job runs",
	    "EFA: expose the EFA devices to the container (/dev/infiniband/uverbs*, the EFA device plugin's vpc.amazonaws.com/efa resource), use an instance type with EFA, give it huge pages, and leave FI_PROVIDER unset or set to efa; check with 'fi_info -p efa' where the job runs. Slingshot (cxi): start the job through the workload manager that grants its VNI", "no_ib_device" }, r_ofi_provider },
	{ { "ofi-setup-failed", NW_LOG_ERROR, "aws-ofi-nccl could not set up a libfabric endpoint or address",
	    "use the libfabric (EFA installer) and aws-ofi-nccl versions made for each other, the same on every node; EFA: the security group must allow all traffic between the instances", "internal_error" }, r_ofi_setup },
	{ { "socket-connect-failed", NW_LOG_ERROR, "socket connections between ranks failed",
	    "check firewalls between nodes and that NCCL_SOCKET_IFNAME names an interface every node reaches the others by (not docker0, lo or a veth)", "socket_connect_failed" }, r_socket_connect },
	{ { "nvls-setup-failed", NW_LOG_ERROR, "NVLink SHARP (NVLS) setup failed",
	    "check nvidia-fabricmanager on the node (systemctl status nvidia-fabricmanager), or set NCCL_NVLS_ENABLE=0", "nvls_setup_failed" }, r_nvls },
	{ { "sysfs-not-visible", NW_LOG_ERROR, "NCCL could not read the PCI topology in /sys",
	    "mount the host's /sys into the container (or run it privileged); under WSL2 set NCCL_P2P_DISABLE=1 or use a newer NCCL", "sysfs_not_visible" }, r_sysfs },
	{ { "shm-failure", NW_LOG_ERROR, "shared memory (/dev/shm) failures",
	    "give the container more /dev/shm (docker --shm-size=1g or --ipc=host; Kubernetes: an emptyDir of medium Memory on /dev/shm)", "shm_too_small" }, r_shm_failure },
	{ { "watchdog-timeout", NW_LOG_ERROR, "PyTorch watchdog timed out on a collective",
	    "find the rank that did not reach this collective (SeqNum): it crashed, hung, or ran a different sequence of collectives; raise the timeout only for known slow steps", "watchdog_timeout" }, r_watchdog },
	{ { "rendezvous-timeout", NW_LOG_ERROR, "rendezvous timed out waiting for ranks",
	    "check that every rank started and reaches MASTER_ADDR:MASTER_PORT, and that WORLD_SIZE matches the ranks launched", "rendezvous_timeout" }, r_rendezvous },
	{ { "nccl-error", NW_LOG_ERROR, "NCCL calls returned errors",
	    "read the WARN lines above the first error, and the line PyTorch prints after 'Last error:': ncclSystemError is the OS or network (interfaces, /dev/shm, ulimits), ncclRemoteError a peer or the network between them, ncclUnhandledCudaError the GPU or driver, ncclInvalidUsage the program", "nccl_error" }, r_nccl_error },
	{ { "peer-connection-closed", NW_LOG_ERROR, "a peer closed or reset its connection",
	    "find the rank that exited first: its log holds the cause; this one is only a symptom", "peer_connection_closed" }, r_peer_closed },
	{ { "comm-aborted", NW_LOG_ERROR, "communicators were aborted",
	    "the abort is a reaction: read the error quoted before it, or, when none is, the program's own log (a timeout, an exception on another rank)", "comm_aborted" }, r_aborted },
	{ { "init-incomplete", NW_LOG_WARNING, "communicator initialisation started but did not complete",
	    "a rank hung or died during init: look at the ranks that have Init START but no Init COMPLETE, and at their WARN lines", "hang" }, r_init_incomplete },
	{ { "net-within-node", NW_LOG_WARNING, "ranks on one node talk through the network",
	    "let ranks of one node reach each other through P2P or shared memory: in containers allow it (--ipc=host, all GPUs of the node visible to every rank); the message names the variables to unset when the log shows them set", "p2p_not_supported" }, r_net_within_node },
	{ { "socket-between-nodes", NW_LOG_WARNING, "inter-node traffic over TCP sockets",
	    "make the InfiniBand/RoCE devices visible (--device=/dev/infiniband, rdma-core installed), or install the cloud's NET plugin (aws-ofi-nccl, gIB); the message names NCCL_IB_DISABLE when the log shows it set", "no_ib_device" }, r_socket_between_nodes },
	{ { "ofi-tcp-provider", NW_LOG_WARNING, "aws-ofi-nccl runs on libfabric's tcp provider",
	    "expose the EFA devices to the job (see ofi-provider-unusable) and leave FI_PROVIDER unset or set to efa", "no_ib_device" }, r_ofi_tcp },
	{ { "shm-instead-of-p2p", NW_LOG_WARNING, "peer pairs through host shared memory instead of P2P",
	    "check that the GPUs can reach each other (nvidia-smi topo -m: NVLink, or a PCIe switch without ACS redirecting peer traffic), and that containers see all GPUs of the node; the message names NCCL_P2P_DISABLE when the log shows it set", "p2p_not_supported" }, r_shm },
	{ { "gdr-disabled", NW_LOG_WARNING, "GPUDirect RDMA not used",
	    "by the quoted line: a GPU and a NIC too far apart ('distance d > l'): either raise NCCL_NET_GDR_LEVEL to that distance (PHB, or SYS for any) if a measurement shows it faster, or give the GPU a NIC under its own PCIe switch; no GPUDirect for a NIC ('Disabled for HCA'): load nvidia-peermem, or use DMA-BUF (a recent driver and kernel)", "gdr_disabled" }, r_gdr },
	{ { "forced-algorithm", NW_LOG_WARNING, "NCCL_ALGO forced by the environment",
	    "unset NCCL_ALGO unless a measurement on this machine shows it helps ('ncclwatch tune')", "forced_setting" }, r_forced_algo },
	{ { "forced-protocol", NW_LOG_WARNING, "NCCL_PROTO forced by the environment",
	    "unset NCCL_PROTO unless a measurement on this machine shows it helps ('ncclwatch tune')", "forced_setting" }, r_forced_proto },
	{ { "transport-disabled", NW_LOG_WARNING, "a transport disabled by the environment",
	    "unset the variable unless it works around a known problem on this machine", "forced_setting" }, r_transport_disabled },
	{ { "nccl-warnings", NW_LOG_WARNING, "NCCL printed WARN lines",
	    "read the grouped WARN lines; the first one in time is usually the cause", "nccl_warning" }, r_nccl_warn },
	{ { "ranks-missing", NW_LOG_INFO, "a communicator has ranks whose lines are not in the log",
	    "give logscan the logs of every node (NCCL_DEBUG_FILE=/path/nccl.%h.%p.log writes one per process)", "partial_log" }, r_ranks_missing },
};

size_t nw_log_rules(const struct nw_log_rule_info **out)
{
	static struct nw_log_rule_info infos[NW_ARRAY_LEN(rules)];
	for (size_t i = 0; i < NW_ARRAY_LEN(rules); i++)
		infos[i] = rules[i].info;
	*out = infos;
	return NW_ARRAY_LEN(rules);
}

const char *lg_rule_cause(size_t i, const struct nw_log *lg)
{
	static const struct { int code; const char *cause; } by_code[] = {
		{ 5, "invalid_usage" }, { 4, "invalid_usage" }, { 3, "internal_error" },
		{ 1, "cuda_error" }, { 2, "system_error" }, { 6, "peer_connection_closed" },
	};
	if (i >= NW_ARRAY_LEN(rules))
		return "";
	if (rules[i].fn == r_nccl_error)
		for (size_t k = 0; k < NW_ARRAY_LEN(by_code); k++)
			if (lg_nfact(lg, F_ERR + by_code[k].code))
				return by_code[k].cause;
	return rules[i].info.cause;
}

/* A rule fires only with the lines it rests on: one that found none is not reported. */
int lg_rule_check(size_t i, const struct nw_log *lg, const struct lg_facts *f, char *msg, size_t len,
                  struct lg_evidence *ev)
{
	struct rule_ctx x = { lg, f, ev };
	msg[0] = '\0';
	ev->n = 0;
	return i < NW_ARRAY_LEN(rules) && rules[i].fn(&x, msg, len) && ev->n > 0;
}
