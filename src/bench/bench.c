/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep: every (op, dtype, redop, root, size, placement) the options
 * ask for, timed the way nccl-tests times it (a batch of -n launches on a
 * host clock, from before the first launch to the streams' completion,
 * divided by -n; warm-up over every size first; buffers shifted between
 * iterations), verified against patterns computed on the host.
 *
 * This file walks the sweep (sizes, placements, cycles, stops) and opens
 * and checks the backend; timing is in bench_time.c, patterns and
 * verification in bench_check.c, --pairs in bench_pairs.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/hostmem.h"
#include "util/strbuf.h"
#include "util/util.h"

void nw_bench_opts_default(struct nw_bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = NW_BACKEND_AUTO;
	o->ops[0] = NW_ALL_REDUCE;
	o->nops = 1;
	o->dtypes[0] = NW_FLOAT;
	o->ndtypes = 1;
	o->redops[0] = NW_SUM;
	o->nredops = 1;
	o->root = 0;
	o->min_bytes = 8;
	o->max_bytes = 1ULL << 30;
	o->step_bytes = 1ULL << 20;
	o->step_factor = 2;
	o->iters = 20;
	o->warmup = 1; /* nccl-tests 2.19.6's warmup_iters */
	o->agg_iters = 1;
	o->check = 1;
	o->average = NW_AVG_MEAN;
	o->nthreads = 1;
	o->timeout_s = 600; /* a hung peer never hangs the run for ever; -T 0 waits without limit */
	o->rdzv_timeout_s = 0; /* 0: -T, at most 300 s */
	o->cycles = 1;
	o->cta_policy = -1;
}

uint64_t nw_bench_next_size(const struct nw_bench_opts *o, uint64_t s)
{
	uint64_t next = o->step_factor > 1 ? (uint64_t)((double)s * o->step_factor) : s + o->step_bytes;
	return next > s ? next : 0;
}

size_t nw_bench_nsizes(const struct nw_bench_opts *o)
{
	size_t k = 0;
	for (uint64_t s = o->min_bytes; s && s <= o->max_bytes && k <= NW_BENCH_MAX_SIZES; s = nw_bench_next_size(o, s))
		k++;
	return k;
}

/* The sizes of the sweep, as nccl-tests walks them. *n gets the count. */
static uint64_t *sizes(const struct nw_bench_opts *o, size_t *n)
{
	size_t cap = 64, k = 0;
	uint64_t *v = nw_malloc(cap * sizeof(*v));
	for (uint64_t s = o->min_bytes; s && s <= o->max_bytes && k < NW_BENCH_MAX_SIZES; s = nw_bench_next_size(o, s)) {
		if (k == cap) {
			cap *= 2;
			v = nw_realloc(v, cap * sizeof(*v));
		}
		v[k++] = s;
	}
	*n = k;
	return v;
}

/* A fresh row for call c (count elements, used bytes) of coll; the numbers come later. */
static void row_init(struct nw_row *r, const struct nw_coll *coll, const struct nw_call *c, uint64_t used, int nranks)
{
	memset(r, 0, sizeof(*r));
	nw_strlcpy(r->op, coll->name, sizeof(r->op));
	nw_strlcpy(r->dtype, nw_dtype_name(c->dtype), sizeof(r->dtype));
	nw_strlcpy(r->redop, coll->has_redop ? nw_redop_name(c->redop) : "none", sizeof(r->redop));
	r->root = coll->has_root ? c->root : -1;
	r->size_bytes = used;
	r->count = c->count;
	r->nranks = nranks;
	r->inplace = c->inplace;
	r->wrong = -1;
}

/*
 * One placement of one size: time it, combine the ranks' times, compute
 * bandwidths and, with -c, verify (out of place always, in place where
 * nccl-tests does). Fills r; 0 or -1.
 */
