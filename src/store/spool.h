/*
 * spool: runs that could not reach a PostgreSQL history, kept as files until
 * a later command sends them. Internal to src/store (commands call
 * nw_store_sync in store.h).
 *
 * One JSON file per run under $NCCLWATCH_SPOOL, else
 * $XDG_DATA_HOME/ncclwatch/spool, else ~/.local/share/ncclwatch/spool:
 * {"db": the --db it was meant for, "run": the run}. A sender claims a file
 * by renaming it, so two senders never send the same run.
 */
#ifndef NW_STORE_SPOOL_H
#define NW_STORE_SPOOL_H

#include <stddef.h>

#include "model/result.h"

struct nw_store;

/*
 * Keep run for database db in the spool. err holds why it was not stored;
 * what happened to the run is appended to it. 0 when kept.
 */
int nw_spool_keep(const char *db, const struct nw_run *run, char *err, size_t errlen);

/*
 * Send every spooled run meant for db into s, each in its own transaction;
 * a run sent is removed from the spool. *sent and *left (may be NULL) get
 * the counts; 0 when nothing failed, else -1 with err.
 */
int nw_spool_send(struct nw_store *s, const char *db, size_t *sent, size_t *left, char *err,
                  size_t errlen);

#endif
