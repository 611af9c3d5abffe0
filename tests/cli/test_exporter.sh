# SPDX-License-Identifier: Apache-2.0
# ncclwatch exporter as a user runs it: options, --once output checked by
# promtool, the HTTP endpoint, stopping on signals, bad inputs; and, with the
# plugin harness, counts and bytes equal to what the harness fed the plugin.
source tests/cli/lib.sh

# promtool comes with Debian's prometheus package; without it those checks are skipped, said so
promcheck() { # promcheck NAME FILE
	if command -v promtool >/dev/null; then
		expect_true "$1" promtool check metrics <"$2"
	else
		skip "$1" "promtool is not installed (Debian package prometheus)"
	fi
}

EXP_PID=
cleanup() {
	[ -n "$EXP_PID" ] && kill -TERM "$EXP_PID" 2>/dev/null
	for _ in $(seq 50); do [ -n "$EXP_PID" ] && kill -0 "$EXP_PID" 2>/dev/null || break; sleep 0.1; done
	[ -n "$EXP_PID" ] && kill -KILL "$EXP_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

EMPTY=$TMP/empty
mkdir -p "$EMPTY"
FIX=$SRCDIR/tests/fixtures/export

run "$NW" help exporter
expect_rc "help exporter" 0
expect_out "help names --listen and its default" '--listen ADDR:PORT.*127\.0\.0\.1:9850'
for o in --dir --once --all --window --baseline; do
	expect_out "help names $o" -- "$o"
done

run "$NW" exporter --bogus
expect_rc "unknown option is a usage error" 2
expect_err "unknown option is named" "unknown option '--bogus'"
run "$NW" exporter --once --dir "$EMPTY" extra
expect_rc "stray argument is a usage error" 2
run "$NW" exporter --window abc
expect_rc "bad --window" 2
expect_err "bad --window is named" "abc"
run "$NW" exporter --window 0
expect_rc "zero --window" 2
run "$NW" exporter --listen nocolon
expect_rc "listen address without port" 2
expect_err "listen address error says the form" "ADDR:PORT"
run "$NW" exporter --listen 127.0.0.1:99999
expect_rc "port out of range" 2
run "$NW" exporter --listen 999.1.1.1:9850
expect_rc "bad IPv4 address" 2
expect_err "bad IPv4 address is named" "'999\.1\.1\.1' is not an IPv4 address"
run "$NW" exporter --once --dir "$TMP/nope"
expect_rc "missing stats directory with --once" 1
expect_err "missing directory is named" "$TMP/nope"
run "$NW" exporter --once --dir "$EMPTY" --baseline "$TMP/nope.json"
expect_rc "missing baseline file" 2
expect_err "missing baseline is named" "nope\.json"
echo '{"schema":"other"}' >"$TMP/other.json"
run "$NW" exporter --once --dir "$EMPTY" --baseline "$TMP/other.json"
expect_rc "baseline that is not a results document" 2
expect_no_crash "baseline that is not a results document: no crash"

# --once on an empty directory: valid exposition text, our own series
run "$NW" exporter --once --dir "$EMPTY"
expect_rc "--once on an empty directory" 0
expect_out "stats file counts" '^ncclwatch_stats_files\{Hostname="[^"]+",state="live"\} 0$'
expect_out "scrape error counter" '^ncclwatch_exporter_scrape_errors_total\{Hostname="[^"]+"\} 0$'
cp "$OUT" "$TMP/empty.prom"
promcheck "promtool check metrics accepts the empty scrape" "$TMP/empty.prom"

# baseline from a bench result (real nccl-tests figures, 2 x H200)
run "$NW" exporter --once --dir "$EMPTY" --baseline "$FIX/baseline_h200x2.json"
expect_rc "--baseline" 0
expect_out "baseline 64M: best of out-of-place and in-place" '^ncclwatch_busbw_baseline_bytes_per_second\{op="all_reduce",size="64M",nranks="2"\} 261940000000$'
expect_out "baseline 1G" '^ncclwatch_busbw_baseline_bytes_per_second\{op="all_reduce",size="1G",nranks="2"\} 324850000000$'

# an unusable stats file is counted and named, never fatal
BAD=$TMP/bad
mkdir -p "$BAD"
head -c 4096 /dev/urandom >"$BAD/junk.nws"
run "$NW" exporter --once --dir "$BAD"
expect_rc "a bad stats file does not fail the scrape" 0
expect_err "the bad file is named" "junk\.nws"
expect_out "the bad file is counted" '^ncclwatch_stats_files\{Hostname="[^"]+",state="bad"\} 1$'
expect_out "and is a scrape error" '^ncclwatch_exporter_scrape_errors_total\{Hostname="[^"]+"\} 1$'

# the HTTP endpoint
"$NW" exporter --dir "$EMPTY" --listen 127.0.0.1:0 2>"$TMP/exp.err" &
EXP_PID=$!
PORT=$(exporter_port "$TMP/exp.err")
RC=0
if [ -n "$PORT" ]; then ok "server says its port"; else RC=1; notok "server says its port" "$(cat "$TMP/exp.err")"; fi
URL=http://127.0.0.1:$PORT
code=$(curl -s -m 5 -o "$TMP/m1" -D "$TMP/h1" -w '%{http_code}' "$URL/metrics")
expect_true "GET /metrics is 200" [ "$code" = 200 ]
expect_true "content type is the 0.0.4 text format" grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$TMP/h1"
promcheck "promtool check metrics accepts /metrics" "$TMP/m1"
curl -s -m 5 -o "$TMP/m2" "$URL/metrics"
expect_true "a scrape within the cache interval (--cache, 1 s) gets the same rendering" cmp -s "$TMP/m1" "$TMP/m2"
sleep 1.1
curl -s -m 5 -o "$TMP/m2" "$URL/metrics"
expect_true "scrapes are counted" grep -q '^ncclwatch_exporter_scrapes_total{Hostname="[^"]*"} 3$' "$TMP/m2"
expect_true "renderings are counted" grep -q '^ncclwatch_exporter_renders_total{Hostname="[^"]*"} 2$' "$TMP/m2"
expect_true "GET / is 200" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/")" = 200 ]
expect_true "unknown path is 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/nope")" = 404 ]
expect_true "POST is 405" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST "$URL/metrics")" = 405 ]