static int run_placement(struct bs_ctx *x, const struct nw_coll *coll, struct nw_call *c, uint64_t used, struct nw_row *r)
{
	double mine;
	row_init(r, coll, c, used, x->be->nranks);
	double *times = x->o->per_iter ? nw_calloc((size_t)x->o->iters, sizeof(double)) : NULL;
	if (bs_time_batch(x, c, used, used, x->o->iters, &mine, times) || bs_combine(x, mine, r) || (times && bs_slowest_iters(x, times, r))) {
		free(times);
		nw_row_release(r);
		return -1;
	}
	free(times);
	nw_row_compute_bw(r);
	if (bs_noise(x, c, used, r)) {
		nw_row_release(r);
		return -1;
	}
	if (x->o->check && (!c->inplace || coll->verify_inplace)) {
		struct nw_pattern p = { .op = coll->op, .dtype = c->dtype, .redop = coll->has_redop ? c->redop : NW_SUM,
		                        .root = c->root, .nranks = x->be->nranks, .count = c->count };
		if (bs_check_once(x, c, &p, &r->wrong)) {
			nw_row_release(r);
			return -1;
		}
	}
	return 0;
}

/*
 * One size of the sweep: both placements (or the one -o/-i... asks for),
 * added to the run and reported by rank 0. *wrong grows by the wrong
 * elements found. 0 or -1.
 */
static int run_size(struct bs_ctx *x, const struct nw_coll *coll, struct nw_call *c, uint64_t size, int64_t *wrong)
{
	const struct nw_bench_opts *o = x->o;
	uint64_t used, count = nw_coll_count(coll->op, size, nw_dtype_size(c->dtype), x->be->nranks, &used);
	struct nw_row rows[2];
	int have[2] = { 0, 0 };
	if (!count)
		return 0;
	for (int ip = 0; ip < 2; ip++) {
		if ((ip && o->oop_only) || (!ip && o->ip_only))
			continue;
		c->count = count;
		c->inplace = ip;
		if (run_placement(x, coll, c, used, &rows[ip])) {
			if (have[0])
				nw_row_release(&rows[0]);
			return -1;
		}
		if (rows[ip].wrong > 0)
			*wrong += rows[ip].wrong;
		have[ip] = 1;
	}
	struct nw_row *a = have[0] ? nw_run_add(x->run, &rows[0]) : NULL;
	struct nw_row *b = have[1] ? nw_run_add(x->run, &rows[1]) : NULL;
	if (x->row_fn && x->g->rank == 0)
		x->row_fn(a, b, x->arg);
	return 0;
}

/*
 * After a cycle of -N: whether the run stops here (stop_asked on rank 0,
 * told to every rank, so that all stop after the same cycle): sets
 * x->stopped. 0, or -1 with err.
 */
static int cycle_end(struct bs_ctx *x)
{
	int stop = x->g->rank == 0 && x->o->stop_asked && x->o->stop_asked();
	if (nw_group_bcast(x->g, &stop, sizeof(stop), 0, x->err, x->errlen))
		return -1;
	x->stopped = stop != 0;
	return 0;
}

/*
 * After a size: whether any rank's o->stop is set, asked of every rank so
 * that they all stop after the same size. Sets x->stopped and marks rank
 * 0's run interrupted. 0, or -1 with x->err.
 */
static int stop_agreed(struct bs_ctx *x)
{
	if (!x->o->stop || x->stopped)
		return 0;
	int mine = *x->o->stop != 0, *all = nw_calloc((size_t)x->g->size, sizeof(int));
	int rc = nw_group_allgather(x->g, &mine, all, sizeof(int), x->err, x->errlen);
	for (int i = 0; !rc && i < x->g->size; i++)
		x->stopped |= all[i] != 0;
	free(all);
	if (x->stopped && x->g->rank == 0) {
		if (!x->run->h.extra)
			x->run->h.extra = json_object();
		json_object_set_new(x->run->h.extra, "interrupted", json_true());
	}
	return rc;
}

