# SPDX-License-Identifier: Apache-2.0
"""GPU tests of conv2d's gradients in each dtype and layout against PyTorch:
kernelforge.conv2d_backward_data and conv2d_backward_filter (each variant, the fused ReLU's
mask), the operators kernelforge::conv2d_backward_data and conv2d_backward_filter
(opcheck), kernelforge::conv2d's autograd, torch.compile fullgraph of a training step with
no aten convolution backward in its graph, and the examples/python/train_cnn.py example.
Skipped without torch or a GPU.

Each gradient is held to the forward's error bound (conv_torch_support.py) with the
gradients' sum lengths, against torch's float64 gradients of the same inputs and against
torch's in the dtype; outputs start as NaN, so an element left unwritten fails."""

import functools
import math

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")
if kf.device_count() == 0 or not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import kernelforge.torch as kft  # noqa: E402
from aot_graphs import AotGraphs  # noqa: E402

from conv_torch_support import CL, DEV, MODE_IDS, MODES, UNIT_ROUNDOFF, assert_within, conv_reference, error_bound, rand  # noqa: E402,E501


pytestmark = pytest.mark.usefixtures("exact_torch")  # torch's reference convolutions in full fp32 (conftest.py)


# ---- the gradients -------------------------------------------------------------------------
#
# The same bound as the forward's (error_bound) with the gradients' sums (kernelforge/conv_backward.hpp):
#  - dx: a forward convolution of dy with the turned filter: L = K*R*S products per element (the
#    zeros of a strided layer's spread dy included); exact float32 NCHW 3x3 dilation-1 layers with
#    C and K >= 64 may run Winograd (the sum term taken 8x, as in the forward);
#  - dweight: a GEMM over the N*P*Q output positions: L = N*P*Q; dbias: the same sum, no products;
#  - scale: the same gradient of |x|, |w| and |dy| in float64; one rounding to the dtype.

def gradient_reference(x, weight, bias, grad, relu_y=None, relu_threshold=0.0, **geometry):
    """{name: (value, scale)} of dx, dweight and dbias in float64 (dy masked where relu_y <= relu_threshold)."""
    def grads(x, w, b, g):
        x, w = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        b = None if b is None else b.detach().double().requires_grad_()
        F.conv2d(x, w, b, **geometry).backward(g)
        return x.grad, w.grad, None if b is None else b.grad

    g = grad.double()
    if relu_y is not None:
        g = torch.where(relu_y.double() <= relu_threshold, torch.zeros_like(g), g)
    value = grads(x, weight, bias, g)
    scale = grads(x.abs(), weight.abs(), None if bias is None else bias.abs(), g.abs())
    return {name: (v, sc) for name, v, sc in zip(("dx", "dweight", "dbias"), value, scale) if v is not None}


def gradient_bound(name, x, weight, grad, value, scale, tf32, winograd=False):
    k, c, r, s = weight.shape
    n, _, p, q = grad.shape
    length = k * r * s if name == "dx" else n * p * q
    summation = (4 * math.sqrt(length) + 8) * 2.0**-23 * (8 if winograd and name == "dx" else 1)
    products = 1.001 * 2.0**-9 if tf32 and x.dtype == torch.float32 and name != "dbias" else 0.0
    return (summation + products) * scale + 2 * UNIT_ROUNDOFF[x.dtype] * value.abs()


def dx_may_run_winograd(x, weight, g, tf32):
    # dx runs as the forward convolution of dy (K channels) with the turned filter (C outputs), stride 1.
    return (x.dtype == torch.float32 and x.is_contiguous() and not tf32 and weight.shape[2:] == (3, 3) and
            g["dilation"] == 1 and x.shape[1] >= 64 and weight.shape[0] >= 64)


def assert_gradients(label, got, want, x, weight, grad, tf32, g, theirs=None):
    """got: {name: tensor}; want: gradient_reference's; theirs: torch's gradients in the dtype (3 bounds
    plus 8 of torch's own roundings of the scale, as the forward's comparison)."""
    for name, (value, scale) in want.items():
        bound = gradient_bound(name, x, weight, grad, value, scale, tf32, dx_may_run_winograd(x, weight, g, tf32))
        assert_within(f"{label} {name} vs float64", got[name], value, bound)
        if theirs is not None:
            slack = 0.0 if x.dtype == torch.float32 else 8 * UNIT_ROUNDOFF[x.dtype] * scale
            assert_within(f"{label} {name} vs torch", got[name], theirs[name].double(), 3 * bound + slack)


