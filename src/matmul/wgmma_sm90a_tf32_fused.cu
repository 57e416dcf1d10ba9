// SPDX-License-Identifier: Apache-2.0
// Step 14, the float (TF32) instances of the wgmma GEMM with the fused bias /
// ReLU epilogue, in a translation unit of their own so that they compile in
// parallel with the identity ones (wgmma_sm90a_tf32.cu): compiled for sm_90a
// alone (src/matmul/sources.cmake), or as stubs where the library has no 90.
// Declarations and what they promise: wgmma_sm90a.hpp.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/wgmma/launch.cuh"
#include "split_k_instances.cuh"  // the reductions are compiled for every architecture elsewhere

namespace kf::detail {

namespace {
constexpr const char* what = "kf::matmul (wgmma, TF32)";
}  // namespace

bool wgmma_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                      cudaStream_t stream, const wgmma_overrides& overrides) {
  return wgmma_host::try_launch(args, stream, fused, overrides, what);
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_try_launch(const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&, cudaStream_t,
                      const wgmma_overrides&) {
  return false;
}

}  // namespace kf::detail

#endif
