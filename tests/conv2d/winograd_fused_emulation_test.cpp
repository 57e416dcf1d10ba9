// SPDX-License-Identifier: Apache-2.0
// Step 8 (include/kernelforge/kernels/conv2d/08_winograd_fused.cuh) run on the CPU: the kernel's own
// source, compiled by the host compiler, one std::thread per CUDA thread of a
// block (blocks one after another), __syncthreads as a barrier of the block's
// threads, cp.async as its plain-copy fallback (arch/cp_async.cuh below sm_80).
// It checks the kernel's indexing -- patch gathering, zero fill, the chunked
// channel loop, the position-per-warp products, the accumulators' staging and
// the output transform with bias and epilogue -- where no GPU is present, at
// the Winograd bound of the GPU tests (winograd_bound.hpp, justified at the top
// of conv2d_gpu_test.cpp), against the double reference, y poisoned with NaN.
// What it cannot check: timing, the asynchrony of cp.async, bank conflicts and
// races the barrier placement would allow on real hardware (compute-sanitizer's
// racecheck on the GPU tests covers those).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

// ---- the CUDA built-ins the kernel uses, for the host compiler ----------------------
namespace wfused_emulation {
struct index3 {
  unsigned x = 0, y = 0, z = 0;
};
thread_local index3 thread_index;
index3 block_index, grid_dim{1, 1, 1};

/// A reusable barrier of `count` threads (C++17 has no std::barrier).
class block_barrier {
 public:
  void reset(int count) { count_ = count, waiting_ = 0; }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int count_ = 0, waiting_ = 0;
  unsigned long generation_ = 0;
};
block_barrier barrier;
}  // namespace wfused_emulation

#define threadIdx wfused_emulation::thread_index
#define blockIdx wfused_emulation::block_index
#define gridDim wfused_emulation::grid_dim
#undef __launch_bounds__
#define __launch_bounds__(...)
inline void __syncthreads() { wfused_emulation::barrier.wait(); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
inline std::size_t __cvta_generic_to_shared(const void*) { return 0; }  // only inside sm_80+ asm
using std::max;
using std::min;
namespace kf::detail {
alignas(16) float wfused_smem[172032 / sizeof(float)];  // the block's dynamic shared memory
}  // namespace kf::detail

#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/conv2d/08_winograd_fused.cuh"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

using namespace kf::detail;

struct emulated_case {
  const char* name;
  std::size_t n, c, h, w, k, pad;
  bool bias, relu;
};

/// Runs the filter transform and the fused kernel on the CPU; y poisoned with
/// NaN (one element past it too, which must stay NaN).
std::vector<float> run_emulated(const kf::conv2d_params& p, const std::vector<float>& x, const std::vector<float>& w,
                                const float* bias, bool relu, float threshold) {
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  std::vector<float> y(p.batch * p.out_channels * P * Q + 1, std::nanf(""));
  const conv2d_args<float> a = make_conv2d_args(p, P, Q, x.data(), w.data(), bias, y.data());
  const conv2d_winograd_fused_layout l =
      make_conv2d_winograd_fused_layout(p.batch, p.in_channels, p.out_channels, P, Q);
  std::vector<float> u(l.u_floats, std::nanf(""));  // the padding columns stay NaN: never read

  const conv2d_winograd_filter_args fa = make_conv2d_winograd_fused_filter_args(a, l, u.data());
  wfused_emulation::grid_dim = {1, 1, 1};
  wfused_emulation::block_index = {0, 0, 0};
  for (unsigned t = 0; t < static_cast<unsigned>(winograd_transform_block); ++t) {  // grid-stride: no barrier
    wfused_emulation::thread_index.x = t;
    conv2d_winograd_filter<>(fa);
  }

  const conv2d_winograd_fused_args wa = make_conv2d_winograd_fused_args(a, l, u.data());
  const kf::epilogue::bias_relu_threshold<float> ep{nullptr, true, threshold};
  wfused_emulation::grid_dim = {static_cast<unsigned>(l.grid_x), static_cast<unsigned>(l.grid_y), 1};
  for (unsigned by = 0; by < l.grid_y; ++by) {
    for (unsigned bx = 0; bx < l.grid_x; ++bx) {
      wfused_emulation::block_index = {bx, by, 0};
      std::fill(std::begin(wfused_smem), std::end(wfused_smem), std::nanf(""));  // stale data must not matter
      wfused_emulation::barrier.reset(wfused_threads);
      std::vector<std::thread> threads;
      threads.reserve(wfused_threads);
      for (int t = 0; t < wfused_threads; ++t) {
        threads.emplace_back([&, t] {
          wfused_emulation::thread_index.x = static_cast<unsigned>(t);
          if (relu) {
            conv2d_winograd_fused(wa, ep);
          } else {
            conv2d_winograd_fused(wa, kf::epilogue::identity{});
          }
        });
      }
      for (std::thread& th : threads) th.join();
    }
  }
  return y;
}

// Readable parameter values in failure messages.
void PrintTo(const emulated_case& c, std::ostream* os) { *os << c.name; }

class Conv2dWinogradFusedEmulation : public ::testing::TestWithParam<emulated_case> {};

TEST_P(Conv2dWinogradFusedEmulation, MatchesReference) {
  const emulated_case& ec = GetParam();
  kf::conv2d_params p{ec.n, ec.c, ec.h, ec.w, ec.k, 3, 3};
  p.pad_h = p.pad_w = ec.pad;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t y_n = p.batch * p.out_channels * P * Q;
  const auto x = kf::test::random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, 31);
  const auto w = kf::test::random_vector<float>(p.out_channels * p.in_channels * 9, 32);
  const auto bias_values = kf::test::random_vector<float>(p.out_channels, 33);
  const float* bias = ec.bias ? bias_values.data() : nullptr;
  std::vector<double> expected(y_n), direct_scale(y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), bias, expected.data(), direct_scale.data());
  const std::vector<double> scale = kf::test::winograd_scale(p, x, w, bias);
  const double tol = kf::test::winograd_tolerance(p);
  constexpr float threshold = 0.25f;

  const std::vector<float> got = run_emulated(p, x, w, bias, ec.relu, threshold);
  ASSERT_TRUE(std::isnan(got[y_n])) << "the element after y was written";
  std::size_t bad = 0, decided = 0;
  for (std::size_t i = 0; i < y_n; ++i) {
    const double band = tol * scale[i];
    bool ok;
    if (std::isnan(got[i])) {
      ok = false;
    } else if (!ec.relu) {
      ok = std::fabs(got[i] - expected[i]) <= band;
    } else if (std::fabs(expected[i] - threshold) <= band) {
      ok = got[i] == 0 || std::fabs(got[i] - expected[i]) <= band;  // either side of the jump
    } else {
      ok = expected[i] <= threshold ? got[i] == 0 : std::fabs(got[i] - expected[i]) <= band;
      ++decided;
    }
    if (!ok && bad++ < 8) ADD_FAILURE() << "y[" << i << "] = " << got[i] << ", expected " << expected[i];
  }
  EXPECT_EQ(bad, 0u);
  if (ec.relu) EXPECT_GT(decided * 2, y_n) << "the threshold band swallows most outputs";
}

