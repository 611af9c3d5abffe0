/* SPDX-License-Identifier: Apache-2.0 */
/*
 * register: communicators coming and going, for every profiler interface
 * version: the process-wide setup at the first init (configuration, the
 * slot arena, the communicator table), one table entry and one stats file
 * per communicator, the activation mask handed to NCCL, and finalize.
 *
 * Profiler v1 to v3 (NCCL 2.23 to 2.26) call init with nothing but the
 * context and the mask: the communicator's hash, rank and name come with
 * its first Coll or P2p event, which the hot path notes (plugin.c), and the
 * publisher then makes the stats file (nwp_comm_ready). The size and node
 * count of such a communicator are never told; v1 and v2 let the hot path
 * learn the size from an all_gather or reduce_scatter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/nwp.h"

struct nwp_comm *nwp_comm_table;    /* max_comms entries, one arena part each */
char nwp_unwatched_ctx;             /* context for communicators we do not watch */

/* Read field 22 (start time) of /proc/self/stat. */
static uint64_t self_start_time(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* What interface abi cannot give, for a communicator whose size is (not) known (NWS_BLIND_*). */
uint32_t nwp_blind(int abi, int nranks_known)
{
	uint32_t b = 0;
	if (abi == NWP_ABI_INTERPOSER)
		return NWS_BLIND_NNODES | NWS_BLIND_ALGO; /* NCCL's API tells neither */
	if (abi <= 2)
		b |= NWS_BLIND_KERNEL;
	if (abi == 3)
		b |= NWS_BLIND_GPUCLOCK | (nranks_known ? 0 : NWS_BLIND_SPLIT_BYTES);
	if (abi <= 3)
		b |= NWS_BLIND_NRANKS | NWS_BLIND_NNODES | NWS_BLIND_IDLE;
	if (abi <= 4)
		b |= NWS_BLIND_GRAPH;
	return b;
}

/* Say once, at the first init, what this interface version cannot give. */
static void say_mode(void)
{
	if (nwp_g.front)
		return; /* the interposer says what it sees itself */
	uint32_t b = nwp_blind(nwp_g.abi, 0);
	char what[600] = "";
	size_t n = 0;
	for (unsigned i = 0; i < NWS_NBLIND && n < sizeof(what); i++)
		if (b & (1u << i))
			n += (size_t)snprintf(what + n, sizeof(what) - n, "%s%s", n ? "; " : "", nws_blind_text(i));
	if (b)
		nwp_log(NWP_LOG_INFO, "ncclwatch: NCCL loaded profiler interface v%d (NCCL %s), which cannot give: %s",
		        nwp_g.abi, nws_abi_nccl((unsigned)nwp_g.abi), what);
}

/* First-time setup: configuration, identity, arena. -1 when the plugin cannot run. */
static int global_setup(char *err, size_t errlen)
{
	if (nwp_config(err, errlen) != 0)
		return -1;
	if (nwp_g.front)
		nwp_g.kmode = nwp_g.front->kmode; /* the interposer times with CUDA events, its own way */
	else if (nwp_g.abi <= 2)
		nwp_g.kmode = NWS_KMODE_OFF; /* no KernelCh events before v3: nothing to switch */
	nwp_g.pid = (int)getpid();
	nwp_g.proc_start = self_start_time();
	if (gethostname(nwp_g.host, sizeof(nwp_g.host)) != 0 || !nwp_g.host[0])
		snprintf(nwp_g.host, sizeof(nwp_g.host), "unknown");
	nwp_g.host[sizeof(nwp_g.host) - 1] = '\0';
	size_t nslots = (size_t)nwp_g.max_comms * nwp_g.pool_size;
	nwp_g.arena_len = nslots * sizeof(struct nwp_slot);
	if (posix_memalign((void **)&nwp_g.arena, 64, nwp_g.arena_len) != 0) {
		nwp_g.arena = NULL;
		snprintf(err, errlen, "cannot allocate %zu bytes for the event pool", nwp_g.arena_len);
		return -1;
	}
	nwp_comm_table = calloc((size_t)nwp_g.max_comms, sizeof(struct nwp_comm));
	if (!nwp_comm_table) {
		snprintf(err, errlen, "cannot allocate the communicator table");
		return -1;
	}
	say_mode();
	return 0;
}

/* Who a communicator is, as init was told (v1 to v3: nothing; known 0). */
struct comm_id {
	int known;
	uint64_t hash;
	const char *name;
	int nnodes, nranks, rank;
};

/* init's answer when NCCL gave no context or no mask pointer: disable, and set what can be set. */
static int init_without_pointers(void **context, int *mask, nwp_logfn_t logfn)
{
	if (logfn && !nwp_g.logfn)
		__atomic_store_n(&nwp_g.logfn, logfn, __ATOMIC_RELEASE);
	nwp_disable("init called without %s", !context ? "a context pointer" : "an activation mask");
	if (mask)
		__atomic_store_n(mask, 0, __ATOMIC_RELAXED);
	if (context)
		*context = &nwp_unwatched_ctx;
	return 0;
}

/* A free communicator entry, its slot pool cleared and its identity filled; NULL when all are taken. Caller holds the lock. */
static struct nwp_comm *comm_claim(const struct comm_id *id)
{
	struct nwp_comm *c = NULL;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		if (!nwp_comm_table[i].alive) {
			c = &nwp_comm_table[i];
			c->index = i;
			break;
		}
	}
	if (!c)
		return NULL;
	struct nwp_slot *slots = nwp_g.arena + (size_t)c->index * nwp_g.pool_size;
	memset(c, 0, sizeof(*c));
	c->index = (int)(slots - nwp_g.arena) / (int)nwp_g.pool_size;
	c->slots = slots;
	memset(slots, 0, (size_t)nwp_g.pool_size * sizeof(*slots));
	c->ident = id->known ? NWP_IDENT_KNOWN : NWP_IDENT_NONE;
	c->comm_hash = id->hash;
	c->rank = id->known ? id->rank : -1;
	c->nranks = id->nranks;
	c->nnodes = id->nnodes;
	c->off_min = INT64_MAX;
	c->off_prev = INT64_MAX;
	c->off_window = nwp_realtime_ns() / 1000000000ull / 10;
	c->fd = -1;
	c->prog.enq_op = c->prog.done_op = c->prog.oldest_op = NWS_NOPS;
	snprintf(c->name, sizeof(c->name), "%s", id->name ? id->name : "");
	return c;
}

