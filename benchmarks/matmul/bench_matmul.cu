// SPDX-License-Identifier: Apache-2.0
// bench_matmul: every step of the matrix-product progression against cuBLAS, in
// one run so that every comparison is a ratio of figures measured together.
//
//   matmul/fp32/<variant>/<m>x<n>x<k>        kf::matmul, math_mode::exact (best: what the
//                                            library picks, large_tile or warp_tiled: tuning.hpp)
//   matmul/fp32/cublas/<m>x<n>x<k>           cublasSgemm, default math (no TF32)
//   matmul/tf32/tensor_core_tf32/<shape>     kf::matmul, math_mode::tf32 (wgmma on sm_90a, else mma.sync;
//                                            the row-major B read by the swapped product: tuning.hpp,
//                                            choose_wgmma_b_source)
//   matmul/tf32/mma_sync/<shape>             the mma.sync kernel alone (launch_tensor_core_tf32)
//   matmul/fp32_emulated/best_vs_cublas/<shape>  kf::matmul, math_mode::fp32_emulated (step 15: three TF32
//                                            products on wgmma; step 16, mma.sync, off compute capability
//                                            9.0) paired with cublasSgemm (no TF32), checked
//                                            at the exact rows' tolerance; every pair row reports
//                                            max_error and baseline_max_error (|got - ref| / sum |a b|
//                                            over the spot check's 16 entries, double reference)
//   matmul/fp32_emulated/mma_sync_vs_cublas/<shape>  step 16 (three TF32 products on mma.sync, what
//                                            fp32_emulated runs where wgmma does not) through its launcher
//                                            (mma_sync_fp32_emulated_try_launch, the pre-pass included),
//                                            paired with cublasSgemm as the row above, with its errors
//   matmul/tf32/wgmma_repack_b/<shape>       the wgmma kernel with the row-major B repacked k-major in HBM
//                                            first (wgmma_try_launch, wgmma_tf32_b_mode::repack)
//   matmul/tf32/wgmma_mcast_{a,b}/<shape>    the wgmma kernel as tensor_core_tf32 runs it (B's source and
//                                            the tile width by shape), its clusters of 2 forced to share
//                                            A (adjacent n-tiles) or B (adjacent m-tiles; tuning.hpp:
//                                            wgmma_cluster_shares_a); 1024^3, 2048^3, 128x8192x8192, 8192x8192x1024
//   matmul/tf32/wgmma_cluster_splitk/<shape> the wgmma kernel's cluster split-k (wgmma_cluster_mode::split_k:
//                                            a cluster of 2 CTAs on each 128 x 128 tile, each over half
//                                            of k, the halves added in shared memory); 1024^3,
//                                            128x8192x8192 and every KF_BENCH_MATMUL_SHAPES shape
//   matmul/tf32/cublas/<shape>               cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32
//   matmul/fp32/tuning/<config>/<shape>      warp_tiled with other tile configurations
//                                            (NN, 16-byte path), to choose tuning.hpp from data;
//                                            tuning/large_*: large_tile with k-slices of 8 (4096^3)
//   matmul/{fp16,bf16}/tensor_core_f16/<shape>  kf::matmul<__half / __nv_bfloat16>, mma.sync step
//   matmul/{fp16,bf16}/wgmma_step{11,12,13}/<shape>  the Hopper learning steps (wgmma_step_try_launch):
//                                               11 wgmma + TMA, 12 warp-specialized, 13 clusters sharing B
//   matmul/{fp16,bf16}/wgmma_f16/<shape>        kf::matmul, wgmma step 14 (mma.sync where wgmma cannot run)
//   matmul/{fp16,bf16}/wgmma_f16_n128/<shape>   the wgmma kernel on 128 x 128 tiles (split-k by the library's
//                                               rule), where the library runs 128 x 64 (1024^3, 128x8192x8192)
//   matmul/{fp16,bf16}/wgmma_mcast_{a,b}/<shape>  the wgmma kernel at the library's tile width, its
//                                               clusters forced to share A or B (as the tf32 rows)
//   matmul/{fp16,bf16}/wgmma_cluster_splitk/<shape>  the cluster split-k (as the tf32 row)
//   matmul/{fp16,bf16}/cublas/<shape>           cublasGemmEx, CUDA_R_16F / CUDA_R_16BF, CUBLAS_COMPUTE_32F
//                                               (fp32 accumulation, alpha / beta float, C in the same type)
//   matmul/<precision>/best_vs_cublas/<shape>  what the library runs by shape (fp32: best; tf32:
//                                               tensor_core_tf32; fp16 / bf16: best) and the cuBLAS row of
//                                               its precision, timed in turn sample by sample
//                                               (time_gpu_paired): frac_cublas from the same pairs,
//                                               cublas_TFLOP/s beside ours. The ratios to cuBLAS are read
//                                               here: under the power cap a row's figure moves with its
//                                               place in the run, a pair's ratio much less
//   matmul/<tf32|fp16|bf16>/mcast_a_vs_b/<shape>  the wgmma kernel at the library's tile width, its
//                                               clusters forced to share A and forced to share B, timed
//                                               in turn: a_over_b = B's time / A's (tuning.hpp's
//                                               wgmma_cluster_shares_a is read from these)
//   matmul/<fp32|tf32>/fused_bias_relu/<shape>    kf::matmul with options.bias + options.relu
//                                                 (the epilogue in the GEMM's registers)
//   matmul/<fp32|tf32>/unfused_bias_relu/<shape>  kf::matmul, then the bias added by kf::transform
//                                                 (C += a row-broadcast m x n bias matrix, in place),
//                                                 then kf::relu_threshold_forward in place: the same
//                                                 result in three passes; 4096^3 and 8192x8192x1024 only
//   matmul/pack/memcpy_{f32,f16}/<rows>x<k>      cudaMemcpyAsync of a rows x k operand (device to device):
//                                                the copy rate the pack rows' frac_copy divides by
//   matmul/pack/{f32,f16}_transpose/<rows>x<k>  the wgmma steps' repack alone (wgmma_pack_k_major,
//                                                include/kernelforge/kernels/matmul/pack_k_major.cuh) of a k x rows
//                                                operand stored rows-contiguous (TF32 B of the row-major product, a
//                                                transposed A): 16-byte loads and stores
//   matmul/pack/{f32,f16}_copy/<rows>x<k>       the same of a k-contiguous operand (no transpose)
//   matmul/pack/{f32,f16}_{transpose,copy}_misaligned/4096x4096  the source one element past an aligned
//                                                address: element-wise loads (what the GEMM repacks
//                                                misaligned operands with), 16-byte stores
//                                                pack rows: GB/s = (bytes read + bytes written) / time,
//                                                frac_peak of the device's DRAM bandwidth, frac_copy
//
// Shapes: the seven above (1024^3 ... 128 x 8192 x 8192), or those listed in the
// environment variable KF_BENCH_MATMUL_SHAPES ("MxNxK,MxNxK,...", e.g. a k sweep
// 1024x1024x64,1024x1024x256,1024x1024x1024 that separates a kernel's fixed cost
// from its per-k cost).
//
// Row-major C = A B with A m x k, B k x n, C m x n, unpadded (lda = k, ldb = n,
// ldc = n), alpha = 1, beta = 0. cuBLAS (column-major) computes the same
// product as C^T = B^T A^T. For each shape cuBLAS runs first and its time is
// kept, so every kernelforge row gets frac_cublas = t_cublas / t_row.
//
// Counters: TFLOP/s (2 m n k per call), frac_peak (of the device's FP32 peak
// for fp32 rows; for tf32 rows of the TF32 dense peak, taken as 8 x the FP32
// peak on compute capability 8.0, 9.x and 10.x -- A100: 156 = 8 x 19.5; on the
// H200 8 x 67 = 535 TFLOP/s at the 1.98 GHz boost clock, against the
// datasheet's 495 at 1.83 GHz -- and 1 x on 8.6, 8.9 and 12.x; fp16 / bf16
// rows: twice that TF32 peak), frac_cublas (cuBLAS of the same precision).
//
// Time budget (< 4 minutes on an H200): the slow steps (naive, coalesced,
// smem_tiled, blocktile_1d) run on 1024^3, 2048^3 and 4096^3 only (naive at
// 4096^3 takes ~0.1-0.3 s a call: 1 warm-up, 2 timed); the fast ones and cuBLAS
// on every shape, with iteration counts sized to ~0.25 s of GPU time per row.
// Before a row is timed, a spot check compares 16 entries of its result with
// a double-precision dot product on the host: a wrong kernel is reported as
// an error, never timed.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <type_traits>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "bench_matmul.hpp"
#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "kernelforge/matmul.hpp"
#include "kernelforge/transform.cuh"

