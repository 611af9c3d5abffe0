/* Placeholder until the report command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_report[] = "usage: ncclwatch report (not built yet)\n";

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'report' is not built yet"), 2;
}