/* Every size of one (op, dtype, redop, root), -N times; *wrong grows by the wrong elements found. 0, or -1 with err. */
static int sweep_one(struct bs_ctx *x, const struct nw_coll *coll, enum nw_dtype dtype, enum nw_redop redop,
                     int root, int64_t *wrong)
{
	size_t nsz;
	uint64_t *sz = sizes(x->o, &nsz);
	struct nw_call c = { .op = coll->op, .dtype = dtype, .redop = redop, .root = root,
	                     .unalign = (size_t)x->o->unalign * nw_dtype_size(dtype) };
	int rc = bs_fill_patterns(x, coll, dtype, redop, root) || bs_warm_up(x, &c) ? -1 : 0;
	/* -N: every size again each cycle, after the one warm-up, as nccl-tests does */
	x->cycles_done = 0;
	for (int cyc = 0; !rc && !x->stopped && (x->o->cycles == 0 || cyc < x->o->cycles); cyc++) {
		for (size_t k = 0; k < nsz && !rc && !x->stopped; k++)
			rc = run_size(x, coll, &c, sz[k], wrong) || stop_agreed(x);
		if (!rc && !x->stopped)
			x->cycles_done++;
		if (!rc && !x->stopped && x->o->cycles != 1)
			rc = cycle_end(x);
	}
	free(sz);
	return rc ? -1 : 0;
}

/* A string every process must agree on, into fp: version and what the options ask. */
static void fingerprint(const struct nw_bench_opts *o, struct nw_strbuf *fp)
{
	nw_strbuf_addf(fp, "ncclwatch %s b=%" PRIu64 " e=%" PRIu64 " f=%g i=%" PRIu64 " n=%d w=%d m=%d c=%d G=%d g=%d "
	               "r=%d be=%d ops=", NW_VERSION, o->min_bytes, o->max_bytes, o->step_factor, o->step_bytes, o->iters,
	               o->warmup, o->agg_iters, o->check, o->graph_launches, o->ngpus, o->root, o->backend);
	for (int i = 0; i < o->nops; i++)
		nw_strbuf_addf(fp, "%s%s", i ? "," : "", nw_coll_get(o->ops[i])->name);
	for (int i = 0; i < o->ndtypes; i++)
		nw_strbuf_addf(fp, "%s%s", i ? "," : " d=", nw_dtype_name(o->dtypes[i]));
	for (int i = 0; i < o->nredops; i++)
		nw_strbuf_addf(fp, "%s%s", i ? "," : " o=", nw_redop_name(o->redops[i]));
	nw_strbuf_addf(fp, " N=%d M=%d u=%d p=%d R=%d y=%d x=%d", o->cycles, o->mem_report, o->unalign, o->parallel_init,
	               o->reg, o->stream_null, o->cta_policy);
}

/* Open the backend the options ask for on group g; 0, or -1 with err. */
static int open_backend(const struct nw_bench_opts *o, struct nw_group *g, struct nw_backend **be, char *err,
                        size_t errlen)
{
	if (o->backend == NW_BACKEND_MPI) {
		if (nw_backend_mpi_open(be, g, err, errlen))
			return -1;
		(*be)->timeout_s = o->timeout_s;
		return 0;
	}
	struct nw_nccl_open_opts no = { .nccl_lib = o->nccl_lib, .ngpus = o->ngpus, .nthreads = o->nthreads,
	                                .reg = o->reg, .parallel_init = o->parallel_init, .stream_null = o->stream_null,
	                                .cta_policy = o->cta_policy };
	return nw_backend_nccl_open(be, g, &no, err, errlen);
}

/*
 * -M, -R, -x and -y on a backend that cannot do them: GPU-only flags on a
 * host backend, or a registration or CTA policy the loaded NCCL is too old
 * for (named with its version and path). 0, or -1 with err.
 */
