/* SPDX-License-Identifier: Apache-2.0 */
/*
 * History database: round trip, options, refusal of foreign files, forward
 * migration, files opened to read left as they were, passwords kept out,
 * a content key of its own for every recording.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "model/result.h"
#include "store/db.h"
#include "store/spool.h"
#include "store/store.h"
#include "util/util.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/nwstore.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Two rows of the reference all_reduce run (nccl-tests 2.19.6 on 2 x H200). */
static void make_run(struct nw_run *run)
{
	nw_run_init(run);
	nw_strlcpy(run->h.source, "import", sizeof(run->h.source));
	nw_strlcpy(run->h.backend, "nccl-tests", sizeof(run->h.backend));
	nw_strlcpy(run->h.host, "vm", sizeof(run->h.host));
	nw_strlcpy(run->h.gpus, "2 x NVIDIA H200", sizeof(run->h.gpus));
	nw_strlcpy(run->h.nccl_version, "2.28.9", sizeof(run->h.nccl_version));
	nw_strlcpy(run->h.time, "2026-11-30T11:39:33Z", sizeof(run->h.time));
	run->h.nranks = 2;
	run->h.link_gbs = 478.1;
	const double t[2] = { 259.11, 3305.38 };
	const uint64_t sz[2] = { 67108864ULL, 1073741824ULL };
	for (int i = 0; i < 2; i++) {
		struct nw_row r;
		memset(&r, 0, sizeof(r));
		nw_strlcpy(r.op, "all_reduce", sizeof(r.op));
		nw_strlcpy(r.dtype, "float", sizeof(r.dtype));
		nw_strlcpy(r.redop, "sum", sizeof(r.redop));
		r.root = -1;
		r.size_bytes = sz[i];
		r.count = sz[i] / 4;
		r.nranks = 2;
		r.time_us = t[i];
		r.wrong = i ? -1 : 0;
		nw_row_compute_bw(&r);
		if (i) {
			r.nrank_times = 2;
			r.rank_times = nw_calloc(2, sizeof(*r.rank_times));
			for (int k = 0; k < 2; k++) {
				r.rank_times[k].rank = k;
				r.rank_times[k].gpu = k;
				nw_strlcpy(r.rank_times[k].host, "vm", sizeof(r.rank_times[k].host));
				r.rank_times[k].time_us = t[i] + k;
			}
		}
		nw_run_add(run, &r);
	}
}

