// SPDX-License-Identifier: Apache-2.0
// What bench_matmul's translation units share: bench_matmul_main.cu lists the
// rows and holds main; bench_matmul.cu the fp32 / TF32 rows against cuBLAS;
// bench_matmul_16bit.cu the fp16 / bf16 rows; bench_matmul_pack.cu the wgmma
// steps' repack pass timed alone. Here: the shapes, cuBLAS's handle and times,
// iteration counts, the paired timing of two sides and the spot checks' sampling.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>

#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::matmul {

/// data[0 .. n): magnitudes in [0.5, 1) with a random sign (never zero, never
/// denormal), from a hash of (seed, index); enqueued on the default stream.
void fill_random(float* data, std::size_t n, std::uint64_t seed);

/// fill_random's grid: blocks of fill_block threads, at most fill_max_blocks (grid-stride).
inline constexpr int fill_block = 256;
inline constexpr unsigned fill_max_blocks = 4096;

/// Frees the fp32 rows' operands (bench_matmul.cu keeps one shape's), before
/// the 16-bit rows allocate theirs (8192^2 x 3 of each would not fit beside).
void release_fp32_operands();

/// Registers the matmul/pack/ rows (bench_matmul_pack.cu).
void register_pack();

// ---- shapes ---------------------------------------------------------------------------
using shape = kf::bench::gemm_shape;

/// KF_BENCH_MATMUL_SHAPES's list ("MxNxK,MxNxK,...", e.g. a k sweep at one m x n
/// that separates a kernel's fixed cost from its per-k cost), or nullptr where it
/// is unset or empty (where it lists the shapes, a sweep, the rows that compare
/// modes of one kernel run on all of them).
inline const char* environment_shapes() { return kf::bench::environment_gemm_shapes("KF_BENCH_MATMUL_SHAPES"); }

/// The benchmark's shapes: the fixed list below, or KF_BENCH_MATMUL_SHAPES's.
inline const std::vector<shape>& shapes() {
  static const std::vector<shape> s = [] {
    if (const char* list = environment_shapes()) {
      return kf::bench::parse_gemm_shapes(list, "KF_BENCH_MATMUL_SHAPES", "1024x1024x64,1024x1024x256");
    }
    return std::vector<shape>{{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                              {4095, 4097, 4093}, {8192, 8192, 1024}, {128, 8192, 8192}};
  }();
  return s;
}

/// The slow steps run only on shapes up to this many FLOPs (4096^3).
inline constexpr double slow_max_flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
/// ... and only on the cubes (1024^3, 2048^3, 4096^3).
inline bool is_cube(const shape& s) { return s.m == s.n && s.n == s.k; }
/// The shapes whose wgmma tiles are 128 x 64 on the H200 (tuning.hpp: choose_wgmma_block_n;
/// 128 x 128 before): rows at 128 x 128 compare the two widths in one run.
inline bool picks_narrowest_wgmma_tile(const shape& s) {
  return (is_cube(s) && s.m == 1024) || (s.m == 128 && s.n == 8192 && s.k == 8192);
}
/// The shapes whose wgmma rows also run with the cluster forced to share A and
/// to share B (wgmma_mcast_a / wgmma_mcast_b): the 128 x 64 tiles of 1024^3 and
/// 128 x 8192 x 8192 (A shared by shape), and 2048^3 and 8192 x 8192 x 1024
/// (wider tiles, B shared by shape).
inline bool compares_wgmma_multicast(const shape& s) {
  return picks_narrowest_wgmma_tile(s) || (is_cube(s) && s.m == 2048) || (s.m == 8192 && s.n == 8192 && s.k == 1024);
}
/// The shapes whose wgmma rows also run the cluster split-k (wgmma_cluster_splitk):
/// the 128 x 64 tiles by shape, where it would replace them
/// (tuning.hpp: wgmma_cluster_split_k_fits), and every shape of a sweep.
inline bool compares_wgmma_cluster_split_k(const shape& s) {
  return picks_narrowest_wgmma_tile(s) || environment_shapes() != nullptr;
}

// ---- cuBLAS ---------------------------------------------------------------------------
inline cublasHandle_t cublas() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasCreate failed\n");
      std::exit(1);
    }
    return h;
  }();
  return handle;
}

inline void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: cuBLAS status %d\n", what, static_cast<int>(status));
    std::exit(1);
  }
}

