#!/usr/bin/python3
"""What each new input shape cost the host, from a `steadyocr --log-level debug` log (issue 13's < 0.5 ms bar).

  scripts/new_shape_costs.py LOG [LABEL]

Reads the runtime's per-shape lines ("planned MODEL for SHAPE on BACKEND in X ms (passes P, prepare Q)"; P and Q's
medians are printed), the
Vulkan shape-free plan's ("MODEL: instance for SHAPE in X ms (N kept)") and the CUDA one's ("BACKEND: ROLE instance for
SHAPE in X ms (PHASES; N steps)"), and prints per model: how many new shapes,
median / p90 / max, how many under 0.5 ms, per model and backend. The first shape of each (start-up: shader
compilation, first allocations), and of each worker process restarted after it, is listed apart; so is every shape-free instance made on an emptied cache ("(1 kept)":
the shared buffers grew, or a worker restarted), which is counted in the figures but named. Also, per model, the CUDA
plan builder's lines ("plan of MODEL for SHAPE: build B ms (COSTLIEST OPS), fuse F, place P; N steps") and the CUDA
graph captures ("captured ROLE ... into a CUDA graph in X ms").
"""
import re
import statistics
import sys

PER_SHAPE = re.compile(r"planned (\S+) for (\S+) on (\S+) in ([\d.]+) ms \(passes ([\d.]+), prepare ([\d.]+)\)")
# The CUDA plan builder's own line (per-shape plans; an instance of the plan for every shape has its plan's line).
BUILDER = re.compile(r"plan of (\S+) for .*: build ([\d.]+) ms \((.*)\), fuse ([\d.]+), place ([\d.]+); (\d+) steps")
CAPTURE = re.compile(r": captured (\S+) .* into a CUDA graph(?: on arena \d+)? in ([\d.]+) ms")
SHAPE_FREE = re.compile(r"(\S+): instance for (\S+) in ([\d.]+) ms \((?:(.*); )?(\d+) kept\)")
CUDA_SHAPE_FREE = re.compile(r"(\S+): (\S+) instance for (\S+) in ([\d.]+) ms \((.*); \d+ steps\)")
PHASE = re.compile(r"(\w+) ([\d.]+)")
# A worker process (re)starting: its first shapes of each model are start-ups again (shader compilation).
RESTART = re.compile(r"\[worker\] .*jobs at once")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
    costs, first, emptied, restarts, phases = {}, {}, {}, {}, {}
    builds, captures = {}, {}  # model -> [(build, fuse, place, steps, costliest ops)]; role -> [ms]
    fresh_process = set()  # models whose next shape is a restarted worker's first
    for line in open(sys.argv[1], errors="replace"):
        if RESTART.search(line):
            fresh_process = set(first)
            continue
        b = BUILDER.search(line)
        if b:
            builds.setdefault(b.group(1), []).append(
                (float(b.group(2)), float(b.group(4)), float(b.group(5)), int(b.group(6)), b.group(3)))
            continue
        c = CAPTURE.search(line)
        if c:
            captures.setdefault(c.group(1), []).append(float(c.group(2)))
            continue
        cuda = CUDA_SHAPE_FREE.search(line)
        m = None if cuda else SHAPE_FREE.search(line)
        if cuda:
            key, ms, fresh = (cuda.group(2), cuda.group(1) + ", one plan"), float(cuda.group(4)), False
            split = dict((k, float(v)) for k, v in PHASE.findall(cuda.group(5)))
        elif m:
            key, ms = (m.group(1), "vulkan, one plan"), float(m.group(3))
            fresh = m.group(5) == "1"
            split = dict((k, float(v)) for k, v in PHASE.findall(m.group(4) or ""))
        else:
            m = PER_SHAPE.search(line)
            if not m:
                continue
            key, ms, fresh = (m.group(1), m.group(3) + ", per shape"), float(m.group(4)), False
            split = {"passes": float(m.group(5)), "prepare": float(m.group(6))}
        if key not in first:
            first[key] = ms
            continue
        if key in fresh_process:
            fresh_process.discard(key)
            restarts.setdefault(key, []).append(ms)
            continue
        costs.setdefault(key, []).append(ms)
        emptied[key] = emptied.get(key, 0) + fresh
        for k, v in split.items():
            phases.setdefault(key, {}).setdefault(k, []).append(v)
    if not first:
        print(f"{label}: no plan lines (was the log level debug?)")
        return
    for key in sorted(first):
        v = sorted(costs.get(key, []))
        head = f"{label}: {key[0]} on {key[1]}: first {first[key]:.2f} ms"
        if restarts.get(key):
            head += f" (and {len(restarts[key])} restarted workers' firsts, " + \
                ", ".join(f"{x:.1f}" for x in restarts[key]) + " ms)"
        if not v:
            print(head)
            continue
        p90 = v[min(len(v) - 1, int(0.9 * len(v)))]
        under = sum(1 for x in v if x < 0.5)
        print(f"{head}; then {len(v)} new shapes, median {statistics.median(v):.2f} / p90 {p90:.2f} / max {v[-1]:.2f} "
              f"ms, {under} of {len(v)} under 0.5 ms" + (f" ({emptied[key]} on an emptied cache)" if emptied[key] else ""))
        if phases.get(key):
            print("    medians, ms: " + ", ".join(f"{k} {statistics.median(x):.3f}" for k, x in phases[key].items()))
    for name, v in builds.items():
        med = lambda i: statistics.median(x[i] for x in v)
        print(f"{label}: {name}'s CUDA plan builds: build {med(0):.2f} ms, fuse {med(1):.2f}, place {med(2):.2f} "
              f"(medians of {len(v)}), {med(3):.0f} steps; the last one's costliest ops: {v[-1][4]}")
    for role, v in captures.items():
        print(f"{label}: graph captures of {role}: {len(v)}, median {statistics.median(v):.2f} ms, sum {sum(v):.0f} ms")


if __name__ == "__main__":
    main()
