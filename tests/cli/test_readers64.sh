# SPDX-License-Identifier: Apache-2.0
# The readers at a node's scale: 8 jobs x 8 ranks (the real plugin driven
# through its ABI by tests/helpers/plugin_harness, one process per rank,
# every job a communicator of its own and a rank that arrives late) in one
# stats directory: top --once and exporter --once show every one of the 64
# ranks, with the calls and bytes each was fed, and each job's straggler;
# hang over one communicator of 64 ranks names the one that never arrived.
# scripts/bench-readers64 prints the time, memory and series of the same.
source tests/cli/lib.sh
H=$NW_TESTS/plugin_harness
HPID=
trap '[ -n "$HPID" ] && kill -KILL -- "-$HPID" 2>/dev/null; rm -rf "$TMP"' EXIT
D=$TMP/node
mkdir -p "$D"; chmod 700 "$D"
failed=0
for j in 0 1 2 3 4 5 6 7; do
	"$H" --plugin "$NW_PLUGIN" --dir "$D" --job "$j" --ranks 8 --ops 2 --late "$j" --late-us 3000 >"$TMP/fed$j" 2>"$TMP/fed$j.err" ||
		failed=$((failed + 1))
done
RC=$failed; expect_rc "8 jobs of 8 ranks fed the plugin" 0
cat "$TMP"/fed[0-7] >"$TMP/fed"

# fed LINES, top's table or the exporter's series: "comm rank op calls bytes" sorted, one line per
# communicator, rank and op; the exporter's per size bucket summed
fed_table() { sed -n 's/^fed comm=\([0-9a-f]*\) name=[a-z]* rank=\([0-9]*\) nranks=[0-9]* op=\([a-z_]*\) count=\([0-9]*\) bytes=\([0-9]*\)$/\1 \2 \3 \4 \5/p' "$1" | sort; }
top_table() { awk 'NR > 2 && length($1) == 16 && $1 ~ /^[0-9a-f]+$/ { r = $4; sub(/\*$/, "", r); print $1, r, $5, $7, $8 }' "$1" | sort; }
prom_table() {
	awk -F'[{}]' '/^ncclwatch_coll_(ops|bytes)_total\{/ {
		split($2, kv, ","); c = r = o = ""
		for (i in kv) { split(kv[i], p, "="); gsub(/"/, "", p[2]); if (p[1] == "comm") c = p[2]; if (p[1] == "rank") r = p[2]; if (p[1] == "op") o = p[2] }
		k = c " " r " " o; split($3, v, " ")
		if ($1 == "ncclwatch_coll_ops_total") n[k] += v[1]; else b[k] += v[1]
	} END { for (k in n) print k, n[k], b[k] }' "$1" | sort
}
fed_table "$TMP/fed" >"$TMP/want"
n=$(wc -l <"$TMP/want")
expect_true "the harness said what it fed: 8 x 8 world ranks and 64 solo ones ($n lines)" test "$n" -gt 128

run "$NW" top --once --dir "$D"
expect_rc "top --once over 128 stats files" 0
expect_out "top counts every file" "^ncclwatch top: '$D': 128 files \(0 live, 128 finished, 0 disabled, 0 stale, 0 bad\)"
top_table "$OUT" >"$TMP/top"
expect_true "top shows every rank's every op, with the calls and bytes it was fed" cmp -s "$TMP/want" "$TMP/top"
ranks=$(awk '$2 == "world" { r = $4; sub(/\*$/, "", r); print $1, r }' "$OUT" | sort -u | wc -l)
expect_true "top shows 64 ranks of the 8 jobs' communicators ($ranks)" test "$ranks" -eq 64
for j in 0 1 2 3 4 5 6 7; do
	grep -q "^straggler: communicator 5eed000${j}00c0ffee (world) rank $j " "$OUT" || failed=$((failed + 1))
done
RC=$failed; expect_rc "each job's late rank is its straggler" 0
run "$NW" top --once --dir "$D" --comm 5eed0003
expect_true "--comm picks one job's 8 ranks" test "$(awk '$2 == "world" { print $4 }' "$OUT" | sort -u | wc -l)" -eq 8

run "$NW" exporter --once --dir "$D"
expect_rc "exporter --once over 128 stats files" 0
expect_out "the exporter counts every file" '^ncclwatch_stats_files\{Hostname="[^"]*",state="finished"\} 128$'
prom_table "$OUT" >"$TMP/prom"
expect_true "the exporter has every rank's every op, with the calls and bytes it was fed" cmp -s "$TMP/want" "$TMP/prom"
n=$(grep -c '^ncclwatch_rank_info{.*comm_name="world"' "$OUT")
expect_true "one ncclwatch_rank_info for each of the 64 ranks ($n)" test "$n" -eq 64
n=$(grep -c '^ncclwatch_rank_lateness_seconds{' "$OUT")
expect_true "a lateness for each of the 64 ranks ($n)" test "$n" -eq 64
n=$(grep -c '^# TYPE ncclwatch_coll_ops_total ' "$OUT")
expect_true "each metric declared once, not once per file ($n)" test "$n" -eq 1

# hang over one communicator of 64 ranks, rank 37 never arriving
D=$TMP/hang
mkdir -p "$D"; chmod 700 "$D"
# (a session of its own: its 64 rank processes end with it)
NCCLWATCH_HANG_S=1 setsid "$H" --plugin "$NW_PLUGIN" --dir "$D" --ranks 64 --ops 3 --hold-ms 20000 --scenario hang-missing --late 37 \
	>"$TMP/hang.harness" 2>&1 &
HPID=$!
for _ in $(seq 150); do
	run env NCCLWATCH_HANG_S=1 "$NW" hang --dir "$D"
	[ "$RC" -eq 1 ] && break
	sleep 0.2
done
expect_rc "hang over 64 ranks: hung (exit 1)" 1
expect_out "hang: the communicator of 64 ranks, its op and sequence number" '^comm 5eed000000c0ffee "world", 64 ranks: hung at all_reduce seq 3'
expect_out "hang: rank 37 has not arrived" '^  not arrived \(1\):$'
expect_out "hang: named, with its last op" '^    rank 37 \(.* pid [0-9]+\): last all_reduce seq 2'
expect_out "hang: the other 63 wait inside" '^  inside \(63\): 0 1 2 .* 36 38 .* 63, waiting'
run "$NW" exporter --once --dir "$D"
n=$(grep -c '^ncclwatch_comm_hung{.*} 1$' "$OUT")
expect_true "the exporter says hung for all 64 ranks ($n)" test "$n" -eq 64
kill -KILL -- "-$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null; HPID=
