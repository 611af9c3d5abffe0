/* SPDX-License-Identifier: Apache-2.0 */
/*
 * livemode: which way a job on this node is watched live (the profiler
 * plugin, the interposer, or nothing) and the file that does it; one
 * decision for env, run and doctor (livemode.h).
 */
#include "probe/livemode.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/nccl.h"
#include "util/strbuf.h"
#include "util/util.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__powerpc64__)
#define MULTIARCH "powerpc64le-linux-gnu"
#else
#define MULTIARCH ""
#endif

int nw_live_version_code(const char *version)
{
	int major, minor, patch = 0;
	if (!version || sscanf(version, "%d.%d.%d", &major, &minor, &patch) < 2 || major < 1 || minor < 0 ||
	    minor > 99 || patch < 0 || patch > 99)
		return -1;
	return major * 10000 + minor * 100 + patch;
}

int nw_live_abi(int code)
{
	static const struct {
		int from, abi;
	} t[] = { { 22900, 6 }, { 22800, 5 }, { 22700, 4 }, { 22600, 3 }, { 22400, 2 }, { 22300, 1 } };
	for (size_t i = 0; i < NW_ARRAY_LEN(t); i++)
		if (code >= t[i].from)
			return t[i].abi;
	return 0;
}

const char *nw_live_mode_name(enum nw_live_mode m)
{
	return m == NW_LIVE_PLUGIN ? "plugin" : m == NW_LIVE_INTERPOSE ? "interposer" : "none";
}

/* "v4, v5, v6" for the tables bits holds, into sb. */
static void abis_text(struct nw_strbuf *sb, unsigned bits)
{
	int n = 0;
	for (int v = 1; v < 32; v++)
		if (bits & (1u << v))
			nw_strbuf_addf(sb, "%sv%d", n++ ? ", " : "", v);
	if (!n)
		nw_strbuf_addstr(sb, "none");
}

/* Why the plugin cannot serve profiler interface abi (0: any), into sb; 0 when it can. */
static int plugin_unusable(const struct nw_live_lib *p, int abi, struct nw_strbuf *sb)
{
	if (!p->found) {
		nw_strbuf_addf(sb, "the plugin %s is not installed (looked in %s)", NW_LIVE_PLUGIN_FILE,
		               p->looked[0] ? p->looked : "no directory");
		return 1;
	}
	if (p->why[0]) {
		nw_strbuf_addf(sb, "the plugin %s cannot be loaded (%s)", p->path, p->why);
		return 1;
	}
	if (abi > 0 && p->abis && !(p->abis & (1u << abi))) {
		nw_strbuf_addf(sb, "the plugin %s exports no ncclProfiler_v%d (only ", p->path, abi);
		abis_text(sb, p->abis);
		nw_strbuf_addstr(sb, ": an older build; install a newer ncclwatch)");
		return 1;
	}
	return 0;
}

static void set_mode(struct nw_live *out, enum nw_live_mode m, const char *file, struct nw_strbuf *why)
{
	out->mode = m;
	nw_strlcpy(out->file, m == NW_LIVE_NONE ? "" : file, sizeof(out->file));
	nw_strlcpy(out->why, why->buf, sizeof(out->why));
}

/* An NCCL whose version is not known here: the plugin is set in case it has a profiler interface. */
static void decide_unknown(const struct nw_live_facts *f, struct nw_live *out, struct nw_strbuf *why)
{
	if (!f->nccl_found)
		nw_strbuf_addf(why, "the job's NCCL was not found from here (%s)", f->nccl_err[0] ? f->nccl_err : "no NCCL");
	else
		nw_strbuf_addf(why, "the NCCL at %s does not say its version", f->nccl_path);
	struct nw_strbuf un;
	nw_strbuf_init(&un);
	if (plugin_unusable(&f->plugin, 0, &un)) {
		nw_strbuf_addf(why, ", and %s: no live monitoring", un.buf);
		set_mode(out, NW_LIVE_NONE, "", why);
	} else {
		nw_strbuf_addstr(why, ": the plugin is set anyway (an NCCL of 2.23 or newer loads it, an older one "
		                      "ignores it); name the job's library with --nccl-lib to be sure");
		set_mode(out, NW_LIVE_PLUGIN, f->plugin.path, why);
	}
	nw_strbuf_release(&un);
}

