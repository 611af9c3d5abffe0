# SPDX-License-Identifier: Apache-2.0
# ncclwatch logscan: every fixture log against its .expect, then bad input.
. tests/cli/lib.sh
FX=$SRCDIR/tests/fixtures/logs

for log in "$FX"/*.log; do
	name=$(basename "$log" .log)
	exp=$FX/$name.expect
	[ -f "$exp" ] || { RC=0; notok "$name has an .expect file" "add $exp"; continue; }
	"$NW" logscan --json "$log" >"$TMP/$name.json" 2>"$TMP/$name.err"
	jrc=$?
	"$NW" logscan "$log" >"$TMP/$name.txt" 2>>"$TMP/$name.err"
	trc=$?
	cp "$TMP/$name.txt" "$OUT"
	cp "$TMP/$name.err" "$ERR"
	RC=$trc
	expect_true "$name: --json and text agree on the exit status" test "$jrc" -eq "$trc"
	while IFS= read -r line; do
		case "$line" in '#'*|'') continue ;; esac
		kind=${line%% *}
		arg=${line#* }
		case "$kind" in
		exit) expect_rc "$name: exit $arg" "$arg" ;;
		diagnosis) expect_true "$name: diagnosis $arg" grep -q "\"id\": \"$arg\"" "$TMP/$name.json" ;;
		no-diagnosis) expect_true "$name: no diagnosis $arg" sh -c '! grep -q "$1" "$2"' - "\"id\": \"$arg\"" "$TMP/$name.json" ;;
		json) expect_true "$name: json /$arg/" grep -Eq -- "$arg" "$TMP/$name.json" ;;
		text) expect_true "$name: text /$arg/" grep -Eq -- "$arg" "$TMP/$name.txt" ;;
		*) RC=0; notok "$name: known expectation '$kind'" "in $exp" ;;
		esac
	done <"$exp"
done

# Several files at once, and stdin.
run "$NW" logscan "$FX/h200x2_allreduce_info.log" "$FX/xf_pdsh.log"
expect_rc "two files exit 0" 0
expect_out "two files: lines add up" '^740 lines'
run sh -c "\"$NW\" logscan - <\"$FX/h200x2_allreduce_info.log\""
expect_rc "stdin exits 0" 0
expect_out "stdin read" 'P2P/direct pointer'
run sh -c "\"$NW\" logscan --brief <\"$FX/h200x2_allreduce_info.log\""
expect_out "--brief keeps the diagnosis" '^Diagnosis'
expect_no_out "--brief drops the inventory" '^Communicators'

# Usage and I/O errors exit 2.
run "$NW" logscan /nonexistent/nccl.log
expect_rc "missing file exits 2" 2
expect_err "missing file named" "cannot open '/nonexistent/nccl.log'"
run "$NW" logscan --bogus "$FX/h200x2_allreduce_info.log"
expect_rc "unknown option exits 2" 2
run "$NW" logscan "$TMP"
expect_rc "a directory exits 2" 2
run "$NW" help logscan
expect_out "help lists --json" '--json'

# Anything else: never a crash, bounded output.
head -c 3000000 /dev/urandom >"$TMP/rand.bin"
run "$NW" logscan "$TMP/rand.bin"
expect_no_crash "binary garbage does not crash"
expect_rc "binary garbage: says it is no text, exit 3" 3
expect_err "binary garbage: could not read this as text" 'could not read this as text'
expect_no_out "binary garbage: no report of nothing wrong" 'none'

# Input that is no log is named, never "nothing wrong found"; exit 3.
: >"$TMP/empty.log"
run "$NW" logscan "$TMP/empty.log"
expect_rc "empty file: exit 3" 3
expect_err "empty file: no NCCL lines found" 'no NCCL lines found'
run "$NW" logscan "$SRCDIR/tests/fixtures/corpus/013-nccl-tests-rtx4090-8gpu-tree-header.txt"
expect_rc "nccl-tests output: exit 3" 3
expect_err "nccl-tests output: points at import" "nccl-tests output.*ncclwatch import"
expect_err "nccl-tests header only: the ranks and host it lists" "header lists 8 ranks on 1 host \\(gpu59\\)"
run "$NW" logscan --json "$SRCDIR/tests/fixtures/corpus/013-nccl-tests-rtx4090-8gpu-tree-header.txt"
expect_rc "nccl-tests output --json: exit 3" 3
expect_true "nccl-tests output --json: kind, verdict, ranks and hosts" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["input_kind"] == "nccl-tests" and "ncclwatch import" in d["verdict"], d
assert d["nranks"] == 8 and d["nhosts"] == 1 and d["hosts"] == ["gpu59"], d' "$OUT"
# old nccl-tests ("#   Rank  0 Pid"), each process its own "Rank 0": two ranks on two hosts, each ran alone
run "$NW" logscan --json "$SRCDIR/tests/fixtures/corpus/012-nccl-tests-2node-v100-error-column-header.txt"
expect_true "processes each listing Rank 0: as many ranks, their hosts, and the diagnosis" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nranks"] == 2 and d["nhosts"] == 2, d
assert [x["id"] for x in d["diagnoses"] if "rank 0" in x["message"]], d["diagnoses"]' "$OUT"
printf '\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-63\nGPU1\tNV12\t X \t0-63\n\nLegend:\n\n  X    = Self\n' >"$TMP/topo.txt"
run "$NW" logscan "$TMP/topo.txt"
expect_rc "topology matrix: exit 3" 3
expect_err "topology matrix: named" 'nvidia-smi topo -m'
run "$NW" logscan "$TMP/no-such-file.log"
expect_rc "missing file: exit 2" 2
expect_true "missing file: no report" test ! -s "$OUT"
run "$NW" logscan "$TMP"
expect_rc "a directory: exit 2" 2
expect_true "a directory: no report" test ! -s "$OUT"

# UTF-16 (with and without BOM) and CR-only copies of a watchdog log read like the original.
WD=$SRCDIR/tests/fixtures/corpus/008-watchdog-allreduce-lineno-torchrun.log
iconv -f UTF-8 -t UTF-16 "$WD" >"$TMP/wd16.log"
iconv -f UTF-8 -t UTF-16LE "$WD" >"$TMP/wd16le.log"
iconv -f UTF-8 -t UTF-16BE "$WD" >"$TMP/wd16be.log"
tr '\n' '\r' <"$WD" >"$TMP/wdcr.log"
# and both at once: UTF-16 (with BOM, and big-endian without) of the CR-only copy
iconv -f UTF-8 -t UTF-16 "$TMP/wdcr.log" >"$TMP/wd16cr.log"
iconv -f UTF-8 -t UTF-16BE "$TMP/wdcr.log" >"$TMP/wd16becr.log"
for v in wd16 wd16le wd16be wdcr wd16cr wd16becr; do
	run "$NW" logscan --json "$TMP/$v.log"
	expect_rc "$v copy of a watchdog log: exit 1" 1
	expect_out "$v copy: the watchdog timeout is found" '"watchdog-timeout"'
done

# A PyTorch error behind a pdsh prefix is an error; hostless NCCL lines are read.
printf 'node1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled cuda error, NCCL version 2.18.3\n' >"$TMP/pdsh.log"
run "$NW" logscan --json "$TMP/pdsh.log"
expect_rc "pdsh-prefixed PyTorch error: exit 1" 1
printf 'NCCL version 2.18.3+cuda12.2\n[2] NCCL INFO comm 0x5563 rank 2 nRanks 8 nNodes 1 localRanks 8 localRank 2 MNNVL 0\n' >"$TMP/hostless.log"
run "$NW" logscan --json "$TMP/hostless.log"
expect_rc "a banner and a line without host: read, exit 0" 0
expect_out "the bare banner's version is reported" '"version": "2.18.3\+cuda12.2"'
{ head -c 150000 /dev/zero; echo; head -c 200000 /dev/zero | tr '\0' 'x'; echo; cat "$FX/h200x2_allreduce_info.log"; } >"$TMP/nul.log"
run "$NW" logscan "$TMP/nul.log"
expect_rc "NUL bytes and 200 KB lines, then a log: exit 0" 0
expect_out "the log after them is still read" 'P2P/direct pointer +2 pairs'
expect_out "over-long lines are counted" '2 over-long lines cut'
head -c 20000 "$FX/h200x2_allreduce_info.log" >"$TMP/cut.log"
run "$NW" logscan "$TMP/cut.log"
expect_no_crash "truncated log does not crash"
expect_out "truncated log: init not complete is shown" 'init complete 0/2'

# docs/logscan.md lists every diagnosis id the binary can make.
run "$NW" logscan --list-diagnoses
expect_rc "--list-diagnoses exits 0" 0
expect_true "--list-diagnoses lists 10 or more rules" test "$(wc -l <"$OUT")" -ge 10
cut -f1 "$OUT" >"$TMP/ids"
while read -r id; do
	expect_true "docs/logscan.md lists $id" grep -q "| \`$id\` |" "$SRCDIR/docs/logscan.md"
done <"$TMP/ids"

# PyTorch's error, its NCCL error and the cause after "Last error:", under every
# launcher and logger prefix: the same two groups and the cause each time.
for p in "" "node1: " "3: " "[rank3]: " "[pod/trainer-0/pytorch] " "Aug 11 12:31:45 gpu01 python[803]: " \
	"2026-11-30T11:39:33.123+00:00 gpu01 python3[803]: " "Fri Aug 11 12:31:45 2023[1,0]<stdout>:"; do
	{
		echo "${p}torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3"
		echo "${p}ncclUnhandledCudaError: Call to CUDA function failed."
		echo "${p}Last error:"
		echo "${p}Cuda failure 'initialization error'"
	} >"$TMP/prefixed.log"
	run "$NW" logscan "$TMP/prefixed.log"
	expect_out "prefix '$p': PyTorch's error is one group" "1 x \[pytorch\] torch.distributed.DistBackendError"
	expect_out "prefix '$p': the NCCL error is one group" "1 x \[pytorch\] ncclUnhandledCudaError"
	expect_out "prefix '$p': the cause after 'Last error:' is kept" "last error: Cuda failure 'initialization error'"
done
