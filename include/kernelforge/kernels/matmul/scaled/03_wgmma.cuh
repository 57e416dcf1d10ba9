// SPDX-License-Identifier: Apache-2.0
// FP8 step 3 -- wgmma: the Hopper (sm_90a) FP8 GEMM, e4m3 / e5m2 operands, fp32
// accumulation promoted every 128 of k, D in bf16, fp16 or float. Compiled for
// sm_90a only; host side scaled/wgmma_launch.cuh, declarations
// scaled/wgmma_sm90a.hpp.
//
// What changes from step 2 (mma_sync: each warp loads its fragments from shared
// memory and issues 16 x 8 x 32 products; one block a tile, no overlap of its
// loads, products and stores beyond cp.async's stages), and why it is faster:
//  * The Hopper GEMM's machinery, reused rather than copied (matmul step 14):
//    TMA into a ring of stages, a producer and two consumer warpgroups, the
//    persistent tile scheduler, clusters of 2 CTAs that multicast B, the staged
//    epilogue. FP8 brings its element (wgmma/element.cuh: wgmma.m64nNk32; a
//    stage's k of 128 is one 128-byte swizzled row).
//  * The promotion: FP8 wgmma keeps only about 14 bits of its sums, so each
//    k-step's products start a fresh partial (scale-d = 0) and, once complete,
//    are added into an fp32 total on the CUDA cores (times the block scales,
//    blockwise; promotion.cuh) -- every 128 of k, as DeepSeek-V3 and CUTLASS.
//  * Keeping the tensor cores fed through the promotions: the two consumers
//    issue their products in turn (warpgroup_turns), so one promotes while the
//    other's products run; and tiles of 128 x 128 in clusters of 2 (the
//    two-partials tile) and of 128 x 64 keep two partial sets (the total and
//    the sets: 3 x 64 registers at 128): k-step j + 1's products are issued
//    before j's are promoted. The loop is unrolled by 2 so each set's
//    registers are static, and every path enters and leaves it with one set
//    in flight (else ptxas serializes the products: C7514). Blockwise, each
//    k-step's block scales are read while its products run, beside its set.
//    The 128 x 192 tile, for k < 2048, keeps one set (a scale per 64-column
//    chunk and row, args.cuh); narrow tiles where the wide ones are too few
//    (wgmma/policy.hpp: choose_scaled_block_n).
//  * Scales: blockwise ones multiply each partial; per-tensor and rowwise ones
//    the finished total once, before alpha / beta, the bias, the ReLU and the
//    amax (scaled/epilogue.cuh: only what the call asked for runs, the functor
//    picked once per call; the amax from the values as stored).
//  * 16-bit D of narrow tiles is stored during the next tile's k-steps
//    (staged_tile_16); the wide tiles' after their k-steps, each chunk through
//    a C buffer of its own.
//  * The persistent grid's last round (common/last_round.hpp): where it would
//    leave most clusters idle, its tiles run as up to 4 parts of their k-steps
//    on the clusters that would wait; the part that ends last adds the others'
//    fp32 sums and stores the tile (common/last_round_sum.cuh, as conv2d step 9).
// Measured against cuBLASLt, and what each choice gained or lost:
// benchmarks/tuning/matmul.md#fp8 and the documentation site's Compare GPUs page.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/cluster_sm90.cuh"
#include "../../arch/guards.cuh"
#include "../../arch/pipeline_sm90.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "../../arch/wgmma_sm90.cuh"
#include "../../common/kernel.cuh"
#include "../../common/last_round.hpp"
#include "../../common/last_round_sum.cuh"
#include "../wgmma/config.cuh"
#include "../wgmma/cta.cuh"
#include "../wgmma/element.cuh"
#include "../wgmma/epilogue.cuh"
#include "../wgmma/mainloop.cuh"
#include "../wgmma/policy.hpp"  // scaled_two_partials_block_n
#include "../wgmma/producer.cuh"
#include "../wgmma/scheduler.cuh"
#include "args.cuh"
#include "epilogue.cuh"
#include "kernelforge/epilogue.cuh"
#include "promotion.cuh"

