#!/usr/bin/python3
"""One row of docs/COMPATIBILITY.md from a real `steadyocr doctor --json` report (schema in docs/DOCTOR.md):
driver x CUDA runtime x cuDNN x GPU architecture -> what the doctor found.

  steadyocr doctor --level 4 --models models --json > report.json
  scripts/compat_row.py report.json --source "H200 (device machine), system cuDNN"   # prints the row
  scripts/compat_row.py --header                                                      # the table's header

Every cell comes from the report; nothing is typed in. Exit 2: not a doctor report.
"""
import argparse
import json
import sys

COLUMNS = ["GPU (cc)", "driver (CUDA)", "CUDA runtime", "cuDNN loaded (built)", "cuBLAS loaded (built)",
           "architecture", "result", "steadyocr", "source"]


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or "-"


def row_cells(report, source):
    env = report.get("environment", {})
    gpu = env.get("gpu", {})
    build = env.get("build", {})
    checks = {c["check"]: c for layer in report.get("layers", []) for c in layer.get("checks", [])}
    devices = gpu.get("devices") or []
    gpus = ", ".join(f"{d.get('name')} ({d.get('compute_capability')})" for d in devices) or "none visible"
    driver = gpu.get("driver_version") or "none"
    if gpu.get("cuda_driver_version"):
        driver += f" (CUDA {gpu['cuda_driver_version']})"
    runtime = build.get("cuda_runtime", "")
    rt = env.get("cuda_runtime") or {}
    if rt.get("path"):
        runtime += " static" if rt["path"] == "static" else f" {rt['path']}"
    cudnn = env.get("cudnn") or {}
    cudnn_text = (f"{cudnn.get('version')} {cudnn.get('realpath') or cudnn.get('path', '')}" if cudnn.get("loaded")
                  else "not loaded") + f" ({build.get('cudnn', '?')})"
    cublas = env.get("cublas") or {}
    cublas_text = (cublas.get("version", "") if cublas.get("loaded") else "not loaded") + f" ({build.get('cublas', '?')})"
    arch = checks.get("arch", {})
    arch_text = arch.get("summary", "").split(": ", 1)[-1] if arch.get("status") != "skipped" else "not checked"
    kernel = checks.get("kernel_image", {})
    if kernel.get("status") == "pass":
        arch_text += "; kernels run"
    not_pass = [f"{c['code']} ({c['status']})" for c in report.get("findings", [])
                if c.get("status") in ("warn", "fail") and c.get("code")]
    result = (f"{'PASS' if report.get('ok') else 'FAIL'}: level {report.get('passed_level')} of "
              f"{report.get('requested_level')}" + (": " + ", ".join(not_pass) if not_pass else ""))
    return [gpus, driver, runtime, cudnn_text, cublas_text, arch_text, result,
            env.get("steadyocr", {}).get("version", report.get("steadyocr_version", "")), source]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", nargs="?", help="steadyocr doctor --json report")
    ap.add_argument("--source", default="", help="where and when the report was made (the row's last cell)")
    ap.add_argument("--header", action="store_true", help="print the table's header")
    args = ap.parse_args(argv)
    if args.header:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        if not args.report:
            return 0
    if not args.report:
        ap.error("give a doctor JSON report (or --header)")
    try:
        with open(args.report) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"compat_row: cannot read {args.report}: {e}", file=sys.stderr)
        return 2
    if report.get("schema") != "steadyocr-doctor":
        print(f"compat_row: {args.report} is not a steadyocr doctor report (schema {report.get('schema')!r}); "
              "make one with `steadyocr doctor --level 4 --models models --json`", file=sys.stderr)
        return 2
    print("| " + " | ".join(cell(c) for c in row_cells(report, args.source)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
