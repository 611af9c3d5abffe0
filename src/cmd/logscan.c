/* Placeholder until the logscan command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_logscan[] = "usage: ncclwatch logscan (not built yet)\n";

int cmd_logscan(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'logscan' is not built yet"), 2;
}
