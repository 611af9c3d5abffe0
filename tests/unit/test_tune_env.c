/* SPDX-License-Identifier: Apache-2.0 */
/* tune variants, band scores, the recommendation and the env file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tune/tune.h"

#define OP(x) (1u << (x))

static int find(const struct nw_tune_variants *vs, const char *label)
{
	for (int i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].label, label))
			return i;
	return -1;
}

static void variants_per_op(void **state)
{
	(void)state;
	struct nw_tune_variants vs;
	char err[256];
	nw_tune_variants_init(&vs);
	assert_int_equal(nw_tune_variants_build(&vs, NW_TG_ALL, OP(NW_ALL_REDUCE), 0, NULL, 0, err, sizeof(err)), 0);
	assert_string_equal(vs.v[0].label, "default");
	assert_int_equal(vs.v[0].nset, 0);
	assert_true(find(&vs, "NCCL_ALGO=Tree") > 0);
	assert_true(find(&vs, "NCCL_ALGO=Ring") > 0);
	assert_int_equal(find(&vs, "NCCL_ALGO=PAT"), -1);  /* all_gather/reduce_scatter only */
	assert_int_equal(find(&vs, "NCCL_ALGO=NVLS"), -1); /* NCCL_NVLS_ENABLE=0 */
	assert_true(find(&vs, "NCCL_PROTO=LL128") > 0);
	assert_true(find(&vs, "NCCL_BUFFSIZE=16777216") > 0);
	nw_tune_variants_release(&vs);

	/* send/recv: no algorithm variants at all. */
	nw_tune_variants_init(&vs);
	assert_int_equal(nw_tune_variants_build(&vs, NW_TG_ALL, OP(NW_SENDRECV), 1, NULL, 0, err, sizeof(err)), 0);
	for (int i = 0; i < vs.n; i++)
		assert_null(strstr(vs.v[i].label, "NCCL_ALGO"));
	assert_true(find(&vs, "NCCL_PROTO=LL") > 0);
	nw_tune_variants_release(&vs);

	/* all_gather with NVLS allowed: PAT and NVLS, masked to the op. */
	nw_tune_variants_init(&vs);
	assert_int_equal(nw_tune_variants_build(&vs, NW_TG_ALGO, OP(NW_ALL_GATHER) | OP(NW_SENDRECV), 1, NULL, 0,
	                                        err, sizeof(err)), 0);
	int pat = find(&vs, "NCCL_ALGO=PAT");
	assert_true(pat > 0);
	assert_int_equal(vs.v[pat].opmask, OP(NW_ALL_GATHER));
	assert_true(find(&vs, "NCCL_ALGO=NVLS") > 0);
	assert_int_equal(find(&vs, "NCCL_ALGO=Tree"), -1);
	assert_int_equal(find(&vs, "NCCL_PROTO=LL"), -1); /* group not asked for */
	nw_tune_variants_release(&vs);
}

static void variants_user_vars(void **state)
{
	(void)state;
	struct nw_tune_variants vs;
	char err[256];
	char *vars[] = { "NCCL_PROTO=LL,Simple", "MY_KNOB=a,b" };
	nw_tune_variants_init(&vs);
	assert_int_equal(nw_tune_variants_build(&vs, NW_TG_PROTO, OP(NW_ALL_REDUCE), 0, vars, 2, err, sizeof(err)), 0);
	assert_string_equal(vs.v[1].label, "NCCL_PROTO=LL");
	assert_string_equal(vs.v[2].label, "NCCL_PROTO=Simple");
	assert_string_equal(vs.v[3].label, "MY_KNOB=a");
	assert_string_equal(vs.v[3].set[0].name, "MY_KNOB");
	assert_string_equal(vs.v[3].set[0].value, "a");
	/* default, 2 + 2 user values, and only LL128 from the group (no duplicates) */
	assert_int_equal(vs.n, 6);
	assert_true(find(&vs, "NCCL_PROTO=LL128") == 5);
	nw_tune_variants_release(&vs);

	const char *bad[] = { "NOEQUALS", "=x", "A B=1", "X=", "X=1,,2", "X=1,", "NCCL_NVLS_ENABLE=1", "1X=2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *one[] = { (char *)bad[i] };
		nw_tune_variants_init(&vs);
		err[0] = '\0';
		assert_int_equal(nw_tune_variants_build(&vs, 0, OP(NW_ALL_REDUCE), 0, one, 1, err, sizeof(err)), -1);
		assert_true(strlen(err) > 0);
		nw_tune_variants_release(&vs);
	}
}

