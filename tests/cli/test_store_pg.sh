#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The history in PostgreSQL: a throwaway server of the test's own
# (tests/helpers/pg-server), the store unit tests against it, every history
# command on it, 64 writers at once, a restart in the middle of writing
# (runs spooled, then synced), and the faults: unreachable, wrong password,
# a password in the URI, another program's database, a newer schema.
source "$(dirname "$0")/lib.sh"
PGS=$SRCDIR/tests/helpers/pg-server
REC=$NW_TESTS/record_many
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
	skip "PostgreSQL history" "PostgreSQL is not installed (Debian: postgresql)"
	exit 0
fi
PGD=$(mktemp -d /tmp/nwpg.XXXXXX)
trap '"$PGS" stop "$PGD"; rm -rf "$PGD" "$TMP"' EXIT
URI=$("$PGS" start "$PGD") || { RC=1; notok "a throwaway PostgreSQL server starts"; exit 1; }
export PGPASSWORD; PGPASSWORD=$(cat "$PGD/password")
export NCCLWATCH_SPOOL=$TMP/spool
PSQL=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql
sql() { "$PSQL" -qAt -h "$PGD/sock" -p "$(cat "$PGD/port")" -U nw -d "$1" -c "$2"; }
dburi() { echo "postgresql://nw@/$1?host=$PGD/sock&port=$(cat "$PGD/port")"; }

# The store's unit tests, on PostgreSQL.
run env NW_TEST_PG="$(dburi nw)" "$NW_TESTS/test_store_db"
expect_rc "store unit tests on PostgreSQL" 0
expect_out "the PostgreSQL round trip ran" "OK \] pg_round_trip"
sql nw "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1

# Every command that records or reads history, unchanged on PostgreSQL.
A=$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt
run "$NW" import --db "$URI" "$A"
expect_rc "import into PostgreSQL" 0
run "$NW" import --db "$URI" "$A"
run env ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 1 "$NW" bench --backend mpi -b 8 -e 64 --op all_reduce -n 2 -w 1 --db "$URI"
expect_rc "bench records into PostgreSQL" 0
run "$NW" history --db "$URI"
expect_rc "history lists PostgreSQL" 0
expect_out "the imported and benched runs are listed" "^ +3 +.* bench +all_reduce"
run "$NW" history show 1 --db "$URI"
expect_out "history show reads a run back" "all_reduce"
run "$NW" history baseline good 1 --db "$URI"
expect_rc "a baseline set" 0
run "$NW" compare --db "$URI" good 2
expect_rc "compare by baseline name on PostgreSQL" 0
run "$NW" report --db "$URI" -o "$TMP/r.html" 1
expect_rc "report from PostgreSQL" 0
run env NCCLWATCH_DB="$URI" "$NW" history --csv
expect_true "NCCLWATCH_DB names a PostgreSQL database too" test "$(grep -c all_reduce "$OUT")" -eq 3
run "$NW" history delete 3 --db "$URI"
expect_rc "history delete" 0

