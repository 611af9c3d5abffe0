#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench as a user runs it: flags refused by name, no GPU named as such,
# and the whole pipeline for real over MPI with 2 and 4 processes.
. "$(dirname "$0")/lib.sh"
export NCCLWATCH_CUDA_LIB=/nonexistent/libcuda.so.1

run "$NW" bench --no-history
expect_rc "no GPU: exit 3" 3
expect_err "no GPU: names the missing driver" "no NVIDIA driver: cannot open '/nonexistent/libcuda.so.1'"
expect_err "no GPU: says what to do instead" "backend mpi"
expect_no_crash "no GPU: no crash"

for bad in "-n abc" "-b 2G -e 1K" "--op all_reduce,frobnicate" "-d float17" "-o median" "-f 0.5" "-w -1" "-T 5x" "-b 1Q" "-a 7" "-t 0" "-t 65" "--backend cuda" "-n" "--nosuch"; do
	run "$NW" bench --no-history $bad
	expect_rc "refused: $bad" 2
done
run "$NW" bench -n abc; expect_err "-n abc named" "'abc' is not a whole number"
run "$NW" bench -b 2G -e 1K; expect_err "-b > -e named" "larger than -e"
run "$NW" bench --op all_reduce,frobnicate; expect_err "unknown op named" "frobnicate"
run "$NW" bench -d float17; expect_err "unknown type named" "float17"

run "$NW" help bench
expect_rc "help bench" 0
expect_out "help lists -G" "cudagraph"

# The MPI host backend: the same pipeline, for real, on CPUs.
# Open MPI leaks at exit by design; leak checking covers our code in the other tests.
mpi() { ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np "$1" "$NW" bench --backend mpi --no-history "${@:2}"; }
run mpi 2 --op all -b 8 -e 256K -f 4 -c 1 --json="$TMP/r2.json"
expect_rc "mpi np=2 all ops: exit 0" 0
expect_out "mpi np=2: nccl-tests header" "^#       size         count      type   redop    root     time   algbw   busbw  #wrong"
expect_out "mpi np=2: footer" "^# Avg bus bandwidth    : [0-9.]+ $"
for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
	expect_out "mpi np=2: $op section" "Collective test starting: ${op}_perf"
done
# Formulas and zero wrong elements, from the JSON every row carries.
check_json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); n = int(sys.argv[2])
f = {"all_reduce": 2*(n-1)/n, "all_gather": (n-1)/n, "reduce_scatter": (n-1)/n, "alltoall": (n-1)/n,
     "gather": (n-1)/n, "scatter": (n-1)/n, "broadcast": 1, "reduce": 1, "sendrecv": 1}
bad = 0
for r in doc["results"]:
    alg = r["size_bytes"] / 1e3 / r["time_us"]
    if abs(r["algbw_gbs"] - alg) > 1e-3 * max(1, alg) + 1e-3: bad += 1; print("algbw", r)
    if abs(r["busbw_gbs"] - alg * f[r["op"]]) > 1e-3 * max(1, alg) + 1e-3: bad += 1; print("busbw", r)
    if r["nranks"] != n: bad += 1; print("nranks", r)
    if r["wrong"] not in (0, None): bad += 1; print("wrong", r)
    if r["wrong"] is None and not (r["inplace"] and r["op"] in ("alltoall", "sendrecv")): bad += 1; print("unchecked", r)
ops = {r["op"] for r in doc["results"]}
if len(ops) != 9: bad += 1; print("ops", ops)
if doc["run"]["nranks"] != n or doc["run"]["backend"] != "mpi": bad += 1
sys.exit(1 if bad else 0)
PY
}
expect_true "mpi np=2: busbw formulas, zero wrong, every op" check_json "$TMP/r2.json" 2

run mpi 4 --op all -b 8 -e 64K -f 8 -d int8,int32,uint64,double -o sum,prod,min,max,avg -r all --json="$TMP/r4.json"
expect_rc "mpi np=4 all ops, types, redops, roots: exit 0" 0
expect_true "mpi np=4: busbw formulas, zero wrong" check_json "$TMP/r4.json" 4
expect_out "mpi np=4: root 3 rows" "^ +[0-9]+ +[0-9]+ +int8 +none +3 "

