/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvml_json: an NVML snapshot (gpu/nvml.h) as JSON, "schema":
 * "ncclwatch.nvml/1": what topo --json and doctor show, and the
 * recordings that scripts/gpu/record-fixtures.sh makes on a GPU machine,
 * which tests and --nvml-json replay. A value absent from the snapshot is
 * absent from the JSON, and the other way round.
 */
#ifndef NW_PROBE_NVML_JSON_H
#define NW_PROBE_NVML_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "gpu/nvml.h"

/* The snapshot as JSON; the caller owns the returned reference. */
json_t *nw_nvml_snap_to_json(const struct nw_nvml_snap *snap);
/* Fill snap from such JSON (or a recording); -1 with err on a malformed document. */
int nw_nvml_snap_from_json(const json_t *doc, struct nw_nvml_snap *snap, char *err, size_t errlen);
/* Load a recording from a file (snap->lib names it, "(replayed)"); -1 with err. */
int nw_nvml_snap_load(const char *path, struct nw_nvml_snap *snap, char *err, size_t errlen);

#endif
