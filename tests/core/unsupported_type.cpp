// SPDX-License-Identifier: Apache-2.0
// Negative compile test (tests/core/CMakeLists.txt compiles it with the host
// compiler, once per KF_CASE, and expects the build to fail with the family's
// static_assert message naming the types it ships). Never part of a target.
#include <kernelforge/kernelforge.hpp>

void call_with_an_unshipped_type() {
#if KF_CASE == 1
  int* x = nullptr;
  kf::saxpy(0, 1, x, x);  // elementwise ships float, double, __half, __nv_bfloat16
#elif KF_CASE == 2
  long* a = nullptr;
  kf::matmul(kf::op::none, kf::op::none, 0, 0, 0, 1, a, 1, a, 1, 0, a, 1);  // float, double, __half, __nv_bfloat16
#elif KF_CASE == 3
  int* image = nullptr;
  kf::filter2d(0, 0, 0, image, 0, image, 1, 1, image, 0);  // float, __half, double
#elif KF_CASE == 4
  double* x = nullptr;
  kf::conv2d_forward(kf::conv2d_params{}, x, x, nullptr, x);  // float
#elif KF_CASE == 5
  __nv_bfloat16* image = nullptr;
  kf::filter2d(0, 0, 0, image, 0, image, 1, 1, image, 0);  // not bf16
#endif
}
