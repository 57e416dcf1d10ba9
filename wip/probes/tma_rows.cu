// SPDX-License-Identifier: Apache-2.0
// Probe (not part of the library): how fast the box geometries of gradient step 3
// (03_wgrad_wgmma.cuh) and forward step 7 stream from L2 into an SM's stage ring by
// TMA, with nothing else running -- the question behind the 16-bit C256 dw, whose
// kernel issues 0.17 instructions a cycle and reaches 31% of L2 and 31% of the SM
// (ncu, H100, 2026-12-05), and the 16-bit 1x1 forward (56% of HBM).
//
// Each CTA (one per SM) is one producer thread and one consumer warp that waits for
// each stage and releases it at once: no math, so the time is the loads' own. A stage
// holds `boxes` boxes of 64 16-bit channels x `pixels` pixels (8 KiB each), like
// step 3's (2 of dy + 2 of x for 128 x 128 tiles). The geometries (x NHWC fp16):
//   c256_2x2x16: N32 14x14 C256, boxes 64 ch x 2 w x 2 h x 16 n (step 3's C256 patch):
//                every 128-byte row from another pixel, 512 bytes apart
//   c256_5d:     the same bytes through a 5-D view (64, C/64, W, H, N), boxes
//                64 x 2 channel blocks x 2 x 2 x 8: 256 contiguous bytes a pixel
//   c64_8x8:     N32 56x56 C64, boxes 64 ch x 8 w x 8 h (step 3's C64 patch): 1 KiB runs
//   c256_8x8:    N32 56x56 C256, boxes 64 ch x 8 w x 8 h (the 1x1 layer's x)
// For each: GB/s over all SMs (L2-resident: the tensor is read once before timing)
// at 4, 5 and 6 stages in the ring (6 x 32 KiB: the most that fits), and microseconds a stage a CTA;
// then from DRAM: 32 KiB stages of whole pixels, and step 7's 1x1 tiles at 4, 8 and 12 stages.
// Build and run (the device): nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/tma_rows.cu -o /tmp/tma_rows &&
// /tmp/tma_rows
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernelforge/kernels/arch/cluster_sm90.cuh"
#include "kernelforge/kernels/arch/mbarrier_sm90.cuh"
#include "kernelforge/kernels/arch/pipeline_sm90.cuh"
#include "kernelforge/kernels/arch/smem.cuh"
#include "kernelforge/kernels/arch/tma_sm90.cuh"
#include "kernelforge/kernels/runtime/kernel_attributes.hpp"  // cluster_launch_config
#include "kernelforge/kernels/runtime/tensor_map.hpp"

using namespace kf::detail;

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int box_bytes = 8192;  // 64 pixels x 128 bytes
constexpr int boxes = 4;         // a stage: 32 KiB
constexpr int stage_bytes = boxes * box_bytes;

struct walk {  // box origins: patch g -> (w0, h0, n0); channel block j of the stage's boxes
  int patches_w, patches_h, wt, ht, nt, channel_blocks;
  int rank5;  // 1: the 5-D map (its second dimension the channel block)
};

__device__ __forceinline__ void tma_load_5d(std::uint32_t dst, const CUtensorMap* map, int a, int b, int c, int d,
                                            int e, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, "
      "%6}], [%7];\n" ::"r"(dst),
      "l"(map), "r"(a), "r"(b), "r"(c), "r"(d), "r"(e), "r"(bar)
      : "memory");
}

#if KF_ARCH_SM90A  // the device parts exist for sm_90a alone (the kernels' bodies below likewise)
/// A CTA's ring (the kernels below share it): `Stages` stages of StageBytes from the
/// first 1024-byte boundary of `smem`, each released by `readers` arrivals a round.
template <int Stages, int StageBytes = stage_bytes>
struct probe_ring {
  std::uint32_t base;
  stage_ring<Stages> ring;
  __device__ probe_ring(unsigned char* smem, unsigned readers)
      : base((smem_address(smem) + 1023) & ~1023u), ring(base + Stages * StageBytes) {
    if (threadIdx.x == 0) {
      ring.init(readers);
      mbar_init_fence();
    }
    __syncthreads();
  }
  [[nodiscard]] __device__ std::uint32_t stage(const ring_position<Stages>& at) const {
    return base + at.stage * StageBytes;
  }
};

/// The consumer: waits for each of `steps` stages and releases it at once (in every CTA
/// of a cluster of `Cluster`: their copies land in this CTA's stages too).
template <int Stages, int Cluster = 1>
__device__ void drain(const stage_ring<Stages>& ring, int steps) {
  ring_position<Stages> at;
  for (int i = 0; i < steps; ++i) {
    ring.consumer_wait(at);
    if constexpr (Cluster > 1) {
      ring.template release_cluster<Cluster>(at.stage);
    } else {
      ring.release(at.stage);
    }
    at.advance();
  }
}