/*
 * The activation mask once a communicator over nnodes nodes is watched
 * (the base mask grows to suit it): ProxyOp for several nodes, and always
 * before v4, where the node count is not told (NCCL sends ProxyOps only for
 * network transfers); KernelCh by the policy, from v3; CeColl from v6.
 */
static int comm_mask(int nnodes)
{
	int base = nwp_g.base_mask | NWP_EV_COLL | NWP_EV_P2P |
	           (nnodes > 1 || nwp_g.abi <= 3 ? NWP_EV_PROXYOP : 0) |
	           (nwp_g.abi >= 6 ? NWP_EV_CECOLL : 0); /* 2.29+: collectives on copy engines */
	__atomic_store_n(&nwp_g.base_mask, base, __ATOMIC_RELAXED);
	if (!nwp_g.mask)
		nwp_g.kernel_on = nwp_g.kmode == NWS_KMODE_ON;
	nwp_g.mask = nwp_g.base_mask | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
	return nwp_g.mask;
}

/* The INFO line of a communicator whose stats file was just made. */
static void say_watching(const struct nwp_comm *c)
{
	char size[16] = "?";
	if (c->nranks > 0)
		snprintf(size, sizeof(size), "%d", c->nranks);
	if (nwp_g.front) {
		nwp_log(NWP_LOG_INFO, "ncclwatch: interposer watching comm %016llx rank %d/%s, stats in %s, %s",
		        (unsigned long long)c->comm_hash, c->rank, size, c->path, nwp_g.front->what);
		return;
	}
	nwp_log(NWP_LOG_INFO, "ncclwatch: profiler v%d watching comm %016llx rank %d/%s, stats in %s, kernel timestamps %s",
	        nwp_g.abi, (unsigned long long)c->comm_hash, c->rank, size, c->path,
	        nwp_g.abi <= 2 ? "not available" : nwp_g.kmode == NWS_KMODE_ON ? "always"
	        : nwp_g.kmode == NWS_KMODE_OFF ? "never" : "auto");
}

/*
 * The stats file of alive communicator c, once its identity is known (caller
 * holds the lock): 0 when c has one (made now or before), -1 while it
 * cannot (not named yet, or the plugin was disabled for it).
 */
int nwp_comm_ready(struct nwp_comm *c)
{
	char err[600];
	if (c->img)
		return 0;
	if (__atomic_load_n(&c->ident, __ATOMIC_ACQUIRE) != NWP_IDENT_KNOWN)
		return -1;
	if (nwp_comm_open(c, err, sizeof(err)) != 0) {
		nwp_disable("%s", err);
		return -1;
	}
	say_watching(c);
	return 0;
}

