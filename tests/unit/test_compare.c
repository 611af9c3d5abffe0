/* SPDX-License-Identifier: Apache-2.0 */
/* compare: verdicts that respect noise, size bands, and fingerprint attribution. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/result.h"
#include "store/compare.h"
#include "util/util.h"

/* all_reduce out-of-place rows of the reference run (nccl-tests 2.19.6, 2 x H200). */
static const struct {
	uint64_t size;
	double time_us;
} ref[] = {
	{ 8, 11.81 }, { 1024, 12.08 }, { 65536, 11.97 }, { 524288, 14.09 }, { 1048576, 15.11 },
	{ 4194304, 35.62 }, { 16777216, 78.52 }, { 67108864, 259.11 }, { 134217728, 475.58 },
	{ 268435456, 895.79 }, { 1073741824, 3305.38 }, { 4294967296ULL, 12644.1 },
};

static void add(struct nw_run *run, const char *op, uint64_t size, double t, int inplace)
{
	struct nw_row r;
	memset(&r, 0, sizeof(r));
	nw_strlcpy(r.op, op, sizeof(r.op));
	nw_strlcpy(r.dtype, "float", sizeof(r.dtype));
	nw_strlcpy(r.redop, "sum", sizeof(r.redop));
	r.root = -1;
	r.size_bytes = size;
	r.count = size / 4;
	r.nranks = 2;
	r.inplace = inplace;
	r.time_us = t;
	r.wrong = 0;
	nw_row_compute_bw(&r);
	nw_run_add(run, &r);
}

/* The reference rows; sizes in [lo, hi] take `factor` times as long. */
static void make(struct nw_run *run, uint64_t lo, uint64_t hi, double factor)
{
	nw_run_init(run);
	nw_strlcpy(run->h.nccl_version, "2.28.9", sizeof(run->h.nccl_version));
	nw_strlcpy(run->h.gpus, "2 x NVIDIA H200", sizeof(run->h.gpus));
	nw_strlcpy(run->h.host, "vm", sizeof(run->h.host));
	run->h.nranks = 2;
	for (size_t i = 0; i < NW_ARRAY_LEN(ref); i++) {
		double f = ref[i].size >= lo && ref[i].size <= hi ? factor : 1;
		add(run, "all_reduce", ref[i].size, ref[i].time_us * f, 0);
	}
}

static struct nw_cmp_opts defaults(void)
{
	struct nw_cmp_opts o;
	nw_cmp_opts_default(&o);
	return o;
}

