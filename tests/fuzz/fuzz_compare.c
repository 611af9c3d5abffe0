/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compare and report on whatever the nccl-tests parser makes of arbitrary
 * text: the input is split at its first NUL (or in half) into A and B, each
 * parsed, compared, and rendered as HTML and SVG to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/result.h"
#include "parse/nccltests.h"
#include "report/report.h"
#include "store/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_one(const char *buf, size_t len, struct nw_run *out)
{
	struct nw_run *runs = NULL;
	nw_run_init(out);
	int n = nw_nt_parse_buf(buf, len, "fuzz", &runs, NULL, NULL, 0);
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < runs[i].nrows; k++) {
			nw_run_add(out, &runs[i].rows[k]);
			runs[i].rows[k].rank_times = NULL;
			runs[i].rows[k].nrank_times = 0;
		}
		nw_run_release(&runs[i]);
	}
	free(runs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, '\0', size);
	size_t la = nul ? (size_t)(nul - buf) : size / 2;
	size_t off = nul ? la + 1 : la;
	struct nw_run a, b;
	parse_one(buf, la, &a);
	parse_one(buf + off, size - off, &b);
	struct nw_cmp_opts o;
	nw_cmp_opts_default(&o);
	struct nw_cmp c;
	if (nw_compare(&a, &b, &o, &c, NULL, 0) == 0) {
		json_t *j = nw_cmp_to_json(&c, &o, "a", "b");
		json_decref(j);
		nw_cmp_release(&c);
	}
	FILE *f = fopen("/dev/null", "w");
	if (f) {
		const struct nw_run *runs[2] = { &a, &b };
		const char *labels[2] = { "a", "b" };
		struct nw_report_input in = { runs, labels, 2 };
		struct nw_report_opts ro;
		memset(&ro, 0, sizeof(ro));
		ro.cmp = o;
		nw_report_html(f, &in, &ro, NULL, 0);
		if (a.nrows)
			nw_svg_chart(f, &in, a.rows[0].op, &ro, NULL, 0);
		fclose(f);
	}
	nw_run_release(&a);
	nw_run_release(&b);
	return 0;
}