/* An NCCL of 2.18 or newer without a usable plugin: the interposer when it is installed. */
static void decide_interpose(const struct nw_live_facts *f, struct nw_live *out, struct nw_strbuf *why)
{
	const struct nw_live_lib *ip = &f->interpose;
	if (ip->found) {
		nw_strbuf_addf(why, ": the interposer %s, through LD_PRELOAD", ip->path);
		set_mode(out, NW_LIVE_INTERPOSE, ip->path, why);
	} else {
		nw_strbuf_addf(why, ", and the interposer %s is not installed (looked in %s): no live monitoring",
		               NW_LIVE_INTERPOSE_FILE, ip->looked[0] ? ip->looked : "no directory");
		set_mode(out, NW_LIVE_NONE, "", why);
	}
}

void nw_live_decide(const struct nw_live_facts *f, struct nw_live *out)
{
	struct nw_strbuf why;
	memset(out, 0, sizeof(*out));
	nw_strbuf_init(&why);
	int code = f->nccl_found ? nw_live_version_code(f->nccl_version) : -1;
	if (code < 0) {
		decide_unknown(f, out, &why);
		nw_strbuf_release(&why);
		return;
	}
	out->version_code = code;
	out->abi = nw_live_abi(code);
	nw_strbuf_addf(&why, "NCCL %s (%s, chosen by %s)", f->nccl_version, f->nccl_path, f->nccl_how);
	if (out->abi > 0) {
		nw_strbuf_addf(&why, " has profiler interface v%d", out->abi);
		struct nw_strbuf un;
		nw_strbuf_init(&un);
		if (!plugin_unusable(&f->plugin, out->abi, &un)) {
			nw_strbuf_addf(&why, ": the plugin %s", f->plugin.path);
			set_mode(out, NW_LIVE_PLUGIN, f->plugin.path, &why);
		} else {
			nw_strbuf_addf(&why, " but %s", un.buf);
			decide_interpose(f, out, &why);
		}
		nw_strbuf_release(&un);
	} else if (code >= NW_LIVE_INTERPOSE_MIN) {
		nw_strbuf_addstr(&why, " has no profiler interface (NCCL 2.23 and newer have one)");
		decide_interpose(f, out, &why);
	} else {
		nw_strbuf_addstr(&why, " is older than 2.18: it has no profiler interface (2.23 and newer) and the "
		                       "interposer serves 2.18 and newer, so live monitoring is not available "
		                       "(a newer NCCL, e.g. a newer PyTorch, has it)");
		set_mode(out, NW_LIVE_NONE, "", &why);
	}
	nw_strbuf_release(&why);
}

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

