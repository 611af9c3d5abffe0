/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclog: one-pass, bounded-memory reading of NCCL_DEBUG=INFO logs (NCCL
 * 2.4 to 2.28+), interleaved from many ranks and nodes, mixed with other
 * output (PyTorch, launchers, nccl-tests) and launcher prefixes.
 *
 * It gathers NCCL versions per process, communicators, the transport of
 * every connected peer pair, rings/trees/graphs, algorithms and protocols,
 * NCCL_* variables set by the environment, every WARN/error line grouped by
 * cause, PyTorch watchdog timeouts; then runs the diagnosis rules (one
 * table, docs/logscan.md lists their ids). Every table is capped: memory
 * does not grow with the log's length.
 */
#ifndef NW_NCCLOG_H
#define NW_NCCLOG_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

struct nw_log;

enum nw_log_severity { NW_LOG_INFO, NW_LOG_WARNING, NW_LOG_ERROR };

/* A fresh analysis; caller frees with nw_log_free. Never NULL. */
struct nw_log *nw_log_new(void);
void nw_log_free(struct nw_log *lg);

/* Feed one line (no newline; may hold any bytes). line is modified (prefix stripping). */
void nw_log_feed_line(struct nw_log *lg, char *line, size_t len);

/*
 * Feed a whole stream, read in large blocks; name is recorded as an input.
 * Returns 0, or -1 with err filled on a read error.
 */
int nw_log_feed_file(struct nw_log *lg, FILE *f, const char *name, char *err, size_t errlen);

/* Feed a buffer of many lines (for tests and fuzzing). */
void nw_log_feed_buf(struct nw_log *lg, const char *buf, size_t len);

/*
 * Run the diagnosis rules and build the report (schema "ncclwatch.logscan/1",
 * described in docs/logscan.md). Caller owns the returned object.
 */
json_t *nw_log_report(struct nw_log *lg);

/*
 * What the input looked like when no NCCL line was found in it: the
 * analysis is still valid, but a report of "nothing wrong" would mislead.
 */
enum nw_log_input_kind {
	NW_LOG_INPUT_LOG,       /* NCCL lines, or errors the rules read (PyTorch, crashes) */
	NW_LOG_INPUT_EMPTY,     /* nothing but blank lines */
	NW_LOG_INPUT_BINARY,    /* not text */
	NW_LOG_INPUT_NCCLTESTS, /* an nccl-tests result table without NCCL lines */
	NW_LOG_INPUT_TOPO,      /* nvidia-smi topo -m output */
	NW_LOG_INPUT_NO_NCCL,   /* text without NCCL lines or errors */
};
/* Call after nw_log_report. */
enum nw_log_input_kind nw_log_input_kind(const struct nw_log *lg);

/* Number of findings of error severity (diagnoses and WARN/error groups) in the last report. */
int nw_log_nerrors(const struct nw_log *lg);

/*
 * The diagnosis rules: id, severity and fix, for documentation and tests;
 * cause is the rule's keyword in the stable cause vocabulary of
 * docs/logscan.md ("shm_too_small", "ib_completion_error", ...).
 */
struct nw_log_rule_info {
	const char *id;
	enum nw_log_severity severity;
	const char *summary;
	const char *fix;
	const char *cause;
};
size_t nw_log_rules(const struct nw_log_rule_info **rules);

#endif
