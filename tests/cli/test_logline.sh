# SPDX-License-Identifier: Apache-2.0
# The plugin's periodic log lines (NCCLWATCH_LOG_S), driven through its real
# ABI by tests/helpers/plugin_harness: figures exact for fed events (100
# all_reduces of 1 MiB, 100 us each, on 2 ranks), one line per interval,
# off by default, NCCLWATCH_LOG_RANKS, stderr mode, hung, bad settings;
# then the captured stderr of such a run, with launcher prefixes, read back
# by logscan (text and JSON).
source tests/cli/lib.sh
H=$NW_TESTS/plugin_harness
PL=$NW_PLUGIN
unset NCCLWATCH_LOG_S NCCLWATCH_LOG NCCLWATCH_LOG_RANKS
trap 'rm -rf "$TMP"' EXIT

# harness NAME ARGS...: the harness into $TMP/NAME.{out,err} (RC set)
harness() {
	local name=$1
	shift
	mkdir -p "$TMP/$name"
	"$H" --plugin "$PL" --dir "$TMP/$name" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	RC=$?
	cp "$TMP/$name.out" "$OUT"
	cp "$TMP/$name.err" "$ERR"
}
# field FILE KEY: the values of KEY= on the NCCLWATCH lines of FILE, one a line
field() { grep -o "NCCLWATCH .*" "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# off by default: no line anywhere
harness off --scenario logline --ranks 2 --ops 20 --hold-ms 1500
expect_rc "off by default: harness runs" 0
expect_true "off by default: no line through NCCL's logger" test "$(grep -c NCCLWATCH "$TMP/off.out")" -eq 0
expect_true "off by default: nothing on stderr" test "$(grep -c NCCLWATCH "$TMP/off.err")" -eq 0

# 100 all_reduces of 1 MiB, 100 us each, on 2 ranks, lines every second for 4 s
NCCLWATCH_LOG_S=1 harness exact --scenario logline --ranks 2 --ops 100 --hold-ms 4000
expect_rc "exact: harness runs" 0
n=$(grep -c '^logfn rank=' "$TMP/exact.out")
expect_true "timing: 4 s at 1 s give 4 lines, give or take one ($n)" test "$n" -ge 3 -a "$n" -le 5
expect_true "default ranks: only rank 0 of the comm writes" test "$(grep -c '^logfn rank=1' "$TMP/exact.out")" -eq 0
expect_true "no stderr copy without NCCLWATCH_LOG=stderr" test "$(grep -c NCCLWATCH "$TMP/exact.err")" -eq 0
expect_true "ops add up to the 100 fed" test "$(field "$TMP/exact.out" ops | awk '{s += $1} END {print s + 0}')" -eq 100
expect_true "bytes add up to 100 MiB" test "$(field "$TMP/exact.out" bytes | awk '{s += $1} END {print s + 0}')" -eq 104857600
# busbw: 1 MiB / 100 us = 10.49 GB/s algbw, x 2(n-1)/n = 1 on two ranks
expect_true "busbw of the all_reduces exact" test "$(field "$TMP/exact.out" top | sort -u)" = "all_reduce:10.49"
expect_out "the line's fixed fields" '^logfn rank=0 NCCLWATCH v=1 t=[0-9]+\.[0-9]{3} comm=5eed000000c0ffee name=world rank=0 nranks=2 interval_s=1\.[0-9]{3} ops=[0-9]+ bytes=[0-9]+ busy_pct=[0-9.]+'
busy=$(field "$TMP/exact.out" busy_pct | awk '{s += $1} END {print s + 0}')
expect_true "busy time: 100 x 100 us in about 1 s is 1% ($busy)" awk -v b="$busy" 'BEGIN {exit !(b >= 0.8 && b <= 1.2)}'
expect_no_out "no exposed_pct before it is measured" 'exposed_pct='
expect_no_out "not hung" 'hung='

# NCCLWATCH_LOG_RANKS and stderr mode
NCCLWATCH_LOG_S=1 NCCLWATCH_LOG_RANKS=1 NCCLWATCH_LOG=stderr harness r1 --scenario logline --ranks 3 --ops 50 --hold-ms 2500
expect_rc "LOG_RANKS=1: harness runs" 0
expect_true "LOG_RANKS=1: only rank 1 writes" test "$(grep -c '^logfn rank=1 ' "$TMP/r1.out")" -ge 1 -a "$(grep -c '^logfn rank=[02] ' "$TMP/r1.out")" -eq 0
expect_true "stderr mode: the same lines on stderr" test "$(grep -c '^NCCLWATCH v=1 .* rank=1 nranks=3 ' "$TMP/r1.err")" -eq "$(grep -c '^logfn' "$TMP/r1.out")"
NCCLWATCH_LOG_S=1 NCCLWATCH_LOG_RANKS=all harness all --scenario logline --ranks 3 --ops 10 --hold-ms 1500
for r in 0 1 2; do
	expect_true "LOG_RANKS=all: rank $r writes" test "$(grep -c "^logfn rank=$r " "$TMP/all.out")" -ge 1
done

# hung: rank 0's op never completes, hang declared after 1 s
NCCLWATCH_LOG_S=1 NCCLWATCH_HANG_S=1 NCCLWATCH_LOG=stderr harness hung --scenario hang-inside --late 0 --ranks 2 --ops 5 --hold-ms 3500
expect_rc "hung: harness runs" 0
expect_out "hung: a line says hung=1" '^logfn rank=0 NCCLWATCH v=1 .* hung=1$'

# bad settings turn off the lines only, with one message, and the job goes on
for bad in "NCCLWATCH_LOG_S=soon" "NCCLWATCH_LOG=syslog" "NCCLWATCH_LOG_RANKS=1,x" "NCCLWATCH_LOG_S=-5"; do
	env NCCLWATCH_LOG_S=1 "$bad" "$H" --plugin "$PL" --dir "$TMP/bad" --scenario logline --ranks 1 --ops 10 --hold-ms 1200 >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc "$bad: the job goes on" 0
	expect_err "$bad: one message naming it" "log lines off: ${bad%%=*}="
	expect_true "$bad: said once" test "$(grep -c 'log lines off' "$ERR")" -eq 1
	expect_no_out "$bad: no line" '^logfn'
	expect_out "$bad: ops still recorded" 'fed .* count=10 '
done
# stderr that cannot be written: the lines stop, with one message through NCCL's logger, and the job goes on
NCCLWATCH_LOG_S=1 NCCLWATCH_LOG=stderr "$H" --plugin "$PL" --dir "$TMP/full" --scenario logline --ranks 1 --ops 10 --hold-ms 2500 >"$OUT" 2>/dev/full
RC=$?
expect_rc "stderr full: the job goes on" 0
expect_out "stderr full: one message says why" '^warn rank=0 lines=1 last=ncclwatch: log lines off: cannot write to stderr'
expect_true "stderr full: no line after it" test "$(grep -c '^logfn' "$OUT")" -eq 1
expect_out "stderr full: ops still recorded" 'fed .* count=10 '

# logscan on the captured stderr of a run, with launcher prefixes and PyTorch chatter around the lines
NCCLWATCH_LOG_S=1 NCCLWATCH_LOG=stderr NCCLWATCH_LOG_RANKS=all harness cap --scenario logline --ranks 2 --ops 100 --hold-ms 3000
expect_rc "captured run" 0
{
	echo "[rank0]: [W1201 22:20:00.123456 ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now"
	awk '/ rank=0 /{print "[rank0]: " $0; print "[rank0]: Epoch 0 step " NR * 100 " loss 2.31"; next} {print "node2: " $0}' "$TMP/cap.err"
	echo "[rank0]: Training finished in 3.1 s"
} >"$TMP/train.log"
run "$NW" logscan "$TMP/train.log"
expect_rc "logscan: no error in a healthy run's lines" 0
expect_no_out "logscan: plugin lines with chatter are a log" "no NCCL lines found"
expect_out "logscan: bandwidth section" "^Bandwidth over time"
expect_out "logscan: rank 0's series" "comm 5eed000000c0ffee \(world\) rank 0/2: [0-9]+ lines, 20[0-9-]+T[0-9:]+Z to 20[0-9-]+T[0-9:]+Z, 100 ops, 104857600 bytes, busy 0\.0-[01]\.[0-9]%"
expect_out "logscan: rank 1's series (pdsh prefix)" "comm 5eed000000c0ffee \(world\) rank 1/2: "
expect_out "logscan: busbw of the all_reduces" "all_reduce +busbw min 10\.49 median 10\.49 max 10\.49 GB/s \([12] lines\)"
run "$NW" logscan --json "$TMP/train.log"
expect_rc "logscan --json" 0
expect_true "logscan --json: the bandwidth section" python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bw = d["bandwidth"]
assert sorted((s["comm"], s["rank"]) for s in bw) == [("5eed000000c0ffee", 0), ("5eed000000c0ffee", 1)], bw
for s in bw:
    assert s["ops"] == 100 and s["bytes"] == 104857600 and s["nranks"] == 2 and s["name"] == "world", s
    assert s["lines"] >= 2 and s["first_t"] < s["last_t"] and s["hung_lines"] == 0 and s["first_hung"] is None, s
    # the 100 ops fall in one interval, or two when a boundary passed while they were fed
    b = s["busbw"]
    assert len(b) == 1 and b[0]["op"] == "all_reduce" and b[0]["samples"] in (1, 2), b
    assert b[0]["min_gbs"] == b[0]["median_gbs"] == b[0]["max_gbs"] == 10.49, b
    assert 0 < s["busy_pct_max"] <= 1.2 and s["busy_pct_min"] == 0.0, s
assert d["input"]["ncclwatch_lines"] == sum(s["lines"] for s in bw)
assert not [x for x in d["diagnoses"] if x["id"] == "plugin-hang"]
PY
sed 's/^/[1,0]<stderr>: /' "$TMP/hung.err" >"$TMP/hung.log"
run "$NW" logscan "$TMP/hung.log"
expect_rc "logscan: hung lines are an error" 1
expect_out "logscan: hung as a finding with its time" "plugin-hang: the ncclwatch plugin declared communicator 5eed000000c0ffee \(world\) hung on rank 0 at 20[0-9-]+ [0-9:]+ UTC"
expect_out "logscan: hung in the series" "HUNG from 20"
run "$NW" logscan --json "$TMP/hung.log"
expect_true "logscan --json: hung lines and cause" python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["bandwidth"] if x["rank"] == 0][0]
assert s["hung_lines"] >= 1 and s["first_hung"].startswith("20"), s
assert d["cause"] == "hang", d["cause"]
PY
