/*
 * nccl: NCCL opened at run time (dlopen), never linked, no nccl.h needed.
 * Which NCCL is loaded, in order: --nccl-lib PATH, $NCCLWATCH_NCCL_LIB,
 * the one PyTorch would load (site-packages/nvidia/nccl/lib of the python3
 * on PATH, found without importing torch), then the system loader's search.
 */
#ifndef NW_GPU_NCCL_H
#define NW_GPU_NCCL_H

#include <stddef.h>

/* Where a candidate library came from. */
struct nw_nccl_where {
	char path[1024];
	char how[32];     /* "--nccl-lib", "NCCLWATCH_NCCL_LIB", "pytorch", "system" */
	char version[32]; /* "2.28.9" from the file's own version string, "" if unknown */
};

/*
 * Decide which NCCL would be loaded, without loading it. Returns 0 and
 * fills *w, or -1 with err naming what was tried and what to do.
 */
int nw_nccl_locate(const char *override_path, struct nw_nccl_where *w, char *err, size_t errlen);

/*
 * Every libnccl.so* visible on this machine (loader cache, LD_LIBRARY_PATH,
 * the python3's site-packages, CUDA and common prefixes), de-duplicated by
 * real path, with the version each file declares. *out is malloc'ed; the
 * caller frees it. Returns the count.
 */
size_t nw_nccl_find_all(struct nw_nccl_where **out);

/* The version a libnccl file declares ("NCCL version X" string); -1 if none. */
int nw_nccl_file_version(const char *path, char *ver, size_t len);

#endif