namespace kf::detail {

namespace wgmma {

/// The FP8 kernel's tile: at 128 x 192 the tile is stored after its k-steps, in
/// three chunks of 64 16-bit columns, each through a C buffer of its own (no
/// chunk waits for an earlier store to read its buffer; 4 stages still fit).
/// At 128 x 128 and 128 x 64 two buffers a consumer, beside 6 and 8 stages.
template <int BlockN>
using scaled_tile = tile_config<BlockN, false, 1, BlockN == 192 ? 3 : c_buffers>;

}  // namespace wgmma

/// D = act(alpha * scales * (A B) + beta * D + bias), tiles of 128 x BlockN.
/// map_a: A as m x k, k-contiguous (boxes of 128 rows x 128 bytes of k); map_b:
/// op(B)^T as n x k, k-contiguous (boxes of BlockN / 2 rows); map_c: D in boxes
/// of 64 rows x 128 bytes, for the staged epilogue (p.staged). amax: the
/// caller's float as bits, or nullptr.
template <class TA, class TB, class TD, int Cluster, int BlockN>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    scaled_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ CUtensorMap map_c, const wgmma::params<TD> p,
                        const fp8_scale_view scales, const epilogue::bias_relu_threshold<TD> fused,
                        unsigned* const amax) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  using tile = scaled_tile<BlockN>;
  using loop = mainloop<fp8_operands<TA, TB>, tile, Cluster, false, false, false, false>;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs (sharing B)");
  static_assert(BlockN == 64 || BlockN == 128 || BlockN == 192,
                "the partial(s) and the total of a 64 x BlockN tile must fit a thread's registers");
  // Two partial sets, the next k-step's products issued before the last ones are promoted: at 128 x 128 in
  // clusters of 2 (the two-partials tile, which the policy puts in the wide tile's place for deep products:
  // policy.hpp, scaled_two_partials_block_n; 3 x 64 registers), and at 128 x 64 (96 registers; its tiles are
  // few and short -- 1024^3 -- so each k-step's drain is most of the k-loop). Blockwise scales take the same
  // loop, compiled apart (the scales a run-time choice, the loop's body a compile-time one).
  constexpr bool two_partials_tile = BlockN == scaled_two_partials_block_n && Cluster == max_cluster;
  constexpr bool may_two_partials = two_partials_tile || BlockN == 64;
  extern __shared__ unsigned char wgmma_smem[];
  const cta_context<tile, Cluster> cta(smem_address(wgmma_smem));
  const auto& smem = cta.smem;
  const int warpgroup = cta.warpgroup, tid_in_warpgroup = cta.tid_in_warpgroup;
  const std::uint32_t rank = cta.rank;
  // Every consumer warp of every CTA whose products read a stage (B is multicast) releases it.
  cta.init_barriers(&map_a, &map_b, &map_c, p.staged, consumer_warpgroups * warps_per_warpgroup * loop::stage_readers);
  barriers_ready_arrive<Cluster>();
  // LastRound: the last round's cluster tiles may run as parts on the clusters that would wait.
  const tile_scheduler<TD, Cluster, false, false, true> schedule{p, (p.k + loop::stage_k - 1) / loop::stage_k,
                                                                 static_cast<int>(rank)};
  barriers_ready_wait<Cluster>();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) produce<loop, tile>(schedule, cta.ring, smem, &map_a, &map_b, rank);
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp_in_warpgroup = tid_in_warpgroup / 32;
    const auto operands = loop::consumer_operands(smem.a, smem.b, consumer, warp_in_warpgroup, lane);
    // The ring's barriers at an address computed once (smem.cuh: pinned).
    const stage_ring<tile::stages> ring(pinned(cta.ring.full_bar));
    const amax_epilogue<TD> fn{fused};
    ring_position<tile::stages> at;
    int c_buffer = 0;  // the staged epilogue's next C buffer
    constexpr int c_buffers_here = tile::c_buffers_per_consumer;
    const std::uint32_t c_smem = smem.c + consumer * c_buffers_here * c_buffer_bytes;
    const int c_barrier = 1 + consumer;
    const bool blockwise = scales.mode == fp8_scaling::blockwise;
    // 16-bit D in staged tiles goes out during the next tile's k-steps (staged_tile_16, as in step 14).
    // (Not at 128 x 192: the packed tile's 48 registers beside the partial and the total's 192 would spill; nor
    // in the two-partials tile, beside its three sets: 100 bytes of spill in the loop, 2026-12-06.)
    constexpr bool overlapped_stores = sizeof(TD) == 2 && BlockN <= 128 && !two_partials_tile;
    staged_tile_16<TD, tile::accumulators> pending;
    // The partial set(s): the odd k-steps' own set only in the two-partials tile and at 128 x 64.
    float total[tile::accumulators], partial[tile::accumulators],
        partial_odd[may_two_partials ? tile::accumulators : 1];
#pragma unroll
    for (int i = 0; i < tile::accumulators; ++i) partial[i] = 0.0f;  // never read: each k-step's products start fresh
