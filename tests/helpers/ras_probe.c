/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ras_probe: query a RAS port with ncclwatch's client (probe/ras.h) and
 * print what came back as the progress model, for tests/cli/test_ras.sh:
 *   format json|text protocol N nccl VERSION comms N
 *   comm HASH nranks N
 *   rank R host H pid P dead D enq OP=N ...   (known counts only)
 * With --file F the answer is read from a file instead (nw_ras_parse).
 * Errors: "ras_probe: error: ..." on stderr, exit 1; the elapsed time is
 * printed on stderr as "elapsed S".
 *   ras_probe [--addr HOST:PORT] [--timeout S] [--text] [--file F]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/ras.h"
#include "probe/ras.h"
#include "util/util.h"

static const char *const op_names[NWS_NOPS] = {
	"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
	"gather", "scatter", "send", "recv", "sendrecv", "other",
};

static void print_model(const struct nw_ras *r)
{
	struct nw_prog_comm *pc;
	size_t n;
	nw_ras_to_prog(r, &pc, &n);
	printf("format %s protocol %d nccl %s comms %zu\n", r->format == NW_RAS_JSON ? "json" : "text", r->protocol,
	       r->nccl_version[0] ? r->nccl_version : "?", n);
	for (size_t i = 0; i < n; i++) {
		printf("comm %016llx nranks %d\n", (unsigned long long)pc[i].comm_hash, pc[i].nranks);
		for (size_t j = 0; j < pc[i].n; j++) {
			const struct nw_prog_rank *p = &pc[i].ranks[j];
			printf("rank %d host %s pid %d dead %d enq", p->rank, p->host[0] ? p->host : "?", p->pid, p->dead);
			for (int op = 0; op < NWS_NOPS; op++)
				if (p->enq[op] != NW_PROG_UNKNOWN)
					printf(" %s=%llu", op_names[op], (unsigned long long)p->enq[op]);
			printf("\n");
		}
	}
	nw_ras_prog_free(pc, n);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *file = NULL;
	double timeout = 0;
	int text = 0;
	char err[NW_ERRLEN] = "";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--text")) {
			text = 1;
		} else if (!strcmp(argv[i], "--addr") && i + 1 < argc) {
			addr = argv[++i];
		} else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (nw_parse_double(argv[++i], 0.001, 3600, &timeout, "--timeout", err, sizeof(err))) {
				fprintf(stderr, "ras_probe: error: %s\n", err);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: ras_probe [--addr HOST:PORT] [--timeout S] [--text] [--file F]\n");
			return 2;
		}
	}
	struct nw_ras r;
	double t0 = nw_now();
	int rc;
	if (file) {
		size_t len;
		char *buf = nw_read_file(file, 64 << 20, &len);
		rc = buf ? nw_ras_parse(buf, len, &r, err, sizeof(err)) : nw_seterr(err, sizeof(err), "cannot read '%s'", file);
		if (!buf)
			memset(&r, 0, sizeof(r));
		free(buf);
	} else {
		rc = nw_ras_query(addr, timeout, text, &r, err, sizeof(err));
	}
	fprintf(stderr, "elapsed %.2f\n", nw_now() - t0);
	if (rc) {
		fprintf(stderr, "ras_probe: error: %s\n", err);
		nw_ras_release(&r);
		return 1;
	}
	print_model(&r);
	nw_ras_release(&r);
	return nw_finish_stdout() ? 1 : 0;
}
