// SPDX-License-Identifier: Apache-2.0
// Probe (not part of the library): what bounds how fast conv2d step 7's stages land in one
// SM's ring on the TF32 NHWC C128 layer (N32 28x28 C128 K128 3x3 p1: 196 tiles of 128 x 128,
// 36 k-steps of 32 channels), where ncu's source view finds the consumers waiting on stages
// landing 29% of the time and cuDNN's waiting on their products (benchmarks/tuning/conv2d.md).
// No math: one producer thread loads each stage as the kernel does and one consumer warp
// releases it at once, one CTA an SM, x and the filter L2-resident (read once before timing).
// A stage is the kernel's: an A box of 32 floats x 4 w x 4 h x 8 n (the tile's 128 pixels
// shifted by the tap: 128 rows of 128 bytes, every row its own piece -- a pixel's 128
// channels span 512 bytes) and a B box of 32 floats x 1 tap x 128 output channels (128
// rows of 128 bytes, 4.6 KB apart). Variants, each at 6 stages:
//   ours        the A box and the B box
//   a_only      the A box alone (16 KiB stages)
//   b_only      the B box alone
//   a_run       A as one 2-D run of 128 consecutive pixels (im2col's shape; no padding) + B
//   b_shared N  the filter shared in clusters of N (2, 4, 8): CTA r issues rows r 128/N ..
//               of B and multicasts them to the cluster, its own A box as ours
// Printed: microseconds a stage a CTA (the kernel takes ~0.51 a k-step: 18.5 us a tile of 36)
// and GB/s landed an SM. Then the same for the 16-bit layer's filter-column k-steps (below).
// Build and run (the device): nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude -lcuda wip/probes/tma_c128.cu -o /tmp/tma_c128
// && /tmp/tma_c128
#include <string>
#include <vector>

#include "tma_probe.cuh"

namespace {

constexpr int kN = 32, kH = 28, kW = 28, kC = 128, kK = 128, kTaps = 9;
[[maybe_unused]] constexpr int kTiles = 196;  // 7 x 7 x 4 boxes of 4 x 4 x 8
constexpr int kKSteps = 36;                   // 9 taps x 4 chunks
constexpr int kHalf = 16384;                  // an A or a B box
constexpr int kStageBytes = 2 * kHalf;

enum variant { ours, a_only, b_only, a_run, b_shared };

#if KF_ARCH_SM90A
__device__ __forceinline__ void tma_load_3d_multicast_probe(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                                            int z, std::uint32_t bar, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar), "h"(mask)
      : "memory");
}

/// The filter slice (box c0.. of 32 or 64 channels, one tap, all kK output channels) into `dst`: whole,
/// or -- Cluster > 1 -- this CTA's kK / Cluster rows, multicast to every CTA of the cluster.
template <int Cluster>
__device__ __forceinline__ void load_filter_slice(std::uint32_t dst, const CUtensorMap* map, int c0, int tap, int rank,
                                                  std::uint32_t full) {
  if constexpr (Cluster > 1) {
    constexpr int kRows = kK / Cluster;
    tma_load_3d_multicast_probe(dst + rank * kRows * 128, map, c0, tap, rank * kRows, full,
                                static_cast<std::uint16_t>((1u << Cluster) - 1));
  } else {
    tma_load_3d(dst, map, c0, tap, 0, full);
  }
}
#endif

template <int Stages, variant V, int Cluster>
__global__ void __launch_bounds__(64, 1)
    stream_c128(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_run,
                const __grid_constant__ CUtensorMap map_w, int steps) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages, kStageBytes> r(smem, Cluster);
  if constexpr (Cluster > 1) cluster_sync();
  const int rank = Cluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  constexpr bool kA = V != b_only, kB = V != a_only;
  constexpr unsigned kBytes = (kA ? kHalf : 0) + (kB ? kHalf : 0);
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const int tile = (static_cast<int>(blockIdx.x) * 7 + i / kKSteps) % kTiles;
      const int kstep = i % kKSteps, tap = kstep / 4, chunk = kstep % 4;
      const std::uint32_t full = r.ring.producer_acquire(at, kBytes);
      const std::uint32_t stage = r.stage(at);
      if constexpr (kA) {
        if constexpr (V == a_run) {
          const int first = (tile * 128 + tap * 17) % (kN * kH * kW - 128);
          tma_load_2d(stage, &map_run, chunk * 32, first, full);
        } else {
          const int q0 = tile % 7 * 4, p0 = tile / 7 % 7 * 4, n0 = tile / 49 * 8;
          tma_load_4d(stage, &map_x, chunk * 32, q0 - 1 + tap % 3, p0 - 1 + tap / 3, n0, full);
        }
      }
      if constexpr (kB) load_filter_slice<Cluster>(stage + kHalf, &map_w, chunk * 32, tap, rank, full);
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    drain<Stages, Cluster>(r.ring, steps);
  }
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