static void identical_runs(void **state)
{
	(void)state;
	struct nw_run a, b;
	make(&a, 0, 0, 1);
	make(&b, 0, 0, 1);
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_int_equal(c.nrows, NW_ARRAY_LEN(ref));
	assert_int_equal(c.nsame, NW_ARRAY_LEN(ref));
	assert_int_equal(c.nbands, 0);
	assert_false(nw_cmp_regressed(&c));
	assert_non_null(strstr(c.attribution, "no recorded difference"));
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* A 20% busbw drop from 64M to 256M is one band, exactly there, and nothing else. */
static void planted_band(void **state)
{
	(void)state;
	struct nw_run a, b;
	make(&a, 0, 0, 1);
	make(&b, 64ULL << 20, 256ULL << 20, 1 / 0.8);
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_true(nw_cmp_regressed(&c));
	assert_int_equal(c.nslower, 3);
	assert_int_equal(c.nfaster, 0);
	assert_int_equal(c.nbands, 1);
	assert_int_equal(c.bands[0].from, 64ULL << 20);
	assert_int_equal(c.bands[0].to, 256ULL << 20);
	assert_int_equal(c.bands[0].nsizes, 3);
	assert_true(c.bands[0].mean_change > -0.2001 && c.bands[0].mean_change < -0.1999);
	assert_int_equal(c.bands[0].verdict, NW_V_SLOWER);
	/* the other way round it is faster, and not a regression */
	nw_cmp_release(&c);
	assert_int_equal(nw_compare(&b, &a, &o, &c, NULL, 0), 0);
	assert_false(nw_cmp_regressed(&c));
	assert_int_equal(c.nfaster, 3);
	nw_cmp_release(&c);
	/* --min-size above the band leaves nothing slower */
	o.min_size = 512ULL << 20;
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(nw_cmp_regressed(&c));
	assert_int_equal(c.nrows, 2);
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* Below 1M sizes are judged on time with the looser tolerance. */
static void latency_band(void **state)
{
	(void)state;
	struct nw_run a, b;
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	make(&a, 0, 0, 1);
	make(&b, 0, 512 << 10, 1.15); /* 15% longer: within 20% */
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(nw_cmp_regressed(&c));
	assert_true(c.rows[0].by_time);
	assert_false(c.rows[4].by_time);
	nw_cmp_release(&c);
	nw_run_release(&b);
	make(&b, 0, 512 << 10, 1.30); /* 30% longer */
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_true(nw_cmp_regressed(&c));
	assert_int_equal(c.nslower, 4);
	assert_int_equal(c.nbands, 1);
	assert_true(c.bands[0].by_time);
	assert_int_equal(c.bands[0].from, 8);
	assert_int_equal(c.bands[0].to, 512 << 10);
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* With repeats, their spread is the tolerance, not the stated 5%. */
static void repeats_spread(void **state)
{
	(void)state;
	struct nw_run a, b;
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	nw_run_init(&a);
	nw_run_init(&b);
	/* A repeats 256M three times, 10% apart; B is 8% below A's mean. */
	add(&a, "all_reduce", 256ULL << 20, 895.79, 0);
	add(&a, "all_reduce", 256ULL << 20, 895.79 * 1.10, 0);
	add(&a, "all_reduce", 256ULL << 20, 895.79 * 1.05, 0);
	add(&b, "all_reduce", 256ULL << 20, 895.79 * 3 / (1 + 1 / 1.10 + 1 / 1.05) / 0.92, 0);
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_int_equal(c.nrows, 1);
	assert_int_equal(c.rows[0].na, 3);
	assert_true(c.rows[0].from_repeats);
	assert_true(c.rows[0].change < -0.07 && c.rows[0].change > -0.09);
	assert_int_equal(c.rows[0].verdict, NW_V_SAME); /* inside the 9.5% spread */
	nw_cmp_release(&c);
	/* without the repeats the same change is beyond 5% */
	a.nrows = 1;
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(c.rows[0].from_repeats);
	assert_int_equal(c.rows[0].verdict, NW_V_SLOWER);
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* Give a run's last row 20 per-iteration times around its time, +-spread (alternating). */
static void add_iters(struct nw_run *run, double spread)
{
	struct nw_row *r = &run->rows[run->nrows - 1];
	r->niter = 20;
	r->iter_us = calloc(20, sizeof(double));
	for (int i = 0; i < 20; i++)
		r->iter_us[i] = r->time_us * (1 + (i % 2 ? spread : -spread));
}

/* With per-iteration times on both sides, a change inside one iteration's spread is noise. */
static void iter_spread(void **state)
{
	(void)state;
	struct nw_run a, b;
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	nw_run_init(&a);
	nw_run_init(&b);
	/* 256M: iterations +-12% around the mean (cv 12%); B 8% slower */
	add(&a, "all_reduce", 256ULL << 20, 895.79, 0);
	add_iters(&a, 0.12);
	add(&b, "all_reduce", 256ULL << 20, 895.79 / 0.92, 0);
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(c.rows[0].from_iters); /* B has no per-iteration times: the 5% tolerance */
	assert_int_equal(c.rows[0].verdict, NW_V_SLOWER);
	nw_cmp_release(&c);
	add_iters(&b, 0.10);
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_true(c.rows[0].from_iters && c.rows[0].within_noise);
	assert_true(c.rows[0].threshold > 0.119 && c.rows[0].threshold < 0.121);
	assert_int_equal(c.rows[0].verdict, NW_V_SAME);
	nw_cmp_release(&c);
	nw_run_release(&b);
	/* 30% slower is beyond a 12% spread */
	nw_run_init(&b);
	add(&b, "all_reduce", 256ULL << 20, 895.79 / 0.70, 0);
	add_iters(&b, 0.02);
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_int_equal(c.rows[0].verdict, NW_V_SLOWER);
	nw_cmp_release(&c);
	/* a steady machine (cv 1%) keeps the stated tolerance, not a smaller one */
	nw_run_release(&a);
	nw_run_init(&a);
	add(&a, "all_reduce", 256ULL << 20, 895.79, 0);
	add_iters(&a, 0.01);
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(c.rows[0].from_iters);
	assert_true(c.rows[0].threshold > 0.049 && c.rows[0].threshold < 0.051);
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/*
 * bench's measured noise (the spread of a size's three batches) is the
 * threshold where it is larger than the stated one, and it survives the
 * results JSON.
 */
static void batch_noise(void **state)
{
	(void)state;
	struct nw_run a, b, back;
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	nw_run_init(&a);
	nw_run_init(&b);
	add(&a, "all_reduce", 8192, 10.0, 0);
	add(&b, "all_reduce", 8192, 15.0, 0); /* 50% longer: -33% */
	a.rows[0].noise = 0.10;
	b.rows[0].noise = 0.45;
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_true(c.rows[0].from_noise && c.rows[0].within_noise);
	assert_true(c.rows[0].threshold > 0.449 && c.rows[0].threshold < 0.451);
	assert_int_equal(c.rows[0].verdict, NW_V_SAME);
	json_t *j = nw_cmp_to_json(&c, &o, "A", "B");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "rows"), 0),
	                                                      "tolerance_from")), "noise");
	json_decref(j);
	nw_cmp_release(&c);
	/* a quiet B: the stated 20% stands, and a lone size with nothing around it still counts */
	b.rows[0].noise = 0.05;
	assert_int_equal(nw_compare(&a, &b, &o, &c, NULL, 0), 0);
	assert_false(c.rows[0].from_noise);
	assert_int_equal(c.rows[0].verdict, NW_V_SLOWER);
	nw_cmp_release(&c);
	/* the results JSON keeps it (and leaves it out when not measured) */
	json_t *doc = nw_run_to_json(&b, 0);
	assert_true(json_real_value(json_object_get(json_array_get(json_object_get(doc, "results"), 0), "noise")) == 0.05);
	char err[128];
	assert_int_equal(nw_run_from_json(doc, &back, err, sizeof(err)), 0);
	assert_true(back.rows[0].noise == 0.05);
	json_decref(doc);
	nw_run_release(&back);
	a.rows[0].noise = 0;
	doc = nw_run_to_json(&a, 0);
	assert_null(json_object_get(json_array_get(json_object_get(doc, "results"), 0), "noise"));
	json_decref(doc);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* B of the reference with the sizes of [lo, hi] `factor` times as long; the verdicts of A vs it. */
static int slower_sizes(struct nw_cmp *c, uint64_t lo, uint64_t hi, double factor)
{
	struct nw_run a, b;
	struct nw_cmp_opts o = defaults();
	make(&a, 0, 0, 1);
	make(&b, lo, hi, factor);
	assert_int_equal(nw_compare(&a, &b, &o, c, NULL, 0), 0);
	nw_run_release(&a);
	nw_run_release(&b);
	return c->nslower;
}

/*
 * One or a few sizes changed among unchanged neighbours count only well
 * beyond their threshold (2 / sqrt(k) times it, for k sizes), and a lone
 * latency-bound size not at all, so that a busy host's one-off does not
 * read as a regression; a band of sizes, or one large size well beyond the
 * stated 5%, still do.
 */
static void alone_among_neighbours(void **state)
{
	(void)state;
	struct nw_cmp c;
	/* 512K 30% longer (-23%, beyond 20% but not twice it): alone, same */
	assert_int_equal(slower_sizes(&c, 512 << 10, 512 << 10, 1.30), 0);
	assert_true(c.rows[3].alone);
	assert_int_equal(c.rows[3].verdict, NW_V_SAME);
	assert_false(nw_cmp_regressed(&c));
	assert_int_equal(c.nbands, 0);
	json_t *j = nw_cmp_to_json(&c, &(struct nw_cmp_opts){ 0 }, "A", "B");
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(j, "rows"), 3), "alone")));
	json_decref(j);
	nw_cmp_release(&c);
	/* even ten times as long: one latency-bound size alone never counts (a busy host does that) */
	assert_int_equal(slower_sizes(&c, 512 << 10, 512 << 10, 10.0), 0);
	assert_true(c.rows[3].alone);
	nw_cmp_release(&c);
	/* a bandwidth-bound size twice as long (-50%, 10 times 5%) counts */
	assert_int_equal(slower_sizes(&c, 4 << 20, 4 << 20, 2.0), 1);
	assert_false(c.rows[5].alone);
	nw_cmp_release(&c);
	/* two neighbours 30% longer: 1.15 times their threshold, below 1.41: alone */
	assert_int_equal(slower_sizes(&c, 64 << 10, 512 << 10, 1.30), 0);
	assert_true(c.rows[2].alone && c.rows[3].alone);
	nw_cmp_release(&c);
	/* three 35% longer (1.30 times, above 1.15): a band */
	assert_int_equal(slower_sizes(&c, 1024, 512 << 10, 1.35), 3);
	assert_int_equal(c.nbands, 1);
	nw_cmp_release(&c);
	/* the planted slowdowns: 20% at every size from 1M, and at 64M alone (4 times the 5%) */
	assert_int_equal(slower_sizes(&c, 1 << 20, UINT64_MAX, 1 / 0.8), 8);
	assert_true(nw_cmp_regressed(&c));
	nw_cmp_release(&c);
	assert_int_equal(slower_sizes(&c, 64ULL << 20, 64ULL << 20, 1 / 0.8), 1);
	assert_int_equal(c.rows[7].verdict, NW_V_SLOWER);
	assert_false(c.rows[7].alone);
	nw_cmp_release(&c);
	/* but 8% at 64M alone (1.6 times 5%) is alone */
	assert_int_equal(slower_sizes(&c, 64ULL << 20, 64ULL << 20, 1 / 0.92), 0);
	assert_true(c.rows[7].alone);
	nw_cmp_release(&c);
}

