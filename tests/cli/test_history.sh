#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# history: recording from many processes at once, listing, filters, show,
# export, delete, baselines, and refusal of files that are not ours.
source "$(dirname "$0")/lib.sh"
DB=$TMP/h.db
REC=$NW_TESTS/record_many

# 16 processes, 20 runs each, into one new database at the same moment.
pids=()
for p in $(seq 1 16); do "$REC" "$DB" 20 "node$p" 2>"$TMP/rec$p.err" & pids+=($!); done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
RC=$failed; expect_rc "16 concurrent writers all succeed" 0
run "$NW" history --db "$DB" --csv
expect_rc "history list --csv" 0
n=$(($(wc -l <"$OUT") - 1))
RC=$n; expect_rc "all 320 runs present after concurrent recording" 320
hosts=$(cut -d, -f3 "$OUT" | sort -u | grep -c node)
RC=$hosts; expect_rc "runs of all 16 processes present" 16

run "$NW" history --db "$DB" --host node7
expect_rc "filter by host" 0
n=$(grep -c ' node7 ' "$OUT"); RC=$n; expect_rc "20 runs of node7" 20
expect_no_out "filter by host shows no other host" ' node1 '
run "$NW" history --db "$DB" --op all_gather
expect_rc "filter by an op no run has" 0
expect_err "no match is said" 'no runs recorded match'
run "$NW" history --db "$DB" --since 2000-01-01 --until 2999-12-31 --limit 3
expect_rc "since/until/limit" 0
n=$(grep -c 'all_reduce' "$OUT"); RC=$n; expect_rc "limit 3" 3
expect_out "list has a header" 'id +time \(UTC\) +host +source +ops +NCCL +peak busbw +baseline'
run "$NW" history --db "$DB" --since yesterday
expect_rc "bad --since is a usage error" 2
expect_err "bad date named" "bad date 'yesterday'"

run "$NW" history show 5 --db "$DB"
expect_rc "show" 0
expect_out "show has the header" '^run 5$'
expect_out "show has nccl-tests table rows" '^ +1024 +256 +float +sum +-1 '
run "$NW" history export 5 --db "$DB" --json
expect_rc "export one run as JSON" 0
cp "$OUT" "$TMP/run5.json"
expect_out "export JSON schema" '"schema": "ncclwatch.results/1"'
run "$NW" compare --db "$DB" 5 "$TMP/run5.json"
expect_rc "an exported run compares equal to itself" 0
expect_out "no regression" 'result: no regression'
run "$NW" history export all --csv --db "$DB" --host node2
expect_rc "export all as CSV" 0
n=$(grep -c '^[0-9]*,all_reduce,' "$OUT"); RC=$n; expect_rc "20 runs x 8 rows" 160
run "$NW" history export all --json --db "$DB" --limit 2
expect_rc "export all as JSON" 0
expect_out "history schema" '"schema": "ncclwatch.history/1"'

run "$NW" history baseline good 5 --db "$DB"
expect_rc "baseline set" 0
run "$NW" history baseline --db "$DB"
expect_out "baseline listed" '^good +5 '
run "$NW" history --db "$DB" --since 2000-01-01
expect_out "list shows the baseline name" '^ +5 .* good$'
run "$NW" history --db "$DB" --limit 2
expect_out "--limit keeps the latest runs" '^ +320 '
expect_no_out "--limit drops the oldest" '^ +318 '
run "$NW" compare --db "$DB" good 6 --brief
expect_rc "compare by baseline name" 0
expect_out "baseline label" 'A: good \(run 5\)'
run "$NW" history baseline 42 5 --db "$DB"
expect_rc "all-digit baseline name refused" 2
run "$NW" history baseline bad 99999 --db "$DB"
expect_rc "baseline of a missing run refused" 2
expect_err "missing run named" 'no run 99999'
run "$NW" history delete 5 --db "$DB"
expect_rc "delete" 0
run "$NW" history show 5 --db "$DB"
expect_rc "deleted run is gone" 2
expect_err "says which run" 'no run 5'
run "$NW" history baseline --db "$DB"
expect_no_out "baseline of a deleted run is gone" '^good '
run "$NW" history baseline --delete good --db "$DB"
expect_rc "deleting an absent baseline is an error" 2
run "$NW" history delete abc --db "$DB"
expect_rc "bad id" 2
run "$NW" history frobnicate --db "$DB"
expect_rc "unknown subcommand" 2

# NCCLWATCH_DB and the XDG default
NCCLWATCH_DB=$DB run "$NW" history --limit 1
expect_rc "NCCLWATCH_DB names the database" 0
mkdir -p "$TMP/xdg"
XDG_DATA_HOME=$TMP/xdg NCCLWATCH_DB= "$REC" "" 1 xdghost 2>"$ERR"
RC=$?; expect_rc "recording with the default path" 0
expect_true "default database under XDG_DATA_HOME" test -f "$TMP/xdg/ncclwatch/history.db"
env -u NCCLWATCH_DB XDG_DATA_HOME="$TMP/xdg" "$NW" history >"$OUT" 2>"$ERR"; RC=$?
expect_out "default database read back" 'xdghost'
run env -u NCCLWATCH_DB XDG_DATA_HOME="$TMP/none" "$NW" history
expect_rc "no database yet" 2
expect_err "says so and what to do" 'no history database at .*record a run first'
expect_true "reading does not create one" test ! -e "$TMP/none/ncclwatch/history.db"