static int gpu_flags_fit(const struct nw_bench_opts *o, const struct nw_backend *be, char *err, size_t errlen)
{
	int gpu = !strcmp(be->name, "nccl");
	if (o->mem_report && !be->ops->mem_free)
		return nw_seterr(err, errlen, "-M 1 (--memory) reports GPU memory; the %s backend has none: leave -M out",
		                 be->name);
	if (o->reg && !gpu)
		return nw_seterr(err, errlen, "-R %d (--local_register) registers GPU buffers with NCCL; the %s backend has "
		                 "none: leave -R out", o->reg, be->name);
	if (o->stream_null && !gpu)
		return nw_seterr(err, errlen, "-y 1 (--stream_null) runs NCCL on the NULL CUDA stream; the %s backend has no "
		                 "stream: leave -y out", be->name);
	if (o->cta_policy >= 0 && !gpu)
		return nw_seterr(err, errlen, "-x %d (--cta_policy) sets NCCL's CTA policy; the %s backend has no NCCL "
		                 "communicator: leave -x out", o->cta_policy, be->name);
	if (o->reg > be->reg_max)
		return nw_seterr(err, errlen, "-R %d (--local_register, %s) needs NCCL %s or newer (%s); the NCCL loaded is "
		                 "%s (%s): use a newer NCCL (--nccl-lib PATH)%s", o->reg, o->reg == 2 ? "symmetric" : "local",
		                 o->reg == 2 ? "2.27" : "2.19", o->reg == 2 ? "ncclCommWindowRegister" : "ncclCommRegister",
		                 be->nccl_version, be->nccl_path, o->reg == 2 && be->reg_max == 1 ? " or -R 1" : "");
	if (o->cta_policy > be->cta_max)
		return nw_seterr(err, errlen, "-x %d (--cta_policy, %s) needs NCCL %s or newer (ncclConfig_t.CTAPolicy); the "
		                 "NCCL loaded is %s (%s): use a newer NCCL (--nccl-lib PATH)%s", o->cta_policy,
		                 o->cta_policy == 2 ? "zero" : o->cta_policy == 1 ? "efficiency" : "default",
		                 o->cta_policy == 2 ? "2.28" : "2.27", be->nccl_version, be->nccl_path,
		                 o->cta_policy == 2 && be->cta_max == 1 ? " or -x 0|1" : "");
	return 0;
}

/* A reduction asked by name that the backend cannot do (-o all skips those instead). 0, or -1 with err. */
static int redops_fit(const struct nw_bench_opts *o, const struct nw_backend *be, char *err, size_t errlen)
{
	for (int i = 0; i < o->nredops && !o->redops_all; i++) {
		enum nw_redop r = o->redops[i];
		if (be->redop_ok[r])
			continue;
		if (r == NW_MULSUM && !strcmp(be->name, "nccl"))
			return nw_seterr(err, errlen, "-o mulsum needs ncclRedOpCreatePreMulSum (NCCL 2.11+); the NCCL loaded "
			                 "is %s (%s): use a newer NCCL (--nccl-lib PATH) or another reduction",
			                 be->nccl_version, be->nccl_path);
		return nw_seterr(err, errlen, "-o %s is %s; the %s backend has no such reduction: choose sum, prod, min, max "
		                 "or avg (-o all leaves it out)", nw_redop_name(r),
		                 r == NW_MULSUM ? "NCCL's pre-multiplied sum (ncclRedOpCreatePreMulSum)" : "not available",
		                 be->name);
	}
	return 0;
}

/*
 * Refuse what the options ask of a backend that cannot do it (a type, a
 * reduction named on its own, -G, -t, -g); 0 or -1 with err.
 */
static int backend_fits(const struct nw_bench_opts *o, const struct nw_backend *be, char *err, size_t errlen)
{
	int gpu = !strcmp(be->name, "nccl");
	for (int i = 0; i < o->ndtypes; i++)
		if (!be->dtype_ok[o->dtypes[i]])
			return nw_seterr(err, errlen,
			                 "data type '%s' is not supported by the %s backend%s; choose another with -d",
			                 nw_dtype_name(o->dtypes[i]), be->name,
			                 gpu ? " on this GPU (fp8 needs compute capability 9.0, bfloat16 8.0)" : "");
	if (redops_fit(o, be, err, errlen))
		return -1;
	if (o->graph_launches > 0 && !be->graphs)
		return nw_seterr(err, errlen, "-G (CUDA graphs) needs the NCCL backend");
	if (o->nthreads > 1 && !be->ops->launch_many)
		return nw_seterr(err, errlen, "-t %d (threads) needs the NCCL backend; the %s backend runs one rank per "
		                 "process (start more processes instead)", o->nthreads, be->name);
	if (o->ngpus > 1 && !gpu)
		return nw_seterr(err, errlen, "-g %d (GPUs per process) needs the NCCL backend; the %s backend runs one rank "
		                 "per process (start one process per rank instead: mpirun -np N)", o->ngpus, be->name);
	return gpu_flags_fit(o, be, err, errlen);
}

