// SPDX-License-Identifier: Apache-2.0
// bench_matmul: every step of the matrix-product progression against cuBLAS, in
// one run so that every comparison is a ratio of figures measured together. This
// file: the binary's rows (below), their order and main. The rows themselves:
// bench_matmul.cu (fp32, TF32), bench_matmul_16bit.cu (fp16, bf16),
// bench_matmul_pack.cu (the repack pass).
//
//   matmul/fp32/<variant>/<m>x<n>x<k>        kf::matmul, math_mode::exact (best: what the
//                                            library picks, large_tile or warp_tiled: tuning.hpp)
//   matmul/fp32/cublas/<m>x<n>x<k>           cublasSgemm, default math (no TF32)
//   matmul/tf32/tensor_core_tf32/<shape>     kf::matmul, math_mode::tf32 (wgmma on sm_90a, else mma.sync;
//                                            the row-major B read by the swapped product: tuning.hpp,
//                                            choose_wgmma_b_source)
//   matmul/tf32/mma_sync/<shape>             the mma.sync kernel alone (launch_tensor_core_tf32)
//   matmul/fp32_emulated/best_vs_cublas/<shape>  kf::matmul, math_mode::fp32_emulated (step 15: three TF32
//                                            products on wgmma, step 17 for skinny shapes such as
//                                            128 x 8192 x 8192; step 16, mma.sync, off compute capability
//                                            9.0) paired with cublasSgemm (no TF32), checked
//                                            at the exact rows' tolerance; every pair row reports
//                                            max_error and baseline_max_error (|got - ref| / sum |a b|
//                                            over the spot check's 16 entries, double reference)
//   matmul/fp32_emulated/mma_sync_vs_cublas/<shape>  step 16 (three TF32 products on mma.sync, what
//                                            fp32_emulated runs where wgmma does not) through its launcher
//                                            (mma_sync_fp32_emulated_try_launch, the pre-pass included),
//                                            paired with cublasSgemm as the row above, with its errors
//   matmul/fp32_emulated/skinny_vs_step15/<shape>  step 17 (the large operand split in registers) and
//                                            step 15 (both split by a pre-pass), each forced through
//                                            wgmma_fp32_emulated_try_launch and timed in turn:
//                                            step15_over_skinny = step 15's time / step 17's; at the
//                                            shapes step 17 is for (plan.hpp:
//                                            choose_fp32_emulated_large: 128 x 8192 x 8192 here)
//   matmul/fp32_emulated/skinny_split_ahead_vs_serial/<shape>  step 17 as it runs (the next k-block
//                                            split while this one's products run) and with its serial
//                                            k-loop (fp32_emulated_wgmma_kernel::skinny_serial), timed in
//                                            turn: serial_over_split_ahead = the serial time / the other's;
//                                            the same shapes, the same bits
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
//   matmul/pack/memcpy_{f32,f16,fp8}/<rows>x<k>  cudaMemcpyAsync of a rows x k operand (device to device):
//                                                the copy rate the pack rows' frac_copy divides by
//   matmul/pack/{f32,f16,fp8}_transpose/<rows>x<k>  the wgmma steps' repack alone (wgmma_pack_k_major,
//                                                include/kernelforge/kernels/matmul/pack_k_major.cuh) of a k x rows
//                                                operand stored rows-contiguous (TF32 B of the row-major product, a
//                                                transposed A, FP8's B of the NN product): 16-byte loads and stores
//   matmul/pack/{f32,f16,fp8}_copy/<rows>x<k>   the same of a k-contiguous operand (no transpose)
//   matmul/pack/{f32,f16,fp8}_{transpose,copy}_misaligned/4096x4096  the source one element past an aligned
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
// on every shape, with iteration counts sized to ~0.25 s of GPU time per row
// (KF_BENCH_MIN_TIME where set: the `bench` preset's 0.05 s).
// Before a row is timed, a spot check compares 16 entries of its result with
// a double-precision dot product on the host: a wrong kernel is reported as
// an error, never timed.
#include <cstdio>

#include <benchmark/benchmark.h>

#include "bench_matmul.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::matmul {
namespace {

/// Every row, shape by shape: the fp32 / TF32 rows of all shapes, then the 16-bit ones
/// (their operands replace the fp32 ones: release_fp32_operands), then the pack rows.
void register_all() {
  for (const shape& s : shapes()) register_fp32(s);
  for (const shape& s : shapes()) register_16bit(s);
  register_pack();
}

}  // namespace
}  // namespace kf::bench::matmul

int main(int argc, char** argv) {
  std::printf(
      "bench_matmul: the slow steps (naive, coalesced, smem_tiled, blocktile_1d) run only up to 4096^3 "
      "(cubes); naive at 4096^3 with 1 warm-up and 2 timed calls.\n");
  ::kf::bench::main_options o;
  o.binary = "bench_matmul";
  o.register_rows = &::kf::bench::matmul::register_all;
  o.note_key = "matmul_note";
  o.note =
      "slow steps (naive, coalesced, smem_tiled, blocktile_1d) run on 1024^3, 2048^3, 4096^3 only; tf32 frac_peak is "
      "of 8 x the FP32 peak on cc 8.0/9.x/10.x (1 x elsewhere)";
  return ::kf::bench::benchmark_main(argc, argv, o);
}
