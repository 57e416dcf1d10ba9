// SPDX-License-Identifier: Apache-2.0
// The four elementwise operations as functors on the compute type C (fp32 for
// float and the half types, fp64 for double). Inputs come in the order the
// public API lists them; each returns the output element.
#pragma once

namespace kf::detail {

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
