/* SPDX-License-Identifier: Apache-2.0 */
/*
 * termtext: text from outside (host names, paths, arguments, what a file,
 * a log or a database says) made safe to print on a terminal: a host name
 * holding "ESC]0;..." must not retitle the window, a newline must not forge
 * a line of output, and a 120 KB argument must not fill the screen.
 */
#ifndef NW_UTIL_TERMTEXT_H
#define NW_UTIL_TERMTEXT_H

#include <stddef.h>

/* Characters of a value shown before it is cut. */
#define NW_TT_MAX 256
/* The buffer nw_tt writes into: every shown character escaped, and the cut's note. */
#define NW_TT_BUF (NW_TT_MAX * 6 + 40)

/*
 * s as it may be printed: control characters (C0, DEL, C1) and bytes that
 * are not UTF-8 shown escaped (\n, \t, \r, \xHH, \u0085); a value longer
 * than NW_TT_MAX characters cut with "…" and its length in bytes
 * ("aaaa…(122880 bytes)"). NULL reads as "". Writes into out
 * (NW_TT_BUF bytes) and returns it.
 */
const char *nw_tt(const char *s, char *out);

/* nw_tt into a buffer of the caller's block: for a printf argument. */
#define NW_TT(s) nw_tt((s), (char[NW_TT_BUF]){ 0 })

/*
 * The same for a whole message a module wrote (an err buffer, which may
 * quote outside text): escaped like nw_tt, cut only past NW_TT_MSG_MAX
 * characters. Writes into out (NW_TT_MSG_BUF bytes) and returns it.
 */
#define NW_TT_MSG_MAX 1024
#define NW_TT_MSG_BUF (NW_TT_MSG_MAX * 6 + 40)
const char *nw_tt_msg(const char *s, char *out);
#define NW_TT_MSG(s) nw_tt_msg((s), (char[NW_TT_MSG_BUF]){ 0 })

/* The number of characters (code points) nw_tt's text takes on a terminal line: for column widths. */
size_t nw_tt_width(const char *tt);

#endif
