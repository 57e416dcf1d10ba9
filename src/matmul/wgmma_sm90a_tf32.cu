// SPDX-License-Identifier: Apache-2.0
// Step 14, the float (TF32) instances of the wgmma GEMM with the identity
// epilogue (the fused bias / ReLU ones: wgmma_sm90a_tf32_fused.cu, which
// compiles in parallel): compiled for sm_90a alone (src/matmul/sources.cmake),
// or as stubs where the library has no 90.
// Declarations and what they promise: wgmma_sm90a.hpp.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/wgmma/launch.cuh"
#include "split_k_instances.cuh"  // the reductions are compiled for every architecture elsewhere
#include "kernelforge/kernels/runtime/device_facts.hpp"

namespace kf::detail {

bool wgmma_available(int device) { return sm90a_code_runs_on(device); }

namespace {
constexpr const char* what = "kf::matmul (wgmma, TF32)";
}  // namespace

bool wgmma_try_launch(const gemm_args<float>& args, cudaStream_t stream, const wgmma_overrides& overrides) {
  return wgmma_host::try_launch(args, stream, epilogue::identity{}, overrides, what);
}

bool wgmma_pack_k_major(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                        std::size_t rows, std::size_t k, cudaStream_t stream) {
  return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,
                                  "kf::detail::wgmma_pack_k_major");
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_available(int) { return false; }
bool wgmma_try_launch(const gemm_args<float>&, cudaStream_t, const wgmma_overrides&) { return false; }
bool wgmma_pack_k_major(const float*, std::size_t, bool, float*, std::size_t, std::size_t, std::size_t, cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