# Faults: each said plainly, non-zero, nothing stored.
run "$NW" history --db "postgresql://nw@/nw?host=$PGD/nowhere&port=1"
expect_true "unreachable server: non-zero" test "$RC" -ne 0
expect_err "unreachable server: said, with what to check" "cannot reach the PostgreSQL server .*check that it is up"
run env PGPASSWORD=wrong "$NW" history --db "$URI"
expect_true "wrong password: non-zero" test "$RC" -ne 0
expect_err "wrong password: said, with where the password goes" "refused the login .*~/.pgpass or PGPASSWORD"
run "$NW" history --db "postgresql://nw:$PGPASSWORD@/nw?host=$PGD/sock"
expect_true "password in the URI: refused" test "$RC" -ne 0
expect_err "password in the URI: said why" "carries a password"
run "$NW" history --db "host=$PGD/sock port=$(cat "$PGD/port") user=nw dbname=nw password=x"
expect_err "password in a key=value string: refused" "carries a password"
sql other "CREATE TABLE accounts(id int); INSERT INTO accounts VALUES (1)"
run "$NW" import --db "$(dburi other)" "$A"
expect_true "another program's database: non-zero" test "$RC" -ne 0
expect_err "another program's database: said" "not an ncclwatch history database"
expect_true "another program's database: left as it was" test "$(sql other "SELECT count(*) FROM pg_tables WHERE schemaname='public'")" = 1
SCHEMA=$(sql nw "SELECT value FROM meta WHERE key = 'schema_version'")
sql nw "UPDATE meta SET value = '99' WHERE key = 'schema_version'"
run "$NW" import --db "$URI" "$A"
expect_err "a newer schema: refused, naming it" "schema version 99, newer"
sql nw "UPDATE meta SET value = '$SCHEMA' WHERE key = 'schema_version'"
run "$NW" history --db "$URI" --csv
expect_true "earlier runs intact after the faults" test "$(grep -c all_reduce "$OUT")" -eq 2

# An unknown rank count is NULL on PostgreSQL too; a version 4 database
# (NOT NULL columns holding 0) is brought to version 5 (and on) on first use.
sql nw "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1
run "$NW" import --db "$URI" "$SRCDIR"/tests/fixtures/corpus/137-*.txt
expect_rc "a header-less output imported into PostgreSQL" 0
expect_true "its unknown rank count stored as NULL" test "$(sql nw 'SELECT count(*) FROM runs WHERE nranks IS NULL')" = 1
sql nw "UPDATE runs SET nranks = 0; UPDATE results SET nranks = 0; ALTER TABLE runs ALTER COLUMN nranks SET NOT NULL;
        ALTER TABLE results ALTER COLUMN nranks SET NOT NULL; UPDATE meta SET value = '4' WHERE key = 'schema_version'"
run "$NW" history show 1 --db "$URI"
expect_out "version 4 -> 5: the stored 0 reads as unknown" '^ranks +unknown$'
expect_true "version 4 -> 5 and on: the current schema version" test "$(sql nw "SELECT value FROM meta WHERE key = 'schema_version'")" = 6
expect_true "version 4 -> 5: nranks nullable in runs and results" test "$(sql nw "SELECT DISTINCT is_nullable FROM information_schema.columns WHERE table_name IN ('runs', 'results') AND column_name = 'nranks'")" = YES
expect_true "version 4 -> 5: the stored 0s are NULL" test "$(sql nw 'SELECT count(*) FROM results WHERE nranks IS NOT NULL')" = 0

# 64 writers x 20 runs into one new database.
sql nw "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1
pids=()
for p in $(seq 1 64); do "$REC" "$URI" 20 "w$p" 2>"$TMP/rec$p.err" & pids+=($!); done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
RC=$failed; expect_rc "64 concurrent writers all succeed" 0
expect_true "1280 runs, each stored exactly once" test "$(sql nw "SELECT count(DISTINCT (host, r.time_us)) || ' ' || count(*) FROM runs JOIN results r ON r.run_id = runs.id AND r.seq = 0")" = "1280 1280"

