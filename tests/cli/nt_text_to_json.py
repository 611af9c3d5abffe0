#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An nccl-tests -J document from the rows of an nccl-tests text table, for tests.

  nt_text_to_json.py TEXT HOST [NAME=value...]

Rows with in-place and out-of-place columns (size count type redop root and
eight more) become "results"; the document says two ranks on HOST, NCCL
2.28.9, start time 2026-12-01 14:09:13, args "./build/all_reduce_perf -g 2"
and the given environment as its "env". Written to standard output.
"""
import json
import sys


def body(v):
    return {"time": float(v[0]), "alg_bw": float(v[1]), "bus_bw": float(v[2]), "nwrong": int(v[3])}


def main():
    text, host, env = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = []
    for line in open(text):
        t = line.split()
        if len(t) == 13 and t[0].isdigit():
            rows.append({"size": int(t[0]), "count": int(t[1]), "type": t[2], "redop": t[3], "root": t[4],
                         "out_of_place": body(t[5:9]), "in_place": body(t[9:13])})
    doc = {"version": 3, "start_time": "2026-12-01 14:09:13", "args": ["./build/all_reduce_perf", "-g", "2"],
           "env": env, "nccl_version": 22809,
           "config": {"nthreads": 1, "ngpus": 2,
                      "devices": [{"rank": r, "hostname": host, "device_info": "NVIDIA H200"} for r in (0, 1)]},
           "results": rows, "out_of_bounds": {"count": 0}, "average_bus_bandwidth": {"bandwidth": 111.374}}
    json.dump(doc, sys.stdout)


if __name__ == "__main__":
    main()
