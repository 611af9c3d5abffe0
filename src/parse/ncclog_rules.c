/* The log analyser's diagnosis rules: one table of small pure functions over the tables and the derived facts. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parse/ncclog_int.h"
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
};

typedef int (*rule_fn)(const struct rule_ctx *x, char *msg, size_t len);

static int r_version_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	const char *seen[8];
	size_t nseen = 0, used = 0;
	for (size_t i = 0; i < lg->nprocs && nseen < NW_ARRAY_LEN(seen); i++) {
		const char *v = lg->procs[i].version;
		if (!v[0])
			continue;
		int dup = 0;
		for (size_t k = 0; k < nseen; k++)
			dup |= !strcmp(seen[k], v);
		if (!dup)
			seen[nseen++] = v;
	}
	for (size_t i = 0; i < lg->nbanners && nseen < NW_ARRAY_LEN(seen); i++) {
		int dup = 0;
		for (size_t k = 0; k < nseen; k++)
			dup |= !strcmp(seen[k], lg->banners[i]);
		if (!dup)
			seen[nseen++] = lg->banners[i];
	}
	if (nseen < 2)
		return 0;
	used += (size_t)snprintf(msg, len, "processes load different NCCL versions:");
	for (size_t k = 0; k < nseen && used < len; k++) {
		size_t np = 0;
		const char *host = "";
		for (size_t i = 0; i < lg->nprocs; i++)
			if (!strcmp(lg->procs[i].version, seen[k]))
				np++, host = lg->hosts[lg->procs[i].host].name;
		if (np)
			used += (size_t)snprintf(msg + used, len - used, "%s %s (%zu process%s, e.g. on '%s')",
			                         k ? "," : "", seen[k], np, np == 1 ? "" : "es", host);
		else
			used += (size_t)snprintf(msg + used, len - used, "%s %s (a banner)", k ? "," : "", seen[k]);
	}
	return 1;
}

static int r_size1(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (x->f->size1_procs >= 2 && x->f->max_nranks == 1) {
		snprintf(msg, len, "%zu processes each formed a communicator of 1 rank and no communicator has more: "
		         "the launcher started processes that NCCL never connected", x->f->size1_procs);
		return 1;
	}
	if (lg->nt_rank0 >= 2) {
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
	const struct lg_dup *d = first_dup(lg, lg->dup_gpu_warn_lines == 0);
	if (d) {
		snprintf(msg, len, "ranks %d and %d of one communicator use the same GPU (busId %" PRIx64 ") on '%s'%s",
		         d->rank_a, d->rank_b, d->bus, lg->hosts[d->host].name,
		         lg->dup_gpu_warn_lines ? "; NCCL refused it (\"Duplicate GPU detected\")" : "");
		return 1;
	}
	if (lg->dup_gpu_warn_lines) {
		snprintf(msg, len, "NCCL reported \"Duplicate GPU detected\" (%" PRIu64 " line%s): two ranks of one communicator are on one GPU",
		         lg->dup_gpu_warn_lines, lg->dup_gpu_warn_lines == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static int r_no_iface(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->no_iface_lines)
		return 0;
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_SOCKET_IFNAME");
	snprintf(msg, len, "NCCL found no usable network interface for its sockets%s%s%s",
	         e ? " (NCCL_SOCKET_IFNAME=" : "", e ? e->value : "", e ? " matches none)" : "");
	return 1;
}

static int r_shm_failure(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->shm_fail_lines)
		return 0;
	snprintf(msg, len, "shared memory (/dev/shm) failures: %" PRIu64 " line%s", x->lg->shm_fail_lines,
	         x->lg->shm_fail_lines == 1 ? "" : "s");
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

/*
 * PyTorch's watchdog timeouts, grouped by collective (op and SeqNum): which
 * ranks timed out in each, which are behind (a lower SeqNum: they never
 * reached the newest one), and which ranks of the job did not report.
 */
