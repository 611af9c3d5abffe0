/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot_probe: runs the env-rendezvous bootstrap the way ncclwatch bench
 * does, for the CLI tests. Joins the ranks (RANK, WORLD_SIZE ... from the
 * environment), allgathers every rank's number, broadcasts a 128-byte blob
 * (the size of an NCCL unique id), passes a barrier and prints:
 *   rank=R size=S local_rank=L local_size=N
 *   host R NAME            (every rank)
 *   gather R VALUE         (every rank)
 *   bcast ok|bad
 *   barrier ok
 *   done
 * Errors go to stderr as "boot_probe: rank R: error: ..." with exit 1.
 *
 *   --fp TEXT          the fingerprint (default "probe")
 *   --timeout S        every wait's bound (default 10)
 *   --value N          this rank's number (default 100 + RANK)
 *   --root R           the broadcast's root (default 0)
 *   --exit-at STEP     _exit(3) just before STEP (init, gather, bcast, barrier, close)
 *   --sleep-at STEP:S  sleep S seconds just before STEP
 *   --abort-at STEP    nw_boot_abort just before STEP, then exit 2
 *   --bench N          then time N allgathers of 8 bytes and N barriers; rank 0
 *                      prints "bench allgather_us=X barrier_us=Y" (mean per call)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/boot.h"
#include "util/util.h"

struct probe_opts {
	const char *fp;
	double timeout;
	long value;
	int value_set;
	long root;
	char exit_at[16], sleep_at[16], abort_at[16];
	double sleep_s;
	long bench;
};

static void step(const struct probe_opts *o, struct nw_boot *b, const char *name)
{
	if (!strcmp(o->sleep_at, name)) {
		double until = nw_now() + o->sleep_s;
		while (nw_now() < until)
			usleep(10000);
	}
	if (!strcmp(o->exit_at, name)) {
		fflush(stdout);
		_exit(3);
	}
	if (!strcmp(o->abort_at, name)) {
		nw_boot_abort(b, "the probe was asked to stop");
		nw_boot_close(b);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct probe_opts o = { .fp = "probe", .timeout = 10, .root = 0 };
	char err[NW_ERRLEN];
	const char *me = getenv("RANK") ? getenv("RANK") : "?";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "boot_probe: '%s' needs a value\n", a);
			return 64;
		}
		i++;
		if (!strcmp(a, "--fp")) {
			o.fp = v;
		} else if (!strcmp(a, "--timeout")) {
			if (nw_parse_double(v, 0.001, 1e6, &o.timeout, "--timeout", err, sizeof(err)))
				goto bad;
		} else if (!strcmp(a, "--value")) {
			if (nw_parse_long(v, -1000000000L, 1000000000L, &o.value, "--value", err, sizeof(err)))
				goto bad;
			o.value_set = 1;
		} else if (!strcmp(a, "--root")) {
			if (nw_parse_long(v, -1, 100000, &o.root, "--root", err, sizeof(err)))
				goto bad;
		} else if (!strcmp(a, "--bench")) {
			if (nw_parse_long(v, 0, 10000000, &o.bench, "--bench", err, sizeof(err)))
				goto bad;
		} else if (!strcmp(a, "--exit-at")) {
			nw_strlcpy(o.exit_at, v, sizeof(o.exit_at));
		} else if (!strcmp(a, "--abort-at")) {
			nw_strlcpy(o.abort_at, v, sizeof(o.abort_at));
		} else if (!strcmp(a, "--sleep-at")) {
			const char *c = strchr(v, ':');
			if (!c || (size_t)(c - v) >= sizeof(o.sleep_at)) {
				fprintf(stderr, "boot_probe: --sleep-at wants STEP:SECONDS\n");
				return 64;
			}
			memcpy(o.sleep_at, v, (size_t)(c - v));
			o.sleep_at[c - v] = '\0';
			if (nw_parse_double(c + 1, 0, 1e4, &o.sleep_s, "--sleep-at", err, sizeof(err)))
				goto bad;
		} else {
			fprintf(stderr, "boot_probe: unknown option '%s'\n", a);
			return 64;
		}
	}

	struct nw_boot *b = NULL;
	step(&o, b, "init");
	int r = nw_boot_init(&b, o.fp, o.timeout, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "boot_probe: rank %s: error: %s\n", me, err);
		return 1;
	}
	if (r == 0) {
		printf("single\n");
		return 0;
	}
	int rank = nw_boot_rank(b), size = nw_boot_size(b);
	printf("rank=%d size=%d local_rank=%d local_size=%d\n", rank, size, nw_boot_local_rank(b),
	       nw_boot_local_size(b));
	for (int i = 0; i < size; i++)
		printf("host %d %s\n", i, nw_boot_host(b, i));
	fflush(stdout);

	int rc = 1;
	long long mine = o.value_set ? o.value : 100 + rank;
	long long *all = nw_calloc((size_t)size, sizeof(long long));
	unsigned char blob[128];
	step(&o, b, "gather");
	if (nw_boot_allgather(b, &mine, all, sizeof(mine), err, sizeof(err)))
		goto fail;
	for (int i = 0; i < size; i++)
		printf("gather %d %lld\n", i, all[i]);
	fflush(stdout);

	step(&o, b, "bcast");
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = rank == o.root ? (unsigned char)(i * 7 + 13) : 0;
	if (nw_boot_bcast(b, blob, sizeof(blob), (int)o.root, err, sizeof(err)))
		goto fail;
	int good = 1;
	for (size_t i = 0; i < sizeof(blob); i++)
		good &= blob[i] == (unsigned char)(i * 7 + 13);
	printf("bcast %s\n", good ? "ok" : "bad");
	fflush(stdout);

	step(&o, b, "barrier");
	if (nw_boot_barrier(b, err, sizeof(err)))
		goto fail;
	printf("barrier ok\n");
	if (o.bench > 0) {
		double t0 = nw_now();
		for (long i = 0; i < o.bench; i++)
			if (nw_boot_allgather(b, &mine, all, sizeof(mine), err, sizeof(err)))
				goto fail;
		double t1 = nw_now();
		for (long i = 0; i < o.bench; i++)
			if (nw_boot_barrier(b, err, sizeof(err)))
				goto fail;
		double t2 = nw_now();
		if (rank == 0)
			printf("bench allgather_us=%.1f barrier_us=%.1f\n", (t1 - t0) * 1e6 / (double)o.bench,
			       (t2 - t1) * 1e6 / (double)o.bench);
	}
	step(&o, b, "close");
	printf("done\n");
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "boot_probe: rank %d: error: %s\n", rank, err);
	free(all);
	nw_boot_close(b);
	return rc;
bad:
	fprintf(stderr, "boot_probe: %s\n", err);
	return 64;
}
