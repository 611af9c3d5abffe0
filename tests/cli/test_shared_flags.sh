#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The flags that mean the same in every command (docs/cli.md), run against
# every command whose option table declares them (read from the binary:
# `ncclwatch help --options CMD`), so a new command is covered by itself:
#   --json[=FILE]  bare: the JSON on stdout, no text; =FILE: into FILE, text
#                  kept; the word after a bare --json is never its FILE
#   --csv[=FILE]   the same for CSV
#   --db PATH      the history database used
#   --no-history   nothing recorded (commands that record); refused, with
#                  the reason, by commands that only read
#   --quiet        nothing on stderr but warnings and errors
#   -O, --output   the file written
#   NO_COLOR       no colour escape on a terminal
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
NT=$FX/nccltests/nt_all_reduce.txt
LOG=$FX/logs/h200x1_default.log
export NCCLWATCH_DB=$TMP/h.db NCCLWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1
NOGPU=(--sysroot "$FX/sysfs/nogpu-vm")
mkdir -p "$TMP/nostats"
"$NW" import "$NT" >/dev/null 2>&1
"$NW" import "$NT" >/dev/null 2>&1

# base CMD: arguments with which CMD does its work here, without a GPU.
base() {
	case $1 in
	version | fleet | env) ;;
	run) echo --out "$TMP/runjob" ;;
	doctor | topo) echo "${NOGPU[@]}" ;;
	check) echo "${NOGPU[@]}" --backend mpi -b 1K -e 4K -n 2 -w 1 ;;
	logscan) echo "$LOG" ;;
	import) echo "$NT" ;;
	history) echo show 1 ;;
	compare) echo "$NT" "$NT" ;;
	report) echo "$NT" -O "$TMP/report.html" ;;
	bench) echo --backend mpi -b 1K -e 4K -n 2 -w 1 ;;
	tune) echo --bench-cmd "$NW_TESTS/fake_bench" --op all_reduce -b 8 -e 1K -f 8 ;;
	hang) echo --dir "$TMP/nostats" --no-ras ;;
	top | exporter) echo --once --dir "$TMP/nostats" ;;
	*) return 1 ;;
	esac
}
# What comes after the options: run's command (after '--', so that the flags added stay run's).
tail_of() {
	case $1 in
	run) echo -- true ;;
	esac
}
# What a command's own output looks like on stdout without --json/--csv (a line it always prints).
text_of() {
	case $1 in
	version) echo '^ncclwatch [0-9]' ;; doctor) echo 'checks: .* errors' ;; topo) echo '^Legend:' ;;
	logscan) echo 'NCCL' ;; history) echo 'busbw' ;; env) echo '^# ncclwatch: ' ;; check) echo 'CANNOT|PASS|FAIL|WARN' ;;
	bench) echo '^# +size|^ +1024 ' ;; tune) echo 'variant|best|default' ;; hang) echo '^read: ' ;;
	import) echo '^size_bytes|,all_reduce,|^all_reduce,' ;; compare) echo 'all_reduce' ;; *) echo '' ;;
	esac
}
parses() { python3 -m json.tool "$1" >/dev/null 2>&1; }
is_csv() { [ -s "$1" ] && head -1 "$1" | grep -q ',' && ! grep -q '^#' "$1"; }
# takes CMD LONG: whether CMD's table declares --LONG (shown or hidden)
takes() { "$NW" help --options "$1" | cut -f2 | grep -qx -- "$2"; }
kind_of() { "$NW" help --options "$1" | awk -F'\t' -v l="$2" '$2 == l { print $3 }'; }
usage_rc() { [ "$1" = check ] && echo 3 || echo 2; }

