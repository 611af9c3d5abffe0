#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tune, end to end, with the fake bench (tests/helpers/fake_bench.c) standing
# in for `ncclwatch bench`: statistics, pruning, budget, failures (exit,
# wrong results, hang, unreadable output), environment handling, env file,
# JSON, --check-env.
source "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fake_bench
LOG=$TMP/fake.log
# Quiet, fast defaults for every case; each case adds what it needs.
T=(tune --bench-cmd "$FAKE" --op all_reduce,sendrecv -b 8 -e 64M -f 8 --no-history)
unset $(env | grep -o '^NCCL_[A-Za-z0-9_]*' | grep -v '^NCCL_NVLS_ENABLE$') 2>/dev/null
export NCCL_NVLS_ENABLE=0
export FAKE_NOISE=0.01
unset FAKE_EFFECT FAKE_FAIL FAKE_SLEEP FAKE_LOG
export NCCLWATCH_DB=$TMP/never-used.db

# --- usage and bad input: exit 2, a clear message, no crash
run "$NW" help tune
expect_rc "help exits 0" 0
expect_out "help lists --budget" "--budget DURATION"
expect_out "help lists --check-env" "--check-env"
expect_out "help lists --launcher" "--launcher"
expect_out "help documents --bench-cmd as testing" "testing:"

bad() { # name, expected stderr regex, args...
	local name=$1 re=$2; shift 2
	run "$NW" "${T[@]}" "$@"
	expect_rc "bad input: $name exits 2" 2
	expect_err "bad input: $name says why" "$re"
}
bad "--budget abc" "bad duration 'abc'" --budget abc
bad "--budget 0" "above zero" --budget 0
bad "--op nope" "unknown collective 'nope'" --op nope
bad "--bands order" "increasing" --bands 16M,64K
bad "--var no =" "NAME=v1,v2" --var NCCL_PROTO
bad "--var empty value" "empty value" --var NCCL_PROTO=LL,,Simple
bad "-e below -b" "below -b" -b 1M -e 1K
bad "--repeats 0" "out of range" --repeats 0
bad "--settings unknown" "unknown group 'fast'" --settings fast
bad "nothing to compare" "nothing to compare" --settings none
bad "--keep non-NCCL" "only NCCL_" --keep PATH
bad "--launcher empty" "empty command" --launcher " "
bad "unknown option" "unknown option '--frobnicate'" --frobnicate
bad "missing value" "needs a value" --budget
bad "-d unknown" "unknown data type" -d float7
bad "--backend" "not nccl or mpi" --backend tcp

# --- no variant differs: "defaults are best here", env file without exports
run "$NW" "${T[@]}" --settings proto --repeats 3 --env-out "$TMP/none.env" -q
expect_rc "no difference: exit 0" 0
expect_out "no difference: defaults are best here" "^defaults are best here"
expect_out "no difference: table says within noise" "defaults best \(0 slower, 3 within noise\)"
expect_true "no difference: env file has no export" bash -c "! grep -q export '$TMP/none.env'"
expect_true "no difference: env file says defaults are best" grep -q "defaults are best here" "$TMP/none.env"
expect_true "no difference: env file sources cleanly" bash -c "set -e; . '$TMP/none.env'"

