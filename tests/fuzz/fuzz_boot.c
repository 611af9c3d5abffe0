/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the bootstrap's parsers of outside input: message headers and hello
 * payloads as they arrive from the network, Slurm host lists and
 * tasks-per-node strings, the launch variables, and the fingerprint diff.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/boot.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as NUL-separated values of a fixed list of variables. */
struct fenv {
	const char *val[12];
};

static const char *const names[12] = { "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
	                               "MASTER_PORT", "NCCLWATCH_PORT", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
	                               "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST" };

static const char *get(const char *name, void *arg)
{
	struct fenv *e = arg;
	for (int i = 0; i < 12; i++)
		if (!strcmp(name, names[i]))
			return e->val[i];
	if (!strcmp(name, "SLURM_NODEID"))
		return e->val[0];
	if (!strcmp(name, "SLURM_STEP_ID") || !strcmp(name, "SLURM_JOB_ID"))
		return e->val[1];
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[NW_ERRLEN];
	if (size >= NW_BOOT_HDR_LEN) {
		struct nw_boot_hdr h;
		nw_boot_hdr_unpack(data, &h, err, sizeof(err));
		struct nw_boot_hello hello;
		if (nw_boot_hello_unpack(data + NW_BOOT_HDR_LEN, size - NW_BOOT_HDR_LEN, &hello, err, sizeof(err)) == 0)
			nw_boot_hello_release(&hello);
	}
	/* text: a copy with a terminating NUL, split on NUL into values */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char host[64];
	nw_boot_slurm_first_host(text, host, sizeof(host));
	nw_boot_slurm_tasks_on_node(text, (int)(size % 7));
	struct fenv e;
	memset(&e, 0, sizeof(e));
	size_t off = 0;
	for (int i = 0; i < 12 && off <= size; i++) {
		e.val[i] = text + off;
		off += strlen(text + off) + 1;
	}
	struct nw_boot_env env;
	nw_boot_env_parse(get, &e, &env, err, sizeof(err));
	char da[128], db[128];
	if (e.val[1])
		nw_boot_fpdiff(e.val[0], e.val[1], da, sizeof(da), db, sizeof(db));
	free(text);
	return 0;
}
