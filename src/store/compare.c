/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare: two runs side by side (rows matched by op, dtype, redop, size
 * and placement, repeats pooled), a verdict per size against a noise
 * tolerance, the bands of sizes that changed, whether the runs can be
 * compared at all, the fingerprint differences that may explain a change,
 * and the whole comparison as JSON.
 */
#include "store/compare.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/strbuf.h"
#include "util/util.h"

void nw_cmp_opts_default(struct nw_cmp_opts *o)
{
	o->tolerance = 0.05;
	o->lat_tolerance = 0.20;
	o->lat_below = 1ULL << 20;
	o->min_size = 0;
	o->noise_floor_us = 2.0;
}

const char *nw_cmp_verdict_name(enum nw_cmp_verdict v)
{
	switch (v) {
	case NW_V_SAME: return "same";
	case NW_V_SLOWER: return "slower";
	case NW_V_FASTER: return "faster";
	case NW_V_ONLY_A: return "only-a";
	case NW_V_ONLY_B: return "only-b";
	case NW_V_NA: return "n/a";
	}
	return "?";
}

/* Per-key accumulation over the repeats of each side. */
struct side {
	int n;
	double bus_sum, bus_min, bus_max;
	double time_sum, time_min, time_max;
	int niter_rows;        /* rows with per-iteration times (-I 1) */
	double iter_cv;        /* the largest per-iteration coefficient of variation among them, a fraction */
	int nnoise_rows;       /* rows with a measured noise (bench's repeated batches) */
	double noise;          /* the largest of those, a fraction */
};

struct acc {
	struct nw_cmp_row row;
	int op_order;
	struct side s[2];
};

static int same_key(const struct nw_cmp_row *k, const struct nw_row *r)
{
	return k->size == r->size_bytes && k->inplace == r->inplace && k->root == r->root &&
	       !strcmp(k->op, r->op) && !strcmp(k->dtype, r->dtype) && !strcmp(k->redop, r->redop);
}

static void side_add(struct side *s, const struct nw_row *r)
{
	if (s->n == 0) {
		s->bus_min = s->bus_max = r->busbw_gbs;
		s->time_min = s->time_max = r->time_us;
	}
	s->n++;
	s->bus_sum += r->busbw_gbs;
	s->time_sum += r->time_us;
	s->bus_min = fmin(s->bus_min, r->busbw_gbs);
	s->bus_max = fmax(s->bus_max, r->busbw_gbs);
	s->time_min = fmin(s->time_min, r->time_us);
	s->time_max = fmax(s->time_max, r->time_us);
	if (r->noise > 0) {
		s->nnoise_rows++;
		s->noise = fmax(s->noise, r->noise);
	}
	struct nw_iter_stats st;
	if (!nw_row_iter_stats(r, &st) && st.n > 1) {
		s->niter_rows++;
		s->iter_cv = fmax(s->iter_cv, st.cv_pct / 100);
	}
}

/* Relative spread of repeats, (max - min) / mean; 0 for a single value. */
static double spread(const struct side *s, int by_time)
{
	if (s->n < 2)
		return 0;
	double mean = (by_time ? s->time_sum : s->bus_sum) / s->n;
	double range = by_time ? s->time_max - s->time_min : s->bus_max - s->bus_min;
	return mean > 0 ? range / mean : 0;
}

static int cmp_acc(const void *pa, const void *pb)
{
	const struct acc *a = pa, *b = pb;
	if (a->op_order != b->op_order)
		return a->op_order < b->op_order ? -1 : 1;
	int c = strcmp(a->row.dtype, b->row.dtype);
	if (!c)
		c = strcmp(a->row.redop, b->row.redop);
	if (!c && a->row.root != b->row.root)
		c = a->row.root < b->row.root ? -1 : 1;
	if (!c && a->row.inplace != b->row.inplace)
		c = a->row.inplace < b->row.inplace ? -1 : 1;
	if (!c && a->row.size != b->row.size)
		c = a->row.size < b->row.size ? -1 : 1;
	return c;
}

