// SPDX-License-Identifier: Apache-2.0
// Step 16, fp32 emulation on mma.sync (math_mode::fp32_emulated where step
// 15's wgmma does not run), with the fused bias / ReLU epilogue (nothing
// enabled for plain calls), in a translation unit of its own, built for every
// architecture of the library. Declaration and what it promises:
// mma_sync_fp32_emulated.hpp.
#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated.hpp"

#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated_launch.cuh"

namespace kf::detail {

bool mma_sync_fp32_emulated_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                                       int device, cudaStream_t stream) {
  return emulated_mma::try_launch(args, fused, device, stream, "kf::matmul (mma.sync, fp32_emulated)");
}

}  // namespace kf::detail
