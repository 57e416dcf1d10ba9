// SPDX-License-Identifier: Apache-2.0
// Step 10, host side -- the float instantiations of the wgmma launcher
// (wgmma_launch.cuh: TMA descriptors, repacks, split-k, the persistent cluster
// launch) for the kernel of 10_wgmma_tf32.cuh. Host interface and the
// conditions it checks: wgmma_tf32_launch.cuh.

// This translation unit must never instantiate the mma.sync kernel of
// 09_tensor_core_tf32.cuh: built for sm_90a only, its copy of that (weak, shared)
// kernel could be the one the program registers, and other GPUs would then find
// no image for it. So it takes the declarations only; the fallback to mma.sync
// lives in the inline launch_wgmma_tf32, compiled in the launcher's translation unit.
#define KF_WGMMA_TF32_DECLARATIONS_ONLY
#include "matmul/wgmma_tf32_launch.cuh"

#if defined(KERNELFORGE_WGMMA_TF32)

#include "matmul/wgmma_launch.cuh"

namespace kf::detail {

bool wgmma_tf32_available(int device) { return sm90a_code_runs_on(device); }

namespace {
constexpr const char* what = "kf::matmul (wgmma_tf32)";
}  // namespace

bool wgmma_tf32_try_launch(const gemm_args<float>& args, cudaStream_t stream, int cluster_size,
                           wgmma_tf32_b_mode b_mode, int block_n, wgmma_multicast multicast) {
  return wgmma_try_launch(args, stream, cluster_size, epilogue::identity{}, what, b_mode, block_n, multicast);
}

bool wgmma_tf32_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                           cudaStream_t stream, int cluster_size, wgmma_tf32_b_mode b_mode, int block_n,
                           wgmma_multicast multicast) {
  return wgmma_try_launch(args, stream, cluster_size, fused, what, b_mode, block_n, multicast);
}

bool wgmma_pack_k_major(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                        std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}

}  // namespace kf::detail

#else  // !KERNELFORGE_WGMMA_TF32: the library's list has no 90; nothing to run.

namespace kf::detail {

bool wgmma_tf32_available(int) { return false; }

bool wgmma_tf32_try_launch(const gemm_args<float>&, cudaStream_t, int, wgmma_tf32_b_mode, int, wgmma_multicast) {
  return false;
}

bool wgmma_tf32_try_launch(const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&, cudaStream_t, int,
                           wgmma_tf32_b_mode, int, wgmma_multicast) {
  return false;
}

bool wgmma_pack_k_major(const float*, std::size_t, bool, float*, std::size_t, std::size_t, std::size_t, cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
