/* Placeholder until the topo command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_topo[] = "usage: ncclwatch topo (not built yet)\n";

int cmd_topo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'topo' is not built yet"), 2;
}