# --- winners: LL faster for small sizes but slower for large; 16M buffers faster for large
export FAKE_EFFECT="NCCL_PROTO=LL:0:64K:0.7;NCCL_PROTO=LL:16M:inf:1.5;NCCL_BUFFSIZE=16777216:16M:inf:0.8"
run "$NW" "${T[@]}" --settings proto,buffsize --repeats 4 --env-out "$TMP/win.env"
expect_rc "winner: exit 0" 0
expect_out "winner: LL best for small all_reduce" "^all_reduce +small \(<64K\) .* NCCL_PROTO=LL .* better"
expect_out "winner: BUFFSIZE best for large sendrecv" "^sendrecv +large \(>=16M\) .* NCCL_BUFFSIZE=16777216 .* better"
expect_out "winner: LL named as mixed" "NCCL_PROTO=LL: better in 2, worse in 2"
expect_out "winner: recommendation" "^recommendation: NCCL_BUFFSIZE=16777216"
expect_true "winner: env file exports the winner" grep -qx "export NCCL_BUFFSIZE=16777216" "$TMP/win.env"
expect_true "winner: env file has the measured gain" grep -Eq "^#   all_reduce large \(>=16M\): \+2[0-9]\.[0-9]%" "$TMP/win.env"
expect_true "winner: env file exports nothing else" test "$(grep -c '^export' "$TMP/win.env")" -eq 1
expect_true "winner: env file sources" bash -c ". '$TMP/win.env' && test \"\$NCCL_BUFFSIZE\" = 16777216"
expect_out "winner: confirmed" "confirmed by a second measurement"
expect_err "winner: confirmation runs shown" "NCCL_BUFFSIZE=16777216, repeat 5 \(confirming\)"
expect_err "winner: progress with i/N" "tune: \[1/[0-9]+\] default, repeat 1/4 \(verified\)"
expect_err "winner: progress with eta" "elapsed [0-9]+s  eta [0-9]+"

# --- a win that does not hold when measured again is not recommended
rm -f "$TMP/count"
FAKE_EFFECT="NCCL_PROTO=LL:0:inf:0.7" FAKE_EFFECT_LIMIT=3 FAKE_COUNTER=$TMP/count \
	run "$NW" "${T[@]}" --settings none --var NCCL_PROTO=LL --repeats 3 --env-out "$TMP/gone.env"
expect_rc "vanishing win: exit 0" 0
expect_err "vanishing win: it was confirmed again" "NCCL_PROTO=LL, repeat 4 \(confirming\)"
expect_out "vanishing win: defaults are best" "^defaults are best here"
expect_true "vanishing win: not in the env file" bash -c "! grep -q export '$TMP/gone.env'"
FAKE_EFFECT="NCCL_PROTO=LL:0:inf:0.7" run "$NW" "${T[@]}" --settings none --var NCCL_PROTO=LL --repeats 3 --confirm 0
expect_out "--confirm 0: recommended at once" "^recommendation: NCCL_PROTO=LL \(better in 6 op x band, worse in none\)$"
expect_true "--confirm 0: no confirmation runs" bash -c "! grep -q confirming '$ERR'"

# --- failures: the "fastest" variants exit 3, give wrong results, hang, or write garbage
export FAKE_EFFECT="NCCL_ALGO=Tree:0:inf:0.5;NCCL_NTHREADS=256:0:inf:0.5;NCCL_MAX_NCHANNELS=4:0:inf:0.5;NCCL_BUFFSIZE=1048576:0:inf:0.5"
export FAKE_FAIL="NCCL_ALGO=Tree:exit;NCCL_NTHREADS=256:wrong;NCCL_MAX_NCHANNELS=4:hang;NCCL_BUFFSIZE=1048576:garbage"
export FAKE_LOG=$LOG
rm -f "$LOG"
run "$NW" "${T[@]}" --repeats 3 --timeout 1 --env-out "$TMP/fail.env" -q
expect_rc "failures: exit 0" 0
expect_out "failures: exit 3 shown with stderr" "NCCL_ALGO=Tree: repeat 1: exit 3; stderr: ncclwatch: error: NCCL error: invalid usage \(fake failure\)"
expect_out "failures: wrong results shown" "NCCL_NTHREADS=256: wrong results, repeat 1: verification found [0-9]+ wrong elements"
expect_out "failures: hang killed" "NCCL_MAX_NCHANNELS=4: repeat 1: killed after 1 s without finishing"
expect_out "failures: bad JSON shown" "NCCL_BUFFSIZE=1048576: repeat 1: exit 0 but no readable results"
expect_out "failures: defaults are best" "^defaults are best here"
expect_true "failures: never recommended" bash -c "! grep -q export '$TMP/fail.env'"
expect_true "failures: a failed variant runs once" test "$(grep -c 'NCCL_ALGO=Tree' "$LOG")" -eq 1
hung=$(grep 'NCCL_MAX_NCHANNELS=4' "$LOG" | awk '{print $2}')
expect_true "failures: the hung child is gone" bash -c "[ -n '$hung' ] && ! kill -0 '$hung' 2>/dev/null"
unset FAKE_FAIL FAKE_EFFECT

