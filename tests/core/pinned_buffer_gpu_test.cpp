// SPDX-License-Identifier: Apache-2.0
// kf::pinned_buffer and kf::copy_async on a GPU: round trips in both directions
// (whole buffers and chunks on several streams), out_of_memory for an absurd
// size, and proof that copy_async does not synchronize: the stream is held by a
// host function that waits for the test, so the copy must return while the
// stream is still busy. Skips without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

class stream_guard {
 public:
  stream_guard() { EXPECT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess); }
  ~stream_guard() { cudaStreamDestroy(s_); }
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

TEST(PinnedBufferGpu, RoundTripWholeBuffers) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t n = (1u << 20) + 3;
  kf::pinned_buffer<float> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 1000) - 500.0f;
  for (auto& v : out) v = -1.0f;
  kf::device_buffer<float> d(n);
  stream_guard s;
  kf::copy_async(d, in, s);
  kf::copy_async(out, d, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i]) << "at " << i;
}

TEST(PinnedBufferGpu, ChunksOnSeveralStreams) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t n = 1000003, chunks = 7, chunk = (n + chunks - 1) / chunks;
  kf::pinned_buffer<double> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = 0.5 * static_cast<double>(i);
  kf::device_buffer<double> d(n);
  std::vector<stream_guard> streams(3);
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * chunk, count = std::min(chunk, n - begin);
    cudaStream_t s = streams[c % streams.size()];
    kf::copy_async(d.data() + begin, in.data() + begin, count, s);
    kf::copy_async(out.data() + begin, d.data() + begin, count, s);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i]) << "at " << i;
}

TEST(PinnedBufferGpu, SizeMismatchIsInvalidArgument) {
  KF_SKIP_WITHOUT_GPU();
  kf::pinned_buffer<float> h(3);
  kf::device_buffer<float> d(4);
  try {
    kf::copy_async(d, h);
    FAIL() << "no exception";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::invalid_argument) << e.what();
  }
}

TEST(PinnedBufferGpu, AbsurdSizeIsOutOfMemory) {
  KF_SKIP_WITHOUT_GPU();
  try {
    kf::pinned_buffer<char> b(std::size_t{1} << 52);  // 4 PiB
    FAIL() << "no exception";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::out_of_memory) << e.what();
    EXPECT_NE(std::string(e.what()).find("ulimit"), std::string::npos) << e.what();
  }
  kf::pinned_buffer<float> ok(16);  // the failure left no sticky error behind
  EXPECT_EQ(ok.size(), 16u);
}

std::atomic<bool> release{false};
void CUDART_CB hold_stream(void*) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!release.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

TEST(PinnedBufferGpu, CopyAsyncDoesNotSynchronize) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t n = 1 << 22;
  kf::pinned_buffer<float> h(n), back(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<float>(i);
  kf::device_buffer<float> d(n);
  stream_guard s;
  release = false;
  ASSERT_EQ(cudaLaunchHostFunc(s, hold_stream, nullptr), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  kf::copy_async(d, h, s);
  kf::copy_async(back, d, s);
  const double returned_after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the stream finished while held: something synchronized";
  EXPECT_LT(returned_after_s, 5.0) << "copy_async waited for the held stream";
  release = true;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(back[i], h[i]) << "at " << i;
}

}  // namespace