/* Record, read back, list, filter, baselines and delete on the database at path. */
static void round_trip_at(const char *path)
{
	char err[NW_ERRLEN];
	setenv("NCCL_PROTO", "Simple", 1);
	struct nw_run run, back;
	make_run(&run);
	struct nw_store_opts o = { .db_path = path };
	long long id = 0;
	assert_int_equal(nw_store_record(&o, &run, &id, err, sizeof(err)), 0);
	assert_true(id > 0);
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_UPDATE, &s, err, sizeof(err)), 0);
	assert_int_equal(nw_store_load(s, id, &back, err, sizeof(err)), 0);
	assert_int_equal(back.nrows, 2);
	assert_string_equal(back.h.nccl_version, "2.28.9");
	assert_string_equal(back.h.host, "vm");
	assert_true(back.h.link_gbs > 478.0 && back.h.link_gbs < 478.2);
	assert_true(back.rows[0].busbw_gbs == run.rows[0].busbw_gbs);
	assert_int_equal(back.rows[0].wrong, 0);
	assert_int_equal(back.rows[1].wrong, -1);
	assert_int_equal(back.rows[1].nrank_times, 2);
	assert_true(back.rows[1].rank_times[1].time_us == 3306.38);
	json_t *fp = json_object_get(back.h.extra, "fingerprint");
	assert_non_null(fp);
	assert_int_equal(json_integer_value(json_object_get(fp, "gpu_count")), 2);
	/* no command line in the header: this process's own */
	assert_non_null(strstr(json_string_value(json_object_get(fp, "cmdline")), "test_store_db"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(fp, "env"), "NCCL_PROTO")), "Simple");

	struct nw_store_entry *e;
	size_t n;
	assert_int_equal(nw_store_list(s, NULL, &e, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].ops, "all_reduce");
	assert_true(e[0].peak_busbw > 324.8 && e[0].peak_busbw < 324.9);
	free(e);
	struct nw_store_filter f = { .host = "other" };
	assert_int_equal(nw_store_list(s, &f, &e, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	free(e);
	struct nw_store_filter g = { .op = "all_reduce", .since = "2026-11-30", .until = "2026-11-30" };
	assert_int_equal(nw_store_list(s, &g, &e, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	free(e);
	struct nw_store_filter bad = { .since = "yesterday" };
	assert_int_equal(nw_store_list(s, &bad, &e, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "yesterday"));

	long long bid = 0;
	assert_int_equal(nw_store_baseline_set(s, "good", id, err, sizeof(err)), 0);
	assert_int_equal(nw_store_baseline_get(s, "good", &bid, err, sizeof(err)), 1);
	assert_int_equal(bid, id);
	assert_int_equal(nw_store_baseline_set(s, "42", id, err, sizeof(err)), -1);
	assert_int_equal(nw_store_baseline_set(s, "x", id + 100, err, sizeof(err)), -1);
	assert_int_equal(nw_store_delete(s, id, err, sizeof(err)), 0);
	assert_int_equal(nw_store_baseline_get(s, "good", &bid, err, sizeof(err)), 0);
	assert_int_equal(nw_store_delete(s, id, err, sizeof(err)), -1);
	/* a run whose rank count is unknown is recorded, and read back, as unknown */
	nw_run_release(&back);
	nw_run_release(&run);
	make_run(&run);
	run.h.nranks = 0;
	for (size_t i = 0; i < run.nrows; i++)
		run.rows[i].nranks = 0;
	assert_int_equal(nw_store_record(&o, &run, &id, err, sizeof(err)), 0);
	assert_int_equal(nw_store_load(s, id, &back, err, sizeof(err)), 0);
	assert_int_equal(back.h.nranks, 0);
	assert_int_equal(back.rows[1].nranks, 0);
	assert_true(json_is_null(json_object_get(json_object_get(back.h.extra, "fingerprint"), "nranks")));
	nw_store_close(s);
	nw_run_release(&run);
	nw_run_release(&back);
	unsetenv("NCCL_PROTO");
}

static void round_trip(void **state)
{
	(void)state;
	char path[128];
	path_in(path, sizeof(path), "sub/dir/h.db");
	round_trip_at(path);
}

/* The same on PostgreSQL: NW_TEST_PG names an empty database (tests/cli/test_store_pg.sh starts one). */
static void pg_round_trip(void **state)
{
	(void)state;
	const char *uri = getenv("NW_TEST_PG");
	if (!uri || !*uri)
		skip();
	round_trip_at(uri);
}

/* --no-history: nothing is recorded and no database is made (option parsing: test_cli.c). */
static void disabled_records_nothing(void **state)
{
	(void)state;
	char err[NW_ERRLEN];
	struct nw_run run;
	make_run(&run);
	long long id = 7;
	struct nw_store_opts off = { .db_path = "/nonexistent/dir/never.db", .disabled = 1 };
	assert_int_equal(nw_store_record(&off, &run, &id, err, sizeof(err)), 0);
	assert_int_equal(id, 0);
	assert_int_equal(access("/nonexistent/dir/never.db", F_OK), -1);
	nw_run_release(&run);
}

static void default_path(void **state)
{
	(void)state;
	char buf[256], err[NW_ERRLEN];
	unsetenv("NCCLWATCH_DB");
	setenv("XDG_DATA_HOME", "/data", 1);
	assert_int_equal(nw_store_path(NULL, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "/data/ncclwatch/history.db");
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/home/u", 1);
	assert_int_equal(nw_store_path(NULL, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "/home/u/.local/share/ncclwatch/history.db");
	setenv("NCCLWATCH_DB", "/env.db", 1);
	assert_int_equal(nw_store_path(NULL, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "/env.db");
	struct nw_store_opts o = { .db_path = "/opt.db" };
	assert_int_equal(nw_store_path(&o, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "/opt.db");
	unsetenv("NCCLWATCH_DB");
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

/* Another application's SQLite file and a text file are refused and left as they were. */
static void foreign_files(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "other.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	long before = file_size(path);
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_WRITE, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not an ncclwatch history database"));
	assert_int_equal(file_size(path), before);
	char wal[160];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_int_equal(access(wal, F_OK), -1);

	path_in(path, sizeof(path), "notes.txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("these are my notes, not a database\n", f);
	fclose(f);
	struct nw_run run;
	make_run(&run);
	struct nw_store_opts o = { .db_path = path };
	assert_int_equal(nw_store_record(&o, &run, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not an SQLite file"));
	assert_int_equal(file_size(path), (long)strlen("these are my notes, not a database\n"));
	nw_run_release(&run);

	/* Our own file, with its pages overwritten: an error naming the damage, no crash. */
	path_in(path, sizeof(path), "damaged.db");
	make_run(&run);
	struct nw_store_opts d = { .db_path = path };
	assert_int_equal(nw_store_record(&d, &run, NULL, err, sizeof(err)), 0);
	assert_int_equal(nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)), 0);
	nw_store_close(s); /* checkpoints the WAL into the main file */
	f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, 100, SEEK_SET);
	for (int i = 0; i < 8000; i++)
		fputc(0x5a, f);
	fclose(f);
	int rc = nw_store_open(path, NW_STORE_WRITE, &s, err, sizeof(err));
	if (rc == 0) {
		struct nw_run back;
		rc = nw_store_load(s, 1, &back, err, sizeof(err));
		nw_store_close(s);
	}
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, path));
	nw_run_release(&run);
}

/* A version 1 database, as step 1 of the schema made it, with one run in it. */
static const char v1_schema[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"INSERT INTO meta(key, value) VALUES('application', 'ncclwatch history');"
	"CREATE TABLE runs("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" time TEXT NOT NULL, host TEXT NOT NULL, source TEXT NOT NULL, backend TEXT NOT NULL,"
	" tool_version TEXT NOT NULL, nccl_version TEXT NOT NULL, nccl_path TEXT NOT NULL,"
	" driver TEXT NOT NULL, cuda_driver TEXT NOT NULL, gpus TEXT NOT NULL,"
	" cmdline TEXT NOT NULL, input TEXT NOT NULL, nranks INTEGER NOT NULL,"
	" nhosts INTEGER NOT NULL, ops TEXT NOT NULL, peak_busbw REAL NOT NULL,"
	" nrows INTEGER NOT NULL, extra TEXT);"
	"CREATE TABLE results("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL, redop TEXT NOT NULL,"
	" root INTEGER NOT NULL, size_bytes INTEGER NOT NULL, count INTEGER NOT NULL,"
	" nranks INTEGER NOT NULL, inplace INTEGER NOT NULL, time_us REAL NOT NULL,"
	" algbw_gbs REAL NOT NULL, busbw_gbs REAL NOT NULL, wrong INTEGER, ranks TEXT,"
	" PRIMARY KEY(run_id, seq));"
	"CREATE INDEX runs_time ON runs(time);"
	"INSERT INTO runs VALUES(1, '2026-11-01T10:00:00Z', 'vm', 'import', 'nccl-tests', '0.1.0',"
	" '2.21.5', '', '', '', '2 x NVIDIA H200', 'all_reduce_perf -g 2', 'old.txt', 2, 1,"
	" 'all_reduce', 259.0, 1, NULL);"
	"INSERT INTO results VALUES(1, 0, 'all_reduce', 'float', 'sum', -1, 67108864, 16777216, 2,"
	" 0, 259.11, 259.0, 259.0, 0, NULL);"
	"PRAGMA application_id = 1313036104;"
	"PRAGMA user_version = 1;";

/* One integer answer of sql on db. */
static long long lite_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* A file at dir/name made by schema step 1 (v1_schema), then by later (NULL: none), as an older ncclwatch left it. */
static void old_file(char *path, size_t len, const char *name, const char *later)
{
	path_in(path, len, name);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, v1_schema, NULL, NULL, NULL), SQLITE_OK);
	if (later)
		assert_int_equal(sqlite3_exec(db, later, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void migrate_v1(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	old_file(path, sizeof(path), "v1.db", NULL);

	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_WRITE, &s, err, sizeof(err)), 0);
	struct nw_run old;
	assert_int_equal(nw_store_load(s, 1, &old, err, sizeof(err)), 0);
	assert_string_equal(old.h.nccl_version, "2.21.5");
	assert_true(old.h.link_gbs == 0);
	assert_int_equal(old.nrows, 1);
	assert_true(old.rows[0].busbw_gbs == 259.0);
	/* what version 2 added works on the migrated file */
	assert_int_equal(nw_store_baseline_set(s, "before-update", 1, err, sizeof(err)), 0);
	struct nw_run run;
	make_run(&run);
	long long id;
	assert_int_equal(nw_store_insert(s, &run, &id, err, sizeof(err)), 0);
	assert_int_equal(id, 2);
	nw_store_close(s);
	nw_run_release(&run);
	nw_run_release(&old);

	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(lite_int(db, "PRAGMA user_version"), NW_STORE_SCHEMA_VERSION);
	sqlite3_close(db);
}

/*
 * A version 4 database: version 1 and steps 2 to 4 as they were, an import
 * stored with 0 ranks (run 1), a run of 8 ranks named as a baseline (run 2),
 * and runs up to 7 since deleted.
 */
static const char v4_steps[] =
	"ALTER TABLE runs ADD COLUMN link_gbs REAL NOT NULL DEFAULT 0;"
	"CREATE TABLE baselines(name TEXT PRIMARY KEY,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, set_time TEXT NOT NULL);"
	"CREATE INDEX runs_host ON runs(host);"
	"ALTER TABLE runs ADD COLUMN content_key TEXT;"
	"CREATE INDEX runs_content_key ON runs(content_key);"
	"CREATE INDEX runs_source_host_time ON runs(source, host, time);"
	"ALTER TABLE results ADD COLUMN per_iter TEXT;"
	"UPDATE runs SET nranks = 0, input = '137.txt', content_key = 'k1' WHERE id = 1;"
	"UPDATE results SET nranks = 0 WHERE run_id = 1;"
	"INSERT INTO runs VALUES(2, '2026-11-02T10:00:00Z', 'vm', 'bench', 'nccl', '0.2.0',"
	" '2.28.9', '', '', '', '8 x NVIDIA H200', 'bench', '', 8, 1, 'all_reduce', 300.0, 1, NULL, 478.1, 'k2');"
	"INSERT INTO results VALUES(2, 0, 'all_reduce', 'float', 'sum', -1, 67108864, 16777216, 8,"
	" 0, 250.0, 268.0, 300.0, 0, NULL, '{\"times_us\":[250.0]}');"
	"INSERT INTO baselines VALUES('good', 2, '2026-11-02T11:00:00Z');"
	"UPDATE sqlite_sequence SET seq = 7 WHERE name = 'runs';"
	"PRAGMA user_version = 4;";

/* Version 5 on a version 4 file: ranks nullable, 0s read as unknown, ids, baselines, indexes and cascades kept. */
static void migrate_v4(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	old_file(path, sizeof(path), "v4.db", v4_steps);

	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_WRITE, &s, err, sizeof(err)), 0);
	struct nw_run old;
	assert_int_equal(nw_store_load(s, 2, &old, err, sizeof(err)), 0);
	assert_int_equal(old.h.nranks, 8);
	assert_int_equal(old.rows[0].nranks, 8);
	assert_int_equal(old.rows[0].niter, 1);
	assert_true(old.h.link_gbs == 478.1);
	nw_run_release(&old);
	assert_int_equal(nw_store_load(s, 1, &old, err, sizeof(err)), 0);
	assert_int_equal(old.h.nranks, 0);
	assert_string_equal(old.h.input, "137.txt");
	nw_run_release(&old);
	long long bid = 0;
	assert_int_equal(nw_store_baseline_get(s, "good", &bid, err, sizeof(err)), 1);
	assert_int_equal(bid, 2);
	/* a run of unknown ranks goes in as NULL, under an id never used before */
	struct nw_run run;
	make_run(&run);
	run.h.nranks = 0;
	for (size_t i = 0; i < run.nrows; i++)
		run.rows[i].nranks = 0;
	long long id;
	assert_int_equal(nw_store_insert(s, &run, &id, err, sizeof(err)), 0);
	assert_int_equal(id, 8);
	nw_run_release(&run);
	assert_int_equal(nw_store_load(s, id, &run, err, sizeof(err)), 0);
	assert_int_equal(run.h.nranks, 0);
	assert_int_equal(run.rows[0].nranks, 0);
	nw_run_release(&run);
	nw_store_close(s);

	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(lite_int(db, "PRAGMA user_version"), NW_STORE_SCHEMA_VERSION);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM runs WHERE nranks IS NULL"), 2);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM results WHERE nranks IS NULL"), 3);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM results WHERE nranks = 8"), 1);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN"
	                              " ('runs_time', 'runs_host', 'runs_content_key', 'runs_source_host_time')"), 4);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_new'"), 0);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM runs WHERE content_key = 'k2'"), 1);
	assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 2", NULL, NULL, NULL),
	                 SQLITE_OK);
	/* the references moved with the rename: deleting a run still takes its rows and baselines */
	assert_int_equal(lite_int(db, "SELECT count(*) FROM results WHERE run_id = 2"), 0);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM baselines"), 0);
	sqlite3_close(db);
}

