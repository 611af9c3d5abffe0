#!/usr/bin/env bash
# --json [FILE], one rule in every command with JSON output (docs/cli.md):
# --json alone puts the JSON document on stdout instead of the text;
# --json=FILE (or --json FILE.json) puts it in FILE and the text stays on
# stdout. Each form must give a document that parses.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
NT=$FX/nccltests/nt_all_reduce.txt
LOG=$FX/logs/h200x1_default.log
export NCCLWATCH_DB=$TMP/h.db NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1
NOGPU=(--sysroot "$FX/sysfs/nogpu-vm")
"$NW" import --no-history "$NT" >/dev/null 2>&1
"$NW" import "$NT" >/dev/null 2>&1
"$NW" import "$NT" >/dev/null 2>&1

parses() { python3 -m json.tool "$1" >/dev/null 2>&1; }

# check_both NAME TEXT_REGEX CMD...: --json alone (stdout parses, no text), then
# --json=FILE and --json FILE.json (the file parses, the text on stdout).
check_both() {
	local name=$1 text=$2
	shift 2
	run "$NW" "$@" --json
	expect_true "$name --json: stdout is one JSON document" parses "$OUT"
	run "$NW" "$@" "--json=$TMP/$name.eq.json"
	expect_true "$name --json=FILE: the file parses" parses "$TMP/$name.eq.json"
	[ -z "$text" ] || expect_out "$name --json=FILE: the text stays on stdout" "$text"
	rm -f "$TMP/$name.sp.json"
	run "$NW" "$@" --json "$TMP/$name.sp.json"
	expect_true "$name --json FILE.json: the file parses" parses "$TMP/$name.sp.json"
	[ -z "$text" ] || expect_out "$name --json FILE.json: the text stays on stdout" "$text"
}

check_both version '^ncclwatch [0-9]' version
check_both doctor 'checks: .* errors' doctor "${NOGPU[@]}"
check_both topo '^Legend:' topo "${NOGPU[@]}"
check_both logscan 'NCCL' logscan "$LOG"
check_both history-list '^ +ID|^ *[0-9]+ ' history list
check_both history-show 'busbw' history show 1
check_both check 'CANNOT|PASS|FAIL' check "${NOGPU[@]}" --no-bench --no-history
check_both bench '^# +size|^ +1024 ' bench --backend mpi --no-history -b 1K -e 4K -n 2 -w 1
check_both tune 'variant|best|default' tune --bench-cmd "$NW_TESTS/fake_bench" --op all_reduce -b 8 -e 1K -f 8 --no-history
check_both fleet '' fleet # no check runs: the text is a note on stderr
mkdir -p "$TMP/nostats"
check_both hang '^read: ' hang --dir "$TMP/nostats" --no-ras

# compare and import take JSON files as operands: there only --json=FILE names a file.
run "$NW" compare "$NT" "$NT" --json
expect_true "compare --json: stdout is one JSON document" parses "$OUT"
run "$NW" compare "$NT" "$NT" "--json=$TMP/cmp.json"
expect_true "compare --json=FILE: the file parses" parses "$TMP/cmp.json"
expect_out "compare --json=FILE: the text stays on stdout" 'all_reduce'
"$NW" import --no-history "--json=$TMP/in.json" "$NT" >/dev/null 2>&1
run "$NW" compare --json "$TMP/in.json" "$NT"
expect_rc "compare --json A.json B: A is a run, not the output file" 0
expect_true "compare --json A.json B: stdout is the comparison" parses "$OUT"
run "$NW" import --no-history --json "$NT"
expect_true "import --json: stdout is one JSON document" parses "$OUT"
run "$NW" import --no-history "--json=$TMP/imp.json" --table "$NT"
expect_true "import --json=FILE: the file parses" parses "$TMP/imp.json"
expect_out "import --json=FILE: the table stays on stdout" '^# +size +count'

# The file is checked before the work, and a word that is no JSON file is not eaten.
run "$NW" bench --backend mpi --no-history --json=/nonexistent/dir/x.json
expect_rc "--json=FILE in a missing directory: refused before the run" 2
expect_err "--json=FILE in a missing directory: named" "--json '/nonexistent/dir/x.json': the directory '/nonexistent/dir' does not exist"
run "$NW" doctor "${NOGPU[@]}" --json "$TMP"/out.txt
expect_rc "--json out.txt: not taken as the file" 2
expect_err "--json out.txt: says how to name a file" "--json takes a file as --json=FILE or a name ending in .json"
run "$NW" logscan --json "$LOG"
expect_true "logscan --json LOG: the log is read, JSON on stdout" parses "$OUT"

# help says it the same way in every command.
for c in version doctor topo logscan history check bench tune fleet hang compare import; do
	run "$NW" help "$c"
	expect_out "help $c: the one --json line" 'JSON instead of text; into FILE, text kept \(docs/cli.md\)'
done
