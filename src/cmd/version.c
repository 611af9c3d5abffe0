/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version: the tool's version, the NCCL that would be loaded (and why),
 * the driver when there is one, and every other libnccl on the machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "gpu/cuda.h"
#include "gpu/nccl.h"
#include "util/util.h"

struct version_opts {
	const char *nccl_lib;
	struct nw_opt_out json;
};

static const struct nw_opt version_options[] = {
	{ .kind = NW_OPTK_FILE, .lname = "nccl-lib", .off = NW_F_STR(struct version_opts, nccl_lib), .argh = "PATH",
	  .help = "load this libnccl.so instead of searching" },
	NW_OPT_JSON(struct version_opts, json, ""),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_version = {
	.name = "version",
	.synopsis = "[--nccl-lib PATH] [--json[=FILE]]",
	.about = "Prints the tool version, the NCCL that bench would load (version, path and\n"
	         "why: --nccl-lib, NCCLWATCH_NCCL_LIB, the python3's PyTorch, or the system),\n"
	         "the CUDA driver when there is one, MPI support, and every other libnccl\n"
	         "found on this machine (two NCCLs on one machine is a classic trap).\n",
	.opts = version_options,
	.width = 20,
};

/*
 * The JSON form: version, MPI, the NCCL chosen (or why none), the driver,
 * every libnccl; where --json says. 0, or -1 after printing why.
 */
static int print_json(const struct nw_opt_out *j, const struct nw_nccl *nc, const char *nerr, const struct nw_cu *cu, const char *cerr,
                       const struct nw_nccl_where *all, size_t nall)
{
	json_t *o = json_object();
	json_object_set_new(o, "version", json_string(NW_VERSION));
	json_object_set_new(o, "mpi", json_boolean(NW_HAVE_MPI));
	if (nc) {
		json_t *n = json_object();
		json_object_set_new(n, "version", json_string(nc->version));
		json_object_set_new(n, "path", json_string(nc->where.path));
		json_object_set_new(n, "chosen_by", json_string(nc->where.how));
		json_object_set_new(n, "interposer", nc->interposer[0] ? json_string(nc->interposer) : json_null());
		json_object_set_new(o, "nccl", n);
	} else {
		json_object_set_new(o, "nccl", json_null());
		json_object_set_new(o, "nccl_error", json_string(nerr));
	}
	if (cu) {
		char v[16];
		snprintf(v, sizeof(v), "%d.%d", cu->driver_version / 1000, (cu->driver_version % 1000) / 10);
		json_object_set_new(o, "cuda_driver", json_string(v));
		json_object_set_new(o, "cuda_driver_path", json_string(cu->path));
	} else {
		json_object_set_new(o, "cuda_driver", json_null());
		json_object_set_new(o, "cuda_driver_error", json_string(cerr));
	}
	json_t *arr = json_array();
	for (size_t i = 0; i < nall; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "path", json_string(all[i].path));
		json_object_set_new(x, "version", json_string(all[i].version));
		json_object_set_new(x, "found_as", json_string(all[i].how));
		json_array_append_new(arr, x);
	}
	json_object_set_new(o, "nccl_libraries", arr);
	int rc = nw_cli_json_write("version", j, o, JSON_INDENT(2));
	json_decref(o);
	return rc;
}

/* The same as text, one line each. */
static void print_text(const struct nw_nccl *nc, const char *nerr, const struct nw_cu *cu, const char *cerr,
                       const struct nw_nccl_where *all, size_t nall)
{
	printf("ncclwatch %s (MPI support: %s)\n", NW_VERSION, NW_HAVE_MPI ? "yes" : "no");
	if (nc)
		printf("NCCL %s  %s  (chosen by %s)%s%s\n", nc->version, nc->where.path, nc->where.how,
		       nc->interposer[0] ? ", calls through " : "", nc->interposer);
	else
		printf("NCCL: none loaded: %s\n", nerr);
	if (cu)
		printf("CUDA driver API %d.%d  %s\n", cu->driver_version / 1000, (cu->driver_version % 1000) / 10,
		       cu->path);
	else
		printf("CUDA driver: not available: %s\n", cerr);
	printf("libnccl files on this machine: %zu\n", nall);
	for (size_t i = 0; i < nall; i++)
		printf("  %-10s %s  (%s)\n", all[i].version[0] ? all[i].version : "?", all[i].path, all[i].how);
}

int cmd_version(int argc, char **argv)
{
	struct version_opts o = { 0 };
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_version, &o, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_version, st);
	int rc = 0;
	const char *nccl_lib = o.nccl_lib;
	const struct nw_opt_out json = o.json;
	char nerr[NW_ERRLEN], cerr[NW_ERRLEN];
	const struct nw_nccl *nc = nw_nccl_load(nccl_lib, nerr, sizeof(nerr));
	const struct nw_cu *cu = nw_cuda_load(cerr, sizeof(cerr));
	struct nw_nccl_where *all = NULL;
	size_t nall = nw_nccl_find_all(&all);
	if (nw_cli_json_text(&json))
		print_text(nc, nerr, cu, cerr, all, nall);
	if (json.on && print_json(&json, nc, nerr, cu, cerr, all, nall))
		rc = 2;
	free(all);
	return rc;
}
