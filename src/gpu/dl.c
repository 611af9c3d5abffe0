/* dl: resolving a vendor library's table of symbols from one dlopen handle (see dl.h). */
#include "gpu/dl.h"

#include <dlfcn.h>

#include "util/util.h"

const struct nw_dl_sym *nw_dl_resolve(void *h, const struct nw_dl_sym *tab, size_t n)
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

void nw_dl_path(void *sym, const char *fallback, char *out, size_t len)
{
	Dl_info info;
	if (sym && dladdr(sym, &info) && info.dli_fname)
		nw_strlcpy(out, info.dli_fname, len);
	else
		nw_strlcpy(out, fallback, len);
}