/*
 * Watch one more communicator (caller holds the lock): an entry, its
 * stats file (v4+; v1 to v3: once named), NCCL's mask, the context, one
 * INFO line, the publisher running. More communicators than entries are
 * left unwatched (one INFO line). -1 with err when the plugin cannot go on.
 */
static int comm_register(const struct comm_id *id, void **context, int *mask, char *err, size_t errlen)
{
	struct nwp_comm *c = comm_claim(id);
	if (!c) {
		nwp_log(NWP_LOG_INFO,
		        "ncclwatch: more than %d communicators in this process; communicator %s (%016llx) is not watched (raise NCCLWATCH_MAX_COMMS)",
		        nwp_g.max_comms, id->name && *id->name ? id->name : "-", (unsigned long long)id->hash);
		__atomic_store_n(mask, nwp_g.mask, __ATOMIC_RELAXED);
		return 0;
	}
	if (id->known && nwp_comm_open(c, err, errlen) != 0)
		return -1;
	__atomic_store_n(mask, comm_mask(id->nnodes), __ATOMIC_RELAXED);
	__atomic_store_n(&c->alive, 1, __ATOMIC_RELEASE);
	nwp_g.ncomms_alive++;
	*context = c;
	if (id->known)
		say_watching(c);
	if (!nwp_g.thread_running) {
		if (nwp_thread_start() != 0) {
			snprintf(err, errlen, "cannot start the publisher thread");
			return -1;
		}
		nwp_g.thread_running = 1;
	}
	return 0;
}

/*
 * init for every ABI version: register one communicator, open its stats
 * file, hand NCCL the activation mask. Never fails NCCL: a problem
 * disables the plugin (one log line) and NCCL goes on without events.
 * known: init named the communicator (v4+).
 */
int nwp_init(int abi, int known, void **context, uint64_t comm_hash, int *mask, const char *name, int nnodes,
             int nranks, int rank, nwp_logfn_t logfn)
{
	static int setup_done;
	char err[600] = "";
	if (!context || !mask)
		return init_without_pointers(context, mask, logfn);
	*context = &nwp_unwatched_ctx;
	pthread_mutex_lock(&nwp_g.lock);
	if (!nwp_g.logfn && logfn)
		__atomic_store_n(&nwp_g.logfn, logfn, __ATOMIC_RELEASE);
	__atomic_store_n(&nwp_g.mask_ptr, mask, __ATOMIC_RELEASE);
	int rc = 0;
	if (!setup_done) {
		setup_done = 1;
		nwp_g.abi = abi;
		rc = global_setup(err, sizeof(err));
	}
	if (rc == 0 && __atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED)) {
		__atomic_store_n(mask, 0, __ATOMIC_RELAXED);
	} else if (rc == 0) {
		const struct comm_id id = { known, comm_hash, name, nnodes, nranks, rank };
		rc = comm_register(&id, context, mask, err, sizeof(err));
	}
	pthread_mutex_unlock(&nwp_g.lock);
	if (rc != 0) {
		nwp_disable("%s", err);
		__atomic_store_n(mask, 0, __ATOMIC_RELAXED);
	}
	return 0;
}

/* finalize: account every op still in flight, mark the file finished, write it, close it. */
int nwp_finalize(void *context)
{
	pthread_mutex_lock(&nwp_g.lock);
	struct nwp_comm *c = nwp_ctx_comm(context);
	int join = 0;
	pthread_t tid;
	memset(&tid, 0, sizeof(tid));
	if (c) {
		int ready = nwp_comm_ready(c) == 0; /* v1 to v3: named by an op the publisher has not seen yet */
		__atomic_store_n(&c->alive, 0, __ATOMIC_RELEASE);
		uint64_t now = nwp_realtime_ns();
		if (ready && !__atomic_load_n(&nwp_g.disabled, __ATOMIC_RELAXED)) {
			nwp_learned(c);
			nwp_drain(c, now, 1);
			nwp_publish_header(c, now, NWS_STATE_FINISHED);
		} else if (ready) {
			nwp_publish_header(c, now, NWS_STATE_DISABLED);
		}
		nwp_sync(c, 1);
		nwp_comm_close(c);
		nwp_g.ncomms_alive--;
		if (nwp_g.ncomms_alive == 0 && nwp_g.thread_running) {
			nwp_g.thread_running = 0;
			tid = nwp_thread_stop();
			join = 1;
		}
	}
	pthread_mutex_unlock(&nwp_g.lock);
	if (join)
		pthread_join(tid, NULL);
	return 0;
}
