#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A reader of nccl-tests' -J JSON (file version 3), written from the field
list nccl-tests 2.19 publishes (its writer's keys and their kinds), not from
ncclwatch's code.

  ntjson_reader.py FILE                 read FILE, check every field
  ntjson_reader.py FILE --like REF      also: FILE has REF's structure (keys, their order, kinds)
  ntjson_reader.py FILE --rows          also print one line per placement: size count type redop root
                                        placement time alg_bw bus_bw nwrong

Exit status 0 when FILE reads, 1 with the reasons otherwise.
"""
import json
import sys

BOOLSTR = "boolstr"  # nccl-tests writes booleans as the strings "true" / "false"
NUM = "num"
NUM_OR_NULL = "num or null"  # "nwrong" is null when nccl-tests did not check (N/A)

TOP = [("version", int), ("start_time", str), ("args", list), ("env", list), ("nccl_version", int),
       ("config", dict), ("results", list), ("out_of_bounds", dict), ("average_bus_bandwidth", dict),
       ("errors", list), ("end_time", str)]
CONFIG = [("nthreads", int), ("ngpus", int), ("minimum_bytes", int), ("maximum_bytes", int),
          ("step_factor|step_bytes", NUM), ("warmup_iters", int), ("iterations", int),
          ("aggregated_iterations", int), ("validation", int), ("graph", int), ("blocking_collectives", BOOLSTR),
          ("per_iter_timing", BOOLSTR), ("per_iter_skip", int), ("parallel_init", BOOLSTR), ("devices", list)]
DEVICE = [("rank", int), ("group", int), ("pid", int), ("hostname", str), ("device", int), ("device_hex", str),
          ("device_info", str)]
RESULT_HEAD = [("size", int), ("count", int), ("type", str), ("redop", str), ("root", str)]
RESULT_TAIL = [("actual_iterations", int), ("experiment_name", str)]
BODY = [("time|cpu_time", NUM), ("alg_bw", NUM), ("bus_bw", NUM), ("nwrong", NUM_OR_NULL)]
PER_ITER = [("skipped_iterations", int), ("min_us", NUM), ("max_us", NUM), ("avg_us", NUM), ("p50_us", NUM),
            ("p95_us", NUM), ("p99_us", NUM), ("stdev_us", NUM), ("cv_pct", NUM), ("times_us", list)]
OOB = [("count", int), ("okay", BOOLSTR)]
AVG = [("bandwidth", NUM), ("okay", str)]


def kind_ok(v, kind):
    if kind is NUM:
        return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v == "nan"
    if kind is NUM_OR_NULL:
        return v is None or kind_ok(v, NUM)
    if kind is BOOLSTR:
        return v in ("true", "false")
    if kind is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, kind)


def check_fields(obj, fields, where, errs, extra_ok=()):
    """obj has exactly these keys (alternatives a|b), in this order, of these kinds."""
    if not isinstance(obj, dict):
        errs.append(f"{where}: not an object")
        return
    keys = [k for k in obj if k not in extra_ok]
    want = []
    for name, kind in fields:
        alts = name.split("|")
        got = [a for a in alts if a in obj]
        if len(got) != 1:
            errs.append(f"{where}: needs exactly one of {alts}")
            continue
        want.append(got[0])
        if not kind_ok(obj[got[0]], kind):
            errs.append(f"{where}.{got[0]}: {obj[got[0]]!r} is not {getattr(kind, '__name__', kind)}")
    if keys != want:
        errs.append(f"{where}: keys {keys} are not {want}")


def read(path):
    errs = []
    with open(path) as f:
        d = json.load(f)
    check_fields(d, TOP, "top", errs)
    if d.get("version") != 3:
        errs.append(f"version {d.get('version')} is not 3")
    if not all(isinstance(a, str) for a in d.get("args", [])) or not all(isinstance(e, str) for e in d.get("env", [])):
        errs.append("args/env hold something other than strings")
    cfg = d.get("config", {})
    check_fields(cfg, CONFIG, "config", errs)
    for i, dev in enumerate(cfg.get("devices", [])):
        check_fields(dev, DEVICE, f"config.devices[{i}]", errs)
    rows = []
    for i, r in enumerate(d.get("results", [])):
        where = f"results[{i}]"
        fields = list(RESULT_HEAD)
        for p in ("out_of_place", "in_place"):
            if p in r:
                fields.append((p, object))
                if r[p] is not None:
                    check_fields(r[p], BODY, f"{where}.{p}", errs)
                    rows.append((r["size"], r["count"], r["type"], r["redop"], int(r["root"]), p, r[p]))
            if p + "_per_iter" in r:
                fields.append((p + "_per_iter", dict))
                pi = r[p + "_per_iter"]
                check_fields(pi, PER_ITER, f"{where}.{p}_per_iter", errs, extra_ok=("per_process_max_times_us",))
                t = pi.get("times_us", [])
                s = sorted(t[pi.get("skipped_iterations", 0):])
                if not t or not all(kind_ok(x, NUM) for x in t):
                    errs.append(f"{where}.{p}_per_iter.times_us: empty or not numbers")
                elif abs(s[0] - pi["min_us"]) > 1e-3 or abs(s[-1] - pi["max_us"]) > 1e-3:
                    errs.append(f"{where}.{p}_per_iter: min/max do not match times_us after the skip")
        fields += RESULT_TAIL
        check_fields(r, fields, where, errs)
        if not isinstance(r.get("root"), str) or len(r["root"]) < 6:
            errs.append(f"{where}.root: {r.get('root')!r} is not a six-wide string")
    check_fields(d.get("out_of_bounds"), OOB, "out_of_bounds", errs)
    check_fields(d.get("average_bus_bandwidth"), AVG, "average_bus_bandwidth", errs)
    return d, rows, errs


def shape(v):
    """Keys (in order) and kinds, lists by their first element; a number is a number."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "num"
    return type(v).__name__


def same_shape(a, b, where, errs):
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            errs.append(f"{where}: keys {list(a)} differ from the reference's {list(b)}")
        for k in a:
            if k in b:
                same_shape(a[k], b[k], f"{where}.{k}", errs)
    elif isinstance(a, list) and isinstance(b, list):
        if a and b:
            same_shape(a[0], b[0], f"{where}[0]", errs)
    elif a != b:
        errs.append(f"{where}: {a} where the reference has {b}")


def main():
    d, rows, errs = read(sys.argv[1])
    if "--like" in sys.argv:
        ref = json.load(open(sys.argv[sys.argv.index("--like") + 1]))
        same_shape(shape(d), shape(ref), "top", errs)
    for e in errs:
        print("ntjson_reader:", e, file=sys.stderr)
    for r in rows if "--rows" in sys.argv else []:
        print(*r[:6], r[6].get("time", r[6].get("cpu_time")), r[6]["alg_bw"], r[6]["bus_bw"], r[6]["nwrong"])
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
