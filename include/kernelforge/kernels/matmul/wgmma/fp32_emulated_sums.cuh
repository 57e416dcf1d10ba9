// SPDX-License-Identifier: Apache-2.0
// One k-block of the wgmma fp32-emulation kernels (matmul step 15,
// 15_wgmma_fp32_emulated.cuh; conv2d step 9,
// conv2d/09_implicit_gemm_wgmma_fp32_emulated.cuh): a pair of ring stages (the
// k-block's hi and lo parts), their products in the order and the sums of
// ../fp32_emulated_sums.cuh (shared with the mma.sync step 16), and the
// stages handed back; its products and its sum apart, for the skinny step 17
// (17_wgmma_fp32_emulated_skinny.cuh), whose k-block is one stage; and the
// pieces every one of them writes the same way (a k-block's products over its
// 32 of k, its partial registers). Conv2d step 13 runs step 9's k-block too.
#pragma once

#include <cstdint>

#include "../../arch/guards.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "../../arch/wgmma_sm90.cuh"
#include "../fp32_emulated_sums.cuh"

namespace kf::detail::wgmma {

#if KF_ARCH_SM90A
/// k = 8 groups in a k-block (its 32 of k, one 128-byte swizzled row of TF32):
/// its wgmma.m64nNk8 products.
inline constexpr int fp32_emulated_k_block_groups = 4;

/// One of a k-block's three products over its 32 of k, A's and B's rows at
/// descriptors a and b: four wgmma.m64nNk8 (TF32), 32 bytes a k = 8 group
/// along the rows (each descriptor an add to its low word), the first
/// overwriting d where `fresh` -- what every kernel's mma(d, a_part, b_part,
/// fresh) issues once it has the parts' descriptors.
template <int BlockN, int N>
__device__ __forceinline__ void tf32_k_block_product(float (&d)[N], std::uint64_t a, std::uint64_t b, bool fresh) {
#pragma unroll
  for (int group = 0; group < fp32_emulated_k_block_groups; ++group) {
    const std::uint32_t bytes = static_cast<std::uint32_t>(group) * 8 * sizeof(float);
    wgmma_m64nNk8_tf32<BlockN>(d, smem_descriptor_advance(a, bytes), smem_descriptor_advance(b, bytes),
                               fresh && group == 0 ? 0u : 1u);
  }
}

/// A consumer's k-block registers: the tensor cores' partial (Apart: hi x hi)
/// and, Apart, the corrections' own; zeroed once, never read -- each k-block
/// starts fresh.
template <bool Apart, int N>
struct fp32_emulated_partials {
  float partial[N];
  float correction[Apart ? N : 1];
  __device__ __forceinline__ fp32_emulated_partials() {
#pragma unroll
    for (int i = 0; i < N; ++i) partial[i] = 0.0f;
  }
};

/// A k-block's three products, in the order of ../fp32_emulated_sums.cuh
/// (Apart: hi x hi into partial, the corrections into correction), issued and
/// committed, still in flight on return. mma(d, a_part, b_part, fresh) issues
/// one of them over the k-block's 32 of k; hi and lo name the parts as the
/// caller's mma reads them.
template <bool Apart, int N, int C, class Mma>
__device__ __forceinline__ void fp32_emulated_k_block_issue(float (&partial)[N], float (&correction)[C], int hi, int lo,
                                                            Mma&& mma) {
  wgmma_fence();
  if constexpr (Apart) {
    fp32_emulated_products_apart(partial, correction, hi, lo, mma);
  } else {
    fp32_emulated_products(partial, hi, lo, mma);
  }
  wgmma_commit();
}

/// Waits for the products fp32_emulated_k_block_issue committed.
template <bool Apart, int N, int C>
__device__ __forceinline__ void fp32_emulated_k_block_wait(float (&partial)[N], float (&correction)[C]) {
  wgmma_wait<0>();
  fence_operands(partial);
  if constexpr (Apart) fence_operands(correction);
}

/// A completed k-block's partial (Apart: and its corrections) into the sums.
template <bool Apart, int N, int C>
__device__ __forceinline__ void fp32_emulated_k_block_sum(fp32_emulated_sums<N>& sums, const float (&partial)[N],
                                                          const float (&correction)[C]) {
  if constexpr (Apart) {
    sums.add_apart(partial, correction);
  } else {
    sums.add(partial);
  }
}

/// One k-block of a tile, as both kernels run it: the ring's next pair of
/// stages (`at`: the k-block's hi, then its lo), their products (Apart: into
/// partial and correction; issued in this warpgroup's turn of `turns`), the
/// wait for them, both stages handed back
/// (release(stage), by each warp's lane 0), and the partial added to the sums.
template <bool Apart, class Ring, class Position, int N, int C, class Mma, class Release>
__device__ __forceinline__ void fp32_emulated_k_block(const Ring& ring, Position& at, float (&partial)[N],
                                                      float (&correction)[C], fp32_emulated_sums<N>& sums, int lane,
                                                      Mma&& mma, Release&& release, const warpgroup_turns& turns) {
  ring.consumer_wait(at);
  const int hi = at.stage;
  at.advance();
  ring.consumer_wait(at);
  const int lo = at.stage;
  at.advance();
  turns.take();
  fp32_emulated_k_block_issue<Apart>(partial, correction, hi, lo, mma);
  turns.pass();
  fp32_emulated_k_block_wait<Apart>(partial, correction);
  if (lane == 0) {  // their products have completed: hand both stages back
    release(hi);
    release(lo);
  }
  fp32_emulated_k_block_sum<Apart>(sums, partial, correction);
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
