/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the nccl-tests parser (text and -J JSON, from a buffer or streamed), then every rendering of what it found. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/result.h"
#include "parse/nccltests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_run *runs = NULL;
	size_t unparsed = 0;
	char err[256];
	FILE *f = size && (data[0] & 1) ? fmemopen((void *)data, size, "rb") : NULL;
	struct nw_nt_seen seen;
	int n = f ? nw_nt_parse_stream_seen(f, "fuzz", &runs, &unparsed, (data[0] & 2) ? &seen : NULL, err, sizeof(err))
	          : nw_nt_parse_buf((const char *)data, size, "fuzz", &runs, &unparsed, err, sizeof(err));
	if (f)
		fclose(f);
	if (n < 0)
		abort(); /* a buffer never gives an I/O error */
	FILE *devnull = fopen("/dev/null", "w");
	for (int i = 0; i < n; i++) {
		char line[512];
		for (size_t r = 0; r < runs[i].nrows; r++)
			nw_nt_format_row(line, sizeof(line), &runs[i].rows[r], r + 1 < runs[i].nrows ? &runs[i].rows[r + 1] : NULL);
		json_t *doc = nw_run_to_json(&runs[i], 0);
		char *text = json_dumps(doc, 0);
		if (!text)
			abort();
		free(text);
		json_decref(doc);
		if (devnull)
			nw_run_write_csv(&runs[i], devnull, 0);
		nw_run_release(&runs[i]);
	}
	if (devnull)
		fclose(devnull);
	free(runs);
	return 0;
}
