#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The shape buckets' A/B table from bench/device.sh buckets: DEST/buckets-{bucketed,exact}-RUN.json
(spx bench --json), the faster run of each side per matrix and format. Usage: buckets_table.py DEST"""
import collections, glob, json, os, sys

dest = sys.argv[1]
best = collections.defaultdict(dict)
for path in sorted(glob.glob(os.path.join(dest, "buckets-*-*.json"))):
    mode = os.path.basename(path).split("-")[1]
    doc = json.load(open(path))
    for r in doc if isinstance(doc, list) else doc.get("rows", doc.get("results", [])):
        key = (r["matrix"], r["format"])
        if mode not in best[key] or r["us"] < best[key][mode][0]:
            best[key][mode] = (r["us"], r.get("kernel", ""))
print("%-16s %-9s %10s %10s %7s  %s" % ("matrix", "format", "bucketed", "exact", "ratio", "kernels (bucketed | exact)"))
for (m, f), v in sorted(best.items()):
    if "bucketed" in v and "exact" in v:
        b, e = v["bucketed"], v["exact"]
        print("%-16s %-9s %10.2f %10.2f %7.3f  %s | %s" % (m, f, b[0], e[0], b[0] / e[0], b[1][:48], e[1][:48]))
