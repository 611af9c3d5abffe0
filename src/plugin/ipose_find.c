/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipose_find: the real NCCL behind a wrapped call. An LD_PRELOADed
 * ncclAllReduce receives the calls of every library that binds the name
 * through the global scope, but PyTorch loads libnccl.so.2 into a local
 * scope (its extension is dlopen()ed RTLD_LOCAL), so dlsym(RTLD_NEXT, ...)
 * finds nothing there. So each call is forwarded to the NCCL its caller
 * would have bound to without the interposer: the object holding the
 * return address is found among the loaded objects (dl_iterate_phdr), and
 * NCCL looked up in that object's own scope (dlopen(path, RTLD_NOLOAD),
 * dlsym on it: the object and its dependencies, where libnccl.so.2 sits
 * for libtorch_cuda.so); else after the interposer in the global scope
 * (RTLD_NEXT: a program linked with -lnccl); else the first NCCL loaded
 * (a program that dlopen()ed it itself, as ncclwatch bench does). Each
 * entry point is taken under NCCL's second name (pncclAllReduce, which
 * NCCL exports beside ncclAllReduce and the interposer does not), so a
 * forwarded call can never come back here. Objects already resolved are
 * cached by address range: one or two compares per call.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/ipose.h"

#define MAXLIBS 4        /* distinct NCCL libraries in one process */
#define MAXCALLERS 32    /* objects whose calls were resolved */
#define MAXOBJS 512      /* loaded objects looked at */

static const char *const fn_names[IPO_NFN] = {
	"GetVersion", "CommCount", "CommUserRank", "AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather",
	"ReduceScatter", "AlltoAll", "Gather", "Scatter", "Send", "Recv", "GroupStart", "GroupEnd",
	"GroupSimulateEnd", "CommInitRank", "CommInitRankConfig", "CommInitAll", "CommInitRankScalable", "CommSplit",
	"CommAbort", "CommDestroy", "CommFinalize", "CommGetAsyncError",
};

static struct ipo_nccl libs[MAXLIBS];
static int nlibs;                    /* atomic: entries of libs filled */

struct caller {
	uintptr_t lo, hi;                /* the object's mapped range */
	const struct ipo_nccl *nc;
};
static struct caller callers[MAXCALLERS];
static int ncallers;                 /* atomic: entries of callers filled */
static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;
static int two_said;

/* One loaded object: its name and mapped range. */
struct obj {
	char name[256];
	uintptr_t lo, hi;
};

struct objs {
	struct obj *o;
	size_t n, max;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct objs *os = arg;
	if (os->n == os->max)
		return 1;
	struct obj *o = &os->o[os->n];
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (lo >= hi)
		return 0;
	o->lo = lo;
	o->hi = hi;
	snprintf(o->name, sizeof(o->name), "%s", info->dlpi_name ? info->dlpi_name : "");
	os->n++;
	return 0;
}

/* Every loaded object, in load order (the program first); the caller frees os->o. */
static void loaded_objects(struct objs *os)
{
	os->max = MAXOBJS;
	os->n = 0;
	os->o = calloc(os->max, sizeof(*os->o));
	if (os->o)
		dl_iterate_phdr(collect, os);
}

/* Where this library is mapped (its functions must never be taken for NCCL's). */
static void *self_base(void)
{
	Dl_info di;
	return dladdr((void *)self_base, &di) ? di.dli_fbase : NULL;
}

/* name looked up in the scope of the object at path (itself and its dependencies); NULL when not there. */
static void *sym_in(const char *path, const char *name)
{
	void *h = path && *path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	if (!h)
		return NULL;
	void *p = dlsym(h, name);
	dlclose(h);
	return p;
}

/* NCCL's function "nccl<what>" from the object at path (pnccl first; never this library's own). */
static void *nccl_sym(const char *path, const char *what, void *self)
{
	char name[64];
	snprintf(name, sizeof(name), "pnccl%s", what);
	void *p = sym_in(path, name);
	if (p)
		return p;
	snprintf(name, sizeof(name), "nccl%s", what);
	p = sym_in(path, name);
	Dl_info di;
	return p && dladdr(p, &di) && di.dli_fbase != self ? p : NULL;
}

