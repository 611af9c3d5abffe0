/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exporter metrics and the top table from stats snapshots built in memory
 * (the layout of src/plugin/nwstats.h): counts, bytes, histograms, busbw,
 * lateness, stale handling, and live rates from two samples.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/metrics.h"
#include "export/promtext.h"
#include "export/sample.h"
#include "export/statsfile.h"
#include "export/view.h"
#include "util/util.h"

#define MB64 (UINT64_C(64) << 20)
#define T0 UINT64_C(1800000000000000000)

/* One rank of comm 0xabc: n all_reduce of 64 MB, each 400 us on the GPU,
 * arriving `late_ns` after t0 at every seq; 3 sends of 1 KB timed by proxy. */
static void mkrank(struct nw_sf_rank *r, int rank, int nranks, uint64_t n, uint64_t late_ns,
                   enum nw_sf_live live)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "/x/r%d.nws", rank);
	r->live = live;
	struct nws_header *h = &r->hdr;
	h->magic = NWS_MAGIC;
	h->pid = 1000 + rank;
	h->proc_start = 77;
	h->comm_hash = 0xabc;
	h->rank = rank;
	h->nranks = nranks;
	h->created_ns = T0;
	h->updated_ns = T0 + UINT64_C(2000000000); /* 2 s of life */
	snprintf(h->hostname, sizeof(h->hostname), "node\"1");
	snprintf(h->comm_name, sizeof(h->comm_name), "dp");
	h->busy_window_ns = 1000000000;
	h->busy_est_ns = 250000000;
	h->busy_kernel_ns = 200000000;
	h->busy_est_total_ns = 500000000;
	h->wall_total_ns = 2000000000;
	h->ops_dropped = 5;
	r->rec = nw_calloc(NWS_NOPS, sizeof(*r->rec));
	struct nws_record *rec = &r->rec[NWS_OP_ALL_REDUCE][nws_size_bucket(MB64)];
	rec->count = n;
	rec->bytes = n * MB64;
	struct nws_timing *t = &rec->t[NWS_SRC_KERNEL];
	t->count = n;
	t->bytes = n * MB64;
	t->sum_ns = n * 400000;
	t->hist[nws_time_bin(400000)] = n;
	struct nws_record *snd = &r->rec[NWS_OP_SEND][nws_size_bucket(1024)];
	snd->count = 3;
	snd->bytes = 3 * 1024;
	snd->t[NWS_SRC_PROXY].count = 3;
	snd->t[NWS_SRC_PROXY].bytes = 3 * 1024;
	snd->t[NWS_SRC_PROXY].sum_ns = 3 * 20000;
	snd->t[NWS_SRC_PROXY].hist[nws_time_bin(20000)] = 3;
	r->nring = n;
	r->ring = nw_calloc(n ? n : 1, sizeof(*r->ring));
	for (uint64_t i = 0; i < n; i++) {
		struct nws_opent *e = &r->ring[i];
		e->idx = i + 1;
		e->seq = i;
		e->flags = NWS_OPF_SEQ;
		e->op = NWS_OP_ALL_REDUCE;
		e->src = NWS_SRC_KERNEL;
		e->bytes = MB64;
		e->enq_ns = T0 + i * 1000000 + late_ns;
		e->start_ns = e->enq_ns + 10000;
		e->end_ns = e->start_ns + 400000;
	}
}

struct fx {
	struct nw_sf_set set;
	struct nw_sf_rank ranks[3];
};

static int setup(void **state)
{
	struct fx *f = nw_calloc(1, sizeof(*f));
	mkrank(&f->ranks[0], 0, 2, 10, 0, NW_SF_LIVE);
	mkrank(&f->ranks[1], 1, 2, 10, 1500000, NW_SF_LIVE); /* 1.5 ms late */
	mkrank(&f->ranks[2], 1, 2, 4, 0, NW_SF_STALE);        /* an old rank 1 */
	f->ranks[2].hdr.pid = 999;
	f->ranks[2].hdr.updated_ns = T0;
	f->set.ranks = f->ranks;
	f->set.n = 3;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 3; i++)
		nw_sf_rank_release(&f->ranks[i]);
	free(f);
	return 0;
}

static char *render_with(struct fx *f, int all, int hist, unsigned detail)
{
	struct nw_metrics m;
	nw_metrics_init(&m, "/x", all, 10);
	nw_strlcpy(m.node, "node\"1", sizeof(m.node)); /* a label value to escape */
	m.hist = hist;
	m.detail = detail;
	struct nw_sample now;
	nw_sample_take(&f->set, 100, &now);
	struct nw_prom p;
	nw_prom_init(&p);
	nw_metrics_write(&m, &f->set, &now, NULL, &p);
	nw_sample_release(&now);
	nw_metrics_release(&m);
	return nw_prom_take(&p, NULL);
}

