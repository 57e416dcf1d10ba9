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
