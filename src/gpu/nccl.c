/* SPDX-License-Identifier: Apache-2.0 */
/* nccl: which NCCL to load, and the NCCL table opened at run time and resolved once (see nccl.h, util/dl.h). */
#include "gpu/nccl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/dl.h"
#include "util/util.h"

int nw_nccl_file_version(const char *path, char *ver, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 16) {
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	static const char key[] = "NCCL version ";
	int rc = -1;
	const char *p = map, *end = map + size;
	while ((p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1)) != NULL) {
		const char *v = p + sizeof(key) - 1;
		size_t n = 0;
		while (v + n < end && n < 31 && ((v[n] >= '0' && v[n] <= '9') || v[n] == '.'))
			n++;
		/* "NCCL version %s" format strings do not count; "2.28.9" does */
		if (n >= 5 && v[0] >= '1' && v[0] <= '9' && memchr(v, '.', n)) {
			if (n >= len)
				n = len - 1;
			memcpy(ver, v, n);
			ver[n] = '\0';
			rc = 0;
			break;
		}
		p = v;
	}
	munmap(map, size);
	return rc;
}

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * The NCCL PyTorch would load: site-packages/nvidia/nccl/lib of the
 * python3 on PATH, looked for under that python's prefix (as found on
 * PATH, which is the venv, and as resolved, which is the base install).
 */
static int pytorch_nccl(char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		return -1;
	char *copy = nw_strdup(path);
	int found = -1;
	for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && found; dir = strtok_r(NULL, ":", &save)) {
		char py[PATH_MAX];
		if (snprintf(py, sizeof(py), "%s/python3", dir) >= (int)sizeof(py) || access(py, X_OK) != 0)
			continue;
		char prefixes[2][PATH_MAX];
		snprintf(prefixes[0], sizeof(prefixes[0]), "%s/..", dir);
		char real[PATH_MAX];
		int np = 1;
		if (realpath(py, real)) {
			char *slash = strrchr(real, '/');
			if (slash) {
				*slash = '\0';
				snprintf(prefixes[1], sizeof(prefixes[1]), "%s/..", real);
				np = 2;
			}
		}
		for (int i = 0; i < np && found; i++) {
			static const char *const pats[] = {
				"%s/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
				"%s/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
				"%s/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
			};
			for (size_t k = 0; k < NW_ARRAY_LEN(pats) && found; k++) {
				char pat[PATH_MAX + 128];
				snprintf(pat, sizeof(pat), pats[k], prefixes[i]);
				glob_t g;
				if (glob(pat, 0, NULL, &g) == 0) {
					for (size_t j = g.gl_pathc; j-- > 0 && found;) {
						if (realpath(g.gl_pathv[j], real) && is_file(real)) {
							nw_strlcpy(out, g.gl_pathv[j], len);
							found = 0;
						}
					}
				}
				globfree(&g);
			}
		}
		break; /* only the first python3 on PATH is "the" python3 */
	}
	free(copy);
	return found;
}

/* Directories the system loader searches, in its order (approximately). */
static size_t loader_dirs(char dirs[][PATH_MAX], size_t max)
{
	size_t n = 0;
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (llp) {
		char *copy = nw_strdup(llp);
		for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && n < max; d = strtok_r(NULL, ":", &save))
			if (*d)
				nw_strlcpy(dirs[n++], d, PATH_MAX);
		free(copy);
	}
	FILE *p = popen("/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null", "r");
	if (p) {
		char line[PATH_MAX + 64];
		while (fgets(line, sizeof(line), p)) {
			char *arrow = strstr(line, "=> ");
			if (!strstr(line, "libnccl.so") || !arrow)
				continue;
			char *file = arrow + 3;
			file[strcspn(file, "\n")] = '\0';
			char *slash = strrchr(file, '/');
			if (!slash || n >= max)
				continue;
			*slash = '\0';
			nw_strlcpy(dirs[n++], file, PATH_MAX);
		}
		pclose(p);
	}
	static const char *const std_dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(std_dirs) && n < max; i++)
		nw_strlcpy(dirs[n++], std_dirs[i], PATH_MAX);
	return n;
}

