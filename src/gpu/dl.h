/*
 * dl: how src/gpu/ opens a vendor library at run time (internal to the
 * gpu folder). Each library (cuda.c, nccl.c, nvml.c) lists the symbols it
 * uses in one table of {&pfn, names, required} rows, the pointers named
 * pfn_ and the vendor's name, never the vendor's name alone (the plugin is
 * a shared library and must not export or shadow them); nw_dl_resolve
 * fills the whole table from one dlopen handle. Each library resolves its
 * table once, under its own mutex, and keeps it for the process: a load
 * that fails is not kept, so a later call (another --nccl-lib, another
 * NCCLWATCH_NVML_LIB) tries again.
 */
#ifndef NW_GPU_DL_H
#define NW_GPU_DL_H

#include <stddef.h>

struct nw_dl_sym {
	void **pfn;           /* where the address goes; NULL when none of the names is found */
	const char *names[3]; /* the names to try, newest versioned entry point first */
	int required;         /* the library is unusable without it */
};

/*
 * Resolve every row of tab[0, n) from handle h. Returns NULL when every
 * required symbol was found, else the first required row that was not
 * (its names[0] is what a message should name).
 */
const struct nw_dl_sym *nw_dl_resolve(void *h, const struct nw_dl_sym *tab, size_t n);

/* The file the resolved symbol sym lives in (dladdr), else fallback, into out[len]. */
void nw_dl_path(void *sym, const char *fallback, char *out, size_t len);

#endif
