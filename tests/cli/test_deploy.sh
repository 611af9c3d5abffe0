#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Running where clusters run: liveness across PID namespaces (unshare --pid),
# GPU and job labels that join with dcgm-exporter, the series budget of each
# --histograms mode, gzip, the Kubernetes manifests checked offline, the
# rules at 15 s and 60 s scrapes, and the dashboard's metric names.
source "$(dirname "$0")/lib.sh"
H=$NW_TESTS/plugin_harness
FAKECUDA=$NW_TESTS/fakegpu/libcuda.so.1

# --- liveness across PID namespaces ---
d=$TMP/live; mkdir -p "$d"
"$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 3 --hold-ms 6000 >"$TMP/live.out" 2>&1 &
hp=$!
for _ in $(seq 40); do
	sleep 0.1
	[ "$("$NW" exporter --once --dir "$d" 2>/dev/null | grep -c 'ncclwatch_rank_info{.*state="live"')" = 4 ] && break
done
run "$NW" exporter --once --dir "$d"
expect_out "same namespace: 4 live ranks" '^ncclwatch_stats_files\{Hostname="[^"]*",state="live"\} 4$'
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
	run unshare --pid --fork --mount-proc "$NW" exporter --once --dir "$d"
	expect_out "exporter --once in another PID namespace: the ranks stay live" \
		'^ncclwatch_stats_files\{Hostname="[^"]*",state="live"\} 4$'
	expect_out "... and their metrics are exported" '^ncclwatch_coll_ops_total\{.*op="all_reduce"'
	run unshare --pid --fork --mount-proc "$NW" top --once --dir "$d"
	expect_out "top --once in another PID namespace: the ranks stay live" '4 files \(4 live, 0 finished, 0 disabled, 0 stale'
	run unshare --pid --fork --mount-proc sh -c "ls '$d'; NCCLWATCH_STALE_KEEP=1ms '$NW' top --once --dir '$d' >/dev/null; ls '$d'"
	expect_true "another namespace's live files are never removed as gone" [ "$(sort "$OUT" | uniq -c | awk '$1 != 2' | wc -l)" = 0 ]
else
	skip_root "liveness under unshare --pid" "needs root and unshare (util-linux)"
fi
kill -9 $hp 2>/dev/null; wait $hp 2>/dev/null

# --- identity labels (the fake CUDA driver stands in for the job's libcuda) ---
d=$TMP/ident; mkdir -p "$d"
run env POD_NAME=train-llm-0 POD_NAMESPACE=ml CONTAINER_NAME=train NCCLWATCH_JOB=llm-7 SLURM_JOB_ID=991 \
	CUDA_VISIBLE_DEVICES=2,3 TORCHELASTIC_RUN_ID=te1 "$H" --plugin "$NW_PLUGIN" --dir "$d" --ranks 2 --ops 2 \
	--cuda "$FAKECUDA"
expect_rc "harness with the fake CUDA driver current" 0
run "$NW" exporter --once --dir "$d"
cp "$OUT" "$TMP/ident.prom"
wl='pod="train-llm-0",namespace="ml",container="train",hpc_job="llm-7"'
expect_out "every series names the node and the workload: pod, namespace, container, job" \
	"^ncclwatch_coll_ops_total\{Hostname=\"[^\"]*\",comm=\"5eed000000c0ffee\",rank=\"1\",$wl,op=\"all_reduce\"\} "
expect_out "rank_info adds the GPU (CUDA_VISIBLE_DEVICES applied) and its UUID: the join with dcgm-exporter" \
	"^ncclwatch_rank_info\{.*rank=\"1\",$wl,gpu=\"3\",UUID=\"GPU-fa1e0000-0000-4000-8000-000000000001\","
