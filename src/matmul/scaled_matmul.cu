// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul: validate -> plan -> dispatch for the FP8 product, and its
// explicit instantiations (3 operand pairs x 3 output types). The steps are
// headers under include/kernelforge/kernels/matmul/scaled/.
#include <string>

#include "kernelforge/kernels/matmul/scaled/01_naive.cuh"
#include "kernelforge/kernels/matmul/scaled/02_mma_sync.cuh"
#include "kernelforge/kernels/matmul/scaled/forced_tile.hpp"
#include "kernelforge/kernels/matmul/scaled/validate.hpp"
#include "kernelforge/kernels/matmul/scaled/wgmma_sm90a.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kf {

const char* to_string(fp8_scaling mode) noexcept {
  switch (mode) {
    case fp8_scaling::per_tensor: return "per_tensor";
    case fp8_scaling::rowwise: return "rowwise";
    case fp8_scaling::blockwise: return "blockwise";
  }
  return "unknown";
}

const char* to_string(scaled_matmul_variant variant) noexcept {
  switch (variant) {
    case scaled_matmul_variant::best: return "best";
    case scaled_matmul_variant::naive: return "naive";
    case scaled_matmul_variant::mma_sync: return "mma_sync";
    case scaled_matmul_variant::wgmma: return "wgmma";
  }
  return "unknown";
}

namespace detail {
namespace {

template <class TA, class TB, class TD>
scaled_gemm_args<TA, TB, TD> make_scaled_args(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                                              float alpha, const TA* A, std::size_t lda, const TB* B, std::size_t ldb,
                                              const fp8_scales& scales, float beta, TD* D, std::size_t ldd,
                                              const scaled_matmul_options& options) {
  scaled_gemm_args<TA, TB, TD> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.A = A;
  g.B = B;
  g.D = D;
  const bool ta = trans_a == op::transpose, tb = trans_b == op::transpose;
  g.a_row = ta ? 1 : lda;  // op(A)(i, p) = A[i * a_row + p * a_col]
  g.a_col = ta ? lda : 1;
  g.b_row = tb ? 1 : ldb;  // op(B)(p, j) = B[p * b_row + j * b_col]
  g.b_col = tb ? ldb : 1;
  g.ldd = ldd;
  g.mode = scales.mode;
  g.scale_a = scales.a;
  g.scale_b = scales.b;
  g.k_blocks = ceil_div(k, fp8_promotion_k);
  g.alpha = alpha;
  g.beta = beta;
  g.bias = static_cast<const TD*>(options.bias);
  g.relu = options.relu;
  g.relu_threshold = options.relu_threshold;
  g.amax_bits = reinterpret_cast<unsigned*>(options.amax);
  return g;
}

/// scaled_matmul_impl with the wgmma step's tile by shape or forced (`tile`: forced_tile.hpp).
template <class TA, class TB, class TD>
void run_scaled_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const TA* A,
                       std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales, float beta, TD* D,
                       std::size_t ldd, const scaled_matmul_options& options, scaled_wgmma_tile tile) {
  validate_scaled_matmul(trans_a, trans_b, m, n, k, A, lda, B, ldb, scales, D, ldd, sizeof(TD), options);
  if (options.amax != nullptr) {  // the kernel folds |D| into it with atomicMax from 0
    cuda_check(cudaMemsetAsync(options.amax, 0, sizeof(float), options.stream), "kf::scaled_matmul (amax reset)");
  }
  if (m == 0 || n == 0) return;
  const int device = current_device(scaled_matmul_what);
  require_fp8_device(device);
  require_kernel_image_cached(device, scaled_matmul_what);
  const auto g = make_scaled_args(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, scales, beta, D, ldd, options);
  // best: the wgmma step where it runs (Hopper with the sm_90a image, k > 0),
  // else mma_sync where it takes the layout, else naive.
  const scaled_matmul_variant v = options.variant;
  if ((v == scaled_matmul_variant::best || v == scaled_matmul_variant::wgmma) &&
      scaled_wgmma_try_launch(g, device, options.stream, tile)) {
    return;
  }
  if (v == scaled_matmul_variant::wgmma) {
    throw error(errc::unsupported, std::string(scaled_matmul_what) +
                                       ": variant wgmma needs a compute capability 9.0 GPU, a library built with 90 "
                                       "in CMAKE_CUDA_ARCHITECTURES, and k > 0; pass variant best or naive");
  }
  if ((v == scaled_matmul_variant::best || v == scaled_matmul_variant::mma_sync) && scaled_mma_sync_takes(g)) {
    launch_scaled_mma_sync(g, options.stream);  // require_fp8_device above: compute capability 8.9+
    return;
  }
  if (v == scaled_matmul_variant::mma_sync) {
    throw error(errc::unsupported, std::string(scaled_matmul_what) +
                                       ": variant mma_sync reads A and B k-major with 16-byte aligned rows (trans_a "
                                       "none, trans_b transpose, lda and ldb multiples of 16, 16-byte aligned "
                                       "pointers) and k > 0; pass variant best or naive for other layouts");
  }
  launch_scaled_naive(g, options.stream);
}

}  // namespace

template <class TA, class TB, class TD>
void scaled_matmul_impl(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const TA* A,
                        std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales, float beta, TD* D,
                        std::size_t ldd, const scaled_matmul_options& options) {
  run_scaled_matmul(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, scales, beta, D, ldd, options,
                    scaled_wgmma_tile::by_shape);
}

template <class TA, class TB, class TD>
void scaled_matmul_forced_tile(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                               const TA* A, std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales,
                               float beta, TD* D, std::size_t ldd, const scaled_matmul_options& options,
                               scaled_wgmma_tile tile) {
  scaled_matmul_options forced = options;
  forced.variant = scaled_matmul_variant::wgmma;
  run_scaled_matmul(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, scales, beta, D, ldd, forced, tile);
}

#define KF_INSTANTIATE_SCALED_MATMUL(TA, TB, TD)                                                                   \
  template void scaled_matmul_impl<TA, TB, TD>(op, op, std::size_t, std::size_t, std::size_t, float, const TA*,    \
                                               std::size_t, const TB*, std::size_t, const fp8_scales&, float, TD*, \
                                               std::size_t, const scaled_matmul_options&);                         \
  template void scaled_matmul_forced_tile<TA, TB, TD>(                                                             \
      op, op, std::size_t, std::size_t, std::size_t, float, const TA*, std::size_t, const TB*, std::size_t,        \
      const fp8_scales&, float, TD*, std::size_t, const scaled_matmul_options&, scaled_wgmma_tile);
KF_FOR_EACH_SCALED_MATMUL_TYPES(KF_INSTANTIATE_SCALED_MATMUL)
#undef KF_INSTANTIATE_SCALED_MATMUL

}  // namespace detail
}  // namespace kf
