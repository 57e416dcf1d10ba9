# SPDX-License-Identifier: Apache-2.0
"""bench_python's convolution rows (items 4 and 5 of its docstring): kf.conv2d against
F.conv2d on channels_last ResNet layers, and the training step (forward, dgrad, wgrad)
against F.conv2d + aten.convolution_backward, all through cuDNN in benchmark mode."""

import torch
import torch.nn.functional as F

import kernelforge as kf
from gpu_timing import gpu_ms, gpu_ms_paired


# (name, N, C, H, W, K, R, S, stride, padding): ResNet-50's 3x3 layers at three widths, its
# 7x7 stride-2 RGB stem (C = 3) and a 1x1 reduction.
CONV_LAYERS = [
    ("N32_C64_56x56_K64_3x3_p1", 32, 64, 56, 56, 64, 3, 3, 1, 1),
    ("N32_C128_28x28_K128_3x3_p1", 32, 128, 28, 28, 128, 3, 3, 1, 1),
    ("N32_C256_14x14_K256_3x3_p1", 32, 256, 14, 14, 256, 3, 3, 1, 1),
    ("N16_C3_224x224_K64_7x7_s2_p3", 16, 3, 224, 224, 64, 7, 7, 2, 3),
    ("N32_C256_56x56_K64_1x1", 32, 256, 56, 56, 64, 1, 1, 1, 0),
]
CONV_DTYPES = [("fp16", torch.float16, False), ("bf16", torch.bfloat16, False), ("tf32", torch.float32, True)]


def conv_rows(layers=CONV_LAYERS, fused_layers=1):
    """TFLOP/s of kf.conv2d on channels_last tensors and of F.conv2d (cuDNN, autotuned) on
    the same ones; the first `fused_layers` layers also with bias + ReLU. Each row also
    gives max |ours - torch's| / max |torch's|. An error is recorded in its row, not raised."""
    rows = []
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.benchmark = True
    try:
        for index, (name, n, c, h, w, k, r, s, stride, pad) in enumerate(layers):
            p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
            flops = 2.0 * n * k * p * q * c * r * s
            for label, dtype, tf32 in CONV_DTYPES:
                torch.backends.cudnn.allow_tf32 = tf32
                x = torch.randn(n, c, h, w, device="cuda").to(dtype).to(memory_format=torch.channels_last)
                wt = torch.randn(k, c, r, s, device="cuda").to(dtype).to(memory_format=torch.channels_last)
                b = torch.randn(k, device="cuda").to(dtype)
                out = torch.empty(n, k, p, q, device="cuda", dtype=dtype, memory_format=torch.channels_last)
                cases = [("conv2d", lambda: kf.conv2d(x, wt, stride=stride, padding=pad, tf32=tf32, out=out),
                          lambda: F.conv2d(x, wt, stride=stride, padding=pad), None)]
                if index < fused_layers:
                    def fused(t, u, v):
                        return F.relu(F.conv2d(t, u, v, stride=stride, padding=pad))
                    cases.append(("conv2d_bias_relu",
                                  lambda: kf.conv2d(x, wt, b, stride=stride, padding=pad, tf32=tf32, relu=True,
                                                    out=out),
                                  lambda: fused(x, wt, b), torch.compile(fused, fullgraph=True)))
                for op, ours, theirs, compiled in cases:
                    row = {"name": f"{op}/{label}/channels_last/{name}", "flops": flops,
                           "baseline": "F.conv2d (cuDNN, benchmark=True)" if op == "conv2d"
                           else "F.relu(F.conv2d(x, w, b)) (cuDNN, benchmark=True)"}
                    try:
                        ours_ms, theirs_ms = gpu_ms_paired(ours, theirs)
                        row.update({"kf_ms": ours_ms, "torch_ms": theirs_ms, "kf_TFLOP/s": flops / ours_ms / 1e9,
                                    "torch_TFLOP/s": flops / theirs_ms / 1e9, "kf_over_torch": theirs_ms / ours_ms})
                        got, want = ours().float(), theirs().float()  # a broken kernel shows here, not as speed
                        row["max_diff_over_max_abs"] = float((got - want).abs().max() / want.abs().max())
                        if compiled is not None:
                            compiled_ms = gpu_ms(lambda: compiled(x, wt, b))
                            row.update({"torch_compile_TFLOP/s": flops / compiled_ms / 1e9,
                                        "kf_over_torch_compile": compiled_ms / ours_ms})
                    except Exception as e:  # noqa: BLE001 -- a failing row must not lose the other rows
                        row["error"] = f"{type(e).__name__}: {e}"
                    rows.append(row)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = saved
    return rows


# The training step's modes: CONV_DTYPES in channels_last, and exact float32 in NCHW (the
# forward's other layout: our gradients there run the exact forward and SGEMM).
CONV_TRAIN_MODES = [(label, dtype, tf32, torch.channels_last) for label, dtype, tf32 in CONV_DTYPES] + [
    ("fp32", torch.float32, False, torch.contiguous_format)]


