#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare's attribution: the change that matters is named first, per-launch
# identifiers of real mpirun launches are never a cause, noise at tiny sizes
# is "within noise", and runs that measure different things are refused.
source "$(dirname "$0")/lib.sh"
FIX=$SRCDIR/tests/fixtures/nccltests
FAKE=$NW_TESTS/fakegpu
DB=$TMP/h.db
unset NCCLWATCH_NCCL_LIB FAKE_NCCL_VERSION NCCL_ALGO NCCL_PROTO
export NCCLWATCH_CUDA_LIB=$FAKE/libcuda.so.1 FAKE_GPU_COUNT=2
bench() { "$NW" bench --db "$DB" --nccl-lib "$FAKE/libnccl.so.2" -b 8 -e 64K -n 5 -w 1 "$@"; }
# first_diff: the first line under "what differs"
first_diff() { sed -n '/^what differs/{n;p;q}' "$OUT"; }
# newest: the id of the newest recorded run
newest() { "$NW" history --db "$DB" --csv | tail -1 | cut -d, -f1; }

# Two launches of the same bench through mpirun: every OMPI_MCA_orte_*,
# ess and PMIx value differs, and none of them is a cause.
if command -v mpirun >/dev/null; then
	# -I 1: every iteration timed, so compare knows how far one launch's figures move by themselves
	mb() { NCCLWATCH_DB=$DB ASAN_OPTIONS=detect_leaks=0 "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi -b 1K -e 16K -n 20 -w 2 -I 1 >/dev/null 2>&1; }
	mb; mb
	m2=$(newest); m1=$((m2 - 1))
	run "$NW" compare --db "$DB" "$m1" "$m2"
	expect_rc "two mpirun launches of the same bench: no change, exit 0" 0
	# (on a CPU backend one launch's noise can still pass the spread at a size and read as faster: not a regression)
	expect_out "two mpirun launches: no regression" '^result: no regression[ ,]'
	sed -n '/^what differs/,/^in short/p' "$OUT" >"$TMP/diffs"
	expect_true "no launcher variable listed as a cause" sh -c "! grep -Eq '^  (OMPI_|PMIX_|PMI_).*[^)]$' '$TMP/diffs'"
	expect_out "nothing that matters differs" '^  nothing that matters recorded$'
	expect_out "per-launch identifiers counted, not cut" '^  and [0-9]+ more \(--show-all\): per-launch'
	expect_no_out "in short names no launcher variable" '^in short: .*(OMPI_|PMIX_)'
	expect_out "in short blames the machine" '^in short: no recorded difference'
	run "$NW" compare --db "$DB" "$m1" "$m2" --show-all
	expect_out "--show-all lists them" 'OMPI_MCA_orte_hnp_uri .* \(per-launch, never a cause\)'
	run "$NW" compare --db "$DB" "$m1" "$m2" --json
	expect_out "json keeps every difference" '"field": "env.OMPI_MCA_ess_base_jobid"'
	expect_out "json marks it per-launch" '"per_launch": true'
else
	skip "two mpirun launches" "mpirun is not installed"
fi

# One planted change at a time on the fake NCCL: it is named first.
bench >/dev/null 2>&1; base=$(newest)
FAKE_NCCL_VERSION=22703 bench >/dev/null 2>&1; id=$(newest)
run "$NW" compare --db "$DB" "$base" "$id"
expect_true "NCCL version: compared" test "$RC" -le 1
expect_true "NCCL version named first" sh -c "sed -n '/^what differs/{n;p;q}' '$OUT' | grep -q '^  NCCL 2.28.9 -> 2.27.3$'"
expect_out "NCCL version leads the short line" '^in short: NCCL 2\.28\.9 -> 2\.27\.3'
NCCL_ALGO=Ring bench >/dev/null 2>&1; id=$(newest)
run "$NW" compare --db "$DB" "$base" "$id"
RC=0; [ "$(first_diff)" = "  NCCL_ALGO=Ring set in B" ] || RC=1
expect_rc "NCCL_ALGO named first" 0
FAKE_GPU_COUNT=4 bench >/dev/null 2>&1; id=$(newest)
run "$NW" compare --db "$DB" "$base" "$id"
expect_rc "GPU count (and so ranks): not comparable, exit 3" 3
expect_out "not comparable said first" '^NOT COMPARABLE: 2 ranks -> 4 ranks; --force'
RC=0; [ "$(first_diff)" = "  GPUs 2 x Fake H200 -> 4 x Fake H200" ] || RC=1
expect_rc "GPU count named first" 0
run "$NW" compare --db "$DB" "$base" "$id" --force
expect_true "--force compares (0 or 1)" test "$RC" -le 1
expect_out "--force still warns" '^NOT COMPARABLE: .*compared anyway'

# A planted 33% drop with a planted topology change: the drop is found and
# the topology is the first difference. (The fake's noise on a busy test
# machine is not what this is about: the rows' measured noise is dropped.)
"$NW" history export "$base" --db "$DB" --json >"$TMP/a0.json"
python3 - "$TMP/a0.json" "$TMP/a.json" "$TMP/b.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r.pop("noise", None)
json.dump(d, open(sys.argv[2], "w"))
d["run"]["extra"]["fingerprint"]["topology_hash"] = "0123456789abcdef"
for r in d["results"]:
    if r["size_bytes"] >= 16384:
        r["time_us"] *= 1.5; r["algbw_gbs"] /= 1.5; r["busbw_gbs"] /= 1.5
json.dump(d, open(sys.argv[3], "w"))
EOF
run "$NW" compare "$TMP/a.json" "$TMP/b.json" --noise-floor 0
expect_rc "planted drop: regression" 1
expect_out "planted drop found" 'all_reduce float sum, out-of-place, 16K-64K \(3 sizes\): speed \(time\) -33\.3% on average'
RC=0; first_diff | grep -q '^  topology changed (hash [0-9a-f]* -> 0123456789abcdef)$' || RC=1
expect_rc "topology hash named first" 0

# Tiny sizes: two identical runs, one of them with an 8 B outlier in a repeat.
awk '!/^#/ && $1 == 8 { $6 = 400.00 } { print }' "$FIX/nt_all_reduce.txt" >"$TMP/outlier.txt"
cat "$FIX/nt_all_reduce.txt" "$TMP/outlier.txt" >"$TMP/a_rep.txt"
cat "$FIX/nt_all_reduce.txt" "$FIX/nt_all_reduce.txt" >"$TMP/b_rep.txt"
run "$NW" compare "$TMP/a_rep.txt" "$TMP/b_rep.txt"
expect_rc "an outlier in repeats is no regression" 0
expect_out "8 B within noise" '^ +8 +[0-9.]+ +[0-9.]+ +[0-9.]+us +[0-9.]+us +within noise  same'
expect_no_out "no absurd percentage" '[0-9]{5,}\.[0-9]%'
run "$NW" compare "$FIX/nt_all_reduce.txt" "$TMP/outlier.txt"
expect_out "a 30x jump reads as a time ratio (one latency-bound size alone: not counted)" \
	'^ +8 .* +3[0-9]x slower  same \(time, \+-20%; alone among unchanged sizes, not counted\)$'

# Host memory against GPUs: not comparable.
if command -v mpirun >/dev/null; then
	run "$NW" compare --db "$DB" "$base" "$m1"
	expect_rc "GPUs vs host: exit 3" 3
	expect_out "says which backends" '^NOT COMPARABLE: backend nccl \(GPUs\) -> mpi \(host memory\)'
fi
run "$NW" help compare
expect_out "usage documents exit 3" '3 the runs are not comparable'

# history: the environment summarised, columns aligned for any op list.
bench --op all_reduce,all_gather,reduce_scatter,broadcast,alltoall,sendrecv -e 1K >/dev/null 2>&1
run "$NW" history --db "$DB"
n=$(grep -o '^.*GB/s' "$OUT" | awk '{print length($0)}' | sort -u | wc -l); RC=$n
expect_rc "history list: the busbw column lines up" 1
expect_out "history list: busbw has its unit" '[0-9] GB/s '
if command -v mpirun >/dev/null; then
	run "$NW" history show "$m1" --db "$DB"
	expect_no_out "history show: no OMPI_MCA_ variable by default" '^  OMPI_MCA_'
	expect_out "history show: the rest counted" '^  and [0-9]+ more \(.*--env\)$'
	run "$NW" history show "$m1" --db "$DB" --env
	expect_out "history show --env: every variable" '^  OMPI_MCA_ess_base_jobid='
fi
run "$NW" history show "$base" --db "$DB"
expect_out "history show: units on figures" '^link +[0-9.]+ GB/s|^ranks +2$'

# compare --by: which NCCL version is fastest, one command.
run "$NW" compare --by nccl_version --db "$DB"
expect_rc "--by nccl_version" 0
expect_out "--by: a line per version" '^all_reduce +2\.27\.3 +1  [0-9.]+ \(run [0-9]+\)'
expect_out "--by: the other version" '^all_reduce +2\.28\.9 +[0-9]+  '
run "$NW" compare --by gpu --db "$DB" --json
expect_out "--by --json schema" '"schema": "ncclwatch.compare-by/1"'
expect_out "--by gpu groups GPU sets" '"group": "4 x Fake H200"'
run "$NW" compare --by colour --db "$DB"
expect_rc "--by an unknown field: usage error" 2
expect_err "--by names the fields" 'nccl_version, gpu or host'
run "$NW" compare --by host --db "$DB" 1 2
expect_rc "--by with runs: usage error" 2
