/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store: the run history in SQLite or PostgreSQL (store.c: opening and the
 * schema; store_run.c: recording and loading a run; store_query.c: listing,
 * baselines, deleting, content keys and merging), and the fingerprint of
 * what a run ran on (fingerprint.c).
 *
 * One database file ($XDG_DATA_HOME/ncclwatch/history.db by default,
 * NCCLWATCH_DB or --db PATH to change it) holds every recorded run: its
 * header, its rows and a fingerprint (host, GPUs, driver, NCCL, topology,
 * NCCL_* and launcher variables). Many processes may record at once (every
 * rank of a job, several jobs): the file is in WAL mode, writers wait for
 * each other and retry, and each run is one transaction. A file that is not
 * ours (another application's database, a damaged file, not SQLite at all)
 * is refused before anything is written to it. The schema carries a version
 * (PRAGMA user_version) and is migrated forward by a table of steps.
 *
 * Commands that record (bench, check, import, tune) need three calls:
 *   NW_OPTS_STORE        rows in their option table (cmd/cli.h)
 *   nw_fingerprint_collect once the header is filled
 *   nw_store_record      when the run is complete
 */
#ifndef NW_STORE_H
#define NW_STORE_H

#include <signal.h>
#include <stddef.h>

#include "model/result.h"

/* History options of a recording command; zero-initialise it. */
struct nw_store_opts {
	const char *db_path; /* --db PATH or PostgreSQL URI; NULL: NCCLWATCH_DB, then the default */
	int disabled;        /* --no-history */
	double record_s;     /* the most recording may take in all (0: the lock bound); what is not stored by then is spooled */
};

/*
 * Fill run->h.extra["fingerprint"] from the header and this process's
 * environment: host, gpus, gpu_count, driver, cuda_driver, nccl_version,
 * nccl_path, nranks, nhosts, tool_version, cmdline, time, and "env" (every
 * NCCL_* and launcher variable). Keys the caller already put there (e.g.
 * "topology" summary string, "topology_hash") are kept.
 */
void nw_fingerprint_collect(struct nw_run *run);

/*
 * Complete fingerprint object fp from header h where a field is absent,
 * null or "": host, gpus, driver, cuda_driver, nccl_version, nccl_path,
 * backend, tool_version, and nranks, nhosts, link_gbs and the "topology"
 * summary of h->extra when known. What is already there stays.
 */
void nw_fingerprint_fill(json_t *fp, const struct nw_run_header *h);

/*
 * Record a run (results + fingerprint; the fingerprint is collected first
 * when the run has none). *id_out (may be NULL) gets its id, or 0 when
 * history is disabled. Honors opts->disabled and NCCLWATCH_DB.
 *
 * Every wait (for a lock, a connection, a statement's answer) ends after
 * the lock bound (NCCLWATCH_LOCK_TIMEOUT, default 15 s), and recording in
 * all ends within o->record_s (default: the bound), or within 0.1 s of a
 * stop (nw_store_stop_on). A run the PostgreSQL server did not take by
 * then (away, not answering, too busy) or that a stop cut off is kept in
 * the spool, with its time and identity, for `history sync` or the next
 * record to send, and -1 says so in err. Before anything is stored or
 * spooled, passwords are taken out of the run's command lines
 * (nw_store_redact), and its time is set when it has none.
 */
int nw_store_record(const struct nw_store_opts *o, struct nw_run *run, long long *id_out,
                    char *err, size_t errlen);

/*
 * The database path for these options: o->db_path, else NCCLWATCH_DB, else
 * $XDG_DATA_HOME/ncclwatch/history.db, else ~/.local/share/ncclwatch/history.db.
 */
int nw_store_path(const struct nw_store_opts *o, char *buf, size_t len, char *err, size_t errlen);

/* What a sending of the spool did. */
struct nw_spool_counts {
	size_t sent;       /* stored now */
	size_t dup;        /* already stored (a sender died after its commit): removed from the spool */
	size_t left;       /* still in the spool (failed, or the server went away) */
	size_t reclaimed;  /* of those handled, runs a sender killed before it finished had left claimed */
};

/*
 * Send the runs spooled for this database (o as for nw_store_record) while
 * its server could not be reached or a stop cut their recording off. *c
 * gets the counts; -1 with err when the database cannot be opened or a run
 * failed.
 */
int nw_store_sync(const struct nw_store_opts *o, struct nw_spool_counts *c, char *err, size_t errlen);

/*
 * A command's SIGINT/SIGTERM handler sets *flag non-zero (flag NULL: none):
 * from then on every wait on the database gives up within 0.1 s, and
 * nw_store_record keeps its run in the spool.
 */
void nw_store_stop_on(const volatile sig_atomic_t *flag);

/*
 * text with every password of a PostgreSQL connection string in it masked
 * as "***" (user:password@, password= in any case, a %-encoded key): for a
 * --db value in a message, a command line kept in history. The caller
 * frees the result.
 */
char *nw_store_redact(const char *text);

/*
 * Give run an identity of its own unless it has one: "record_id" in its
 * extra (this process's time to the microsecond, its id and random bits),
 * which its content key covers, so that two recordings never share a key,
 * even of the same rows on the same host in the same second (16 ranks
 * importing one output). The fingerprint stays what the run ran on.
 * nw_store_record calls it; a command inserting new runs itself
 * (nw_store_insert) calls it first.
 */
void nw_store_stamp(struct nw_run *run);

/* The schema version this code writes (PRAGMA user_version). */
#define NW_STORE_SCHEMA_VERSION 6
/* PRAGMA application_id of our files: "NCWH". */
#define NW_STORE_APP_ID 0x4e435748

/* An open history database. */
struct nw_store;

enum nw_store_mode {
	NW_STORE_READ,    /* must exist; nothing is ever created or written (SQLite; a server may be migrated) */
	NW_STORE_UPDATE,  /* must exist; changed (delete, baselines) and migrated */
	NW_STORE_WRITE,   /* created (with its directory) when absent, migrated */
};

/*
 * Open (and, for NW_STORE_UPDATE and NW_STORE_WRITE, create or migrate)
 * the database at path. Refuses files that are not ours without writing
 * to them. A new SQLite file is built under a temporary name and linked
 * into place whole, so a failed first open leaves no file. An SQLite file
 * opened to read is never changed: one with an older schema is read
 * through a migrated copy in memory, and an empty one is refused. Every
 * wait is bounded as for nw_store_record. The caller closes *out with
 * nw_store_close.
 */
int nw_store_open(const char *path, enum nw_store_mode mode, struct nw_store **out, char *err,
                  size_t errlen);
void nw_store_close(struct nw_store *s);

/*
 * fn hears, when a database is opened, why what is read from it may lack
 * its latest runs (an SQLite file whose write-ahead log cannot be read
 * here): path as shown, and the sentence. The store itself never prints.
 */
void nw_store_on_caveat(void (*fn)(const char *path, const char *why));

/*
 * fn hears, once per open database, that a command has waited more than
 * 1.5 s for a lock another process holds (path, and the bound it waits
 * up to). The store itself never prints.
 */
void nw_store_on_wait(void (*fn)(const char *path, double bound_s));

/* Insert a run in one transaction; *id_out gets its id. */
int nw_store_insert(struct nw_store *s, struct nw_run *run, long long *id_out, char *err,
                    size_t errlen);

/* One line of `history` listing. */
struct nw_store_entry {
	long long id;
	char time[32];
	char host[256];
	char source[16];
	char ops[160];          /* "all_reduce,all_gather" */
	char nccl_version[32];
	double peak_busbw;      /* GB/s, highest busbw of any row */
	int nrows;
	char baselines[128];    /* baseline names of this run, comma-separated */
	int incomplete;         /* its extra says "incomplete": an output cut short (nw_run_incomplete) */
	int interrupted;        /* its extra says "interrupted": stopped by a signal */
};

/* Filters of a listing; NULL/empty fields do not filter. */
struct nw_store_filter {
	const char *host;
	const char *op;
	const char *since;  /* ISO 8601 prefix: "2026-11-30" or "2026-11-30T10:00:00Z" */
	const char *until;  /* inclusive; a bare date means the whole day */
	long long limit;    /* 0: all; else the latest `limit` runs */
	const char *source; /* only runs of this source ("check", "job"); NULL or "": every source */
};

/* Runs matching f, oldest first; *out is the caller's to free(). */
int nw_store_list(struct nw_store *s, const struct nw_store_filter *f,
                  struct nw_store_entry **out, size_t *n, char *err, size_t errlen);

/* Load run id into run (initialised here; release with nw_run_release). */
int nw_store_load(struct nw_store *s, long long id, struct nw_run *run, char *err, size_t errlen);

/* Delete run id (and the baselines naming it). -1 when there is no such run. */
int nw_store_delete(struct nw_store *s, long long id, char *err, size_t errlen);

/* Ids of every run, oldest first; *ids is the caller's to free(). */
int nw_store_ids(struct nw_store *s, long long **ids, size_t *n, char *err, size_t errlen);

/*
 * Baselines: a name for a run. Names are 1-63 characters of letters,
 * digits, '.', '_' and '-', not all digits (so they never read as an id).
 */
int nw_store_baseline_name_ok(const char *name, char *err, size_t errlen);
/* Set (or move) baseline name to run id. */
int nw_store_baseline_set(struct nw_store *s, const char *name, long long id, char *err,
                          size_t errlen);
/* Remove baseline name; -1 when there is none. */
int nw_store_baseline_delete(struct nw_store *s, const char *name, char *err, size_t errlen);
/* The run a baseline names; 0 when the name is unknown, -1 on error. */
int nw_store_baseline_get(struct nw_store *s, const char *name, long long *id, char *err,
                          size_t errlen);

struct nw_store_baseline {
	char name[64];
	long long run_id;
	char set_time[32];
};
/* Every baseline, by name; *out is the caller's to free(). */
int nw_store_baseline_list(struct nw_store *s, struct nw_store_baseline **out, size_t *n,
                           char *err, size_t errlen);

/*
 * Fleet queries and merging (schema version 3). A run's content key says
 * what it is wherever it is stored: "TIME HOST SOURCE HASH", HASH being 16
 * hex digits of FNV-1a over its rows, its fingerprint and its record_id
 * (nw_store_stamp; runs recorded before it have none). Two databases
 * holding the same recorded run give it the same key; two recordings never
 * share one.
 */
#define NW_STORE_KEY_LEN 320

/* The content key of run, as it is (or would be) stored. */
void nw_store_run_key(const struct nw_run *run, char *out, size_t len);

/* 1 when a run with this content key is stored, 0 when none, -1 with err. */
int nw_store_has_key(struct nw_store *s, const char *key, char *err, size_t errlen);

/*
 * Give every run recorded before schema version 3 its content key (one
 * transaction). *n (may be NULL) gets how many were filled. -1 with err.
 */
int nw_store_fill_keys(struct nw_store *s, size_t *n, char *err, size_t errlen);

/*
 * The latest run of source "check" of every host (the highest id where one
 * host has two at the same time), read in one statement: *runs (by host
 * name) get their header, fingerprint and rows, though not the header's
 * command line and input nor the rows' per-rank and per-iteration times;
 * *ids their ids. The caller releases each run (nw_run_release) and frees
 * both arrays. Uses the index runs(source, host, time).
 */
int nw_store_latest_check_runs(struct nw_store *s, struct nw_run **runs, long long **ids, size_t *n, char *err,
                               size_t errlen);

/*
 * Copy every run of src into dst that dst does not hold yet (by content
 * key), each in its own transaction; baselines are not copied. *added and
 * *skipped (may be NULL) get the counts. -1 with err (runs copied before
 * the error stay).
 */
int nw_store_merge(struct nw_store *dst, struct nw_store *src, size_t *added, size_t *skipped,
                   char *err, size_t errlen);

#endif
