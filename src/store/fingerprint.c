/* SPDX-License-Identifier: Apache-2.0 */
/* The fingerprint of a run: what it ran on, kept with its results. */
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/util.h"

extern char **environ;

/* Environment variables that change what NCCL does or how the job was launched. */
static const char *const env_prefixes[] = {
	"NCCL_", "SLURM_", "OMPI_COMM_WORLD_", "OMPI_MCA_", "PMI_", "PMIX_RANK", "TORCHELASTIC_",
	"UCX_", "FI_", "CUDA_", "NVIDIA_",
};
static const char *const env_names[] = {
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
	"ROLE_RANK", "MASTER_ADDR", "MASTER_PORT", "LD_LIBRARY_PATH", "LD_PRELOAD",
	"NCCLWATCH_NCCL_LIB",
};

static int env_wanted(const char *name, size_t len)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(env_prefixes); i++) {
		size_t p = strlen(env_prefixes[i]);
		if (len >= p && !strncmp(name, env_prefixes[i], p))
			return 1;
	}
	for (size_t i = 0; i < NW_ARRAY_LEN(env_names); i++)
		if (strlen(env_names[i]) == len && !strncmp(name, env_names[i], len))
			return 1;
	return 0;
}

static void set_if_absent(json_t *o, const char *k, json_t *v)
{
	if (!json_object_get(o, k))
		json_object_set_new(o, k, v);
	else
		json_decref(v);
}

/* Like set_if_absent, but a null or empty-string value counts as absent. */
static void put_if_unknown(json_t *o, const char *k, json_t *v)
{
	const json_t *old = json_object_get(o, k);
	if (!old || json_is_null(old) || (json_is_string(old) && !json_string_length(old)))
		json_object_set_new(o, k, v);
	else
		json_decref(v);
}

void nw_fingerprint_fill(json_t *fp, const struct nw_run_header *h)
{
	put_if_unknown(fp, "host", json_string(h->host));
	put_if_unknown(fp, "gpus", json_string(h->gpus));
	put_if_unknown(fp, "driver", json_string(h->driver));
	put_if_unknown(fp, "cuda_driver", json_string(h->cuda_driver));
	put_if_unknown(fp, "nccl_version", json_string(h->nccl_version));
	put_if_unknown(fp, "nccl_path", json_string(h->nccl_path));
	put_if_unknown(fp, "backend", json_string(h->backend));
	put_if_unknown(fp, "tool_version", json_string(h->tool_version));
	if (h->nranks > 0)
		put_if_unknown(fp, "nranks", json_integer(h->nranks));
	if (h->nhosts > 0)
		put_if_unknown(fp, "nhosts", json_integer(h->nhosts));
	if (h->link_gbs > 0)
		put_if_unknown(fp, "link_gbs", json_real(h->link_gbs));
	const json_t *topo = h->extra ? json_object_get(h->extra, "topology") : NULL;
	if (json_is_string(topo))
		put_if_unknown(fp, "topology", json_string(json_string_value(topo)));
}

/* "2 x NVIDIA H200" -> 2; otherwise 0 (unknown). */
static int gpu_count(const char *gpus)
{
	char *end;
	long n = strtol(gpus, &end, 10);
	if (end == gpus || n <= 0 || n > 1000000 || strncmp(end, " x ", 3))
		return 0;
	return (int)n;
}

/* This process's command line from /proc/self/cmdline, arguments joined by spaces. */
static void own_cmdline(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	char *raw = nw_read_file("/proc/self/cmdline", 65536, &n);
	if (!raw)
		return;
	for (size_t i = 0; i + 1 < n; i++)
		if (raw[i] == '\0')
			raw[i] = ' ';
	nw_strlcpy(buf, raw, len);
	free(raw);
}

void nw_fingerprint_collect(struct nw_run *run)
{
	struct nw_run_header *h = &run->h;
	if (!json_is_object(h->extra)) {
		if (h->extra)
			json_decref(h->extra);
		h->extra = json_object();
	}
	json_t *fp = json_object_get(h->extra, "fingerprint");
	if (!json_is_object(fp)) {
		fp = json_object();
		json_object_set_new(h->extra, "fingerprint", fp);
	}
	char host[256];
	if (h->host[0])
		nw_strlcpy(host, h->host, sizeof(host));
	else
		nw_hostname(host, sizeof(host));
	/* this process's own answers where the header has none, then the header's fields */
	set_if_absent(fp, "host", json_string(host));
	set_if_absent(fp, "tool_version", json_string(h->tool_version[0] ? h->tool_version : NW_VERSION));
	set_if_absent(fp, "gpu_count", json_integer(gpu_count(h->gpus)));
	nw_fingerprint_fill(fp, h);
	set_if_absent(fp, "nranks", h->nranks > 0 ? json_integer(h->nranks) : json_null()); /* unknown */
	set_if_absent(fp, "nhosts", json_integer(h->nhosts));
	char cmd[sizeof(h->cmdline)];
	if (h->cmdline[0])
		nw_strlcpy(cmd, h->cmdline, sizeof(cmd));
	else
		own_cmdline(cmd, sizeof(cmd));
	set_if_absent(fp, "cmdline", json_string(cmd));
	char now[32];
	if (!h->time[0])
		nw_utc_iso(now, sizeof(now));
	set_if_absent(fp, "time", json_string(h->time[0] ? h->time : now));

	json_t *env = json_object_get(fp, "env");
	if (!json_is_object(env)) {
		env = json_object();
		json_object_set_new(fp, "env", env);
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		size_t len = (size_t)(eq - *e);
		if (!env_wanted(*e, len) || len >= 128)
			continue;
		char name[128];
		memcpy(name, *e, len);
		name[len] = '\0';
		json_t *v = json_string(eq + 1);
		if (v)	/* not valid UTF-8: left out */
			set_if_absent(env, name, v);
	}
}
