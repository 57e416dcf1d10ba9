// SPDX-License-Identifier: Apache-2.0
// The matrix-product launcher: validate (validate.cpp) -> early returns ->
// dispatch by variant and device architecture, and the entry points shipped in
// the fatbin (float: every fp32 variant; double: naive, smem_tiled,
// blocktile_2d; __half and __nv_bfloat16: naive, tensor_core_f16, wgmma_f16).
// The tutorial steps 01-06 and the k == 0 scaling are compiled here; the heavy
// steps 07-10 in translation units of their own (instances.cuh), so that they
// compile in parallel. The wgmma step lives in the sm_90a objects
// (wgmma_sm90a.hpp); this file alone decides when the mma.sync steps run instead
// (step 9 for TF32, step 16 for math_mode::fp32_emulated).
#include <string>
#include <type_traits>

#include "instances.cuh"
#include "kernelforge/kernels/matmul/01_naive.cuh"
#include "kernelforge/kernels/matmul/02_coalesced.cuh"
#include "kernelforge/kernels/matmul/03_smem_tiled.cuh"
#include "kernelforge/kernels/matmul/04_blocktile_1d.cuh"
#include "kernelforge/kernels/matmul/05_blocktile_2d.cuh"
#include "kernelforge/kernels/matmul/06_vectorized.cuh"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated.hpp"
#include "kernelforge/kernels/matmul/plan.hpp"
#include "kernelforge/kernels/matmul/scale.cuh"
#include "kernelforge/kernels/matmul/validate.hpp"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/matmul.hpp"

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

/// Launches the TF32 tensor-core product: wgmma (sm_90a image on a cc 9.0
/// device) where available, else mma.sync. errc::unsupported where neither can run.
/// wgmma ships the identity and the fused epilogue and runs identity's kernel
/// when `ep` does nothing; mma.sync runs the fused kernel either way (the library
/// compiles it with the fused epilogue only: see dispatch_epilogue_steps).
void launch_tensor_core(const gemm_args<float>& g, cudaStream_t stream, int device, const fused_epilogue& ep) {
  require_tensor_cores(device);
  const bool plain = ep.bias == nullptr && !ep.relu;
  if (plain ? wgmma_try_launch(g, stream) : wgmma_try_launch(g, ep, stream)) return;
  launch_tensor_core_tf32(g, stream, ep);
}

/// math_mode::fp32_emulated, where k >= fp32_emulated_min_k (plan.hpp:
/// choose_fp32_emulated_route): step 15 (wgmma, three TF32 products) where it
/// runs, else step 16 (mma.sync) with the fused epilogue `ep` (nothing enabled:
/// the identity); errc::out_of_memory where the split operands find no memory.
void launch_fp32_emulated(const gemm_args<float>& g, const fused_epilogue& ep, int device, cudaStream_t stream,
                          fp32_emulated_route route) {
  if (route == fp32_emulated_route::wgmma && wgmma_fp32_emulated_try_launch(g, ep, device, stream)) return;
  if (mma_sync_fp32_emulated_try_launch(g, ep, device, stream)) return;
  throw error(errc::out_of_memory, std::string(matmul_what) +
                                       ": options.math = fp32_emulated splits A and B into a workspace of 8 x (m + "
                                       "n) x round_up(k, 32) bytes (" +
                                       std::to_string((g.m + g.n) * 8 * ((g.k + 31) / 32 * 32)) +
                                       " here), which could not be allocated; free memory, or use math_mode::exact");
}

/// The route of a math_mode::fp32_emulated product on `device`:
/// errc::unsupported below compute capability 8.0 (for every k).
fp32_emulated_route route_fp32_emulated(int device, std::size_t k) {
  const int cc = compute_capability(device);
  const fp32_emulated_route route = choose_fp32_emulated_route(cc, wgmma_available(device), k);
  if (route == fp32_emulated_route::unsupported) {
    throw_needs_compute_capability(matmul_what, device, mma_sync_min_cc,
                                   "options.math = fp32_emulated (TF32 tensor cores: wgmma on 9.0 with the "
                                   "library's sm_90a image, mma.sync from 8.0)",
                                   "use math_mode::exact for fp32 accuracy on this GPU");
  }
  return route;
}

/// The fp16 / bf16 tensor-core steps: wgmma (sm_90a image on a cc 9.0 device,
/// variant wgmma_f16) where available, else mma.sync. errc::unsupported below 8.0.
template <class T>
void launch_tensor_core_16bit(matmul_variant variant, const gemm_args<T>& g, cudaStream_t stream, int device) {
  if (compute_capability(device) < mma_sync_min_cc) {
    throw_needs_compute_capability(
        matmul_what, device, mma_sync_min_cc,
        std::string("variant ") + to_string(variant) + " (fp16 / bf16 tensor cores with fp32 accumulation)",
        "use variant naive (or best)");
  }
  if (variant == matmul_variant::wgmma_f16 && wgmma_try_launch(g, stream)) return;
  launch_tensor_core_f16(g, stream);
}

