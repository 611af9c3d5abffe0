# ncclwatch logscan: every fixture log against its .expect, then bad input.
. tests/cli/lib.sh
FX=$SRCDIR/tests/fixtures/logs

for log in "$FX"/*.log; do
	name=$(basename "$log" .log)
	exp=$FX/$name.expect
	[ -f "$exp" ] || { RC=0; notok "$name has an .expect file" "add $exp"; continue; }
	"$NW" logscan --json "$log" >"$TMP/$name.json" 2>"$TMP/$name.err"
	jrc=$?
	"$NW" logscan "$log" >"$TMP/$name.txt" 2>>"$TMP/$name.err"
	trc=$?
	cp "$TMP/$name.txt" "$OUT"
	cp "$TMP/$name.err" "$ERR"
	RC=$trc
	expect_true "$name: --json and text agree on the exit status" test "$jrc" -eq "$trc"
	while IFS= read -r line; do
		case "$line" in '#'*|'') continue ;; esac
		kind=${line%% *}
		arg=${line#* }
		case "$kind" in
		exit) expect_rc "$name: exit $arg" "$arg" ;;
		diagnosis) expect_true "$name: diagnosis $arg" grep -q "\"id\": \"$arg\"" "$TMP/$name.json" ;;
		no-diagnosis) expect_true "$name: no diagnosis $arg" sh -c '! grep -q "$1" "$2"' - "\"id\": \"$arg\"" "$TMP/$name.json" ;;
		json) expect_true "$name: json /$arg/" grep -Eq -- "$arg" "$TMP/$name.json" ;;
		text) expect_true "$name: text /$arg/" grep -Eq -- "$arg" "$TMP/$name.txt" ;;
		*) RC=0; notok "$name: known expectation '$kind'" "in $exp" ;;
		esac
	done <"$exp"
done

# Several files at once, and stdin.
run "$NW" logscan "$FX/h200x2_allreduce_info.log" "$FX/xf_pdsh.log"
expect_rc "two files exit 0" 0
expect_out "two files: lines add up" '^740 lines'
run sh -c "\"$NW\" logscan - <\"$FX/h200x2_allreduce_info.log\""
expect_rc "stdin exits 0" 0
expect_out "stdin read" 'P2P/direct pointer'
run sh -c "\"$NW\" logscan --brief <\"$FX/h200x2_allreduce_info.log\""
expect_out "--brief keeps the diagnosis" '^Diagnosis'
expect_no_out "--brief drops the inventory" '^Communicators'

# Usage and I/O errors exit 2.
run "$NW" logscan /nonexistent/nccl.log
expect_rc "missing file exits 2" 2
expect_err "missing file named" "cannot open '/nonexistent/nccl.log'"
run "$NW" logscan --bogus "$FX/h200x2_allreduce_info.log"
expect_rc "unknown option exits 2" 2
run "$NW" logscan "$TMP"
expect_rc "a directory exits 2" 2
run "$NW" help logscan
expect_out "help lists --json" '--json'

# Anything else: never a crash, bounded output.
head -c 3000000 /dev/urandom >"$TMP/rand.bin"
run "$NW" logscan "$TMP/rand.bin"
expect_no_crash "binary garbage does not crash"
expect_true "binary garbage exits 0 or 1" test "$RC" -le 1
{ head -c 150000 /dev/zero; echo; head -c 200000 /dev/zero | tr '\0' 'x'; echo; cat "$FX/h200x2_allreduce_info.log"; } >"$TMP/nul.log"
run "$NW" logscan "$TMP/nul.log"
expect_rc "NUL bytes and 200 KB lines, then a log: exit 0" 0
expect_out "the log after them is still read" 'P2P/direct pointer +2 pairs'
expect_out "over-long lines are counted" '2 over-long lines cut'
head -c 20000 "$FX/h200x2_allreduce_info.log" >"$TMP/cut.log"
run "$NW" logscan "$TMP/cut.log"
expect_no_crash "truncated log does not crash"
expect_out "truncated log: init not complete is shown" 'init complete 0/2'

# docs/logscan.md lists every diagnosis id the binary can make.
run "$NW" logscan --list-diagnoses
expect_rc "--list-diagnoses exits 0" 0
expect_true "--list-diagnoses lists 10 or more rules" test "$(wc -l <"$OUT")" -ge 10
cut -f1 "$OUT" >"$TMP/ids"
while read -r id; do
	expect_true "docs/logscan.md lists $id" grep -q "| \`$id\` |" "$SRCDIR/docs/logscan.md"
done <"$TMP/ids"
