/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakegpu: what the fake CUDA driver (fake_cuda.c, libcuda.so.1) and the
 * fake NCCL (fake_nccl.c, libnccl.so.2) share. The two libraries are
 * loaded separately (dlopen, RTLD_LOCAL) and never link each other: a
 * CUstream handed to the fake NCCL points at a struct fakegpu_stream,
 * whose first fields are this small interface, so NCCL work can be put
 * on a stream (or recorded into a graph while the stream captures)
 * without either library naming the other's symbols. A CUcontext points
 * at a struct fakegpu_ctx the same way (for the NULL stream).
 */
#ifndef FAKEGPU_H
#define FAKEGPU_H

#include <stdint.h>

#define FAKEGPU_STREAM_MAGIC 0x66616b6573747231ull /* "fakestr1" */

struct fakegpu_stream;

/*
 * One piece of stream work, copied by value: into a graph while the
 * stream captures, out of it at each cuGraphLaunch. launch() runs it on
 * stream s (it calls s->begin once, and s->end later when it is done).
 */
struct fakegpu_work {
	void (*launch)(const struct fakegpu_work *w, struct fakegpu_stream *s);
	unsigned char arg[200];
};

struct fakegpu_stream {
	uint64_t magic; /* FAKEGPU_STREAM_MAGIC */
	/* Run w now, or record it when the stream captures. Returns a CUresult. */
	int (*submit)(struct fakegpu_stream *s, const struct fakegpu_work *w);
	/* One more piece of work is pending on s. */
	void (*begin)(struct fakegpu_stream *s);
	/* One piece finished; cu_err != 0 sticks to the stream (cuStreamQuery returns it). */
	void (*end)(struct fakegpu_stream *s, int cu_err);
};

/*
 * A CUcontext of the fake driver points at a struct whose first field is
 * this: the fake NCCL finds the NULL (legacy default) stream of a
 * communicator's context through it, as real NCCL launches on the NULL
 * stream of the communicator's device when handed stream 0.
 */
#define FAKEGPU_CTX_MAGIC 0x66616b6563747831ull /* "fakectx1" */

struct fakegpu_ctx {
	uint64_t magic; /* FAKEGPU_CTX_MAGIC */
	/* The context's NULL stream (made on first use); NULL when out of memory. */
	struct fakegpu_stream *(*null_stream)(struct fakegpu_ctx *c);
};

#endif
