# SPDX-License-Identifier: Apache-2.0
"""Vector add from CuPy: a hand-written float4 kernel, then kernelforge's, side by side.

A learner's first CUDA kernel from Python: a cupy.RawKernel that adds two float32
vectors four elements at a time (one 16-byte load per operand, a scalar tail for
the last n % 4 elements). Then kernelforge.vector_add on the same CuPy arrays,
which takes them through DLPack, runs on CuPy's current stream and returns a CuPy
array. Both are checked against a + b and timed with CUDA events at 2^28 elements
(3 GiB moved per call).

Run: python examples/python/cupy_vector_add.py   (needs a GPU and CuPy; prints PASSED)
"""

import sys

import kernelforge as kf

try:
    import cupy as cp
except ImportError:
    print('SKIPPED: CuPy is not installed (pip install ".[cupy]")')
    sys.exit(77)

SOURCE = r"""
extern "C" __global__ void vector_add_float4(const float* a, const float* b, float* c, long long n) {
  long long n4 = n / 4;
  long long stride = (long long)gridDim.x * blockDim.x;
  const float4* a4 = reinterpret_cast<const float4*>(a);  // cupy allocations are 256-byte aligned
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (long long i = 4 * n4 + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];  // the tail: n % 4 elements
}
"""
vector_add_float4 = cp.RawKernel(SOURCE, "vector_add_float4")


def raw_vector_add(a, b, c):
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    vector_add_float4((sms * 8,), (256,), (a, b, c, cp.int64(a.size)))


def time_ms(fn, repeats=20):
    flush = cp.empty(256 << 20, dtype=cp.uint8)  # larger than L2: every sample reads from DRAM
    times = []
    for _ in range(repeats):
        flush.fill(0)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return sorted(times)[len(times) // 2]


def main():
    if kf.device_count() == 0:
        print("SKIPPED: this example needs a CUDA GPU and found none; kernelforge-doctor (built with the C++ "
              "package) says why and how to fix it")
        return 77
    for n in (1, 7, 1000003):  # correctness, including a tail
        a, b = cp.random.standard_normal(n, dtype=cp.float32), cp.random.standard_normal(n, dtype=cp.float32)
        c = cp.empty_like(a)
        raw_vector_add(a, b, c)
        cp.testing.assert_array_equal(c, a + b)
        out = kf.vector_add(a, b)
        assert isinstance(out, cp.ndarray)
        cp.testing.assert_array_equal(out, a + b)

    n = 1 << 28
    a, b = cp.random.standard_normal(n, dtype=cp.float32), cp.random.standard_normal(n, dtype=cp.float32)
    c, out = cp.empty_like(a), cp.empty_like(a)
    gbs = lambda ms: 3 * n * 4 / ms / 1e6  # noqa: E731
    raw = time_ms(lambda: raw_vector_add(a, b, c))
    ours = time_ms(lambda: kf.vector_add(a, b, out))
    cupy_op = time_ms(lambda: cp.add(a, b, out=c))
    print(f"2^28 fp32 vector add: RawKernel float4 {raw:.3f} ms ({gbs(raw):.0f} GB/s), kernelforge {ours:.3f} ms "
          f"({gbs(ours):.0f} GB/s), cupy.add {cupy_op:.3f} ms ({gbs(cupy_op):.0f} GB/s)")
    cp.testing.assert_array_equal(out, a + b)
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
