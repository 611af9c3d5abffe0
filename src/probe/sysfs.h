/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs: every read of /sys, /proc and /etc made by topo and doctor goes
 * through a root prefix, so tests (and users) can point the probes at a
 * recorded tree. The root is a function argument; nw_sys_root() picks
 * $NCCLWATCH_SYSROOT when the caller has none. "" means the live system.
 */
#ifndef NW_PROBE_SYSFS_H
#define NW_PROBE_SYSFS_H

#include <stddef.h>

/* arg when not NULL, else $NCCLWATCH_SYSROOT, else "" (the live system). */
const char *nw_sys_root(const char *arg);

/* printf into a path buffer; -1 when it does not fit (out is then ""). */
int nw_sys_fmt(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* root + path into out; -1 when it does not fit. */
int nw_sys_path(const char *root, const char *path, char *out, size_t len);

/*
 * First line of root+path, trailing white space removed, into buf.
 * Returns 0, or -1 when the file is missing or unreadable (buf is "").
 */
int nw_sys_line(const char *root, const char *path, char *buf, size_t len);

/* The first line parsed as a whole number (decimal or 0x hex); -1 on error. */
int nw_sys_long(const char *root, const char *path, long *out);

/* The whole file (NUL-terminated, at most max bytes); caller frees; NULL if missing. */
char *nw_sys_slurp(const char *root, const char *path, size_t max);

/*
 * Resolve symlinks of root+path inside the tree and return the result as
 * a path relative to the root ("/sys/devices/pci0000:00/0000:00:06.0").
 * Returns 0, or -1 when it does not exist or leaves the root.
 */
int nw_sys_resolve(const char *root, const char *path, char *out, size_t len);

/* Whether root+path exists (any type). */
int nw_sys_exists(const char *root, const char *path);

/*
 * Names in directory root+path, sorted, "." and ".." left out. *names is
 * a malloc'ed array of malloc'ed strings; free with nw_sys_free_names.
 * Returns the count, or -1 when the directory cannot be read.
 */
int nw_sys_list(const char *root, const char *path, char ***names);
void nw_sys_free_names(char **names, int n);

/*
 * Parse a Linux CPU list ("0-31,64-95") into a bit array of nbits bits
 * (bits[] has nbits/64 words, cleared first). Returns the number of CPUs
 * set, or -1 on malformed text or a CPU >= nbits.
 */
int nw_cpulist_parse(const char *s, unsigned long long *bits, int nbits);
/* Format a bit array as a CPU list ("0-31,64-95"). */
void nw_cpulist_format(const unsigned long long *bits, int nbits, char *buf, size_t len);

#endif