static int r_watchdog(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (!lg->ntimeouts)
		return 0;
	enum { MAXR = 4096 };
	unsigned char in[MAXR], any[MAXR];
	int nranks = x->f->max_nranks > lg->ranks_hint ? x->f->max_nranks : lg->ranks_hint, hi = -1;
	long long newest = -1;
	memset(any, 0, sizeof(any));
	for (size_t i = 0; i < lg->ntimeouts; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		newest = t->seq > newest ? t->seq : newest;
		if (t->rank >= 0 && t->rank < MAXR) {
			any[t->rank] = 1;
			hi = t->rank > hi ? t->rank : hi;
		}
	}
	if (nranks > MAXR)
		nranks = MAXR;
	size_t used = (size_t)snprintf(msg, len, "PyTorch's watchdog timed out:");
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
	if (nranks > 0 && used < len) {
		memset(in, 0, sizeof(in));
		int missing = 0;
		for (int r = 0; r < nranks; r++)
			missing += in[r] = !any[r];
		if (missing && used < len) {
			used += (size_t)snprintf(msg + used, len - used, "; no timeout from rank%s ", missing == 1 ? "" : "s");
			rank_list(msg, len, &used, in, nranks);
			if (used < len)
				snprintf(msg + used, len - used, " of %d (their logs are missing, or they hang elsewhere)", nranks);
		}
	}
	return 1;
}

static int r_rendezvous(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->rendezvous_lines)
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
	for (int i = 1; i < 7; i++)
		if (x->lg->err_codes[i] && used < len)
			used += (size_t)snprintf(msg + used, len - used, "%s%s (%" PRIu64 " line%s)",
			                         used ? ", " : "NCCL returned errors: ", lg_nccl_results[i], x->lg->err_codes[i],
			                         x->lg->err_codes[i] == 1 ? "" : "s");
	return used > 0;
}

/* "what (N lines: detail)" when n lines said it; 0 when none did. */
/* "what (N lines: detail; first on 'host')" when the counter at *counter is set; the host when a WARN line named it. */
static int said_lines(const struct rule_ctx *x, char *msg, size_t len, const uint64_t *counter, const char *what,
                      const char *detail)
{
	uint64_t n = *counter;
	if (!n)
		return 0;
	const char *host = lg_cause_host(x->lg, counter);
	snprintf(msg, len, "%s (%" PRIu64 " line%s%s%s%s%s%s)", what, n, n == 1 ? "" : "s", detail ? ": " : "",
	         detail ? detail : "", host ? "; first on '" : "", host ? host : "", host ? "'" : "");
	return 1;
}

/* A crash: NCCL's "Caught signal 7 (Bus error)" or the process's own report; SIGBUS in NCCL is /dev/shm running out. */
static int r_bus_error(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->bus_error_lines)
		return 0;
	snprintf(msg, len, "a process crashed with SIGBUS (Bus error, %" PRIu64 " line%s): NCCL's shared-memory segment "
	         "outgrew /dev/shm", x->lg->bus_error_lines, x->lg->bus_error_lines == 1 ? "" : "s");
	return 1;
}

static int r_segv(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->segv_lines || x->lg->bus_error_lines)
		return 0;
	snprintf(msg, len, "a process crashed with SIGSEGV (%" PRIu64 " line%s)", x->lg->segv_lines,
	         x->lg->segv_lines == 1 ? "" : "s");
	return 1;
}

static int r_oom(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->oom_lines, "the GPU ran out of memory", "Cuda failure 'out of memory' or a failed CUDA calloc");
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
	if (!x->lg->ib_status_lines)
		return 0;
	snprintf(msg, len, "InfiniBand/RoCE completion error, status=%d (%s); %" PRIu64 " line%s", x->lg->ib_status,
	         ib_status_text(x->lg->ib_status), x->lg->ib_status_lines, x->lg->ib_status_lines == 1 ? "" : "s");
	return 1;
}

static int r_socket_connect(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->sock_connect_lines, "socket connections between ranks failed",
	                  "refused, aborted or timed out");
}

static int r_socket_loopback(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->sock_loopback_lines,
	                  "ranks tried to reach each other on a loopback address (127.x or ::1): "
	                  "NCCL chose the lo interface or a hostname that resolves to it", NULL);
}

static int r_coll_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->coll_mismatch_lines,
	                  "the two sides of a connection disagree on a collective's size", "collective mismatch error");
}

