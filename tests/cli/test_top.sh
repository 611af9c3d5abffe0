# ncclwatch top as a user runs it: options, --once snapshots, the terminal
# view in a pseudo-terminal (quit key, Ctrl-C, terminal restored), bad
# inputs; and, with the plugin harness, counts and bytes equal to what the
# harness fed the plugin.
source tests/cli/lib.sh

EMPTY=$TMP/empty
mkdir -p "$EMPTY"

run "$NW" help top
expect_rc "help top" 0
for o in --dir --interval --once --all --sort --op --comm; do
	expect_out "help names $o" -- "$o"
done
expect_out "help names the keys" 'keys:'

run "$NW" top --sort nope --once --dir "$EMPTY"
expect_rc "unknown sort key" 2
expect_err "unknown sort key is named" "'nope'"
run "$NW" top --interval 0 --once
expect_rc "--interval 0" 2
run "$NW" top --interval xyz
expect_rc "bad --interval" 2
run "$NW" top --bogus
expect_rc "unknown option" 2
run "$NW" top --once --dir "$EMPTY" stray
expect_rc "stray argument" 2
run "$NW" top --once --dir "$TMP/nope"
expect_rc "missing directory" 1
expect_err "missing directory is named" "$TMP/nope"
expect_err "and the way to fill it" "NCCL_PROFILER_PLUGIN=ncclwatch"
run env NCCLWATCH_DIR="$TMP/nope2" "$NW" top --once
expect_rc "NCCLWATCH_DIR is the default directory" 1
expect_err "NCCLWATCH_DIR is used" "nope2"

run "$NW" top --once --dir "$EMPTY"
expect_rc "--once on an empty directory" 0
expect_out "summary line" "^ncclwatch top: '$EMPTY': 0 files"
expect_out "column header" '^COMM +NAME +STATE +RANK +OP +HOST +CALLS +BYTES +CALLS/S +BUSBW GB/s +P50 +P99 +BUSY% +SRC +LATE$'
expect_out "says nothing was recorded" 'no operations recorded'

BAD=$TMP/bad
mkdir -p "$BAD"
printf 'not a stats file' >"$BAD/x.nws"
run "$NW" top --once --dir "$BAD"
expect_rc "bad stats file" 0
expect_err "bad stats file is named" "x\.nws"
expect_out "bad stats file is counted" '1 bad\)'

# no terminal: a clear refusal, never a garbled screen
run "$NW" top --dir "$EMPTY" </dev/null
expect_rc "live view without a terminal" 2
expect_err "points at --once" "--once"

# the live view in a pseudo-terminal: q quits, Ctrl-C quits, the terminal is restored
if command -v script >/dev/null; then
	(sleep 1; printf q) | TERM=xterm timeout 20 script -qec "$NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty1" 2>&1
	RC=$?
	expect_rc "q quits the live view" 0
	expect_true "the screen shows the summary" grep -q "ncclwatch top: '$EMPTY'" "$TMP/tty1"
	expect_true "the alternate screen is left (terminal restored)" grep -q $'\033\\[?1049l' "$TMP/tty1"
	expect_true "the cursor is shown again" grep -q $'\033\\[?25h' "$TMP/tty1"
	(sleep 1; printf '\003') | TERM=xterm timeout 20 script -qec "$NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty2" 2>&1
	RC=$?
	expect_rc "Ctrl-C quits the live view cleanly" 0
	expect_true "terminal restored after Ctrl-C" grep -q $'\033\\[?1049l' "$TMP/tty2"
	(sleep 0.6; printf 'p'; sleep 0.4; printf 'b'; sleep 0.3; printf 'oall_reduce\n'; sleep 0.4; printf 'x'; sleep 0.3; printf q) |
		TERM=xterm timeout 20 script -qec "$NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty3" 2>&1
	RC=$?
	expect_rc "pause, sort, filter keys then quit" 0
	expect_true "pause is shown" grep -q 'PAUSED' "$TMP/tty3"
	expect_true "sort key is shown" grep -q 'busbw' "$TMP/tty3"
	expect_true "op filter is shown" grep -q 'op~all_reduce' "$TMP/tty3"
fi

# with the plugin harness: what top counts equals what was fed
if [ -x "$NW_TESTS/plugin_harness" ] && [ -f "$SRCDIR/tests/cli/harness_sums.sh" ]; then
	source "$SRCDIR/tests/cli/harness_sums.sh"
	harness_check_top
fi