#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated.hpp"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

namespace kf::bench::matmul {

// Alternative warp_tiled configurations (the library's own is the warp_tiled
// row). They carry the large_smem id, so they run only where that family runs
// (sm_80, sm_90, sm_100...). Outside the anonymous namespace: kernels templated
// on them need external linkage for their hidden visibility.
using kf::detail::warp_tiled_large_smem;
struct tune_128x128x16 : warp_tiled_large_smem {
  static constexpr int block_k = 16;
};
struct tune_128x128x32_4stages : warp_tiled_large_smem {
  static constexpr int stages = 4;
};
struct tune_128x256x16 : warp_tiled_large_smem {
  static constexpr int block_n = 256, thread_n = 16, block_k = 16;
};
struct tune_128x128x16_2blocks : warp_tiled_large_smem {
  static constexpr int block_k = 16, min_blocks_per_sm = 2;
};

// Alternative large_tile configurations (the library's own is the large_tile
// row): k-slices of 8 (one barrier per 1024 FMAs a thread, a main loop half
// as long in instructions) with 3 or 4 stages.
using kf::detail::large_tile_128x256;
using kf::detail::warp_tiled_tuning_id;
struct tune_large_k8_3stages : large_tile_128x256<warp_tiled_tuning_id::large_smem> {
  static constexpr int block_k = 8, stages = 3;
};
struct tune_large_k8_4stages : large_tile_128x256<warp_tiled_tuning_id::large_smem> {
  static constexpr int block_k = 8, stages = 4;
};

/// The unfused rows' bias add: c + bias (kf::transform over C and a broadcast bias matrix).
struct add_op {
  __device__ float operator()(float c, float bias) const { return c + bias; }
};

// ---- inputs (bench_matmul.hpp: the pack rows' file uses them too) --------------
/// Magnitudes in [0.5, 1) with a random sign: never zero, never denormal.
__global__ void fill_random_kernel(float* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float magnitude = 0.5f + 0.5f * static_cast<float>(h >> 40) * (1.0f / (1u << 24));
    data[i] = (h & 1u) ? -magnitude : magnitude;
  }
}

