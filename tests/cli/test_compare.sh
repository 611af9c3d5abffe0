#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare on real nccl-tests outputs (2 x H200): a planted 20% drop in one
# size band is found, exactly there, and nothing else is flagged.
source "$(dirname "$0")/lib.sh"
FIX=$SRCDIR/tests/fixtures/nccltests

# plant FILE LO HI FACTOR: the rows of sizes LO..HI (bytes) take FACTOR times
# as long (bandwidths divided by FACTOR), both placements; other rows as they are.
plant() {
	awk -v lo="$2" -v hi="$3" -v f="$4" '
	/^#/ || NF < 13 { print; next }
	$1 + 0 >= lo && $1 + 0 <= hi {
		printf "%12s  %12s  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s\n",
		       $1, $2, $3, $4, $5, $6 * f, $7 / f, $8 / f, $9, $10 * f, $11 / f, $12 / f, $13
		next }
	{ print }' "$1"
}

for op in all_reduce all_gather reduce_scatter broadcast alltoall sendrecv; do
	run "$NW" compare "$FIX/nt_$op.txt" "$FIX/nt_$op.txt"
	expect_rc "$op: a run against itself is no regression" 0
	expect_out "$op: nothing slower" 'slower in B:$'
	grep -A1 '^slower in B:' "$OUT" | grep -q '^  none$'; RC=$?; expect_rc "$op: slower list is empty" 0
done

# 20% lower busbw at 64M..256M in all_reduce
plant "$FIX/nt_all_reduce.txt" 67108864 268435456 1.25 >"$TMP/ar_slow.txt"
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_slow.txt"
expect_rc "planted drop: exit 1" 1
expect_out "band found out-of-place" '^  all_reduce float sum, out-of-place, 64M-256M \(3 sizes\): busbw -20\.0% on average'
expect_out "band found in-place" '^  all_reduce float sum, in-place, 64M-256M \(3 sizes\): busbw -20\.0% on average'
n=$(grep -c ' slower (' "$OUT"); RC=$n; expect_rc "exactly the 6 planted rows flagged" 6
n=$(grep -c ' faster (' "$OUT"); RC=$n; expect_rc "nothing flagged faster" 0
expect_out "regression said" 'result: REGRESSION: 6 of 62 compared sizes slower'
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_slow.txt" --json
expect_rc "json: exit 1" 1
expect_out "json regression true" '"regression": true'
expect_out "json band from 64M" '"from_bytes": 67108864'
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_slow.txt" --min-size 512M
expect_rc "--min-size above the band: exit 0" 0
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_slow.txt" --tolerance 25
expect_rc "--tolerance 25 tolerates a 20% drop" 0
run "$NW" compare "$TMP/ar_slow.txt" "$FIX/nt_all_reduce.txt" --brief
expect_rc "the other way round is faster, exit 0" 0
expect_out "faster band" 'all_reduce float sum, out-of-place, 64M-256M \(3 sizes\): busbw \+25\.0%'

"$NW" compare "$FIX/nt_all_reduce.txt" - --brief <"$TMP/ar_slow.txt" >"$OUT" 2>"$ERR"; RC=$?
expect_rc "B from standard input" 1
expect_out "stdin labelled" '^B: stdin '
"$NW" compare - - <"$TMP/ar_slow.txt" >"$OUT" 2>"$ERR"; RC=$?
expect_rc "both from standard input is a usage error" 2

# A 3% change everywhere is within the default tolerance; small sizes use time.
plant "$FIX/nt_all_gather.txt" 0 99999999999 1.03 >"$TMP/ag_3.txt"
run "$NW" compare "$FIX/nt_all_gather.txt" "$TMP/ag_3.txt"
expect_rc "3% everywhere is noise" 0
plant "$FIX/nt_sendrecv.txt" 1024 262144 1.4 >"$TMP/sr_lat.txt"
run "$NW" compare "$FIX/nt_sendrecv.txt" "$TMP/sr_lat.txt" --brief
expect_rc "40% longer small messages: regression" 1
expect_out "latency band judged on time" 'sendrecv float sum, out-of-place, 1K-256K \(5 sizes\): speed \(time\) -28\.6%'
run "$NW" compare "$FIX/nt_sendrecv.txt" "$TMP/sr_lat.txt" --min-size 1M
expect_rc "--min-size leaves the latency band out" 0

# Repeats: a file with two runs of the same sweep 8% apart is its own noise
# measure, so a 6% drop against it is noise, and a 20% drop is not.
plant "$FIX/nt_all_reduce.txt" 0 99999999999 1.08 >"$TMP/ar_8.txt"
cat "$FIX/nt_all_reduce.txt" "$TMP/ar_8.txt" >"$TMP/ar_repeats.txt"
plant "$FIX/nt_all_reduce.txt" 0 99999999999 1.06 >"$TMP/ar_6.txt"
run "$NW" compare "$TMP/ar_repeats.txt" "$TMP/ar_6.txt"
expect_rc "a drop within the spread of repeats is no regression" 0
expect_out "tolerance from repeats" 'same \(busbw, \+-[0-9]+% from repeats\)'
run "$NW" compare "$TMP/ar_repeats.txt" "$TMP/ar_slow.txt" --brief
expect_rc "a drop beyond the spread of repeats is" 1
expect_out "band found against repeats" 'all_reduce float sum, out-of-place, 64M-256M \(3 sizes\)'
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_6.txt" --brief
expect_rc "without repeats the same 6% drop is beyond 5%" 1

