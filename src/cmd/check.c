/* Placeholder until the check command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_check[] = "usage: ncclwatch check (not built yet)\n";

int cmd_check(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'check' is not built yet"), 2;
}
