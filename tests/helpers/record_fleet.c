/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_fleet DB HOSTS DAYS [SLOW] [--part K/N] [--from-day D] [--each]:
 * a simulated fleet's history. Writes HOSTS x DAYS check runs (one a day
 * per host, the way a Slurm prolog records them) into DB (a file or a
 * PostgreSQL URI) through one open store. Hosts are node-0000 ...; every
 * 25th is a 4 x H100 node, the rest 8 x H200 nodes. Each run has
 * all_reduce and all_gather at 64M, 128M and 256M, both placements, with
 * busbw a few tenths of a percent apart from host to host and day to day.
 * Host number SLOW (when given) runs 10% slower on its latest day and has
 * driver 550.54.15 where its peers have 560.35.03.
 *   --part K/N     only the hosts whose number is K modulo N (N writers at once)
 *   --from-day D   only days D to DAYS-1 (a day added to a history already written)
 *   --each         open the database for every run and close it after, as
 *                  every node's own check does (nw_store_record)
 * Exit 0 when all runs were stored.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/result.h"
#include "store/store.h"
#include "util/util.h"

/* A deterministic spread in [-0.015, 0.015] for host h on day d. */
static double jitter(long h, long d, int k)
{
	uint64_t x = (uint64_t)h * 0x9e3779b97f4a7c15ULL ^ (uint64_t)d * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)k;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return ((double)(x % 3001) / 3000.0 - 0.5) * 0.03;
}

static void add_rows(struct nw_run *run, int nranks, double peak, long h, long d, double factor)
{
	static const char *const ops[] = { "all_reduce", "all_gather" };
	int k = 0;
	for (int o = 0; o < 2; o++)
		for (int z = 0; z < 3; z++)
			for (int inplace = 0; inplace < 2; inplace++, k++) {
				struct nw_row r;
				memset(&r, 0, sizeof(r));
				nw_strlcpy(r.op, ops[o], sizeof(r.op));
				nw_strlcpy(r.dtype, "float", sizeof(r.dtype));
				nw_strlcpy(r.redop, o == 0 ? "sum" : "none", sizeof(r.redop));
				r.root = -1;
				r.nranks = nranks;
				r.inplace = inplace;
				r.size_bytes = (64ULL << 20) << z;
				r.count = r.size_bytes / 4 / (o == 1 ? (uint64_t)nranks : 1);
				double busbw = peak * (0.9 + 0.05 * z) * (o == 1 ? 0.95 : 1.0) * (1 + jitter(h, d, k)) * factor;
				double f = o == 0 ? 2.0 * (nranks - 1) / nranks : (double)(nranks - 1) / nranks;
				r.time_us = (double)r.size_bytes / (busbw / f) / 1e3;
				r.wrong = 0;
				nw_row_compute_bw(&r);
				nw_run_add(run, &r);
			}
}

/* Host h's check of day d (0 = the first day) into run. */
static void make_run(struct nw_run *run, long h, long d, long days, long slow)
{
	int h100 = h % 25 == 24;
	int nranks = h100 ? 4 : 8;
	int is_slow = h == slow;
	struct nw_run_header *hd = &run->h;
	nw_strlcpy(hd->source, "check", sizeof(hd->source));
	nw_strlcpy(hd->backend, "nccl", sizeof(hd->backend));
	nw_strlcpy(hd->tool_version, NW_VERSION, sizeof(hd->tool_version));
	nw_strlcpy(hd->nccl_version, "2.27.7", sizeof(hd->nccl_version));
	nw_strlcpy(hd->driver, is_slow ? "550.54.15" : "560.35.03", sizeof(hd->driver));
	nw_strlcpy(hd->cuda_driver, "12.6", sizeof(hd->cuda_driver));
	snprintf(hd->host, sizeof(hd->host), "node-%04ld", h);
	snprintf(hd->gpus, sizeof(hd->gpus), "%d x %s", nranks, h100 ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200");
	snprintf(hd->cmdline, sizeof(hd->cmdline), "ncclwatch check");
	snprintf(hd->time, sizeof(hd->time), "2026-%02ld-%02ldT02:%02ld:%02ldZ", 1 + d / 28, 1 + d % 28,
	         h / 60 % 60, h % 60);
	hd->nranks = nranks;
	hd->nhosts = 1;
	hd->link_gbs = h100 ? 450 : 478.1;
	add_rows(run, nranks, h100 ? 360 : 480, h, d, is_slow && d == days - 1 ? 0.9 : 1.0);
	json_t *fp = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:s,s:{s:s,s:s}}", "host", hd->host, "gpus", hd->gpus,
	                       "gpu_count", nranks, "driver", hd->driver, "nccl_version", hd->nccl_version,
	                       "topology_hash", h100 ? "5f0c2a9e71d4b3a8" : "a41d9c07e3b25f16", "time", hd->time,
	                       "env", "NCCL_IB_HCA", "mlx5", "NCCL_SOCKET_IFNAME", "eth0");
	hd->extra = json_pack("{s:o,s:s}", "fingerprint", fp, "check_verdict", "pass");
}

