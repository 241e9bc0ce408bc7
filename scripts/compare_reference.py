#!/usr/bin/python3
"""Compares an OCR result file line by line with a reference result (e.g. ../shared/data/reference/*.ort.json).

Lines are paired per image greedily by box IoU (>= --iou, best pairs first); the report gives the share of
reference lines read identically, the share matched at all, and lists the differences.
Both files: {"image": [{"text", "box"}, ...]} or {"image": {"lines": [...]}} (steadyocr's JSON output).
Usage: compare_reference.py OURS.json REFERENCE.json [--iou 0.5] [--show N] [--json]
Exit status 0; the numbers are for people and scripts to judge.
"""
import argparse, json, sys
import numpy as np
import cv2


def load(path):
    obj = json.load(open(path, encoding="utf-8"))
    out = {}
    for name, v in obj.items():
        lines = v["lines"] if isinstance(v, dict) else v
        out[name.split("/")[-1]] = [(l.get("text", ""), np.array(l["box"], np.float32)) for l in lines]
    return out


def iou(a, b):
    a, b = cv2.convexHull(a), cv2.convexHull(b)
    inter, _ = cv2.intersectConvexConvex(a, b)
    union = cv2.contourArea(a) + cv2.contourArea(b) - inter
    return inter / union if union > 0 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ours"); ap.add_argument("reference")
    ap.add_argument("--iou", type=float, default=0.5); ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    ours, ref = load(a.ours), load(a.reference)
    n_ref = n_ours = matched = identical = same_box = 0
    diffs, missing_images = [], []
    for name, rlines in sorted(ref.items()):
        if name not in ours:
            missing_images.append(name)
        olines = ours.get(name, [])
        n_ref += len(rlines); n_ours += len(olines)
        pairs = sorted(((iou(r[1], o[1]), ri, oi) for ri, r in enumerate(rlines) for oi, o in enumerate(olines)),
                       reverse=True)
        used_r, used_o = set(), set()
        for v, ri, oi in pairs:
            if v < a.iou: break
            if ri in used_r or oi in used_o: continue
            used_r.add(ri); used_o.add(oi); matched += 1
            rt, ot = rlines[ri][0], olines[oi][0]
            same_box += bool(np.abs(rlines[ri][1] - olines[oi][1]).max() <= 0.5)
            if rt == ot:
                identical += 1
            else:
                diffs.append((name, "differs", rt, ot, v))
        for ri, r in enumerate(rlines):
            if ri not in used_r: diffs.append((name, "only in reference", r[0], "", 0.0))
        for oi, o in enumerate(olines):
            if oi not in used_o: diffs.append((name, "only in ours", "", o[0], 0.0))
    report = {"images": len(ref), "images_missing": len(missing_images), "reference_lines": n_ref,
              "our_lines": n_ours, "matched_lines": matched, "identical_boxes": same_box,
              "identical_texts": identical,
              "identical_share": round(identical / n_ref, 4) if n_ref else 0.0,
              "matched_share": round(matched / n_ref, 4) if n_ref else 0.0}
    if a.json:
        report["differences"] = [dict(zip(("image", "kind", "reference", "ours", "iou"), d)) for d in diffs]
        print(json.dumps(report, ensure_ascii=False))
        return
    for k, v in report.items(): print("%-18s %s" % (k, v))
    for d in diffs[: a.show]:
        print("  %s: %s: ref=%r ours=%r iou=%.2f" % d)
    if len(diffs) > a.show: print("  ... %d more differences" % (len(diffs) - a.show))


if __name__ == "__main__":
    main()
