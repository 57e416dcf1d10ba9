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


def test_conv2d_layouts():
    # Arrays without memory formats give their shapes in memory order: "nhwc" takes x (N, H, W, C),
    # weight (K, R, S, C) and gives (N, P, Q, K); float16 convolves in "nhwc" only.
    assert kf.conv2d_output_shape((2, 10, 9, 3), (4, 3, 3, 3), stride=2, padding=1, layout="nhwc") == (2, 5, 5, 4)
    assert kf.conv2d_output_shape((1, 9, 8, 1), (1, 3, 5, 1), padding="same", layout="nhwc") == (1, 9, 8, 1)
    h16 = np.float16
    with pytest.raises(kf.InvalidArgumentError, match="layout 'NHWC' is not one of: nchw, nhwc"):
        kf.conv2d_output_shape((2, 10, 9, 3), (4, 3, 3, 3), layout="NHWC")
    with pytest.raises(kf.InvalidArgumentError, match="layout 'cl' is not one of: auto, nchw, nhwc"):
        kf.conv2d(np.ones((1, 4, 4, 2), f32), np.ones((1, 3, 3, 2), f32), layout="cl")
    with pytest.raises(kf.UnsupportedError, match="'x' has dtype float16, which convolves in the channels_last "
                                                  "layout only"):
        kf.conv2d(np.ones((1, 2, 4, 4), h16), np.ones((1, 2, 3, 3), h16))
    with pytest.raises(kf.InvalidArgumentError, match=r"'weight' \(1, 3, 3, 3\) has 3 input channels but 'x' "
                                                      r"\(1, 4, 4, 2\) has 2"):
        kf.conv2d(np.ones((1, 4, 4, 2), f32), np.ones((1, 3, 3, 3), f32), layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match=r"'out' has shape \(1, 1, 2, 2\); this convolution gives "
                                                      r"\(N, P, Q, K\) = \(1, 2, 2, 1\)"):
        kf.conv2d(np.ones((1, 4, 4, 2), h16), np.ones((1, 3, 3, 2), h16), out=np.empty((1, 1, 2, 2), h16),
                  layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match=r"'x' is not dense in \(N, H, W, C\) order"):
        kf.conv2d(np.ones((1, 4, 8, 2), h16)[:, :, ::2], np.ones((1, 3, 3, 2), h16), layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match="'x' is not contiguous"):
        kf.conv2d(np.ones((1, 2, 4, 8), f32)[..., ::2], np.ones((1, 2, 3, 3), f32))
    with pytest.raises(kf.InvalidArgumentError, match="variant 'im2col' is not one of: best, naive"):
        kf.conv2d(np.ones((1, 4, 4, 2), h16), np.ones((1, 3, 3, 2), h16), layout="nhwc", variant="im2col")
    # float16 and bfloat16 (NHWC) pass every check before the device's.
    if gpu_count() == 0:
        with pytest.raises(kf.NoDeviceError, match="kernelforge.conv2d: .*no usable CUDA device"):
            kf.conv2d(np.ones((2, 5, 6, 8), h16), np.ones((4, 3, 3, 8), h16), np.zeros(4, h16), layout="nhwc",
                      relu=True)
    else:
        with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
            kf.conv2d(np.ones((2, 5, 6, 8), h16), np.ones((4, 3, 3, 8), h16), np.zeros(4, h16), layout="nhwc",
                      relu=True)


