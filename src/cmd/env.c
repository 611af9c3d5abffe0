/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env: the lines to add to a training job so that it is watched live: the
 * profiler plugin or the interposer, whichever the job's NCCL allows
 * (probe/livemode.h), as shell exports, KEY=VALUE lines or JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "probe/livemode.h"
#include "util/util.h"

enum env_format { ENV_SHELL, ENV_KV };

struct env_opts {
	const char *nccl_lib;
	enum env_format format;
	struct nw_opt_out json;
};

static const struct nw_opt_choice env_formats[] = {
	{ "shell", ENV_SHELL },
	{ "env", ENV_KV },
	{ NULL, 0 },
};

static const struct nw_opt env_options[] = {
	NW_OPT_NCCL_LIB(struct env_opts, nccl_lib),
	{ .kind = NW_OPTK_CHOICE, .lname = "format", .off = NW_F_ENUM(struct env_opts, format), .argh = "F",
	  .choices = env_formats, .def = "shell",
	  .help = "shell: export lines (eval \"$(ncclwatch env)\"); env: KEY=VALUE\nlines (a Kubernetes env list, a systemd EnvironmentFile)" },
	NW_OPT_JSON(struct env_opts, json, "\n(schema ncclwatch.env/1)"),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_env = {
	.name = "env",
	.synopsis = "[--nccl-lib PATH] [--format shell|env] [--json[=FILE]]",
	.about = "Print what to add to a training job's environment so that ncclwatch\n"
	         "watches it live, for the NCCL this job will load (found as 'ncclwatch\n"
	         "version' finds it, or --nccl-lib): NCCL 2.23 and newer have a profiler\n"
	         "interface and get the plugin (NCCL_PROFILER_PLUGIN=<path of\n"
	         "libnccl-profiler-ncclwatch.so>); NCCL 2.18 to 2.22 get the interposer\n"
	         "(LD_PRELOAD=<path of libncclwatch-interpose.so>, before any LD_PRELOAD);\n"
	         "older NCCLs cannot be watched live, and it says why. Both libraries are\n"
	         "looked for beside this binary, in the install layout around it, and in\n"
	         "the usual library directories; a missing one is named with the places\n"
	         "looked in. 'ncclwatch run' sets the same (and more) by itself.\n",
	.opts = env_options,
	.footer = "exit status: 0 the lines were printed, 1 this job cannot be watched live\n"
	          "(the reason is printed), 2 bad usage.\n"
	          "\n"
	          "examples:\n"
	          "  eval \"$(ncclwatch env)\" && torchrun --nproc-per-node 8 train.py\n"
	          "  ncclwatch env --format env >> /etc/ncclwatch/job.env\n"
	          "  ncclwatch env --nccl-lib /opt/nccl/lib/libnccl.so.2 --json\n",
	.width = 18,
};

/* Whether s can stand in a shell word without quotes. */
static int shell_safe(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,=@%", *s))
			return 0;
	return 1;
}

/* s as one shell word: as it is, or single-quoted. */
static void shell_word(const char *s)
{
	if (shell_safe(s)) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static void print_shell(const struct nw_live *l)
{
	printf("# ncclwatch: %s\n", l->why);
	if (l->mode == NW_LIVE_PLUGIN) {
		fputs("export NCCL_PROFILER_PLUGIN=", stdout);
		shell_word(l->file);
		putchar('\n');
	} else if (l->mode == NW_LIVE_INTERPOSE) {
		fputs("export LD_PRELOAD=", stdout);
		shell_word(l->file);
		fputs("\"${LD_PRELOAD:+:$LD_PRELOAD}\"\n", stdout);
	}
}

static void print_kv(const struct nw_live *l)
{
	char name[64], value[4096];
	nw_live_setting(l, getenv("LD_PRELOAD"), name, sizeof(name), value, sizeof(value));
	if (name[0])
		printf("%s=%s\n", name, value);
}

static json_t *lib_json(const struct nw_live_lib *x, int tables)
{
	json_t *o = json_pack("{s:b, s:s?, s:s}", "found", x->found, "path", x->found ? x->path : NULL, "looked_in",
	                      x->looked);
	if (tables && x->found) {
		json_t *a = json_array();
		for (int v = 1; v < 32; v++)
			if (x->abis & (1u << v))
				json_array_append_new(a, json_integer(v));
		json_object_set_new(o, "profiler_tables", a);
		if (x->why[0])
			json_object_set_new(o, "error", json_string(x->why));
	}
	return o;
}

static int print_json(const struct env_opts *o, const struct nw_live_facts *f, const struct nw_live *l)
{
	json_t *doc = json_pack("{s:s, s:s, s:s}", "schema", "ncclwatch.env/1", "mode", nw_live_mode_name(l->mode),
	                        "why", l->why);
	if (f->nccl_found)
		json_object_set_new(doc, "nccl", json_pack("{s:s, s:s, s:s}", "version", f->nccl_version, "path",
		                                           f->nccl_path, "chosen_by", f->nccl_how));
	else
		json_object_set_new(doc, "nccl", json_null());
	json_object_set_new(doc, "profiler_interface", l->abi ? json_integer(l->abi) : json_null());
	json_object_set_new(doc, "file", l->file[0] ? json_string(l->file) : json_null());
	json_object_set_new(doc, "plugin", lib_json(&f->plugin, 1));
	json_object_set_new(doc, "interposer", lib_json(&f->interpose, 0));
	char name[64], value[4096];
	nw_live_setting(l, getenv("LD_PRELOAD"), name, sizeof(name), value, sizeof(value));
	json_t *env = json_object();
	if (name[0])
		json_object_set_new(env, name, json_string(value));
	json_object_set_new(doc, "env", env);
	int rc = nw_cli_json_write("env", &o->json, doc, JSON_INDENT(2));
	json_decref(doc);
	return rc;
}

int cmd_env(int argc, char **argv)
{
	struct env_opts o = { 0 };
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_env, &o, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_env, st);
	struct nw_live_facts f;
	struct nw_live l;
	nw_live_probe(o.nccl_lib, &f, &l);
	if (o.nccl_lib && !f.nccl_found)
		return nw_error("env: %s", f.nccl_err), 2;
	if (nw_cli_json_text(&o.json)) {
		if (o.format == ENV_SHELL)
			print_shell(&l);
		else {
			print_kv(&l);
			fprintf(stderr, "ncclwatch: env: %s\n", l.why);
		}
	}
	int rc = l.mode == NW_LIVE_NONE ? 1 : 0;
	if (o.json.on && print_json(&o, &f, &l) != 0)
		rc = 2;
	if (nw_finish_stdout() != 0)
		rc = 2;
	return rc;
}