# --- what the children see: NCCL_* cleared but NVLS_ENABLE and --keep; -c 1 on the first repeat
rm -f "$LOG"
NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=lo NCCL_PROTO=LL128 run "$NW" "${T[@]}" --settings proto --repeats 3 --keep NCCL_SOCKET_IFNAME
expect_rc "env: exit 0" 0
expect_err "env: says what it unsets" "unset in every measured run .*NCCL_DEBUG"
expect_true "env: NCCL_DEBUG never reaches a child" bash -c "! grep -q NCCL_DEBUG '$LOG'"
expect_true "env: --keep reaches every child" test "$(grep -c 'NCCL_SOCKET_IFNAME=lo' "$LOG")" -eq "$(wc -l <"$LOG")"
expect_true "env: NCCL_NVLS_ENABLE stays" test "$(grep -c 'NCCL_NVLS_ENABLE=0' "$LOG")" -eq "$(wc -l <"$LOG")"
expect_true "env: the user's NCCL_PROTO reaches only its own variant" test "$(grep -c 'NCCL_PROTO=LL128' "$LOG")" -eq 3
expect_true "env: 4 variants x 3 repeats" test "$(wc -l <"$LOG")" -eq 12
expect_true "env: first repeat verified (-c 1), the rest not" test "$(head -4 "$LOG" | grep -c -- '-c 1')" -eq 4 -a "$(tail -8 "$LOG" | grep -c -- '-c 0')" -eq 8
# Round-robin: no variant runs twice before every variant has run once more.
expect_true "env: runs interleaved" bash -c "awk '{v=\"default\"; for(i=1;i<=NF;i++) if (\$i ~ /^NCCL_PROTO=/) v=\$i; r[v]++; if (r[v] > int((NR-1)/4)+1) bad=1} END {exit bad}' '$LOG'"

# --- a launcher prefix: the settings travel through env(1) on the command line
rm -f "$LOG"
NCCL_DEBUG=INFO run "$NW" "${T[@]}" --settings none --var NCCL_PROTO=Simple --repeats 3 --launcher "env LAUNCHED=1" -q
expect_rc "launcher: exit 0" 0
expect_true "launcher: variant set through the launcher" test "$(grep -c 'NCCL_PROTO=Simple' "$LOG")" -eq 3
expect_true "launcher: NCCL_DEBUG unset through the launcher" bash -c "! grep -q NCCL_DEBUG '$LOG'"

# --- pruning: a variant 2x slower everywhere stops after 2 repeats
rm -f "$LOG"
FAKE_EFFECT="NCCL_PROTO=LL128:0:inf:2" run "$NW" "${T[@]}" --settings proto --repeats 5 -q
expect_rc "prune: exit 0" 0
expect_out "prune: reported" "NCCL_PROTO=LL128: pruned, after 2 repeats"
expect_true "prune: ran twice" test "$(grep -c 'NCCL_PROTO=LL128' "$LOG")" -eq 2
expect_true "prune: others ran 5 times" test "$(grep -c 'NCCL_PROTO=Simple' "$LOG")" -eq 5
rm -f "$LOG"
FAKE_EFFECT="NCCL_PROTO=LL128:0:inf:2" run "$NW" "${T[@]}" --settings proto --repeats 4 --prune-after 0 -q
expect_true "prune: --prune-after 0 keeps it" test "$(grep -c 'NCCL_PROTO=LL128' "$LOG")" -eq 4

