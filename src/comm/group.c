#include "comm/group.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if NW_HAVE_MPI
#include "comm/mpi_abi.h"
#endif

#include "comm/boot.h"
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
	MPI_Comm_rank(MPI_COMM_WORLD, &g->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g->size);
	MPI_Comm node;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_rank(node, &g->local_rank);
		MPI_Comm_size(node, &g->local_size);
		MPI_Comm_free(&node);
	}
	/* Every rank must run the same version with the same arguments. */
	uint64_t mine = fnv(fingerprint);
	uint64_t *all = nw_calloc((size_t)g->size, sizeof(uint64_t));
	int rc = MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		free(all);
		return mpi_err(err, errlen, "allgather", rc);
	}
	char bad[256] = "";
	size_t used = 0;
	for (int r = 0; r < g->size; r++)
		if (all[r] != all[0] && used < sizeof(bad) - 16)
			used += (size_t)snprintf(bad + used, sizeof(bad) - used, "%s%d", used ? "," : "", r);
	free(all);
	if (used)
		return nw_seterr(err, errlen,
		                 "ranks %s run a different ncclwatch version or different arguments than rank 0 "
		                 "(this rank: '%s'); launch every rank with the same binary and arguments",
		                 bad, fingerprint);
	return 0;
}
#endif

int nw_group_open(struct nw_group **out, int force_mpi, const char *fingerprint, double timeout_s,
                  char *err, size_t errlen)
{
	(void)timeout_s;
	struct nw_group *g = nw_calloc(1, sizeof(*g));
	nw_hostname(g->host, sizeof(g->host));
	g->size = g->local_size = 1;
	*out = NULL;
	if (force_mpi || nw_group_mpi_launched()) {
#if NW_HAVE_MPI
		g->kind = NW_GROUP_MPI;
		g->kind_name = "mpi";
		if (mpi_open(g, fingerprint, err, errlen) != 0) {
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
		return -1;
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
		int rc = MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
		return rc == MPI_SUCCESS ? 0 : mpi_err(err, errlen, "broadcast", rc);
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
		int rc = MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD);
		return rc == MPI_SUCCESS ? 0 : mpi_err(err, errlen, "allgather", rc);
	}
#endif
	if (g->kind == NW_GROUP_ENV)
		return nw_boot_allgather(g->priv, mine, all, len, err, errlen);
	(void)err; (void)errlen;
	memcpy(all, mine, len);
	(void)g;
	return 0;
}

int nw_group_barrier(struct nw_group *g, char *err, size_t errlen)
{
#if NW_HAVE_MPI
	if (g->kind == NW_GROUP_MPI) {
		int rc = MPI_Barrier(MPI_COMM_WORLD);
		return rc == MPI_SUCCESS ? 0 : mpi_err(err, errlen, "barrier", rc);
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
		if (!fin)
			MPI_Finalize();
	}
#endif
	free(g);
}
