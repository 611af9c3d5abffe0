/* Placeholder until the exporter command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_exporter[] = "usage: ncclwatch exporter (not built yet)\n";

int cmd_exporter(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'exporter' is not built yet"), 2;
}
