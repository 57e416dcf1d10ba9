# SPDX-License-Identifier: Apache-2.0
"""conv2d's forward on the torch side with CPU tensors: the layout rule (which memory order
a tensor convolves in, and the output's memory format), the (N, H, W, C) views handed to
_C, the operator kernelforge::conv2d (opcheck, fake kernel, torch.compile fullgraph), the
module's fallback, and the argument errors raised before the device's. _C's conv2d entries
are stood in for by torch (conv_stand_in.py): what is tested is the Python code, not the
CUDA kernels (test_torch_conv.py does those on a GPU). The gradients:
test_torch_conv_grad_cpu.py. Skipped without torch."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import kernelforge.torch as kft  # noqa: E402
from kernelforge import _torch_conv  # noqa: E402

from conv_stand_in import CL, DTYPES, NOT_ON_GPU, channels_last, reference  # noqa: E402


def test_layout_rule_follows_torchs_reading_of_the_strides():
    cases = [  # (tensor, its layout)
        (torch.randn(2, 3, 5, 5), "nchw"),
        (channels_last(2, 3, 5, 5), "nhwc"),
        (torch.randn(2, 1, 5, 5), "nchw"),  # C == 1: both orders, the size-1 stride decides
        (channels_last(2, 1, 5, 5), "nhwc"),
        (torch.randn(2, 8, 1, 1), "nchw"),  # H == W == 1
        (torch.empty(2, 8, 1, 1, memory_format=CL), "nhwc"),
        (channels_last(2, 3, 6, 5)[:, :, 1:], "nhwc"),  # strided like channels_last: the operator copies
        (torch.randn(2, 4, 6, 6).transpose(2, 3), "nchw"),
        (torch.randn(2, 3, 5, 5).half(), "nhwc"),  # 16-bit: always channels_last
        (torch.randn(2, 3, 5, 5).bfloat16(), "nhwc"),
    ]
    suggest = getattr(getattr(torch, "_prims_common", None), "suggest_memory_format", None)
    for t, layout in cases:
        assert _torch_conv.layout_of(t) == layout, (t.shape, t.stride())
        if suggest is not None and t.dtype == torch.float32:
            assert _torch_conv.strides_like_channels_last(t) == (suggest(t) == CL), (t.shape, t.stride())


def test_real_kernels_allocate_with_the_fake_kernels_strides():
    # new_output (the real kernels) computes the strides torch.empty(memory_format=) gives
    # (empty_output, the fake kernels'), size-0 and size-1 extents included.
    import itertools
    x = torch.empty(1, dtype=torch.float16)
    for shape in itertools.product([0, 1, 2, 3], repeat=4):
        for layout in ("nchw", "nhwc"):
            got, want = _torch_conv.new_output(x, shape, layout), _torch_conv.empty_output(x, shape, layout)
            assert (got.shape, got.stride(), got.dtype) == (want.shape, want.stride(), want.dtype), (shape, layout)
    for shape in ((2, 3, 4), [2, 3, 4, 5]):  # any other shape: empty_output's tensor or error
        got, want = _torch_conv.new_output(x, shape, "nchw"), _torch_conv.empty_output(x, shape, "nchw")
        assert (got.shape, got.stride()) == (want.shape, want.stride())
    with pytest.raises(RuntimeError, match="rank 4"):
        _torch_conv.new_output(x, (2, 3, 4), "nhwc")


GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding, dilation)
    (2, 3, 11, 13, 8, 7, 7, 2, 3, 1),  # an RGB stem
    (1, 16, 9, 8, 24, 3, 3, 1, 2, 2),
    (3, 32, 5, 7, 16, 1, 1, 1, 0, 1),
    (2, 1, 6, 7, 4, 3, 3, 1, 1, 1),  # C == 1: memory that reads both ways
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_channels_last_in_channels_last_out(conv_stand_in, dtype, geometry):
    n, c, h, w, k, r, s, stride, padding, dilation = geometry
    x, weight, bias = channels_last(n, c, h, w, dtype=dtype), channels_last(k, c, r, s, dtype=dtype), \
        torch.randn(k).to(dtype)
    g = dict(stride=stride, padding=padding, dilation=dilation)
    want = reference(x, weight, bias, relu=True, **g)
    calls = {
        "kf.conv2d": lambda: kf.conv2d(x, weight, bias, relu=True, **g),
        "kf.conv2d(out=)": lambda: kf.conv2d(x, weight, bias, relu=True, out=torch.full_like(want, float("nan")),
                                             **g),
        "kernelforge.torch.conv2d": lambda: F.relu(kft.conv2d(x, weight, bias, [stride] * 2, [padding] * 2,
                                                              [dilation] * 2)),
        "torch.ops.kernelforge.conv2d": lambda: F.relu(torch.ops.kernelforge.conv2d(
            x, weight, bias, [stride] * 2, [padding] * 2, [dilation] * 2)),
    }
    for name, call in calls.items():
        y = call()
        assert y.dtype == dtype and y.shape == want.shape, name
        assert y.is_contiguous(memory_format=CL) and y.stride() == want.stride(), (name, y.stride(), want.stride())
        torch.testing.assert_close(y, want, rtol=0, atol=0, msg=lambda m: f"{name}: {m}")
    assert conv_stand_in.layouts == ["nhwc"] * len(calls)


def test_weight_in_the_other_memory_format_is_converted(conv_stand_in):
    x = channels_last(2, 8, 9, 9, dtype=torch.bfloat16)
    weight = torch.randn(4, 8, 3, 3).bfloat16()  # contiguous KCRS: copied to KRSC
    y = kf.conv2d(x, weight, padding="same")
    assert y.is_contiguous(memory_format=CL)
    torch.testing.assert_close(y, reference(x, weight, None, padding=1), rtol=0, atol=0)
    x32 = torch.randn(2, 8, 9, 9)  # NCHW float32 with a channels_last weight: the weight is copied to KCRS
    y = kf.conv2d(x32, weight.float().to(memory_format=CL), stride=2)
    assert y.is_contiguous() and not y.is_contiguous(memory_format=CL)
    torch.testing.assert_close(y, reference(x32, weight.float(), None, stride=2), rtol=0, atol=0)
    assert conv_stand_in.layouts == ["nhwc", "nchw"]


def test_float32_nchw_keeps_nchw(conv_stand_in):
    x, weight = torch.randn(2, 3, 10, 9), torch.randn(5, 3, 3, 3)
    for y in (kf.conv2d(x, weight, padding=1), kft.conv2d(x, weight, None, [1, 1], [1, 1], [1, 1])):
        assert y.is_contiguous()
        torch.testing.assert_close(y, reference(x, weight, None, padding=1), rtol=0, atol=0)
    # An explicit layout: a C == 1 tensor's memory is NCHW and NHWC both.
    x1 = torch.randn(2, 1, 6, 6)
    y = kf.conv2d(x1, torch.randn(3, 1, 3, 3), layout="nhwc")
    assert y.is_contiguous(memory_format=CL)
    assert conv_stand_in.layouts == ["nchw", "nchw", "nhwc"]


def test_operator_copies_what_is_not_dense(conv_stand_in):
    # The operator (not kf.conv2d) copies: a 16-bit NCHW x to channels_last, a strided x to its layout.
    weight = torch.randn(6, 4, 3, 3).half()
    x = torch.randn(2, 4, 8, 8).half()
    y = kft.conv2d(x, weight, None, [1, 1], [0, 0], [1, 1])
    assert y.is_contiguous(memory_format=CL)
    torch.testing.assert_close(y, reference(x, weight, None), rtol=0, atol=0)
    x = channels_last(2, 4, 9, 8)[:, :, 1:]
    y = kft.conv2d(x, weight.float(), None, [1, 1], [0, 0], [1, 1])
    assert y.is_contiguous(memory_format=CL)
    torch.testing.assert_close(y, reference(x, weight.float(), None), rtol=0, atol=0)


def test_opcheck_with_a_cpu_stand_in(conv_stand_in):
    op = torch.ops.kernelforge.conv2d.default
    for dtype in DTYPES:
        torch.library.opcheck(op, (channels_last(2, 3, 9, 10, dtype=dtype, requires_grad=True),
                                   channels_last(4, 3, 3, 3, dtype=dtype, requires_grad=True),
                                   torch.randn(4, dtype=dtype, requires_grad=True), [1, 1], [1, 1], [1, 1]))
        torch.library.opcheck(op, (channels_last(1, 8, 9, 9, dtype=dtype), torch.randn(3, 8, 3, 3).to(dtype), None,
                                   [2, 2], [0, 0], [2, 2]))
    torch.library.opcheck(op, (torch.randn(2, 4, 7, 7).half(), torch.randn(3, 4, 1, 1).half(), None, [1, 1], [0, 0],
                               [1, 1]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_autograd_in_channels_last(conv_stand_in, dtype):
    # Backward is kernelforge's gradient operators in the forward's layout: gradients in the
    # inputs' dtype and memory format, as torch's own convolution_backward gives them.
    x = channels_last(2, 8, 9, 9, dtype=dtype, requires_grad=True)
    weight = channels_last(6, 8, 3, 3, dtype=dtype, requires_grad=True)
    bias = torch.randn(6).to(dtype).requires_grad_()
    y = kft.conv2d(x, weight, bias, [2, 2], [1, 1], [1, 1])
    assert y.grad_fn is not None and y.is_contiguous(memory_format=CL)
    grad = channels_last(*y.shape, dtype=dtype)
    y.backward(grad)
    x2, w2, b2 = (t.detach().clone().requires_grad_() for t in (x, weight, bias))
    F.conv2d(x2, w2, b2, stride=2, padding=1).backward(grad)
    for ours, theirs in ((x.grad, x2.grad), (weight.grad, w2.grad), (bias.grad, b2.grad)):
        assert ours.dtype == dtype and ours.stride() == theirs.stride()
        torch.testing.assert_close(ours, theirs)
    assert x.grad.is_contiguous(memory_format=CL)
    assert conv_stand_in.gradients == [("data", "nhwc"), ("filter", "nhwc")]


def test_module_weights_take_the_eager_path(conv_stand_in, monkeypatch):
    # A module's weight is an nn.Parameter: plain for the eager paths (direct, and the eager
    # autograd.Function with a gradient to record), not a subclass sent through the
    # dispatcher, whose Function.apply costs ~20 us more a call. Here the operators fail.
    from kernelforge import _torch_conv_op

    def through_the_dispatcher(*args):
        raise AssertionError("an eager call went through the dispatcher")

    for name in ("_conv_op", "_data_op", "_filter_op"):
        monkeypatch.setattr(_torch_conv_op, name, through_the_dispatcher)
    conv = kft.Conv2d(8, 6, 3, padding=1).to(memory_format=CL)
    x = channels_last(2, 8, 9, 9, dtype=torch.float32, requires_grad=True)
    with torch.no_grad():
        conv(x)
    y = conv(x)
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "kernelforge::conv2dBackward"
    y.backward(torch.randn_like(y))
    assert x.grad is not None and conv.weight.grad is not None and conv.bias.grad is not None


def test_module_falls_back_to_torch_for_16_bit_nchw(conv_stand_in):
    conv = kft.Conv2d(4, 6, 3, padding=1).half()
    x = torch.randn(2, 4, 7, 7).half()  # contiguous NCHW: torch's convolution, NCHW out, no copy
    y = conv(x)
    assert y.is_contiguous() and conv_stand_in.layouts == []
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, conv.weight, conv.bias, padding=1))
    y = conv(x.to(memory_format=CL))
    assert y.is_contiguous(memory_format=CL) and conv_stand_in.layouts == ["nhwc"]


# ---- argument errors, before the device's (the GPU machine's errors too) ------------------

def test_argument_errors():
    x = channels_last(1, 4, 6, 6, dtype=torch.float16)
    w = channels_last(2, 4, 3, 3, dtype=torch.float16)
    with pytest.raises(kf.InvalidArgumentError, match=r"torch.float16 convolves in channels_last memory only.*"
                                                      r"memory_format=torch.channels_last"):
        kf.conv2d(torch.randn(1, 4, 6, 6).half(), w)
    with pytest.raises(kf.InvalidArgumentError, match="layout is 'nhwc', but 'x'"):
        kf.conv2d(torch.randn(1, 4, 6, 6), w.float(), layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match="layout 'nwhc' is not one of: auto, nchw, nhwc"):
        kf.conv2d(x, w, layout="nwhc")
    with pytest.raises(kf.InvalidArgumentError, match=r"'weight' \(2, 3, 3, 3\) has 3 input channels but 'x' "
                                                      r"\(1, 4, 6, 6\) has 4"):
        kf.conv2d(x, channels_last(2, 3, 3, 3, dtype=torch.float16))
    with pytest.raises(kf.InvalidArgumentError, match=r"'out' has shape \(1, 2, 6, 6\); this convolution gives "
                                                      r"\(N, K, P, Q\) = \(1, 2, 4, 4\)"):
        kf.conv2d(x, w, out=torch.empty(1, 2, 6, 6, dtype=torch.float16, memory_format=CL))
    with pytest.raises(kf.InvalidArgumentError, match="writes 'out' in channels_last memory"):
        kf.conv2d(x, w, out=torch.empty(1, 2, 4, 4, dtype=torch.float16))
    with pytest.raises(kf.UnsupportedError, match="float16, which convolves in the channels_last layout only"):
        kf.conv2d(x, w, layout="nchw")
    with pytest.raises(TypeError, match="'weight' has dtype float32 but 'x' has float16"):
        kf.conv2d(x, w.float())
    with pytest.raises(TypeError, match="'x' has dtype float64; supported dtypes: float32, float16, bfloat16"):
        kf.conv2d(x.double(), w.double())
    with pytest.raises(kf.InvalidArgumentError, match="no output"):
        kf.conv2d(x, channels_last(2, 4, 9, 9, dtype=torch.float16))


def test_math_names_reach_the_binding(conv_stand_in):
    # kf.conv2d's math (or tf32=True) reaches _C as the mode's name; the operator keeps its tf32 flag.
    x, w = torch.randn(1, 4, 6, 6), torch.randn(2, 4, 3, 3)
    calls = [({}, "exact"), (dict(tf32=True), "tf32"), (dict(math="tf32"), "tf32"),
             (dict(tf32=True, math="tf32"), "tf32"), (dict(math="exact"), "exact"),
             (dict(math="fp32_emulated"), "fp32_emulated")]
    for kwargs, _ in calls:
        kf.conv2d(x, w, **kwargs)
    kft.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], True)
    assert conv_stand_in.maths == [math for _, math in calls] + ["tf32"]
    with pytest.raises(kf.InvalidArgumentError, match="kernelforge.conv2d: tf32=True contradicts math='exact'"):
        kf.conv2d(x, w, tf32=True, math="exact")
    assert len(conv_stand_in.maths) == len(calls) + 1  # refused before _C


def test_operator_and_module_math(conv_stand_in):
    # The operator's and the module's math reach _C; the gradients run TF32 after a TF32
    # forward and exact otherwise (fp32_emulated has no gradient kernels; exact is as accurate).
    x = torch.randn(1, 4, 6, 6, requires_grad=True)
    w = torch.randn(2, 4, 3, 3, requires_grad=True)
    for math, grad_tf32 in ((None, False), ("exact", False), ("tf32", True), ("fp32_emulated", False)):
        conv_stand_in.gradient_tf32.clear()
        y = kft.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], math=math)
        y.backward(torch.randn_like(y))
        assert conv_stand_in.maths[-1] == (math or "exact")
        assert conv_stand_in.gradient_tf32 == [grad_tf32, grad_tf32]
        with torch.no_grad():
            torch.ops.kernelforge.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], math=math)
        assert conv_stand_in.maths[-1] == (math or "exact")
    conv = kft.Conv2d(4, 2, 3, math="fp32_emulated")
    conv(x)
    assert conv_stand_in.maths[-1] == "fp32_emulated"
    with pytest.raises(kf.InvalidArgumentError, match="kernelforge.conv2d: tf32=True contradicts math='exact'"):
        kft.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], True, "exact")
    torch.library.opcheck(torch.ops.kernelforge.conv2d.default, (x, w, None, [1, 1], [0, 0], [1, 1]),
                          {"math": "fp32_emulated"})


def test_math_names_without_the_stand_in():
    # The binding checks the name before the device.
    x, w = torch.randn(1, 4, 6, 6), torch.randn(2, 4, 3, 3)
    with pytest.raises(kf.InvalidArgumentError, match="math 'fp16' is not one of: exact, tf32, fp32_emulated"):
        kf.conv2d(x, w, math="fp16")
    cls, message = NOT_ON_GPU
    with pytest.raises(cls, match="kernelforge.conv2d: .*" + message):
        kf.conv2d(x, w, math="fp32_emulated")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_tensors_reach_the_device_check(dtype):
    cls, message = NOT_ON_GPU
    x, w, b = channels_last(1, 4, 6, 6, dtype=dtype), channels_last(2, 4, 3, 3, dtype=dtype), torch.zeros(2).to(dtype)
    with pytest.raises(cls, match="kernelforge.conv2d: .*" + message):
        kf.conv2d(x, w, b, relu=True, relu_threshold=0.5)
    with pytest.raises(cls, match="kernelforge.conv2d: .*" + message):
        torch.ops.kernelforge.conv2d(x, w, b, [1, 1], [0, 0], [1, 1])


def test_fake_kernel_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        for x, contiguous in ((torch.randn(2, 3, 9, 9), True), (channels_last(2, 3, 9, 9), False),
                              (torch.randn(2, 3, 9, 9).bfloat16(), False)):
            out = kft.conv2d(mode.from_tensor(x), mode.from_tensor(torch.randn(5, 3, 3, 3).to(x.dtype)), None,
                             [2, 2], [1, 1], [1, 1])
            assert out.shape == (2, 5, 5, 5) and out.dtype == x.dtype
            assert out.is_contiguous() == contiguous and out.is_contiguous(memory_format=CL) != contiguous
