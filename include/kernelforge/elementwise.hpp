// The elementwise family: SAXPY, vector add, threshold ReLU forward and backward.
// Each call validates its arguments, enqueues one kernel on options.stream and
// returns without synchronizing. Precompiled for float, double, __half and
// __nv_bfloat16 (the half types compute in fp32).
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace kf {

/// The steps of the progression; `best` picks the fastest one this device runs.
enum class elementwise_variant {
  best,
  naive,       ///< one element per thread: the classic tutorial kernel
  vectorized,  ///< 16-byte loads/stores, grid-stride, several loads in flight
};

struct elementwise_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  elementwise_variant variant = elementwise_variant::best;
  int block_size = 0;  ///< 0: the launcher decides; else a multiple of 32 in [32, 1024]
};

/// y = a*x + y. y == x is allowed.
template <class T>
void saxpy(std::size_t n, T a, const T* x, T* y, const elementwise_options& options = {});

/// c = a + b. c may alias a or b.
template <class T>
void vector_add(std::size_t n, const T* a, const T* b, T* c, const elementwise_options& options = {});

/// y = x <= threshold ? 0 : x (NaN in x propagates). y == x is allowed.
template <class T>
void relu_threshold_forward(std::size_t n, const T* x, T* y, T threshold,
                            const elementwise_options& options = {});

/// dx = x <= threshold ? 0 : dy. dx == dy is allowed.
template <class T>
void relu_threshold_backward(std::size_t n, const T* dy, const T* x, T* dx, T threshold,
                             const elementwise_options& options = {});

/// Name of a variant ("naive", ...), for messages and benchmark labels.
const char* to_string(elementwise_variant variant) noexcept;

}  // namespace kf
