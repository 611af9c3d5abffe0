#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One option convention for every command (tune aside, for now): --opt value
# and --opt=value (and -ovalue for short options) are the same, options and
# operands mix, and a bad option exits 2 with one message naming it as typed.
source "$(dirname "$0")/lib.sh"
FX=$SRCDIR/tests/fixtures
NT=$FX/nccltests/nt_all_reduce.txt
H200=(--sysroot="$FX/sysfs/h200x2" --nvml-json="$FX/nvml/h200x2.json")
printf 'ELF\0NCCL version 2.28.9+cuda13.0\0' >"$TMP/libnccl.so.2"
CLEAN=(env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE -u NCCL_DEBUG -u MASTER_ADDR -u CUDA_VISIBLE_DEVICES
       -u NCCLWATCH_NVML_JSON -u NCCLWATCH_SYSROOT NCCLWATCH_NCCL_LIB="$TMP/libnccl.so.2")
EMPTY=$TMP/empty
mkdir -p "$EMPTY"
DB=$TMP/h.db

# bad_options CMD OPT [ARGS...]: with ARGS, an unknown option and OPT
# without its value each exit 2 with a message naming the option.
bad_options() {
	local cmd=$1 opt=$2 want=${USAGE_RC:-2}
	shift 2
	run "$NW" "$cmd" "$@" --no-such-option
	expect_rc "$cmd: unknown option exits $want" "$want"
	expect_err "$cmd: unknown option named" "unknown option '--no-such-option'; 'ncclwatch help $cmd' lists the options"
	run "$NW" "$cmd" "$@" "$opt"
	expect_rc "$cmd: $opt without a value exits $want" "$want"
	expect_err "$cmd: $opt without a value named" "option '$opt' needs a value; 'ncclwatch help $cmd' lists the options"
}

# compare
run "$NW" compare --tolerance=3 "$NT" --min-size=1M "$NT" --brief
expect_rc "compare: --tolerance=3 --min-size=1M" 0
expect_out "compare: --tolerance=3 taken" '^tolerance: busbw \+-3% '
expect_out "compare: --min-size=1M taken" '^left out: sizes below 1M$'
run "$NW" compare "$NT" "$NT" --latency-below=zz
expect_rc "compare: a bad --latency-below=zz exits 2" 2
expect_err "compare: and names it" "^ncclwatch: error: --latency-below: bad size 'zz'"
bad_options compare --tolerance "$NT" "$NT"

# report
run "$NW" report "$NT" -o"$TMP/r.html"
expect_rc "report: -oFILE" 0
expect_true "report: -oFILE wrote the page" test -s "$TMP/r.html"
run "$NW" report --svg="$TMP/r.svg" --op=all_reduce "$NT" --title="T"
expect_rc "report: --svg=FILE --op=OP" 0
expect_true "report: --svg=FILE wrote the chart" grep -q '<svg' "$TMP/r.svg"
run "$NW" report "$NT" -o "$TMP/r2.html" --tolerance=x
expect_rc "report: a bad --tolerance=x exits 2" 2
expect_err "report: and names it" "--tolerance"
bad_options report -o "$NT"

# import (records into $DB for history below)
run "$NW" import --db="$DB" --op=all_reduce "$NT"
expect_rc "import: --db=PATH --op=OP" 0
expect_err "import: recorded into --db=PATH" "recorded as run 1"
run "$NW" import --no-history --table=yes "$NT"
expect_rc "import: a value to a flag exits 2" 2
expect_err "import: and says so" "option '--table' takes no value"
bad_options import --op --no-history "$NT"

# history: sub-commands keep their shape; options go anywhere
run "$NW" history --db="$DB" --limit=1 --csv
expect_rc "history: --db=PATH --limit=1" 0
n=$(($(wc -l <"$OUT") - 1)); RC=$n; expect_rc "history: one run listed" 1
run "$NW" history show --db="$DB" 1 --csv
expect_rc "history show ID, options between" 0
expect_out "history show: the run's rows" '^all_reduce,'
run "$NW" history baseline before --db "$DB" 1
expect_rc "history baseline NAME ID, --db between" 0
run "$NW" history --db="$DB" --host=
expect_rc "history: an empty --host= exits 2" 2
expect_err "history: and names it" "option '--host' needs a value"
bad_options history --limit --db="$DB"