/* Gather every key of both runs (A first), with the per-side sums. */
static struct acc *gather(const struct nw_run *a, const struct nw_run *b, uint64_t min_size, size_t *n)
{
	size_t cap = a->nrows + b->nrows + 1, nacc = 0;
	struct acc *v = nw_calloc(cap, sizeof(*v));
	char (*ops)[24] = nw_calloc(cap, sizeof(*ops));
	size_t nops = 0;
	const struct nw_run *runs[2] = { a, b };
	for (int side = 0; side < 2; side++) {
		for (size_t i = 0; i < runs[side]->nrows; i++) {
			const struct nw_row *r = &runs[side]->rows[i];
			if (r->size_bytes < min_size)
				continue;
			size_t k;
			for (k = 0; k < nacc; k++)
				if (same_key(&v[k].row, r))
					break;
			if (k == nacc) {
				struct nw_cmp_row *c = &v[nacc].row;
				nw_strlcpy(c->op, r->op, sizeof(c->op));
				nw_strlcpy(c->dtype, r->dtype, sizeof(c->dtype));
				nw_strlcpy(c->redop, r->redop, sizeof(c->redop));
				c->root = r->root;
				c->inplace = r->inplace;
				c->size = r->size_bytes;
				size_t o;
				for (o = 0; o < nops; o++)
					if (!strcmp(ops[o], r->op))
						break;
				if (o == nops)
					nw_strlcpy(ops[nops++], r->op, sizeof(ops[0]));
				v[nacc].op_order = (int)o;
				nacc++;
			}
			side_add(&v[k].s[side], r);
		}
	}
	free(ops);
	qsort(v, nacc, sizeof(*v), cmp_acc);
	*n = nacc;
	return v;
}

/* The verdict of one key. */
static void judge(struct acc *x, const struct nw_cmp_opts *o)
{
	struct nw_cmp_row *c = &x->row;
	c->na = x->s[0].n;
	c->nb = x->s[1].n;
	if (c->na)
		c->busbw_a = x->s[0].bus_sum / c->na, c->time_a = x->s[0].time_sum / c->na;
	if (c->nb)
		c->busbw_b = x->s[1].bus_sum / c->nb, c->time_b = x->s[1].time_sum / c->nb;
	c->change = NAN;
	if (!c->na || !c->nb) {
		c->verdict = c->na ? NW_V_ONLY_A : NW_V_ONLY_B;
		return;
	}
	c->by_time = c->size < o->lat_below;
	int bus_ok = c->busbw_a > 0 && c->busbw_b > 0 && isfinite(c->busbw_a) && isfinite(c->busbw_b);
	int time_ok = c->time_a > 0 && c->time_b > 0 && isfinite(c->time_a) && isfinite(c->time_b);
	if (!c->by_time && !bus_ok)
		c->by_time = 1;
	if (c->by_time && !time_ok) {
		c->verdict = NW_V_NA;
		return;
	}
	c->change = c->by_time ? c->time_a / c->time_b - 1 : c->busbw_b / c->busbw_a - 1;
	double noise = fmax(spread(&x->s[0], c->by_time), spread(&x->s[1], c->by_time));
	if (c->na > 1 || c->nb > 1) {
		c->from_repeats = 1;
		c->threshold = fmax(noise, 0.01);
	} else {
		c->threshold = c->by_time ? o->lat_tolerance : o->tolerance;
	}
	/*
	 * Per-iteration times on both sides: one iteration's relative spread
	 * (its coefficient of variation) is what a launch's mean can move by
	 * without anything having changed, so a smaller difference is noise.
	 */
	if (x->s[0].niter_rows && x->s[1].niter_rows) {
		double cv = fmax(x->s[0].iter_cv, x->s[1].iter_cv);
		if (cv > c->threshold) {
			c->threshold = cv;
			c->from_iters = 1;
		}
	}
	/*
	 * The rows' measured noise (bench times a quick size's batch three
	 * times; the spread of the three): what a batch's time moves by with
	 * nothing changed, on either side.
	 */
	double batch = fmax(x->s[0].noise, x->s[1].noise);
	if ((x->s[0].nnoise_rows || x->s[1].nnoise_rows) && batch > c->threshold) {
		c->threshold = batch;
		c->from_noise = 1;
		c->from_iters = 0;
	}
	/* inside the spread of repeats, of iterations or of batches, or a time difference below the floor: noise */
	c->within_noise = ((c->from_repeats || c->from_iters || c->from_noise) && fabs(c->change) <= c->threshold) ||
	                  (time_ok && fabs(c->time_b - c->time_a) < o->noise_floor_us);
	if (c->within_noise)
		c->verdict = NW_V_SAME;
	else if (c->change < -c->threshold)
		c->verdict = NW_V_SLOWER;
	else if (c->change > c->threshold)
		c->verdict = NW_V_FASTER;
	else
		c->verdict = NW_V_SAME;
}

