# SPDX-License-Identifier: Apache-2.0
"""conv2d's tests that need no GPU (they run in CI): the output shape, the layouts' shape
and dtype rules, and the gradients' argument errors, raised before anything runs. NumPy
arrays stand in for CUDA arrays, as in test_cpu.py."""

import numpy as np
import pytest

import kernelforge as kf
from conftest import gpu_count

f32 = np.float32


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


def test_conv2d_math_names():
    # math as kernelforge.matmul's: the name is checked by the binding before the device, tf32=True with another
    # math in Python.
    x, w = np.ones((1, 2, 4, 4), f32), np.ones((1, 2, 3, 3), f32)
    with pytest.raises(kf.InvalidArgumentError, match="math 'fp64' is not one of: exact, tf32, fp32_emulated"):
        kf.conv2d(x, w, math="fp64")
    with pytest.raises(kf.InvalidArgumentError, match="kernelforge.conv2d: tf32=True contradicts "
                                                      "math='fp32_emulated'"):
        kf.conv2d(x, w, tf32=True, math="fp32_emulated")
    cls, message = (kf.NoDeviceError, "no usable CUDA device") if gpu_count() == 0 else (kf.InvalidArgumentError,
                                                                                         "not in GPU memory")
    for kwargs in (dict(math="exact"), dict(math="tf32"), dict(tf32=True, math="tf32"), dict(math="fp32_emulated")):
        with pytest.raises(cls, match="kernelforge.conv2d: .*" + message):
            kf.conv2d(x, w, **kwargs)


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
    with pytest.raises(kf.InvalidArgumentError,
                       match="variant 'wgmma' is not one of: best, naive, implicit_gemm, implicit_gemm_wgmma$"):
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
