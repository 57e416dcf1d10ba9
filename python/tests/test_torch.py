# SPDX-License-Identifier: Apache-2.0
"""GPU tests with PyTorch: kernelforge's results against torch's own ops (F.threshold,
threshold_backward, mm, conv2d) and float64 (the 16-bit matmuls) at awkward sizes and
every shipped dtype, transposed
views, streams and devices (the torch.library ops and the nn.Modules: test_torch_library.py).
Skipped without torch or a GPU."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")
if kf.device_count() == 0 or not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import kernelforge.torch as kft  # noqa: E402

DEV = "cuda"
SIZES = [1, 7, 1000, 4097, 1 << 20 | 3]
# Tolerances: elementwise results are exact (threshold) or one rounding (saxpy, add in
# fp32 for the half types); matmul/conv accumulate in a different order than cuBLAS/cuDNN.
ELEMENTWISE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
MM_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-10, atol=1e-10)}
TF32_TOL = dict(rtol=1e-2, atol=1e-1)  # TF32 rounds inputs to 10 mantissa bits


pytestmark = pytest.mark.usefixtures("exact_torch")  # torch's reference ops in full fp32 (conftest.py)


def rand(*shape, dtype=torch.float32, device=DEV, requires_grad=False):
    return torch.randn(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


# ---- elementwise ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_relu_threshold_matches_torch(dtype, n):
    x = rand(n, dtype=dtype)
    y = kf.relu_threshold(x, 0.25)
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.dtype == dtype
    torch.testing.assert_close(y, F.threshold(x, 0.25, 0.0), rtol=0, atol=0)
    g = rand(n, dtype=dtype)
    dx = kf.relu_threshold_backward(g, x, 0.25)
    torch.testing.assert_close(dx, torch.ops.aten.threshold_backward(g, x, 0.25), rtol=0, atol=0)


@pytest.mark.parametrize("variant", ["naive", "vectorized", "best"])
def test_variants_and_in_place(variant):
    x = rand(3, 5, 7)
    expected = F.threshold(x, 0.0, 0.0)
    out = kf.relu_threshold(x, out=x, variant=variant)
    assert out is x
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES)
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_saxpy_and_vector_add(dtype, n):
    x, y, b = rand(n, dtype=dtype), rand(n, dtype=dtype), rand(n, dtype=dtype)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    expected = (2.5 * x.double() + y.double()).to(dtype)
    assert kf.saxpy(2.5, x, y) is y
    torch.testing.assert_close(y, expected, **tol)
    torch.testing.assert_close(kf.vector_add(x, b), (x.double() + b.double()).to(dtype), **tol)


def test_requires_grad_inputs_are_accepted():
    x = rand(100, requires_grad=True)
    torch.testing.assert_close(kf.relu_threshold(x), F.relu(x.detach()))


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_torch_ops_raw_path(dtype, n):
    # kernelforge.torch's op bodies call _C's raw entries (data_ptr, numel, dtype code):
    # inputs one element into their allocation (not 16-byte aligned, unlike the output),
    # outputs from a caching-allocator block just filled with NaN (unwritten elements fail).
    x, g = rand(n + 1, dtype=dtype)[1:], rand(n + 1, dtype=dtype)[1:]
    expected, expected_dx = F.threshold(x, 0.25, 0.0), torch.ops.aten.threshold_backward(g, x, 0.25)
    calls = {"relu_threshold": (kft.relu_threshold, torch.ops.kernelforge.relu_threshold, (x, 0.25), expected),
             "relu_threshold_backward": (kft.relu_threshold_backward, torch.ops.kernelforge.relu_threshold_backward,
                                         (g, x, 0.25), expected_dx)}
    for name, (function, op, args, want) in calls.items():
        for call in (function, op):
            poison = torch.full((n,), float("nan"), dtype=dtype, device=DEV)
            del poison  # the next allocation of this size reuses its block
            got = call(*args)
            assert got.dtype == dtype and got.shape == (n,), name
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m: f"{name} via {call}: {m}")
    strided = rand(4, 6, dtype=dtype)[:, ::2]  # copied to a contiguous tensor first
    torch.testing.assert_close(kft.relu_threshold(strided, 0.0), F.threshold(strided, 0.0, 0.0), rtol=0, atol=0)


def test_torch_ops_argument_errors_on_gpu():
    # What the raw entries cannot take goes to the DLPack entries, whose errors name it.
    x = rand(10)
    with pytest.raises(TypeError, match="int64; supported dtypes"):
        kft.relu_threshold(torch.arange(10, device=DEV))
    with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
        torch.ops.kernelforge.relu_threshold(x.cpu())
    with pytest.raises(kf.InvalidArgumentError, match="shapes must match"):
        kft.relu_threshold_backward(rand(11), x)
    with pytest.raises(TypeError, match="'x' has dtype float64 but 'grad' has float32"):
        kft.relu_threshold_backward(x, x.double())
    with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
        kft.relu_threshold_backward(x.cpu(), x)


def test_argument_errors_on_gpu():
    x = rand(10)
    with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
        kf.vector_add(x, x.cpu())
    with pytest.raises(TypeError, match="int64; supported dtypes"):
        kf.relu_threshold(torch.arange(10, device=DEV))
    with pytest.raises(kf.InvalidArgumentError, match="contiguous"):
        kf.relu_threshold(rand(4, 6)[:, ::2])
    with pytest.raises(kf.InvalidArgumentError, match="shapes must match"):
        kf.vector_add(x, rand(11))


# ---- matmul --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (17, 33, 65), (129, 67, 255), (300, 200, 1)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_matches_mm(dtype, m, n, k, ta, tb):
    a = rand(k, m, dtype=dtype).t() if ta else rand(m, k, dtype=dtype)
    b = rand(n, k, dtype=dtype).t() if tb else rand(k, n, dtype=dtype)
    out = kf.matmul(a, b)
    assert out.shape == (m, n) and out.is_contiguous()
    torch.testing.assert_close(out, torch.mm(a, b), **MM_TOL[dtype])


HALF_DTYPES = [torch.float16, torch.bfloat16]
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def assert_half_matmul_close(out, a, b, alpha=1.0, beta=0.0, c=None):
    # Against float64: the products of 16-bit values are exact in fp32, so the error is the
    # fp32 summation (random-sign roundings grow like sqrt(k)) plus one rounding to the
    # output type (u = 2^-11 float16, 2^-8 bfloat16), doubled for margin (the bound of
    # tests/matmul/matmul_case.hpp's 16-bit cases).
    k = a.shape[1]
    value = alpha * (a.double() @ b.double())
    scale = abs(alpha) * (a.double().abs() @ b.double().abs())
    if beta != 0:
        value, scale = value + beta * c.double(), scale + abs(beta) * c.double().abs()
    bound = (4 * max(k, 1) ** 0.5 + 8) * 2.0**-23 * scale + 2 * UNIT_ROUNDOFF[out.dtype] * value.abs()
    err = (out.double() - value).abs()
    assert bool((err <= bound).all()), f"max error / bound {float((err / bound).max())}"


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("variant", ["best", "naive", "tensor_core_f16", "wgmma_f16"])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (17, 33, 65), (129, 67, 255), (256, 128, 512)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_half_types_match_float64(dtype, variant, m, n, k, ta, tb):
    if variant != "naive" and torch.cuda.get_device_capability() < (8, 0):
        pytest.skip("16-bit tensor cores need compute capability 8.0+")
    a = rand(k, m, dtype=dtype).t() if ta else rand(m, k, dtype=dtype)
    b = rand(n, k, dtype=dtype).t() if tb else rand(k, n, dtype=dtype)
    out = kf.matmul(a, b, variant=variant)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    assert_half_matmul_close(out, a, b)
    torch.testing.assert_close(out.float(), torch.matmul(a.float(), b.float()), rtol=4 * UNIT_ROUNDOFF[dtype],
                               atol=1e-2 * k ** 0.5)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_matmul_half_types_alpha_beta_and_torch_op(dtype):
    a, b, c = rand(64, 48, dtype=dtype), rand(48, 80, dtype=dtype), rand(64, 80, dtype=dtype)
    c0 = c.clone()
    assert kf.matmul(a, b, c, alpha=0.5, beta=2.0) is c
    assert_half_matmul_close(c, a, b, 0.5, 2.0, c0)
    with pytest.raises(kf.UnsupportedError, match="smem_tiled"):
        kf.matmul(a, b, variant="smem_tiled")  # the 16-bit types ship naive, tensor_core_f16, wgmma_f16
    with pytest.raises(TypeError, match="'b' has dtype float32 but 'a' has"):
        kf.matmul(a, b.float())
    # kernelforge.torch's matmul: forward and the registered backward (two kernelforge matmuls).
    x, w = rand(33, 70, dtype=dtype, requires_grad=True), rand(70, 20, dtype=dtype, requires_grad=True)
    y = kft.matmul(x, w)
    assert y.dtype == dtype and y.grad_fn is not None
    assert_half_matmul_close(y.detach(), x.detach(), w.detach())
    g = rand(33, 20, dtype=dtype)
    y.backward(g)
    assert_half_matmul_close(x.grad, g, w.detach().t())
    assert_half_matmul_close(w.grad, x.detach().t(), g)


def test_matmul_alpha_beta_out_and_tf32():
    a, b, c = rand(64, 48), rand(48, 80), rand(64, 80)
    expected = 0.5 * torch.mm(a, b) + 2.0 * c
    assert kf.matmul(a, b, c, alpha=0.5, beta=2.0) is c
    torch.testing.assert_close(c, expected, **MM_TOL[torch.float32])
    a, b = rand(256, 256), rand(256, 256)
    torch.testing.assert_close(kf.matmul(a, b, tf32=True), torch.mm(a, b), **TF32_TOL)


def test_matmul_fp32_emulated_is_fp32_accurate_or_unsupported():
    a, b = torch.randn(200, 1000, device="cuda"), torch.randn(1000, 136, device="cuda")
    if torch.cuda.get_device_capability() < (8, 0):  # 9.0: wgmma (step 15); 8.0+: mma.sync (step 16)
        with pytest.raises(kf.UnsupportedError, match="compute capability 8.0"):
            kf.matmul(a, b, math="fp32_emulated")
        return
    got = kf.matmul(a, b, math="fp32_emulated").double()
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    err = ((got - want).abs() / scale).max().item()
    assert err < 4 * 1000 ** 0.5 * 2.0 ** -24  # the exact steps' bound; TF32 alone is ~1e-3
    assert ((kf.matmul(a, b, tf32=True).double() - want).abs() / scale).max().item() > 1e-5  # TF32 is not


def test_matmul_op_fp32_emulated_forward_and_gradients():
    # torch.ops.kernelforge.matmul(math="fp32_emulated"): the forward and both gradients
    # (products in the same math mode) within the exact steps' bound of float64.
    a = torch.randn(200, 1000, device="cuda", requires_grad=True)
    b = torch.randn(1000, 136, device="cuda", requires_grad=True)
    if torch.cuda.get_device_capability() < (8, 0):
        with pytest.raises(kf.UnsupportedError, match="compute capability 8.0"):
            kft.matmul(a, b, math="fp32_emulated")
        return
    out = kft.matmul(a, b, math="fp32_emulated")
    g = torch.randn_like(out)
    out.backward(g)
    ad, bd, gd = a.detach().double(), b.detach().double(), g.double()
    for got, p, q in ((out.detach(), ad, bd), (a.grad, gd, bd.t()), (b.grad, ad.t(), gd)):
        scale = p.abs() @ q.abs()
        err = ((got.double() - p @ q).abs() / scale).max().item()
        assert err < 4 * p.shape[1] ** 0.5 * 2.0 ** -24, err
    torch.library.opcheck(torch.ops.kernelforge.matmul.default,
                          (rand(150, 130, requires_grad=True), rand(130, 70, requires_grad=True)),
                          {"math": "fp32_emulated"})


# ---- convolution ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(37, 53), (3, 64, 65)])
@pytest.mark.parametrize("rs", [(3, 3), (5, 5), (1, 7), (7, 7)])
def test_filter2d_zero_border_matches_conv2d(dtype, shape, rs):
    image, filt = rand(*shape, dtype=dtype), rand(*rs, dtype=dtype)
    out = kf.filter2d(image, filt)
    planes = image.reshape(-1, 1, *shape[-2:]).float()
    expected = F.conv2d(planes, filt.float()[None, None], padding=(rs[0] // 2, rs[1] // 2)).reshape(shape)
    tol = dict(rtol=1e-2, atol=2e-2) if dtype == torch.float16 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.float(), expected, **tol)


@pytest.mark.parametrize("border,mode", [("clamp", "replicate"), ("reflect", "reflect")])
def test_filter2d_borders(border, mode):
    image, filt = rand(2, 40, 41), rand(5, 5)
    padded = F.pad(image[:, None], (2, 2, 2, 2), mode=mode)
    expected = F.conv2d(padded, filt[None, None])[:, 0]
    torch.testing.assert_close(kf.filter2d(image, filt, border=border), expected, rtol=1e-4, atol=1e-4)


CONV_CASES = [  # (N, C, H, W, K, R, S, stride, padding, dilation)
    (2, 3, 17, 19, 5, 3, 3, 1, 1, 1),
    (1, 8, 32, 32, 16, 5, 5, 2, 2, 1),
    (3, 4, 15, 13, 6, 3, 3, (2, 1), (0, 1), (2, 1)),
    (2, 3, 56, 56, 64, 7, 7, 2, 3, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_matches_torch(case, with_bias):
    n, c, h, w, k, r, s, stride, padding, dilation = case
    x, weight = rand(n, c, h, w), rand(k, c, r, s)
    bias = rand(k) if with_bias else None
    out = kf.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation)
    expected = F.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    out32 = kf.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation, tf32=True)
    torch.testing.assert_close(out32, expected, **TF32_TOL)


# ---- streams and devices ---------------------------------------------------------------

def test_runs_on_the_current_stream():
    # If the kernel ran on another stream it would read x before the slow fill on s.
    s = torch.cuda.Stream()
    x = torch.zeros(1 << 22, device=DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time on s
        x.fill_(3.0)
        y = kf.relu_threshold(x, 1.0)
        z = kft.relu_threshold(x, 1.0)
    s.synchronize()
    assert bool((y == 3.0).all()) and bool((z == 3.0).all())


def test_explicit_stream_argument():
    s = torch.cuda.Stream()
    x = torch.zeros(1 << 20, device=DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)
        x.fill_(2.0)
    y = torch.empty_like(x)
    kf.relu_threshold(x, 0.0, y, stream=s)  # a torch.cuda.Stream object
    kf.vector_add(x, x, stream=s.cuda_stream)  # an int handle
    s.synchronize()
    assert bool((y == 2.0).all())


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_non_zero_device_index():
    torch.cuda.set_device(0)
    x = rand(4097, device="cuda:1")
    y = kf.relu_threshold(x, 0.1)
    assert y.device == x.device and torch.cuda.current_device() == 0
    torch.testing.assert_close(y, F.threshold(x, 0.1, 0.0))
    z, dx = kft.relu_threshold(x, 0.1), kft.relu_threshold_backward(y, x, 0.1)  # the raw entries, device 1
    assert z.device == x.device and dx.device == x.device and torch.cuda.current_device() == 0
    torch.testing.assert_close(z, F.threshold(x, 0.1, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(dx, torch.ops.aten.threshold_backward(y, x, 0.1), rtol=0, atol=0)
    a, b = rand(33, 65, device="cuda:1"), rand(65, 17, device="cuda:1")
    torch.testing.assert_close(kft.matmul(a, b), a @ b, **MM_TOL[torch.float32])
    with pytest.raises(kf.InvalidArgumentError, match="cuda:0"):
        kf.vector_add(x, rand(4097, device="cuda:0"))


def test_device_info():
    info = kf.device_info(torch.cuda.current_device())
    assert info["sm_count"] > 0 and info["name"]
    assert info["compute_capability"] == torch.cuda.get_device_capability()