def test_conv2d_gradients_argument_errors():
    # The gradients' checks, before the device's: NumPy arrays in memory order, as CuPy gives them.
    h16 = np.float16
    dy, w, x = np.ones((2, 3, 4, 4), f32), np.ones((3, 5, 3, 3), f32), np.ones((2, 5, 6, 6), f32)
    assert kf.conv2d_output_shape(x.shape, w.shape) == dy.shape
    with pytest.raises(TypeError, match="'dy' has dtype float64; supported dtypes: float32, float16, bfloat16$"):
        kf.conv2d_backward_data(dy.astype(np.float64), w.astype(np.float64), x.shape)
    with pytest.raises(TypeError, match="'weight' has dtype float16 but 'dy' has float32"):
        kf.conv2d_backward_data(dy, w.astype(h16), x.shape)
    with pytest.raises(TypeError, match="'dy' has dtype float16 but 'x' has float32"):
        kf.conv2d_backward_filter(x, dy.astype(h16), w.shape)
    with pytest.raises(kf.UnsupportedError, match="'dy' has dtype float16, which convolves in the channels_last "
                                                  "layout only"):
        kf.conv2d_backward_data(dy.astype(h16), w.astype(h16), x.shape)
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' has shape \(2, 3, 4, 4\); this convolution gives "
                                                      r"\(N, K, P, Q\) = \(2, 3, 2, 2\)"):
        kf.conv2d_backward_data(dy, w, x.shape, stride=2)
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' has shape \(2, 3, 4, 4\); this convolution gives "
                                                      r"\(N, K, P, Q\) = \(2, 3, 6, 6\)"):
        kf.conv2d_backward_filter(x, dy, w.shape, padding=1)
    with pytest.raises(kf.InvalidArgumentError, match=r"'weight' \(3, 4, 3, 3\) has 4 input channels but 'dx' "
                                                      r"\(2, 5, 6, 6\) has 5"):
        kf.conv2d_backward_data(dy, np.ones((3, 4, 3, 3), f32), x.shape)
    with pytest.raises(kf.InvalidArgumentError, match=r"'dweight' \(3, 4, 3, 3\) has 4 input channels but 'x'"):
        kf.conv2d_backward_filter(x, dy, (3, 4, 3, 3))
    with pytest.raises(kf.InvalidArgumentError, match=r"'dbias' must have shape \(3,\); got \(4,\)"):
        kf.conv2d_backward_filter(x, dy, w.shape, out_bias=np.ones(4, f32))
    with pytest.raises(kf.InvalidArgumentError, match="relu=True needs relu_y"):
        kf.conv2d_backward_data(dy, w, x.shape, relu=True)
    with pytest.raises(kf.InvalidArgumentError, match="relu=True needs relu_y"):
        kf.conv2d_backward_filter(x, dy, w.shape, relu_y=dy)
    with pytest.raises(kf.InvalidArgumentError, match=r"'relu_y' has shape \(2, 3, 4, 3\)"):
        kf.conv2d_backward_data(dy, w, x.shape, relu=True, relu_y=dy[..., :3])
    with pytest.raises(kf.InvalidArgumentError, match="relu_threshold = -1"):
        kf.conv2d_backward_data(dy, w, x.shape, relu=True, relu_y=dy, relu_threshold=-1.0)
    with pytest.raises(kf.InvalidArgumentError, match="variant 'wgmma' is not one of: best, naive, implicit_gemm$"):
        kf.conv2d_backward_filter(x, dy, w.shape, variant="wgmma")
    with pytest.raises(kf.InvalidArgumentError, match="kernelforge.conv2d_backward_data: layout 'cl' is not one of"):
        kf.conv2d_backward_data(dy, w, x.shape, layout="cl")
    with pytest.raises(kf.InvalidArgumentError, match="pass x_shape .* or out="):
        kf.conv2d_backward_data(dy, w)
    with pytest.raises(kf.InvalidArgumentError, match="pass weight_shape .* or out="):
        kf.conv2d_backward_filter(x, dy)
    with pytest.raises(kf.InvalidArgumentError, match=r"out has shape \(2, 5, 6, 7\) but x_shape is"):
        kf.conv2d_backward_data(dy, w, x.shape, out=np.empty((2, 5, 6, 7), f32))
    with pytest.raises(kf.InvalidArgumentError, match="'dy' is not contiguous"):
        kf.conv2d_backward_data(np.ones((2, 3, 4, 8), f32)[..., ::2], w, x.shape)
    # NHWC: shapes in memory order, x (N, H, W, C), weight (K, R, S, C), dy (N, P, Q, K).
    xs, ws, dys = (2, 6, 6, 5), (3, 3, 3, 5), np.ones((2, 4, 4, 3), h16)
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' is not dense in \(N, P, Q, K\) order"):
        kf.conv2d_backward_filter(np.ones(xs, h16), np.ones((2, 4, 8, 3), h16)[:, :, ::2], ws, layout="nhwc")
    with pytest.raises(kf.InvalidArgumentError, match=r"'dy' has shape \(2, 4, 4, 3\); this convolution gives "
                                                      r"\(N, P, Q, K\) = \(2, 2, 2, 3\)"):
        kf.conv2d_backward_data(dys, np.ones(ws, h16), xs, stride=2, layout="nhwc")
    # Every check passed: the device's.
    cls, message = (kf.NoDeviceError, "no usable CUDA device") if gpu_count() == 0 else (kf.InvalidArgumentError,
                                                                                         "not in GPU memory")
    with pytest.raises(cls, match="kernelforge.conv2d_backward_data: .*" + message):
        kf.conv2d_backward_data(dys, np.ones(ws, h16), xs, layout="nhwc", relu=True, relu_y=dys)
    with pytest.raises(cls, match="kernelforge.conv2d_backward_filter: .*" + message):
        kf.conv2d_backward_filter(np.ones(xs, h16), dys, ws, bias=True, layout="nhwc", relu=True, relu_y=dys)
    with pytest.raises(cls, match="kernelforge.conv2d_backward_filter: .*" + message):
        kf.conv2d_backward_filter(x, dy, w.shape, tf32=True, variant="naive")


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


