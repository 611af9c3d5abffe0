/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostmem: the host memory this process may still take, from
 * /proc/meminfo and the limits of its cgroup (v1 or v2) and their parents,
 * and what a host backend's sweep takes.
 */
#include "bench/hostmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* "path" under $NCCLWATCH_SYSROOT (when set) into buf. */
static const char *at_root(const char *path, char *buf, size_t len)
{
	const char *root = getenv("NCCLWATCH_SYSROOT");
	snprintf(buf, len, "%s%s", root && *root ? root : "", path);
	return buf;
}

/* One number from the start of a file; 0 when it is not there or not a number ("max"). */
static int read_u64(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int ok = fscanf(f, "%" SCNu64, v) == 1;
	fclose(f);
	return ok;
}

/* MemAvailable in bytes, or UINT64_MAX. */
static uint64_t meminfo_available(void)
{
	char p[1100];
	FILE *f = fopen(at_root("/proc/meminfo", p, sizeof(p)), "r");
	char line[256];
	uint64_t kb = 0;
	int found = 0;
	if (!f)
		return UINT64_MAX;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1;
	fclose(f);
	return found ? kb * 1024 : UINT64_MAX;
}

/*
 * Room left under the limits of the cgroup directory dir and its parents
 * up to root (limit file lim, usage file use); UINT64_MAX when unlimited.
 */
static uint64_t cgroup_room(const char *root, char *dir, const char *lim, const char *use)
{
	uint64_t room = UINT64_MAX;
	size_t rootlen = strlen(root);
	for (;;) {
		char p[1200];
		uint64_t l, u = 0;
		snprintf(p, sizeof(p), "%s/%s", dir, lim);
		if (read_u64(p, &l)) {
			snprintf(p, sizeof(p), "%s/%s", dir, use);
			read_u64(p, &u);
			uint64_t left = l > u ? l - u : 0;
			if (left < room)
				room = left;
		}
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < rootlen)
			return room;
		*slash = '\0';
	}
}

/*
 * This process's cgroup directory under mount 'root', from its path in
 * /proc/self/cgroup: the path as is, or (inside a cgroup namespace or a
 * container's bind mount) its trailing part that exists under root.
 */
static int cgroup_dir(const char *root, const char *path, char *out, size_t outlen)
{
	for (const char *p = path; p; p = strchr(p + 1, '/')) {
		snprintf(out, outlen, "%s%s", root, p);
		FILE *f = fopen(out, "r");
		if (f) {
			fclose(f);
			return 1;
		}
	}
	return 0;
}

/* The room the memory cgroup of this process leaves (v1 "memory" or v2), or UINT64_MAX. */
static uint64_t cgroup_available(void)
{
	char line[1024], dir[1100], v1[1100], v2[1100];
	FILE *f = fopen(at_root("/proc/self/cgroup", line, sizeof(line)), "r");
	at_root("/sys/fs/cgroup/memory", v1, sizeof(v1));
	at_root("/sys/fs/cgroup", v2, sizeof(v2));
	uint64_t room = UINT64_MAX;
	if (!f)
		return room;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctl++;
		uint64_t r = UINT64_MAX;
		if (!strcmp(ctl, "memory") && cgroup_dir(v1, path, dir, sizeof(dir)))
			r = cgroup_room(v1, dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
		else if (!*ctl && cgroup_dir(v2, path, dir, sizeof(dir)))
			r = cgroup_room(v2, dir, "memory.max", "memory.current");
		if (r < room)
			room = r;
	}
	fclose(f);
	return room;
}

uint64_t nw_host_mem_available(char *why, size_t whylen)
{
	uint64_t mem = meminfo_available(), cg = cgroup_available();
	nw_strlcpy(why, cg < mem ? "cgroup memory limit" : "MemAvailable", whylen);
	return cg < mem ? cg : mem;
}

/* What the library (or the backend) takes besides the buffers for op, in buffers: a fraction of 2 (2: one whole buffer). */
static int library_halves(enum nw_op op)
{
	switch (op) {
	case NW_REDUCE:
	case NW_REDUCE_SCATTER:
		return 4;
	case NW_ALL_REDUCE:
	case NW_ALLTOALL:
	case NW_SENDRECV:
	case NW_ALLTOALLV:
		return 2;
	default:
		return 0;
	}
}

void nw_host_mem_need(uint64_t buf, const enum nw_op *ops, int nops, int pairs, struct nw_host_mem_need *need)
{
	uint64_t page = (buf + 4095) & ~(uint64_t)4095;
	int most = pairs ? library_halves(NW_SENDRECV) : 0;
	need->heaviest = pairs ? NW_SENDRECV : nops > 0 ? ops[0] : NW_ALL_REDUCE;
	for (int i = 0; i < nops; i++)
		if (library_halves(ops[i]) > most) {
			most = library_halves(ops[i]);
			need->heaviest = ops[i];
		}
	need->buffers = 2 * page;
	need->library = page / 2 * (uint64_t)most;
	need->fixed = NW_HOST_MEM_FIXED;
	need->total = need->buffers + need->library + need->fixed;
}
