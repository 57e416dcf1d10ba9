# SPDX-License-Identifier: Apache-2.0
"""What calling kernelforge from Python costs: per-call host overhead and bandwidth.

1. Per-call overhead at n = 2^10 float32 (the kernel is tiny, so the host path is
   what is measured): kernelforge's DLPack API, the kernelforge.torch function and the registered operator,
   and torch's own op in the same run (F.threshold, torch.add), plus a
   torch.compile'd model using the op against the same model with F.threshold
   and against the model without the activation (the op's own cost in a graph),
   and both models under torch.compile(mode="reduce-overhead") (CUDA graphs:
   no op's host path runs per call). A compiled call leaves the host's caches
   cold for what runs next, so F.threshold and the op are also timed eagerly
   right after a compiled call: the fair denominator of the op's in-graph cost.
   Wall time over many back-to-back calls, one synchronize at the end; the rows
   take turns over 15 rounds and each reports the median round (and the fastest).
   Goal: kernelforge <= 1.5x torch's F.threshold.
2. Bandwidth at n = 2^28 float32: CUDA events around one call, L2 flushed before
   every sample, median of the samples, against the C++ benchmark's GB/s for the
   same op (the "vectorized" row of bench_elementwise.json). Goal: within 3%.
3. Matrix products through Python at 4096^3 and 8192^3, timed the same way (CUDA
   events, L2 flushed, median) but paired: ours and torch's in turn sample by sample,
   after a 50 ms warm-up of each (gpu_timing.gpu_ms_paired), beside torch's product on the same randn
   operands: kf.matmul in float16 and bfloat16 against torch.mm (cuBLAS), and
   kf.scaled_matmul (e4m3 x e4m3 -> bf16, per-tensor and row-wise scales) against
   torch._scaled_mm (cuBLASLt), b as the .t() of a row-major (n, k) weight.
4. Convolutions through Python in channels_last memory, timed the same way (paired), each beside
   torch.nn.functional.conv2d (cuDNN, torch.backends.cudnn.benchmark = True) on the same
   randn tensors: five ResNet-shaped layers (CONV_LAYERS) in float16, bfloat16 and
   float32 with TF32 allowed (kf.conv2d(tf32=True); cudnn.allow_tf32 on for torch),
   and bias + ReLU fused into our store against torch's F.relu(F.conv2d(x, w, b))
   eager and under torch.compile (inductor's best: cuDNN, then one fused pointwise pass).
5. The convolution's training step on the same layers and types (and exact float32 in
   NCHW): our forward, data gradient
   (kf.conv2d_backward_data) and filter gradient (kf.conv2d_backward_filter) against
   F.conv2d and aten.convolution_backward (cuDNN, benchmark mode) on the same randn x, w
   and dy; each part timed alone and the three back to back (the step), reported as
   effective TFLOP/s (3 x the forward's FLOPs over the step's time), with each gradient's
   max |ours - torch's| / max |torch's|. And the step as a network runs it: a
   kernelforge.torch.Conv2d module's forward and autograd backward (dx and dw) against
   torch.nn.Conv2d's, same weights, no bias (module_step_*): the host time of the
   autograd machinery is in these, as it is in training.

Run: python benchmarks/python/bench_python.py --out bench_python.json
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import kernelforge as kf
import kernelforge.torch as kft
from conv_rows import conv_rows, conv_train_rows
from gpu_timing import gpu_ms, gpu_ms_paired

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CPP_JSON = os.path.join(HERE, "..", "results", "h200", "bench_elementwise.json")


def per_call_us(rows, calls=1000, rounds=15):
    """{name: (median, min)} microseconds per call over `rounds` rounds; each round
    times every row once (`calls` back-to-back calls, one synchronize), so that
    drift in the host's speed (clocks, other processes) spreads over all rows alike
    instead of biasing whichever row ran during it."""
    for fn in rows.values():
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    samples = {name: [] for name in rows}
    for _ in range(rounds):
        for name, fn in rows.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples[name].append((time.perf_counter() - start) / calls * 1e6)
    return {name: (statistics.median(s), min(s)) for name, s in samples.items()}


def overhead(n=1 << 10):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    rows = {
        "torch F.threshold": lambda: F.threshold(x, 0.5, 0.0),
        "kf.relu_threshold": lambda: kf.relu_threshold(x, 0.5),
        "kf.relu_threshold(out=)": lambda: kf.relu_threshold(x, 0.5, out),
        "kernelforge.torch.relu_threshold": lambda: kft.relu_threshold(x, 0.5),
        "torch.ops.kernelforge.relu_threshold (dispatcher)": lambda: torch.ops.kernelforge.relu_threshold(x, 0.5),
        "torch.add": lambda: torch.add(x, y),
        "kf.vector_add": lambda: kf.vector_add(x, y),
    }
    result = per_call_us(rows, calls=2000)

    class Model(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.act = act

        def forward(self, t):
            return self.act(t) + 1.0

    compiled = {
        "torch.compile model (kernelforge op + add)": torch.compile(Model(kft.ThresholdReLU(0.5)), fullgraph=True),
        "torch.compile model (F.threshold + add)": torch.compile(Model(torch.nn.Threshold(0.5, 0.0)), fullgraph=True),
        "torch.compile model (add only)": torch.compile(Model(torch.nn.Identity()), fullgraph=True),
    }
    # A compiled call leaves the host's caches cold for whatever runs next
    # (benchmarks/python/profile_torch_op_cpu.py: the op called eagerly right after
    # a compiled call costs what it costs inside the graph, and so does
    # F.threshold): these rows time an eager call in that position, torch's own op
    # and ours, the fair denominator for the op's cost inside a graph.
    add_only = compiled["torch.compile model (add only)"]
    timed = {name: (lambda m=m: m(x)) for name, m in compiled.items()}
    timed["cold: compiled add only, then F.threshold"] = lambda: (add_only(x), F.threshold(x, 0.5, 0.0))
    timed["cold: compiled add only, then torch.ops.kernelforge.relu_threshold"] = lambda: (
        add_only(x), torch.ops.kernelforge.relu_threshold(x, 0.5))
    with torch.no_grad():
        result.update(per_call_us(timed))
    rows = [{"name": k, "n": n, "us_per_call": v[0], "us_per_call_min": v[1]} for k, v in result.items()]
    return rows + reduce_overhead_rows(Model, x)


def reduce_overhead_rows(Model, x):
    """The same two models under torch.compile(mode="reduce-overhead"): inductor
    captures the graph in a CUDA graph and replays it, so no op's host path runs
    per call (the kernelforge op must be capturable: it runs on torch's current
    stream with outputs from its caching allocator). An error is recorded, not raised."""
    models = {
        "torch.compile reduce-overhead model (kernelforge op + add)": Model(kft.ThresholdReLU(0.5)),
        "torch.compile reduce-overhead model (F.threshold + add)": Model(torch.nn.Threshold(0.5, 0.0)),
    }
    try:
        compiled = {name: torch.compile(m, mode="reduce-overhead", fullgraph=True) for name, m in models.items()}
        with torch.no_grad():
            timed = per_call_us({name: (lambda m=m: m(x)) for name, m in compiled.items()})
    except Exception as e:  # noqa: BLE001 -- a failing row must not lose the other rows
        return [{"name": name, "n": x.numel(), "error": f"{type(e).__name__}: {e}"} for name in models]
    return [{"name": k, "n": x.numel(), "us_per_call": v[0], "us_per_call_min": v[1]} for k, v in timed.items()]


def cpp_gbs(path, op):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError:
        return None
    for b in data.get("benchmarks", []):
        if b["name"].startswith(f"{op}/fp32/vectorized/268435456/"):
            return b.get("GB/s")
    return None


def bandwidth(cpp_json, n=1 << 28):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    cases = [  # (name, bytes, fn, C++ op name)
        ("kf.relu_threshold", 8 * n, lambda: kf.relu_threshold(x, 0.5, out), "relu_threshold_forward"),
        ("kernelforge.torch.relu_threshold", 8 * n, lambda: kft.relu_threshold(x, 0.5), "relu_threshold_forward"),
        ("torch F.threshold", 8 * n, lambda: F.threshold(x, 0.5, 0.0), None),
        ("kf.vector_add", 12 * n, lambda: kf.vector_add(x, y, out), "vector_add"),
        ("torch.add", 12 * n, lambda: torch.add(x, y, out=out), None),
    ]
    rows = []
    for name, nbytes, fn, cpp_op in cases:
        ms = gpu_ms(fn)
        gbs = nbytes / ms / 1e6
        row = {"name": name, "n": n, "ms": ms, "GB/s": gbs}
        if cpp_op:
            ref = cpp_gbs(cpp_json, cpp_op)
            row.update({"cpp_op": cpp_op, "cpp_GB/s": ref, "fraction_of_cpp": gbs / ref if ref else None})
        rows.append(row)
    return rows


def matmul_rows(shapes=(4096, 8192)):
    """TFLOP/s of kf's matrix products through Python and of torch's on the same data."""
    rows = []
    for size in shapes:
        m = n = k = size
        flops = 2.0 * m * n * k
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ours, theirs = gpu_ms_paired(lambda: kf.matmul(a, b, out), lambda: torch.mm(a, b, out=out))
            rows.append({"name": f"matmul/{str(dtype).split('.')[-1]}/{m}x{n}x{k}", "kf_TFLOP/s": flops / ours / 1e9,
                         "torch_TFLOP/s": flops / theirs / 1e9, "kf_over_torch": theirs / ours,
                         "baseline": "torch.mm (cuBLAS)"})
        if not hasattr(torch, "float8_e4m3fn") or torch.cuda.get_device_capability() < (8, 9):
            continue
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)  # a row-major weight; b = w.t()
        scales = {
            "per_tensor": (torch.tensor(0.75, device="cuda"), torch.tensor(1.25, device="cuda")),
            "rowwise": (torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5),
        }
        for mode, (sa, sb) in scales.items():
            ours, theirs = gpu_ms_paired(lambda: kf.scaled_matmul(a, w.t(), sa, sb, out_dtype=torch.bfloat16),
                                         lambda: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16))
            rows.append({"name": f"scaled_matmul/fp8_{mode}/{m}x{n}x{k}", "kf_TFLOP/s": flops / ours / 1e9,
                         "torch_TFLOP/s": flops / theirs / 1e9, "kf_over_torch": theirs / ours,
                         "baseline": "torch._scaled_mm (cuBLASLt)"})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--cpp-json", default=DEFAULT_CPP_JSON, help="the C++ benchmark's bench_elementwise.json")
    args = parser.parse_args()
    if not torch.cuda.is_available() or kf.device_count() == 0:
        print("SKIPPED: no CUDA GPU")
        return 77

    info = kf.device_info()
    over = overhead()
    bw = bandwidth(args.cpp_json)
    mm = matmul_rows()
    conv = conv_rows()
    train = conv_train_rows()
    threshold_us = {r["name"]: r["us_per_call"] for r in over if "us_per_call" in r}
    ratio = threshold_us["kf.relu_threshold"] / threshold_us["torch F.threshold"]
    torch_fn_ratio = threshold_us["kernelforge.torch.relu_threshold"] / threshold_us["torch F.threshold"]
    op_ratio = threshold_us["torch.ops.kernelforge.relu_threshold (dispatcher)"] / threshold_us["torch F.threshold"]
    # In a compiled graph inductor fuses F.threshold into the add (one kernel), so the model ratio
    # also counts the fusion; the op's own cost in the graph is its time over the add-only model.
    compiled_ratio = (threshold_us["torch.compile model (kernelforge op + add)"] /
                      threshold_us["torch.compile model (F.threshold + add)"])
    compiled_marginal = (threshold_us["torch.compile model (kernelforge op + add)"] -
                         threshold_us["torch.compile model (add only)"]) / threshold_us["torch F.threshold"]
    graphed = [threshold_us.get(f"torch.compile reduce-overhead model ({m} + add)") for m in ("kernelforge op",
                                                                                              "F.threshold")]
    add_only_us = threshold_us["torch.compile model (add only)"]
    cold_threshold = threshold_us["cold: compiled add only, then F.threshold"] - add_only_us
    cold_op = threshold_us["cold: compiled add only, then torch.ops.kernelforge.relu_threshold"] - add_only_us
    fractions = [r["fraction_of_cpp"] for r in bw if r.get("fraction_of_cpp")]
    goals = {
        "overhead_kf_over_torch_threshold": ratio,
        "overhead_kernelforge_torch_over_torch_threshold": torch_fn_ratio,
        "overhead_operator_via_dispatcher_over_torch_threshold": op_ratio,
        "compiled_model_kf_over_compiled_model_torch": compiled_ratio,
        "compiled_op_cost_over_torch_threshold_call": compiled_marginal,
        # The same cost against F.threshold called where the caches are as cold (right after a compiled call).
        "compiled_op_cost_over_cold_torch_threshold_call": compiled_marginal * threshold_us["torch F.threshold"] /
        cold_threshold if cold_threshold > 0 else None,
        "cold_op_call_over_cold_torch_threshold_call": cold_op / cold_threshold if cold_threshold > 0 else None,
        "overhead_goal_met (<= 1.5)": max(ratio, torch_fn_ratio, compiled_marginal) <= 1.5,
        "reduce_overhead_model_kf_over_torch": graphed[0] / graphed[1] if all(graphed) else None,
        "bandwidth_min_fraction_of_cpp": min(fractions) if fractions else None,
        "bandwidth_goal_met (>= 0.97)": bool(fractions) and min(fractions) >= 0.97,
    }

    print(f"kernelforge {kf.__version__}, torch {torch.__version__}, {info['name']}")
    print("\nper-call host time at n = 2^10 (us):")
    for r in over:
        if "error" in r:
            print(f"  {r['name']:<48} error: {r['error']}")
        else:
            print(f"  {r['name']:<48} {r['us_per_call']:8.2f}  (min {r['us_per_call_min']:.2f})")
    print("\nbandwidth at n = 2^28 fp32:")
    for r in bw:
        cpp = f"  C++ {r['cpp_GB/s']:.0f} GB/s -> {r['fraction_of_cpp']:.3f}" if r.get("cpp_GB/s") else ""
        print(f"  {r['name']:<36} {r['ms']:7.3f} ms {r['GB/s']:7.0f} GB/s{cpp}")
    print("\nmatrix products (TFLOP/s, same data, kf / torch):")
    for r in mm:
        print(f"  {r['name']:<40} kf {r['kf_TFLOP/s']:7.1f}  {r['baseline']} {r['torch_TFLOP/s']:7.1f}"
              f"  -> {r['kf_over_torch']:.3f}")
    print("\nconvolutions, channels_last (TFLOP/s, same data, kf / torch):")
    for r in conv:
        if "error" in r:
            print(f"  {r['name']:<58} error: {r['error']}")
            continue
        compiled = (f"  torch.compile {r['torch_compile_TFLOP/s']:7.1f} -> {r['kf_over_torch_compile']:.3f}"
                    if "torch_compile_TFLOP/s" in r else "")
        print(f"  {r['name']:<58} kf {r['kf_TFLOP/s']:7.1f}  torch {r['torch_TFLOP/s']:7.1f}"
              f"  -> {r['kf_over_torch']:.3f}{compiled}")
    print("\nconvolution training steps (forward + dgrad + wgrad; kf / torch):")
    for r in train:
        if "error" in r:
            print(f"  {r['name']:<58} error: {r['error']}")
            continue
        print(f"  {r['name']:<58} step {r['kf_over_torch']:.3f} ({r['kf_effective_TFLOP/s']:.1f} vs "
              f"{r['torch_effective_TFLOP/s']:.1f} TFLOP/s)  fwd {r['forward_kf_over_torch']:.3f}"
              f"  dgrad {r['dgrad_kf_over_torch']:.3f}  wgrad {r['wgrad_kf_over_torch']:.3f}"
              f"  diff {r['dgrad_max_diff_over_max_abs']:.1e} / {r['wgrad_max_diff_over_max_abs']:.1e}")
    print("\ngoals:", json.dumps(goals, indent=2))

    if args.out:
        result = {
            "context": {"date": datetime.datetime.now().isoformat(timespec="seconds"), "device": info,
                        "kernelforge": kf.__version__, "torch": torch.__version__,
                        "python": sys.version.split()[0], "cpp_reference": os.path.relpath(args.cpp_json)},
            "overhead": over, "bandwidth": bw, "matmul": mm, "conv2d": conv, "conv2d_train": train, "goals": goals,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
