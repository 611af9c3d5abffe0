/*
 * record_fleet DB HOSTS DAYS [SLOW]: a simulated fleet's history. Writes
 * HOSTS x DAYS check runs (one a day per host, the way a Slurm prolog
 * records them) into DB through one open store. Hosts are node-0000 ...;
 * every 25th is a 4 x H100 node, the rest 8 x H200 nodes. Each run has
 * all_reduce and all_gather at 64M, 128M and 256M, both placements, with
 * busbw a few tenths of a percent apart from host to host and day to day.
 * Host number SLOW (when given) runs 10% slower on its latest day and has
 * driver 550.54.15 where its peers have 560.35.03. Exit 0 when all runs
 * were stored.
 */
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

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: record_fleet DB HOSTS DAYS [SLOW]\n");
		return 2;
	}
	long hosts, days, slow = -1;
	char err[NW_ERRLEN];
	if (nw_parse_long(argv[2], 1, 100000, &hosts, "HOSTS", err, sizeof(err)) ||
	    nw_parse_long(argv[3], 1, 1000, &days, "DAYS", err, sizeof(err)) ||
	    (argc == 5 && nw_parse_long(argv[4], 0, hosts - 1, &slow, "SLOW", err, sizeof(err)))) {
		fprintf(stderr, "record_fleet: %s\n", err);
		return 2;
	}
	struct nw_store *s;
	if (nw_store_open(argv[1], NW_STORE_WRITE, &s, err, sizeof(err))) {
		fprintf(stderr, "record_fleet: %s\n", err);
		return 1;
	}
	int rc = 0;
	for (long d = 0; d < days && !rc; d++)
		for (long h = 0; h < hosts && !rc; h++) {
			struct nw_run run;
			nw_run_init(&run);
			make_run(&run, h, d, days, slow);
			rc = nw_store_insert(s, &run, NULL, err, sizeof(err));
			nw_run_release(&run);
		}
	nw_store_close(s);
	if (rc)
		fprintf(stderr, "record_fleet: %s\n", err);
	return rc ? 1 : 0;
}
