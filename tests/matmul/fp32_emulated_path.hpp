// SPDX-License-Identifier: Apache-2.0
// The paths by which test_fp32_emulated_gpu reaches math_mode::fp32_emulated
// (Library, MmaSync, Skinny: fp32_emulated_gpu_test.cpp's header comment), shared by
// its sources (fp32_emulated_gpu_test.cpp, fp32_emulated_accuracy_gpu_test.cpp,
// fp32_emulated_schedule_gpu_test.cpp): the parameterized suite Fp32Emulated, its skip
// rule, the call by path and the inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "matmul_case.hpp"
#include "kernelforge/kernelforge.hpp"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated.hpp"
#include "kernelforge/kernels/matmul/plan.hpp"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

namespace kf::test::fp32_emulated {

using kf::test::matmul_case;
using kf::test::matmul_shape;
using kf::test::precision;

/// Compute capability 8.0 or newer: math_mode::fp32_emulated runs.
inline bool runs_emulation() {
  static const bool yes = [] { return kf::get_device_info().cc_major >= 8; }();
  return yes;
}

/// How a test reaches the emulation (see the top of this file).
enum class path { library, mma_sync, skinny };

inline const char* name_of(path p) {
  return p == path::library ? "Library" : p == path::mma_sync ? "MmaSync" : "Skinny";
}

inline std::string path_name(const ::testing::TestParamInfo<path>& info) { return name_of(info.param); }

/// Why a test of path `p` does not run on this machine (empty: it runs).
inline std::string skip_reason(path p) {
  const std::string no_gpu = kf::test::gpu_unavailable_reason();
  if (!no_gpu.empty()) return "GPU test skipped: " + no_gpu;
  if (!runs_emulation()) return "fp32 emulation needs compute capability 8.0";
  if (p != path::library) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return "cudaGetDevice failed";
    if (!kf::detail::wgmma_available(device)) {
      return p == path::mma_sync ? "kf::matmul runs step 16 itself here (the Library cases)"
                                 : "step 17 needs compute capability 9.0 and the library's sm_90a image";
    }
  }
  return {};
}

#define KF_SKIP_UNLESS_PATH_RUNS(p)                              \
  do {                                                           \
    const std::string kf_skip_reason = skip_reason(p);           \
    if (!kf_skip_reason.empty()) GTEST_SKIP() << kf_skip_reason; \
  } while (0)

inline kf::matmul_options emulated() {
  kf::matmul_options o;
  o.math = kf::math_mode::fp32_emulated;
  return o;
}

/// Whether step 17 reads its large operand in place for g: its rows 16-byte aligned.
inline bool skinny_runs(const kf::detail::gemm_args<float>& g) {
  const bool b_large = kf::detail::forced_fp32_emulated_large(g.m, g.n) == kf::detail::fp32_emulated_large::b;
  const float* const x = b_large ? g.B : g.A;
  const std::size_t ld = b_large ? g.ldb : g.lda;
  return reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && (ld * sizeof(float)) % 16 == 0;
}

/// kf::matmul<float> with `o` (math fp32_emulated, variant best) by path `p`:
/// the library, step 16's launcher where kf::matmul would run it (k >=
/// fp32_emulated_min_k; else kf::matmul, which runs the exact steps), or step
/// 17 forced (likewise; where its large operand's rows are not 16-byte
/// aligned, kf::matmul, which runs step 15 then).
inline void emulated_matmul(path p, kf::op ta, kf::op tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
                            const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
                            std::size_t ldc, const kf::matmul_options& o) {
  const kf::detail::gemm_args<float> g =
      kf::detail::make_gemm_args<float>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (p == path::library || k < kf::detail::fp32_emulated_min_k || m == 0 || n == 0 ||
      (p == path::skinny && !skinny_runs(g))) {
    kf::matmul<float>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, o);
    return;
  }
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  const kf::epilogue::bias_relu_threshold<float> fused{static_cast<const float*>(o.bias), o.relu, o.relu_threshold};
  if (p == path::skinny) {
    ASSERT_TRUE(kf::detail::wgmma_fp32_emulated_try_launch(g, fused, device, o.stream,
                                                           kf::detail::fp32_emulated_wgmma_kernel::skinny))
        << "step 17 did not run (" << m << " x " << n << " x " << k << ")";
    return;
  }
  ASSERT_TRUE(kf::detail::mma_sync_fp32_emulated_try_launch(g, fused, device, o.stream))
      << "step 16 found no workspace";
}

/// Uniform values in +-[0.1, 2) (no zeros), from seed.
inline std::vector<float> plain_inputs(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t z = seed;
  for (float& x : v) {
    z = kf::test::mix64(z);
    const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
    x = static_cast<float>((z & 1 ? -1.0 : 1.0) * (0.1 + 1.9 * u));
  }
  return v;
}

class Fp32Emulated : public ::testing::TestWithParam<path> {};

}  // namespace kf::test::fp32_emulated
