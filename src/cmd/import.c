/* Placeholder until the import command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_import[] = "usage: ncclwatch import (not built yet)\n";

int cmd_import(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'import' is not built yet"), 2;
}