// Step 8's edges: one tile (P = Q = 1); tiles blocks spanning images (90 tiles
// per image); K past one block of 64 (K = 65: a block of one filter; 130), K
// below it; C < 8 and C % 8 != 0 (partial channel chunks: C = 9, 67, 131);
// pads 0, 1, 2 with odd P and Q (partial tiles); the first ResNet layer's
// shape at N = 1 (784 tiles: a last block of 16) and C = K = 256.
const emulated_case emulated_cases[] = {
    {"pad0_3x3_to_1x1_c2_k1", 1, 2, 3, 3, 1, 0, true, false},
    {"one_pixel_pad1_c4_k3", 2, 4, 1, 1, 3, 1, true, false},
    {"n5_c3_17x19_k20", 5, 3, 17, 19, 20, 1, true, false},
    {"pad2_c9_10x12_k65_no_bias", 3, 9, 10, 12, 65, 2, false, false},
    {"pad0_c16_13x11_k16_relu", 2, 16, 13, 11, 16, 0, false, true},
    {"pad2_c5_6x5_k7_relu", 3, 5, 6, 5, 7, 2, true, true},
    {"c67_14x14_k130", 2, 67, 14, 14, 130, 1, true, false},
    {"n1_c131_9x7_k67", 1, 131, 9, 7, 67, 1, true, false},
    {"n1_c64_56x56_k64", 1, 64, 56, 56, 64, 1, true, false},
    {"n1_c256_14x14_k256_relu", 1, 256, 14, 14, 256, 1, false, true},
};

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dWinogradFusedEmulation, ::testing::ValuesIn(emulated_cases),
                         [](const ::testing::TestParamInfo<emulated_case>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
