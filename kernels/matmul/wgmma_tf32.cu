// Step 8b -- wgmma_tf32: C = alpha * op(A) * op(B) + beta * C with Hopper's
// warpgroup tensor-core products (wgmma.mma_async TF32), TMA tile loads and an
// mbarrier pipeline; compiled for sm_90a only. Host interface, conditions and
// precision: wgmma_tf32.cuh.
//
// What changes from tensor_core_tf32 (mma.sync), and why it is faster:
//  * mma.sync moves every operand through registers: a warp loads fragments
//    (ld.shared), converts them to TF32 and issues 16x8x8 products; on Hopper the
//    tensor cores then run at a fraction of their rate. wgmma reads both operands
//    from shared memory itself: one m64n256k8 instruction per warpgroup (4 warps)
//    does 64x256x8, with the accumulators (128 fp32 per thread) in registers.
//  * TMA (cp.async.bulk.tensor.2d) replaces 256 threads' cp.async: one thread
//    issues a 128 x 32-float box, the copy engine zero-fills what overhangs the
//    matrix (ragged m, n, k need no guards in the main loop) and stores it with the
//    128-byte swizzle that wgmma's descriptors read without bank conflicts.
//  * Warp specialization: warpgroup 0 produces (one thread issues the TMA copies,
//    setmaxnreg.dec to 40 registers), warpgroups 1 and 2 consume (setmaxnreg.inc
//    to 232: room for 128 accumulators). Stages hand over through two mbarriers
//    each: "full" (TMA bytes landed) and "empty" (every consumer warp's products
//    that read the stage have completed). 4 stages of 48 KiB are in flight.
//  * Block tile 128 x 256 x 32; with 4-byte elements a tile needs 1.5 KiB of
//    operands per k, so feeding 132 SMs at the tensor-core rate takes ~9 TB/s from
//    L2. A cluster of 2 CTAs (the same n-tile, adjacent m-tiles) loads each B tile
//    once: each CTA fetches half and TMA multicasts it to both, cutting B's L2
//    traffic in half (cluster_size 2, the default; 1 keeps single CTAs).
//  * Grouped rasterization of the clusters for L2 reuse.
// Operands that wgmma cannot read as they are (TF32 wgmma needs both k-contiguous;
// TMA needs 16-byte aligned rows) are repacked first by pack_k_major_kernel into a
// stream-ordered workspace from a per-device memory pool.
// H200: 314.1 TFLOP/s at 4096^3 = 0.85x cuBLAS TF32 (see wgmma_tf32.cuh).

// This translation unit must never instantiate the mma.sync kernel of
// tensor_core_tf32.cuh: built for sm_90a only, its copy of that (weak, shared)
// kernel could be the one the program registers, and other GPUs would then find
// no image for it. So it takes the declarations only; the fallback to mma.sync
// lives in the inline launch_wgmma_tf32, compiled in the launcher's translation unit.
#define KF_WGMMA_TF32_DECLARATIONS_ONLY
#include "matmul/wgmma_tf32.cuh"

#if defined(KERNELFORGE_WGMMA_TF32)

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <cuda.h>  // CUtensorMap (a type only: the driver entry point comes through the runtime)
#include <cudaTypedefs.h>

#include "common/kernel.cuh"
#include "common/launcher.hpp"