# ---- FP8: kernelforge.scaled_matmul's plain-Python helpers and its raw entry -------------
# (the torch tensors' checks are in test_torch_cpu.py and test_torch_fp8.py)

from kernelforge import _scaled_matmul as sm  # noqa: E402


@pytest.mark.parametrize("shape,strides,expected", [
    ((3, 4), (4, 1), (False, 4)),        # row-major
    ((3, 4), (6, 1), (False, 6)),        # a column slice of a wider row-major tensor
    ((4, 3), (1, 4), (True, 4)),         # the .t() of a row-major (3, 4): torch._scaled_mm's b
    ((256, 64), (1, 300), (True, 300)),  # the .t() of a padded row-major (64, 256)
    ((1, 5), (1, 1), (False, 5)),        # size-1 dimensions: any stride
    ((5, 1), (1, 1), (False, 1)),
    ((5, 1), (1, 7), (False, 1)),
    ((1, 1), (9, 9), (False, 1)),
    ((0, 4), (4, 1), (False, 4)),
])
def test_gemm_layout(shape, strides, expected):
    assert sm.gemm_layout("b", shape, strides) == expected


@pytest.mark.parametrize("shape,strides", [((4, 3), (6, 2)), ((4, 5), (0, 1)), ((3, 4), (3, 1)), ((4, 3), (1, 3)),
                                           ((3, 4), (8, 2))])
def test_gemm_layout_rejects_other_strides(shape, strides):
    with pytest.raises(kf.InvalidArgumentError, match=r"kernelforge.scaled_matmul: 'b' of shape .* has strides "
                                                      r".*neither row-major .* nor column-major"):
        sm.gemm_layout("b", shape, strides)


def _numpy_views():
    base = np.ones((6, 8), f32)
    return [base, base[:, :5], base.T, base[:, ::2], base[::2, :], base.T[:, ::2], base[:1, :], base[:, :1],
            base[::2, ::2], base[:, 1:4], np.ones((1, 1), f32)]


