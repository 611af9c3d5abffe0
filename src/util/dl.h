/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dl: a library opened at run time and the symbols used from it resolved
 * from one table, for every loader of the program: gpu/cuda.c, gpu/nccl.c,
 * gpu/nvml.c, comm/mpi_dl.c, export/mhd_dl.c, export/gzip.c, store/pq_dl.c.
 * (The profiler plugin links libc alone and has its own.)
 *
 * Symbols: each loader lists what it uses in one table of rows
 * {&pfn, {names}, required}. The pointers are static (or in a static
 * struct) and named pfn_ or after their role, never under the vendor's
 * own name: the plugin is a shared library, and a vendor's name in the
 * program would shadow the vendor's. A row may give older names after the
 * newest versioned one ("nvmlInit_v2", "nvmlInit"); the first found wins.
 * Optional rows may stay NULL and are checked where used.
 *
 * Initialise once: a loader keeps its state behind one struct nw_dl_once
 * and loads through nw_dl_once(), which runs the load function under the
 * once's mutex until one run succeeds; later calls only take the mutex and
 * return 0. Concurrent first calls wait for each other. A failed run is
 * not remembered, so a later call tries again (another --nccl-lib, a
 * library installed meanwhile); a loader that wants a failure kept (zlib:
 * replies go uncompressed) returns 0 and keeps the failure in its state.
 * pthread_once is not used: it takes no argument, reports no error and
 * never retries.
 */
#ifndef NW_UTIL_DL_H
#define NW_UTIL_DL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

/* One symbol of a table. */
struct nw_dl_sym {
	void **pfn;           /* where the address goes; NULL when none of the names is found */
	const char *names[3]; /* the names to try, newest versioned entry point first */
	int required;         /* the library is unusable without it */
};

/* Where a library is looked for. */
struct nw_dl_lib {
	const char *env;         /* a variable naming the file to open instead (NCCLWATCH_CUDA_LIB), or NULL */
	const char *sonames[3];  /* else these, in order (versioned sonames: "libcuda.so.1"), or paths */
	int global;              /* RTLD_GLOBAL, for a library whose own plugins resolve its symbols */
};

/* What nw_dl_load found. */
struct nw_dl {
	void *handle;          /* the open library; NULL when it was not loaded */
	char file[PATH_MAX];   /* the file asked for: the variable's value or the soname (the first tried, on failure) */
	char path[PATH_MAX];   /* the file loaded (where the loader found its symbols), else file */
	char why[256];         /* dlopen's message when it could not be opened, else "" */
	const char *missing;   /* the first required symbol not found (its newest name), else NULL */
};

/*
 * Open lib and resolve every row of tab[0, n) from it. 0 with out->handle
 * open for the life of the process; -1 with every pointer of tab NULL and
 * err saying what failed: "cannot open 'FILE' (WHY)" when no file could be
 * opened, or "'FILE' lacks SYMBOL" (out->missing set; the library is
 * closed again) when a required symbol is not there. Loaders add what to
 * do next.
 */
int nw_dl_load(const struct nw_dl_lib *lib, const struct nw_dl_sym *tab, size_t n, struct nw_dl *out, char *err,
               size_t errlen);

/* The state of one loader's "initialise once" (see above). */
struct nw_dl_once {
	pthread_mutex_t mu;
	int done;              /* under mu: a load succeeded */
};
#define NW_DL_ONCE_INIT { PTHREAD_MUTEX_INITIALIZER, 0 }

/*
 * Run load(arg, err, errlen) under once's mutex unless a run already
 * succeeded. Returns 0 when loaded (now or before), else load's -1 with
 * its err.
 */
int nw_dl_once(struct nw_dl_once *once, int (*load)(const void *arg, char *err, size_t errlen), const void *arg,
               char *err, size_t errlen);

#endif
