"""Fixtures of the Python module's tests (run by ctest as Python.pytest; by hand:
PYTHONPATH=build/python STEADYOCR_BIN=build/steadyocr python3 -m pytest -q tests/python).
Without the models the whole run is skipped, visibly: exit status 77, which ctest reports as skipped."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("STEADYOCR_MODELS", ROOT / "models"))
BIN = pathlib.Path(os.environ.get("STEADYOCR_BIN", ROOT / "build" / "steadyocr"))
# The pages the results are compared on: the engine tests' page and the accuracy set's documents.
IMAGES = [ROOT / "tests/data/engine/doc_0000.jpg"] + sorted((ROOT / "tests/data/ocr/docs").glob("*.jpg"))


def pytest_configure(config):
    needed = ["ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ppocr_keys_v1.txt"]
    missing = [n for n in needed if not (MODELS / n).is_file()]
    if missing:
        pytest.exit(f"SKIPPED: models absent from {MODELS} ({', '.join(missing)}); scripts/setup.sh fetches them",
                    returncode=77)
    if not BIN.is_file():
        pytest.exit(f"SKIPPED: {BIN} not built (the CLI the results are compared with)", returncode=77)


@pytest.fixture(scope="session")
def ocr():
    import steadyocr
    return steadyocr.OCR(models=str(MODELS))


@pytest.fixture(scope="session")
def cli_json():
    """`steadyocr ocr --format json` of IMAGES: {name: the image's object}."""
    out = subprocess.run([str(BIN), "ocr", "--format", "json", "--models", str(MODELS), *map(str, IMAGES)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def cli_doctor():
    out = subprocess.run([str(BIN), "doctor", "--json", "--level", "3"], capture_output=True, text=True)
    return json.loads(out.stdout)
