// SPDX-License-Identifier: Apache-2.0
// Step 17, fp32 emulation for skinny products (math_mode::fp32_emulated, one
// side of C small: 17_wgmma_fp32_emulated_skinny.cuh), in a translation unit of
// its own so that it compiles beside step 15's: compiled for sm_90a alone
// (src/matmul/sources.cmake), or as a stub where the library has no 90.
// Declaration and what it promises: wgmma_sm90a.hpp; step 15's entry point
// (wgmma_sm90a_fp32_emulated.cu) calls it for the shapes plan.hpp names.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/fp32_emulated_skinny_launch.cuh"
#include "split_k_instances.cuh"  // the reduction is compiled for every architecture elsewhere

namespace kf::detail {

bool wgmma_fp32_emulated_skinny_try_launch(const gemm_args<float>& args,
                                           const epilogue::bias_relu_threshold<float>& fused, fp32_emulated_large large,
                                           int device, cudaStream_t stream, fp32_emulated_skinny_schedule schedule) {
  return fp32_emulated_skinny_host::try_launch(args, fused, large, device, stream,
                                               "kf::matmul (wgmma, fp32_emulated, skinny)", schedule);
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_fp32_emulated_skinny_try_launch(const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&,
                                           fp32_emulated_large, int, cudaStream_t, fp32_emulated_skinny_schedule) {
  return false;
}

}  // namespace kf::detail

#endif
