// SPDX-License-Identifier: Apache-2.0
// bench_scaled_matmul's operands and its two sides (included by bench_scaled_matmul.cu
// alone, whose header comment describes the rows): e4m3 inputs from a counter hash, each
// shape's operands, scales and cuBLASLt plan, ours and cuBLASLt on them, and the spot
// check of 16 entries of D against a double-precision sum.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "cublaslt_fp8.hpp"
#include "gemm_bench.hpp"
#include "kernelforge/kernels/matmul/scaled/forced_tile.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::bench::scaled_matmul {
namespace {

using fp8 = __nv_fp8_e4m3;
using bf16 = __nv_bfloat16;

constexpr double tolerance = 2e-2;  // relative to max |reference| of the checked entries

// ---- inputs --------------------------------------------------------------------
/// N(0, 1) x 8 (Box-Muller on two 24-bit uniforms in (0, 1) from a hash of i),
/// clipped to +-448 (e4m3's largest finite value) and at least 2^-6 (its smallest
/// normal) in magnitude, so no entry is zero.
__global__ void fill_e4m3_kernel(fp8* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float u1 = (static_cast<float>(h >> 40) + 0.5f) * (1.0f / (1u << 24));
    const float u2 = static_cast<float>((h >> 8) & 0xFFFFFFu) * (1.0f / (1u << 24));
    float v = 8.0f * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    v = fminf(fmaxf(v, -448.0f), 448.0f);
    if (fabsf(v) < 0.015625f) v = v < 0.0f ? -0.015625f : 0.015625f;
    data[i] = fp8(v);
  }
}

void fill_e4m3(fp8* data, std::size_t n, std::uint64_t seed) {
  const std::size_t blocks = std::clamp<std::size_t>(ceil_div(n, 256), 1, 4096);
  fill_e4m3_kernel<<<static_cast<unsigned>(blocks), 256>>>(data, n, seed);
  check(cudaGetLastError(), "fill_e4m3");
}

/// A, B and D of one shape with each mode's scales and cuBLASLt plan (made on first
/// use), kept while consecutive rows use that shape.
struct operands {
  shape s;
  kf::device_buffer<fp8> a, b;
  kf::device_buffer<bf16> d;
  std::unique_ptr<scale_set> scales[3];
  std::unique_ptr<lt_plan> plans[3];

  explicit operands(const shape& s_) : s(s_), a(s_.m * s_.k), b(s_.n * s_.k), d(s_.m * s_.n) {
    fill_e4m3(a.data(), a.size(), 1);
    fill_e4m3(b.data(), b.size(), 2);
    check(cudaDeviceSynchronize(), "fill");
  }
  scale_set& scales_for(fp8_scaling mode) {
    auto& p = scales[static_cast<int>(mode)];
    if (!p) p = std::make_unique<scale_set>(mode, s);
    return *p;
  }
  lt_plan& plan_for(fp8_scaling mode) {
    auto& p = plans[static_cast<int>(mode)];
    if (!p) p = std::make_unique<lt_plan>(s, scales_for(mode));
    return *p;
  }
};

operands& operands_for(const shape& s) {
  static std::unique_ptr<operands> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();  // free the previous shape's buffers first
    current = std::make_unique<operands>(s);
  }
  return *current;
}

/// dst (cols x rows, row-major) = src (rows x cols, row-major)^T, bytewise: the other layouts' copies.
__global__ void transpose_bytes(const fp8* src, fp8* dst, std::size_t rows, std::size_t cols) {
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < rows * cols;
       e += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = e / cols, c = e % cols;
    dst[c * rows + r] = src[e];
  }
}

/// The storage of a layout other than TN: "nn" B as k x n row-major, "tt" A as k x m;
/// the same logical operands (transposed copies), so D and its check are the TN ones.
struct layout_copy {
  kf::device_buffer<fp8> data;
  layout_copy(const fp8* src, std::size_t rows, std::size_t cols) : data(rows * cols) {
    transpose_bytes<<<1024, 256>>>(src, data.data(), rows, cols);
    check(cudaDeviceSynchronize(), "transpose for a layout row");
  }
};

// ---- the two sides ---------------------------------------------------------------
/// Ours on TN, or with `a_km` (A stored k x m) or `b_kn` (B stored k x n) where given;
/// the amax of D into the device float `amax` where given.
void run_ours(operands& p, fp8_scaling mode, kf::scaled_matmul_variant variant, cudaStream_t stream,
              const fp8* a_km = nullptr, const fp8* b_kn = nullptr, float* amax = nullptr) {
  const scale_set& sc = p.scales_for(mode);
  kf::scaled_matmul_options o;
  o.stream = stream;
  o.variant = variant;
  o.amax = amax;
  const kf::op ta = a_km != nullptr ? kf::op::transpose : kf::op::none;
  const kf::op tb = b_kn != nullptr ? kf::op::none : kf::op::transpose;
  kf::scaled_matmul(ta, tb, p.s.m, p.s.n, p.s.k, 1.0f, a_km != nullptr ? a_km : p.a.data(),
                    a_km != nullptr ? p.s.m : p.s.k, b_kn != nullptr ? b_kn : p.b.data(),
                    b_kn != nullptr ? p.s.n : p.s.k, kf::fp8_scales{mode, sc.a_dev.data(), sc.b_dev.data()}, 0.0f,
                    p.d.data(), p.s.n, o);
}