static int same_group(const struct nw_cmp_row *a, const struct nw_cmp_row *b)
{
	return a->inplace == b->inplace && a->root == b->root && !strcmp(a->op, b->op) &&
	       !strcmp(a->dtype, b->dtype) && !strcmp(a->redop, b->redop);
}

/* Contiguous runs of slower (or faster) sizes within one op/dtype/redop/placement. */
static void find_bands(struct nw_cmp *c)
{
	c->bands = nw_calloc(c->nrows + 1, sizeof(*c->bands));
	struct nw_cmp_band *cur = NULL;
	for (size_t i = 0; i < c->nrows; i++) {
		const struct nw_cmp_row *r = &c->rows[i];
		int banded = r->verdict == NW_V_SLOWER || r->verdict == NW_V_FASTER;
		if (cur && (!banded || r->verdict != cur->verdict || !same_group(r, &c->rows[i - 1]))) {
			cur->mean_change /= cur->nsizes;
			cur = NULL;
		}
		if (!banded)
			continue;
		if (!cur) {
			cur = &c->bands[c->nbands++];
			nw_strlcpy(cur->op, r->op, sizeof(cur->op));
			nw_strlcpy(cur->dtype, r->dtype, sizeof(cur->dtype));
			nw_strlcpy(cur->redop, r->redop, sizeof(cur->redop));
			cur->inplace = r->inplace;
			cur->from = r->size;
			cur->verdict = r->verdict;
			cur->worst_change = r->change;
			cur->worst_size = r->size;
			cur->by_time = 1;
		}
		cur->to = r->size;
		cur->nsizes++;
		cur->mean_change += r->change;
		if (!r->by_time)
			cur->by_time = 0;
		if ((r->verdict == NW_V_SLOWER && r->change < cur->worst_change) ||
		    (r->verdict == NW_V_FASTER && r->change > cur->worst_change)) {
			cur->worst_change = r->change;
			cur->worst_size = r->size;
		}
	}
	if (cur)
		cur->mean_change /= cur->nsizes;
}

static int banded(enum nw_cmp_verdict v)
{
	return v == NW_V_SLOWER || v == NW_V_FASTER;
}

static int compared(enum nw_cmp_verdict v)
{
	return v == NW_V_SAME || banded(v);
}

/*
 * Changes of too few sizes, among unchanged neighbours, do not count.
 * Within one op, type, reduction, root and placement, a run of k adjacent
 * sizes changed the same way (each beyond its threshold) counts only when
 * the mean of |change| / threshold over it is at least 2 / sqrt(k): a lone
 * size needs twice its threshold, two sizes 1.41 times theirs, three 1.15,
 * four or more just theirs; and a lone latency-bound size (compared on
 * time) never counts on its own, however far it moved. On a busy host one
 * size's batches are often off by more than their threshold alone (another
 * process took a core for milliseconds, sometimes across all three
 * batches), but several neighbours seldom are, and a real change (another
 * protocol or algorithm, a slower link) moves a band of sizes, or a large
 * size, whose time no burst of that kind moves much, by far. A run with no
 * compared neighbour (the only sizes measured) always counts. Those that
 * do not are marked alone and judged same.
 */
static void demote_alone(struct nw_cmp_row *rows, size_t n)
{
	for (size_t g = 0; g < n;) {
		size_t ge = g + 1; /* the group: [g, ge) */
		while (ge < n && same_group(&rows[ge], &rows[g]))
			ge++;
		int ncompared = 0;
		for (size_t i = g; i < ge; i++)
			ncompared += compared(rows[i].verdict);
		for (size_t i = g; i < ge;) {
			if (!banded(rows[i].verdict)) {
				i++;
				continue;
			}
			size_t e = i + 1;
			double ratio = 0;
			while (e < ge && rows[e].verdict == rows[i].verdict)
				e++;
			for (size_t k = i; k < e; k++)
				ratio += rows[k].threshold > 0 ? fabs(rows[k].change) / rows[k].threshold : 2;
			int k = (int)(e - i);
			/* a lone latency-bound size never counts on its own: see above */
			int weak = ratio / k < 2 / sqrt((double)k) || (k == 1 && rows[i].by_time);
			if (ncompared > k && weak)
				for (size_t j = i; j < e; j++) {
					rows[j].verdict = NW_V_SAME;
					rows[j].alone = 1;
				}
			i = e;
		}
		g = ge;
	}
}

