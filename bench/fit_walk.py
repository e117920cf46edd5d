#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits each format's walk factor (its SPX_FORMATS line, include/spx/formats.h) on evals' measured
times, offline: no GPU needed.

The model prices a format at least at its floor plus the longest serial walk of one thread after
it, beyond the floor probe's own walk (rows of 7: plan_model_impl.h). The walk is linear in the
factor, so this script asks the tree's model (`spx select --device-file`, as bench/model_replay.py
does) for each candidate's streaming part and walk, and finds per format the factor that minimises
the mean |log(predicted / measured)| over the given evals' timed candidates. Fit on the fit halves;
judge the result with bench/model_replay.py on the validation halves after changing formats.h.

usage: bench/fit_walk.py [--spx out/spx] EVAL.json=DEVICE.json ...
  e.g. bench/results/select/select-shared-fit.json=bench/results/select/NVIDIA_H100_80GB_HBM3.shared.json
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_replay import predictions, set_of  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROBE_STEPS = 7  # the floor probe's longest row (and CSR's steps there: one lane per row)
CHAIN_NS = 90.0  # SPX__PLAN_CHAIN_NS: the unit of the factors where a device file gives no chain_ns


def factors():
    """{format: (walk, factor)} from the SPX_FORMATS lines' model tuples."""
    with open(os.path.join(ROOT, "include/spx/formats.h")) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"\((\w+),\s+[A-Z]+,\s+\d, \d, ([A-Z]+),\s+([0-9.]+),", text):
        out[m.group(1)] = (m.group(2), float(m.group(3)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spx", default="out/spx")
    ap.add_argument("pairs", nargs="+")
    a = ap.parse_args()
    fac = factors()
    samples = {}  # format -> [(stream, floor, steps beyond the probe's, measured)]
    for pair in a.pairs:
        path, dev_path = pair.split("=")
        s, h = set_of(path, None)
        with open(path) as f:
            evald = json.load(f)
        with open(dev_path) as f:
            dev = json.load(f)
        preds = predictions(a.spx, dev_path, s, h, 1000000)
        for row in evald["rows"]:
            p = preds.get(row["matrix"])
            if not p:
                continue
            measured = {c["format"]: c["measured_us"] for c in row["candidates"] if c.get("measured_us", 0) > 0}
            for c in p["candidates"]:
                fmt, m = c["format"], measured.get(c["format"])
                if fmt not in fac or not m or c.get("chain_us", 0) <= 0 or fac[fmt][1] <= 0:
                    continue
                walk, f0 = fac[fmt]
                ns = dev.get("chain_ns") or CHAIN_NS
                steps = c["chain_us"] / (f0 * ns * 1e-3)
                probe = 0 if walk == "HYB" else PROBE_STEPS  # HYB's K is 0 on the probe
                floor = dev.get("floor_" + fmt, 0)
                samples.setdefault(fmt, []).append((c["stream_us"], floor, max(0.0, steps - probe) * ns, m))

    def pred(t, f):  # t: stream us, floor us, ns of steps beyond the probe's at factor 1, measured us
        return max(t[0], t[1] + t[2] * f * 1e-3)

    print(f"{'format':10s} {'now':>5s} {'fitted':>6s}  candidates  mean |log err| now -> fitted")
    for fmt, ts in sorted(samples.items()):
        def err(f):
            return statistics.mean(abs(math.log(pred(t, f) / t[3])) for t in ts)
        best = min((k / 100 for k in range(0, 501)), key=err)
        print(f"{fmt:10s} {fac[fmt][1]:5.2f} {best:6.2f}  {len(ts):10d}  {err(fac[fmt][1]):.4f} -> {err(best):.4f}")


if __name__ == "__main__":
    main()
