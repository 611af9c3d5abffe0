/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL backend: one communicator rank per local GPU, one non-blocking
 * stream each, NCCL and the driver loaded at run time. The local ranks are
 * driven from this thread (nccl-tests' -g), or split over -t threads, each
 * with its own ranks and its own ncclGroupStart/End, as nccl-tests' -t does:
 * thread 0 is the caller, the others wait for work handed over by a
 * generation counter (spinning briefly, then on a condition variable).
 *
 * This file opens the backend (libraries, GPUs, communicators, launch
 * threads) and holds its ops table, NCCL_TESTS_SPLIT and destroy; the
 * buffers are in be_nccl_mem.c, the calls and waiting in be_nccl_run.c.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/be_nccl_int.h"
#include "util/util.h"

int bn_cu_fail(struct bn_priv *p, nw_CUresult r, int gpu, const char *what, char *err, size_t errlen)
{
	char b[160];
	return nw_seterr(err, errlen, "GPU %d: %s failed: %s", gpu, what, nw_cuda_strerror(p->cu, r, b, sizeof(b)));
}

int bn_nccl_fail(struct bn_priv *p, nw_ncclResult_t r, int local, const char *what, char *err, size_t errlen)
{
	char b[512];
	nw_nccl_strerror(p->nc, local >= 0 ? p->comm[local] : NULL, r, b, sizeof(b));
	return nw_seterr(err, errlen, "%s on GPU %d failed: %s", what, local >= 0 ? (int)p->dev[local] : -1, b);
}

int bn_set_ctx(struct nw_backend *be, int i, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	nw_CUresult r = p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
	return r ? bn_cu_fail(p, r, p->dev[i], "selecting the device", err, errlen) : 0;
}

static void be_destroy(struct nw_backend *be)
{
	if (!be)
		return;
	struct bn_priv *p = bn_p(be);
	if (p) {
		bn_stop_workers(p);
		bn_graph_free(be);
		bn_deregister_buffers(be); /* while the communicators live */
		if (!p->aborted)
			bn_premul_release(be);
		if (!p->aborted)
			for (int i = 0; i < be->nlocal; i++)
				if (p->comm[i]) {
					p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
					p->nc->pfn_ncclCommDestroy(p->comm[i]);
				}
		bn_free_buffers(be);
		bn_dev_release(be);
		for (int i = 0; i < p->npinned; i++)
			p->cu->pfn_cuMemFreeHost(p->pinned[i]);
		for (int i = 0; i < be->nlocal; i++) {
			if (p->stream[i])
				p->cu->pfn_cuStreamDestroy(p->stream[i]);
			if (p->ctx[i])
				p->cu->pfn_cuDevicePrimaryCtxRelease(p->dev[i]);
		}
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
	}
	free(be);
}

/*
 * NCCL_TESTS_SPLIT: every local communicator is split by color (keyed by
 * global rank, so this process's ranks stay in order) and replaced by its
 * part; rank0 and nranks become this process's place in the group.
 * Collective over every rank. 0, or -1 with err.
 */
static int be_split(struct nw_backend *be, int color, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_nccl *nc = p->nc;
	if (!nc->pfn_ncclCommSplit || !nc->pfn_ncclCommUserRank || !nc->pfn_ncclCommCount)
		return nw_seterr(err, errlen, "NCCL_TESTS_SPLIT needs ncclCommSplit, which NCCL %s lacks (it came with "
		                 "2.18); use a newer NCCL (--nccl-lib PATH) or unset NCCL_TESTS_SPLIT", nc->version);
	nw_ncclComm_t sub[NW_MAX_LOCAL] = { 0 };
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	for (int i = 0; i < be->nlocal && !rc; i++) {
		if (bn_set_ctx(be, i, err, errlen)) {
			nc->pfn_ncclGroupEnd();
			return -1;
		}
		rc = nc->pfn_ncclCommSplit(p->comm[i], color, be->rank0 + i, &sub[i], NULL);
	}
	nw_ncclResult_t end = nc->pfn_ncclGroupEnd();
	int rank = 0, n = 0;
	if (!rc && !end)
		rc = nc->pfn_ncclCommUserRank(sub[0], &rank);
	if (!rc && !end)
		rc = nc->pfn_ncclCommCount(sub[0], &n);
	if (rc || end) {
		for (int i = 0; i < be->nlocal; i++)
			if (sub[i])
				nc->pfn_ncclCommDestroy(sub[i]);
		return bn_nccl_fail(p, rc ? rc : end, 0, "ncclCommSplit (NCCL_TESTS_SPLIT)", err, errlen);
	}
	bn_premul_release(be);
	for (int i = 0; i < be->nlocal; i++) {
		nc->pfn_ncclCommDestroy(p->comm[i]);
		p->comm[i] = sub[i];
	}
	be->rank0 = rank;
	be->nranks = n;
	return 0;
}

static const struct nw_backend_ops nccl_ops = {
	.alloc = bn_alloc,
	.launch = bn_launch,
	.launch_many = bn_launch_many,
	.wait = bn_wait,
	.graph_begin = bn_graph_begin,
	.graph_end = bn_graph_end,
	.graph_launch = bn_graph_launch,
	.graph_free = bn_graph_free,
	.write = bn_write,
	.read = bn_read,
	.copy = bn_copy,
	.fill32 = bn_fill32,
	.host_alloc = bn_host_alloc,
	.destroy = be_destroy,
	.split = be_split,
	.mem_free = bn_mem_free,
	.dev_start = bn_dev_start,
	.dev_fill = bn_dev_fill,
	.dev_verify = bn_dev_verify,
};

/* Which GPUs this process drives: nthreads threads (-t) of per GPUs (-g) each, ordinals first to first + ngpus - 1. */
struct gpu_plan {
	int nthreads, per, ngpus, first;
};

/* Open the driver and NCCL; *visible gets the GPUs the driver sees. 0, or -1 with err saying what to do. */
static int load_libs(const struct nw_nccl_open_opts *o, const struct nw_cu **cu, const struct nw_nccl **nc,
                     int *visible, char *err, size_t errlen)
{
	char e2[NW_ERRLEN];
	*cu = nw_cuda_load(e2, sizeof(e2));
	if (!*cu)
		return nw_seterr(err, errlen, "%s. Without a GPU, 'bench --backend mpi' measures host collectives "
		                 "over MPI instead", e2);
	*nc = nw_nccl_load(o->nccl_lib, err, errlen);
	if (!*nc)
		return -1;
	*visible = 0;
	(*cu)->pfn_cuDeviceGetCount(visible);
	if (*visible < 1)
		return nw_seterr(err, errlen, "no GPU visible to the CUDA driver (CUDA_VISIBLE_DEVICES='%s'); "
		                 "check nvidia-smi and the container's GPU access", getenv("CUDA_VISIBLE_DEVICES") ?
		                 getenv("CUDA_VISIBLE_DEVICES") : "unset");
	return 0;
}

/* Decide this process's GPUs from -t, -g and its local rank; -1 with err when too few are visible. */
static int plan_gpus(const struct nw_group *g, const struct nw_nccl_open_opts *o, int visible, struct gpu_plan *pl,
                     char *err, size_t errlen)
{
	pl->nthreads = o->nthreads > 1 ? o->nthreads : 1;
	/* -g is per thread (nccl-tests' meaning); alone and without -t or -g: every visible GPU */
	pl->per = o->ngpus > 0 ? o->ngpus : (g->size > 1 || pl->nthreads > 1 ? 1 : visible);
	pl->ngpus = pl->nthreads * pl->per;
	pl->first = g->local_rank * pl->ngpus;
	if (pl->ngpus > NW_MAX_LOCAL || pl->first + pl->ngpus > visible)
		return nw_seterr(err, errlen,
		                 "this process (local rank %d of %d) needs GPUs %d..%d (%d thread%s x %d GPU%s) but %d "
		                 "are visible; lower -t or -g, or start fewer processes per node", g->local_rank,
		                 g->local_size, pl->first, pl->first + pl->ngpus - 1, pl->nthreads,
		                 pl->nthreads == 1 ? "" : "s", pl->per, pl->per == 1 ? "" : "s", visible);
	return 0;
}

/* A backend for the plan, on no GPU yet (be_destroy frees it from here on); the caller owns it. */
static struct nw_backend *backend_new(struct nw_group *g, const struct nw_cu *cu, const struct nw_nccl *nc,
                                      const struct gpu_plan *pl)
{
	struct nw_backend *be = nw_calloc(1, sizeof(*be));
	struct bn_priv *p = nw_calloc(1, sizeof(*p));
	be->ops = &nccl_ops;
	be->priv = p;
	be->name = "nccl";
	be->group = g;
	NW_ASSERT(pl->ngpus >= 1 && pl->ngpus <= NW_MAX_LOCAL); /* plan_gpus refused more */
	be->nlocal = pl->ngpus;
	be->nranks = g->size * pl->ngpus;
	be->rank0 = g->rank * pl->ngpus;
	be->graphs = 1;
	p->cu = cu;
	p->nc = nc;
	p->nthreads = pl->nthreads;
	p->per = pl->per;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (int t = 0; t < NW_NDTYPES; t++)
		be->dtype_ok[t] = 1;
	for (int r = 0; r < NW_NREDOPS; r++)
		be->redop_ok[r] = r != NW_MULSUM ||
		                  (nc->pfn_ncclRedOpCreatePreMulSum && nc->pfn_ncclRedOpDestroy && nc->version_code >= 21100);
	/* ncclConfig_t.CTAPolicy came with 2.27 (0 and 1), NCCL_CTA_POLICY_ZERO (2) with 2.28 */
	be->cta_max = !nc->pfn_ncclCommInitRankConfig ? -1 : nc->version_code >= 22800 ? 2
	            : nc->version_code >= 22700 ? 1 : -1;
	nw_strlcpy(be->nccl_version, nc->version, sizeof(be->nccl_version));
	nw_strlcpy(be->nccl_path, nc->where.path, sizeof(be->nccl_path));
	snprintf(be->cuda_driver, sizeof(be->cuda_driver), "%d.%d", cu->driver_version / 1000,
	         (cu->driver_version % 1000) / 10);
	char *dv = nw_read_file("/proc/driver/nvidia/version", 4096, NULL);
	if (dv) {
		char *k = strstr(dv, "Kernel Module");
		if (k && sscanf(k, "Kernel Module %31s", be->driver) != 1)
			be->driver[0] = '\0';
		free(dv);
	}
	return be;
}

/*
 * Each local rank's GPU (ordinals from first): what it can reduce (fp8
 * from compute capability 9.0, bfloat16 from 8.0), its primary context and
 * a non-blocking stream (none with -y 1: the context's NULL stream, as
 * nccl-tests' streams[i] = NULL). 0, or -1 with err.
 */
static int open_devices(struct nw_backend *be, int first, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_cu *cu = p->cu;
	struct nw_cu_device info;
	for (int i = 0; i < be->nlocal; i++) {
		int ord = first + i;
		be->gpu[i] = ord;
		if (nw_cuda_device_info(cu, ord, &info, err, errlen))
			return -1;
		if (info.cc_major < 9)
			be->dtype_ok[NW_FP8E4M3] = be->dtype_ok[NW_FP8E5M2] = 0;
		if (info.cc_major < 8)
			be->dtype_ok[NW_BFLOAT16] = 0;
		if (i == 0)
			snprintf(be->gpus, sizeof(be->gpus), "%d x %s", be->nranks, info.name);
		/* nccl-tests' [%04x:%02x:%02x]: domain, bus, device (the bus id without its function) */
		snprintf(be->dev[i].pci, sizeof(be->dev[i].pci), "%.10s", info.bus_id);
		nw_strlcpy(be->dev[i].name, info.name, sizeof(be->dev[i].name));
		nw_CUresult r = cu->pfn_cuDeviceGet(&p->dev[i], ord);
		if (!r)
			r = cu->pfn_cuDevicePrimaryCtxRetain(&p->ctx[i], p->dev[i]);
		if (!r)
			r = cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		if (!r && !p->stream_null)
			r = cu->pfn_cuStreamCreate(&p->stream[i], NW_CU_STREAM_NON_BLOCKING);
		if (r)
			return bn_cu_fail(p, r, ord, "creating a context and stream", err, errlen);
	}
	return 0;
}

/*
 * ncclConfig_t as nccl-tests 2.19.6 makes it: NCCL's defaults, with
 * nvlinkCentricSched on 2.28+ and -x's CTAPolicy when given. On 2.27 the
 * struct is that version's (ending after nvlsCTAs), with its version code.
 * Returns whether the communicators are made with it: on 2.28+ always (as
 * nccl-tests), on 2.27 when -x asks for a CTA policy.
 */
static int make_config(const struct nw_nccl *nc, int cta_policy, struct nw_ncclConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = nc->version_code >= 22800 ? sizeof(*cfg) : NW_NCCL_CONFIG_SIZE_2_27;
	cfg->magic = 0xcafebeef;
	cfg->version = (unsigned)(nc->version_code < 22809 ? nc->version_code : 22809);
	cfg->blocking = cfg->cgaClusterSize = cfg->minCTAs = cfg->maxCTAs = INT_MIN;
	cfg->splitShare = cfg->trafficClass = cfg->collnetEnable = cfg->CTAPolicy = INT_MIN;
	cfg->shrinkShare = cfg->nvlsCTAs = cfg->nChannelsPerNetPeer = INT_MIN;
	if (cta_policy >= 0)
		cfg->CTAPolicy = cta_policy;
	if (nc->version_code >= 22800)
		cfg->nvlinkCentricSched = 1; /* as nccl-tests does on 2.28+ */
	if (!nc->pfn_ncclCommInitRankConfig)
		return 0;
	return nc->version_code >= 22800 || (cta_policy >= 0 && nc->version_code >= 22700);
}

/*
 * Local ranks [first, first + n) join the communicator of id, as one NCCL
 * group when there are several. 0, or -1 with err.
 */
static int init_range(struct nw_backend *be, int first, int n, const nw_ncclUniqueId *id, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_nccl *nc = p->nc;
	struct nw_ncclConfig cfg;
	int use_cfg = make_config(nc, p->cta_policy <= be->cta_max ? p->cta_policy : -1, &cfg);
	if (n > 1)
		nc->pfn_ncclGroupStart();
	for (int i = first; i < first + n; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		nw_ncclResult_t rc = use_cfg ? nc->pfn_ncclCommInitRankConfig(&p->comm[i], be->nranks, *id, be->rank0 + i, &cfg)
		                             : nc->pfn_ncclCommInitRank(&p->comm[i], be->nranks, *id, be->rank0 + i);
		if (rc) {
			if (n > 1)
				nc->pfn_ncclGroupEnd();
			return bn_nccl_fail(p, rc, i, "creating the NCCL communicator", err, errlen);
		}
	}
	if (n > 1) {
		nw_ncclResult_t rc = nc->pfn_ncclGroupEnd();
		if (rc)
			return bn_nccl_fail(p, rc, first, "creating the NCCL communicators", err, errlen);
	}
	return 0;
}

static int init_parallel(struct nw_backend *be, const nw_ncclUniqueId *id, char *err, size_t errlen);

/*
 * The communicators: rank 0's unique id goes to every process, then each
 * local GPU joins as one rank (one NCCL group when there are several; with
 * -p 1 and -t threads, each thread its own ranks at the same time). 0, or
 * -1 with err.
 */
static int init_comms(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	nw_ncclUniqueId id;
	memset(&id, 0, sizeof(id));
	if (be->group->rank == 0) {
		nw_ncclResult_t rc = p->nc->pfn_ncclGetUniqueId(&id);
		if (rc)
			return bn_nccl_fail(p, rc, -1, "ncclGetUniqueId", err, errlen);
	}
	if (nw_group_bcast(be->group, &id, sizeof(id), 0, err, errlen))
		return -1;
	if (p->parallel_init && p->nthreads > 1)
		return init_parallel(be, &id, err, errlen);
	return init_range(be, 0, be->nlocal, &id, err, errlen);
}

struct init_arg {
	struct nw_backend *be;
	const nw_ncclUniqueId *id;
	int k, rc;
	char err[256];
};

static void *init_thread(void *v)
{
	struct init_arg *a = v;
	struct bn_priv *p = bn_p(a->be);
	a->rc = init_range(a->be, a->k * p->per, p->per, a->id, a->err, sizeof(a->err));
	return NULL;
}

/* -p 1: each of the -t threads creates its own ranks' communicators, all at once (nccl-tests' threadInit). */
static int init_parallel(struct nw_backend *be, const nw_ncclUniqueId *id, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	struct init_arg *a = nw_calloc((size_t)p->nthreads, sizeof(*a));
	pthread_t *th = nw_calloc((size_t)p->nthreads, sizeof(*th));
	int started = 0, rc = 0;
	for (int k = 0; k < p->nthreads; k++) {
		a[k] = (struct init_arg){ .be = be, .id = id, .k = k };
		int e = pthread_create(&th[k], NULL, init_thread, &a[k]);
		if (e) {
			rc = nw_seterr(err, errlen, "cannot start init thread %d of %d (-p 1): %s", k, p->nthreads, strerror(e));
			break;
		}
		started++;
	}
	for (int k = 0; k < started; k++) {
		pthread_join(th[k], NULL);
		if (a[k].rc && !rc)
			rc = nw_seterr(err, errlen, "thread %d: %s", k, a[k].err);
	}
	free(th);
	free(a);
	return rc;
}

/* init_comms, and the device memory it took (-M's "Initialization"). */
static int init_comms_measured(struct nw_backend *be, char *err, size_t errlen)
{
	int64_t before[NW_MAX_LOCAL], after[NW_MAX_LOCAL];
	bn_mem_snapshot(be, before);
	if (init_comms(be, err, errlen))
		return -1;
	bn_mem_snapshot(be, after);
	be->mem_init = 0;
	for (int i = 0; i < be->nlocal; i++)
		if (before[i] - after[i] > be->mem_init)
			be->mem_init = before[i] - after[i];
	return 0;
}

/*
 * Whether every rank got past loading the libraries and planning its GPUs
 * (failed: this one did not, err saying why). With a launcher, the ranks
 * exchange that before any of them waits on another, so that a job on
 * machines without a GPU fails once, on rank 0, without an abort. 0, -1
 * when the exchange itself failed, or NW_BACKEND_FAILED_ALL (see backend.h).
 */
static int agree_loaded(struct nw_group *g, int failed, char *err, size_t errlen)
{
	struct verdict {
		int failed;
		char why[600];
	} mine;
	if (g->size <= 1)
		return failed ? -1 : 0;
	memset(&mine, 0, sizeof(mine));
	mine.failed = failed;
	if (failed)
		nw_strlcpy(mine.why, err, sizeof(mine.why));
	struct verdict *all = nw_calloc((size_t)g->size, sizeof(*all));
	char e2[NW_ERRLEN];
	int rc = 0, first = -1, nfailed = 0;
	if (nw_group_allgather(g, &mine, all, sizeof(mine), e2, sizeof(e2)) != 0) {
		if (!failed)
			nw_strlcpy(err, e2, errlen);
		free(all);
		return -1;
	}
	for (int r = 0; r < g->size; r++)
		if (all[r].failed) {
			first = first < 0 ? r : first;
			nfailed++;
		}
	if (first >= 0) {
		rc = NW_BACKEND_FAILED_ALL;
		if (g->rank != 0)
			err[0] = '\0';
		else if (nfailed == g->size)
			nw_seterr(err, errlen, "every rank (%d): %s", g->size, all[0].why);
		else
			nw_seterr(err, errlen, "rank %d%s: %s", first, nfailed > 1 ? " (and others)" : "", all[first].why);
	}
	free(all);
	return rc;
}

int nw_backend_nccl_open(struct nw_backend **out, struct nw_group *g, const struct nw_nccl_open_opts *o,
                         char *err, size_t errlen)
{
	const struct nw_cu *cu;
	const struct nw_nccl *nc;
	struct gpu_plan pl;
	int visible;
	*out = NULL;
	int failed = load_libs(o, &cu, &nc, &visible, err, errlen) || plan_gpus(g, o, visible, &pl, err, errlen);
	int agreed = agree_loaded(g, failed, err, errlen);
	if (failed || agreed)
		return agreed ? agreed : -1;
	struct nw_backend *be = backend_new(g, cu, nc, &pl);
	be->reg_max = bn_reg_max(nc);
	bn_p(be)->reg = o->reg <= be->reg_max ? o->reg : 0; /* more than it can do: refused by the sweep, by name */
	bn_p(be)->parallel_init = o->parallel_init;
	bn_p(be)->stream_null = o->stream_null;
	bn_p(be)->cta_policy = o->cta_policy; /* more than this NCCL can set: refused by the sweep, by name */
	if (open_devices(be, pl.first, err, errlen) || init_comms_measured(be, err, errlen) ||
	    bn_start_workers(be, err, errlen)) {
		be_destroy(be);
		return -1;
	}
	*out = be;
	return 0;
}
