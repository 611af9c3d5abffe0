/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: errors, checked allocation, number and size parsing, clocks.
 *
 * Errors: modules fill a caller-supplied buffer (nw_seterr) and return -1;
 * only the command layer prints (nw_error, nw_warn) and returns the exit status.
 * Messages are lower-case, quote the thing named, and say what to do next.
 */
#ifndef NW_UTIL_H
#define NW_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NW_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NW_ERRLEN 512

/* Print "ncclwatch: error: ..." to stderr; returns -1. */
int nw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "ncclwatch: warning: ..." to stderr. */
void nw_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Format into err[len] (when err is not NULL); returns -1. */
int nw_seterr(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * An invariant that cannot fail unless the code is wrong (a fixed limit,
 * a table's shape): NW_BUG says where and what on stderr and aborts.
 */
_Noreturn void nw_bug(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define NW_BUG(...) nw_bug(__FILE__, __LINE__, __VA_ARGS__)
#define NW_ASSERT(cond) ((cond) ? (void)0 : nw_bug(__FILE__, __LINE__, "assertion failed: %s", #cond))

/* Allocation that cannot return NULL (dies with a message instead). */
void *nw_malloc(size_t n);
void *nw_calloc(size_t n, size_t size);
void *nw_realloc(void *p, size_t n);
char *nw_strdup(const char *s);
/* snprintf into a fresh buffer; caller frees. */
char *nw_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Copy with truncation, always NUL-terminated; returns strlen(src). */
size_t nw_strlcpy(char *dst, const char *src, size_t size);
/* The directory part of path into out: "." for a bare name, "/" for a file at the root. */
void nw_path_dir(const char *path, char *out, size_t outlen);

/*
 * Parse a byte size as nccl-tests does: a number (decimals allowed) with an
 * optional K, M or G suffix, 1024-based ("8", "1K", "1.5M", "8G").
 * Rejects empty strings, junk, negatives and overflow; names the text in err.
 */
int nw_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
/* Parse a whole number in [min, max]; "what" names the option in err. */
int nw_parse_long(const char *s, long min, long max, long *out, const char *what,
                  char *err, size_t errlen);
/* Parse a finite floating number in [min, max]. */
int nw_parse_double(const char *s, double min, double max, double *out, const char *what,
                    char *err, size_t errlen);
/* Parse a percentage ("5", "5%", "2.5") in [0, 1000] into a fraction (0.05). */
int nw_parse_percent(const char *s, double *out, const char *what, char *err, size_t errlen);
/* Parse a duration: "30", "30s", "10m", "1h", "500ms" into seconds. */
int nw_parse_duration(const char *s, double *out, char *err, size_t errlen);
/* Format bytes with a binary suffix ("1K", "64M", "8G") when exact, else a number. */
void nw_format_size(uint64_t bytes, char *buf, size_t len);

/* Monotonic clock in seconds. */
double nw_now(void);
/* Wall clock as ISO 8601 UTC ("2026-11-30T11:39:33Z"). */
void nw_utc_iso(char *buf, size_t len);
/* Hostname, never empty. */
void nw_hostname(char *buf, size_t len);

/* Flush stdout and report a write error (full disk, closed pipe) as -1. */
int nw_finish_stdout(void);

/* Read a whole small file into a NUL-terminated buffer (caller frees); NULL on error. */
char *nw_read_file(const char *path, size_t max, size_t *len_out);

/* The most threads nw_parallel runs (n is at most this). */
#define NW_PARALLEL_MAX 64
/*
 * Run fn(arg, i, n) for i in [0, n) on up to nthreads threads (the caller's
 * included, NW_PARALLEL_MAX at most) and wait for all. Falls back to running inline.
 */
void nw_parallel(int nthreads, void (*fn)(void *arg, int i, int n), void *arg);
/* Online CPUs, at least 1. */
int nw_ncpus(void);

#endif
