# SPDX-License-Identifier: Apache-2.0
"""GPU tests with CuPy: CuPy arrays in and out, on CuPy's current stream (ordering
checked against CuPy work on a non-default stream), transposed matmul views, and the
device of the arrays. Skipped without CuPy or a GPU."""

import numpy as np
import pytest

import kernelforge as kf

cp = pytest.importorskip("cupy")
if kf.device_count() == 0:
    pytest.skip("no CUDA GPU", allow_module_level=True)

# Spins for `cycles` clocks, then writes value everywhere: slow producer on a stream.
_slow_fill = cp.RawKernel(r"""
extern "C" __global__ void slow_fill(float* x, long long n, float value, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = value;
}
""", "slow_fill")


def test_cupy_in_cupy_out():
    x = cp.random.standard_normal(4097, dtype=cp.float32)
    y = kf.relu_threshold(x, 0.25)
    assert isinstance(y, cp.ndarray) and y.dtype == x.dtype and y.device == x.device
    cp.testing.assert_array_equal(y, cp.where(x <= 0.25, 0, x))
    z = kf.vector_add(x, y)
    cp.testing.assert_allclose(z, x + y, rtol=1e-6)


@pytest.mark.parametrize("dtype", [cp.float32, cp.float64, cp.float16])
def test_dtypes(dtype):
    x = cp.random.standard_normal(1000).astype(dtype)
    cp.testing.assert_array_equal(kf.relu_threshold(x), cp.maximum(x, 0))


def test_matmul_with_transposed_views():
    a = cp.random.standard_normal((65, 33), dtype=cp.float32)
    b = cp.random.standard_normal((17, 65), dtype=cp.float32)
    out = kf.matmul(a.T, b.T)  # (33, 65) @ (65, 17), both read through transpose flags
    cp.testing.assert_allclose(out, a.T @ b.T, rtol=1e-4, atol=1e-4)


def test_matmul_float16():
    # float16 through DLPack; CuPy has no bfloat16 dtype (torch's bfloat16 is tested in test_torch.py).
    a = cp.random.standard_normal((65, 33)).astype(cp.float16)
    b = cp.random.standard_normal((17, 65)).astype(cp.float16)
    out = kf.matmul(a.T, b.T)
    assert out.dtype == cp.float16 and out.shape == (33, 17)
    ref = a.T.astype(cp.float64) @ b.T.astype(cp.float64)
    bound = (4 * 65 ** 0.5 + 8) * 2.0**-23 * (cp.abs(a.T.astype(cp.float64)) @ cp.abs(b.T.astype(cp.float64))) + \
        2 * 2.0**-11 * cp.abs(ref)
    assert bool((cp.abs(out.astype(cp.float64) - ref) <= bound).all())


def conv_reference(x, w, b, stride, padding, dilation):
    """(value, scale) of conv2d + bias of NCHW x and KCRS w in float64: a sum over the R x S
    taps of strided slices of the padded input (scale: the same of |x|, |w| and |b|)."""
    def conv(x, w, b):
        x = cp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
        (n, _, h, wd), (k, _, r, s) = x.shape, w.shape
        p, q = (h - dilation * (r - 1) - 1) // stride + 1, (wd - dilation * (s - 1) - 1) // stride + 1
        y = cp.broadcast_to(b[None, :, None, None], (n, k, p, q)).copy()
        for i in range(r):
            for j in range(s):
                patch = x[:, :, i * dilation:i * dilation + stride * (p - 1) + 1:stride,
                          j * dilation:j * dilation + stride * (q - 1) + 1:stride]
                y += cp.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
        return y
    x, w, b = x.astype(cp.float64), w.astype(cp.float64), b.astype(cp.float64)
    return conv(x, w, b), conv(cp.abs(x), cp.abs(w), cp.abs(b))


