"""steadyocr: PP-OCR text reading (detection, optional angle classification, recognition) with a visible fallback
ladder (cuda-fp32 > cuda-fp16 > cpu > reference). docs/PYTHON.md is the reference.

    import steadyocr
    ocr = steadyocr.OCR(models="models")
    result = ocr("examples/sample_doc.jpg")
    print(result.text)
"""

import json as _json
import os as _os
from dataclasses import dataclass as _dataclass

import numpy as _np

# libgomp (the engine's OpenMP runtime) reads its environment once, when _native loads it. Parallel regions shrink to
# the cores other processes leave free (the engine's core/cpu_share.h), so libgomp's own spin-wait stays; with
# STEADYOCR_OMP_SPIN=bound it is bounded as the steadyocr binary then does (src/cli/main.cpp), unless the user chose
# (GOMP_SPINCOUNT or OMP_WAIT_POLICY set). Without effect when another module loaded libgomp before.
_spin_chosen = {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"} & _os.environ.keys()
if not _spin_chosen and _os.environ.get("STEADYOCR_OMP_SPIN") == "bound":
    _os.environ["GOMP_SPINCOUNT"] = "1000"

from steadyocr import _native  # noqa: E402
from steadyocr._errors import BackendUnavailable, Error, ImageError, ModelError

__all__ = ["OCR", "Result", "Line", "doctor", "doctor_report", "Error", "BackendUnavailable", "ModelError",
           "ImageError", "__version__"]
__version__ = _native.version


@_dataclass(frozen=True)
class Line:
    """One text line: its text, the recogniser's score and its box (4x2 float32: TL, TR, BR, BL in the picture's
    pixels)."""

    text: str
    score: float
    box: _np.ndarray


class Result:
    """One image's result. to_dict() is the image's object of `steadyocr ocr --format json`."""

    __slots__ = ("_outcome", "_dict", "_lines")

    def __init__(self, outcome):
        self._outcome = outcome
        self._dict = _json.loads(outcome.json())
        self._lines = [Line(text, score, box) for text, score, box in outcome.lines()]

    @property
    def lines(self):
        return list(self._lines)

    @property
    def text(self):
        return "\n".join(line.text for line in self._lines)

    @property
    def backend(self):
        """The backend the models ran on (cpu, cuda-fp16, ...)."""
        return self._dict["backend"]

    @property
    def rung(self):
        """The rung of the ladder that read the image (cpu-worker runs the cpu backend, for instance)."""
        return self._dict["rung"]

    @property
    def gpu(self):
        """With several GPUs, the engine's GPU that read the image ("0", "1", ...); None otherwise."""
        return self._dict.get("gpu")

    @property
    def fallbacks(self):
        """Moves on the backend ladder that stand for this image: dicts with from, to, reason, detail, fix, climb,
        time."""
        return [dict(e) for e in self._dict["fallbacks"]]

    @property
    def timings_ms(self):
        return dict(self._dict["timings_ms"])

    @property
    def width(self):
        return self._dict["width"]

    @property
    def height(self):
        return self._dict["height"]

    def to_dict(self):
        return _json.loads(self._outcome.json())

    def draw(self):
        """The visualisation of `steadyocr ocr --vis`: the picture with its boxes tinted, beside the boxes with their
        text (HxWx3 uint8, BGR; twice the picture's width)."""
        return self._outcome.draw()

    def __repr__(self):
        return f"<steadyocr.Result {len(self._lines)} lines, backend {self.backend}>"


def _input(image, rgb, index):
    """(kind, payload, name, label) of one input."""
    if isinstance(image, (str, _os.PathLike)):
        path = _os.fspath(image)
        if isinstance(path, bytes):
            path = _os.fsdecode(path)
        return ("path", path), _os.path.basename(path), path
    label = "bytes" if index is None else f"#{index}"
    if isinstance(image, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(image)), label, label
    if isinstance(image, _np.ndarray):
        if image.dtype != _np.uint8:
            raise ImageError(f"{label}: arrays must be uint8 (got {image.dtype})", code="INVALID_ARGUMENT",
                             fix="convert with array.astype(numpy.uint8) after scaling to 0-255", input=label)
        if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] in (1, 3, 4))):
            raise ImageError(f"{label}: arrays must be HxW (grey), HxWx3 (BGR, or RGB with rgb=True) or HxWx4 "
                             f"(got shape {image.shape})", code="INVALID_ARGUMENT", input=label)
        if image.ndim == 3 and image.shape[2] == 1:
            image = image[:, :, 0]
        if image.shape[0] == 0 or image.shape[1] == 0:
            raise ImageError(f"{label}: the array is empty (shape {image.shape})", code="INVALID_ARGUMENT",
                             input=label)
        return ("array", _np.ascontiguousarray(image)), label, label
    raise TypeError(f"image must be a path (str or os.PathLike), bytes or a numpy array, not {type(image).__name__}")


