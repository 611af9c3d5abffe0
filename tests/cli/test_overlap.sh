# SPDX-License-Identifier: Apache-2.0
# Exposed communication (NCCLWATCH_OVERLAP=1): the real plugin, driven
# through its ABI by tests/helpers/plugin_harness, opens the fake CUPTI
# (tests/fakegpu/fake_cupti.c) through NCCLWATCH_CUPTI_LIB, as a user would
# point it at a CUPTI; the fake hands out kernel records laid out as CUDA
# 13's CUpti_ActivityKernel10 from a scenario file. The figures in the stats
# files must be exact to the nanosecond; top and the exporter show them; a
# CUPTI held by a profiler, a missing CUPTI and a window over its budget
# turn overlap off once, with one line, and the plugin goes on counting.
source tests/cli/lib.sh
H=$NW_TESTS/plugin_harness
CUPTI=$NW_TESTS/fakegpu/libcupti.so.13

# Timestamps as CUPTI gives them (ns, GPU clock); a 2 s window from T.
T=1764620000000000000
ms() { echo $((T + $1 * 1000000)); }
GEMM=_Z28sm90_xmma_gemm_bf16bf16_bf16f32v
AR=_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE
RS=ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL

scenario() { # scenario NAME LINES...: write $TMP/NAME.scn with a window [T, T+2s)
	local f=$TMP/$1.scn; shift
	echo "window $(ms 0) $(ms 2000)" >"$f"
	printf '%s\n' "$@" >>"$f"
}
# all_reduce under a GEMM: nothing exposed
scenario full "kernel $GEMM 7 $(ms 0) $(ms 1000)" "kernel $AR 13 $(ms 100) $(ms 400)" "kernel $AR 13 $(ms 500) $(ms 900)"
# GEMMs, then the all_reduce alone: all of it exposed
scenario none "kernel $GEMM 7 $(ms 0) $(ms 1000)" "kernel $AR 13 $(ms 1000) $(ms 1600)" "kernel $GEMM 7 $(ms 1600) $(ms 1900)"
# the all_reduce starts under the GEMM and runs 400 ms past it
scenario partly "kernel $GEMM 7 $(ms 0) $(ms 1000)" "kernel $AR 13 $(ms 800) $(ms 1400)"
# two compute streams, two NCCL streams, a kernel across the window's end
scenario streams "kernel $GEMM 7 $(ms 0) $(ms 300)" "kernel $GEMM 9 $(ms 200) $(ms 500)" \
	"kernel $GEMM 7 $(ms 900) $(ms 1000)" "kernel $AR 13 $(ms 400) $(ms 700)" "kernel $RS 21 $(ms 600) $(ms 950)" \
	"kernel $AR 13 $(ms 1500) $(ms 1600)" "kernel $RS 21 $(ms 1950) $(ms 2300)"

# harness_ovl NAME DIR SCENARIO [ENV...]: 2 ranks with overlap on, a window of 20 ms every 100 ms, held 1 s
harness_ovl() {
	local d=$2 s=$3; shift 3
	mkdir -p "$d"
	run env NCCLWATCH_OVERLAP=1 NCCLWATCH_OVERLAP_PERIOD_S=0.1 NCCLWATCH_OVERLAP_WINDOW_S=0.02 \
		NCCLWATCH_CUPTI_LIB="$CUPTI" NW_FAKE_CUPTI_SCENARIO="$s" "$@" \
		"$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 5 --hold-ms 1000 --check
}

# Off by default: the files say so, nothing else changes.
d=$TMP/off; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 3 --check
expect_rc "overlap off by default: the plugin runs as before" 0
expect_true "overlap off by default: state off in every file" \
	sh -c "! '$NW_TESTS/nwstats_dump' '$d' | grep '^ovl ' | grep -v ' state=1 '"

# scenario: wall_ns (the window's length of GPU time from its first kernel) compute_ns nccl_ns exposed_ns, exposed % of wall, of NCCL
while read -r name wall comp nccl exposed pw pn; do
	d=$TMP/$name
	harness_ovl "$name" "$d" "$TMP/$name.scn"
	expect_rc "$name: plugin runs, counts exact" 0
	"$NW_TESTS/nwstats_dump" "$d" | grep '^ovl .* rank=[01] ' | grep 'comm=5eed000000c0ffee' >"$TMP/$name.ovl"
	expect_true "$name: both ranks measured at least one window" [ "$(grep -c ' state=2 windows=[1-9]' "$TMP/$name.ovl")" = 2 ]
	expect_true "$name: wall, compute, NCCL and exposed time exact" \
		[ "$(grep -c " wall_ns=$wall compute_ns=$comp nccl_ns=$nccl exposed_ns=$exposed " "$TMP/$name.ovl")" = 2 ]
	run "$NW" top --once --all --dir "$d"
	expect_out "$name: top shows the exposed share per rank" \
		"^exposed communication: rank 1/2 \(world, pid [0-9]+ on [^)]+\): $pw% of wall time; NCCL kernels [0-9.]+%, $pn% of that exposed"
	run "$NW" exporter --once --all --dir "$d"
	cp "$OUT" "$TMP/$name.prom"
	ratio=$(sed -n 's/^ncclwatch_exposed_communication_ratio{[^}]*comm="5eed000000c0ffee",rank="1"[^}]*} //p' "$OUT")
	expect_true "$name: the exporter exports the ratio ($ratio)" \
		awk -v r="$ratio" -v e="$exposed" -v w="$wall" 'BEGIN { d = r - e / w; exit !(r != "" && d < 1e-9 && d > -1e-9) }'
	expect_true "$name: one series per process (not per communicator)" \
		[ "$(grep -c '^ncclwatch_nccl_kernel_seconds{' "$TMP/$name.prom")" = 2 ]
