# SPDX-License-Identifier: Apache-2.0
# ncclwatch import: nccl-tests outputs into the result model, as a user runs it.
. tests/cli/lib.sh
FX=$SRCDIR/tests/fixtures/nccltests

# An output cut before its table: the error names the ranks and hosts its header listed.
CORPUS=$SRCDIR/tests/fixtures/corpus
run "$NW" import --no-history "$CORPUS/043-rccl-tests-2.18.3-mi50-k8s-pod-header.txt"
expect_rc "header only: exit 1" 1
expect_err "header only: ranks and host named" "header \\(4 ranks on 1 host: llama-cpp-amd-llamacpp-6cf97999cb-k5s4t\\) but no result table"
run "$NW" import --no-history "$CORPUS/012-nccl-tests-2node-v100-error-column-header.txt"
expect_err "header only, each process its own Rank 0: 2 ranks on 2 hosts" "header \\(2 ranks on 2 hosts: ip-172-31-20-228, ip-172-31-22-230\\)"
run "$NW" import --no-history "$CORPUS/068-nccl-tests-inside-json-log-k8s-soperator.txt"
expect_err "header only, device list cut: nThread x nGpus ranks" "header \\(8 ranks on 1 host: worker-1\\)"

# Every data row re-rendered from the model is byte-identical to the file's.
for f in "$FX"/nt_*.txt; do
	name=$(basename "$f" .txt)
	run "$NW" import --table "$f"
	expect_rc "import --table $name exits 0" 0
	grep -E '^ +[0-9]' "$f" >"$TMP/want"
	grep -E '^ +[0-9]' "$OUT" >"$TMP/got"
	expect_true "import --table $name rows byte-identical" cmp -s "$TMP/want" "$TMP/got"
	want_avg=$(sed -n 's/^# Avg bus bandwidth *: \([0-9.]*\).*/\1/p' "$f")
	got_avg=$(sed -n 's/^# Avg bus bandwidth *: \([0-9.]*\).*/\1/p' "$OUT")
	expect_true "import --table $name average $got_avg ~ $want_avg" \
		awk -v a="$got_avg" -v b="$want_avg" 'BEGIN { d = a - b; exit !(d < 0.002 && d > -0.002) }'
done

run "$NW" import "$FX/nt_all_reduce.txt"
expect_rc "import csv exits 0" 0
expect_out "csv header" '^op,dtype,redop,root,size_bytes,count,nranks,inplace,time_us,algbw_gbs,busbw_gbs,wrong$'
expect_out "csv 8 GB in-place row" '^all_reduce,float,sum,-1,8589934592,2147483648,2,1,24826.100,346.0000,346.0000,0$'
expect_true "csv has 62 rows" test "$(grep -c '^all_reduce,' "$OUT")" -eq 62

run "$NW" import --json "$FX/nt_sendrecv.txt"
expect_rc "import --json exits 0" 0
expect_true "json is valid and complete" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["run"]
assert d["schema"] == "ncclwatch.results/1"
assert (r["backend"], r["source"], r["nccl_version"], r["host"], r["gpus"], r["nranks"]) == ("nccl-tests", "import", "2.28.9", "vm", "2 x NVIDIA H200", 2), r
assert r["input"].endswith("nt_sendrecv.txt")
assert len(d["results"]) == 24 and d["results"][1]["wrong"] is None and d["results"][0]["wrong"] == 0
' "$OUT"

run "$NW" import --json "$FX/xf_six_concatenated.txt"
expect_true "several runs give an array of documents" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [x["results"][0]["op"] for x in d] == ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv"]
' "$OUT"

run "$NW" import --table - <"$FX/xf_all_reduce_ompi_tagged.txt"
expect_rc "stdin with [1,0]<stdout>: prefixes exits 0" 0
grep -E '^ +[0-9]' "$FX/nt_all_reduce.txt" >"$TMP/want"
grep -E '^ +[0-9]' "$OUT" >"$TMP/got"
expect_true "prefixed rows byte-identical" cmp -s "$TMP/want" "$TMP/got"

run "$NW" import "$SRCDIR/tests/fixtures/logs/h200x2_allreduce_info.log"
expect_rc "row cut by NCCL log lines exits 0" 0
expect_out "row rebuilt from pieces" '^all_reduce,float,sum,-1,67108864,16777216,2,0,261.740,256.4000,256.4000,0$'

