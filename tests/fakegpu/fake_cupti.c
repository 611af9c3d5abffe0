/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake CUPTI (libcupti.so.13) for the plugin's exposed-communication
 * window on machines without a GPU. Chosen the way a user would choose a
 * CUPTI: NCCLWATCH_CUPTI_LIB=path. It hands out kernel activity records
 * laid out as CUDA 13's CUpti_ActivityKernel10 (216 bytes, kind
 * CONCURRENT_KERNEL) through the real buffer-callback protocol, read from
 * the scenario file NW_FAKE_CUPTI_SCENARIO:
 *
 *   window START_NS END_NS          what cuptiGetTimestamp gives when a window opens and closes
 *   kernel NAME STREAM START_NS END_NS   a kernel recorded in the window above
 *   busy                            cuptiSubscribe answers MULTIPLE_SUBSCRIBERS (a profiler holds CUPTI)
 *   enable-fails                    cuptiActivityEnable fails
 *   burn-ms N                       cuptiActivityFlushAll burns N ms of CPU in the caller's thread
 *
 * Windows after the last one listed repeat it. '#' starts a comment.
 * A scenario it cannot read makes every call fail, with one line on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/cupti_abi.h"

#define API __attribute__((visibility("default")))
#define REC_SIZE 216
#define MAX_WIN 16
#define MAX_K 4096
#define ERR_INVALID 1       /* CUPTI_ERROR_INVALID_PARAMETER */
#define ERR_UNKNOWN 999     /* CUPTI_ERROR_UNKNOWN */

/* CUPTI's entry points, as the plugin's table types say (cupti_abi.h). */
API int cuptiSubscribe(void **sub, nwc_callback_fn cb, void *userdata);
API int cuptiUnsubscribe(void *sub);
API int cuptiActivityRegisterCallbacks(nwc_buf_request_fn req, nwc_buf_complete_fn done);
API int cuptiActivityEnable(uint32_t kind);
API int cuptiActivityDisable(uint32_t kind);
API int cuptiGetTimestamp(uint64_t *ts);
API int cuptiActivityFlushAll(uint32_t flag);
API int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record);
API int cuptiGetResultString(int r, const char **str);

struct fk { char name[128]; uint32_t stream; uint64_t start, end; int win; };

static struct {
	int loaded, bad, busy, enable_fails;
	long burn_ms;
	uint64_t win[MAX_WIN][2];
	int nwin, cur;
	struct fk k[MAX_K];
	int nk;
	int subscribed, enabled;
	nwc_buf_request_fn req;
	nwc_buf_complete_fn done;
} fc;

/* One scenario line; -1 when it cannot be read. */
static int parse_line(char *line)
{
	char *h = strchr(line, '#');
	if (h)
		*h = '\0';
	char word[32], name[128];
	unsigned long long a, b;
	unsigned stream;
	if (sscanf(line, "%31s", word) != 1)
		return 0;
	if (!strcmp(word, "busy"))
		fc.busy = 1;
	else if (!strcmp(word, "enable-fails"))
		fc.enable_fails = 1;
	else if (!strcmp(word, "burn-ms"))
		return sscanf(line, "%*s %ld", &fc.burn_ms) == 1 ? 0 : -1;
	else if (!strcmp(word, "window")) {
		if (fc.nwin >= MAX_WIN || sscanf(line, "%*s %llu %llu", &a, &b) != 2 || b < a)
			return -1;
		fc.win[fc.nwin][0] = a;
		fc.win[fc.nwin++][1] = b;
	} else if (!strcmp(word, "kernel")) {
		if (!fc.nwin || fc.nk >= MAX_K || sscanf(line, "%*s %127s %u %llu %llu", name, &stream, &a, &b) != 4)
			return -1;
		struct fk *k = &fc.k[fc.nk++];
		snprintf(k->name, sizeof(k->name), "%s", name);
		k->stream = stream;
		k->start = a;
		k->end = b;
		k->win = fc.nwin - 1;
	} else
		return -1;
	return 0;
}

static void load(void)
{
	if (fc.loaded)
		return;
	fc.loaded = 1;
	const char *path = getenv("NW_FAKE_CUPTI_SCENARIO");
	FILE *f = path ? fopen(path, "r") : NULL;
	if (!f) {
		fprintf(stderr, "fake cupti: cannot read NW_FAKE_CUPTI_SCENARIO='%s'\n", path ? path : "");
		fc.bad = 1;
		return;
	}
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (parse_line(line) != 0) {
			fprintf(stderr, "fake cupti: %s:%d: cannot read this line\n", path, n);
			fc.bad = 1;
		}
	}
	fclose(f);
	if (!fc.nwin && !fc.busy) {
		fprintf(stderr, "fake cupti: %s has no window line\n", path);
		fc.bad = 1;
	}
}

