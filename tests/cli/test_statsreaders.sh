# SPDX-License-Identifier: Apache-2.0
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

# maxrss OUTFILE CMD...: runs CMD (stdout to OUTFILE, stderr to $ERR), its exit status in RC and
# its peak resident memory in KiB in MAXRSS
maxrss() {
	local o=$1; shift
	MAXRSS=$(python3 - "$o" "$ERR" "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    rc = subprocess.call(sys.argv[3:], stdout=out, stderr=err)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
	RC=${MAXRSS% *}; MAXRSS=${MAXRSS#* }
}

# A count in a file claiming more than any job has (2^31-1 ranks): the file is
# bad, with the reason; no reader allocates for it (this used to take 8 to 24 GB).
D=$TMP/huge; mkdir -p "$D"; chmod 700 "$D"
cp "$ONE" "$D/huge.nws"
python3 - "$D/huge.nws" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
assert struct.unpack_from("<i", b, 100)[0] == 4, "nranks is not at offset 100"
struct.pack_into("<i", b, 100, 2147483647)
open(p, "wb").write(bytes(b))
PY
for cmd in "hang --json" "hang" "top --once"; do
	# shellcheck disable=SC2086
	maxrss "$OUT" timeout 20 "$NW" $cmd --dir "$D"
	expect_true "$cmd with nranks = 2^31-1 in a file: done in bounded memory (${MAXRSS} KiB)" [ "$RC" -lt 124 -a "$MAXRSS" -lt 65536 ]
done
maxrss "$OUT" "$NW" top --once --dir "$D"
expect_err "top names the file and the bound" "huge\.nws.*2147483647 ranks: not between 1 and 1048576"
maxrss "$OUT" "$NW" hang --json --dir "$D"
expect_out "hang counts it as unusable" '"stats_files": 0'

# Stale files cost a reader nothing but their header: 1000 files of a killed
# job, hidden by default (they used to cost 465-581 MB per top --once or scrape).
D=$TMP/dead; mkdir -p "$D"; chmod 700 "$D"
"$NW_TESTS/plugin_harness" --plugin "$NW_PLUGIN" --dir "$D/src" --ranks 1 --ops 5 --hold-ms 60000 >/dev/null 2>&1 &
HP=$!
for _ in $(seq 100); do ls "$D/src"/*.nws >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.3
DEADF=$(ls "$D/src"/*.nws | head -1)
RP=$(basename "$DEADF" | awk -F. '{ print $(NF - 3) }')   # <host>.<pid>.<comm>.r<rank>.nws: the rank process
kill -9 "$RP" $HP; wait $HP 2>/dev/null
for _ in $(seq 50); do kill -0 "$RP" 2>/dev/null || break; sleep 0.1; done
for i in $(seq 1000); do cp --sparse=always "$DEADF" "$D/dead.$i.nws"; done
rm -rf "$D/src"
maxrss "$OUT" "$NW" top --once --dir "$D"
expect_true "top --once over 1000 stale files: ${MAXRSS} KiB at most (under 40 MiB)" [ "$RC" = 0 -a "$MAXRSS" -lt 40960 ]
expect_out "... and they are counted as hidden" '1000 files \(0 live, 0 finished, 0 disabled, 1000 stale hidden'
maxrss "$OUT" "$NW" exporter --once --dir "$D"
expect_true "exporter --once over 1000 stale files: ${MAXRSS} KiB at most (under 40 MiB)" [ "$RC" = 0 -a "$MAXRSS" -lt 40960 ]
expect_out "... counted as stale" '^ncclwatch_stats_files\{.*state="stale"\} 1000$'
maxrss "$OUT" "$NW" hang --dir "$D"
expect_true "hang over 1000 stale files reads their headers only: ${MAXRSS} KiB (under 64 MiB)" [ "$RC" -lt 2 -a "$MAXRSS" -lt 65536 ]
