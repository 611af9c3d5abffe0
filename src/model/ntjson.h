/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ntjson: nccl-tests' own -J JSON (file version 3, as nccl-tests 2.19
 * writes it: key order, "true"/"false" strings, %lf numbers, "root" as a
 * six-wide string), so that tools written for nccl-tests read ours
 * unchanged. ncclwatch's richer document is model/result.h's.
 */
#ifndef NW_MODEL_NTJSON_H
#define NW_MODEL_NTJSON_H

#include <stdint.h>
#include <stdio.h>

#include "model/result.h"

#define NW_NT_JSON_VERSION 3

/* What nccl-tests' "config" object says, from the caller's options. */
struct nw_nt_config {
	int nthreads, ngpus;             /* -t, GPUs per thread */
	uint64_t min_bytes, max_bytes;   /* -b, -e */
	double step_factor;              /* -f; step_bytes is written when this is <= 1 */
	uint64_t step_bytes;             /* -i */
	int warmup, iters, agg_iters;    /* -w, -n, -m */
	int validation, graph, blocking; /* -c, -G, -z */
	int per_iter, per_iter_skip;     /* -I, -K */
	int parallel_init;               /* -p */
	char start_time[32];             /* "2026-12-01 14:09:13", local time (nw_nt_json_now) */
	const char *prog;                /* written first in "args" ("ncclwatch"); NULL: none */
	int argc;
	char **argv;                     /* the command line, written as "args" after prog */
	char **envp;                     /* the environment, written as "env" (nccl-tests writes all of it) */
};

/* Now as nccl-tests writes its times: "%Y-%m-%d %H:%M:%S", local time. */
void nw_nt_json_now(char *buf, size_t len);

/* NCCL's version code from "2.28.9" (22809; 2.8.4 and older: 2804); 0 when not a version. */
int nw_nt_version_code(const char *version);

/*
 * Write one document for the rows of op (out-of-place and in-place of the
 * same size, type, reduction and root paired in one result) to f. The
 * devices come from run->h.extra "devices" (bench gathers them). Returns
 * 0, or -1 on a write error (errno set).
 */
int nw_nt_write_json(FILE *f, const struct nw_run *run, const char *op, const struct nw_nt_config *cfg);

#endif