int nw_compare(const struct nw_run *a, const struct nw_run *b, const struct nw_cmp_opts *o,
               struct nw_cmp *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	size_t n;
	struct acc *v = gather(a, b, o->min_size, &n);
	out->rows = nw_calloc(n + 1, sizeof(*out->rows));
	for (size_t i = 0; i < n; i++) {
		judge(&v[i], o);
		out->rows[i] = v[i].row;
	}
	demote_alone(out->rows, n);
	for (size_t i = 0; i < n; i++) {
		switch (out->rows[i].verdict) {
		case NW_V_SLOWER: out->nslower++; break;
		case NW_V_FASTER: out->nfaster++; break;
		case NW_V_SAME: out->nsame++; break;
		default: out->nonly++; break;
		}
	}
	out->nrows = n;
	free(v);
	if (out->nslower + out->nfaster + out->nsame == 0) {
		nw_cmp_release(out);
		return nw_seterr(err, errlen, "the two runs share no measurement (same op, dtype, redop, placement and size%s): nothing to compare",
		                 o->min_size ? ", at or above --min-size" : "");
	}
	find_bands(out);
	nw_fingerprint_diff(a, b, &out->diffs, &out->ndiffs, out->attribution, sizeof(out->attribution));
	for (size_t i = 0; i < out->ndiffs; i++)
		out->nignored += out->diffs[i].ignored != 0;
	nw_cmp_incomparable(a, b, out->not_comparable, sizeof(out->not_comparable));
	return 0;
}

void nw_cmp_release(struct nw_cmp *c)
{
	free(c->rows);
	free(c->bands);
	free(c->diffs);
	memset(c, 0, sizeof(*c));
}

int nw_cmp_regressed(const struct nw_cmp *c)
{
	return c->nslower > 0;
}

void nw_cmp_format_change(char *buf, size_t len, double change)
{
	if (!isfinite(change))
		snprintf(buf, len, "-");
	else if (change >= 1)
		snprintf(buf, len, "%.*fx faster", change + 1 < 10 ? 1 : 0, change + 1);
	else if (change <= -0.5)
		snprintf(buf, len, "%.*fx slower", 1 / (change + 1) < 10 ? 1 : 0, 1 / (change + 1));
	else
		snprintf(buf, len, "%+.1f%%", change * 100);
}

void nw_cmp_band_text(const struct nw_cmp_band *b, struct nw_cmp_band_text *t)
{
	nw_cmp_format_change(t->mean, sizeof(t->mean), b->mean_change);
	nw_cmp_format_change(t->worst, sizeof(t->worst), b->worst_change);
	nw_format_size(b->from, t->from, sizeof(t->from));
	nw_format_size(b->to, t->to, sizeof(t->to));
	nw_format_size(b->worst_size, t->worst_size, sizeof(t->worst_size));
}

/* "2 x NVIDIA H200" -> "NVIDIA H200"; the whole text when it has no count. */
static const char *gpu_model(const char *gpus)
{
	const char *x = strstr(gpus, " x ");
	return x ? x + 3 : gpus;
}

/* Whether run r holds op/dtype; op and dtype come from a row of the other run. */
static int has_op_dtype(const struct nw_run *r, const char *op, const char *dtype)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].op, op) && !strcmp(r->rows[i].dtype, dtype))
			return 1;
	return 0;
}

/* The first op/dtype of x that y lacks, as "all_gather float only in A"; 0 when none. */
static int op_set_differs(const struct nw_run *x, const struct nw_run *y, const char *side, char *why, size_t len)
{
	for (size_t i = 0; i < x->nrows; i++) {
		const struct nw_row *r = &x->rows[i];
		if (!has_op_dtype(y, r->op, r->dtype)) {
			snprintf(why, len, "%s %s measured only in %s", r->op, r->dtype, side);
			return 1;
		}
	}
	return 0;
}