expect_out "rank 0 drives GPU 2" '^ncclwatch_rank_info\{.*rank="0",.*gpu="2",UUID="GPU-fa1e0000-0000-4000-8000-000000000000",'
expect_out "lateness carries the workload too" "^ncclwatch_rank_lateness_seconds\{.*rank=\"1\",$wl,basis="
expect_no_out "other series leave the GPU to rank_info (a scrape stays small)" '^ncclwatch_coll.*UUID='
NODE_NAME=gpu-node-17 run "$NW" exporter --once --dir "$d"
expect_out "Hostname is NODE_NAME when set (the Kubernetes node, as dcgm-exporter names it)" '^ncclwatch_rank_info\{Hostname="gpu-node-17",'
expect_out "... on the exporter's own series too" '^ncclwatch_exporter_build_info\{Hostname="gpu-node-17",'
run env SLURM_JOB_ID=991 TORCHELASTIC_RUN_ID=te1 "$H" --plugin "$NW_PLUGIN" --dir "$TMP/slurm" --ranks 1 --ops 1
run "$NW" exporter --once --dir "$TMP/slurm"
expect_out "without NCCLWATCH_JOB the Slurm job id is the job label" '^ncclwatch_rank_info\{.*hpc_job="991"'
expect_no_out "no CUDA driver loaded: no gpu or UUID label" 'gpu="|UUID="'
run env -u SLURM_JOB_ID TORCHELASTIC_RUN_ID=te1 "$H" --plugin "$NW_PLUGIN" --dir "$TMP/te" --ranks 1 --ops 1
run "$NW" exporter --once --dir "$TMP/te"
expect_out "then the torchelastic run id" '^ncclwatch_rank_info\{.*hpc_job="te1"'

# --- series budget: FSDP-like job, 4 communicators x 6 ops x 12 sizes ---
d=$TMP/fsdp; mkdir -p "$d"
run "$H" --plugin "$NW_PLUGIN" --dir "$d" --scenario fsdp --ranks 2 --ops 2
expect_rc "harness fsdp scenario" 0
promcheck() {
	if command -v promtool >/dev/null; then expect_true "$1" promtool check metrics <"$2"
	else skip "$1" "promtool is not installed (Debian package prometheus)"; fi
}
declare -A n
for mode in "" "--detail size" "--detail source" "--detail rank" "--histograms op" "--histograms op,size --detail all"; do
	# shellcheck disable=SC2086
	"$NW" exporter --once --dir "$d" $mode >"$TMP/m.prom" 2>"$ERR"
	n[${mode:-default}]=$(grep -vc '^#' "$TMP/m.prom")
	echo "# ${mode:-default}: $(( ${n[${mode:-default}]} / 2 )) series per rank"
	promcheck "promtool check metrics is clean with ${mode:-the default}" "$TMP/m.prom"
done
expect_true "series budget of the default: at most 150 per rank for this job (docs/metrics.md)" [ $(( ${n[default]} / 2 )) -le 150 ]
expect_true "the default has no size bucket on counters, no source, no histogram" sh -c \
	"! '$NW' exporter --once --dir '$d' | grep -Eq '^ncclwatch_coll_(ops|bytes)_total\{.*size=|source=|_bucket\{'"
expect_true "the default keeps the op counts (sum over sizes)" sh -c \
	"'$NW' exporter --once --dir '$d' | grep -Eq '^ncclwatch_coll_ops_total\{.*comm=\"5eed000000c0ffee\",rank=\"0\"(,[^}]*)?,op=\"all_reduce\"\} 24$'"
expect_true "the default busbw gauge names its size bucket (the busiest one)" sh -c \
	"'$NW' exporter --once --dir '$d' | grep -Eq '^ncclwatch_coll_busbw_bytes_per_second\{.*,op=\"all_reduce\",size=\"[0-9]+[KMG]?\",nranks=\"2\"\} '"
expect_true "--detail size: counters per size bucket" sh -c \
	"'$NW' exporter --once --dir '$d' --detail size | grep -q '^ncclwatch_coll_ops_total{.*size='"
expect_true "--detail source: timings by source" sh -c \
	"'$NW' exporter --once --dir '$d' --detail source --histograms op | grep -q 'source=\"kernel\"'"
expect_true "--detail rank: every per-rank family" sh -c \
	"'$NW' exporter --once --dir '$d' --detail rank | grep -q '^ncclwatch_comm_busy_ratio{'"
