# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Timing helper shared by the benchmarks."""

import time

import numpy as np


def median_ms(fn, repeats: int) -> float:
    """Return the median wall time of ``fn()`` in ms over ``repeats`` runs after one warm-up."""
    fn()  # warm-up (allocations, lazy imports, numba compilation)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(samples))
