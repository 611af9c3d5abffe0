#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Median out-of-place all_reduce time per size of bench outputs OUT/cost.off.*.txt
against OUT/cost.on.*.txt, and the difference in %.

    cost-table.py OUT TITLE [SCALE]

With SCALE, a last column gives the difference times SCALE (the cost measured
at one duty cycle, scaled to another)."""
import glob
import os
import statistics
import sys


def times(out, mode):
    t = {}
    for f in sorted(glob.glob(os.path.join(out, "cost.%s.*.txt" % mode))):
        for line in open(f):
            p = line.split()
            if len(p) > 6 and p[0].isdigit() and p[2] == "float":
                t.setdefault(int(p[0]), []).append(float(p[5]))
    return t


def main():
    out, title = sys.argv[1], sys.argv[2]
    scale = float(sys.argv[3]) if len(sys.argv) > 3 else None
    off, on = times(out, "off"), times(out, "on")
    print(title)
    for s in sorted(off):
        if s not in on:
            continue
        a, b = statistics.median(off[s]), statistics.median(on[s])
        c = (b - a) / a * 100
        line = "  %12d B  without %9.1f  with %9.1f  %+7.2f%%" % (s, a, b, c)
        if scale is not None:
            line += "  scaled %+7.3f%%" % (c * scale)
        print(line)


main()
