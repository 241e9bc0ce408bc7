"""rec_interp from Python: the default (lanczos) reads the Latin page's labels exactly, linear (PaddleOCR's resize)
drops two lines' spaces, each as the CLI reads it with the same flag; a bad value is a ValueError."""

import json
import subprocess

import pytest

import steadyocr
from conftest import BIN, MODELS, ROOT

PAGE = ROOT / "tests/data/ocr/latin/spaces.jpg"


def labels():
    name, j = (ROOT / "tests/data/ocr/latin/labels.txt").read_text(encoding="utf-8").splitlines()[0].split("\t", 1)
    return sorted(x["transcription"] for x in json.loads(j))


def cli_texts(flag):
    out = subprocess.run([str(BIN), "ocr", "--quiet", "--models", str(MODELS), "--rec-interp", flag, str(PAGE)],
                         check=True, capture_output=True, text=True)
    return [line["text"] for line in json.loads(out.stdout)["spaces.jpg"]["lines"]]


def test_default_and_linear(ocr):
    default = [line.text for line in ocr(str(PAGE)).lines]
    assert sorted(default) == labels()
    assert default == cli_texts("lanczos")
    linear = steadyocr.OCR(models=str(MODELS), rec_interp="linear")
    got = [line.text for line in linear(str(PAGE)).lines]
    assert got == cli_texts("linear")
    assert "Servicenetnet" in got and "Service net net" not in got


def test_bad_value():
    with pytest.raises(ValueError, match="rec.interp"):
        steadyocr.OCR(models=str(MODELS), rec_interp="nearest")
