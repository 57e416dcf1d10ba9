// SPDX-License-Identifier: Apache-2.0
// Thread safety, as the README states it: every entry point may be called from
// several host threads at once, on one device or several. Here 8 host threads
// per visible device start together (the process's first kernelforge calls, so
// the per-device caches, kernel profiles, shared-memory opt-ins, workspace pools
// and the constant-memory slot ring are all created under contention), each on
// its own stream with its own data and filter, through every family; each
// result is checked against the CPU reference. Host compiler only.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/matmul.hpp"
#include "test_support.hpp"

namespace {

using kf::test::all_close;
using kf::test::random_vector;
using kf::test::tolerance;

constexpr int threads_per_device = 8;

/// Failures from worker threads (gtest assertions belong on the main thread).
struct failures {
  std::mutex mutex;
  std::vector<std::string> messages;
  void add(const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    messages.push_back(m);
  }
};

void check(failures& f, const std::string& what, const ::testing::AssertionResult& r) {
  if (!r) f.add(what + ": " + r.message());
}

/// One thread's work: every family, its own sizes, data and filter (seeded by id).
void run_every_family(int device, int id, cudaStream_t stream, failures& f) {
  const std::string who = "device " + std::to_string(device) + " thread " + std::to_string(id);
  const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(device) * 100 + static_cast<std::uint64_t>(id) * 10;

  // elementwise: saxpy, then ReLU forward in place.
  const std::size_t n = 100003 + 17 * static_cast<std::size_t>(id);
  const auto x = random_vector<float>(n, seed), y = random_vector<float>(n, seed + 1);
  auto dx = kf::to_device(x, stream), dy = kf::to_device(y, stream);
  kf::elementwise_options eo;
  eo.stream = stream;
  const float a = 0.5f + static_cast<float>(id);
  kf::saxpy(n, a, dx.data(), dy.data(), eo);
  kf::relu_threshold_forward(n, dy.data(), dy.data(), 0.25, eo);
  auto want = y;
  kf::reference::saxpy(n, a, x.data(), want.data());
  kf::reference::relu_threshold_forward(n, want.data(), want.data(), 0.25f);
  check(f, who + " saxpy+relu",
        all_close(kf::to_host(dy, stream), want, tolerance{4 * kf::test::unit_roundoff<float>(), 1e-6}));

  // matmul: exact warp_tiled (split-k workspace where it applies) and TF32 (wgmma repack on sm_90).
  const std::size_t m = 61 + id, nn = 67, k = 131 + 3 * id;
  const auto A = random_vector<float>(m * k, seed + 2), B = random_vector<float>(k * nn, seed + 3);
  auto dA = kf::to_device(A, stream), dB = kf::to_device(B, stream);
  kf::device_buffer<float> dC(m * nn);
  std::vector<float> C(m * nn);
  std::vector<double> scale;
  kf::reference::matmul(kf::op::none, kf::op::none, m, nn, k, 1.0, A.data(), k, B.data(), nn, 0.0, C.data(), nn,
                        &scale);
  for (kf::math_mode math : {kf::math_mode::exact, kf::math_mode::tf32}) {
    kf::matmul_options mo;
    mo.stream = stream;
    mo.math = math;
    kf::matmul(kf::op::none, kf::op::none, m, nn, k, 1.0, dA.data(), k, dB.data(), nn, 0.0, dC.data(), nn, mo);
    const double rel = math == kf::math_mode::tf32 ? 4e-3 : 2.0 * k * kf::test::unit_roundoff<float>();
    check(f, who + " matmul " + kf::to_string(math), all_close(kf::to_host(dC, stream), C, tolerance{rel, 0}, &scale));
  }

  // filter2d: constant_memory (the shared slot ring) and best, with this thread's own 5x5 filter.
  const std::size_t h = 97 + id, w = 101;
  const auto image = random_vector<float>(h * w, seed + 4), filter = random_vector<float>(25, seed + 5);
  auto dimage = kf::to_device(image, stream), dfilter = kf::to_device(filter, stream);
  kf::device_buffer<float> dout(h * w);
  std::vector<double> fwant(h * w), fscale(h * w);
  kf::reference::filter2d_exact(1, h, w, image.data(), w, filter.data(), 5, 5, kf::border::reflect, fwant.data(), w,
                                fscale.data());
  for (kf::filter2d_variant v : {kf::filter2d_variant::constant_memory, kf::filter2d_variant::best}) {
    kf::filter2d_options fo;
    fo.stream = stream;
    fo.variant = v;
    fo.mode = kf::border::reflect;
    kf::filter2d(1, h, w, dimage.data(), w, dfilter.data(), 5, 5, dout.data(), w, fo);
    check(f, who + " filter2d " + kf::to_string(v),
          all_close(kf::to_host(dout, stream), fwant, tolerance{32 * kf::test::unit_roundoff<float>(), 0}, &fscale));
  }

  // conv2d: implicit GEMM with bias.
  kf::conv2d_params p;
  p.batch = 2, p.in_channels = 3 + id % 3, p.in_height = 15, p.in_width = 17;
  p.out_channels = 8, p.filter_height = 3, p.filter_width = 3, p.pad_h = p.pad_w = 1;
  const std::size_t out_n = p.batch * p.out_channels * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
  const auto cx = random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, seed + 6);
  const auto cw = random_vector<float>(p.out_channels * p.in_channels * 9, seed + 7);
  const auto cb = random_vector<float>(p.out_channels, seed + 8);
  auto dcx = kf::to_device(cx, stream), dcw = kf::to_device(cw, stream), dcb = kf::to_device(cb, stream);
  kf::device_buffer<float> dcy(out_n);
  kf::conv2d_options co;
  co.stream = stream;
  kf::conv2d_forward(p, dcx.data(), dcw.data(), dcb.data(), dcy.data(), co);
  std::vector<double> cwant(out_n), cscale(out_n);
  kf::reference::conv2d_forward_exact(p, cx.data(), cw.data(), cb.data(), cwant.data(), cscale.data());
  check(f, who + " conv2d",
        all_close(kf::to_host(dcy, stream), cwant, tolerance{64 * kf::test::unit_roundoff<float>(), 0}, &cscale));
}

TEST(ThreadSafety, EightThreadsPerDeviceMakeTheirFirstCallsTogether) {
  KF_SKIP_WITHOUT_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  const int total = devices * threads_per_device;
  failures f;
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int d = 0; d < devices; ++d) {
    for (int t = 0; t < threads_per_device; ++t) {
      pool.emplace_back([&, d, t] {
        cudaStream_t stream = nullptr;
        if (cudaSetDevice(d) != cudaSuccess ||
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
          f.add("device " + std::to_string(d) + ": no stream");
          ready.fetch_add(1);
          return;
        }
        ready.fetch_add(1);
        while (ready.load() < total) std::this_thread::yield();  // everyone starts at the same moment
        try {
          run_every_family(d, t, stream, f);
        } catch (const std::exception& e) {
          f.add("device " + std::to_string(d) + " thread " + std::to_string(t) + " threw: " + e.what());
        }
        cudaStreamDestroy(stream);
      });
    }
  }
  for (auto& th : pool) th.join();
  for (const std::string& m : f.messages) ADD_FAILURE() << m;
  EXPECT_TRUE(f.messages.empty()) << f.messages.size() << " failures over " << total << " threads on " << devices
                                  << " device(s)";
}

}  // namespace
