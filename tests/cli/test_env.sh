#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncclwatch env: what to add to a job for the NCCL it will load (the
# plugin for 2.23+, the interposer for 2.18-2.22, nothing before), found
# beside the binary and in the install layout around it; shell, KEY=VALUE
# and JSON; and doctor's version.live check, which decides the same way.
source "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
unset NCCL_PROFILER_PLUGIN

run "$NW" env --nccl-lib "$FAKE/libnccl.so.2"
expect_rc "NCCL 2.28.9: lines printed" 0
expect_out "... the plugin, by its path beside the binary" "^export NCCL_PROFILER_PLUGIN=$(dirname "$NW")/libnccl-profiler-ncclwatch.so$"
expect_out "... and why, as a comment" "^# ncclwatch: NCCL 2.28.9 .* has profiler interface v5: the plugin "
run bash -c "eval \"\$('$NW' env --nccl-lib '$FAKE/libnccl.so.2')\" && echo \"got=\$NCCL_PROFILER_PLUGIN\""
expect_out "eval of the lines sets the variable" "^got=/.*/libnccl-profiler-ncclwatch.so$"
run "$NW" env --nccl-lib "$FAKE/libnccl.so.2" --format env
expect_out "--format env: KEY=VALUE" "^NCCL_PROFILER_PLUGIN=/.*/libnccl-profiler-ncclwatch.so$"
expect_true "--format env: nothing else on stdout" test "$(wc -l <"$OUT")" -eq 1
expect_err "--format env: why on stderr" "profiler interface v5"
run "$NW" env --nccl-lib "$FAKE/libnccl.so.2" --json
expect_rc "--json" 0
cp "$OUT" "$TMP/env.json"
run python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["schema"] == "ncclwatch.env/1" and d["mode"] == "plugin" and d["profiler_interface"] == 5 \
    and 5 in d["plugin"]["profiler_tables"] and d["env"]["NCCL_PROFILER_PLUGIN"] == d["file"] \
    and d["interposer"]["found"] and d["nccl"]["version"] == "2.28.9"
sys.exit(0 if ok else 1)' "$TMP/env.json"
expect_rc "--json: mode, interface, the plugin's tables, the variable" 0

# NCCLs of other versions: files that declare them
for v in 2.17.1 2.21.5 2.23.4; do printf 'NCCL version %s+cuda12.4\n' "$v" >"$TMP/libnccl-$v.so.2"; done
printf 'not a library\n' >"$TMP/libnccl-unknown.so.2"
run "$NW" env --nccl-lib "$TMP/libnccl-2.17.1.so.2"
expect_rc "NCCL 2.17: nothing to add" 1
expect_out "... and why" "older than 2.18: it has no profiler interface"
expect_no_out "... no export line" "^export"
# a binary with the plugin beside it but no interposer
mkdir -p "$TMP/bare/bin" "$TMP/bare/lib"
cp "$NW" "$TMP/bare/bin/"
cp "$NW_PLUGIN" "$TMP/bare/lib/"
run "$TMP/bare/bin/ncclwatch" env --nccl-lib "$TMP/libnccl-2.21.5.so.2"
expect_rc "NCCL 2.21 without the interposer installed" 1
expect_out "... says it is missing, and where it looked" "libncclwatch-interpose.so is not installed \(looked in $TMP/bare/bin"
run "$NW" env --nccl-lib "$TMP/libnccl-unknown.so.2"
expect_rc "an NCCL that does not say its version: the plugin anyway" 0
expect_out "... said" "does not say its version"
run "$NW" env --nccl-lib "$TMP/libnccl-2.23.4.so.2"
if nm -D "$NW_PLUGIN" 2>/dev/null | grep -q ' ncclProfiler_v1$'; then
	expect_out "NCCL 2.23: the plugin (it exports ncclProfiler_v1)" "has profiler interface v1: the plugin"
else
	expect_rc "NCCL 2.23 with a plugin without ncclProfiler_v1 and no interposer" 1
	expect_out "... says which table it lacks" "exports no ncclProfiler_v1 \(only v4, v5, v6"
fi

# installed: bin/ncclwatch, lib/ the plugin and the interposer
mkdir -p "$TMP/inst/bin" "$TMP/inst/lib"
cp "$NW" "$TMP/inst/bin/"
cp "$NW_PLUGIN" "$TMP/inst/lib/"
cp "$(dirname "$NW_PLUGIN")/libncclwatch-interpose.so" "$TMP/inst/lib/"
run "$TMP/inst/bin/ncclwatch" env --nccl-lib "$FAKE/libnccl.so.2"
expect_out "installed: the plugin from bin/../lib" "^export NCCL_PROFILER_PLUGIN=$TMP/inst/lib/libnccl-profiler-ncclwatch.so$"
run "$TMP/inst/bin/ncclwatch" env --nccl-lib "$TMP/libnccl-2.21.5.so.2"
expect_rc "NCCL 2.21 with the interposer installed" 0
expect_out "... LD_PRELOAD, before the job's own" "^export LD_PRELOAD=$TMP/inst/lib/libncclwatch-interpose.so\"\\$\\{LD_PRELOAD:\+:\\\$LD_PRELOAD\}\"$"
run env LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 ASAN_OPTIONS="$ASAN_ANY_ORDER" bash -c "eval \"\$('$TMP/inst/bin/ncclwatch' env --nccl-lib '$TMP/libnccl-2.21.5.so.2')\" && echo \"got=\$LD_PRELOAD\""
expect_out "eval: the interposer first, the job's preload kept" "^got=$TMP/inst/lib/libncclwatch-interpose.so:/lib/x86_64-linux-gnu/libm.so.6$"
run env LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 ASAN_OPTIONS="$ASAN_ANY_ORDER" "$TMP/inst/bin/ncclwatch" env --nccl-lib "$TMP/libnccl-2.21.5.so.2" --format env
expect_out "--format env: the whole value" "^LD_PRELOAD=$TMP/inst/lib/libncclwatch-interpose.so:/lib/x86_64-linux-gnu/libm.so.6$"

# bad input
run "$NW" env --nccl-lib "$TMP/none.so"
expect_rc "a --nccl-lib that does not exist" 2
run "$NW" env --format yaml
expect_rc "an unknown --format" 2
run "$NW" env stray
expect_rc "a stray argument" 2

# doctor's check decides the same way
run "$NW" doctor --only version.live --nccl-lib "$FAKE/libnccl.so.2"
expect_out "doctor: which mode a job here gets, and why" "version.live .*a job gets the plugin: NCCL 2.28.9"
run "$NW" doctor --only version.live --nccl-lib "$TMP/libnccl-2.17.1.so.2"
expect_out "doctor: an NCCL nothing can watch is a warning" "warn +version.live +no live monitoring: NCCL 2.17.1"
