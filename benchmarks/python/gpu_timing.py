# SPDX-License-Identifier: Apache-2.0
"""GPU time of one call for the Python benchmarks: CUDA events around the call, L2 flushed
before every sample, the median of the samples (bench_python.py, conv_rows.py)."""

import statistics

import torch


def gpu_ms(fn, samples=30):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # > H200's 50 MB L2
    fn()
    times = []
    for _ in range(samples):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