namespace kf::detail {
namespace wgmma_tf32 {

// ---- shape of the work ------------------------------------------------------
inline constexpr int warpgroup_threads = 128;
inline constexpr int warps_per_warpgroup = 4;
inline constexpr int consumer_warpgroups = 2;
inline constexpr int threads = (1 + consumer_warpgroups) * warpgroup_threads;  // producer + consumers
inline constexpr int wgmma_m = 64, wgmma_n = 256, wgmma_k = 8;  ///< wgmma.m64n256k8 (TF32)
inline constexpr int accumulators = wgmma_m * wgmma_n / warpgroup_threads;  // 128 per thread
inline constexpr int block_m = consumer_warpgroups * wgmma_m;                // 128
inline constexpr int block_n = wgmma_n;                                      // 256
inline constexpr int block_k = 32;  ///< 32 floats = 128 bytes: one row of the 128-byte swizzle
inline constexpr int stages = 4;
inline constexpr int max_cluster = 2;
/// Registers per thread after setmaxnreg: 128 x 40 + 256 x 232 <= 64K per SM.
inline constexpr int producer_registers = 40;
inline constexpr int consumer_registers = 232;

// ---- shared memory ----------------------------------------------------------
inline constexpr int swizzle_row_bytes = block_k * 4;               // 128
inline constexpr int swizzle_atom_bytes = 8 * swizzle_row_bytes;    // 1024: the XOR pattern's period
inline constexpr int box_rows = 128;                                // one TMA box: 128 rows x 32 floats
inline constexpr int box_bytes = box_rows * swizzle_row_bytes;      // 16 KiB
inline constexpr int a_tile_bytes = block_m * swizzle_row_bytes;    // 16 KiB
inline constexpr int b_tile_bytes = block_n * swizzle_row_bytes;    // 32 KiB
inline constexpr int stage_bytes = a_tile_bytes + b_tile_bytes;     // 48 KiB, the expect-tx count
inline constexpr int barrier_bytes = 8;
/// Tiles start 1024-aligned (the swizzle is a function of the address bits), so
/// the dynamic allocation carries one atom of slack.
inline constexpr int smem_bytes = swizzle_atom_bytes + stages * stage_bytes + 2 * stages * barrier_bytes;
static_assert(block_m == box_rows, "A: one TMA box per stage");
static_assert(block_n == max_cluster * box_rows, "B: one TMA box per CTA of a full cluster");
static_assert(a_tile_bytes % swizzle_atom_bytes == 0 && b_tile_bytes % swizzle_atom_bytes == 0,
              "every tile must start on a swizzle atom");

/// Cluster rows a group of consecutive clusters covers before moving along n (L2 reuse).
inline constexpr int raster_group = 8;
/// TMA coordinates are signed 32-bit: keep the last tile's origin representable.
inline constexpr std::size_t max_extent = (std::size_t{1} << 31) - 2 * block_n;

// ---- repacking pass (operands wgmma cannot read in place) -------------------
inline constexpr int pack_tile = 32;
inline constexpr int pack_rows_per_pass = 8;
inline constexpr unsigned max_grid_y = 65535;
inline constexpr std::size_t workspace_alignment = 256;

struct epilogue_params {
  float* C = nullptr;
  long long ldc = 0;
  int m = 0, n = 0, k = 0;
  float alpha = 0, beta = 0;
  int cluster_rows = 0;  ///< tile rows / cluster size, rounded up
  int tiles_n = 0;
  bool pairs = false;  ///< C rows allow 8-byte stores (C 8-byte aligned, ldc even)
};

// ---- PTX wrappers (sm_90a) --------------------------------------------------
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KF_WGMMA_DEVICE_CODE 1
#endif

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

#if defined(KF_WGMMA_DEVICE_CODE)
__device__ __forceinline__ void mbar_init(std::uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
/// Arrives on the barrier at the same shared-memory offset in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint32_t bar, std::uint32_t cta) {
  std::uint32_t remote = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(cta));
  // Default semantics (release, CTA scope), as CUTLASS's ClusterBarrier: the
  // stage's only readers were this warp's products, already complete; a
  // cluster-scope release would add a GPU-wide memory barrier to every release.
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

__device__ __forceinline__ void tma_load(std::uint32_t dst, const CUtensorMap* map, int k, int row, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(map), "r"(k), "r"(row), "r"(bar)
      : "memory");
}
/// The box lands at offset `dst` (and signals `bar`) in every CTA of `cta_mask`.
__device__ __forceinline__ void tma_load_multicast(std::uint32_t dst, const CUtensorMap* map, int k, int row,
                                                   std::uint32_t bar, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(map), "r"(k), "r"(row), "r"(bar), "h"(cta_mask)
      : "memory");
}