static void fill(struct nw_nccl_where *w, const char *path, const char *how)
{
	memset(w, 0, sizeof(*w));
	nw_strlcpy(w->path, path, sizeof(w->path));
	nw_strlcpy(w->how, how, sizeof(w->how));
	if (nw_nccl_file_version(path, w->version, sizeof(w->version)) != 0)
		w->version[0] = '\0';
}

int nw_nccl_locate(const char *override_path, struct nw_nccl_where *w, char *err, size_t errlen)
{
	if (override_path && *override_path) {
		if (!is_file(override_path))
			return nw_seterr(err, errlen, "--nccl-lib '%s' is not a readable file", override_path);
		fill(w, override_path, "--nccl-lib");
		return 0;
	}
	const char *env = getenv("NCCLWATCH_NCCL_LIB");
	if (env && *env) {
		if (!is_file(env))
			return nw_seterr(err, errlen, "NCCLWATCH_NCCL_LIB='%s' is not a readable file; fix or unset it", env);
		fill(w, env, "NCCLWATCH_NCCL_LIB");
		return 0;
	}
	char path[PATH_MAX];
	if (pytorch_nccl(path, sizeof(path)) == 0) {
		fill(w, path, "pytorch");
		return 0;
	}
	static char dirs[64][PATH_MAX];
	size_t nd = loader_dirs(dirs, NW_ARRAY_LEN(dirs));
	for (size_t i = 0; i < nd; i++) {
		snprintf(path, sizeof(path), "%s/libnccl.so.2", dirs[i]);
		if (is_file(path)) {
			fill(w, path, "system");
			return 0;
		}
	}
	return nw_seterr(err, errlen,
	                 "no NCCL found: not in --nccl-lib, NCCLWATCH_NCCL_LIB, the python3 on PATH "
	                 "(site-packages/nvidia/nccl/lib) or the system loader's path; install NCCL "
	                 "(libnccl2, or pip install nvidia-nccl-cu12) or pass --nccl-lib PATH");
}

static void add_unique(struct nw_nccl_where **out, size_t *n, size_t *cap, const char *path, const char *how)
{
	char real[PATH_MAX];
	if (!realpath(path, real) || !is_file(real))
		return;
	for (size_t i = 0; i < *n; i++) {
		char r2[PATH_MAX];
		if (realpath((*out)[i].path, r2) && !strcmp(r2, real))
			return;
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*out = nw_realloc(*out, *cap * sizeof(**out));
	}
	fill(&(*out)[(*n)++], path, how);
}

size_t nw_nccl_find_all(struct nw_nccl_where **out)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	char path[PATH_MAX];
	if (pytorch_nccl(path, sizeof(path)) == 0)
		add_unique(out, &n, &cap, path, "pytorch");
	static char dirs[64][PATH_MAX];
	size_t nd = loader_dirs(dirs, NW_ARRAY_LEN(dirs));
	for (size_t i = 0; i < nd; i++) {
		snprintf(path, sizeof(path), "%s/libnccl.so.2", dirs[i]);
		add_unique(out, &n, &cap, path, "system");
	}
	static const char *const pats[] = {
		"/usr/local/cuda*/lib*/libnccl.so.2", "/usr/local/cuda*/targets/*/lib/libnccl.so.2",
		"/usr/local/lib/libnccl.so.2", "/opt/*/lib/libnccl.so.2",
		"/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
		"/usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
		"/opt/*/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/opt/conda/lib/libnccl.so.2", "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/root/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
	};
	for (size_t k = 0; k < NW_ARRAY_LEN(pats); k++) {
		glob_t g;
		if (glob(pats[k], 0, NULL, &g) == 0)
			for (size_t j = 0; j < g.gl_pathc; j++)
				add_unique(out, &n, &cap, g.gl_pathv[j], "found");
		globfree(&g);
	}
	const char *conda = getenv("CONDA_PREFIX");
	if (conda) {
		snprintf(path, sizeof(path), "%s/lib/libnccl.so.2", conda);
		add_unique(out, &n, &cap, path, "conda");
	}
	return n;
}

