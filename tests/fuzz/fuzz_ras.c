/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the NCCL RAS answer parser (text and JSON), then the progress model of what it found. */
#include <stddef.h>
#include <stdint.h>

#include "parse/ras.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_ras r;
	char err[256];
	if (nw_ras_parse((const char *)data, size, &r, err, sizeof(err)) == 0) {
		struct nw_prog_comm *pc;
		size_t n;
		nw_ras_to_prog(&r, &pc, &n);
		nw_ras_prog_free(pc, n);
	}
	nw_ras_release(&r);
	return 0;
}
