#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test that needs no GPU: cmocka unit binaries in $BUILD/tests,
# then tests/cli/test_*.sh (which print "ok - name" / "not ok - name").
# A check printed as "ok - name # skip: why" (lib.sh's skip) counts as
# skipped, named at the end. Ends with the line "N passed, N failed,
# N skipped" and a non-zero exit on failure. With arguments (or T=... from
# make: `make test T="test_logscan test_import"`), only the tests whose names
# are given run.
set -u
only=" $* "
want() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }
BUILD=${BUILD:-build}
export BUILD
export NW=${NW:-$PWD/$BUILD/ncclwatch}
export NW_PLUGIN=${NW_PLUGIN:-$PWD/$BUILD/libnccl-profiler-ncclwatch.so}
export NW_TESTS=$PWD/$BUILD/tests
export SRCDIR=$PWD
pass=0 fail=0 nskip=0 failed=() skipped=()
logdir=$(mktemp -d /tmp/nwtest.XXXXXX)
# No test may touch the user's own history or stats.
export XDG_DATA_HOME=$logdir/xdg NCCLWATCH_DB=$logdir/history.db NCCLWATCH_DIR=$logdir/stats

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	want "$name" || continue
	out="$logdir/$name.log"
	CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$out" 2>&1
	rc=$?
	p=$(grep -c '^\[       OK \]' "$out")
	f=$(grep -c '^\[  FAILED  \] [a-z_]' "$out" || true)
	[ "$f" -gt 0 ] 2>/dev/null || f=0
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	pass=$((pass + p)); fail=$((fail + f))
	if [ "$f" -gt 0 ]; then failed+=("$name"); echo "FAIL $name (log: $out)"; sed -n '1,200p' "$out" | grep -v '^\[       OK \]\|^\[ RUN      \]' | head -40; else echo "ok   $name ($p tests)"; fi
done

for s in tests/cli/test_*.sh; do
	[ -f "$s" ] || continue
	name=$(basename "$s" .sh)
	want "$name" || continue
	out="$logdir/$name.log"
	bash "$s" >"$out" 2>&1
	rc=$?
	p=$(grep -c '^ok - ' "$out")
	s=$(grep -c '^ok - .* # skip' "$out")
	p=$((p - s)); nskip=$((nskip + s))
	while IFS= read -r l; do skipped+=("$name: ${l#ok - }"); done < <(grep '^ok - .* # skip' "$out")
	f=$(grep -c '^not ok - ' "$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$name exited $rc" >>"$out"; fi
	pass=$((pass + p)); fail=$((fail + f))
	if [ "$f" -gt 0 ]; then failed+=("$name"); echo "FAIL $name (log: $out)"; grep -A8 '^not ok' "$out" | head -60; tail -5 "$out"; else echo "ok   $name ($p checks$([ "$s" -gt 0 ] && echo ", $s skipped"))"; fi
done

echo
for k in "${skipped[@]}"; do echo "skipped: $k"; done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $nskip skipped"
[ "$fail" -eq 0 ]
