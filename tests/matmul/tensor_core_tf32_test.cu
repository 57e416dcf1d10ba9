// SPDX-License-Identifier: Apache-2.0
// The tensor-core matmul kernels, called through their launch functions
// (include/kernelforge/kernels/matmul/09_tensor_core_tf32.cuh: mma.sync; 14_wgmma.cuh: wgmma + TMA in
// clusters of 1 and 2 CTAs), against a CPU reference accumulated in double.
//
// Shapes: the boundary shapes of each path's tile, derived from the kernel's
// own constants (tile_shapes.hpp, tile_of), and odd_shapes(), picked for a
// property of their own. MatmulTensorCoreTf32Shapes checks on the CPU that
// they cover every case this suite listed by hand before.
//
// Every shape runs all four transpose combinations and several storage layouts:
// tight and padded leading dimensions (+1, +37, rows rounded to 16 bytes),
// pointers one float past an aligned address or four floats (16-byte aligned,
// TMA reads in place), alpha in {1, -0.5}, beta in {0, 0.25, 1}. Padding and
// the floats before each matrix hold NaN, so a kernel that reads them fails;
// with beta == 0 all of C is NaN (0xFF bytes) before the call, so C must not be
// read and every element must be written; C's padding must still be NaN
// afterwards.
//
// Tolerance, relative to |alpha| * sum_p |a_ip b_pj| + |beta c_ij|: TF32 keeps 10
// mantissa bits. mma.sync rounds each operand (cvt.rna: 2^-11), so a product is
// within 2^-10 ~ 9.8e-4: tolerance 1e-3. wgmma truncates (2^-10 per operand), a
// product within 2^-9 ~ 1.95e-3: tolerance 2e-3. The fp32 accumulation adds at
// most k * 2^-24 in the worst case and far less with random signs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "test_support.hpp"
#include "wgmma_tile_shapes.cuh"

