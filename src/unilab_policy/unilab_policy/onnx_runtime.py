# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The onnxruntime session both the exporter (verification) and the exported-policy runtime use."""


def onnx_session(model, threads: int = 1):
    """
    Return an onnxruntime CPU session for a model file path or serialised bytes.

    ``threads`` intra-op threads (1: a small MLP per control step loses more to a
    thread pool's hand-off than it gains), no inter-op parallelism.
    """
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, options, providers=['CPUExecutionProvider'])
