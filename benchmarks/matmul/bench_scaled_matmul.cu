// SPDX-License-Identifier: Apache-2.0
// bench_scaled_matmul: the FP8 product kf::scaled_matmul against cuBLASLt's FP8 matmul on the same
// operands and scales, for each scaling mode.
//
//   matmul/fp8_<mode>/best_vs_cublaslt/<m>x<n>x<k>  kf::scaled_matmul (variant best) and cublasLtMatmul
//                     timed in turn, sample by sample (time_gpu_paired): TFLOP/s and frac_peak of
//                     ours, cublas_TFLOP/s, frac_cublas = t_cuBLASLt / t_ours from the same pairs.
//                     Where cuBLASLt cannot run the mode (no algorithm from the heuristic,
//                     CUBLAS_STATUS_NOT_SUPPORTED, cuBLAS older than 12.9, ...) the row times ours
//                     alone and carries cublaslt_unsupported = 1, the reason in its label
//   matmul/fp8_<mode>/naive/<m>x<n>x<k>             kf::scaled_matmul, variant naive, alone (time_gpu):
//                     only on shapes of at most 1024^3 multiply-adds (1024^3 in the default list),
//                     since it runs on the CUDA cores
//   matmul/fp8_per_tensor/{nn,tt}_vs_tn/<m>x<n>x<k>  ours (best) on the same product with B stored
//                     k x n row-major (nn: trans_b = op::none) or A stored k x m (tt: trans_a =
//                     op::transpose), which FP8 wgmma cannot read in place (the launcher repacks it
//                     k-major first), timed in turn with ours on the TN layout: TFLOP/s of the
//                     layout, tn_TFLOP/s, frac_tn = t_TN / t_layout; 4096^3 and 8192^3 only
//   matmul/fp8_per_tensor/amax_vs_plain/<m>x<n>x<k>  ours (best) asked for D's amax and ours plain,
//                     in turn (m, n >= 4096): TFLOP/s with the amax, plain_TFLOP/s, frac_plain =
//                     t_plain / t_amax; the amax is checked against max |D| first
//   matmul/fp8_<mode>/two_partials_vs_192/<m>x<n>x<k>  ours on the two-partials
//                     tile (128 x 128, clusters of 2) and on the 128 x 192 tile (both forced:
//                     kf::detail::scaled_wgmma_tile), in turn (m, n >= 4096): TFLOP/s of the two-partials
//                     tile, 192_TFLOP/s, frac_192 = t_192 / t_two (above 1: the two partial sets are
//                     faster; tuning.hpp's best_uses_scaled_two_partials); both spot-checked first
//   <mode>: per_tensor, rowwise, blockwise (kf::fp8_scaling)
//
// Shapes (m x n x k): 1024^3, 4096^3, 8192^3, 8192x8192x1024, 4096x7168x16384, 128x8192x8192, or
// those the environment variable KF_BENCH_FP8_SHAPES lists ("MxNxK,MxNxK,...").
//
// Operands, the "TN" layout cuBLASLt's FP8 path needs: A e4m3 m x k row-major (lda = k), B e4m3
// stored n x k row-major (ldb = k; ours runs with trans_a = op::none, trans_b = op::transpose), D
// bf16 m x n row-major (ldd = n), alpha 1, beta 0. Values N(0, 1) x 8 by Box-Muller from a counter
// hash, clipped to +-448 and kept off zero, converted to e4m3 on the GPU; scales uniform in [0.5, 2)
// (per_tensor: one per operand; rowwise: m for A, n for B; blockwise: ours a[i * kb + p / 128] and
// b[(j / 128) * kb + p / 128], kb = ceil(k / 128)). Both sides accumulate in fp32 and promote their
// partial sums into an fp32 total: ours every 128 of k, cuBLASLt with CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0.
//
// cuBLASLt is column-major: it sees row-major D as its n x m D' = D^T = op(B)^T op(A)^T. Its A' is
// our B read as the k x n column-major matrix it is in memory (ld k) with transa = CUBLAS_OP_T, its
// B' our A read as k x m column-major (ld k) with transb = CUBLAS_OP_N, D' n x m (ld n); m' = n,
// n' = m, k' = k. So its A scales are our B's and its B scales our A's:
//   per_tensor  A' and B' CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
//   rowwise     A' and B' OUTER_VEC_32F (A' n values by column of D, B' m by row: ours as they are)
//   blockwise   A' BLK128x128_32F: s[(j / 128) * kb4 + p / 128], kb4 = kb rounded up to 4 (ours
//               when kb % 4 == 0, else re-laid with padding); B' VEC128_32F: s[(p / 128) * m + i],
//               the outer (m) index contiguous: ours transposed (m % 4 != 0: reported unsupported)
// Sources for the blockwise layouts: cublasLt.h (cublasLtMatmulMatrixScale_t), NVIDIA's
// CUDALibrarySamples cuBLASLt/Common/helpers.h, getScaleTensorSize (VEC128: ceil(inner / 128) x
// outer values; BLK128x128: roundoff(ceil(inner / 128), 4) x ceil(outer / 128)), and PyTorch's
// _scaled_mm, which hands cuBLASLt 1 x 128 scales outer-dim-major. The spot check verifies them.
//
// Counters: TFLOP/s (2 m n k per call); frac_peak of the FP8 dense peak taken as 4 x the TF32
// estimate of bench_matmul_main.cu (8 x the FP32 peak on compute capability 9.x and 10.x, 1 x on 8.9
// and 12.x): on the H200 4 x 535 = 2141 TFLOP/s at the 1.98 GHz boost clock (datasheet: 1979 at
// 1.83 GHz).
//
// Time: each row samples until ours has 0.1 s of GPU time (Google Benchmark's min time on the
// manual time; a call slower than that is timed once), not a count from an expected rate: best is
// the naive step for now (seconds a call at 8192^3), and a faster step resizes the rows by itself.
// Before a row is timed, a spot check compares 16 entries of ours and of cuBLASLt's D with a
// double-precision sum over the e4m3 values and the scales: more than 2e-2 x max |reference| of
// the 16 apart is an error, never timed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "cublaslt_fp8.hpp"
#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "bench_scaled_matmul_sides.cuh"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::bench::scaled_matmul {
namespace {

constexpr double min_time_s = 0.1;    // of ours' GPU time per row (KF_BENCH_MIN_TIME overrides it)
constexpr double slow_call_s = 0.02;  // ours slower than this a call: no extra warm-ups
constexpr double naive_max_fma = 1024.0 * 1024.0 * 1024.0;
constexpr fp8_scaling modes[] = {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise};

const std::vector<shape>& shapes() {
  static const std::vector<shape> s = [] {
    if (const char* list = kf::bench::environment_gemm_shapes("KF_BENCH_FP8_SHAPES")) {
      return kf::bench::parse_gemm_shapes(list, "KF_BENCH_FP8_SHAPES", "1024x1024x1024,128x8192x8192");
    }
    return std::vector<shape>{{1024, 1024, 1024}, {4096, 4096, 4096},  {8192, 8192, 8192},
                              {8192, 8192, 1024}, {4096, 7168, 16384}, {128, 8192, 8192}};
  }();
  return s;
}

// ---- rows --------------------------------------------------------------------------
/// matmul/fp8_<mode>/best_vs_cublaslt/<shape>: ours (best) and cuBLASLt in turn, or ours
/// alone where cuBLASLt cannot run the mode.
void bm_best_vs_cublaslt(benchmark::State& state, fp8_scaling mode, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    operands& p = operands_for(s);
    lt_plan& plan = p.plan_for(mode);
    double call_s = 0;
    std::string wrong = check_ours(p, mode, kf::scaled_matmul_variant::best, call_s);
    if (wrong.empty() && plan.unsupported.empty()) wrong = check_cublaslt(p, mode, plan);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    const auto ours = [&](cudaStream_t stream) { run_ours(p, mode, kf::scaled_matmul_variant::best, stream); };
    const int ours_warmups = call_s > slow_call_s ? 0 : 3;  // the checked call warmed a slow kernel up
    if (!plan.unsupported.empty()) {
      time_gpu(state, ours, nullptr, ours_warmups);
      set_flops(state, s.flops(), tensor_peak_tflops(1));
      state.counters["cublaslt_unsupported"] = 1;
      state.SetLabel("cuBLASLt: " + plan.unsupported);
      return;
    }
    const auto theirs = [&](cudaStream_t stream) {
      const cublasStatus_t st = run_cublaslt(p, plan, stream);
      if (st != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cublasLtMatmul: ") + cublasGetStatusName(st));
    };
    for (int i = 0; i < ours_warmups; ++i) ours(nullptr);
    for (int i = 0; i < 3; ++i) theirs(nullptr);
    time_gpu_paired(state, ours, theirs, nullptr, 0);
    set_pair_counters(state, s.flops(), tensor_peak_tflops(1), vs_cublas);
  } catch (const std::exception& e) {  // kf::error too: errc::unsupported where the GPU has no FP8
    state.SkipWithError(e.what());
  }
}

/// matmul/fp8_<mode>/naive/<shape>: ours with variant naive, alone.
void bm_naive(benchmark::State& state, fp8_scaling mode, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    operands& p = operands_for(s);
    double call_s = 0;
    const std::string wrong = check_ours(p, mode, kf::scaled_matmul_variant::naive, call_s);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(
        state, [&](cudaStream_t stream) { run_ours(p, mode, kf::scaled_matmul_variant::naive, stream); }, nullptr,
        call_s > slow_call_s ? 0 : 3);
    set_flops(state, s.flops(), tensor_peak_tflops(1));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// matmul/fp8_per_tensor/<nn|tt>_vs_tn/<shape>: ours on another layout and on TN, in turn.
void bm_layout_vs_tn(benchmark::State& state, bool nn, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    constexpr fp8_scaling mode = fp8_scaling::per_tensor;
    constexpr auto best = kf::scaled_matmul_variant::best;
    operands& p = operands_for(s);
    // nn: B (stored n x k) as k x n; tt: A (stored m x k) as k x m.
    const layout_copy copy = nn ? layout_copy(p.b.data(), s.n, s.k) : layout_copy(p.a.data(), s.m, s.k);
    const fp8* a_km = nn ? nullptr : copy.data.data();
    const fp8* b_kn = nn ? copy.data.data() : nullptr;
    check(cudaMemset(p.d.data(), 0xFF, p.d.size_bytes()), "poison D");
    run_ours(p, mode, best, nullptr, a_km, b_kn);
    check(cudaDeviceSynchronize(), "spot check run");
    const std::string wrong = compare_d(nn ? "ours (NN)" : "ours (TT)", p, mode);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu_paired(
        state, [&](cudaStream_t stream) { run_ours(p, mode, best, stream, a_km, b_kn); },
        [&](cudaStream_t stream) { run_ours(p, mode, best, stream); });
    set_flops(state, s.flops(), tensor_peak_tflops(1));
    const double layout_s = state.counters["gpu_s"], tn_s = state.counters["baseline_s"];
    state.counters["tn_TFLOP/s"] = tn_s > 0 ? s.flops() / tn_s / 1e12 : 0.0;
    state.counters["frac_tn"] = layout_s > 0 ? tn_s / layout_s : 0.0;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// matmul/fp8_per_tensor/amax_vs_plain/<shape>: ours asked for D's amax (a training
/// step's next scale: every value through the epilogue functor) and ours plain, in turn.
void bm_amax_vs_plain(benchmark::State& state, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    constexpr fp8_scaling mode = fp8_scaling::per_tensor;
    constexpr auto best = kf::scaled_matmul_variant::best;
    operands& p = operands_for(s);
    kf::device_buffer<float> amax(1);
    check(cudaMemset(p.d.data(), 0xFF, p.d.size_bytes()), "poison D");
    check(cudaMemset(amax.data(), 0xFF, sizeof(float)), "poison amax");
    run_ours(p, mode, best, nullptr, nullptr, nullptr, amax.data());
    check(cudaDeviceSynchronize(), "spot check run");
    std::string wrong = compare_d("ours (amax)", p, mode);
    // The amax must be D's largest |value| exactly (both are the stored bf16 values).
    std::vector<bf16> d(s.m * s.n);
    float got = 0;
    check(cudaMemcpy(d.data(), p.d.data(), d.size() * sizeof(bf16), cudaMemcpyDeviceToHost), "copy D");
    check(cudaMemcpy(&got, amax.data(), sizeof(float), cudaMemcpyDeviceToHost), "copy amax");
    float want = 0;
    for (const bf16 v : d) want = std::max(want, std::fabs(__bfloat162float(v)));
    if (wrong.empty() && !(got == want)) {
      wrong = "ours' amax is " + std::to_string(got) + ", max |D| is " + std::to_string(want);
    }
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu_paired(
        state, [&](cudaStream_t stream) { run_ours(p, mode, best, stream, nullptr, nullptr, amax.data()); },
        [&](cudaStream_t stream) { run_ours(p, mode, best, stream); });
    set_flops(state, s.flops(), tensor_peak_tflops(1));
    const double amax_s = state.counters["gpu_s"], plain_s = state.counters["baseline_s"];
    state.counters["plain_TFLOP/s"] = plain_s > 0 ? s.flops() / plain_s / 1e12 : 0.0;
    state.counters["frac_plain"] = amax_s > 0 ? plain_s / amax_s : 0.0;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// matmul/fp8_<mode>/two_partials_vs_192/<shape>: ours on the two-partials tile (128 x 128) and on the
/// 128 x 192 tile, both forced, in turn.
void bm_two_partials_vs_192(benchmark::State& state, fp8_scaling mode, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    using kf::detail::scaled_wgmma_tile;
    operands& p = operands_for(s);
    for (const scaled_wgmma_tile tile : {scaled_wgmma_tile::wide, scaled_wgmma_tile::two_partials}) {
      check(cudaMemset(p.d.data(), 0xFF, p.d.size_bytes()), "poison D");
      run_ours_tile(p, mode, tile, nullptr);
      check(cudaDeviceSynchronize(), "spot check run");
      const std::string wrong =
          compare_d(tile == scaled_wgmma_tile::wide ? "ours (128 x 192)" : "ours (128 x 128, two partials)", p, mode);
      if (!wrong.empty()) {
        state.SkipWithError(wrong.c_str());
        return;
      }
    }
    time_gpu_paired(
        state, [&](cudaStream_t stream) { run_ours_tile(p, mode, scaled_wgmma_tile::two_partials, stream); },
        [&](cudaStream_t stream) { run_ours_tile(p, mode, scaled_wgmma_tile::wide, stream); });
    set_flops(state, s.flops(), tensor_peak_tflops(1));
    const double two_s = state.counters["gpu_s"], wide_s = state.counters["baseline_s"];
    state.counters["192_TFLOP/s"] = wide_s > 0 ? s.flops() / wide_s / 1e12 : 0.0;
    state.counters["frac_192"] = two_s > 0 ? wide_s / two_s : 0.0;
  } catch (const std::exception& e) {  // kf::error too: errc::unsupported off Hopper
    state.SkipWithError(e.what());
  }
}

void register_all() {
  for (const shape& s : shapes()) {
    for (const fp8_scaling mode : modes) {
      const std::string prefix = std::string("matmul/fp8_") + kf::to_string(mode) + "/";
      if (double(s.m) * double(s.n) * double(s.k) <= naive_max_fma) {
        benchmark::RegisterBenchmark((prefix + "naive/" + s.name()).c_str(), bm_naive, mode, s)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(min_time_seconds(min_time_s));
      }
      benchmark::RegisterBenchmark((prefix + "best_vs_cublaslt/" + s.name()).c_str(), bm_best_vs_cublaslt, mode, s)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(min_time_seconds(min_time_s));
    }
    if (s.m >= 4096 && s.n >= 4096) {
      benchmark::RegisterBenchmark(("matmul/fp8_per_tensor/amax_vs_plain/" + s.name()).c_str(), bm_amax_vs_plain, s)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(min_time_seconds(min_time_s));
    }
    if (s.m >= 4096 && s.n >= 4096) {
      for (const fp8_scaling mode : modes) {
        const std::string name = std::string("matmul/fp8_") + kf::to_string(mode) + "/two_partials_vs_192/" + s.name();
        benchmark::RegisterBenchmark(name.c_str(), bm_two_partials_vs_192, mode, s)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(min_time_seconds(min_time_s));
      }
    }
    if (s.m == s.n && s.n == s.k && (s.m == 4096 || s.m == 8192)) {
      for (const bool nn : {true, false}) {
        const std::string name = std::string("matmul/fp8_per_tensor/") + (nn ? "nn" : "tt") + "_vs_tn/" + s.name();
        benchmark::RegisterBenchmark(name.c_str(), bm_layout_vs_tn, nn, s)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(min_time_seconds(min_time_s));
      }
    }
  }
}

}  // namespace
}  // namespace kf::bench::scaled_matmul

int main(int argc, char** argv) {
  ::kf::bench::main_options o;
  o.binary = "bench_scaled_matmul";
  o.register_rows = &::kf::bench::scaled_matmul::register_all;
  o.note_key = "scaled_matmul_note";
  o.note =
      "e4m3 x e4m3 -> bf16, TN; frac_peak of 4 x the TF32 estimate (32 x the FP32 peak on cc 9.x/10.x); naive rows "
      "only up to 1024^3; 0.1 s of ours per row";
  return ::kf::bench::benchmark_main(argc, argv, o);
}