def test_conv2d_nchw_float32():
    x = cp.random.standard_normal((2, 5, 13, 12), dtype=cp.float32)
    w = cp.random.standard_normal((7, 5, 3, 3), dtype=cp.float32)
    b = cp.random.standard_normal(7, dtype=cp.float32)
    value, _ = conv_reference(x, w, b, 2, 1, 1)
    out = kf.conv2d(x, w, b, stride=2, padding=1)
    assert isinstance(out, cp.ndarray) and out.shape == value.shape == (2, 7, 7, 6) and out.flags.c_contiguous
    cp.testing.assert_allclose(out, value, rtol=1e-4, atol=1e-4)
    cp.testing.assert_allclose(kf.conv2d(x, w, b, stride=2, padding=1, relu=True), cp.maximum(value, 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("dtype", [cp.float32, cp.float16])
def test_conv2d_nhwc_arrays(dtype):
    # layout="nhwc": CuPy arrays in memory order, x (N, H, W, C), weight (K, R, S, C), out (N, P, Q, K).
    x = cp.random.standard_normal((2, 11, 10, 16)).astype(dtype)
    w = cp.random.standard_normal((24, 3, 3, 16)).astype(dtype)
    b = cp.random.standard_normal(24).astype(dtype)
    value, scale = conv_reference(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), b, 1, 2, 2)
    value, scale = value.transpose(0, 2, 3, 1), scale.transpose(0, 2, 3, 1)
    out = kf.conv2d(x, w, b, padding=2, dilation=2, layout="nhwc")
    assert out.dtype == dtype and out.shape == value.shape == kf.conv2d_output_shape(
        x.shape, w.shape, padding=2, dilation=2, layout="nhwc") == (2, 11, 10, 24)
    # fp32 sums of 144 products (exact for float16 inputs), one rounding to the output type.
    unit = 2.0**-11 if dtype == cp.float16 else 2.0**-24
    bound = (4 * 144 ** 0.5 + 8) * 2.0**-23 * scale + 2 * unit * cp.abs(value)
    assert bool((cp.abs(out.astype(cp.float64) - value) <= bound).all())


def conv_gradients_reference(x, w, dy, stride, padding, dilation):
    """(dx, dw, db) of conv2d of NCHW x and KCRS w for dy (N, K, P, Q), in float64: each tap's
    strided slice of the padded input gets dy's contribution (dx) or gives it (dw)."""
    (_, _, h, wd), (_, _, r, s), (_, _, p, q) = x.shape, w.shape, dy.shape
    xp = cp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    dxp = cp.zeros_like(xp)
    dw = cp.zeros_like(w)
    for i in range(r):
        for j in range(s):
            rows = slice(i * dilation, i * dilation + stride * (p - 1) + 1, stride)
            cols = slice(j * dilation, j * dilation + stride * (q - 1) + 1, stride)
            dxp[:, :, rows, cols] += cp.einsum("nkpq,kc->ncpq", dy, w[:, :, i, j])
            dw[:, :, i, j] = cp.einsum("nkpq,ncpq->kc", dy, xp[:, :, rows, cols])
    return dxp[:, :, padding:padding + h, padding:padding + wd], dw, dy.sum(axis=(0, 2, 3))


@pytest.mark.parametrize("dtype,layout", [(cp.float32, "nchw"), (cp.float32, "nhwc"), (cp.float16, "nhwc")])
def test_conv2d_gradients(dtype, layout):
    # CuPy arrays in memory order: "nhwc" takes dy (N, P, Q, K), weight (K, R, S, C), x (N, H, W, C).
    x = cp.random.standard_normal((2, 6, 13, 12)).astype(dtype)
    w = cp.random.standard_normal((8, 6, 3, 3)).astype(dtype)
    dy = cp.random.standard_normal((2, 8, 7, 6)).astype(dtype)
    g = dict(stride=2, padding=1, dilation=1)
    as64 = lambda t: t.astype(cp.float64)  # noqa: E731
    value = conv_gradients_reference(as64(x), as64(w), as64(dy), 2, 1, 1)
    scale = conv_gradients_reference(cp.abs(as64(x)), cp.abs(as64(w)), cp.abs(as64(dy)), 2, 1, 1)
    to_layout = (lambda t: cp.ascontiguousarray(t.transpose(0, 2, 3, 1))) if layout == "nhwc" else (lambda t: t)
    from_layout = (lambda t: t.transpose(0, 3, 1, 2)) if layout == "nhwc" else (lambda t: t)
    dx = kf.conv2d_backward_data(to_layout(dy), to_layout(w), to_layout(x).shape, layout=layout, **g)
    dw, db = kf.conv2d_backward_filter(to_layout(x), to_layout(dy), to_layout(w).shape, bias=True, layout=layout, **g)
    assert dx.shape == to_layout(x).shape and dw.shape == to_layout(w).shape and db.shape == (8,)
    # fp32 sums (dx: K*R*S = 72 products, dw and db: N*P*Q = 84), one rounding to the output type.
    unit = 2.0**-11 if dtype == cp.float16 else 2.0**-24
    for got, want, sc in zip((from_layout(dx), from_layout(dw), db), value, scale):
        assert got.dtype == dtype
        bound = (4 * 84 ** 0.5 + 8) * 2.0**-23 * sc + 2 * unit * cp.abs(want)
        assert bool((cp.abs(got.astype(cp.float64) - want) <= bound).all())


def test_ordering_on_a_cupy_stream():
    n = 1 << 22
    x = cp.zeros(n, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    with cp.cuda.Stream(non_blocking=True) as s:
        _slow_fill((256,), (256,), (x, cp.int64(n), cp.float32(3.0), cp.int64(200_000_000)))
        y = kf.relu_threshold(x, 1.0)  # must run after the fill: same (current) stream
        z = kf.vector_add(y, x)
    s.synchronize()
    assert float(y.min()) == 3.0 and float(z.min()) == 6.0


def test_explicit_cupy_stream_object():
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(1000, dtype=cp.float32)
    y = cp.empty_like(x)
    cp.cuda.Device().synchronize()
    kf.relu_threshold(x, 0.0, y, stream=s)
    s.synchronize()
    cp.testing.assert_array_equal(y, x)


@pytest.mark.skipif(cp.cuda.runtime.getDeviceCount() < 2, reason="needs two GPUs")
def test_second_device():
    with cp.cuda.Device(1):
        x = cp.random.standard_normal(1000, dtype=cp.float32)
    y = kf.relu_threshold(x)  # current device is 0
    assert y.device.id == 1 and cp.cuda.Device().id == 0
    with cp.cuda.Device(1):
        cp.testing.assert_array_equal(y, cp.maximum(x, 0))


def test_numpy_roundtrip_error():
    with pytest.raises(kf.InvalidArgumentError, match="not in GPU memory"):
        kf.vector_add(cp.ones(3, dtype=cp.float32), np.ones(3, dtype=np.float32))
