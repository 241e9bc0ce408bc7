"""The module reads as the CLI does: same lines, boxes and scores, and to_dict() is the CLI's JSON object."""

import numpy as np
import pytest

from conftest import IMAGES


def strip_volatile(d):
    """The image's JSON without what differs between two runs: timings and the time of ladder events."""
    d = dict(d)
    d.pop("timings_ms")
    d["fallbacks"] = [{k: v for k, v in e.items() if k != "time"} for e in d["fallbacks"]]
    return d


@pytest.mark.parametrize("image", IMAGES, ids=lambda p: p.name)
def test_same_lines_as_cli(ocr, cli_json, image):
    expected = cli_json[image.name]
    result = ocr(str(image))
    assert len(expected["lines"]) > 0
    assert [line.text for line in result.lines] == [line["text"] for line in expected["lines"]]
    for line, want in zip(result.lines, expected["lines"]):
        assert line.box.shape == (4, 2) and line.box.dtype == np.float32
        # The CLI writes coordinates to 0.1 pixel and scores to 4 decimals.
        np.testing.assert_allclose(line.box, np.array(want["box"], dtype=np.float32), atol=0.051)
        assert line.score == pytest.approx(want["score"], abs=1e-4)
    assert result.text == "\n".join(line["text"] for line in expected["lines"])
    assert (result.width, result.height) == (expected["width"], expected["height"])


@pytest.mark.parametrize("image", IMAGES, ids=lambda p: p.name)
def test_to_dict_is_the_cli_json(ocr, cli_json, image):
    result = ocr.read(image)  # a pathlib.Path
    d = result.to_dict()
    want = cli_json[image.name]
    assert list(d.keys()) == list(want.keys())
    assert strip_volatile(d) == strip_volatile(want)
    assert set(d["timings_ms"]) == {"decode", "det", "post", "cls", "rec", "total"}
    assert d["timings_ms"]["total"] > 0
    assert result.backend == want["backend"] and result.rung == want["rung"]
    assert result.timings_ms == d["timings_ms"]
    assert [{k: v for k, v in e.items() if k != "time"} for e in result.fallbacks] == strip_volatile(want)["fallbacks"]


def test_draw(ocr):
    import cv2

    image = IMAGES[0]
    picture = cv2.imread(str(image))
    result = ocr(str(image))
    vis = result.draw()
    h, w = picture.shape[:2]
    assert vis.shape == (h, 2 * w, 3)
    assert vis.dtype == np.uint8
    # Left: the picture with its boxes tinted (close to it, not equal); right: white with the boxes' text.
    left, right = vis[:, :w].astype(np.int32), vis[:, w:]
    diff = np.abs(left - picture.astype(np.int32)).mean()
    assert 0 < diff < 60
    assert (right == 255).all(axis=2).mean() > 0.5
    assert (right < 128).any()


def test_info(ocr):
    import steadyocr

    result = ocr(str(IMAGES[0]))
    info = ocr.info()
    assert info["version"] == steadyocr.__version__
    assert info["rung"] == result.rung
    assert info["backend"] == result.backend
    assert isinstance(info["events"], list)
    # Every step down the ladder stands in the result too, with its finding.
    assert [e["reason"] for e in info["events"] if not e["climb"]] == [e["reason"] for e in result.fallbacks]


def test_draw_is_the_cli_vis(ocr, tmp_path):
    # A PNG input gets a PNG visualisation from `--vis` (lossless): the drawing must be the same, pixel for pixel.
    import subprocess

    import cv2

    from conftest import BIN, MODELS

    page = tmp_path / "page.png"
    assert cv2.imwrite(str(page), cv2.imread(str(IMAGES[1])))
    subprocess.run([str(BIN), "ocr", "--quiet", "--models", str(MODELS), "--vis", str(tmp_path / "vis"), str(page)],
                   check=True, capture_output=True)
    want = cv2.imread(str(tmp_path / "vis" / "page.png"))
    assert want is not None
    got = ocr(str(page)).draw()
    assert got.shape == want.shape
    assert np.array_equal(got, want)


def test_two_gpus_stand_ins(ocr):
    # Several GPUs (the cpu-worker test rung standing in for each): results name the GPU that read them, info() lists
    # both, and the lines are those of one engine.
    import steadyocr
    from conftest import BIN, MODELS

    two = steadyocr.OCR(models=str(MODELS), ladder="cpu-worker,cpu", gpus="0,1", worker_exe=str(BIN), threads=2)
    results = two.read_batch([str(p) for p in IMAGES[:4]])
    assert {r.gpu for r in results} == {"0", "1"}
    for r, p in zip(results, IMAGES[:4]):
        assert r.rung == "cpu-worker"
        assert [line.text for line in r.lines] == [line.text for line in ocr(str(p)).lines]
    gpus = two.info()["gpus"]
    assert [g["gpu"] for g in gpus] == ["0", "1"]
    assert all(g["in_service"] and g["rung"] == "cpu-worker" for g in gpus)
    assert sum(g["images_ok"] for g in gpus) == len(results) == len(IMAGES[:4])
    assert ocr(str(IMAGES[0])).gpu is None
