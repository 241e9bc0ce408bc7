#!/usr/bin/python3
"""What each new input shape cost the host, from a `steadyocr --log-level debug` log (issue 13's < 0.5 ms bar).

  scripts/new_shape_costs.py LOG [LABEL]

Reads the runtime's per-shape lines ("planned MODEL for SHAPE on BACKEND in X ms (passes P, prepare Q)") and the
Vulkan shape-free plan's ("MODEL: instance for SHAPE in X ms (N kept)"), and prints per model: how many new shapes,
median / p90 / max, how many under 0.5 ms, per model and backend. The first shape of each (start-up: shader
compilation, first allocations) is listed apart; so is every shape-free instance made on an emptied cache ("(1 kept)":
the shared buffers grew, or a worker restarted), which is counted in the figures but named.
"""
import re
import statistics
import sys

PER_SHAPE = re.compile(r"planned (\S+) for (\S+) on (\S+) in ([\d.]+) ms \(passes")
SHAPE_FREE = re.compile(r"(\S+): instance for (\S+) in ([\d.]+) ms \((\d+) kept\)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
    costs, first, emptied = {}, {}, {}
    for line in open(sys.argv[1], errors="replace"):
        m = SHAPE_FREE.search(line)
        if m:
            key, ms = (m.group(1), "vulkan, one plan"), float(m.group(3))
            fresh = m.group(4) == "1"
        else:
            m = PER_SHAPE.search(line)
            if not m:
                continue
            key, ms, fresh = (m.group(1), m.group(3) + ", per shape"), float(m.group(4)), False
        if key not in first:
            first[key] = ms
            continue
        costs.setdefault(key, []).append(ms)
        emptied[key] = emptied.get(key, 0) + fresh
    if not first:
        print(f"{label}: no plan lines (was the log level debug?)")
        return
    for key in sorted(first):
        v = sorted(costs.get(key, []))
        head = f"{label}: {key[0]} on {key[1]}: first {first[key]:.2f} ms"
        if not v:
            print(head)
            continue
        p90 = v[min(len(v) - 1, int(0.9 * len(v)))]
        under = sum(1 for x in v if x < 0.5)
        print(f"{head}; then {len(v)} new shapes, median {statistics.median(v):.2f} / p90 {p90:.2f} / max {v[-1]:.2f} "
              f"ms, {under} of {len(v)} under 0.5 ms" + (f" ({emptied[key]} on an emptied cache)" if emptied[key] else ""))


if __name__ == "__main__":
    main()