printf 'hello\nworld\n' >"$TMP/notnt.txt"
run "$NW" import "$TMP/notnt.txt"
expect_rc "no table exits 1" 1
expect_err "no table says so" "no nccl-tests result table"
expect_err "unparsed lines counted" "2 lines not understood"

run "$NW" import /nonexistent/x.txt
expect_rc "missing file exits 2" 2
expect_err "missing file named" "cannot read '/nonexistent/x.txt'"

run "$NW" import
expect_rc "no argument exits 2" 2
run "$NW" import --bogus "$FX/nt_all_reduce.txt"
expect_rc "unknown option exits 2" 2
expect_err "unknown option named" "unknown option '--bogus'"

head -c 200000 /dev/urandom >"$TMP/rand.bin"
run "$NW" import "$TMP/rand.bin"
expect_no_crash "binary garbage does not crash"

# Outputs that do not name the collective: "unknown", or what --op says.
grep -v '^# Collective test' "$FX/nt_all_gather.txt" >"$TMP/noop.txt"
run "$NW" import "$TMP/noop.txt"
expect_out "op unknown when not said" '^unknown,float,none,-1,1024,'
run "$NW" import --op all_gather "$TMP/noop.txt"
expect_out "--op names it" '^all_gather,float,none,-1,1024,'

# ncclwatch's own table from several processes: the header's nThread/nGpus
# are per process (as nccl-tests'), the rank count comes from "(N ranks)".
if command -v mpirun >/dev/null; then
	env ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi --no-history -b 8 -e 64 >"$TMP/own2.txt" 2>"$TMP/own2.err"
	run "$NW" import --no-history "$TMP/own2.txt"
	expect_rc "our own 2-process table imports" 0
	expect_out "its rank count is 2, not the per-process nGpus" '^all_reduce,float,sum,-1,8,2,2,0,'
else
	skip "our own 2-process table imports" "mpirun is not installed (Debian: openmpi-bin)"
fi

# No size cap on text: two tables with 1088 MiB between them (a sparse run
# of NUL bytes, one over-long line) give both runs.
big=$TMP/big.txt
cat "$FX/nt_all_reduce.txt" >"$big"
truncate -s +1088M "$big"
{ echo; cat "$FX/nt_all_gather.txt"; } >>"$big"
run "$NW" import --no-history --json "$big"
expect_rc "1 GiB between two tables: exit 0" 0
expect_true "1 GiB between two tables: both runs" test "$(grep -c '"schema"' "$OUT")" -eq 2
rm -f "$big"

# A row missing its trailing columns is left out, never shifted; the run
# and a table without its footer are imported with a warning, marked incomplete.
sed '/^ *1024 /s/ *[0-9][0-9]* *$//' "$FX/nt_all_reduce.txt" >"$TMP/short.txt"
run "$NW" import --no-history --json "$TMP/short.txt"
expect_rc "row missing columns: still imported, exit 0" 0
expect_err "row missing columns: a warning" 'incomplete run imported \(rows missing columns'
expect_out "row missing columns: marked incomplete" '"incomplete": true'
expect_no_out "row missing columns: no shifted time" '"time_us": -1'
expect_no_out "row missing columns: the row is left out" '"size_bytes": 1024,'
grep -v 'Avg bus' "$FX/nt_all_reduce.txt" >"$TMP/nofooter.txt"
run "$NW" import --json "$TMP/nofooter.txt"
expect_err "table without footer: a warning" 'incomplete run imported \(the table has no footer'
expect_true "table without footer: history marks it incomplete" \
	sh -c "sqlite3 '$NCCLWATCH_DB' 'select extra from runs' 2>/dev/null | grep -q '\"incomplete\":true' || ! command -v sqlite3 >/dev/null"

