// SPDX-License-Identifier: Apache-2.0
// The fp16 / bf16 tensor-core kernels called through their launch functions,
// so that a silent fallback cannot pass for the kernel under test:
//  * mma_sync: launch_tensor_core_f16 (10_tensor_core_f16.cuh), any sm_80+ GPU;
//  * wgmma_cluster1 / wgmma_cluster2 / wgmma_mcast_a: wgmma_try_launch
//    (14_wgmma.cuh), which must accept the call (compute capability 9.0 and
//    a library built with 90): single CTAs, clusters of 2 sharing B (forced) and
//    clusters of 2 sharing A (forced: wgmma_cluster_mode::share_a), at every shape and
//    forced width. Sharing A, the cluster's CTAs take adjacent n-tiles: odd tile
//    counts along n (2 x 64 + 7, 257, 300 and 520 at 64 wide; 4097 at 256 and 64) leave
//    the last cluster's second CTA outside C; a single tile column (n = 1) runs
//    single CTAs; 1 x 4096 x 512 (a single tile row) clusters only this way;
//    130 x 300 x 2051 and 1 x 1 x 4096 split k.
//  * MatmulWgmmaSteps: the Hopper learning steps 11-13 (wgmma_step_try_launch), the
//    row-major product at shapes derived from their tile constants (below).
//  * wgmma_cluster_splitk: the cluster split-k (forced: wgmma_cluster_mode::split_k):
//    128 x 128 tiles, a cluster of 2 on each, CTA r over half of the k-steps
//    of 64, the halves added in shared memory. k-steps: the boundary shapes
//    with k <= 64 and 128 x 256 x 64 have one (CTA 1 adds zeros), 1090 x 2904 x 72 two,
//    513 x 257 x 1031 and 130 x 300 x 2051 an odd count (17, 33); 1090 x 2904
//    x 72 and 4095 x 4097 x 4093 have more tiles than the GPU holds clusters
//    (each CTA's receive buffer is reused); B n-major in place, k-major or
//    repacked as the layouts give.
// The staged epilogue (beta 0, rows of C 16-byte aligned: the layouts "tight"
// and "ld+8" where n is a multiple of 8; stmatrix into a swizzled C buffer, then
// TMA stores of 64 x 64 that clip at C's edges; alpha 1 unscaled, -0.5 scaled):
// 128 x 256 x 64 whole tiles; 300 x 520 x 64, 1090 x 2904 x 72 and 200 x 136 x
// 72 ragged in m (a warpgroup's rows partly below C; 1090: the second warpgroup's
// 64 rows hold 2 of C's) and in n (a chunk of 8 or 24 of its 64 columns inside
// C, chunks wholly past C skipped); 1 x 8 x 16 and 1 x 4096 x 512 a single row
// (the second warpgroup stores nothing).
// Shapes: the boundary shapes of each path's tile, derived from the kernel's
// own constants (tile_shapes.hpp, tile_of), and odd_shapes(), picked for a
// property of their own; MatmulTensorCoreF16Shapes checks on the CPU that they
// cover every case this suite listed by hand before.
// Cases, checks and tolerance: tests/matmul/matmul_case.hpp (double reference,
// NaN-poisoned C with beta 0, NaN in the padding, sentinels around C,
// |err| <= (4 sqrt(k) + k/16 + 4) 2^-23 * sum|a b| + 2 u_T |ref|). Every shape
// runs the four transposes, each with a tight, a padded (+1, +37) and a
// misaligned (one element in) layout and alpha / beta in {1, -0.5} x {0, 0.25, 1}.
// Split-k (wgmma, plan.hpp's plan_matmul_split_k with 16-bit slices of at least 1024):
// 1 x 1 x 4096 (4 slices) and 130 x 300 x 2051 (2 slices, ragged tiles); the
// CPU test MatmulTuning.WgmmaSplitKByElementSize pins those plans.
// The wgmma tile width (tuning.hpp: choose_wgmma_block_n, pinned by the CPU test
// MatmulTuning.WgmmaBlockNIsTheWidestThatFillsTheGpu): by shape, the small shapes
// run 128 x 64 tiles (split-k included: 1 x 1 x 4096, 130 x 300 x 2051; with
// clusters of 2 and B n-major read in place: 300 x 520 x 64, whose one N-major
// box a stage the cluster's first CTA multicasts); 1090 x 2904 x 72 (9 x 12 =
// 108 tiles; rows of 16-byte multiples, so B n-major is read in place at ld+0
// and ld+8) and 4095 x 4097 x 4093 run 128 x 256. forced_widths() runs the
// other widths on some of the same shapes (wgmma_try_launch's block_n;
// cases named ..._n128 etc.): 128 x 128 and 128 x 256 on small shapes, 128 x 64
// on the two large ones (many tiles per persistent CTA).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "matmul_case.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/matmul/tensor_core_f16_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "wgmma_tile_shapes.cuh"

