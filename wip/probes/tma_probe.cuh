// SPDX-License-Identifier: Apache-2.0
// The TMA probes' shared parts (wip/probes/tma_rows.cu, tma_dram.cuh; not part of
// the library): the box walk, a CTA's stage ring and its draining consumer, and on
// the host the NHWC tensor maps, the ring's shared memory and the event timing.
#pragma once

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
