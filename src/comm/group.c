/* SPDX-License-Identifier: Apache-2.0 */
/*
 * group: the processes of one run, over MPI when an MPI launcher started
 * them (or --backend mpi), else over the env rendezvous bootstrap
 * (comm/boot.h), else alone; broadcast, allgather, barrier, a roll call
 * of the ranks still answering, and abort.
 */
#include "comm/group.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if NW_HAVE_MPI
#include "comm/mpi_abi.h"
#include "comm/mpi_wait.h"
#endif

#include "comm/boot.h"
#include "util/strbuf.h"
#include "util/util.h"

int nw_group_mpi_launched(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS",
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(vars); i++)
		if (getenv(vars[i]))
			return 1;
	return 0;
}

/* How long a roll call waits under env rendezvous (rank 0 collects, the others hear from it). */
#define ROLL_CALL_ENV_S 2.0

/* FNV-1a of the fingerprint: what the processes compare first. */
static __attribute__((unused)) uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

#if NW_HAVE_MPI
static int mpi_err(char *err, size_t errlen, const char *what, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(rc, s, &n);
	return nw_seterr(err, errlen, "MPI %s failed: %s", what, s);
}

/* How long the ranks still running answer a roll call after a timeout. */
#define ROLL_CALL_S 2.0
#define ROLL_CALL_TAG 0x4e57

/* The communicator of roll calls, apart from the run's traffic (g->priv under MPI). */
static MPI_Comm roll_comm(const struct nw_group *g)
{
	return *(MPI_Comm *)g->priv;
}

/*
 * After a timeout: every rank that times out sends its number to every
 * other and listens for theirs for ROLL_CALL_S seconds. Writes the ranks
 * that did not answer, as "1,3", into out (empty: every rank answered).
 */
static void roll_call(const struct nw_group *g, char *out, size_t outlen)
{
	int n = g->size;
	int32_t me = g->rank;
	int32_t *heard = nw_calloc((size_t)n, sizeof(int32_t));
	int *done = nw_calloc((size_t)n, sizeof(int));
	MPI_Request *rq = nw_calloc((size_t)n * 2, sizeof(MPI_Request));
	for (int p = 0; p < n; p++) {
		if (p == me) {
			done[p] = 1;
			continue;
		}
		MPI_Irecv(&heard[p], 1, MPI_INT32_T, p, ROLL_CALL_TAG, roll_comm(g), &rq[p]);
		MPI_Isend(&me, 1, MPI_INT32_T, p, ROLL_CALL_TAG, roll_comm(g), &rq[n + p]);
	}
	double end = nw_now() + ROLL_CALL_S;
	int left = n - 1;
	while (left > 0 && nw_now() < end)
		for (int p = 0; p < n; p++) {
			int flag = 0;
			if (!done[p] && MPI_Test(&rq[p], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
				done[p] = 1;
				left--;
			}
		}
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int p = 0; p < n && sb.len + 16 < outlen; p++) /* whole numbers only */
		if (!done[p])
			nw_strbuf_addf(&sb, "%s%d", sb.len ? "," : "", p);
	nw_strlcpy(out, sb.buf, outlen);
	nw_strbuf_release(&sb);
	/* the requests left pending are MPI's until the job is aborted */
	free(heard);
	free(done);
	free(rq);
}

int nw_mpi_wait(struct nw_group *g, MPI_Request *req, int n, double timeout_s, const char *what,
                char *err, size_t errlen)
{
	double prev = nw_now(), end = timeout_s > 0 ? prev + timeout_s : 0, stalled = 0;
	for (int i = 0; i < n; i++) {
		int flag = 0;
		while (!flag) {
			int rc = MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS)
				return mpi_err(err, errlen, what, rc);
			double now = nw_now();
			if (now - prev > stalled)
				stalled = now - prev;
			prev = now;
			if (!flag && end > 0 && now > end)
				goto timeout;
		}
	}
	return 0;