/* Add dir (made canonical) to dirs[0..*n) when it exists and is not there yet. */
static void add_dir(char (*dirs)[PATH_MAX], size_t *n, size_t max, const char *dir)
{
	char real[PATH_MAX];
	struct stat st;
	if (*n >= max || !realpath(dir, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(dirs[i], real))
			return;
	nw_strlcpy(dirs[(*n)++], real, PATH_MAX);
}

/*
 * The directories a library of ncclwatch is looked for in, in order: the
 * binary's own (build/, portable files), the install layout around it,
 * then the usual library directories.
 */
static size_t search_dirs(const char *exe, char (*dirs)[PATH_MAX], size_t max)
{
	size_t n = 0;
	char self[PATH_MAX] = "";
	if (exe)
		nw_strlcpy(self, exe, sizeof(self));
	else {
		ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[k > 0 ? k : 0] = '\0';
	}
	if (self[0]) {
		char bin[PATH_MAX], d[PATH_MAX + 32];
		nw_path_dir(self, bin, sizeof(bin));
		static const char *const rel[] = { "", "/../lib", "/../lib64", ("/../lib/" MULTIARCH) };
		for (size_t i = 0; i < NW_ARRAY_LEN(rel); i++) {
			snprintf(d, sizeof(d), "%s%s", bin, rel[i]);
			add_dir(dirs, &n, max, d);
		}
	}
	static const char *const usual[] = { "/usr/local/lib", "/usr/local/lib64", ("/usr/lib/" MULTIARCH), "/usr/lib64",
	                                     "/usr/lib" };
	for (size_t i = 0; i < NW_ARRAY_LEN(usual); i++)
		add_dir(dirs, &n, max, usual[i]);
	return n;
}

static void find_lib(char (*dirs)[PATH_MAX], size_t nd, const char *name, struct nw_live_lib *lib)
{
	struct nw_strbuf looked;
	nw_strbuf_init(&looked);
	for (size_t i = 0; i < nd; i++) {
		char p[PATH_MAX + 64];
		nw_strbuf_addf(&looked, "%s%s", i ? ", " : "", dirs[i]);
		snprintf(p, sizeof(p), "%s/%s", dirs[i], name);
		if (!lib->found && is_file(p)) {
			lib->found = 1;
			nw_strlcpy(lib->path, p, sizeof(lib->path));
		}
	}
	nw_strlcpy(lib->looked, looked.buf, sizeof(lib->looked));
	nw_strbuf_release(&looked);
}

/* Which ncclProfiler_vN tables the plugin exports (it links libc alone and runs nothing at load). */
static void plugin_tables(struct nw_live_lib *p)
{
	void *h = dlopen(p->path, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		nw_strlcpy(p->why, e ? e : "dlopen failed", sizeof(p->why));
		return;
	}
	for (int v = 1; v <= 9; v++) {
		char sym[32];
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
		if (dlsym(h, sym))
			p->abis |= 1u << v;
	}
	dlclose(h);
	if (!p->abis)
		nw_strlcpy(p->why, "it exports no ncclProfiler_v* table", sizeof(p->why));
}

void nw_live_gather(const char *nccl_lib, const char *exe, struct nw_live_facts *f)
{
	memset(f, 0, sizeof(*f));
	struct nw_nccl_where w;
	if (nw_nccl_locate(nccl_lib, &w, f->nccl_err, sizeof(f->nccl_err)) == 0) {
		f->nccl_found = 1;
		nw_strlcpy(f->nccl_path, w.path, sizeof(f->nccl_path));
		nw_strlcpy(f->nccl_how, w.how, sizeof(f->nccl_how));
		nw_strlcpy(f->nccl_version, w.version, sizeof(f->nccl_version));
	}
	nw_live_find_libs(exe, f);
}

void nw_live_find_libs(const char *exe, struct nw_live_facts *f)
{
	static char dirs[16][PATH_MAX];
	memset(&f->plugin, 0, sizeof(f->plugin));
	memset(&f->interpose, 0, sizeof(f->interpose));
	size_t nd = search_dirs(exe, dirs, NW_ARRAY_LEN(dirs));
	find_lib(dirs, nd, NW_LIVE_PLUGIN_FILE, &f->plugin);
	find_lib(dirs, nd, NW_LIVE_INTERPOSE_FILE, &f->interpose);
	if (f->plugin.found)
		plugin_tables(&f->plugin);
}

void nw_live_probe(const char *nccl_lib, struct nw_live_facts *f, struct nw_live *out)
{
	nw_live_gather(nccl_lib, NULL, f);
	nw_live_decide(f, out);
}

/* Whether the ':'-separated list holds item. */
static int list_has(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ':');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, item, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

void nw_live_setting(const struct nw_live *l, const char *preload, char *name, size_t namelen, char *value,
                     size_t valuelen)
{
	name[0] = value[0] = '\0';
	if (l->mode == NW_LIVE_PLUGIN) {
		nw_strlcpy(name, "NCCL_PROFILER_PLUGIN", namelen);
		nw_strlcpy(value, l->file, valuelen);
	} else if (l->mode == NW_LIVE_INTERPOSE) {
		nw_strlcpy(name, "LD_PRELOAD", namelen);
		if (!preload || !*preload)
			nw_strlcpy(value, l->file, valuelen);
		else if (list_has(preload, l->file))
			nw_strlcpy(value, preload, valuelen);
		else
			snprintf(value, valuelen, "%s:%s", l->file, preload);
	}
}