/// The variant that runs: `best` resolved for this type, math mode, device and
/// shape. Every float choice applies epilogues (validate.cpp: has_epilogue): a faster variant
/// without epilogue support must not be picked here for a call with options.bias / relu.
/// custom_epilogue: a functor through <kernelforge/matmul.cuh>, which instantiates
/// warp_tiled and the TF32 kernel in the caller's translation unit, not large_tile.
template <class T>
matmul_variant resolve(matmul_variant requested, math_mode math, int device, std::size_t m, std::size_t n,
                       bool custom_epilogue = false) {
  if (requested != matmul_variant::best) return requested;
  if constexpr (std::is_same_v<T, float>) {
    if (math == math_mode::tf32 && compute_capability(device) >= mma_sync_min_cc) {
      return matmul_variant::tensor_core_tf32;
    }
    // The fastest exact-fp32 step for this image and shape (plan.hpp: best_is_large_tile).
    if (!custom_epilogue && best_is_large_tile(warp_tiled_tuning_of<fused_epilogue>(device), m, n))
      return matmul_variant::large_tile;
    return matmul_variant::warp_tiled;
  } else if constexpr (is_16bit<T>) {
    // wgmma where it runs (it falls back to mma.sync itself); naive below 8.0.
    return compute_capability(device) >= mma_sync_min_cc ? matmul_variant::wgmma_f16 : matmul_variant::naive;
  } else {
    return matmul_variant::blocktile_2d;  // the register-tiled step compiled for double
  }
}

/// The precompiled epilogue behind options.bias / options.relu (float).
fused_epilogue fused_epilogue_of(const matmul_options& o) {
  return {static_cast<const float*>(o.bias), o.relu, o.relu_threshold};
}

/// The fp32 steps with epilogues (warp_tiled, large_tile, tensor_core_tf32).
/// warp_tiled and the mma.sync TF32 kernel are compiled with the fused bias /
/// ReLU epilogue alone: a plain call passes it with no bias and no ReLU, where
/// it returns each value unchanged, and the library carries half their kernels.
/// large_tile keeps its identity kernels for plain calls: its fused ones run
/// 9-11% slower at some shapes even with nothing enabled
/// (benchmarks/tuning/matmul.md#fused_epilogue_alone).
void dispatch_epilogue_steps(matmul_variant variant, const gemm_args<float>& g, const fused_epilogue& ep,
                             cudaStream_t stream, int device) {
  if (variant == matmul_variant::tensor_core_tf32) return launch_tensor_core(g, stream, device, ep);
  if (variant == matmul_variant::warp_tiled) return launch_warp_tiled(g, stream, ep);
  if (variant == matmul_variant::large_tile) return launch_large_tile(g, stream, ep);
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
      case matmul_variant::large_tile:  // identity, 16-byte copies; else the fused kernels, nothing enabled
        if (large_tile_vec(g)) return launch_large_tile<epilogue::identity, true>(g, stream);
        return launch_large_tile(g, stream, fused_epilogue{});
      case matmul_variant::warp_tiled:
      case matmul_variant::tensor_core_tf32:
        return dispatch_epilogue_steps(variant, g, fused_epilogue{}, stream, device);
      default: break;
    }
  }
  // validate_matmul() and resolve() leave no other case; keep the failure loud.
  throw error(errc::unsupported, std::string(matmul_what) + ": variant " + to_string(variant) +
                                     " is not compiled for " + matmul_type_name<T>());
}

}  // namespace

template <class T>
void matmul_impl(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
                 std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc,
                 const matmul_options& options) {
  detail::validate_matmul<T>(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, options);
  if (m == 0 || n == 0) return;
  const int device = detail::current_device(detail::matmul_what);
  detail::require_kernel_image_cached(device, detail::matmul_what);
  const bool fused = detail::has_fused_epilogue(options);  // validated: float only
  if (k == 0) {  // empty product: C = beta * C (zeros, without reading C, when beta == 0), then the epilogue
    if constexpr (std::is_same_v<T, float>) {
      if (fused) {
        detail::launch_scale_c(C, m, n, ldc, beta, options.stream, detail::fused_epilogue_of(options));
        return;
      }
    }
    detail::launch_scale_c(C, m, n, ldc, beta, options.stream);
    return;
  }
  const auto g = detail::make_gemm_args<T>(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  const matmul_variant variant = detail::resolve<T>(options.variant, options.math, device, m, n);
  if constexpr (std::is_same_v<T, float>) {
    if (options.math == math_mode::fp32_emulated) {  // validated: variant best, no custom functor
      const detail::fp32_emulated_route route = detail::route_fp32_emulated(device, k);
      if (route != detail::fp32_emulated_route::exact) {
        return detail::launch_fp32_emulated(g, detail::fused_epilogue_of(options), device, options.stream, route);
      }
      // Shorter sums take the exact steps below (resolve: best is exact unless math is tf32).
    }
    if (fused)
      return detail::dispatch_epilogue_steps(variant, g, detail::fused_epilogue_of(options), options.stream, device);
  }
  detail::dispatch(variant, g, options.stream, device);
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
