// SPDX-License-Identifier: Apache-2.0
// The matrix-product launcher: validate -> early returns -> dispatch by variant
// and device architecture, and the explicit instantiations shipped in the
// fatbin (float: every fp32 variant; double: naive, smem_tiled, blocktile_2d;
// __half and __nv_bfloat16: naive, tensor_core_f16, wgmma_f16). The wgmma step
// lives in the sm_90a objects (wgmma_sm90a.hpp); this file alone decides when
// the mma.sync steps run instead.
#include <string>
#include <type_traits>

#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/kernels/matmul/04_blocktile_1d.cuh"
#include "kernelforge/kernels/matmul/05_blocktile_2d.cuh"
#include "kernelforge/kernels/matmul/02_coalesced.cuh"
#include "kernelforge/kernels/matmul/epilogue_call.hpp"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/01_naive.cuh"
#include "kernelforge/kernels/matmul/scale.cuh"
#include "kernelforge/kernels/matmul/03_smem_tiled.cuh"
#include "kernelforge/kernels/matmul/06_vectorized.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"

// The tensor-core steps: mma.sync (09, 10) instantiated here, wgmma (11) declared.
#include "kernelforge/kernels/matmul/tensor_core_f16_launch.cuh"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

namespace kf {

const char* to_string(matmul_variant variant) noexcept {
  switch (variant) {
    case matmul_variant::best: return "best";
    case matmul_variant::naive: return "naive";
    case matmul_variant::coalesced: return "coalesced";
    case matmul_variant::smem_tiled: return "smem_tiled";
    case matmul_variant::blocktile_1d: return "blocktile_1d";
    case matmul_variant::blocktile_2d: return "blocktile_2d";
    case matmul_variant::vectorized: return "vectorized";
    case matmul_variant::warp_tiled: return "warp_tiled";
    case matmul_variant::large_tile: return "large_tile";
    case matmul_variant::tensor_core_tf32: return "tensor_core_tf32";
    case matmul_variant::tensor_core_f16: return "tensor_core_f16";
    case matmul_variant::wgmma_f16: return "wgmma_f16";
  }
  return "unknown";
}

namespace detail {
namespace {

constexpr const char* matmul_what = "kf::matmul";
/// Tensor cores (mma.sync with TF32, fp16 or bf16 operands and fp32
/// accumulation) exist from compute capability 8.0.
constexpr int tensor_core_min_cc = 80;

template <class T>
constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

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

template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, __half>) return "__half";
  return "__nv_bfloat16";
}

/// What exists for T, for the errc::unsupported message.
template <class T>
constexpr const char* variants_of() {
  if constexpr (std::is_same_v<T, float>) return "every variant but tensor_core_f16 and wgmma_f16 (or best)";
  if constexpr (std::is_same_v<T, double>) return "naive, smem_tiled and blocktile_2d (or best)";
  return "naive, tensor_core_f16 and wgmma_f16 (or best)";
}

void require_op(const char* name, op o) {
  if (o == op::none || o == op::transpose) return;
  throw_invalid_argument(matmul_what, std::string(name) + " = " + std::to_string(static_cast<int>(o)) +
                                          " is not an op; pass op::none or op::transpose");
}

/// A matrix with rows x cols > 0 elements needs a pointer.
void require_operand(const char* name, const void* p, const char* dims, std::size_t rows, std::size_t cols) {
  if (p != nullptr || rows == 0 || cols == 0) return;
  throw error(errc::invalid_argument, std::string(matmul_what) + ": argument '" + name + "' is null but holds " + dims +
                                          " = " + std::to_string(rows) + " x " + std::to_string(cols) +
                                          " elements; pass a device pointer (null is allowed only when that is 0)");
}

/// A leading dimension must cover the row it describes: ld >= row length.
/// symbol: "k", "m" or "n"; layout: which matrix and how it is stored.
void require_leading_dimension(const char* name, std::size_t ld, const char* symbol, std::size_t row_length,
                               const char* layout) {
  if (ld >= row_length) return;
  throw error(errc::invalid_argument,
              std::string(matmul_what) + ": " + name + " = " + std::to_string(ld) + " is smaller than " + symbol +
                  " = " + std::to_string(row_length) + ", the length of a stored row (" + layout + "); pass " + name +
                  " >= " + std::to_string(row_length) + " (the distance between consecutive rows, in elements)");
}

/// The variants whose kernels apply an epilogue (options.bias / options.relu, or a functor).
/// custom: a functor of the caller's (kernelforge/matmul.cuh instantiates warp_tiled
/// and tensor_core_tf32 only); else the precompiled fused options, which large_tile runs too.
constexpr bool has_epilogue(matmul_variant v, bool custom) {
  return v == matmul_variant::best || v == matmul_variant::warp_tiled || v == matmul_variant::tensor_core_tf32 ||
         (!custom && v == matmul_variant::large_tile);
}
constexpr const char* epilogue_variants(bool custom) {
  return custom ? "warp_tiled, tensor_core_tf32 (with math_mode::tf32) or best"
                : "warp_tiled, tensor_core_tf32 (with math_mode::tf32), large_tile or best";
}

bool has_fused_epilogue(const matmul_options& o) { return o.bias != nullptr || o.relu; }

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
                                       type_name<T>() + "; apply the bias / ReLU as a separate pass");
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

