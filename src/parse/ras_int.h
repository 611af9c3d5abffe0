/* SPDX-License-Identifier: Apache-2.0 */
/* ras_int: what ras.c (common parts, JSON, model) and ras_text.c share. */
#ifndef NW_PARSE_RAS_INT_H
#define NW_PARSE_RAS_INT_H

#include "parse/ras.h"

/* The communicator with this hash, added (empty, size 0) when new. */
struct nw_ras_comm *nw_ras_comm_get(struct nw_ras *r, uint64_t hash);
/* The rank of c with this number, added (everything unknown) when new. */
struct nw_ras_rank *nw_ras_rank_get(struct nw_ras_comm *c, int rank);
/* Append a copy of s to a string list. */
void nw_ras_strlist_add(char ***list, size_t *n, const char *s);

/* The text format (r is initialised and its format set by the caller). */
int nw_ras_parse_text(const char *buf, size_t len, struct nw_ras *r, char *err, size_t errlen);

#endif