/* The table of the NCCL mapped at base from path, made once (find_lock held); NULL when it lacks ncclGetVersion. */
static const struct ipo_nccl *lib_table(void *base, const char *path)
{
	int n = __atomic_load_n(&nlibs, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (libs[i].base == base)
			return &libs[i];
	if (n == MAXLIBS)
		return NULL;
	struct ipo_nccl *l = &libs[n];
	void *self = self_base();
	void *keep = dlopen(path, RTLD_LAZY | RTLD_NOLOAD); /* held: NCCL stays mapped while its pointers are kept */
	(void)keep;
	for (int i = 0; i < IPO_NFN; i++)
		l->fn[i] = nccl_sym(path, fn_names[i], self);
	if (!l->fn[IPO_GET_VERSION])
		return NULL;
	l->base = base;
	snprintf(l->path, sizeof(l->path), "%s", path);
	int v = 0;
	ipo_res_t (*get_version)(int *);
	*(void **)(void *)&get_version = l->fn[IPO_GET_VERSION];
	if (get_version(&v) == IPO_SUCCESS)
		l->version = v;
	if (n >= 1 && !two_said) {
		two_said = 1;
		nwp_log(NWP_LOG_WARN, "ncclwatch: two NCCL libraries in this process ('%s', '%s'); each call goes to the "
		        "one its caller would have used", libs[0].path, l->path);
	}
	__atomic_store_n(&nlibs, n + 1, __ATOMIC_RELEASE);
	return l;
}

/*
 * The NCCL the object o (the program when main) would bind to: in its
 * own scope, after this library in the global scope, else the first NCCL
 * loaded. find_lock held.
 */
static const struct ipo_nccl *nccl_for(const struct obj *o, int main, const struct objs *all)
{
	void *self = self_base();
	void *p = main ? NULL : sym_in(o->name, "pncclGetVersion");
	if (!p)
		p = dlsym(RTLD_NEXT, "pncclGetVersion");
	for (size_t i = 1; !p && i < all->n; i++) /* 0 is the program, whose scope is the global one */
		p = nccl_sym(all->o[i].name, "GetVersion", self);
	Dl_info di;
	if (!p || !dladdr(p, &di) || di.dli_fbase == self || !di.dli_fname)
		return NULL;
	return lib_table(di.dli_fbase, di.dli_fname);
}

/* Resolve the caller at ra (find_lock held): its object's NCCL, cached by the object's range. */
static const struct ipo_nccl *resolve(uintptr_t ra)
{
	int n = __atomic_load_n(&ncallers, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (ra >= callers[i].lo && ra < callers[i].hi)
			return callers[i].nc;
	struct objs all;
	loaded_objects(&all);
	if (!all.o)
		return NULL;
	size_t at = all.n;
	for (size_t i = 0; i < all.n && at == all.n; i++)
		if (ra >= all.o[i].lo && ra < all.o[i].hi)
			at = i;
	struct obj none = { "", 0, 0 };
	const struct obj *o = at < all.n ? &all.o[at] : &none;
	const struct ipo_nccl *nc = nccl_for(o, at == 0 || at == all.n, &all);
	if (nc && at < all.n && n < MAXCALLERS) {
		callers[n] = (struct caller){ o->lo, o->hi, nc };
		__atomic_store_n(&ncallers, n + 1, __ATOMIC_RELEASE);
	}
	free(all.o);
	return nc;
}

const struct ipo_nccl *ipo_nccl_caller(const void *ra)
{
	uintptr_t a = (uintptr_t)ra;
	int n = __atomic_load_n(&ncallers, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (a >= callers[i].lo && a < callers[i].hi)
			return callers[i].nc;
	pthread_mutex_lock(&find_lock);
	const struct ipo_nccl *nc = resolve(a);
	pthread_mutex_unlock(&find_lock);
	return nc;
}

/* The name field ncclwatch's profiler tables start with. */
struct profiler_head {
	const char *name;
};

int ipo_plugin_loaded(char *buf, size_t len)
{
	struct objs all;
	loaded_objects(&all);
	int found = 0;
	for (size_t i = 1; all.o && i < all.n && !found; i++) {
		const struct profiler_head *t = sym_in(all.o[i].name, "ncclProfiler_v1");
		Dl_info di;
		if (t && t->name && !strcmp(t->name, "ncclwatch") && dladdr(t, &di) && di.dli_fname) {
			snprintf(buf, len, "%s", di.dli_fname);
			found = 1;
		}
	}
	free(all.o);
	return found;
}