/* Everything: the checks below read histograms, sizes and sources. */
static char *render(struct fx *f, int all)
{
	return render_with(f, all, NW_HIST_OP_SIZE, NW_DETAIL_SIZE | NW_DETAIL_SOURCE | NW_DETAIL_RANK);
}

#define LBL "Hostname=\"node\\\"1\",comm=\"0000000000000abc\""

static void counts_bytes_and_labels(void **state)
{
	struct fx *f = *state;
	char *s = render(f, 0);
	assert_non_null(strstr(s, "# TYPE ncclwatch_coll_ops_total counter\n"));
	assert_non_null(strstr(s, "ncclwatch_coll_ops_total{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\"} 10\n"));
	assert_non_null(strstr(s, "ncclwatch_coll_bytes_total{" LBL ",rank=\"1\",op=\"all_reduce\",size=\"64M\"} 671088640\n"));
	assert_non_null(strstr(s, "ncclwatch_coll_ops_total{" LBL ",rank=\"0\",op=\"send\",size=\"1K\"} 3\n"));
	/* the stale rank 1 is not exported next to the live one */
	assert_null(strstr(s, "pid=\"999\""));
	assert_non_null(strstr(s, "ncclwatch_plugin_ops_dropped_total{" LBL ",rank=\"0\"} 5\n"));
	assert_non_null(strstr(s, "ncclwatch_comm_busy_ratio{" LBL ",rank=\"0\"} 0.25\n"));
	assert_non_null(strstr(s, "ncclwatch_comm_busy_seconds_total{" LBL ",rank=\"0\"} 0.5\n"));
	free(s);
}

static void histogram_and_busbw(void **state)
{
	struct fx *f = *state;
	char *s = render(f, 0);
	const char *k = "ncclwatch_coll_duration_seconds_bucket{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\",source=\"kernel\",";
	char want[512];
	/* 400 us falls in [256, 512) us: below 0.000256 none, at 0.000512 all */
	snprintf(want, sizeof(want), "%sle=\"0.000256\"} 0\n", k);
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "%sle=\"0.000512\"} 10\n", k);
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "%sle=\"+Inf\"} 10\n", k);
	assert_non_null(strstr(s, want));
	assert_non_null(strstr(s, "ncclwatch_coll_duration_seconds_sum{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\",source=\"kernel\"} 0.004\n"));
	assert_non_null(strstr(s, "ncclwatch_coll_duration_seconds_count{" LBL ",rank=\"0\",op=\"send\",size=\"1K\",source=\"proxy\"} 3\n"));
	/* busbw = 64 MiB / 400 us x 2(n-1)/n (n = 2) = 167772160000 B/s */
	assert_non_null(strstr(s, "ncclwatch_coll_busbw_bytes_per_second{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\",nranks=\"2\"} 167772160000\n"));
	free(s);
}

static void lateness(void **state)
{
	struct fx *f = *state;
	char *s = render(f, 0);
	assert_non_null(strstr(s, "ncclwatch_rank_lateness_seconds{" LBL ",rank=\"1\",basis=\"kernel\"} 0.0015\n"));
	assert_non_null(strstr(s, "ncclwatch_rank_lateness_seconds{" LBL ",rank=\"0\",basis=\"kernel\"} 0\n"));
	assert_non_null(strstr(s, "ncclwatch_rank_last_arrival_ratio{" LBL ",rank=\"1\",basis=\"kernel\"} 1\n"));
	free(s);
}

static void each_family_once(void **state)
{
	struct fx *f = *state;
	char *s = render(f, 1);
	/* every TYPE line names a different family, and every name is valid */
	char seen[64][96];
	int n = 0;
	for (const char *line = s; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char name[96];
		if (sscanf(line, "# TYPE %95s", name) != 1)
			continue;
		assert_true(nw_prom_valid_name(name));
		for (int i = 0; i < n; i++)
			assert_string_not_equal(seen[i], name);
		assert_true(n < 64);
		nw_strlcpy(seen[n++], name, sizeof(seen[0]));
	}
	/* and docs/metrics.md documents each (tests run from the source tree) */
	char *doc = nw_read_file("docs/metrics.md", 1 << 20, NULL);
	assert_non_null(doc);
	for (int i = 0; i < n; i++) {
		char quoted[128 + 8];
		snprintf(quoted, sizeof(quoted), "`%.100s`", seen[i]);
		if (!strstr(doc, quoted))
			fail_msg("%s is not documented in docs/metrics.md", seen[i]);
	}
	free(doc);
	assert_true(n >= 10);
	free(s);
}

