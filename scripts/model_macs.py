#!/usr/bin/env python3
"""Multiply-adds of an ONNX model's convolutions and MatMuls at one input shape (issue 13: which layers a faster
kernel must serve). Fixes the first input's shape, runs ONNX shape inference, and lists the layers by multiply-adds
with their share of the total.

Needs the onnx Python package (Debian: python3-onnx; not installed by scripts/setup.sh: a measuring tool only).

  scripts/model_macs.py MODEL.onnx N C H W [--top 25]
"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("shape", type=int, nargs=4, metavar="N C H W")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    m = onnx.load(a.model)
    for d, v in zip(m.graph.input[0].type.tensor_type.shape.dim, a.shape):
        d.ClearField("dim_param")
        d.dim_value = v
    m = shape_inference.infer_shapes(m)
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    for n in m.graph.node:
        if n.op_type == "Constant":
            for attr in n.attribute:
                if attr.name == "value":
                    shapes[n.output[0]] = list(numpy_helper.to_array(attr.t).shape)
    rows, skipped = [], []
    for n in m.graph.node:
        if n.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        out = shapes.get(n.output[0])
        lhs = shapes.get(n.input[0])
        if not out or any(d <= 0 for d in out) or not lhs or any(d <= 0 for d in lhs):
            skipped.append(n.name or n.op_type)  # shapes that ONNX's inference could not work out
            continue
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            group = next((attr.i for attr in n.attribute if attr.name == "group"), 1)
            rows.append((int(np.prod(out)) * int(np.prod(w[1:])), f"Conv group {group} weights {w} -> {out}"))
        else:
            rows.append((int(np.prod(out)) * lhs[-1], f"{n.op_type} {lhs} x {shapes.get(n.input[1])} -> {out}"))
    rows.sort(key=lambda r: -r[0])
    total = sum(r[0] for r in rows)
    print(f"{a.model} at {a.shape}: {total / 1e9:.3f} GMAC in {len(rows)} convolutions and MatMuls; "
          f"{len(skipped)} left out, their shapes unknown to ONNX's inference: {', '.join(skipped) or 'none'}")
    done = 0
    for macs, what in rows[:a.top]:
        done += macs
        print(f"  {macs / 1e6:9.1f} M  ({done / total:4.0%})  {what}")


if __name__ == "__main__":
    main()
