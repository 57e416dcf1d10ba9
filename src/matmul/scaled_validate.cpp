// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul's argument checks, host code only; each message names the
// argument, the numbers and the fix.
#include "kernelforge/kernels/matmul/scaled/validate.hpp"

#include <string>

#include "kernelforge/error.hpp"
#include "kernelforge/kernels/matmul/validate.hpp"
#include "kernelforge/kernels/runtime/device_facts.hpp"
#include "kernelforge/kernels/runtime/validate.hpp"

namespace kf::detail {
namespace {

std::string count_text(fp8_scaling mode, bool of_a) {
  switch (mode) {
    case fp8_scaling::per_tensor: return "1 value";
    case fp8_scaling::rowwise: return of_a ? "m values, one per row of op(A)" : "n values, one per column of op(B)";
    case fp8_scaling::blockwise:
      return of_a ? "m x ceil(k / 128) values, one per 1 x 128 block of op(A)"
                  : "ceil(n / 128) x ceil(k / 128) values, one per 128 x 128 block of op(B)";
  }
  return "";
}

void require_scale(const char* name, const float* p, fp8_scaling mode, bool of_a) {
  if (p == nullptr) {
    throw error(errc::invalid_argument, std::string(scaled_matmul_what) + ": " + name + " is null; scaling mode " +
                                            to_string(mode) + " reads " + count_text(mode, of_a) +
                                            " of fp32 from it (a device pointer)");
  }
  require_aligned(scaled_matmul_what, name, p, alignof(float));
}

}  // namespace

void validate_scaled_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, const void* A,
                            std::size_t lda, const void* B, std::size_t ldb, const fp8_scales& scales, const void* D,
                            std::size_t ldd, std::size_t d_bytes, const scaled_matmul_options& options) {
  require_gemm_layout(scaled_matmul_what, trans_a, trans_b, m, n, k, A, lda, B, ldb, D, ldd,
                      gemm_output_names{"D", "ldd", "D is stored m x n"});
  require_one_of(scaled_matmul_what, "scales.mode", scales.mode,
                 {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise});
  require_one_of(scaled_matmul_what, "options.variant", options.variant,
                 {scaled_matmul_variant::best, scaled_matmul_variant::naive, scaled_matmul_variant::mma_sync,
                  scaled_matmul_variant::wgmma});
  if (m != 0 && n != 0 && k != 0) {  // else the product is empty and no scale is read
    require_scale("scales.a", scales.a, scales.mode, true);
    require_scale("scales.b", scales.b, scales.mode, false);
  }
  const std::size_t d_span = m == 0 || n == 0 ? 0 : ((m - 1) * ldd + n) * d_bytes;  // ldd >= n was checked
  if (options.bias != nullptr && m != 0 && n != 0) {
    require_aligned(scaled_matmul_what, "options.bias", options.bias, d_bytes);
    if (ranges_overlap(options.bias, n * d_bytes, D, d_span)) {
      throw error(errc::invalid_argument, std::string(scaled_matmul_what) + ": options.bias (n = " + std::to_string(n) +
                                              " elements) overlaps D; the bias is read while D is written, so pass "
                                              "a bias array disjoint from D");
    }
  }
  if (options.amax != nullptr) {
    require_aligned(scaled_matmul_what, "options.amax", options.amax, alignof(float));
    if (ranges_overlap(options.amax, sizeof(float), D, d_span)) {
      throw error(errc::invalid_argument, std::string(scaled_matmul_what) +
                                              ": options.amax points into D; the amax is written while D is, so pass "
                                              "a float of its own");
    }
  }
}

void require_fp8_device(int device) {
  if (compute_capability(device) >= fp8_min_cc) return;
  throw_needs_compute_capability(scaled_matmul_what, device, fp8_min_cc, "FP8 (FP8 tensor cores)",
                                 "convert the operands to __nv_bfloat16 or __half and call kf::matmul");
}

}  // namespace kf::detail
