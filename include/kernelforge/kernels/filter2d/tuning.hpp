// SPDX-License-Identifier: Apache-2.0
// filter2d's tuning, data only: register_window's configuration (the one the
// library ships and the candidates one bench_conv run ranks against it: rows
// filter2d/fp32/register_window_cfg/<name>/8192x8192_<r>x<s>; the GPU tests
// check each on the awkward images) and the constants behind `best`'s choices.
// Each carries one line of evidence: its section of benchmarks/tuning/filter2d.md.
// The selection functions that use them: plan.hpp; the candidates' launch:
// window_candidates.cuh.
#pragma once

#include <cstddef>

namespace kf::detail {

/// Output rows per thread: 8 (16 and 32 hold more accumulators and leave fewer blocks to hide latency with).
/// Evidence: benchmarks/tuning/filter2d.md#filter2d_window_default
constexpr int filter2d_window_rows = 8;
/// Threads per block (one row of float4s): 128 (64 and 256 measured slower).
/// Evidence: benchmarks/tuning/filter2d.md#filter2d_register_window
constexpr int filter2d_window_threads = 128;
/// Output columns per thread: one float4.
/// Evidence: benchmarks/tuning/filter2d.md#filter2d_window_default
constexpr int filter2d_window_cols = 4;

/// A register_window configuration: Rows output rows per thread (the strip),
/// Cols adjacent output columns per thread (2, 4 or 8: one float2, one float4,
/// two float4s per input row), and MinBlocks, the __launch_bounds__ minimum
/// of resident blocks per SM (0: none; k asks ptxas to fit
/// 65536 / (filter2d_window_threads * k) registers per thread).
template <int Rows, int Cols, int MinBlocks>
struct filter2d_window_config {
  static_assert(Rows >= 1, "a strip holds at least one output row");
  static_assert(Cols == 2 || Cols == 4 || Cols == 8, "columns per thread: 2 (float2), 4 or 8 (float4s)");
  static_assert(MinBlocks >= 0 && MinBlocks * filter2d_window_threads <= 2048, "at most 2048 threads per SM");
  static constexpr int rows = Rows;
  static constexpr int cols = Cols;
  static constexpr int min_blocks = MinBlocks;
};

/// What the library runs (filter2d.cu): 8 rows x one float4, no register cap.
/// Evidence: benchmarks/tuning/filter2d.md#filter2d_window_default
using filter2d_window_default = filter2d_window_config<filter2d_window_rows, filter2d_window_cols, 0>;

/// Calls f(name, Config{}) for every candidate configuration of register_window,
/// the library's default first. Names: rows<strip height>_cols<columns per
/// thread>[_min<blocks per SM>]. Why these: at 5x5 the default holds 128
/// registers, so 4 blocks of 4 warps per SM, too few warps to hide its loads;
/// each candidate trades loads per output for registers. Comments: at 5x5,
/// blocks per SM (65536 / (128 threads x registers)) and load instructions per
/// output ((rows + 4) input rows x (vectors + 4 side columns) / (rows x cols)).
/// Evidence: benchmarks/tuning/filter2d.md#filter2d_window_default (registers per candidate and border, speeds)
template <class F>
void for_each_filter2d_window_candidate(F&& f) {
  f("rows8_cols4", filter2d_window_default{});               // the library's: 4 blocks, 1.88 loads
  f("rows4_cols4", filter2d_window_config<4, 4, 0>{});       // shorter strip: 5 blocks, 2.5 loads
  f("rows3_cols4_min6", filter2d_window_config<3, 4, 6>{});  // 6 blocks, 2.9 loads
  f("rows2_cols4_min7", filter2d_window_config<2, 4, 7>{});  // 7 blocks, 3.75 loads
  f("rows4_cols2_min7", filter2d_window_config<4, 2, 7>{});  // one float2: 7 blocks, 5 loads
  f("rows3_cols2_min8", filter2d_window_config<3, 2, 8>{});  // one float2: 8 blocks (64 registers), 5.8 loads
  f("rows2_cols8", filter2d_window_config<2, 8, 0>{});       // two float4s: 4 blocks, 2.25 loads
  f("rows1_cols8_min6", filter2d_window_config<1, 8, 6>{});  // two float4s: 6 blocks, 3.75 loads
}

/// Filters of at least this many taps (and more than one row and column) go to
/// the separable-capable kernel under `best`: up to 5x5 the 2D loop is already
/// bound by memory, beyond it the r*s multiply-adds start to dominate.
/// Evidence: none measured for the threshold; benchmarks/tuning/filter2d.md#filter2d_smem_tiled (the separable path)
constexpr std::size_t filter2d_separable_min_taps = 26;

/// Does `best` run tma_pipeline (step 6) where it applies? Off: 0.81 / 0.80 of the copy rate at
/// 3x3 / 5x5 against register_window's 0.97 / 0.83 (H200, bench_conv, 8192^2, one run).
/// Evidence: benchmarks/tuning/filter2d.md#best_uses_tma_pipeline
constexpr bool best_uses_tma_pipeline = false;

}  // namespace kf::detail