/// Ours on TN with the wgmma step's tile forced (kf::detail::scaled_wgmma_tile): the paired tile rows.
void run_ours_tile(operands& p, fp8_scaling mode, kf::detail::scaled_wgmma_tile tile, cudaStream_t stream) {
  const scale_set& sc = p.scales_for(mode);
  kf::scaled_matmul_options o;
  o.stream = stream;
  kf::detail::scaled_matmul_forced_tile(kf::op::none, kf::op::transpose, p.s.m, p.s.n, p.s.k, 1.0f, p.a.data(), p.s.k,
                                        p.b.data(), p.s.k, kf::fp8_scales{mode, sc.a_dev.data(), sc.b_dev.data()}, 0.0f,
                                        p.d.data(), p.s.n, o, tile);
}

/// D' = op(A') op(B') with A' our B and B' our A (the header comment's mapping).
cublasStatus_t run_cublaslt(operands& p, lt_plan& plan, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(lt_handle(), plan.desc, &alpha, p.b.data(), plan.a, p.a.data(), plan.b, &beta, p.d.data(),
                        plan.d, p.d.data(), plan.d, &plan.algo, lt_workspace().data(), lt_workspace().size_bytes(),
                        stream);
}

/// Compares 16 entries of D (just written by `who`) with a double-precision sum over
/// the e4m3 values and the scales: "" or what is wrong.
std::string compare_d(const char* who, operands& p, fp8_scaling mode) {
  const scale_set& sc = p.scales_for(mode);
  const std::size_t k = p.s.k, kb = ceil_div(k, block_k);
  std::vector<fp8> arow(k), brow(k);
  double got[16], ref[16], max_ref = 0;
  std::size_t rows[16], cols[16];
  for (int t = 0; t < 16; ++t) {
    const std::size_t i = rows[t] = mix64(100 + t) % p.s.m, j = cols[t] = mix64(200 + t) % p.s.n;
    bf16 d{};
    check(cudaMemcpy(arow.data(), p.a.data() + i * k, k, cudaMemcpyDeviceToHost), "copy A row");
    check(cudaMemcpy(brow.data(), p.b.data() + j * k, k, cudaMemcpyDeviceToHost), "copy B row");
    check(cudaMemcpy(&d, p.d.data() + i * p.s.n + j, sizeof(bf16), cudaMemcpyDeviceToHost), "copy D entry");
    double sum = 0;
    for (std::size_t pb = 0; pb < kb; ++pb) {
      double partial = 0;
      for (std::size_t q = pb * block_k; q < std::min(k, (pb + 1) * block_k); ++q) {
        partial += double(static_cast<float>(arow[q])) * double(static_cast<float>(brow[q]));
      }
      sum += sc.of(i, j, pb, kb) * partial;
    }
    got[t] = double(__bfloat162float(d));
    ref[t] = sum;
    max_ref = std::max(max_ref, std::fabs(sum));
  }
  for (int t = 0; t < 16; ++t) {
    if (!(std::fabs(got[t] - ref[t]) <= tolerance * max_ref)) {
      return std::string(who) + " is wrong at (" + std::to_string(rows[t]) + ", " + std::to_string(cols[t]) +
             "): got " + std::to_string(got[t]) + ", expected " + std::to_string(ref[t]) + " (max |expected| " +
             std::to_string(max_ref) + ")";
    }
  }
  return {};
}

/// Runs ours once on D poisoned with NaN and checks it; sets `call_s` to that call's
/// host-measured time (module loading included), which sizes the warm-ups.
std::string check_ours(operands& p, fp8_scaling mode, kf::scaled_matmul_variant variant, double& call_s) {
  check(cudaMemset(p.d.data(), 0xFF, p.d.size_bytes()), "poison D");
  check(cudaDeviceSynchronize(), "poison D");
  const auto start = std::chrono::steady_clock::now();
  run_ours(p, mode, variant, nullptr);
  check(cudaDeviceSynchronize(), "spot check run");
  call_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return compare_d(variant == kf::scaled_matmul_variant::naive ? "ours (naive)" : "ours (best)", p, mode);
}

/// The same for cuBLASLt; a failing status marks the plan unsupported instead.
std::string check_cublaslt(operands& p, fp8_scaling mode, lt_plan& plan) {
  check(cudaMemset(p.d.data(), 0xFF, p.d.size_bytes()), "poison D");
  const cublasStatus_t st = run_cublaslt(p, plan, nullptr);
  if (st != CUBLAS_STATUS_SUCCESS) {
    plan.unsupported = std::string("cublasLtMatmul: ") + cublasGetStatusName(st);
    return {};
  }
  check(cudaDeviceSynchronize(), "spot check run");
  return compare_d("cuBLASLt", p, mode);
}

}  // namespace
}  // namespace kf::bench::scaled_matmul
