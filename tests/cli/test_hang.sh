# SPDX-License-Identifier: Apache-2.0
# ncclwatch hang, top and exporter on hangs: the real plugin driven through
# its ABI by tests/helpers/plugin_harness (4 rank processes): one rank never
# arrives (hung), one rank's op never completes (hung), every op completed
# (idle), a rank 5 ms late at every op (straggler); trace dumps read back as
# a node would gather them; the NcclwatchCollectiveHung alert evaluated by
# promtool on what the exporter printed for each scenario; bad input.
source tests/cli/lib.sh
H=$NW_TESTS/plugin_harness
export NCCLWATCH_HANG_S=1
HPID=
cleanup() { [ -n "$HPID" ] && kill "$HPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

run "$NW" help hang
expect_rc "help hang" 0
for o in --dir --dump --no-local --hang-s --comm --json; do
	expect_out "help names $o" -- "$o"
done
run "$NW" hang --bogus
expect_rc "unknown option" 2
run "$NW" hang --dir "$TMP" stray
expect_rc "stray argument" 2
run "$NW" hang --hang-s abc --dir "$TMP"
expect_rc "bad --hang-s" 2
expect_err "bad --hang-s is named" "hang-s"
run env NCCLWATCH_HANG_S=soon "$NW" hang --dir "$TMP"
expect_rc "bad NCCLWATCH_HANG_S" 2
expect_err "bad NCCLWATCH_HANG_S is named" "NCCLWATCH_HANG_S"
run "$NW" hang --dir "$TMP/nope"
expect_rc "missing stats directory" 2
expect_err "missing stats directory is named, and what to do" "nope.*NCCL_PROFILER_PLUGIN"
run "$NW" hang --no-local
expect_rc "--no-local without dumps" 2
expect_err "--no-local says what it needs" "--dump"
mkdir -p "$TMP/empty"
run "$NW" hang --dir "$TMP/empty"
expect_rc "no communicators: nothing is hung" 0
expect_out "no communicators is said" "no communicators"
run "$NW" hang --no-local --dump "$TMP/empty"
expect_rc "dump directory without dumps" 2
expect_err "dump directory without dumps is named" "no trace dumps"
printf '{"traceEvents":[' >"$TMP/trunc.json"
run "$NW" hang --no-local --dump "$TMP/trunc.json"
expect_rc "truncated dump" 2
expect_err "truncated dump: not JSON, named" "trunc.json.*not JSON"
printf '{"traceEvents":[],"otherData":{"reason":"requested"}}' >"$TMP/old.json"
run "$NW" hang --no-local --dump "$TMP/old.json"
expect_rc "dump without progress" 2
expect_err "dump without progress says so" "no otherData.progress"
printf '{"traceEvents":[],"otherData":{"progress":[{"comm":"xyz"}]}}' >"$TMP/badc.json"
run "$NW" hang --no-local --dump "$TMP/badc.json"
expect_rc "dump with a bad comm id" 2
expect_err "bad comm id is explained" "16 hex"
printf '{"traceEvents":[],"otherData":{"progress":[{"comm":"00000000000000ab","rank":9,"nranks":2}]}}' >"$TMP/badr.json"
run "$NW" hang --no-local --dump "$TMP/badr.json"
expect_rc "dump with missing fields" 2
expect_err "missing field is named" "progress entry 0"

# a FIFO named like a dump, in a dump directory: refused at once with its name, never waited on
mkdir -p "$TMP/fifodumps"
mkfifo "$TMP/fifodumps/x.json"
run timeout 10 "$NW" hang --no-local --dump "$TMP/fifodumps"
expect_rc "a FIFO in a dump directory does not hang: bad input" 2
expect_err "the FIFO is named" "x\.json.*not a regular file \(a FIFO\)"
run timeout 10 "$NW" hang --no-local --dump "$TMP/fifodumps/x.json"
expect_rc "a FIFO given as a dump: bad input too" 2
# a dump over 64 MiB is refused before it is parsed (one of 300 MB took 31 s and 5.6 GB)
printf '{"otherData":{"progress":[' >"$TMP/big.json"
truncate -s 100M "$TMP/big.json"
run timeout 10 "$NW" hang --no-local --dump "$TMP/big.json"
expect_rc "a 100 MB dump is refused" 2
expect_err "... saying why" "big\.json' is 104857600 bytes, more than the 64 MiB"
rm -f "$TMP/big.json"

# scenario NAME WANT ARGS: the harness scenario with files live for $HOLD ms (7 s) in $TMP/NAME;
# poll `hang` until it exits WANT (at most 10 s), then keep top --once,
# exporter --once and hang --json of that moment in $TMP/NAME.*
scenario() {
	local name=$1 want=$2 d=$TMP/$1
	shift 2
	mkdir -p "$d"
	"$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 4 --ops 5 --hold-ms "${HOLD:-7000}" --scenario "$name" "$@" \
		>"$d.harness" 2>"$d.harness.err" &
	HPID=$!
	sleep 1.5
	for _ in $(seq 50); do
		run "$NW" hang --dir "$d"
		[ "$RC" -eq "$want" ] && break
		sleep 0.2
	done
	cp "$OUT" "$d.hang"
	local hrc=$RC
	"$NW" top --once --dir "$d" >"$d.top" 2>&1
	"$NW" exporter --once --dir "$d" >"$d.prom" 2>&1
	"$NW" hang --dir "$d" --json >"$d.json" 2>&1
	RC=$hrc
	cp "$d.hang" "$OUT"
}
finish() {
	wait "$HPID"
	local rc=$?
	HPID=
	return $rc
}

# 1. not arrived: rank 3 stops at all_reduce seq 5, ranks 0-2 wait inside it
scenario hang-missing 1 --late 3
expect_rc "not arrived: hang exits 1" 1
expect_out "not arrived: communicator, op and sequence number" \
	'^comm 5eed000000c0ffee "world", 4 ranks: hung at all_reduce seq 5, no NCCL event for'
expect_out "not arrived: rank 3, with where it last was" '^    rank 3 \(.* pid [0-9]+\): last all_reduce seq 4, enqueued'
expect_out "not arrived: the ranks waiting" '^  inside \(3\): 0 1 2'
D=$TMP/hang-missing
expect_true "not arrived: --json verdict" grep -q '"verdict": "hung"' "$D.json"
expect_true "not arrived: --json names rank 3" grep -Eq '"rank": 3' "$D.json"
expect_true "not arrived: top --once puts the hung communicator first" \
	sh -c "sed -n 2p '$D.top' | grep -q '^HUNG: communicator 5eed000000c0ffee (world) at all_reduce seq 5.*not arrived: rank 3 (last all_reduce seq 4); inside: 0 1 2'"
expect_true "not arrived: exporter says hung for every rank" \
	test "$(grep -c '^ncclwatch_comm_hung{.*comm="5eed000000c0ffee".*} 1$' "$D.prom")" = 4
expect_true "not arrived: exporter says the waiting ranks have an op in flight (the oldest one's age)" \
	test "$(grep -Ec '^ncclwatch_oldest_inflight_seconds\{.*\} [0-9.e+-]*[1-9]' "$D.prom")" = 3
"$NW" exporter --once --detail rank --dir "$D" >"$D.rank.prom" 2>&1
expect_true "not arrived: with --detail rank, their count (1 each)" \
	test "$(grep -c '^ncclwatch_inflight_operations{.*} 1$' "$D.rank.prom")" = 3
expect_true "not arrived: exporter has the oldest in-flight age and last event age" \
	grep -q '^ncclwatch_oldest_inflight_seconds{' "$D.prom"
expect_true "not arrived: last NCCL event age" grep -q '^ncclwatch_last_nccl_event_age_seconds{' "$D.prom"
run finish
expect_rc "not arrived: harness ran" 0
expect_true "not arrived: one WARN line per rank, once per hang" \
	test "$(grep -c '^warn rank=[0-3] lines=1 last=ncclwatch: comm 5eed000000c0ffee rank [0-3]/4 hung' "$D.harness")" = 4
expect_true "not arrived: rank 3's line says its peers are ahead" grep -q '^warn rank=3 .*peers have enqueued' "$D.harness"
ndumps=$(ls "$D"/trace.*.json 2>/dev/null | wc -l)
expect_true "not arrived: one trace dump per process" test "$ndumps" = 4
expect_true "not arrived: dumps hold the in-flight op, marked incomplete" \
	grep -q '"cat":"inflight".*"seq":5,.*"incomplete":true' $(ls "$D"/trace.*.json | head -1)
if command -v python3 >/dev/null; then
	expect_true "not arrived: dumps are JSON" python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' "$D"/trace.*.json
fi
# the dumps as gathered from the nodes: the same verdict without the live files
mkdir -p "$TMP/gathered"
cp "$D"/trace.*.json "$TMP/gathered/"
run "$NW" hang --no-local --dump "$TMP/gathered"
expect_rc "dumps only: hang exits 1" 1
expect_out "dumps only: same op and sequence number" '^comm 5eed000000c0ffee "world", 4 ranks: hung at all_reduce seq 5'
expect_out "dumps only: rank 3 not arrived" '^    rank 3 '
first=$(ls "$TMP"/gathered/*.json | head -1)
run "$NW" hang --no-local --dump "$first"
expect_rc "one dump of four ranks: still a verdict" 1
expect_out "one dump: the other ranks are not reported" 'not reported \(3'

# 2. inside: every rank enqueued seq 5, rank 1's kernel never ends
scenario hang-inside 1 --late 1
expect_rc "inside: hang exits 1" 1
expect_out "inside: op and sequence number" '^comm 5eed000000c0ffee "world", 4 ranks: hung at all_reduce seq 5'
expect_out "inside: rank 1 is inside" '^  inside \(1\): 1'
expect_no_out "inside: nobody is missing" 'not arrived'
D=$TMP/hang-inside
expect_true "inside: top --once shows it first" sh -c "sed -n 2p '$D.top' | grep -q '^HUNG: .*inside: 1'"
expect_true "inside: exporter says rank 1 hung" grep -q '^ncclwatch_comm_hung{.*rank="1".*} 1$' "$D.prom"
run finish
expect_rc "inside: harness ran" 0

# 3. idle: all ops completed, nothing in flight (a job checkpointing)
scenario hang-idle 0 --late 0
sleep 1.2
run "$NW" hang --dir "$TMP/hang-idle"
expect_rc "idle: hang exits 0" 0
expect_out "idle: the verdict is idle" '^comm 5eed000000c0ffee "world", 4 ranks: idle'
D=$TMP/hang-idle
"$NW" exporter --once --dir "$D" >"$D.prom" 2>&1
expect_true "idle: top --once shows no hang" sh -c "! grep -q HUNG '$D.top'"
expect_true "idle: exporter says not hung" test "$(grep -c '^ncclwatch_comm_hung{.*} 0$' "$D.prom")" = 4
run finish
expect_rc "idle: harness ran" 0
expect_true "idle: no WARN line" test "$(grep -c 'lines=0' "$D.harness")" = 4

# 4. straggler: rank 2 arrives 5 ms late at every op, ops keep coming
HOLD=3000 scenario hang-straggler 0 --late 2 --late-us 5000
expect_rc "straggler: hang exits 0" 0
expect_no_out "straggler: never hung" 'hung'
D=$TMP/hang-straggler
expect_true "straggler: top --once shows no hang" sh -c "! grep -q HUNG '$D.top'"
run finish
expect_rc "straggler: harness ran" 0
expect_true "straggler: no WARN line" test "$(grep -c 'lines=0' "$D.harness")" = 4

# NcclwatchCollectiveHung on what the exporter printed in each scenario, held
# for 5 minutes: it fires for the two hangs, not for idle or the straggler.
if ! command -v promtool >/dev/null; then
	skip "NcclwatchCollectiveHung evaluated on the scenarios" "promtool is not installed (apt-get install prometheus)"
	exit 0
fi
HOST=$(sed -n 's/^ncclwatch_comm_hung{Hostname="\([^"]*\)".*/\1/p' "$TMP/hang-missing.prom" | head -1)
{
	echo "rule_files:"
	echo "  - $SRCDIR/deploy/prometheus/ncclwatch-rules.yml"
	echo "evaluation_interval: 15s"
	echo "tests:"
	for s in hang-missing hang-inside hang-idle hang-straggler; do
		echo "  - interval: 15s"
		echo "    input_series:"
		grep -E '^ncclwatch_(comm_hung|inflight_operations|oldest_inflight_seconds|last_nccl_event_age_seconds)\{' \
			"$TMP/$s.prom" | sed "s/'//g" | while read -r series value; do
			echo "      - series: '$series'"
			echo "        values: '${value}x40'"
		done
		echo "    alert_rule_test:"
		echo "      - eval_time: 5m"
		echo "        alertname: NcclwatchCollectiveHung"
		case $s in
		hang-missing|hang-inside)
			echo "        exp_alerts:"
			echo "          - exp_labels: { severity: critical, Hostname: \"$HOST\", comm: 5eed000000c0ffee }"
			echo "            exp_annotations:"
			echo "              summary: \"communicator 5eed000000c0ffee on $HOST is hung in NCCL\""
			echo "              description: \"A rank of this communicator found no NCCL progress for NCCLWATCH_HANG_S while an operation was in flight or a peer was ahead. Run 'ncclwatch hang' on the node for the operation, its sequence number and the ranks that have not arrived; the trace dump is in the stats directory.\""
			echo "              runbook_url: \"https://github.com/ncclwatch/ncclwatch/blob/main/docs/runbook.md#ncclwatchcollectivehung\""
			;;
		*)
			echo "        exp_alerts: []"
			;;
		esac
	done
} >"$TMP/hang-alert.test.yml"
run promtool test rules "$TMP/hang-alert.test.yml"
expect_rc "NcclwatchCollectiveHung fires for not arrived and inside, silent for idle and straggler" 0

