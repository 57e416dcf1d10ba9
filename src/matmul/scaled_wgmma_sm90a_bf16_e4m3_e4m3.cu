// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's instances for e4m3 x e4m3 operands with __nv_bfloat16 output
// (scaled_wgmma_sm90a.cuh; one translation unit per operand pair and output type), and the
// FP8 repack alone for tests and benchmarks (wgmma_pack_k_major: the instance the GEMM runs).
#include "scaled_wgmma_sm90a.cuh"

KF_INSTANTIATE_SCALED_WGMMA(__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16)

namespace kf::detail {

#if defined(KERNELFORGE_HAS_SM90A)
bool wgmma_pack_k_major(const __nv_fp8_e4m3* src, std::size_t ld_src, bool source_k_contiguous, __nv_fp8_e4m3* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}
#else
bool wgmma_pack_k_major(const __nv_fp8_e4m3*, std::size_t, bool, __nv_fp8_e4m3*, std::size_t, std::size_t, std::size_t,
                        cudaStream_t) {
  return false;
}
#endif

}  // namespace kf::detail