static int r_driver_old(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->driver_old_lines,
	                  "the CUDA driver is older than the CUDA runtime the program was built with",
	                  "driver version is insufficient");
}

static int r_collnet(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->collnet_fail_lines,
	                  "CollNet/SHARP setup failed (the SHARP plugin could not create a group or lock an aggregation tree)",
	                  NULL);
}

static int r_ring_loop(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->ring_loop_lines,
	                  "NCCL built an inconsistent ring: ranks disagree on which of them share a node", "does not loop back");
}

static int r_smem(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->smem_exceed_lines,
	                  "this NCCL build's kernels need more shared memory than the GPU has: it does not support this GPU",
	                  "ncclMaxSharedMem ... exceeds");
}

static int r_ras_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	const char *m = x->lg->ras_mismatch;
	if (!m[0])
		return 0;
	snprintf(msg, len, "NCCL RAS: ranks of a communicator have different %s: the ranks behind have not "
	         "reached the next collective, the others wait in it", m);
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
	if (!first)
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
	return said_lines(x, msg, len, &x->lg->nvls_fail_lines, "NVLink SHARP (NVLS) setup failed", NULL);
}

static int r_sysfs(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->sysfs_lines, "NCCL could not read the PCI topology in /sys", "Could not find real path");
}

static int r_peer_closed(const struct rule_ctx *x, char *msg, size_t len)
{
	return said_lines(x, msg, len, &x->lg->peer_closed_lines,
	                  "a peer closed its connections: it exited or crashed first, and its own log holds the cause", NULL);
}

static int r_init_incomplete(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->init_started > c->init_completed) {
			snprintf(msg, len, "%d of %d rank%s of communicator %s%" PRIx64 " started init but never logged Init COMPLETE",
			         c->init_started - c->init_completed, c->init_started, c->init_started == 1 ? "" : "s",
			         c->has_id ? "0x" : "of size ", c->has_id ? c->id : (uint64_t)c->nranks);
			return 1;
		}
	}
	return 0;
}

static int r_net_within_node(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_intra[T_SOCKET] + f->class_intra[T_IB] + f->class_intra[T_NET_OTHER];
	if (!n)
		return 0;
	size_t used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s on the same node talk through the network (%s)%s", n,
	                               n == 1 ? "" : "s", f->class_intra[T_SOCKET] ? "TCP sockets" : "NIC loopback",
	                               f->any_nvlink ? ", although the GPUs are joined by NVLink" : "");
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_HOSTID");
	if (e && used < len)
		used += (size_t)snprintf(msg + used, len - used,
		                         "; NCCL_HOSTID is set by the environment (e.g. to %s): NCCL counts ranks with different host ids as different nodes, unset it",
		                         e->value);
	const struct lg_dup *d = first_dup(x->lg, 0);
	if (d && used < len)
		snprintf(msg + used, len - used, "; ranks %d and %d share the GPU at busId %" PRIx64 " on '%s'", d->rank_a,
		         d->rank_b, d->bus, x->lg->hosts[d->host].name);
	return 1;
}

static int r_socket_between_nodes(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_inter[T_SOCKET];
	if (!n)
		return 0;
	if (f->any_ib_devs)
		snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets although InfiniBand/RoCE devices were found (on '%s')",
		         n, n == 1 ? "" : "s", f->ib_host);
	else
		snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets: NCCL found no InfiniBand/RoCE device", n,
		         n == 1 ? "" : "s");
	return 1;
}

static int r_shm(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	if (!f->class_pairs[T_SHM])
		return 0;
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_P2P_DISABLE");
	snprintf(msg, len, "%" PRIu64 " peer pair%s go through host shared memory (SHM) instead of GPU peer-to-peer%s%s",
	         f->class_pairs[T_SHM], f->class_pairs[T_SHM] == 1 ? "" : "s",
	         e && strcmp(e->value, "0") ? " because NCCL_P2P_DISABLE is set" : "",
	         f->any_nvlink ? "; the GPUs are joined by NVLink" : "");
	return 1;
}

