// SPDX-License-Identifier: Apache-2.0
// Step 15, fp32 emulation on the TF32 tensor cores (math_mode::fp32_emulated),
// in a translation unit of its own: compiled for sm_90a alone
// (src/matmul/sources.cmake), or as a stub where the library has no 90.
// Declaration and what it promises: wgmma_sm90a.hpp. Skinny shapes go to step
// 17 (wgmma_sm90a_fp32_emulated_skinny.cu) where it runs.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/fp32_emulated_launch.cuh"
#include "split_k_instances.cuh"  // the reduction is compiled for every architecture elsewhere

namespace kf::detail {

bool wgmma_fp32_emulated_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                                    int device, cudaStream_t stream, fp32_emulated_wgmma_kernel kernel) {
  // Skinny shapes (plan.hpp) may run step 17 (tuning.hpp: best_uses_fp32_emulated_skinny), the rest step 15.
  const bool forced_skinny =
      kernel == fp32_emulated_wgmma_kernel::skinny || kernel == fp32_emulated_wgmma_kernel::skinny_serial;
  const fp32_emulated_large large = kernel == fp32_emulated_wgmma_kernel::step_15 ? fp32_emulated_large::none
                                    : forced_skinny ? forced_fp32_emulated_large(args.m, args.n)
                                    : best_uses_fp32_emulated_skinny
                                        ? choose_fp32_emulated_large(args.m, args.n, args.k)
                                        : fp32_emulated_large::none;
  const fp32_emulated_skinny_schedule schedule = kernel == fp32_emulated_wgmma_kernel::skinny_serial
                                                     ? fp32_emulated_skinny_schedule::serial
                                                     : fp32_emulated_skinny_schedule::split_ahead;
  if (large != fp32_emulated_large::none &&
      wgmma_fp32_emulated_skinny_try_launch(args, fused, large, device, stream, schedule)) {
    return true;
  }
  if (forced_skinny) return false;  // forced, and it cannot run here
  return fp32_emulated_host::try_launch(args, fused, device, stream, "kf::matmul (wgmma, fp32_emulated)");
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_fp32_emulated_try_launch(const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&, int,
                                    cudaStream_t, fp32_emulated_wgmma_kernel) {
  return false;
}

}  // namespace kf::detail

#endif
