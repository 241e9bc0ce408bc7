#!/usr/bin/env python3
"""Accuracy of the recognition resize modes on the evaluation sets (../shared/data: synth-dev, sroie-dev), on one rung:

- `--rec-interp linear` keeps PaddleOCR's exact semantics: >= 99 % of the reference pipeline's lines
  (../shared/data/reference/SET.ort.json, ONNX Runtime) read identically (scripts/compare_reference.py pairs them
  by box IoU) and every box matched.
- the default (no flag; lanczos) meets its own expected metrics (docs/BENCHMARKS.md, measured on this rung) within
  0.003, beats Guten OCR's token_f1 (../shared/BENCHMARKS.md: 0.967 on synth-dev, 0.682 on sroie-dev) and has no
  metric below the reference's - 0.005 (the reference scored here, by ../shared/tools/ocr_eval.py).
Exit 77 (skipped) without the sets, the reference results, the scorer or the models.

    tests/cli/check_accuracy.py STEADYOCR SOURCE_DIR [--backend cpu] [--threads N]"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("steadyocr")
ap.add_argument("source")
ap.add_argument("--backend", default="cpu")
ap.add_argument("--threads", type=int, default=0)
a = ap.parse_args()
source = pathlib.Path(a.source).resolve()
shared = source.parent / "shared"
scorer = shared / "tools" / "ocr_eval.py"
models = source / "models"

# Measured with the default (lanczos) on the cpu rung (docs/BENCHMARKS.md, "Recognition resize"). Guten OCR's
# token_f1 from ../shared/BENCHMARKS.md.
EXPECTED = {
    "synth-dev": {"det_hmean": 0.9922, "e2e_char_accuracy": 0.9846, "line_exact": 0.8876, "token_f1": 0.9826},
    "sroie-dev": {"det_hmean": 0.9439, "e2e_char_accuracy": 0.8821, "line_exact": 0.6176, "token_f1": 0.7439},
}
GUTEN_TOKEN_F1 = {"synth-dev": 0.967, "sroie-dev": 0.682}
METRICS = ["det_hmean", "e2e_char_accuracy", "line_exact", "token_f1"]

needed = [scorer, source / "scripts" / "compare_reference.py", models / "ch_PP-OCRv4_rec_infer.onnx"]
for s in EXPECTED:
    needed += [shared / "data" / s / "labels.txt", shared / "data" / "reference" / f"{s}.ort.json"]
missing = [str(p) for p in needed if not p.exists()]
if missing:
    print("SKIPPED: not found: " + ", ".join(missing) + " (the evaluation data lives in ../shared; models: "
          "scripts/setup.sh)")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run_ocr(data, out, extra):
    cmd = [a.steadyocr, "ocr", "--quiet", "--backend", a.backend, "--models", str(models), "--format", "json",
           "-o", out, *extra, str(data)]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[-2000:])
        raise SystemExit(f"FAIL {' '.join(cmd)} exited {r.returncode}")


def score(labels, results, ignore_case):
    cmd = [sys.executable, str(scorer), str(labels), str(results), "--json"] + (["--ignore-case"] if ignore_case else [])
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


with tempfile.TemporaryDirectory(prefix="steadyocr-acc-") as tmp:
    for s, expected in EXPECTED.items():
        data = shared / "data" / s
        ref = shared / "data" / "reference" / f"{s}.ort.json"
        ignore_case = s == "sroie-dev"
        linear = os.path.join(tmp, f"{s}.linear.json")
        default = os.path.join(tmp, f"{s}.default.json")
        run_ocr(data, linear, ["--rec-interp", "linear"])
        run_ocr(data, default, [])
        cmp = json.loads(subprocess.run([sys.executable, str(source / "scripts" / "compare_reference.py"), linear,
                                         str(ref), "--json"], capture_output=True, text=True, check=True).stdout)
        check(cmp["identical_share"] >= 0.99 and cmp["matched_lines"] == cmp["reference_lines"],
              f"{s}: --rec-interp linear reads {cmp['identical_texts']}/{cmp['reference_lines']} reference lines "
              f"identically ({cmp['identical_share']:.2%}, >= 99 %), {cmp['matched_lines']} matched")
        got = score(data / "labels.txt", default, ignore_case)
        reference = score(data / "labels.txt", ref, ignore_case)
        for m in METRICS:
            check(got[m] >= expected[m] - 0.003,
                  f"{s}: default {m} {got[m]:.4f} (expected {expected[m]:.4f} - 0.003; reference {reference[m]:.4f})")
            check(got[m] >= reference[m] - 0.005, f"{s}: default {m} {got[m]:.4f} >= reference {reference[m]:.4f} - 0.005")
        check(got["token_f1"] > GUTEN_TOKEN_F1[s],
              f"{s}: default token_f1 {got['token_f1']:.4f} > Guten OCR's {GUTEN_TOKEN_F1[s]}")

print(f"{len(failures)} failure(s)" if failures else "accuracy passed")
sys.exit(1 if failures else 0)
