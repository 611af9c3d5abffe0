#include <string.h>

#include "cmd/cmd.h"

const char *cmd_usage(const char *name)
{
	static const struct { const char *name; const char *text; } table[] = {
		{ "bench", usage_bench },
		{ "check", usage_check },
		{ "topo", usage_topo },
		{ "doctor", usage_doctor },
		{ "logscan", usage_logscan },
		{ "import", usage_import },
		{ "history", usage_history },
		{ "compare", usage_compare },
		{ "report", usage_report },
		{ "tune", usage_tune },
		{ "top", usage_top },
		{ "exporter", usage_exporter },
		{ "version", usage_version },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return table[i].text;
	return NULL;
}
