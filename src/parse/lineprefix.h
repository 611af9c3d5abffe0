/*
 * lineprefix: strip what launchers and terminals add in front of a line of
 * program output, so the NCCL log and nccl-tests parsers see the program's
 * own text. Handled, in any stacking order: ANSI colour sequences (anywhere
 * in the line), Open MPI's "[1,3]<stdout>:", torchrun/PyTorch "[rank3]:" and
 * "[default0]:", Ray's "(Worker pid=803, ip=...) ", srun --label "3: ", pdsh "host: " (only in front of text
 * that looks like NCCL, nccl-tests or ncclwatch plugin output), and leading timestamps
 * ("2026-11-30T11:39:33.123Z ", "[2026-11-30 11:39:33] ").
 */
#ifndef NW_LINEPREFIX_H
#define NW_LINEPREFIX_H

#include <stddef.h>

struct nw_lp {
	char tag[48];   /* launcher's stream name ("1,3", "rank3", "node7"); "" when none */
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
