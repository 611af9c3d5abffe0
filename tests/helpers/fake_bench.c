/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_bench: a stand-in for `ncclwatch bench` that tune's tests run with
 * --bench-cmd. It takes bench's arguments (bench --op LIST -b -e -f -n -w
 * -c -d -o --json FILE --no-history [-g N] [--backend B]) and writes a
 * results document whose times follow a simple model (10 us + size at
 * 200 GB/s), changed by the environment:
 *
 *   FAKE_EFFECT="NAME=VALUE:LO:HI:FACTOR;..."  when $NAME is VALUE, times of
 *                 sizes in [LO, HI) are multiplied by FACTOR (HI may be "inf")
 *   FAKE_FAIL="NAME=VALUE:HOW;..."  when $NAME is VALUE: HOW is "exit" (exit 3
 *                 with a message on stderr), "wrong" (wrong elements with -c 1,
 *                 exit 1), "hang" (never finishes) or "garbage" (exit 0, bad JSON)
 *   FAKE_EFFECT_LIMIT=N with FAKE_COUNTER=FILE: effects apply only in the first N
 *                 runs where one holds (FILE counts them), so a win can vanish
 *   FAKE_NOISE=0.01   uniform multiplicative noise of +-1% per size
 *   FAKE_SLEEP=0.05   seconds to sleep per run (a run's cost)
 *   FAKE_NRANKS=2     ranks reported
 *   FAKE_LOG=FILE     append one line per run: "pid N -c X --op LIST" and the
 *                     NCCL_* variables
 *
 * NAME "DEFAULT" matches when no NCCL_* variable other than NCCL_NVLS_ENABLE
 * is set (VALUE is then ignored).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/coll.h"
#include "model/result.h"
#include "util/util.h"

extern char **environ;

static int only_nvls(void)
{
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "NCCL_", 5) && strncmp(*e, "NCCL_NVLS_ENABLE=", 17))
			return 0;
	return 1;
}

/* Whether the condition "NAME=VALUE" (text up to the first ':') holds now. */
static int holds(const char *cond, size_t len)
{
	const char *eq = memchr(cond, '=', len);
	if (!eq)
		return 0;
	char name[128], value[256];
	snprintf(name, sizeof(name), "%.*s", (int)(eq - cond), cond);
	snprintf(value, sizeof(value), "%.*s", (int)(len - (size_t)(eq - cond) - 1), eq + 1);
	if (!strcmp(name, "DEFAULT"))
		return only_nvls();
	const char *v = getenv(name);
	return v && !strcmp(v, value);
}

/* The HOW of the first FAKE_FAIL rule that holds, or "" (copied into buf). */
static void failure(char *buf, size_t len)
{
	buf[0] = '\0';
	const char *s = getenv("FAKE_FAIL");
	while (s && *s) {
		size_t n = strcspn(s, ";");
		const char *colon = memchr(s, ':', n);
		if (colon && holds(s, (size_t)(colon - s))) {
			snprintf(buf, len, "%.*s", (int)(n - (size_t)(colon - s) - 1), colon + 1);
			return;
		}
		s += n;
		if (*s)
			s++;
	}
}

static int effects_off;

/* Counts runs where an effect rule holds; turns effects off past FAKE_EFFECT_LIMIT. */
static void count_effect_runs(void)
{
	const char *lim = getenv("FAKE_EFFECT_LIMIT"), *file = getenv("FAKE_COUNTER");
	const char *s = getenv("FAKE_EFFECT");
	int any = 0;
	while (s && *s) {
		size_t n = strcspn(s, ";");
		const char *colon = memchr(s, ':', n);
		any |= colon && holds(s, (size_t)(colon - s));
		s += n;
		if (*s)
			s++;
	}
	if (!lim || !file || !any)
		return;
	int count = 0;
	FILE *f = fopen(file, "r");
	if (f) {
		if (fscanf(f, "%d", &count) != 1)
			count = 0;
		fclose(f);
	}
	count++;
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "%d\n", count);
		fclose(f);
	}
	effects_off = count > atoi(lim);
}

