/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of CUPTI's activity API that the overlap window (overlap.c)
 * uses, declared from CUDA 13's cupti_result.h, cupti_activity.h and
 * cupti_callbacks.h. The plugin links only libc and builds without CUDA
 * headers: CUPTI is opened at run time with dlopen (docs/plugin.md,
 * "Exposed communication") and these are the types of the pointers it
 * resolves. Names carry a nwc_ prefix so that nothing here can be taken
 * for CUPTI's own symbols. Shared with the fake CUPTI (tests/fakegpu/).
 */
#ifndef NW_PLUGIN_CUPTI_ABI_H
#define NW_PLUGIN_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* CUptiResult (cupti_result.h): the values this plugin tells apart. */
enum {
	NWC_SUCCESS = 0,
	NWC_ERROR_MAX_LIMIT_REACHED = 12,          /* GetNextRecord: no more records in the buffer */
	NWC_ERROR_MULTIPLE_SUBSCRIBERS = 39        /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
};
typedef int nwc_result;

/* CUpti_ActivityKind values (cupti_activity.h). */
enum { NWC_KIND_KERNEL = 3, NWC_KIND_CONCURRENT_KERNEL = 10 };

/* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: flush buffers that are not full yet. */
#define NWC_FLUSH_FORCED 1u

/* Activity records are 8-aligned in CUPTI's buffers (ACTIVITY_RECORD_ALIGNMENT). */
#define NWC_RECORD_ALIGN 8

/*
 * The leading part of CUpti_ActivityKernel10 (CUDA 13; the same prefix in
 * CUpti_ActivityKernel4..9), a packed record: only what overlap.c reads.
 * Read with memcpy at these offsets, never through a cast of the record.
 */
struct nwc_kernel_prefix {
	uint32_t kind;                 /* CUpti_ActivityKind */
	uint8_t cache_config;
	uint8_t shared_memory_config;
	uint16_t registers_per_thread;
	uint32_t pgc_requested, pgc_executed;
	uint64_t start;                /* ns, CUPTI's timestamp clock (cuptiGetTimestamp) */
	uint64_t end;
	uint64_t completed;
	uint32_t device_id, context_id, stream_id;
	int32_t grid[3], block[3];
	int32_t static_shmem, dynamic_shmem;
	uint32_t local_mem_per_thread, local_mem_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name;              /* owned by CUPTI */
};
#define NWC_OFF_START 16
#define NWC_OFF_END 24
#define NWC_OFF_STREAM 48
#define NWC_OFF_NAME 104
_Static_assert(offsetof(struct nwc_kernel_prefix, start) == NWC_OFF_START, "CUpti_ActivityKernel start");
_Static_assert(offsetof(struct nwc_kernel_prefix, end) == NWC_OFF_END, "CUpti_ActivityKernel end");
_Static_assert(offsetof(struct nwc_kernel_prefix, stream_id) == NWC_OFF_STREAM, "CUpti_ActivityKernel streamId");
_Static_assert(offsetof(struct nwc_kernel_prefix, name) == NWC_OFF_NAME, "CUpti_ActivityKernel name");

/* CUpti_BuffersCallbackRequestFunc / CompleteFunc (the CUcontext is an opaque pointer here). */
typedef void (*nwc_buf_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*nwc_buf_complete_fn)(void *ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid);
/* CUpti_CallbackFunc: this plugin enables no callback domain, so it is never called. */
typedef void (*nwc_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);

/* The entry points, in the order of the table in overlap.c. */
typedef nwc_result (*nwc_subscribe_fn)(void **subscriber, nwc_callback_fn cb, void *userdata);
typedef nwc_result (*nwc_unsubscribe_fn)(void *subscriber);
typedef nwc_result (*nwc_register_fn)(nwc_buf_request_fn req, nwc_buf_complete_fn done);
typedef nwc_result (*nwc_kind_fn)(uint32_t kind);              /* Enable, Disable */
typedef nwc_result (*nwc_flush_fn)(uint32_t flag);
typedef nwc_result (*nwc_next_fn)(uint8_t *buffer, size_t valid, void **record);
typedef nwc_result (*nwc_timestamp_fn)(uint64_t *ts);
typedef nwc_result (*nwc_dropped_fn)(void *ctx, uint32_t stream_id, size_t *dropped);
typedef nwc_result (*nwc_errstr_fn)(nwc_result r, const char **str);

#endif
