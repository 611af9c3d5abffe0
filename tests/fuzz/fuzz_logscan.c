/* libFuzzer target: the NCCL log reader and its report, on any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "parse/ncclog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_log *lg = nw_log_new();
	nw_log_feed_buf(lg, (const char *)data, size);
	json_t *doc = nw_log_report(lg);
	char *text = json_dumps(doc, 0);
	if (!text)
		abort(); /* every string in the report must be valid JSON */
	free(text);
	json_decref(doc);
	nw_log_free(lg);
	return 0;
}
