"""Every way of handing an image over gives the same lines."""

import pathlib

import cv2
import numpy as np
import pytest

import steadyocr
from conftest import IMAGES


def lines(result):
    return [(l.text, l.score, l.box.tolist()) for l in result.lines]


@pytest.mark.parametrize("image", IMAGES[:2], ids=lambda p: p.name)
def test_layouts_agree(ocr, image):
    from_path = ocr(str(image))
    assert len(from_path.lines) > 0
    bgr = cv2.imread(str(image))
    same = {
        "pathlib": ocr(pathlib.Path(image)),
        "bytes": ocr(image.read_bytes()),
        "bytearray": ocr(bytearray(image.read_bytes())),
        "bgr": ocr(bgr),
        "rgb": ocr(np.ascontiguousarray(bgr[:, :, ::-1]), rgb=True),
        "rgb view": ocr(bgr[:, :, ::-1], rgb=True),  # not contiguous
        "bgra": ocr(cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA)),
        "batch": ocr.read_batch([bgr])[0],
    }
    for name, result in same.items():
        assert lines(result) == lines(from_path), name
    grey = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    ok, png = cv2.imencode(".png", grey)
    assert ok
    from_grey = ocr(grey)
    assert len(from_grey.lines) > 0
    assert lines(from_grey) == lines(ocr(png.tobytes()))
    assert lines(ocr(grey[:, :, None])) == lines(from_grey)


def test_rgb_flag_matters(ocr):
    # An RGB array read as BGR is another picture: the flag is not ignored.
    bgr = cv2.imread(str(IMAGES[1]))
    swapped = np.ascontiguousarray(bgr[:, :, ::-1])
    assert ocr(swapped, rgb=True).to_dict()["lines"] == ocr(bgr).to_dict()["lines"]
    coloured = bgr.copy()
    coloured[:, :, 0] = 0  # no blue: swapping channels changes what the detector sees
    a, b = ocr(coloured), ocr(coloured, rgb=True)
    assert [l.score for l in a.lines] != [l.score for l in b.lines]


def test_bad_arrays(ocr):
    with pytest.raises(steadyocr.ImageError) as e:
        ocr(np.zeros((10, 10, 3), dtype=np.float32))
    assert "uint8" in str(e.value) and e.value.input == "bytes"
    with pytest.raises(steadyocr.ImageError):
        ocr(np.zeros((10, 10, 2), dtype=np.uint8))
    with pytest.raises(steadyocr.ImageError):
        ocr(np.zeros((0, 10, 3), dtype=np.uint8))
    with pytest.raises(TypeError):
        ocr(12)


def test_batch_follows_input_order(ocr):
    results = ocr.read_batch([str(p) for p in IMAGES])
    assert [lines(r) for r in results] == [lines(ocr(str(p))) for p in IMAGES]
