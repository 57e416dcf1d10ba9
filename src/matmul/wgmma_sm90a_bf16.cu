// SPDX-License-Identifier: Apache-2.0
// Step 14, the __nv_bfloat16 instances of the wgmma GEMM, in a translation unit
// of their own so that they compile in parallel with the __half ones
// (wgmma_sm90a_f16.cu): compiled for sm_90a alone (src/matmul/sources.cmake),
// or as stubs where the library has no 90. Declarations and what they promise:
// wgmma_sm90a.hpp.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/wgmma/launch.cuh"

namespace kf::detail {

namespace {
constexpr const char* what = "kf::matmul (wgmma, 16-bit)";
}  // namespace

bool wgmma_try_launch(const gemm_args<__nv_bfloat16>& args, cudaStream_t stream, const wgmma_overrides& overrides) {
  return wgmma_host::try_launch(args, stream, epilogue::identity{}, overrides, what);
}

bool wgmma_pack_k_major(const __nv_bfloat16* src, std::size_t ld_src, bool source_k_contiguous, __nv_bfloat16* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_try_launch(const gemm_args<__nv_bfloat16>&, cudaStream_t, const wgmma_overrides&) { return false; }
bool wgmma_pack_k_major(const __nv_bfloat16*, std::size_t, bool, __nv_bfloat16*, std::size_t, std::size_t, std::size_t,
                        cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