int nw_cmp_incomparable(const struct nw_run *a, const struct nw_run *b, char *why, size_t len)
{
	const struct nw_run_header *x = &a->h, *y = &b->h;
	int host_a = !strcmp(x->backend, "mpi"), host_b = !strcmp(y->backend, "mpi");
	why[0] = '\0';
	if (host_a != host_b)
		snprintf(why, len, "backend %s (%s) -> %s (%s)", x->backend, host_a ? "host memory" : "GPUs",
		         y->backend, host_b ? "host memory" : "GPUs");
	else if (!host_a && x->gpus[0] && y->gpus[0] && strcmp(gpu_model(x->gpus), gpu_model(y->gpus)))
		snprintf(why, len, "GPU model %s -> %s", gpu_model(x->gpus), gpu_model(y->gpus));
	else if (x->nranks > 0 && y->nranks > 0 && x->nranks != y->nranks)
		snprintf(why, len, "%d ranks -> %d ranks", x->nranks, y->nranks);
	else if (!op_set_differs(a, b, "A", why, len))
		op_set_differs(b, a, "B", why, len);
	return why[0] != '\0';
}

/* ---- fingerprints ---- */

json_t *nw_fingerprint_of(const struct nw_run *run)
{
	const struct nw_run_header *h = &run->h;
	const json_t *rec = h->extra ? json_object_get(h->extra, "fingerprint") : NULL;
	json_t *fp = json_is_object(rec) ? json_deep_copy(rec) : json_object();
	nw_fingerprint_fill(fp, h);
	return fp;
}

/* A fingerprint value as text; "" when absent or unknown (0 counts as unknown). */
static void val_text(const json_t *v, char *buf, size_t len)
{
	buf[0] = '\0';
	if (json_is_string(v))
		nw_strlcpy(buf, json_string_value(v), len);
	else if (json_is_integer(v) && json_integer_value(v) != 0)
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v) && json_real_value(v) != 0)
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		nw_strlcpy(buf, json_is_true(v) ? "true" : "false", len);
}

/*
 * Fingerprint fields by what changes bandwidth (docs/history.md keeps the
 * same table): rank 1 matters most. fmt takes A then B.
 */
struct field {
	const char *key;
	int rank;
	const char *fmt;
};

enum {
	R_NCCL = 1, R_NCCL_PATH = 2, R_DRIVER = 3, R_GPUS = 4, R_TOPO = 5, R_NCCL_ENV = 6, R_SHAPE = 7,
	R_BACKEND = 8, R_HOST = 9, R_OTHER = 10, R_IGNORED = 99,
};

static const struct field fields[] = {
	{ "nccl_version", R_NCCL, "NCCL %s -> %s" },
	{ "nccl_path", R_NCCL_PATH, "NCCL library %s -> %s" },
	{ "cuda_driver", R_DRIVER, "CUDA driver API %s -> %s" },
	{ "driver", R_DRIVER, "driver %s -> %s" },
	{ "gpus", R_GPUS, "GPUs %s -> %s" },
	{ "gpu_count", R_GPUS, "%s GPUs -> %s GPUs" },
	{ "topology", R_TOPO, "topology '%s' -> '%s'" },
	{ "topology_hash", R_TOPO, "topology changed (hash %s -> %s)" },
	{ "link_gbs", R_TOPO, "link bandwidth %s -> %s GB/s" },
	{ "nranks", R_SHAPE, "%s ranks -> %s ranks" },
	{ "nhosts", R_SHAPE, "%s hosts -> %s hosts" },
	{ "backend", R_BACKEND, "backend %s -> %s" },
	{ "host", R_HOST, "host %s -> %s" },
	{ "tool_version", R_OTHER, "ncclwatch %s -> %s" },
};

/*
 * Per-launch identifiers: set afresh by the launcher for every job (or by
 * the clock), never a cause. Shell patterns on the variable's name; the
 * same list is in docs/history.md.
 */
static const char *const per_launch[] = {
	"OMPI_MCA_ess_*", "OMPI_MCA_orte_*", "OMPI_MCA_pmix*", "OMPI_MCA_initial_wdir",
	"OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_COMM_WORLD_*", "OMPI_FILE_LOCATION", "PMIX_*", "PMI_*",
	"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_PROCID", "SLURM_LOCALID",
	"SLURM_NODEID", "SLURM_TASK_PID", "SLURM_*_PID", "SLURM_*PORT*", "SLURM_*_ID", "TORCHELASTIC_RUN_ID",
	"TORCHELASTIC_RESTART_COUNT", "RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "ROLE_RANK",
	"MASTER_PORT", "*_PORT", "*_PID", "*_URI", "*JOBID*", "*_JOB_ID", "*TIMESTAMP*",
};