# check: judged from recorded results on the recorded 2xH200
run "${CLEAN[@]}" "$NW" check "${H200[@]}" --results="$FX/results/h200x2-check.json" --warn-below=0.9
expect_rc "check: --results=FILE --warn-below=0.9" 0
expect_out "check: PASS" "^ncclwatch check: PASS"
# check's usage errors exit 3 ("cannot check"), never 2 (FAIL): docs/check.md
run "$NW" check --iters=abc
expect_rc "check: a bad --iters=abc exits 3" 3
expect_err "check: names --iters as given" "^ncclwatch: error: --iters: 'abc' is not a whole number"
run "$NW" check -nabc
expect_err "check: names -n as given" "^ncclwatch: error: -n \\(--iters\\): 'abc' is not a whole number"
USAGE_RC=3 bad_options check --baseline

# top
run "$NW" top --once --dir="$EMPTY" --sort=busbw --interval=2s
expect_rc "top: --dir=DIR --sort=KEY --interval=S" 0
expect_out "top: the directory taken" "^ncclwatch top: '$EMPTY': 0 files"
run "$NW" top --once=yes
expect_rc "top: a value to a flag exits 2" 2
expect_err "top: and says so" "option '--once' takes no value"
bad_options top --dir --once

# exporter
run "$NW" exporter --once --dir="$EMPTY" --window=5s
expect_rc "exporter: --dir=DIR --window=S" 0
expect_out "exporter: metrics printed" '^# TYPE ncclwatch_'
bad_options exporter --listen --once --dir "$EMPTY"

# logscan: no option takes a value
run "$NW" logscan --brief "$FX/logs/h200x1_default.log"
expect_rc "logscan: --brief FILE" 0
run "$NW" logscan --brief=yes "$FX/logs/h200x1_default.log"
expect_rc "logscan: a value to a flag exits 2" 2
expect_err "logscan: and says so" "option '--brief' takes no value; 'ncclwatch help logscan' lists the options"
run "$NW" logscan --no-such-option "$FX/logs/h200x1_default.log"
expect_rc "logscan: unknown option exits 2" 2
expect_err "logscan: unknown option named" "unknown option '--no-such-option'"

# doctor, topo, version, bench
run "${CLEAN[@]}" "$NW" doctor "${H200[@]}" --only=env --json
expect_rc "doctor: --sysroot=DIR --nvml-json=FILE --only=GROUP" 0
expect_true "doctor: only the env checks" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["findings"] and all(f["id"].startswith("env.") for f in d["findings"])' "$OUT"
bad_options doctor --only
run "$NW" topo "${H200[@]}" -g1
expect_rc "topo: -g1" 0
expect_out "topo: one visible GPU" 'Expected busbw at large sizes \(1 visible GPU'
run "$NW" topo "${H200[@]}" --ngpus=0
expect_rc "topo: a bad --ngpus=0 exits 2" 2
expect_err "topo: and names --ngpus as given" "^ncclwatch: error: --ngpus: "
bad_options topo -g
run "$NW" version --nccl-lib=/nonexistent/libnccl.so.2
expect_rc "version: --nccl-lib=PATH" 0
expect_out "version: the path taken" "--nccl-lib '/nonexistent/libnccl.so.2'"
run "$NW" version stray
expect_rc "version: an operand exits 2" 2
expect_err "version: and names it" "unexpected argument 'stray'"
bad_options version --nccl-lib
run "$NW" bench --iters=abc
expect_rc "bench: a bad --iters=abc exits 2" 2
expect_err "bench: names --iters as given" "^ncclwatch: error: --iters: 'abc' is not a whole number"
bad_options bench -n
