/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclwatch: how fast do bytes move between my GPUs, and if slow, why.
 * Dispatch over the command table (NW_COMMANDS in src/cmd/cmd.h); help,
 * man pages and completion from each command's option table (cmd/opt.h).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "util/util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct nw_cmd_spec *spec;
	const char *help;
};

#define NW_CMD_ROW(name, help) { #name, cmd_##name, &nw_spec_##name, help },
static const struct command commands[] = { NW_COMMANDS(NW_CMD_ROW) };
#undef NW_CMD_ROW

static void usage(FILE *f)
{
	fprintf(f, "usage: ncclwatch <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "  %-9s %s\n", "help", "help <command>: options of one command");
	fprintf(f, "\nncclwatch --version prints the version; docs/ has the manual.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* Says there is no command name, suggesting the nearest one; returns 2. */
static int unknown_command(const char *name)
{
	const char *names[NW_ARRAY_LEN(commands) + 1];
	for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
		names[i] = commands[i].name;
	names[NW_ARRAY_LEN(commands)] = "help";
	const char *near = nw_cli_nearest(name, names, NW_ARRAY_LEN(names));
	if (near)
		nw_error("unknown command '%s'; did you mean '%s'? 'ncclwatch --help' lists the commands", name, near);
	else
		nw_error("unknown command '%s'; 'ncclwatch --help' lists the commands", name);
	return 2;
}

/* The top man page, ncclwatch(1): the commands, each pointing to its own page. */
static void man_top(FILE *f)
{
	fprintf(f, ".TH NCCLWATCH 1 \"\" \"ncclwatch %s\" \"ncclwatch manual\"\n", NW_VERSION);
	fprintf(f, ".SH NAME\nncclwatch \\- NCCL collectives: benchmark, pre\\-flight check, diagnosis, history, "
	        "live view\n.SH SYNOPSIS\n\\fBncclwatch\\fR \\fIcommand\\fR [\\fIoptions\\fR]\n.SH COMMANDS\n");
	for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
		fprintf(f, ".TP\n\\fB%s\\fR\n%s; see \\fBncclwatch\\-%s\\fR(1)\n", commands[i].name, commands[i].help,
		        commands[i].name);
	fprintf(f, ".SH SEE ALSO\n");
	for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
		fprintf(f, ".BR ncclwatch\\-%s (1)%s\n", commands[i].name, i + 1 < NW_ARRAY_LEN(commands) ? "," : "");
}

/*
 * help [CMD]: the commands, or one command's options. For the build and
 * the tests: help --man [CMD] (a man page), help --options CMD (one line
 * per option).
 */
static int help(int argc, char **argv)
{
	const char *mode = argc > 1 && argv[1][0] == '-' ? argv[1] : NULL;
	const char *name = argc > (mode ? 2 : 1) ? argv[mode ? 2 : 1] : NULL;
	if (mode && strcmp(mode, "--man") && strcmp(mode, "--options"))
		return nw_error("help: unknown option '%s' (help [--man|--options] [COMMAND])", mode), 2;
	if (!name) {
		if (mode && !strcmp(mode, "--man"))
			man_top(stdout);
		else if (mode)
			return nw_error("help --options needs a command"), 2;
		else
			usage(stdout);
		return 0;
	}
	const struct command *c = find(name);
	if (!c)
		return unknown_command(name);
	if (!mode)
		nw_opt_help(c->spec, stdout);
	else if (!strcmp(mode, "--man"))
		nw_opt_man(c->spec, c->help, NW_VERSION, stdout);
	else
		nw_opt_list(c->spec, stdout);
	return 0;
}

/*
 * __complete WORDS...: the shell completion's helper (completions/). The
 * last word is the one being completed; candidates one per line.
 */
static int complete(int argc, char **argv)
{
	if (argc < 2)
		return 0;
	const char *cur = argv[argc - 1];
	if (argc == 2 || (argc == 3 && !strcmp(argv[1], "help"))) {
		for (size_t i = 0; i < NW_ARRAY_LEN(commands); i++)
			if (!strncmp(commands[i].name, cur, strlen(cur)))
				printf("%s\n", commands[i].name);
		if (argc == 2 && !strncmp("help", cur, strlen(cur)))
			printf("help\n");
		if (argc == 2 && cur[0] == '-')
			printf("--help\n--version\n");
		return 0;
	}
	const struct command *c = find(argv[1]);
	if (c)
		nw_opt_complete(c->spec, argc - 2, argv + 2, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	int rc;
	nw_store_on_wait(nw_cli_say_waiting);
	nw_store_on_caveat(nw_cli_say_caveat);
	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		usage(stdout);
		rc = 0;
	} else if (!strcmp(name, "--version")) {
		printf("ncclwatch %s\n", NW_VERSION);
		rc = 0;
	} else if (!strcmp(name, "help")) {
		rc = help(argc - 1, argv + 1);
	} else if (!strcmp(name, "__complete")) {
		rc = complete(argc - 1, argv + 1);
	} else {
		const struct command *c = find(name);
		if (!c)
			return unknown_command(name);
		rc = c->fn(argc - 1, argv + 1);
	}
	if (nw_finish_stdout() != 0 && rc == 0)
		rc = 1;
	return rc;
}
