# SPDX-License-Identifier: Apache-2.0
"""GPU tests of conv2d's forward in each dtype and layout against PyTorch: float32 (exact,
TF32 and math="fp32_emulated") in NCHW and channels_last memory, float16 and bfloat16 in channels_last, through
kernelforge.conv2d (best, and each variant that reads channels_last), the operator
kernelforge::conv2d (opcheck, torch.compile fullgraph), ThresholdReLU's memory format and
kernelforge.torch.Conv2d. The gradients: test_torch_conv_grad.py. Skipped without torch or
a GPU.

Each result is held to an error bound from the arithmetic kernelforge states
(kernelforge/conv.hpp; conv_torch_support.py), against F.conv2d in float64 of the same
inputs, and against F.conv2d in the dtype and memory format itself; outputs start as NaN,
so an element left unwritten fails (NaN compares false with any bound)."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")
if kf.device_count() == 0 or not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import kernelforge.torch as kft  # noqa: E402
from kernelforge import _torch_conv  # noqa: E402

from conv_torch_support import CL, DEV, MODE_IDS, MODES, UNIT_ROUNDOFF, assert_within, conv_reference, error_bound, rand  # noqa: E402,E501


pytestmark = pytest.mark.usefixtures("exact_torch")  # torch's reference convolutions in full fp32 (conftest.py)


# ---- kf.conv2d in each dtype and layout -------------------------------------------------------

GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding, dilation, bias, relu)
    (2, 64, 17, 19, 72, 3, 3, 1, 1, 1, True, False),  # odd sizes; the tensor-core path (stride 1, C % 8 == 0)
    (1, 32, 15, 13, 40, 3, 3, 1, 2, 2, False, True),  # dilation 2
    (2, 16, 20, 20, 24, 3, 3, 2, 1, 1, True, True),  # stride 2
    (2, 3, 45, 47, 64, 7, 7, 2, 3, 1, True, True),  # an RGB stem (C = 3)
    (3, 256, 7, 9, 64, 1, 1, 1, 0, 1, True, False),  # 1x1
    (1, 5, 9, 8, 7, 3, 5, (2, 1), (0, 2), (1, 2), True, False),  # odd C, unequal strides, paddings, dilations
    (1, 128, 11, 13, 200, 3, 3, 1, 1, 1, False, False),  # K = 200, M = 143: partial tiles
]
GEOMETRY_IDS = ["3x3", "dilation2", "stride2", "stem", "1x1", "odd", "partial-tiles"]


def case(geometry, dtype, memory_format):
    n, c, h, w, k, r, s, stride, padding, dilation, with_bias, relu = geometry
    x = rand(n, c, h, w, dtype=dtype, memory_format=memory_format)
    weight = rand(k, c, r, s, dtype=dtype, memory_format=memory_format)
    bias = rand(k, dtype=dtype) if with_bias else None
    return x, weight, bias, relu, dict(stride=stride, padding=padding, dilation=dilation)


def may_run_winograd(x, weight, geometry, tf32):
    return (x.dtype == torch.float32 and x.is_contiguous() and not tf32 and weight.shape[2:] == (3, 3) and
            geometry["stride"] == 1 and geometry["dilation"] == 1 and x.shape[1] >= 64 and weight.shape[0] >= 64)


@pytest.mark.parametrize("dtype,memory_format,tf32", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=GEOMETRY_IDS)
def test_conv2d_matches_torch(geometry, dtype, memory_format, tf32):
    x, weight, bias, relu, g = case(geometry, dtype, memory_format)
    value, scale = conv_reference(x, weight, bias, relu, g)
    bound = error_bound(x, weight, value, scale, tf32, may_run_winograd(x, weight, g, tf32))
    theirs = F.conv2d(x, weight, bias, **g)
    theirs = F.relu(theirs) if relu else theirs
    out = torch.full_like(theirs, float("nan"))  # theirs' shape and memory format
    assert kf.conv2d(x, weight, bias, relu=relu, tf32=tf32, out=out, **g) is out
    assert_within("kf.conv2d vs float64", out, value, bound)
    # torch's own result: cuDNN sums in fp32 too, but may pick FFT or Winograd algorithms, and its 16-bit
    # strided kernels were seen 7x our bound away from float64 (bf16 stride 2 on the H200, cuDNN 9.19): ours
    # is held to `bound` against float64 above; against torch, 3 bounds plus 8 of torch's own output
    # roundings of the scale.
    torch_slack = 0.0 if dtype == torch.float32 else 8 * UNIT_ROUNDOFF[dtype] * scale
    assert_within("kf.conv2d vs F.conv2d", out, theirs.double(), 3 * bound + torch_slack)
    ours = kf.conv2d(x, weight, bias, relu=relu, tf32=tf32, **g)  # allocated: channels_last in, channels_last out
    assert ours.dtype == dtype and ours.shape == theirs.shape and ours.stride() == theirs.stride()
    assert ours.is_contiguous(memory_format=memory_format)
    assert_within("kf.conv2d (allocated) vs float64", ours, value, bound)


VARIANT_GEOMETRIES = [GEOMETRIES[0], GEOMETRIES[1], GEOMETRIES[4], GEOMETRIES[6], GEOMETRIES[2], GEOMETRIES[3]]


def wgmma_runs(x, g):
    """implicit_gemm_wgmma's channels_last condition (kernelforge/conv.hpp): strides <= 8 (other layers: the fold)."""
    strides = g["stride"] if isinstance(g["stride"], tuple) else (g["stride"],)
    return max(strides) <= 8


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("variant", ["naive", "implicit_gemm_wgmma"])
@pytest.mark.parametrize("geometry", VARIANT_GEOMETRIES, ids=[GEOMETRY_IDS[GEOMETRIES.index(g)]
                                                              for g in VARIANT_GEOMETRIES])
