# SPDX-License-Identifier: Apache-2.0
"""Where the host time of a kernelforge PyTorch op goes, layer by layer.

bench_python.py measures the whole call; this script takes it apart at n = 2^10
float32 (the kernel itself is a few microseconds of GPU time, hidden behind the host
path): the pieces of the op's body (DLPack export, stream lookup, allocation, the
_C call), then the same body behind each way of registering an op with PyTorch
(torch.library.custom_op, a bare torch.library.Library kernel, with and without a
Python autograd kernel, torch.autograd.Function), eager and under torch.compile.

Run on a GPU machine: python benchmarks/python/profile_torch_op.py [--cprofile]

Measured without a GPU (profile_torch_op_cpu.py: CPU tensors, _C stubbed, torch 2.15,
a shared 2-core machine, fastest of interleaved runs; per call at n = 2^10):
  - the op body on the raw entry (contiguous, empty_like, data_ptr/numel/get_device,
    one _C call, here a stub): 1.4 us, of which torch.empty_like 0.8 us.
  - torch.ops.kernelforge.relu_threshold.default through the dispatcher, with the
    body as the Autograd kernel and no checks (the floor of a Python kernel): 3.5 us;
    the body on the backend key alone (the dispatcher's C++ autograd fallback, no
    autograd formula): 3.5-3.8 us; the body on the backend key with the Python
    autograd kernel on AutogradCPU: 4.1-4.4 us, no cheaper than on the Autograd
    alias key: 4.1-4.3 us. The autograd kernel without its helper calls, list
    comprehension and generator: 3.9-4.1 us against 5.0-5.6 us before (same run);
    torch.library.custom_op: 10.5-11.3 us.
  - torch.compile (inductor) calls the op through the dispatcher, not a Python-side
    fallback: its wrapper code is `buf0 = torch.ops.kernelforge.relu_threshold.default(
    arg0_1, 0.5)` then `assert_tensor_metadata(buf0, ...)` (0.2 us), so the graph pays
    the dispatcher and the Autograd-key Python kernel on every call, grad mode or not.
    While compiled code runs, a Python function call costs about twice what it does
    eagerly (43 -> 85 ns here): tens of nanoseconds, not the in-graph gap below.
  - Whole compiled graphs (`act(x) + 1.0`, no_grad / grad): add alone 17.8 / 19.3 us,
    F.threshold fused in 23.9 / 25.8, the kernelforge registration 35.5 / 37.8, the
    body on the backend key alone 33.2 / 31.9, AutogradCPU 35.3 / 33.6, custom_op
    50.1 / 50.4. So an op with a Python kernel costs ~14-18 us in the graph against
    ~4 us for the same call eagerly, whatever carries its autograd. Noisy (2 shared
    cores, CPU inductor kernels).
  - Later (profile_torch_op_cpu.py's docstring has the figures): not the Python frames.
    An op whose Autograd kernel is a C callable (torch.neg) costs the graph as much as
    one with Python kernels (~10-12 us vs ~2.5 us eager); callgrind counts 33.5k
    instructions for the op in the graph against 30.2k eagerly; no system calls. The
    same instructions run 2-4x slower inside the compiled call (cold caches).
  - On the GPU, in_graph_rows below decide the same two questions: how much of the
    in-graph time is inside the op's kernel body ("of which in the op's kernel body",
    eager vs compiled), and whether a C-callable kernel (torch.neg) costs the
    graph as much more over its eager call as ours does (the "neg op" rows); and whether
    the op called eagerly right after a compiled call costs what it costs in the graph
    (the "cold" rows; on CPU it did, and F.threshold there cost ~4x its hot-loop time).
"""

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.dlpack

import kernelforge as kf
import kernelforge.torch as kft
from kernelforge import _C, _torch_ops, _torch_relu
from neg_probe import neg_probe  # this script's folder (run as a file: it is sys.path[0])


def per_call_us(fn, calls=3000, repeats=9):
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples), min(samples)


