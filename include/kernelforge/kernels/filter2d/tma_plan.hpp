// SPDX-License-Identifier: Apache-2.0
// Step 6 (06_tma_pipeline.cuh), its geometry and host-side planning as pure
// functions the CPU tests cover: which calls tma_pipeline computes (and why
// not, by name), and the grid that splits each column strip into contiguous
// ranges of row chunks. No CUDA calls; the constants are shared with the kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernelforge/conv.hpp"

namespace kf::detail {
namespace filter2d_tma {

inline constexpr int warp_threads = 32;
inline constexpr int consumer_warps = 4;
inline constexpr int consumer_threads = consumer_warps * warp_threads;
inline constexpr int threads = consumer_threads + warp_threads;    // + one producer warp
inline constexpr int cols_per_thread = 4;                          // one float4
inline constexpr int strip_cols = warp_threads * cols_per_thread;  // 128 output columns per block
/// Output rows per consumer warp and chunk: each input row read from shared
/// memory feeds up to r of them (8: as register_window's strip).
inline constexpr int rows_per_warp = 8;
inline constexpr int chunk_rows = consumer_warps * rows_per_warp;  // 32 rows per chunk and per stage
/// The widest halo supported (5x5: 2 + 2 columns; rows: 4 of the next stage).
inline constexpr int max_halo = 4;
/// Columns loaded left of a strip: a box's first column must start on a
/// 16-byte boundary (the innermost TMA coordinate times the element size a
/// multiple of 16: measured on the H200, a box at x = -1, -2 or 127 floats
/// traps with an illegal instruction, at -4, 0 or 4 it runs). So every box
/// starts 4 floats left of its strip, and a consumer reads its window from
/// three aligned float4s (columns x - 4 .. x + 7) instead of two.
inline constexpr int lead_cols = 4;
/// 4 + 128 + 4 floats = 544 bytes, a whole number of 16-byte vectors (a TMA rule).
inline constexpr int box_cols = lead_cols + strip_cols + lead_cols;
inline constexpr int stage_bytes = box_cols * chunk_rows * 4;  // 17 KiB, a multiple of 128
/// 4 stages (66 KiB): 3 blocks per SM on the H200; the consumers hold 2
/// stages, the producer fills the other 2 ahead of them.
inline constexpr int stages = 4;
inline constexpr int barrier_bytes = 8;
/// TMA destinations 128-byte aligned: one alignment's slack, the stages, 2 mbarriers per stage.
inline constexpr int smem_alignment = 128;
inline constexpr int smem_bytes = smem_alignment + stages * stage_bytes + 2 * stages * barrier_bytes;
/// Blocks per SM the launch bounds aim at (3 x 160 threads: up to 136 registers each).
inline constexpr int min_blocks_per_sm = 3;
/// Grid limits: y (ranges per strip) and z (channels, grid-stride) at most 65535.
inline constexpr std::size_t max_grid_yz = 65535;

static_assert(box_cols * 4 % 16 == 0, "a TMA box row is a whole number of 16-byte vectors");
static_assert(lead_cols * 4 % 16 == 0 && strip_cols * 4 % 16 == 0, "every box starts on a 16-byte column");
static_assert(max_halo / 2 <= lead_cols, "the lead columns hold the left halo, the trailing ones the right");
static_assert(stage_bytes % smem_alignment == 0, "every stage starts 128-byte aligned");
static_assert(box_cols <= 256 && chunk_rows <= 256, "TMA box extents are at most 256");
static_assert(max_halo <= chunk_rows, "a chunk's halo lies within the next stage");
static_assert(stages >= 2, "the consumers' parity waits need at least two stages");

/// What the kernel needs besides the tensor map (filled by tma_sm90a.cu).
struct params {
  float* out = nullptr;
  const float* filter = nullptr;
  long long out_pitch = 0, out_plane = 0;
  int height = 0, width = 0, channels = 0;
  int chunks = 0;  ///< ceil(height / chunk_rows)
  int parts = 0;   ///< gridDim.y: contiguous ranges of chunks per strip
};

/// The grid: x = column strips, y = ranges of row chunks per strip, z = channels.
struct grid_plan {
  std::size_t strips = 0, parts = 0, channel_blocks = 0;
  std::size_t chunks = 0;  ///< row chunks per strip
};

/// One wave of `resident` blocks (resident per SM x SMs): strips x channels
/// blocks, each strip's ceil(height / chunk_rows) chunks split into as many
/// contiguous ranges as the rest of the wave allows (at least 1, at most one
/// per chunk), so every block loads one extra (halo) stage per range only.
inline grid_plan plan_grid(std::size_t channels, std::size_t height, std::size_t width, std::size_t resident) {
  grid_plan g;
  g.strips = (width + strip_cols - 1) / strip_cols;
  g.chunks = (height + chunk_rows - 1) / chunk_rows;
  g.channel_blocks = channels < max_grid_yz ? channels : max_grid_yz;
  const std::size_t per_wave = g.strips * g.channel_blocks;
  std::size_t parts = per_wave == 0 ? 1 : resident / per_wave;
  if (parts < 1) parts = 1;
  if (parts > g.chunks) parts = g.chunks;
  if (parts > max_grid_yz) parts = max_grid_yz;
  g.parts = parts;
  return g;
}

}  // namespace filter2d_tma

/// Can tma_pipeline compute an r x s filter2d with this border on rows at `in`
/// and `out` with these pitches (elements)? nullptr when it can; else the
/// reason, worded to follow "filter2d_variant::tma_pipeline needs ...". The
/// device (compute capability 9.0, an sm_90a build) is checked by the launcher.
inline const char* filter2d_tma_unsupported_reason(std::size_t r, std::size_t s, border mode, const void* in,
                                                   std::size_t in_pitch, const void* out, std::size_t out_pitch) {
  constexpr std::uintptr_t vector_bytes = 16;
  constexpr std::size_t floats_per_vector = 4;
  if (!((r == 3 && s == 3) || (r == 5 && s == 5))) return "a 3x3 or 5x5 filter";
  if (mode != border::zero) return "border::zero (TMA's out-of-bounds fill is the border)";
  if (reinterpret_cast<std::uintptr_t>(in) % vector_bytes != 0 || in_pitch % floats_per_vector != 0) {
    return "'in' 16-byte aligned and in_pitch a multiple of 4 (TMA addresses and row strides are multiples of 16 "
           "bytes)";
  }
  if (reinterpret_cast<std::uintptr_t>(out) % vector_bytes != 0 || out_pitch % floats_per_vector != 0)
    return "'out' 16-byte aligned and out_pitch a multiple of 4 (float4 stores)";
  return nullptr;
}

}  // namespace kf::detail
