/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuprim: what the interposer's per-op steps cost on this machine, each
 * timed over many calls: the clocks it reads, cuStreamIsCapturing (asked
 * before every op, so that a call captured into a graph is never timed)
 * and a cuEventRecord (two per timed op). Links only libc; the driver is
 * opened at run time, as the interposer does.
 *
 *   cc -O2 -o cuprim scripts/gpu/cuprim.c -ldl && ./cuprim [CALLS]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define TIME(label, n, stmt)                                                   \
	do {                                                                   \
		double t0_ = now_ns();                                         \
		for (long i_ = 0; i_ < (n); i_++) {                            \
			stmt;                                                  \
		}                                                              \
		printf("%-34s %8.1f ns per call\n", label, (now_ns() - t0_) / (double)(n)); \
	} while (0)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	if (n <= 0)
		n = 1000000;
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "cuprim: %s\n", dlerror());
		return 1;
	}
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set_cur)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	int (*stream_create)(void **, unsigned) = (int (*)(void **, unsigned))dlsym(h, "cuStreamCreate");
	int (*is_capturing)(void *, int *) = (int (*)(void *, int *))dlsym(h, "cuStreamIsCapturing");
	int (*ev_create)(void **, unsigned) = (int (*)(void **, unsigned))dlsym(h, "cuEventCreate");
	int (*ev_record)(void *, void *) = (int (*)(void *, void *))dlsym(h, "cuEventRecord");
	int (*sync)(void *) = (int (*)(void *))dlsym(h, "cuStreamSynchronize");
	if (!init || !dev_get || !retain || !set_cur || !stream_create || !is_capturing || !ev_create || !ev_record ||
	    !sync) {
		fprintf(stderr, "cuprim: a driver entry point is missing\n");
		return 1;
	}
	int dev, st = 0;
	void *ctx, *s, *ev;
	if (init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set_cur(ctx) || stream_create(&s, 1) ||
	    ev_create(&ev, 0)) {
		fprintf(stderr, "cuprim: no CUDA device to time on\n");
		return 1;
	}
	struct timespec ts;
	volatile long sink = 0;
	TIME("clock_gettime(CLOCK_MONOTONIC)", n, (clock_gettime(CLOCK_MONOTONIC, &ts), sink += ts.tv_nsec));
	TIME("clock_gettime(CLOCK_REALTIME)", n, (clock_gettime(CLOCK_REALTIME, &ts), sink += ts.tv_nsec));
	TIME("cuStreamIsCapturing", n, (is_capturing(s, &st), sink += st));
	long m = n / 10 > 0 ? n / 10 : 1;
	TIME("cuEventRecord", m, (ev_record(ev, s), sink++));
	sync(s);
	return sink == -1;
}
