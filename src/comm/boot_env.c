/* SPDX-License-Identifier: Apache-2.0 */
/* boot_env: what the environment says about this process (torchrun, Slurm, the bootstrap port). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm/boot_int.h"

static const char *var(nw_boot_getenv_fn get, void *arg, const char *name)
{
	const char *v = get(name, arg);
	return v && *v ? v : NULL;
}

/* Parse an integer variable that must be in [min, max]; 'what' explains the range. */
static int int_var(const char *name, const char *v, long min, long max, const char *what, int *out,
                   char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (end == v || *end || errno)
		return nw_seterr(err, errlen, "%s='%s' is not a whole number: %s", name, v, what);
	if (x < min || x > max)
		return nw_seterr(err, errlen, "%s='%s' is out of range: %s", name, v, what);
	*out = (int)x;
	return 0;
}

/* A port variable; add is 1 for MASTER_PORT (the bootstrap takes the next port). */
static int parse_port(const char *name, const char *v, int add, int *out, char *err, size_t errlen)
{
	int p;
	if (int_var(name, v, 1, 65535, "give a TCP port from 1 to 65535", &p, err, errlen))
		return -1;
	if (p + add > 65535)
		return nw_seterr(err, errlen,
		                 "%s='%s': the bootstrap port %s+1 would be past 65535; set NCCLWATCH_PORT to a free port",
		                 name, v, name);
	*out = p + add;
	return 0;
}

/*
 * The bootstrap port: NCCLWATCH_PORT, else MASTER_PORT+1 (torchrun's
 * TCPStore owns MASTER_PORT itself), else (Slurm) one derived from the job
 * and step ids so that concurrent jobs differ.
 */
static int pick_port(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, int slurm, char *err,
                     size_t errlen)
{
	const char *v;
	if ((v = var(get, arg, "NCCLWATCH_PORT"))) {
		nw_strlcpy(e->port_from, "NCCLWATCH_PORT", sizeof(e->port_from));
		return parse_port("NCCLWATCH_PORT", v, 0, &e->port, err, errlen);
	}
	if ((v = var(get, arg, "MASTER_PORT"))) {
		nw_strlcpy(e->port_from, "MASTER_PORT+1", sizeof(e->port_from));
		return parse_port("MASTER_PORT", v, 1, &e->port, err, errlen);
	}
	if (slurm && (v = var(get, arg, "SLURM_JOB_ID"))) {
		int job, step = 0;
		const char *s = var(get, arg, "SLURM_STEP_ID");
		if (!s)
			s = var(get, arg, "SLURM_STEPID");
		if (int_var("SLURM_JOB_ID", v, 0, 2147483647, "expected Slurm's job id", &job, err, errlen))
			return -1;
		if (s) {
			char *end;
			long x = strtol(s, &end, 10);
			step = end != s && !*end && x >= 0 ? (int)(x % 4) : 0;
		}
		e->port = 20000 + (job % 3000) * 4 + step;
		nw_strlcpy(e->port_from, "SLURM_JOB_ID", sizeof(e->port_from));
		return 0;
	}
	return nw_seterr(err, errlen,
	                 "MASTER_PORT is not set: set MASTER_PORT (the bootstrap listens on MASTER_PORT+1) "
	                 "or NCCLWATCH_PORT (the bootstrap port itself)");
}

