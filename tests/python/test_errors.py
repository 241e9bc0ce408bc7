"""Typed exceptions with the finding's code and fix."""

import shutil

import pytest

import steadyocr
from conftest import IMAGES, MODELS


def test_require_gpu(cli_doctor):
    layer1 = cli_doctor["layers"][0]
    if layer1["status"] in ("pass", "warn"):
        pytest.skip("this machine has a GPU driver: require_gpu can be met")
    with pytest.raises(steadyocr.BackendUnavailable) as e:
        steadyocr.OCR(models=str(MODELS), require_gpu=True)
    failed = [c["code"] for c in layer1["checks"] if c["status"] == "fail"]
    assert e.value.code in failed and e.value.code.startswith("L1_")
    assert e.value.fix  # e.g. "install the NVIDIA driver / run the container with --gpus"
    assert "--require-gpu: no GPU backend can serve" in e.value.message
    assert isinstance(e.value, steadyocr.Error)


def test_missing_model_dir(tmp_path):
    with pytest.raises(steadyocr.ModelError) as e:
        steadyocr.OCR(models=str(tmp_path / "nowhere"))
    assert e.value.code == "INVALID_ARGUMENT"
    assert "ch_PP-OCRv4_det_infer.onnx not found" in e.value.message
    assert "models=DIR" in e.value.fix


def test_damaged_model(tmp_path):
    for f in MODELS.iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "ch_PP-OCRv4_det_infer.onnx").write_bytes(b"\x08\x07not an onnx model" * 50)
    with pytest.raises(steadyocr.ModelError) as e:
        steadyocr.OCR(models=str(tmp_path), backend="cpu")
    assert e.value.code == "LOAD_FAILED"
    assert "ch_PP-OCRv4_det_infer.onnx" in e.value.message and e.value.fix


def test_bad_images(ocr):
    with pytest.raises(steadyocr.ImageError) as e:
        ocr(b"\x00garbage, not an image" * 10)
    assert e.value.input == "bytes" and e.value.code in ("UNSUPPORTED", "DATA_LOSS")
    truncated = IMAGES[0].read_bytes()[:2000]
    with pytest.raises(steadyocr.ImageError) as e:
        ocr(truncated)
    assert e.value.code == "DATA_LOSS"
    with pytest.raises(steadyocr.ImageError) as e:
        ocr("/nonexistent/page.jpg")
    assert e.value.input == "/nonexistent/page.jpg" and e.value.code == "NOT_FOUND"
    assert "/nonexistent/page.jpg" in str(e.value)


def test_batch_names_the_first_bad_input(ocr):
    with pytest.raises(steadyocr.ImageError) as e:
        ocr.read_batch([str(IMAGES[0]), b"garbage", "/nonexistent.png"])
    assert e.value.input == "#1"
    assert str(e.value).startswith("#1: ")
    with pytest.raises(steadyocr.ImageError) as e:
        ocr.read_batch([str(IMAGES[0]), "/nonexistent.png"])
    assert e.value.input == "#1 (/nonexistent.png)"


def test_options_checked():
    with pytest.raises(TypeError, match="unknown option 'no_such_option'"):
        steadyocr.OCR(models=str(MODELS), no_such_option=1)
    with pytest.raises(TypeError, match="unknown option 'det-thresh'"):
        steadyocr.OCR(models=str(MODELS), **{"det-thresh": 0.3})
    with pytest.raises(ValueError, match="drop-score"):
        steadyocr.OCR(models=str(MODELS), drop_score=2.0)
    with pytest.raises(ValueError, match="backend"):
        steadyocr.OCR(models=str(MODELS), backend="tpu")
    with pytest.raises(ValueError, match="det_only"):
        steadyocr.OCR(models=str(MODELS), det_only="yes")


def test_options_apply():
    det = steadyocr.OCR(models=str(MODELS), backend="cpu", det_only=True, det_limit_side=640)
    result = det(str(IMAGES[0]))
    assert len(result.lines) > 0 and all(l.text == "" for l in result.lines)
    assert result.backend == "cpu" and result.fallbacks == []
