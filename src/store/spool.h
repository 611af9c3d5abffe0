/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool: runs that could not reach their history (a PostgreSQL server away
 * or not answering, or any database while a stop cut the recording off),
 * kept as files until a later command sends them. Internal to src/store
 * (commands call nw_store_sync in store.h).
 *
 * One JSON file per run under $NCCLWATCH_SPOOL, else
 * $XDG_DATA_HOME/ncclwatch/spool, else ~/.local/share/ncclwatch/spool:
 * {"db": the --db it was meant for, "key": its content key when it was
 * kept, "run": the run}. A sender claims a file by renaming it, so two
 * senders never send the same run.
 */
#ifndef NW_STORE_SPOOL_H
#define NW_STORE_SPOOL_H

#include <stddef.h>

#include "model/result.h"
#include "store/store.h"

/*
 * Keep run for database db in the spool. err holds why it was not stored;
 * what happened to the run is appended to it. 0 when kept.
 */
int nw_spool_keep(const char *db, const struct nw_run *run, char *err, size_t errlen);

/*
 * Send every spooled run meant for db into s, each in its own transaction,
 * up to s's deadline; a run sent, or found stored already (by its content
 * key), is removed from the spool. Claims that a killed sender left
 * (".sending-PID@HOST" whose process is gone) are taken back and sent. Once
 * the server stops answering, the rest stay for later. *c (may be NULL)
 * gets the counts; 0 when nothing failed, else -1 with err.
 */
int nw_spool_send(struct nw_store *s, const char *db, struct nw_spool_counts *c, char *err, size_t errlen);

#endif
