#!/usr/bin/env bash
# The house rules that a script can check (docs/hacking.md): no include
# cycle between folders of src/, no function over 100 lines.
. "$(dirname "$0")/lib.sh"
cd "$SRCDIR" || exit 1

run scripts/include-graph
expect_rc "no include cycle between folders of src/" 0
# model/progress.h reads the stats layout (plugin/nwstats.h: header only, no code)
expect_out "model depends on util (and the stats layout header) alone" '^model +-> (plugin )?util$'
expect_no_out "comm does not include bench" '^comm .*bench'

if command -v pmccabe >/dev/null; then
	run scripts/funcsize --max 100
	expect_rc "no function in src/ over 100 lines" 0
	expect_out "funcsize prints the median" 'median [0-9.]+ lines'
else
	skip "no function in src/ over 100 lines" "pmccabe is not installed (apt-get install pmccabe)"
fi

# the script itself finds a cycle when there is one
mkdir -p "$TMP/tree/scripts" "$TMP/tree/src/a" "$TMP/tree/src/b"
cp scripts/include-graph "$TMP/tree/scripts/"
echo '#include "b/x.h"' >"$TMP/tree/src/a/y.c"
echo '#include "a/y.h"' >"$TMP/tree/src/b/x.c"
run "$TMP/tree/scripts/include-graph"
expect_rc "include-graph fails on a cycle" 1
expect_err "include-graph names the folders of the cycle" 'a <-> b'
