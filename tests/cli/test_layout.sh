#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The house rules that a script can check (docs/hacking.md): every include
# edge between folders of src/ allowed by scripts/include-graph.allow (and
# docs/hacking.md's table is that list), no cycle, no function over 100
# lines, no file over 1,000 lines, every .c file opening with a comment.
. "$(dirname "$0")/lib.sh"
cd "$SRCDIR" || exit 1

# Files of src/ that may run over 1,000 lines, for good (shell patterns):
# mirrors of a vendor's ABI, declared whole and in the vendor's order so
# that they read against its headers line by line, and generated files
# (none yet).
LONG_OK=('src/*/*_abi.h')
# long_files ROOT: the files of ROOT/src over 1,000 lines, as src/...
long_files() { (cd "$1" && find src -name '*.[ch]' | sort | xargs wc -l | awk '$2 != "total" && $1 > 1000 {print $2}'); }
# bare_files ROOT: the .c files of ROOT/src whose first non-blank text is not a /* comment.
bare_files() {
	(cd "$1" && find src -name '*.c' | sort | while read -r f; do
		awk 'NF {exit !/^[ \t]*\/\*/} END {if (!NR) exit 1}' "$f" || echo "$f"
	done)
}
# matches FILE PATTERN...: FILE matches one of the shell patterns.
matches() { local f=$1 p; shift; for p; do [[ $f == $p ]] && return 0; done; return 1; }

run scripts/include-graph
expect_rc "every include edge between folders of src/ is allowed, and none makes a cycle" 0
# model may read plugin/nwstats.h, the layout-only header of the stats files (no code)
expect_out "model depends on util and the stats layout alone" '^model +-> (plugin )?util$'
expect_out "plugin depends on nothing" '^plugin +-> -$'
expect_no_out "comm does not include bench" '^comm .*bench'
run scripts/include-graph --table
expect_rc "the allow-list reads" 0
expect_true "docs/hacking.md's table is the allow-list (scripts/include-graph --table)" \
	python3 -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' "$OUT" docs/hacking.md

if command -v pmccabe >/dev/null; then
	run scripts/funcsize --max 100
	expect_rc "no function in src/ over 100 lines" 0
	expect_out "funcsize prints the median" 'median [0-9.]+ lines'
else
	skip "no function in src/ over 100 lines" "pmccabe is not installed (apt-get install pmccabe)"
fi

over=()
for f in $(long_files .); do matches "$f" "${LONG_OK[@]}" || over+=("$f"); done
RC=${#over[@]}; expect_rc "no file of src/ over 1,000 lines${over[*]:+ (but: ${over[*]})}" 0
bare=$(bare_files . | tr '\n' ' ')
expect_true "every .c file of src/ opens with a comment${bare:+ (not: $bare)}" test -z "$bare"

# The checks themselves, on trees made to break them.
mkdir -p "$TMP/tree/scripts" "$TMP/tree/src/a" "$TMP/tree/src/b"
cp scripts/include-graph scripts/include-graph.allow "$TMP/tree/scripts/"
echo '#include "b/x.h"' >"$TMP/tree/src/a/y.c"
echo '#include "a/y.h"' >"$TMP/tree/src/b/x.c"
run "$TMP/tree/scripts/include-graph"
expect_rc "include-graph fails on a cycle" 1
expect_err "include-graph names the folders of the cycle" 'a <-> b'
expect_err "include-graph names a folder the allow-list lacks" 'src/a/ is not in the allow-list'

mkdir -p "$TMP/edge/scripts"
cp scripts/include-graph scripts/include-graph.allow "$TMP/edge/scripts/"
cp -R src "$TMP/edge/"
echo '#include "store/store.h"' >>"$TMP/edge/src/gpu/cuda.c"
run "$TMP/edge/scripts/include-graph"
expect_rc "include-graph fails on an edge the allow-list does not allow" 1
expect_err "include-graph names the file, the include and what is allowed" \
	'src/gpu/cuda.c includes "store/store.h", but gpu may include only util'
printf 'util: -\nmodel: util parse\nparse: model util\n' >"$TMP/edge/upward.allow"
run "$TMP/edge/scripts/include-graph" --allow "$TMP/edge/upward.allow" --table
expect_rc "the allow-list itself may not point upwards (no cycle in it)" 1
expect_err "the upward item named" "model may include 'parse', which is not on a line above it"

mkdir -p "$TMP/sizes/src/x"
{ echo '/* big */'; seq 1000; } >"$TMP/sizes/src/x/big.c"
{ echo '/* a vendor ABI */'; seq 1000; } >"$TMP/sizes/src/x/vendor_abi.h"
printf '\n\n/*\n * says what it is\n */\nint x;\n' >"$TMP/sizes/src/x/ok.c"
printf '// not the house comment\nint y;\n' >"$TMP/sizes/src/x/slashes.c"
printf '#include "x/ok.h"\n/* too late */\n' >"$TMP/sizes/src/x/late.c"
: >"$TMP/sizes/src/x/empty.c"
found=()
for f in $(long_files "$TMP/sizes"); do matches "$f" "${LONG_OK[@]}" || found+=("$f"); done
expect_true "a file over 1,000 lines is found, an ABI mirror is not (${found[*]})" test "${found[*]}" = src/x/big.c
expect_true "a .c file without an opening /* comment is found ($(bare_files "$TMP/sizes" | tr '\n' ' '))" \
	test "$(bare_files "$TMP/sizes" | tr '\n' ' ')" = "src/x/empty.c src/x/late.c src/x/slashes.c "