@pytest.mark.parametrize("view", range(len(_numpy_views())))
def test_gemm_layout_is_the_dlpack_matmul_rule(view):
    # The FP8 path maps strides in Python; the DLPack matmul maps them in C++ (matmul.cpp's
    # layout()): the same arrays must be accepted and refused.
    a = _numpy_views()[view]
    strides = tuple(s // a.itemsize for s in a.strides)
    try:
        sm.gemm_layout("a", a.shape, strides)
        python_accepts = True
    except kf.InvalidArgumentError:
        python_accepts = False
    with pytest.raises((kf.InvalidArgumentError, kf.NoDeviceError)) as info:
        kf.matmul(a, np.ones((a.shape[1], 2), f32))  # the layout is checked before the device
    assert ("neither row-major nor a transposed view" not in str(info.value)) == python_accepts, str(info.value)


@pytest.mark.parametrize("m,n,k,shape_a,shape_b,mode", [
    (64, 32, 256, (), (), "per_tensor"),
    (64, 32, 256, (1,), (1, 1), "per_tensor"),
    (64, 32, 256, (64, 1), (1, 32), "rowwise"),
    (64, 300, 257, (64, 3), (3, 3), "blockwise"),
    (130, 257, 300, (130, 3), (3, 3), "blockwise"),
    (64, 200, 300, (64, 3), (3, 2), "blockwise"),  # (ceil(k/128), ceil(n/128)): b's (k, n) orientation
    (1, 1, 64, (1, 1), (1, 1), "per_tensor"),      # m = n = 1: the modes coincide
    (8, 1, 100, (8, 1), (1, 1), "rowwise"),        # k <= 128, n = 1: rowwise = blockwise
    (4, 6, 0, (4, 0), (0, 1), "blockwise"),        # k = 0: no blocks
])
def test_infer_scaling(m, n, k, shape_a, shape_b, mode):
    assert sm.infer_scaling(None, m, n, k, shape_a, shape_b) == mode
    assert sm.infer_scaling(mode, m, n, k, shape_a, shape_b) == mode


def test_scaling_errors():
    with pytest.raises(kf.InvalidArgumentError, match=r"scale_a of shape \(64, 1\) and scale_b of shape \(32, 1\) "
                                                      r"fit no scaling mode for a \(64, 256\) @ b \(256, 32\); "
                                                      r"per_tensor: .*; rowwise: scale_a \(64, 1\) and scale_b "
                                                      r"\(1, 32\); blockwise: scale_a \(64, 2\) and scale_b \(2, 1\)"):
        sm.infer_scaling(None, 64, 32, 256, (64, 1), (32, 1))
    # DeepSeek-V3's weight_scale_inv is (ceil(n/128), ceil(k/128)): torch._scaled_mm (and kernelforge) take its .t().
    with pytest.raises(kf.InvalidArgumentError, match=r"fit no scaling mode.*weight_scale_inv \(2, 3\): pass "
                                                      r"its .t\(\)"):
        sm.infer_scaling(None, 64, 200, 300, (64, 3), (2, 3))
    with pytest.raises(kf.InvalidArgumentError, match=r"scaling 'blockwise' needs scale_a \(64, 3\) and scale_b "
                                                      r"\(3, 1\).*got scale_a \(64, 1\) and scale_b \(1, 32\)"):
        sm.infer_scaling("blockwise", 64, 32, 300, (64, 1), (1, 32))
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'rowwise' needs scale_a"):
        sm.infer_scaling("rowwise", 64, 32, 300, (), ())
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'per_row' is not one of: per_tensor, rowwise, "
                                                      "blockwise"):
        sm.infer_scaling("per_row", 64, 32, 300, (64, 1), (1, 32))


@pytest.mark.parametrize("mode,which,shape,strides,in_place", [
    ("per_tensor", "a", (), (), True),
    ("rowwise", "a", (64, 1), (1, 1), True),
    ("rowwise", "a", (64, 1), (1, 64), True),
    ("rowwise", "a", (64, 1), (3, 1), False),    # a strided column: copied
    ("rowwise", "b", (1, 32), (32, 1), True),
    ("rowwise", "b", (1, 32), (64, 2), False),
    ("blockwise", "a", (64, 3), (3, 1), True),   # row-major (m, kb)
    ("blockwise", "a", (64, 3), (1, 64), False),  # torch._scaled_mm's outer-dim-major: copied
    ("blockwise", "b", (3, 2), (1, 3), True),    # weight_scale_inv.t()
    ("blockwise", "b", (3, 2), (2, 1), False),   # a row-major (kb, nb): copied
    ("blockwise", "b", (1, 2), (2, 1), True),    # kb = 1
])
def test_scale_read_in_place(mode, which, shape, strides, in_place):
    assert sm.scale_read_in_place(mode, which, shape, strides) == in_place


def test_scale_shapes():
    assert sm.scale_shapes("per_tensor", 5, 6, 7) == (None, None)
    assert sm.scale_shapes("rowwise", 5, 6, 7) == ((5, 1), (1, 6))
    assert sm.scale_shapes("blockwise", 5, 129, 256) == ((5, 2), (2, 2))
    assert sm.scale_shapes("blockwise", 5, 128, 257) == ((5, 3), (3, 1))


def test_fp8_dtype_names_and_output_dtype():
    class FakeDtype:  # str() of a torch.dtype
        def __str__(self):
            return "torch.float8_e5m2"

    assert sm.dtype_name(FakeDtype()) == "float8_e5m2" and sm.dtype_name("torch.bfloat16") == "bfloat16"
    assert sm.dtype_name("float16") == "float16"
    for pair in sm.OPERAND_PAIRS:
        sm.check_operand_dtypes(*pair)
    with pytest.raises(TypeError, match="'a' has dtype float32; supported dtypes: float8_e4m3fn, float8_e5m2"):
        sm.check_operand_dtypes("float32", "float8_e4m3fn")
    with pytest.raises(TypeError, match="'b' has dtype float8_e4m3fnuz"):
        sm.check_operand_dtypes("float8_e4m3fn", "float8_e4m3fnuz")
    with pytest.raises(TypeError, match="both float8_e5m2, which is not supported"):
        sm.check_operand_dtypes("float8_e5m2", "float8_e5m2")
    assert sm.resolve_out_dtype(None) == "bfloat16"
    assert sm.resolve_out_dtype(None, "float32") == "float32"
    assert sm.resolve_out_dtype("torch.float16") == "float16"
    assert sm.resolve_out_dtype("float32", "float32") == "float32"
    with pytest.raises(TypeError, match="out_dtype has dtype float8_e4m3fn; supported dtypes: bfloat16, float16, "
                                        "float32"):
        sm.resolve_out_dtype("float8_e4m3fn")
    with pytest.raises(TypeError, match="'out' has dtype float64; supported dtypes"):
        sm.resolve_out_dtype(None, "float64")
    with pytest.raises(TypeError, match="'out' has dtype float32 but out_dtype is float16"):
        sm.resolve_out_dtype("float16", "float32")


