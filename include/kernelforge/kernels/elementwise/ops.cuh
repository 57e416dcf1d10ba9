// SPDX-License-Identifier: Apache-2.0
// The four elementwise operations as functors on the compute type C (fp32 for
// float and the half types, fp64 for double). Inputs come in the order the
// public API lists them; each returns the output element. on_storage<T, Op>
// turns one into the functor the elementwise kernel applies to elements of T.
#pragma once

#include "../common/numeric.cuh"

namespace kf::detail {

/// Op applied to elements stored as T: each input converted to compute_t<T>,
/// the result rounded once back to T (for float and double, no conversion).
template <class T, class Op>
struct on_storage {
  Op op;
  template <class... Ts>
  __device__ __forceinline__ T operator()(Ts... v) const {
    return from_compute<T>(op(to_compute<T>(v)...));
  }
};

template <class C>
struct saxpy_op {  // y = a*x + y: inputs (x, y)
  C a;
  __device__ __forceinline__ C operator()(C x, C y) const { return fma(a, x, y); }
};

template <class C>
struct add_op {  // c = a + b: inputs (a, b)
  __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

template <class C>
struct relu_forward_op {  // y = x <= t ? 0 : x: input (x). NaN <= t is false: NaN propagates.
  C threshold;
  __device__ __forceinline__ C operator()(C x) const { return x <= threshold ? C(0) : x; }
};

template <class C>
struct relu_backward_op {  // dx = x <= t ? 0 : dy: inputs (dy, x)
  C threshold;
  __device__ __forceinline__ C operator()(C dy, C x) const { return x <= threshold ? C(0) : dy; }
};

}  // namespace kf::detail