timeout:
	if (stalled > 1)
		return nw_seterr(err, errlen, "MPI %s not done within %.0f s (-T): this rank was itself stopped for %.0f s",
		                 what, timeout_s, stalled);
	char missing[256];
	roll_call(g, missing, sizeof(missing));
	if (!missing[0])
		return nw_seterr(err, errlen, "MPI %s not done within %.0f s (-T), though every rank answered a roll "
		                 "call: MPI itself is stuck; raise -T if the sizes are that slow", what, timeout_s);
	return nw_seterr(err, errlen, "MPI %s not done within %.0f s (-T): rank%s %s did not answer (stopped, dead "
	                 "or unreachable); the job is ended", what, timeout_s, strchr(missing, ',') ? "s" : "",
	                 missing);
}

static int mpi_open(struct nw_group *g, const char *fingerprint, char *err, size_t errlen)
{
	if (nw_mpi_load(err, errlen) != 0)
		return -1;
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited) {
		int provided;
		int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
		if (rc != MPI_SUCCESS)
			return mpi_err(err, errlen, "init", rc);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	g->priv = nw_calloc(1, sizeof(MPI_Comm));
	MPI_Comm_dup(MPI_COMM_WORLD, g->priv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g->size);
	MPI_Comm node;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		/* NCCL counts ranks with different NCCL_HOSTID as different nodes: so do the GPUs' local ranks */
		const char *hid = getenv("NCCL_HOSTID");
		MPI_Comm same;
		if (hid && *hid && MPI_Comm_split(node, (int)(fnv(hid) & 0x7fffffff), g->rank, &same) == MPI_SUCCESS) {
			MPI_Comm_free(&node);
			node = same;
		}
		MPI_Comm_rank(node, &g->local_rank);
		MPI_Comm_size(node, &g->local_size);
		MPI_Comm_free(&node);
	}
	/* Every rank must run the same version with the same arguments. */
	uint64_t mine = fnv(fingerprint);
	uint64_t *all = nw_calloc((size_t)g->size, sizeof(uint64_t));
	MPI_Request rq;
	int rc = MPI_Iallgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD, &rq);
	if (rc != MPI_SUCCESS || nw_mpi_wait(g, &rq, 1, g->timeout_s, "allgather of the rank list", err, errlen)) {
		free(all);
		return rc != MPI_SUCCESS ? mpi_err(err, errlen, "allgather", rc) : -1;
	}
	struct nw_strbuf bad; /* the first ranks that differ, so that the message keeps what to do */
	nw_strbuf_init(&bad);
	for (int r = 0; r < g->size && bad.len < 240; r++)
		if (all[r] != all[0])
			nw_strbuf_addf(&bad, "%s%d", bad.len ? "," : "", r);
	free(all);
	rc = 0;
	if (bad.len)
		rc = nw_seterr(err, errlen,
		               "ranks %s run a different ncclwatch version or different arguments than rank 0 "
		               "(this rank: '%s'); launch every rank with the same binary and arguments",
		               bad.buf, fingerprint);
	nw_strbuf_release(&bad);
	return rc;
}
#endif

int nw_group_open(struct nw_group **out, int force_mpi, const char *fingerprint, double timeout_s,
                  char *err, size_t errlen)
{
	struct nw_group *g = nw_calloc(1, sizeof(*g));
	g->timeout_s = timeout_s;
	nw_hostname(g->host, sizeof(g->host));
	g->size = g->local_size = 1;
	*out = NULL;
	if (force_mpi || nw_group_mpi_launched()) {
#if NW_HAVE_MPI
		g->kind = NW_GROUP_MPI;
		g->kind_name = "mpi";
		if (mpi_open(g, fingerprint, err, errlen) != 0) {
			free(g->priv);
			free(g);
			return -1;
		}
		*out = g;
		return 0;
#else
		free(g);
		return nw_seterr(err, errlen,
		                 "started by an MPI launcher, but this ncclwatch was built without MPI support; "
		                 "rebuild with libopenmpi-dev installed (make says 'MPI support: yes'), or launch "
		                 "with torchrun / RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT instead");
#endif
	}
	struct nw_boot *b = NULL;
	int env = nw_boot_init(&b, fingerprint, timeout_s > 0 ? timeout_s : 300, err, errlen);
	if (env < 0) {
		free(g);
		return env;
	}
	if (env > 0) {
		g->kind = NW_GROUP_ENV;
		g->kind_name = "env";
		g->priv = b;
		g->rank = nw_boot_rank(b);
		g->size = nw_boot_size(b);
		g->local_rank = nw_boot_local_rank(b);
		g->local_size = nw_boot_local_size(b);
		*out = g;
		return 0;
	}
	g->kind = NW_GROUP_LOCAL;
	g->kind_name = "local";
	*out = g;
	return 0;
}

