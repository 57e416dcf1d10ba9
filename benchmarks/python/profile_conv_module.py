# SPDX-License-Identifier: Apache-2.0
"""Where the host time of a kernelforge.torch.Conv2d training step goes, on the GPU machine.

bench_python.py's module_step rows time a step through modules (forward, then autograd
backward into dx and dw) with CUDA events; where a step's host time exceeds its GPU time,
the events measure the host. This script takes that step apart on a CUDA device:
  - host time per call (time.perf_counter around the call, the GPU synchronized between
    calls so no queue builds up) of the module's forward, its backward, the whole step,
    and the same for torch.nn.Conv2d; and of the direct calls kf.conv2d,
    kf.conv2d_backward_data and kf.conv2d_backward_filter (no out=);
  - torch.profiler's CPU table (Python functions off; the CUDA runtime and driver calls
    that CUPTI sees, and the operators), sorted by self CPU time;
  - the host time of the steps issued behind a 256 MB memset (the GPU busy, as
    bench_python's CUDA-event timing leaves it), where a call that waits on the GPU shows;
  - cProfile of the module's steps, sorted by own time (--trace: a Chrome trace too).
The CPU-only view of the same calls (the Python around _C, _C stubbed) is
profile_conv_host_cpu.py.

Measured on the H200 (torch 2.11, N32 C64 56x56 K64 3x3, host us per call, GPU drained):
                                 fp16 before -> after    fp32 NCHW before -> after
    kft.Conv2d forward, grad          76.3 -> 40.0          107.3 -> 54.7
    kft.Conv2d forward, no grad       35.4 -> 24.0           54.2 -> 33.2
    kft.Conv2d backward              151.5 -> 145.5         311.4 -> 261.5
    kft.Conv2d step                  270.5 -> 191.4         669.0 -> 534.9
    nn.Conv2d step (cuDNN)           158.4 / 157.4          441.3 / 444.1
  "before": a module's weight is an nn.Parameter, which the eager paths took for a tensor
  subclass, so every module call went through the dispatcher and the autograd.Function
  that binds its arguments with inspect.signature; "after": nn.Parameter counts as plain
  (_torch_ops.py). Behind a busy GPU the steps' host time is 217 (ours) and 180 us (torch)
  in fp16, 503 and 549 us in fp32: no call waits on the GPU. The module steps of
  bench_python's conv2d_train rows are host-bound at these sizes (GPU ~90 us a step in
  fp16), in both libraries, so their CUDA-event times move by 2-4x from run to run.

Run: python benchmarks/python/profile_conv_module.py [--modes fp16,fp32] [--steps 50]
"""

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

import kernelforge as kf
import kernelforge.torch as kft

LAYER = ("N32_C64_56x56_K64_3x3_p1", 32, 64, 56, 56, 64, 3, 3, 1, 1)
MODES = {"fp16": (torch.float16, False, torch.channels_last), "bf16": (torch.bfloat16, False, torch.channels_last),
         "tf32": (torch.float32, True, torch.channels_last), "fp32": (torch.float32, False, torch.contiguous_format)}


def host_us(fn, calls, flush=None):
    """Median host time of fn() in microseconds, the GPU drained before each call; with
    `flush` (a 256 MB buffer), each call is issued behind its memset instead (the GPU busy,
    as bench_python's gpu_ms leaves it): larger than the drained figure where a call waits
    on the GPU."""
    fn()
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        if flush is not None:
            flush.zero_()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def profile_mode(label, steps, trace):
    dtype, tf32, fmt = MODES[label]
    _, n, c, h, w, k, r, s, stride, pad = LAYER
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    x = torch.randn(n, c, h, w, device="cuda").to(dtype).to(memory_format=fmt).requires_grad_(True)
    dy = torch.randn(n, k, p, q, device="cuda").to(dtype).to(memory_format=fmt)
    common = dict(stride=stride, padding=pad, bias=False, device="cuda", dtype=dtype)
    ours = kft.Conv2d(c, k, (r, s), tf32=tf32, **common).to(memory_format=fmt)
    theirs = torch.nn.Conv2d(c, k, (r, s), **common).to(memory_format=fmt)
    torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = True, tf32

    def step(module):
        module.weight.grad = None
        x.grad = None
        module(x).backward(dy)

    def backward_only(module):
        y = module(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y.backward(dy)
        return (time.perf_counter() - t0) * 1e6

    xd, wd = x.detach(), ours.weight.detach()
    rows = {}
    for name, module in (("kft.Conv2d", ours), ("nn.Conv2d", theirs)):
        rows[f"{name} step"] = host_us(lambda: step(module), steps)
        with torch.no_grad():
            rows[f"{name} forward, no grad"] = host_us(lambda: module(x), steps)
        rows[f"{name} forward, grad"] = host_us(lambda: module(x), steps)
        back = []
        for _ in range(steps):
            module.weight.grad = None
            x.grad = None
            back.append(backward_only(module))
        rows[f"{name} backward"] = statistics.median(back)
    kw = dict(stride=stride, padding=pad, tf32=tf32)
    rows["kf.conv2d"] = host_us(lambda: kf.conv2d(xd, wd, **kw), steps)
    rows["kf.conv2d_backward_data"] = host_us(lambda: kf.conv2d_backward_data(dy, wd, xd.shape, **kw), steps)
    rows["kf.conv2d_backward_filter"] = host_us(lambda: kf.conv2d_backward_filter(xd, dy, wd.shape, **kw), steps)
    print(f"\n== {label}: {LAYER[0]}, host us per call (median of {steps}, GPU drained before each)")
    for name, us in rows.items():
        print(f"  {name:<36} {us:9.1f}")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    busy = {f"{name} step": host_us(lambda: step(module), steps, flush)
            for name, module in (("kft.Conv2d", ours), ("nn.Conv2d", theirs))}
    busy["kf.conv2d + both gradients"] = host_us(
        lambda: (kf.conv2d(xd, wd, **kw), kf.conv2d_backward_data(dy, wd, xd.shape, **kw),
                 kf.conv2d_backward_filter(xd, dy, wd.shape, **kw)), steps, flush)
    print("   the same, issued behind a 256 MB memset (the GPU busy)")
    for name, us in busy.items():
        print(f"  {name:<36} {us:9.1f}")
    if trace:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(3):
                torch.cuda.synchronize()
                flush.zero_()
                step(ours)
            torch.cuda.synchronize()
        prof.export_chrome_trace(f"{trace}.{label}.json")

    for name, module in (("kft.Conv2d", ours), ("nn.Conv2d", theirs)):
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(10):
                step(module)
            torch.cuda.synchronize()
        print(f"\n-- {label} {name}: torch.profiler, 10 steps, by self CPU time")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=22, max_name_column_width=60))

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step(ours)
    torch.cuda.synchronize()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    print(f"\n-- {label} kft.Conv2d: cProfile, {steps} steps, by own time")
    print(out.getvalue()[:6000])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="fp16,fp32")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--trace", help="write a Chrome trace of 3 busy-GPU steps to TRACE.<mode>.json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA GPU")
        return 77
    print(f"kernelforge {kf.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for label in args.modes.split(","):
        profile_mode(label, args.steps, args.trace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
