/*
 * ncclwatch: how fast do bytes move between my GPUs, and if slow, why.
 * Dispatch over the command table (NW_COMMANDS in src/cmd/cmd.h).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "util/util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *help;
};

#define NW_CMD_ROW(name, help) { #name, cmd_##name, usage_##name, help },
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

static int help(const char *name)
{
	if (!name) {
		usage(stdout);
		return 0;
	}
	const struct command *c = find(name);
	if (!c)
		return unknown_command(name);
	fputs(c->usage, stdout);
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
	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		usage(stdout);
		rc = 0;
	} else if (!strcmp(name, "--version")) {
		printf("ncclwatch %s\n", NW_VERSION);
		rc = 0;
	} else if (!strcmp(name, "help")) {
		rc = help(argc > 2 ? argv[2] : NULL);
	} else {
		const struct command *c = find(name);
		if (!c)
			return unknown_command(name);
		/* A command's own --help/-h answers with its usage. */
		if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
			rc = help(name);
		else
			rc = c->fn(argc - 1, argv + 1);
	}
	if (nw_finish_stdout() != 0 && rc == 0)
		rc = 1;
	return rc;
}