run mpi 4 --op all_reduce,sendrecv -b 1K -e 64K -f 4 --per-rank --csv="$TMP/r4.csv" --json="$TMP/r4p.json"
expect_rc "mpi np=4 per-rank: exit 0" 0
expect_out "per-rank: slowest rank named" "^#   out-of-place ranks: 0@.*slowest rank [0-3] .*spread"
expect_true "per-rank: CSV has 4 rank lines per row" bash -c "[ \$(grep -c ',1,$(hostname),-1$' '$TMP/r4.csv') -gt 0 ] && [ \$(grep -c ',all,,$' '$TMP/r4.csv') -eq \$(grep -c ',3,$(hostname),-1$' '$TMP/r4.csv') ]"
expect_true "per-rank: JSON ranks arrays of 4" python3 -c "
import json; d=json.load(open('$TMP/r4p.json'))
assert all(len(r['ranks'])==4 and sorted(x['rank'] for x in r['ranks'])==[0,1,2,3] for r in d['results'])"

run env ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi --no-history -d half
expect_rc "mpi: half refused (usage: exit 2)" 2
expect_err "mpi: half named" "'half' is not supported by the mpi backend"

run env ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi --no-history -t 2
expect_rc "mpi: -t 2 refused (usage: exit 2)" 2
expect_err "mpi: -t names the backend it needs" "-t 2 \(threads\) needs the NCCL backend"

# Table written to a file and JSON to stdout: no table mixed in.
run mpi 2 -b 1K -e 4K --json
expect_rc "json to stdout: exit 0" 0
expect_true "json to stdout parses" python3 -c "import json,sys; json.load(open('$OUT'))"

# Pairwise mode: every pair measured, verified, named when slow.
run mpi 4 --pairs -e 256K --json="$TMP/pairs.json"
expect_rc "pairs np=4: exit 0" 0
expect_out "pairs: matrix header" "^# ncclwatch pairs: send/recv of 256K both ways"
expect_out "pairs: median line" "^# median pair [0-9.]+ GB/s"
expect_true "pairs: 6 pairs, all verified" python3 -c "
import json; p=json.load(open('$TMP/pairs.json'))['run']['extra']['pairs']
assert len(p['pairs'])==6 and all(e['wrong']==0 for e in p['pairs']), p
assert len(p['busbw_gbs'])==4 and p['busbw_gbs'][1][0]==p['busbw_gbs'][0][1]"
run env ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 1 "$NW" bench --backend mpi --no-history --pairs
expect_rc "pairs with one rank refused (a usage error)" 2
expect_err "pairs: says why" "needs at least 2 ranks"

# Every bench is recorded in history (rank 0 records the whole run once).
run env NCCLWATCH_DB="$TMP/h.db" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi -b 1K -e 4K
expect_rc "recorded bench: exit 0" 0
expect_err "recorded bench: says the run id" "recorded as run 1"
run env NCCLWATCH_DB="$TMP/h.db" "$NW" history
expect_out "history lists the bench run once" "^ +1 .* bench +all_reduce"
expect_no_out "history: no second run" "^ +2 "

# --pairs with --op: the pairs first, then the sweep, in one run.
run mpi 2 --pairs --op all_reduce -b 1K -e 16K --json="$TMP/pairs_ops.json"
expect_rc "pairs + ops: exit 0" 0
expect_out "pairs + ops: the matrix" "^# ncclwatch pairs:"
expect_out "pairs + ops: the all_reduce table" "Collective test starting: all_reduce_perf"
expect_true "pairs + ops: both in the JSON" python3 -c "
import json; d=json.load(open('$TMP/pairs_ops.json'))
assert d['run']['extra']['pairs']['pairs'] and {r['op'] for r in d['results']}=={'all_reduce'}"