/* A file from a newer ncclwatch is refused rather than misread. */
static void newer_schema(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "v99.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key, value); PRAGMA application_id = 1313036104; PRAGMA user_version = 99;",
	                              NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_WRITE, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "newer"));
}

static void read_missing(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "absent.db");
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no history database"));
	assert_int_equal(access(path, F_OK), -1);
}


/* Whether path exists. */
static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Issue 28 item 8: a file given to read is never written, even to migrate it or make its side files. */
static void read_leaves_file(void **state)
{
	(void)state;
	char path[128], side[160], err[NW_ERRLEN];
	old_file(path, sizeof(path), "v4-read.db", v4_steps);
	long before = file_size(path);
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)), 0);
	struct nw_run run;
	assert_int_equal(nw_store_load(s, 2, &run, err, sizeof(err)), 0); /* read through a migrated copy */
	assert_int_equal(run.rows[0].nranks, 8);
	nw_run_release(&run);
	nw_store_close(s);
	assert_int_equal(file_size(path), before);
	snprintf(side, sizeof(side), "%s-wal", path);
	assert_false(exists(side));
	snprintf(side, sizeof(side), "%s-shm", path);
	assert_false(exists(side));
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(lite_int(db, "PRAGMA user_version"), 4);
	sqlite3_close(db);

	/* an empty file: refused, and still empty */
	path_in(path, sizeof(path), "empty.db");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is empty"));
	assert_int_equal(file_size(path), 0);
	snprintf(side, sizeof(side), "%s-wal", path);
	assert_false(exists(side));
	/* to change one that is not there: refused, nothing made */
	path_in(path, sizeof(path), "absent-update.db");
	assert_int_equal(nw_store_open(path, NW_STORE_UPDATE, &s, err, sizeof(err)), -1);
	assert_false(exists(path));
}

