#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Offline checks of deploy/kubernetes/*.yaml (tests/cli/test_deploy.sh).

Usage: check_manifests.py DIR SCRIPTDIR. Every file must parse; each exporter
DaemonSet, its Service and PodMonitor must agree on labels and the port, and
name the node (NODE_NAME); one that finds processes through /proc (--procs)
must share the node's processes, with CAP_SYS_PTRACE and nothing else it
can drop; a training pod found that way must need nothing more (no
NCCLWATCH_DIR, no node directory, not root); one that uses a node directory
must mount an exporter's as NCCLWATCH_DIR and set the Downward API variables
the plugin records. The Prometheus Operator's objects (PrometheusRule,
PodMonitor, ServiceMonitor) and ConfigMaps are read key by key against the
fields their API has (a misspelt key is a problem, not a field the API
server drops); the monitors must select the exporter pods or Service and
name their port, and carry the same selector label as the PrometheusRule;
the dashboard ConfigMap must hold a dashboard for Grafana's sidecar.
Scripts given to `sh -c` are written to SCRIPTDIR for shellcheck. Prints
each problem; exit 1 when there is any.
"""
import glob
import json
import os
import re
import sys

import yaml

problems = []


def bad(msg):
    problems.append(msg)
    print("problem: " + msg)


# --- the fields of the objects ncclwatch ships, by kind (the API's names) ---
# A dict: an object of those keys; [x]: a list of x; "str", "int", "bool",
# "duration" (Prometheus': 30s, 5m, 1h30m), "map" (string to string).
METADATA = {"name": "str", "namespace": "str", "labels": "map", "annotations": "map"}
LABEL_SELECTOR = {"matchLabels": "map",
                  "matchExpressions": [{"key": "str", "operator": "str", "values": ["str"]}]}
NS_SELECTOR = {"any": "bool", "matchNames": ["str"]}
RELABEL = {"sourceLabels": ["str"], "separator": "str", "targetLabel": "str", "regex": "str",
           "modulus": "int", "replacement": "str", "action": "str"}
SCRAPE = {"path": "str", "scheme": "str", "params": "any", "interval": "duration", "scrapeTimeout": "duration",
          "honorLabels": "bool", "honorTimestamps": "bool", "relabelings": [RELABEL],
          "metricRelabelings": [RELABEL], "tlsConfig": "any", "basicAuth": "any", "authorization": "any",
          "oauth2": "any", "bearerTokenSecret": "any", "proxyUrl": "str", "followRedirects": "bool",
          "enableHttp2": "bool", "filterRunning": "bool"}
LIMITS = {"sampleLimit": "int", "targetLimit": "int", "labelLimit": "int", "labelNameLengthLimit": "int",
          "labelValueLengthLimit": "int", "keepDroppedTargets": "int", "attachMetadata": {"node": "bool"}}
RULE = {"record": "str", "alert": "str", "expr": "str", "for": "duration", "keep_firing_for": "duration",
        "labels": "map", "annotations": "map"}
SCHEMAS = {
    "PrometheusRule": {"spec": {"groups": [{"name": "str", "interval": "duration", "limit": "int",
                                            "partial_response_strategy": "str", "rules": [RULE]}]}},
    "PodMonitor": {"spec": dict(LIMITS, jobLabel="str", podTargetLabels=["str"], selector=LABEL_SELECTOR,
                                namespaceSelector=NS_SELECTOR,
                                podMetricsEndpoints=[dict(SCRAPE, port="str", portNumber="int")])},
    "ServiceMonitor": {"spec": dict(LIMITS, jobLabel="str", targetLabels=["str"], podTargetLabels=["str"],
                                    selector=LABEL_SELECTOR, namespaceSelector=NS_SELECTOR,
                                    endpoints=[dict(SCRAPE, port="str", targetPort="any",
                                                    bearerTokenFile="str", trackTimestampsStaleness="bool")])},
    "ConfigMap": {"data": "map", "binaryData": "map", "immutable": "bool"},
}
API = {"PrometheusRule": "monitoring.coreos.com/v1", "PodMonitor": "monitoring.coreos.com/v1",
       "ServiceMonitor": "monitoring.coreos.com/v1", "ConfigMap": "v1"}
DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def check_fields(where, obj, sch):
    """Every key of obj is one sch has, each value of its type."""
    if sch == "any":
        return
    if isinstance(sch, dict):
        if not isinstance(obj, dict):
            bad("%s: want an object, not %r" % (where, obj))
            return
        for k, v in obj.items():
            if k not in sch:
                bad("%s: unknown field %r (the API has %s)" % (where, k, ", ".join(sorted(sch))))
            else:
                check_fields("%s.%s" % (where, k), v, sch[k])
    elif isinstance(sch, list):
        if not isinstance(obj, list):
            bad("%s: want a list, not %r" % (where, obj))
            return
        for i, v in enumerate(obj):
            check_fields("%s[%d]" % (where, i), v, sch[0])
    elif sch == "map":
        if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in obj.items()):
            bad("%s: want strings to strings (quote numbers and booleans), not %r" % (where, obj))
    elif sch == "duration":
        if not isinstance(obj, str) or not DURATION.match(obj):
            bad("%s: %r is not a duration (30s, 5m, 1h)" % (where, obj))
    else:
        want = {"str": str, "int": int, "bool": bool}[sch]
        if not isinstance(obj, want) or (want is int and isinstance(obj, bool)):
            bad("%s: want %s, not %r" % (where, sch, obj))


def check_kind(f, d):
    """One PrometheusRule, PodMonitor, ServiceMonitor or ConfigMap, field by field."""
    kind = d["kind"]
    where = "%s: %s %s" % (f, kind, d.get("metadata", {}).get("name"))
    if d.get("apiVersion") != API[kind]:
        bad("%s: apiVersion %r, want %s" % (where, d.get("apiVersion"), API[kind]))
    check_fields(where, {k: v for k, v in d.items() if k not in ("apiVersion", "kind", "metadata")}, SCHEMAS[kind])
    check_fields(where + " metadata", d.get("metadata"), METADATA)
    if not d.get("metadata", {}).get("name"):
        bad("%s: no metadata.name" % where)
    if kind == "PrometheusRule":
        names = [g.get("name") for g in d.get("spec", {}).get("groups", [])]
        if len(set(names)) != len(names):
            bad("%s: group names repeat: %s" % (where, names))
        for g in d.get("spec", {}).get("groups", []):
            for r in g.get("rules", []):
                if ("record" in r) == ("alert" in r) or not r.get("expr"):
                    bad("%s: a rule of group %s needs expr and one of record or alert: %s" % (where, g.get("name"), r))
                if "record" in r and ("for" in r or "annotations" in r):
                    bad("%s: recording rule %s has for or annotations" % (where, r["record"]))
                url = r.get("annotations", {}).get("runbook_url", "")
                if "alert" in r and not re.match(r"^https?://[^#]+#%s$" % r["alert"].lower(), url):
                    bad("%s: alert %s: runbook_url %r is not an absolute address of its section" % (where, r["alert"], url))
    if kind == "ConfigMap" and "grafana_dashboard" in d.get("metadata", {}).get("labels", {}):
        if d["metadata"]["labels"]["grafana_dashboard"] != "1":
            bad("%s: Grafana's sidecar looks for grafana_dashboard: \"1\"" % where)
        for k, v in d.get("data", {}).items():
            try:
                dash = json.loads(v)
                if not (k.endswith(".json") and dash.get("uid") and dash.get("panels")):
                    bad("%s: %s is not a dashboard file (NAME.json with a uid and panels)" % (where, k))
            except ValueError as e:
                bad("%s: %s is not JSON: %s" % (where, k, e))


def check_monitors(docs, exporters):
    """Each PodMonitor selects every exporter DaemonSet's pods and names its
    port; each ServiceMonitor selects the exporter's Service and names its
    port; the monitors and the PrometheusRule carry the same selector label."""
    mons = [(f, d) for f, d in docs if d["kind"] in ("PodMonitor", "ServiceMonitor")]
    rules = [(f, d) for f, d in docs if d["kind"] == "PrometheusRule"]
    for f, m in mons:
        ns = m["metadata"].get("namespace")
        sel = m.get("spec", {}).get("selector", {}).get("matchLabels", {})
        eps = m.get("spec", {}).get("podMetricsEndpoints" if m["kind"] == "PodMonitor" else "endpoints", [])
        if not eps:
            bad("%s: %s has no endpoints" % (f, m["kind"]))
        for ep in eps:
            if not ep.get("honorLabels"):
                bad("%s: the %s must honor labels: the series' pod/namespace/container are the training pod's" % (f, m["kind"]))
            if not any(r.get("targetLabel") == "Hostname" and r.get("sourceLabels") == ["__meta_kubernetes_pod_node_name"]
                       for r in ep.get("relabelings", [])):
                bad("%s: the %s must name the node on the target (Hostname from __meta_kubernetes_pod_node_name): "
                    "NcclwatchExporterAbsent joins up on it" % (f, m["kind"]))
        for g, ds in exporters:
            _, spec, plabels, _ = pod_specs(ds)[0]
            cports = {p.get("name") for p in spec["containers"][0].get("ports", [])}
            if ds["metadata"].get("namespace") != ns:
                bad("%s: the %s is not in the exporter's namespace (%s)" % (f, m["kind"], g))
            if m["kind"] == "PodMonitor":
                targets, ports = [plabels], cports
            else:
                svcs = [d for h, d in docs if h == g and d["kind"] == "Service"]
                targets = [s["metadata"].get("labels", {}) for s in svcs]
                ports = {p.get("name") for s in svcs for p in s["spec"]["ports"]}
            if not sel or not any(all(t.get(k) == v for k, v in sel.items()) for t in targets):
                bad("%s: the %s selects %s, which matches nothing of %s" % (f, m["kind"], sel, g))
            for ep in eps:
                if ep.get("port") not in ports:
                    bad("%s: the %s scrapes port %r, not a port name of %s (%s)" % (f, m["kind"], ep.get("port"), g,
                                                                                  ", ".join(sorted(p for p in ports if p))))
    own = {"app.kubernetes.io/name"}
    sels = {(f, d["kind"]): {k: v for k, v in d["metadata"].get("labels", {}).items() if k not in own}
            for f, d in mons + rules}
    if len({json.dumps(v, sort_keys=True) for v in sels.values()}) > 1:
        bad("the PrometheusRule and the monitors must carry the same selector label: %s" %
            "; ".join("%s %s %s" % (f, k, v) for (f, k), v in sorted(sels.items())))
    if any(not v for v in sels.values()):
        bad("a PrometheusRule or monitor has no selector label (Prometheus' ruleSelector or monitor selectors): %s" %
            ", ".join("%s %s" % fk for fk, v in sorted(sels.items()) if not v))


def pod_specs(doc):
    """(name, pod spec) of a Pod or of a workload's pod template."""
    kind = doc.get("kind")
    if kind == "Pod":
        return [(doc["metadata"]["name"], doc["spec"], doc["metadata"].get("labels", {}),
                 doc["metadata"].get("annotations", {}))]
    if kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
        t = doc["spec"]["template"]
        return [(doc["metadata"]["name"], t["spec"], t["metadata"].get("labels", {}),
                 t["metadata"].get("annotations", {}))]
    return []


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def check_listen(f, ex, args, annot):
    """--listen is reachable from Prometheus and is the port the pod declares; the port."""
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}
    listen = opt.get("--listen", "")
    port = int(listen.rsplit(":", 1)[1]) if ":" in listen else None
    env = env_of(ex)
    pod_ip = env.get("POD_IP", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP"
    if listen.startswith("$(POD_IP):") and not pod_ip:
        bad("%s: the exporter listens on $(POD_IP) but POD_IP does not come from status.podIP" % f)
    elif not (listen.startswith("$(POD_IP):") or listen.startswith("0.0.0.0:") or listen.startswith("[::]:")):
        bad("%s: the exporter listens on %r: loopback cannot be scraped from Prometheus" % (f, listen))
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        bad("%s: NODE_NAME (the Hostname label) must come from the Downward API (spec.nodeName)" % f)
    cports = {p.get("name"): p["containerPort"] for p in ex.get("ports", [])}
    if port not in cports.values():
        bad("%s: the exporter listens on %s, its container ports are %s" % (f, port, cports))
    if annot.get("prometheus.io/port") != str(port):
        bad("%s: prometheus.io/port annotation %r is not the listen port %s" % (f, annot.get("prometheus.io/port"), port))
    return opt, cports


def check_scraping(f, ds, plabels, annot, cports, same_file):
    """The Service and PodMonitor of the exporter's file select its pods and port."""
    ns = ds["metadata"].get("namespace")
    sel = ds["spec"]["selector"]["matchLabels"]
    if any(plabels.get(k) != v for k, v in sel.items()):
        bad("%s: the DaemonSet's selector %s does not match its pod labels %s" % (f, sel, plabels))
    svcs = [d for d in same_file if d["kind"] == "Service" and d["metadata"].get("namespace") == ns]
    for s in svcs:
        if any(plabels.get(k) != v for k, v in s["spec"]["selector"].items()):
            bad("%s: Service %s selects %s, not the exporter pods" % (f, s["metadata"]["name"], s["spec"]["selector"]))
        for p in s["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            if (tp not in cports) if isinstance(tp, str) else (tp not in cports.values()):
                bad("%s: Service %s targets port %r, which the exporter does not have" % (f, s["metadata"]["name"], tp))
    if not svcs or annot.get("prometheus.io/scrape") != "true":
        bad("%s: the exporter needs a Service and prometheus.io/scrape annotations (the monitors are in files of their own)" % f)


def check_exporter(f, ds, same_file):
    """One exporter DaemonSet: ("procs" or "dir", the node directory it reads or None)."""
    _, spec, plabels, annot = pod_specs(ds)[0]
    ex = spec["containers"][0]
    args = ex.get("command", []) + ex.get("args", [])
    if "exporter" not in args:
        bad("%s: the DaemonSet does not run `ncclwatch exporter`" % f)
    opt, cports = check_listen(f, ex, args, annot)
    check_scraping(f, ds, plabels, annot, cports, same_file)
    if "--procs" in args:
        caps = ex.get("securityContext", {}).get("capabilities", {})
        if not spec.get("hostPID"):
            bad("%s: the exporter finds processes through /proc (--procs) but does not share the node's (hostPID)" % f)
        if "SYS_PTRACE" not in caps.get("add", []):
            bad("%s: --procs needs CAP_SYS_PTRACE to look into other users' processes" % f)
        if "ALL" not in caps.get("drop", []):
            bad("%s: the exporter keeps capabilities it does not need: drop ALL, add SYS_PTRACE and DAC_READ_SEARCH" % f)
        for m in ex.get("volumeMounts", []):
            if not m.get("readOnly"):
                bad("%s: --procs reads; mount %s read-only" % (f, m["name"]))
        return "procs", None
    hostpaths = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
    sdir_ex, ex_host = opt.get("--dir"), None
    for m in ex.get("volumeMounts", []):
        if m["mountPath"] == sdir_ex and m["name"] in hostpaths:
            ex_host = hostpaths[m["name"]]
            if m.get("readOnly"):
                bad("%s: the exporter mounts its directory read-only: it cannot remove old files" % f)
    if not ex_host:
        bad("%s: the exporter's --dir %s is not a hostPath mount" % (f, sdir_ex))
    return "dir", ex_host


def check_trainer(where, spec, c, hostdirs, procs):
    """A training container: through a node directory (NCCLWATCH_DIR and the Downward API), or plain."""
    env = env_of(c)
    hp = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
    if env["NCCL_PROFILER_PLUGIN"].get("value") != "ncclwatch":
        bad("%s: NCCL_PROFILER_PLUGIN is not ncclwatch" % where)
    sd = env.get("NCCLWATCH_DIR", {}).get("value")
    if sd is None:
        # found through /proc: nothing else of ncclwatch's, no node directory, not root
        extra = [n for n in env if n.startswith("NCCLWATCH_") or n in ("POD_NAME", "POD_NAMESPACE", "CONTAINER_NAME")]
        if extra or hp:
            bad("%s: a pod the exporter finds through /proc needs no %s" % (where, ", ".join(extra + list(hp)) or "volume"))
        if not procs:
            bad("%s: no exporter finds training processes through /proc (--procs)" % where)
        if not (spec.get("securityContext", {}).get("runAsNonRoot") or c.get("securityContext", {}).get("runAsNonRoot")):
            bad("%s: the example should run as an ordinary user (runAsNonRoot): nothing needs root" % where)
        return
    mnt = [m for m in c.get("volumeMounts", []) if m["mountPath"] == sd]
    if not mnt or hp.get(mnt[0]["name"]) not in hostdirs:
        bad("%s: NCCLWATCH_DIR %r is not the exporter's host directory %s" % (where, sd, " or ".join(sorted(hostdirs))))
    for var, field in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")):
        ref = env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if ref != field:
            bad("%s: %s must come from the Downward API (%s), not %r" % (where, var, field, ref))
    if env.get("CONTAINER_NAME", {}).get("value") != c["name"]:
        bad("%s: CONTAINER_NAME is not the container's name %s" % (where, c["name"]))


def main():
    mdir, sdir = sys.argv[1], sys.argv[2]
    os.makedirs(sdir, exist_ok=True)
    docs = []
    for f in sorted(glob.glob(os.path.join(mdir, "*.yaml"))):
        try:
            for d in yaml.safe_load_all(open(f)):
                if d is None:
                    continue
                for key in ("apiVersion", "kind", "metadata"):
                    if key not in d:
                        bad("%s: a document lacks %s" % (f, key))
                docs.append((os.path.basename(f), d))
        except yaml.YAMLError as e:
            bad("%s does not parse: %s" % (f, e))
    if problems:
        return 1
    for f, d in docs:
        if d["kind"] in SCHEMAS:
            check_kind(f, d)
    if not all(any(d["kind"] == k for _, d in docs) for k in ("PrometheusRule", "PodMonitor", "ServiceMonitor")):
        bad("want a PrometheusRule, a PodMonitor and a ServiceMonitor (scripts/gen-operator)")
    if not any(d["kind"] == "ConfigMap" and "grafana_dashboard" in d["metadata"].get("labels", {}) for _, d in docs):
        bad("want the dashboard as a ConfigMap labelled grafana_dashboard (scripts/gen-operator)")

    nscript = 0
    for f, d in docs:
        for name, spec, _, _ in pod_specs(d):
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                if not c.get("image") or ":" not in c["image"]:
                    bad("%s: container %s has no image tag" % (f, c.get("name")))
                cmd = c.get("command", []) + c.get("args", [])
                if len(cmd) >= 3 and os.path.basename(cmd[0]) in ("sh", "bash") and cmd[1] == "-c":
                    nscript += 1
                    p = os.path.join(sdir, "%s-%s-%s.sh" % (f.replace(".yaml", ""), name, c["name"]))
                    open(p, "w").write("#!/bin/sh\n" + cmd[2])
                mounts = {m["name"] for m in c.get("volumeMounts", [])}
                vols = {v["name"] for v in spec.get("volumes", [])}
                for m in mounts - vols:
                    bad("%s: %s mounts volume %s, which the pod does not have" % (f, c["name"], m))

    exporters = [(f, d) for f, d in docs if d["kind"] == "DaemonSet" and "ncclwatch" in d["metadata"]["name"]]
    if not exporters:
        bad("want an ncclwatch exporter DaemonSet, found none")
        return 1
    check_monitors(docs, exporters)
    hostdirs, procs = set(), 0
    for f, ds in exporters:
        kind, host = check_exporter(f, ds, [d for g, d in docs if g == f])
        procs += kind == "procs"
        if host:
            hostdirs.add(host)

    trainers = 0
    for f, d in docs:
        for name, spec, _, _ in pod_specs(d):
            for c in spec.get("containers", []):
                if "NCCL_PROFILER_PLUGIN" not in env_of(c):
                    continue
                trainers += 1
                check_trainer("%s: %s/%s" % (f, name, c["name"]), spec, c, hostdirs, procs)
    if not trainers:
        bad("no training example sets NCCL_PROFILER_PLUGIN=ncclwatch")
    print("%d documents, %d training containers, %d scripts" % (len(docs), trainers, nscript))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
