/*
 * cmd: one function per command, each in src/cmd/<name>.c. A command parses
 * its options, calls modules, prints, and returns the process exit status.
 */
#ifndef NW_CMD_H
#define NW_CMD_H

int cmd_bench(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_logscan(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_version(int argc, char **argv);


/* Each command file defines its usage text. */
extern const char usage_bench[];
extern const char usage_check[];
extern const char usage_topo[];
extern const char usage_doctor[];
extern const char usage_logscan[];
extern const char usage_import[];
extern const char usage_history[];
extern const char usage_compare[];
extern const char usage_report[];
extern const char usage_tune[];
extern const char usage_top[];
extern const char usage_exporter[];
extern const char usage_version[];

/* Usage text of a command ("ncclwatch help <name>"); NULL when unknown. */
const char *cmd_usage(const char *name);

#endif
