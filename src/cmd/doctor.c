/* Placeholder until the doctor command lands; replaced by its real implementation. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_doctor[] = "usage: ncclwatch doctor (not built yet)\n";

int cmd_doctor(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'doctor' is not built yet"), 2;
}
