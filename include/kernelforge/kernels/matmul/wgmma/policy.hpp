// SPDX-License-Identifier: Apache-2.0
// What the Hopper GEMM (14_wgmma.cuh) runs for a product: where B comes from
// (read in place, the swapped product, or repacked), the block tile's width,
// what a cluster of 2 CTAs does (share B, share A, or split k of one tile),
// and the shortest split-k slice. Pure functions of the shape and the device's
// resident CTAs, tested on the CPU (tests/matmul/matmul_cpu_test.cpp); the
// measurements behind each constant: benchmarks/tuning/matmul.md, one section per function below.
#pragma once

#include <cstddef>

#include "../../common/grid.hpp"
#include "../plan.hpp"  // plan_matmul_split_k

namespace kf::detail {

/// The shortest k-slice the wgmma kernels split into : a slice
/// must outlast the reduction of its fp32 partial tile. H200, one run
/// (benchmarks/tuning/matmul.md#wgmma_split_k_min_slice): TF32 at 1024^3 gained from slices of 256 (0.47 ->
/// 0.52 of cuBLAS), fp16 lost (0.42 -> 0.38: the tensor cores run the slice in
/// half the time), while 128 x 8192 x 8192 gained in both (slices of 2048).
/// 16-bit types keep 1024, the shortest slice measured to pay.
constexpr std::size_t wgmma_split_k_min_slice(std::size_t element_bytes) { return element_bytes >= 4 ? 256 : 1024; }

// ---- how the wgmma kernel reads B ---------------------------------------------------
/// Where the wgmma kernel's B comes from (TMA needs 16-byte aligned rows):
///  * k_major: op(B)^T k-contiguous (trans_b), read in place;
///  * n_major: n-contiguous (B not transposed), read in place with wgmma's
///    transpose bit (16-bit types);
///  * swapped: n-contiguous TF32 B (TF32 wgmma has no transpose bit), read in
///    place by the swapped product C^T = op(B)^T op(A)^T, whose A operand
///    (op(B)^T, M-major) the consumers load into registers (14_wgmma.cuh:
///    SwapAB);
///  * repacked: a k-contiguous copy written to a workspace first (one read and
///    one write of B in HBM: at 128 x 8192 x 8192 TF32 ~120 us, more than
///    cuBLAS's whole product).
enum class wgmma_b_source { k_major, n_major, swapped, repacked };

/// How wgmma_try_launch reads an n-contiguous TF32 B with 16-byte aligned
/// rows: by shape (what the library runs: the swapped product), or forced to
/// the repack (tests cover both; bench_matmul's row tf32/wgmma_repack_b
/// measures it at every shape). H200, one bench_matmul run
/// (benchmarks/tuning/matmul.md#choose_wgmma_b_source), ours / cuBLAS TF32, swapped vs repacked: 1024^3
/// 1.02 vs 0.78, 4096^3 0.97 vs 0.83, 8192^3 0.96 vs 0.89, 128x8192x8192 0.97 vs
/// 0.39. (Transposing B in shared memory instead, the path before the swapped
/// product: 0.60 at 4096^3 and 8192^3, its shared-memory traffic -- a read and a
/// write of each B stage beside the products' reads -- pacing the main loop.)
enum class wgmma_tf32_b_mode { by_shape, repack };

/// The source of B for an element of `element_bytes` (4: TF32, 2: f16 / bf16),
/// op(B) transposed or not, and B's rows 16-byte aligned (TMA) or not, in
/// `tf32_mode` (TF32 only).
KF_TUNING_FN wgmma_b_source choose_wgmma_b_source(std::size_t element_bytes, bool trans_b, bool b_rows_aligned,
                                                  wgmma_tf32_b_mode tf32_mode) {
  if (!b_rows_aligned) return wgmma_b_source::repacked;
  if (trans_b) return wgmma_b_source::k_major;
  if (element_bytes == 2) return wgmma_b_source::n_major;
  return tf32_mode == wgmma_tf32_b_mode::repack ? wgmma_b_source::repacked : wgmma_b_source::swapped;
}

// ---- wgmma block-tile width ------------------------------------------------------
/// The widths the wgmma kernel is built for (14_wgmma.cuh: tile_config),
/// widest first; the block tile is always 128 rows.
constexpr int wgmma_block_n_choices[] = {256, 128, 64};
constexpr std::size_t wgmma_block_m = 128;
/// A width fills the GPU when its tiles number at least this fraction of the
/// CTAs resident at once (3/4 of a wave: a wave that full loses no more to the
/// idle SMs than the narrower tile loses to its per-tile overheads). To be
/// measured (benchmarks/tuning/matmul.md#choose_wgmma_block_n).
constexpr int wgmma_fill_num = 3, wgmma_fill_den = 4;

/// The wgmma block tile's width for an m x n product when `resident_ctas` CTAs
/// run at once: the widest of wgmma_block_n_choices whose 128 x width tiles
/// fill the GPU, else the narrowest (which then splits k where plan_matmul_split_k
/// says so). On 132 SMs: 1024^3 has 32 tiles of 128 x 256, 64 of 128 x 128,
/// 128 of 128 x 64 -> 64 (unsplit: 128 tiles fill more than half the GPU);
/// 128 x 8192 likewise (32, 64, 128) -> 64; 2048^3 has 128 of 128 x 256 -> 256.
/// H200, one bench_matmul run, ours / cuBLAS, 64-wide vs 128-wide: fp16 1024^3
/// 0.80 vs 0.71 (bf16 0.73 vs 0.71), fp16 128x8192x8192 0.94 vs 0.81 (bf16 0.93
/// vs 0.80), TF32 1024^3 0.78 vs 0.62. (TF32 took 128-wide tiles split in long
/// k-slices while its row-major B was transposed in shared memory:
/// 128x8192x8192 0.89 vs 0.76. Swapped, that shape's 64-wide tiles run as the
/// cluster split-k, 1.09 of cuBLAS against 0.97 for 128-wide split through the
/// workspace.)
/// `widest`: the widest tile the kernel has (the FP8 GEMM's is 128: its two
/// accumulator sets of a 64 x 256 tile would not fit a thread's registers).
inline int choose_wgmma_block_n(std::size_t m, std::size_t n, int resident_ctas,
                                int widest = wgmma_block_n_choices[0]) {
  constexpr std::size_t count = sizeof(wgmma_block_n_choices) / sizeof(wgmma_block_n_choices[0]);
  const std::size_t tiles_m = ceil_div(m, wgmma_block_m);
  for (std::size_t i = 0; i + 1 < count; ++i) {
    if (wgmma_block_n_choices[i] > widest) continue;
    const std::size_t tiles = tiles_m * ceil_div(n, static_cast<std::size_t>(wgmma_block_n_choices[i]));
    if (tiles * wgmma_fill_den >= static_cast<std::size_t>(resident_ctas > 0 ? resident_ctas : 0) * wgmma_fill_num) {
      return wgmma_block_n_choices[i];
    }
  }
  return wgmma_block_n_choices[count - 1];
}

/// The FP8 GEMM's wide tile (scaled/03_wgmma.cuh: 2 x 96 accumulators a
/// thread), and the waves of resident CTAs its tiles must make for it to pay.
constexpr int scaled_wide_block_n = 192;
constexpr std::size_t scaled_wide_min_waves = 4;
/// The FP8 GEMM's two-partials tile (scaled/03_wgmma.cuh): 128 x 128 in
/// clusters of 2, 3 x 64 accumulators a thread (the total and two partial
/// sets), so the next k-step's products run while the last ones are promoted.
/// Every scaling mode (blockwise: the block scales in the promotion). It was
/// 128 x 144 (3 x 72) until 2026-12-07: 4096^3 at 128 x 144 is 7.03 rounds of
/// cluster tiles whose 144-wide tiles end in a 16-column chunk stored by 4-byte
/// writes; at 128 x 128 it is 7.76 rounds and no partial chunk (cuBLASLt's
/// kernel there is 128 x 128 too). H100, 2026-12-07, two alternated runs, ours /
/// cuBLASLt at 128 x 144 -> 128 x 128: 4096^3 per-tensor 0.885 / 0.890 -> 0.975
/// / 0.975, rowwise 0.888 / 0.887 -> 1.001 / 0.955; 8192^3 and 4096x7168x16384
/// within 1.5% either way (matmul.md#fp8, "Eleventh look").
constexpr int scaled_two_partials_block_n = 128;
/// The depth from which the two-partials tile replaces the wide one by shape: its
/// gain is in the k-loop (no drain at each promotion), its cost (a narrower tile
/// loads less B per product, and makes more tiles) is paid per tile; measured
/// at 128 x 144: H200, bench_scaled_matmul's two_partials_vs_192 rows, 144 over
/// 192: 4096^3 1.038 / 1.042 (per-tensor / rowwise), 8192^3 1.049 / 1.059,
/// 4096x7168x16384 1.083 / 1.082, but 8192x8192x1024 (8 k-steps of 128) 0.967 /
/// 0.983 (benchmarks/tuning/matmul.md#fp8).
constexpr std::size_t scaled_two_partials_min_k = 2048;

/// The FP8 GEMM's persistent grid splits its last round of cluster tiles over
/// the clusters that would wait (common/last_round.hpp: plan_last_round), into
/// at most scaled_last_round_max_parts parts of at least
/// scaled_last_round_min_k_steps k-steps of 128. Where it applies: 4096^3 at
/// 128 x 144 was 464 cluster tiles on 66 clusters (7.03 rounds: a last round of
/// 2, 4 parts each; at 128 x 128, 512: 7.76 rounds, a last round of 50, not split),
/// 4096x7168x16384 800 (12.12 rounds, a last round of 8, 4 parts); 8192^3 (1,824 cluster tiles, a last round of 42:
/// more than half the grid busy) and shapes whose rounds come out whole are not split. The same split took conv2d step
/// 9's C128 layer 11% faster (H100, conv2d.md#conv2d_wgmma_last_round). Evidence: H100 2026-12-06, with the consumers'
/// turns, two alternated runs, ours / cuBLASLt: 4096x7168x16384 per-tensor 0.950 -> 0.992, blockwise 0.80 -> 0.84;
/// 4096^3 blockwise 0.80 -> 0.82, per-tensor 0.885 -> 0.888 (matmul.md#fp8, "Seventh look, measured").
constexpr std::size_t scaled_last_round_max_parts = 4;
constexpr std::size_t scaled_last_round_min_k_steps = 4;

/// Which tile the FP8 GEMM runs: by shape (choose_scaled_block_n), or forced
/// for the tests and bench_scaled_matmul's paired rows: `wide` the 128 x 192
/// tile, `two_partials` the 128 x 128 one with two partial sets. Both forced
/// tiles run in clusters of 2.
enum class scaled_wgmma_tile { by_shape, wide, two_partials };

/// The FP8 GEMM's tile width: 128 x 192 where those tiles make at least
/// scaled_wide_min_waves waves of the resident CTAs and there are two tile
/// rows (it runs in clusters of 2 sharing B); else choose_wgmma_block_n up to
/// 128. The wide tile does 1.5x the products per promotion, stage barrier and
/// byte of A; its fewer tiles lose more to the last wave. H200, one
/// bench_scaled_matmul run, per-tensor / rowwise, ours / cuBLASLt at 128 x 192
/// vs 128 x 128 (benchmarks/tuning/matmul.md#fp8): 4096^3 (5.3 waves) 0.751 vs
/// 0.717, 8192x8192x1024 0.639 vs 0.576, 4096x7168x16384 0.804 vs 0.723, 8192^3
/// 0.818 vs 0.681; 1024^3 (48 tiles) 0.558 vs 0.790. Between 1 and 5 waves not
/// yet measured. Blockwise scales take the same rule: a 192-wide tile straddles
/// two 128-column blocks of B's scales, and its promotion takes each 64-column
/// chunk's block scale (scaled/03_wgmma.cuh, next_b_scale_block_group) -- for
/// the same 1.5x per promotion, stage barrier and byte of A that lifted
/// per-tensor; not yet measured (blockwise ran 0.61-0.70 of cuBLASLt at these
/// shapes on 128 x 128).
///
/// Where the rule picks 128 x 192 and k is at least scaled_two_partials_min_k,
/// the two-partials tile (128 x 128 in clusters of 2, scaled_two_partials_block_n)
/// takes its place while tuning.hpp's best_uses_scaled_two_partials is on. The
/// scaling mode does not enter the choice. `tile` forces a
/// tile for the tests and bench_scaled_matmul's two_partials_vs_192 rows
/// (scaled_wgmma_tile), whatever the shape.
inline int choose_scaled_block_n(std::size_t m, std::size_t n, std::size_t k, int resident_ctas,
                                 scaled_wgmma_tile tile = scaled_wgmma_tile::by_shape) {
  if (tile == scaled_wgmma_tile::wide) return scaled_wide_block_n;
  if (tile == scaled_wgmma_tile::two_partials) return scaled_two_partials_block_n;
  const int narrow = choose_wgmma_block_n(m, n, resident_ctas, 128);
  const std::size_t tiles_m = ceil_div(m, wgmma_block_m);
  if (tiles_m < 2) return narrow;
  const std::size_t wide_tiles = tiles_m * ceil_div(n, static_cast<std::size_t>(scaled_wide_block_n));
  const std::size_t wave = static_cast<std::size_t>(resident_ctas > 0 ? resident_ctas : 0);
  if (wave == 0 || wide_tiles < scaled_wide_min_waves * wave) return narrow;
  const bool two_partials = best_uses_scaled_two_partials && k >= scaled_two_partials_min_k;
  return two_partials ? scaled_two_partials_block_n : scaled_wide_block_n;
}

// ---- what a 2-CTA wgmma cluster does ----------------------------------------------
/// The two CTAs of a wgmma cluster take adjacent tiles along m and share B (each
/// loads half of B's stage and TMA multicasts it to both), or adjacent tiles
/// along n and share A (each loads 64 of A's 128 rows). A stage holds 128 rows
/// of A and block_n rows of B (one swizzled row of k each), so sharing A saves
/// more L2 -> SM traffic where block_n < 128: at 1024^3 in 128 x 64 tiles a CTA
/// reads 128 + 64 / 2 = 160 rows a stage sharing B, 128 / 2 + 64 = 128 sharing A.
///  * by_shape: what the library runs (wgmma_cluster_shares_a, and
///    wgmma_cluster_splits_k below);
///  * share_b, share_a: forced (tests run both at every shape; bench_matmul's rows
///    wgmma_mcast_a and wgmma_mcast_b compare them in one run);
///  * split_k: forced cluster split-k: the cluster's two CTAs share no operand
///    but compute one 128 x 128 tile, each over half of k, and add their partial
///    tiles in shared memory (14_wgmma.cuh, ClusterSplitK; tests run it at
///    every shape, bench_matmul's rows wgmma_cluster_splitk measure it).
enum class wgmma_cluster_mode { by_shape, share_b, share_a, split_k };

/// True when a product with tiles_m x tiles_n tiles of 128 x block_n runs its
/// clusters along n sharing A. By shape: where A's rows a stage outnumber B's
/// (block_n < 128) and there are two tile rows or more, except for a single
/// tile column (the partner along n would only idle: B is shared then).
/// Measured on the H200 (benchmarks/tuning/matmul.md#wgmma_cluster_shares_a, one bench_matmul run): fp16
/// 1024^3 (8 x 16 tiles of 128 x 64) 0.78 of cuBLAS sharing A against 0.72
/// sharing B (bf16 0.79 / 0.73); 128 x 8192 x 8192 (1 x 128 tiles) 0.91
/// sharing A against 0.94 in single CTAs (bf16 the same): with one tile row
/// the product streams B from HBM once and A's 128 rows stay in L2, so the
/// cluster only couples two CTAs' progress. A single tile row keeps single CTAs.
/// Confirmed with the two modes timed in turn (bench_matmul rows mcast_a_vs_b,
/// three passes, B's time / A's): 1024^3 1.013-1.023 (fp16 and bf16), 2048^3
/// 0.992-1.003, 4096^3 0.985-0.991, 8192^3 0.995-0.997, 8192 x 8192 x 1024
/// 0.981-0.988, 128 x 8192 x 8192 (B: single CTAs) 0.967-0.973.
KF_TUNING_FN bool wgmma_cluster_shares_a(wgmma_cluster_mode mode, int block_n, std::size_t tiles_m,
                                         std::size_t tiles_n) {
  if (mode != wgmma_cluster_mode::by_shape) return mode == wgmma_cluster_mode::share_a;
  return tiles_m > 1 && tiles_n > 1 && static_cast<std::size_t>(block_n) < wgmma_block_m;
}

/// CTAs per cluster (1 or 2) for a cluster_size of 1 or 2 (anything else: 2):
/// the tiles along the shared operand's axis (n when sharing A, m when sharing
/// B) must number at least two, else single CTAs.
KF_TUNING_FN int wgmma_cluster_ctas(int cluster_size, bool multicast_a, std::size_t tiles_m, std::size_t tiles_n) {
  return cluster_size == 1 || (multicast_a ? tiles_n : tiles_m) < 2 ? 1 : 2;
}

// ---- cluster split-k ----------------------------------------------------------------
/// Where 128 x 64 tiles run one per CTA with room to spare, a cluster of 2 can
/// instead compute each 128 x 128 tile, each CTA over half of k, the partial
/// tiles added on chip (distributed shared memory) instead of through a
/// workspace: the same CTAs at work, but the wgmma products of a 128 x 128
/// tile read 12 KiB of shared memory per k16 for 524 kFLOP where 128 x 64 reads
/// 8 KiB for 262 kFLOP (with TMA's writes ~156 against ~220 B/clk at the tensor
/// peak; shared memory delivers 128 B/clk), for one 32 KiB exchange per tile
/// and a pipeline stage less (5 of 32 KiB). The shape condition: the tile width by
/// shape is 64 (choose_wgmma_block_n), its tiles fit in the resident CTAs
/// and run unsplit (plan_matmul_split_k), and twice the 128 x 128 tiles fit too (at
/// 1024^3 on 132 SMs: 128 tiles of 128 x 64, or 64 tiles of 128 x 128 x 2
/// CTAs = 128).
inline bool wgmma_cluster_split_k_fits(std::size_t m, std::size_t n, std::size_t k, std::size_t element_bytes,
                                       int stage_k, int resident_ctas) {
  if (resident_ctas <= 0 || m == 0 || n == 0 || k == 0) return false;
  if (choose_wgmma_block_n(m, n, resident_ctas) != 64) return false;
  const std::size_t tiles_m = ceil_div(m, wgmma_block_m);
  const std::size_t tiles_64 = tiles_m * ceil_div(n, std::size_t{64});
  const std::size_t tiles_128 = tiles_m * ceil_div(n, std::size_t{128});
  const auto resident = static_cast<std::size_t>(resident_ctas);
  if (tiles_64 > resident || 2 * tiles_128 > resident) return false;
  return plan_matmul_split_k(tiles_64, m, n, k, stage_k, resident_ctas, wgmma_split_k_min_slice(element_bytes)).split ==
         1;
}

/// The k-steps each CTA of a split-k cluster must get for `best` to take it:
/// the exchange and the pipeline stage it gives up are a fixed cost per tile
/// (~1 us at 1024 x 1024 x 256), paid back only by a long enough main loop.
/// Measured on the H200 (bench_matmul, one run, ours / cuBLAS, cluster split-k
/// against the 128 x 64 tiles sharing A): TF32 1024^3 (16 steps of 32 a CTA)
/// 0.795 against 0.742; TF32 1024 x 1024 x 4096 0.858 against 0.784; fp16
/// 1024 x 1024 x 4096 (32 steps of 64) 0.841 against 0.745; but fp16 1024^3 (8
/// steps) 0.782 against 0.831, bf16 0.793 against 0.835, and at k = 256 (2-4
/// steps) 0.67-0.81 against 0.74-0.92.
inline constexpr int wgmma_cluster_split_k_min_steps = 16;

/// True when the wgmma launcher, with its multicast by shape, runs the cluster
/// split-k: where it fits, each CTA's half of k has at least
/// wgmma_cluster_split_k_min_steps k-steps of `stage_k`, and there are two
/// tile rows or more (in a single tile row, e.g. 128 x 8192 x 8192, reading B
/// from HBM bounds the time, which splitting k does not shorten: fp16 measured
/// 0.941 of cuBLAS split against 0.951).
inline bool wgmma_cluster_splits_k(std::size_t m, std::size_t n, std::size_t k, std::size_t element_bytes, int stage_k,
                                   int resident_ctas) {
  if (stage_k <= 0 || m <= static_cast<std::size_t>(wgmma_block_m)) return false;
  const std::size_t half_steps = ceil_div(ceil_div(k, static_cast<std::size_t>(stage_k)), std::size_t{2});
  return half_steps >= static_cast<std::size_t>(wgmma_cluster_split_k_min_steps) &&
         wgmma_cluster_split_k_fits(m, n, k, element_bytes, stage_k, resident_ctas);
}

}  // namespace kf::detail
