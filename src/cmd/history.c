/* Placeholder until the history command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_history[] = "usage: ncclwatch history (not built yet)\n";

int cmd_history(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'history' is not built yet"), 2;
}
