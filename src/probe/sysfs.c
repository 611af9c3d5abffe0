/* SPDX-License-Identifier: Apache-2.0 */
/* Root-prefixed reads of /sys, /proc and /etc (see sysfs.h). */
#include "probe/sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/strbuf.h"
#include "util/util.h"

const char *nw_sys_root(const char *arg)
{
	if (arg)
		return arg;
	const char *e = getenv("NCCLWATCH_SYSROOT");
	return e ? e : "";
}

int nw_sys_fmt(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

int nw_sys_path(const char *root, const char *path, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", root ? root : "", path);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

int nw_sys_line(const char *root, const char *path, char *buf, size_t len)
{
	char full[PATH_MAX];
	if (len)
		buf[0] = '\0';
	if (nw_sys_path(root, path, full, sizeof(full)) < 0)
		return -1;
	FILE *f = fopen(full, "r");
	if (!f)
		return -1;
	int rc = 0;
	if (!fgets(buf, (int)len, f)) {
		/* An empty file reads as an empty line; a read error is an error. */
		rc = ferror(f) ? -1 : 0;
		buf[0] = '\0';
	}
	fclose(f);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t' ||
	             buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return rc;
}

int nw_sys_long(const char *root, const char *path, long *out)
{
	char buf[64], *end;
	if (nw_sys_line(root, path, buf, sizeof(buf)) < 0 || !buf[0])
		return -1;
	errno = 0;
	long v = strtol(buf, &end, 0);
	if (errno || end == buf || *end)
		return -1;
	*out = v;
	return 0;
}

char *nw_sys_slurp(const char *root, const char *path, size_t max)
{
	char full[PATH_MAX];
	if (nw_sys_path(root, path, full, sizeof(full)) < 0)
		return NULL;
	return nw_read_file(full, max, NULL);
}

int nw_sys_exists(const char *root, const char *path)
{
	char full[PATH_MAX];
	struct stat st;
	if (nw_sys_path(root, path, full, sizeof(full)) < 0)
		return 0;
	return lstat(full, &st) == 0;
}

int nw_sys_resolve(const char *root, const char *path, char *out, size_t len)
{
	char full[PATH_MAX], real[PATH_MAX], rroot[PATH_MAX];
	if (nw_sys_path(root, path, full, sizeof(full)) < 0 || !realpath(full, real))
		return -1;
	size_t rl = 0;
	if (root && root[0]) {
		if (!realpath(root, rroot))
			return -1;
		rl = strlen(rroot);
		if (strncmp(real, rroot, rl) != 0 || (real[rl] != '/' && real[rl] != '\0'))
			return -1;
	}
	if (nw_strlcpy(out, real[rl] ? real + rl : "/", len) >= len)
		return -1;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int nw_sys_list(const char *root, const char *path, char ***names)
{
	char full[PATH_MAX];
	*names = NULL;
	if (nw_sys_path(root, path, full, sizeof(full)) < 0)
		return -1;
	DIR *d = opendir(full);
	if (!d)
		return -1;
	int n = 0, cap = 0;
	char **v = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = nw_realloc(v, (size_t)cap * sizeof(*v));
		}
		v[n++] = nw_strdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), cmp_names);
	*names = v;
	return n;
}

void nw_sys_free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int nw_cpulist_parse(const char *s, unsigned long long *bits, int nbits)
{
	memset(bits, 0, (size_t)(nbits / 64) * sizeof(*bits));
	int count = 0;
	const char *p = s;
	while (*p == ' ')
		p++;
	if (!*p)
		return 0;
	for (;;) {
		char *end;
		errno = 0;
		long a = strtol(p, &end, 10), b;
		if (errno || end == p || a < 0 || a >= nbits)
			return -1;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (errno || end == p || b < a || b >= nbits)
				return -1;
			p = end;
		}
		for (long c = a; c <= b; c++) {
			if (!(bits[c / 64] & (1ULL << (c % 64))))
				count++;
			bits[c / 64] |= 1ULL << (c % 64);
		}
		if (*p == ',') {
			p++;
			continue;
		}
		while (*p == ' ' || *p == '\n')
			p++;
		return *p ? -1 : count;
	}
}

void nw_cpulist_format(const unsigned long long *bits, int nbits, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int c = 0; c < nbits;) {
		if (!(bits[c / 64] & (1ULL << (c % 64)))) {
			c++;
			continue;
		}
		int e = c;
		while (e + 1 < nbits && (bits[(e + 1) / 64] & (1ULL << ((e + 1) % 64))))
			e++;
		nw_strbuf_addf(&sb, "%s%d", sb.len ? "," : "", c);
		if (e > c)
			nw_strbuf_addf(&sb, "-%d", e);
		c = e + 1;
	}
	if (len)
		nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}