# --- budget: 0.2 s per run, 3 s for 16 variants: repeats kept, variants dropped and named
rm -f "$LOG"
FAKE_SLEEP=0.2 run "$NW" "${T[@]}" --budget 3s --json="$TMP/budget.json"
expect_rc "budget: exit 0" 0
expect_out "budget: says what was skipped" "skipped, left out for lack of time"
expect_out "budget: the header shows the budget" "\(budget 3s\)"
runs=$(wc -l <"$LOG")
expect_true "budget: stayed within the budget ($runs runs of 0.2 s)" test "$runs" -le 16
# Every variant measured to the end got the 3 repeats a verdict needs, unless a slow machine made tune stop early (and say so).
expect_true "budget: measured variants run 3 times, or the stop is said" bash -c "grep -q '^stopped early: the budget ran out' '$OUT' || python3 -c \"
import json
d = json.load(open('$TMP/budget.json'))
assert all(v['runs'] >= 3 for v in d['variants'] if v['status'] == 'measured'), d['variants']
assert any(v['status'] == 'skipped' for v in d['variants'])
\""
expect_out "budget: the verdict says what it covers" "variants were left out for lack of time: the verdict covers the others only"

# --- too little time for any verdict: said, and nothing set
FAKE_SLEEP=0.3 run "$NW" "${T[@]}" --settings proto --budget 0.5s --env-out "$TMP/few.env" -q
expect_rc "no verdict: exit 0" 0
expect_out "no verdict: said" "^no verdict: too few repeats"
expect_no_out "no verdict: no defaults-best claim" "defaults are best"
expect_true "no verdict: env file says so" grep -q "no verdict" "$TMP/few.env"

# --- JSON
run "$NW" "${T[@]}" --settings proto --repeats 3 --json="$TMP/t.json" -q
expect_rc "json: exit 0" 0
expect_true "json: valid, with schema, cells and recommendation" python3 -c "
import json,sys
d=json.load(open('$TMP/t.json'))
assert d['schema']=='ncclwatch.tune/1' and d['mode']=='tune'
assert len(d['variants'])==4 and d['variants'][0]['label']=='default'
assert len(d['cells'])==6 and len(d['cells'][0]['default_samples_us'])==3
assert d['recommendation']['defaults_best'] is True
"
run "$NW" "${T[@]}" --settings proto --repeats 3 --json -q
expect_true "bare --json: stdout is only JSON" python3 -c "import json; json.load(open('$OUT'))"

# --- --save-runs keeps each child's results
run "$NW" "${T[@]}" --settings none --var NCCL_PROTO=LL --repeats 3 --save-runs "$TMP/runs" -q
expect_true "save-runs: one file per run" test "$(ls "$TMP/runs" | wc -l)" -eq 6
expect_true "save-runs: results documents" grep -q '"ncclwatch.results/1"' "$TMP/runs/001-default-r1.json"

