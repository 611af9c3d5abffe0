#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fleet: every host's latest check against its peers (a planted slow host
# among 200 is the one listed, its different driver named); report --fleet
# (rendered in headless Chromium); history merge without duplicates.
source "$(dirname "$0")/lib.sh"
REC=$NW_TESTS/record_fleet
DB=$TMP/fleet.db

# 200 hosts, 3 days; host 117 ran 10% slower on the last day, with another driver
run "$REC" "$DB" 200 3 117
expect_rc "simulated fleet recorded" 0
run "$NW" fleet --db "$DB"
expect_rc "an outlier: exit 1" 1
expect_out "one outlier" '^outliers \(1\):$'
n=$(sed -n '/^outliers/,/^the others/p' "$OUT" | grep -c '^  node-'); RC=$n
expect_rc "exactly one host listed as an outlier" 1
expect_out "the planted host is listed first" '^outliers \(1\):$'
line=$(grep -n '^  node-0117 ' "$OUT" | cut -d: -f1); RC=${line:-0}
expect_rc "node-0117 is the first host of the table" 4
expect_out "its latest check is the one judged" '^  node-0117 +pass +2026-01-03T02:01:57Z +89\.[0-9]%'
expect_out "the differing driver named, with the fleet's" 'differs: driver 550\.54\.15 \(fleet: 560\.35\.03\)'
n=$(grep -c 'differs:' "$OUT"); RC=$n; expect_rc "nothing else differs" 1
expect_out "199 others" '^the others \(199\):$'

run "$NW" fleet --db "$DB" --json
expect_rc "--json: exit 1 too" 1
cp "$OUT" "$TMP/fleet.json"
run python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
h = d["hosts"][0]
cell = [c for c in h["cells"] if c["op"] == "all_reduce" and c["size"] == 268435456][0]
print(d["outliers"], d["hosts_total"], h["host"], h["outlier"], h["differs"][0]["field"], h["differs"][0]["value"],
      h["differs"][0]["fleet"], h["group_size"], len([x for x in d["hosts"] if x["gpus"] == "4 x NVIDIA H100 80GB HBM3"]),
      cell["ratio"] < 0.9)' "$TMP/fleet.json"
expect_rc "--json parses" 0
expect_out "json: the outlier, its driver, the fleet's, its group of 192 H200 hosts, 8 H100 hosts apart, the cell below 90%" \
	'^1 200 node-0117 True driver 550\.54\.15 560\.35\.03 192 8 True$'

run "$NW" fleet --db "$DB" --threshold 85
expect_rc "below 85%: nobody, exit 0" 0
expect_no_out "no outlier section" '^outliers'
run "$NW" fleet --db "$DB" --threshold=95%
expect_rc "--threshold=95%: the same host" 1
run "$NW" fleet --db "$DB" --threshold 0
expect_rc "--threshold 0: usage error" 2
expect_err "names the option" "--threshold: '0' is out of range"
run "$NW" fleet --db "$DB" --threshold much
expect_rc "--threshold much: usage error" 2
run "$NW" fleet --db "$DB" node-0001
expect_rc "an operand: usage error" 2
run "$NW" fleet --db "$TMP/none.db"
expect_rc "no database: exit 2" 2
expect_err "says there is none" "no history database at '$TMP/none.db'"
echo "not a database" >"$TMP/junk.db"
run "$NW" fleet --db "$TMP/junk.db"
expect_rc "a file that is not ours: exit 2" 2
expect_err "names it" "'$TMP/junk.db' is not an ncclwatch history database"
run "$NW" import "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt" --db "$TMP/nocheck.db"
run "$NW" fleet --db "$TMP/nocheck.db"
expect_rc "no check in the history: exit 0" 0
expect_err "says to record checks" "no check runs in '$TMP/nocheck.db'"

# a real check (the MPI host backend, one rank, on this GPU-less machine) is what fleet reads
printf 'ELF\0NCCL version 2.28.9+cuda13.0\0' >"$TMP/libnccl.so.2"
run env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE -u NCCL_DEBUG -u MASTER_ADDR -u CUDA_VISIBLE_DEVICES \
	-u NCCLWATCH_NVML_JSON -u NCCLWATCH_SYSROOT NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2" \
	NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 ASAN_OPTIONS=detect_leaks=0 \
	"$NW" check --sysroot "$SRCDIR/tests/fixtures/sysfs/nogpu-vm" --backend mpi -b 1M -e 4M -n 2 -w 1 --db "$TMP/real.db"
expect_rc "a real check recorded" 0
run "$NW" fleet --db "$TMP/real.db"
expect_rc "fleet of one host: exit 0" 0
expect_out "this host, with the check's own verdict" "^  $(hostname) +PASS +20[0-9-]+T[0-9:]+Z +100\.0%  all_reduce 1M"