/* What the run header says about the backend, the library, the GPUs and the ranks. */
static void fill_header(struct nw_run_header *h, const struct nw_bench_opts *o, const struct nw_backend *be,
                        const struct nw_group *g)
{
	nw_strlcpy(h->backend, be->name, sizeof(h->backend));
	nw_strlcpy(h->nccl_version, be->nccl_version, sizeof(h->nccl_version));
	nw_strlcpy(h->nccl_path, be->nccl_path, sizeof(h->nccl_path));
	nw_strlcpy(h->driver, be->driver, sizeof(h->driver));
	nw_strlcpy(h->cuda_driver, be->cuda_driver, sizeof(h->cuda_driver));
	nw_strlcpy(h->gpus, be->gpus, sizeof(h->gpus));
	h->nranks = be->nranks;
	h->nthreads = o->nthreads > 1 ? o->nthreads : 1;
	h->gpus_per_thread = be->nlocal / h->nthreads;
	h->rank = g->rank;
	h->nhosts = g->size / (g->local_size > 0 ? g->local_size : 1);
}

/*
 * The sweep's context: buffers sized for the largest size, whole (split
 * ops use it for n chunks), and threads for host-side pattern work shared
 * among the local ranks and the processes on this host, at most 16.
 */
static void ctx_init(struct bs_ctx *x, const struct nw_bench_opts *o, struct nw_backend *be, struct nw_group *g)
{
	uint64_t maxb = o->max_bytes;
	size_t maxes = 8;
	if (maxb < maxes * (uint64_t)be->nranks)
		maxb = maxes * (uint64_t)be->nranks;
	x->o = o;
	x->be = be;
	x->g = g;
	x->buf_bytes = (size_t)maxb;
	x->pattern_key = -1;
	x->dev = 0;
	x->nthreads = nw_ncpus() / (be->nlocal > 0 ? be->nlocal : 1);
	if (g->local_size > 1)
		x->nthreads /= g->local_size;
	if (x->nthreads > 16)
		x->nthreads = 16;
	if (x->nthreads < 1)
		x->nthreads = 1;
}

/*
 * Every (dtype, redop, root) of one op; *wrong grows by the wrong elements
 * found. avg and mulsum on fp8 are skipped with NCCL (which refuses them),
 * or refused when that is all the options ask for; a reduction the backend cannot do
 * at all (mulsum on MPI) is left out of -o all (backend_fits refused it
 * asked by name). NW_BENCH_OK, or NW_BENCH_FAILED or NW_BENCH_USAGE with
 * err.
 */
static enum nw_bench_status sweep_op(struct bs_ctx *x, const struct nw_coll *coll, int64_t *wrong)
{
	const struct nw_bench_opts *o = x->o;
	int nred = coll->has_redop ? o->nredops : 1;
	int r0 = coll->has_root ? (o->root < 0 ? 0 : o->root) : -1;
	int r1 = coll->has_root ? (o->root < 0 ? x->be->nranks - 1 : o->root) : -1;
	if (coll->has_root && r1 >= x->be->nranks) {
		nw_seterr(x->err, x->errlen, "-r %d: root must be below the number of ranks (%d)", o->root, x->be->nranks);
		return NW_BENCH_USAGE;
	}
	for (int d = 0; d < o->ndtypes && !x->stopped; d++)
		for (int k = 0; k < nred && !x->stopped; k++)
			for (int root = r0; root <= r1 && !x->stopped; root++) {
				enum nw_redop redop = coll->has_redop ? o->redops[k] : NW_SUM;
				if (!x->be->redop_ok[redop])
					continue;
				int fp8 = o->dtypes[d] == NW_FP8E4M3 || o->dtypes[d] == NW_FP8E5M2;
				if (coll->has_redop && (redop == NW_AVG || redop == NW_MULSUM) && fp8 &&
				    !strcmp(x->be->name, "nccl")) {
					/* NCCL refuses avg and pre-multiplied sums on fp8 in the collective itself
					   (ncclInvalidArgument, 2.28.9 on an H200) */
					if (o->ndtypes == 1 && o->nredops == 1) {
						nw_seterr(x->err, x->errlen, "NCCL does not support -o %s on %s; choose sum, prod, "
						          "min or max", nw_redop_name(redop), nw_dtype_name(o->dtypes[d]));
						return NW_BENCH_FAILED;
					}
					continue;
				}
				if (sweep_one(x, coll, o->dtypes[d], redop, root, wrong))
					return NW_BENCH_FAILED;
			}
	return NW_BENCH_OK;
}