/// cuBLAS time per call (s) by precision and shape, from this run.
inline std::map<std::string, double>& cublas_times() {
  static std::map<std::string, double> t;
  return t;
}

/// Iteration counts: about row_seconds() of GPU time a row, from a rough
/// expected rate: 0.25 s, or KF_BENCH_MIN_TIME where set (min_time_seconds; the
/// `bench` preset 0.05 s, `bench-all` 0.1 s, as bench_conv's rows). Read when
/// the rows register.
inline double row_seconds() {
  static const double seconds = min_time_seconds(0.25);
  return seconds;
}
inline constexpr std::int64_t min_iterations = 2, max_iterations = 500;

/// Iterations of a pair row: each runs both products; at least 10 pairs.
inline std::int64_t paired_iterations(const shape& s, double expected_tflops) {
  const double seconds = 2 * s.flops() / (expected_tflops * 1e12);
  return std::clamp(static_cast<std::int64_t>(row_seconds() / seconds), std::int64_t{10}, max_iterations);
}

/// One pair row: check(0) and check(1) spot-check the two sides ("" or what is
/// wrong: then nothing is timed), then `first` and `second` run in turn
/// (time_gpu_paired) and the counters get `names`.
template <class Check, class First, class Second>
void time_pair(benchmark::State& state, const shape& s, double peak_tflops, pair_names names, Check&& check,
               First&& first, Second&& second) {
  for (int side = 0; side < 2; ++side) {
    const std::string wrong = check(side);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
  }
  time_gpu_paired(state, first, second);
  set_pair_counters(state, s.flops(), peak_tflops, names);
}

// ---- spot checks ----------------------------------------------------------------------
/// Entry t of a spot check of C = A B (row-major A m x k, B k x n, C m x n on the
/// device, unpadded): its position (a hash of t), C's value there, and the
/// double-precision dot product of A's row and B's column with its scale sum |a b|.
struct spot_entry {
  std::size_t i, j;
  double got, ref, scale;
};

/// T: float, __half or __nv_bfloat16 (each converts to float exactly).
template <class T>
spot_entry sample_entry(const T* a, const T* b, const T* c, const shape& s, int t) {
  spot_entry e{mix64(100 + t) % s.m, mix64(200 + t) % s.n, 0, 0, 0};
  std::vector<T> arow(s.k), bcol(s.k);
  T got{};
  check(cudaMemcpy(arow.data(), a + e.i * s.k, s.k * sizeof(T), cudaMemcpyDeviceToHost), "copy A row");
  check(cudaMemcpy2D(bcol.data(), sizeof(T), b + e.j, s.n * sizeof(T), sizeof(T), s.k, cudaMemcpyDeviceToHost),
        "copy B column");
  check(cudaMemcpy(&got, c + e.i * s.n + e.j, sizeof(T), cudaMemcpyDeviceToHost), "copy C entry");
  for (std::size_t q = 0; q < s.k; ++q) {
    const double prod = static_cast<double>(static_cast<float>(arow[q])) * static_cast<float>(bcol[q]);
    e.ref += prod;
    e.scale += std::fabs(prod);
  }
  e.got = static_cast<float>(got);
  return e;
}

/// mcast_a_vs_b rows: the wgmma clusters sharing A first, sharing B second.
inline constexpr pair_names a_vs_b{"b_TFLOP/s", "a_over_b"};
/// skinny_vs_step15 rows: fp32 emulation's step 17 first, step 15 second
/// (step15_over_skinny: step 15's time / step 17's, above 1 where 17 is faster).
inline constexpr pair_names skinny_vs_step15{"step15_TFLOP/s", "step15_over_skinny"};
/// skinny_split_ahead_vs_serial rows: step 17 as it runs (the next k-block split
/// while this one's products run) first, its serial k-loop second
/// (serial_over_split_ahead: the serial time / the split-ahead one's).
inline constexpr pair_names split_ahead_vs_serial{"serial_TFLOP/s", "serial_over_split_ahead"};

/// Registers the fp32 and TF32 rows of shape s (bench_matmul.cu).
void register_fp32(const shape& s);

/// Registers the fp16 / bf16 rows of shape s (bench_matmul_16bit.cu).
void register_16bit(const shape& s);

}  // namespace kf::bench::matmul