# -J: nccl-tests' own JSON, read by a reader written from nccl-tests' field list, shaped as the
# reference file nccl-tests wrote; its rows are the table's, and import reads it back to the same rows.
REF=$REFDIR/h200x1-formats
run mpi 2 -b 8 -e 1M -f 4 -J "$TMP/nt.json" --json="$TMP/ours.json"
expect_rc "-J: exit 0" 0
expect_out "-J: says where, as nccl-tests does" "^# Writing JSON output to $TMP/nt.json$"
cp "$OUT" "$TMP/nt_table.txt"
expect_true "-J: every field as nccl-tests' field list says" python3 "$SRCDIR/tests/cli/ntjson_reader.py" "$TMP/nt.json"
# like_ref NAME OURS REFFILE: OURS has the structure of the reference recording REFFILE, key for key.
like_ref() { expect_true "$1" python3 "$SRCDIR/tests/cli/ntjson_reader.py" "$2" --like "$REF/$3"; }
like_ref "-J: the reference nt_ar.json's structure, key for key" "$TMP/nt.json" nt_ar.json
expect_true "-J: two ranks listed, the table's rows and figures" python3 - "$TMP/nt.json" "$TMP/ours.json" <<'PY'
import json, sys
nt, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert nt["version"] == 3 and nt["args"][:2] == ["ncclwatch", "bench"], nt["args"]
assert [d["rank"] for d in nt["config"]["devices"]] == [0, 1], nt["config"]["devices"]
assert nt["config"]["minimum_bytes"] == 8 and nt["config"]["maximum_bytes"] == 1048576 and nt["config"]["step_factor"] == 4
rows = {(r["size_bytes"], r["inplace"]): r for r in ours["results"]}
assert len(nt["results"]) * 2 == len(rows) == 18, (len(nt["results"]), len(rows))
for r in nt["results"]:
    for p, ip in (("out_of_place", False), ("in_place", True)):
        o = rows[(r["size"], ip)]
        assert (r["count"], r["type"], r["redop"], r["root"]) == (o["count"], "float", "sum", "    -1"), r
        assert abs(r[p]["time"] - o["time_us"]) < 1e-3 and abs(r[p]["bus_bw"] - o["busbw_gbs"]) < 1e-3, (r, o)
        assert r[p]["nwrong"] == o["wrong"] == 0, r
assert nt["out_of_bounds"] == {"count": 0, "okay": "true"}
PY
run "$NW" import --table --no-history "$TMP/nt.json"
grep -E '^ +[0-9]' "$TMP/nt_table.txt" >"$TMP/want"
grep -E '^ +[0-9]' "$OUT" >"$TMP/got"
expect_true "-J: import reads it back to the table's rows" cmp -s "$TMP/want" "$TMP/got"
run mpi 2 --op all_gather,broadcast -b 1K -e 4K -f 2 -J "$TMP/two.json"
expect_rc "-J with two ops: exit 0" 0
expect_true "-J with two ops: one file each, named by op" python3 "$SRCDIR/tests/cli/ntjson_reader.py" "$TMP/two.all_gather.json"
expect_true "-J with two ops: broadcast's file has root and no redop" python3 -c "
import json; d = json.load(open('$TMP/two.broadcast.json'))
assert [r['redop'] for r in d['results']] == ['none'] * 3 and d['results'][0]['root'] == '     0', d['results'][0]"
run "$NW" bench --backend mpi --no-history -b 8 -e 64 -J "$TMP"
expect_rc "-J a directory: refused" 2
expect_err "-J a directory: named" "-J '$TMP' is a directory"

# -I 1 / -K: every iteration timed; nccl-tests' per-iteration columns and header, its JSON, ours, history.
run mpi 2 -b 8 -e 1M -f 4 -n 20 -I 1 -K 2 -J "$TMP/nti.json" --json="$TMP/oursi.json"
expect_rc "-I 1 -K 2: exit 0" 0
expect_out "-I 1: nccl-tests' report line" '^# Per-Iteration Report: host clock timing; i_\* uses max over process rows; summary skips first 2 iterations $'
expect_true "-I 1: rows of 21 columns" sh -c "test \$(grep -E '^ +[0-9]' '$OUT' | awk '{print NF}' | sort -u) = 21"
like_ref "-I 1 -J: the reference nt_ar_I.json's structure" "$TMP/nti.json" nt_ar_I.json
sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$REF/nt_ar_I.txt" >"$TMP/want"
sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$OUT" >"$TMP/got"
expect_true "-I 1: the reference's header lines, byte for byte" cmp -s "$TMP/want" "$TMP/got"
expect_true "-I 1: 20 times per row, summary of the last 18, in both JSONs" python3 - "$TMP/nti.json" "$TMP/oursi.json" <<'PY'
import json, sys
nt, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert nt["config"]["per_iter_timing"] == "true" and nt["config"]["per_iter_skip"] == 2
for r in nt["results"]:
    for p in ("out_of_place_per_iter", "in_place_per_iter"):
        pi = r[p]
        t = sorted(pi["times_us"][2:])
        assert len(pi["times_us"]) == 20 and pi["skipped_iterations"] == 2, pi
        assert abs(pi["min_us"] - t[0]) < 1e-3 and abs(pi["max_us"] - t[-1]) < 1e-3, pi