int nw_boot_slurm_first_host(const char *list, char *out, size_t outlen)
{
	size_t o = 0;
	int depth = 0, skipping = 0;
	if (!list || !*list || outlen == 0)
		return -1;
	for (const char *p = list; *p; p++) {
		char c = *p;
		if (c == '[') {
			if (depth++)
				return -1;
			skipping = 0;
			continue;
		}
		if (c == ']') {
			if (!depth--)
				return -1;
			continue;
		}
		if (depth) {
			if (c == ',' || c == '-')
				skipping = 1;
			if (skipping)
				continue;
		} else if (c == ',') {
			break;
		}
		if (c == ' ' || o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	if (depth || o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

int nw_boot_slurm_tasks_on_node(const char *tpn, int nodeid)
{
	const char *p = tpn;
	long node = 0;
	if (!p || !*p || nodeid < 0)
		return -1;
	while (*p) {
		char *end;
		long n = strtol(p, &end, 10), reps = 1;
		if (end == p || n < 1 || n > BOOT_MAX_RANKS)
			return -1;
		p = end;
		if (*p == '(') {
			if (p[1] != 'x')
				return -1;
			reps = strtol(p + 2, &end, 10);
			if (end == p + 2 || *end != ')' || reps < 1 || reps > 1000000)
				return -1;
			p = end + 1;
		}
		if (nodeid < node + reps)
			return (int)n;
		node += reps;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return -1;
}

/* Rank 0's address from MASTER_ADDR into e; 0, or -1 when it does not fit. */
static int master_addr(const char *addr, struct nw_boot_env *e, char *err, size_t errlen)
{
	if (strlen(addr) >= sizeof(e->addr))
		return nw_seterr(err, errlen, "MASTER_ADDR is longer than %zu characters", sizeof(e->addr) - 1);
	nw_strlcpy(e->addr, addr, sizeof(e->addr));
	nw_strlcpy(e->addr_from, "MASTER_ADDR", sizeof(e->addr_from));
	return 0;
}

/* torchrun / PyTorchJob / hand-set variables. */
static int parse_torch(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                       size_t errlen)
{
	const char *rank = var(get, arg, "RANK"), *size = var(get, arg, "WORLD_SIZE");
	const char *lr = var(get, arg, "LOCAL_RANK"), *ls = var(get, arg, "LOCAL_WORLD_SIZE");
	const char *addr = var(get, arg, "MASTER_ADDR");
	nw_strlcpy(e->launcher, "env", sizeof(e->launcher));
	if (!size)
		return nw_seterr(err, errlen,
		                 "RANK='%s' is set but WORLD_SIZE is not: set both for a multi-process run, or neither",
		                 rank);
	if (!rank)
		return nw_seterr(err, errlen,
		                 "WORLD_SIZE='%s' is set but RANK is not: set both for a multi-process run, or neither",
		                 size);
	if (int_var("WORLD_SIZE", size, 1, BOOT_MAX_RANKS, "give the number of processes (1 or more)",
	            &e->size, err, errlen))
		return -1;
	if (int_var("RANK", rank, 0, BOOT_MAX_RANKS - 1, "give this process's rank, from 0 to WORLD_SIZE-1",
	            &e->rank, err, errlen))
		return -1;
	if (e->rank >= e->size)
		return nw_seterr(err, errlen, "RANK='%s' must be below WORLD_SIZE='%s' (ranks count from 0)",
		                 rank, size);
	if (ls && int_var("LOCAL_WORLD_SIZE", ls, 1, e->size, "give the number of processes on this host, at most WORLD_SIZE",
	                  &e->local_size, err, errlen))
		return -1;
	if (!lr) {
		if (e->size > 1)
			return nw_seterr(err, errlen,
			                 "LOCAL_RANK is not set (RANK='%s', WORLD_SIZE='%s'): it picks this process's GPU; "
			                 "launch with torchrun --no-python, or set LOCAL_RANK (and LOCAL_WORLD_SIZE) for each process",
			                 rank, size);
		e->local_rank = 0;
	} else if (int_var("LOCAL_RANK", lr, 0, e->size - 1, "give this process's index on its host, from 0",
	                   &e->local_rank, err, errlen)) {
		return -1;
	}
	if (e->local_size && e->local_rank >= e->local_size)
		return nw_seterr(err, errlen, "LOCAL_RANK='%s' must be below LOCAL_WORLD_SIZE='%s'", lr, ls);
	if (e->size == 1)
		return 1;
	if (!addr)
		return nw_seterr(err, errlen,
		                 "MASTER_ADDR is not set (WORLD_SIZE='%s'): set it to the host or address of rank 0",
		                 size);
	if (master_addr(addr, e, err, errlen))
		return -1;
	return pick_port(get, arg, e, 0, err, errlen) ? -1 : 1;
}

/* Rank 0's address under srun: MASTER_ADDR when set, else the first host of the step's node list. */
static int slurm_addr(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err, size_t errlen)
{
	const char *addr = var(get, arg, "MASTER_ADDR");
	if (addr) {
		if (master_addr(addr, e, err, errlen))
			return -1;
	} else {
		static const char *const lists[] = { "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST" };
		const char *l = NULL, *lname = NULL;
		for (size_t i = 0; i < NW_ARRAY_LEN(lists) && !l; i++)
			if ((l = var(get, arg, lists[i])))
				lname = lists[i];
		if (!l)
			return nw_seterr(err, errlen,
			                 "neither MASTER_ADDR nor SLURM_STEP_NODELIST is set: set MASTER_ADDR to the host of rank 0");
		if (nw_boot_slurm_first_host(l, e->addr, sizeof(e->addr)))
			return nw_seterr(err, errlen,
			                 "%s='%s' is not a Slurm host list: set MASTER_ADDR to the host of rank 0",
			                 lname, l);
		nw_strlcpy(e->addr_from, lname, sizeof(e->addr_from));
	}
	return 0;
}

/* srun task variables. */
static int parse_slurm(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                       size_t errlen)
{
	const char *rank = var(get, arg, "SLURM_PROCID");
	const char *sizename = "SLURM_STEP_NUM_TASKS";
	const char *size = var(get, arg, sizename);
	const char *lr = var(get, arg, "SLURM_LOCALID");
	const char *tpn = var(get, arg, "SLURM_STEP_TASKS_PER_NODE");
	const char *nodeid = var(get, arg, "SLURM_NODEID");
	nw_strlcpy(e->launcher, "slurm", sizeof(e->launcher));
	if (!size) {
		sizename = "SLURM_NTASKS";
		size = var(get, arg, sizename);
	}
	if (!size)
		return nw_seterr(err, errlen,
		                 "SLURM_PROCID='%s' is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is: "
		                 "start the ranks with srun, or set RANK and WORLD_SIZE",
		                 rank);
	if (int_var(sizename, size, 1, BOOT_MAX_RANKS, "expected the number of tasks", &e->size, err, errlen))
		return -1;
	if (int_var("SLURM_PROCID", rank, 0, BOOT_MAX_RANKS - 1, "expected the task's rank", &e->rank, err,
	            errlen))
		return -1;
	if (e->rank >= e->size)
		return nw_seterr(err, errlen, "SLURM_PROCID='%s' must be below %s='%s'", rank, sizename, size);
	if (!lr)
		return nw_seterr(err, errlen,
		                 "SLURM_LOCALID is not set (SLURM_PROCID='%s'): start the ranks with srun, or set RANK, "
		                 "WORLD_SIZE and LOCAL_RANK",
		                 rank);
	if (int_var("SLURM_LOCALID", lr, 0, e->size - 1, "expected the task's index on its node",
	            &e->local_rank, err, errlen))
		return -1;
	if (!tpn)
		tpn = var(get, arg, "SLURM_TASKS_PER_NODE");
	if (tpn && nodeid) {
		char *end;
		long n = strtol(nodeid, &end, 10);
		int t = (end != nodeid && !*end && n >= 0 && n < BOOT_MAX_RANKS)
		            ? nw_boot_slurm_tasks_on_node(tpn, (int)n) : -1;
		if (t > 0)
			e->local_size = t;
	}
	if (e->local_size && e->local_rank >= e->local_size)
		return nw_seterr(err, errlen,
		                 "SLURM_LOCALID='%s' must be below the %d tasks that SLURM_STEP_TASKS_PER_NODE='%s' "
		                 "gives node SLURM_NODEID='%s'",
		                 lr, e->local_size, tpn, nodeid);
	if (e->size == 1)
		return 1;
	if (slurm_addr(get, arg, e, err, errlen))
		return -1;
	return pick_port(get, arg, e, 1, err, errlen) ? -1 : 1;
}

int nw_boot_env_parse(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                      size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (var(get, arg, "RANK") || var(get, arg, "WORLD_SIZE"))
		return parse_torch(get, arg, e, err, errlen);
	/* A batch script has SLURM_PROCID=0 too, but no step: only an srun task is a rank. */
	if (var(get, arg, "SLURM_PROCID") &&
	    (var(get, arg, "SLURM_STEP_ID") || var(get, arg, "SLURM_STEPID") ||
	     var(get, arg, "SLURM_STEP_NUM_TASKS")))
		return parse_slurm(get, arg, e, err, errlen);
	return 0;
}