static int r_gdr(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	if (f->class_pairs[T_IB] && !f->ib_gdr_pairs) {
		snprintf(msg, len, "%" PRIu64 " InfiniBand peer pair%s copy through host memory: GPUDirect RDMA is not used",
		         f->class_pairs[T_IB], f->class_pairs[T_IB] == 1 ? "" : "s");
		return 1;
	}
	if (x->lg->gdr_off_lines) {
		const struct lg_env *lv = lg_env_find(x->lg, "NCCL_NET_GDR_LEVEL");
		snprintf(msg, len, "NCCL reports GPUDirect RDMA disabled (%" PRIu64 " line%s; first: %s)%s%s%s",
		         x->lg->gdr_off_lines, x->lg->gdr_off_lines == 1 ? "" : "s", x->lg->gdr_detail,
		         lv ? "; NCCL_NET_GDR_LEVEL=" : strstr(x->lg->gdr_detail, "distance") ?
		              "; NCCL_NET_GDR_LEVEL is not set: the GPU and the NIC are farther apart than NCCL's default allows" : "",
		         lv ? lv->value : "", lv ? " (GDR is used only up to that distance)" : "");
		return 1;
	}
	return 0;
}

static int r_forced(const struct rule_ctx *x, char *msg, size_t len, const char *var, const char *what)
{
	const struct lg_env *e = lg_env_find(x->lg, var);
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
			if (!strcmp(e->value, vars[i].bad[k]) && used < len)
				used += (size_t)snprintf(msg + used, len - used, "%s%s=%s", used ? ", " : "transports disabled by the environment: ",
				                         vars[i].var, e->value);
	}
	return used > 0;
}

static int r_ranks_missing(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->has_id && c->ranks_seen < c->nranks) {
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
	    "read the WARN lines above the first error: ncclSystemError is the OS or network (interfaces, /dev/shm, ulimits), ncclRemoteError a peer that died, ncclUnhandledCudaError the GPU or driver, ncclInvalidUsage the program", "nccl_error" }, r_nccl_error },
	{ { "peer-connection-closed", NW_LOG_ERROR, "a peer closed its connections",
	    "find the rank that exited first: its log holds the cause; this one is only a symptom", "peer_connection_closed" }, r_peer_closed },
	{ { "init-incomplete", NW_LOG_WARNING, "communicator initialisation started but did not complete",
	    "a rank hung or died during init: look at the ranks that have Init START but no Init COMPLETE, and at their WARN lines", "hang" }, r_init_incomplete },
	{ { "net-within-node", NW_LOG_WARNING, "ranks on one node talk through the network",
	    "unset NCCL_P2P_DISABLE/NCCL_SHM_DISABLE (and NCCL_HOSTID when it differs between ranks of one host); in containers allow GPU peer access (--ipc=host, all GPUs visible to every rank)", "p2p_not_supported" }, r_net_within_node },
	{ { "socket-between-nodes", NW_LOG_WARNING, "inter-node traffic over TCP sockets",
	    "make the InfiniBand/RoCE devices visible (--device=/dev/infiniband, rdma-core installed), unset NCCL_IB_DISABLE, or install the cloud's NET plugin (aws-ofi-nccl, gIB)", "no_ib_device" }, r_socket_between_nodes },
	{ { "shm-instead-of-p2p", NW_LOG_WARNING, "peer pairs through host shared memory instead of P2P",
	    "unset NCCL_P2P_DISABLE; check that the GPUs can reach each other (nvidia-smi topo -m), and that containers see all GPUs of the node", "p2p_not_supported" }, r_shm },
	{ { "gdr-disabled", NW_LOG_WARNING, "GPUDirect RDMA not used on InfiniBand",
	    "load nvidia-peermem (or use DMA-BUF with a recent driver), check NCCL_NET_GDR_LEVEL, and keep NICs and GPUs under the same PCIe switch", "gdr_disabled" }, r_gdr },
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
			if (lg->err_codes[by_code[k].code])
				return by_code[k].cause;
	return rules[i].info.cause;
}

int lg_rule_check(size_t i, const struct nw_log *lg, const struct lg_facts *f, char *msg, size_t len)
{
	struct rule_ctx x = { lg, f };
	msg[0] = '\0';
	return i < NW_ARRAY_LEN(rules) && rules[i].fn(&x, msg, len);
}
