// SPDX-License-Identifier: Apache-2.0
// Host side of step 9 (09_tensor_core_tf32.cuh): pipeline depth from the
// device's shared-memory opt-in, the 16-byte or 4-byte copy path, and one
// instantiation per transpose combination.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../runtime/launcher.hpp"
#include "09_tensor_core_tf32.cuh"

namespace kf::detail {

namespace tf32_mma {

/// Pipeline depth for `device`: 3 stages where the per-block shared-memory opt-in
/// allows it (sm_80, sm_90, sm_100), else 2 (sm_86, sm_89, sm_120: 99 KB).
/// The opt-in limit comes from the per-device cache (no query here).
inline int stages_for(int device) {
  const std::size_t optin = limits_for(device).max_smem_per_block_optin;
  return optin >= static_cast<std::size_t>(max_stages) * max_stage_bytes ? max_stages : min_stages;
}

template <class Warps, bool TransA, bool TransB, bool Vec16, class Epilogue>
void launch(const gemm_args<float>& args, cudaStream_t stream, const char* what, const Epilogue& ep) {
  constexpr auto kernel = &tensor_core_tf32_kernel<Warps, TransA, TransB, Vec16, Epilogue>;
  const int device = current_device(what);
  profile_of<kernel>(device, what);  // errc::no_kernel_image, naming `what`, where this image is missing
  params p;
  copy_gemm_args(p, args);
  p.tiles_m = static_cast<long long>(ceil_div(static_cast<std::size_t>(p.m), block_m));
  p.tiles_n = static_cast<long long>(ceil_div(static_cast<std::size_t>(p.n), block_n));
  p.stages = stages_for(device);
  const long long blocks = p.tiles_m * p.tiles_n;
  if (blocks > static_cast<long long>(limits_for(device).max_grid_x)) {
    throw error(errc::unsupported, std::string(what) + ": " + std::to_string(args.m) + " x " + std::to_string(args.n) +
                                       " needs " + std::to_string(blocks) +
                                       " tiles of 128 x 128, more than the device's grid limit");
  }
  const int smem = p.stages * stage_bytes<TransA, TransB>();
  allow_dynamic_smem<kernel>(device, smem, what);
  kernel<<<static_cast<unsigned>(blocks), Warps::threads, smem, stream>>>(p, ep);
  check_launch(what);
}

template <class Warps, bool TransA, bool TransB, class Epilogue>
void launch_transposes(const gemm_args<float>& args, cudaStream_t stream, const char* what, const Epilogue& ep) {
  // 16-byte copies need every 16-byte chunk of a row aligned: base and leading dimension.
  auto aligned = [](const float* ptr, std::size_t ld) { return rows_aligned(ptr, ld, sizeof(float), vector_bytes); };
  if (aligned(args.A, args.lda) && aligned(args.B, args.ldb)) {
    launch<Warps, TransA, TransB, true>(args, stream, what, ep);
  } else {
    launch<Warps, TransA, TransB, false>(args, stream, what, ep);
  }
}

}  // namespace tf32_mma

/// launch_tensor_core_tf32 with a chosen warp layout (tests and benchmarks).
template <class Warps, class Epilogue = epilogue::identity>
void launch_tensor_core_tf32_with(const gemm_args<float>& args, cudaStream_t stream, const Epilogue& ep = {},
                                  const char* what = "kf::matmul (tensor_core_tf32)") {
  if (args.trans_a) {
    if (args.trans_b)
      tf32_mma::launch_transposes<Warps, true, true>(args, stream, what, ep);
    else
      tf32_mma::launch_transposes<Warps, true, false>(args, stream, what, ep);
  } else {
    if (args.trans_b)
      tf32_mma::launch_transposes<Warps, false, true>(args, stream, what, ep);
    else
      tf32_mma::launch_transposes<Warps, false, false>(args, stream, what, ep);
  }
}

/// Enqueues C = ep(alpha * op(A) * op(B) + beta * C) (see gemm_args.cuh) with the
/// mma.sync TF32 kernel. Requires a device of compute capability 8.0 or newer
/// (the caller checks); any shape, transposes, leading dimensions, alignment.
template <class Epilogue = epilogue::identity>
void launch_tensor_core_tf32(const gemm_args<float>& args, cudaStream_t stream, const Epilogue& ep = {},
                             const char* what = "kf::matmul (tensor_core_tf32)") {
  launch_tensor_core_tf32_with<tf32_mma::default_warps>(args, stream, ep, what);
}

}  // namespace kf::detail