done <<'EOF'
full 2000000000 1000000000 700000000 0 0.0 0.0
none 2000000000 1300000000 600000000 600000000 30.0 100.0
partly 2000000000 1000000000 600000000 400000000 20.0 66.7
streams 2000000000 600000000 700000000 550000000 27.5 78.6
EOF
if command -v promtool >/dev/null; then
	expect_true "promtool check metrics accepts the overlap families" promtool check metrics <"$TMP/partly.prom"
else
	skip "promtool check metrics accepts the overlap families" "promtool is not installed (Debian package prometheus)"
fi
# collectives that never overlap: after 3 windows top says what to look at
run "$NW" top --once --all --dir "$TMP/none"
expect_out "collectives run alone: top's note names the knobs" \
	"^note: collectives run alone on rank 0/2 .*: check DDP bucket sizes \(bucket_cap_mb\), gradient_as_bucket_view, stream priorities$"
run "$NW" top --once --all --dir "$TMP/partly"
expect_no_out "partly overlapped: no 'run alone' note" "run alone"

# A profiler already holds CUPTI: one line per process, overlap stays off, the plugin goes on.
scenario busy busy
harness_ovl busy "$TMP/busy" "$TMP/busy.scn"
expect_rc "CUPTI in use: the plugin still counts every op" 0
expect_true "CUPTI in use: said once per process" [ "$(grep -c 'exposed communication off: CUPTI is in use by another tool' "$ERR")" = 2 ]
run "$NW" top --once --all --dir "$TMP/busy"
expect_out "CUPTI in use: top says why overlap is off" \
	"^exposed communication: rank 0/2 .*: off: CUPTI is in use by another tool \(a profiler"
run "$NW" exporter --once --all --dir "$TMP/busy"
expect_out "CUPTI in use: ncclwatch_overlap_enabled is 0" '^ncclwatch_overlap_enabled\{[^}]*rank="0"[^}]*\} 0$'
expect_no_out "CUPTI in use: no window figures" '^ncclwatch_exposed_communication_ratio'

# Activity cannot be enabled (another tool's activity buffers): off, once.
scenario enable "enable-fails"
harness_ovl enable "$TMP/enable" "$TMP/enable.scn"
expect_rc "activity enable fails: the plugin still counts every op" 0
expect_true "activity enable fails: said once per process" [ "$(grep -c 'kernel activity cannot be enabled' "$ERR")" = 2 ]

# A window that costs more than 1% of the period (30 ms of CPU for a 100 ms period): off after the
# second (the first also pays for CUPTI's start-up and is not held against the budget), once.
scenario budget "burn-ms 30" "kernel $AR 13 $(ms 800) $(ms 1400)"
harness_ovl budget "$TMP/budget" "$TMP/budget.scn"
expect_rc "over the budget: the plugin still counts every op" 0
expect_true "over the budget: said once per process" [ "$(grep -c 'exposed communication off: a window cost [0-9.]* ms of CPU, over the budget of 1.0 ms' "$ERR")" = 2 ]
expect_true "over the budget: two windows measured (the first is not held against it), then off" \
	[ "$("$NW_TESTS/nwstats_dump" "$TMP/budget" | grep -c '^ovl comm=5eed000000c0ffee .* state=3 windows=2 .*nccl_ns=600000000 ')" = 2 ]

# No CUPTI where NCCLWATCH_CUPTI_LIB points: off with the path named.
harness_ovl nolib "$TMP/nolib" "$TMP/partly.scn" NCCLWATCH_CUPTI_LIB="$TMP/nope/libcupti.so.13"
expect_rc "missing CUPTI: the plugin still counts every op" 0
expect_err "missing CUPTI: the line names the variable and the path" \
	"exposed communication off: cannot open NCCLWATCH_CUPTI_LIB='$TMP/nope/libcupti"

# Bad values are named, as for every NCCLWATCH_* variable (the plugin disables itself, NCCL runs on).
for bad in "NCCLWATCH_OVERLAP=yes|NCCLWATCH_OVERLAP='yes' is not 0 or 1" \
	"NCCLWATCH_OVERLAP_PERIOD_S=abc|NCCLWATCH_OVERLAP_PERIOD_S='abc' is not a number of seconds" \
	"NCCLWATCH_OVERLAP_WINDOW_S=40|NCCLWATCH_OVERLAP_WINDOW_S is more than half of NCCLWATCH_OVERLAP_PERIOD_S"; do
	d=$TMP/bad; rm -rf "$d"; mkdir -p "$d"
	run env "${bad%%|*}" "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 1 --ops 2
	expect_no_crash "${bad%%|*}: no crash"
	expect_err "${bad%%|*}: one line naming it" "disabled: ${bad#*|}"
done
