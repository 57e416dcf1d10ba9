# SPDX-License-Identifier: Apache-2.0
"""kernelforge.torch with CPU tensors: what runs without a GPU (and the same errors with
one). The ops' bodies take the raw entries for CUDA tensors only; everything else goes
to the DLPack entries, whose errors name the problem. The FP8 product's checks run in
Python before the device's (kernelforge/_scaled_matmul.py), so its errors are tested
here too, and its registration with a CPU stand-in. Skipped without torch."""

import pytest

import kernelforge as kf
from conftest import gpu_count

torch = pytest.importorskip("torch")

import kernelforge.torch as kft  # noqa: E402
from kernelforge import _torch_ops, _torch_relu, _torch_support  # noqa: E402

# A CPU tensor: NoDeviceError where there is no GPU, else "move it to the GPU".
NOT_ON_GPU = (kf.NoDeviceError, "no usable CUDA device") if gpu_count() == 0 else (kf.InvalidArgumentError,
                                                                                     "not in GPU memory")


def test_dtype_codes_cover_the_shipped_dtypes():
    assert _torch_support.DTYPE_CODES == {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3}


@pytest.mark.parametrize("requires_grad", [False, True])
def test_cpu_tensors_are_reported_by_the_ops(requires_grad):
    cls, message = NOT_ON_GPU
    x = torch.randn(7, requires_grad=requires_grad)
    g = torch.randn(7)
    with pytest.raises(cls, match="kernelforge.relu_threshold: .*" + message):
        kft.relu_threshold(x, 0.5)
    with pytest.raises(cls, match="kernelforge.relu_threshold: .*" + message):
        torch.ops.kernelforge.relu_threshold(x, 0.5)
    with pytest.raises(cls, match="kernelforge.relu_threshold_backward: .*" + message):
        kft.relu_threshold_backward(g, x.detach(), 0.5)
    with pytest.raises(cls, match="kernelforge.relu_threshold: .*" + message):
        kf.relu_threshold(x, 0.5)  # the DLPack API (kernelforge._torch_support.plain detaches x)
    with pytest.raises(cls, match="kernelforge.relu_threshold: .*" + message):
        kft.relu_threshold(torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last))  # as its (N, H, W, C) view


def test_cpu_argument_errors_name_the_problem():
    # dtype and shape are checked before the device, so these are the GPU machine's errors too.
    with pytest.raises(TypeError, match="'x' has dtype int32; supported dtypes: float32, float64, float16, bfloat16"):
        torch.ops.kernelforge.relu_threshold(torch.ones(5, dtype=torch.int32), 0.0)
    with pytest.raises(kf.InvalidArgumentError, match=r"'x' has shape \(6,\) but 'grad' has shape \(5,\)"):
        kft.relu_threshold_backward(torch.randn(5), torch.randn(6), 0.0)
    with pytest.raises(TypeError, match="'x' has dtype float64 but 'grad' has float32"):
        kft.relu_threshold_backward(torch.randn(5), torch.randn(5, dtype=torch.float64), 0.0)


def test_threshold_relu_module_falls_back_to_torch_on_cpu():
    x = torch.randn(4, 9, dtype=torch.float64)
    torch.testing.assert_close(kft.ThresholdReLU(0.2)(x), torch.nn.functional.threshold(x, 0.2, 0.0), rtol=0, atol=0)


class _CpuStandIn:
    """_C's relu entries computed by torch on CPU tensors (DLPack capsules in, like _C)."""

    @staticmethod
    def relu_threshold(x, out, threshold, variant, stream):
        x, out = torch.utils.dlpack.from_dlpack(x), torch.utils.dlpack.from_dlpack(out)
        out.copy_(torch.nn.functional.threshold(x, threshold, 0.0))

    @staticmethod
    def relu_threshold_backward(grad, x, out, threshold, variant, stream):
        grad, x, out = (torch.utils.dlpack.from_dlpack(a) for a in (grad, x, out))
        out.copy_(torch.ops.aten.threshold_backward(grad, x, threshold))


@pytest.fixture
def cpu_stand_in(monkeypatch):
    """kernelforge.torch's ops on CPU tensors: CPU tensors count as the kernel's device,
    and _C's relu entries are computed by torch. What is tested is the registration
    (autograd kernel, fake kernel, the direct path), not the CUDA kernels."""
    import operator
    monkeypatch.setattr(_torch_relu, "_C", _CpuStandIn)
    monkeypatch.setattr(_torch_ops, "_on_device", operator.attrgetter("is_cpu"))