def module_step_ms(c, k, r, s, stride, pad, dtype, tf32, memory_format, x, wt, dy):
    """GPU ms of one training step through modules: kernelforge.torch.Conv2d and
    torch.nn.Conv2d (no bias, the same weight), forward and autograd backward of dy into
    x's and the weight's gradients, both freed before each step as an optimizer's
    zero_grad(set_to_none=True) does."""
    import kernelforge.torch as kft
    xg = x.detach().clone().requires_grad_(True)
    common = dict(stride=stride, padding=pad, bias=False, device="cuda", dtype=dtype)
    ours = kft.Conv2d(c, k, (r, s), tf32=tf32, **common).to(memory_format=memory_format)
    theirs = torch.nn.Conv2d(c, k, (r, s), **common).to(memory_format=memory_format)
    with torch.no_grad():
        ours.weight.copy_(wt)
        theirs.weight.copy_(wt)

    def step(module):
        module.weight.grad = None
        xg.grad = None
        module(xg).backward(dy)

    return tuple(gpu_ms_paired(lambda: step(ours), lambda: step(theirs)))


def conv_train_rows(layers=CONV_LAYERS):
    """The training step of each layer (see the top of this file, item 5). An error is
    recorded in its row, not raised."""
    rows = []
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.benchmark = True
    bwd = torch.ops.aten.convolution_backward
    try:
        for name, n, c, h, w, k, r, s, stride, pad in layers:
            p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
            flops = 2.0 * n * k * p * q * c * r * s
            st, pd, dl = [stride, stride], [pad, pad], [1, 1]
            for label, dtype, tf32, cl in CONV_TRAIN_MODES:
                torch.backends.cudnn.allow_tf32 = tf32
                x = torch.randn(n, c, h, w, device="cuda").to(dtype).to(memory_format=cl)
                wt = torch.randn(k, c, r, s, device="cuda").to(dtype).to(memory_format=cl)
                dy = torch.randn(n, k, p, q, device="cuda").to(dtype).to(memory_format=cl)
                y = torch.empty(n, k, p, q, device="cuda", dtype=dtype, memory_format=cl)
                dx = torch.empty_like(x)
                dw = torch.empty_like(wt)
                kw = dict(stride=stride, padding=pad, tf32=tf32)
                ours = {
                    "forward": lambda: kf.conv2d(x, wt, out=y, **kw),
                    "dgrad": lambda: kf.conv2d_backward_data(dy, wt, x.shape, out=dx, **kw),
                    "wgrad": lambda: kf.conv2d_backward_filter(x, dy, wt.shape, out=dw, **kw),
                }
                theirs = {
                    "forward": lambda: F.conv2d(x, wt, stride=stride, padding=pad),
                    "dgrad": lambda: bwd(dy, x, wt, None, st, pd, dl, False, [0, 0], 1, [True, False, False]),
                    "wgrad": lambda: bwd(dy, x, wt, None, st, pd, dl, False, [0, 0], 1, [False, True, False]),
                }
                memory = "channels_last" if cl == torch.channels_last else "nchw"
                row = {"name": f"conv2d_train/{label}/{memory}/{name}", "flops": flops,
                       "baseline": "F.conv2d + aten.convolution_backward (cuDNN, benchmark=True)"}
                try:
                    for part in ("forward", "dgrad", "wgrad"):
                        a, b = gpu_ms_paired(ours[part], theirs[part])
                        row.update({f"{part}_kf_ms": a, f"{part}_torch_ms": b, f"{part}_kf_over_torch": b / a})
                    a, b = gpu_ms_paired(lambda: [f() for f in ours.values()],
                                         lambda: (theirs["forward"](), bwd(dy, x, wt, None, st, pd, dl, False,
                                                                           [0, 0], 1, [True, True, False])))
                    row.update({"step_kf_ms": a, "step_torch_ms": b, "kf_over_torch": b / a,
                                "kf_effective_TFLOP/s": 3 * flops / a / 1e9,
                                "torch_effective_TFLOP/s": 3 * flops / b / 1e9})
                    a, b = module_step_ms(c, k, r, s, stride, pad, dtype, tf32, cl, x, wt, dy)
                    row.update({"module_step_kf_ms": a, "module_step_torch_ms": b, "module_kf_over_torch": b / a})
                    for part, got in (("dgrad", ours["dgrad"]), ("wgrad", ours["wgrad"])):
                        got = got()
                        got = (got[0] if isinstance(got, tuple) else got).float()
                        want = theirs[part]()[0 if part == "dgrad" else 1].float()
                        row[f"{part}_max_diff_over_max_abs"] = float((got - want).abs().max() / want.abs().max())
                except Exception as e:  # noqa: BLE001 -- a failing row must not lose the other rows
                    row["error"] = f"{type(e).__name__}: {e}"
                rows.append(row)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = saved
    return rows
