/* Placeholder until the bench command lands. */
#include "cmd/cmd.h"
#include "util/util.h"

const char usage_bench[] = "usage: ncclwatch bench\n";

int cmd_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return nw_error("'bench' is not built yet"), 2;
}
