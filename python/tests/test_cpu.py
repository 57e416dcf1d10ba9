# SPDX-License-Identifier: Apache-2.0
"""Tests that need no GPU (they run in CI): import, version, the exception classes,
and argument errors raised before anything runs. NumPy arrays stand in for CUDA
arrays: dtype and shape are checked before the device, so the errors are the same."""

import re

import numpy as np
import pytest

import kernelforge as kf
from conftest import gpu_count

f32 = np.float32


def test_version_and_architectures():
    assert re.fullmatch(r"\d+\.\d+\.\d+", kf.__version__)
    archs = kf.compiled_architectures()
    assert archs and archs == sorted(archs) and all(isinstance(a, int) and a >= 50 for a in archs)


def test_exception_hierarchy():
    assert issubclass(kf.Error, RuntimeError)
    assert issubclass(kf.InvalidArgumentError, kf.Error) and issubclass(kf.InvalidArgumentError, ValueError)
    assert issubclass(kf.OutOfMemoryError, kf.Error) and issubclass(kf.OutOfMemoryError, MemoryError)
    for cls in (kf.NoDeviceError, kf.NoKernelImageError, kf.UnsupportedError, kf.CudaRuntimeError):
        assert issubclass(cls, kf.Error)


@pytest.mark.skipif(gpu_count() > 0, reason="a GPU is present")
def test_no_device_raises_no_device_error():
    assert kf.device_count() == 0
    with pytest.raises(kf.NoDeviceError, match="no usable CUDA device"):
        kf.device_info()
    with pytest.raises(kf.NoDeviceError, match="kernelforge.relu_threshold"):
        kf.relu_threshold(np.ones(4, f32))


@pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU to tell a host array from a missing device")
def test_host_array_is_invalid_argument():
    with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
        kf.relu_threshold(np.ones(4, f32))


def test_wrong_dtype_is_type_error():
    with pytest.raises(TypeError, match="int32; supported dtypes: float32, float64, float16, bfloat16"):
        kf.vector_add(np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(TypeError, match="supported dtypes: float32, float64$"):
        kf.matmul(np.ones((2, 2), np.float16), np.ones((2, 2), np.float16))
    with pytest.raises(TypeError, match="supported dtypes: float32, float16"):
        kf.filter2d(np.ones((4, 4)), np.ones((3, 3)))
    with pytest.raises(TypeError, match="supported dtypes: float32$"):
        kf.conv2d(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)))


def test_mixed_dtypes_are_type_error():
    with pytest.raises(TypeError, match="'b' has dtype float64 but 'a' has float32"):
        kf.vector_add(np.ones(3, f32), np.ones(3, np.float64))


def test_shape_errors():
    with pytest.raises(kf.InvalidArgumentError, match=r"'b' has shape \(9,\) but 'a' has shape \(10,\)"):
        kf.vector_add(np.ones(10, f32), np.ones(9, f32))
    with pytest.raises(kf.InvalidArgumentError, match="shapes do not compose"):
        kf.matmul(np.ones((2, 3), f32), np.ones((4, 2), f32))
    with pytest.raises(kf.InvalidArgumentError, match="must be 2-D"):
        kf.matmul(np.ones(3, f32), np.ones(3, f32))
    with pytest.raises(kf.InvalidArgumentError, match="input channels"):
        kf.conv2d(np.ones((1, 2, 4, 4), f32), np.ones((1, 3, 3, 3), f32))
    with pytest.raises(kf.InvalidArgumentError, match=r"'image' must be \(H, W\) or \(C, H, W\)"):
        kf.filter2d(np.ones(4, f32), np.ones((3, 3), f32))


def test_layout_errors():
    x = np.ones((4, 6), f32)[:, ::2]
    with pytest.raises(kf.InvalidArgumentError, match=r"not contiguous.*\.contiguous\(\)"):
        kf.relu_threshold(x, out=np.empty((4, 3), f32))
    with pytest.raises(kf.InvalidArgumentError, match="neither row-major nor a transposed view"):
        kf.matmul(np.ones((4, 6), f32)[:, ::2], np.ones((3, 2), f32))


def test_bad_options():
    x = np.ones(4, f32)
    with pytest.raises(kf.InvalidArgumentError, match="variant 'fast' is not one of: best, naive, vectorized"):
        kf.relu_threshold(x, variant="fast")
    with pytest.raises(kf.InvalidArgumentError, match="border 'wrap' is not one of: zero, clamp, reflect"):
        kf.filter2d(np.ones((4, 4), f32), np.ones((3, 3), f32), border="wrap")
    with pytest.raises(kf.InvalidArgumentError, match="beta"):
        kf.matmul(np.ones((2, 2), f32), np.ones((2, 2), f32), beta=1.0)
    with pytest.raises(TypeError, match="stream must be"):
        kf.relu_threshold(x, stream="s")
    with pytest.raises(TypeError, match="DLPack"):
        kf.saxpy(2.0, [1.0], [2.0])


def test_conv2d_output_shape():
    assert kf.conv2d_output_shape((2, 3, 10, 10), (4, 3, 3, 3), stride=2, padding=1) == (2, 4, 5, 5)
    assert kf.conv2d_output_shape((1, 3, 224, 224), (64, 3, 7, 7), stride=2, padding=3) == (1, 64, 112, 112)
    assert kf.conv2d_output_shape((1, 1, 9, 8), (1, 1, 3, 3), padding="same", dilation=2) == (1, 1, 9, 8)
    assert kf.conv2d_output_shape((1, 1, 9, 8), (1, 1, 3, 5), padding="valid") == (1, 1, 7, 4)
    with pytest.raises(kf.InvalidArgumentError, match="no output"):
        kf.conv2d_output_shape((1, 1, 2, 2), (1, 1, 5, 5))
    with pytest.raises(kf.InvalidArgumentError, match="same"):
        kf.conv2d_output_shape((1, 1, 8, 8), (1, 1, 2, 2), padding="same")


def test_torch_is_lazy():
    import sys
    if "torch" not in sys.modules:  # importing kernelforge must not import torch
        assert "kernelforge.torch" not in sys.modules
