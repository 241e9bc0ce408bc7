#!/usr/bin/env python3
"""`pip install .` works: installs the package with pip (offline: --no-build-isolation --no-index, reusing BUILD_DIR
through $STEADYOCR_BUILD_DIR) into a fresh folder, then, from another working directory and with no STEADYOCR_*
variable set, imports it and checks that it is self-contained: the module, its steadyocr binary, the engine's
libraries and the CUDA plugin (where the build made one) are the package's own copies with relative RUNPATHs; OCR()
reads the package's models by default and gives the lines of `steadyocr ocr` on examples/sample_doc.jpg; the
console script `steadyocr` runs the package's binary. Exit 77 (skipped) without pip or without the models.

    tests/python/check_pip_install.py BUILD_DIR SOURCE_DIR"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

build, source = (pathlib.Path(a).resolve() for a in sys.argv[1:3])
sample = source / "examples" / "sample_doc.jpg"
if not (source / "models" / "ch_PP-OCRv4_rec_infer.onnx").is_file():
    print(f"SKIPPED: models absent from {source / 'models'} (scripts/setup.sh fetches them)")
    sys.exit(77)
if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
    print(f"SKIPPED: pip is not installed for {sys.executable} (Debian: python3-pip); `pip install .` not tested")
    sys.exit(77)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


clean_env = {k: v for k, v in os.environ.items() if not k.startswith("STEADYOCR_") and k != "PYTHONPATH"}
with tempfile.TemporaryDirectory(prefix="steadyocr-pip-") as tmp:
    site = pathlib.Path(tmp) / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                          "--target", str(site), str(source)],
                         env=dict(clean_env, STEADYOCR_BUILD_DIR=str(build)), capture_output=True, text=True)
    check(pip.returncode == 0, f"pip install . (exit {pip.returncode})")
    if pip.returncode != 0:
        print(pip.stdout[-3000:], pip.stderr[-3000:], sep="\n")
        sys.exit(1)
    pkg = site / "steadyocr"
    files = ["__init__.py", "bin/steadyocr", "lib/steadyocr/libso_core.so", "lib/steadyocr/libso_graph.so",
             "models/ch_PP-OCRv4_det_infer.onnx", "models/ppocr_keys_v1.txt"]
    has_plugin = (build / "libsteadyocr_cuda13.so").is_file()
    if has_plugin:
        files.append("lib/steadyocr/libsteadyocr_cuda13.so")
    for f in files:
        check((pkg / f).is_file(), f"the package holds {f}")
    natives = list(pkg.glob("_native*.so"))
    check(len(natives) == 1, "the package holds its extension _native")
    # Nothing may point back into the build tree: the package must survive its removal.
    for f in natives + [pkg / "bin/steadyocr"] + sorted((pkg / "lib/steadyocr").glob("*.so")):
        dyn = subprocess.run(["readelf", "-d", str(f)], capture_output=True, text=True).stdout
        paths = [line.split("[", 1)[1].rstrip("]") for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line]
        check(bool(paths) and all(str(build) not in p for p in paths) and "$ORIGIN" in paths[0],
              f"{f.relative_to(site)} RUNPATH {paths} is relative")

    probe = ("import json, steadyocr\n"
             "o = steadyocr.OCR()\n"
             f"r = o.read({str(sample)!r})\n"
             "d = steadyocr.doctor_report(2)\n"
             "print(json.dumps({'file': steadyocr.__file__, 'exe': steadyocr._native.steadyocr_executable,\n"
             "  'version': steadyocr.__version__, 'lines': [l.text for l in r.lines], 'rung': r.rung,\n"
             "  'plugin': d['environment']['build'].get('plugin')}))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp, env=dict(clean_env, PYTHONPATH=str(site)),
                         capture_output=True, text=True)
    check(out.returncode == 0, f"import steadyocr + OCR() + doctor_report(2) from {tmp} (exit {out.returncode})")
    if out.returncode != 0:
        print(out.stderr[-3000:])
        sys.exit(1)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    check(pathlib.Path(got["file"]).resolve() == (pkg / "__init__.py").resolve(), f"imported {got['file']}")
    check(pathlib.Path(got["exe"]).resolve() == (pkg / "bin/steadyocr").resolve(),
          f"the worker binary is the package's ({got['exe']})")
    if has_plugin:
        check(got["plugin"] and pathlib.Path(got["plugin"]).resolve() == (pkg / "lib/steadyocr/libsteadyocr_cuda13.so").resolve(),
              f"the doctor loads the package's CUDA plugin ({got['plugin']})")
    cli = subprocess.run([str(build / "steadyocr"), "ocr", "--format", "json", "--models", str(source / "models"),
                          str(sample)], capture_output=True, text=True, check=True)
    want = [line["text"] for line in next(iter(json.loads(cli.stdout).values()))["lines"]]
    check(len(want) >= 10 and got["lines"] == want,
          f"OCR() with the package's models reads the CLI's {len(want)} lines (got {len(got['lines'])}, rung {got['rung']})")
    script = subprocess.run([str(site / "bin" / "steadyocr"), "--version"], cwd=tmp,
                            env=dict(clean_env, PYTHONPATH=str(site)), capture_output=True, text=True)
    check(script.returncode == 0 and script.stdout.strip() == got["version"],
          f"the console script runs the package's binary (--version: {script.stdout.strip()!r}, module {got['version']})")

print(f"{len(failures)} failure(s)" if failures else "pip install . passed")
sys.exit(1 if failures else 0)