/// Patch g's origin (w0, h0, n0) in the walk.
struct origin {
  int w0, h0, n0;
  __device__ origin(const walk& wk, int g)
      : w0((g % wk.patches_w) * wk.wt),
        h0((g / wk.patches_w % wk.patches_h) * wk.ht),
        n0(g / (wk.patches_w * wk.patches_h) * wk.nt) {}
};

#endif

template <int Stages>
__global__ void __launch_bounds__(64, 1) stream_boxes(const __grid_constant__ CUtensorMap map, walk wk, int steps) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages> r(smem, 1);
  const int patches = wk.patches_w * wk.patches_h * (32 / wk.nt);
  if (threadIdx.x == 0) {  // the producer
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const origin o(wk, (static_cast<int>(blockIdx.x) * 7 + i) % patches);  // CTAs spread over the patches
      const std::uint32_t full = r.ring.producer_acquire(at, stage_bytes);
      for (int j = 0; j < boxes; ++j) {
        const int block = (i + j) % wk.channel_blocks;
        if (wk.rank5) {
          tma_load_5d(r.stage(at) + j * box_bytes, &map, 0, (block / 2) * 2, o.w0, o.h0, o.n0, full);
        } else {
          tma_load_4d(r.stage(at) + j * box_bytes, &map, block * 64, o.w0, o.h0, o.n0, full);
        }
      }
      at.advance();
    }
  } else if (threadIdx.x == 32) {  // the consumer warp's lane 0
    drain(r.ring, steps);
  }
#endif
}

__device__ __forceinline__ void tma_load_4d_multicast_probe(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                                            int z, int w, std::uint32_t bar, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar), "h"(mask)
      : "memory");
}

/// The same stream in clusters of Cluster CTAs along x that read the same boxes: CTA r
/// issues box j of a stage where j % Cluster == r and multicasts it to the cluster, so each
/// CTA issues 1 / Cluster of what lands in its ring (is the cap the issuing TMA unit's or
/// the receiving SM's?).
template <int Stages, int Cluster>
__global__ void __launch_bounds__(64, 1) stream_multicast(const __grid_constant__ CUtensorMap map, walk wk, int steps) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages> r(smem, Cluster);  // every CTA's consumer releases every CTA's stage
  cluster_sync();
  const int rank = static_cast<int>(cluster_rank());
  const int patches = wk.patches_w * wk.patches_h * (32 / wk.nt);
  const int cluster_id = static_cast<int>(blockIdx.x) / Cluster;
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const origin o(wk, (cluster_id * 7 + i) % patches);
      const std::uint32_t full = r.ring.producer_acquire(at, stage_bytes);
      for (int j = rank; j < boxes; j += Cluster) {
        const int block = (i + j) % wk.channel_blocks;
        tma_load_4d_multicast_probe(r.stage(at) + j * box_bytes, &map, block * 64, o.w0, o.h0, o.n0, full,
                                    static_cast<std::uint16_t>((1u << Cluster) - 1));
      }
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    drain<Stages, Cluster>(r.ring, steps);
  }
  cluster_sync();
#endif
}

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

// ---- host ------------------------------------------------------------------------------

struct geometry {
  const char* name;
  int n, h, w, c;
  int wt, ht, nt;  // the box's pixels
  bool five_d;     // boxes of `blocks` 64-channel blocks through the 5-D view (below)
};

/// An NHWC fp16 tensor's map in boxes of 64 channels x wt x ht x nt pixels, or -- blocks
/// > 1 -- through the 5-D view (64 channels, channel block, w, h, n) in boxes of `blocks`
/// consecutive channel blocks (blocks x 128 contiguous bytes a pixel).
bool encode_nhwc(CUtensorMap& map, const __half* x, const geometry& g, int blocks) {
  using u64 = cuuint64_t;
  using u32 = cuuint32_t;
  const u64 pixel = g.c * 2ull, row = pixel * g.w, image = row * g.h;
  if (blocks == 1) {
    const u64 dims[4] = {u64(g.c), u64(g.w), u64(g.h), u64(g.n)};
    const u64 strides[3] = {pixel, row, image};
    const u32 box[4] = {64, u32(g.wt), u32(g.ht), u32(g.nt)};
    return encode_sw128_tiled(map, x, 4, dims, strides, box);
  }
  const u64 dims[5] = {64, u64(g.c / 64), u64(g.w), u64(g.h), u64(g.n)};
  const u64 strides[4] = {128, pixel, row, image};
  const u32 box[5] = {64, u32(blocks), u32(g.wt), u32(g.ht), u32(g.nt)};
  return encode_sw128_tiled(map, x, 5, dims, strides, box);
}

