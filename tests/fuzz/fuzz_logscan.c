/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the NCCL log reader and its report, on any bytes: fed
 * as lines (prefixes, banners, hostless lines) and as a file (the UTF-16,
 * CR and binary detection of nw_log_feed_file), then what the input looks like.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "parse/ncclog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_log *lg = nw_log_new();
	FILE *f = size ? fmemopen((void *)data, size, "rb") : NULL;
	char err[256];
	if (f && (data[0] & 1)) {
		nw_log_feed_file(lg, f, "fuzz", err, sizeof(err));
	} else {
		nw_log_feed_buf(lg, (const char *)data, size);
	}
	if (f)
		fclose(f);
	json_t *doc = nw_log_report(lg);
	if ((unsigned)nw_log_input_kind(lg) > NW_LOG_INPUT_NO_NCCL)
		abort();
	char *text = json_dumps(doc, 0);
	if (!text)
		abort(); /* every string in the report must be valid JSON */
	free(text);
	json_decref(doc);
	nw_log_free(lg);
	return 0;
}