void fill_random(float* data, std::size_t n, std::uint64_t seed) {
  const std::size_t blocks = std::min<std::size_t>((n + fill_block - 1) / fill_block, fill_max_blocks);
  fill_random_kernel<<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), fill_block>>>(data, n, seed);
  check(cudaGetLastError(), "fill_random");
}

namespace {

/// A, B and C of one shape, kept while consecutive benchmarks use that shape.
struct operands {
  shape s;
  kf::device_buffer<float> a, b, c;
  explicit operands(const shape& s_) : s(s_), a(s_.m * s_.k), b(s_.k * s_.n), c(s_.m * s_.n) {
    fill_random(a.data(), a.size(), 1);
    fill_random(b.data(), b.size(), 2);
    check(cudaDeviceSynchronize(), "fill");
  }
};

/// The fused / unfused rows' bias: n values (bias) and the same broadcast to m x n rows (bias_rows).
struct bias_operands {
  shape s;
  kf::device_buffer<float> bias, bias_rows;
  explicit bias_operands(const shape& s_) : s(s_), bias(s_.n), bias_rows(s_.m * s_.n) {
    fill_random(bias.data(), bias.size(), 3);
    for (std::size_t i = 0; i < s.m; ++i) {
      check(cudaMemcpy(bias_rows.data() + i * s.n, bias.data(), s.n * sizeof(float), cudaMemcpyDeviceToDevice),
            "broadcast bias");
    }
    check(cudaDeviceSynchronize(), "fill bias");
  }
};

bias_operands& bias_for(const shape& s) {
  static std::unique_ptr<bias_operands> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();
    current = std::make_unique<bias_operands>(s);
  }
  return *current;
}