# a second exporter on the same port fails plainly
run "$NW" exporter --dir "$EMPTY" --listen "127.0.0.1:$PORT"
expect_rc "port in use" 1
expect_err "port in use is explained" "cannot listen on '127\.0\.0\.1:$PORT'.*--listen"

kill -INT "$EXP_PID"
for _ in $(seq 50); do kill -0 "$EXP_PID" 2>/dev/null || break; sleep 0.1; done
wait "$EXP_PID"; RC=$?
EXP_PID=
expect_rc "exporter exits 0 on SIGINT" 0

# Under load (scripts/exporter-load, the real plugin's files of an 8-rank job):
# 50 scrapers in a closed loop share one rendering per --cache interval (each
# scrape used to render: p99 301 ms); and slow-loris crowds (1,024
# connections from one address, 4,200 over eight) sending a byte every 5 s
# never keep a scraper out (no scrape was answered at all).
L=$TMP/load; mkdir -p "$L"; chmod 700 "$L"
"$NW_TESTS/plugin_harness" --plugin "$NW_PLUGIN" --dir "$L" --scenario fsdp --ranks 8 --ops 2 >/dev/null
"$NW" exporter --dir "$L" --listen 127.0.0.1:0 2>"$TMP/exp.err" &
EXP_PID=$!
PORT=$(exporter_port "$TMP/exp.err")
run python3 "$SRCDIR/scripts/exporter-load" --port "$PORT" --pid "$EXP_PID" --seconds 4 closed
expect_rc "50 scrapers in a closed loop for 4 s" 0
sed 's/^/# /' "$OUT"
expect_out "... none failed" "failed 0,"
curl -s -m 5 -o "$TMP/m3" "http://127.0.0.1:$PORT/metrics"
expect_true "... one rendering served many scrapes (about one a second: at most 12 in 5 s, 20x fewer than scrapes)" awk '
	/^ncclwatch_exporter_scrapes_total/ { s = $2 } /^ncclwatch_exporter_renders_total/ { r = $2 }
	END { print "# " s " scrapes, " r " renderings"; exit !(r >= 1 && r <= 12 && s >= 20 * r) }' "$TMP/m3"
kill -TERM "$EXP_PID"; wait "$EXP_PID"; EXP_PID=
run python3 "$SRCDIR/scripts/exporter-load" --ncclwatch "$NW" --harness "$NW_TESTS/plugin_harness" \
	--plugin "$NW_PLUGIN" --seconds 8 loris
sed 's/^/# /' "$OUT"
expect_true "slow-loris, 1,024 connections from one address: every scrape answered within 5 s" \
	grep -Eq '^loris   1024 from one address: .* answered ([0-9]+)/\1 within' "$OUT"
expect_true "slow-loris, 4,200 connections over eight addresses: every scrape answered within 5 s" \
	grep -Eq '^loris   4200 over 8 addresses: .* answered ([0-9]+)/\1 within' "$OUT"