static void groups(void **state)
{
	(void)state;
	unsigned m;
	char err[256];
	assert_int_equal(nw_tune_groups_parse("proto,algo", &m, err, sizeof(err)), 0);
	assert_int_equal(m, NW_TG_PROTO | NW_TG_ALGO);
	assert_int_equal(nw_tune_groups_parse("all", &m, err, sizeof(err)), 0);
	assert_int_equal(m, NW_TG_ALL);
	assert_int_equal(nw_tune_groups_parse("none", &m, err, sizeof(err)), 0);
	assert_int_equal(m, 0);
	assert_int_equal(nw_tune_groups_parse("proto,speed", &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'speed'"));
	assert_int_equal(nw_tune_groups_parse("", &m, err, sizeof(err)), -1);
}

static void add_row(struct nw_run *run, const char *op, uint64_t size, int inplace, double t)
{
	struct nw_row r;
	memset(&r, 0, sizeof(r));
	snprintf(r.op, sizeof(r.op), "%s", op);
	snprintf(r.dtype, sizeof(r.dtype), "float");
	r.size_bytes = size;
	r.nranks = 2;
	r.inplace = inplace;
	r.time_us = t;
	nw_run_add(run, &r);
}

/* Times from the reference all_reduce run (nccl-tests 2.19.6 on 2 x H200). */
static void band_scores(void **state)
{
	(void)state;
	struct nw_tune_band bands[NW_TUNE_MAXBANDS];
	int nb = nw_tune_bands_parse(NULL, bands, NULL, 0);
	struct nw_tune_data d;
	nw_tune_data_init(&d, 2, bands, nb);
	struct nw_run run;
	nw_run_init(&run);
	add_row(&run, "all_reduce", 8, 0, 11.81);
	add_row(&run, "all_reduce", 8, 1, 11.43);
	add_row(&run, "all_reduce", 1024, 0, 12.0);
	add_row(&run, "all_reduce", 4294967296ULL, 0, 12644.1);
	add_row(&run, "all_reduce", 4294967296ULL, 1, 12609.8);
	add_row(&run, "no_such_op", 8, 0, 1.0);  /* ignored */
	add_row(&run, "all_gather", 1024, 0, 0); /* no time: ignored */
	nw_tune_data_add_run(&d, 1, &run);
	const struct nw_tune_samples *s = nw_tune_data_at(&d, 1, NW_ALL_REDUCE, 0);
	assert_int_equal(s->n, 1);
	assert_true(fabs(s->x[0] - cbrt(11.81 * 11.43 * 12.0)) < 1e-9);
	assert_int_equal(nw_tune_data_at(&d, 1, NW_ALL_REDUCE, 1)->n, 0);
	s = nw_tune_data_at(&d, 1, NW_ALL_REDUCE, 2);
	assert_true(fabs(s->x[0] - sqrt(12644.1 * 12609.8)) < 1e-6);
	assert_int_equal(nw_tune_data_at(&d, 1, NW_ALL_GATHER, 0)->n, 0);
	assert_int_equal(nw_tune_data_at(&d, 0, NW_ALL_REDUCE, 0)->n, 0);
	nw_run_release(&run);
	nw_tune_data_release(&d);
}

/* Fills (variant, all_reduce, band) with n samples of base * (1 + small wiggle). */
static void fill(struct nw_tune_data *d, int v, int band, double base, int n)
{
	for (int i = 0; i < n; i++) {
		struct nw_tune_samples *s = nw_tune_data_at(d, v, NW_ALL_REDUCE, band);
		s->x = realloc(s->x, (size_t)(s->n + 1) * sizeof(double));
		s->cap = s->n + 1;
		s->x[s->n++] = base * (1 + 0.002 * (i % 3));
	}
}

struct fixture {
	struct nw_tune_variants vs;
	struct nw_tune_data d;
	struct nw_tune_cmp *cmps;
	struct nw_tune_cell cells[NW_NOPS * NW_TUNE_MAXBANDS];
	int ncells;
};

/*
 * default; LL: 30% faster small, 40% slower large; BUFFSIZE: 20% faster
 * large, same elsewhere; LL128: faster small but failed; Simple: 25% faster
 * small, same elsewhere.
 */
static void setup_fixture(struct fixture *f, int with_winners)
{
	struct nw_tune_band bands[NW_TUNE_MAXBANDS];
	int nb = nw_tune_bands_parse(NULL, bands, NULL, 0);
	nw_tune_variants_init(&f->vs);
	nw_tune_variants_add(&f->vs, "default", NULL, NULL, OP(NW_ALL_REDUCE));
	nw_tune_variants_add(&f->vs, NULL, "NCCL_PROTO", "LL", OP(NW_ALL_REDUCE));
	nw_tune_variants_add(&f->vs, NULL, "NCCL_BUFFSIZE", "16777216", OP(NW_ALL_REDUCE));
	nw_tune_variants_add(&f->vs, NULL, "NCCL_PROTO", "LL128", OP(NW_ALL_REDUCE))->status = NW_TV_FAILED;
	nw_tune_variants_add(&f->vs, NULL, "NCCL_PROTO", "Simple", OP(NW_ALL_REDUCE));
	nw_tune_data_init(&f->d, f->vs.n, bands, nb);
	for (int b = 0; b < 3; b++)
		fill(&f->d, 0, b, 100, 5);
	fill(&f->d, 1, 0, 70, 5);
	fill(&f->d, 1, 1, 100, 5);
	fill(&f->d, 1, 2, 140, 5);
	fill(&f->d, 2, 0, 100, 5);
	fill(&f->d, 2, 1, 100, 5);
	fill(&f->d, 2, 2, with_winners ? 80 : 100, 5);
	fill(&f->d, 3, 0, 50, 5);
	fill(&f->d, 4, 0, with_winners ? 75 : 100, 5);
	fill(&f->d, 4, 1, 100, 5);
	fill(&f->d, 4, 2, 100, 5);
	f->cmps = calloc((size_t)f->vs.n * NW_NOPS * 3, sizeof(*f->cmps));
	f->ncells = nw_tune_analyze(&f->d, &f->vs, 0.02, f->cmps, f->cells);
}

static void teardown_fixture(struct fixture *f)
{
	free(f->cmps);
	nw_tune_data_release(&f->d);
	nw_tune_variants_release(&f->vs);
}

static void analyze_and_recommend(void **state)
{
	(void)state;
	struct fixture f;
	setup_fixture(&f, 1);
	assert_int_equal(f.ncells, 3);
	/* small: LL (+43%) beats Simple (+33%); the failed LL128 (+100%) never counts */
	assert_int_equal(f.cells[0].band, 0);
	assert_int_equal(f.cells[0].best, 1);
	assert_int_equal(f.cells[0].nbetter, 2);
	assert_int_equal(f.cells[1].best, -1);
	assert_int_equal(f.cells[2].best, 2);
	assert_int_equal(f.cells[2].nworse, 1);
	int also[8], nalso;
	/* LL is worse in large: out. Simple (+33% small) has a larger summed gain than BUFFSIZE (+25% large). */
	int rec = nw_tune_recommend(&f.d, &f.vs, f.cmps, also, &nalso);
	assert_int_equal(rec, 4);
	assert_int_equal(nalso, 1);
	assert_int_equal(also[0], 2);
	teardown_fixture(&f);
}

static char *env_text(struct fixture *f, int rec)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_int_equal(nw_tune_write_env(m, &f->d, &f->vs, f->cmps, rec, "2026-11-30T12:00:00Z", "node1", "2.28.9"), 0);
	fclose(m);
	return buf;
}

static void env_file_with_winner(void **state)
{
	(void)state;
	struct fixture f;
	setup_fixture(&f, 1);
	char *s = env_text(&f, 4);
	assert_non_null(strstr(s, "# NCCL settings measured by ncclwatch tune on node1, 2026-11-30T12:00:00Z (NCCL 2.28.9)\n"));
	assert_non_null(strstr(s, "#   all_reduce small (<64K): +33.3%"));
	assert_non_null(strstr(s, "\nexport NCCL_PROTO=Simple\n"));
	assert_null(strstr(s, "large"));
	/* every line is a comment or an export */
	for (char *line = s; *line; line = strchr(line, '\n') + 1)
		assert_true(line[0] == '#' || !strncmp(line, "export ", 7));
	free(s);
	teardown_fixture(&f);
}

static void env_file_defaults_best(void **state)
{
	(void)state;
	struct fixture f;
	setup_fixture(&f, 0);
	int also[8], nalso;
	assert_int_equal(nw_tune_recommend(&f.d, &f.vs, f.cmps, also, &nalso), -1);
	char *s = env_text(&f, -1);
	assert_non_null(strstr(s, "defaults are best here"));
	assert_null(strstr(s, "export"));
	free(s);
	teardown_fixture(&f);
}

static void env_file_quotes(void **state)
{
	(void)state;
	struct fixture f;
	setup_fixture(&f, 1);
	snprintf(f.vs.v[4].set[0].value, sizeof(f.vs.v[4].set[0].value), "a b'c");
	char *s = env_text(&f, 4);
	assert_non_null(strstr(s, "export NCCL_PROTO='a b'\\''c'\n"));
	free(s);
	teardown_fixture(&f);
}

static void split_words(void **state)
{
	(void)state;
	char **w = nw_tune_split_words("  mpirun -np\t2  --oversubscribe ");
	assert_string_equal(w[0], "mpirun");
	assert_string_equal(w[1], "-np");
	assert_string_equal(w[2], "2");
	assert_string_equal(w[3], "--oversubscribe");
	assert_null(w[4]);
	nw_tune_argv_free(w);
	w = nw_tune_split_words("");
	assert_null(w[0]);
	nw_tune_argv_free(w);
	nw_tune_argv_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(variants_per_op),
		cmocka_unit_test(variants_user_vars),
		cmocka_unit_test(groups),
		cmocka_unit_test(band_scores),
		cmocka_unit_test(analyze_and_recommend),
		cmocka_unit_test(env_file_with_winner),
		cmocka_unit_test(env_file_defaults_best),
		cmocka_unit_test(env_file_quotes),
		cmocka_unit_test(split_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