# --- history: one record per successful run, source "tune", with the variant and the child's environment
rm -f "$LOG"
NCCL_DEBUG=INFO run "$NW" tune --bench-cmd "$FAKE" --op all_reduce -e 1M --settings none --var NCCL_PROTO=LL --repeats 3 --db "$TMP/h.db"
expect_rc "history: exit 0" 0
expect_err "history: says what it recorded" "recorded 6 runs in history \(ids 1-6, source tune\)"
"$NW" history --db "$TMP/h.db" >"$TMP/hist.txt" 2>&1
expect_true "history: six tune runs listed" test "$(grep -c ' tune ' "$TMP/hist.txt")" -eq 6
expect_true "history: variant, repeat and the child's environment kept" bash -c "
for id in 1 2 3 4 5 6; do '$NW' history --db '$TMP/h.db' export \$id --json; done | python3 -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read(); docs = []; i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    d, i = dec.raw_decode(text, i); docs.append(d)
assert len(docs) == 6, len(docs)
ll = [d for d in docs if d[\"run\"][\"extra\"][\"tune\"][\"variant\"] == \"NCCL_PROTO=LL\"]
assert len(ll) == 3 and sorted(d[\"run\"][\"extra\"][\"tune\"][\"repeat\"] for d in ll) == [1, 2, 3]
for d in docs:
    env = d[\"run\"][\"extra\"][\"fingerprint\"][\"env\"]
    assert \"NCCL_DEBUG\" not in env, env
    assert (env.get(\"NCCL_PROTO\") == \"LL\") == (d in ll), env
    assert d[\"run\"][\"source\"] == \"tune\"
'"

# --- --check-env
run "$NW" "${T[@]}" --check-env
expect_rc "check-env, nothing set: exit 0" 0
expect_out "check-env, nothing set: says so" "nothing to check"
rm -f "$LOG"
NCCL_PROTO=LL FAKE_EFFECT="NCCL_PROTO=LL:0:64K:0.7;NCCL_PROTO=LL:16M:inf:1.5" run "$NW" "${T[@]}" --check-env --repeats 3 -q
expect_rc "check-env: exit 0" 0
expect_out "check-env: names the settings" "your settings: current \(NCCL_PROTO=LL\)"
expect_out "check-env: helps small" "^all_reduce +small \(<64K\) .* helps$"
expect_out "check-env: hurts large" "^all_reduce +large \(>=16M\) .* hurts$"
expect_out "check-env: no difference medium" "^all_reduce +medium \(64K-16M\) .* no difference within noise$"
expect_out "check-env: summary" "help in 2 op x band, hurt in 2, make no difference within noise in 2"
expect_true "check-env: defaults run without NCCL_PROTO" test "$(grep -c 'NCCL_PROTO=LL' "$LOG")" -eq 3
NCCL_ALGO=Ring run "$NW" "${T[@]}" --check-env --repeats 3 -q
expect_out "check-env: harmless settings do nothing" "they do nothing measurable here"
NCCL_ALGO=Ring FAKE_FAIL="NCCL_ALGO=Ring:exit" run "$NW" "${T[@]}" --check-env --repeats 3 -q
expect_out "check-env: failing settings said" "your settings fail: repeat 1: exit 3"

# --- the default itself fails, or the bench cannot be run: exit 3
FAKE_FAIL="DEFAULT=x:exit" run "$NW" "${T[@]}" --settings proto -q
expect_rc "default fails: exit 3" 3
expect_err "default fails: says so with stderr" "default run failed.*fake failure"
run "$NW" tune --bench-cmd /nonexistent/bench --settings proto -q --no-history
expect_rc "no bench: exit 3" 3
expect_err "no bench: names it" "cannot run '/nonexistent/bench'"
expect_no_crash "no bench: no crash"

# --- for real: the MPI host backend under mpirun, two ranks, a variable that changes nothing
if command -v mpirun >/dev/null 2>&1 && "$NW" help bench | grep -q -- '--backend'; then
	# Open MPI's own allocations at exit are not ours to chase under LeakSanitizer.
	ASAN_OPTIONS=detect_leaks=0 run "$NW" tune --launcher "${MPIRUN[*]} -np 2" --backend mpi --op all_reduce,all_gather \
		-b 8 -e 256K -f 8 -n 10 -w 2 --settings none --var NW_TUNE_HARMLESS=1,2 --repeats 3 --budget 40s \
		--no-history --env-out "$TMP/mpi.env" --json="$TMP/mpi.json"
	expect_rc "mpi: exit 0" 0
	expect_out "mpi: two ranks" "2 ranks .*backend mpi"
	expect_out "mpi: a table row per op and band" "^all_gather +medium \(64K-16M\) "
	expect_out "mpi: nothing to gain from a harmless variable" "defaults are best here|no difference within noise"
	expect_true "mpi: env file sets nothing" bash -c "! grep -q '^export' '$TMP/mpi.env'"
	# On a shared 2-core machine a harmless variant can look slower after 2
	# repeats and be pruned, or faster and go to confirmation, or be left out
	# for lack of time on a slow machine; it must never
	# be recommended, and the default must be measured fully.
	expect_true "mpi: default measured 3 times, no variant recommended" python3 -c "
import json
d=json.load(open('$TMP/mpi.json'))
assert d['nranks']==2 and d['backend']=='mpi', d
v={x['label']: x for x in d['variants']}
assert v['default']['status']=='measured' and v['default']['runs']>=3, v['default']
assert all(x['status'] in ('measured', 'pruned', 'skipped') for x in d['variants']), d['variants']
r=d['recommendation']
assert r.get('defaults_best') or not r.get('label'), r
"
else
	skip "mpi: tune over the MPI backend" "no mpirun or no MPI backend"
fi

# --- --no-history writes no database
expect_true "no-history: nothing recorded" test ! -e "$NCCLWATCH_DB"