# with the plugin harness (the real plugin driven through its ABI by 4 rank
# processes, rank 2 arriving 10 ms late): ops and bytes per communicator,
# rank and op equal what the harness fed; rank 2's lateness is about 10 ms
H=$TMP/harness
late_rank_files "$H"
run "$NW" exporter --once --all --histograms op,size --detail all --dir "$H"
expect_rc "exporter --once on the harness' files" 0
cp "$OUT" "$TMP/harness.prom"
promcheck "promtool check metrics accepts it" "$TMP/harness.prom"
expect_true "ops and bytes per comm, rank, op equal what was fed" python3 - "$TMP/fed" "$TMP/harness.prom" <<'PY'
import re, sys
fed = {}
for line in open(sys.argv[1]):
    if line.startswith("fed "):
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        fed[(kv["comm"], kv["rank"], kv["op"])] = [int(kv["count"]), int(kv["bytes"])]
got = {}
pat = re.compile(r'^ncclwatch_coll_(ops|bytes)_total\{(.*)\} (\S+)$')
for line in open(sys.argv[2]):
    m = pat.match(line)
    if not m:
        continue
    lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
    k = (lab["comm"], lab["rank"], lab["op"])
    got.setdefault(k, [0, 0])[0 if m.group(1) == "ops" else 1] += int(float(m.group(3)))
if not fed or fed != got:
    for k in sorted(set(fed) | set(got)):
        if fed.get(k) != got.get(k):
            print("# %s fed %s exported %s" % (k, fed.get(k), got.get(k)))
    sys.exit(1)
print("# %d series equal" % len(fed))
PY
expect_true "histogram _count never exceeds ops, +Inf equals _count" python3 - "$TMP/harness.prom" <<'PY'
import re, sys
inf, cnt, ops = {}, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'^(ncclwatch_coll_duration_seconds_bucket|ncclwatch_coll_duration_seconds_count|ncclwatch_coll_ops_total)\{(.*)\} (\S+)$', line)
    if not m:
        continue
    lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
    key = (lab["comm"], lab["rank"], lab["op"], lab["size"])
    v = float(m.group(3))
    if m.group(1).endswith("_bucket") and lab["le"] == "+Inf":
        inf[key + (lab["source"],)] = v
    elif m.group(1).endswith("_count"):
        cnt[key + (lab["source"],)] = v
    elif m.group(1) == "ncclwatch_coll_ops_total":
        ops[key] = v
assert inf and inf == cnt, "+Inf bucket differs from _count"
for k, v in cnt.items():
    assert v <= ops[k[:4]], k
PY
# held back 10 ms at every collective: at least 9.5 ms measured (a loaded
# machine adds, never removes, lateness)
expect_true "rank 2's lateness is at least about 10 ms" awk '/^ncclwatch_rank_lateness_seconds\{.*comm="5eed000000c0ffee",rank="2"/ { n++; v = $2 + 0 } END { exit (n == 1 && v >= 0.0095) ? 0 : 1 }' "$TMP/harness.prom"
expect_true "rank 2 has the largest lateness" awk '/^ncclwatch_rank_lateness_seconds\{.*comm="5eed000000c0ffee"/ { print "# " $0; if ($0 ~ /rank="2"/) late = $2 + 0; else { n++; if ($2 + 0 > max) max = $2 + 0 } } END { exit (n == 3 && max < late) ? 0 : 1 }' "$TMP/harness.prom"
expect_true "finished ranks are exported by default too" sh -c "$NW exporter --once --dir '$H' | grep -q 'ncclwatch_coll_ops_total{.*rank=\"2\"'"

# every metric the dashboard and the rules use is documented in docs/metrics.md
undoc=
for n in $(grep -ohE 'ncclwatch(_[a-z0-9_]+|:[a-z0-9_:]+)' "$SRCDIR/deploy/grafana/ncclwatch.json" \
		"$SRCDIR/deploy/prometheus/ncclwatch-rules.yml" | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
	grep -q "\`$n\`" "$SRCDIR/docs/metrics.md" || undoc="$undoc $n"
done
RC=0
if [ -z "$undoc" ]; then ok "dashboard and rules use documented metrics only"; else notok "dashboard and rules use documented metrics only" "undocumented:$undoc"; fi
for t in "$TMP/empty.prom"; do
	for n in $(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$t"); do
		grep -q "\`$n\`" "$SRCDIR/docs/metrics.md" || undoc="$undoc $n"
	done
done
if [ -z "$undoc" ]; then ok "every exported family is documented"; else notok "every exported family is documented" "undocumented:$undoc"; fi