static void view_rows_and_straggler(void **state)
{
	struct fx *f = *state;
	struct nw_sample now;
	nw_sample_take(&f->set, 100, &now);
	struct nw_view_opts o = { .sort = NW_VIEW_SORT_COMM, .op = "all_reduce", .comm = NULL, .all = 0 };
	struct nw_view v;
	nw_view_build(&f->set, &now, NULL, &o, &v);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.nstale, 1);
	assert_int_equal(v.nhidden, 1);
	assert_int_equal(v.rows[0].rank, 0);
	assert_int_equal(v.rows[0].calls, 10);
	assert_int_equal(v.rows[0].bytes, 10 * MB64);
	assert_float_equal(v.rows[0].calls_per_s, 5.0, 1e-9); /* 10 over 2 s of life */
	assert_float_equal(v.rows[0].busbw_gbs, 167.77216, 1e-6);
	/* p50 interpolated inside [256, 512) us: 256 + 256 * 0.5 */
	assert_float_equal(v.rows[0].p50_us, 384, 1e-9);
	assert_int_equal(v.rows[0].src, NWS_SRC_KERNEL);
	assert_float_equal(v.rows[0].busy, 0.25, 1e-12);
	assert_false(v.rows[0].straggler);
	assert_true(v.rows[1].straggler);
	assert_float_equal(v.rows[1].late_us, 1500, 1e-9);
	char line[NW_VIEW_LINE];
	nw_view_format_row(line, sizeof(line), &v.rows[1]);
	assert_non_null(strstr(line, " 1* "));
	assert_non_null(strstr(line, " 671088640 "));
	nw_view_format_row_compact(line, sizeof(line), &v.rows[1]);
	assert_true(strlen(line) <= 96);
	assert_non_null(strstr(line, "00000000    1* all_reduce "));
	assert_non_null(strstr(line, " 167.77 "));
	assert_non_null(strstr(line, " 1.50ms"));
	nw_view_release(&v);

	/* --all shows the stale rank; sort by busbw puts untimed last */
	o.all = 1;
	o.op = NULL;
	o.sort = NW_VIEW_SORT_BUSBW;
	nw_view_build(&f->set, &now, NULL, &o, &v);
	assert_int_equal(v.n, 6);
	assert_int_equal(v.rows[0].op, NWS_OP_ALL_REDUCE);
	int stale = 0;
	for (size_t i = 0; i < v.n; i++)
		stale += v.rows[i].live == NW_SF_STALE;
	assert_int_equal(stale, 2);
	nw_view_release(&v);
	nw_sample_release(&now);
}

static void live_rates_from_two_samples(void **state)
{
	struct fx *f = *state;
	struct nw_sample before, now;
	nw_sample_take(&f->set, 100, &before);
	/* 20 more all_reduce on rank 0, each 800 us */
	struct nws_record *rec = &f->ranks[0].rec[NWS_OP_ALL_REDUCE][nws_size_bucket(MB64)];
	rec->count += 20;
	rec->bytes += 20 * MB64;
	rec->t[NWS_SRC_KERNEL].count += 20;
	rec->t[NWS_SRC_KERNEL].bytes += 20 * MB64;
	rec->t[NWS_SRC_KERNEL].sum_ns += 20 * 800000;
	rec->t[NWS_SRC_KERNEL].hist[nws_time_bin(800000)] += 20;
	nw_sample_take(&f->set, 102, &now);
	struct nw_view_opts o = { .sort = NW_VIEW_SORT_RATE, .op = "all_reduce" };
	struct nw_view v;
	nw_view_build(&f->set, &now, &before, &o, &v);
	assert_int_equal(v.rows[0].rank, 0);
	assert_true(v.rows[0].interval);
	assert_float_equal(v.rows[0].calls_per_s, 10.0, 1e-9);
	assert_float_equal(v.rows[0].busbw_gbs, 83.88608, 1e-6);
	assert_float_equal(v.rows[0].p50_us, 768, 1e-9); /* [512, 1024) us, middle */
	assert_int_equal(v.rows[0].calls, 30);
	/* rank 1 did nothing in the interval: 0 calls/s, times from its life */
	assert_float_equal(v.rows[1].calls_per_s, 0.0, 1e-12);
	nw_view_release(&v);

	/* the exporter's gauge over the same window */
	struct nw_metrics m;
	nw_metrics_init(&m, "/x", 0, 1);
	nw_strlcpy(m.node, "node\"1", sizeof(m.node));
	struct nw_prom p;
	nw_prom_init(&p);
	nw_metrics_write(&m, &f->set, &now, &before, &p);
	assert_non_null(strstr(p.buf, "ncclwatch_coll_busbw_bytes_per_second{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\",nranks=\"2\"} 83886080000\n"));
	/* rank 1 timed nothing in the window: its gauge is absent, not 0 */
	assert_null(strstr(p.buf, "ncclwatch_coll_busbw_bytes_per_second{" LBL ",rank=\"1\""));
	nw_prom_release(&p);
	nw_metrics_release(&m);
	nw_sample_release(&before);
	nw_sample_release(&now);
}

