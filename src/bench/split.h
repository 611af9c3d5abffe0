/* SPDX-License-Identifier: Apache-2.0 */
/*
 * split: nccl-tests' NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK, which cut
 * the job's processes into groups that each run the collectives among
 * themselves, at the same time. A process's group (its "color") is a
 * function of its rank among the processes: "AND 0x1" (or "&0x1"),
 * "OR 1" ("|1"), "MOD 2" ("%2"), "DIV 4" ("/4"); the value is decimal,
 * 0x hex, 0 octal or 0b binary, the keyword in any case.
 * NCCL_TESTS_SPLIT_MASK=HEX is "AND 0xHEX" and wins when both are set.
 */
#ifndef NW_BENCH_SPLIT_H
#define NW_BENCH_SPLIT_H

#include <stddef.h>

enum nw_split_kind { NW_SPLIT_NONE, NW_SPLIT_AND, NW_SPLIT_OR, NW_SPLIT_MOD, NW_SPLIT_DIV };

struct nw_split {
	enum nw_split_kind kind;
	unsigned long value;
	char text[64]; /* "NCCL_TESTS_SPLIT=MOD 2", as given, for the run header */
};

/* What NCCL_TESTS_SPLIT accepts, for messages and help. */
#define NW_SPLIT_FORMS "AND N, OR N, MOD N or DIV N (or &N, |N, %N, /N; N decimal, 0x hex or 0b binary)"

/*
 * Parse the two variables' values (NULL when unset) into s (kind NONE when
 * both are unset). 0, or -1 with err naming the variable, what is wrong
 * and the accepted forms.
 */
int nw_split_parse(const char *split, const char *mask, struct nw_split *s, char *err, size_t errlen);

/* The color (group number) of process 'rank' under s; 0 when none. */
int nw_split_color(const struct nw_split *s, int rank);

/* Splitting the job itself is the sweep's (bs_split_job, bench_int.h). */

#endif