int nw_group_bcast(struct nw_group *g, void *buf, size_t len, int root, char *err, size_t errlen)
{
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI) {
		MPI_Request rq;
		int rc = MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &rq);
		if (rc != MPI_SUCCESS)
			return mpi_err(err, errlen, "broadcast", rc);
		return nw_mpi_wait(g, &rq, 1, g->timeout_s, "broadcast", err, errlen);
	}
#endif
	if (g->kind == NW_GROUP_ENV)
		return nw_boot_bcast(g->priv, buf, len, root, err, errlen);
	(void)g; (void)buf; (void)len; (void)root; (void)err; (void)errlen;
	return 0;
}

int nw_group_allgather(struct nw_group *g, const void *mine, void *all, size_t len, char *err, size_t errlen)
{
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI) {
		MPI_Request rq;
		int rc = MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD, &rq);
		if (rc != MPI_SUCCESS)
			return mpi_err(err, errlen, "allgather", rc);
		return nw_mpi_wait(g, &rq, 1, g->timeout_s, "allgather", err, errlen);
	}
#endif
	if (g->kind == NW_GROUP_ENV)
		return nw_boot_allgather(g->priv, mine, all, len, err, errlen);
	(void)err; (void)errlen;
	memcpy(all, mine, len);
	(void)g;
	return 0;
}

int nw_group_roll_call(struct nw_group *g, char *err, size_t errlen)
{
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI) {
		char missing[256];
		roll_call(g, missing, sizeof(missing));
		if (!missing[0])
			return 0;
		return nw_seterr(err, errlen, "rank%s %s did not answer a roll call (stopped, dead or unreachable)",
		                 strchr(missing, ',') ? "s" : "", missing);
	}
#endif
	if (g->kind == NW_GROUP_ENV)
		return nw_boot_roll_call(g->priv, ROLL_CALL_ENV_S, err, errlen);
	(void)err; (void)errlen;
	return 0;
}

int nw_group_barrier(struct nw_group *g, char *err, size_t errlen)
{
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI) {
		MPI_Request rq;
		int rc = MPI_Ibarrier(MPI_COMM_WORLD, &rq);
		if (rc != MPI_SUCCESS)
			return mpi_err(err, errlen, "barrier", rc);
		return nw_mpi_wait(g, &rq, 1, g->timeout_s, "barrier", err, errlen);
	}
#endif
	if (g->kind == NW_GROUP_ENV)
		return nw_boot_barrier(g->priv, err, errlen);
	(void)g; (void)err; (void)errlen;
	return 0;
}

#if NW_HAVE_MPI
/* Set once this process has aborted an MPI job: MPI_Abort runs at exit and MPI_Finalize never. */
static int mpi_aborting;

static void mpi_abort_at_exit(void)
{
	int fin = 0;
	MPI_Finalized(&fin);
	if (!fin)
		MPI_Abort(MPI_COMM_WORLD, 3);
}
#endif

void nw_group_abort(struct nw_group *g, const char *why)
{
	if (g && g->kind == NW_GROUP_ENV) {
		nw_boot_abort(g->priv, why);
		return;
	}
#if NW_HAVE_MPI
	/* MPI_Abort ends this process too: leave it to exit, after the caller has said why */
	if (g && g->kind == NW_GROUP_MPI && g->size > 1 && !mpi_aborting) {
		mpi_aborting = 1;
		atexit(mpi_abort_at_exit);
	}
#endif
	(void)g;
}

void nw_group_close(struct nw_group *g)
{
	if (!g)
		return;
	if (g->kind == NW_GROUP_ENV)
		nw_boot_close(g->priv);
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI && !mpi_aborting) {
		int fin = 0;
		MPI_Finalized(&fin);
		if (!fin) {
			MPI_Comm_free(g->priv);
			MPI_Finalize();
		}
	}
	if (g->kind == NW_GROUP_MPI)
		free(g->priv);
#endif
	free(g);
}
