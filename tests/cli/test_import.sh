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
	env ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np 2 "$NW" bench --backend mpi --no-history -b 8 -e 64 >"$TMP/own2.txt" 2>"$TMP/own2.err"
	run "$NW" import --no-history "$TMP/own2.txt"
	expect_rc "our own 2-process table imports" 0
	expect_out "its rank count is 2, not the per-process nGpus" '^all_reduce,float,sum,-1,8,2,2,0,'
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
REF=${REFDIR:-}/h200x1-formats
if [ -n "${REFDIR:-}" ] && [ -d "$REF" ]; then
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
else
	skip "reference -J files" "no $REF"
fi