/*
 * What a host backend's sweep takes on this host (nw_host_mem_need: the
 * buffers, MPI's own for the heaviest op, verification and runtime, for
 * each process of this host) must fit in the memory available now, cgroup
 * limits included: the kernel overcommits, and its OOM killer would end
 * this run or a neighbour's with no message. 0, or -1 with x->err.
 */
static int host_memory_fits(struct bs_ctx *x)
{
	if (x->be->gpu[0] >= 0)
		return 0;
	char why[64];
	uint64_t avail = nw_host_mem_available(why, sizeof(why));
	int procs = x->g->local_size > 0 ? x->g->local_size : 1;
	struct nw_host_mem_need each;
	nw_host_mem_need((uint64_t)x->buf_bytes + 8 * (uint64_t)x->o->unalign, x->o->ops, x->o->nops, x->o->pairs, &each);
	uint64_t need = each.total * (uint64_t)procs;
	if (avail == UINT64_MAX || need <= avail)
		return 0;
	char lib[96] = "", emax[32];
	nw_format_size(x->o->max_bytes, emax, sizeof(emax));
	if (each.library)
		snprintf(lib, sizeof(lib), ", %.2f GiB that MPI takes for %s", each.library / 1073741824.0,
		         nw_coll_get(each.heaviest)->name);
	return nw_seterr(x->err, x->errlen, "-e %s needs %.2f GiB of host memory on %s: %d process%s x %.2f GiB "
	                 "(2 buffers of %.2f GiB%s, %.2f GiB for verification and the runtime) but only %.2f GiB is "
	                 "available (%s); lower -e or run fewer processes per host", emax, need / 1073741824.0,
	                 x->g->host, procs, procs == 1 ? "" : "es", each.total / 1073741824.0, each.buffers / 2147483648.0,
	                 lib, each.fixed / 1073741824.0, avail / 1073741824.0, why);
}

/*
 * -M: what nccl-tests' memory report says, into the run's extra as
 * "gpu_memory": device memory taken by communicator set-up, by the
 * buffers (and their registration), and during the collectives (free
 * memory before them, free0, less after), the most of any local GPU.
 * 0, or -1 with err.
 */
static int memory_report(struct bs_ctx *x, const int64_t *free0)
{
	int64_t free1[NW_MAX_LOCAL], coll = 0;
	if (x->be->ops->mem_free(x->be, free1, x->err, x->errlen))
		return -1;
	for (int i = 0; i < x->be->nlocal; i++)
		if (free0[i] - free1[i] > coll)
			coll = free0[i] - free1[i];
	json_t *m = json_object();
	json_object_set_new(m, "init_bytes", json_integer(x->be->mem_init));
	json_object_set_new(m, "user_bytes", json_integer(x->be->mem_user));
	json_object_set_new(m, "collective_bytes", json_integer(coll));
	if (!x->run->h.extra)
		x->run->h.extra = json_object();
	json_object_set_new(x->run->h.extra, "gpu_memory", m);
	return 0;
}