# nccl-tests' own -J files (reference recordings): they read as nccl-tests' field list says, and
# import gives the same rows as the text tables nccl-tests printed in the same runs (-I 1 columns too).
REF=$REFDIR/h200x1-formats
for pair in nt_ar.json:nt_ar_J.txt nt_a2a.json:nt_a2a.txt nt_ar_I.json:nt_ar_I.txt; do
	j=${pair%%:*} t=${pair##*:}
	expect_true "reference $j reads by nccl-tests' field list" python3 "$SRCDIR/tests/cli/ntjson_reader.py" "$REF/$j"
	run "$NW" import --table --no-history "$REF/$j"
	expect_rc "import --table $j exits 0" 0
	grep -E '^ +[0-9]' "$REF/$t" >"$TMP/want"
	grep -E '^ +[0-9]' "$OUT" >"$TMP/got"
	expect_true "import of $j: the rows of $t, byte for byte" cmp -s "$TMP/want" "$TMP/got"
done
sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$REF/nt_ar_I.txt" >"$TMP/want"
run "$NW" import --table --no-history "$REF/nt_ar_I.json"
sed -n '/^#   *out-of-place/,/^#   *(B)/p' "$OUT" >"$TMP/got"
expect_true "import of nt_ar_I.json: nccl-tests' per-iteration header" cmp -s "$TMP/want" "$TMP/got"
run "$NW" import --json --no-history "$REF/nt_ar_I.json"
expect_true "import of nt_ar_I.json keeps every per-iteration time and the skip" python3 - "$OUT" "$REF/nt_ar_I.json" <<'PY'
import json, sys
ours, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = []
for r in ref["results"]:
    for p in ("out_of_place", "in_place"):
        pi = r[p + "_per_iter"]
        want.append((r["size"], p == "in_place", pi["skipped_iterations"], pi["times_us"], pi["min_us"], pi["p99_us"], pi["cv_pct"]))
got = [(r["size_bytes"], r["inplace"], r["per_iter"]["skipped_iterations"], r["per_iter"]["times_us"],
        r["per_iter"]["min_us"], r["per_iter"]["p99_us"], r["per_iter"]["cv_pct"]) for r in ours["results"]]
for w, g in zip(want, got):
    assert w[:4] == g[:4], (w, g)
    assert all(abs(a - b) < 1e-3 for a, b in zip(w[4:], g[4:])), (w, g)
assert len(want) == len(got) == 18, (len(want), len(got))
PY

# Issue 14, item 6: import keeps what the file says, and only that.
AR=$FX/nt_all_reduce.txt
jq_py() { python3 -c "import json, sys
d = json.load(open(sys.argv[1])); d = d if isinstance(d, list) else [d]
$1" "$OUT"; }
# one table repeating its size-0 rows (alltoall on 8+ ranks, -b 1) is one run
run "$NW" import --no-history --json "$CORPUS/117-nccl-tests-alltoall-repeated-zero-size-rows-h20.txt"
expect_true "repeated size-0 rows: one run, every row in file order" jq_py '
assert len(d) == 1, len(d)
s = [r["size_bytes"] for r in d[0]["results"]]
assert s[:10] == [0] * 10 and s[10] == 128 and s == sorted(s), s
assert d[0]["run"]["nranks"] is None, d[0]["run"]["nranks"]'
# consecutive tables each keep their own footer
{ sed 's/Out of bounds values : 0 OK/Out of bounds values : 3 FAILED/' "$AR"; cat "$AR"; } >"$TMP/two.txt"
run "$NW" import --no-history --json "$TMP/two.txt"
expect_true "consecutive tables: each its own footer" jq_py '
assert [x["run"]["extra"]["out_of_bounds_reported"] for x in d] == [3, 0], d'
# the old "error" column: its raw value kept, wrong derived from the footer
sed -e 's/#wrong/ error/g' -e 's/^\( *[0-9][^#]*\)       0\(.*\)       0$/\1   1e-07\2       0/' "$AR" >"$TMP/errcol.txt"
run "$NW" import --no-history --json "$TMP/errcol.txt"
expect_true "error column: raw values kept, wrong derived (0 OK footer)" jq_py '
x = d[0]["run"]["extra"]
assert x["error_column"] and x["error_values"][:2] == ["1e-07", "0"], x.get("error_values", [])[:4]
assert len(x["error_values"]) == len(d[0]["results"]) and all(r["wrong"] == 0 for r in d[0]["results"])'
# comment lines whose '#' was lost in pasting
sed 's/^# *//' "$AR" >"$TMP/nohash.txt"
run "$NW" import --no-history --json "$TMP/nohash.txt"
expect_true "'#' lost in pasting: version, op, ranks, host and footer still read" jq_py '
r = d[0]["run"]
assert len(d) == 1 and r["nccl_version"] == "2.28.9" and r["nranks"] == 2 and r["host"] == "vm", r
assert d[0]["results"][0]["op"] == "all_reduce" and r["extra"]["avg_busbw_reported"] == 111.374, r["extra"]'
expect_true "'#' lost in pasting: nothing left unread" sh -c '! grep -q "not understood" "$1"' _ "$ERR"
# the op from "Collective test concluded" when nothing else says it
grep -v 'Collective test starting' "$AR" >"$TMP/concluded.txt"
run "$NW" import --no-history "$TMP/concluded.txt"
expect_out "op from 'Collective test concluded'" '^all_reduce,float,sum'
# RCCL output is recognised and marked
sed 's/^# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809/# rccl-tests version 2.18.3 rccl-headers=22803 rccl-library=22803\nRCCL version : 2.28.3-gfx1151-rccl:a188cf2\nHIP version  : 7.12.60430/' "$AR" >"$TMP/rccl.txt"
run "$NW" import --db "$TMP/rccl.db" --json "$TMP/rccl.txt"
expect_true "RCCL: backend rccl-tests, its version apart from NCCL's" jq_py '
r = d[0]["run"]
assert r["backend"] == "rccl-tests" and r["extra"]["rccl"] is True and r["nccl_version"] == "", r
assert r["extra"]["rccl_version"] == "2.28.3" and r["extra"]["rccl_tests_version"] == "2.18.3", r["extra"]'
run "$NW" history export 1 --db "$TMP/rccl.db" --json
expect_out "RCCL: marked in history" '"backend": "rccl-tests"'
# the fingerprint comes from the file, never from the importing shell, its command line or clock
python3 "$SRCDIR/tests/cli/nt_text_to_json.py" "$AR" node7 NCCL_VERSION=2.28.3-1 NCCL_NVLS_ENABLE=0 >"$TMP/fp.json"
for f in "$TMP/fp.json" "$AR"; do
	"$NW" import --db "$TMP/fp1.db" "$f" >/dev/null 2>&1
	(cd / && env -i PATH="$PATH" TZ=Asia/Tokyo NCCL_ALGO=Tree NCCL_PROTO=LL SLURM_JOB_ID=7 NCCLWATCH_DB="$TMP/fp2.db" \
		"$NW" import "$f" >/dev/null 2>&1)
done
expect_true "fingerprint: the same file under two environments, clocks and directories gives the same one" python3 - "$TMP/fp1.db" "$TMP/fp2.db" <<'PY'
import json, sqlite3, sys
fps = []
for db in sys.argv[1:]:
    rows = sqlite3.connect(db).execute("SELECT extra FROM runs ORDER BY id").fetchall()
    fps.append([json.loads(r[0])["fingerprint"] for r in rows])
assert len(fps[0]) == 2 and fps[0] == fps[1], fps
j, t = fps[0]
assert j["env"] == {"NCCL_VERSION": "2.28.3-1", "NCCL_NVLS_ENABLE": "0"} and j["time"] == "2026-12-01 14:09:13", j
assert j["host"] == "node7" and j["cmdline"] == "./build/all_reduce_perf -g 2" and j["nranks"] == 2, j
assert t["env"] == {} and t["time"] == "" and t["cmdline"] == "" and t["host"] == "vm", t
PY
# a real old output (nccl-tests issue 37): '#' lost, 'error' column; the footer's FAILED stays with its rows
run "$NW" import --no-history --json "$CORPUS/137-nccl-tests-allgather-4g-oob-failed-lost-hash-nccl24.txt"
expect_true "old error column beyond float's bound: both placements wrong, the footer's count kept" jq_py '
x = d[0]["run"]["extra"]
assert [r["wrong"] for r in d[0]["results"]] == [1, 1] and x["error_values"] == ["1e+00", "1e+00"], d
assert x["out_of_bounds_reported"] == 2 and x["avg_busbw_reported"] == 128.942, x'
# rccl-tests' JSON records (--output_file, one object a line): a run per collective, out-of-place and in-place paired
run "$NW" import --no-history --json "$CORPUS/079-rccl-tests-json-lines-output.txt"
expect_rc "rccl-tests JSON lines: exit 0" 0
expect_true "rccl-tests JSON lines: one all_reduce run of 4 ranks, marked RCCL, rows paired by size" jq_py '
run, rows = d[0]["run"], d[0]["results"]
assert len(d) == 1 and run["nranks"] == 4 and run["backend"] == "rccl-tests" and run["extra"]["rccl"] is True, run
assert [(r["op"], r["size_bytes"], r["count"], r["inplace"], r["wrong"]) for r in rows] == [
    ("all_reduce", 1024, 256, False, 0), ("all_reduce", 1024, 256, True, 0), ("all_reduce", 2048, 512, False, 0),
    ("all_reduce", 2048, 512, True, 0), ("all_reduce", 4096, 1024, False, 0)], rows
assert rows[0]["time_us"] == 19.18415, rows[0]'
printf '%s\n' '{"#wrong":"0","algBw":1,"busBw":1.5,"gpus":2,"inPlace":0,"name":"Broadcast","redop":"none","size":8,"time":5,"type":"float"}' \
	'{"#wrong":"0","algBw":1,"busBw":1.5,"gpus":2,"inP' \
	'{"#wrong":"0","algBw":1,"busBw":1.5,"gpus":2,"inPlace":1,"name":"Broadcast","redop":"none","size":8,"time":5,"type":"float"}' >"$TMP/rccl.json"
run "$NW" import --no-history --csv - <"$TMP/rccl.json"
expect_rc "rccl-tests JSON lines with a cut line: the rest imported" 0
expect_err "rccl-tests JSON lines with a cut line: counted" "1 line not understood"
expect_out "rccl-tests JSON lines from stdin: broadcast rows" "^broadcast,float,none,-1,8,2,2,1,"
run "$NW" import --no-history --table "$CORPUS/137-nccl-tests-allgather-4g-oob-failed-lost-hash-nccl24.txt"
expect_out "the table's summary line: an unknown rank count is '?', not 0" '^# nranks \?  '
run "$NW" import --no-history "$CORPUS/137-nccl-tests-allgather-4g-oob-failed-lost-hash-nccl24.txt"
expect_out "CSV: an unknown rank count is an empty field, not 0" '^all_gather,float,none,-1,4294967296,134217728,,0,29122.000,'
# MPICH's and Intel MPI's -prepend-rank ("[0] " on every line and inside rows): every row read
run "$NW" import --no-history "$SRCDIR/tests/fixtures/nccltests/xf_all_reduce_impi_prepend_rank.txt"
expect_rc "-prepend-rank tags: exit 0" 0
expect_out "-prepend-rank tags: rows read past the tag inside them" "^all_reduce,float,sum,-1,8,2,2,"
expect_true "-prepend-rank tags: nothing left unread" sh -c '! grep -q "not understood" "$1"' _ "$ERR"
# two tables, no header between them: each its own run with its own footer
run "$NW" import --no-history --json "$SRCDIR/tests/fixtures/nccltests/xf_two_tables_first_failed_no_header.txt"
expect_true "two tables without headers: their own footers" jq_py '
assert len(d) == 2, len(d)
assert d[0]["run"]["extra"]["out_of_bounds_reported"] == 2 and d[1]["run"]["extra"]["out_of_bounds_reported"] == 0, d
assert [r["wrong"] for r in d[0]["results"]] == [1, 1] and d[1]["run"]["extra"]["avg_busbw_reported"] == 110.683'
# NCCL's banner in an nccl-tests output: the run's version
run "$NW" import --no-history --json "$CORPUS/018-nccl-tests-h800-broadcast-2gpu-warn.txt"
expect_true "NCCL's banner inside the output: the run's NCCL version" jq_py 'assert d[0]["run"]["nccl_version"] == "2.19.4", d[0]["run"]'
# a directory: said so, with what to do
run "$NW" import --no-history "$SRCDIR/tests/fixtures/nccltests"
expect_rc "a directory: a read error" 2
expect_err "a directory: said so, and what to give instead" "is a directory: name the nccl-tests outputs in it"