GRAD_GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding, dilation)
    (2, 64, 17, 19, 72, 3, 3, 1, 1, 1),  # odd sizes; C, K >= 64 (Winograd's dx in exact NCHW)
    (1, 32, 15, 13, 40, 3, 3, 1, 2, 2),  # dilation 2
    (2, 16, 21, 20, 24, 3, 3, 2, 1, 1),  # stride 2, an odd height: a row the forward never reads
    (2, 3, 45, 47, 64, 7, 7, 2, 3, 1),  # an RGB stem (C = 3)
    (3, 256, 7, 9, 64, 1, 1, 1, 0, 1),  # 1x1
    (1, 5, 9, 8, 7, 3, 5, (2, 1), (0, 2), (1, 2)),  # odd C, unequal strides, paddings, dilations
    (1, 128, 11, 13, 200, 3, 3, 1, 1, 1),  # K = 200: partial tiles
    (1, 8, 6, 6, 16, 3, 3, 1, 3, 1),  # padding beyond the filter's reach (dx: naive)
]
GRAD_GEOMETRY_IDS = ["3x3", "dilation2", "stride2", "stem", "1x1", "odd", "partial-tiles", "wide-padding"]


@pytest.mark.parametrize("x_grad,with_bias", [(True, True), (True, False), (False, True)],
                         ids=["bias", "no-bias", "no-x-grad"])
@pytest.mark.parametrize("dtype,memory_format,tf32", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("geometry", GRAD_GEOMETRIES, ids=GRAD_GEOMETRY_IDS)
def test_gradients_match_torch(geometry, dtype, memory_format, tf32, x_grad, with_bias):
    # kernelforge.torch.Conv2d's backward (conv2d_backward_data and conv2d_backward_filter) against
    # float64 and against torch's own module in the dtype and memory format.
    n, c, h, w, k, r, s, stride, padding, dilation = geometry
    g = dict(stride=stride, padding=padding, dilation=dilation)
    torch.manual_seed(0)
    ours = kft.Conv2d(c, k, (r, s), bias=with_bias, tf32=tf32, **g).to(DEV, dtype, memory_format=memory_format)
    theirs = torch.nn.Conv2d(c, k, (r, s), bias=with_bias, **g).to(DEV, dtype, memory_format=memory_format)
    theirs.load_state_dict(ours.state_dict())
    x1 = rand(n, c, h, w, dtype=dtype, memory_format=memory_format, requires_grad=x_grad)
    x2 = x1.detach().clone().requires_grad_(x_grad)
    y1 = ours(x1)
    grad = rand(*y1.shape, dtype=dtype, memory_format=memory_format)
    y1.backward(grad)
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = tf32  # torch's TF32 against ours
    try:
        theirs(x2).backward(grad)
    finally:
        torch.backends.cudnn.allow_tf32 = old
    if not x_grad:
        assert x1.grad is None
    else:
        assert x1.grad.dtype == dtype and x1.grad.is_contiguous(memory_format=memory_format)
    assert ours.weight.grad.dtype == dtype and ours.weight.grad.is_contiguous(memory_format=memory_format)
    want = gradient_reference(x1, ours.weight, ours.bias, grad, **g)
    got = {"dx": x1.grad, "dweight": ours.weight.grad, "dbias": None if ours.bias is None else ours.bias.grad}
    mine = {"dx": x2.grad, "dweight": theirs.weight.grad, "dbias": None if theirs.bias is None else theirs.bias.grad}
    if not x_grad:
        del want["dx"]
    assert_gradients("Conv2d", got, want, x1, ours.weight, grad, tf32, g, theirs=mine)


BACKWARD_VARIANTS = ["best", "naive", "implicit_gemm", "implicit_gemm_wgmma"]


@pytest.mark.parametrize("variant", BACKWARD_VARIANTS)
@pytest.mark.parametrize("dtype,memory_format,tf32", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("geometry", [GRAD_GEOMETRIES[i] for i in (0, 2, 3, 5, 7)],
                         ids=[GRAD_GEOMETRY_IDS[i] for i in (0, 2, 3, 5, 7)])
def test_gradient_functions_and_variants(geometry, dtype, memory_format, tf32, variant):
    # kernelforge.conv2d_backward_data / conv2d_backward_filter, each variant, into poisoned outputs
    # (NaN: an element left unwritten fails), with the fused ReLU's mask from kf.conv2d(relu=True).
    n, c, h, w, k, r, s, stride, padding, dilation = geometry
    g = dict(stride=stride, padding=padding, dilation=dilation)
    x = rand(n, c, h, w, dtype=dtype, memory_format=memory_format)
    weight = rand(k, c, r, s, dtype=dtype, memory_format=memory_format)
    bias = rand(k, dtype=dtype)
    for threshold in (None, 0.25):
        relu = threshold is not None
        y = kf.conv2d(x, weight, bias, relu=relu, relu_threshold=threshold or 0.0, tf32=tf32, **g)
        grad = rand(*y.shape, dtype=dtype, memory_format=memory_format)
        extra = dict(relu=True, relu_y=y, relu_threshold=threshold) if relu else {}
        dx = torch.full_like(x, float("nan"))
        dw = torch.full_like(weight, float("nan"))
        db = torch.full_like(bias, float("nan"))
        assert kf.conv2d_backward_data(grad, weight, out=dx, tf32=tf32, variant=variant, **g, **extra) is dx
        dw_out, db_out = kf.conv2d_backward_filter(x, grad, out=dw, out_bias=db, tf32=tf32, variant=variant, **g,
                                                   **extra)
        assert dw_out is dw and db_out is db
        want = gradient_reference(x, weight, bias, grad, relu_y=y if relu else None, relu_threshold=threshold or 0.0,
                                  **g)
        label = f"{variant}, relu {threshold}"
        assert_gradients(label, {"dx": dx, "dweight": dw, "dbias": db}, want, x, weight, grad, tf32, g)
        # Allocated outputs: the layout's memory format, x's and the weight's shapes.
        dx2 = kf.conv2d_backward_data(grad, weight, x.shape, tf32=tf32, variant=variant, **g, **extra)
        dw2, db2 = kf.conv2d_backward_filter(x, grad, weight.shape, tf32=tf32, variant=variant, **g, **extra)
        assert db2 is None and dx2.is_contiguous(memory_format=memory_format)
        assert dw2.is_contiguous(memory_format=memory_format)
        assert_gradients(label + " (allocated)", {"dx": dx2, "dweight": dw2},
                         {key: want[key] for key in ("dx", "dweight")}, x, weight, grad, tf32, g)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, CL], ids=["nchw", "cl"])
