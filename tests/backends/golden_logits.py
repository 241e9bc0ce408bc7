#!/usr/bin/env python3
"""Writes tests/data/backends/<case>_logits.npy: the det model's pre-sigmoid output on the golden inputs,
computed in float64 by a small NumPy interpreter of the ONNX graph written independently of steadyocr.

Why: the golden det outputs (ONNX Runtime) on uniform-noise inputs are a saturated probability map (logits
-42..-13): ORT's approximate sigmoid returns exact zeros and multiples of 2^-25 there, so NMSE against them
measures ORT's sigmoid rounding, not the network. The logits are where the det network can be checked.

Usage: python3 tests/backends/golden_logits.py [MODELS_DIR] [GOLDEN_DIR]   (needs numpy and onnx)
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def conv(x, w, b, strides, pads, dil, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dil[0]:i * dil[0] + strides[0] * (oh - 1) + 1:strides[0],
                           j * dil[1]:j * dil[1] + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * mg:(g + 1) * mg] += np.einsum('ncij,mc->nmij', patch, ws[:, :, i, j])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def deconv(x, w, b, strides, pads, group, out_pad):
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    out = np.zeros((n, mg * group, (h - 1) * strides[0] + kh + out_pad[0], (wd - 1) * strides[1] + kw + out_pad[1]))
    cg = c // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                out[:, g * mg:(g + 1) * mg, i:i + strides[0] * (h - 1) + 1:strides[0],
                    j:j + strides[1] * (wd - 1) + 1:strides[1]] += np.einsum(
                        'nchw,cm->nmhw', x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = out[:, :, pads[0]:out.shape[2] - pads[2], pads[1]:out.shape[3] - pads[3]]
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def f64(a):
    return a.astype(np.float64) if a.dtype == np.float32 else a


def logits(path, x):
    m = onnx.load(path)
    env = {t.name: f64(numpy_helper.to_array(t)) for t in m.graph.initializer}
    env[m.graph.input[0].name] = f64(x)
    out_name = m.graph.output[0].name
    for nd in m.graph.node:
        a = {at.name: helper.get_attribute_value(at) for at in nd.attribute}
        ins = [env[i] if i else None for i in nd.input]
        op = nd.op_type
        opt = lambda k: ins[k] if len(ins) > k else None
        if op == 'Constant':
            r = f64(numpy_helper.to_array(a['value']))
        elif op == 'Conv':
            r = conv(ins[0], ins[1], opt(2), a.get('strides', [1, 1]), a.get('pads', [0] * 4), a.get('dilations', [1, 1]),
                     a.get('group', 1))
        elif op == 'ConvTranspose':
            r = deconv(ins[0], ins[1], opt(2), a.get('strides', [1, 1]), a.get('pads', [0] * 4), a.get('group', 1),
                       a.get('output_padding', [0, 0]))
        elif op == 'BatchNormalization':
            s, bb, mu, var = [t.reshape(1, -1, 1, 1) for t in ins[1:5]]
            r = (ins[0] - mu) / np.sqrt(var + a.get('epsilon', 1e-5)) * s + bb
        elif op in ('Add', 'Sub', 'Mul', 'Div'):
            r = {'Add': np.add, 'Sub': np.subtract, 'Mul': np.multiply, 'Div': np.divide}[op](ins[0], ins[1])
        elif op == 'Relu':
            r = np.maximum(ins[0], 0)
        elif op == 'Sigmoid':
            r = ins[0] if nd.output[0] == out_name else 1 / (1 + np.exp(-ins[0]))
        elif op == 'HardSigmoid':
            r = np.clip(a.get('alpha', 0.2) * ins[0] + a.get('beta', 0.5), 0, 1)
        elif op == 'Clip':
            lo = opt(1) if opt(1) is not None else a.get('min', -np.inf)
            hi = opt(2) if opt(2) is not None else a.get('max', np.inf)
            r = np.clip(ins[0], lo, hi)
        elif op == 'GlobalAveragePool':
            r = ins[0].mean(axis=(2, 3), keepdims=True)
        elif op == 'Resize':
            assert a['mode'] == b'nearest' and a['coordinate_transformation_mode'] == b'asymmetric'
            r = ins[0]
            for ax in (2, 3):
                s = ins[2][ax]
                idx = np.minimum(np.floor(np.arange(int(np.floor(r.shape[ax] * s))) / s).astype(int), r.shape[ax] - 1)
                r = np.take(r, idx, axis=ax)
        elif op == 'Concat':
            r = np.concatenate(ins, axis=a['axis'])
        else:
            raise SystemExit(f'op {op} is not handled by this checker')
        env[nd.output[0]] = r
    return env[out_name]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    models = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', '..', 'models')
    golden = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, '..', '..', '..', 'shared', 'data', 'golden')
    out_dir = os.path.join(here, '..', 'data', 'backends')
    os.makedirs(out_dir, exist_ok=True)
    for case in ('det', 'det_odd'):
        x = np.load(os.path.join(golden, f'{case}_input.npy'))
        z = logits(os.path.join(models, 'ch_PP-OCRv4_det_infer.onnx'), x)
        np.save(os.path.join(out_dir, f'{case}_logits.npy'), z.astype(np.float32))
        print(case, z.shape, 'logits in', z.min(), z.max())


if __name__ == '__main__':
    main()