def test_channels_last_variants(geometry, variant, dtype):
    x, weight, bias, relu, g = case(geometry, dtype, CL)
    tf32 = dtype == torch.float32 and variant == "implicit_gemm_wgmma"  # wgmma multiplies TF32 for float32
    if variant == "implicit_gemm_wgmma":
        if torch.cuda.get_device_capability() != (9, 0):
            pytest.skip("implicit_gemm_wgmma needs compute capability 9.0")
        if not wgmma_runs(x, g):
            with pytest.raises(kf.UnsupportedError, match="implicit_gemm_wgmma in the NHWC layout needs strides of at most 8"):
                kf.conv2d(x, weight, bias, relu=relu, tf32=tf32, variant=variant, **g)
            return
    value, scale = conv_reference(x, weight, bias, relu, g)
    out = torch.full_like(value, float("nan"), dtype=dtype).contiguous(memory_format=CL)
    kf.conv2d(x, weight, bias, relu=relu, tf32=tf32, out=out, variant=variant, **g)
    assert_within(f"{variant} vs float64", out, value, error_bound(x, weight, value, scale, tf32))


EMULATED_GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding)
    (2, 64, 17, 19, 72, 3, 3, 1, 1),  # the wgmma kernel's (C >= 32)
    (2, 3, 45, 47, 64, 7, 7, 2, 3),  # an RGB stem: C < 32 runs the exact kernels
]


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, CL], ids=["nchw", "cl"])
@pytest.mark.parametrize("geometry", EMULATED_GEOMETRIES, ids=["3x3", "stem"])
def test_conv2d_fp32_emulated_is_fp32_accurate_or_unsupported(geometry, memory_format):
    n, c, h, w, k, r, s, stride, padding = geometry
    x, weight = rand(n, c, h, w, memory_format=memory_format), rand(k, c, r, s, memory_format=memory_format)
    bias, g = rand(k), dict(stride=stride, padding=padding)
    if torch.cuda.get_device_capability() != (9, 0):
        with pytest.raises(kf.UnsupportedError, match="compute capability 9.0"):
            kf.conv2d(x, weight, bias, math="fp32_emulated", **g)
        return
    value, scale = conv_reference(x, weight, bias, False, g)
    bound = error_bound(x, weight, value, scale, False)  # exact fp32's bound (direct sums), never TF32's
    out = kf.conv2d(x, weight, bias, math="fp32_emulated", **g)
    assert out.is_contiguous(memory_format=memory_format)
    assert_within("fp32_emulated vs float64", out, value, bound)
    # torch's fp32 convolution (exact_torch: cuDNN without TF32), within the bound of float64 too.
    assert_within("fp32_emulated vs F.conv2d", out, F.conv2d(x, weight, bias, **g).double(), 3 * bound)
    if c >= 32:  # TF32 alone is not this accurate: the test tells the modes apart
        tf32 = kf.conv2d(x, weight, bias, tf32=True, **g).double()
        assert ((tf32 - value).abs() / scale).max().item() > 1e-5


