# What a stats file or the stats directory can do to its readers (top,
# exporter): a file truncated while it is read, a FIFO, another user's file,
# a directory others can write, escape sequences in a communicator name.
# None may crash, hang or reach the terminal raw. (The long version of the
# truncation loop is tests/cli/test_torture.sh.)
source tests/cli/lib.sh

late_rank_files "$TMP/good"
ONE=$(grep -l --binary-files=text world "$TMP/good"/*.nws | head -1)
SIZE=$(stat -c %s "$ONE")

# A FIFO named like a stats file: skipped at once, with the reason; never a hang.
D=$TMP/fifo; mkdir -p "$D"; chmod 700 "$D"
cp "$ONE" "$D/"
mkfifo "$D/x.nws"
run timeout 10 "$NW" top --once --dir "$D"
expect_rc "top --once with a FIFO in the directory does not hang" 0
expect_err "top names the FIFO and why it is skipped" "x\.nws.*FIFO"
expect_out "top still shows the good file" "all_reduce"
run timeout 10 "$NW" exporter --once --dir "$D"
expect_rc "exporter --once with a FIFO does not hang" 0
expect_err "exporter names the FIFO" "x\.nws.*FIFO"
expect_out "exporter counts the FIFO as bad" 'state="bad"\} 1$'
ln -s "$ONE" "$D/link.nws"
run timeout 10 "$NW" top --once --dir "$D"
expect_err "a symbolic link is skipped, said so" "link\.nws.*symbolic link"

# Another user's file is skipped with the reason; a directory others can write is refused.
D=$TMP/owner; mkdir -p "$D"; chmod 700 "$D"
cp "$ONE" "$D/mine.nws"
cp "$ONE" "$D/theirs.nws"
if chown 65534 "$D/theirs.nws" 2>/dev/null; then
	run "$NW" top --once --dir "$D"
	expect_rc "top with another user's file" 0
	expect_err "another user's file is skipped, with the owner" "theirs\.nws.*owned by uid 65534"
	expect_out "and counted bad, not shown" '1 bad\)'
	run "$NW" exporter --once --dir "$D"
	expect_err "exporter skips another user's file too" "theirs\.nws.*owned by uid 65534"
else
	skip_root "another user's file" "cannot chown a file to another user"
fi
D=$TMP/open; mkdir -p "$D"; chmod 777 "$D"
cp "$ONE" "$D/"
run "$NW" top --once --dir "$D"
expect_rc "a world-writable directory is refused" 1
expect_err "and the reason is said" "other users can write in it.*chmod go-w"
run "$NW" exporter --once --dir "$D"
expect_rc "exporter refuses it too" 1
chmod 770 "$D"
run "$NW" top --once --dir "$D"
expect_rc "a group-writable directory is refused" 1

# A communicator name with an escape sequence and a newline never reaches the terminal raw.
D=$TMP/esc; mkdir -p "$D"; chmod 700 "$D"
NAME=world
cp "$ONE" "$D/evil.nws"
python3 - "$D/evil.nws" "$NAME" <<'PY'
import sys
p, name = sys.argv[1], sys.argv[2].encode()
b = bytearray(open(p, 'rb').read())
i = b.find(name + b'\0')
assert 0 <= i < 4096, "name not in the header"
evil = (b'\x1b]0;pwned\x07\x1b[2J\n\xc2\x9b' + b'x' * 64)[:len(name)]
b[i:i + len(name)] = evil
open(p, 'wb').write(bytes(b))
PY
run "$NW" top --once --dir "$D"
expect_rc "top --once on a file with a hostile name" 0
expect_true "no escape, bell or C1 byte reaches stdout" python3 -c "
import sys; b = open('$OUT', 'rb').read()
sys.exit(1 if any(c in b for c in (b'\x1b', b'\x07', b'\xc2\x9b')) else 0)"
expect_true "the name does not break the row in two" [ "$(grep -c '^[0-9a-f]\{16\} ' "$OUT")" -ge 1 ]
run "$NW" top --once --dir "$D" --all
expect_true "nor with --all" python3 -c "
import sys; sys.exit(1 if b'\x1b' in open('$OUT', 'rb').read() else 0)"

# A file truncated and rewritten while the readers read it: no crash (SIGBUS), every run ends.
D=$TMP/trunc; mkdir -p "$D"; chmod 700 "$D"
cp "$TMP/good"/*.nws "$D/"
(
	end=$((SECONDS + 5))
	while [ $SECONDS -lt $end ]; do
		for f in "$D"/*.nws; do
			truncate -s 4096 "$f"; truncate -s "$SIZE" "$f"
			cat "$ONE" >"$f"
		done
	done
) &
W=$!
crash=0 runs=0
end=$((SECONDS + 5))
while [ $SECONDS -lt $end ]; do
	timeout 10 "$NW" top --once --dir "$D" >/dev/null 2>&1; r=$?
	[ $r -ge 124 ] && crash=$r
	timeout 10 "$NW" exporter --once --dir "$D" >/dev/null 2>&1; r=$?
	[ $r -ge 124 ] && crash=$r
	runs=$((runs + 1))
done
wait $W
RC=$crash
expect_true "top and exporter survive $runs reads of files truncated under them (last bad status $crash)" [ $crash -eq 0 ]

# Old files of processes that are gone are removed by age (NCCLWATCH_STALE_KEEP, default 24h).
D=$TMP/old; mkdir -p "$D"; chmod 700 "$D"
cp -p "$TMP/good"/*.nws "$D/"
N=$(ls "$D" | wc -l)
run "$NW" top --once --dir "$D"
expect_true "files of gone processes younger than a day are kept" [ "$(ls "$D" | wc -l)" -eq "$N" ]
NCCLWATCH_STALE_KEEP=0 run "$NW" exporter --once --dir "$D"
expect_true "NCCLWATCH_STALE_KEEP=0 keeps every file" [ "$(ls "$D" | wc -l)" -eq "$N" ]
NCCLWATCH_STALE_KEEP=soon run "$NW" top --once --dir "$D"
expect_rc "a bad NCCLWATCH_STALE_KEEP is an error" 1
expect_err "and it is named" "NCCLWATCH_STALE_KEEP='soon'"
sleep 2
NCCLWATCH_STALE_KEEP=1s run "$NW" top --once --dir "$D"
expect_rc "top --once after cleaning" 0
expect_err "top says it removed old files" "removed $N old stats files"
expect_true "files of gone processes older than NCCLWATCH_STALE_KEEP are removed" [ "$(ls "$D" | wc -l)" -eq 0 ]
cp -p "$TMP/good"/*.nws "$D/"
NCCLWATCH_STALE_KEEP=1s run "$NW" exporter --once --dir "$D"
expect_true "the exporter removes them too" [ "$(ls "$D" | wc -l)" -eq 0 ]
