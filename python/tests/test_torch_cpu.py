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
