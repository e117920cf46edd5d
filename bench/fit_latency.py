#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits how the model combines a format's streaming time and its longest serial walk, on the fit
half only, and reports the fit on the validation half (issue 29: constants from one half, results
from the other).

Usage: bench/fit_latency.py FIT.json VALIDATION.json
The files are `spx select --eval ... --json-file F` of the two halves (bench/device.sh DEST shared):
each candidate carries stream_us and chain_us besides predicted_us = max(stream_us, chain_us) and
the measured time. The rule tried: t = (stream^p + (k chain)^p)^(1/p), p = inf being today's max().
Printed per half: the median and 90th percentile of |t/measured - 1| over every timed spx candidate,
and the offline choice (the candidate of least t) against the measured oracle: share within 5%,
geomean and worst slowdown.
"""
import json
import math
import sys


def rows(path):
    out = []
    for r in json.load(open(path))["rows"]:
        c = [x for x in r.get("candidates", []) if x.get("measured_us", -1) > 0 and x.get("stream_us", -1) >= 0
             and x["format"] != "cusparse_csr"]
        if c:
            out.append((r["matrix"], c))
    return out


def pred(c, k, p):
    s, ch = c["stream_us"], k * c["chain_us"]
    if p == math.inf:
        return max(s, ch)
    return (s ** p + ch ** p) ** (1.0 / p)


def score(data, k, p):
    errs, slow = [], []
    for _, cs in data:
        errs += [abs(pred(c, k, p) / c["measured_us"] - 1) for c in cs]
        best = min(c["measured_us"] for c in cs)
        pick = min(cs, key=lambda c: pred(c, k, p))
        slow.append(pick["measured_us"] / best)
    errs.sort()
    med = errs[len(errs) // 2]
    p90 = errs[int(0.9 * (len(errs) - 1))]
    within = sum(s <= 1.05 for s in slow) / len(slow)
    geo = math.exp(sum(math.log(s) for s in slow) / len(slow))
    return med, p90, within, geo, max(slow)


def line(name, v):
    return "%-24s error median %5.1f%%, 90th pct %6.1f%%; choice within 5%% %5.1f%%, geomean %.3fx, worst %.2fx" % (
        name, 100 * v[0], 100 * v[1], 100 * v[2], v[3], v[4])


def main():
    fit, val = rows(sys.argv[1]), rows(sys.argv[2])
    # the objective: the sum of squared log errors over the fit half's candidates
    def loss(k, p):
        return sum(math.log(pred(c, k, p) / c["measured_us"]) ** 2 for _, cs in fit for c in cs)
    grid_k = [0.5 + 0.05 * i for i in range(41)]
    grid_p = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, math.inf]
    best = min(((loss(k, p), k, p) for k in grid_k for p in grid_p))
    _, k, p = best
    print("fitted on %s (%d matrices): k = %.2f, p = %s" % (sys.argv[1], len(fit), k, "inf (max)" if p == math.inf else p))
    for name, data in (("fit", fit), ("validation", val)):
        print(line(name + " today (k 1, max)", score(data, 1.0, math.inf)))
        print(line(name + " fitted", score(data, k, p)))


if __name__ == "__main__":
    main()
