/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd: one function per command, each in src/cmd/<name>.c with its option
 * table (cmd/opt.h). A command parses its options, calls modules, prints,
 * and returns the process exit status.
 *
 * NW_COMMANDS is the one table of commands: dispatch, `ncclwatch --help`,
 * `ncclwatch help NAME`, the man pages and completion all come from it. A
 * new command is one row here and one file src/cmd/<name>.c that defines
 * `int cmd_<name>(int argc, char **argv)` and
 * `const struct nw_cmd_spec nw_spec_<name>` (its options, cmd/opt.h).
 * (No cmd.c: the table is expanded where it is used, in src/main.c.)
 */
#ifndef NW_CMD_H
#define NW_CMD_H

#include "cmd/opt.h"

#define NW_COMMANDS(X) \
	X(bench,    "measure collectives over a size sweep (nccl-tests compatible)") \
	X(check,    "pass/fail pre-flight: doctor plus a short bench against expectations") \
	X(topo,     "GPUs, links, NICs, and the bandwidth they should give") \
	X(doctor,   "what in this machine, container or environment hurts NCCL") \
	X(logscan,  "read NCCL_DEBUG=INFO logs: what NCCL did and what went wrong") \
	X(import,   "bring nccl-tests outputs (text or -J JSON) into the result model") \
	X(history,  "list, show, export, delete and name recorded runs") \
	X(compare,  "compare two runs; find regressions and what changed") \
	X(report,   "self-contained HTML (or SVG) report of runs") \
	X(fleet,    "every host's latest check against its peers: the slow node and what differs") \
	X(tune,     "measure NCCL settings against defaults on this machine") \
	X(top,      "live view of a training job's collectives (profiler plugin)") \
	X(exporter, "Prometheus /metrics from the profiler plugin's stats") \
	X(hang,     "is the job hung in NCCL: which collective, which ranks not arrived") \
	X(run,      "run a training job watched: live status, hangs, a report of its communication") \
	X(env,      "the lines that make a job watched live: the plugin or the interposer") \
	X(version,  "tool version, the NCCL that would load, driver, other NCCLs")

#define NW_CMD_DECLARE(name, help) \
	int cmd_##name(int argc, char **argv); \
	extern const struct nw_cmd_spec nw_spec_##name;
NW_COMMANDS(NW_CMD_DECLARE)
#undef NW_CMD_DECLARE

#endif
