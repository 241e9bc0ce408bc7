#!/usr/bin/env python3
"""How much recognition work padding adds (issue 13): from `steadyocr ocr SET --format json` output, the recogniser's
calls as the pipeline makes them (crops in aspect-ratio order, batches of --batch, each as wide as its widest crop
and at least --min-width, neighbours of one width merged up to --merge rows), then each call's rows padded up to a
multiple of N for every N given. Prints, per image, the calls, the rows and the rows x width the model computes, and
the share of that work spent on blank rows.

The crop sizes come from the boxes as the pipeline cuts them: width the longer of the top and bottom edges, height
the longer of the sides, turned when the height is at least 1.5 times the width. This re-states the grouping of
pipeline/recognizer.cpp (crop widths are not in the JSON, so steadyocr's own per-image `calls.rec_rows` cannot give
rows x columns); as a check, its unpadded rows per image should match the mean of `calls.rec_rows` of a host-profile
run (2026-12-06: synth-dev 12.9 and 12.9, sroie-dev 48.4 and 49.1; lines dropped for a low score make the gap).

  scripts/rec_padding.py OCR.json [--pad 6 2 0] [--batch 6] [--merge 48] [--min-width 320] [--height 48]
"""
import argparse
import json
import math


def crop_ratio(box):
    def dist(a, b):
        return math.hypot(a[0] - b[0], a[1] - b[1])

    w = max(dist(box[0], box[1]), dist(box[2], box[3]))
    h = max(dist(box[0], box[3]), dist(box[1], box[2]))
    if h >= 1.5 * w:
        w, h = h, w
    return w / max(h, 1.0)


def calls_of(ratios, batch, merge, min_width, height):
    """[rows, width] per model call, as pipeline/recognizer.cpp groups them (width_bucket 0)."""
    ratios = sorted(ratios)
    calls = []
    for start in range(0, len(ratios), batch):
        group = ratios[start:start + batch]
        width = int(height * max(min_width / height, max(group)))
        if calls and calls[-1][1] == width and calls[-1][0] + len(group) <= merge:
            calls[-1][0] += len(group)
        else:
            calls.append([len(group), width])
    return calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ocr_json")
    ap.add_argument("--pad", type=int, nargs="+", default=[6, 2, 0])
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--merge", type=int, default=48)
    ap.add_argument("--min-width", type=int, default=320)
    ap.add_argument("--height", type=int, default=48)
    a = ap.parse_args()
    with open(a.ocr_json) as f:
        results = json.load(f)
    images = [r for r in results.values() if isinstance(r, dict) and "lines" in r]
    if not images:
        raise SystemExit(f"{a.ocr_json}: no images with lines (expected `steadyocr ocr ... --format json` output)")
    calls = [calls_of([crop_ratio(l["box"]) for l in r["lines"]], a.batch, a.merge, a.min_width, a.height)
             for r in images]
    n = len(images)
    real_rows = sum(c[0] for img in calls for c in img)
    real_work = sum(c[0] * c[1] for img in calls for c in img)
    widths = {c[1] for img in calls for c in img}
    print(f"{a.ocr_json}: {n} images, {sum(len(c) for c in calls) / n:.2f} calls and {real_rows / n:.1f} crops per image, "
          f"{len(widths)} widths")
    for pad in a.pad:
        p = max(pad, 1)
        rows = sum((c[0] + p - 1) // p * p for img in calls for c in img)
        work = sum((c[0] + p - 1) // p * p * c[1] for img in calls for c in img)
        how = f"padded to a multiple of {pad}" if pad > 1 else "not padded"
        print(f"  rows {how}: {rows / n:.1f} rows and {work / n:.0f} rows x columns per image, "
              f"{1 - real_work / work:.1%} of it blank rows")


if __name__ == "__main__":
    main()
