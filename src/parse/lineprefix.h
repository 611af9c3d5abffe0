/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lineprefix: strip what launchers and terminals add in front of a line of
 * program output, so the NCCL log and nccl-tests parsers see the program's
 * own text. Handled, in any stacking order: ANSI colour sequences (anywhere
 * in the line), Open MPI's "[1,3]<stdout>:", torchrun/PyTorch "[rank3]:" and
 * "[default0]:", Ray's "(Worker pid=803, ip=...) ", srun --label "3: ", pdsh "host: " (only in front of text
 * that looks like NCCL, nccl-tests or ncclwatch plugin output), kubectl logs --prefix
 * "[pod/NAME/CONTAINER] ", Open MPI's and UCX's "[host:pid] " (before their signal
 * reports), and leading timestamps: ISO ("2026-11-30T11:39:33.123Z ",
 * "[2026-11-30 11:39:33] "), ctime ("Fri Aug 11 12:31:45 2023", Open MPI's
 * --timestamp-output) and syslog ("Aug 11 12:31:45 host prog[pid]: ", also after
 * an ISO timestamp as journald writes it), the cells of a table copied from
 * AWS CloudWatch ("  | 2025-05-16T16:39:51.208-07:00 | "), and at the line's
 * end Ray's log deduplication ("[repeated 40x across cluster]"). Colour
 * sequences pasted as text ("ESC[36m", or a Windows console's arrow) go
 * like the real ones.
 */
#ifndef NW_LINEPREFIX_H
#define NW_LINEPREFIX_H

#include <stddef.h>

struct nw_lp {
	char tag[48];   /* launcher's stream name ("1,3", "rank3", "node7", a pod, a syslog host); "" when none */
	char host[64];  /* the writer's host, where the prefix names it ("[host:pid]" of Open MPI and UCX); "" */
	long pid;       /* and its pid; 0 unknown */
	long repeated;  /* Ray's "[repeated 40x across cluster]" cut from the line's end: 40; 0 none */
};

/*
 * Strip prefixes from line[0..len) in place (ANSI sequences are removed by
 * moving bytes). Returns the offset of the program's text in line and sets
 * *newlen to the length of what remains from that offset. lp may be NULL.
 */
size_t nw_lp_strip(char *line, size_t len, size_t *newlen, struct nw_lp *lp);

/*
 * Whether s[0..len) starts with NCCL's log prefix "host:pid:tid [dev] " (or "host:pid [dev] ");
 * returns the prefix length (0 when not).
 */
size_t nw_lp_nccl_prefix(const char *s, size_t len);

#endif