def in_graph_rows(x, make_model):
    """Where the op's time inside a compiled graph goes, on the GPU (no_grad, as bench_python
    measures the compiled models). Two probes, each against the add-only model in the same
    run:
      - the op's kernel body timed from inside (perf_counter around kernelforge.torch's
        _relu_threshold_kernel, behind kernelforge.torch's own registration): the part of
        the call that is our code, eager and in the graph; the rest is the dispatcher,
        OpOverload.__call__ and inductor's assert_tensor_metadata;
      - one op, kfprobe_neg::neg, compiled once into the model; then its Autograd kernel is
        swapped between a C callable (torch.neg: no Python frame, torch's own launch) and
        Python functions reaching torch.neg through 1 and 3 frames. The graph calls the op by
        name, so it runs whichever kernel is registered. If Python frames were what costs in
        a graph, the compiled rows would spread apart far more than the eager rows; if the C
        callable costs as much more in the graph as our op does, the cost is the graph's, not
        our kernel's;
      - cold calls: the op and F.threshold called eagerly right after a compiled add-only
        call, against the same calls in a hot loop."""
    rows = {}
    add_only = make_model(lambda t: t)

    spent = [0.0, 0]

    def timed_kernel(t, threshold=0.0):
        start = time.perf_counter()
        out = _torch_relu._relu_threshold_kernel(t, threshold)
        spent[0] += time.perf_counter() - start
        spent[1] += 1
        return out

    lib = torch.library.Library("kfprobe_timed", "DEF")
    timed_op = _torch_ops.register("relu", "(Tensor x, float threshold=0.0) -> Tensor", timed_kernel,
                                   _torch_ops.same_shape_fake, _torch_relu._relu_backward, _torch_relu._relu_setup,
                                   lib=lib)
    timed_model = make_model(lambda t: timed_op(t, 0.5))
    with torch.no_grad():
        for name, fn in (("eager op call", lambda: timed_op(x, 0.5)), ("compiled op + add", lambda: timed_model(x)),
                         ("compiled add only", lambda: add_only(x))):
            spent[:] = [0.0, 0]
            median, best = per_call_us(fn, calls=1000)
            inside = spent[0] / spent[1] * 1e6 if spent[1] else 0.0
            rows[f"in-graph probe: {name} [no_grad]"] = (median, best)
            if spent[1]:
                rows[f"in-graph probe: {name}: of which in the op's kernel body (mean) [no_grad]"] = (inside, inside)

    # Cold calls: the eager op and F.threshold right after a compiled add-only call (outside
    # any graph); subtract "compiled add only". On CPU the op cost as much there as in the
    # graph, and F.threshold ~4x its hot-loop time: the fair baseline for the in-graph cost.
    op = torch.ops.kernelforge.relu_threshold.default
    with torch.no_grad():
        rows["cold: compiled add only, then the op (dispatcher) [no_grad]"] = per_call_us(
            lambda: (add_only(x), op(x, 0.5)), calls=1000)
        rows["cold: compiled add only, then F.threshold [no_grad]"] = per_call_us(
            lambda: (add_only(x), F.threshold(x, 0.5, 0.0)), calls=1000)
        rows["cold: compiled add only [no_grad]"] = per_call_us(lambda: add_only(x), calls=1000)
        rows["cold: the op (dispatcher), hot loop [no_grad]"] = per_call_us(lambda: op(x, 0.5))
        rows["cold: F.threshold, hot loop [no_grad]"] = per_call_us(lambda: F.threshold(x, 0.5, 0.0))

    neg_lib, neg, kernels = neg_probe()

    neg_model = make_model(neg)
    with torch.no_grad():
        for name, kernel in kernels.items():
            impl = torch.library.Library("kfprobe_neg", "IMPL")
            impl.impl("neg", kernel, "Autograd")
            rows[f"neg op, Autograd kernel = {name}: eager op call [no_grad]"] = per_call_us(lambda: neg(x))
            rows[f"neg op, Autograd kernel = {name}: compiled op + add [no_grad]"] = per_call_us(
                lambda: neg_model(x), calls=1000)
            rows[f"neg op, Autograd kernel = {name}: compiled add only [no_grad]"] = per_call_us(
                lambda: add_only(x), calls=1000)
            impl._destroy()  # frees the Autograd key for the next kernel
        rows["torch.neg (eager) [no_grad]"] = per_call_us(lambda: torch.neg(x))
    return rows, (lib, neg_lib)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cprofile", action="store_true", help="also print a cProfile of the custom op call")
    parser.add_argument("--out", help="JSON output")
    args = parser.parse_args()

    # This script compiles one Model class around a dozen activations, with and without
    # grad: more recompilations of Model.forward than dynamo's default limit (8), which
    # with fullgraph=True is a hard error (seen on the H200 with torch 2.11).
    for limit in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)

    x = torch.randn(1 << 10, device="cuda")
    out = torch.empty_like(x)
    raw_stream = torch._C._cuda_getCurrentRawStream
    to_dl = torch.utils.dlpack.to_dlpack

    def body(t, threshold=0.5):
        t = t.contiguous()
        o = torch.empty_like(t)
        _C.relu_threshold(to_dl(t), to_dl(o), threshold, "best", raw_stream(t.get_device()))
        return o

    # A bare Library op: one Python kernel on the CUDA key, nothing on Autograd.
    lib = torch.library.Library("kfprobe", "DEF")
    lib.define("relu_cuda_only(Tensor x, float threshold=0.0) -> Tensor")
    lib.impl("relu_cuda_only", body, "CUDA")
    lib.define("relu_autograd(Tensor x, float threshold=0.0) -> Tensor")
    lib.impl("relu_autograd", body, "CUDA")

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.threshold = inputs[1]

    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        return kft.relu_threshold_backward(grad, saved, ctx.threshold), None

    torch.library.register_autograd("kfprobe::relu_autograd", backward, setup_context=setup, lib=lib)
    for name in ("relu_cuda_only", "relu_autograd"):
        torch.library.register_fake(f"kfprobe::{name}", lambda t, threshold=0.0: t.new_empty(t.shape), lib=lib)

    @torch.library.custom_op("kfprobe::relu_custom_op", mutates_args=())
    def relu_custom_op(t: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
        return body(t, threshold)

    relu_custom_op.register_fake(lambda t, threshold=0.0: t.new_empty(t.shape))
    relu_custom_op.register_autograd(backward, setup_context=setup)

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t, threshold):
            ctx.save_for_backward(t)
            ctx.threshold = threshold
            return body(t, threshold)

        @staticmethod
        def backward(ctx, grad):
            (saved,) = ctx.saved_tensors
            return kft.relu_threshold_backward(grad, saved, ctx.threshold), None

    pieces = {
        "F.threshold": lambda: F.threshold(x, 0.5, 0.0),
        "x.contiguous()": lambda: x.contiguous(),
        "torch.empty(shape, dtype, device)": lambda: torch.empty(x.shape, dtype=x.dtype, device=x.device),
        "torch.empty_like": lambda: torch.empty_like(x),
        "to_dlpack(x)": lambda: to_dl(x),
        "x.__dlpack__()": lambda: x.__dlpack__(),
        "x.data_ptr()": lambda: x.data_ptr(),
        "raw stream": lambda: raw_stream(0),
        "_C.relu_threshold(capsules)": lambda: _C.relu_threshold(to_dl(x), to_dl(out), 0.5, "best", raw_stream(0)),
        "_C.relu_threshold_raw(pointers)": lambda: _C.relu_threshold_raw(x.data_ptr(), out.data_ptr(), x.numel(), 0, 0,
                                                                          0.5, raw_stream(0)),
        "op body, raw entry (kernelforge.torch)": lambda: _torch_relu._relu_threshold_kernel(x, 0.5),
        "kf.relu_threshold(x, out=)": lambda: kf.relu_threshold(x, 0.5, out),
        "op body, DLPack entry (plain function)": lambda: body(x),
        "autograd.Function.apply": lambda: Fn.apply(x, 0.5),
        "custom_op (same body)": lambda: relu_custom_op(x, 0.5),
        "kernelforge.torch.relu_threshold": lambda: kft.relu_threshold(x, 0.5),
        "torch.ops.kernelforge.relu_threshold.default": lambda: torch.ops.kernelforge.relu_threshold.default(x, 0.5),
        "Library op, CUDA kernel only": lambda: torch.ops.kfprobe.relu_cuda_only.default(x, 0.5),
        "Library op + register_autograd": lambda: torch.ops.kfprobe.relu_autograd.default(x, 0.5),
    }
    rows = {}
    for mode, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad), ("inference", torch.inference_mode)):
        for name, fn in pieces.items():
            if mode != "grad" and name not in ("F.threshold", "custom_op (same body)", "kernelforge.torch.relu_threshold",
                                               "torch.ops.kernelforge.relu_threshold.default"):
                continue
            with ctx():
                rows[f"{name} [{mode}]"] = per_call_us(fn)

    class Model(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.act = act

        def forward(self, t):
            return self.act(t) + 1.0

    models = {
        "compiled F.threshold": lambda t: F.threshold(t, 0.5, 0.0),
        "compiled custom_op (same body)": lambda t: relu_custom_op(t, 0.5),
        "compiled kernelforge.torch.relu_threshold": lambda t: kft.relu_threshold(t, 0.5),
        "compiled Library op CUDA only": lambda t: torch.ops.kfprobe.relu_cuda_only(t, 0.5),
        "compiled add only": lambda t: t,
    }

    class Act(torch.nn.Module):
        def __init__(self, f):
            super().__init__()
            self.f = f

        def forward(self, t):
            return self.f(t)

    for name, f in models.items():
        compiled = torch.compile(Model(Act(f)), fullgraph=True)
        with torch.no_grad():
            rows[name + " [no_grad]"] = per_call_us(lambda: compiled(x), calls=1000)
        rows[name + " [grad, x no grad]"] = per_call_us(lambda: compiled(x), calls=1000)

    def make_model(f):
        model = torch.compile(Model(Act(f)), fullgraph=True)
        with torch.no_grad():
            model(x)
        return model

    graph_rows, _probe_libs = in_graph_rows(x, make_model)
    rows.update(graph_rows)

    print(f"torch {torch.__version__}, kernelforge {kf.__version__}")
    for name, (median, best) in rows.items():
        print(f"  {name:<72} median {median:7.2f} us  min {best:7.2f} us")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "rows": {k: {"median_us": v[0], "min_us": v[1]}
                                                            for k, v in rows.items()}}, f, indent=2)

    if args.cprofile:
        for name in ("torch.ops.kernelforge.relu_threshold.default", "kernelforge.torch.relu_threshold"):
            fn = pieces[name]
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(3000):
                fn()
            prof.disable()
            torch.cuda.synchronize()
            print(f"\n=== cProfile: {name} (3000 calls)")
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
