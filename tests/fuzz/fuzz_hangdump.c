/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: trace dumps gathered from other nodes (outside text),
 * read by `ncclwatch hang`: their progress entries into the model, then
 * the diagnosis of every communicator found. Nothing may crash or leak,
 * and every rank found lies in its communicator.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "export/hangsrc.h"
#include "model/progress.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_prog_set set = { 0 };
	char err[NW_ERRLEN];
	if (nw_hangsrc_dump_text((const char *)data, size, "fuzz", &set, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < set.n; i++) {
			struct nw_prog_diag d;
			if (nw_prog_diagnose(&set.comms[i], UINT64_C(1) << 62, 1000000000ull, &d, err, sizeof(err)) != 0)
				abort();
			for (size_t k = 0; k < d.nmissing; k++)
				if (d.missing[k] >= set.comms[i].n)
					abort();
			nw_prog_diag_release(&d);
		}
	}
	nw_prog_set_release(&set);
	return 0;
}
