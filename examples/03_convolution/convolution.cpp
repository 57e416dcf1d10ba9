// SPDX-License-Identifier: Apache-2.0
// Example 03: an image filter, step by step.
//
// Blurs a generated 1024 x 1024 test image (concentric rings over a gradient)
// with a 5 x 5 Gaussian through each step of kf::filter2d's progression:
//
//   naive            one thread per pixel; image and filter from global memory
//   constant_memory  the filter in __constant__ memory: one broadcast per warp
//   smem_tiled       a 128 x 32 tile plus halo in shared memory, 32 outputs/thread
//   best             what the library picks (here smem_tiled; for a large
//                    separable filter such as the 15 x 15 Gaussian at the end,
//                    a row pass and a column pass)
//
// Each result is checked against the CPU reference and timed with CUDA events;
// the input and every output are written as binary PGM (P5) files, which most
// image viewers open. Usage: example_03_convolution [output directory]
// Exit codes: 0 all steps match the reference, 1 a mismatch, 77 no GPU (skipped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/conv.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/reference/conv.hpp"

namespace {

constexpr int skip_exit_code = 77;  // ctest: SKIP_RETURN_CODE
constexpr std::size_t side = 1024;
constexpr int timed_runs = 20;

/// Rings around the centre, brighter to the right: edges in every direction.
std::vector<float> make_image() {
  std::vector<float> img(side * side);
  for (std::size_t y = 0; y < side; ++y) {
    for (std::size_t x = 0; x < side; ++x) {
      const double dx = double(x) - side / 2.0, dy = double(y) - side / 2.0;
      const double ring = std::cos(std::sqrt(dx * dx + dy * dy) * 0.12) > 0 ? 1.0 : 0.0;
      img[y * side + x] = static_cast<float>(0.15 + 0.55 * ring + 0.3 * double(x) / side);
    }
  }
  return img;
}

/// A normalized n x n Gaussian: exp(-(i^2 + j^2) / (2 sigma^2)), summing to 1.
std::vector<float> gaussian(int n, double sigma) {
  std::vector<double> g(n);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double d = i - n / 2;
    g[i] = std::exp(-d * d / (2 * sigma * sigma));
    sum += g[i];
  }
  std::vector<float> f(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) f[i * n + j] = static_cast<float>(g[i] * g[j] / (sum * sum));
  }
  return f;
}

void write_pgm(const std::string& path, const std::vector<float>& img) {
  std::ofstream out(path, std::ios::binary);
  out << "P5\n" << side << " " << side << "\n255\n";
  for (float v : img) out.put(static_cast<char>(std::clamp(std::lround(v * 255.0f), 0l, 255l)));
  std::printf("    wrote %s\n", path.c_str());
}

struct step {
  const char* name;
  kf::filter2d_variant variant;
};

/// Runs one variant: checks it, times it, writes its output. Returns false on a mismatch.
bool run_step(const step& s, const kf::device_buffer<float>& in, const std::vector<float>& filter, int taps,
              const std::vector<double>& expected, const std::string& out_dir, const std::string& tag) {
  const auto d_filter = kf::to_device(filter);
  kf::device_buffer<float> out(side * side);
  kf::filter2d_options options;
  options.variant = s.variant;
  options.mode = kf::border::clamp;
  auto run = [&] {
    kf::filter2d<float>(1, side, side, in.data(), side, d_filter.data(), taps, taps, out.data(), side, options);
  };
  run();  // first call: module loading and the per-device caches
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < timed_runs; ++i) run();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double us = 1000.0 * ms / timed_runs;

  const std::vector<float> got = kf::to_host(out);
  double max_error = 0;
  for (std::size_t i = 0; i < got.size(); ++i) max_error = std::max(max_error, std::fabs(got[i] - expected[i]));
  // Outputs are weighted averages of values in [0, 1] (weights sum to 1): fp32
  // accumulation of taps^2 terms is good to about taps^2 * 2^-24.
  const double tolerance = (taps * taps + 2) * std::ldexp(1.0, -24);
  const bool ok = max_error <= tolerance;
  const double gbs = 2.0 * side * side * sizeof(float) / (us * 1e-6) / 1e9;
  std::printf("  %-16s %8.1f us  %7.1f GB/s   max |error| %.2e  %s\n", s.name, us, gbs, max_error,
              ok ? "matches the reference" : "MISMATCH");
  write_pgm(out_dir + "/" + tag + "_" + s.name + ".pgm", got);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return skip_exit_code;
  }
  const std::string out_dir = argc > 1 ? argv[1] : ".";
  try {
    const kf::device_info info = kf::get_device_info();
    std::printf("kf::filter2d step by step on %s: %zu x %zu fp32 image, clamp border\n", info.name.c_str(), side, side);
    const std::vector<float> image = make_image();
    write_pgm(out_dir + "/input.pgm", image);
    const auto d_image = kf::to_device(image);
    bool ok = true;

    // Steps 1-3 and best on a 5 x 5 Gaussian blur.
    const int taps = 5;
    const std::vector<float> blur = gaussian(taps, 1.2);
    std::vector<double> expected(side * side);
    kf::reference::filter2d_exact(1, side, side, image.data(), side, blur.data(), taps, taps, kf::border::clamp,
                                  expected.data(), side);
    std::printf("\n5 x 5 Gaussian blur:\n");
    for (const step& s :
         {step{"naive", kf::filter2d_variant::naive}, step{"constant_memory", kf::filter2d_variant::constant_memory},
          step{"smem_tiled", kf::filter2d_variant::smem_tiled}, step{"best", kf::filter2d_variant::best}}) {
      ok = run_step(s, d_image, blur, taps, expected, out_dir, "blur5") && ok;
    }

    // A 15 x 15 Gaussian: 225 taps per pixel in 2D, 30 as a row pass plus a
    // column pass. best detects that the filter is separable (on the GPU).
    const int big = 15;
    const std::vector<float> wide = gaussian(big, 3.5);
    kf::reference::filter2d_exact(1, side, side, image.data(), side, wide.data(), big, big, kf::border::clamp,
                                  expected.data(), side);
    std::printf("\n15 x 15 Gaussian blur (separable):\n");
    for (const step& s :
         {step{"smem_tiled", kf::filter2d_variant::smem_tiled}, step{"best", kf::filter2d_variant::best}}) {
      ok = run_step(s, d_image, wide, big, expected, out_dir, "blur15") && ok;
    }
    std::printf("\n%s\n", ok ? "All steps match the CPU reference." : "A step does NOT match the CPU reference.");
    return ok ? 0 : 1;
  } catch (const kf::error& e) {
    std::printf("kernelforge error (%s): %s\n", kf::to_string(e.code()), e.what());
    if (e.code() == kf::errc::no_device) return skip_exit_code;
    return 1;
  }
}