def test_scaled_matmul_takes_torch_tensors_only():
    x = np.ones((4, 4), f32)
    with pytest.raises(TypeError, match="scaled_matmul: FP8 operands come from PyTorch only .* numpy.ndarray"):
        kf.scaled_matmul(x, x, x, x)
    with pytest.raises(TypeError, match="DLPack"):
        kf.scaled_matmul([1.0], x, x, x)


def _raw(**changes):
    # Pointers that are never dereferenced: every case fails in a check before anything runs.
    args = dict(a=4096, a_dtype="float8_e4m3fn", trans_a=False, lda=32, b=8192, b_dtype="float8_e4m3fn",
                trans_b=True, ldb=32, m=4, n=4, k=32, scaling="per_tensor", scale_a=12288, scale_b=12292, alpha=1.0,
                beta=0.0, out=16384, out_dtype="bfloat16", ldd=4, bias=0, relu=False, relu_threshold=0.0, amax=0,
                variant="best", device=0, stream=0)
    args.update(changes)
    return kf._C.scaled_matmul_raw(**args)


def test_scaled_matmul_raw_argument_errors():
    what = "kernelforge.scaled_matmul_raw: "
    with pytest.raises(kf.InvalidArgumentError, match=what + "a_dtype 'float16' is not one of: float8_e4m3fn, "
                                                             "float8_e5m2"):
        _raw(a_dtype="float16")
    with pytest.raises(kf.InvalidArgumentError, match="b_dtype 'e4m3' is not one of"):
        _raw(b_dtype="e4m3")
    with pytest.raises(kf.InvalidArgumentError, match="float8_e5m2 with b_dtype float8_e5m2 is not shipped"):
        _raw(a_dtype="float8_e5m2", b_dtype="float8_e5m2")
    with pytest.raises(kf.InvalidArgumentError, match="out_dtype 'float64' is not one of: bfloat16, float16, float32"):
        _raw(out_dtype="float64")
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'tensorwise' is not one of: per_tensor, rowwise, "
                                                      "blockwise"):
        _raw(scaling="tensorwise")
    with pytest.raises(kf.InvalidArgumentError, match="variant 'fast' is not one of: best, naive"):
        _raw(variant="fast")


@pytest.mark.skipif(gpu_count() > 0, reason="a GPU is present")
def test_scaled_matmul_raw_without_a_device():
    with pytest.raises(kf.NoDeviceError, match="kernelforge.scaled_matmul_raw: .*no usable CUDA device"):
        _raw()
    with pytest.raises(kf.NoDeviceError, match="kernelforge.scaled_matmul: .*no usable CUDA device"):
        kf._C.require_cuda_device("kernelforge.scaled_matmul", "a", 0)


@pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU: without one every device index is NoDeviceError")
def test_scaled_matmul_raw_pointer_errors():
    # kf::scaled_matmul's own checks, before the FP8 device check and before anything is enqueued.
    with pytest.raises(kf.InvalidArgumentError, match=r"'a' is not in GPU memory \(device index -1\)"):
        _raw(device=-1)
    with pytest.raises(kf.InvalidArgumentError, match="scales.a is null; scaling mode per_tensor reads 1 value"):
        _raw(scale_a=0)
    with pytest.raises(kf.InvalidArgumentError, match="scales.b is null; scaling mode rowwise reads n values"):
        _raw(scaling="rowwise", scale_b=0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'options.amax' is not aligned to 4 bytes"):
        _raw(amax=20001)
    kf._C.require_cuda_device("kernelforge.scaled_matmul", "a", 0)  # a valid index: no error
