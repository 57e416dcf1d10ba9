// SPDX-License-Identifier: Apache-2.0
// The vendor baselines the elementwise kernels are measured against:
// cub::DeviceTransform (CCCL) for every op and type, cublasSaxpy for fp32 saxpy.
// The CUB functors compute in fp32 and round once to T, exactly as kernelforge
// does (include/kernelforge/kernels/elementwise/ops.cuh), so both sides do the same arithmetic.
#pragma once

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

#include <cub/device/device_transform.cuh>
#include <cublas_v2.h>
#include <cuda/std/tuple>

namespace kf::bench::elementwise {

template <class T>
struct cub_saxpy_fn {  // y = a*x + y
  float a;
  __device__ T operator()(T x, T y) const {
    return static_cast<T>(fmaf(a, static_cast<float>(x), static_cast<float>(y)));
  }
};

template <class T>
struct cub_add_fn {  // c = a + b
  __device__ T operator()(T a, T b) const { return static_cast<T>(static_cast<float>(a) + static_cast<float>(b)); }
};

template <class T>
struct cub_relu_forward_fn {  // y = x <= t ? 0 : x (NaN propagates)
  float threshold;
  __device__ T operator()(T x) const { return static_cast<float>(x) <= threshold ? static_cast<T>(0.0f) : x; }
};

template <class T>
struct cub_relu_backward_fn {  // dx = x <= t ? 0 : dy
  float threshold;
  __device__ T operator()(T dy, T x) const { return static_cast<float>(x) <= threshold ? static_cast<T>(0.0f) : dy; }
};

/// The user-op row (kf::transform against CUB): a 3-input fused op,
/// out = clamp(a*x + b*y + z, lo, hi), the same functor for both sides.
struct fused3_fn {
  float a, b, lo, hi;
  __host__ __device__ float operator()(float x, float y, float z) const {
    return fminf(fmaxf(fmaf(a, x, fmaf(b, y, z)), lo), hi);
  }
};

/// Throws std::runtime_error (the benchmark turns it into SkipWithError).
inline void require_success(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// CUB picks 32- or 64-bit offsets from the type of num_items; our sizes fit
/// in int, so it gets the 32-bit offsets it is fastest with.
inline int cub_items(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX)) throw std::runtime_error("cub baseline: n exceeds INT_MAX");
  return static_cast<int>(n);
}

/// out[i] = op(in0[i], in1[i]) through cub::DeviceTransform, enqueued on `stream`.
template <class T, class Op>
void cub_transform(const T* in0, const T* in1, T* out, std::size_t n, Op op, cudaStream_t stream) {
  require_success(cub::DeviceTransform::Transform(::cuda::std::make_tuple(in0, in1), out, cub_items(n), op, stream),
                  "cub::DeviceTransform::Transform");
}

/// out[i] = op(in0[i]) through cub::DeviceTransform, enqueued on `stream`.
template <class T, class Op>
void cub_transform(const T* in0, T* out, std::size_t n, Op op, cudaStream_t stream) {
  require_success(cub::DeviceTransform::Transform(::cuda::std::make_tuple(in0), out, cub_items(n), op, stream),
                  "cub::DeviceTransform::Transform");
}

/// out[i] = op(in0[i], in1[i], in2[i]) through cub::DeviceTransform, enqueued on `stream`.
template <class T, class Op>
void cub_transform(const T* in0, const T* in1, const T* in2, T* out, std::size_t n, Op op, cudaStream_t stream) {
  require_success(
      cub::DeviceTransform::Transform(::cuda::std::make_tuple(in0, in1, in2), out, cub_items(n), op, stream),
      "cub::DeviceTransform::Transform");
}

/// One cuBLAS handle for the process, created on first use (cublasCreate costs
/// tens of milliseconds; it is made before timing starts). Deliberately never
/// destroyed: at exit the CUDA runtime may already be torn down.
inline cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
  }();
  return handle;
}

/// y = a*x + y through cublasSaxpy on `stream`.
inline void cublas_saxpy(std::size_t n, float a, const float* x, float* y, cudaStream_t stream) {
  if (n > static_cast<std::size_t>(INT_MAX)) throw std::runtime_error("cublasSaxpy: n exceeds INT_MAX");
  cublasHandle_t handle = cublas_handle();
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSetStream failed");
  const cublasStatus_t status = cublasSaxpy(handle, static_cast<int>(n), &a, x, 1, y, 1);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublasSaxpy failed: ") + cublasGetStatusString(status));
  }
}

}  // namespace kf::bench::elementwise
