/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hangsrc: the sources of progress this node can read (the plugin's live
 * stats files, and trace dumps gathered from any node), each turned into
 * model/progress communicators and merged into one nw_prog_set.
 *
 * A trace dump carries, next to its trace events, one progress object per
 * communicator in otherData.progress (written by src/plugin/hang.c):
 *   {"comm":"<16 hex>","rank":R,"nranks":N,"host":H,"pid":P,
 *    "completion":"none|sampled|kernel|proxy","last_event_ns":..,
 *    "inflight":..,"oldest_ns":..,"oldest_op":"all_reduce","oldest_seq":..,
 *    "enq_op":..,"enq_seq":..,"enq_bytes":..,"enq_ns":..,"hung":bool,
 *    "now_ns":..,"enq":[NWS_NOPS counts],"done":[NWS_NOPS counts]}
 */
#ifndef NW_HANGSRC_H
#define NW_HANGSRC_H

#include <stddef.h>

#include "export/statsfile.h"
#include "model/progress.h"

/*
 * Add the progress of every file of a loaded stats set to s (source
 * NW_PROG_SRC_STATS). Files of a disabled plugin are left out (their
 * figures stopped) and counted in *ndisabled. -1 with err on failure.
 */
int nw_hangsrc_stats(const struct nw_sf_set *set, struct nw_prog_set *s, size_t *ndisabled, char *err,
                     size_t errlen);

/*
 * Add the progress in trace dumps to s (source NW_PROG_SRC_DUMP): path is
 * one dump, or a directory whose *.json files are all read. *nfiles counts
 * the dumps read. -1 with err naming the file and what is wrong with it.
 */
int nw_hangsrc_dumps(const char *path, struct nw_prog_set *s, size_t *nfiles, char *err, size_t errlen);

/* One dump's text (len bytes; path only names it in errors) into s. -1 with err. */
int nw_hangsrc_dump_text(const char *text, size_t len, const char *path, struct nw_prog_set *s, char *err,
                         size_t errlen);

#endif
