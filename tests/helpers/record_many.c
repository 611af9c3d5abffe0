/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_many DB N TAG: records N small runs into the history database DB,
 * each through nw_store_record (open, one transaction, close), as every rank
 * of a job would (DB may be a PostgreSQL URI). Rows carry TAG in their host
 * and the run's number in their times, so a test can count whose runs
 * arrived and find any stored twice. A failed run is said and the rest are
 * still recorded; exit 0 when all N were.
 */
#include <stdio.h>
#include <string.h>

#include "model/result.h"
#include "store/store.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: record_many DB N TAG\n");
		return 2;
	}
	long n;
	char err[NW_ERRLEN];
	if (nw_parse_long(argv[2], 1, 100000, &n, "N", err, sizeof(err))) {
		fprintf(stderr, "record_many: %s\n", err);
		return 2;
	}
	struct nw_store_opts o = { .db_path = argv[1] };
	int failed = 0;
	for (long i = 0; i < n; i++) {
		struct nw_run run;
		nw_run_init(&run);
		nw_header_fill_local(&run.h, "bench", argc, argv);
		nw_strlcpy(run.h.host, argv[3], sizeof(run.h.host));
		run.h.nranks = 2;
		for (int k = 0; k < 8; k++) {
			struct nw_row r;
			memset(&r, 0, sizeof(r));
			nw_strlcpy(r.op, "all_reduce", sizeof(r.op));
			nw_strlcpy(r.dtype, "float", sizeof(r.dtype));
			nw_strlcpy(r.redop, "sum", sizeof(r.redop));
			r.root = -1;
			r.nranks = 2;
			r.size_bytes = 1024ULL << (2 * k);
			r.count = r.size_bytes / 4;
			r.time_us = 12.0 + (double)k * 10 + (double)i;
			r.wrong = 0;
			nw_row_compute_bw(&r);
			nw_run_add(&run, &r);
		}
		long long id;
		int rc = nw_store_record(&o, &run, &id, err, sizeof(err));
		nw_run_release(&run);
		if (rc) {
			fprintf(stderr, "record_many: run %ld: %s\n", i, err);
			failed = 1;
		}
	}
	return failed;
}