def test_layout_errors_on_gpu():
    x16, w16 = rand(2, 8, 9, 9, dtype=torch.float16), rand(4, 8, 3, 3, dtype=torch.float16)
    with pytest.raises(kf.InvalidArgumentError, match="float16 convolves in channels_last memory only"):
        kf.conv2d(x16, w16)  # NCHW float16: kf.conv2d never copies x
    with pytest.raises(kf.UnsupportedError, match="channels_last layout only"):
        kf.conv2d(x16.to(memory_format=CL), w16, layout="nchw")
    with pytest.raises(kf.UnsupportedError, match="reads NCHW only"):
        kf.conv2d(x16.to(memory_format=CL), w16, variant="implicit_gemm")
    with pytest.raises(kf.InvalidArgumentError, match="options.math = exact forbids"):
        kf.conv2d(rand(2, 8, 9, 9, memory_format=CL), rand(4, 8, 3, 3), variant="implicit_gemm_wgmma")
    # The operator copies instead: a float16 NCHW x convolves in channels_last, the output channels_last.
    y = kft.conv2d(x16, w16, None, [1, 1], [1, 1], [1, 1])
    assert y.is_contiguous(memory_format=CL) and y.dtype == torch.float16
    value, scale = conv_reference(x16, w16, None, False, dict(padding=1))
    assert_within("operator, float16 NCHW x", y, value, error_bound(x16, w16, value, scale, False))


def test_channels_last_ambiguous_shapes():
    # C == 1 and H == W == 1: memory that reads both ways; torch's strides decide (as F.conv2d's output format).
    for x, weight in ((rand(2, 1, 12, 11, memory_format=CL), rand(8, 1, 3, 3, memory_format=CL)),
                      (torch.empty(4, 64, 1, 1, device=DEV, memory_format=CL).normal_(), rand(16, 64, 1, 1))):
        theirs = F.conv2d(x, weight)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            xd, wd = x.to(dtype), weight.to(dtype)
            ours = kf.conv2d(xd, wd)
            assert ours.dtype == dtype and ours.is_contiguous(memory_format=CL)
            assert _torch_conv.strides_like_channels_last(ours) == _torch_conv.strides_like_channels_last(theirs)
            value, scale = conv_reference(xd, wd, None, False, {})
            assert_within(f"{dtype}, {tuple(x.shape)}", ours, value, error_bound(xd, wd, value, scale, False))


def test_explicit_stream_orders_the_weight_copy():
    # A KCRS weight is copied to channels_last on the stream the kernel runs on.
    s = torch.cuda.Stream()
    x, weight = rand(2, 16, 12, 12, dtype=torch.bfloat16, memory_format=CL), rand(8, 16, 3, 3, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)
        weight.mul_(2.0)
    out = torch.empty(2, 8, 10, 10, dtype=torch.bfloat16, device=DEV, memory_format=CL)
    kf.conv2d(x, weight, out=out, stream=s)
    s.synchronize()
    value, scale = conv_reference(x, weight, None, False, {})
    assert_within("explicit stream", out, value, error_bound(x, weight, value, scale, False))


