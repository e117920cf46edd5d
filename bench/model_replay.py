#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The tuner's model against times measured on a GPU, offline: no GPU needed.

An eval (`spx select --eval ... --json-file F`, bench/device.sh shared|replicated|select) keeps every
candidate's measured time per matrix. This script asks the model of the tree it runs from for its
predictions on the same matrices, as on the device a calibration file describes (`spx select
--set S --half H --device-file D`), and sets them against those times: the model's error per
candidate and per format, and the ranking's choice (the fitting candidate of least score at
--calls SpMVs, without the strategies' margin and trial rules) against the measured oracle. So a
change to the model can be fitted on an eval's fit half and judged on its validation half before
it goes to the device (which then gives the word: the calibration file is the device's own).

usage: bench/model_replay.py --device-file D [--spx out/spx] [--calls N] EVAL.json[:SET:HALF]...
  An EVAL named select-SET-HALF.json (as bench/results/select/ keeps them) needs no :SET:HALF;
  select-large-*.json is the large set. SPX_SHARED_MATRICES must name the shared matrices.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys


def set_of(path, given):
    """(set, half) of an eval file: given as path:SET:HALF, or from its name."""
    if given:
        return given
    base = os.path.basename(path)
    m = re.match(r"select-(shared|replicated)-(fit|validation)\.json$", base)
    if m:
        return m.group(1), m.group(2)
    if re.match(r"select-(cold-)?large", base):
        return "large", "all"
    sys.exit(f"model_replay: {path}: give its set and half as {path}:SET:HALF")


def predictions(spx, device_file, set_name, half, calls):
    """The model's candidates per matrix name, from spx select --device-file."""
    cmd = [spx, "select", "--set", set_name, "--half", half, "--device-file", device_file, "--calls", str(calls)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        r = json.loads(line)
        rows[r["matrix"]] = r
    return rows


def report(path, evald, preds):
    errs, ratios, by_fmt, missing = [], [], {}, 0
    slow, misses = [], []
    for row in evald["rows"]:
        p = preds.get(row["matrix"])
        if not p:
            missing += 1
            continue
        measured = {c["format"]: c["measured_us"] for c in row["candidates"]
                    if c.get("measured_us") and c["measured_us"] > 0}
        for c in p["candidates"]:
            m = measured.get(c["format"])
            if m and c["predicted_us"] > 0:
                r = c["predicted_us"] / m
                ratios.append((r, c["format"], row["matrix"]))
                errs.append(abs(r - 1))
                by_fmt.setdefault(c["format"], []).append(r)
        oracle = min(measured.values()) if measured else None
        low = p.get("lowest")
        if oracle and low in measured:
            s = measured[low] / oracle
            slow.append(s)
            if s > 1.05:
                misses.append((s, row["matrix"], low, row["oracle"]))
    print(f"{path}: {len(evald['rows'])} matrices ({missing} without a prediction), {len(errs)} timed candidates")
    if errs:
        errs.sort()
        off3 = sum(1 for r, _, _ in ratios if r > 3 or r < 1 / 3)
        print(f"  model error |predicted/measured - 1|: median {100 * statistics.median(errs):.1f}%, "
              f"{100 * sum(e <= 0.2 for e in errs) / len(errs):.0f}% within 20%, "
              f"90th pct {100 * errs[int(0.9 * (len(errs) - 1))]:.1f}%; off by more than 3x: {off3}")
        for r, fmt, name in sorted(x for x in ratios if x[0] > 3 or x[0] < 1 / 3):
            print(f"      off by more than 3x: {name} {fmt} predicted/measured {r:.2f}")
        for f, v in sorted(by_fmt.items()):
            v.sort()
            print(f"    {f:13s} predicted/measured median {statistics.median(v):.3f}, "
                  f"range {v[0]:.2f} .. {v[-1]:.2f} ({len(v)})")
    if slow:
        geo = math.exp(sum(math.log(s) for s in slow) / len(slow))
        within = 100 * sum(s <= 1.05 for s in slow) / len(slow)
        print(f"  the model's ranking (least score): {within:.1f}% within 5% of the oracle, geomean {geo:.3f}x, "
              f"worst {max(slow):.3f}x (from the eval's table of measured times)")
        for s, name, low, orc in sorted(misses, reverse=True)[:8]:
            print(f"    {name}: {low} {s:.2f}x (oracle {orc})")


# Matrices this small move no bytes worth counting: their times are each format's floor.
FLOOR_NNZ = 20000


def floors(evald, device_file):
    """Each format's calibrated floor (floor_NAME in the device file; cuSPARSE's: cusparse_call_us)
    against its measured times on the eval's matrices under FLOOR_NNZ nonzeros: where the floors are
    off, the model is off on every small matrix by that much."""
    with open(device_file) as f:
        dev = json.load(f)
    times = {}
    for row in evald["rows"]:
        if row["nnz"] >= FLOOR_NNZ:
            continue
        for c in row["candidates"]:
            if c.get("measured_us") and c["measured_us"] > 0:
                times.setdefault(c["format"], []).append(c["measured_us"])
    if not times:
        return
    print(f"  floors against the measured times of matrices under {FLOOR_NNZ} nonzeros (us):")
    for fmt, v in sorted(times.items()):
        v.sort()
        fl = dev.get("cusparse_call_us" if fmt == "cusparse_csr" else "floor_" + fmt)
        fl = "-" if fl is None else f"{fl:.2f}"
        print(f"    {fmt:13s} floor {fl:>5}  measured least {v[0]:.2f}, "
              f"median {statistics.median(v):.2f} ({len(v)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device-file", required=True)
    ap.add_argument("--spx", default="out/spx")
    ap.add_argument("--calls", type=int, default=1000000)
    ap.add_argument("evals", nargs="+")
    a = ap.parse_args()
    for e in a.evals:
        parts = e.split(":")
        path = parts[0]
        given = (parts[1], parts[2]) if len(parts) == 3 else None
        s, h = set_of(path, given)
        with open(path) as f:
            evald = json.load(f)
        report(path, evald, predictions(a.spx, a.device_file, s, h, a.calls))
        floors(evald, a.device_file)


if __name__ == "__main__":
    main()