def test_fp32_emulated_operator_and_module(memory_format):
    # kernelforge::conv2d and Conv2d with math="fp32_emulated": the forward within exact fp32's
    # bound of float64 (it runs the emulation on cc 9.0), the gradients exact (they have no
    # emulated mode), both through autograd; opcheck with the math argument.
    x = rand(2, 64, 17, 19, memory_format=memory_format).requires_grad_()
    conv = kft.Conv2d(64, 72, 3, padding=1, math="fp32_emulated", device=DEV).to(memory_format=memory_format)
    g = dict(stride=1, padding=1, dilation=1)
    if torch.cuda.get_device_capability() != (9, 0):
        with pytest.raises(kf.UnsupportedError, match="compute capability 9.0"):
            conv(x)
        return
    y = conv(x)
    assert y.is_contiguous(memory_format=memory_format)
    value, scale = conv_reference(x.detach(), conv.weight.detach(), conv.bias.detach(), False, g)
    assert_within("fp32_emulated module vs float64", y, value, error_bound(x, conv.weight, value, scale, False))
    grad = rand(*y.shape, memory_format=memory_format)
    y.backward(grad)
    want = gradient_reference(x, conv.weight, conv.bias, grad, **g)
    got = {"dx": x.grad, "dweight": conv.weight.grad, "dbias": conv.bias.grad}
    assert_gradients("fp32_emulated module", got, want, x, conv.weight, grad, False, g)
    torch.library.opcheck(torch.ops.kernelforge.conv2d.default,
                          (x.detach().requires_grad_(), conv.weight.detach().requires_grad_(), None, [1, 1], [1, 1],
                           [1, 1]), {"math": "fp32_emulated"})