# The same, with the server restarted in the middle: runs spooled, then synced.
expect_true "nothing spooled so far (faults of the database itself are not kept)" test "$(ls "$NCCLWATCH_SPOOL" 2>/dev/null | grep -c '\.json$')" -eq 0
sql nw "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1
pids=()
for p in $(seq 1 64); do NCCLWATCH_LOCK_TIMEOUT=1 "$REC" "$URI" 20 "w$p" 2>"$TMP/rec$p.err" & pids+=($!); done
sleep 2
"$PGS" stop "$PGD"; sleep 2; "$PGS" restart "$PGD"
for pid in "${pids[@]}"; do wait "$pid"; done
spooled=$(ls "$NCCLWATCH_SPOOL" 2>/dev/null | grep -c '\.json$')
expect_true "restart in the middle: the runs it cut off are spooled ($spooled)" test "$spooled" -gt 0
stored=$(sql nw "SELECT count(*) FROM runs" 2>/dev/null || echo 0)
expect_true "no run lost: stored ($stored) + spooled ($spooled) >= 1280" test $((stored + spooled)) -ge 1280
run "$NW" history sync --db "$URI"
expect_rc "history sync sends them" 0
expect_true "the spool is empty after sync" test "$(ls "$NCCLWATCH_SPOOL" | grep -c '\.json$')" -eq 0
expect_true "1280 runs after the restart, each stored exactly once" test "$(sql nw "SELECT count(DISTINCT (host, r.time_us)) || ' ' || count(*) FROM runs JOIN results r ON r.run_id = runs.id AND r.seq = 0")" = "1280 1280"
expect_true "no partial run stored" test "$(sql nw "SELECT count(*) FROM runs WHERE nrows <> (SELECT count(*) FROM results WHERE run_id = runs.id)")" = 0

# Issue 28 item 3: the server killed while 16 writers import 20 outputs each
# (the same rows, so only who and when tell the runs apart): every run stored
# once, every "recorded as run N" naming the writer's own run.
# scripts/pg-kill-writers does it on a server of its own; one round here.
run env NW="$NW" "$SRCDIR/scripts/pg-kill-writers" 1 16 20
expect_rc "killed server, 16 writers x 20 imports: each stored exactly once, each told its own run" 0
expect_out "killed server: the counts" "320 imports, 320 stored, 320 distinct, 0 stored twice, 0 missing, 0 'recorded as'"

# Issue 28 item 5: a frozen server (SIGSTOP on the postmaster) and a port
# that accepts and never answers: every command ends at its deadline (the
# lock bound) + 1 s, and SIGTERM ends a blocked one within 1 s, its run spooled.
sql nw "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null 2>&1
run "$NW" import --db "$URI" "$A"
export ASAN_OPTIONS=detect_leaks=0 # MPI's own allocations, in the sanitizer build
PM=$(head -1 "$PGD/data/postmaster.pid")
"$SRCDIR/tests/helpers/blackhole" "$TMP/bh.port" & BH=$!
for _ in $(seq 50); do [ -s "$TMP/bh.port" ] && break; sleep 0.1; done
FROZEN="postgresql://nw@127.0.0.1:$(cat "$TMP/bh.port")/nw"
# elapsed CMD...: runs it (as run does) and puts its wall time in tenths of a second in $TENTHS
elapsed() { local t0; t0=$(date +%s%N); run "$@"; TENTHS=$((($(date +%s%N) - t0) / 100000000)); }
rm -rf "$NCCLWATCH_SPOOL"
kill -STOP "$PM"
for db in "$URI" "$FROZEN"; do
	what=$([ "$db" = "$URI" ] && echo "stopped postmaster" || echo "silent port")
	elapsed env NCCLWATCH_LOCK_TIMEOUT=2 "$NW" history --db "$db"
	expect_true "$what: history ends within 2 s + 1 (took ${TENTHS}/10 s, exit $RC)" test "$TENTHS" -le 30 -a "$RC" -ne 0
	expect_err "$what: history says the server did not answer" "did not answer in time"
	elapsed "$NW" import --lock-timeout 2 --db "$db" "$A"
	expect_true "$what: import ends within 2 s + 1 (took ${TENTHS}/10 s)" test "$TENTHS" -le 30
	expect_err "$what: import keeps the run in the spool" "the run was kept in"
	elapsed "$NW" bench --backend mpi -b 8 -e 64 --op all_reduce -n 2 -w 1 --lock-timeout 3 --db "$db"
	expect_true "$what: bench --lock-timeout 3 ends within 3 s + 1 after its sweep (took ${TENTHS}/10 s)" test "$TENTHS" -le 45
	expect_err "$what: bench keeps the run in the spool" "the run was kept in"
	"$NW" bench --backend mpi -b 8 -e 64 --op all_reduce -n 2 -w 1 --lock-timeout 600 --db "$db" >/dev/null 2>"$TMP/term.err" &
	b=$!
	sleep 2
	t0=$(date +%s%N); kill -TERM "$b"; wait "$b"; RC=$?; TENTHS=$((($(date +%s%N) - t0) / 100000000))
	expect_true "$what: SIGTERM ends a bench blocked on the database within 1 s (took ${TENTHS}/10 s)" test "$TENTHS" -le 10
	expect_true "$what: SIGTERM: exit 143, the run spooled" sh -c 'test "$1" -eq 143 && grep -q "stopped by a signal.*the run was kept in" "$2"' sh "$RC" "$TMP/term.err"
