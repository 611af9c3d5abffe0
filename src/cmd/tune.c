/* Placeholder until the tune command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_tune[] = "usage: ncclwatch tune (not built yet)\n";

int cmd_tune(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'tune' is not built yet"), 2;
}
