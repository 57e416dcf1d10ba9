// SPDX-License-Identifier: Apache-2.0
// kf::matmul's argument checks, host code only: ops, options, null pointers,
// leading dimensions, the variants compiled for each type and the epilogue
// requests, each message naming the argument, the numbers and the fix.
// Compiled by the host compiler.
#include "kernelforge/kernels/matmul/validate.hpp"

#include <string>
#include <type_traits>

#include "kernelforge/error.hpp"
#include "kernelforge/kernels/runtime/device_facts.hpp"
#include "kernelforge/kernels/runtime/validate.hpp"

namespace kf::detail {
namespace {

/// The variants precompiled for T (float: every fp32 one; double: naive,
/// smem_tiled, blocktile_2d; 16-bit types: naive, tensor_core_f16, wgmma_f16).
template <class T>
constexpr bool has_variant(matmul_variant v) {
  using mv = matmul_variant;
  if (v == mv::best || v == mv::naive) return true;
  if constexpr (std::is_same_v<T, float>) {
    return v != mv::tensor_core_f16 && v != mv::wgmma_f16;
  } else if constexpr (is_16bit<T>) {
    return v == mv::tensor_core_f16 || v == mv::wgmma_f16;
  } else {
    return v == mv::smem_tiled || v == mv::blocktile_2d;
  }
}

/// What exists for T, for the errc::unsupported message.
template <class T>
constexpr const char* variants_of() {
  if constexpr (std::is_same_v<T, float>) return "every variant but tensor_core_f16 and wgmma_f16 (or best)";
  if constexpr (std::is_same_v<T, double>) return "naive, smem_tiled and blocktile_2d (or best)";
  return "naive, tensor_core_f16 and wgmma_f16 (or best)";
}

/// The variants whose kernels apply an epilogue (options.bias / options.relu, or a functor).
/// custom: a functor of the caller's (kernelforge/matmul.cuh instantiates warp_tiled
/// and tensor_core_tf32 only); else the precompiled fused options, which large_tile runs too.
constexpr bool has_epilogue(matmul_variant v, bool custom) {
  return v == matmul_variant::best || v == matmul_variant::warp_tiled || v == matmul_variant::tensor_core_tf32 ||
         (!custom && v == matmul_variant::large_tile);
}

/// The epilogue requests of a call: the fused options (precompiled for float, on
/// the variants with epilogue support, bias aligned and not overlapping C), or the
/// caller's own functor (custom: then the fused options must be unset).
template <class T>
void validate_epilogue(std::size_t m, std::size_t n, const T* C, std::size_t ldc, const matmul_options& options,
                       bool custom) {
  const bool fused = has_fused_epilogue(options);
  if (custom && fused) {
    throw error(errc::invalid_argument,
                std::string(matmul_what) +
                    ": options.bias / options.relu are the precompiled fused epilogue and cannot be combined with an "
                    "epilogue functor; leave them unset and apply them in the functor (e.g. "
                    "kf::epilogue::compose<kf::epilogue::bias_relu_threshold<float>, YourOp>)");
  }
  if (!fused && !custom) return;
  const char* request = custom ? "an epilogue functor" : "a fused epilogue (options.bias / options.relu)";
  if (!std::is_same_v<T, float>) {
    throw error(errc::unsupported, std::string(matmul_what) + ": " + request + " is compiled for float only, not " +
                                       matmul_type_name<T>() + "; apply the bias / ReLU as a separate pass");
  }
  if (!has_epilogue(options.variant, custom)) {
    throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(options.variant) +
                                       " has no epilogue support, so it cannot run " + request + "; use " +
                                       epilogue_variants(custom));
  }
  if (options.bias == nullptr || m == 0 || n == 0) return;
  require_aligned(matmul_what, "options.bias", options.bias, alignof(T));
  // C spans (m - 1) * ldc + n elements from C (ldc >= n was checked; the product
  // fits size_t because C is an allocation of at least that many elements).
  const std::size_t c_elements = (m - 1) * ldc + n;
  if (ranges_overlap(options.bias, n * sizeof(T), C, c_elements * sizeof(T))) {
    throw error(errc::invalid_argument, std::string(matmul_what) + ": options.bias (n = " + std::to_string(n) +
                                            " elements) overlaps C; the bias is read while C is written, so pass a "
                                            "bias array disjoint from C");
  }
}

void require_op(const char* what, const char* name, op o) {
  if (o == op::none || o == op::transpose) return;
  throw_invalid_argument(what, std::string(name) + " = " + std::to_string(static_cast<int>(o)) +
                                   " is not an op; pass op::none or op::transpose");
}

void require_operand(const char* what, const char* name, const void* p, const char* dims, std::size_t rows,
                     std::size_t cols) {
  if (p != nullptr || rows == 0 || cols == 0) return;
  throw error(errc::invalid_argument, std::string(what) + ": argument '" + name + "' is null but holds " + dims +
                                          " = " + std::to_string(rows) + " x " + std::to_string(cols) +
                                          " elements; pass a device pointer (null is allowed only when that is 0)");
}

void require_leading_dimension(const char* what, const char* name, std::size_t ld, const char* symbol,
                               std::size_t row_length, const char* layout) {
  if (ld >= row_length) return;
  throw error(errc::invalid_argument,
              std::string(what) + ": " + name + " = " + std::to_string(ld) + " is smaller than " + symbol + " = " +
                  std::to_string(row_length) + ", the length of a stored row (" + layout + "); pass " + name +
                  " >= " + std::to_string(row_length) + " (the distance between consecutive rows, in elements)");
}

}  // namespace