struct plan {
	long hosts, days, slow, part, nparts, from_day;
	int each;
};

static int usage(void)
{
	fprintf(stderr, "usage: record_fleet DB HOSTS DAYS [SLOW] [--part K/N] [--from-day D] [--each]\n");
	return 2;
}

/* "K/N" with 0 <= K < N <= 4096 into p. */
static int parse_part(const char *s, struct plan *p, char *err, size_t errlen)
{
	char k[32];
	const char *slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= sizeof(k))
		return nw_seterr(err, errlen, "--part '%s': give K/N, as in 3/8", s);
	memcpy(k, s, (size_t)(slash - s));
	k[slash - s] = '\0';
	if (nw_parse_long(slash + 1, 1, 4096, &p->nparts, "--part N", err, errlen) ||
	    nw_parse_long(k, 0, p->nparts - 1, &p->part, "--part K", err, errlen))
		return -1;
	return 0;
}

static int parse_args(int argc, char **argv, struct plan *p, char *err, size_t errlen)
{
	static const struct option lo[] = {
		{ "part", 1, 0, 'p' }, { "from-day", 1, 0, 'd' }, { "each", 0, 0, 'e' }, { 0, 0, 0, 0 },
	};
	const char *part = NULL, *from = NULL;
	int c;
	*p = (struct plan){ .slow = -1, .nparts = 1 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'p')
			part = optarg;
		else if (c == 'd')
			from = optarg;
		else if (c == 'e')
			p->each = 1;
		else
			return 1;
	}
	int nargs = argc - optind;
	if (nargs != 3 && nargs != 4)
		return 1;
	char **a = argv + optind;
	if (nw_parse_long(a[1], 1, 100000, &p->hosts, "HOSTS", err, errlen) ||
	    nw_parse_long(a[2], 1, 1000, &p->days, "DAYS", err, errlen) ||
	    (nargs == 4 && nw_parse_long(a[3], 0, p->hosts - 1, &p->slow, "SLOW", err, errlen)) ||
	    (part && parse_part(part, p, err, errlen)) ||
	    (from && nw_parse_long(from, 0, p->days - 1, &p->from_day, "--from-day", err, errlen)))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct plan p;
	char err[NW_ERRLEN];
	int bad = parse_args(argc, argv, &p, err, sizeof(err));
	if (bad > 0)
		return usage();
	if (bad < 0) {
		fprintf(stderr, "record_fleet: %s\n", err);
		return 2;
	}
	const char *db = argv[optind];
	struct nw_store *s = NULL;
	if (!p.each && nw_store_open(db, NW_STORE_WRITE, &s, err, sizeof(err))) {
		fprintf(stderr, "record_fleet: %s\n", err);
		return 1;
	}
	const struct nw_store_opts o = { .db_path = db };
	int rc = 0;
	for (long d = p.from_day; d < p.days && !rc; d++)
		for (long h = p.part; h < p.hosts && !rc; h += p.nparts) {
			struct nw_run run;
			nw_run_init(&run);
			make_run(&run, h, d, p.days, p.slow);
			rc = p.each ? nw_store_record(&o, &run, NULL, err, sizeof(err))
			            : nw_store_insert(s, &run, NULL, err, sizeof(err));
			nw_run_release(&run);
		}
	nw_store_close(s);
	if (rc)
		fprintf(stderr, "record_fleet: %s\n", err);
	return rc ? 1 : 0;
}