namespace {

using kf::detail::gemm_args;

/// mma_sync: launch_tensor_core_tf32 (8 warps a block); mma_sync_4warps: its
/// 64x64-warp-tile layout (09_tensor_core_tf32.cuh: four_warps). wgmma_*: wgmma_try_launch, which must
/// accept the call: wgmma_single / wgmma_cluster (clusters of 1 / 2 CTAs, the 2
/// sharing B, forced) with an n-contiguous B of 16-byte rows read by the
/// swapped product (the default, by_shape: C^T = op(B)^T op(A)^T, its
/// A from registers; its tiles run along C's columns, so "sharing B" shares
/// the swapped product's B, i.e. A); wgmma_mcast_a the same with clusters of 2 sharing A (forced:
/// wgmma_cluster_mode::share_a; the CTAs on adjacent n-tiles, so odd tile counts along n
/// -- 2 x 64 + 7, 257, 520, 4097 at 64 wide, 2904 at 128, 4097 at 256 -- leave the last cluster's second
/// CTA outside C, n = 1 runs single CTAs, 1 x 4096 x 512 clusters only this way,
/// 513 x 257 x 1031 and 1 x 1 x 4096 split k);
/// wgmma_repack_b (clusters of 2) with such a B repacked in HBM first (forced:
/// wgmma_tf32_b_mode::repack).
/// wgmma_cluster_splitk: the cluster split-k (forced:
/// wgmma_cluster_mode::split_k; 128 x 128 tiles, each cluster of 2 on one tile, CTA
/// r over half of the k-steps of 32: the boundary shapes with k <= 32 have one
/// step, so CTA 1 adds zeros; 513 x 257 x 1031 and 1090 x 2904 x 72 an odd count (33,
/// 3); 1090 x 2904 x 72 and the big shape more tiles than clusters, so each
/// CTA's receive buffer is reused; B swapped, k-major or
/// repacked as on wgmma_cluster2; also with the fused bias / ReLU epilogue).
/// dispatch: wgmma_try_launch, else launch_tensor_core_tf32: wgmma where it runs and the mma.sync
/// fallback elsewhere (any sm_80+ GPU).
enum class path {
  mma_sync,
  mma_sync_4warps,
  wgmma_single,
  wgmma_cluster,
  wgmma_mcast_a,
  wgmma_cluster_splitk,
  wgmma_repack_b,
  dispatch
};

const char* path_name(path p) {
  switch (p) {
    case path::mma_sync: return "mma_sync";
    case path::mma_sync_4warps: return "mma_sync_4warps";
    case path::wgmma_single: return "wgmma_cluster1";
    case path::wgmma_cluster: return "wgmma_cluster2";
    case path::wgmma_mcast_a: return "wgmma_mcast_a";
    case path::wgmma_cluster_splitk: return "wgmma_cluster_splitk";
    case path::wgmma_repack_b: return "wgmma_repack_b";
    case path::dispatch: return "dispatch";
  }
  return "unknown";
}

bool is_mma_sync(path p) { return p == path::mma_sync || p == path::mma_sync_4warps; }
double tolerance_for(path p) { return is_mma_sync(p) ? 1e-3 : 2e-3; }

struct shape {
  std::size_t m, n, k;
};

/// The largest shape whose reference is computed for every element; beyond it,
/// sampled rows and columns (the full product is ~10^11 flops on the CPU).
constexpr double full_reference_limit = 1u << 30;
constexpr std::size_t sampled_lines = 24;

/// op(A) (m x k, row-major) and op(B)^T (n x k, row-major) of a shape, and the
/// reference dot products at the checked positions.
struct problem {
  shape s{};
  std::vector<float> a;                 ///< a[i * k + p] = op(A)(i, p)
  std::vector<float> bt;                ///< bt[j * k + p] = op(B)(p, j)
  std::vector<std::size_t> rows, cols;  ///< checked (row, col) pairs: rows[q], cols[q]
  std::vector<double> dot, abs_dot;     ///< sum_p a b and sum_p |a b| at each pair
};

const problem& problem_for(const shape& s) {
  static std::mutex mutex;
  static std::map<std::tuple<std::size_t, std::size_t, std::size_t>, problem> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache.try_emplace({s.m, s.n, s.k});
  problem& pr = it->second;
  if (!inserted) return pr;
  pr.s = s;
  const std::uint64_t seed = s.m * 1000003u + s.n * 1009u + s.k;
  pr.a = kf::test::random_vector<float>(s.m * s.k, seed);
  pr.bt = kf::test::random_vector<float>(s.n * s.k, seed + 1);

  const bool full = static_cast<double>(s.m) * s.n * s.k <= full_reference_limit;
  if (full) {
    for (std::size_t i = 0; i < s.m; ++i)
      for (std::size_t j = 0; j < s.n; ++j) pr.rows.push_back(i), pr.cols.push_back(j);
  } else {
    // Whole rows and whole columns: the edges of the first and last tiles, and random ones.
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t extent) {
      std::vector<std::size_t> v = {0, 1, 63, 64, 127, 128, 255, 256, extent - 2, extent - 1};
      while (v.size() < sampled_lines) v.push_back(rng() % extent);
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    };
    for (std::size_t i : pick(s.m))
      for (std::size_t j = 0; j < s.n; ++j) pr.rows.push_back(i), pr.cols.push_back(j);
    for (std::size_t j : pick(s.n))
      for (std::size_t i = 0; i < s.m; ++i) pr.rows.push_back(i), pr.cols.push_back(j);
  }
  pr.dot.resize(pr.rows.size());
  pr.abs_dot.resize(pr.rows.size());
  kf::test::parallel_for(pr.rows.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t q = begin; q < end; ++q) {
      const float* a = pr.a.data() + pr.rows[q] * s.k;
      const float* b = pr.bt.data() + pr.cols[q] * s.k;
      double sum = 0, abs_sum = 0;
      for (std::size_t p = 0; p < s.k; ++p) {
        const double prod = static_cast<double>(a[p]) * static_cast<double>(b[p]);
        sum += prod;
        abs_sum += std::fabs(prod);
      }
      pr.dot[q] = sum;
      pr.abs_dot[q] = abs_sum;
    }
  });
  return pr;
}