template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Keeps the compiler from moving accumulator accesses across the asynchronous products.
__device__ __forceinline__ void fence_operands(float (&d)[accumulators]) {
#pragma unroll
  for (int i = 0; i < accumulators; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// Shared-memory matrix descriptor of a k-contiguous tile in the 128-byte swizzle:
/// rows of 128 bytes, 8-row atoms 1024 bytes apart. Bits: [0,14) address >> 4,
/// [16,30) leading-dimension byte offset >> 4 (unused by swizzled k-major layouts;
/// 1 by convention), [32,46) stride byte offset >> 4 (atom to atom), [62,64)
/// layout: 1 = 128-byte swizzle. Base offset 0: tiles are 1024-aligned.
__device__ __forceinline__ std::uint64_t smem_descriptor(std::uint32_t address) {
  constexpr std::uint64_t leading_byte_offset = 16;
  constexpr std::uint64_t stride_byte_offset = swizzle_atom_bytes;
  constexpr std::uint64_t swizzle_128b = 1;
  return static_cast<std::uint64_t>((address & 0x3FFFF) >> 4) | ((leading_byte_offset >> 4) << 16) |
         ((stride_byte_offset >> 4) << 32) | (swizzle_128b << 62);
}

/// d (64 x 256, fp32) += A (64 x 8) * B (8 x 256), both TF32 read from shared memory.
__device__ __forceinline__ void wgmma_m64n256k8(float (&d)[accumulators], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
        "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
        "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
        "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "n"(1));
}

/// One consumer warpgroup's 64 x 256 accumulator tile -> C. Accumulator r of a
/// thread: row 16 * warp + lane / 4 + 8 * ((r % 4) / 2), column 8 * (r / 4) +
/// 2 * (lane % 4) + r % 2 -- so accumulators 2h, 2h+1 are adjacent columns.
__device__ __forceinline__ void store_tile(const float (&d)[accumulators], const epilogue_params& ep, long long row0,
                                           long long col0) {
  const bool read_c = ep.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long row = row0 + 8 * h;
    if (row >= ep.m) continue;
    float* const c_row = ep.C + row * ep.ldc;
#pragma unroll
    for (int c = 0; c < accumulators / 4; ++c) {
      const long long col = col0 + 8 * c;
      float v0 = ep.alpha * d[4 * c + 2 * h];
      float v1 = ep.alpha * d[4 * c + 2 * h + 1];
      if (ep.pairs && col + 1 < ep.n) {
        float2* const p = reinterpret_cast<float2*>(c_row + col);
        if (read_c) {
          const float2 old = *p;
          v0 = fmaf(ep.beta, old.x, v0);
          v1 = fmaf(ep.beta, old.y, v1);
        }
        *p = make_float2(v0, v1);
      } else {
        if (col < ep.n) c_row[col] = read_c ? fmaf(ep.beta, c_row[col], v0) : v0;
        if (col + 1 < ep.n) c_row[col + 1] = read_c ? fmaf(ep.beta, c_row[col + 1], v1) : v1;
      }
    }
  }
}
#endif  // KF_WGMMA_DEVICE_CODE

}  // namespace wgmma_tf32

