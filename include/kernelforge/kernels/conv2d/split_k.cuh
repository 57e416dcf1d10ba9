// SPDX-License-Identifier: Apache-2.0
// conv2d's split-K on the implicit-GEMM steps (03, 04, 05): the slices' partial
// sums go to a workspace from the runtime's pool, without bias or epilogue, and
// the shared reduction (common/split_k_reduce.cuh) sums them into y with
// conv2d_split_k_store, which applies both once. The matmul's counterpart is
// matmul/split_k.cuh; the split itself comes from plan.hpp.
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "../common/split_k_plan.hpp"
#include "../common/split_k_reduce.cuh"
#include "../common/vector_access.cuh"
#include "../runtime/launcher.hpp"
#include "03_implicit_gemm.cuh"  // conv2d_gemm_bk: the k-slice the plan counts in
#include "args.cuh"
#include "kernelforge/epilogue.cuh"
#include "plan.hpp"

namespace kf::detail {

/// Split-K's store for y: y = ep(sum + bias[k], row, k), the bias and the
/// epilogue applied once, to the full sum. The reduction's slabs are laid out
/// like y (rows N*K x columns P*Q), so a slab row is nk = n * K + k and a
/// column pq; the epilogue's row is n * P*Q + pq, its column k. Four sums of a
/// row (one n and k, so one bias value) with one 16-byte store where y is
/// 16-byte aligned (y_vector; P*Q % 4 == 0 whenever the reduction passes four).
template <class Epilogue>
struct conv2d_split_k_store {
  conv2d_args<float> a;
  Epilogue ep;
  bool y_vector = false;

  __device__ void locate(int nk, int pq, std::int64_t& row, std::int64_t& k) const {
    const int n = nk / a.k;
    k = nk - n * a.k;
    row = static_cast<std::int64_t>(n) * a.pq + pq;
  }
  __device__ void operator()(int i, int nk, int pq, float s) const {
    std::int64_t row, k;
    locate(nk, pq, row, k);
    if (a.bias) s += __ldg(a.bias + k);
    a.y[i] = ep(s, row, k);
  }
  __device__ void operator()(int i, int nk, int pq, float4 s) const {
    std::int64_t row, k;
    locate(nk, pq, row, k);
    if (a.bias) {
      const float b = __ldg(a.bias + k);
      s.x += b;
      s.y += b;
      s.z += b;
      s.w += b;
    }
    const float4 out = make_float4(ep(s.x, row, k), ep(s.y, row + 1, k), ep(s.z, row + 2, k), ep(s.w, row + 3, k));
    if (y_vector) {
      *reinterpret_cast<float4*>(a.y + i) = out;
    } else {
      a.y[i] = out.x;
      a.y[i + 1] = out.y;
      a.y[i + 2] = out.z;
      a.y[i + 3] = out.w;
    }
  }
};

/// Sums the split-K slices into a.y, adds a.bias and applies `ep`.
template <class Epilogue>
void launch_conv2d_split_k_reduce(const char* what, int device, const conv2d_args<float>& a, const float* workspace,
                                  int split, Epilogue ep, cudaStream_t stream) {
  using store = conv2d_split_k_store<Epilogue>;
  (void)profile_of<&split_k_reduce<store>>(device, what);  // no_kernel_image before the launch (cached)
  const store st{a, ep, misalignment(a.y) == 0};
  launch_split_k_reduce(device, workspace, static_cast<std::size_t>(a.n) * a.k, static_cast<std::size_t>(a.pq), split,
                        st, stream, what);
}

/// Runs `launch(args, epilogue, vector_store, slices_per_split, split)` split as
/// the plan says -- partial sums with neither bias nor epilogue (identity) into a
/// workspace, then the reduction, which applies both -- or unsplit, with bias and
/// `ep`, when plan.split == 1 or no workspace is available.
template <class Epilogue, class Launch>
void run_conv2d_gemm_plan(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                          Epilogue ep, cudaStream_t stream, Launch launch) {
  if (plan.split > 1) {
    const split_k_plan split{static_cast<int>(plan.split), plan.slices_per_split};
    pooled_workspace workspace(device, split.workspace_bytes(static_cast<std::size_t>(a.m), a.k), stream);
    if (workspace.data<float>() != nullptr) {
      conv2d_args<float> partial = a;
      partial.y = workspace.data<float>();
      partial.bias = nullptr;  // added once, by the reduction
      // Each slice holds M * K floats, a multiple of 4 when P*Q is, so with an
      // aligned base (the pool's allocations are) every slice is aligned too.
      launch(partial, epilogue::identity{}, a.pq % 4 == 0 && misalignment(partial.y) == 0,
             static_cast<int>(plan.slices_per_split), plan.split);
      launch_conv2d_split_k_reduce(what, device, a, workspace.data<float>(), split.split, ep, stream);
      return;
    }
  }
  const int all_slices = static_cast<int>(ceil_div(static_cast<std::size_t>(a.crs), conv2d_gemm_bk));
  launch(a, ep, a.pq % 4 == 0 && misalignment(a.y) == 0, all_slices, std::size_t{1});
}

}  // namespace kf::detail