/* Issue 28 item 3: the same rows recorded twice in one second are two runs with two keys. */
static void distinct_keys(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "keys.db");
	struct nw_store_opts o = { .db_path = path };
	char keys[2][NW_STORE_KEY_LEN];
	for (int i = 0; i < 2; i++) {
		struct nw_run run;
		make_run(&run); /* the same header, time and rows each time */
		long long id;
		assert_int_equal(nw_store_record(&o, &run, &id, err, sizeof(err)), 0);
		nw_store_run_key(&run, keys[i], sizeof(keys[i]));
		nw_run_release(&run);
	}
	assert_string_not_equal(keys[0], keys[1]);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(lite_int(db, "SELECT count(DISTINCT content_key) FROM runs"), 2);
	sqlite3_close(db);
}

/*
 * Issue 28 item 4: a run spooled although the server took it (its answer
 * never came) is found stored when the spool is sent, and sent twice stays
 * one run: its key is the one it was recorded with, though the spool's JSON
 * rounds the figures the key covers.
 */
static void spool_sent_once(void **state)
{
	(void)state;
	char path[128], spool[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "spooled.db");
	path_in(spool, sizeof(spool), "spool");
	setenv("NCCLWATCH_SPOOL", spool, 1);
	struct nw_store_opts o = { .db_path = path };
	struct nw_run run;
	make_run(&run);
	run.rows[0].busbw_gbs += 1e-9; /* a figure the spool's JSON does not keep to the last digit */
	long long id;
	assert_int_equal(nw_store_record(&o, &run, &id, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		nw_strlcpy(err, "no answer", sizeof(err));
		assert_int_equal(nw_spool_keep(path, &run, err, sizeof(err)), 0);
		struct nw_spool_counts c;
		assert_int_equal(nw_store_sync(&o, &c, err, sizeof(err)), 0);
		assert_int_equal(c.sent, 0);
		assert_int_equal(c.dup, 1);
	}
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(lite_int(db, "SELECT count(*) FROM runs"), 1);
	sqlite3_close(db);
	nw_run_release(&run);
	unsetenv("NCCLWATCH_SPOOL");
}

/* Issue 28 item 6: passwords masked in any text, however spelled. */
static void redact(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } cases[] = {
		{ "postgresql://nw:SECRET@db:5432/nw", "postgresql://nw:***@db:5432/nw" },
		{ "postgresql://nw%3ASECRET@/nw?host=/s", "postgresql://nw%3A***@/nw?host=/s" },
		{ "postgresql://nw@/nw?host=/s&pass%77ord=SECRET&port=1", "postgresql://nw@/nw?host=/s&pass%77ord=***&port=1" },
		{ "postgres://h/nw?password=SECRET", "postgres://h/nw?password=***" },
		{ "bench --db host=/s PASSWORD=SECRET dbname=nw -e 8", "bench --db host=/s PASSWORD=*** dbname=nw -e 8" },
		{ "host=/s password = 'SE CRET' user=nw", "host=/s password = *** user=nw" },
		{ "host=/s sslpassword=SECRET", "host=/s sslpassword=***" },
		{ "postgresql://nw@[::1]:5432/nw", "postgresql://nw@[::1]:5432/nw" },
		{ "bench -b 8 -e 64 --db /tmp/h.db", "bench -b 8 -e 64 --db /tmp/h.db" },
	};
	for (size_t i = 0; i < NW_ARRAY_LEN(cases); i++) {
		char *r = nw_store_redact(cases[i].in);
		assert_string_equal(r, cases[i].out);
		free(r);
	}
}