# Recorded runs: ids and baselines; differences named.
DB=$TMP/h.db
# The environment of a run is what its file says (a -J document's "env"),
# never the importing shell's: both runs as -J files, B's with NCCL_PROTO.
python3 "$SRCDIR/tests/cli/nt_text_to_json.py" "$FIX/nt_all_reduce.txt" vm NCCL_DEBUG=WARN >"$TMP/ar_a.json"
python3 "$SRCDIR/tests/cli/nt_text_to_json.py" "$TMP/ar_slow.txt" vm NCCL_DEBUG=WARN NCCL_PROTO=Simple >"$TMP/ar_b.json"
run "$NW" import --db "$DB" "$TMP/ar_a.json"
expect_rc "import records" 0
NCCL_ALGO=Ring run "$NW" import --db "$DB" "$TMP/ar_b.json"
expect_rc "import records a second run" 0
run "$NW" history baseline before --db "$DB" 1
run "$NW" compare --db "$DB" before 2 --brief
expect_rc "baseline vs run id: regression" 1
expect_out "the variable set in B is named" 'NCCL_PROTO=Simple set in B'
expect_no_out "the importing shell's variable is not" 'NCCL_ALGO'
expect_out "same GPUs" 'in short: .*same NCCL 2\.28\.9, GPUs'

# Bad inputs: exit 2 and a clear message, never a crash.
run "$NW" compare "$FIX/nt_all_reduce.txt"
expect_rc "one run is a usage error" 2
expect_err "says two runs" 'compare needs two runs'
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/absent/x.txt"
expect_rc "missing file" 2
expect_err "names the file" "cannot read '$TMP/absent/x.txt'"
run "$NW" compare --db "$TMP/none.db" "$FIX/nt_all_reduce.txt" 7
expect_rc "run id without a database" 2
expect_err "says there is no database" 'no history database'
# The planted slowdowns of the noise issue: 20% at every size from 1M is a band; 20% at 64M alone
# (four times the 5% tolerance) counts; 30% at one latency-bound size among unchanged ones does not.
plant "$FIX/nt_all_reduce.txt" 1048576 99999999999 1.25 >"$TMP/ar_from1M.txt"
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_from1M.txt"
expect_rc "20% slower from 1M: exit 1" 1
expect_out "20% slower from 1M: one band to the end" '^  all_reduce float sum, out-of-place, 1M-8G \(14 sizes\): busbw -20\.0% on average'
plant "$FIX/nt_all_reduce.txt" 67108864 67108864 1.25 >"$TMP/ar_64M.txt"
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_64M.txt"
expect_rc "20% slower at 64M alone: exit 1" 1
expect_out "20% slower at 64M alone: found" '^  all_reduce float sum, out-of-place, 64M \(1 size\): busbw -20\.0%'
plant "$FIX/nt_all_reduce.txt" 8192 8192 1.30 >"$TMP/ar_8K.txt"
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/ar_8K.txt"
expect_rc "30% longer at 8K alone: no regression, exit 0" 0
expect_out "30% longer at 8K alone: said, not counted" '^ +8K .* -23\.1%  same \(time, \+-20%; alone among unchanged sizes, not counted\)$'

# bench measures each quick size's noise (three batches) into history and JSON; compare uses it.
# (Open MPI's threads stop LeakSanitizer's tracer: no leak check in the sanitizer build, as the other MPI tests)
run env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$NW" bench --backend mpi --db "$TMP/n.db" -b 8 -e 1K -f 8 -n 5 --json="$TMP/n.json"
expect_rc "bench (MPI, one rank): exit 0" 0
expect_true "bench --json: every row's noise" python3 -c "
import json; d = json.load(open('$TMP/n.json')); assert all(r['noise'] > 0 for r in d['results']), d['results']"
run "$NW" history export 1 --db "$TMP/n.db" --json
expect_true "history keeps the noise" python3 -c "
import json, sys; d = json.load(open('$OUT')); assert all(r['noise'] > 0 for r in d['results']), d['results']"
python3 - "$TMP/n.json" "$TMP/n2.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r["noise"] = 0.5; r["time_us"] *= 1.3
json.dump(d, open(sys.argv[2], "w"))
EOF
run "$NW" compare "$TMP/n.json" "$TMP/n2.json"
expect_rc "30% longer inside a 50% batch spread: exit 0" 0
expect_out "the tolerance comes from the batches" '\(time, \+-50% from batch spread\)$'

run "$NW" compare --db "$TMP/none.db" "$FIX/nt_all_reduce.txt" no-such-name
expect_rc "unknown baseline name" 2
expect_err "says what was looked for" "'no-such-name' is not a run id, a file, or a baseline name"
run "$NW" compare "$FIX/nt_all_reduce.txt" "$FIX/nt_all_gather.txt"
expect_rc "runs sharing nothing" 2
expect_err "says nothing to compare" 'share no measurement'
run "$NW" compare --tolerance abc "$FIX/nt_all_reduce.txt" "$FIX/nt_all_reduce.txt"
expect_rc "bad tolerance" 2
run "$NW" compare --min-size 1Q "$FIX/nt_all_reduce.txt" "$FIX/nt_all_reduce.txt"
expect_rc "bad size" 2
printf '{"schema":"ncclwatch.results/1","run":{},"results":[{"op":7}]}' >"$TMP/bad.json"
run "$NW" compare "$TMP/bad.json" "$FIX/nt_all_reduce.txt"
expect_rc "bad results JSON" 2
expect_no_crash "bad results JSON: no crash"
head -c 3000 /dev/urandom >"$TMP/noise.bin"
run "$NW" compare "$TMP/noise.bin" "$FIX/nt_all_reduce.txt"
expect_rc "binary junk" 2
expect_no_crash "binary junk: no crash"
run "$NW" help compare
expect_out "usage names the exit status" 'exit status: 0 no regression'