template <class T>
void validate(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, const T* A, std::size_t lda,
              const T* B, std::size_t ldb, const T* C, std::size_t ldc, const matmul_options& options,
              bool custom_epilogue = false) {
  require_op("trans_a", trans_a);
  require_op("trans_b", trans_b);
  using v = matmul_variant;
  require_one_of(matmul_what, "options.variant", options.variant,
                 {v::best, v::naive, v::coalesced, v::smem_tiled, v::blocktile_1d, v::blocktile_2d, v::vectorized,
                  v::warp_tiled, v::large_tile, v::tensor_core_tf32, v::tensor_core_f16, v::wgmma_f16});
  require_one_of(matmul_what, "options.math", options.math, {math_mode::exact, math_mode::tf32});
  // BLAS quick return: when m or n is 0 the product is empty and neither A nor
  // B is read, whatever k is, so they may be null.
  const bool empty_product = m == 0 || n == 0;
  if (!empty_product) {
    require_operand("A", A, "m x k", m, k);
    require_operand("B", B, "k x n", k, n);
  }
  require_operand("C", C, "m x n", m, n);
  const bool ta = trans_a == op::transpose, tb = trans_b == op::transpose;
  require_leading_dimension(
      "lda", lda, ta ? "m" : "k", ta ? m : k,
      ta ? "trans_a = op::transpose: A is stored k x m" : "trans_a = op::none: A is stored m x k");
  require_leading_dimension(
      "ldb", ldb, tb ? "k" : "n", tb ? k : n,
      tb ? "trans_b = op::transpose: B is stored n x k" : "trans_b = op::none: B is stored k x n");
  require_leading_dimension("ldc", ldc, "n", n, "C is stored m x n");
  if (!has_variant<T>(options.variant)) {
    throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(options.variant) +
                                       " is not compiled for " + type_name<T>() + "; " + type_name<T>() + " has " +
                                       variants_of<T>());
  }
  if (options.variant == matmul_variant::tensor_core_tf32 && options.math != math_mode::tf32) {
    throw error(errc::invalid_argument, std::string(matmul_what) +
                                            ": variant tensor_core_tf32 rounds the inputs to TF32 (10-bit "
                                            "mantissa) and so needs options.math = math_mode::tf32; with "
                                            "math_mode::exact use variant best, warp_tiled or large_tile");
  }
  validate_epilogue<T>(m, n, C, ldc, options, custom_epilogue);
}

/// errc::unsupported unless `device` has TF32 tensor cores (compute capability 8.0+).
void require_tensor_cores(int device) {
  const int cc = compute_capability(device);
  if (cc >= tensor_core_min_cc) return;
  throw error(errc::unsupported, std::string(matmul_what) +
                                     ": variant tensor_core_tf32 needs compute capability "
                                     "8.0 or newer (TF32 tensor cores); device " +
                                     std::to_string(device) + " is " + std::to_string(cc / 10) + "." +
                                     std::to_string(cc % 10) + "; use variant best with math_mode::exact");
}