# an 8-rank node, its pods named as a cluster names them: one scrape under 200 kB by default
d8=$TMP/fsdp8; mkdir -p "$d8"
env POD_NAME=llm-pretrain-7b-worker-3 POD_NAMESPACE=ml-research CONTAINER_NAME=pytorch NCCLWATCH_JOB=llm-pretrain-7b \
	CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 "$H" --plugin "$NW_PLUGIN" --dir "$d8" --scenario fsdp --ranks 8 --ops 2 \
	--cuda "$FAKECUDA" >/dev/null
bytes8=$(NODE_NAME=gpu-node-017.cluster.example "$NW" exporter --once --dir "$d8" | wc -c)
expect_true "a scrape of an 8-rank node, 4 communicators each: $bytes8 bytes, under 200 kB" [ "$bytes8" -lt 200000 ]
for bad in "--histograms=size" "--histograms=" "--detail=rank2" "--detail=size," "--detail=" "--drop-labels=size"; do
	run "$NW" exporter --once --dir "$d" "$bad"
	expect_rc "exporter $bad is bad usage" 2
	expect_err "exporter $bad: the error names the choices" "(none, op or op,size|size, source, rank or all|ends with a comma|needs size|unknown option)"
done

# --- gzip when the scraper asks for it ---
if command -v curl >/dev/null; then
	"$NW" exporter --listen 127.0.0.1:0 --dir "$d" 2>"$TMP/ex.err" &
	ep=$!
	port=$(exporter_port "$TMP/ex.err")
	curl -s -m 5 -D "$TMP/gz.h" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics" -o "$TMP/gz.body"
	expect_true "Accept-Encoding: gzip gets Content-Encoding: gzip" grep -qi '^Content-Encoding: gzip' "$TMP/gz.h"
	expect_true "the body is gzip and holds the metrics" sh -c "gzip -dc '$TMP/gz.body' | grep -q '^ncclwatch_coll_ops_total{'"
	expect_true "it is at least 5x smaller than the text" [ $(( $(gzip -dc "$TMP/gz.body" | wc -c) / $(wc -c <"$TMP/gz.body") )) -ge 5 ]
	curl -s -m 5 -D "$TMP/plain.h" "http://127.0.0.1:$port/metrics" -o "$TMP/plain.body"
	expect_true "no Accept-Encoding: plain text" sh -c "! grep -qi '^Content-Encoding' '$TMP/plain.h' && grep -q '^# TYPE' '$TMP/plain.body'"
	curl -s -m 5 -D "$TMP/q0.h" -H 'Accept-Encoding: gzip;q=0, identity' "http://127.0.0.1:$port/metrics" -o /dev/null
	expect_true "gzip;q=0 is a refusal" sh -c "! grep -qi '^Content-Encoding' '$TMP/q0.h'"
	kill $ep; wait $ep
else
	skip "gzip replies" "curl is not installed"
fi