/* Issue 28 item 6: a run's command line is kept without a password in it. */
static void record_redacts(void **state)
{
	(void)state;
	char path[128], err[NW_ERRLEN];
	path_in(path, sizeof(path), "redact.db");
	struct nw_store_opts o = { .db_path = path };
	struct nw_run run, back;
	make_run(&run);
	nw_strlcpy(run.h.cmdline, "ncclwatch bench --db postgresql://nw@/nw?host=/s&pass%77ord=SECRET", sizeof(run.h.cmdline));
	long long id;
	assert_int_equal(nw_store_record(&o, &run, &id, err, sizeof(err)), 0);
	struct nw_store *s;
	assert_int_equal(nw_store_open(path, NW_STORE_READ, &s, err, sizeof(err)), 0);
	assert_int_equal(nw_store_load(s, id, &back, err, sizeof(err)), 0);
	assert_null(strstr(back.h.cmdline, "SECRET"));
	assert_non_null(strstr(back.h.cmdline, "pass%77ord=***"));
	const char *fpc = json_string_value(json_object_get(json_object_get(back.h.extra, "fingerprint"), "cmdline"));
	assert_non_null(fpc);
	assert_null(strstr(fpc, "SECRET"));
	nw_store_close(s);
	nw_run_release(&run);
	nw_run_release(&back);
}