/// How one run stores its matrices.
struct storage {
  const char* name;
  enum { tight, plus_1, plus_37, rows_16_bytes } ld;
  std::size_t offset;  ///< floats between a 256-byte aligned allocation and the matrix
  float alpha, beta;
};

std::size_t leading_dimension(std::size_t cols, const storage& st) {
  switch (st.ld) {
    case storage::tight: return cols;
    case storage::plus_1: return cols + 1;
    case storage::plus_37: return cols + 37;
    case storage::rows_16_bytes: return (cols + 3) / 4 * 4 + 4;
  }
  return cols;
}

const float nan_value = std::numeric_limits<float>::quiet_NaN();

/// Device copy of a rows x cols matrix, ld floats a row, `offset` floats in;
/// padding and the floats before it are NaN.
struct device_matrix {
  kf::device_buffer<float> buffer;
  float* data = nullptr;
  std::size_t ld = 0;
};

device_matrix upload(std::size_t rows, std::size_t cols, std::size_t ld, std::size_t offset,
                     const std::function<float(std::size_t, std::size_t)>& value) {
  std::vector<float> host(offset + rows * ld, nan_value);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) host[offset + r * ld + c] = value(r, c);
  device_matrix d;
  d.buffer = kf::to_device(host);
  d.data = d.buffer.data() + offset;
  d.ld = ld;
  return d;
}

int device_cc() {
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major * 10 + minor;
}

