/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccltests: read nccl-tests outputs into the result model (bench/result.h).
 *
 * Text of every nccl-tests version (the old "error" column and the newer
 * "#wrong", "N/A", rows without in-place columns, several runs one after the
 * other, headers repeated by several processes, launcher prefixes such as
 * "[1,0]<stdout>:", rows cut by NCCL log lines), and the "-J" JSON file.
 * Each run gets: op ("all_reduce" from "all_reduce_perf"), nranks (from the
 * device list, else nThread * nGpus), backend "nccl-tests", source "import",
 * nccl_version ("2.28.9" from nccl-library=22809), host and gpus from the
 * device list, input (the path given), and in h.extra what the header said
 * (nccl_tests_version, nthreads, ngpus, iters, warmup_iters, validation,
 * graph, reported avg_busbw and out_of_bounds).
 */
#ifndef NW_NCCLTESTS_H
#define NW_NCCLTESTS_H

#include <stddef.h>

#include "model/result.h"

/*
 * Every regular file of directory dir (not those whose names start with
 * '.'; no subdirectories), in name order, as nw_nt_parse_path reads each:
 * their runs one after the other (each run's input is its file) and their
 * unparsed lines added up. -1 with err naming the file on the first read
 * error (no run is returned then).
 */
int nw_nt_parse_dir(const char *dir, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen);
/* Parse nccl-tests output (text of any version, or -J JSON) from path ("-" = stdin). A directory is refused, by name (nw_nt_parse_dir reads one). Returns the number of runs found (>= 0) and sets *runs to a malloc'ed array the caller frees (nw_run_release on each, then free); -1 with err filled on an I/O error. Unparsed lines are counted in *unparsed (may be NULL). */
int nw_nt_parse_path(const char *path, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen);
/*
 * The same from an open stream (not closed here), read line by line: text
 * of any size; a -J JSON document (first non-blank byte '{') is read whole,
 * up to 1 GiB. name is used in messages and recorded as the run's input.
 */
int nw_nt_parse_stream(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen);
/* A device list that no result table followed (an output cut before its table): ranks, hosts and their names. */
struct nw_nt_seen {
	int nranks, nhosts;
	char hosts[256];     /* "a, b" */
};
/* nw_nt_parse_path that also fills *seen (zeroed first; may be NULL) with the largest device list that had no table. */
int nw_nt_parse_path_seen(const char *path, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                          char *err, size_t errlen);
/* nw_nt_parse_stream that also fills *seen (zeroed first; may be NULL) like nw_nt_parse_path_seen. */
int nw_nt_parse_stream_seen(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                            char *err, size_t errlen);
int nw_nt_parse_buf(const char *buf, size_t len, const char *name, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen);

#endif
