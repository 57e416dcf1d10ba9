# SPDX-License-Identifier: Apache-2.0
"""GPU time of one call for the Python benchmarks: CUDA events around the call, L2 flushed
before every sample, the median of the samples (bench_python.py, conv_rows.py).

gpu_ms_paired times several calls (ours and the baseline) in turn, sample by sample, after
a warm-up of at least `warmup_ms` of GPU time for each: a drift of the GPU's clocks or power
state (after a row of heavy products, the first row timed alone ran 18-21% below the same
kernel in the next dtype: 2026-12-03 and 2026-12-04, fp16 against bf16 conv2d C64) then
falls on both sides of a ratio alike."""

import statistics

import torch

_flush = None


def _flush_buffer():
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # > H200's 50 MB L2
    return _flush


def _timed(fn, flush):
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def gpu_ms_paired(*fns, samples=30, warmup_ms=50.0):
    """Median ms of each fn, the fns timed in turn within every round of `samples`."""
    flush = _flush_buffer()
    for fn in fns:
        fn()  # first-call work (module loading, plans, cuDNN's search) outside the samples
        spent = 0.0
        while spent < warmup_ms:
            spent += _timed(fn, flush)
    times = [[] for _ in fns]
    for _ in range(samples):
        for fn, t in zip(fns, times):
            t.append(_timed(fn, flush))
    return [statistics.median(t) for t in times]


def gpu_ms(fn, samples=30):
    return gpu_ms_paired(fn, samples=samples)[0]
