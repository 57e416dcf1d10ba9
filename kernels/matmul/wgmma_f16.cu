// SPDX-License-Identifier: Apache-2.0
// Step 12, host side -- the __half and __nv_bfloat16 instantiations of the
// wgmma launcher (wgmma_launch.cuh: TMA descriptors, with B read N-major in
// place where it is n-contiguous; repacks; split-k; the persistent cluster
// launch) for the kernel of 10_wgmma_tf32.cuh with 12_wgmma_f16.cuh's element
// traits. Host interface and the conditions it checks: wgmma_f16_launch.cuh.
// Built like wgmma_tf32.cu (sm_90a only, see tensor_core_sources.cmake), and
// like it never instantiates the mma.sync kernel: the fallback lives in the
// inline launch_wgmma_f16.
#define KF_WGMMA_F16_DECLARATIONS_ONLY
#include "matmul/wgmma_f16_launch.cuh"

#if defined(KERNELFORGE_WGMMA_TF32)

#include "matmul/12_wgmma_f16.cuh"
#define KF_WGMMA_TF32_DECLARATIONS_ONLY  // wgmma_tf32_available() only: no mma.sync TF32 kernel here
#include "matmul/wgmma_launch.cuh"

namespace kf::detail {
namespace {
constexpr const char* what = "kf::matmul (wgmma_f16)";
}  // namespace

bool wgmma_f16_try_launch(const gemm_args<__half>& args, cudaStream_t stream, int cluster_size, int block_n,
                          wgmma_multicast multicast) {
  return wgmma_try_launch(args, stream, cluster_size, epilogue::identity{}, what, wgmma_tf32_b_mode::by_shape, block_n,
                          multicast);
}

bool wgmma_f16_try_launch(const gemm_args<__nv_bfloat16>& args, cudaStream_t stream, int cluster_size, int block_n,
                          wgmma_multicast multicast) {
  return wgmma_try_launch(args, stream, cluster_size, epilogue::identity{}, what, wgmma_tf32_b_mode::by_shape, block_n,
                          multicast);
}

bool wgmma_pack_k_major(const __half* src, std::size_t ld_src, bool source_k_contiguous, __half* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}

bool wgmma_pack_k_major(const __nv_bfloat16* src, std::size_t ld_src, bool source_k_contiguous, __nv_bfloat16* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}

}  // namespace kf::detail

#else  // !KERNELFORGE_WGMMA_TF32: the library's list has no 90; nothing to run.

namespace kf::detail {

bool wgmma_f16_try_launch(const gemm_args<__half>&, cudaStream_t, int, int, wgmma_multicast) { return false; }

bool wgmma_f16_try_launch(const gemm_args<__nv_bfloat16>&, cudaStream_t, int, int, wgmma_multicast) { return false; }

bool wgmma_pack_k_major(const __half*, std::size_t, bool, __half*, std::size_t, std::size_t, std::size_t,
                        cudaStream_t) {
  return false;
}

bool wgmma_pack_k_major(const __nv_bfloat16*, std::size_t, bool, __nv_bfloat16*, std::size_t, std::size_t, std::size_t,
                        cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