static struct nw_nccl nccl;
static struct nw_dl_once once = NW_DL_ONCE_INIT; /* nccl is resolved */

/* Required since NCCL 2.7; the others are NULL in older NCCLs and checked where used. */
static const struct nw_dl_sym syms[] = {
	{ (void **)&nccl.pfn_ncclGetVersion, { "ncclGetVersion" }, 1 },
	{ (void **)&nccl.pfn_ncclGetUniqueId, { "ncclGetUniqueId" }, 1 },
	{ (void **)&nccl.pfn_ncclCommInitRank, { "ncclCommInitRank" }, 1 },
	{ (void **)&nccl.pfn_ncclCommInitRankConfig, { "ncclCommInitRankConfig" }, 0 },
	{ (void **)&nccl.pfn_ncclCommDestroy, { "ncclCommDestroy" }, 1 },
	{ (void **)&nccl.pfn_ncclCommAbort, { "ncclCommAbort" }, 1 },
	{ (void **)&nccl.pfn_ncclCommGetAsyncError, { "ncclCommGetAsyncError" }, 1 },
	{ (void **)&nccl.pfn_ncclGetErrorString, { "ncclGetErrorString" }, 1 },
	{ (void **)&nccl.pfn_ncclGetLastError, { "ncclGetLastError" }, 0 },
	{ (void **)&nccl.pfn_ncclGroupStart, { "ncclGroupStart" }, 1 },
	{ (void **)&nccl.pfn_ncclGroupEnd, { "ncclGroupEnd" }, 1 },
	{ (void **)&nccl.pfn_ncclAllReduce, { "ncclAllReduce" }, 1 },
	{ (void **)&nccl.pfn_ncclAllGather, { "ncclAllGather" }, 1 },
	{ (void **)&nccl.pfn_ncclReduceScatter, { "ncclReduceScatter" }, 1 },
	{ (void **)&nccl.pfn_ncclBroadcast, { "ncclBroadcast" }, 1 },
	{ (void **)&nccl.pfn_ncclReduce, { "ncclReduce" }, 1 },
	{ (void **)&nccl.pfn_ncclSend, { "ncclSend" }, 1 },
	{ (void **)&nccl.pfn_ncclRecv, { "ncclRecv" }, 1 },
	{ (void **)&nccl.pfn_ncclAlltoAll, { "ncclAlltoAll" }, 0 },
	{ (void **)&nccl.pfn_ncclGather, { "ncclGather" }, 0 },
	{ (void **)&nccl.pfn_ncclScatter, { "ncclScatter" }, 0 },
	{ (void **)&nccl.pfn_ncclCommSplit, { "ncclCommSplit" }, 0 },
	{ (void **)&nccl.pfn_ncclCommUserRank, { "ncclCommUserRank" }, 0 },
	{ (void **)&nccl.pfn_ncclCommCount, { "ncclCommCount" }, 0 },
	{ (void **)&nccl.pfn_ncclMemAlloc, { "ncclMemAlloc" }, 0 },
	{ (void **)&nccl.pfn_ncclMemFree, { "ncclMemFree" }, 0 },
	{ (void **)&nccl.pfn_ncclCommRegister, { "ncclCommRegister" }, 0 },
	{ (void **)&nccl.pfn_ncclCommDeregister, { "ncclCommDeregister" }, 0 },
	{ (void **)&nccl.pfn_ncclCommWindowRegister, { "ncclCommWindowRegister" }, 0 },
	{ (void **)&nccl.pfn_ncclCommWindowDeregister, { "ncclCommWindowDeregister" }, 0 },
	{ (void **)&nccl.pfn_ncclRedOpCreatePreMulSum, { "ncclRedOpCreatePreMulSum" }, 0 },
	{ (void **)&nccl.pfn_ncclRedOpDestroy, { "ncclRedOpDestroy" }, 0 },
};