/// The dynamic shared memory of a `Stages` ring (with the alignment's slack), opted in for `kernel`.
template <int Stages, class Kernel, int StageBytes = stage_bytes>
int ring_smem(Kernel kernel) {
  const int smem = 1024 + Stages * StageBytes + stage_ring_barrier_bytes(Stages);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  return smem;
}

/// Milliseconds `launch` takes on the default stream, by events.
template <class Launch>
float time_ms(Launch&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  launch();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms;
}

template <int Stages>
void run(const geometry& g, const __half* x, int sms, int steps) {
  CUtensorMap map{};
  if (!encode_nhwc(map, x, g, g.five_d ? 2 : 1)) {
    std::printf("%s: the map was rejected\n", g.name);
    return;
  }
  const walk wk{g.w / g.wt, g.h / g.ht, g.wt, g.ht, g.nt, g.c / 64, g.five_d ? 1 : 0};
  const int smem = ring_smem<Stages>(stream_boxes<Stages>);
  auto launch = [&] { stream_boxes<Stages><<<sms, 64, smem>>>(map, wk, steps); };
  launch();  // warm: the tensor into L2
  CHECK(cudaDeviceSynchronize());
  const float ms = time_ms(launch);
  const double bytes = 1.0 * sms * steps * stage_bytes;
  std::printf("%-12s stages %d: %8.1f GB/s in all, %6.2f GB/s an SM, %6.3f us a stage a CTA (%.3f ms)\n", g.name,
              Stages, bytes / (ms * 1e-3) / 1e9, bytes / sms / (ms * 1e-3) / 1e9, ms * 1e3 / steps, ms);
}

/// stream_multicast over the 4-D map of geometry g.
template <int Stages, int Cluster>
void run_multicast(const geometry& g, const __half* x, int ctas, int steps) {
  CUtensorMap map{};
  if (!encode_nhwc(map, x, g, 1)) return;
  const walk wk{g.w / g.wt, g.h / g.ht, g.wt, g.ht, g.nt, g.c / 64, 0};
  auto kernel = stream_multicast<Stages, Cluster>;
  const int n = ctas / Cluster * Cluster;
  cudaLaunchAttribute cluster_dims{};
  const cudaLaunchConfig_t config = cluster_launch_config(dim3(static_cast<unsigned>(n)), dim3(64),
                                                          ring_smem<Stages>(kernel), nullptr, Cluster, cluster_dims);
  auto launch = [&] { CHECK(cudaLaunchKernelEx(&config, kernel, map, wk, steps)); };
  launch();
  CHECK(cudaDeviceSynchronize());
  const float ms = time_ms(launch);
  const double landed = 1.0 * n * steps * stage_bytes;
  std::printf("%-12s multicast %d, stages %d, %d CTAs: %6.2f GB/s landed an SM (%6.2f issued), %6.3f us a stage\n",
              g.name, Cluster, Stages, n, landed / n / (ms * 1e-3) / 1e9, landed / n / Cluster / (ms * 1e-3) / 1e9,
              ms * 1e3 / steps);
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

int main(int argc, char** argv) {
  int sms = 0;  // CTAs: one an SM, or argv[1] of them (is a CTA's rate its own limit, or the L2's shared one?)
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (argc > 1) sms = std::atoi(argv[1]);
  const geometry geometries[] = {
      {"c256_2x2x16", 32, 14, 14, 256, 2, 2, 16, false},
      {"c256_5d", 32, 14, 14, 256, 2, 2, 8, true},
      {"c64_8x8", 32, 56, 56, 64, 8, 8, 1, false},
      {"c256_8x8", 32, 56, 56, 256, 8, 8, 1, false},
  };
  for (const geometry& g : geometries) {
    const std::size_t n = static_cast<std::size_t>(g.n) * g.h * g.w * g.c;
    std::vector<__half> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = __float2half(static_cast<float>(i % 17) - 8.0f);
    __half* x = nullptr;
    CHECK(cudaMalloc(&x, n * sizeof(__half)));
    CHECK(cudaMemcpy(x, host.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
    constexpr int steps = 400;
    run<4>(g, x, sms, steps);
    run<6>(g, x, sms, steps);
    run<5>(g, x, sms, steps);
    if (!g.five_d) {
      run_multicast<6, 2>(g, x, sms, steps);
      run_multicast<6, 4>(g, x, sms, steps);
    }
    CHECK(cudaFree(x));
  }
  run_dram(sms);
  run_dram_tiles<4>(sms);
  run_dram_tiles<8>(sms);  // the kernel's ring
  run_dram_tiles<12>(sms);
  return 0;
}
