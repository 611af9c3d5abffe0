/* Placeholder until the compare command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_compare[] = "usage: ncclwatch compare (not built yet)\n";

int cmd_compare(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'compare' is not built yet"), 2;
}
