"""Builds the Python package with CMake for `pip install .` (pyproject.toml).

The CMake build goes to build/pip (or $STEADYOCR_BUILD_DIR: an existing build folder is reused, so that
`STEADYOCR_BUILD_DIR=build pip install .` after scripts/setup.sh only installs). CMake builds the target
steadyocr_python_package and installs its component `python` (cmake/Install.cmake) into the wheel: the module,
bin/steadyocr, lib/steadyocr/*.so (the engine's layers and the CUDA plugin) with relative RUNPATHs. The models of
models/ are copied in as steadyocr/models, which OCR() reads when none are named."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
MODEL_FILES = ["ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx",
               "ppocr_keys_v1.txt"]


def version():
    m = re.search(r"project\(steadyocr VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    return m.group(1)


def fail(message):
    sys.stderr.write(f"steadyocr setup.py: {message}\n")
    raise SystemExit(1)


def cached(build_dir, key):
    cache = build_dir / "CMakeCache.txt"
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return None


def run(cmd):
    print("+ " + " ".join(map(str, cmd)), flush=True)
    subprocess.run(list(map(str, cmd)), check=True)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not shutil.which("cmake"):
            fail("cmake not found: install the packages of scripts/debian-packages.txt (scripts/setup.sh does)")
        build_dir = pathlib.Path(os.environ.get("STEADYOCR_BUILD_DIR") or ROOT / "build" / "pip").resolve()
        python = pathlib.Path(sys.executable).resolve()
        if (build_dir / "CMakeCache.txt").is_file():
            built_for = cached(build_dir, "Python3_EXECUTABLE")
            if built_for and pathlib.Path(built_for).resolve() != python:
                fail(f"{build_dir} was configured for {built_for}, but pip runs {python}: the module must be built "
                     f"for the interpreter that imports it. Use {built_for} -m pip, or another STEADYOCR_BUILD_DIR")
        else:
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython3_EXECUTABLE={python}", "-DSTEADYOCR_TESTS=OFF"])
        jobs = os.environ.get("JOBS") or str(os.cpu_count() or 2)
        run(["cmake", "--build", build_dir, "--target", "steadyocr_python_package", "--parallel", jobs])
        if not list((build_dir / "python" / "steadyocr").glob("_native*.so")):
            fail(f"the build in {build_dir} made no Python module: CMake found no pybind11 or Python headers "
                 "(install pybind11-dev and python3-dev)")
        stage = pathlib.Path(self.build_temp).resolve() / "stage"
        shutil.rmtree(stage, ignore_errors=True)
        run(["cmake", "--install", build_dir, "--component", "python", "--prefix", stage])
        package = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve().parent
        shutil.copytree(stage / "steadyocr", package, dirs_exist_ok=True)
        models = ROOT / "models"
        missing = [n for n in MODEL_FILES if not (models / n).is_file()]
        if missing:
            print(f"steadyocr setup.py: WARNING: {models} lacks {', '.join(missing)}: the package carries no models "
                  "(scripts/setup.sh fetches them); OCR() then needs models=PATH", file=sys.stderr, flush=True)
        else:
            (package / "models").mkdir(exist_ok=True)
            for n in MODEL_FILES:
                shutil.copy2(models / n, package / "models" / n)


(ROOT / "build").mkdir(exist_ok=True)  # egg_base below
setup(
    version=version(),
    packages=["steadyocr"],
    package_dir={"steadyocr": "python/steadyocr"},
    ext_modules=[Extension("steadyocr._native", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/setuptools"}, "egg_info": {"egg_base": "build"}},
    zip_safe=False,
)
