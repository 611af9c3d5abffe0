/* Placeholder until the top command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_top[] = "usage: ncclwatch top (not built yet)\n";

int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'top' is not built yet"), 2;
}
