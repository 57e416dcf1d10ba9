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
// then cuDNN's unsplit C256 dw plan (dy shared in clusters of 3, x each CTA's own: 24 KiB
// stages); then from DRAM: 32 KiB stages of whole pixels, and step 7's 1x1 tiles at 4, 8 and 12 stages.
// Its parts: tma_probe.cuh (the ring, the maps, the timing), tma_dram.cuh (the DRAM streams).
// Build and run (the device): nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/tma_rows.cu -o /tmp/tma_rows &&
// /tmp/tma_rows
#include <vector>

#include "tma_dram.cuh"
#include "tma_probe.cuh"

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

/// cuDNN's unsplit dw plan for the C256 14x14 layer (72 CTAs of 128 x 64 in clusters of 3:
/// 03_wgrad_wgmma.cuh's notes): a stage of 3 boxes (24 KiB) -- two boxes of dy that the
/// cluster's CTAs share (box j issued by CTA j % Cluster, multicast to all) and one box of x
/// of the CTA's own (another channel block per rank, not multicast). Shared = false: every
/// CTA loads all three itself (the plan without the cluster). What lands an SM, against the
/// ~73 GB/s one SM took in by plain TMA and ~75-90 by multicast of whole stages.
constexpr int shared_own_stage_bytes = 3 * box_bytes;

template <int Stages, int Cluster, bool Shared>
__global__ void __launch_bounds__(64, 1)
    stream_shared_and_own(const __grid_constant__ CUtensorMap map, walk wk, int steps) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages, shared_own_stage_bytes> r(smem, Shared ? Cluster : 1);
  if constexpr (Shared) cluster_sync();
  const int rank = Shared ? static_cast<int>(cluster_rank()) : 0;
  const int patches = wk.patches_w * wk.patches_h * (32 / wk.nt);
  const int cluster_id = static_cast<int>(blockIdx.x) / Cluster;
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const origin o(wk, (cluster_id * 7 + i) % patches);
      const std::uint32_t full = r.ring.producer_acquire(at, shared_own_stage_bytes);
      for (int j = 0; j < 2; ++j) {  // dy's two boxes: channel blocks 0 and 1
        if constexpr (Shared) {
          if (j % Cluster == rank) {
            tma_load_4d_multicast_probe(r.stage(at) + j * box_bytes, &map, j * 64, o.w0, o.h0, o.n0, full,
                                        static_cast<std::uint16_t>((1u << Cluster) - 1));
          }
        } else {
          tma_load_4d(r.stage(at) + j * box_bytes, &map, j * 64, o.w0, o.h0, o.n0, full);
        }
      }
      const int own_block = (2 + static_cast<int>(blockIdx.x) % Cluster) % wk.channel_blocks;  // x: the CTA's own
      tma_load_4d(r.stage(at) + 2 * box_bytes, &map, own_block * 64, o.w0, o.h0, o.n0, full);
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    if constexpr (Shared) {
      drain<Stages, Cluster>(r.ring, steps);
    } else {
      drain<Stages>(r.ring, steps);
    }
  }
  if constexpr (Shared) cluster_sync();
#endif
}

// ---- host ------------------------------------------------------------------------------

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

/// stream_shared_and_own over the 4-D map of geometry g, `ctas` CTAs (clusters of Cluster where Shared).
template <int Stages, int Cluster, bool Shared>
void run_shared_and_own(const geometry& g, const __half* x, int ctas, int steps) {
  CUtensorMap map{};
  if (!encode_nhwc(map, x, g, 1)) return;
  const walk wk{g.w / g.wt, g.h / g.ht, g.wt, g.ht, g.nt, g.c / 64, 0};
  auto kernel = stream_shared_and_own<Stages, Cluster, Shared>;
  const int n = ctas / Cluster * Cluster;
  const int smem = ring_smem<Stages, decltype(kernel), shared_own_stage_bytes>(kernel);
  cudaLaunchAttribute cluster_dims{};
  const cudaLaunchConfig_t config = cluster_launch_config(dim3(static_cast<unsigned>(n)), dim3(64), smem, nullptr,
                                                          Shared ? Cluster : 1, cluster_dims);
  auto launch = [&] { CHECK(cudaLaunchKernelEx(&config, kernel, map, wk, steps)); };
  launch();
  CHECK(cudaDeviceSynchronize());
  const float ms = time_ms(launch);
  const double landed = 1.0 * n * steps * shared_own_stage_bytes;
  std::printf("%-12s dy shared by %d (%s) + own x, stages %d, %d CTAs: %6.2f GB/s landed an SM, %6.3f us a stage\n",
              g.name, Cluster, Shared ? "multicast" : "each loads all", Stages, n, landed / n / (ms * 1e-3) / 1e9,
              ms * 1e3 / steps);
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
  {  // cuDNN's unsplit C256 dw plan: 72 CTAs in clusters of 3 sharing dy, each its own x (and 132 CTAs)
    const geometry& g = geometries[0];
    const std::size_t n = static_cast<std::size_t>(g.n) * g.h * g.w * g.c;
    std::vector<__half> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = __float2half(static_cast<float>(i % 13) - 6.0f);
    __half* x = nullptr;
    CHECK(cudaMalloc(&x, n * sizeof(__half)));
    CHECK(cudaMemcpy(x, host.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
    for (const int ctas : {72, sms}) {
      run_shared_and_own<8, 3, true>(g, x, ctas, 400);
      run_shared_and_own<8, 3, false>(g, x, ctas, 400);
      run_shared_and_own<4, 3, true>(g, x, ctas, 400);
    }
    CHECK(cudaFree(x));
  }
  run_dram(sms);
  run_dram_tiles<4>(sms);
  run_dram_tiles<8>(sms);  // the kernel's ring
  run_dram_tiles<12>(sms);
  return 0;
}
