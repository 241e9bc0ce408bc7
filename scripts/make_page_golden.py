#!/usr/bin/env python3
"""Runs a model with ONNX Runtime (CPU, default options) on an .npy input and saves the output.
Used on the GPU machine (which has onnxruntime) to make tests/data/golden_page/det_page_output.npy:
    make_page_golden.py models/ch_PP-OCRv4_det_infer.onnx tests/data/golden_page/det_page_input.npy OUT.npy
"""
import sys

import numpy as np
import onnxruntime as ort

model, inp, out = sys.argv[1:4]
x = np.load(inp)
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
y = s.run(None, {s.get_inputs()[0].name: x})[0]
np.save(out, y.astype(np.float32))
print(f"{out}: {y.shape} min {y.min():.4g} max {y.max():.4g} onnxruntime {ort.__version__}")
