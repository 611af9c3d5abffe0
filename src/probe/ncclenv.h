/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclenv: the NCCL_* environment variable names NCCL knows, for spotting
 * typos (NCCL_IBHCA for NCCL_IB_HCA) that NCCL itself silently ignores.
 */
#ifndef NW_PROBE_NCCLENV_H
#define NW_PROBE_NCCLENV_H

#include <stddef.h>

/* Whether NCCL 2.28 reads or documents this name. */
int nw_ncclenv_known(const char *name);
/* Who reads a NCCL_-prefixed name NCCL does not ("PyTorch (...)"); NULL if nobody known. */
const char *nw_ncclenv_owner(const char *name);
/* The nearest known name by edit distance, when near enough; NULL otherwise. */
const char *nw_ncclenv_suggest(const char *name);
/* Edit distance (insertions, deletions, substitutions, adjacent swaps). */
int nw_edit_distance(const char *a, const char *b);
/* How many names are known. */
size_t nw_ncclenv_count(void);

#endif