/*
 * The default series: per op without size (the busbw gauge of the busiest
 * bucket, labelled with it), no histogram or source, the per-process
 * figures once per process, no detail families.
 */
static void default_series(void **state)
{
	struct fx *f = *state;
	char *s = render_with(f, 0, NW_HIST_NONE, 0);
	assert_non_null(strstr(s, "ncclwatch_coll_ops_total{" LBL ",rank=\"0\",op=\"all_reduce\"} 10\n"));
	assert_non_null(strstr(s, "ncclwatch_coll_busbw_bytes_per_second{" LBL ",rank=\"0\",op=\"all_reduce\",size=\"64M\",nranks=\"2\"} "));
	assert_non_null(strstr(s, "ncclwatch_coll_busbw_bytes_per_second{" LBL ",rank=\"0\",op=\"send\",size=\"1K\",nranks=\"2\"} "));
	assert_null(strstr(s, "ncclwatch_coll_duration_seconds"));
	assert_null(strstr(s, "ncclwatch_coll_timed_bytes_total"));
	assert_null(strstr(s, "source="));
	assert_null(strstr(s, "ncclwatch_comm_busy_ratio"));
	assert_null(strstr(s, "ncclwatch_rank_lateness_max_seconds"));
	assert_non_null(strstr(s, "ncclwatch_rank_lateness_seconds{"));
	assert_non_null(strstr(s, "ncclwatch_comm_busy_seconds_total{" LBL ",rank=\"1\"} 0.5\n"));
	/* one process per rank here: each is its own process, so each carries its heartbeat */
	assert_non_null(strstr(s, "ncclwatch_stats_age_seconds{" LBL ",rank=\"0\"}"));
	free(s);
	/* two files of one process: its heartbeat once, from its larger communicator */
	f->ranks[1].hdr.pid = f->ranks[0].hdr.pid;
	f->ranks[1].hdr.nranks = 4;
	s = render_with(f, 0, NW_HIST_NONE, 0);
	assert_null(strstr(s, "ncclwatch_stats_age_seconds{" LBL ",rank=\"0\"}"));
	assert_non_null(strstr(s, "ncclwatch_stats_age_seconds{" LBL ",rank=\"1\"}"));
	free(s);
}

static void size_labels(void **state)
{
	(void)state;
	char b[32];
	nw_metrics_size_label(0, b, sizeof(b));
	assert_string_equal(b, "0");
	nw_metrics_size_label(nws_size_bucket(1), b, sizeof(b));
	assert_string_equal(b, "1");
	nw_metrics_size_label(nws_size_bucket(3000), b, sizeof(b));
	assert_string_equal(b, "2K");
	nw_metrics_size_label(nws_size_bucket(UINT64_C(1) << 30), b, sizeof(b));
	assert_string_equal(b, "1G");
}

static void sample_delta_restart(void **state)
{
	(void)state;
	struct nw_sample_ent a, b, d;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.count = 5;
	a.t[0].count = 5;
	b.count = 9; /* the later process restarted and counted less */
	nw_sample_delta(&a, &b, &d);
	assert_int_equal(d.count, 5);
	b.count = 2;
	b.t[0].count = 1;
	nw_sample_delta(&a, &b, &d);
	assert_int_equal(d.count, 3);
	assert_int_equal(d.t[0].count, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(counts_bytes_and_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(histogram_and_busbw, setup, teardown),
		cmocka_unit_test_setup_teardown(lateness, setup, teardown),
		cmocka_unit_test_setup_teardown(each_family_once, setup, teardown),
		cmocka_unit_test_setup_teardown(view_rows_and_straggler, setup, teardown),
		cmocka_unit_test_setup_teardown(live_rates_from_two_samples, setup, teardown),
		cmocka_unit_test_setup_teardown(default_series, setup, teardown),
		cmocka_unit_test(size_labels),
		cmocka_unit_test(sample_delta_restart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
