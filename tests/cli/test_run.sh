#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncclwatch run: a job's whole communication story from one prefix.
# The job is the real plugin driven through its ABI by the harness (4 rank
# processes, started directly or by a torchrun-style launcher) and bench
# over the fake NCCL under mpirun: every rank's stats collected and equal
# to what was fed, the report's and the timeline's figures, a planted hang
# named with its rank and sequence number, Ctrl-C and kill -TERM mid-job,
# the job's exit status passed through, the captured NCCL logs read, the
# user's settings kept, two jobs compared, nodes' parts merged with their
# clocks estimated, the page rendered in headless Chromium.
source "$(dirname "$0")/lib.sh"
H=$NW_TESTS/plugin_harness
FAKE=$NW_TESTS/fakegpu
unset NCCLWATCH_DIR NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_PROFILER_PLUGIN NCCLWATCH_JOB NCCLWATCH_HANG_S
SHM=/dev/shm/ncclwatch-$(id -u)
[ -d /dev/shm ] && [ -w /dev/shm ] || SHM=${TMPDIR:-/tmp}/ncclwatch-$(id -u)
# harness ARGS: the harness as a job's command, taking the plugin and directory run set up
harness() { echo "exec $H --plugin \"\$NCCL_PROFILER_PLUGIN\" --dir \"\$NCCLWATCH_DIR\" $*"; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

# ---- usage ----
run "$NW" run
expect_rc "no command: usage error" 2
expect_err "no command: says what to give" "no command to run"
run "$NW" run --bogus -- true
expect_rc "unknown option" 2
run "$NW" run --report - -- true
expect_rc "--report -: refused" 2
expect_err "--report -: the job's stdout is its own" "stdout is its own"
run "$NW" help run
for o in --out --job --report --overlap --log-s --hang-s --nccl-lib --no-history --node; do
	expect_out "help run names $o" -- "$o"
done

# ---- stdout and exit status are the job's ----
run "$NW" run -q --no-history --out "$TMP/x0" -- echo hello
expect_rc "exit 0 passed through" 0
expect_true "stdout is the job's alone" test "$(cat "$OUT")" = hello
run "$NW" run -q --no-history --out "$TMP/x1" -- sh -c 'exit 1'
expect_rc "exit 1 passed through" 1
run "$NW" run -q --no-history --out "$TMP/x2" -- sh -c 'kill -9 $$'
expect_rc "killed by SIGKILL: 137 passed through" 137
run "$NW" run -q --no-history --out "$TMP/x3" -- /nonexistent/train
expect_rc "a command not found: 127" 127
expect_err "a command not found: said" "cannot run '/nonexistent/train'"
printf '#!/bin/sh\n' >"$TMP/noexec"
run "$NW" run -q --no-history --out "$TMP/x4" -- "$TMP/noexec"
expect_rc "a command that cannot be run: 126" 126
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["exit"]["status"] != 137)' \
	"$TMP/x2/nodes/"*/part.json
expect_true "the part says how the job ended (137)" test $? -eq 0

# ---- what the job gets ----
run env NCCLWATCH_DIR=/srv/elsewhere "$NW" run --no-history --overlap --log-s 30 --out "$TMP/e1" -- sh -c \
	'echo "plugin=$NCCL_PROFILER_PLUGIN"; echo "dir=$NCCLWATCH_DIR"; echo "debug=$NCCL_DEBUG"; echo "file=$NCCL_DEBUG_FILE"; echo "log=$NCCLWATCH_LOG_S"; echo "ovl=$NCCLWATCH_OVERLAP"; echo "job=$NCCLWATCH_JOB"'