/* Issue 28 item 6: libpq's reading of a connection string refuses every spelling of a password, and never quotes it. */
static void pg_passwords(void **state)
{
	(void)state;
	static const char *const refused[] = {
		"postgresql://nw@/nw?host=/tmp/s&pass%77ord=SECRET",
		"postgresql://nw:SECRET@/nw?host=/tmp/s",
		"postgresql://nw%3ASECRET@/nw?host=/tmp/s",
		"host=/tmp/s PASSWORD=SECRET dbname=nw",
		"host=/tmp/s password=SECRET dbname=nw",
		"host=/tmp/s sslpassword=SECRET dbname=nw",
		"postgresql://nw@/nw?host=/tmp/s&SECRET",
	};
	char err[NW_ERRLEN];
	for (size_t i = 0; i < NW_ARRAY_LEN(refused); i++) {
		assert_true(nw_db_is_pg(refused[i]));
		assert_int_equal(nw_db_pg_check(refused[i], err, sizeof(err)), -1);
		assert_null(strstr(err, "SECRET"));
		assert_null(strstr(err, "/tmp/s"));
	}
	assert_int_equal(nw_db_pg_check("postgresql://nw@/nw?host=/tmp/s&port=5432", err, sizeof(err)), 0);
	assert_int_equal(nw_db_pg_check("host=/tmp/s dbname=nw user=nw", err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(pg_round_trip),
		cmocka_unit_test(disabled_records_nothing),
		cmocka_unit_test(default_path),
		cmocka_unit_test(foreign_files),
		cmocka_unit_test(migrate_v1),
		cmocka_unit_test(migrate_v4),
		cmocka_unit_test(newer_schema),
		cmocka_unit_test(read_missing),
		cmocka_unit_test(read_leaves_file),
		cmocka_unit_test(distinct_keys),
		cmocka_unit_test(spool_sent_once),
		cmocka_unit_test(redact),
		cmocka_unit_test(record_redacts),
		cmocka_unit_test(pg_passwords),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
