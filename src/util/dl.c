/* SPDX-License-Identifier: Apache-2.0 */
/* dl: opening a library at run time, resolving its table of symbols, and loading once (see dl.h). */
#include "util/dl.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Every row of tab[0, n) from handle h; the first required row not found, or NULL. */
static const struct nw_dl_sym *resolve(void *h, const struct nw_dl_sym *tab, size_t n)
{
	const struct nw_dl_sym *missing = NULL;
	for (size_t i = 0; i < n; i++) {
		*tab[i].pfn = NULL;
		for (size_t k = 0; k < NW_ARRAY_LEN(tab[i].names) && tab[i].names[k] && !*tab[i].pfn; k++)
			*tab[i].pfn = dlsym(h, tab[i].names[k]);
		if (!*tab[i].pfn && tab[i].required && !missing)
			missing = &tab[i];
	}
	return missing;
}

static void clear(const struct nw_dl_sym *tab, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*tab[i].pfn = NULL;
}

/* The first file of lib that opens into out (handle, file), else NULL with out->file and out->why of the first tried. */
static void *open_first(const struct nw_dl_lib *lib, struct nw_dl *out)
{
	const char *env = lib->env ? getenv(lib->env) : NULL;
	const char *one[1] = { env };
	const char *const *names = env && *env ? one : lib->sonames;
	size_t nnames = env && *env ? 1 : NW_ARRAY_LEN(lib->sonames);
	int flags = RTLD_NOW | (lib->global ? RTLD_GLOBAL : RTLD_LOCAL);
	for (size_t i = 0; i < nnames && names[i]; i++) {
		void *h = dlopen(names[i], flags);
		if (h) {
			nw_strlcpy(out->file, names[i], sizeof(out->file));
			out->why[0] = '\0';
			return h;
		}
		if (i == 0) {
			const char *why = dlerror();
			nw_strlcpy(out->file, names[i], sizeof(out->file));
			nw_strlcpy(out->why, why ? why : "not found", sizeof(out->why));
		}
	}
	return NULL;
}

int nw_dl_load(const struct nw_dl_lib *lib, const struct nw_dl_sym *tab, size_t n, struct nw_dl *out, char *err,
               size_t errlen)
{
	memset(out, 0, sizeof(*out));
	void *h = open_first(lib, out);
	if (!h) {
		clear(tab, n);
		return nw_seterr(err, errlen, "cannot open '%s' (%s)", out->file, out->why);
	}
	const struct nw_dl_sym *miss = resolve(h, tab, n);
	if (miss) {
		out->missing = miss->names[0];
		clear(tab, n);
		dlclose(h);
		return nw_seterr(err, errlen, "'%s' lacks %s", out->file, out->missing);
	}
	nw_strlcpy(out->path, out->file, sizeof(out->path));
	for (size_t i = 0; i < n; i++) {
		Dl_info info;
		if (*tab[i].pfn && dladdr(*tab[i].pfn, &info) && info.dli_fname) {
			nw_strlcpy(out->path, info.dli_fname, sizeof(out->path));
			break;
		}
	}
	out->handle = h;
	return 0;
}

int nw_dl_once(struct nw_dl_once *once, int (*load)(const void *arg, char *err, size_t errlen), const void *arg,
               char *err, size_t errlen)
{
	pthread_mutex_lock(&once->mu);
	int rc = 0;
	if (!once->done) {
		rc = load(arg, err, errlen);
		once->done = rc == 0;
	}
	pthread_mutex_unlock(&once->mu);
	return rc;
}