#pragma unroll
    for (int i = 0; i < (may_two_partials ? tile::accumulators : 1); ++i) partial_odd[i] = 0.0f;
    // The consumers issue their k-steps' products in turn (0, 1, 0, ...; warpgroup_turns, as matmul step 15
    // and conv2d step 9): one's products then complete a k-step's time before the other's, so each promotes
    // while the other's products run. Left to drift, the two could settle in step, both promoting while the
    // tensor cores wait (ncu, 8192^3: the tensor pipe busy 89% of active cycles, cuBLASLt's 96%).
    const warpgroup_turns turns(turn_barrier, consumer);
    turns.start();
    bool landed = false;  // the stage at `at` has landed (tested while the last products ran)
    const bool asked = amax != nullptr || fused.bias != nullptr || fused.relu;  // the call's epilogue does anything
    stored_amax<TD> staged_amax;  // the amax of staged tiles (amax_epilogue's: of tiles stored from registers)
    // items() is read from the parameters at each turn: kept in a register across the tile, it spilled beside
    // three partial sets (128 x 144, 2026-12-05).
    for (int item = schedule.first(); item < schedule.items(); item += schedule.stride()) {
      const work_item w = schedule(item);
      const int row_base = w.tile_m * block_m + consumer * wgmma_m, col_base = w.tile_n * BlockN;
      const fragment_origin origin{row_base + warp_in_warpgroup * 16 + lane / 4,
                                   static_cast<long long>(col_base) + 2 * (lane % 4)};
#pragma unroll
      for (int i = 0; i < tile::accumulators; ++i) total[i] = 0.0f;
      // The k-loop: two partial sets (two_sets_loop) or one (one_set_loop).
      const auto two_sets_loop = [&](auto blockwise_scales) {
        if constexpr (may_two_partials) {  // (partial_odd is a set only there)
          // k-step j's products go into set j % 2 (partial, partial_odd: the loop is unrolled by 2, so each set's
          // registers are named at compile time). Step j + 1's are issued before step j's are promoted: wait<1>
          // returns once step j's have completed, with j + 1's still running, so the tensor cores have work
          // queued through every promotion and release. The promotion order per accumulator is the one-set path's
          // (total += s_j x partial_j in k order; s_j is 1 but for blockwise scales, read while step j's products
          // run, one scale pair a 64-column chunk and row, into the set's own s_even / s_odd).
          // Every path holds step kt's products in flight in `partial` where the loop is entered, re-entered and
          // left (ptxas serializes the products where a path may leave with a set in flight that it cannot place).
          constexpr bool scaled_blocks = decltype(blockwise_scales)::value;
          constexpr int chunks = tile_block_scales<BlockN>::chunks;
          const tile_block_scales<BlockN> block_scales(scales, origin, col_base, p.m, p.n);  // read where blockwise
          float s_even[chunks][2], s_odd[chunks][2];
          const auto issue = [&](float(&set)[tile::accumulators], float(&s)[chunks][2], int kt) {
            ring.consumer_wait(at);
            const int stage = at.stage;
            turns.take();
            loop::template mma_stage<true>(set, operands, smem.a, stage);
            turns.pass();
            if constexpr (overlapped_stores) {  // while the products run: a chunk of the previous tile's stores
              if (p.staged) pending.store_next(p, &map_c, c_smem, c_barrier, c_buffer);
            }
            if constexpr (scaled_blocks) block_scales.at(kt, s);
            at.advance();
            return stage;
          };
          const auto retire = [&](float(&set)[tile::accumulators], const float(&s)[chunks][2], int stage) {
            fence_operands(set);
            if (lane == 0) loop::release(ring, stage);  // its products have completed: hand it back
            if constexpr (scaled_blocks) {
              promote(total, set, s);
            } else {
              promote(total, set);
            }
          };
          int kt = w.kt_begin;  // < w.kt_end: k > 0, and a last-round part keeps at least one k-step
          int stage_even = issue(partial, s_even, kt);
          for (; kt + 2 < w.kt_end; kt += 2) {
            const int stage_odd = issue(partial_odd, s_odd, kt + 1);
            wgmma_wait<1>();  // step kt's products have completed, kt + 1's run on
            retire(partial, s_even, stage_even);
            stage_even = issue(partial, s_even, kt + 2);
            wgmma_wait<1>();
            retire(partial_odd, s_odd, stage_odd);
          }
          if (kt + 1 < w.kt_end) {  // two steps left
            const int stage_odd = issue(partial_odd, s_odd, kt + 1);
            wgmma_wait<1>();
            retire(partial, s_even, stage_even);
            wgmma_wait<0>();
            retire(partial_odd, s_odd, stage_odd);
          } else {
            wgmma_wait<0>();
            retire(partial, s_even, stage_even);
          }
        }
      };
      const auto one_set_loop = [&] {
        if constexpr (!may_two_partials) {  // (the two-partials instances run two_sets_loop alone)
          constexpr int chunks = tile_block_scales<BlockN>::chunks;
          const tile_block_scales<BlockN> block_scales(scales, origin, col_base, p.m, p.n);  // read where blockwise
          for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
            if (!landed) ring.consumer_wait(at);
            const int stage = at.stage;
            turns.take();
            loop::template mma_stage<true>(partial, operands, smem.a, stage);
            turns.pass();
            // While the products run: a chunk of the previous tile's stores, and this k-step's block scales.
            if constexpr (overlapped_stores) {
              if (p.staged) pending.store_next(p, &map_c, c_smem, c_barrier, c_buffer);
            }
            float s[chunks][2];  // the promotion's scale of each 64-column chunk and row: 1, or blockwise sA x sB
#pragma unroll
            for (int j = 0; j < chunks; ++j) s[j][0] = s[j][1] = 1.0f;
            if (blockwise) block_scales.at(kt, s);
            at.advance();
            // Per-tensor and rowwise: ask now whether the next stage has landed, so that after the promotion its
            // products issue at once (blockwise: measured 1% slower, its scale loads already cover the wait).
            landed = !blockwise && ring.consumer_ready(at);
            wgmma_wait<0>();
            fence_operands(partial);
            if (lane == 0) loop::release(ring, stage);  // its products have completed: hand it back
            promote(total, partial, s);
          }
        }
      };
      if constexpr (may_two_partials) {
        if (blockwise) {
          two_sets_loop(std::true_type{});
        } else {
          two_sets_loop(std::false_type{});
        }
      } else {
        one_set_loop();
      }
      // A part of a split tile (the last round, common/last_round.hpp): the part that arrives last stores the
      // tile's sums (every part's, in part order), the others nothing. (Decoded again from the item, not kept
      // from the scheduler's: two more registers across the k-loop.)
      if (p.split_parts > 1 && item >= p.split_from) {
        const last_round_part at = last_round_part_of(item, p.split_from, p.split_parts);
        if (!sum_split_tile(p, at.split, at.part, static_cast<int>(rank) * consumer_warpgroups + consumer,
                            Cluster * consumer_warpgroups, split_barrier + consumer, tid_in_warpgroup, total)) {
          continue;
        }
      }
      apply_outer_scales(total, scales, origin, p.m, p.n);
      const auto store_staged = [&](const auto& f) {
        if constexpr (overlapped_stores) {
          pending.flush(p, &map_c, c_smem, c_barrier, c_buffer);  // what a short tile left
          pending.take(total, p, row_base, col_base, f);
        } else {
          store_tile_staged<TD, c_buffers_here>(total, p, &map_c, c_smem, row_base, col_base, c_barrier, c_buffer, f);
        }
      };
      if (!p.staged) {
        // From registers (beta != 0, or D's rows not 16-byte aligned): the stored value includes beta * D, so
        // the amax is taken per value, as it is stored (amax_epilogue).
        if (asked) {
          store_tile<TD>(total, p, origin.row0, origin.col0, fn);
        } else {
          store_tile<TD>(total, p, origin.row0, origin.col0, epilogue::identity{});
        }
      } else if (overlapped_stores && !asked) {
        // 16-bit tiles stored during the next k-steps, nothing asked: the run-time functor, as measured (the
        // identity ran 3-9% slower there: benchmarks/tuning/matmul.md#fp8, fourth look).
        store_staged(fn);
      } else {
        // Staged: only the functor the call asked for (with_value_functor), and the amax from the tile as
        // stored, after it (stored_amax: 16-bit D in packed pairs).
        with_value_functor(fused, store_staged);
        if (amax != nullptr && row_base < p.m) {
          const bool whole = row_base + wgmma_m <= p.m && col_base + BlockN <= p.n;  // uniform
          constexpr int n_acc = tile::accumulators;
          if constexpr (overlapped_stores) {
            staged_amax.template add<n_acc>([&](int i) { return pending.packed[i / 2]; }, origin, p.m, p.n, whole);
          } else if constexpr (sizeof(TD) == 2) {
            staged_amax.template add<n_acc>([&](int i) { return from_compute_pair<TD>(total[i], total[i + 1]); },
                                            origin, p.m, p.n, whole);
          } else {
            staged_amax.template add<n_acc>([&](int i) { return __float_as_uint(total[i]); }, origin, p.m, p.n, whole);
          }
        }
      }
    }
    turns.finish();
    if constexpr (overlapped_stores) {
      if (p.staged) pending.flush(p, &map_c, c_smem, c_barrier, c_buffer);  // the last tile's
    }
    // The last C buffers are read before the CTA's shared memory goes.
    if (p.staged && tid_in_warpgroup == 0) tma_store_wait_read<0>();
    if (amax != nullptr) {
      unsigned bits = max(fn.amax_bits, staged_amax.bits());
      for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xFFFFFFFFu, bits, offset));
      if (lane == 0 && bits != 0) atomicMax(amax, bits);
    }
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

}  // namespace kf::detail
