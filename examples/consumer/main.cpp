// SPDX-License-Identifier: Apache-2.0
// Plain C++ (g++ or clang, no nvcc) calling a kernelforge kernel through the
// installed package. Exit code: 0 verified, 1 wrong result or error, 77 no GPU.
#include <cstdio>
#include <vector>

#include <kernelforge/kernelforge.hpp>

int main() try {
  const std::size_t n = 1000003;  // a prime: not a multiple of any block or vector width
  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = float(i % 1024) * 0.25f;
    y[i] = 1.0f + float(i % 3);
  }
  kf::device_buffer<float> dx = kf::to_device(x), dy = kf::to_device(y);
  kf::saxpy(n, 2.0f, dx.data(), dy.data());  // y = 2x + y on the GPU (exact in float for these values)
  const std::vector<float> out = kf::to_host(dy);
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] != 2.0f * x[i] + y[i]) {
      std::printf("FAILED: y[%zu] = %g, expected %g\n", i, out[i], 2.0f * x[i] + y[i]);
      return 1;
    }
  }
  std::printf("PASSED: kf::saxpy on %zu floats (%s)\n", n, kf::get_device_info().name.c_str());
} catch (const kf::error& e) {
  // no_device's message says what CUDA reported and to run kernelforge-doctor.
  std::printf("%s: %s\n", e.code() == kf::errc::no_device ? "SKIPPED" : "FAILED", e.what());
  return e.code() == kf::errc::no_device ? 77 : 1;
}
