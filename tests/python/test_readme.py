"""The README's Python example works as written (run from the repository root, as it says)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT


def test_readme_example():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md has no ```python block"
    code = blocks[0]
    assert len(code.strip().splitlines()) == 5
    if not (ROOT / "models" / "ch_PP-OCRv4_rec_infer.onnx").is_file():
        pytest.skip("models/ absent: the example reads models/")
    import steadyocr

    # The module under test (build/python of this build), whatever PYTHONPATH said relative to where.
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(steadyocr.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    assert len(printed) == 12
    assert printed[0].endswith(" 拉桥留雨哪常判石离备摆两儿夫也刻")
    assert printed[5].endswith(" +8616085483723")