# ---- the operator: opcheck, torch.compile, autograd, the module ---------------------------------

def test_opcheck_channels_last_and_16_bit():
    op = torch.ops.kernelforge.conv2d.default
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        torch.library.opcheck(op, (rand(2, 8, 9, 10, dtype=dtype, memory_format=CL, requires_grad=True),
                                   rand(16, 8, 3, 3, dtype=dtype, memory_format=CL, requires_grad=True),
                                   rand(16, dtype=dtype, requires_grad=True), [1, 1], [1, 1], [1, 1]))
        torch.library.opcheck(op, (rand(1, 3, 9, 9, dtype=dtype, memory_format=CL), rand(5, 3, 3, 3, dtype=dtype),
                                   None, [2, 2], [0, 0], [2, 2], True))
    torch.library.opcheck(op, (rand(2, 4, 7, 7, dtype=torch.float16), rand(3, 4, 1, 1, dtype=torch.float16), None,
                               [1, 1], [0, 0], [1, 1]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_threshold_relu_keeps_channels_last(dtype):
    # The raw entries read channels_last memory as a flat array: out in x's format, grad brought to it.
    x = rand(3, 17, 9, 11, dtype=dtype, memory_format=CL)
    g = rand(3, 17, 9, 11, dtype=dtype)  # contiguous
    for y, want in ((kft.relu_threshold(x, 0.25), F.threshold(x, 0.25, 0.0)),
                    (torch.ops.kernelforge.relu_threshold(x, 0.25), F.threshold(x, 0.25, 0.0)),
                    (kft.relu_threshold_backward(g, x, 0.25), torch.ops.aten.threshold_backward(g, x, 0.25))):
        assert y.is_contiguous(memory_format=CL) and not y.is_contiguous()
        torch.testing.assert_close(y, want, rtol=0, atol=0)


class ChannelsLastNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = kft.Conv2d(3, 32, 7, stride=2, padding=3)
        self.conv = kft.Conv2d(32, 32, 3, padding=1)
        self.act = kft.ThresholdReLU(0.0)
        self.head = kft.Conv2d(32, 8, 1)

    def forward(self, x):
        return self.head(self.act(self.conv(F.relu(self.stem(x)))))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_torch_compile_fullgraph_channels_last(dtype):
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = ChannelsLastNet().to(DEV, dtype, memory_format=CL)
    x = rand(2, 3, 32, 32, dtype=dtype, memory_format=CL, requires_grad=True)
    eager = net(x)
    compiled = torch.compile(net, fullgraph=True)
    out = compiled(x)
    assert out.is_contiguous(memory_format=CL) and out.dtype == dtype
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(out, eager, **tol)
    out.float().sum().backward()
    assert x.grad is not None and x.grad.dtype == dtype and net.stem.weight.grad is not None


def test_module_paths():
    conv = kft.Conv2d(8, 16, 3, padding=1).to(DEV, torch.float16)
    x = rand(2, 8, 10, 10, dtype=torch.float16)
    y = conv(x)  # float16 NCHW: torch's convolution, as before, NCHW out
    assert y.is_contiguous()
    torch.testing.assert_close(y, F.conv2d(x, conv.weight, conv.bias, padding=1), rtol=0, atol=0)
    y = conv(x.to(memory_format=CL))  # channels_last: kernelforge (the KCRS weight copied per call)
    assert y.is_contiguous(memory_format=CL)
    value, scale = conv_reference(x, conv.weight.detach(), conv.bias.detach(), False, dict(padding=1))
    assert_within("module, KCRS weight", y, value, error_bound(x, conv.weight, value, scale, False))
