/* Placeholder until the version command lands. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_version[] = "usage: ncclwatch version\n";

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'version' is not built yet"), 2;
}