def test_registration_with_a_cpu_stand_in(cpu_stand_in):
    ops = torch.ops.kernelforge
    x = torch.randn(3, 37, dtype=torch.float64)
    x = (x + 0.2 * torch.sign(x - 0.1)).requires_grad_()  # away from the threshold's kink
    torch.library.opcheck(ops.relu_threshold.default, (x, 0.1))
    torch.library.opcheck(ops.relu_threshold_backward.default, (torch.randn(3, 37), torch.randn(3, 37), 0.1))
    assert torch.autograd.gradcheck(lambda t: kft.relu_threshold(t, 0.1), (x,))
    assert torch.autograd.gradgradcheck(lambda t: kft.relu_threshold(t, 0.1), (x,))
    y = kft.relu_threshold(x, 0.1)
    assert y.grad_fn is not None
    torch.testing.assert_close(y, torch.nn.functional.threshold(x, 0.1, 0.0), rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(ops.relu_threshold(x, 0.1), y.detach(), rtol=0, atol=0)


def test_torch_compile_with_a_cpu_stand_in(cpu_stand_in):
    torch._dynamo.reset()
    act = kft.ThresholdReLU(0.25)
    act.forward = lambda t: kft.relu_threshold(t, 0.25)  # the CPU fallback to F.threshold skipped

    def model(t):
        return act(t * 2.0) + 1.0

    compiled = torch.compile(model, fullgraph=True)
    x = torch.randn(257, requires_grad=True)
    out = compiled(x)
    torch.testing.assert_close(out, torch.nn.functional.threshold(x * 2.0, 0.25, 0.0) + 1.0, rtol=0, atol=0)
    out.sum().backward()
    torch.testing.assert_close(x.grad, 2.0 * (x * 2.0 > 0.25).to(x.dtype), rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)


def test_relu_keeps_channels_last_with_a_cpu_stand_in(cpu_stand_in):
    # The ReLU ops take dense channels_last memory as it is: out (and the fake kernel's) in x's
    # memory format, grad brought to it; other strides are copied to contiguous.
    ops, cl = torch.ops.kernelforge, torch.channels_last
    x = torch.randn(2, 5, 4, 3, dtype=torch.float64).to(memory_format=cl)
    x = (x + 0.2 * torch.sign(x - 0.1)).detach().requires_grad_()  # away from the threshold's kink
    y = kft.relu_threshold(x, 0.1)
    assert y.is_contiguous(memory_format=cl) and not y.is_contiguous()
    torch.testing.assert_close(y, torch.nn.functional.threshold(x, 0.1, 0.0), rtol=0, atol=0)
    grad = torch.randn(2, 5, 4, 3, dtype=torch.float64)  # contiguous: brought to x's format
    dx = kft.relu_threshold_backward(grad, x.detach(), 0.1)
    assert dx.is_contiguous(memory_format=cl)
    torch.testing.assert_close(dx, torch.ops.aten.threshold_backward(grad, x.detach(), 0.1), rtol=0, atol=0)
    y.backward(grad)
    assert x.grad.is_contiguous(memory_format=cl)
    torch.library.opcheck(ops.relu_threshold.default, (x, 0.1))
    torch.library.opcheck(ops.relu_threshold_backward.default, (grad, x.detach(), 0.1))
    strided = torch.randn(2, 5, 8, 3, dtype=torch.float64).to(memory_format=cl)[:, :, ::2]
    assert kft.relu_threshold(strided, 0.1).is_contiguous()
    torch.library.opcheck(ops.relu_threshold.default, (strided, 0.1))


# ---- matmul's 16-bit types and the FP8 product with CPU tensors --------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matmul_half_types_reach_the_device_check(dtype):
    cls, message = NOT_ON_GPU
    a, b = torch.randn(4, 3).to(dtype), torch.randn(5, 3).to(dtype).t()
    with pytest.raises(cls, match="kernelforge.matmul: .*" + message):
        kf.matmul(a, b)
    with pytest.raises(cls, match="kernelforge.matmul: .*" + message):
        kft.matmul(a, b)


def test_matmul_op_math_names_are_checked_before_the_device():
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    with pytest.raises(kf.InvalidArgumentError, match="tf32=True contradicts math='fp32_emulated'"):
        kft.matmul(a, b, tf32=True, math="fp32_emulated")
    with pytest.raises(kf.InvalidArgumentError, match="'fp64' is not one of: exact, tf32, fp32_emulated"):
        kft.matmul(a, b, math="fp64")
    cls, message = NOT_ON_GPU
    for math in ("exact", "tf32", "fp32_emulated"):  # valid names reach the device check
        with pytest.raises(cls, match="kernelforge.matmul: .*" + message):
            kft.matmul(a, b, math=math)


E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


def _fp8(rows, cols, dtype=E4, layout="row"):
    t = torch.randn((rows, cols) if layout == "row" else (cols, rows)).to(dtype)
    return t if layout == "row" else t.t()


def _scales(mode, m, n, k):
    from kernelforge import _scaled_matmul as sm
    shape_a, shape_b = sm.scale_shapes(mode, m, n, k)
    return torch.rand(shape_a or ()) + 0.5, torch.rand(shape_b or ()) + 0.5


def test_scaled_matmul_argument_errors_on_cpu_tensors():
    # Every check before the device's, so these are the GPU machine's errors too.
    a, b = _fp8(8, 32), _fp8(32, 16, layout="col")
    sa, sb = _scales("rowwise", 8, 16, 32)
    with pytest.raises(TypeError, match="'a' has dtype float32; supported dtypes: float8_e4m3fn, float8_e5m2"):
        kf.scaled_matmul(a.float(), b, sa, sb)
    with pytest.raises(TypeError, match="both float8_e5m2"):
        kft.scaled_matmul(_fp8(8, 32, E5), _fp8(32, 16, E5, "col"), sa, sb)
    with pytest.raises(kf.InvalidArgumentError, match=r"shapes do not compose: a \(8, 32\) @ b \(16, 32\)"):
        kf.scaled_matmul(a, b.t(), sa, sb)
    with pytest.raises(kf.InvalidArgumentError, match=r"'b' of shape \(32, 16\) has strides \(32, 2\): neither "
                                                      r"row-major .* nor column-major"):
        kf.scaled_matmul(a, _fp8(32, 32)[:, ::2], sa, sb)
    with pytest.raises(TypeError, match="'scale_a' has dtype float64; supported dtypes: float32"):
        kf.scaled_matmul(a, b, sa.double(), sb)
    with pytest.raises(kf.InvalidArgumentError, match="fit no scaling mode"):
        kf.scaled_matmul(a, b, sa, sb.t())
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'blockwise' needs"):
        kft.scaled_matmul(a, b, sa, sb, scaling="blockwise")
    with pytest.raises(TypeError, match="'bias' has dtype float32 but the output is bfloat16"):
        kf.scaled_matmul(a, b, sa, sb, bias=torch.zeros(16))
    with pytest.raises(kf.InvalidArgumentError, match=r"'bias' must have shape \(16,\)"):
        kf.scaled_matmul(a, b, sa, sb, bias=torch.zeros(8, dtype=torch.bfloat16))
    with pytest.raises(kf.InvalidArgumentError, match="'amax' must have one element"):
        kf.scaled_matmul(a, b, sa, sb, amax=torch.zeros(2))
    with pytest.raises(TypeError, match="'amax' has dtype float16"):
        kf.scaled_matmul(a, b, sa, sb, amax=torch.zeros(1, dtype=torch.float16))
    with pytest.raises(TypeError, match="'out' has dtype float32 but out_dtype is float16"):
        kf.scaled_matmul(a, b, sa, sb, out=torch.empty(8, 16), out_dtype=torch.float16)
    with pytest.raises(kf.InvalidArgumentError, match=r"'out' has shape \(16, 8\)"):
        kf.scaled_matmul(a, b, sa, sb, out=torch.empty(16, 8))
    with pytest.raises(kf.InvalidArgumentError, match="'out' must be row-major"):
        kf.scaled_matmul(a, b, sa, sb, out=torch.empty(16, 8).t())
    with pytest.raises(kf.InvalidArgumentError, match="beta = 1.0 reads out"):
        kf.scaled_matmul(a, b, sa, sb, beta=1.0)
    with pytest.raises(TypeError, match="'scale_b' must be a torch.Tensor"):
        kf.scaled_matmul(a, b, sa, 1.0)
    cls, message = NOT_ON_GPU
    for layout_a, layout_b in (("row", "col"), ("col", "row")):
        with pytest.raises(cls, match="kernelforge.scaled_matmul: .*" + message):
            kf.scaled_matmul(_fp8(8, 32, layout=layout_a), _fp8(32, 16, layout=layout_b), sa, sb)
    with pytest.raises(cls, match="kernelforge.scaled_matmul: .*" + message):
        torch.ops.kernelforge.scaled_matmul(a, b, sa, sb)


def test_scaled_matmul_fake_kernel():
    from torch._subclasses.fake_tensor import FakeTensorMode

    a, b = _fp8(8, 300), _fp8(300, 20, E5, "col")
    sa, sb = _scales("blockwise", 8, 20, 300)
    with FakeTensorMode() as mode:
        args = [mode.from_tensor(t) for t in (a, b, sa, sb)]
        out = kft.scaled_matmul(*args)
        assert out.shape == (8, 20) and out.dtype == torch.bfloat16 and out.is_contiguous()
        out = torch.ops.kernelforge.scaled_matmul(*args, out_dtype=torch.float32)
        assert out.shape == (8, 20) and out.dtype == torch.float32


@pytest.fixture
def fp8_cpu_stand_in(monkeypatch):
    """kernelforge::scaled_matmul's body on CPU tensors computed by torch (the float64
    reference rounded to the output dtype; amax written in place): what is tested is the
    registration (schema, fake kernel, mutation of amax), not the CUDA kernel."""
    from fp8_reference import reference

    from kernelforge import _scaled_matmul as sm

    def run(a, b, scale_a, scale_b, *, out_dtype=None, scaling=None, bias=None, relu=False, relu_threshold=0.0,
            amax=None, **unused):
        dtype = getattr(torch, sm.resolve_out_dtype(out_dtype))
        out = reference(a, b, scale_a, scale_b, scaling=scaling, bias=bias, relu=relu,
                        relu_threshold=relu_threshold).value.to(dtype)
        if amax is not None:
            amax.fill_(float(out.float().abs().max()) if out.numel() else 0.0)
        return out

    monkeypatch.setattr(sm, "run", run)


def test_scaled_matmul_opcheck_with_a_cpu_stand_in(fp8_cpu_stand_in):
    from fp8_reference import FP8_OPCHECK, check_mutates_amax_only

    op = torch.ops.kernelforge.scaled_matmul.default
    a, b = _fp8(9, 200), _fp8(200, 12, layout="col")
    for mode in ("per_tensor", "rowwise", "blockwise"):
        sa, sb = _scales(mode, 9, 12, 200)
        torch.library.opcheck(op, (a, b, sa, sb), test_utils=FP8_OPCHECK)
        torch.library.opcheck(op, (a, b, sa, sb), {"out_dtype": torch.float32, "scaling": mode},
                              test_utils=FP8_OPCHECK)
    sa, sb = _scales("rowwise", 9, 12, 200)
    args = (a, b, sa, sb, torch.randn(12).half(), torch.float16, None, True, 0.1, torch.zeros(1))
    torch.library.opcheck(op, args, test_utils=FP8_OPCHECK)
    check_mutates_amax_only(op, args)
    amax = torch.zeros(1)
    out = torch.ops.kernelforge.scaled_matmul(a, b, sa, sb, amax=amax)
    assert float(amax) == float(out.float().abs().max()) > 0


def test_scaled_matmul_torch_compile_with_a_cpu_stand_in(fp8_cpu_stand_in, monkeypatch):
    # The amax mutation through torch.compile (auto-functionalized) and the direct path.
    import operator
    monkeypatch.setattr(_torch_ops, "_on_device", operator.attrgetter("is_cpu"))
    torch._dynamo.reset()
    a, b = _fp8(9, 200), _fp8(200, 12, layout="col")
    sa, sb = _scales("blockwise", 9, 12, 200)

    def layer(x, w, amax):
        return kft.scaled_matmul(x, w, sa, sb, out_dtype=torch.float32, relu=True, amax=amax) * 2.0

    amax_eager, amax_compiled = torch.zeros(1), torch.zeros(1)
    eager = layer(a, b, amax_eager)
    compiled = torch.compile(layer, fullgraph=True)(a, b, amax_compiled)
    torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
    assert float(amax_compiled) == float(amax_eager) > 0


class _PointerEmulator:
    """_C's FP8 entries on CPU memory: scaled_matmul_raw computes kf::scaled_matmul's
    definition (kernelforge/scaled_matmul.hpp) in float64 from the pointers, op flags and
    leading dimensions it is given, reading memory as the kernel would. So a wrong stride
    -> (op, ld) mapping, scale layout, bias or amax pointer in _scaled_matmul.run gives a
    wrong result against fp8_reference (which indexes the tensors instead)."""

    @staticmethod
    def require_cuda_device(what, name, device):
        pass

    @staticmethod
    def _view(address, dtype, shape, strides):
        if 0 in shape:
            return torch.empty(shape, dtype=dtype)
        import ctypes
        span = (sum((size - 1) * stride for size, stride in zip(shape, strides)) + 1) * dtype.itemsize
        memory = torch.frombuffer((ctypes.c_char * span).from_address(address), dtype=torch.uint8)
        return memory.view(dtype).as_strided(shape, strides)

    @classmethod
    def scaled_matmul_raw(cls, a, a_dtype, trans_a, lda, b, b_dtype, trans_b, ldb, m, n, k, scaling, scale_a,
                          scale_b, alpha, beta, out, out_dtype, ldd, bias, relu, relu_threshold, amax, variant, device,
                          stream):
        f32, block = torch.float32, 128
        op_a = cls._view(a, getattr(torch, a_dtype), (m, k), (1, lda) if trans_a else (lda, 1)).double()
        op_b = cls._view(b, getattr(torch, b_dtype), (k, n), (1, ldb) if trans_b else (ldb, 1)).double()
        kb, nb = -(-k // block), -(-n // block)
        if scaling == "per_tensor" and m * n * k:
            op_a = op_a * float(cls._view(scale_a, f32, (1,), (1,)))
            op_b = op_b * float(cls._view(scale_b, f32, (1,), (1,)))
        elif scaling == "rowwise" and m * n * k:
            op_a = op_a * cls._view(scale_a, f32, (m, 1), (1, 1)).double()
            op_b = op_b * cls._view(scale_b, f32, (1, n), (1, 1)).double()
        elif scaling == "blockwise" and m * n * k:
            sa = cls._view(scale_a, f32, (m, kb), (kb, 1)).double()  # scales.a[i * kb + p / 128]
            sb = cls._view(scale_b, f32, (nb, kb), (kb, 1)).double()  # scales.b[(j / 128) * kb + p / 128]
            op_a = op_a * sa.repeat_interleave(block, 1)[:, :k]
            op_b = op_b * sb.t().repeat_interleave(block, 0)[:k].repeat_interleave(block, 1)[:, :n]
        d = cls._view(out, getattr(torch, out_dtype), (m, n), (ldd, 1))
        value = alpha * (op_a @ op_b)
        if beta != 0:
            value = value + beta * d.double()
        if bias:
            value = value + cls._view(bias, d.dtype, (n,), (1,)).double()
        if relu:
            value = torch.where(value <= relu_threshold, torch.zeros_like(value), value)
        d.copy_(value)
        if amax:
            cls._view(amax, f32, (1,), (1,)).fill_(float(d.float().abs().max()) if d.numel() else 0.0)


@pytest.mark.parametrize("mode", ["per_tensor", "rowwise", "blockwise"])
@pytest.mark.parametrize("a_layout,b_layout", [("row", "col"), ("row", "row"), ("col", "col"), ("col", "row")])
def test_scaled_matmul_pointers_and_leading_dimensions(monkeypatch, mode, a_layout, b_layout):
    from fp8_reference import random_fp8, random_scales, reference

    from kernelforge import _scaled_matmul as sm
    monkeypatch.setattr(sm, "_C", _PointerEmulator)
    torch.manual_seed(0)
    m, n, k = 67, 200, 260
    a, b = random_fp8(m, k, E4, a_layout, "cpu"), random_fp8(k, n, E5, b_layout, "cpu")
    sa, sb = random_scales(mode, m, n, k, "cpu")
    bias = (torch.randn(n) * 20).to(torch.float16)
    amax = torch.zeros(1)
    got = kf.scaled_matmul(a, b, sa, sb, out_dtype=torch.float16, bias=bias, relu=True, amax=amax, stream=0)
    reference(a, b, sa, sb, bias=bias, relu=True).check(got)
    assert float(amax) == float(got.float().abs().max())
    # Padded operands (slices of wider tensors), the other scale layouts, out= with a row stride past n.
    wide_a = random_fp8(m + 3, k + 5, E4, a_layout, "cpu")
    wide_b = random_fp8(k + 9, n + 2, E5, b_layout, "cpu")
    a, b = wide_a[1:m + 1, 2:k + 2], wide_b[4:k + 4, 1:n + 1]
    if mode == "blockwise":
        sa, sb = sa.t().contiguous().t(), sb.t().contiguous().t()  # torch._scaled_mm's layouts
    elif mode == "rowwise":
        sa = torch.cat([sa, sa], 1)[:, 1:]  # a strided (m, 1) column
    wide_out = torch.zeros(m, n + 11, dtype=torch.bfloat16)
    before = wide_out[:, 4:n + 4].clone()
    got = kf.scaled_matmul(a, b, sa, sb, out=wide_out[:, 4:n + 4], alpha=0.5, beta=2.0, stream=0)
    reference(a, b, sa, sb, alpha=0.5, beta=2.0, out=before).check(got)
    assert float(wide_out[:, :4].abs().max()) == 0 and float(wide_out[:, n + 4:].abs().max()) == 0
