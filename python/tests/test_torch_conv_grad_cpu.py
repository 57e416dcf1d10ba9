# SPDX-License-Identifier: Apache-2.0
"""conv2d's gradients on the torch side with CPU tensors: autograd through the gradient
operators conv2d_backward_data and conv2d_backward_filter in the forward's layout with no
aten convolution backward, their opcheck, fake kernels, double backward, torch.compile
fullgraph of a training step, the functions on torch tensors, and the argument errors
raised before the device's. _C's conv2d entries are stood in for by torch
(conv_stand_in.py): what is tested is the Python code, not the CUDA kernels
(test_torch_conv_grad.py does those on a GPU). Skipped without torch."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import kernelforge.torch as kft  # noqa: E402
from aot_graphs import AotGraphs  # noqa: E402

from conv_stand_in import CL, DTYPES, NOT_ON_GPU, channels_last  # noqa: E402


def gradient_reference(x, weight, bias, grad, **geometry):
    """dx, dweight, dbias of F.conv2d in float64, each rounded once to x's dtype (the stand-in's arithmetic)."""
    x64, w64 = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    b64 = None if bias is None else bias.detach().double().requires_grad_()
    F.conv2d(x64, w64, b64, **geometry).backward(grad.double())
    return tuple(None if t is None else t.grad.to(x.dtype) for t in (x64, w64, b64))


GRAD_MODES = [  # (dtype, memory format): what the GPU runs, every layout and type
    (torch.float32, torch.contiguous_format), (torch.float32, CL), (torch.float16, CL), (torch.bfloat16, CL)]
GRAD_GEOMETRIES = [  # (N, C, H, W, K, R, S, stride, padding, dilation)
    (2, 3, 11, 13, 8, 7, 7, 2, 3, 1),  # a stem: stride 2, odd sizes (rows a strided forward never reads)
    (1, 16, 9, 8, 24, 3, 3, 1, 2, 2),  # dilation
    (3, 32, 5, 7, 16, 1, 1, 1, 0, 1),  # 1x1
    (2, 5, 9, 8, 7, 3, 5, (2, 1), (0, 2), (1, 2)),  # unequal strides, paddings, dilations
]


@pytest.mark.parametrize("x_grad", [True, False], ids=["x-grad", "no-x-grad"])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("geometry", GRAD_GEOMETRIES, ids=["stem", "dilation", "1x1", "unequal"])
@pytest.mark.parametrize("dtype,memory_format", GRAD_MODES, ids=["f32-nchw", "f32-cl", "f16-cl", "bf16-cl"])
def test_gradients_run_in_the_forwards_layout(conv_stand_in, dtype, memory_format, geometry, with_bias, x_grad):
    n, c, h, w, k, r, s, stride, padding, dilation = geometry
    pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]  # noqa: E731
    g = dict(stride=stride, padding=padding, dilation=dilation)
    x = torch.randn(n, c, h, w).to(dtype).to(memory_format=memory_format).requires_grad_(x_grad)
    conv = kft.Conv2d(c, k, (r, s), bias=with_bias, **g).to(dtype=dtype, memory_format=memory_format)
    y = conv(x)
    layout = "nchw" if memory_format == torch.contiguous_format and dtype == torch.float32 else "nhwc"
    assert conv_stand_in.layouts == [layout]
    grad = torch.randn(y.shape).to(dtype).to(memory_format=memory_format)
    y.backward(grad)
    # dx only where x needs it (a first layer's x does not): one filter call gives dweight and dbias.
    assert conv_stand_in.gradients == ([("data", layout)] if x_grad else []) + [("filter", layout)]
    want_x, want_w, want_b = gradient_reference(x, conv.weight, conv.bias, grad, **g)
    if x_grad:
        assert x.grad.dtype == dtype and x.grad.is_contiguous(memory_format=memory_format)
        torch.testing.assert_close(x.grad, want_x, rtol=0, atol=0)
    else:
        assert x.grad is None
    assert conv.weight.grad.is_contiguous(memory_format=memory_format)
    torch.testing.assert_close(conv.weight.grad, want_w, rtol=0, atol=0)
    if with_bias:
        torch.testing.assert_close(conv.bias.grad, want_b, rtol=0, atol=0)
    # The same through the operator's functions, with an NCHW grad (copied to the layout).
    dx = kft.conv2d_backward_data(grad.contiguous(), conv.weight.detach(), list(x.shape), pair(stride), pair(padding),
                                  pair(dilation))
    dw, db = kft.conv2d_backward_filter(grad.contiguous(), x.detach(), list(conv.weight.shape), pair(stride),
                                        pair(padding), pair(dilation), with_bias, layout=layout)
    if layout == "nhwc" and dtype != torch.float32:
        assert dx.is_contiguous(memory_format=CL)
    torch.testing.assert_close(dx, want_x, rtol=0, atol=0)
    torch.testing.assert_close(dw, want_w, rtol=0, atol=0)
    assert db.shape == ((k,) if with_bias else (0,))
    if with_bias:
        torch.testing.assert_close(db, want_b, rtol=0, atol=0)


def test_frozen_weight_and_bias_only(conv_stand_in):
    # A frozen weight: dx by conv2d_backward_data, dbias by a sum (no filter call, x not saved).
    conv = kft.Conv2d(4, 6, 3, padding=1)
    conv.weight.requires_grad_(False)
    x = torch.randn(2, 4, 7, 7, requires_grad=True)
    grad = torch.randn(2, 6, 7, 7)
    conv(x).backward(grad)
    assert conv_stand_in.gradients == [("data", "nchw")] and conv.weight.grad is None
    want_x, _, want_b = gradient_reference(x, conv.weight, conv.bias, grad, padding=1)
    torch.testing.assert_close(x.grad, want_x, rtol=0, atol=0)
    torch.testing.assert_close(conv.bias.grad, want_b, rtol=1e-6, atol=1e-6)


def test_no_aten_convolution_backward_in_eager_backward(conv_stand_in):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    net = torch.nn.Sequential(kft.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), kft.Conv2d(8, 4, 3, stride=2))
    net = net.to(dtype=torch.bfloat16, memory_format=CL)
    x = channels_last(2, 3, 10, 10, dtype=torch.bfloat16)
    loss = net(x).float().square().sum()
    recorder = Recorder()
    with recorder:
        loss.backward()
    assert "aten.convolution_backward.default" not in recorder.ops
    assert recorder.ops.count("kernelforge.conv2d_backward_filter.default") == 2
    assert recorder.ops.count("kernelforge.conv2d_backward_data.default") == 1  # not for the first layer's x


def test_gradient_operators_opcheck(conv_stand_in):
    ops = torch.ops.kernelforge
    for dtype, memory_format in GRAD_MODES:
        make = lambda *shape, grad=True: torch.randn(*shape).to(dtype).to(  # noqa: E731
            memory_format=memory_format).requires_grad_(grad)
        x, weight, dy = make(2, 3, 9, 10), make(4, 3, 3, 3), make(2, 4, 5, 5)
        relu_y = torch.randn(2, 4, 5, 5).to(dtype).to(memory_format=memory_format)
        relu_y = relu_y + 0.2 * torch.sign(relu_y - 0.1)  # away from the threshold's kink
        geometry = ([2, 2], [1, 1], [1, 1])
        torch.library.opcheck(ops.conv2d_backward_data.default, (dy, weight, [2, 3, 9, 10], *geometry))
        torch.library.opcheck(ops.conv2d_backward_data.default, (dy, weight, [2, 3, 9, 10], *geometry, False, relu_y,
                                                                 0.1))
        torch.library.opcheck(ops.conv2d_backward_filter.default, (dy, x, [4, 3, 3, 3], *geometry, True))
        torch.library.opcheck(ops.conv2d_backward_filter.default, (dy, x, [4, 3, 3, 3], *geometry, False, False,
                                                                   relu_y, 0.1))
    # An explicit layout, a 16-bit NCHW grad (copied), and inputs without gradients.
    dy = torch.randn(1, 5, 7, 7).half()
    torch.library.opcheck(ops.conv2d_backward_data.default, (dy, torch.randn(5, 3, 1, 1).half(), [1, 3, 7, 7], [1, 1],
                                                             [0, 0], [1, 1], False, None, 0.0, "nhwc"))
    torch.library.opcheck(ops.conv2d_backward_filter.default, (torch.randn(1, 5, 7, 7), torch.randn(1, 3, 7, 7),
                                                               [5, 3, 1, 1], [1, 1], [0, 0], [1, 1], True, False, None,
                                                               0.0, "nhwc"))


def test_gradcheck_and_double_backward(conv_stand_in):
    # float64 through the stand-in (_C refuses float64; the formulas are what is checked):
    # conv2d's backward, and the gradient operators' own (double backward).
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 6, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(4, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    for memory_format in (torch.contiguous_format, CL):
        args = tuple(t.detach().to(memory_format=memory_format).requires_grad_() if t.dim() == 4 else t
                     for t in (x, weight, bias))
        conv = lambda x, w, b: kft.conv2d(x, w, b, [2, 1], [1, 0], [1, 2])  # noqa: E731
        assert torch.autograd.gradcheck(conv, args)
        assert torch.autograd.gradgradcheck(conv, args)
    # The fused ReLU's mask (relu_y, the forward's output) in both gradients and their own backward.
    y = F.relu(F.conv2d(x, weight, bias, stride=(2, 1), padding=(1, 0), dilation=(1, 2))).detach()
    y = torch.where(y > 0, y + 0.1, y)  # away from the threshold's kink
    dy = torch.randn(y.shape, dtype=torch.float64, requires_grad=True)
    data = lambda g, w: kft.conv2d_backward_data(g, w, list(x.shape), [2, 1], [1, 0], [1, 2], relu_y=y,  # noqa: E731
                                                 relu_threshold=0.05)
    filt = lambda g, t: kft.conv2d_backward_filter(g, t, list(weight.shape), [2, 1], [1, 0], [1, 2],  # noqa: E731
                                                   True, relu_y=y, relu_threshold=0.05)
    assert torch.autograd.gradcheck(data, (dy, weight))
    assert torch.autograd.gradcheck(filt, (dy, x))
    # The mask itself: a masked dy equals the unmasked call on the masked values.
    masked = torch.where(y <= 0.05, torch.zeros_like(dy), dy).detach()
    torch.testing.assert_close(data(dy, weight), kft.conv2d_backward_data(masked, weight, list(x.shape), [2, 1],
                                                                          [1, 0], [1, 2]))


def _training_net(dtype):
    net = torch.nn.Sequential(kft.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), kft.Conv2d(8, 8, 3, stride=2),
                              torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(8, 5))
    return net.to(dtype=dtype, memory_format=CL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_training_step_with_a_cpu_stand_in(conv_stand_in, dtype):
    # torch.compile(fullgraph=True) of the model, then backward and an SGD step: the backward
    # graph holds kernelforge's gradient operators and no aten convolution backward, and the
    # step gives eager's parameters.
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager_net = _training_net(dtype)
    x = channels_last(4, 3, 10, 10, dtype=dtype)
    target = torch.randint(0, 5, (4,))
    results = {}
    for name in ("eager", "graphs", "inductor"):
        torch._dynamo.reset()
        net = _training_net(dtype)
        net.load_state_dict(eager_net.state_dict())
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        graphs = AotGraphs()
        model = net if name == "eager" else torch.compile(net, fullgraph=True,
                                                          backend=graphs.backend if name == "graphs" else "inductor")
        for _ in range(2):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x).float(), target)
            loss.backward()
            opt.step()
        results[name] = [p.detach().clone() for p in net.parameters()]
        if name == "graphs":
            forward, backward = graphs.targets(graphs.forward), graphs.targets(graphs.backward)
            assert forward.count("kernelforge.conv2d.default") == 2
            assert backward.count("kernelforge.conv2d_backward_filter.default") == 2
            assert backward.count("kernelforge.conv2d_backward_data.default") == 1  # the first layer's x: none
            assert not [t for t in forward + backward if "convolution" in t], forward + backward
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for name in ("graphs", "inductor"):
        for ours, theirs in zip(results[name], results["eager"]):
            torch.testing.assert_close(ours, theirs, **tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_compile_fullgraph_with_a_cpu_stand_in(conv_stand_in, dtype):
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(kft.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), kft.Conv2d(8, 4, 1, stride=2))
    net = net.to(dtype=dtype, memory_format=CL)
    x = channels_last(2, 3, 10, 10, dtype=dtype, requires_grad=True)
    eager = net(x)
    compiled = torch.compile(net, fullgraph=True)
    out = compiled(x)
    assert out.is_contiguous(memory_format=CL) and out.dtype == dtype
    torch.testing.assert_close(out, eager, rtol=0, atol=0)
    assert "nhwc" in conv_stand_in.layouts and "nchw" not in conv_stand_in.layouts
    out.float().sum().backward()
    assert x.grad is not None and x.grad.dtype == dtype and net[0].weight.grad is not None


# ---- the gradients' functions and operators: fake kernels, the DLPack API, errors -----------

def test_gradient_fake_kernels():
    from torch._subclasses.fake_tensor import FakeTensorMode

    ops = torch.ops.kernelforge
    with FakeTensorMode() as mode:
        for dy, layout, channels_last_out in ((torch.randn(2, 5, 5, 5), "auto", False),
                                              (channels_last(2, 5, 5, 5), "auto", True),
                                              (torch.randn(2, 5, 5, 5).bfloat16(), "auto", True),
                                              (torch.randn(2, 5, 5, 5), "nhwc", True),
                                              (channels_last(2, 5, 5, 5), "nchw", False)):
            dy = mode.from_tensor(dy)
            weight = mode.from_tensor(torch.randn(5, 3, 3, 3).to(dy.dtype))
            x = mode.from_tensor(torch.randn(2, 3, 10, 9).to(dy.dtype))
            if channels_last_out and layout == "auto" and dy.dtype == torch.float32:
                x = mode.from_tensor(channels_last(2, 3, 10, 9))  # the filter's layout comes from x
            dx = ops.conv2d_backward_data(dy, weight, [2, 3, 10, 9], [2, 2], [1, 1], [1, 1], layout=layout)
            assert dx.shape == (2, 3, 10, 9) and dx.dtype == dy.dtype
            assert dx.is_contiguous(memory_format=CL if channels_last_out else torch.contiguous_format)
            for bias, bias_shape in ((True, (5,)), (False, (0,))):
                dw, db = ops.conv2d_backward_filter(dy, x, [5, 3, 3, 3], [2, 2], [1, 1], [1, 1], bias, layout=layout)
                assert dw.shape == (5, 3, 3, 3) and db.shape == bias_shape and dw.dtype == db.dtype == dy.dtype
                assert dw.is_contiguous(memory_format=CL if channels_last_out else torch.contiguous_format)


def test_gradient_functions_on_torch_tensors(conv_stand_in):
    # kernelforge.conv2d_backward_data / _filter (the DLPack API) with torch tensors: the layout
    # from dy (data) or x (filter), outputs allocated in it or written to out=, dbias on request.
    x, weight = channels_last(2, 4, 9, 8, dtype=torch.bfloat16), channels_last(6, 4, 3, 3, dtype=torch.bfloat16)
    g = dict(stride=2, padding=1, dilation=1)
    y = F.conv2d(x.float(), weight.float(), **g).bfloat16().to(memory_format=CL)
    dy = channels_last(*y.shape, dtype=torch.bfloat16)
    want_x, want_w, want_b = gradient_reference(x, weight, torch.zeros(6).bfloat16(), dy, **g)
    dx = kf.conv2d_backward_data(dy, weight.contiguous(), x.shape, **g)  # a KCRS weight: copied
    assert dx.is_contiguous(memory_format=CL) and dx.dtype == torch.bfloat16
    torch.testing.assert_close(dx, want_x, rtol=0, atol=0)
    out = torch.full_like(x, float("nan"))
    assert kf.conv2d_backward_data(dy, weight, out=out, **g) is out
    torch.testing.assert_close(out, want_x, rtol=0, atol=0)
    dw, db = kf.conv2d_backward_filter(x, dy, weight.shape, **g)
    assert db is None and dw.is_contiguous(memory_format=CL)
    torch.testing.assert_close(dw, want_w, rtol=0, atol=0)
    out, out_bias = torch.full_like(weight, float("nan")), torch.full((6,), float("nan")).bfloat16()
    dw, db = kf.conv2d_backward_filter(x, dy, out=out, out_bias=out_bias, **g)
    assert dw is out and db is out_bias
    torch.testing.assert_close(out, want_w, rtol=0, atol=0)
    torch.testing.assert_close(out_bias, want_b, rtol=0, atol=0)
    _, db = kf.conv2d_backward_filter(x, dy, weight.shape, bias=True, **g)
    torch.testing.assert_close(db, want_b, rtol=0, atol=0)
    # The fused ReLU's mask: relu_y, the forward's output.
    relu_y = F.relu(y)
    masked = torch.where(relu_y <= 0, torch.zeros_like(dy), dy).contiguous(memory_format=CL)
    torch.testing.assert_close(kf.conv2d_backward_data(dy, weight, x.shape, relu=True, relu_y=relu_y, **g),
                               kf.conv2d_backward_data(masked, weight, x.shape, **g), rtol=0, atol=0)
    torch.testing.assert_close(kf.conv2d_backward_filter(x, dy, weight.shape, relu=True, relu_y=relu_y, **g)[0],
                               kf.conv2d_backward_filter(x, masked, weight.shape, **g)[0], rtol=0, atol=0)
    # float32 NCHW stays NCHW; layout= overrides.
    x32, w32, dy32 = x.float().contiguous(), weight.float().contiguous(), dy.float().contiguous()
    assert kf.conv2d_backward_data(dy32, w32, x32.shape, **g).is_contiguous()
    assert kf.conv2d_backward_filter(x32, dy32, w32.shape, **g)[0].is_contiguous()
    assert kf.conv2d_backward_data(dy32.to(memory_format=CL), w32, x32.shape, **g).is_contiguous(memory_format=CL)
    assert [layout for _, layout in conv_stand_in.gradients] == ["nhwc"] * 9 + ["nchw"] * 2 + ["nhwc"]


def test_gradient_argument_errors():
    x = channels_last(1, 4, 6, 6, dtype=torch.float16)
    w = channels_last(2, 4, 3, 3, dtype=torch.float16)
    dy = channels_last(1, 2, 4, 4, dtype=torch.float16)
    with pytest.raises(kf.InvalidArgumentError, match=r"kernelforge.conv2d_backward_data: torch.float16 convolves "
                                                      r"in channels_last memory only, but 'dy'"):
        kf.conv2d_backward_data(dy.contiguous(), w, x.shape)
    with pytest.raises(kf.InvalidArgumentError, match="layout is 'nhwc', but 'dy'"):
        kf.conv2d_backward_filter(x.float(), dy.float().contiguous(), w.shape, layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match="but 'relu_y' of shape"):
        kf.conv2d_backward_data(dy, w, x.shape, relu=True, relu_y=dy.contiguous())
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' has shape \(1, 2, 4, 4\); this convolution gives "
                                                      r"\(N, K, P, Q\) = \(1, 2, 2, 2\)"):
        kf.conv2d_backward_data(dy, w, x.shape, stride=2)
    with pytest.raises(kf.InvalidArgumentError, match=r"'weight' \(2, 4, 3, 3\) has 4 input channels but x_shape "
                                                      r"\(1, 3, 6, 6\) has 3"):
        kf.conv2d_backward_data(dy, w, (1, 3, 6, 6))
    with pytest.raises(kf.InvalidArgumentError, match=r"weight_shape \(2, 3, 3, 3\) has 3 input channels"):
        kf.conv2d_backward_filter(x, dy, (2, 3, 3, 3))
    with pytest.raises(kf.InvalidArgumentError, match="writes 'out' in channels_last memory"):
        kf.conv2d_backward_data(dy, w, out=torch.empty(1, 4, 6, 6, dtype=torch.float16))
    with pytest.raises(kf.InvalidArgumentError, match="writes 'out' in channels_last memory"):
        kf.conv2d_backward_filter(x, dy, out=torch.empty(2, 4, 3, 3, dtype=torch.float16))
    with pytest.raises(kf.InvalidArgumentError, match="relu=True needs relu_y"):
        kf.conv2d_backward_filter(x, dy, w.shape, relu=True)
    with pytest.raises(kf.InvalidArgumentError, match="pass x_shape"):
        kf.conv2d_backward_data(dy, w)
    with pytest.raises(TypeError, match="'weight' has dtype float32 but 'dy' has float16"):
        kf.conv2d_backward_data(dy, w.float(), x.shape)
    with pytest.raises(kf.InvalidArgumentError, match="layout 'nwhc' is not one of: auto, nchw, nhwc"):
        torch.ops.kernelforge.conv2d_backward_data(dy, w, [1, 4, 6, 6], [1, 1], [0, 0], [1, 1], layout="nwhc")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_of_cpu_tensors_reach_the_device_check(dtype):
    cls, message = NOT_ON_GPU
    x, w = channels_last(1, 4, 6, 6, dtype=dtype), channels_last(2, 4, 3, 3, dtype=dtype)
    dy = channels_last(1, 2, 4, 4, dtype=dtype)
    with pytest.raises(cls, match="kernelforge.conv2d_backward_data: .*" + message):
        kf.conv2d_backward_data(dy, w, x.shape, relu=True, relu_y=dy)
    with pytest.raises(cls, match="kernelforge.conv2d_backward_filter: .*" + message):
        kf.conv2d_backward_filter(x, dy, w.shape, bias=True)
    with pytest.raises(cls, match="kernelforge.conv2d_backward_data: .*" + message):
        torch.ops.kernelforge.conv2d_backward_data(dy, w, [1, 4, 6, 6], [1, 1], [0, 0], [1, 1])
    with pytest.raises(cls, match="kernelforge.conv2d_backward_filter: .*" + message):
        kft.conv2d_backward_filter(dy, x, [2, 4, 3, 3], [1, 1], [0, 0], [1, 1], True, False, dy, 0.5)
