/* SPDX-License-Identifier: Apache-2.0 */
/*
 * livemode: how a training job on this node can be watched live, decided
 * once for `ncclwatch env`, `ncclwatch run` and the doctor's check.
 *
 * The NCCL the job will load (found as `ncclwatch version` finds it: the
 * --nccl-lib path, NCCLWATCH_NCCL_LIB, PyTorch's, the system's) decides:
 *   - 2.23 and newer have a profiler interface (2.23 v1, 2.24-2.25 v2,
 *     2.26 v3, 2.27 v4, 2.28 v5, 2.29+ v6): the profiler plugin, through
 *     NCCL_PROFILER_PLUGIN=<path of libnccl-profiler-ncclwatch.so>;
 *   - 2.18 to 2.22 have none: the interposer, through
 *     LD_PRELOAD=<path of libncclwatch-interpose.so> (before any LD_PRELOAD);
 *   - older NCCLs: no live monitoring.
 * Both libraries are looked for beside the running binary (a source tree's
 * build/, the portable files), in the install layout relative to it
 * (bin/../lib, lib64, lib/<multiarch>), then in the usual library
 * directories. A plugin that does not export the profiler table its NCCL
 * asks for (an older build) counts as unusable for that NCCL.
 *
 * nw_live_decide is pure (tests feed it recorded facts); nw_live_probe
 * gathers the facts of this machine and decides.
 */
#ifndef NW_PROBE_LIVEMODE_H
#define NW_PROBE_LIVEMODE_H

#include <stddef.h>

#define NW_LIVE_PLUGIN_FILE "libnccl-profiler-ncclwatch.so"
#define NW_LIVE_INTERPOSE_FILE "libncclwatch-interpose.so"
/* The oldest NCCL the interposer serves, and the first with a profiler interface (codes as 22809). */
#define NW_LIVE_INTERPOSE_MIN 21800
#define NW_LIVE_PROFILER_MIN 22300

enum nw_live_mode {
	NW_LIVE_NONE,      /* no live monitoring: why says so */
	NW_LIVE_PLUGIN,    /* NCCL_PROFILER_PLUGIN */
	NW_LIVE_INTERPOSE, /* LD_PRELOAD */
};

/* Where one of the two libraries was looked for, and what was found. */
struct nw_live_lib {
	int found;             /* 1: path is a readable file */
	char path[1024];       /* the file found, or "" */
	char looked[1536];     /* the directories looked in, ", "-separated (for messages) */
	unsigned abis;         /* plugin: bit N set when it exports ncclProfiler_vN; 0 not read */
	char why[256];         /* plugin: why its tables could not be read, "" when they were */
};

/* The facts the decision reads. */
struct nw_live_facts {
	int nccl_found;          /* the NCCL the job loads is known */
	char nccl_path[1024];
	char nccl_how[32];       /* "--nccl-lib", "NCCLWATCH_NCCL_LIB", "pytorch", "system" */
	char nccl_version[32];   /* "2.28.9"; "" when its file does not say */
	char nccl_err[512];      /* why no NCCL was found */
	struct nw_live_lib plugin, interpose;
};

/* What a job gets. */
struct nw_live {
	enum nw_live_mode mode;
	int abi;                 /* the profiler interface NCCL will use (1..6); 0 none or unknown */
	int version_code;        /* 22809; 0 unknown */
	char file[1024];         /* the library to load: the plugin or the interposer; "" with NW_LIVE_NONE */
	char why[768];           /* one or two sentences: which mode and why (or why none) */
};

/* "2.28.9" -> 22809 (NCCL's own coding, minor < 100); -1 when it is not a version. */
int nw_live_version_code(const char *version);

/* The profiler interface an NCCL version code loads (2.23 -> 1 ... 2.29+ -> 6); 0 before 2.23. */
int nw_live_abi(int version_code);

/* Decide the mode from facts (no I/O). out is filled in every case. */
void nw_live_decide(const struct nw_live_facts *f, struct nw_live *out);

/*
 * Gather the facts of this machine into f: the NCCL (nccl_lib as
 * --nccl-lib; NULL searches), both libraries (found relative to exe, the
 * running binary's path: NULL reads /proc/self/exe), the plugin's tables.
 */
void nw_live_gather(const char *nccl_lib, const char *exe, struct nw_live_facts *f);

/* Only the libraries of f (plugin, interposer and the plugin's tables), relative to exe (NULL: /proc/self/exe). */
void nw_live_find_libs(const char *exe, struct nw_live_facts *f);

/* nw_live_gather then nw_live_decide. */
void nw_live_probe(const char *nccl_lib, struct nw_live_facts *f, struct nw_live *out);

/* "plugin", "interposer", "none". */
const char *nw_live_mode_name(enum nw_live_mode m);

/*
 * The variable a mode sets and its value, given the job's current
 * LD_PRELOAD (NULL or "" when none): NCCL_PROFILER_PLUGIN=<file>, or
 * LD_PRELOAD=<file>[:<preload>] (the interposer first; not repeated when
 * the preload already holds it). name and value are "" for NW_LIVE_NONE.
 */
void nw_live_setting(const struct nw_live *l, const char *preload, char *name, size_t namelen, char *value,
                     size_t valuelen);

#endif