# Files that are not ours are refused and left as they were.
printf 'my notes\n' >"$TMP/notes.txt"
sum=$(md5sum <"$TMP/notes.txt")
run "$NW" history --db "$TMP/notes.txt"
expect_rc "text file refused" 2
expect_err "text file named" "'$TMP/notes.txt' is not an ncclwatch history database"
"$REC" "$TMP/notes.txt" 1 x 2>"$ERR"; RC=$?
expect_rc "recording into a text file refused" 1
expect_true "text file unchanged" test "$(md5sum <"$TMP/notes.txt")" = "$sum"
if command -v sqlite3 >/dev/null; then
	sqlite3 "$TMP/other.db" 'CREATE TABLE t(x); INSERT INTO t VALUES (1);'
	sum=$(md5sum <"$TMP/other.db")
	"$REC" "$TMP/other.db" 1 x 2>"$ERR"; RC=$?
	expect_rc "recording into another application's database refused" 1
	expect_err "foreign database named" "another application's SQLite file"
	expect_true "foreign database unchanged" test "$(md5sum <"$TMP/other.db")" = "$sum"
else
	skip "foreign sqlite database" "no sqlite3 shell"
fi
run "$NW" history --no-history --db "$DB"
expect_rc "--no-history is meaningless here" 2
run "$NW" help history
expect_out "usage lists baseline" 'history baseline'

# An output that does not say how many ranks ran: recorded as unknown
# (NULL), shown as unknown, and never compared as "0 ranks".
NR=$TMP/nranks.db
run "$NW" import --db "$NR" "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt"
expect_rc "a run with its ranks recorded" 0
grep -v '^# nThread\|^# Using devices\|^#  Rank' "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt" >"$TMP/noranks.txt"
run "$NW" import --db "$NR" "$TMP/noranks.txt"
expect_rc "the same table without its rank lines recorded" 0
run "$NW" import --db "$NR" "$SRCDIR"/tests/fixtures/corpus/137-*.txt
expect_rc "a header-less nccl-tests 2.4 output recorded" 0
run "$NW" history show 3 --db "$NR"
expect_out "history show: ranks unknown" '^ranks +unknown$'
run "$NW" history show 3 --db "$NR" --json
expect_true "history show --json: run and rows nranks null" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["nranks"] is None, d["run"]["nranks"]
assert all(r["nranks"] is None for r in d["results"])
assert d["run"]["extra"]["fingerprint"].get("nranks") is None' "$OUT"
if command -v sqlite3 >/dev/null; then
	expect_true "stored as NULL, not 0" test "$(sqlite3 "$NR" 'SELECT count(*) FROM runs WHERE nranks IS NULL; SELECT count(*) FROM results WHERE nranks = 0')" = "$(printf '2\n0')"
else
	skip "nranks stored as NULL" "no sqlite3 shell"
fi
run "$NW" compare --db "$NR" 1 2
expect_rc "compare a known and an unknown rank count" 0
expect_no_out "compare: no rank count attributed" 'ranks'
run "$NW" compare --db "$NR" 1 2 --json
expect_no_out "compare --json: no rank count attributed" 'nranks'
run "$NW" report --db "$NR" -O "$TMP/nranks.html" 1 2
expect_true "report: the unknown rank count is '?'" grep -q '<td class="num">?</td>' "$TMP/nranks.html"
expect_true "report: never 0 ranks" test "$(grep -c '<td class="num">0</td><td class="num">62</td>' "$TMP/nranks.html")" -eq 0

# Issue 28 item 16: a row cut right after its out-of-place half makes the
# run incomplete, and every view of it says so, not only show --json.
CUT=$TMP/cut.txt
awk 'NR == 20 { n = 0; for (i = 1; i <= length($0); i++) { c = substr($0, i, 1)
	if (c != " " && (i == 1 || substr($0, i - 1, 1) == " ")) n++
	if (n == 10) { print substr($0, 1, i - 1); next } } } { print }' "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt" >"$CUT"
expect_true "the cut row ends after its #wrong" grep -Eq '^ +2048 +512 +float +sum +-1 +12\.57 +0\.16 +0\.16 +0 *$' "$CUT"
ID=$TMP/inc.db
run "$NW" import --db "$ID" "$CUT"
expect_err "import: warns of the cut row" "incomplete run imported \(1 row has only its out-of-place half \(cut short\)"
run "$NW" import --db "$ID" "$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt"
run "$NW" history --db "$ID"
expect_out "history list: the cut run noted incomplete" "^ +1 .* import +all_reduce .* incomplete$"
expect_no_out "history list: the whole run not" "^ +2 .*incomplete"
run "$NW" history --db "$ID" --json
expect_true "history list --json: incomplete true and false" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["incomplete"] for r in d] == [True, False], d' "$OUT"
run "$NW" history show 1 --db "$ID"
expect_out "history show: says why it is incomplete" "^incomplete +yes: 1 row has only its out-of-place half"
run "$NW" compare --db "$ID" 1 2
expect_out "compare: A is marked incomplete" "^A: run 1 \(.*INCOMPLETE: 1 row has only its out-of-place half"
expect_err "compare: warns" "A \(run 1\) is an incomplete run"
run "$NW" report --db "$ID" -O "$TMP/inc.html" 1 2
expect_true "report: says run 1 is incomplete" grep -q '<p class="warn">run 1 is incomplete: 1 row has only its out-of-place half' "$TMP/inc.html"
