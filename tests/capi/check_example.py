#!/usr/bin/env python3
"""Runs the C example (examples/c/ocr_example.c, built as build/examples/ocr_example) and checks what it prints:
every text line of examples/sample_doc.jpg (examples/sample_doc.labels.txt, full-width colons and spaces aside), the
image's JSON equal to `steadyocr ocr --format json` modulo timings, and the error statuses of include/steadyocr.h.
Exit 77 (skipped) without the models.

    tests/capi/check_example.py BUILD_DIR SOURCE_DIR MODELS_DIR"""

import json
import pathlib
import subprocess
import sys

build, source, models = map(pathlib.Path, sys.argv[1:4])
example = build / "examples" / "ocr_example"
sample = source / "examples" / "sample_doc.jpg"
if not (models / "ch_PP-OCRv4_rec_infer.onnx").is_file():
    print(f"SKIPPED: models absent from {models}")
    sys.exit(77)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def norm(s):
    return s.replace("：", ":").replace(" ", "")


run = subprocess.run([str(example), "--models", str(models), str(sample)], capture_output=True, text=True)
check(run.returncode == 0, f"the example reads the sample (exit {run.returncode}; stderr: {run.stderr[-500:]})")
out = run.stdout.splitlines()
check(out[0].startswith("steadyocr ") and "(C API 1)" in out[0], "version line: " + out[0])
texts = [line.split("\t")[2] for line in out if line.count("\t") == 2]
labels = json.loads((source / "examples" / "sample_doc.labels.txt").read_text().split("\t", 1)[1])
for label in labels:
    check(norm(label["transcription"]) in map(norm, texts), "line read: " + label["transcription"])
check(len(texts) == len(labels), f"{len(texts)} lines, {len(labels)} labelled")

cli = subprocess.run([str(build / "steadyocr"), "ocr", "--format", "json", "--models", str(models), str(sample)],
                     capture_output=True, text=True, check=True)
want = json.loads(cli.stdout)["sample_doc.jpg"]
got = json.loads(out[-1])
for d in (want, got):
    d.pop("timings_ms")
    for e in d["fallbacks"]:
        e.pop("time")
check(got == want, "steadyocr_result_json equals the CLI's object (timings aside)")

bad = subprocess.run([str(example), "--models", str(models), str(source / "README.md")], capture_output=True,
                     text=True)
check(bad.returncode == 1 and "(status 5, code UNSUPPORTED)" in bad.stderr, "a non-image: STEADYOCR_IMAGE_ERROR: "
      + bad.stderr.strip()[-200:])
nomodels = subprocess.run([str(example), "--models", str(build / "no-models-here"), str(sample)], capture_output=True,
                          text=True)
check(nomodels.returncode == 2 and "(status 4, code INVALID_ARGUMENT)" in nomodels.stderr and "fix: " in
      nomodels.stderr, "missing models: STEADYOCR_MODEL_ERROR with a fix: " + nomodels.stderr.strip()[-200:])
unknown = subprocess.run([str(example), "--no_such_option", "1", str(sample)], capture_output=True, text=True)
check(unknown.returncode == 2 and "unknown option 'no_such_option' (status 2" in unknown.stderr,
      "unknown option: STEADYOCR_INVALID_OPTION")
# rec_interp through the C options: each mode reads the Latin page as the CLI does with the same flag.
latin = source / "tests" / "data" / "ocr" / "latin" / "spaces.jpg"
for mode in ("linear", "lanczos"):
    c = subprocess.run([str(example), "--models", str(models), "--rec_interp", mode, str(latin)], capture_output=True,
                       text=True)
    c_texts = [line.split("\t")[2] for line in c.stdout.splitlines() if line.count("\t") == 2]
    cli = subprocess.run([str(build / "steadyocr"), "ocr", "--format", "json", "--models", str(models), "--rec-interp",
                          mode, str(latin)], capture_output=True, text=True, check=True)
    cli_texts = [line["text"] for line in json.loads(cli.stdout)["spaces.jpg"]["lines"]]
    check(c.returncode == 0 and c_texts == cli_texts and len(c_texts) == 5,
          f"rec_interp {mode}: the C API reads {c_texts} (the CLI: {cli_texts})")
doctor = subprocess.run([str(build / "steadyocr"), "doctor", "--level", "1"], capture_output=True, text=True)
gpu = subprocess.run([str(example), "--models", str(models), "--require_gpu", "true", str(sample)],
                     capture_output=True, text=True)
if doctor.returncode != 0:  # no usable GPU driver here: require_gpu is an error with the doctor's finding
    check(gpu.returncode == 2 and "(status 3, code L1_" in gpu.stderr and "fix: " in gpu.stderr,
          "require_gpu without a GPU: STEADYOCR_BACKEND_UNAVAILABLE: " + gpu.stderr.strip()[-300:])
else:
    check(gpu.returncode == 0, "require_gpu with a GPU reads the sample")
sys.exit(1 if failures else 0)
