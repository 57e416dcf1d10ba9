// SPDX-License-Identifier: Apache-2.0
// Step 14's 16-bit instances, one translation unit per type (wgmma_sm90a_f16.cu:
// __half, wgmma_sm90a_bf16.cu: __nv_bfloat16), so that they compile in
// parallel: KF_DEFINE_WGMMA_16BIT(T) defines the two functions
// wgmma_sm90a.hpp declares for T -- the launch and the k-major repack --
// compiled for sm_90a alone (src/matmul/sources.cmake), or as stubs that
// return false where the library has no 90.
#pragma once

#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/wgmma/launch.cuh"

#define KF_DEFINE_WGMMA_16BIT(T)                                                                                  \
  namespace kf::detail {                                                                                          \
  bool wgmma_try_launch(const gemm_args<T>& args, cudaStream_t stream, const wgmma_overrides& overrides) {        \
    return wgmma_host::try_launch(args, stream, epilogue::identity{}, overrides, "kf::matmul (wgmma, 16-bit)");   \
  }                                                                                                               \
  bool wgmma_pack_k_major(const T* src, std::size_t ld_src, bool source_k_contiguous, T* dst, std::size_t ld_dst, \
                          std::size_t rows, std::size_t k, cudaStream_t stream) {                                 \
    return wgmma_host::pack_k_major(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream,               \
                                    "kf::detail::wgmma_pack_k_major");                                            \
  }                                                                                                               \
  }  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

#define KF_DEFINE_WGMMA_16BIT(T)                                                                                  \
  namespace kf::detail {                                                                                          \
  bool wgmma_try_launch(const gemm_args<T>&, cudaStream_t, const wgmma_overrides&) { return false; }              \
  bool wgmma_pack_k_major(const T*, std::size_t, bool, T*, std::size_t, std::size_t, std::size_t, cudaStream_t) { \
    return false;                                                                                                 \
  }                                                                                                               \
  }  // namespace kf::detail

#endif