operands& operands_for(const shape& s) {
  static std::unique_ptr<operands> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();  // free the previous shape's buffers first
    current = std::make_unique<operands>(s);
  }
  return *current;
}

}  // namespace

void release_fp32_operands() { operands_for(shape{1, 1, 1}); }

namespace {

// ---- implementations -----------------------------------------------------------
/// Row-major C = A B through column-major cuBLAS: C^T = B^T A^T.
void cublas_matmul(operands& p, bool tf32, cudaStream_t stream) {
  const float alpha = 1.f, beta = 0.f;
  const int m = static_cast<int>(p.s.m), n = static_cast<int>(p.s.n), k = static_cast<int>(p.s.k);
  cublas_check(cublasSetStream(cublas(), stream), "cublasSetStream");
  if (!tf32) {
    cublas_check(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, p.b.data(), n, p.a.data(), k, &beta,
                             p.c.data(), n),
                 "cublasSgemm");
  } else {
    cublas_check(cublasGemmEx(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, p.b.data(), CUDA_R_32F, n,
                              p.a.data(), CUDA_R_32F, k, &beta, p.c.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (TF32)");
  }
}

kf::detail::gemm_args<float> args_of(operands& p) {
  kf::detail::gemm_args<float> g;
  g.m = p.s.m, g.n = p.s.n, g.k = p.s.k;
  g.alpha = 1.f, g.beta = 0.f;
  g.A = p.a.data(), g.lda = p.s.k;
  g.B = p.b.data(), g.ldb = p.s.n;
  g.C = p.c.data(), g.ldc = p.s.n;
  return g;
}

/// Launches configuration Config on the untransposed product directly (no
/// split-k: the tuning shapes fill the GPU), through the library's own
/// per-device preparation; the 16-byte or the 4-byte copy path as alignment allows.
template <class Config>
void launch_tuning(operands& p, cudaStream_t stream) {
  namespace d = kf::detail;
  const d::gemm_args<float> g = args_of(p);
  const int device = d::current_device("bench tuning");
  d::tile_params x = d::make_tile_params<Config>(g);
  x.k_slice = g.k;
  const dim3 grid(static_cast<unsigned>(x.tiles_m * x.tiles_n));
  constexpr int threads = Config::warps_m * Config::warps_n * 32;
  constexpr std::size_t smem = d::warp_tiled_layout<Config, false, false>::smem_bytes;
  const auto run = [&](auto kernel) {
    d::resident_blocks_per_sm<decltype(kernel)::value>(device, threads, smem, "bench tuning");  // smem opt-in
    decltype(kernel)::value<<<grid, threads, smem, stream>>>(g, x, kf::epilogue::identity{});
  };
  if (d::rows_16b_aligned(g.A, g.lda) && d::rows_16b_aligned(g.B, g.ldb)) {
    run(std::integral_constant<decltype(&d::matmul_warp_tiled<Config, false, false, true>),
                               &d::matmul_warp_tiled<Config, false, false, true>>{});
  } else {
    run(std::integral_constant<decltype(&d::matmul_warp_tiled<Config, false, false, false>),
                               &d::matmul_warp_tiled<Config, false, false, false>>{});
  }
  d::check_launch("bench tuning");
}

/// Launches large_tile configuration Config on the untransposed product
/// directly (no split-k: the tuning shapes fill the GPU; 16-byte copies: the
/// bench's operands are aligned).
template <class Config>
void launch_large_tuning(operands& p, cudaStream_t stream) {
  namespace d = kf::detail;
  const d::gemm_args<float> g = args_of(p);
  const int device = d::current_device("bench tuning");
  d::tile_params x = d::make_tile_params<Config>(g);
  x.k_slice = g.k;
  if (!d::rows_16b_aligned(g.A, g.lda) || !d::rows_16b_aligned(g.B, g.ldb)) {
    throw std::runtime_error("large_tile tuning rows: 16-byte aligned operands only");
  }
  d::large_tile_blocks_per_sm<Config, false, false, true, kf::epilogue::identity>(device);  // smem opt-in
  d::matmul_large_tile<Config, false, false, true>
      <<<static_cast<unsigned>(x.tiles_m * x.tiles_n), Config::threads, d::large_tile_layout<Config>::smem_bytes,
         stream>>>(g, x, kf::epilogue::identity{});
  d::check_launch("bench tuning");
}

enum class impl { kf, cublas, mma_sync, mma_sync_emulated, wgmma_repack_b, wgmma_cluster_mode, tuning, fused, unfused };

struct row {
  std::string precision;  // "fp32" or "tf32"
  std::string name;       // variant, "cublas", "mma_sync" or "tuning/<config>"
  impl kind = impl::kf;
  kf::matmul_variant variant = kf::matmul_variant::best;
  void (*tuning)(operands&, cudaStream_t) = nullptr;
  double expected_tflops = 1;  // for iteration counts only
  int warmups = 3;
  int block_n = 0;  // wgmma_repack_b: the tile width, 0 by shape
  kf::detail::wgmma_cluster_mode multicast = kf::detail::wgmma_cluster_mode::by_shape;  // wgmma_cluster_mode rows
};

/// Enqueues one call of `r` on `stream`.
void run(const row& r, operands& p, cudaStream_t stream) {
  switch (r.kind) {
    case impl::cublas: return cublas_matmul(p, r.precision == "tf32", stream);
    case impl::tuning: return r.tuning(p, stream);
    case impl::mma_sync: kf::detail::launch_tensor_core_tf32(args_of(p), stream); return;
    case impl::mma_sync_emulated:
      if (!kf::detail::mma_sync_fp32_emulated_try_launch(args_of(p), {}, kf::detail::current_device("bench"), stream)) {
        throw std::runtime_error("step 16 found no workspace for the split operands");
      }
      return;
    case impl::wgmma_repack_b:
      if (!kf::detail::wgmma_try_launch(
              args_of(p), stream,
              {2, r.block_n, kf::detail::wgmma_cluster_mode::by_shape, kf::detail::wgmma_tf32_b_mode::repack})) {
        throw std::runtime_error(
            "the wgmma TF32 kernel does not run here (compute capability 9.0 and 90 in the build)");
      }
      return;
    case impl::wgmma_cluster_mode:
      if (!kf::detail::wgmma_try_launch(args_of(p), stream, {2, 0, r.multicast})) {
        throw std::runtime_error(
            "the wgmma TF32 kernel does not run here (compute capability 9.0 and 90 in the build)");
      }
      return;
    case impl::kf:
    case impl::fused:
    case impl::unfused: {
      kf::matmul_options o;
      o.stream = stream;
      o.variant = r.variant;
      o.math = r.precision == "tf32"            ? kf::math_mode::tf32
               : r.precision == "fp32_emulated" ? kf::math_mode::fp32_emulated
                                                : kf::math_mode::exact;
      if (r.kind == impl::fused) {
        o.bias = bias_for(p.s).bias.data();
        o.relu = true;
      }
      kf::matmul<float>(kf::op::none, kf::op::none, p.s.m, p.s.n, p.s.k, 1.f, p.a.data(), p.s.k, p.b.data(), p.s.n, 0.f,
                        p.c.data(), p.s.n, o);
      if (r.kind == impl::unfused) {
        const std::size_t mn = p.s.m * p.s.n;
        kf::transform(mn, add_op{}, p.c.data(), p.c.data(), bias_for(p.s).bias_rows.data(),
                      kf::transform_options{stream});
        kf::elementwise_options e;
        e.stream = stream;
        kf::relu_threshold_forward<float>(mn, p.c.data(), p.c.data(), 0.0f, e);
      }
      return;
    }
  }
}

/// Runs `r` once and compares 16 entries of C with a double-precision dot
/// product. Tolerance relative to sum |a||b|: 1e-5 for fp32, 4 * 2^-10 for tf32.
/// The largest |got - ref| / sum |a b| over the last spot check's 16 entries.
double& last_spot_error() {
  static double e = 0;
  return e;
}

std::string spot_check(const row& r, operands& p) {
  last_spot_error() = 0;
  check(cudaMemset(p.c.data(), 0xFF, p.c.size_bytes()), "poison C");
  run(r, p, nullptr);
  check(cudaDeviceSynchronize(), "spot check run");
  const double tol = r.precision == "tf32" ? 4.0 / 1024.0 : 1e-5;
  std::vector<float> arow(p.s.k), bcol(p.s.k);
  for (int t = 0; t < 16; ++t) {
    const std::size_t i = mix64(100 + t) % p.s.m, j = mix64(200 + t) % p.s.n;
    float got = 0;
    check(cudaMemcpy(arow.data(), p.a.data() + i * p.s.k, p.s.k * sizeof(float), cudaMemcpyDeviceToHost), "copy A row");
    check(cudaMemcpy2D(bcol.data(), sizeof(float), p.b.data() + j, p.s.n * sizeof(float), sizeof(float), p.s.k,
                       cudaMemcpyDeviceToHost),
          "copy B column");
    check(cudaMemcpy(&got, p.c.data() + i * p.s.n + j, sizeof(float), cudaMemcpyDeviceToHost), "copy C entry");
    double ref = 0, scale = 0;
    for (std::size_t q = 0; q < p.s.k; ++q) {
      ref += double(arow[q]) * double(bcol[q]);
      scale += std::fabs(double(arow[q]) * double(bcol[q]));
    }
    if (r.kind == impl::fused || r.kind == impl::unfused) {  // relu(ref + bias[j]), threshold 0
      float bias = 0;
      check(cudaMemcpy(&bias, bias_for(p.s).bias.data() + j, sizeof(float), cudaMemcpyDeviceToHost), "copy bias");
      ref = ref + bias <= 0 ? 0 : ref + bias;
      scale += std::fabs(bias);
    }
    last_spot_error() = std::max(last_spot_error(), std::fabs(double(got) - ref) / scale);
    if (!(std::fabs(double(got) - ref) <= tol * scale)) {
      return r.name + " is wrong at (" + std::to_string(i) + ", " + std::to_string(j) + "): got " +
             std::to_string(got) + ", expected " + std::to_string(ref);
    }
  }
  return {};
}

void bm_matmul(benchmark::State& state, row r, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if (r.kind == impl::tuning && kf::detail::warp_tiled_tuning_of(kf::detail::current_device("bench")) !=
                                      kf::detail::warp_tiled_tuning_id::large_smem) {
      state.SkipWithError("tuning rows use the large_smem configuration family (sm_80, sm_90, sm_100)");
      return;
    }
    if (r.precision == "tf32" && r.kind != impl::cublas && device().cc_major < 8) {
      state.SkipWithError("TF32 tensor cores need compute capability 8.0");
      return;
    }
    operands& p = operands_for(s);
    const std::string wrong = spot_check(r, p);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(
        state, [&](cudaStream_t stream) { run(r, p, stream); }, nullptr, r.warmups);
    set_flops(state, s.flops(), r.precision == "tf32" ? tf32_peak_tflops() : 0.0);
    const std::string key = r.precision + "/" + s.name();
    const double t = state.counters["gpu_s"];
    if (r.kind == impl::cublas) {
      cublas_times()[key] = t;
    } else if (cublas_times().count(key) && t > 0) {
      state.counters["frac_cublas"] = cublas_times()[key] / t;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_row(const row& r, const shape& s) {
  const std::string name = "matmul/" + r.precision + "/" + r.name + "/" + s.name();
  const double seconds = s.flops() / (r.expected_tflops * 1e12);
  const auto iterations =
      std::clamp(static_cast<std::int64_t>(target_seconds / seconds), min_iterations, max_iterations);
  benchmark::RegisterBenchmark(name.c_str(), bm_matmul, r, s)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(iterations);
}

/// matmul/<fp32|tf32>/<what>/<shape>: rows `first` and `second` timed in turn
/// (best_vs_cublas: the library's pick and cuBLAS of its precision;
/// mcast_a_vs_b: the TF32 wgmma rows sharing A and sharing B).
void bm_pair(benchmark::State& state, row first, row second, pair_names names, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if ((first.precision == "tf32" || first.kind == impl::mma_sync_emulated) && device().cc_major < 8) {
      state.SkipWithError("TF32 tensor cores need compute capability 8.0");
      return;
    }
    operands& p = operands_for(s);
    double errors[2] = {0, 0};  // each side's spot-check error: a speed is reported with its accuracy
    time_pair(
        state, s, first.precision == "tf32" ? tf32_peak_tflops() : 0.0, names,
        [&](int side) {
          std::string wrong = spot_check(side == 0 ? first : second, p);
          errors[side] = last_spot_error();
          return wrong;
        },
        [&](cudaStream_t stream) { run(first, p, stream); }, [&](cudaStream_t stream) { run(second, p, stream); });
    state.counters["max_error"] = errors[0];
    state.counters["baseline_max_error"] = errors[1];
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_pair(const char* what, const row& first, const row& second, pair_names names, const shape& s) {
  const std::string name = "matmul/" + first.precision + "/" + what + "/" + s.name();
  benchmark::RegisterBenchmark(name.c_str(), bm_pair, first, second, names, s)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(paired_iterations(s, first.expected_tflops));
}

row kf_row(kf::matmul_variant v, double tflops, const char* precision = "fp32") {
  row r;
  r.precision = precision;
  r.name = kf::to_string(v);
  r.kind = impl::kf;
  r.variant = v;
  r.expected_tflops = tflops;
  return r;
}

void register_all() {
  using v = kf::matmul_variant;
  row cublas_fp32{"fp32", "cublas", impl::cublas, v::best, nullptr, 50};
  row cublas_tf32{"tf32", "cublas", impl::cublas, v::best, nullptr, 350};
  row mma{"tf32", "mma_sync", impl::mma_sync, v::best, nullptr, 150};
  row repack_b{"tf32", "wgmma_repack_b", impl::wgmma_repack_b, v::best, nullptr, 250};
  // tensor_core_tf32's wgmma kernel with its clusters forced to share A, or B,
  // or to split k (B's source by shape).
  const auto multicast_row = [](const char* name, kf::detail::wgmma_cluster_mode m) {
    return row{"tf32", name, impl::wgmma_cluster_mode, v::best, nullptr, 250, 3, 0, m};
  };
  const row mcast_a = multicast_row("wgmma_mcast_a", kf::detail::wgmma_cluster_mode::share_a);
  const row mcast_b = multicast_row("wgmma_mcast_b", kf::detail::wgmma_cluster_mode::share_b);
  const row cluster_split_k = multicast_row("wgmma_cluster_splitk", kf::detail::wgmma_cluster_mode::split_k);
  const std::vector<row> slow = {kf_row(v::naive, 0.5), kf_row(v::coalesced, 2), kf_row(v::smem_tiled, 5),
                                 kf_row(v::blocktile_1d, 12)};
  const std::vector<row> fast = {kf_row(v::blocktile_2d, 20), kf_row(v::vectorized, 25), kf_row(v::warp_tiled, 45),
                                 kf_row(v::large_tile, 48), kf_row(v::best, 48)};
  const std::vector<row> tuning = {
      {"fp32", "tuning/128x128x16", impl::tuning, v::best, &launch_tuning<tune_128x128x16>, 45},
      {"fp32", "tuning/128x128x32_4stages", impl::tuning, v::best, &launch_tuning<tune_128x128x32_4stages>, 45},
      {"fp32", "tuning/128x256x16_8x16", impl::tuning, v::best, &launch_tuning<tune_128x256x16>, 45},
      {"fp32", "tuning/128x128x16_2blocks", impl::tuning, v::best, &launch_tuning<tune_128x128x16_2blocks>, 45}};
  // 16-byte copies only: on the aligned tuning shape.
  const std::vector<row> large_tuning = {{"fp32", "tuning/large_128x256x8_3stages", impl::tuning, v::best,
                                          &launch_large_tuning<tune_large_k8_3stages>, 48},
                                         {"fp32", "tuning/large_128x256x8_4stages", impl::tuning, v::best,
                                          &launch_large_tuning<tune_large_k8_4stages>, 48}};
  for (const shape& s : shapes()) {
    register_row(cublas_fp32, s);
    if (is_cube(s) && s.flops() <= slow_max_flops) {
      for (row r : slow) {
        if (r.variant == v::naive && s.m >= 4096) r.warmups = 1;  // ~0.1-0.3 s a call
        register_row(r, s);
      }
    }
    for (const row& r : fast) register_row(r, s);
    if (s.m == 4096 || s.m == 4095) {
      for (const row& r : tuning) register_row(r, s);
    }
    if (s.m == 4096) {
      for (const row& r : large_tuning) register_row(r, s);
    }
    register_row(cublas_tf32, s);
    register_row(kf_row(v::tensor_core_tf32, 250, "tf32"), s);
    register_row(mma, s);
    register_row(repack_b, s);
    if (compares_wgmma_multicast(s)) {
      register_row(mcast_a, s);
      register_row(mcast_b, s);
    }
    if (compares_wgmma_cluster_split_k(s)) register_row(cluster_split_k, s);
    register_pair("mcast_a_vs_b", mcast_a, mcast_b, a_vs_b, s);
    register_pair("best_vs_cublas", kf_row(v::best, 48), cublas_fp32, vs_cublas, s);
    register_pair("best_vs_cublas", kf_row(v::tensor_core_tf32, 250, "tf32"), cublas_tf32, vs_cublas, s);
    // fp32 accuracy on TF32 tensor cores (step 15 on compute capability 9.0 with the sm_90a image, step 16
    // elsewhere from 8.0; errc::unsupported, so skipped, below 8.0).
    register_pair("best_vs_cublas", kf_row(v::best, 100, "fp32_emulated"), cublas_fp32, vs_cublas, s);
    // Step 16 alone (mma.sync; what the row above runs off compute capability 9.0), on every GPU of 8.0 or newer.
    register_pair("mma_sync_vs_cublas", {"fp32_emulated", "mma_sync", impl::mma_sync_emulated, v::best, nullptr, 60},
                  cublas_fp32, vs_cublas, s);
    if ((is_cube(s) && s.m == 4096) || (s.m == 8192 && s.n == 8192 && s.k == 1024)) {
      for (const char* precision : {"fp32", "tf32"}) {
        const double tflops = precision[0] == 'f' ? 45 : 250;
        register_row({precision, "fused_bias_relu", impl::fused, v::best, nullptr, tflops}, s);
        register_row({precision, "unfused_bias_relu", impl::unfused, v::best, nullptr, tflops}, s);
      }
    }
  }
  for (const shape& s : shapes()) {
    register_16bit(s);  // bench_matmul_16bit.cu
  }
  register_pack();
}

}  // namespace
}  // namespace kf::bench::matmul

int main(int argc, char** argv) {
  const bool tabular = ::kf::bench::wants_tabular(argc, argv);
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ::kf::bench::add_device_context();
  ::benchmark::AddCustomContext("matmul_note",
                                "slow steps (naive, coalesced, smem_tiled, blocktile_1d) run on 1024^3, 2048^3, 4096^3 "
                                "only; tf32 frac_peak is of 8 x the FP32 peak on cc 8.0/9.x/10.x (1 x elsewhere)");
  std::printf(
      "bench_matmul: the slow steps (naive, coalesced, smem_tiled, blocktile_1d) run only up to 4096^3 "
      "(cubes); naive at 4096^3 with 1 warm-up and 2 timed calls.\n");
  try {
    ::kf::bench::matmul::register_all();  // without a GPU every row reports why (KF_BENCH_REQUIRE_GPU)
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bench_matmul: %s\n", e.what());
    return 2;
  }
  ::kf::bench::run_with_progress(tabular);  // a progress line per case on stderr
  ::benchmark::Shutdown();
  return 0;
}