cmds=$("$NW" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p' | grep -vx help)
[ -n "$cmds" ]
expect_true "the command list is read from --help" [ -n "$cmds" ]

for c in $cmds; do
	if ! args=$(base "$c"); then
		RC=1; notok "$c: the shared-flag test knows how to run it" "add it to base() in $0"; continue
	fi
	# shellcheck disable=SC2206
	A=($args)
	# shellcheck disable=SC2207
	Z=($(tail_of "$c"))
	# Open MPI's own allocations outlive MPI_Finalize: the sanitizer build's leak check is for our code
	case $c in bench | check) export ASAN_OPTIONS=detect_leaks=0 ;; *) unset ASAN_OPTIONS ;; esac
	text=$(text_of "$c")

	if takes "$c" json; then
		run "$NW" "$c" "${A[@]}" --json "${Z[@]}"
		expect_true "$c --json: stdout is one JSON document" parses "$OUT"
		rm -f "$TMP/$c.json"
		run "$NW" "$c" "${A[@]}" "--json=$TMP/$c.json" "${Z[@]}"
		expect_true "$c --json=FILE: the file parses" parses "$TMP/$c.json"
		[ -z "$text" ] || expect_out "$c --json=FILE: the text stays on stdout" "$text"
		run "$NW" "$c" "${A[@]}" --json "$TMP/never-$c.json" "${Z[@]}"
		expect_true "$c --json WORD: WORD is not its file" test ! -e "$TMP/never-$c.json"
		RC=$(( RC != 0 )); expect_rc "$c --json WORD: refused before any work" 1
		expect_err "$c --json WORD: says to write --json=FILE" "--json=$TMP/never-$c.json"
		run "$NW" "$c" "${A[@]}" --json=/nonexistent/dir/x.json "${Z[@]}"
		expect_rc "$c --json=FILE in a missing directory: refused" "$(usage_rc "$c")"
		expect_err "$c --json=FILE in a missing directory: named" "'/nonexistent/dir' does not exist"
	fi

	if takes "$c" csv; then
		run "$NW" "$c" "${A[@]}" --csv "${Z[@]}"
		expect_true "$c --csv: stdout is CSV" is_csv "$OUT"
		rm -f "$TMP/$c.csv"
		run "$NW" "$c" "${A[@]}" "--csv=$TMP/$c.csv" "${Z[@]}"
		expect_true "$c --csv=FILE: the file is CSV" is_csv "$TMP/$c.csv"
		[ -z "$text" ] || [ "$c" = import ] || expect_out "$c --csv=FILE: the text stays on stdout" "$text"
		run "$NW" "$c" "${A[@]}" --csv "$TMP/never-$c.csv" "${Z[@]}"
		expect_true "$c --csv WORD: WORD is not its file" test ! -e "$TMP/never-$c.csv"
	fi

	if takes "$c" db; then
		db=$TMP/db-$c.db
		cp "$NCCLWATCH_DB" "$db"
		before=$("$NW" history --db "$db" --csv 2>/dev/null | wc -l)
		run "$NW" "$c" "${A[@]}" --db "$db" "${Z[@]}"
		expect_true "$c --db PATH: ran on that database" [ "$RC" -le 1 ]
		after=$("$NW" history --db "$db" --csv 2>/dev/null | wc -l)
		if [ "$(kind_of "$c" no-history)" = flag ]; then
			expect_true "$c --db PATH: recorded there" [ "$after" -gt "$before" ]
			run env NCCLWATCH_DB="$db" "$NW" "$c" "${A[@]}" --no-history "${Z[@]}"
			now=$("$NW" history --db "$db" --csv 2>/dev/null | wc -l)
			expect_true "$c --no-history: nothing recorded" [ "$now" -eq "$after" ]
			run "$NW" "$c" "${A[@]}" --db "$db" --no-history "${Z[@]}"
			expect_rc "$c --db with --no-history: refused" "$(usage_rc "$c")"
			expect_err "$c --db with --no-history: says they exclude each other" "exclude each other"
		else
			expect_true "$c --db PATH: nothing written to it" [ "$after" -eq "$before" ]
			run "$NW" "$c" "${A[@]}" --no-history "${Z[@]}"
			expect_rc "$c --no-history: refused by a command that only reads" "$(usage_rc "$c")"
			expect_err "$c --no-history: says why" "records nothing"
		fi
	fi

	if takes "$c" quiet; then
		run "$NW" "$c" "${A[@]}" --quiet "${Z[@]}"
		expect_true "$c --quiet: exits as without it" [ "$RC" -le 1 ]
		expect_true "$c --quiet: stderr has only warnings and errors" \
			bash -c '! grep -v -E "^ncclwatch: (warning|error): " "$1" | grep -q .' _ "$ERR"
	fi

	if takes "$c" output; then
		rm -f "$TMP/$c.out"
		run "$NW" "$c" "${A[@]}" -O "$TMP/$c.out" "${Z[@]}"
		expect_rc "$c -O FILE" 0
		expect_true "$c -O FILE: written" test -s "$TMP/$c.out"
		rm -f "$TMP/$c.out"
		run "$NW" "$c" "${A[@]}" --output="$TMP/$c.out" "${Z[@]}"
		expect_true "$c --output=FILE: written" test -s "$TMP/$c.out"
	fi

	# NO_COLOR: on a terminal (script(1) gives one), not one colour escape (SGR: ESC [ ... m)
	if command -v script >/dev/null && [ "$c" != report ]; then
		NO_COLOR=1 script -qec "$(printf '%q ' "$NW" "$c" "${A[@]}" "${Z[@]}")" /dev/null >"$TMP/tty.$c" 2>&1 </dev/null
		expect_true "$c with NO_COLOR on a terminal: no colour" bash -c '! grep -qP "\x1b\[[0-9;]*m" "$1"' _ "$TMP/tty.$c"
	fi
done

# Operands that are JSON files stay operands after a bare --json.
"$NW" import --no-history "--json=$TMP/in.json" "$NT" >/dev/null 2>&1
run "$NW" compare --json "$TMP/in.json" "$NT"
expect_rc "compare --json A.json B: A is a run, not the output file" 0
expect_true "compare --json A.json B: stdout is the comparison" parses "$OUT"
run "$NW" logscan --json "$LOG"
expect_true "logscan --json LOG: the log is read, JSON on stdout" parses "$OUT"
run "$NW" import --no-history "--json=$TMP/imp.json" --table "$NT"
expect_true "import --json=FILE --table: the file parses" parses "$TMP/imp.json"
expect_out "import --json=FILE --table: the table on stdout" '^# +size +count'
run "$NW" import --no-history --json --csv "$NT"
expect_rc "import --json --csv: both on stdout is refused" 2
expect_err "import --json --csv: says so" "both ask for standard output"

# help says it the same way in every command.
for c in $cmds; do
	takes "$c" json || continue
	run "$NW" help "$c"
	expect_out "help $c: the one --json line" '^  --json\[=FILE\] +JSON instead of text; with =FILE into FILE, text kept'
done