namespace {

using kf::test::matmul_case;
using kf::test::matmul_shape;

enum class path { mma_sync, wgmma_cluster1, wgmma_cluster2, wgmma_mcast_a, wgmma_cluster_splitk };

const char* path_name(path p) {
  switch (p) {
    case path::mma_sync: return "mma_sync";
    case path::wgmma_cluster1: return "wgmma_cluster1";
    case path::wgmma_cluster2: return "wgmma_cluster2";
    case path::wgmma_mcast_a: return "wgmma_mcast_a";
    case path::wgmma_cluster_splitk: return "wgmma_cluster_splitk";
  }
  return "unknown";
}

int device_cc() {
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major * 10 + minor;
}

struct layout {
  const char* name;
  std::size_t pad;     ///< added to every leading dimension
  std::size_t offset;  ///< elements from the allocation start to each matrix
  float alpha, beta;
};

// pad 0 on shapes whose row lengths are multiples of 8 and offset 0: the 16-byte
// paths (cp.async 16 / TMA in place); the others: the register path / a repack.
const layout layouts[] = {
    {"tight, alpha 1, beta 0", 0, 0, 1.0f, 0.0f},
    {"ld+1, alpha -0.5, beta 0.25", 1, 0, -0.5f, 0.25f},
    {"ld+37, misaligned by 1 element, alpha 1, beta 1", 37, 1, 1.0f, 1.0f},
    {"ld+8, alpha -0.5, beta 0", 8, 0, -0.5f, 0.0f},
};

template <class T>
void run_case(const matmul_shape& s, bool ta, bool tb, path p, int block_n, const layout& l, std::uint64_t seed) {
  matmul_case<T> c;
  c.shape = s;
  c.trans_a = ta ? kf::op::transpose : kf::op::none;
  c.trans_b = tb ? kf::op::transpose : kf::op::none;
  c.alpha = l.alpha;
  c.beta = l.beta;
  c.pad_a = c.pad_b = c.pad_c = l.pad;
  c.offset = l.offset;
  c.sampled = static_cast<double>(s.m) * s.n * s.k > double(1u << 30);
  SCOPED_TRACE(std::string(path_name(p)) + ", " + l.name + ": " + c.describe());
  bool accepted = true;
  const auto run = [&](const T* a, std::size_t lda, const T* b, std::size_t ldb, T* cc, std::size_t ldc) {
    kf::detail::gemm_args<T> g;
    g.trans_a = ta, g.trans_b = tb;
    g.m = s.m, g.n = s.n, g.k = s.k;
    g.alpha = c.alpha, g.beta = c.beta;
    g.A = a, g.lda = lda, g.B = b, g.ldb = ldb, g.C = cc, g.ldc = ldc;
    if (p == path::mma_sync) {
      kf::detail::launch_tensor_core_f16(g, nullptr);
    } else {
      using kf::detail::wgmma_cluster_mode;
      const wgmma_cluster_mode multicast = p == path::wgmma_mcast_a          ? wgmma_cluster_mode::share_a
                                           : p == path::wgmma_cluster_splitk ? wgmma_cluster_mode::split_k
                                                                             : wgmma_cluster_mode::share_b;
      accepted = kf::detail::wgmma_try_launch(g, nullptr, {p == path::wgmma_cluster1 ? 1 : 2, block_n, multicast});
    }
  };
  const ::testing::AssertionResult r =
      kf::test::check_matmul_with(c, run, nullptr, kf::test::precision::fp32_accumulate, seed);
  ASSERT_TRUE(accepted) << "the wgmma kernel declined a call it should run (it would have fallen back to mma.sync)";
  EXPECT_TRUE(r);
}

struct tc_case {
  matmul_shape s;
  bool ta, tb;
  path p;
  bool bf16;
  int block_n = 0;  ///< wgmma tile width: 0 by shape, else forced (wgmma paths only)
};

std::string describe(const tc_case& c) {
  std::ostringstream o;
  o << (c.bf16 ? "bf16_" : "fp16_") << path_name(c.p) << "_" << c.s.m << "x" << c.s.n << "x" << c.s.k << "_"
    << (c.ta ? "T" : "N") << (c.tb ? "T" : "N");
  if (c.block_n != 0) o << "_n" << c.block_n;
  return o.str();
}

void PrintTo(const tc_case& c, std::ostream* os) { *os << describe(c); }

namespace f16_mma = kf::detail::f16_mma;

/// The tile a path runs at width block_n, from the kernel's own constants
/// (10_tensor_core_f16.cuh; the wgmma paths: wgmma_tile_shapes.cuh, the same for
/// __half and __nv_bfloat16).
kf::test::tile_shape tile_of(path p, int block_n) {
  if (p == path::mma_sync) return {f16_mma::block_m, f16_mma::block_n, f16_mma::block_k, f16_mma::stages};
  return kf::test::wgmma_tile<__half>(block_n, p == path::wgmma_cluster_splitk);
}

/// Shapes picked for a property of their own, beside the boundary shapes (see
/// the top of this file): whole tiles and the staged epilogue's chunks
/// (128 x 256 x 64, 200 x 136 x 72, 1 x 8 x 16), split-k (513 x 257 x 1031,
/// 1 x 1 x 4096, 130 x 300 x 2051), one tile row or column (1 x 4096 x 512,
/// 4096 x 1 x 512), one N-major box a stage (300 x 520 x 64), 108 tiles of
/// 128 x 256 (1090 x 2904 x 72) and more tiles than the GPU holds CTAs.
const std::vector<matmul_shape>& odd_shapes() {
  static const std::vector<matmul_shape> s = {{128, 256, 64}, {513, 257, 1031}, {1, 1, 4096},      {1, 4096, 512},
                                              {4096, 1, 512}, {300, 520, 64},   {130, 300, 2051},  {1090, 2904, 72},
                                              {200, 136, 72}, {1, 8, 16},       {4095, 4097, 4093}};
  return s;
}

/// Shapes the wgmma paths also run at a forced tile width (by shape they run
/// another): 128 x 128 and 128 x 256 on small, ragged shapes (split-k at 128 on
/// 130 x 300 x 2051), 128 x 64 on shapes that pick 128 x 256; and 128 and 256
/// on the last boundary shape of their own tile (three tiles each way, the
/// last partial, and the stage ring wrapped by a partial step).
struct forced_width {
  matmul_shape s;
  int block_n;
};
std::vector<forced_width> forced_widths() {
  std::vector<forced_width> out = {{{513, 257, 1031}, 128}, {{130, 300, 2051}, 128}, {{300, 520, 64}, 128},
                                   {{300, 520, 64}, 256},   {{1, 4096, 512}, 128},   {{1090, 2904, 72}, 64},
                                   {{1090, 2904, 72}, 128}, {{4095, 4097, 4093}, 64}};
  for (int block_n : {128, 256}) {
    out.push_back({kf::test::boundary_shapes<matmul_shape>(tile_of(path::wgmma_cluster2, block_n)).back(), block_n});
  }
  return out;
}

const path all_paths[] = {path::mma_sync, path::wgmma_cluster1, path::wgmma_cluster2, path::wgmma_mcast_a,
                          path::wgmma_cluster_splitk};

std::vector<tc_case> all_cases() {
  std::vector<tc_case> cases;
  for (bool bf16 : {false, true})
    for (path p : all_paths) {
      std::vector<matmul_shape> shapes = kf::test::boundary_shapes<matmul_shape>(tile_of(p, 0));
      shapes.insert(shapes.end(), odd_shapes().begin(), odd_shapes().end());
      for (const matmul_shape& s : shapes)
        for (bool ta : {false, true})
          for (bool tb : {false, true}) cases.push_back({s, ta, tb, p, bf16});
    }
  for (bool bf16 : {false, true})
    for (path p : {path::wgmma_cluster1, path::wgmma_cluster2, path::wgmma_mcast_a})
      for (const forced_width& f : forced_widths())
        for (bool ta : {false, true})
          for (bool tb : {false, true}) cases.push_back({f.s, ta, tb, p, bf16, f.block_n});
  return cases;
}

/// The cases this suite listed by hand before its boundary shapes came from
/// the tile constants: each must still run, or a case of the same type, path,
/// transposes and width on a shape that meets the tile's edges wherever it
/// does (tile_shapes.hpp: covers).
std::vector<tc_case> hand_listed_cases() {
  const std::vector<matmul_shape> shapes = {{1, 1, 1},        {33, 65, 17},     {127, 129, 255},  {128, 256, 64},
                                            {513, 257, 1031}, {1, 1, 4096},     {1, 4096, 512},   {4096, 1, 512},
                                            {300, 520, 64},   {130, 300, 2051}, {1090, 2904, 72}, {4095, 4097, 4093},
                                            {200, 136, 72},   {1, 8, 16}};
  const forced_width widths[] = {{{513, 257, 1031}, 128}, {{130, 300, 2051}, 128}, {{300, 520, 64}, 128},
                                 {{300, 520, 64}, 256},   {{1, 4096, 512}, 128},   {{1090, 2904, 72}, 64},
                                 {{1090, 2904, 72}, 128}, {{4095, 4097, 4093}, 64}};
  std::vector<tc_case> cases;
  for (bool bf16 : {false, true}) {
    for (path p : all_paths)
      for (const matmul_shape& s : shapes)
        for (int t = 0; t < 4; ++t) cases.push_back({s, (t & 1) != 0, (t & 2) != 0, p, bf16});
    for (path p : {path::wgmma_cluster1, path::wgmma_cluster2, path::wgmma_mcast_a})
      for (const forced_width& f : widths)
        for (int t = 0; t < 4; ++t) cases.push_back({f.s, (t & 1) != 0, (t & 2) != 0, p, bf16, f.block_n});
  }
  return cases;
}

TEST(MatmulTensorCoreF16Shapes, CoverTheHandListedCases) {
  kf::test::expect_cases_covered(
      all_cases(), hand_listed_cases(),
      [](const tc_case& a, const tc_case& b) {
        return a.p == b.p && a.ta == b.ta && a.tb == b.tb && a.bf16 == b.bf16 && a.block_n == b.block_n;
      },
      [](const tc_case& c) { return tile_of(c.p, c.block_n); }, describe);
}

class MatmulTensorCoreF16 : public ::testing::TestWithParam<tc_case> {};

TEST_P(MatmulTensorCoreF16, MatchesDoubleReference) {
  KF_SKIP_WITHOUT_GPU();
  const tc_case& c = GetParam();
  if (c.p == path::mma_sync) {
    if (device_cc() < 80) GTEST_SKIP() << "mma.sync f16 / bf16 needs compute capability 8.0 or newer";
  } else {
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    if (!kf::detail::wgmma_available(device)) {
      GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU and a library built with 90 in "
                      "CMAKE_CUDA_ARCHITECTURES (this GPU is sm_"
                   << device_cc() << ")";
    }
  }
  const bool big = c.s.m > 4000 && c.s.n > 4000;
  std::uint64_t seed = 1;
  for (const layout& l : layouts) {
    ++seed;
    if (big && l.pad != 37 && l.pad != 8) continue;  // the big shape: one fast and one misaligned layout
    if (c.bf16) {
      run_case<__nv_bfloat16>(c.s, c.ta, c.tb, c.p, c.block_n, l, seed);
    } else {
      run_case<__half>(c.s, c.ta, c.tb, c.p, c.block_n, l, seed);
    }
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTensorCoreF16, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<tc_case>& info) { return describe(info.param); });

// The argument-check tests below need the wgmma instances (a cc 9.0 GPU).
#define KF_SKIP_WITHOUT_WGMMA()                                                                              \
  do {                                                                                                       \
    KF_SKIP_WITHOUT_GPU();                                                                                   \
    int kf_device = 0;                                                                                       \
    ASSERT_EQ(cudaGetDevice(&kf_device), cudaSuccess);                                                       \
    if (!kf::detail::wgmma_available(kf_device)) GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU"; \
  } while (0)

// A tile width the kernel is not built for is an error naming block_n, thrown
// before anything is enqueued (not a silent fallback to another width).
TEST(MatmulWgmmaF16, UnknownBlockNIsAnError) {
  KF_SKIP_WITHOUT_WGMMA();
  kf::detail::gemm_args<__half> g;
  g.m = g.n = g.k = 1;
  for (int bad : {96, 32, 512, -64}) {
    try {
      kf::detail::wgmma_try_launch(g, nullptr, {2, bad});
      ADD_FAILURE() << "block_n = " << bad << " was accepted";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("block_n = " + std::to_string(bad)), std::string::npos) << e.what();
    }
  }
}

// A cluster mode that is not a wgmma_cluster_mode value is an error naming it.
TEST(MatmulWgmmaF16, UnknownClusterModeIsAnError) {
  KF_SKIP_WITHOUT_WGMMA();
  kf::detail::gemm_args<__half> g;
  g.m = g.n = g.k = 1;
  try {
    kf::detail::wgmma_try_launch(g, nullptr, {2, 0, static_cast<kf::detail::wgmma_cluster_mode>(7)});
    ADD_FAILURE() << "cluster_mode = 7 was accepted";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("cluster_mode = 7"), std::string::npos) << e.what();
  }
}