static int per_launch_name(const char *name)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(per_launch); i++)
		if (!fnmatch(per_launch[i], name, 0))
			return 1;
	return 0;
}

/* How much an environment variable is likely to matter (rank as in fields). */
static int env_rank(const char *name)
{
	if (per_launch_name(name))
		return R_IGNORED;
	if (!strncmp(name, "NCCL_", 5) && strncmp(name, "NCCL_DEBUG", 10) && strncmp(name, "NCCL_PROFILER", 13))
		return R_NCCL_ENV;
	return R_OTHER; /* CUDA_*, LD_*, UCX_*, FI_*, OMPI_MCA_btl, MASTER_ADDR ... */
}

struct diffs {
	struct nw_fp_diff *v;
	size_t n, cap;
};

static struct nw_fp_diff *diff_add(struct diffs *d, int rank, const char *field, const char *a,
                                   const char *b)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->v = nw_realloc(d->v, d->cap * sizeof(*d->v));
	}
	struct nw_fp_diff *x = &d->v[d->n++];
	memset(x, 0, sizeof(*x));
	x->rank = rank;
	x->ignored = rank == R_IGNORED;
	nw_strlcpy(x->field, field, sizeof(x->field));
	nw_strlcpy(x->a, a, sizeof(x->a));
	nw_strlcpy(x->b, b, sizeof(x->b));
	return x;
}

static int cmp_diff(const void *pa, const void *pb)
{
	const struct nw_fp_diff *a = pa, *b = pb;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return strcmp(a->field, b->field);
}

/* One difference per variable set, unset or changed between ea and eb. */
static void env_diffs(struct diffs *d, const json_t *ea, const json_t *eb)
{
	/* union of names, each once */
	const json_t *sides[2] = { ea, eb };
	for (int s = 0; s < 2; s++) {
		const char *name;
		const json_t *v;
		json_object_foreach((json_t *)sides[s], name, v) {
			if (s == 1 && json_object_get(ea, name))
				continue; /* seen from A's side */
			char a[256], b[256];
			val_text(json_object_get(ea, name), a, sizeof(a));
			val_text(json_object_get(eb, name), b, sizeof(b));
			int has_a = json_object_get(ea, name) != NULL, has_b = json_object_get(eb, name) != NULL;
			if (has_a && has_b && !strcmp(a, b))
				continue;
			char field[80];
			snprintf(field, sizeof(field), "env.%s", name);
			struct nw_fp_diff *x = diff_add(d, env_rank(name), field, has_a ? a : "", has_b ? b : "");
			if (!has_a)
				snprintf(x->text, sizeof(x->text), "%s=%s set in B", name, b);
			else if (!has_b)
				snprintf(x->text, sizeof(x->text), "%s=%s in A, unset in B", name, a);
			else
				snprintf(x->text, sizeof(x->text), "%s %s -> %s", name, a, b);
		}
	}
}

/* Every difference between fingerprints fa and fb into d, most telling first. */
static void collect_diffs(const json_t *fa, const json_t *fb, struct diffs *d)
{
	int topo_differs = 0;
	for (size_t i = 0; i < NW_ARRAY_LEN(fields); i++) {
		const struct field *f = &fields[i];
		char a[256], b[256];
		val_text(json_object_get(fa, f->key), a, sizeof(a));
		val_text(json_object_get(fb, f->key), b, sizeof(b));
		if (!a[0] || !b[0] || !strcmp(a, b))
			continue; /* unknown on one side, or the same */
		if (f->rank == R_TOPO) {
			if (topo_differs)
				continue; /* one topology line is enough */
			topo_differs = 1;
		}
		struct nw_fp_diff *x = diff_add(d, f->rank, f->key, a, b);
		snprintf(x->text, sizeof(x->text), f->fmt, a, b);
	}
	const json_t *ea = json_object_get(fa, "env"), *eb = json_object_get(fb, "env");
	if (json_is_object(ea) && json_is_object(eb))
		env_diffs(d, ea, eb);
	if (d->n)
		qsort(d->v, d->n, sizeof(*d->v), cmp_diff);
	/* gpu_count says again what "gpus" says ("2 x H200 -> 4 x H200"): keep one */
	for (size_t i = 0; i + 1 < d->n; i++) {
		if (!strcmp(d->v[i].field, "gpu_count") && !strcmp(d->v[i + 1].field, "gpus")) {
			memmove(&d->v[i], &d->v[i + 1], (d->n - i - 1) * sizeof(*d->v));
			d->n--;
			break;
		}
	}
}

