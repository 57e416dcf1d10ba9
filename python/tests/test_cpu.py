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
    with pytest.raises(TypeError, match="int32; supported dtypes: float32, float64, float16, bfloat16$"):
        kf.matmul(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="supported dtypes: float32, float16"):
        kf.filter2d(np.ones((4, 4)), np.ones((3, 3)))
    with pytest.raises(TypeError, match="supported dtypes: float32, float16, bfloat16$"):
        kf.conv2d(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)))


def test_mixed_dtypes_are_type_error():
    with pytest.raises(TypeError, match="'b' has dtype float64 but 'a' has float32"):
        kf.vector_add(np.ones(3, f32), np.ones(3, np.float64))
    with pytest.raises(TypeError, match="'b' has dtype float32 but 'a' has float16"):
        kf.matmul(np.ones((2, 3), np.float16), np.ones((3, 2), f32))


def test_matmul_takes_float16():
    # float16 passes the dtype, shape and layout checks; then the device is what is wrong here.
    a, b = np.ones((4, 3), np.float16), np.ones((5, 3), np.float16).T
    if gpu_count() == 0:
        with pytest.raises(kf.NoDeviceError, match="kernelforge.matmul: .*no usable CUDA device"):
            kf.matmul(a, b)
    else:
        with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
            kf.matmul(a, b)


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
    with pytest.raises(kf.InvalidArgumentError, match="math 'fp64' is not one of: exact, tf32, fp32_emulated"):
        kf.matmul(np.ones((2, 2), f32), np.ones((2, 2), f32), math="fp64")
    with pytest.raises(kf.InvalidArgumentError, match="tf32=True contradicts"):
        kf.matmul(np.ones((2, 2), f32), np.ones((2, 2), f32), tf32=True, math="exact")
    with pytest.raises(TypeError, match="stream must be"):
        kf.relu_threshold(x, stream="s")
    with pytest.raises(TypeError, match="DLPack"):
        kf.saxpy(2.0, [1.0], [2.0])


def test_torch_is_lazy():
    import sys
    if "torch" not in sys.modules:  # importing kernelforge must not import torch
        assert "kernelforge.torch" not in sys.modules


# ---- the raw entries (kernelforge.torch's fast path): pointers as ints ----------------

def test_raw_dtype_codes():
    assert kf._C.dtype_codes == {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3}


def test_raw_entry_argument_errors():
    # Checked before the device, so the same on any machine; no memory is touched.
    raw, raw_bw = kf._C.relu_threshold_raw, kf._C.relu_threshold_backward_raw
    codes = r"\(float32=0, float64=1, float16=2, bfloat16=3\)"
    with pytest.raises(kf.InvalidArgumentError, match=r"relu_threshold_raw: dtype code 4 is not one of .*" + codes):
        raw(4096, 8192, 4, 4, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="dtype code -1"):
        raw_bw(4096, 4096, 8192, 4, -1, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match=r"n = -3 is negative; pass the element count"):
        raw(4096, 8192, -3, 0, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="n = -1 is negative"):
        raw_bw(4096, 4096, 8192, -1, 0, 0, 0.0, 0)


@pytest.mark.skipif(gpu_count() > 0, reason="a GPU is present")
def test_raw_entry_without_a_device():
    for device in (0, -1):
        with pytest.raises(kf.NoDeviceError, match="kernelforge.relu_threshold_raw: .*no usable CUDA device"):
            kf._C.relu_threshold_raw(4096, 8192, 4, 0, device, 0.0, 0)
    with pytest.raises(kf.NoDeviceError, match="kernelforge.relu_threshold_backward_raw"):
        kf._C.relu_threshold_backward_raw(4096, 4096, 8192, 4, 0, 0, 0.0, 0)


@pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU: without one every device index is NoDeviceError")
def test_raw_entry_device_and_pointer_errors():
    # Every case fails in a check before a kernel is enqueued: the pointers are never dereferenced.
    raw, raw_bw = kf._C.relu_threshold_raw, kf._C.relu_threshold_backward_raw
    with pytest.raises(kf.InvalidArgumentError, match=r"'x' is not in GPU memory \(device index -1\)"):
        raw(4096, 8192, 4, 0, -1, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match=f"device index {gpu_count()} is out of range"):
        raw(4096, 8192, 4, 0, gpu_count(), 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'x' is null but n = 4"):
        raw(0, 8192, 4, 0, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'y' is null but n = 1"):
        raw(4096, 0, 1, 1, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'dy' is null"):
        raw_bw(0, 4096, 8192, 4, 0, 0, 0.0, 0)
    for code, size in ((0, 4), (1, 8), (2, 2), (3, 2)):  # a pointer one byte into an element
        with pytest.raises(kf.InvalidArgumentError, match=f"argument 'x' is not aligned to {size} bytes"):
            raw(4096 + 1, 8192, 4, code, 0, 0.0, 0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'dx' is not aligned to 4 bytes"):
        raw_bw(4096, 8192, 12288 + 2, 4, 0, 0, 0.0, 0)
    raw(0, 0, 0, 0, 0, 0.0, 0)  # n = 0: null pointers are allowed and nothing runs
