#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin's writer under attack: while a job (the plugin harness, 2 rank
# processes) runs, another process empties, truncates, rewrites, overwrites,
# replaces and removes its stats files in a loop. No rank may die (before
# the files were written through a mapping, the first truncation killed the
# job with SIGBUS), each says once that its file was damaged, and the final
# files hold exactly what was fed. scripts/plugin-torture 60 is the long run.
source "$(dirname "$0")/lib.sh"
export BUILD=${BUILD:-build} HARNESS=$NW_TESTS/plugin_harness PLUGIN=$NW_PLUGIN

run "$SRCDIR/scripts/plugin-torture" "${NW_PLUGIN_TORTURE_S:-4}"
expect_rc "files damaged in a loop under a live job: the job survives" 0
expect_out "the damage was done" "[1-9][0-9]* damaging actions"
expect_out "each rank says once that its file was damaged" "^  damage rank=1 said: ncclwatch: stats file .* from outside"
expect_out "final files hold exactly what was fed" "^  check ok scenario=normal abi=5 ranks=2"
expect_no_out "no rank crashed" "crashed|check FAIL"

# An emptied file: the job goes on and the next sync puts the figures back.
d=$TMP/empty; mkdir -p "$d"
"$HARNESS" --plugin "$PLUGIN" --dir "$d" --ranks 1 --ops 50 --hold-ms 1500 >"$TMP/e.out" 2>&1 &
hp=$!
for _ in $(seq 20); do ls "$d"/*.nws >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.3
for f in "$d"/*.nws; do : >"$f"; done
sleep 0.5
run "$NW_TESTS/nwstats_dump" "$d"
expect_out "an emptied file is written again while the job runs" "^rank file=.* state=live .* name=world rank=0 nranks=1 .* ops=450 "
wait $hp
RC=$?
expect_rc "an emptied file does not kill the job" 0
