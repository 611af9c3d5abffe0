# SPDX-License-Identifier: Apache-2.0
# Helpers for CLI tests: each check prints "ok - name" or "not ok - name".
# Source it; $NW is the binary under test, $SRCDIR the source tree, $REFDIR
# nccl-tests' own outputs that bench and import are compared with (in the
# repository: tests/fixtures/reference/README.md says where they come from).
set -u
REFDIR=$SRCDIR/tests/fixtures/reference
TMP=$(mktemp -d /tmp/nwcli.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/out ERR=$TMP/err RC=0
: >"$OUT"; : >"$ERR"

# MPIRUN: mpirun as every test starts it, an array: "${MPIRUN[@]}" -np 2 "$NW" ...
# (inside a string, "${MPIRUN[*]}"). Open MPI refuses to run as root unless
# told on its command line, and refuses more ranks than cores (a test's
# -np 4 on a 2-core machine) without --oversubscribe; so the tests say both
# themselves and need nothing exported beforehand. MPICH needs neither.
MPIRUN=(mpirun)
if mpirun --version 2>/dev/null | grep -q 'Open MPI'; then
	MPIRUN+=(--oversubscribe)
	[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
fi

# ASAN_ANY_ORDER: ASAN_OPTIONS for a command whose LD_PRELOAD puts another
# library before the sanitizer's runtime (a job's own preload before the
# sanitizer build's ncclwatch or interposer); the options of the run kept.
ASAN_ANY_ORDER="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

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
# skip_root NAME WHY: a check that needs root (chown to another user, a mount
# or PID namespace, a cgroup, chroot). For an ordinary user it is a skip that
# says "not root", NW_TEST_ALL=1 or not: the run as root checks it. As root,
# WHY is something else missing, and it is a skip like any other.
skip_root() {
	if [ "$(id -u)" -ne 0 ]; then echo "ok - $1 # skip: not root: $2"; else skip "$1" "$2"; fi
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


# Rows of the nccl-tests table: size count type redop root, then time algbw
# busbw #wrong twice (13 fields). For n ranks: zero wrong (N/A where
# nccl-tests does not verify: alltoall and sendrecv, alltoallv in place),
# algbw = size / time (x (n-1)/n for hypercube) and busbw = algbw x the
# nccl-tests factor, within the printed rounding.
check_table() {
	python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read(); n = int(sys.argv[2])
f = {"all_reduce": 2*(n-1)/n, "all_gather": (n-1)/n, "reduce_scatter": (n-1)/n, "alltoall": (n-1)/n,
     "gather": (n-1)/n, "scatter": (n-1)/n, "broadcast": 1, "reduce": 1, "sendrecv": 1,
     "alltoallv": (n-1)/n, "hypercube": 1}
alg_f = {"hypercube": (n-1)/n}
bad = rows = 0; op = None; ops = set()
for line in text.splitlines():
    m = re.match(r"# Collective test starting: (\w+)_perf", line)
    if m: op = m.group(1); ops.add(op); continue
    if line.startswith("#") or not line.strip(): continue
    v = line.split()
    if len(v) != 13: bad += 1; print("row?", line); continue
    rows += 1
    size = int(v[0]) * alg_f.get(op, 1)
    for inplace, (t, alg, bus, wrong) in enumerate(((v[5], v[6], v[7], v[8]), (v[9], v[10], v[11], v[12]))):
        t, alg, bus = float(t), float(alg), float(bus)
        unchecked = op in ("alltoall", "sendrecv") or (op == "alltoallv" and inplace)
        if wrong != "0" and not (wrong == "N/A" and unchecked):
            bad += 1; print("wrong", op, line)
        # times are printed to 0.01 us: allow for that rounding
        lo, hi = size / 1e3 / (t + 0.005), size / 1e3 / max(t - 0.005, 1e-9)
        if not (lo - 0.006 <= alg <= hi + 0.006): bad += 1; print("algbw", op, line)
        if abs(bus - alg * f[op]) > 0.011 + 0.001 * alg: bad += 1; print("busbw", op, line)
print(rows, "rows", sorted(ops))
sys.exit(1 if bad or not rows else 0)
PY
}