void require_gemm_layout(const char* what, op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                         const void* A, std::size_t lda, const void* B, std::size_t ldb, const void* C, std::size_t ldc,
                         const gemm_output_names& output) {
  require_op(what, "trans_a", trans_a);
  require_op(what, "trans_b", trans_b);
  // BLAS quick return: when m or n is 0 the product is empty and neither A nor
  // B is read, whatever k is, so they may be null.
  if (m != 0 && n != 0) {
    require_operand(what, "A", A, "m x k", m, k);
    require_operand(what, "B", B, "k x n", k, n);
  }
  require_operand(what, output.matrix, C, "m x n", m, n);
  const bool ta = trans_a == op::transpose, tb = trans_b == op::transpose;
  require_leading_dimension(
      what, "lda", lda, ta ? "m" : "k", ta ? m : k,
      ta ? "trans_a = op::transpose: A is stored k x m" : "trans_a = op::none: A is stored m x k");
  require_leading_dimension(
      what, "ldb", ldb, tb ? "k" : "n", tb ? k : n,
      tb ? "trans_b = op::transpose: B is stored n x k" : "trans_b = op::none: B is stored k x n");
  require_leading_dimension(what, output.leading_dimension, ldc, "n", n, output.layout);
}

template <class T>
void validate_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, const T* A, std::size_t lda,
                     const T* B, std::size_t ldb, const T* C, std::size_t ldc, const matmul_options& options,
                     bool custom_epilogue) {
  using v = matmul_variant;
  require_one_of(matmul_what, "options.variant", options.variant,
                 {v::best, v::naive, v::coalesced, v::smem_tiled, v::blocktile_1d, v::blocktile_2d, v::vectorized,
                  v::warp_tiled, v::large_tile, v::tensor_core_tf32, v::tensor_core_f16, v::wgmma_f16});
  require_one_of(matmul_what, "options.math", options.math,
                 {math_mode::exact, math_mode::tf32, math_mode::fp32_emulated});
  require_gemm_layout(matmul_what, trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, matmul_output);
  if (!has_variant<T>(options.variant)) {
    throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(options.variant) +
                                       " is not compiled for " + matmul_type_name<T>() + "; " + matmul_type_name<T>() +
                                       " has " + variants_of<T>());
  }
  if (options.math == math_mode::fp32_emulated && std::is_same_v<T, float>) {
    if (options.variant != matmul_variant::best) {
      throw error(errc::invalid_argument, std::string(matmul_what) +
                                              ": options.math = fp32_emulated runs its own "
                                              "kernels (steps 15 and 16, three TF32 products per pair); variant " +
                                              to_string(options.variant) +
                                              " computes exact fp32 or TF32. Pass "
                                              "variant best, or math_mode::exact for variant " +
                                              to_string(options.variant));
    }
    if (custom_epilogue) {
      throw error(errc::unsupported, std::string(matmul_what) +
                                         ": options.math = fp32_emulated takes the fused bias / ReLU epilogue "
                                         "(options.bias, options.relu) but not a custom functor; use "
                                         "math_mode::exact or tf32 with your functor");
    }
  }
  if (options.variant == matmul_variant::tensor_core_tf32 && options.math != math_mode::tf32) {
    throw error(errc::invalid_argument, std::string(matmul_what) +
                                            ": variant tensor_core_tf32 rounds the inputs to TF32 (10-bit "
                                            "mantissa) and so needs options.math = math_mode::tf32; with "
                                            "math_mode::exact use variant best, warp_tiled or large_tile");
  }
  validate_epilogue<T>(m, n, C, ldc, options, custom_epilogue);
}

void require_tensor_cores(int device) {
  if (compute_capability(device) >= mma_sync_min_cc) return;
  throw_needs_compute_capability(matmul_what, device, mma_sync_min_cc, "variant tensor_core_tf32 (TF32 tensor cores)",
                                 "use variant best with math_mode::exact");
}

void matmul_validate_custom_epilogue(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                                     const float* A, std::size_t lda, const float* B, std::size_t ldb, const float* C,
                                     std::size_t ldc, const matmul_options& options) {
  validate_matmul<float>(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, options, /*custom_epilogue=*/true);
}

#define KF_INSTANTIATE_VALIDATE_MATMUL(T)                                                                          \
  template void validate_matmul<T>(op, op, std::size_t, std::size_t, std::size_t, const T*, std::size_t, const T*, \
                                   std::size_t, const T*, std::size_t, const matmul_options&, bool);

KF_INSTANTIATE_VALIDATE_MATMUL(float)
KF_INSTANTIATE_VALIDATE_MATMUL(double)
KF_INSTANTIATE_VALIDATE_MATMUL(__half)
KF_INSTANTIATE_VALIDATE_MATMUL(__nv_bfloat16)

}  // namespace kf::detail
