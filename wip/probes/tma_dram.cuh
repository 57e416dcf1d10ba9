// SPDX-License-Identifier: Apache-2.0
// The TMA probes from DRAM (wip/probes/tma_rows.cu runs them; not part of the
// library): the 1x1 forward's 51 MB input as whole pixels in 32 KiB stages, and as
// conv2d step 7 reads it (16 KiB stages, a tile's channel blocks in turn).
#pragma once

#include "tma_probe.cuh"

/// From DRAM (the 1x1 forward streams its 51 MB input once): N128 56x56 C256 (205
/// MB, four times the L2), read once in order, each CTA taking every gridDim.x-th 8 x 8
/// patch; a stage is the patch's 64 pixels x 256 channels (32 KiB) as four boxes, either
/// one 64-channel block each (4-D: 128-byte pieces, what step 7's boxes read) or a 4 x 4
/// pixel quarter with all four blocks each (5-D: 512 contiguous bytes a pixel).
template <int Stages>
__global__ void __launch_bounds__(64, 1) stream_dram(const __grid_constant__ CUtensorMap map, walk wk, int patches) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages> r(smem, 1);
  const int steps =
      (patches - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const origin o(wk, static_cast<int>(blockIdx.x) + i * static_cast<int>(gridDim.x));
      const std::uint32_t full = r.ring.producer_acquire(at, stage_bytes);
      for (int j = 0; j < boxes; ++j) {
        if (wk.rank5) {
          tma_load_5d(r.stage(at) + j * box_bytes, &map, 0, 0, o.w0 + (j % 2) * 4, o.h0 + (j / 2) * 4, o.n0, full);
        } else {
          tma_load_4d(r.stage(at) + j * box_bytes, &map, j * 64, o.w0, o.h0, o.n0, full);
        }
      }
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    drain(r.ring, steps);
  }
#endif
}

/// From DRAM as conv2d step 7 reads the 1x1 layer (N32 C256 56x56 K64, 16-bit, resident
/// filter): a tile is 2 images x 8 x 8 pixels (128), its A box 64 channels of them (16 KiB),
/// and its 4 channel blocks go into 4 consecutive stages of 16 KiB -- a ring of `Stages`
/// such stages (the kernel: 8, its 24 KiB stages' B slots unused) -- where stream_dram
/// above lands all 256 channels of 64 pixels in one 32 KiB stage of a 6-stage ring. Are
/// the kernel's 56-58% of HBM (ncu, H100) its bytes in flight (8 x 16 KiB against 6 x 32)?
template <int Stages>
__global__ void __launch_bounds__(64, 1)
    stream_dram_tiles(const __grid_constant__ CUtensorMap map, walk wk, int tiles) {
#if KF_ARCH_SM90A
  constexpr int tile_stage_bytes = 2 * box_bytes;  // 128 pixels x 128 bytes
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages, tile_stage_bytes> r(smem, 1);
  const int my_tiles =
      (tiles - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
  const int steps = my_tiles * wk.channel_blocks;
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const origin o(wk, static_cast<int>(blockIdx.x) + i / wk.channel_blocks * static_cast<int>(gridDim.x));
      const std::uint32_t full = r.ring.producer_acquire(at, tile_stage_bytes);
      tma_load_4d(r.stage(at), &map, i % wk.channel_blocks * 64, o.w0, o.h0, o.n0, full);
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    drain(r.ring, steps);
  }
#endif
}

void run_dram(int ctas) {
  const geometry g4{"dram", 128, 56, 56, 256, 8, 8, 1, false};
  const geometry g5{"dram", 128, 56, 56, 256, 4, 4, 1, true};  // 4 x 4 pixels, all four channel blocks
  const std::size_t elements = static_cast<std::size_t>(g4.n) * g4.h * g4.w * g4.c;
  __half* x = nullptr;
  CHECK(cudaMalloc(&x, elements * sizeof(__half)));
  CHECK(cudaMemset(x, 0x3c, elements * sizeof(__half)));
  void* flush = nullptr;  // evicts x from L2 between the runs
  const std::size_t flush_bytes = std::size_t{256} << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  constexpr int stages = 6;
  const int smem = ring_smem<stages>(stream_dram<stages>);
  const int patches = g4.n * (g4.h / 8) * (g4.w / 8);
  const walk wk{g4.w / 8, g4.h / 8, 8, 8, 1, g4.c / 64, 0};  // 8 x 8 patches; rank5 set below
  for (const bool five_d : {false, true}) {
    CUtensorMap map{};
    if (!encode_nhwc(map, x, five_d ? g5 : g4, five_d ? g4.c / 64 : 1)) {
      std::printf("dram %s: the map was rejected\n", five_d ? "5-D" : "4-D");
      continue;
    }
    walk w = wk;
    w.rank5 = five_d ? 1 : 0;
    for (int rep = 0; rep < 2; ++rep) {
      CHECK(cudaMemset(flush, rep, flush_bytes));
      const float ms = time_ms([&] { stream_dram<stages><<<ctas, 64, smem>>>(map, w, patches); });
      std::printf("dram N128 56x56 C256 %s, %d CTAs: %7.1f GB/s (%.3f ms for %.0f MB)\n",
                  five_d ? "5-D 512-byte pixels" : "4-D 128-byte pieces", ctas, elements * 2.0 / (ms * 1e-3) / 1e9, ms,
                  elements * 2.0 / 1e6);
    }
  }
  CHECK(cudaFree(flush));
  CHECK(cudaFree(x));
}

/// stream_dram_tiles over N128 56x56 C256 (205 MB, four times the L2), L2 flushed first.
template <int Stages>
void run_dram_tiles(int ctas) {
  const geometry g{"dram", 128, 56, 56, 256, 8, 8, 2, false};
  const std::size_t elements = static_cast<std::size_t>(g.n) * g.h * g.w * g.c;
  __half* x = nullptr;
  CHECK(cudaMalloc(&x, elements * sizeof(__half)));
  CHECK(cudaMemset(x, 0x3c, elements * sizeof(__half)));
  void* flush = nullptr;
  const std::size_t flush_bytes = std::size_t{256} << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  CUtensorMap map{};
  if (!encode_nhwc(map, x, g, 1)) {
    std::printf("dram tiles: the map was rejected\n");
    return;
  }
  const int smem = ring_smem<Stages, decltype(&stream_dram_tiles<Stages>), 2 * box_bytes>(stream_dram_tiles<Stages>);
  const int tiles = g.n / g.nt * (g.h / g.ht) * (g.w / g.wt);
  const walk wk{g.w / g.wt, g.h / g.ht, g.wt, g.ht, g.nt, g.c / 64, 0};
  for (int rep = 0; rep < 2; ++rep) {
    CHECK(cudaMemset(flush, rep, flush_bytes));
    const float ms = time_ms([&] { stream_dram_tiles<Stages><<<ctas, 64, smem>>>(map, wk, tiles); });
    std::printf("dram N128 56x56 C256 as step 7's 1x1 tiles, %2d stages of 16 KiB, %d CTAs: %7.1f GB/s (%.3f ms)\n",
                Stages, ctas, elements * 2.0 / (ms * 1e-3) / 1e9, ms);
  }
  CHECK(cudaFree(flush));
  CHECK(cudaFree(x));
}
