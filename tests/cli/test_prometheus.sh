# SPDX-License-Identifier: Apache-2.0
# A real Prometheus server scrapes `ncclwatch exporter` on loopback, loads
# deploy/prometheus/ncclwatch-rules.yml and answers queries for our series;
# every expression of the Grafana dashboard must parse and run there.
# Bounded waits; both processes are stopped on every way out.
source tests/cli/lib.sh

EXP_PID= PROM_PID=
cleanup() {
	for p in $EXP_PID $PROM_PID; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $EXP_PID $PROM_PID; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! command -v prometheus >/dev/null || ! command -v curl >/dev/null; then
	skip "a real Prometheus server scrapes the exporter" "prometheus or curl is not installed (apt-get install prometheus curl)"
	exit 0
fi

DIR=$TMP/stats
late_rank_files "$DIR"

# exporter on a free loopback port (port 0: it prints the one it got)
"$NW" exporter --dir "$DIR" --listen 127.0.0.1:0 --all \
	--baseline "$SRCDIR/tests/fixtures/export/baseline_h200x2.json" 2>"$TMP/exp.err" &
EXP_PID=$!
EXP_PORT=$(exporter_port "$TMP/exp.err")
if [ -z "$EXP_PORT" ]; then
	RC=1; notok "exporter started" "no port in its stderr:" "$(cat "$TMP/exp.err")"; exit 1
fi
ok "exporter started on 127.0.0.1:$EXP_PORT"

PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRCDIR/deploy/prometheus/ncclwatch-rules.yml
scrape_configs:
  - job_name: ncclwatch
    static_configs:
      - targets: ['127.0.0.1:$EXP_PORT']
CONF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prom.log" 2>&1 &
PROM_PID=$!
API=http://127.0.0.1:$PROM_PORT/api/v1

# query EXPR: the JSON answer of an instant query in $TMP/q.json
query() { curl -s -m 5 -G "$API/query" --data-urlencode "query=$1" >"$TMP/q.json"; }
# wait_series EXPR SECONDS: until the query returns at least one series
wait_series() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		kill -0 "$PROM_PID" 2>/dev/null || return 1
		query "$1" && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["status"]=="success" and d["data"]["result"] else 1)' "$TMP/q.json" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

RC=0
if wait_series 'ncclwatch_exporter_scrapes_total{job="ncclwatch"}' 30; then
	ok "prometheus scraped the exporter's series within 30 s"
else
	RC=1; notok "prometheus scraped the exporter's series within 30 s" "last answer: $(cat "$TMP/q.json" 2>/dev/null)" "$(tail -5 "$TMP/prom.log")"
	exit 1
fi
wait_series 'up{job="ncclwatch"} == 1' 10
expect_true "the scrape target is up" grep -q '"value":\[[0-9.]*,"1"\]' "$TMP/q.json"
wait_series 'ncclwatch_stats_files{state="live"}' 10
expect_true "stats file counts are there" grep -q '"state":"live"' "$TMP/q.json"

# the rules loaded, and a recording rule evaluates on scraped data
curl -s -m 5 "$API/rules" >"$TMP/rules.json"
for a in NcclwatchCommunicationShareHigh NcclwatchBusbwBelowBaseline NcclwatchStragglerRank \
	NcclwatchExporterDown NcclwatchExporterAbsent; do
	expect_true "alert rule $a loaded" grep -q "\"name\":\"$a\"" "$TMP/rules.json"
done
expect_true "no rule failed to evaluate" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
bad=[r["name"] for g in d["data"]["groups"] for r in g["rules"] if r.get("health")=="err"]
sys.exit(1 if bad else 0)' "$TMP/rules.json"
if wait_series 'ncclwatch:coll_busbw_bytes_per_second:baseline{op="all_reduce",size="1G",nranks="2"}' 20; then
	expect_true "the configured baseline reaches the baseline rule (324.85 GB/s)" grep -q '"324850000000"' "$TMP/q.json"
else
	RC=1; notok "the configured baseline reaches the baseline rule" "$(cat "$TMP/q.json")"
fi

# the harness' collectives are queryable, with the counts it fed
if wait_series 'sum(ncclwatch_coll_ops_total{comm="5eed000000c0ffee",op="all_reduce"})' 10; then
	want=$(awk '/^fed comm=5eed000000c0ffee .* op=all_reduce /{split($7, a, "="); s += a[2]} END {print s}' "$TMP/fed")
	expect_true "all_reduce ops of the 4 ranks in prometheus equal what was fed ($want)" grep -q "\"$want\"\]" "$TMP/q.json"
else
	RC=1; notok "collective series from the harness' stats files are queryable" "$(cat "$TMP/q.json")"
fi
# the straggler alert goes pending for the late rank, and exactly for the
# ranks whose lateness is more than 1 ms above their peers' mean in the
# same data (on a loaded machine another rank may be late too)
if wait_series 'ALERTS{alertname="NcclwatchStragglerRank"}' 15; then
	cp "$TMP/q.json" "$TMP/alerts.json"
	query 'ncclwatch_rank_lateness_seconds{comm="5eed000000c0ffee"}'
	expect_true "straggler alert is pending for rank 2, and for exactly the ranks the rule describes" python3 - "$TMP/alerts.json" "$TMP/q.json" <<'PY'
import json, sys
alerts = {r["metric"]["rank"] for r in json.load(open(sys.argv[1]))["data"]["result"]}
late = {r["metric"]["rank"]: float(r["value"][1]) for r in json.load(open(sys.argv[2]))["data"]["result"]}
mean = sum(late.values()) / len(late)
want = {k for k, v in late.items() if v - mean > 0.001}
print("# lateness", late, "alerts", sorted(alerts), "expected", sorted(want))
sys.exit(0 if "2" in alerts and alerts == want else 1)
PY
else
	RC=1; notok "straggler alert is pending for rank 2" "$(cat "$TMP/q.json")"
fi

# every dashboard expression parses and runs on a real server
python3 - "$SRCDIR/deploy/grafana/ncclwatch.json" >"$TMP/exprs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        e = t["expr"]
        for k, v in (("$__rate_interval", "1m"), ("$Hostname", ".*"), ("$namespace", ".*"), ("$job", ".*"), ("$pod", ".*"),
                     ("$comm", ".*"), ("$op", ".*")):
            e = e.replace(k, v)
        print(e.replace("\n", " "))
PY
nexpr=0 nbad=0
while IFS= read -r e; do
	nexpr=$((nexpr + 1))
	query "$e"
	grep -q '"status":"success"' "$TMP/q.json" || { nbad=$((nbad + 1)); echo "# bad: $e: $(cat "$TMP/q.json")"; }
done <"$TMP/exprs"
RC=$nbad
if [ "$nexpr" -ge 10 ] && [ "$nbad" -eq 0 ]; then ok "all $nexpr dashboard queries run on prometheus"; else notok "dashboard queries run on prometheus" "$nbad of $nexpr failed"; fi

# stopping: the exporter ends cleanly on SIGTERM
kill -TERM "$EXP_PID"
for _ in $(seq 50); do kill -0 "$EXP_PID" 2>/dev/null || break; sleep 0.1; done
wait "$EXP_PID"; RC=$?
EXP_PID=
expect_rc "exporter exits 0 on SIGTERM" 0