struct maps {
  CUtensorMap x{}, run{}, w{}, w_part[4]{};  // w_part: the filter in boxes of 128 / 2, / 4, / 8 rows
};

bool encode_maps(maps& m, const float* x, const float* w) {
  using u64 = cuuint64_t;
  using u32 = cuuint32_t;
  const u64 pixel = kC * 4ull;
  const u64 dims[4] = {kC, kW, kH, kN};
  const u64 strides[3] = {pixel, pixel * kW, pixel * kW * kH};
  const u32 box[4] = {32, 4, 4, 8};
  bool ok = encode_sw128_tiled(m.x, x, 4, dims, strides, box);
  ok = ok && encode_sw128(m.run, x, kC, static_cast<std::size_t>(kN) * kH * kW, kC, 32, 128);
  const u64 wdims[3] = {kC, kTaps, kK};
  const u64 wstrides[2] = {pixel, pixel * kTaps};
  for (int j = 0; j < 4; ++j) {
    const u32 wbox[3] = {32, 1, static_cast<u32>(kK >> j)};
    ok = ok && encode_sw128_tiled(j == 0 ? m.w : m.w_part[j], w, 3, wdims, wstrides, wbox);
  }
  return ok;
}

/// The layer's input (N x H x W x C) and filter (K x 3 x 3 x C) in device memory, small integers: x and w.
template <class T>
void upload_layer(T*& x, T*& w) {
  const std::size_t xn = static_cast<std::size_t>(kN) * kH * kW * kC, wn = static_cast<std::size_t>(kK) * kTaps * kC;
  std::vector<T> host(xn > wn ? xn : wn);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<T>(static_cast<float>(i % 17) - 8.0f);
  CHECK(cudaMalloc(&x, xn * sizeof(T)));
  CHECK(cudaMalloc(&w, wn * sizeof(T)));
  CHECK(cudaMemcpy(x, host.data(), xn * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(w, host.data(), wn * sizeof(T), cudaMemcpyHostToDevice));
}

/// One launch of `kernel` over n CTAs in clusters of `cluster`, timed after a launch that warms L2 (x and
/// the filter read once), and the line that says it: microseconds a stage a CTA, GB/s landed an SM.
template <class Kernel, class... Args>
void time_and_print(const char* label, int stages, Kernel kernel, int n, int cluster, int smem, int steps,
                    double stage_bytes, const Args&... args) {
  cudaLaunchAttribute cluster_dims{};
  const cudaLaunchConfig_t config =
      cluster_launch_config(dim3(static_cast<unsigned>(n)), dim3(64), smem, nullptr, cluster, cluster_dims);
  auto launch = [&] { CHECK(cudaLaunchKernelEx(&config, kernel, args..., steps)); };
  launch();
  CHECK(cudaDeviceSynchronize());
  const float ms = time_ms(launch);
  std::printf("%-17s stages %d, %3d CTAs: %6.3f us a stage a CTA, %6.2f GB/s landed an SM\n", label, stages, n,
              ms * 1e3 / steps, stage_bytes * steps / (ms * 1e-3) / 1e9);
}

template <int Stages, variant V, int Cluster>
void run(const char* name, const maps& m, int ctas, int steps) {
  auto kernel = stream_c128<Stages, V, Cluster>;
  const int n = ctas / Cluster * Cluster;
  const int smem = ring_smem<Stages, decltype(kernel), kStageBytes>(kernel);
  const CUtensorMap& w = Cluster == 1 ? m.w : m.w_part[Cluster == 2 ? 1 : Cluster == 4 ? 2 : 3];
  time_and_print(name, Stages, kernel, n, Cluster, smem, steps, (V == a_only || V == b_only ? 0.5 : 1.0) * kStageBytes,
                 m.x, m.run, w);
}

// ---- the 16-bit C128 layer's filter-column k-steps ---------------------------------------------
// Step 7's 16-bit plan for N32 28x28 C128 K128 3x3: 256 tiles of 8 x 16 pixels (one image), 6 k-steps
// (3 filter columns x 2 blocks of 64 channels), each an A box of 8 x 18 pixels x 64 halves (18 KiB: the
// column's three taps) and three B slices of 64 x 128 (48 KiB), 3 stages of 66 KiB. The kernel runs the
// layer in ~23 us (2 rounds of tiles): ~1.9 us a k-step.
constexpr int kHalfA = 18 * 1024, kHalfB = 16 * 1024;
constexpr int kHalfStage = kHalfA + 3 * kHalfB;

template <int Stages, variant V, int Cluster>
__global__ void __launch_bounds__(64, 1)
    stream_c128_half(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w, int steps) {
#if KF_ARCH_SM90A
  extern __shared__ unsigned char smem[];
  const probe_ring<Stages, kHalfStage> r(smem, Cluster);
  if constexpr (Cluster > 1) cluster_sync();
  const int rank = Cluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  constexpr bool kA = V != b_only, kB = V != a_only;
  constexpr unsigned kBytes = (kA ? kHalfA : 0) + (kB ? 3 * kHalfB : 0);
  if (threadIdx.x == 0) {
    ring_position<Stages> at;
    for (int i = 0; i < steps; ++i) {
      const int tile = (static_cast<int>(blockIdx.x) * 7 + i / 6) % 256;
      const int s = i % 6 / 2, chunk = i % 2;
      const std::uint32_t full = r.ring.producer_acquire(at, kBytes);
      const std::uint32_t stage = r.stage(at);
      if constexpr (kA)
        tma_load_4d(stage, &map_x, chunk * 64, tile % 4 * 8 - 1 + s, tile / 4 % 2 * 16 - 1, tile / 8, full);
      if constexpr (kB) {
        for (int j = 0; j < 3; ++j) {
          load_filter_slice<Cluster>(stage + kHalfA + j * kHalfB, &map_w, chunk * 64, j * 3 + s, rank, full);
        }
      }
      at.advance();
    }
  } else if (threadIdx.x == 32) {
    drain<Stages, Cluster>(r.ring, steps);
  }
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

template <int Stages, variant V, int Cluster>
void run_half(const char* name, const CUtensorMap& map_x, const CUtensorMap& map_w, int ctas, int steps) {
  auto kernel = stream_c128_half<Stages, V, Cluster>;
  const int n = ctas / Cluster * Cluster;
  const int smem = ring_smem<Stages, decltype(kernel), kHalfStage>(kernel);
  const std::string label = std::string("fp16 ") + name;
  time_and_print(label.c_str(), Stages, kernel, n, Cluster, smem, steps,
                 V == a_only   ? double(kHalfA)
                 : V == b_only ? 3.0 * kHalfB
                               : double(kHalfStage),
                 map_x, map_w);
}

void run_half_variants(int sms) {
  __half *x = nullptr, *w = nullptr;
  upload_layer(x, w);
  using u64 = cuuint64_t;
  using u32 = cuuint32_t;
  const u64 pixel = kC * 2ull;
  const u64 dims[4] = {kC, kW, kH, kN};
  const u64 strides[3] = {pixel, pixel * kW, pixel * kW * kH};
  const u32 box[4] = {64, 8, 18, 1};
  const u64 wdims[3] = {kC, kTaps, kK};
  const u64 wstrides[2] = {pixel, pixel * kTaps};
  const u32 wbox[3] = {64, 1, kK}, wbox8[3] = {64, 1, kK / 8};
  CUtensorMap map_x{}, map_w{}, map_w8{};
  if (!encode_sw128_tiled(map_x, x, 4, dims, strides, box) || !encode_sw128_tiled(map_w, w, 3, wdims, wstrides, wbox) ||
      !encode_sw128_tiled(map_w8, w, 3, wdims, wstrides, wbox8)) {
    std::printf("fp16: a map was rejected\n");
    return;
  }
  constexpr int steps = 6 * 60;
  for (int repeat = 0; repeat < 2; ++repeat) {
    run_half<3, ours, 1>("ours", map_x, map_w, sms, steps);
    run_half<3, a_only, 1>("a_only", map_x, map_w, sms, steps);
    run_half<3, b_only, 1>("b_only", map_x, map_w, sms, steps);
    run_half<3, ours, 1>("ours (120)", map_x, map_w, 120, steps);
    run_half<3, b_shared, 8>("b_shared 8", map_x, map_w8, 120, steps);
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(w));
}

}  // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float *x = nullptr, *w = nullptr;
  upload_layer(x, w);
  maps m;
  if (!encode_maps(m, x, w)) {
    std::printf("a map was rejected\n");
    return 1;
  }
  constexpr int steps = 2 * kKSteps * 6;  // 12 tiles' k-steps a CTA
  for (int repeat = 0; repeat < 2; ++repeat) {
    run<6, ours, 1>("ours", m, sms, steps);
    run<6, a_only, 1>("a_only", m, sms, steps);
    run<6, b_only, 1>("b_only", m, sms, steps);
    run<6, a_run, 1>("a_run", m, sms, steps);
    run<6, b_shared, 2>("b_shared 2", m, sms, steps);
    run<6, b_shared, 4>("b_shared 4", m, sms, steps);
    run<6, b_shared, 8>("b_shared 8", m, 120, steps);
    run<6, ours, 1>("ours (120)", m, 120, steps);
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(w));
  run_half_variants(sms);
  return 0;
}