expect_rc "the job ran" 0
expect_out "the plugin, by path" "^plugin=/.*/libnccl-profiler-ncclwatch.so$"
expect_out "a stats directory of its own" "^dir=$SHM/run-"
expect_out "NCCL's debug output at INFO" "^debug=INFO$"
expect_out "... into a file per process (%h, %p)" "^file=$TMP/e1/nodes/.*/nccl.%h.%p.log$"
expect_out "log lines every --log-s" "^log=30$"
expect_out "--overlap" "^ovl=1$"
expect_out "the job's id" "^job=job-[0-9T]+-[0-9]+$"
expect_err "a user's NCCLWATCH_DIR: replaced, and said" "NCCLWATCH_DIR=/srv/elsewhere is replaced"
run env NCCL_PROFILER_PLUGIN=/opt/other/libnccl-profiler-x.so NCCL_DEBUG=WARN "$NW" run --no-history --out "$TMP/e2" \
	-- sh -c 'echo "plugin=$NCCL_PROFILER_PLUGIN debug=$NCCL_DEBUG file=${NCCL_DEBUG_FILE:-none}"'
expect_out "a user's profiler and debug level are kept" "^plugin=/opt/other/libnccl-profiler-x.so debug=WARN file=none$"
expect_err "... and said" "NCCL_PROFILER_PLUGIN=/opt/other/libnccl-profiler-x.so is yours: kept"
expect_err "... both" "NCCL_DEBUG=WARN is yours: kept"
printf 'NCCL version 2.17.1+cuda12.0\n' >"$TMP/libnccl-old.so.2"
run "$NW" run --no-history --nccl-lib "$TMP/libnccl-old.so.2" --out "$TMP/e3" -- sh -c 'echo "plugin=${NCCL_PROFILER_PLUGIN:-none}"'
expect_rc "no live monitoring: the job runs anyway" 0
expect_out "... with nothing loaded" "^plugin=none$"
expect_err "... and says why" "no live monitoring for this job: NCCL 2.17.1 .* is older than 2.18"
# the interposer for NCCL 2.18-2.22, found in the install layout around the binary, before the job's LD_PRELOAD
mkdir -p "$TMP/inst/bin" "$TMP/inst/lib"
cp "$NW" "$TMP/inst/bin/ncclwatch"
cp "$NW_PLUGIN" "$TMP/inst/lib/libncclwatch-interpose.so"
printf 'NCCL version 2.21.5+cuda12.4\n' >"$TMP/libnccl-221.so.2"
run env LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 ASAN_OPTIONS="$ASAN_ANY_ORDER" "$TMP/inst/bin/ncclwatch" run --no-history \
	--nccl-lib "$TMP/libnccl-221.so.2" --out "$TMP/e4" -- sh -c 'echo "preload=$LD_PRELOAD"'
expect_out "NCCL 2.21: the interposer first in LD_PRELOAD" "^preload=$TMP/inst/lib/libncclwatch-interpose.so:/lib/x86_64-linux-gnu/libm.so.6$"
expect_err "... said" "interposer"

# ---- a job of 4 ranks: every rank's stats, the report, the timeline, history ----
run "$NW" run --out "$TMP/j1" -- sh -c "$(harness --ranks 4 --ops 20 --late 2 --late-us 3000 --hold-ms 2500)"
expect_rc "harness job under run" 0
cp "$OUT" "$TMP/fed1"
expect_true "stdout holds the job's own lines only" bash -c '! grep -v "^fed " "$1" | grep -q .' _ "$OUT"
expect_err "summary: ranks and nodes" "ncclwatch run: 4 ranks on 1 node, watched by the plugin"
expect_err "summary: where the report is" "ncclwatch run: report $TMP/j1/report.html"
expect_err "summary: the history run" "recorded as run [0-9]+"
expect_true "every rank's stats files kept" test "$(ls "$TMP"/j1/nodes/*/stats/*.nws | wc -l)" -eq 8
# fed ACTUAL: every fed line equals the figures (calls and bytes per comm, rank and op) of ACTUAL
cat >"$TMP/fed.py" <<'PY'
import json, re, sys, html.parser
fed = {}
for l in open(sys.argv[1]):
    m = re.match(r"fed comm=(\w+) name=\S* rank=(\d+) nranks=\d+ op=(\w+) count=(\d+) bytes=(\d+)", l)
    if m:
        k = (m[1], int(m[2]), m[3]); fed[k] = (fed.get(k, (0, 0))[0] + int(m[4]), fed.get(k, (0, 0))[1] + int(m[5]))
