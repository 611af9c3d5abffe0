/* SPDX-License-Identifier: Apache-2.0 */
/*
 * input: a run from anything a user may name on the command line (a run
 * id, a baseline name, ncclwatch's JSON, nccl-tests' text or -J JSON).
 */
#ifndef NW_INPUT_H
#define NW_INPUT_H

#include <stddef.h>

#include "model/result.h"
#include "store/store.h"

/*
 * Load what spec names into run (initialised here; nw_run_release it):
 * a run id ("12"), an existing file (ncclwatch results JSON, or nccl-tests
 * text or -J JSON output, whose runs are merged into one), or a baseline
 * name. label gets a short name for display ("run 12", "baseline good",
 * "nt_all_reduce.txt"). The database (for ids and names) comes from o.
 */
int nw_input_load(const struct nw_store_opts *o, const char *spec, struct nw_run *run,
                  char *label, size_t labellen, char *err, size_t errlen);

#endif