/* The product of the FAKE_EFFECT factors that apply to size. */
static double effect(uint64_t size)
{
	double f = 1;
	const char *s = effects_off ? NULL : getenv("FAKE_EFFECT");
	while (s && *s) {
		size_t n = strcspn(s, ";");
		char rule[256];
		snprintf(rule, sizeof(rule), "%.*s", (int)n, s);
		char *c1 = strchr(rule, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
		if (c1 && c2 && c3 && holds(rule, (size_t)(c1 - rule))) {
			*c2 = *c3 = '\0';
			uint64_t lo = 0, hi = UINT64_MAX;
			nw_parse_size(c1 + 1, &lo, NULL, 0);
			if (strcmp(c2 + 1, "inf"))
				nw_parse_size(c2 + 1, &hi, NULL, 0);
			if (size >= lo && size < hi)
				f *= atof(c3 + 1);
		}
		s += n;
		if (*s)
			s++;
	}
	return f;
}

int main(int argc, char **argv)
{
	const char *ops = "all_reduce", *json = NULL, *b = "8", *e = "1M", *fac = "2", *dt = "float", *ro = "sum";
	int check = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "bench") || !strcmp(a, "--no-history"))
			continue;
		if (!strncmp(a, "--json=", 7)) { /* bench's only spelling of a JSON file */
			json = a + 7;
			continue;
		}
		if (!v) {
			fprintf(stderr, "fake_bench: '%s' needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--op"))
			ops = v;
		else if (!strcmp(a, "--json"))
			json = v;
		else if (!strcmp(a, "-b"))
			b = v;
		else if (!strcmp(a, "-e"))
			e = v;
		else if (!strcmp(a, "-f"))
			fac = v;
		else if (!strcmp(a, "-c"))
			check = !strcmp(v, "1");
		else if (!strcmp(a, "-d"))
			dt = v;
		else if (!strcmp(a, "-o"))
			ro = v;
		else if (strcmp(a, "-n") && strcmp(a, "-w") && strcmp(a, "-g") && strcmp(a, "--backend") && strcmp(a, "--nccl-lib")) {
			fprintf(stderr, "fake_bench: unknown option '%s'\n", a);
			return 2;
		}
		i++;
	}
	if (!json) {
		fprintf(stderr, "fake_bench: --json FILE is required\n");
		return 2;
	}
	const char *log = getenv("FAKE_LOG");
	if (log) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "pid %d -c %d --op %s", (int)getpid(), check, ops);
			for (char **p = environ; *p; p++)
				if (!strncmp(*p, "NCCL_", 5))
					fprintf(f, " %s", *p);
			fputc('\n', f);
			fclose(f);
		}
	}
	const char *sl = getenv("FAKE_SLEEP");
	if (sl && atof(sl) > 0)
		usleep((useconds_t)(atof(sl) * 1e6));
	char how[32];
	failure(how, sizeof(how));
	if (!strcmp(how, "exit")) {
		fprintf(stderr, "ncclwatch: error: NCCL error: invalid usage (fake failure)\n");
		return 3;
	}
	if (!strcmp(how, "hang"))
		for (;;)
			pause();
	if (!strcmp(how, "garbage")) {
		FILE *f = fopen(json, "w");
		if (f) {
			fputs("{not json", f);
			fclose(f);
		}
		return 0;
	}
	count_effect_runs();
	uint64_t lo, hi;
	if (nw_parse_size(b, &lo, NULL, 0) || nw_parse_size(e, &hi, NULL, 0) || lo == 0)
		return 2;
	double step = atof(fac);
	if (step <= 1)
		step = 2;
	const char *nr = getenv("FAKE_NRANKS");
	int nranks = nr ? atoi(nr) : 2;
	const char *no = getenv("FAKE_NOISE");
	double noise = no ? atof(no) : 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	srand((unsigned)(ts.tv_nsec ^ getpid()));

	struct nw_run run;
	nw_run_init(&run);
	nw_header_fill_local(&run.h, "bench", argc, argv);
	nw_strlcpy(run.h.backend, "fake", sizeof(run.h.backend));
	nw_strlcpy(run.h.nccl_version, "none", sizeof(run.h.nccl_version));
	nw_strlcpy(run.h.gpus, "no GPU (fake bench)", sizeof(run.h.gpus));
	run.h.nranks = nranks;
	run.h.nhosts = 1;
	int wrong = check && !strcmp(how, "wrong");
	const char *p = ops;
	while (*p) {
		size_t n = strcspn(p, ",");
		char name[32];
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		const struct nw_coll *c = nw_coll_find(name);
		if (!c) {
			fprintf(stderr, "fake_bench: unknown op '%s'\n", name);
			return 2;
		}
		for (double s = (double)lo; s <= (double)hi; s *= step) {
			for (int ip = 0; ip < 2; ip++) {
				struct nw_row r;
				memset(&r, 0, sizeof(r));
				nw_strlcpy(r.op, c->name, sizeof(r.op));
				nw_strlcpy(r.dtype, dt, sizeof(r.dtype));
				nw_strlcpy(r.redop, c->has_redop ? ro : "none", sizeof(r.redop));
				r.root = -1;
				r.size_bytes = (uint64_t)s;
				r.count = r.size_bytes / 4;
				r.nranks = nranks;
				r.inplace = ip;
				double jitter = noise > 0 ? 1 + noise * (2.0 * rand() / RAND_MAX - 1) : 1;
				r.time_us = (10 + s / 200e3) * effect(r.size_bytes) * jitter;
				r.wrong = check ? (wrong ? 7 : 0) : -1;
				nw_row_compute_bw(&r);
				nw_run_add(&run, &r);
			}
		}
		p += n;
		if (*p)
			p++;
	}
	FILE *f = fopen(json, "w");
	if (!f || nw_run_write_json(&run, f, 0) != 0) {
		fprintf(stderr, "fake_bench: cannot write '%s'\n", json);
		return 3;
	}
	fclose(f);
	nw_run_release(&run);
	return wrong ? 1 : 0;
}