def test_gradient_errors_on_gpu():
    x16 = rand(2, 8, 9, 9, dtype=torch.float16, memory_format=CL)
    w16 = rand(4, 8, 3, 3, dtype=torch.float16, memory_format=CL)
    dy16 = rand(2, 4, 7, 7, dtype=torch.float16, memory_format=CL)
    with pytest.raises(kf.InvalidArgumentError, match="float16 convolves in channels_last memory only, but 'dy'"):
        kf.conv2d_backward_data(dy16.contiguous(), w16, x16.shape)  # kf.conv2d_backward_data never copies dy
    with pytest.raises(kf.InvalidArgumentError, match="float16 convolves in channels_last memory only, but 'x'"):
        kf.conv2d_backward_filter(x16.contiguous(), dy16, w16.shape)
    with pytest.raises(kf.UnsupportedError, match="channels_last layout only"):
        kf.conv2d_backward_data(dy16, w16, x16.shape, layout="nchw")
    with pytest.raises(kf.InvalidArgumentError, match="relu_threshold = -0.5"):
        kf.conv2d_backward_data(dy16, w16, x16.shape, relu=True, relu_y=dy16, relu_threshold=-0.5)
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' has shape \(2, 4, 7, 7\); this convolution gives "
                                                      r"\(N, K, P, Q\) = \(2, 4, 4, 4\)"):
        kf.conv2d_backward_filter(x16, dy16, w16.shape, stride=2)
    # The operators copy instead: a float16 NCHW dy and x run in channels_last.
    dx = kft.conv2d_backward_data(dy16.contiguous(), w16, list(x16.shape), [1, 1], [0, 0], [1, 1])
    dw, db = kft.conv2d_backward_filter(dy16.contiguous(), x16.contiguous(), list(w16.shape), [1, 1], [0, 0], [1, 1],
                                        True)
    assert dx.is_contiguous(memory_format=CL) and dw.is_contiguous(memory_format=CL) and db.shape == (4,)
    want = gradient_reference(x16, w16, torch.zeros(4, device=DEV, dtype=torch.float16), dy16)
    assert_gradients("operators, float16 NCHW", {"dx": dx, "dweight": dw, "dbias": db}, want, x16, w16, dy16, False,
                     dict(stride=1, padding=0, dilation=1))


OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
OPCHECK_UTILS_WITHOUT_AOT = OPCHECK_UTILS[:-1]


