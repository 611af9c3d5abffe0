/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the outside text topo and doctor parse: an NVML
 * recording (JSON), CPU lists, and the doctor's view of /proc and /etc
 * files (the first byte picks which).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpu/nvml.h"
#include "probe/doctor.h"
#include "probe/sysfs.h"
#include "probe/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nw_nvml_snap snap;
	static struct nw_topo topo;
	if (size < 1)
		return 0;
	char *text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0: {
		json_t *doc = json_loadb((const char *)data + 1, size - 1, 0, NULL);
		char err[256];
		if (doc && nw_nvml_snap_from_json(doc, &snap, err, sizeof(err)) == 0) {
			nw_topo_probe(&topo, "/nonexistent", &snap);
			json_t *back = nw_nvml_snap_to_json(&snap);
			json_decref(back);
		}
		json_decref(doc);
		break;
	}
	case 1: {
		unsigned long long bits[64];
		char out[256];
		if (nw_cpulist_parse(text, bits, 4096) >= 0)
			nw_cpulist_format(bits, 4096, out, sizeof(out));
		break;
	}
	default: {
		/* The same text as command line, logind configuration and environment. */
		struct nw_doc_ctx c;
		struct nw_findings f = { 0 };
		nw_nvml_snap_none(&snap, "fuzz");
		memset(&topo, 0, sizeof(topo));
		nw_doc_ctx_init(&c, &snap, &topo);
		char *env[3] = { NULL, NULL, NULL };
		char *e1 = malloc(size + 24), *e2 = malloc(size + 24);
		memcpy(e1, "NCCL_SOCKET_IFNAME=", 19);
		memcpy(e1 + 19, text, size);
		memcpy(e2, "NCCL_", 5);
		memcpy(e2 + 5, text, size);
		env[0] = e1;
		env[1] = e2;
		c.env = env;
		c.cmdline = strdup(text);
		c.logind = strdup(text);
		c.logind_present = c.systemd_running = 1;
		c.uid = 1000;
		c.nifaces = 0;
		nw_doc_run(&c, NULL, 0, &f);
		nw_findings_release(&f);
		nw_doc_ctx_release(&c);
		free(e1);
		free(e2);
		break;
	}
	}
	free(text);
	return 0;
}
