# SPDX-License-Identifier: Apache-2.0
# NCCL RAS client (probe/ras) against a fake RAS port in every mode, through tests/helpers/ras_probe.
. tests/cli/lib.sh
FX=$SRCDIR/tests/fixtures/ras
trap 'for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# fake MODE ANSWER [--v6]: starts the fake port, sets $PORT.
fake() { fake_ras "$@"; PORT=$FAKE_PORT; }
elapsed() { sed -n 's/^elapsed //p' "$ERR"; }

fake json "$FX/h200x1_2.28.9_json.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "json server: exits 0" 0
expect_out "json server: JSON asked and parsed" '^format json protocol 2 nccl 2.28.9 comms 1$'
expect_out "json server: the communicator" '^comm da6d3161e2b43b74 nranks 1$'
expect_out "json server: rank with host, pid, counts" '^rank 0 host 192.0.2.2 pid 537 dead 0 enq all_reduce=0 '

run env NCCL_RAS_ADDR="127.0.0.1:$PORT" "$NW_TESTS/ras_probe"
expect_rc "address from NCCL_RAS_ADDR" 0

fake json "$FX/as_2.28.7_missing_nocomma.json"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "2.28 JSON without a comma: exits 0" 0
expect_out "missing rank marked dead" '^rank 1 host 172.16.64.245 pid 1524345 dead 1 enq$'

fake text "$FX/nccl1911_2.26.2_mismatch.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "old server (text only): exits 0" 0
expect_out "old server: falls back to text" '^format text protocol 2 nccl 2.26.2 comms 1$'
expect_out "old server: outlier's count" '^rank 12 host 10.137.190.124 pid 323032 dead 0 enq all_gather=641$'
expect_out "old server: majority's count" '^rank 31 host \? pid 0 dead 0 enq all_gather=640$'

fake text "$FX/example_2.30.7_incomplete.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_out "text: missing rank dead" '^rank 7 host node1 pid 3748990 dead 1'

fake json "$FX/docs_2.29.1_missing.json" --v6
run "$NW_TESTS/ras_probe" --addr "[::1]:$PORT"
if [ "$RC" -eq 1 ] && grep -q "Cannot assign\|Address family" "$ERR"; then
	ok "IPv6 address # skip: no IPv6 loopback here"
else
	expect_rc "IPv6 [::1]:PORT exits 0" 0
	expect_out "IPv6: parsed" '^comm ae94423cfbb2ef4a nranks 2$'
fi

fake slow "$FX/h200x1_2.28.9_json.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT" --timeout 1.5
expect_rc "slow server: exits 1" 1
expect_err "slow server: says timed out after 1.5 s" "timed out after 1.5 s"
expect_true "slow server: gave up within 3 s ($(elapsed))" awk -v e="$(elapsed)" 'BEGIN { exit !(e >= 1.4 && e < 3) }'

fake garbage "$FX/h200x1_2.28.9_json.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "garbage server: exits 1" 1
expect_err "garbage server: not a RAS port" "is not a NCCL RAS port: it answered 'HTTP/1.1 400 Bad Request'"

fake early "$FX/h200x1_2.28.9_json.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "server closing early: exits 1" 1
expect_err "server closing early: says so" "closed the connection while waiting for the reply to 'CLIENT PROTOCOL 2'"

fake cut "$FX/h200x1_2.28.9_json.txt"
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "answer cut short: exits 1" 1
expect_err "answer cut short: says so" "not valid JSON .*cut short"

# A port nothing listens on: take a free port from a fake, then stop it.
fake json "$FX/h200x1_2.28.9_json.txt"
kill "${FAKE_PIDS[-1]}"; wait "${FAKE_PIDS[-1]}" 2>/dev/null
run "$NW_TESTS/ras_probe" --addr "127.0.0.1:$PORT"
expect_rc "closed port: exits 1" 1
expect_err "closed port: refused, with what to check" "refused: no NCCL job listens there.*NCCL_RAS_ADDR"

run "$NW_TESTS/ras_probe" --addr "localhost"
expect_rc "address without port: exits 1" 1
expect_err "address without port: says the form" "is not HOST:PORT"

# A non-routable address: the connect itself times out, bounded too.
run "$NW_TESTS/ras_probe" --addr "192.0.2.1:28028" --timeout 1
expect_rc "unreachable host: exits 1" 1
expect_true "unreachable host: gave up within 3 s ($(elapsed))" awk -v e="$(elapsed)" 'BEGIN { exit !(e < 3) }'
expect_no_crash "unreachable host: no crash"

for f in "$FX"/*.txt "$FX"/*.json; do
	run "$NW_TESTS/ras_probe" --file "$f"
	expect_rc "recorded $(basename "$f") parses" 0
done