# report --fleet: the heatmap
run "$NW" report --fleet -o "$TMP/fleet.html" --db "$DB"
expect_rc "report --fleet" 0
expect_err "says where it wrote" "wrote $TMP/fleet.html"
cp "$TMP/fleet.html" "$OUT"
expect_out "is HTML" '^<!DOCTYPE html>'
n=$(grep -c '^<tr><td class="mark"></td>' "$OUT"); RC=$n; expect_rc "199 ordinary rows" 199
expect_out "the outlier row first, marked" '^<tr class="outlier"><td class="mark">&#x2716;</td><td class="h">node-0117</td>'
n=$(grep -o '<td class="out"' "$OUT" | wc -l); RC=$n; expect_rc "its cells below 90% in solid red" 1
expect_out "what differs on it" 'driver 550\.54\.15 \(fleet 560\.35\.03\)</td></tr>'
expect_out "a column per op and size" '<th>all_reduce<br>256M</th>'
expect_no_out "no script" '<script'
expect_no_out "nothing fetched" '(src|href)='
run "$NW" report --fleet --db "$DB"
expect_rc "report --fleet without -o: usage" 2
run "$NW" report --fleet 3 -o "$TMP/x.html" --db "$DB"
expect_rc "report --fleet with a run: usage" 2
run "$NW" report --fleet --svg "$TMP/x.svg" --db "$DB"
expect_rc "report --fleet --svg: usage" 2
run "$NW" report --fleet -o "$TMP/empty.html" --db "$TMP/nocheck.db"
expect_rc "report --fleet of no checks: exit 2" 2
expect_err "says to record checks" 'no check runs in the history'
expect_true "nothing written" test ! -e "$TMP/empty.html"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	skip "fleet heatmap renders in headless chromium" "chromium is not installed"
else
	screenshot "$TMP/fleet.html" "$TMP/shot.png" 1100,600
	expect_true "chromium wrote a screenshot" test -s "$TMP/shot.png"
	run python3 "$SRCDIR/tests/cli/pngcolours.py" "$TMP/shot.png" b22222 f7f7f7
	expect_out "the outlier's red cell and the peers' near-median cells on screen" '^b22222 yes$'
	expect_out "near-median cells on screen" '^f7f7f7 yes$'
fi

# The same fleet in PostgreSQL (a throwaway server of the test's own), written
# by four writers at once: the same answer as from SQLite, in a few statements
# for all 200 hosts (not two per host); then 64 writers record one more day,
# each run with its own connection as every node's check does, while fleet
# runs: every answer has every host, every run is stored once.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
	skip "fleet on PostgreSQL" "PostgreSQL is not installed (Debian: postgresql)"
else
	PGS=$SRCDIR/tests/helpers/pg-server
	PGD=$(mktemp -d /tmp/nwpg.XXXXXX)
	trap '"$PGS" stop "$PGD"; rm -rf "$PGD" "$TMP"' EXIT
	URI=$("$PGS" start "$PGD") || { RC=1; notok "a throwaway PostgreSQL server starts"; exit 1; }
	export PGPASSWORD; PGPASSWORD=$(cat "$PGD/password")
	psql_nw() { "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql" -qAt -h "$PGD/sock" -p "$(cat "$PGD/port")" -U nw -d nw -c "$1"; }
	pids=()
	for k in 0 1 2 3; do "$REC" "$URI" 200 3 117 --part "$k/4" 2>"$TMP/pgrec$k.err" & pids+=($!); done
	failed=0
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	RC=$failed; expect_rc "the fleet recorded into PostgreSQL by four writers" 0
	"$NW" fleet --db "$DB" >"$TMP/fleet.sqlite.txt"
	psql_nw "ALTER SYSTEM SET log_statement = 'all'" && psql_nw "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	before=$(wc -l <"$PGD/server.log")
	run "$NW" fleet --db "$URI"
	expect_rc "PostgreSQL: the outlier, exit 1" 1
	expect_true "PostgreSQL: the same answer as SQLite's, line for line" cmp -s "$OUT" "$TMP/fleet.sqlite.txt"
	n=$(tail -n +$((before + 1)) "$PGD/server.log" | grep -Ec 'LOG: +(statement|execute)'); RC=$n
	expect_true "PostgreSQL: a few statements for 200 hosts ($n), not two per host" test "$n" -ge 1 -a "$n" -le 12
	psql_nw "ALTER SYSTEM RESET log_statement" && psql_nw "SELECT pg_reload_conf()" >/dev/null
	run "$NW" report --fleet -o "$TMP/fleet-pg.html" --db "$URI"
	expect_rc "PostgreSQL: report --fleet" 0
	expect_true "PostgreSQL: the same heatmap rows" test "$(grep -c '^<tr' "$TMP/fleet-pg.html")" = "$(grep -c '^<tr' "$TMP/fleet.html")"

	pids=()
	for k in $(seq 0 63); do "$REC" "$URI" 200 4 117 --part "$k/64" --from-day 3 --each 2>"$TMP/pgw$k.err" & pids+=($!); done
	answers=0 wrong=0
	while [ -n "$(jobs -rp)" ] || [ "$answers" -eq 0 ]; do
		rc=0; "$NW" fleet --db "$URI" >"$TMP/during.txt" 2>&1 || rc=$?
		answers=$((answers + 1))
		{ [ "$rc" -le 1 ] && head -1 "$TMP/during.txt" | grep -q '^fleet: 200 hosts,'; } || { wrong=$((wrong + 1)); cp "$TMP/during.txt" "$TMP/wrong.txt"; }
	done
	failed=0
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	RC=$failed; expect_rc "64 writers at once, each run on its own connection: all succeed" 0
	expect_true "fleet answered for all 200 hosts every time while they wrote ($answers answers, $wrong wrong)" test "$wrong" -eq 0
	expect_true "the writers' 200 runs are stored, each once" \
		test "$(psql_nw "SELECT count(*) || ' ' || count(DISTINCT host) FROM runs WHERE time LIKE '2026-01-04%'")" = "200 200"
	run "$NW" fleet --db "$URI"
	expect_out "after them, each host's latest check is the new day's" '^  node-0117 +pass +2026-01-04T02:01:57Z +89\.[0-9]%'