/* Sizes in only one run are listed, not judged; no shared size is an error. */
static void unmatched(void **state)
{
	(void)state;
	struct nw_run a, b;
	struct nw_cmp c;
	struct nw_cmp_opts o = defaults();
	char err[NW_ERRLEN];
	make(&a, 0, 0, 1);
	nw_run_init(&b);
	add(&b, "all_reduce", 8, 11.81, 0);
	add(&b, "all_reduce", 3, 1, 0);
	add(&b, "all_gather", 1024, 100, 0);
	assert_int_equal(nw_compare(&a, &b, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nsame, 1);
	assert_int_equal(c.nonly, NW_ARRAY_LEN(ref) - 1 + 2);
	assert_false(nw_cmp_regressed(&c));
	nw_cmp_release(&c);
	nw_run_release(&b);
	nw_run_init(&b);
	add(&b, "broadcast", 1024, 10, 0);
	assert_int_equal(nw_compare(&a, &b, &o, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no measurement"));
	nw_run_release(&a);
	nw_run_release(&b);
}

static void set_fp(struct nw_run *run, const char *env_json, const char *topo_hash)
{
	json_t *fp = json_object();
	json_object_set_new(fp, "env", json_loads(env_json, 0, NULL));
	if (topo_hash)
		json_object_set_new(fp, "topology_hash", json_string(topo_hash));
	run->h.extra = json_object();
	json_object_set_new(run->h.extra, "fingerprint", fp);
}

/* Ranked by the documented table; per-launch identifiers never a cause; plain words. */
static void attribution(void **state)
{
	(void)state;
	struct nw_run a, b;
	make(&a, 0, 0, 1);
	make(&b, 0, 0, 1);
	nw_strlcpy(a.h.nccl_version, "2.21.5", sizeof(a.h.nccl_version));
	nw_strlcpy(a.h.driver, "570.86.15", sizeof(a.h.driver));
	nw_strlcpy(b.h.driver, "580.159.04", sizeof(b.h.driver));
	set_fp(&a, "{\"NCCL_NVLS_ENABLE\":\"0\",\"NCCL_ALGO\":\"Ring\",\"RANK\":\"0\",\"SLURM_JOB_ID\":\"11\",\"OMPI_MCA_orte_hnp_uri\":\"1.0;tcp://a:1\"}", "ab12");
	set_fp(&b, "{\"NCCL_NVLS_ENABLE\":\"0\",\"NCCL_PROTO\":\"Simple\",\"RANK\":\"1\",\"SLURM_JOB_ID\":\"12\",\"OMPI_MCA_orte_hnp_uri\":\"2.0;tcp://a:2\"}", "ab12");
	struct nw_fp_diff *d;
	size_t n;
	char line[1024];
	nw_fingerprint_diff(&a, &b, &d, &n, line, sizeof(line));
	/* ranked by the table: NCCL, driver, NCCL_*; the per-launch ids last, each kept but ignored */
	assert_int_equal(n, 7);
	assert_string_equal(d[0].text, "NCCL 2.21.5 -> 2.28.9");
	assert_string_equal(d[1].text, "driver 570.86.15 -> 580.159.04");
	assert_string_equal(d[2].field, "env.NCCL_ALGO");
	assert_string_equal(d[2].text, "NCCL_ALGO=Ring in A, unset in B");
	assert_string_equal(d[3].text, "NCCL_PROTO=Simple set in B");
	for (size_t i = 0; i < 4; i++)
		assert_false(d[i].ignored);
	assert_string_equal(d[4].field, "env.OMPI_MCA_orte_hnp_uri"); /* mpirun's own, per launch */
	assert_string_equal(d[5].field, "env.RANK");
	assert_string_equal(d[6].field, "env.SLURM_JOB_ID");
	for (size_t i = 4; i < 7; i++)
		assert_true(d[i].ignored);
	assert_string_equal(line, "NCCL 2.21.5 -> 2.28.9; driver 570.86.15 -> 580.159.04; NCCL_ALGO=Ring in A, unset in B; "
	                          "and 1 more; same GPUs and links");
	free(d);
	/* a topology change is named; unknown fields on one side are not differences */
	json_object_set_new(json_object_get(b.h.extra, "fingerprint"), "topology_hash", json_string("cd34"));
	b.h.driver[0] = '\0';
	nw_fingerprint_diff(&a, &b, &d, &n, line, sizeof(line));
	assert_int_equal(n, 7);
	assert_string_equal(d[1].text, "topology changed (hash ab12 -> cd34)");
	assert_non_null(strstr(line, "; same GPUs"));
	assert_null(strstr(line, "links"));
	free(d);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* Changes beyond 2x read as ratios; small ones as percentages of the baseline. */
static void change_text(void **state)
{
	(void)state;
	char b[32];
	nw_cmp_format_change(b, sizeof(b), -0.2);
	assert_string_equal(b, "-20.0%");
	nw_cmp_format_change(b, sizeof(b), 0.5);
	assert_string_equal(b, "+50.0%");
	nw_cmp_format_change(b, sizeof(b), 2.0 / 20000 - 1); /* 2 us -> 20 ms */
	assert_string_equal(b, "10000x slower");
	nw_cmp_format_change(b, sizeof(b), 2.2);
	assert_string_equal(b, "3.2x faster");
	nw_cmp_format_change(b, sizeof(b), NAN);
	assert_string_equal(b, "-");
}

/* A time difference under the floor is noise, however large in percent. */
static void noise_floor(void **state)
{
	(void)state;
	struct nw_run a, b;
	struct nw_cmp c;
	char err[256];
	struct nw_cmp_opts o = defaults();
	nw_run_init(&a);
	nw_run_init(&b);
	add(&a, "all_reduce", 8, 0.5, 0);
	add(&b, "all_reduce", 8, 1.5, 0); /* 3x, but 1 us */
	assert_int_equal(nw_compare(&a, &b, &o, &c, err, sizeof(err)), 0);
	assert_true(c.rows[0].within_noise);
	assert_int_equal(c.rows[0].verdict, NW_V_SAME);
	nw_cmp_release(&c);
	o.noise_floor_us = 0;
	assert_int_equal(nw_compare(&a, &b, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.rows[0].verdict, NW_V_SLOWER);
	nw_cmp_release(&c);
	nw_run_release(&a);
	nw_run_release(&b);
}

/* Backend kind, GPU model, rank count and op set make runs incomparable. */
static void incomparable(void **state)
{
	(void)state;
	struct nw_run a, b;
	char why[256];
	make(&a, 0, 0, 1);
	make(&b, 0, 0, 1);
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 0);
	nw_strlcpy(b.h.gpus, "4 x NVIDIA H200", sizeof(b.h.gpus)); /* count alone: comparable */
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 0);
	nw_strlcpy(b.h.gpus, "2 x NVIDIA A100-SXM4-80GB", sizeof(b.h.gpus));
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 1);
	assert_string_equal(why, "GPU model NVIDIA H200 -> NVIDIA A100-SXM4-80GB");
	nw_strlcpy(b.h.gpus, a.h.gpus, sizeof(b.h.gpus));
	b.h.nranks = 8;
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 1);
	assert_string_equal(why, "2 ranks -> 8 ranks");
	b.h.nranks = 2;
	nw_strlcpy(b.h.backend, "mpi", sizeof(b.h.backend));
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "host memory"));
	b.h.backend[0] = '\0';
	add(&b, "all_gather", 1024, 10, 0);
	assert_int_equal(nw_cmp_incomparable(&a, &b, why, sizeof(why)), 1);
	assert_string_equal(why, "all_gather float measured only in B");
	nw_run_release(&a);
	nw_run_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identical_runs), cmocka_unit_test(planted_band), cmocka_unit_test(latency_band),
		cmocka_unit_test(repeats_spread), cmocka_unit_test(iter_spread), cmocka_unit_test(unmatched),    cmocka_unit_test(attribution),
		cmocka_unit_test(change_text),  cmocka_unit_test(noise_floor),  cmocka_unit_test(incomparable),
		cmocka_unit_test(batch_noise),  cmocka_unit_test(alone_among_neighbours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
