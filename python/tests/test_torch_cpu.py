# SPDX-License-Identifier: Apache-2.0
"""kernelforge.torch with CPU tensors: what runs without a GPU (and the same errors with
one). The ops' bodies take the raw entries for CUDA tensors only; everything else goes
to the DLPack entries, whose errors name the problem. Skipped without torch."""

import pytest

import kernelforge as kf
from conftest import gpu_count

torch = pytest.importorskip("torch")

import kernelforge.torch as kft  # noqa: E402
from kernelforge import _torch_support  # noqa: E402

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
    monkeypatch.setattr(kft, "_C", _CpuStandIn)
    monkeypatch.setattr(kft, "_on_device", operator.attrgetter("is_cpu"))


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