got = {}
if sys.argv[2].endswith(".json"):
    for r in json.load(open(sys.argv[2]))["ranks"]:
        for e in r["per_op"]:
            k = (r["comm"], r["rank"], e[0]); got[k] = (got.get(k, (0, 0))[0] + e[2], got.get(k, (0, 0))[1] + e[3])
else:
    class P(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "tr" and "data-op" in a:
                got[(a["data-comm"], int(a["data-rank"]), a["data-op"])] = (int(a["data-calls"]), int(a["data-bytes"]))
    P().feed(open(sys.argv[2]).read())
bad = [(k, fed[k], got.get(k)) for k in fed if fed[k] != got.get(k)] + [(k, None, got[k]) for k in got if k not in fed]
print(len(fed), "fed,", len(got), "read,", len(bad), "differ", bad[:3])
sys.exit(1 if bad or not fed else 0)
PY
run python3 "$TMP/fed.py" "$TMP/fed1" "$TMP"/j1/nodes/*/part.json
expect_rc "the node's part holds exactly what was fed (every comm, rank, op: calls and bytes)" 0
run python3 "$TMP/fed.py" "$TMP/fed1" "$TMP/j1/report.html"
expect_rc "the report's per-rank table holds exactly what was fed" 0
cat >"$TMP/trace.py" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); want = int(sys.argv[2]); ranks = int(sys.argv[3])
ev = t["traceEvents"]; assert isinstance(ev, list)
x = [e for e in ev if e["ph"] == "X"]
for e in ev:
    assert all(k in e for k in ("ph", "pid", "tid", "name")), e
for e in x:
    assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and "seq" in e["args"], e
names = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
tracks = {e["pid"] for e in x}
print(len(x), "ops on", len(tracks), "tracks", sorted(tracks))
sys.exit(0 if len(x) == want and len(tracks) == ranks and tracks <= names else 1)
PY
run python3 "$TMP/trace.py" "$TMP/j1/timeline.json" 760 4
expect_rc "the timeline is Chrome trace JSON: every fed op, one track per rank" 0
expect_true "results.json parses (compare reads it)" python3 -m json.tool "$TMP/j1/results.json"
run "$NW" history
expect_out "the job is in history, source job" " job +all_reduce"
run python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["lateness"][-1]; print(l); sys.exit(l["ranks"][0] != 2)' \
	"$TMP"/j1/nodes/*/part.json
expect_rc "lateness: the late rank (2) comes first" 0
for s in "Hangs, aborts and anomalies (0)" "What each communicator moved" "Bandwidth over time" "lateness of each rank" \
	"NCCL's choices" 'href="timeline.json"'; do
	expect_true "the report has: $s" grep -qF "$s" "$TMP/j1/report.html"
done
expect_true "the report fetches nothing (a policy that loads nothing, no script)" \
	bash -c 'grep -q "default-src '"'"'none'"'"'" "$1" && ! grep -qi "<script" "$1"' _ "$TMP/j1/report.html"

# ---- exposed communication (--overlap), from the fake CUPTI: a GEMM 0-1000 ms, an all_reduce 800-1400 ms ----
T0=1764620000000000000
GEMM=_Z28sm90_xmma_gemm_bf16bf16_bf16f32v
AR=_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE
printf 'window %s %s\nkernel %s 7 %s %s\nkernel %s 13 %s %s\n' $T0 $((T0 + 2000000000)) $GEMM $T0 $((T0 + 1000000000)) \
	$AR $((T0 + 800000000)) $((T0 + 1400000000)) >"$TMP/partly.scn"
run env NCCLWATCH_OVERLAP_PERIOD_S=0.1 NCCLWATCH_OVERLAP_WINDOW_S=0.02 NCCLWATCH_CUPTI_LIB="$FAKE/libcupti.so.13" \
	NW_FAKE_CUPTI_SCENARIO="$TMP/partly.scn" "$NW" run --no-history --overlap --sample-s 0.1 --out "$TMP/jo" -- sh -c \
	"$(harness --ranks 2 --ops 5 --hold-ms 1500)"
expect_rc "--overlap: the job ran" 0
run python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["overlap_windows"]; print(len(w), w[:1]); sys.exit(not (w and all(x["exposed_ns"] == 400000000 and x["wall_ns"] == 2000000000 for x in w)))' \
	"$TMP"/jo/nodes/*/part.json
expect_rc "--overlap: the windows of exposed communication kept, exact (400 of 2000 ms)" 0
expect_true "--overlap: the report charts it" grep -q "<title>exposed communication" "$TMP/jo/report.html"

# ---- a planted hang: rank 2 never arrives at all_reduce seq 20 ----
run "$NW" run --no-history --hang-s 1 --sample-s 0.2 --out "$TMP/j2" -- sh -c \
	"$(harness --ranks 4 --ops 20 --late 2 --scenario hang-missing --hold-ms 3500)"
expect_rc "hung job under run" 0
expect_err "the hang is said while it runs" 'HUNG: communicator 5eed000000c0ffee "world" \(4 ranks\) is hung at all_reduce seq 20: not arrived: rank 2 '
expect_true "... once" test "$(grep -c 'ncclwatch run: HUNG' "$ERR")" -eq 1
expect_true "the report names it: rank 2, all_reduce seq 20" \
	grep -q 'data-kind="hang".*all_reduce seq 20: not arrived: rank 2 ' "$TMP/j2/report.html"
expect_true "the plugin's dumps are kept with the job" test "$(ls "$TMP"/j2/nodes/*/dumps/trace.*.json | wc -l)" -ge 1
expect_true "... and linked from the report" grep -q 'href="nodes/[^"]*/dumps/trace\.' "$TMP/j2/report.html"
run "$NW" hang --no-ras --no-local --dump "$(dirname "$(ls "$TMP"/j2/nodes/*/dumps/trace.*.json | head -1)")"
expect_rc "the kept dumps still say hung to 'ncclwatch hang'" 1

# ---- Ctrl-C and kill -TERM mid-job, under a torchrun-style launcher ----
cat >"$TMP/launch.py" <<'PY'
# A launcher as torchrun is one: the ranks in a group of their own, a signal passed to all of them.
# The ranks get SIGINT's and SIGTERM's default actions, whatever this test inherited (a shell without
# job control starts its background commands with SIGINT ignored, and ignoring is inherited).
import os, signal, subprocess, sys
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, signal.SIG_DFL)
p = subprocess.Popen(sys.argv[1:], start_new_session=True)
def stop(sig, frame):
    os.killpg(p.pid, sig)
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, stop)
rc = p.wait()
sys.exit(rc if rc >= 0 else 128 - rc)
PY
# wait_files JOB: until the job's stats directory holds 8 files (at most 20 s)
wait_files() { for _ in $(seq 200); do [ "$(ls "$SHM/run-$1"/*.nws 2>/dev/null | wc -l)" -ge 8 ] && return 0; sleep 0.1; done; return 1; }
LONG="--plugin $NW_PLUGIN --ranks 4 --ops 20 --hold-ms 60000"
( cd "$TMP" && exec "$NW" run --no-history --job jt --out "$TMP/j3" -- sh -c \
	"NCCL_PROFILER_PLUGIN= exec python3 $TMP/launch.py $H --dir \"\$NCCLWATCH_DIR\" $LONG" >/dev/null 2>"$TMP/j3.err" ) &
W=$!
PIDS+=("$W")
wait_files jt
t0=$(date +%s)
kill -TERM "$W"
wait "$W"
RC=$?
cp "$TMP/j3.err" "$ERR"
expect_rc "kill -TERM of run: the job stopped, its status (the launcher's 143) passed through" 143
expect_true "... at once (not after the job's 60 s)" test $(($(date +%s) - t0)) -lt 30
expect_err "... said: interrupted by SIGTERM from a pid" "interrupted by SIGTERM from pid [0-9]+"
expect_true "the report is written, marked interrupted" grep -q "INTERRUPTED" "$TMP/j3/report.html"
expect_true "... with the ranks that ended without their communicator" grep -q 'data-kind="abort"' "$TMP/j3/report.html"
if command -v script >/dev/null; then
	( wait_files jc; sleep 0.3; printf '\003'; sleep 5 ) | (cd "$TMP" && script -qfec "stty rows 40 cols 160; $(printf '%q ' "$NW" run \
		--no-history --job jc --out "$TMP/j4" -- python3 "$TMP/launch.py" "$H" --plugin "$NW_PLUGIN" --dir \
		"$SHM/run-jc" --ranks 4 --ops 20 --hold-ms 60000)" /dev/null) >"$TMP/j4.tty" 2>&1
	expect_true "Ctrl-C on the terminal: the report is written, marked interrupted" grep -q "INTERRUPTED" "$TMP/j4/report.html"
	run python3 -c 'import json,sys; x=json.load(open(sys.argv[1]))["exit"]; print(x); sys.exit(not (x["interrupted"] and "from the terminal (Ctrl-C)" in x["by"] and x["status"] == 130))' \
		"$TMP"/j4/nodes/*/part.json
	expect_rc "... by SIGINT from the terminal, the job's status 130" 0
	expect_true "the status line was drawn on the terminal's last row" grep -q $'\e7\e\\[[0-9]*;1H\e\\[2Kncclwatch: .*| job jc' "$TMP/j4.tty"
else
	skip "Ctrl-C on a terminal" "script(1) is not installed"
fi

# ---- bench over the fake NCCL under mpirun ----
# (Open MPI's allocations outlive MPI_Finalize: no leak check in the sanitizer build, as the other MPI tests)
run env NCCLWATCH_CUDA_LIB="$FAKE/libcuda.so.1" FAKE_GPU_COUNT=4 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	"$NW" run --no-history --out "$TMP/j5" \
	--nccl-lib "$FAKE/libnccl.so.2" -- "${MPIRUN[@]}" -x ASAN_OPTIONS -np 4 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	--op all_reduce -b 64K -e 1M -f 2 -n 5 -w 1
expect_rc "mpirun -np 4 bench over the fake NCCL, under run" 0
expect_out "the job's table on stdout" "^# Avg bus bandwidth"
if grep -qa NCCL_PROFILER_PLUGIN "$FAKE/libnccl.so.2"; then
	expect_true "every rank's stats collected" test "$(ls "$TMP"/j5/nodes/*/stats/*.nws | wc -l)" -eq 4
	run python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
n = {r["rank"]: sum(e[2] for e in r["per_op"] if e[0] == "all_reduce") for r in p["ranks"]}
print(n); sys.exit(not (sorted(n) == [0, 1, 2, 3] and len(set(n.values())) == 1 and n[0] > 0))' "$TMP"/j5/nodes/*/part.json
	expect_rc "... the same all_reduces on every rank" 0
	expect_true "NCCL's debug output captured, one file per rank process" \
		test "$(grep -l "PROFILER/Plugin: Loaded ncclwatch" "$TMP"/j5/nodes/*/nccl.*.log | wc -l)" -eq 4
	expect_true "... and none of it in the job's stderr" bash -c '! grep -q "NCCL INFO" "$1"' _ "$ERR"
else
	skip "every rank's stats of bench over the fake NCCL" "this fake NCCL does not load profiler plugins"
fi

# ---- NCCL's captured log, read by logscan ----
LOG=$SRCDIR/tests/fixtures/logs/h200x2_allreduce_info.log
run "$NW" run --no-history --out "$TMP/j6" -- sh -c \
	'cp "$1" "$(printf %s "$NCCL_DEBUG_FILE" | sed "s/%h/$(hostname)/; s/%p/$$/")"' _ "$LOG"
expect_rc "a job that writes NCCL's log" 0
expect_true "the log is kept, one per process" test "$(ls "$TMP"/j6/nodes/*/nccl.*.log | wc -l)" -eq 1
expect_true "the report shows NCCL's version, transports and variables" bash -c \
	'grep -q "2.28.9+cuda13.0" "$1" && grep -q "P2P/direct pointer" "$1" && grep -q "NCCL_NVLS_ENABLE" "$1"' _ "$TMP/j6/report.html"
run "$NW" logscan "$TMP"/j6/nodes/*/nccl.*.log
expect_rc "logscan reads the kept log" 0

# ---- two jobs compared ----
run "$NW" run -q --job cmpA --out "$TMP/ca" -- sh -c "$(harness --ranks 4 --ops 10 --hold-ms 300)"
run env NCCL_ALGO=Ring "$NW" run -q --job cmpB --out "$TMP/cb" -- sh -c "$(harness --ranks 4 --ops 10 --hold-ms 300)"
ids=$("$NW" history --json | python3 -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin) if r["source"] == "job"))')
set -- $ids
A=${*: -2:1} B=${*: -1:1}
run "$NW" compare "$A" "$B"
expect_true "compare of two recorded jobs runs (0 or 1)" test "$RC" -le 1
expect_out "... and says what differs between them" "NCCL_ALGO=Ring set in B"
# the second job planted 30% slower at 8M (its part's kernel times stretched), its results written again
cp -r "$TMP/cb" "$TMP/cs"
python3 - "$TMP"/cs/nodes/*/part.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for r in p["ranks"]:
    for e in r["per_op"]:
        if e[0] == "all_reduce" and e[1] >= 24:
            e[6] = int(e[6] * 1.3)
json.dump(p, open(sys.argv[1], "w"))
PY
run "$NW" report --job "$TMP/cs"
expect_rc "report --job writes a job's files again" 0
run "$NW" compare "$TMP/cb/results.json" "$TMP/cs/results.json"
expect_rc "compare: the planted slowdown is a regression" 1
expect_out "... of all_reduce from 8M" "slower in B:"
expect_out "... named" "all_reduce .*8M"

# ---- report --job: from the history, and nodes merged with their clocks ----
mv "$TMP/ca" "$TMP/ca.moved"
run bash -c "cd '$TMP' && '$NW' report --job cmpA"
expect_rc "report --job ID from the history (no directory left)" 0
expect_true "... written" test -s "$TMP/ncclwatch-job-cmpA.html" -a -s "$TMP/ncclwatch-job-cmpA.timeline.json"
run "$NW" fleet
expect_out "fleet says why it leaves jobs out" "^note: [0-9]+ runs of source job .* not in this view"
run "$NW" report --job nope-such-job
expect_rc "report --job of an unknown job" 2
expect_err "... says where it looked" "no job 'nope-such-job'"
# node1's part split in two nodes, the second node's clock 50 ms ahead
python3 - "$TMP"/j1/nodes/*/part.json "$TMP/split" 50000000 <<'PY'
import copy, json, os, sys
p = json.load(open(sys.argv[1])); dst = sys.argv[2]; skew = int(sys.argv[3])
late = {r["pid"] for r in p["ranks"] if r["nranks"] > 1 and r["rank"] >= 2}
for name, mine, sk in (("nodea", lambda r: r["pid"] not in late, 0), ("nodeb", lambda r: r["pid"] in late, skew)):
    q = copy.deepcopy(p); q["host"] = name; q["ranks"] = [r for r in q["ranks"] if mine(r)]; q["lateness"] = []
    for r in q["ranks"]:
        r["host"] = name
        lines = [l.split() for l in r["timeline"].splitlines()]
        for f in lines:
            for i in (3, 4, 5):
                f[i] = str(int(f[i]) + sk) if f[i] != "0" else f[i]
        r["timeline"] = "".join(" ".join(f) + "\n" for f in lines)
    q["start_ns"] += sk; q["end_ns"] += sk
    for iv in q["series"]:
        iv["t0"] += sk; iv["t1"] += sk
    os.makedirs(f"{dst}/nodes/{name}"); json.dump(q, open(f"{dst}/nodes/{name}/part.json", "w"))
PY
run "$NW" report --job "$TMP/split"
expect_rc "report --job merges two nodes' parts" 0
expect_err "... and states the second node's clock offset" "clock of nodeb: -[0-9.]+ us \(from [0-9]+ collectives' end times shared with nodea\)"
run python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["otherData"]["clock_offsets"][1]; print(o); sys.exit(abs(o["offset_us"] + 50000) > 5000)' \
	"$TMP/split/timeline.json"
expect_rc "... estimated within 5 ms of the planted 50 ms (the harness's ranks do not end together)" 0
run python3 "$TMP/trace.py" "$TMP/split/timeline.json" 760 4
expect_rc "the merged timeline: every op, one track per rank" 0
expect_true "the report states the clocks" grep -q "Clocks of the nodes" "$TMP/split/report.html"

# ---- nodes without a shared filesystem: each part in a PostgreSQL history, merged from there ----
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
	PGS=$SRCDIR/tests/helpers/pg-server
	PGD=$(mktemp -d /tmp/nwpg.XXXXXX)
	if URI=$("$PGS" start "$PGD"); then
		export PGPASSWORD; PGPASSWORD=$(cat "$PGD/password")
		run "$NW" run -q --db "$URI" --job pgjob --node nodea --out "$TMP/pga" -- sh -c "$(harness --ranks 4 --ops 10 --hold-ms 300)"
		expect_rc "node a's part recorded into PostgreSQL" 0
		run "$NW" run -q --db "$URI" --job pgjob --node nodeb --out "$TMP/pgb" -- true
		expect_rc "node b's part recorded into PostgreSQL" 0
		run bash -c "cd '$TMP' && '$NW' report --job pgjob --db '$URI'"
		expect_rc "report --job from PostgreSQL" 0
		expect_err "... both nodes' parts merged" "wrote ncclwatch-job-pgjob.html \(2 nodes, 8 stats files\)"
		"$PGS" stop "$PGD"
	else
		RC=1; notok "a throwaway PostgreSQL server starts"
	fi
	rm -rf "$PGD"
else
	skip "parts in a PostgreSQL history" "PostgreSQL is not installed (Debian: postgresql)"
fi

# ---- a launcher's tasks: the node's first collects, the others become the job ----
run env SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_LOCALID=1 SLURM_PROCID=1 "$NW" run --no-history --out "$TMP/t" -- sh -c \
	'echo "job=$NCCLWATCH_JOB dir=$NCCLWATCH_DIR"'
expect_out "a task that is not its node's first gets the same job and directory" "^job=slurm-77.0 dir=$SHM/run-slurm-77.0$"
expect_true "... and writes no part" test ! -e "$TMP/t/nodes/$(hostname)/part.json"

# ---- the page in a browser ----
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	skip "the report renders in headless chromium" "chromium is not installed"
else
	screenshot "$TMP/j1/report.html" "$TMP/shot.png" 1200,1800
	expect_true "chromium wrote a screenshot" test -s "$TMP/shot.png"
	run python3 "$SRCDIR/tests/cli/pngcolours.py" "$TMP/shot.png" 0072b2 d55e00
	expect_out "the charts' lines are on screen" "0072b2 yes"
fi
