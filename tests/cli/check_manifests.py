#!/usr/bin/env python3
"""Offline checks of deploy/kubernetes/*.yaml (tests/cli/test_deploy.sh).

Usage: check_manifests.py DIR SCRIPTDIR. Every file must parse; each exporter
DaemonSet, its Service and PodMonitor must agree on labels and the port, and
name the node (NODE_NAME); one that finds processes through /proc (--procs)
must share the node's processes, with CAP_SYS_PTRACE and nothing else it
can drop; a training pod found that way must need nothing more (no
NCCLWATCH_DIR, no node directory, not root); one that uses a node directory
must mount an exporter's as NCCLWATCH_DIR and set the Downward API variables
the plugin records. Scripts given to
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
    pms = [d for d in same_file if d["kind"] == "PodMonitor"]
    if not svcs or not (pms or annot.get("prometheus.io/scrape") == "true"):
        bad("%s: the exporter needs a Service and a PodMonitor or prometheus.io/scrape annotations" % f)
    for pm in pms:
        if pm["metadata"].get("namespace") != ns:
            bad("%s: the PodMonitor is not in the exporter's namespace %s" % (f, ns))
        if any(plabels.get(k) != v for k, v in pm["spec"]["selector"]["matchLabels"].items()):
            bad("%s: the PodMonitor does not select the exporter pods" % f)
        for ep in pm["spec"]["podMetricsEndpoints"]:
            if ep.get("port") not in cports:
                bad("%s: the PodMonitor scrapes port %r, which the exporter does not name" % (f, ep.get("port")))
            if not ep.get("honorLabels"):
                bad("%s: the PodMonitor must honor labels: the series' pod/namespace/container are the training pod's" % f)


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
