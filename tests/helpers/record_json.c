/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_json DB FILE...: records each ncclwatch results JSON file into the
 * history database DB as a command would (fingerprint from the header and
 * this process's environment), printing each new run id on stdout.
 */
#include <stdio.h>

#include "model/result.h"
#include "store/store.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: record_json DB FILE...\n");
		return 2;
	}
	struct nw_store_opts o = { .db_path = argv[1] };
	for (int i = 2; i < argc; i++) {
		char err[NW_ERRLEN];
		json_error_t je;
		json_t *doc = json_load_file(argv[i], 0, &je);
		if (!doc) {
			fprintf(stderr, "record_json: '%s': %s\n", argv[i], je.text);
			return 1;
		}
		struct nw_run run;
		int rc = nw_run_from_json(doc, &run, err, sizeof(err));
		json_decref(doc);
		long long id = 0;
		if (!rc) {
			nw_fingerprint_collect(&run);
			rc = nw_store_record(&o, &run, &id, err, sizeof(err));
			nw_run_release(&run);
		}
		if (rc) {
			fprintf(stderr, "record_json: '%s': %s\n", argv[i], err);
			return 1;
		}
		printf("%lld\n", id);
	}
	return 0;
}