# --- Kubernetes manifests, offline ---
if python3 -c 'import yaml' 2>/dev/null; then
	run python3 "$SRCDIR/tests/cli/check_manifests.py" "$SRCDIR/deploy/kubernetes" "$TMP/scripts"
	expect_rc "Kubernetes manifests parse and agree (images, volumes, mounts, env, ports, selectors)" 0
	[ "$RC" = 0 ] || cat "$OUT" "$ERR" | sed 's/^/# /'
	mkdir -p "$TMP/k8s"
	cp "$SRCDIR"/deploy/kubernetes/*.yaml "$TMP/k8s/"
	sed -i 's#value: /var/run/ncclwatch#value: /dev/shm/ncclwatch#; s#fieldPath: metadata.namespace#fieldPath: metadata.name#' \
		"$TMP/k8s/training-example-hostpath.yaml"
	run python3 "$SRCDIR/tests/cli/check_manifests.py" "$TMP/k8s" "$TMP/k8s-scripts"
	expect_rc "a training pod writing elsewhere than the exporter reads is caught" 1
	expect_out "... named, with the Downward API mistake" "NCCLWATCH_DIR '/dev/shm/ncclwatch' is not the exporter's host directory"
	expect_out "... and the namespace taken from the wrong field" "POD_NAMESPACE must come from the Downward API"
	cp "$SRCDIR"/deploy/kubernetes/*.yaml "$TMP/k8s/"
	sed -i 's#^      hostPID: true#      hostPID: false#; s#add: \["SYS_PTRACE", #add: [#' "$TMP/k8s/exporter-daemonset.yaml"
	sed -i 's#            - name: NCCL_PROFILER_PLUGIN#            - name: POD_NAME\n              value: x\n            - name: NCCL_PROFILER_PLUGIN#' \
		"$TMP/k8s/training-example.yaml"
	run python3 "$SRCDIR/tests/cli/check_manifests.py" "$TMP/k8s" "$TMP/k8s-scripts"
	expect_rc "an exporter that cannot see the node's processes is caught" 1
	expect_out "... without hostPID" "does not share the node's \(hostPID\)"
	expect_out "... without CAP_SYS_PTRACE" "needs CAP_SYS_PTRACE"
	expect_out "... and a training pod asked for more than the plugin variable" "needs no POD_NAME"
	# the Prometheus Operator's objects: generated, equal to what is committed
	run "$SRCDIR/scripts/gen-operator" --check
	expect_rc "deploy/kubernetes' PrometheusRule, monitors and dashboard ConfigMap are what scripts/gen-operator writes from the rules and dashboard" 0
	[ "$RC" = 0 ] || cat "$OUT" "$ERR" | sed 's/^/# /'
	mkdir -p "$TMP/gen"
	run "$SRCDIR/scripts/gen-operator" --out "$TMP/gen"
	expect_true "... and a fresh run writes the same four files" sh -c "for f in '$TMP'/gen/*; do cmp -s \"\$f\" '$SRCDIR'/deploy/kubernetes/\$(basename \"\$f\") || exit 1; done; [ \$(ls '$TMP/gen' | wc -l) = 4 ]"
	sed -i 's/NcclwatchStragglerRank/NcclwatchStraggler/' "$TMP/gen/prometheusrule.yaml"
	run "$SRCDIR/scripts/gen-operator" --out "$TMP/gen" --check
	expect_rc "a PrometheusRule edited by hand is caught" 1
	expect_out "... by name" "prometheusrule.yaml differs"
	mkdir -p "$TMP/sel"
	cp "$SRCDIR"/deploy/kubernetes/exporter-daemonset.yaml "$SRCDIR"/deploy/kubernetes/training-example.yaml "$TMP/sel/"
	run "$SRCDIR/scripts/gen-operator" --out "$TMP/sel" --selector prometheus=ml-fleet --runbook-base https://docs.example.com/ncclwatch/runbook
	expect_rc "gen-operator --selector --runbook-base" 0
	expect_true "... every object Prometheus selects carries the chosen label, none the default" sh -c \
		"[ \$(grep -l '^    prometheus: \"ml-fleet\"' '$TMP'/sel/*monitor.yaml '$TMP'/sel/prometheusrule.yaml | wc -l) = 3 ] && ! grep -q 'release:' '$TMP'/sel/*.yaml"
	expect_true "... every runbook_url has the chosen base" sh -c \
		"[ \$(grep -c 'runbook_url: \"https://docs.example.com/ncclwatch/runbook#' '$TMP/sel/prometheusrule.yaml') = $(grep -c '^  *- alert:' "$SRCDIR/deploy/prometheus/ncclwatch-rules.yml") ]"
	run python3 "$SRCDIR/tests/cli/check_manifests.py" "$TMP/sel" "$TMP/sel-scripts"
	expect_rc "... and the objects check out" 0
	for bad in "release" "=x" "release=a b" "app.kubernetes.io/name=x"; do
		run "$SRCDIR/scripts/gen-operator" --out "$TMP/sel" --selector "$bad"
		expect_rc "gen-operator --selector '$bad' is refused" 2
	done
	run "$SRCDIR/scripts/gen-operator" --out "$TMP/sel" --runbook-base docs/runbook.md
	expect_rc "gen-operator --runbook-base with a relative address is refused" 2
	# a mistake planted in each kind is caught, by name
	plant() { # NAME FILE SED-SCRIPT REGEX
		cp "$SRCDIR"/deploy/kubernetes/*.yaml "$TMP/k8s/"
		sed -i "$3" "$TMP/k8s/$2"
		run python3 "$SRCDIR/tests/cli/check_manifests.py" "$TMP/k8s" "$TMP/k8s-scripts"
		if [ "$RC" = 1 ] && grep -Eq -- "$4" "$OUT"; then ok "$1"; else notok "$1" "wanted exit 1 and /$4/"; fi
	}
	plant "PrometheusRule: a misspelt key of a rule (fro: for for)" prometheusrule.yaml \
		'0,/^          for: /s//          fro: /' "PrometheusRule ncclwatch.spec.groups\[1\].rules\[0\]: unknown field 'fro'"
	plant "PrometheusRule: a relative runbook_url" prometheusrule.yaml \
		's#runbook_url: "https://[^"]*\##runbook_url: "docs/runbook.md\##' "runbook_url 'docs/runbook.md#.*' is not an absolute address"
	plant "PrometheusRule: a selector label of its own" prometheusrule.yaml \
		's/^    release: .*/    release: "prom-other"/' "must carry the same selector label"
	plant "PodMonitor: honorlabels (lower case) is no field" podmonitor.yaml \
		's/honorLabels:/honorlabels:/' "PodMonitor ncclwatch-exporter.spec.podMetricsEndpoints\[0\]: unknown field 'honorlabels'"
	plant "PodMonitor: a port the exporter does not name" podmonitor.yaml \
		's/- port: metrics/- port: http-metrics/' "PodMonitor scrapes port 'http-metrics'"
	plant "PodMonitor: no Hostname on the target" podmonitor.yaml \
		's/targetLabel: Hostname/targetLabel: node/' "must name the node on the target"
	plant "ServiceMonitor: endpoint (singular) is no field" servicemonitor.yaml \
		's/^  endpoints:/  endpoint:/' "ServiceMonitor ncclwatch-exporter.spec: unknown field 'endpoint'"
	plant "ServiceMonitor: a selector that matches no Service" servicemonitor.yaml \
		's/^      app.kubernetes.io\/name: ncclwatch-exporter/      app: ncclwatch/' "the ServiceMonitor selects .* which matches nothing"
	plant "ServiceMonitor: an interval that is no duration" servicemonitor.yaml \
		's/interval: 15s/interval: 15/' "interval: 15 is not a duration"
	plant "ConfigMap: grafana_dashboard: 1 unquoted" grafana-dashboard-configmap.yaml \
		's/grafana_dashboard: "1"/grafana_dashboard: 1/' "metadata.labels: want strings to strings"
	plant "ConfigMap: a misspelt data key" grafana-dashboard-configmap.yaml \
		's/^data:/datas:/' "ConfigMap ncclwatch-dashboard: unknown field 'datas'"
	plant "ConfigMap: a dashboard that is not JSON" grafana-dashboard-configmap.yaml \
		's/^    {$/    {,/' "ncclwatch.json is not JSON"
	if command -v shellcheck >/dev/null; then
		for s in "$TMP"/scripts/*.sh; do
			expect_true "shellcheck: $(basename "$s")" shellcheck -s sh "$s"
		done
	else
		skip "shellcheck on the manifests' scripts" "shellcheck is not installed"
	fi
else
	skip "Kubernetes manifests" "python3-yaml is not installed"
fi

# --- rules at 15 s and 60 s scrapes; runbook sections exist ---
if command -v promtool >/dev/null; then
	for f in ncclwatch-rules.test.yml ncclwatch-rules.test-60s.yml; do
		expect_true "promtool test rules $f" sh -c "cd '$SRCDIR/deploy/prometheus' && promtool test rules $f >/dev/null"
	done
else
	skip "promtool rule tests" "promtool is not installed (Debian package prometheus)"
fi
# runbook_url: absolute (an alert leaves the cluster: a relative address
# means nothing in a notification), a section of docs/runbook.md
RB=https://github.com/ncclwatch/ncclwatch/blob/main/docs/runbook.md
missing=
for a in $(sed -n "s#.*runbook_url: \"$RB\#\([a-z0-9-]*\)\".*#\1#p" "$SRCDIR/deploy/prometheus/ncclwatch-rules.yml"); do
	grep -qi "^## $a\$" "$SRCDIR/docs/runbook.md" || missing="$missing $a"
done
RC=0
nalert=$(grep -c '^  *- alert:' "$SRCDIR/deploy/prometheus/ncclwatch-rules.yml")
nrun=$(grep -c "runbook_url: \"$RB#" "$SRCDIR/deploy/prometheus/ncclwatch-rules.yml")
expect_true "every alert has a runbook_url with a docs/runbook.md section${missing:+ (not:$missing)}" [ -z "$missing" -a "$nalert" = "$nrun" ]
expect_true "no runbook_url is relative, in the rules, their tests or the PrometheusRule" sh -c \
	"! grep -h '^ *runbook_url:' '$SRCDIR'/deploy/prometheus/*.yml '$SRCDIR'/deploy/kubernetes/*.yaml | grep -v 'runbook_url: \"https://'"
expect_true "no window shorter than 5m in the rules" sh -c "! grep -Eq '\[(1|2|3|4)?[0-9]?s\]|\[[1-4]m\]' '$SRCDIR/deploy/prometheus/ncclwatch-rules.yml'"

# --- the dashboard's queries use documented metrics, and the DCGM join is there ---
run python3 - "$SRCDIR/deploy/grafana/ncclwatch.json" "$SRCDIR/docs/metrics.md" <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
doc = open(sys.argv[2]).read()
exprs = []
def walk(o):
    if isinstance(o, dict):
        if isinstance(o.get("expr"), str):
            exprs.append(o["expr"])
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(dash)
bad = set()
for e in exprs:
    for n in re.findall(r'\b((?:ncclwatch|DCGM_FI)[A-Za-z0-9_:]*)', e):
        n = re.sub(r'_(bucket|sum|count)$', '', n)
        if "`%s`" % n not in doc:
            bad.add(n)
print("%d queries" % len(exprs))
if bad:
    print("undocumented: " + " ".join(sorted(bad)))
    sys.exit(1)
# the workload variables, from an ncclwatch metric, and every selector of a
# series that carries the workload labels filters by them
var = {v["name"]: v for v in dash["templating"]["list"]}
for name, label in (("namespace", "namespace"), ("pod", "pod"), ("job", "hpc_job")):
    if name not in var or not re.match(r"label_values\(ncclwatch_\w+\{.*\}, %s\)$" % label, var[name]["definition"]):
        print("no variable %s: label_values of an ncclwatch metric's %s" % (name, label))
        sys.exit(1)
node_only = ("ncclwatch_stats_files", "ncclwatch_exporter_scrape_errors_total")
fleet = ("ncclwatch:coll_busbw_bytes_per_second:baseline",)
for e in exprs:
    for m, sel in re.findall(r'\b(ncclwatch[A-Za-z0-9_:]*)\{([^}]*)\}', e):
        want = [] if m in fleet else ['Hostname=~"$Hostname"'] + ([] if m in node_only else
               ['namespace=~"$namespace"', 'hpc_job=~"$job"', 'pod=~"$pod"'])
        lack = [w for w in want if w not in sel]
        if lack:
            print("%s in %r is not filtered by %s" % (m, e, ", ".join(lack)))
            sys.exit(1)
if not any("DCGM_FI_PROF_NVLINK_TX_BYTES" in e and "UUID" in e for e in exprs):
    print("no busbw next to DCGM_FI_PROF_NVLINK_TX_BYTES joined on UUID")
    sys.exit(1)
PY
expect_rc "every metric in the dashboard's queries is in docs/metrics.md, each query filtered by the node and workload variables; busbw is joined with DCGM NVLink bytes" 0
