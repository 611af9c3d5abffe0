#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Text from outside reaches the terminal safe: host names holding an escape
# sequence or a newline (from a database another node filled), a --dir of
# top's, and a 120 KB argument echoed in a message. Control characters are
# shown escaped and long values cut with their length (util/termtext.h).
source "$(dirname "$0")/lib.sh"
DB=$TMP/h.db
ESC=$(printf '\033')
BEL=$(printf '\007')
# raw CONTROLS FILE...: whether any file holds a raw escape, bell or carriage return
raw() { grep -q "[$ESC$BEL$(printf '\r')]" "$@"; }

"$NW_TESTS/record_fleet" "$DB" 12 2 7 >/dev/null 2>&1
python3 - "$DB" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
bad = "\x1b]0;PWNED\x07node-0003\nfleet: 0 hosts, forged line"
c.execute("UPDATE runs SET host = ? WHERE host = 'node-0003'", (bad,))
c.commit()
PY
run "$NW" fleet --db "$DB"
expect_no_crash "fleet: no crash"
expect_true "fleet: no raw escape or bell reaches the terminal" sh -c '! grep -q "$(printf "[\033\007]")" "$1"' sh "$OUT"
expect_out "fleet: the host name shown escaped, on one line" '\\x1b\]0;PWNED\\x07node-0003\\nfleet: 0 hosts, forged line'
expect_no_out "fleet: no forged line" '^fleet: 0 hosts'
id=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT min(id) FROM runs WHERE host LIKE ?", ("%PWNED%",)).fetchone()[0])' "$DB")
run "$NW" history --db "$DB"
expect_true "history list: no raw escape or bell" sh -c '! grep -q "$(printf "[\033\007]")" "$1"' sh "$OUT"
expect_out "history list: the host name escaped" '\\x1b\]0;PWNED\\x07node-0003\\nfleet'
expect_no_out "history list: no forged line" '^fleet: 0 hosts'
run "$NW" history show "$id" --db "$DB"
expect_out "history show: the host name escaped" '^host +\\x1b\]0;PWNED\\x07node-0003\\nfleet: 0 hosts, forged line$'
expect_true "history show: no raw escape or bell" sh -c '! grep -q "$(printf "[\033\007]")" "$1"' sh "$OUT"
run "$NW" compare --db "$DB" 1 "$id"
expect_out "compare: the host name escaped" '^B: run [0-9]+ \(host \\x1b\]0;PWNED'
expect_true "compare: no raw escape or bell" sh -c '! grep -q "$(printf "[\033\007]")" "$1" "$2"' sh "$OUT" "$ERR"
run "$NW" report --db "$DB" -O "$TMP/r.html" 1 "$id"
expect_true "report: the HTML escapes it too (as before)" sh -c '! grep -q "$(printf "\033")" "$1"' sh "$TMP/r.html"

# top: its own --dir, echoed
mkdir -p "$TMP/st${ESC}]0;PWNED${BEL}"
run "$NW" top --once --dir "$TMP/st${ESC}]0;PWNED${BEL}"
expect_no_crash "top --once: no crash"
expect_true "top: its --dir shown escaped" sh -c '! grep -q "$(printf "[\033\007]")" "$1" "$2"' sh "$OUT" "$ERR"
expect_true "top: the escape named" grep -qF 'st\x1b]0;PWNED\x07' "$OUT" "$ERR"

# a 120 KB argument echoed in a message: cut, with its length
BIG=$(head -c 122880 /dev/zero | tr '\0' x)
for args in "history show $BIG" "history $BIG" "compare $BIG 1 2" "history merge /nonexistent/x${ESC}[2J"; do
	# shellcheck disable=SC2086 # the words are the command's arguments
	run "$NW" $args --db "$DB"
	what=${args:0:16}
	expect_true "$what...: refused" test "$RC" -ne 0
	expect_true "$what...: the message is short ($(wc -c <"$ERR") bytes)" test "$(wc -c <"$ERR")" -lt 2000
	expect_true "$what...: no raw escape" sh -c '! grep -q "$(printf "\033")" "$1"' sh "$ERR"
done
run "$NW" history show "$BIG" --db "$DB"
expect_err "a long argument: cut with its length" "x…\(122880 bytes\)"
