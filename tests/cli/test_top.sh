# SPDX-License-Identifier: Apache-2.0
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
expect_out "column header" '^COMM +NAME +STATE +RANK +OP +HOST +CALLS +BYTES +SIZE +CALLS/S +BUSBW GB/s +P50 +P99 +BUSY% +SRC +LATE$'
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
# Keys go in only once the screen is up (a loaded machine may take more than
# a second to start the view; a Ctrl-C before that would kill the process
# before its handlers exist, as it would any program). The command is exec'd:
# script(1) runs it through $SHELL or /bin/sh, and dash (the /bin/sh of
# Debian) would otherwise sit in the terminal's process group and die of the
# Ctrl-C itself, which script reports as exit 130.
# wait_for FILE TEXT: until FILE holds TEXT, at most 30 s
wait_for() {
	local i
	for i in $(seq 300); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

if command -v script >/dev/null; then
	: >"$TMP/tty1"; : >"$TMP/tty2"; : >"$TMP/tty3"
	(wait_for "$TMP/tty1" "ncclwatch top: "; printf q) | TERM=xterm timeout 40 script -qfec "exec $NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty1" 2>&1
	RC=$?
	expect_rc "q quits the live view" 0
	expect_true "the screen shows the summary" grep -q "ncclwatch top: '$EMPTY'" "$TMP/tty1"
	expect_true "the alternate screen is left (terminal restored)" grep -q $'\033\\[?1049l' "$TMP/tty1"
	expect_true "the cursor is shown again" grep -q $'\033\\[?25h' "$TMP/tty1"
	expect_true "an 80-column terminal gets the compact table" grep -q 'COMM      RANK OP' "$TMP/tty1"
	(wait_for "$TMP/tty2" "ncclwatch top: "; printf '\003') | TERM=xterm timeout 40 script -qfec "exec $NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty2" 2>&1
	RC=$?
	expect_rc "Ctrl-C quits the live view cleanly" 0
	expect_true "terminal restored after Ctrl-C" grep -q $'\033\\[?1049l' "$TMP/tty2"
	(wait_for "$TMP/tty3" "ncclwatch top: "; printf 'p'; sleep 0.4; printf 'b'; sleep 0.3; printf 'oall_reduce\n'; sleep 0.4; printf 'x'; sleep 0.3; printf q) |
		TERM=xterm timeout 40 script -qfec "exec $NW top --dir $EMPTY --interval 0.2" /dev/null >"$TMP/tty3" 2>&1
	RC=$?
	expect_rc "pause, sort, filter keys then quit" 0
	expect_true "pause is shown" grep -q 'PAUSED' "$TMP/tty3"
	expect_true "sort key is shown" grep -q 'busbw' "$TMP/tty3"
	expect_true "op filter is shown" grep -q 'op~all_reduce' "$TMP/tty3"
	# a terminal whose type has no description (an image without terminfo), or no TERM
	# at all: what to do, not curses' raw "Error opening terminal"
	TERM=nosuchterm timeout 20 script -qfec "exec $NW top --dir $EMPTY" /dev/null >"$TMP/tty4" 2>&1
	RC=$?
	expect_rc "an unknown TERM: the live view refuses" 1
	expect_true "... saying to set TERM or TERMINFO, or use --once" grep -q "no description of terminal 'nosuchterm'.*TERMINFO.*--once" "$TMP/tty4"
	expect_true "... not with curses' own words" sh -c "! grep -q 'Error opening terminal' '$TMP/tty4'"
	env -u TERM timeout 20 script -qfec "exec env -u TERM $NW top --dir $EMPTY" /dev/null >"$TMP/tty5" 2>&1
	RC=$?
	expect_rc "TERM unset: the live view refuses" 1
	expect_true "... saying TERM is not set and --once" grep -q "TERM is not set.*--once" "$TMP/tty5"
fi

# with the plugin harness (the real plugin driven through its ABI by 4 rank
# processes, rank 2 arriving 10 ms late): top's counts and bytes per
# communicator, rank and op equal what the harness fed, and rank 2 is marked
H=$TMP/harness
late_rank_files "$H"
run "$NW" top --once --all --dir "$H"
expect_rc "top --once on the harness' files" 0
expect_out "calls captured into CUDA graphs are pointed out (replays are unseen)" \
	'^note: 20 calls were captured into CUDA graphs: NCCL raises no profiler events when a graph replays them'
cp "$OUT" "$TMP/top"
expect_true "top shows exactly what was fed (calls and bytes per comm, rank, op)" python3 - "$TMP/fed" "$TMP/top" <<'PY'
import re, sys
fed = {}
for line in open(sys.argv[1]):
    if line.startswith("fed "):
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        fed[(kv["comm"], kv["rank"], kv["op"])] = (int(kv["count"]), int(kv["bytes"]))
got = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 8 and re.fullmatch(r"[0-9a-f]{16}", f[0]):
        key = (f[0], f[3].rstrip("*"), f[4])
        if key in got:
            print("# duplicate row", key); sys.exit(1)
        got[key] = (int(f[6]), int(f[7]))
if not fed or fed != got:
    for k in sorted(set(fed) | set(got)):
        if fed.get(k) != got.get(k):
            print("# %s fed %s top %s" % (k, fed.get(k), got.get(k)))
    sys.exit(1)
print("# %d rows equal" % len(fed))
PY
expect_true "the late rank 2 is the marked straggler" grep -Eq '^5eed000000c0ffee +world +[a-z]+ +2\* all_reduce' "$TMP/top"
expect_true "no other rank is marked" sh -c "! grep -Eq '^5eed000000c0ffee +world +[a-z]+ +[013]\\* ' '$TMP/top'"
# at least about the 10 ms it was held back (a loaded machine adds more)
expect_true "the straggler line names rank 2 and at least about 10 ms" grep -Eq '^straggler: communicator 5eed000000c0ffee \(world\) rank 2 .* arrives ((9\.[5-9]|[1-9][0-9]+\.)[0-9]+ms|[0-9.]+s )' "$TMP/top"
run "$NW" top --once --all --dir "$H" --op send --comm world
expect_rc "filters with --once" 0
expect_true "--op and --comm filter rows" test "$(grep -c '^5eed' "$OUT")" -eq 4
run "$NW" top --once --all --dir "$H" --sort busbw
expect_rc "--sort busbw" 0
expect_true "highest busbw first (the straggler's all_reduce: the others wait in theirs)" grep -Eq '^5eed000000c0ffee +world +[a-z]+ +2\* all_reduce' <(sed -n 3p "$OUT")

# the live view over the harness' 32 rows in a 24-line terminal: it says
# which rows it shows, and the arrow and page keys scroll
if command -v script >/dev/null; then
	# keys go in only once the screen shows what they act on (bounded waits)
	: >"$TMP/tty4"
	{
		wait_for "$TMP/tty4" 'rows 1-18 of 32'; printf '\033OB'
		wait_for "$TMP/tty4" '2-19'; printf '\033[6~'
		wait_for "$TMP/tty4" '15-32'; printf q
	} | TERM=xterm timeout 60 script -qfec "exec $NW top --all --dir $H --interval 0.2" /dev/null >"$TMP/tty4" 2>&1
	RC=$?
	expect_rc "scrolling, then quit" 0
	expect_true "the screen says which rows it shows" grep -q 'rows 1-18 of 32' "$TMP/tty4"
	expect_true "arrow down scrolls one row" grep -q '2-19' "$TMP/tty4"
	expect_true "page down scrolls to the last page" grep -q '15-32' "$TMP/tty4"
	expect_true "the straggler row is highlighted (bold)" grep -q $'\033\\[0;1m.*\\* all_reduce' "$TMP/tty4"
fi

# one-rank communicators: NCCL raises no events for them; top says so
S=$TMP/solo
run "$NW_TESTS/plugin_harness" --plugin "$NW_PLUGIN" --dir "$S" --ranks 2 --ops 0
expect_rc "harness: communicators without operations" 0
run "$NW" top --once --dir "$S"
expect_rc "top --once on communicators without operations" 0
expect_out "one-rank communicators are explained, not left blank" \
	'^note: 2 one-rank communicators with no operations: NCCL sends no profiler events'
