// SPDX-License-Identifier: Apache-2.0
// bench_scaled_matmul's baseline: cuBLASLt's FP8 matmul on the same operands and
// scales as kf::scaled_matmul. Per scaling mode the scales (ours, and cuBLASLt's
// copies where its layout differs: the header comment of bench_scaled_matmul.cu
// maps them), its handle and workspace, and per shape and mode the descriptors
// and the heuristic's algorithm, or why cuBLASLt cannot run the mode.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/kernelforge.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::bench::scaled_matmul {

using kf::fp8_scaling;
using shape = kf::bench::gemm_shape;

inline constexpr std::size_t block_k = 128;  // the promotion interval and the scale block along k

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

/// n scales uniform in [0.5, 2), on the host (the reference reads them there).
inline std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  std::vector<float> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i] = 0.5f + 1.5f * static_cast<float>(mix64(seed ^ mix64(i)) >> 40) * (1.0f / (1u << 24));
  }
  return s;
}

/// One mode's scales: ours (host copies and device arrays), and cuBLASLt's A' (our
/// B's) and B' (our A's) where their layout differs from ours.
struct scale_set {
  fp8_scaling mode;
  std::vector<float> a, b;
  kf::device_buffer<float> a_dev, b_dev, lt_a_dev, lt_b_dev;
  const float* lt_a = nullptr;
  const float* lt_b = nullptr;

  scale_set(fp8_scaling mode_, const shape& s) : mode(mode_) {
    const std::size_t kb = ceil_div(s.k, block_k), nb = ceil_div(s.n, block_k);
    const std::size_t count_a = mode == fp8_scaling::per_tensor ? 1 : mode == fp8_scaling::rowwise ? s.m : s.m * kb;
    const std::size_t count_b = mode == fp8_scaling::per_tensor ? 1 : mode == fp8_scaling::rowwise ? s.n : nb * kb;
    a = random_scales(count_a, 11 + static_cast<int>(mode));
    b = random_scales(count_b, 21 + static_cast<int>(mode));
    a_dev = kf::to_device(a);
    b_dev = kf::to_device(b);
    lt_a = b_dev.data();
    lt_b = a_dev.data();
    if (mode != fp8_scaling::blockwise) return;
    const std::size_t kb4 = ceil_div(kb, 4) * 4;
    if (kb4 != kb) {  // BLK128x128: the k blocks of each 128 columns, padded to a multiple of 4
      std::vector<float> padded(nb * kb4, 1.0f);
      for (std::size_t jb = 0; jb < nb; ++jb) std::copy_n(&b[jb * kb], kb, &padded[jb * kb4]);
      lt_a_dev = kf::to_device(padded);
      lt_a = lt_a_dev.data();
    }
    std::vector<float> transposed(kb * s.m);  // VEC128: the m rows of each k block contiguous
    for (std::size_t i = 0; i < s.m; ++i) {
      for (std::size_t pb = 0; pb < kb; ++pb) transposed[pb * s.m + i] = a[i * kb + pb];
    }
    lt_b_dev = kf::to_device(transposed);
    lt_b = lt_b_dev.data();
  }

  /// The scale of the products of A(i, p) and B(p, j) for p in k block pb.
  double of(std::size_t i, std::size_t j, std::size_t pb, std::size_t kb) const {
    switch (mode) {
      case fp8_scaling::per_tensor: return double(a[0]) * double(b[0]);
      case fp8_scaling::rowwise: return double(a[i]) * double(b[j]);
      case fp8_scaling::blockwise: return double(a[i * kb + pb]) * double(b[(j / block_k) * kb + pb]);
    }
    return 0;
  }
};

// ---- cuBLASLt ------------------------------------------------------------------
inline cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasLtCreate failed\n");
      std::exit(1);
    }
    return h;
  }();
  return handle;
}

inline kf::device_buffer<unsigned char>& lt_workspace() {
  static kf::device_buffer<unsigned char> w(32u << 20);
  return w;
}

/// One mode's cuBLASLt call on one shape: descriptors and the heuristic's best
/// algorithm, or why cuBLASLt cannot run it (`unsupported`).
struct lt_plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string unsupported;

  lt_plan(const shape& s, const scale_set& sc) {
    if (sc.mode == fp8_scaling::blockwise && s.m % 4 != 0) {
      unsupported = "the VEC128_32F scales of B' (our A) are laid out here for m a multiple of 4 only";
      return;
    }
#if CUBLAS_VERSION >= 120900
    std::int32_t scale_mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, scale_mode_b = scale_mode_a;
    if (sc.mode == fp8_scaling::rowwise) scale_mode_a = scale_mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    if (sc.mode == fp8_scaling::blockwise) {
      scale_mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      scale_mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    }
#else
    if (sc.mode != fp8_scaling::per_tensor) {
      unsupported = "cuBLAS older than 12.9 has no rowwise or blockwise FP8 scales";
      return;
    }
#endif
    cublasStatus_t st = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value) {
      if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
    };
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    const std::int8_t fast_accum = 0;
    const void* scale_a = sc.lt_a;
    const void* scale_b = sc.lt_b;
    set(CUBLASLT_MATMUL_DESC_TRANSA, transa);
    set(CUBLASLT_MATMUL_DESC_TRANSB, transb);
    set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum);
#if CUBLAS_VERSION >= 120900
    set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, scale_mode_a);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, scale_mode_b);
#endif
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&a, CUDA_R_8F_E4M3, s.k, s.n, s.k);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&b, CUDA_R_8F_E4M3, s.k, s.m, s.k);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, s.n, s.m, s.n);
    if (st != CUBLAS_STATUS_SUCCESS) {
      unsupported = std::string("descriptor setup: ") + cublasGetStatusName(st);
      return;
    }
    cublasLtMatmulPreference_t preference = nullptr;
    const std::uint64_t workspace_bytes = lt_workspace().size_bytes();
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    st = cublasLtMatmulPreferenceCreate(&preference);
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                sizeof(workspace_bytes));
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulAlgoGetHeuristic(lt_handle(), desc, a, b, d, d, preference, 1, &result, &found);
    }
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      unsupported = std::string("cublasLtMatmulAlgoGetHeuristic: ") +
                    (st != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(st) : "no algorithm") + " for e4m3 TN, " +
                    kf::to_string(sc.mode) + " scales";
      return;
    }
    algo = result.algo;
  }
  ~lt_plan() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
  lt_plan(const lt_plan&) = delete;
  lt_plan& operator=(const lt_plan&) = delete;
};

}  // namespace kf::bench::scaled_matmul