def test_opcheck_gradient_operators():
    ops = torch.ops.kernelforge
    for dtype, memory_format, tf32 in MODES:
        x = rand(2, 8, 9, 10, dtype=dtype, memory_format=memory_format, requires_grad=True)
        weight = rand(16, 8, 3, 3, dtype=dtype, memory_format=memory_format, requires_grad=True)
        dy = rand(2, 16, 5, 5, dtype=dtype, memory_format=memory_format, requires_grad=True)
        relu_y = F.relu(rand(2, 16, 5, 5, dtype=dtype, memory_format=memory_format)) + 0.0
        geometry = ([2, 2], [1, 1], [1, 1])
        # Under TF32 the AOTDispatcher's gradient (its incoming gradients may come in another
        # memory format, so another layout's kernels run) differs from eager's by TF32 rounding
        # (measured on the H200: 1.2e-2 absolute on sums of 72 products), far above opcheck's
        # fp32 tolerance; TF32's gradients are checked against torch's under a TF32 bound in
        # test_gradients_match_torch instead.
        utils = OPCHECK_UTILS_WITHOUT_AOT if tf32 else OPCHECK_UTILS
        check = functools.partial(torch.library.opcheck, test_utils=utils)
        check(ops.conv2d_backward_data.default, (dy, weight, [2, 8, 9, 10], *geometry, tf32))
        check(ops.conv2d_backward_data.default, (dy, weight, [2, 8, 9, 10], *geometry, tf32, relu_y))
        check(ops.conv2d_backward_filter.default, (dy, x, [16, 8, 3, 3], *geometry, True, tf32))
        check(ops.conv2d_backward_filter.default, (dy, x, [16, 8, 3, 3], *geometry, False, tf32, relu_y, 0.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_autograd_channels_last(dtype):
    # Backward is kernelforge's conv2d_backward_data and conv2d_backward_filter: gradients in the
    # inputs' dtype and channels_last memory, within the bound of torch's own module's.
    torch.manual_seed(0)
    ours = kft.Conv2d(16, 24, 3, stride=1, padding=1).to(DEV, dtype, memory_format=CL)
    theirs = torch.nn.Conv2d(16, 24, 3, stride=1, padding=1).to(DEV, dtype, memory_format=CL)
    theirs.load_state_dict(ours.state_dict())
    x1 = rand(4, 16, 14, 14, dtype=dtype, memory_format=CL, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    y1, y2 = ours(x1), theirs(x2)
    assert y1.grad_fn is not None and y1.is_contiguous(memory_format=CL) and y1.dtype == dtype
    value, scale = conv_reference(x1.detach(), ours.weight.detach(), ours.bias.detach(), False, dict(padding=1))
    assert_within("module forward", y1.detach(), value, error_bound(x1, ours.weight, value, scale, False))
    g = rand(*y1.shape, dtype=dtype, memory_format=CL)
    y1.backward(g)
    y2.backward(g)
    assert x1.grad.dtype == dtype and x1.grad.is_contiguous(memory_format=CL)
    want = gradient_reference(x1, ours.weight, ours.bias, g, padding=1)
    assert_gradients("module", {"dx": x1.grad, "dweight": ours.weight.grad, "dbias": ours.bias.grad}, want, x1,
                     ours.weight, g, False, dict(stride=1, padding=1, dilation=1),
                     theirs={"dx": x2.grad, "dweight": theirs.weight.grad, "dbias": theirs.bias.grad})


class TrainingNet(torch.nn.Module):
    """Conv2d (a first layer, whose x needs no gradient), ThresholdReLU and a matmul head."""

    def __init__(self, tf32):
        super().__init__()
        self.stem = kft.Conv2d(3, 32, 3, stride=2, padding=1, tf32=tf32)
        self.conv = kft.Conv2d(32, 32, 3, padding=1, tf32=tf32)
        self.act = kft.ThresholdReLU(0.0)
        self.head = torch.nn.Parameter(torch.randn(32, 10) / 32**0.5)
        self.tf32 = tf32

    def forward(self, x):
        h = self.act(self.conv(self.act(self.stem(x))))
        return kft.matmul(h.mean((2, 3)), self.head.to(h.dtype), self.tf32)


@pytest.mark.parametrize("dtype,memory_format,tf32", [MODES[i] for i in (0, 3, 4, 5)],
                         ids=[MODE_IDS[i] for i in (0, 3, 4, 5)])
def test_compiled_training_step(dtype, memory_format, tf32):
    # torch.compile(fullgraph=True) of the model, then backward and an SGD step: the backward graph
    # holds kernelforge's gradient operators and no aten convolution backward (aot_autograd's graphs,
    # and inductor's code), and the compiled steps give eager's parameters.
    torch.manual_seed(0)
    eager_net = TrainingNet(tf32).to(DEV, dtype, memory_format=memory_format)
    x = rand(8, 3, 16, 16, dtype=dtype, memory_format=memory_format)
    target = torch.randint(0, 10, (8,), device=DEV)
    results, code = {}, []
    for name in ("eager", "graphs", "inductor"):
        torch._dynamo.reset()
        net = TrainingNet(tf32).to(DEV, dtype, memory_format=memory_format)
        net.load_state_dict(eager_net.state_dict())
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        graphs = AotGraphs()
        model = net if name == "eager" else torch.compile(net, fullgraph=True,
                                                          backend=graphs.backend if name == "graphs" else "inductor")

        def step():
            for _ in range(2):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x).float(), target).backward()
                opt.step()

        if name == "inductor":
            try:
                from torch._inductor.utils import run_and_get_code
                _, code = run_and_get_code(step)
            except ImportError:
                step()
        else:
            step()
        results[name] = [p.detach().clone() for p in net.parameters()]
        if name == "graphs":
            forward, backward = AotGraphs.targets(graphs.forward), AotGraphs.targets(graphs.backward)
            assert forward.count("kernelforge.conv2d.default") == 2
            assert backward.count("kernelforge.conv2d_backward_filter.default") == 2
            assert backward.count("kernelforge.conv2d_backward_data.default") == 1  # not for the stem's x
            assert not [t for t in forward + backward if "convolution" in t], forward + backward
    assert all("convolution_backward" not in c for c in code)
    assert any("conv2d_backward_filter" in c for c in code) or not code
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 and not tf32 else dict(rtol=2e-2, atol=2e-2)
    for name in ("graphs", "inductor"):
        for ours, theirs in zip(results[name], results["eager"]):
            torch.testing.assert_close(ours, theirs, **tol, msg=lambda m: f"{name}: {m}")


def test_train_cnn_example():
    # examples/python/train_cnn.py: kernelforge's CNN and torch's, bf16 channels_last, on the digits.
    pytest.importorskip("sklearn")
    import pathlib
    import subprocess
    import sys
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "train_cnn.py"
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "PASSED" in run.stdout, run.stdout + run.stderr
