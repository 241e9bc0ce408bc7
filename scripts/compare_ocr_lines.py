#!/usr/bin/env python3
"""Two `steadyocr ocr --format json` results line by line: how many lines are identical in text and box, and how many
in score too (6 decimals). Used by the device scripts to show that a change leaves every result as it was.

  scripts/compare_ocr_lines.py A.json B.json SET "what is compared"
"""
import json
import sys


def lines(path):
    d = json.load(open(path))
    return [(f, l.get("text"), json.dumps(l.get("box")), round(l.get("score", 0), 6))
            for f in sorted(d) for l in d[f].get("lines", [])]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    a_path, b_path, name, what = sys.argv[1:5]
    try:
        a, b = lines(a_path), lines(b_path)
    except Exception as e:  # a run that failed leaves no JSON: say so on the summary line
        print(f"{name}: compare failed ({e})")
        return
    same = sum(1 for x, y in zip(a, b) if x[:3] == y[:3])
    score = sum(1 for x, y in zip(a, b) if x == y)
    print(f"{name}: {len(a)} / {len(b)} lines, {same} identical (text and box), {score} with the same score "
          f"(6 decimals), {what}")


if __name__ == "__main__":
    main()
