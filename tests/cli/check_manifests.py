#!/usr/bin/env python3
"""Offline checks of deploy/kubernetes/*.yaml (tests/cli/test_deploy.sh).

Usage: check_manifests.py DIR SCRIPTDIR. Every file must parse; the exporter
DaemonSet, its Service and PodMonitor must agree on labels and the port;
the training pods must mount the exporter's host directory as NCCLWATCH_DIR
and set the Downward API variables the plugin records. Scripts given to
`sh -c` are written to SCRIPTDIR for shellcheck. Prints each problem; exit 1
when there is any.
"""
import glob
import os
import sys

import yaml

problems = []


def bad(msg):
    problems.append(msg)
    print("problem: " + msg)


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

    ds = [d for _, d in docs if d["kind"] == "DaemonSet" and "ncclwatch" in d["metadata"]["name"]]
    if len(ds) != 1:
        bad("want one ncclwatch exporter DaemonSet, found %d" % len(ds))
        return 1
    ds = ds[0]
    _, spec, plabels, annot = pod_specs(ds)[0]
    ex = spec["containers"][0]
    args = ex.get("command", []) + ex.get("args", [])
    if "exporter" not in args:
        bad("the DaemonSet does not run `ncclwatch exporter`")
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}
    sdir_ex = opt.get("--dir")
    listen = opt.get("--listen", "")
    port = int(listen.rsplit(":", 1)[1]) if ":" in listen else None
    if not listen.startswith("0.0.0.0:") and not listen.startswith("[::]:"):
        bad("the exporter listens on %r: loopback cannot be scraped from Prometheus" % listen)
    cports = {p.get("name"): p["containerPort"] for p in ex.get("ports", [])}
    if port not in cports.values():
        bad("the exporter listens on %s, its container ports are %s" % (port, cports))
    if annot.get("prometheus.io/port") != str(port):
        bad("prometheus.io/port annotation %r is not the listen port %s" % (annot.get("prometheus.io/port"), port))
    hostpaths = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
    ex_host = None
    for m in ex.get("volumeMounts", []):
        if m["mountPath"] == sdir_ex and m["name"] in hostpaths:
            ex_host = hostpaths[m["name"]]
            if m.get("readOnly"):
                bad("the exporter mounts its directory read-only: it cannot remove old files")
    if not ex_host:
        bad("the exporter's --dir %s is not a hostPath mount" % sdir_ex)
    ns = ds["metadata"].get("namespace")
    sel = ds["spec"]["selector"]["matchLabels"]
    if any(plabels.get(k) != v for k, v in sel.items()):
        bad("the DaemonSet's selector %s does not match its pod labels %s" % (sel, plabels))

    svcs = [d for _, d in docs if d["kind"] == "Service" and d["metadata"].get("namespace") == ns]
    for s in svcs:
        if any(plabels.get(k) != v for k, v in s["spec"]["selector"].items()):
            bad("Service %s selects %s, not the exporter pods" % (s["metadata"]["name"], s["spec"]["selector"]))
        for p in s["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            if (tp not in cports) if isinstance(tp, str) else (tp not in cports.values()):
                bad("Service %s targets port %r, which the exporter does not have" % (s["metadata"]["name"], tp))
    pms = [d for _, d in docs if d["kind"] == "PodMonitor"]
    if not svcs or not (pms or annot.get("prometheus.io/scrape") == "true"):
        bad("the exporter needs a Service and a PodMonitor or prometheus.io/scrape annotations")
    for pm in pms:
        if pm["metadata"].get("namespace") != ns:
            bad("the PodMonitor is not in the exporter's namespace %s" % ns)
        if any(plabels.get(k) != v for k, v in pm["spec"]["selector"]["matchLabels"].items()):
            bad("the PodMonitor does not select the exporter pods")
        for ep in pm["spec"]["podMetricsEndpoints"]:
            if ep.get("port") not in cports:
                bad("the PodMonitor scrapes port %r, which the exporter does not name" % ep.get("port"))
            if not ep.get("honorLabels"):
                bad("the PodMonitor must honor labels: the series' pod/namespace/container are the training pod's")

    trainers = 0
    for f, d in docs:
        for name, spec, _, _ in pod_specs(d):
            hp = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
            for c in spec.get("containers", []):
                env = env_of(c)
                if "NCCL_PROFILER_PLUGIN" not in env:
                    continue
                trainers += 1
                where = "%s: %s/%s" % (f, name, c["name"])
                if env["NCCL_PROFILER_PLUGIN"].get("value") != "ncclwatch":
                    bad("%s: NCCL_PROFILER_PLUGIN is not ncclwatch" % where)
                sd = env.get("NCCLWATCH_DIR", {}).get("value")
                mnt = [m for m in c.get("volumeMounts", []) if m["mountPath"] == sd]
                if not mnt or hp.get(mnt[0]["name"]) != ex_host:
                    bad("%s: NCCLWATCH_DIR %r is not the exporter's host directory %s" % (where, sd, ex_host))
                for var, field in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")):
                    ref = env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                    if ref != field:
                        bad("%s: %s must come from the Downward API (%s), not %r" % (where, var, field, ref))
                if env.get("CONTAINER_NAME", {}).get("value") != c["name"]:
                    bad("%s: CONTAINER_NAME is not the container's name %s" % (where, c["name"]))
    if not trainers:
        bad("no training example sets NCCL_PROFILER_PLUGIN=ncclwatch")
    print("%d documents, %d training containers, %d scripts" % (len(docs), trainers, nscript))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