/* ncclGetVersion's code as text: 22809 -> "2.28.9" (2.8 and older: 2708 -> "2.7.8"). */
static void version_text(int v, char *out, size_t len)
{
	int major = v >= 10000 ? v / 10000 : v / 1000;
	int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
	int patch = v >= 10000 ? v % 100 : v % 100;
	snprintf(out, len, "%d.%d.%d", major, minor, patch);
}

/*
 * With libncclwatch-interpose.so LD_PRELOADed, the calls it wraps go
 * through it, as the loader binds them for a program linked with NCCL
 * (PyTorch's extension included): the interposer's definitions come first
 * in the global scope. The NCCL dlopen()ed here stays local, as PyTorch's
 * is, and the interposer finds it by itself (docs/plugin.md).
 */
static void through_interposer(void)
{
	static const char name[] = "libncclwatch-interpose.so";
	for (size_t i = 0; i < NW_ARRAY_LEN(syms); i++) {
		void *g = dlsym(RTLD_DEFAULT, syms[i].names[0]);
		Dl_info di;
		if (!g || !*syms[i].pfn || !dladdr(g, &di) || !di.dli_fname)
			continue;
		const char *base = strrchr(di.dli_fname, '/');
		if (strcmp(base ? base + 1 : di.dli_fname, name))
			continue;
		*syms[i].pfn = g;
		nw_strlcpy(nccl.interposer, di.dli_fname, sizeof(nccl.interposer));
	}
}

/*
 * Locate NCCL (nw_nccl_locate; else whatever the system loader finds),
 * dlopen it, resolve the table and ask its version. arg: the --nccl-lib
 * path or NULL. 0, or -1 with err.
 */
static int load(const void *arg, char *err, size_t errlen)
{
	const char *override_path = arg;
	struct nw_nccl_where w;
	char lerr[NW_ERRLEN];
	int located = nw_nccl_locate(override_path, &w, lerr, sizeof(lerr)) == 0;
	if (!located && ((override_path && *override_path) || getenv("NCCLWATCH_NCCL_LIB")))
		return nw_seterr(err, errlen, "%s", lerr);
	const struct nw_dl_lib lib = { NULL, { located ? w.path : "libnccl.so.2" }, 0 };
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (nw_dl_load(&lib, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why))) {
		if (dl.missing)
			return nw_seterr(err, errlen, "NCCL %s: it is older than 2.7, which ncclwatch needs; use a newer "
			                 "NCCL (--nccl-lib PATH)", why);
		if (located)
			return nw_seterr(err, errlen, "cannot load NCCL '%s' (%s): %s", w.path, w.how, dl.why);
		return nw_seterr(err, errlen, "%s", lerr);
	}
	if (!located) {
		memset(&w, 0, sizeof(w));
		nw_strlcpy(w.path, dl.path, sizeof(w.path));
		nw_strlcpy(w.how, "system", sizeof(w.how));
	}
	nccl.where = w;
	through_interposer();
	int v = 0;
	nccl.pfn_ncclGetVersion(&v);
	nccl.version_code = v;
	version_text(v, nccl.version, sizeof(nccl.version));
	if (!nccl.where.version[0])
		nw_strlcpy(nccl.where.version, nccl.version, sizeof(nccl.where.version));
	return 0;
}

const struct nw_nccl *nw_nccl_load(const char *override_path, char *err, size_t errlen)
{
	return nw_dl_once(&once, load, override_path, err, errlen) ? NULL : &nccl;
}

const char *nw_nccl_strerror(const struct nw_nccl *nc, nw_ncclComm_t comm, nw_ncclResult_t r,
                             char *buf, size_t len)
{
	const char *s = nc->pfn_ncclGetErrorString ? nc->pfn_ncclGetErrorString(r) : "unknown";
	const char *last = nc->pfn_ncclGetLastError ? nc->pfn_ncclGetLastError(comm) : NULL;
	if (last && *last)
		snprintf(buf, len, "%s (NCCL error %d; last error: %s)", s, r, last);
	else
		snprintf(buf, len, "%s (NCCL error %d)", s, r);
	return buf;
}
