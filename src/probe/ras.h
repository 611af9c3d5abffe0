/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ras (probe): ask a running job's NCCL RAS port for its status
 * (docs/ras.md). NCCL 2.24 and newer listen on NCCL_RAS_ADDR, by default
 * localhost:28028, on every node of the job.
 *
 * The exchange is ncclras's: "CLIENT PROTOCOL 2" -> "SERVER PROTOCOL n";
 * "TIMEOUT s" -> "OK" (how long RAS may wait for other processes);
 * "SET FORMAT json" -> "OK" from 2.28.7 (older NCCL answers "ERROR: Unknown
 * command", and the text format is used); "VERBOSE STATUS" -> the answer,
 * until the server closes the connection.
 */
#ifndef NW_PROBE_RAS_H
#define NW_PROBE_RAS_H

#include "parse/ras.h"

/* The default total timeout, seconds (connect + whole answer). */
#define NW_RAS_TIMEOUT_S 5.0
/* The most a RAS answer may be. */
#define NW_RAS_MAX_ANSWER (64u << 20)

/* NCCL_RAS_ADDR when set and not empty, else "localhost:28028". */
const char *nw_ras_default_addr(void);

/*
 * Query the RAS port at addr ("host:port", "[v6]:port", "v6:port" split at
 * the last ':', or NULL for nw_ras_default_addr()) within timeout_s seconds
 * in all (<= 0: NW_RAS_TIMEOUT_S); text_only skips "SET FORMAT json".
 * Never blocks past the timeout, except in resolving a host name (numeric
 * addresses and localhost need no resolver). Fills *out (release with
 * nw_ras_release, also after an error); -1 with err naming the problem:
 * refused, timed out after N s, closed early, not a RAS server, garbage.
 */
int nw_ras_query(const char *addr, double timeout_s, int text_only, struct nw_ras *out, char *err, size_t errlen);

#endif