/*
 * -N: the run's extra "cycles": the cycles asked (0: until stopped), those
 * finished by the last (op, dtype, redop, root) that ran, and whether a
 * stop ended the run. The rows of every cycle are in the run, in order.
 */
static void cycles_record(struct bs_ctx *x)
{
	json_t *c = json_object();
	json_object_set_new(c, "asked", json_integer(x->o->cycles));
	json_object_set_new(c, "completed", json_integer(x->cycles_done));
	json_object_set_new(c, "stopped", json_boolean(x->stopped));
	if (!x->run->h.extra)
		x->run->h.extra = json_object();
	json_object_set_new(x->run->h.extra, "cycles", c);
}

/* The sweep on an open backend: --pairs first, then every op (err in x->err). */
static enum nw_bench_status sweep(struct bs_ctx *x)
{
	const struct nw_bench_opts *o = x->o;
	int64_t wrong = 0;
	if (o->pairs && o->nops == 0 && x->be->nranks < 2) {
		nw_seterr(x->err, x->errlen, "--pairs needs at least 2 ranks (this run has %d); start it under a "
		          "launcher, e.g. mpirun -np 2 ncclwatch bench --pairs", x->be->nranks);
		return NW_BENCH_USAGE;
	}
	/* -u: room for the pointers moved by up to 8-byte elements, as nccl-tests pads */
	if (host_memory_fits(x) || x->be->ops->alloc(x->be, x->buf_bytes + 8 * (size_t)o->unalign, x->err, x->errlen))
		return NW_BENCH_FAILED;
	int64_t free0[NW_MAX_LOCAL];
	if (o->mem_report && x->be->ops->mem_free(x->be, free0, x->err, x->errlen))
		return NW_BENCH_FAILED;
	/* with other ops asked for too, one rank simply has no pairs */
	if (o->pairs && (x->be->nranks > 1 || o->nops == 0) && bs_run_pairs(x))
		return NW_BENCH_FAILED;
	for (int i = 0; i < o->nops && !x->stopped; i++) {
		enum nw_bench_status rc = sweep_op(x, nw_coll_get(o->ops[i]), &wrong);
		if (rc != NW_BENCH_OK)
			return rc;
	}
	if (o->mem_report && memory_report(x, free0))
		return NW_BENCH_FAILED;
	if (o->cycles != 1)
		cycles_record(x);
	return wrong || x->pairs_wrong ? NW_BENCH_WRONG : NW_BENCH_OK;
}

/*
 * Every process's host, pid and devices, gathered once: rank 0 keeps them
 * in the header's extra as "devices" [{rank, host, pid, device, pci,
 * name}] (what nccl-tests' "Using devices" lists). 0, or -1 with err.
 */
static int gather_devices(struct nw_run *run, const struct nw_backend *be, struct nw_group *g, char *err,
                          size_t errlen)
{
	struct proc_devs {
		char host[64];
		int pid, n, gpu[NW_MAX_LOCAL];
		struct nw_dev_desc dev[NW_MAX_LOCAL];
	} *me = nw_calloc(1, sizeof(*me)), *all = nw_calloc((size_t)g->size, sizeof(*me));
	nw_strlcpy(me->host, g->host, sizeof(me->host));
	me->pid = (int)getpid();
	me->n = be->nlocal;
	for (int i = 0; i < me->n; i++) {
		me->gpu[i] = be->gpu[i];
		me->dev[i] = be->dev[i];
	}
	int rc = nw_group_allgather(g, me, all, sizeof(*me), err, errlen);
	if (!rc && g->rank == 0) {
		json_t *list = json_array();
		for (int p = 0, rank = 0; p < g->size; p++)
			for (int i = 0; i < all[p].n; i++) {
				json_t *d = json_object();
				json_object_set_new(d, "rank", json_integer(rank++));
				json_object_set_new(d, "host", json_string(all[p].host));
				json_object_set_new(d, "pid", json_integer(all[p].pid));
				json_object_set_new(d, "device", json_integer(all[p].gpu[i]));
				json_object_set_new(d, "pci", json_string(all[p].dev[i].pci));
				json_object_set_new(d, "name", json_string(all[p].dev[i].name));
				json_array_append_new(list, d);
			}
		if (!run->h.extra)
			run->h.extra = json_object();
		json_object_set_new(run->h.extra, "devices", list);
	}
	free(me);
	free(all);
	return rc;
}

