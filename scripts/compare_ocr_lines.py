#!/usr/bin/env python3
"""Two `steadyocr ocr --format json` results line by line: how many lines are identical in text and box, and how many
in score too (6 decimals). Used by the device scripts to show that a change leaves every result as it was. Lines are
paired within each image; an image one run failed (an error, no lines) is left out and counted apart.

  scripts/compare_ocr_lines.py A.json B.json SET "what is compared"
"""
import json
import sys


def images(path):
    d = json.load(open(path))
    return {f: ([(l.get("text"), json.dumps(l.get("box")), round(l.get("score", 0), 6)) for l in r.get("lines", [])],
                bool(r.get("error"))) for f, r in d.items() if isinstance(r, dict)}


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    a_path, b_path, name, what = sys.argv[1:5]
    try:
        a, b = images(a_path), images(b_path)
    except Exception as e:  # a run that failed leaves no JSON: say so on the summary line
        print(f"{name}: compare failed ({e})")
        return
    both = [f for f in sorted(a) if f in b and not a[f][1] and not b[f][1]]
    left_out = len(set(a) | set(b)) - len(both)
    na = sum(len(a[f][0]) for f in both)
    nb = sum(len(b[f][0]) for f in both)
    same = sum(1 for f in both for x, y in zip(a[f][0], b[f][0]) if x[:2] == y[:2])
    score = sum(1 for f in both for x, y in zip(a[f][0], b[f][0]) if x == y)
    print(f"{name}: {na} / {nb} lines, {same} identical (text and box), {score} with the same score "
          f"(6 decimals), {what}" + (f"; {left_out} images failed in a run or read in one only, left out"
                                     if left_out else ""))


if __name__ == "__main__":
    main()
