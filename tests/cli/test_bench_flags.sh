#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench's -N (run cycles), -M (memory report), -u (unaligned buffers),
# -p (parallel init), -R (buffer registration), -y (the NULL stream), -x
# (CTA policy), -o mulsum and the -w default: on the fake CUDA and NCCL
# (tests/fakegpu/) and on the MPI host backend, line shapes compared with
# nccl-tests 2.19.6's own output (reference h200x1-formats/nt_ar_NSM.txt,
# nt_ar_R1.txt, nt_ar_R2.txt).
. "$(dirname "$0")/lib.sh"
FAKE=$NW_TESTS/fakegpu
REF=$REFDIR/h200x1-formats
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1
unset NCCLWATCH_NCCL_LIB FAKE_GPU_MEM FAKE_CUDA_FAIL FAKE_NCCL_FAIL FAKE_NCCL_CORRUPT FAKE_NCCL_HANG \
	FAKE_NCCL_ASYNC_ERROR FAKE_NCCL_VERSION FAKE_INIT_TIMEOUT_S FAKE_NCCL_REPORT_REG FAKE_NCCL_REPORT_CONFIG \
	FAKE_NCCL_REPORT_OPS
export FAKE_GPU_COUNT=4
bench() { "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" "$@"; }
# Each result row's shape: its fields with every run of digits made "9" (sizes and times differ, not the shape).
shapes() { grep -E '^ +[0-9]' "$1" | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}$/TS/; s/[0-9]+(\.[0-9]+)?/9/g' | awk '{$1=$1; print}'; }