/// Launches the TF32 tensor-core product: wgmma (sm_90a image on a cc 9.0
/// device) where available, else mma.sync. errc::unsupported where neither can run.
/// Epilogue: identity or the fused bias_relu_threshold<float> (what wgmma ships).
template <class Epilogue = epilogue::identity>
void launch_tensor_core(const gemm_args<float>& g, cudaStream_t stream, int device, const Epilogue& ep = {}) {
  require_tensor_cores(device);
  if constexpr (std::is_same_v<Epilogue, epilogue::identity>) {
    if (wgmma_try_launch(g, stream)) return;
  } else {
    static_assert(std::is_same_v<Epilogue, epilogue::bias_relu_threshold<float>>,
                  "the wgmma kernel ships identity and bias_relu_threshold<float> epilogues only");
    if (wgmma_try_launch(g, ep, stream)) return;
  }
  launch_tensor_core_tf32(g, stream, ep);
}

/// The fp16 / bf16 tensor-core steps: wgmma (sm_90a image on a cc 9.0 device,
/// variant wgmma_f16) where available, else mma.sync. errc::unsupported below 8.0.
template <class T>
void launch_tensor_core_16bit(matmul_variant variant, const gemm_args<T>& g, cudaStream_t stream, int device) {
  const int cc = compute_capability(device);
  if (cc < tensor_core_min_cc) {
    throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(variant) +
                                       " needs compute capability 8.0 or newer (fp16 / bf16 tensor cores with "
                                       "fp32 accumulation); device " +
                                       std::to_string(device) + " is " + std::to_string(cc / 10) + "." +
                                       std::to_string(cc % 10) + "; use variant naive (or best)");
  }
  if (variant == matmul_variant::wgmma_f16 && wgmma_try_launch(g, stream)) return;
  launch_tensor_core_f16(g, stream);
}

/// The variant that runs: `best` resolved for this type, math mode, device and
/// shape. Every float choice applies epilogues (has_epilogue): a faster variant
/// without epilogue support must not be picked here for a call with options.bias / relu.
/// custom_epilogue: a functor through <kernelforge/matmul.cuh>, which instantiates
/// warp_tiled and the TF32 kernel in the caller's translation unit, not large_tile.
template <class T>
matmul_variant resolve(matmul_variant requested, math_mode math, int device, std::size_t m, std::size_t n,
                       bool custom_epilogue = false) {
  if (requested != matmul_variant::best) return requested;
  if constexpr (std::is_same_v<T, float>) {
    if (math == math_mode::tf32 && compute_capability(device) >= tensor_core_min_cc) {
      return matmul_variant::tensor_core_tf32;
    }
    // The fastest exact-fp32 step for this image and shape (plan.hpp: best_is_large_tile).
    if (!custom_epilogue && best_is_large_tile(warp_tiled_tuning_of(device), m, n)) return matmul_variant::large_tile;
    return matmul_variant::warp_tiled;
  } else if constexpr (is_16bit<T>) {
    // wgmma where it runs (it falls back to mma.sync itself); naive below 8.0.
    return compute_capability(device) >= tensor_core_min_cc ? matmul_variant::wgmma_f16 : matmul_variant::naive;
  } else {
    return matmul_variant::blocktile_2d;  // the register-tiled step compiled for double
  }
}

/// The precompiled epilogue behind options.bias / options.relu (float).
epilogue::bias_relu_threshold<float> fused_epilogue(const matmul_options& o) {
  return {static_cast<const float*>(o.bias), o.relu, o.relu_threshold};
}

/// The fused epilogue of a validated call with options.bias / options.relu:
/// float, variant warp_tiled, large_tile or tensor_core_tf32.
void dispatch_fused(matmul_variant variant, const gemm_args<float>& g, const matmul_options& o, int device) {
  const auto ep = fused_epilogue(o);
  if (variant == matmul_variant::tensor_core_tf32) return launch_tensor_core(g, o.stream, device, ep);
  if (variant == matmul_variant::warp_tiled) return launch_warp_tiled(g, o.stream, ep);
  if (variant == matmul_variant::large_tile) return launch_large_tile(g, o.stream, ep);
  throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(variant) +
                                     " has no epilogue support; use " + epilogue_variants(false));
}