done
kill -CONT "$PM"
kill "$BH" 2>/dev/null
expect_true "frozen servers: the 6 runs measured are all in the spool" test "$(ls "$NCCLWATCH_SPOOL" | grep -c '\.json$')" -eq 6

# Issue 28 item 4: what a killed sync left is taken back; a spooled run keeps
# its own time and identity, so sending it twice stores it once. The runs
# spooled for the frozen port stay for that port.
first=$(grep -l '"db": *"postgresql://nw@/nw' "$NCCLWATCH_SPOOL"/*.json | xargs grep -l '"source": *"import"' | head -1)
mv "$first" "$first.sending-999999999"
spooled_time=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["run"].get("time", ""))' "$first.sending-999999999")
cp "$first.sending-999999999" "$TMP/resend.json"
sleep 1
run "$NW" history sync --db "$URI"
expect_rc "sync after a killed sync: succeeds" 0
expect_err "sync after a killed sync: sends the 3 runs kept for this server" "^3 spooled runs sent"
expect_err "sync after a killed sync: says it took back the claim" "claimed by a sync that was killed"
expect_true "sync: nothing of this server left in the spool" sh -c '! grep -l "\"db\": *\"postgresql://nw@/nw" "$1"/* 2>/dev/null | grep -q .' sh "$NCCLWATCH_SPOOL"
expect_true "sync: the spooled runs kept their own time, not the sync's ($spooled_time)" \
	test "$(sql nw "SELECT count(*) FROM runs WHERE time = '$spooled_time'")" -ge 1
n=$(sql nw "SELECT count(*) FROM runs")
cp "$TMP/resend.json" "$NCCLWATCH_SPOOL/again.json"
run "$NW" history sync --db "$URI"
expect_err "a spool file sent twice: found stored already" "1 found stored already"
expect_true "a spool file sent twice: stored once ($n runs)" test "$(sql nw "SELECT count(*) FROM runs")" -eq "$n"

# Issue 28 item 6: a password however spelled is refused, never printed, never stored.
S="$PGD/sock"
for bad in "postgresql://nw@/nw?host=$S&port=$(cat "$PGD/port")&pass%77ord=SECRETPW" \
           "host=$S port=$(cat "$PGD/port") user=nw dbname=nw PASSWORD=SECRETPW" \
           "postgresql://nw%3ASECRETPW@/nw?host=$S&port=$(cat "$PGD/port")" \
           "PASSWORD=SECRETPW host=$S dbname=nw"; do
	run "$NW" import --db "$bad" "$A"
	expect_true "password in --db (${bad:0:24}...): refused" test "$RC" -ne 0
	expect_true "password in --db (${bad:0:24}...): not printed" sh -c '! grep -q SECRETPW "$1" "$2"' sh "$OUT" "$ERR"
done
expect_true "passwords: none stored in the history" test "$(sql nw "SELECT count(*) FROM runs WHERE cmdline LIKE '%SECRETPW%' OR extra LIKE '%SECRETPW%'")" -eq 0
expect_true "passwords: no file named after one in the working directory" sh -c '! ls | grep -q SECRETPW'