# Bad values: exit 2, the option named by its long name too.
for bad in "-N -1:--run_cycles" "-N x:--run_cycles" "-R 3:--local_register" "-u x:--unalign" "-u -2:--unalign" \
	"-M 2:--memory" "-p 2:--parallel_init" "-y 2:--stream_null" "-x 3:--cta_policy" "-x -1:--cta_policy"; do
	args=${bad%%:*} long=${bad##*:}
	run bench $args
	expect_rc "refused: $args" 2
	expect_err "refused: $args names $long" "^ncclwatch: error: -[A-Za-z] \\($long"
done
run bench --run_cycles=-1
expect_rc "refused: --run_cycles=-1" 2

# -N 2 -S 1 -M 1, nccl-tests' nt_ar_NSM.txt: the rows twice (no second header), one footer, then the memory line.
run bench -g 1 -b 1K -e 4K -f 2 -N 2 -S 1 -M 1
expect_rc "fake NCCL -N 2 -S 1 -M 1: exit 0" 0
cp "$OUT" "$TMP/nsm.txt"
expect_true "-N 2: 6 rows, sizes 1K 2K 4K twice" test "$(grep -E '^ +[0-9]' "$TMP/nsm.txt" | awk '{print $1}' | tr '\n' ' ')" = \
	"1024 2048 4096 1024 2048 4096 "
expect_true "-N 2: one table header, one footer" test "$(grep -c '^#  *(B)' "$TMP/nsm.txt")$(grep -c '^# Avg bus' "$TMP/nsm.txt")" = 11
expect_out "-M 1: nccl-tests' memory line" \
	'^# GPU memory usage     : Initialization [0-9.]+ (B|KB|MB|GB) \| User-Allocated [0-9.]+ (B|KB|MB|GB) \| Collective [0-9.]+ (B|KB|MB|GB) \| Total  [0-9.]+ (B|KB|MB|GB)$'
expect_out "-M 1: the buffers counted (2 x 4 KiB)" 'User-Allocated 8.00 KB'
expect_out "header: nccl-tests' unalign field" '^# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2\(factor\) .* graph: 0 unalign: 0$'
shapes "$REF/nt_ar_NSM.txt" >"$TMP/want"
shapes "$TMP/nsm.txt" >"$TMP/got"
expect_true "-N 2 -S 1: rows shaped as nt_ar_NSM.txt's, cycle for cycle" cmp -s "$TMP/want" "$TMP/got"
# the tail: footer, concluded, memory line, '#'; the same lines in the same order
tail_shape() { sed -n '/^# Out of bounds/,$p' "$1" | sed -n '1,5p' | sed -E 's/:.*//'; }
expect_true "-M 1: the run ends as nt_ar_NSM.txt does" cmp -s <(tail_shape "$REF/nt_ar_NSM.txt") <(tail_shape "$TMP/nsm.txt")
expect_true "header: the nThread line's fields as nccl-tests'" test \
	"$(grep '^# nThread' "$REF/nt_ar_NSM.txt" | sed -E 's/[0-9]+//g')" = "$(grep '^# nThread' "$TMP/nsm.txt" | sed -E 's/[0-9]+//g')"
run bench -g 2 -b 1K -e 4K -f 2 -N 3 --json="$TMP/n3.json"
expect_rc "-N 3, 2 GPUs: exit 0" 0
expect_true "-N 3: --json has every cycle's rows and extra.cycles" python3 -c "
import json; d = json.load(open('$TMP/n3.json'))
assert [r['size_bytes'] for r in d['results'] if not r['inplace']] == [1024, 2048, 4096] * 3, d['results']
c = d['run']['extra']['cycles']; assert c == {'asked': 3, 'completed': 3, 'stopped': False}, c"

# -N 0 until Ctrl-C: stops after the current cycle, keeps every finished one (table, JSON, history).
DB=$TMP/n0.db
"$NW" bench --db "$DB" --nccl-lib "$FAKE/libnccl.so.2" -g 2 -b 1K -e 16K -f 2 -N 0 --json="$TMP/n0.json" \
	>"$TMP/n0.out" 2>"$TMP/n0.err" &
pid=$!
for _ in $(seq 100); do
	[ "$(grep -cE '^ +16384 ' "$TMP/n0.out" 2>/dev/null)" -ge 3 ] && break
	sleep 0.1
done
kill -INT "$pid"
wait "$pid"
RC=$?
expect_rc "-N 0, Ctrl-C: exit 0" 0
expect_true "-N 0, Ctrl-C: says it stops after the cycle" grep -q 'stopping after the current cycle' "$TMP/n0.err"
expect_true "-N 0, Ctrl-C: says how many cycles were kept" grep -Eq 'stopped after cycle [0-9]+ as asked .* finished cycles kept' "$TMP/n0.err"
expect_true "-N 0, Ctrl-C: whole cycles only, at least 3, and the footer" python3 -c "
import re
t = open('$TMP/n0.out').read(); sizes = [int(l.split()[0]) for l in t.splitlines() if re.match(r' +[0-9]', l)]
assert len(sizes) % 5 == 0 and len(sizes) >= 15 and sizes == [1024, 2048, 4096, 8192, 16384] * (len(sizes) // 5), sizes
assert '# Avg bus bandwidth' in t and '# Collective test concluded' in t"
expect_true "-N 0, Ctrl-C: the JSON keeps every finished cycle" python3 -c "
import json, re; d = json.load(open('$TMP/n0.json')); c = d['run']['extra']['cycles']
rows = sum(1 for l in open('$TMP/n0.out') if re.match(r' +[0-9]', l))
assert c['asked'] == 0 and c['stopped'] and c['completed'] * 5 == rows == len(d['results']) // 2, (c, rows)"
run env NCCLWATCH_DB="$DB" "$NW" history show 1 --json
expect_true "-N 0, Ctrl-C: recorded in history with every row" python3 -c "
import json; d = json.load(open('$OUT')); n = len(d['results']); c = d['run']['extra']['cycles']
assert n == c['completed'] * 10, (n, c)"

# -u: pointers moved, every result still verified (types of 1, 2, 4 and 8 bytes).
run bench -g 2 --op all -d int8,half,float,double -b 8 -e 16K -f 8 -u 3 -c 1
expect_rc "fake NCCL -u 3, every op and 4 types: exit 0, zero wrong" 0
expect_out "-u 3: the header says it" 'graph: 0 unalign: 3$'
expect_no_out "-u 3: no wrong element" '^ +[0-9].* [1-9][0-9]* *$'

# -R 1 and -R 2: buffers from ncclMemAlloc, registered, deregistered before the communicators go.
for r in 1 2; do
	FAKE_NCCL_REPORT_REG=1 run bench -g 2 -b 1K -e 1M -f 4 -R "$r" -c 1
	expect_rc "fake NCCL -R $r: exit 0, verified" 0
	fn=ncclCommRegister
	[ "$r" = 1 ] || fn=ncclCommWindowRegister
	expect_true "-R $r: 2 GPUs x send and recv registered with $fn" test "$(grep -c "rank [01]: $fn " "$ERR")" = 4
	expect_true "-R $r: each deregistered" test "$(grep -cE "rank [01]: ${fn/Register/Deregister} " "$ERR")" = 4
	expect_true "-R $r: none left open at destroy" sh -c "! grep -q 'still open' '$ERR'"
	shapes "$REF/nt_ar_R$r.txt" >"$TMP/want"
	shapes "$OUT" >"$TMP/got"
	expect_true "-R $r: rows shaped as nt_ar_R$r.txt's" cmp -s "$TMP/want" "$TMP/got"
done
FAKE_NCCL_REPORT_REG=1 run bench -g 2 -b 1K -e 1M -f 4 -R 2 -M 1
expect_out "-R 2 -M 1: ncclMemAlloc'd buffers counted (2 x 1 MiB and the padding)" 'User-Allocated 2.00 MB'
FAKE_NCCL_VERSION=22603 run bench -g 2 -b 1K -e 4K -R 2
expect_rc "-R 2 on NCCL 2.26: refused, exit 2" 2
expect_err "-R 2 on NCCL 2.26: named, with the version and what to do" \
	"-R 2 \(--local_register, symmetric\) needs NCCL 2.27 or newer \(ncclCommWindowRegister\); the NCCL loaded is 2.26.3 .*or -R 1"
FAKE_NCCL_VERSION=22603 run bench -g 2 -b 1K -e 4K -R 1 -c 1
expect_rc "-R 1 on NCCL 2.26: exit 0" 0
FAKE_NCCL_VERSION=21803 run bench -g 2 -b 1K -e 4K -R 1
expect_rc "-R 1 on NCCL 2.18: refused, exit 2" 2
expect_err "-R 1 on NCCL 2.18: named" "-R 1 \(--local_register, local\) needs NCCL 2.19 or newer .* 2.18.3"

# -p 1: with -t, each thread makes its own communicators.
run bench -t 2 -g 2 -p 1 -b 1K -e 64K -f 4 -c 1
expect_rc "fake NCCL -p 1 -t 2 -g 2: exit 0, verified" 0
expect_out "-p 1 -t 2 -g 2: 4 ranks" '^# nThread 2 nGpus 2 '
run bench -p 1 -b 1K -e 4K
expect_rc "fake NCCL -p 1 alone: exit 0" 0

# -w: nccl-tests 2.19.6's default, one warm-up launch per size
run bench -g 1 -b 1K -e 1K
expect_out "default -w: 1, as nccl-tests 2.19.6" '^# nThread 1 nGpus 1 .* warmup iters: 1 iters: 20 '

# -y 1: every collective on each context's NULL stream (nccl-tests' streams[i] = NULL), verified.
run bench -g 2 --op all -y 1 -b 8 -e 16K -f 4 -c 1
expect_rc "-y 1, every op: exit 0" 0
cp "$OUT" "$TMP/y1.txt"
expect_true "-y 1: zero wrong, busbw formulas" check_table "$TMP/y1.txt" 2
run bench -t 2 -g 2 -y 1 -b 1K -e 64K -f 8 -c 1 -z 1
expect_rc "-y 1 -t 2 -g 2 -z 1: exit 0, verified" 0
run bench -g 2 -y 1 -G 2
expect_rc "-y 1 -G 2: refused, exit 2" 2
expect_err "-y 1 -G 2: says a graph cannot capture the NULL stream" "-y 1 runs on the NULL \(legacy\) stream, which a CUDA graph cannot capture"

# -x: ncclConfig_t.CTAPolicy reaches NCCL as the fake reads it (2.28's config; 2.27's, smaller, on 2.27).
run env FAKE_NCCL_REPORT_CONFIG=1 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -b 1K -e 1K
expect_err "no -x: the 2.28 config, CTAPolicy unset" "^fake NCCL: rank 1: config size 80 version 22809 CTAPolicy unset$"
for x in 0 1 2; do
	run env FAKE_NCCL_REPORT_CONFIG=1 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -b 1K -e 1K -x $x
	expect_rc "-x $x on 2.28: exit 0" 0
	expect_true "-x $x: both ranks' communicators got CTAPolicy $x" \
		test "$(grep -c "^fake NCCL: rank [01]: config size 80 version 22809 CTAPolicy $x$" "$ERR")" = 2
done
run env FAKE_NCCL_VERSION=22703 FAKE_NCCL_REPORT_CONFIG=1 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	-g 2 -b 1K -e 1K -x 1
expect_rc "-x 1 on 2.27: exit 0" 0
expect_err "-x 1 on 2.27: 2.27's config (ending after nvlsCTAs), its version, CTAPolicy 1" \
	"^fake NCCL: rank 0: config size 72 version 22703 CTAPolicy 1$"
run env FAKE_NCCL_VERSION=22703 FAKE_NCCL_REPORT_CONFIG=1 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" \
	-g 2 -b 1K -e 1K
expect_no_err() { if grep -Eq -- "$2" "$ERR"; then notok "$1" "stderr has /$2/"; else ok "$1"; fi; }
expect_no_err "no -x on 2.27: ncclCommInitRank, as before" "config size"
run env FAKE_NCCL_VERSION=22703 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -x 2
expect_rc "-x 2 on 2.27: refused, exit 2" 2
expect_err "-x 2 on 2.27: names 2.28, the NCCL's version and path" "-x 2 \(--cta_policy, zero\) needs NCCL 2\.28 .* is 2\.27\.3 \(.*libnccl\.so\.2\)"
run env FAKE_NCCL_VERSION=22605 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -x 0
expect_rc "-x 0 on 2.26: refused, exit 2" 2
expect_err "-x 0 on 2.26: needs 2.27" "-x 0 \(--cta_policy, default\) needs NCCL 2\.27 or newer"

# -o mulsum: each rank's communicator makes its pre-multiplied sum per type (scalar 1 on even ranks, 2 on odd),
# verified on every type and root, destroyed before the communicators; with graphs and threads too.
run env FAKE_NCCL_REPORT_OPS=1 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 4 \
	--op all_reduce,reduce_scatter,reduce -d all -o mulsum -r all -b 8 -e 2K -f 16 -n 2
expect_rc "-o mulsum, every type and root: exit 0" 0
cp "$OUT" "$TMP/ms.txt"
expect_true "-o mulsum: zero wrong, busbw formulas" check_table "$TMP/ms.txt" 4
expect_out "-o mulsum: rows say mulsum, as nccl-tests" "^ +[0-9]+ +[0-9]+ +bfloat16 +mulsum +3 "
expect_no_out "-o mulsum: none on fp8, which NCCL refuses" " f8e(4m3|5m2) +mulsum "
expect_true "-o mulsum: one op per communicator and type but fp8 (3 collectives share it): scalar 1 on ranks 0 and 2, 2 on 1 and 3" \
	test "$(grep -c 'rank [02]: ncclRedOpCreatePreMulSum type [0-9]* scalar 1 ' "$ERR") $(grep -c 'rank [13]: ncclRedOpCreatePreMulSum type [0-9]* scalar 2 ' "$ERR")" = "$((10 * 2)) $((10 * 2))"
expect_true "-o mulsum: every op made is destroyed" test \
	"$(grep -c 'ncclRedOpCreatePreMulSum' "$ERR")" = "$(grep -c 'ncclRedOpDestroy' "$ERR")"
expect_no_err "-o mulsum: no communicator destroyed with an op still made" "still made"
run bench -g 2 -o mulsum -d f8e4m3
expect_rc "-o mulsum -d f8e4m3: refused, exit 3 (as -o avg on fp8)" 3
expect_err "-o mulsum -d f8e4m3: says NCCL does not support it, and what does" "NCCL does not support -o mulsum on f8e4m3; choose sum, prod, min or max"
run bench -g 2 -o mulsum -d float,int8 -b 8 -e 64K -f 8 -G 3
expect_rc "-o mulsum -G 3: exit 0" 0
cp "$OUT" "$TMP/msg.txt"
expect_true "-o mulsum -G 3: verified" check_table "$TMP/msg.txt" 2
run bench -t 2 -g 2 -o sum,mulsum -b 1K -e 16K -f 4
expect_rc "-o sum,mulsum -t 2 -g 2: exit 0" 0
cp "$OUT" "$TMP/mst.txt"
expect_true "-o sum,mulsum -t 2 -g 2: verified, 4 ranks" check_table "$TMP/mst.txt" 4
run env FAKE_NCCL_VERSION=21003 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -o mulsum
expect_rc "-o mulsum on NCCL 2.10: refused, exit 2" 2
expect_err "-o mulsum on 2.10: names what it needs and the NCCL loaded" "-o mulsum needs ncclRedOpCreatePreMulSum \(NCCL 2\.11\+\); the NCCL loaded is 2\.10\.3"
run env FAKE_NCCL_VERSION=21003 "$NW" bench --no-history --nccl-lib "$FAKE/libnccl.so.2" -g 2 -o all -b 1K -e 1K
expect_rc "-o all on NCCL 2.10: exit 0" 0
expect_true "-o all on NCCL 2.10: the five built-in reductions, no mulsum" test "$(grep -E '^ +[0-9]' "$OUT" | awk '{print $4}' | tr '\n' ' ')" = "sum prod max min avg "
run bench -g 2 -o all -b 1K -e 1K
expect_true "-o all: nccl-tests' six, mulsum last" test "$(grep -E '^ +[0-9]' "$OUT" | awk '{print $4}' | tr '\n' ' ')" = "sum prod max min avg mulsum "

# The MPI host backend: -N, -u and -p apply; -M, -R, -y, -x and -g are GPU-only, refused by name; mulsum is NCCL's.
if command -v mpirun >/dev/null; then
	mpi() { ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np "$1" "$NW" bench --backend mpi --no-history "${@:2}"; }
	run mpi 2 -b 1K -e 4K -f 2 -N 2 -S 1
	expect_rc "mpi -N 2 -S 1: exit 0" 0
	expect_true "mpi -N 2: the rows twice" test "$(grep -E '^ +[0-9]' "$OUT" | awk '{print $1}' | tr '\n' ' ')" = \
		"1024 2048 4096 1024 2048 4096 "
	shapes "$REF/nt_ar_NSM.txt" >"$TMP/want"
	shapes "$OUT" >"$TMP/got"
	expect_true "mpi -N 2 -S 1: rows shaped as nt_ar_NSM.txt's" cmp -s "$TMP/want" "$TMP/got"
	# -N 0 over MPI: Ctrl-C to rank 0 alone stops every rank after the same cycle
	ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi --no-history -b 1K -e 16K -N 0 \
		--json="$TMP/mn0.json" >"$TMP/mn0.out" 2>"$TMP/mn0.err" &
	mp=$!
	for _ in $(seq 300); do
		[ "$(grep -cE '^ +16384 ' "$TMP/mn0.out" 2>/dev/null)" -ge 2 ] && break
		sleep 0.1
	done
	r0=
	for c in $(ps -o pid= --ppid "$mp"); do
		tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && r0=$c
	done
	[ -n "$r0" ] && kill -INT "$r0"
	wait "$mp"
	RC=$?
	expect_rc "mpi -N 0, Ctrl-C to rank 0: every rank stops, exit 0" 0
	expect_true "mpi -N 0, Ctrl-C: the JSON keeps the finished cycles" python3 -c "
import json, re; d = json.load(open('$TMP/mn0.json')); c = d['run']['extra']['cycles']
rows = sum(1 for l in open('$TMP/mn0.out') if re.match(r' +[0-9]', l))
assert c['stopped'] and c['completed'] >= 2 and c['completed'] * 5 == rows == len(d['results']) // 2, (c, rows)"
	run mpi 2 --op all -d int8,double -b 8 -e 16K -f 8 -u 5 -c 1
	expect_rc "mpi -u 5, every op: exit 0, zero wrong" 0
	run mpi 2 -p 1 -b 1K -e 4K
	expect_rc "mpi -p 1: accepted, changes nothing" 0
	for f in "-M 1:--memory" "-R 1:--local_register" "-R 2:--local_register"; do
		# refused after MPI's set-up: Open MPI's own leaks at exit are not ours
		ASAN_OPTIONS=detect_leaks=0 run "$NW" bench --backend mpi --no-history ${f%%:*}
		expect_rc "mpi ${f%%:*}: refused, exit 2" 2
		expect_err "mpi ${f%%:*}: named as GPU-only" "${f%%:*} \(${f##*:}\) .* the mpi backend has none"
	done
	for f in "-y 1:--stream_null:has no stream" "-x 1:--cta_policy:has no NCCL communicator" \
		"-g 2:GPUs per process:runs one rank per process"; do
		IFS=: read -r flag name why <<<"$f"
		ASAN_OPTIONS=detect_leaks=0 run "$NW" bench --backend mpi --no-history $flag
		expect_rc "mpi $flag: refused, exit 2 (never ignored)" 2
		expect_err "mpi $flag: says why" "$flag \($name.* the mpi backend $why"
	done
	ASAN_OPTIONS=detect_leaks=0 run "$NW" bench --backend mpi --no-history -o mulsum
	expect_rc "mpi -o mulsum: refused, exit 2" 2
	expect_err "mpi -o mulsum: named as NCCL's" "-o mulsum is NCCL's pre-multiplied sum .*; the mpi backend has no such reduction"
	run mpi 2 -o all -b 1K -e 4K -f 4
	expect_rc "mpi -o all: exit 0" 0
	expect_true "mpi -o all: mulsum left out, as avg on fp8 with NCCL" test \
		"$(grep -E '^ +[0-9]' "$OUT" | awk '{print $4}' | sort -u | tr '\n' ' ')" = "avg max min prod sum "
else
	skip "mpi -N, -u, -p and GPU-only refusals" "mpirun is not installed (Debian: openmpi-bin)"
fi

run "$NW" help bench
for f in "-N, --run_cycles" "-M, --memory" "-u, --unalign" "-p, --parallel_init" "-R, --local_register" \
	"-y, --stream_null" "-x, --cta_policy"; do
	expect_out "help bench: $f" "^  $f "
done