# NCCL's RAS port as one more source: a job-wide view from one node; a port
# that is closed, slow or not RAS leaves the other sources standing.
FXR=$SRCDIR/tests/fixtures/ras
trap 'for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
ras_fake() { fake_ras "$1" "$2"; RPORT=$FAKE_PORT; }
mkdir -p "$TMP/empty-ras"
ras_fake json "$FXR/h200x1_2.28.9_json.txt"
run "$NW" hang --no-local --ras-addr "127.0.0.1:$RPORT" --json
expect_rc "RAS alone (H200 recording): no hang" 0
expect_out "RAS answered, named in the JSON" '"answered": true'
expect_out "RAS's communicator is in the view" '"comm": "da6d3161e2b43b74"'
ras_fake text "$FXR/nccl1911_2.26.2_mismatch.txt"
run "$NW" hang --no-local --ras-addr "127.0.0.1:$RPORT"
expect_no_crash "RAS text answer of a job with a count mismatch: no crash"
expect_out "RAS text answer: its NCCL version said" 'NCCL RAS at 127.0.0.1:[0-9]+ \(NCCL 2.26.2\)'
ras_fake slow "$FXR/h200x1_2.28.9_json.txt"
t0=$(date +%s)
run "$NW" hang --dir "$TMP/empty-ras" --ras-addr "127.0.0.1:$RPORT" --ras-timeout 1
t1=$(date +%s)
expect_true "a RAS port that never answers: hang returns within its timeout" test $((t1 - t0)) -le 4
expect_err "a RAS port that never answers: said, with the view without it" 'NCCL RAS at 127.0.0.1:[0-9]+: .*without it'
ras_fake garbage "$FXR/h200x1_2.28.9_json.txt"
run "$NW" hang --dir "$TMP/empty-ras" --ras-addr "127.0.0.1:$RPORT"
expect_err "a port that is not RAS: said" 'NCCL RAS at 127.0.0.1:[0-9]+: '
expect_true "a port that is not RAS: no hang verdict from it" test "$RC" -eq 0
run env NCCL_RAS_ADDR=127.0.0.1:1 "$NW" hang --dir "$TMP/empty-ras"
expect_rc "no RAS listening, not asked for: quiet, exit 0" 0
expect_true "no RAS listening, not asked for: nothing said about it" sh -c "! grep -q RAS '$ERR'"
run "$NW" hang --no-ras --ras-addr 127.0.0.1:1
expect_rc "--no-ras with --ras-addr: refused" 2