/* Put "rank R on HOST: " before the message in err, so that the rank that failed is named. */
static void name_rank(const struct nw_group *g, char *err, size_t errlen)
{
	char *msg = nw_strdup(err);
	nw_seterr(err, errlen, "rank %d on %s: %s", g->rank, g->host, msg);
	free(msg);
}

static void (*job_error_fn)(const char *msg);

void nw_bench_on_job_error(void (*fn)(const char *msg))
{
	job_error_fn = fn;
}

/* On an open backend: what it cannot do refused, the run's header and devices, the job split, the sweep. */
static enum nw_bench_status run_on(const struct nw_bench_opts *o, struct nw_backend *be, struct nw_group *g,
                                   struct nw_run *run, nw_bench_row_fn row_fn, void *arg, char *err, size_t errlen)
{
	NW_ASSERT(be->nlocal >= 1 && be->nlocal <= NW_MAX_LOCAL); /* arrays of one entry per local rank */
	if (backend_fits(o, be, err, errlen))
		return NW_BENCH_USAGE; /* what the backend cannot do is the options' fault */
	fill_header(&run->h, o, be, g);
	if (gather_devices(run, be, g, err, errlen))
		return NW_BENCH_FAILED;
	enum nw_bench_status rc = bs_split_job(o, be, g, run, err, errlen);
	if (rc != NW_BENCH_OK)
		return rc;
	struct bs_ctx x = { .run = run, .row_fn = row_fn, .arg = arg, .err = err, .errlen = errlen };
	ctx_init(&x, o, be, g);
	return sweep(&x);
}

enum nw_bench_status nw_bench_run(const struct nw_bench_opts *o, struct nw_run *run, nw_bench_row_fn row_fn,
                                  void *arg, char *err, size_t errlen)
{
	struct nw_group *g = NULL;
	struct nw_backend *be = NULL;
	if (o->min_bytes > o->max_bytes) {
		nw_seterr(err, errlen, "-b %" PRIu64 " is larger than -e %" PRIu64, o->min_bytes, o->max_bytes);
		return NW_BENCH_FAILED;
	}
	double rdzv = o->rdzv_timeout_s;
	if (rdzv <= 0)
		rdzv = o->timeout_s > 0 && o->timeout_s < 300 ? o->timeout_s : 300;
	struct nw_strbuf fp;
	nw_strbuf_init(&fp);
	fingerprint(o, &fp);
	int grc = nw_group_open(&g, o->backend == NW_BACKEND_MPI, fp.buf, rdzv, err, errlen);
	nw_strbuf_release(&fp);
	if (grc)
		return grc == -2 ? NW_BENCH_USAGE : NW_BENCH_FAILED; /* -2: bad launcher variables (comm/boot.h) */
	int orc = open_backend(o, g, &be, err, errlen);
	if (orc == NW_BACKEND_FAILED_ALL) {
		/* every rank knows: no abort; rank 0 says it once, before any rank exits */
		if (g->rank == 0 && job_error_fn && err[0]) {
			job_error_fn(err);
			err[0] = '\0';
		}
		char e2[NW_ERRLEN];
		nw_group_barrier(g, e2, sizeof(e2));
		nw_group_close(g);
		return NW_BENCH_FAILED;
	}
	enum nw_bench_status rc = orc ? NW_BENCH_FAILED : run_on(o, be, g, run, row_fn, arg, err, errlen);
	if ((rc == NW_BENCH_FAILED || rc == NW_BENCH_USAGE) && g->size > 1) {
		/* tell the others before they wait on us forever (a usage error stops every rank alike) */
		if (rc == NW_BENCH_FAILED)
			nw_group_abort(g, err);
		name_rank(g, err, errlen);
	}
	if (be)
		be->ops->destroy(be);
	nw_group_close(g);
	return rc;
}