template <class T>
void dispatch(matmul_variant variant, const gemm_args<T>& g, cudaStream_t stream, int device) {
  if (variant == matmul_variant::naive) return launch_naive(g, stream);
  if constexpr (is_16bit<T>) {
    switch (variant) {
      case matmul_variant::tensor_core_f16:
      case matmul_variant::wgmma_f16: return launch_tensor_core_16bit(variant, g, stream, device);
      default: break;
    }
  } else {
    switch (variant) {
      case matmul_variant::smem_tiled: return launch_smem_tiled(g, stream);
      case matmul_variant::blocktile_2d: return launch_blocktile_2d(g, stream);
      default: break;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (variant) {
      case matmul_variant::coalesced: return launch_coalesced(g, stream);
      case matmul_variant::blocktile_1d: return launch_blocktile_1d(g, stream);
      case matmul_variant::vectorized: return launch_vectorized(g, stream);
      case matmul_variant::warp_tiled: return launch_warp_tiled(g, stream);
      case matmul_variant::large_tile: return launch_large_tile(g, stream);
      case matmul_variant::tensor_core_tf32: return launch_tensor_core(g, stream, device);
      default: break;
    }
  }
  // validate() and resolve() leave no other case; keep the failure loud.
  throw error(errc::unsupported,
              std::string(matmul_what) + ": variant " + to_string(variant) + " is not compiled for " + type_name<T>());
}

}  // namespace

template <class T>
void matmul_impl(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
                 std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc,
                 const matmul_options& options) {
  detail::validate<T>(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, options);
  if (m == 0 || n == 0) return;
  const int device = detail::current_device(detail::matmul_what);
  detail::require_kernel_image_cached(device, detail::matmul_what);
  const bool fused = detail::has_fused_epilogue(options);  // validated: float only
  if (k == 0) {  // empty product: C = beta * C (zeros, without reading C, when beta == 0), then the epilogue
    if constexpr (std::is_same_v<T, float>) {
      if (fused) {
        detail::launch_scale_c(C, m, n, ldc, beta, options.stream, detail::fused_epilogue(options));
        return;
      }
    }
    detail::launch_scale_c(C, m, n, ldc, beta, options.stream);
    return;
  }
  const auto g = detail::make_gemm_args<T>(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  const matmul_variant variant = detail::resolve<T>(options.variant, options.math, device, m, n);
  if constexpr (std::is_same_v<T, float>) {
    if (fused) return detail::dispatch_fused(variant, g, options, device);
  }
  detail::dispatch(variant, g, options.stream, device);
}

void matmul_validate_custom_epilogue(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                                     const float* A, std::size_t lda, const float* B, std::size_t ldb, const float* C,
                                     std::size_t ldc, const matmul_options& options) {
  detail::validate<float>(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, options, /*custom_epilogue=*/true);
}

matmul_variant matmul_epilogue_variant(const matmul_options& options, int device) {
  const matmul_variant variant =
      detail::resolve<float>(options.variant, options.math, device, 0, 0, /*custom_epilogue=*/true);
  if (variant == matmul_variant::tensor_core_tf32) detail::require_tensor_cores(device);
  return variant;
}

#define KF_INSTANTIATE_MATMUL(T)                                                                                   \
  template void matmul_impl<T>(op, op, std::size_t, std::size_t, std::size_t, compute_t<T>, const T*, std::size_t, \
                               const T*, std::size_t, compute_t<T>, T*, std::size_t, const matmul_options&);

KF_INSTANTIATE_MATMUL(float)
KF_INSTANTIATE_MATMUL(double)
KF_INSTANTIATE_MATMUL(__half)
KF_INSTANTIATE_MATMUL(__nv_bfloat16)

}  // namespace detail
}  // namespace kf