for r in ours["results"]:
    assert len(r["per_iter"]["times_us"]) == 20 and r["per_iter"]["skipped_iterations"] == 2, r
PY
run "$NW" import --table --no-history "$TMP/nti.json"
grep -E '^ +[0-9]' "$OUT" | cut -c1-80 >"$TMP/got"
expect_true "-I 1 -J: import reads it back (per-iteration columns too)" \
	sh -c "test \$(grep -E '^ +[0-9]' '$OUT' | awk '{print NF}' | sort -u) = 21 && test \$(wc -l <'$TMP/got') = 9"
run env NCCLWATCH_DB="$TMP/hi.db" ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi -b 1K -e 4K -n 10 -I 1
run "$NW" history show --db "$TMP/hi.db" 1
expect_out "-I 1: history keeps the per-iteration times" 'i_min    i_max    i_p99    i_cv%'
for bad in "-I 2" "-I 1 -G 2" "-n 5 -K 5" "-K x"; do
	run "$NW" bench --backend mpi --no-history $bad
	expect_rc "refused: $bad" 2
done
run "$NW" bench --backend mpi --no-history -n 5 -K 5
expect_err "-K >= -n named" '-K 5 skips every iteration of -n 5'

# like_ref NAME FILE: $OUT's three header lines are the reference FILE's byte for byte, its 1024 row as long.
like_ref() {
	sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$REF/$2" >"$TMP/want"
	sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$OUT" >"$TMP/got"
	expect_true "$1: the reference's header lines, byte for byte" cmp -s "$TMP/want" "$TMP/got"
	expect_true "$1: rows as long as the reference's" test "$(grep -E '^ +1024 ' "$OUT" | awk '{print length($0)}')" = \
		"$(grep -E '^ +1024 ' "$REF/$2" | head -1 | awk '{print length($0)}')"
}
# -S 1 and -z 1..3 in nccl-tests' line shapes (reference nt_ar_NSM.txt, nt_ar_z2.txt, nt_ar_z3.txt).
run mpi 2 -b 1K -e 4K -f 2 -S 1
expect_rc "-S 1: exit 0" 0
expect_out "-S 1: rows end with the time" '^ +1024 +256 +float +sum +-1 .* [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$'
like_ref "-S 1" nt_ar_NSM.txt
# -C 1: nccl-tests says "cputime" in both time columns (reference nt_sr_C.txt).
run mpi 2 --op sendrecv -b 1K -e 1M -f 4 -C 1
expect_rc "-C 1: exit 0" 0
expect_out "-C 1: cputime in the header" '^#  +size +count +type +redop +root +cputime +algbw +busbw +#wrong +cputime +algbw'
expect_out "-C 1: sendrecv's redop column says sum, as nccl-tests' does" '^ +1024 +256 +float +sum +-1 '
like_ref "-C 1" nt_sr_C.txt
for z in 1 2 3; do
	run mpi 2 -b 1K -e 64K -f 4 -z "$z" -c 1
	expect_rc "-z $z: exit 0, verified" 0
	if [ "$z" != 1 ]; then
		expect_true "-z $z: nccl-tests' blocking line" grep -qxF "$(grep '^# Blocking' "$REF/nt_ar_z$z.txt")" "$OUT"
	fi
	[ "$z" != 1 ] || expect_out "-z 1: its line" '^# Blocking Enabled: wait and barrier after each inner iteration \(-m\) $'
done
for bad in "-z 4" "-z 3 -G 2" "-S 2"; do
	run "$NW" bench --backend mpi --no-history $bad
	expect_rc "refused: $bad" 2
done

# nccl-tests' device API flags: refused by name, and help says so.
for f in D V; do
	run "$NW" bench --backend mpi --no-history -$f 1
	expect_rc "-$f 1: refused" 2
	expect_err "-$f 1: named, with what to do" "-$f \\(--device_[a-z_]+\\) is nccl-tests' device API: it needs device code .*use nccl-tests"
done
run "$NW" help bench
expect_out "help bench: -D and -V not here" '^not here: -D, -V'