/// One CTA: a 128 x 256 tile of C (see the file comment). map_a: A as m x k,
/// map_b: op(B)^T as n x k, both k-contiguous, boxes of 128 rows x 32 floats.
template <int Cluster>
KF_KERNEL void __launch_bounds__(wgmma_tf32::threads, 1)
    wgmma_tf32_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const wgmma_tf32::epilogue_params ep) {
#if defined(__CUDA_ARCH__) && !defined(KF_WGMMA_DEVICE_CODE)
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif defined(KF_WGMMA_DEVICE_CODE)
  using namespace wgmma_tf32;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs");
  extern __shared__ unsigned char wgmma_tf32_smem[];
  const std::uint32_t raw = smem_address(wgmma_tf32_smem);
  const std::uint32_t base = (raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1);
  const std::uint32_t a_smem = base;                                   // stages x A tile
  const std::uint32_t b_smem = base + stages * a_tile_bytes;           // stages x B tile
  const std::uint32_t full_bar = base + stages * stage_bytes;          // stages x mbarrier
  const std::uint32_t empty_bar = full_bar + stages * barrier_bytes;   // stages x mbarrier

  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  const std::uint32_t rank = Cluster > 1 ? cluster_rank() : 0;

  // Grouped rasterization over clusters; the CTAs of a cluster take adjacent m-tiles.
  const int cluster_id = blockIdx.x / Cluster;
  const int group_clusters = raster_group * ep.tiles_n;
  const int group = cluster_id / group_clusters;
  const int first_row = group * raster_group;
  const int rows_in_group = min(ep.cluster_rows - first_row, raster_group);
  const int in_group = cluster_id - group * group_clusters;
  const int tile_m = (first_row + in_group % rows_in_group) * Cluster + static_cast<int>(rank);
  const int tile_n = in_group / rows_in_group;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < stages; ++s) {
      mbar_init(full_bar + s * barrier_bytes, 1);  // the producer's arrive.expect_tx
      // Every consumer warp of every CTA whose products read this stage (B is shared).
      mbar_init(empty_bar + s * barrier_bytes, consumer_warpgroups * warps_per_warpgroup * Cluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  // Every CTA's barriers exist before any TMA or remote arrive touches them.
  if constexpr (Cluster > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  const int k_tiles = (ep.k + block_k - 1) / block_k;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      int stage = 0;
      std::uint32_t phase = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        // Round r of a stage waits for the consumers' release of round r - 1.
        if (kt >= stages) mbar_wait(empty_bar + stage * barrier_bytes, phase ^ 1);
        const std::uint32_t full = full_bar + stage * barrier_bytes;
        mbar_arrive_expect_tx(full, stage_bytes);  // A + all of B, wherever B's halves come from
        const int k0 = kt * block_k;
        tma_load(a_smem + stage * a_tile_bytes, &map_a, k0, tile_m * block_m, full);
        const std::uint32_t b_stage = b_smem + stage * b_tile_bytes;
        if constexpr (Cluster == 1) {
          tma_load(b_stage, &map_b, k0, tile_n * block_n, full);
          tma_load(b_stage + box_bytes, &map_b, k0, tile_n * block_n + box_rows, full);
        } else {
          constexpr std::uint16_t whole_cluster = (1u << Cluster) - 1;
          tma_load_multicast(b_stage + rank * box_bytes, &map_b, k0, tile_n * block_n + rank * box_rows, full,
                             whole_cluster);
        }
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp_in_warpgroup = tid_in_warpgroup / 32;

    float d[accumulators];
#pragma unroll
    for (int i = 0; i < accumulators; ++i) d[i] = 0.0f;
    fence_operands(d);

    int stage = 0;
    std::uint32_t phase = 0;
    int previous = -1;
    for (int kt = 0; kt < k_tiles; ++kt) {
      mbar_wait(full_bar + stage * barrier_bytes, phase);
      const std::uint32_t a_tile = a_smem + stage * a_tile_bytes + consumer * wgmma_m * swizzle_row_bytes;
      const std::uint32_t b_tile = b_smem + stage * b_tile_bytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < block_k / wgmma_k; ++kk) {
        // Along k inside a swizzled row: 8 floats = 32 bytes per product.
        const std::uint32_t k_bytes = kk * wgmma_k * 4;
        wgmma_m64n256k8(d, smem_descriptor(a_tile + k_bytes), smem_descriptor(b_tile + k_bytes));
      }
      wgmma_commit();
      // Keep this stage's products in flight; the previous stage's have completed.
      wgmma_wait<1>();
      if (previous >= 0 && lane == 0) {
        const std::uint32_t empty = empty_bar + previous * barrier_bytes;
        if constexpr (Cluster == 1) {
          mbar_arrive(empty);
        } else {
#pragma unroll
          for (int cta = 0; cta < Cluster; ++cta) mbar_arrive_cluster(empty, cta);
        }
      }
      previous = stage;
      if (++stage == stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    fence_operands(d);

    const long long row0 = static_cast<long long>(tile_m) * block_m + consumer * wgmma_m + warp_in_warpgroup * 16 +
                           lane / 4;
    const long long col0 = static_cast<long long>(tile_n) * block_n + 2 * (lane % 4);
    store_tile(d, ep, row0, col0);
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

/// dst (rows x k, k-contiguous, row stride ld_dst) = the operand whose element
/// (x, p) lies at src[x * ld_src + p] (SourceKContiguous) or src[p * ld_src + x].
/// 32 x 32 tiles; the transposing case goes through shared memory so that both
/// the reads and the writes are coalesced.
template <bool SourceKContiguous>
KF_KERNEL void __launch_bounds__(wgmma_tf32::pack_tile * wgmma_tf32::pack_rows_per_pass)
    pack_k_major_kernel(const float* __restrict__ src, long long ld_src, float* __restrict__ dst, long long ld_dst,
                        long long rows, long long k) {
#if defined(__CUDA_ARCH__) && !defined(KF_WGMMA_DEVICE_CODE)
  __trap();
#elif defined(KF_WGMMA_DEVICE_CODE)
  using namespace wgmma_tf32;
  __shared__ float tile[pack_tile][pack_tile + 1];  // +1: the transposed read is conflict-free
  const long long x0 = static_cast<long long>(blockIdx.x) * pack_tile;
  const long long k_tiles = (k + pack_tile - 1) / pack_tile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (long long kt = blockIdx.y; kt < k_tiles; kt += gridDim.y) {
    const long long p0 = kt * pack_tile;
    if constexpr (SourceKContiguous) {
#pragma unroll
      for (int r = 0; r < pack_tile; r += pack_rows_per_pass) {
        const long long x = x0 + ty + r, p = p0 + tx;
        if (x < rows && p < k) dst[x * ld_dst + p] = src[x * ld_src + p];
      }
    } else {
#pragma unroll
      for (int r = 0; r < pack_tile; r += pack_rows_per_pass) {
        const long long p = p0 + ty + r, x = x0 + tx;
        tile[ty + r][tx] = (x < rows && p < k) ? src[p * ld_src + x] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int r = 0; r < pack_tile; r += pack_rows_per_pass) {
        const long long x = x0 + ty + r, p = p0 + tx;
        if (x < rows && p < k) dst[x * ld_dst + p] = tile[tx][ty + r];
      }
      __syncthreads();  // the tile is rewritten by the next k-tile
    }
  }
#endif
}

namespace wgmma_tf32 {
namespace {

constexpr const char* what = "kf::matmul (wgmma_tf32)";

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    constexpr unsigned driver_api_version = 12000;  // the cuTensorMapEncodeTiled ABI introduced in CUDA 12.0
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, driver_api_version, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      entry = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return fn;
}

/// TMA map of a k-contiguous rows x k matrix with row stride ld floats; boxes of
/// box_rows x block_k, 128-byte swizzle, zero fill outside the matrix.
bool encode_k_major(CUtensorMap& map, const float* base, std::size_t rows, std::size_t k, std::size_t ld) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {k, rows};
  const cuuint64_t strides[1] = {ld * sizeof(float)};
  const cuuint32_t box[2] = {block_k, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), dims, strides, box,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// TMA reads rows in place when the base and every row start are 16-byte aligned.
bool tma_ready(const float* p, std::size_t ld) {
  constexpr std::size_t tma_alignment = 16;
  return reinterpret_cast<std::uintptr_t>(p) % tma_alignment == 0 && (ld * sizeof(float)) % tma_alignment == 0;
}

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

void allow_dynamic_smem(int device) {
  detail::allow_dynamic_smem<&wgmma_tf32_kernel<1>>(device, static_cast<int>(smem_bytes), what);
  detail::allow_dynamic_smem<&wgmma_tf32_kernel<max_cluster>>(device, static_cast<int>(smem_bytes), what);
}


void launch_pack(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                 std::size_t rows, std::size_t k, cudaStream_t stream) {
  const dim3 block(pack_tile, pack_rows_per_pass);
  const std::size_t k_tiles = (k + pack_tile - 1) / pack_tile;
  const dim3 grid(static_cast<unsigned>((rows + pack_tile - 1) / pack_tile),
                  static_cast<unsigned>(k_tiles < max_grid_y ? k_tiles : max_grid_y));
  const auto ll = [](std::size_t v) { return static_cast<long long>(v); };
  if (source_k_contiguous) {
    pack_k_major_kernel<true><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  } else {
    pack_k_major_kernel<false><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  }
  check_launch(what);
}

}  // namespace
}  // namespace wgmma_tf32

bool wgmma_tf32_available(int device) {
  if (device < 0 || device >= max_cached_devices) return false;
  return compute_capability(device) == 90;  // sm_90a code runs on compute capability 9.0 only
}

bool wgmma_tf32_try_launch(const gemm_args<float>& args, cudaStream_t stream, int cluster_size) {
  using namespace wgmma_tf32;
  const int device = current_device(what);
  if (!wgmma_tf32_available(device)) return false;
  // The library's own architecture list decides, as for every other kernel: a
  // copy built without this device's architecture raises no_kernel_image here.
  require_kernel_image_cached(device, what);
  if (args.m > max_extent || args.n > max_extent || args.k > max_extent) return false;
  const std::size_t tiles_m = (args.m + block_m - 1) / block_m;
  const std::size_t tiles_n = (args.n + block_n - 1) / block_n;
  const std::size_t cluster_rows = (tiles_m + max_cluster - 1) / max_cluster;
  if (cluster_rows * max_cluster * tiles_n > limits_for(device).max_grid_x) return false;
  if (encode_tiled() == nullptr) return false;
  const int cluster = cluster_size == 1 ? 1 : max_cluster;
  allow_dynamic_smem(device);

  // A as m x k and op(B)^T as n x k, both k-contiguous with 16-byte aligned rows;
  // whatever is not gets a repacked copy (row stride: k rounded up to 4 floats).
  const bool pack_a = args.trans_a || !tma_ready(args.A, args.lda);
  const bool pack_b = !args.trans_b || !tma_ready(args.B, args.ldb);
  const std::size_t ld_packed = round_up(args.k, 4);
  const std::size_t a_bytes = pack_a ? round_up(args.m * ld_packed * sizeof(float), workspace_alignment) : 0;
  const std::size_t b_bytes = pack_b ? round_up(args.n * ld_packed * sizeof(float), workspace_alignment) : 0;
  void* workspace = nullptr;
  if (a_bytes + b_bytes > 0) {
    const cudaMemPool_t pool = workspace_pool(device);
    if (pool == nullptr || cudaMallocFromPoolAsync(&workspace, a_bytes + b_bytes, pool, stream) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky; leave nothing behind for the next check
      return false;
    }
  }
  float* const packed_a = static_cast<float*>(workspace);
  float* const packed_b = reinterpret_cast<float*>(static_cast<char*>(workspace) + a_bytes);
  const float* const a = pack_a ? packed_a : args.A;
  const float* const b = pack_b ? packed_b : args.B;
  const std::size_t lda = pack_a ? ld_packed : args.lda;
  const std::size_t ldb = pack_b ? ld_packed : args.ldb;

  CUtensorMap map_a{}, map_b{};
  if (!encode_k_major(map_a, a, args.m, args.k, lda) || !encode_k_major(map_b, b, args.n, args.k, ldb)) {
    if (workspace != nullptr) cuda_check(cudaFreeAsync(workspace, stream), what);
    return false;
  }

  if (pack_a) launch_pack(args.A, args.lda, !args.trans_a, packed_a, ld_packed, args.m, args.k, stream);
  if (pack_b) launch_pack(args.B, args.ldb, args.trans_b, packed_b, ld_packed, args.n, args.k, stream);

  epilogue_params ep;
  ep.C = args.C;
  ep.ldc = static_cast<long long>(args.ldc);
  ep.m = static_cast<int>(args.m);
  ep.n = static_cast<int>(args.n);
  ep.k = static_cast<int>(args.k);
  ep.alpha = args.alpha;
  ep.beta = args.beta;
  ep.tiles_n = static_cast<int>(tiles_n);
  ep.cluster_rows = static_cast<int>((tiles_m + cluster - 1) / cluster);
  ep.pairs = reinterpret_cast<std::uintptr_t>(args.C) % sizeof(float2) == 0 && args.ldc % 2 == 0;

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(static_cast<long long>(ep.cluster_rows) * cluster * ep.tiles_n));
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute cluster_dims[1];
  cluster_dims[0].id = cudaLaunchAttributeClusterDimension;
  cluster_dims[0].val.clusterDim.x = static_cast<unsigned>(cluster);
  cluster_dims[0].val.clusterDim.y = 1;
  cluster_dims[0].val.clusterDim.z = 1;
  config.attrs = cluster_dims;
  config.numAttrs = cluster > 1 ? 1 : 0;  // single CTAs: an ordinary launch
  cudaError_t status = cluster == 1 ? cudaLaunchKernelEx(&config, wgmma_tf32_kernel<1>, map_a, map_b, ep)
                                    : cudaLaunchKernelEx(&config, wgmma_tf32_kernel<max_cluster>, map_a, map_b, ep);
  cuda_check(status, what);
  check_launch(what);
  if (workspace != nullptr) cuda_check(cudaFreeAsync(workspace, stream), what);
  return true;
}

}  // namespace kf::detail

#else  // !KERNELFORGE_WGMMA_TF32: the library's list has no 90; nothing to run.

namespace kf::detail {

bool wgmma_tf32_available(int) { return false; }

bool wgmma_tf32_try_launch(const gemm_args<float>&, cudaStream_t, int) { return false; }

}  // namespace kf::detail

#endif
