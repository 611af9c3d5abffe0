# Helpers for CLI tests: each check prints "ok - name" or "not ok - name".
# Source it; $NW is the binary under test, $REFDIR the reference outputs.
set -u
TMP=$(mktemp -d /tmp/nwcli.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out ERR=$TMP/err

# run CMD...: runs it, keeps stdout in $OUT, stderr in $ERR, status in $RC.
run() { "$@" >"$OUT" 2>"$ERR"; RC=$?; }
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; shift; for l in "$@"; do echo "#   $l"; done; echo "#   rc=$RC"; echo "#   stdout:"; head -20 "$OUT" | sed 's/^/#     /'; echo "#   stderr:"; head -20 "$ERR" | sed 's/^/#     /'; }
# expect_rc NAME WANT
expect_rc() { if [ "$RC" -eq "$2" ]; then ok "$1"; else notok "$1" "exit $RC, wanted $2"; fi; }
# expect_out NAME REGEX (stdout), expect_err NAME REGEX (stderr)
expect_out() { if grep -Eq -- "$2" "$OUT"; then ok "$1"; else notok "$1" "stdout lacks /$2/"; fi; }
expect_err() { if grep -Eq -- "$2" "$ERR"; then ok "$1"; else notok "$1" "stderr lacks /$2/"; fi; }
expect_no_out() { if grep -Eq -- "$2" "$OUT"; then notok "$1" "stdout has /$2/"; else ok "$1"; fi; }
# expect_true NAME CMD...: passes when CMD succeeds
expect_true() { local n=$1; shift; if "$@"; then ok "$n"; else notok "$n" "failed: $*"; fi; }
# skip NAME WHY: a check that needs a tool this machine lacks. It passes as
# "# skip" for a user; where NW_TEST_ALL=1 (CI, which installs every tool) it fails.
skip() {
	if [ "${NW_TEST_ALL:-0}" = 1 ]; then RC=1; notok "$1" "skipped, but NW_TEST_ALL=1: $2"; else echo "ok - $1 # skip: $2"; fi
}
# late_rank_files DIR: stats files from the real plugin driven through its ABI
# by the harness, 4 rank processes, 10 ops each, rank 2 arriving 10 ms late.
# What was fed goes to $TMP/fed; without the harness or when it fails, the
# test stops here.
late_rank_files() {
	mkdir -p "$1"
	if [ ! -x "$NW_TESTS/plugin_harness" ]; then
		RC=1; notok "plugin harness built" "$NW_TESTS/plugin_harness is missing"; exit 1
	fi
	run "$NW_TESTS/plugin_harness" --plugin "$NW_PLUGIN" --dir "$1" --ranks 4 --ops 10 --late 2 --late-us 10000
	expect_rc "plugin harness ran" 0
	[ "$RC" -eq 0 ] || exit 1
	cp "$OUT" "$TMP/fed"
}
# exporter_port FILE: the port a starting `exporter --listen ...:0` prints
# on its stderr (kept in FILE), waiting up to 10 s; empty when none came.
exporter_port() {
	local p=
	for _ in $(seq 100); do
		p=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$1")
		[ -n "$p" ] && break
		sleep 0.1
	done
	echo "$p"
}
# A crash (signal) is never acceptable: exit codes 128+ fail.
expect_no_crash() { if [ "$RC" -lt 128 ]; then ok "$1"; else notok "$1" "killed by signal $((RC - 128))"; fi; }
# screenshot HTML PNG WIDTH,HEIGHT: HTML rendered by headless Chromium into PNG
# (its log in PNG.log); the caller checks that chromium exists.
screenshot() {
	local prof
	prof=$(mktemp -d "$TMP/prof.XXXXXX")
	timeout 120 "$(command -v chromium || command -v chromium-browser)" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --disable-component-update --disable-sync --no-first-run \
		--user-data-dir="$prof" --screenshot="$2" --window-size="$3" "file://$1" >"$2.log" 2>&1
}
# hold_db_lock DB SECONDS: another process holds an exclusive SQLite lock on
# DB for SECONDS (created if absent); returns once it is held, its pid in HOLDER.
hold_db_lock() {
	rm -f "$1.held"
	python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA locking_mode=EXCLUSIVE")
c.execute("BEGIN EXCLUSIVE")
c.execute("CREATE TABLE IF NOT EXISTS held(x)")
open(sys.argv[1] + ".held", "w").close()
time.sleep(float(sys.argv[2]))' "$1" "$2" &
	HOLDER=$!
	for _ in $(seq 100); do [ -f "$1.held" ] && break; sleep 0.1; done
}
# fake_ras MODE ANSWER [ARGS]: a fake NCCL RAS port (tests/helpers/fake_ras) in
# the background; its port in FAKE_PORT, its pid added to FAKE_PIDS (the caller kills them).
FAKE_PIDS=()
fake_ras() {
	local m=$1 a=$2; shift 2
	"$NW_TESTS/fake_ras" --mode "$m" --answer "$a" "$@" >"$TMP/rasport.$m" &
	FAKE_PIDS+=($!)
	FAKE_PORT=
	for _ in $(seq 50); do
		FAKE_PORT=$(sed -n 's/^port //p' "$TMP/rasport.$m")
		[ -n "$FAKE_PORT" ] && break
		sleep 0.1
	done
}