def _installed_models():
    """$STEADYOCR_MODELS, else the models an installed package carries (pip install . copies models/ in), else
    None."""
    env = _os.environ.get("STEADYOCR_MODELS")
    if env:
        return env
    bundled = _os.path.join(_os.path.dirname(__file__), "models")
    if _os.path.isfile(_os.path.join(bundled, "ch_PP-OCRv4_det_infer.onnx")):
        return bundled
    return None


def _default_models():
    """The models OCR() reads when none are named: _installed_models(), else "models" (the repository's folder,
    relative to the working directory)."""
    return _installed_models() or "models"


class OCR:
    """The engine. Options are the engine flags of `steadyocr ocr --help` with '_' for '-' (det_limit_side,
    det_thresh, det_box_thresh, unclip_ratio, rec_batch, rec_interp, max_side, max_pixels, gpu_mem, watchdog, ...);
    an unknown one raises TypeError, a bad value ValueError. models: the folder of the ONNX models and the key file
    (default: $STEADYOCR_MODELS, else the models the installed package carries, else "models"). Creation qualifies
    the backends best first (the ladder cuda-fp32 > cuda-fp16 > cpu > reference unless backend pins one) and raises
    BackendUnavailable or ModelError when none can serve. One OCR serves many threads at once; inference runs
    without the GIL."""

    def __init__(self, models=None, *, backend="auto", require_gpu=False, cls=False, det_only=False,
                 rec_only=False, threads=0, drop_score=0.5, **options):
        models = _default_models() if models is None else models
        opts = {"models": _os.fspath(models), "backend": backend, "require_gpu": require_gpu, "cls": cls,
                "det_only": det_only, "rec_only": rec_only, "threads": threads, "drop_score": drop_score}
        for key, value in options.items():
            opts[key] = _os.fspath(value) if isinstance(value, _os.PathLike) else value
        self._engine = _native.Engine(_json.dumps(opts))

    def read(self, image, *, rgb=False):
        """Reads one image: a path, encoded bytes, or a uint8 array (HxWx3 BGR, or RGB with rgb=True; HxW grey;
        HxWx4 with alpha). Raises ImageError naming the input when it cannot be read."""
        item, name, label = _input(image, rgb, None)
        return Result(self._engine.read([item], [name], [label], rgb)[0])

    __call__ = read

    def read_batch(self, images, *, rgb=False):
        """Reads several images together (in parallel where the backend allows); results follow the input order.
        When one cannot be read, raises ImageError for the first such, naming its index ("#N", or its path)."""
        items, names, labels = [], [], []
        for i, image in enumerate(images):
            item, name, label = _input(image, rgb, i)
            items.append(item)
            names.append(name)
            labels.append(f"#{i} ({label})" if item[0] == "path" else f"#{i}")
        return [Result(o) for o in self._engine.read(items, names, labels, rgb)]

    def info(self):
        """{"version", "rung", "backend", "events": [ladder moves with their findings], "workers": {...}}."""
        return _json.loads(self._engine.info())


def doctor_report(level=3, models=None):
    """The whole report of `steadyocr doctor --json --level LEVEL` (docs/DOCTOR.md) as a dict."""
    if not 1 <= int(level) <= 4:
        raise ValueError(f"level must be 1-4 (got {level})")
    if models is None:
        models = _installed_models() or ""  # none: the doctor skips its model-shape check
    return _json.loads(_native.doctor_report(int(level), _os.fspath(models)))


def doctor(level=3, models=None):
    """The doctor's findings up to `level` (1 visibility, 2 ABI, 3 kernels, 4 streams/memory): every check that did
    not simply pass, each a dict with level, layer, check, status, severity, code, summary, evidence, fix,
    remediation. [] when the GPU stack passes up to `level`."""
    return doctor_report(level, models)["findings"]