/*
 * The first three differences that may be a cause, "; "-separated (as
 * many whole ones as fit in room bytes), and how many more there are,
 * appended to sb. Per-launch identifiers are never named.
 */
static void summary_diffs(const struct diffs *d, struct nw_strbuf *sb, size_t room)
{
	size_t causes = 0, shown = 0;
	for (size_t i = 0; i < d->n; i++)
		causes += d->v[i].rank != R_IGNORED;
	for (size_t i = 0; i < causes && shown < 3; i++, shown++) {
		if (sb->len + 2 + strlen(d->v[i].text) >= room)
			break;
		nw_strbuf_addf(sb, "%s%s", shown ? "; " : "", d->v[i].text);
	}
	if (shown < causes)
		nw_strbuf_addf(sb, "; and %zu more", causes - shown);
}

/* What both fingerprints share ("same NCCL 2.28.9, GPUs and links") into same; "" when nothing. */
static void same_text(const json_t *fa, const json_t *fb, char *same, size_t len)
{
	char ga[256], gb[256], ta[256], tb[256], na[64], nb[64];
	val_text(json_object_get(fa, "gpus"), ga, sizeof(ga));
	val_text(json_object_get(fb, "gpus"), gb, sizeof(gb));
	const char *tk = json_object_get(fa, "topology_hash") && json_object_get(fb, "topology_hash") ? "topology_hash" : "topology";
	val_text(json_object_get(fa, tk), ta, sizeof(ta));
	val_text(json_object_get(fb, tk), tb, sizeof(tb));
	if (!ta[0] || !tb[0]) {
		tk = "link_gbs";
		val_text(json_object_get(fa, tk), ta, sizeof(ta));
		val_text(json_object_get(fb, tk), tb, sizeof(tb));
	}
	val_text(json_object_get(fa, "nccl_version"), na, sizeof(na));
	val_text(json_object_get(fb, "nccl_version"), nb, sizeof(nb));
	int same_gpus = ga[0] && !strcmp(ga, gb), same_links = ta[0] && !strcmp(ta, tb);
	int same_nccl = na[0] && !strcmp(na, nb);
	same[0] = '\0';
	if (same_nccl || same_gpus || same_links) {
		snprintf(same, len, "same %s%s%s%s%s", same_nccl ? "NCCL " : "", same_nccl ? na : "",
		         same_nccl && (same_gpus || same_links) ? ", " : "",
		         same_gpus && same_links ? "GPUs and links" : same_gpus ? "GPUs" : "",
		         same_links && !same_gpus ? "links" : "");
	}
}

void nw_fingerprint_diff(const struct nw_run *ra, const struct nw_run *rb, struct nw_fp_diff **out,
                         size_t *n, char *summary, size_t summarylen)
{
	json_t *fa = nw_fingerprint_of(ra), *fb = nw_fingerprint_of(rb);
	struct diffs d = { 0 };
	collect_diffs(fa, fb, &d);
	/* The one-line summary: what differs that may matter, then what is the same. */
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	summary_diffs(&d, &sb, summarylen);
	char same[256];
	same_text(fa, fb, same, sizeof(same));
	if (!sb.len)
		nw_strbuf_addf(&sb, "no recorded difference%s%s: suspect the machine itself (clocks, other jobs, a sick "
		               "GPU, link or node)", same[0] ? "; " : "", same);
	else if (same[0])
		nw_strbuf_addf(&sb, "; %s", same);
	nw_strlcpy(summary, sb.buf, summarylen);
	nw_strbuf_release(&sb);
	json_decref(fa);
	json_decref(fb);
	*out = d.v;
	*n = d.n;
}

/* ---- JSON ---- */

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(round(v * 10000) / 10000) : json_null();
}