/// Runs one (shape, transposes, path, storage) case and checks it; block_n: the
/// wgmma tile width, 0 by shape (wgmma paths only); fused: the wgmma kernel with
/// the library's fused epilogue, a random bias (never zero) and ReLU at 0.
void run_case(const shape& s, bool trans_a, bool trans_b, path p, int block_n, const storage& st, bool fused = false) {
  SCOPED_TRACE(std::string(path_name(p)) + ", storage " + st.name);
  const problem& pr = problem_for(s);
  const std::size_t m = s.m, n = s.n, k = s.k;

  // op(A)(i, p) = trans_a ? A[p * lda + i] : A[i * lda + p]; likewise B.
  const device_matrix A = trans_a ? upload(k, m, leading_dimension(m, st), st.offset,
                                           [&](std::size_t r, std::size_t c) { return pr.a[c * k + r]; })
                                  : upload(m, k, leading_dimension(k, st), st.offset,
                                           [&](std::size_t r, std::size_t c) { return pr.a[r * k + c]; });
  const device_matrix B = trans_b ? upload(n, k, leading_dimension(k, st), st.offset,
                                           [&](std::size_t r, std::size_t c) { return pr.bt[r * k + c]; })
                                  : upload(k, n, leading_dimension(n, st), st.offset,
                                           [&](std::size_t r, std::size_t c) { return pr.bt[c * k + r]; });
  // C: random where beta reads it; all NaN when beta == 0 (it must not be read).
  const std::size_t ldc = leading_dimension(n, st);
  const std::uint64_t c_seed = m * 31 + n * 17 + k;
  const std::vector<float> c_values = kf::test::random_vector<float>(m * n, c_seed);
  const bool read_c = st.beta != 0.0f;
  device_matrix C = upload(m, n, ldc, st.offset,
                           [&](std::size_t r, std::size_t c) { return read_c ? c_values[r * n + c] : nan_value; });

  gemm_args<float> args;
  args.trans_a = trans_a;
  args.trans_b = trans_b;
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = st.alpha;
  args.A = A.data;
  args.lda = A.ld;
  args.B = B.data;
  args.ldb = B.ld;
  args.beta = st.beta;
  args.C = C.data;
  args.ldc = ldc;

  // The fused epilogue's bias, one float past an aligned address.
  const std::vector<float> bias_host = kf::test::random_vector<float>(n, m * 7 + n * 3 + k);
  const device_matrix bias = upload(1, n, n, 1, [&](std::size_t, std::size_t c) { return bias_host[c]; });
  kf::epilogue::bias_relu_threshold<float> epilogue;
  epilogue.bias = bias.data;
  epilogue.relu = true;
  epilogue.threshold = 0.0f;

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_FALSE(fused && (is_mma_sync(p) || p == path::dispatch)) << "the fused cases run the wgmma paths";
  if (p == path::mma_sync) {
    kf::detail::launch_tensor_core_tf32(args, stream);
  } else if (p == path::mma_sync_4warps) {
    kf::detail::launch_tensor_core_tf32_with<kf::detail::tf32_mma::four_warps>(args, stream);
  } else if (p == path::dispatch) {
    if (!kf::detail::wgmma_try_launch(args, stream)) kf::detail::launch_tensor_core_tf32(args, stream);
  } else {
    const int cluster = p == path::wgmma_single ? 1 : 2;
    // Forced, whatever the shape's rule (wgmma/policy.hpp: choose_wgmma_b_source).
    const auto b_mode =
        p == path::wgmma_repack_b ? kf::detail::wgmma_tf32_b_mode::repack : kf::detail::wgmma_tf32_b_mode::by_shape;
    const auto multicast = p == path::wgmma_mcast_a          ? kf::detail::wgmma_cluster_mode::share_a
                           : p == path::wgmma_cluster_splitk ? kf::detail::wgmma_cluster_mode::split_k
                                                             : kf::detail::wgmma_cluster_mode::share_b;
    const kf::detail::wgmma_overrides forced{cluster, block_n, multicast, b_mode};
    const bool accepted = fused ? kf::detail::wgmma_try_launch(args, epilogue, stream, forced)
                                : kf::detail::wgmma_try_launch(args, stream, forced);
    ASSERT_TRUE(accepted) << "the wgmma kernel declined a call it should run (it would have fallen back to mma.sync)";
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  const std::vector<float> out = kf::to_host(C.buffer);

  // Every element written (nothing NaN), the padding and the floats before C untouched.
  std::size_t unwritten = 0, clobbered = 0;
  for (std::size_t i = 0; i < st.offset; ++i) clobbered += !std::isnan(out[i]);
  for (std::size_t r = 0; r < m; ++r) {
    const float* row = out.data() + st.offset + r * ldc;
    for (std::size_t c = 0; c < n; ++c) unwritten += std::isnan(row[c]);
    for (std::size_t c = n; c < ldc; ++c) clobbered += !std::isnan(row[c]);
  }
  EXPECT_EQ(unwritten, 0u) << "elements of C left unwritten (or NaN)";
  EXPECT_EQ(clobbered, 0u) << "writes outside C's m x n elements";

  // Values against the double reference.
  const double tol = tolerance_for(p);
  std::size_t bad = 0;
  std::ostringstream report;
  for (std::size_t q = 0; q < pr.rows.size(); ++q) {
    const std::size_t i = pr.rows[q], j = pr.cols[q];
    const double c0 = read_c ? c_values[i * n + j] : 0.0;
    double ref = st.alpha * pr.dot[q] + st.beta * c0;
    double scale = std::fabs(st.alpha) * pr.abs_dot[q] + std::fabs(st.beta * c0);
    if (fused) {  // bias, then ReLU at 0 (1-Lipschitz: the bound holds)
      ref += bias_host[j];
      scale += std::fabs(bias_host[j]);
      if (ref <= 0.0) ref = 0.0;
    }
    const double got = out[st.offset + i * ldc + j];
    if (!(std::fabs(got - ref) <= tol * scale)) {
      if (bad++ < 8)
        report << "\n  C(" << i << ", " << j << ") = " << got << ", expected " << ref << " (scale " << scale << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << pr.rows.size() << " checked elements off by more than " << tol
                     << " x |alpha| sum|a b| + |beta c|:" << report.str();
}

struct tc_case {
  shape s;
  bool trans_a, trans_b;
  path p;
  int block_n = 0;     ///< wgmma tile width: 0 by shape, else forced (wgmma paths only)
  bool fused = false;  ///< the fused bias / ReLU epilogue (wgmma paths only)
};

std::string describe(const tc_case& c) {
  std::ostringstream name;
  name << path_name(c.p) << "_" << c.s.m << "x" << c.s.n << "x" << c.s.k << "_" << (c.trans_a ? "T" : "N")
       << (c.trans_b ? "T" : "N");
  if (c.block_n != 0) name << "_n" << c.block_n;
  if (c.fused) name << "_bias_relu";
  return name.str();
}

std::string case_name(const ::testing::TestParamInfo<tc_case>& info) { return describe(info.param); }

// gtest prints parameters with this (and ctest shows it) instead of raw bytes.
void PrintTo(const tc_case& c, std::ostream* os) { *os << describe(c); }

const shape big_shape{4095, 4097, 4093};

namespace tf32_mma = kf::detail::tf32_mma;

/// The tile a path runs at width block_n, from the kernel's own constants
/// (09_tensor_core_tf32.cuh; the wgmma paths: wgmma_tile_shapes.cuh).
kf::test::tile_shape tile_of(path p, int block_n) {
  if (is_mma_sync(p)) return {tf32_mma::block_m, tf32_mma::block_n, tf32_mma::block_k, tf32_mma::max_stages};
  return kf::test::wgmma_tile<float>(block_n, p == path::wgmma_cluster_splitk);
}

/// Shapes picked for a property of their own, beside the boundary shapes:
/// 513 x 257 x 1031 (primes: split-k in 4 slices at 128 x 64, an odd k-step
/// count on the cluster split-k), 1 x 1 x 4096 (split-k of a single element),
/// 1 x 4096 x 512 and 4096 x 1 x 512 (one tile row / column: a cluster sharing
/// A, resp. B, only), 300 x 520 x 64 (one N-major box a stage, multicast by the
/// cluster's first CTA), 1090 x 2904 x 72 (9 x 12 = 108 tiles of 128 x 256,
/// ragged in m, n and k) and the big shape (more tiles than the GPU holds CTAs).
const std::vector<shape>& odd_shapes() {
  static const std::vector<shape> s = {{513, 257, 1031}, {1, 1, 4096},     {1, 4096, 512}, {4096, 1, 512},
                                       {300, 520, 64},   {1090, 2904, 72}, big_shape};
  return s;
}

/// A path's shapes: the boundary shapes of its tile, then odd_shapes().
std::vector<shape> shapes_of(path p) {
  std::vector<shape> out = kf::test::boundary_shapes<shape>(tile_of(p, 0));
  out.insert(out.end(), odd_shapes().begin(), odd_shapes().end());
  return out;
}

// The wgmma tile width (tuning.hpp: choose_wgmma_block_n, pinned by the CPU test
// MatmulTuning.WgmmaBlockNIsTheWidestThatFillsTheGpu): by shape, the small shapes
// run 128 x 64 tiles (split-k included: 513 x 257 x 1031 in 4 slices, 1 x 1 x
// 4096); 1090 x 2904 (9 x 12 = 108 tiles, ragged in m, n and k) and the
// big shape run 128 x 256. forced_widths runs the other widths on some of the
// same shapes, and 128 and 256 on the last boundary shape of their own tile
// (three tiles each way, the last partial, the stage ring wrapped by a partial
// step) (wgmma_try_launch's block_n; cases named ..._n128 etc.).
// B not transposed (NN, TN) with 16-byte rows (the "16-byte rows" storage
// always; "tight" where n % 4 == 0) runs the swapped product on wgmma_single /
// wgmma_cluster / wgmma_mcast_a / wgmma_cluster_splitk (its epilogues: staged
// where beta == 0 and C's rows are 16-byte aligned, from registers otherwise,
// split-k partials), and B repacked on wgmma_repack_b (NN and TN only: the other cases are the same
// kernel as wgmma_cluster2's).
std::vector<std::pair<shape, int>> forced_widths() {
  std::vector<std::pair<shape, int>> out = {{{513, 257, 1031}, 128}, {{300, 520, 64}, 128},  {{300, 520, 64}, 256},
                                            {{1, 4096, 512}, 128},   {{1090, 2904, 72}, 64}, {{1090, 2904, 72}, 128},
                                            {big_shape, 64}};
  for (int block_n : {128, 256}) {
    out.push_back({kf::test::boundary_shapes<shape>(tile_of(path::wgmma_cluster, block_n)).back(), block_n});
  }
  return out;
}

std::vector<tc_case> all_cases() {
  std::vector<tc_case> cases;
  for (path p : {path::mma_sync, path::mma_sync_4warps, path::wgmma_single, path::wgmma_cluster, path::wgmma_mcast_a,
                 path::wgmma_cluster_splitk})
    for (const shape& s : shapes_of(p))
      for (bool ta : {false, true})
        for (bool tb : {false, true}) cases.push_back({s, ta, tb, p});
  for (const shape& s : shapes_of(path::wgmma_repack_b))
    for (bool ta : {false, true}) cases.push_back({s, ta, false, path::wgmma_repack_b});
  // dispatch: a ragged boundary shape of the wgmma tile and a split-k one.
  for (const shape& s : {kf::test::boundary_shapes<shape>(tile_of(path::dispatch, 0))[2], shape{513, 257, 1031}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) cases.push_back({s, ta, tb, path::dispatch});
  for (const auto& [s, block_n] : forced_widths())
    for (path p : {path::wgmma_single, path::wgmma_cluster, path::wgmma_mcast_a})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) cases.push_back({s, ta, tb, p, block_n});
  for (const auto& [s, block_n] : forced_widths())
    for (bool ta : {false, true}) cases.push_back({s, ta, false, path::wgmma_repack_b, block_n});
  // The cluster split-k with the fused bias / ReLU epilogue: its boundary
  // shapes (one k-step: CTA 1 adds zeros), an odd k-step count (33),
  // persistent CTAs (1090 x 2904 x 72).
  std::vector<shape> fused = kf::test::boundary_shapes<shape>(tile_of(path::wgmma_cluster_splitk, 0));
  fused.push_back({513, 257, 1031});
  fused.push_back({1090, 2904, 72});
  for (const shape& s : fused)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) cases.push_back({s, ta, tb, path::wgmma_cluster_splitk, 0, true});
  return cases;
}

/// The cases this suite listed by hand before its boundary shapes came from
/// the tile constants: each must still run, or a case of the same path,
/// transposes, width and epilogue on a shape that meets the tile's edges
/// wherever it does (tile_shapes.hpp: covers).
std::vector<tc_case> hand_listed_cases() {
  const std::vector<shape> shapes = {{1, 1, 1},      {33, 65, 17},   {127, 129, 255}, {513, 257, 1031}, {1, 1, 4096},
                                     {1, 4096, 512}, {4096, 1, 512}, {300, 520, 64},  {1090, 2904, 72}, big_shape};
  std::vector<tc_case> cases;
  for (path p : {path::mma_sync, path::mma_sync_4warps, path::wgmma_single, path::wgmma_cluster, path::wgmma_mcast_a,
                 path::wgmma_cluster_splitk})
    for (const shape& s : shapes)
      for (int t = 0; t < 4; ++t) cases.push_back({s, (t & 1) != 0, (t & 2) != 0, p});
  for (const shape& s : shapes)
    for (bool ta : {false, true}) cases.push_back({s, ta, false, path::wgmma_repack_b});
  for (const shape& s : {shape{33, 65, 17}, shape{513, 257, 1031}})
    for (int t = 0; t < 4; ++t) cases.push_back({s, (t & 1) != 0, (t & 2) != 0, path::dispatch});
  const std::pair<shape, int> widths[] = {{{513, 257, 1031}, 128}, {{300, 520, 64}, 128},  {{300, 520, 64}, 256},
                                          {{1, 4096, 512}, 128},   {{1090, 2904, 72}, 64}, {{1090, 2904, 72}, 128},
                                          {big_shape, 64}};
  for (const auto& [s, block_n] : widths) {
    for (path p : {path::wgmma_single, path::wgmma_cluster, path::wgmma_mcast_a})
      for (int t = 0; t < 4; ++t) cases.push_back({s, (t & 1) != 0, (t & 2) != 0, p, block_n});
    for (bool ta : {false, true}) cases.push_back({s, ta, false, path::wgmma_repack_b, block_n});
  }
  for (const shape& s : {shape{513, 257, 1031}, shape{33, 65, 17}, shape{1090, 2904, 72}})
    for (int t = 0; t < 4; ++t) cases.push_back({s, (t & 1) != 0, (t & 2) != 0, path::wgmma_cluster_splitk, 0, true});
  return cases;
}

TEST(MatmulTensorCoreTf32Shapes, CoverTheHandListedCases) {
  kf::test::expect_cases_covered(
      all_cases(), hand_listed_cases(),
      [](const tc_case& a, const tc_case& b) {
        return a.p == b.p && a.trans_a == b.trans_a && a.trans_b == b.trans_b && a.block_n == b.block_n &&
               a.fused == b.fused;
      },
      [](const tc_case& c) { return tile_of(c.p, c.block_n); }, describe);
}

class MatmulTensorCoreTf32 : public ::testing::TestWithParam<tc_case> {};

TEST_P(MatmulTensorCoreTf32, MatchesDoubleReference) {
  KF_SKIP_WITHOUT_GPU();
  const tc_case& c = GetParam();
  if (is_mma_sync(c.p) || c.p == path::dispatch) {
    if (device_cc() < 80) GTEST_SKIP() << "mma.sync TF32 needs compute capability 8.0 or newer";
  } else {
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    if (!kf::detail::wgmma_available(device)) {
      GTEST_SKIP() << "wgmma TF32 needs a compute capability 9.0 GPU and a library built with 90 in "
                      "CMAKE_CUDA_ARCHITECTURES (this GPU is sm_"
                   << device_cc() << ")";
    }
  }
  const storage layouts[] = {
      {"tight, alpha 1, beta 0", storage::tight, 0, 1.0f, 0.0f},
      {"ld+1, alpha -0.5, beta 0.25", storage::plus_1, 0, -0.5f, 0.25f},
      {"ld+37, misaligned by 1 float, alpha 1, beta 1", storage::plus_37, 1, 1.0f, 1.0f},
      {"16-byte rows, alpha -0.5, beta 0", storage::rows_16_bytes, 0, -0.5f, 0.0f},
      // 16-byte aligned but not 256 (4 floats in), C read: TMA reads A and B in
      // place (wgmma: B swapped where not transposed), C stored from registers.
      {"16-byte rows, 4 floats in, alpha 1, beta 0.25", storage::rows_16_bytes, 4, 1.0f, 0.25f},
  };
  const bool big = c.s.m == big_shape.m && c.s.n == big_shape.n && c.s.k == big_shape.k;
  for (const storage& st : layouts) {
    // The big shape: the fast layout (16-byte rows, beta 0) and a misaligned one.
    if (big && !(st.ld == storage::rows_16_bytes && st.offset == 0) && st.ld != storage::plus_37) continue;
    run_case(c.s, c.trans_a, c.trans_b, c.p, c.block_n, st, c.fused);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTensorCoreTf32, ::testing::ValuesIn(all_cases()), case_name);

TEST(MatmulWgmmaTf32, UnavailableForDevicesThatDoNotExist) {
  EXPECT_FALSE(kf::detail::wgmma_available(-1));
  EXPECT_FALSE(kf::detail::wgmma_available(kf::detail::max_cached_devices));
}

}  // namespace