// The cluster split-k runs 128 x 128 tiles in clusters of 2 only: another width
// or single CTAs is an error naming the argument (not a silent other mode).
TEST(MatmulWgmmaF16, ClusterSplitKArgumentsAreChecked) {
  KF_SKIP_WITHOUT_WGMMA();
  kf::detail::gemm_args<__half> g;
  g.m = g.n = g.k = 1;
  const auto expect_error = [&](int cluster_size, int block_n, const std::string& named) {
    try {
      kf::detail::wgmma_try_launch(g, nullptr, {cluster_size, block_n, kf::detail::wgmma_cluster_mode::split_k});
      ADD_FAILURE() << "cluster_size " << cluster_size << ", block_n " << block_n << " was accepted";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  expect_error(2, 64, "block_n = 64");
  expect_error(2, 256, "block_n = 256");
  expect_error(1, 0, "cluster_size = 1");
}

// ---- CPU checks of the mma.sync kernel's shared-memory swizzle --------------

/// Every ldmatrix phase reads 8 consecutive stored rows (from a multiple of 8)
/// at one logical chunk: the swizzle must put them in 8 distinct 16-byte bank
/// groups (byte offset / 16 mod 8), for every layout.
template <class Tile>
void expect_conflict_free(const char* name) {
  for (int r0 = 0; r0 < Tile::outer; r0 += 8) {
    for (int c = 0; c < Tile::chunks_per_row; ++c) {
      std::vector<int> used(8, 0);
      for (int r = r0; r < r0 + 8; ++r) ++used[(Tile::chunk_offset(r, c) / 16) % 8];
      for (int u : used) EXPECT_EQ(u, 1) << name << " rows " << r0 << "+, chunk " << c;
    }
  }
}

/// The swizzle is a permutation of the chunks of each row (no two chunks collide).
template <class Tile>
void expect_permutation(const char* name) {
  std::vector<int> seen(Tile::bytes / 16, 0);
  for (int r = 0; r < Tile::outer; ++r)
    for (int c = 0; c < Tile::chunks_per_row; ++c) {
      const int chunk = Tile::chunk_offset(r, c) / 16;
      ASSERT_GE(chunk, r * Tile::chunks_per_row) << name;
      ASSERT_LT(chunk, (r + 1) * Tile::chunks_per_row) << name;
      ++seen[chunk];
    }
  for (int s : seen) EXPECT_EQ(s, 1) << name;
}

TEST(MatmulTensorCoreF16Layout, LdmatrixPhasesAreBankConflictFree) {
  namespace f = kf::detail::f16_mma;
  expect_conflict_free<f::a_tile<false>>("A k-contiguous");
  expect_conflict_free<f::a_tile<true>>("A m-contiguous");
  expect_conflict_free<f::b_tile<false>>("B n-contiguous");
  expect_conflict_free<f::b_tile<true>>("B k-contiguous");
  expect_permutation<f::a_tile<false>>("A k-contiguous");
  expect_permutation<f::a_tile<true>>("A m-contiguous");
  expect_permutation<f::b_tile<false>>("B n-contiguous");
  expect_permutation<f::b_tile<true>>("B k-contiguous");
}

TEST(MatmulTensorCoreF16Layout, FourStagesFitTwoBlocksOnHopperAndOneOnAda) {
  namespace f = kf::detail::f16_mma;
  constexpr int hopper_smem_per_sm = 228 * 1024, reserved_per_block = 1024, ada_optin = 99 * 1024;
  EXPECT_LE(f::min_blocks_per_sm * (f::smem_bytes + reserved_per_block), hopper_smem_per_sm);
  EXPECT_LE(f::smem_bytes, ada_optin);
}

// ---- the Hopper learning steps 11-13 (wgmma_step_try_launch) -----------------
// The row-major product (A k-contiguous, B n-contiguous, rows 16-byte aligned),
// at boundary shapes derived from each step's own tile constants (as CUTLASS's
// TestAll does): m around the CTA tile (64 rows for step 11, 128 for 12 and
// 13) and step 13's cluster tile (2 CTA tiles: an odd tile count leaves the
// last cluster's second CTA outside C), n around the 256-wide tile, k around
// one stage (64) and past the ring's depth (stages + 1 stages, less 8). Each
// shape runs twice: alpha 1, beta 0 (C NaN-poisoned) with tight rows, and
// alpha -0.5, beta 0.25 with every leading dimension padded by 8 (and C's by 3).

struct step_info {
  kf::detail::wgmma_step step;
  std::size_t block_m;
  std::size_t stages;
};

std::vector<matmul_shape> step_shapes(const step_info& s) {
  const std::size_t bm = s.block_m, bn = 256, sk = 64, deep = sk * (s.stages + 1) - 8;
  return {{1, 8, 1},
          {bm - 1, bn - 8, sk},
          {bm + 1, bn + 8, sk + 8},
          {2 * bm + 1, 2 * bn + 8, deep},
          {3 * bm, 3 * bn, 16},
          {2 * bm - 1, 8, sk * s.stages + 8},
          {bm, 24, 2 * deep}};
}

template <class T>
void run_steps(const step_info& info) {
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  if (!kf::detail::wgmma_available(device)) GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU";
  std::uint64_t seed = 100 * static_cast<int>(info.step);
  for (const matmul_shape& s : step_shapes(info)) {
    for (int variant = 0; variant < 2; ++variant) {
      matmul_case<T> c;
      c.shape = s;
      c.alpha = variant == 0 ? 1.0f : -0.5f;
      c.beta = variant == 0 ? 0.0f : 0.25f;
      // TMA reads A's and B's rows in place: leading dimensions a multiple of 8 elements.
      c.pad_a = (8 - s.k % 8) % 8 + (variant == 0 ? 0 : 8);
      c.pad_b = (8 - s.n % 8) % 8 + (variant == 0 ? 0 : 8);
      c.pad_c = variant == 0 ? 0 : 3;
      SCOPED_TRACE("step " + std::to_string(static_cast<int>(info.step)) + ": " + c.describe());
      bool accepted = true;
      const auto run = [&](const T* a, std::size_t lda, const T* b, std::size_t ldb, T* cc, std::size_t ldc) {
        const auto g = kf::detail::make_gemm_args<T>(kf::op::none, kf::op::none, s.m, s.n, s.k, c.alpha, a, lda, b, ldb,
                                                     c.beta, cc, ldc);
        accepted = kf::detail::wgmma_step_try_launch(info.step, g, nullptr);
      };
      const ::testing::AssertionResult r =
          kf::test::check_matmul_with(c, run, nullptr, kf::test::precision::fp32_accumulate, ++seed);
      ASSERT_TRUE(accepted) << "the learning step declined a call it should run";
      EXPECT_TRUE(r);
    }
  }
}

constexpr step_info step11{kf::detail::wgmma_step::tma, 64, 2};
constexpr step_info step12{kf::detail::wgmma_step::warp_specialized, 128, 4};
constexpr step_info step13{kf::detail::wgmma_step::clusters, 128, 4};

TEST(MatmulWgmmaSteps, Step11TmaMatchesDoubleReference) {
  KF_SKIP_WITHOUT_GPU();
  run_steps<__half>(step11);
  run_steps<__nv_bfloat16>(step11);
}

TEST(MatmulWgmmaSteps, Step12WarpSpecializedMatchesDoubleReference) {
  KF_SKIP_WITHOUT_GPU();
  run_steps<__half>(step12);
  run_steps<__nv_bfloat16>(step12);
}

TEST(MatmulWgmmaSteps, Step13ClustersMatchesDoubleReference) {
  KF_SKIP_WITHOUT_GPU();
  run_steps<__half>(step13);
  run_steps<__nv_bfloat16>(step13);
}

// What the learning steps do not take is an error naming it, thrown before
// anything is enqueued: another layout or misaligned rows (errc::unsupported,
// pointing at step 14) and a step that does not exist (errc::invalid_argument).
TEST(MatmulWgmmaSteps, OtherLayoutsAndStepsAreErrors) {
  KF_SKIP_WITHOUT_WGMMA();
  kf::device_buffer<__half> a(64 * 64), b(64 * 64), c(64 * 64);
  const auto args = [&](kf::op ta, kf::op tb, std::size_t lda) {
    return kf::detail::make_gemm_args<__half>(ta, tb, 8, 8, 8, 1.0f, a.data(), lda, b.data(), 8, 0.0f, c.data(), 8);
  };
  const auto expect = [](kf::errc code, const std::string& named, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected an error naming " << named;
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  using kf::detail::wgmma_step;
  expect(kf::errc::unsupported, "row-major product", [&] {
    kf::detail::wgmma_step_try_launch(wgmma_step::tma, args(kf::op::transpose, kf::op::none, 8), nullptr);
  });
  expect(kf::errc::unsupported, "row-major product", [&] {
    kf::detail::wgmma_step_try_launch(wgmma_step::clusters, args(kf::op::none, kf::op::transpose, 8), nullptr);
  });
  expect(kf::errc::unsupported, "16-byte", [&] {
    kf::detail::wgmma_step_try_launch(wgmma_step::warp_specialized, args(kf::op::none, kf::op::none, 9), nullptr);
  });
  expect(kf::errc::invalid_argument, "step = 10", [&] {
    kf::detail::wgmma_step_try_launch(static_cast<wgmma_step>(10), args(kf::op::none, kf::op::none, 8), nullptr);
  });
}

}  // namespace