/* One compared key as JSON; new reference. */
static json_t *row_json(const struct nw_cmp_row *r)
{
	json_t *x = json_object();
	json_object_set_new(x, "op", json_string(r->op));
	json_object_set_new(x, "dtype", json_string(r->dtype));
	json_object_set_new(x, "redop", json_string(r->redop));
	json_object_set_new(x, "root", json_integer(r->root));
	json_object_set_new(x, "inplace", json_boolean(r->inplace));
	json_object_set_new(x, "size_bytes", json_integer((json_int_t)r->size));
	json_object_set_new(x, "repeats_a", json_integer(r->na));
	json_object_set_new(x, "repeats_b", json_integer(r->nb));
	json_object_set_new(x, "busbw_a_gbs", r->na ? num_or_null(r->busbw_a) : json_null());
	json_object_set_new(x, "busbw_b_gbs", r->nb ? num_or_null(r->busbw_b) : json_null());
	json_object_set_new(x, "time_a_us", r->na ? num_or_null(r->time_a) : json_null());
	json_object_set_new(x, "time_b_us", r->nb ? num_or_null(r->time_b) : json_null());
	json_object_set_new(x, "compared_on", json_string(r->by_time ? "time" : "busbw"));
	json_object_set_new(x, "change", num_or_null(r->change));
	json_object_set_new(x, "tolerance", num_or_null(r->threshold));
	json_object_set_new(x, "tolerance_from",
	                    json_string(r->from_noise ? "noise" : r->from_iters ? "per_iter"
	                                : r->from_repeats ? "repeats" : "option"));
	json_object_set_new(x, "within_noise", json_boolean(r->within_noise));
	json_object_set_new(x, "alone", json_boolean(r->alone));
	json_object_set_new(x, "verdict", json_string(nw_cmp_verdict_name(r->verdict)));
	return x;
}

json_t *nw_cmp_to_json(const struct nw_cmp *c, const struct nw_cmp_opts *o, const char *label_a,
                       const char *label_b)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.compare/1"));
	json_object_set_new(doc, "a", json_string(label_a));
	json_object_set_new(doc, "b", json_string(label_b));
	json_object_set_new(doc, "options",
	                    json_pack("{s:f,s:f,s:I,s:I}", "tolerance", o->tolerance, "latency_tolerance",
	                              o->lat_tolerance, "latency_below_bytes", (json_int_t)o->lat_below,
	                              "min_size_bytes", (json_int_t)o->min_size));
	json_object_set_new(json_object_get(doc, "options"), "noise_floor_us", json_real(o->noise_floor_us));
	json_t *rows = json_array();
	for (size_t i = 0; i < c->nrows; i++) {
		json_array_append_new(rows, row_json(&c->rows[i]));
	}
	json_object_set_new(doc, "rows", rows);
	json_t *bands = json_array();
	for (size_t i = 0; i < c->nbands; i++) {
		const struct nw_cmp_band *b = &c->bands[i];
		json_array_append_new(bands,
		                      json_pack("{s:s,s:s,s:s,s:b,s:I,s:I,s:i,s:o,s:o,s:I,s:s,s:s}", "op", b->op, "dtype",
		                                b->dtype, "redop", b->redop, "inplace", b->inplace, "from_bytes",
		                                (json_int_t)b->from, "to_bytes", (json_int_t)b->to, "sizes", b->nsizes,
		                                "mean_change", num_or_null(b->mean_change), "worst_change",
		                                num_or_null(b->worst_change), "worst_size_bytes", (json_int_t)b->worst_size,
		                                "compared_on", b->by_time ? "time" : "busbw", "verdict",
		                                nw_cmp_verdict_name(b->verdict)));
	}
	json_object_set_new(doc, "bands", bands);
	json_t *diffs = json_array();
	for (size_t i = 0; i < c->ndiffs; i++) {
		const struct nw_fp_diff *d = &c->diffs[i];
		json_array_append_new(diffs, json_pack("{s:i,s:s,s:s,s:s,s:s,s:b}", "rank", d->rank, "field",
		                                       d->field, "a", d->a, "b", d->b, "text", d->text, "per_launch",
		                                       d->ignored));
	}
	json_object_set_new(doc, "differences", diffs);
	json_object_set_new(doc, "attribution", json_string(c->attribution));
	json_object_set_new(doc, "comparable", json_boolean(!c->not_comparable[0]));
	if (c->not_comparable[0])
		json_object_set_new(doc, "not_comparable", json_string(c->not_comparable));
	json_object_set_new(doc, "summary", json_pack("{s:i,s:i,s:i,s:i}", "slower", c->nslower, "faster",
	                                              c->nfaster, "same", c->nsame, "unmatched", c->nonly));
	json_object_set_new(doc, "regression", json_boolean(nw_cmp_regressed(c)));
	return doc;
}