API int cuptiSubscribe(void **sub, nwc_callback_fn cb, void *userdata)
{
	(void)cb;
	(void)userdata;
	load();
	if (fc.bad)
		return ERR_UNKNOWN;
	if (fc.busy || fc.subscribed)
		return NWC_ERROR_MULTIPLE_SUBSCRIBERS;
	fc.subscribed = 1;
	*sub = &fc;
	return NWC_SUCCESS;
}

API int cuptiUnsubscribe(void *sub)
{
	if (sub != &fc || !fc.subscribed)
		return ERR_INVALID;
	fc.subscribed = 0;
	return NWC_SUCCESS;
}

API int cuptiActivityRegisterCallbacks(nwc_buf_request_fn req, nwc_buf_complete_fn done)
{
	if (!req || !done)
		return ERR_INVALID;
	fc.req = req;
	fc.done = done;
	return NWC_SUCCESS;
}

API int cuptiActivityEnable(uint32_t kind)
{
	if (fc.bad || fc.enable_fails || kind != NWC_KIND_CONCURRENT_KERNEL)
		return ERR_INVALID;
	fc.enabled = 1;
	return NWC_SUCCESS;
}

API int cuptiActivityDisable(uint32_t kind)
{
	(void)kind;
	fc.enabled = 0;
	return NWC_SUCCESS;
}

/* Opening a window reads its start; closing it (while recording) its end, and moves on. */
API int cuptiGetTimestamp(uint64_t *ts)
{
	if (fc.bad || !fc.nwin)
		return ERR_UNKNOWN;
	int w = fc.cur < fc.nwin ? fc.cur : fc.nwin - 1;
	*ts = fc.win[w][fc.enabled ? 1 : 0];
	return NWC_SUCCESS;
}

static void burn(long ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L < ms);
}

/* One record as CUpti_ActivityKernel10 lays it out (offsets from cupti_abi.h). */
static void put_record(uint8_t *p, const struct fk *k)
{
	uint32_t kind = NWC_KIND_CONCURRENT_KERNEL;
	const char *name = k->name;
	memset(p, 0, REC_SIZE);
	memcpy(p, &kind, 4);
	memcpy(p + NWC_OFF_START, &k->start, 8);
	memcpy(p + NWC_OFF_END, &k->end, 8);
	memcpy(p + 32, &k->end, 8); /* completed */
	memcpy(p + NWC_OFF_STREAM, &k->stream, 4);
	memcpy(p + NWC_OFF_NAME, &name, sizeof(name));
}

/* Hand the window's records to the client in as many buffers as it gives. */
API int cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (fc.burn_ms)
		burn(fc.burn_ms);
	if (!fc.req || !fc.done)
		return NWC_SUCCESS;
	int w = fc.cur < fc.nwin ? fc.cur : fc.nwin - 1;
	fc.cur++;
	int i = 0;
	while (i < fc.nk) {
		uint8_t *buf = NULL;
		size_t size = 0, maxrec = 0;
		fc.req(&buf, &size, &maxrec);
		if (!buf || size < REC_SIZE)
			return NWC_SUCCESS; /* CUPTI drops what it cannot store */
		size_t used = 0;
		for (; i < fc.nk && used + REC_SIZE <= size; i++) {
			if (fc.k[i].win != w)
				continue;
			put_record(buf + used, &fc.k[i]);
			used += REC_SIZE;
		}
		fc.done(NULL, 0, buf, size, used);
	}
	return NWC_SUCCESS;
}

API int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record)
{
	uint8_t *next = *record ? (uint8_t *)*record + REC_SIZE : buffer;
	if (next + REC_SIZE > buffer + valid)
		return NWC_ERROR_MAX_LIMIT_REACHED;
	*record = next;
	return NWC_SUCCESS;
}

API int cuptiGetResultString(int r, const char **str)
{
	*str = r == NWC_ERROR_MULTIPLE_SUBSCRIBERS ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
	       : r == ERR_INVALID ? "CUPTI_ERROR_INVALID_PARAMETER" : "CUPTI_ERROR_UNKNOWN";
	return NWC_SUCCESS;
}