fi

# history merge: another node's file, twice; stored once
"$REC" "$TMP/a.db" 10 2 >/dev/null 2>&1
run "$NW" history merge "$TMP/a.db" --db "$TMP/m.db"
expect_rc "merge into a new database" 0
expect_out "says how many" "^merged 20 runs from '$TMP/a.db' \(0 already here\)$"
run "$NW" history merge "$TMP/a.db" --db "$TMP/m.db"
expect_rc "merge the same file again" 0
expect_out "nothing copied twice" "^merged 0 runs from '$TMP/a.db' \(20 already here\)$"
run "$NW" history --db "$TMP/m.db" --csv
n=$(($(wc -l <"$OUT") - 1)); RC=$n; expect_rc "20 runs stored once" 20
# a run recorded before schema 3 (no key yet) is recognised too
"$REC" "$TMP/b.db" 10 2 >/dev/null 2>&1
sqlite3 "$TMP/m.db" "UPDATE runs SET content_key = NULL" 2>/dev/null || python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('UPDATE runs SET content_key = NULL'); c.commit()" "$TMP/m.db"
run "$NW" history merge "$TMP/b.db" --db "$TMP/m.db"
expect_rc "merge into a database whose runs have no key" 0
expect_out "keys filled, nothing duplicated" "^merged 0 runs from '$TMP/b.db' \(20 already here\)$"
"$REC" "$TMP/c.db" 12 2 7 >/dev/null 2>&1
run "$NW" history merge "$TMP/c.db" --db "$TMP/m.db"
expect_out "only what is new is copied" "^merged 6 runs from '$TMP/c.db' \(18 already here\)$"
run "$NW" history show 1 --db "$TMP/m.db" --json
expect_out "a merged run reads back whole" '"host": "node-0000"'
run "$NW" history merge "$TMP/m.db" --db "$TMP/m.db"
expect_rc "merging a database into itself: usage" 2
expect_err "says so" "is the current history database"
run "$NW" history merge "$TMP/none.db" --db "$TMP/m.db"
expect_rc "merging a missing file" 2
expect_err "names it" "no history database at '$TMP/none.db'"
run "$NW" history merge "$TMP/junk.db" --db "$TMP/m.db"
expect_rc "merging a file that is not ours" 2
expect_err "names it" "'$TMP/junk.db' is not an ncclwatch history database"
run "$NW" history merge --db "$TMP/m.db"
expect_rc "merge without a file: usage" 2
expect_err "says what to give" "'history merge' needs a history file"
# Issue 28 item 8: a file given to merge from is only read: a 0-byte one is
# refused, and neither gets a schema nor side files.
: >"$TMP/empty.db"
run "$NW" history merge "$TMP/empty.db" --db "$TMP/m.db"
expect_rc "merging an empty file: refused" 2
expect_err "merging an empty file: says it is empty" "history database '$TMP/empty.db' is empty"
expect_true "merging an empty file: it stays empty, nothing made beside it" \
	test ! -s "$TMP/empty.db" -a ! -e "$TMP/empty.db-wal" -a ! -e "$TMP/empty.db-shm"
cp "$TMP/a.db" "$TMP/src.db"
sum=$(md5sum <"$TMP/src.db")
run "$NW" history merge "$TMP/src.db" --db "$TMP/m.db"
expect_true "merging: the source file is left byte for byte, nothing made beside it" \
	test "$(md5sum <"$TMP/src.db")" = "$sum" -a ! -e "$TMP/src.db-wal" -a ! -e "$TMP/src.db-shm"
