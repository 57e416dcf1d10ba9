// SPDX-License-Identifier: Apache-2.0
// Example 05 -- the device query a learner writes first: what CUDA sees.
//   part 1: by hand with the CUDA runtime: the driver and runtime versions,
//           cudaGetDeviceCount, then cudaGetDeviceProperties for each GPU
//           (what CUDA's deviceQuery sample prints, the fields that matter);
//   part 2: the same through kernelforge: kf::get_device_info (with the peak
//           bandwidth and FP32 rate the library computes from those fields),
//           kf::compiled_architectures, and kf::require_kernel_image, which says
//           whether the library can run on each GPU.
// Plain C++ (no kernels): it builds with g++ against the CUDA runtime.
// Exit codes: 0 every GPU can run kernelforge, 1 one cannot, 77 no GPU (skipped).
#include <cstdio>
#include <string>

#include <cuda_runtime_api.h>

#include <kernelforge/device.hpp>
#include <kernelforge/error.hpp>
#include <kernelforge/version.hpp>

namespace {

constexpr int skip_exit_code = 77;

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

void print_properties(int d) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
    std::printf("  device %d: cudaGetDeviceProperties failed\n", d);
    return;
  }
  int sm_clock_khz = 0, mem_clock_khz = 0;  // attributes: the clock fields left cudaDeviceProp in CUDA 13
  cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, d);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, d);
  char bus[32] = "";
  cudaDeviceGetPCIBusId(bus, sizeof bus, d);
  std::printf("Device %d: \"%s\"\n", d, p.name);
  std::printf("  compute capability            %d.%d (sm_%d%d)\n", p.major, p.minor, p.major, p.minor);
  std::printf("  multiprocessors (SMs)         %d\n", p.multiProcessorCount);
  std::printf("  global memory                 %.1f GiB\n", p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  std::printf("  memory bus width              %d bits\n", p.memoryBusWidth);
  std::printf("  memory clock                  %d MHz\n", mem_clock_khz / 1000);
  std::printf("  SM clock                      %d MHz\n", sm_clock_khz / 1000);
  std::printf("  L2 cache                      %d KiB\n", p.l2CacheSize / 1024);
  std::printf("  shared memory per block       %zu KiB (opt-in up to %zu KiB)\n", p.sharedMemPerBlock / 1024,
              p.sharedMemPerBlockOptin / 1024);
  std::printf("  registers per block           %d\n", p.regsPerBlock);
  std::printf("  warp size                     %d\n", p.warpSize);
  std::printf("  max threads per block / SM    %d / %d\n", p.maxThreadsPerBlock, p.maxThreadsPerMultiProcessor);
  std::printf("  max grid size                 %d x %d x %d\n", p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]);
  std::printf("  concurrent copy engines       %d (2: copies in both directions overlap each other and kernels)\n",
              p.asyncEngineCount);
  std::printf("  unified addressing            %s\n", p.unifiedAddressing ? "yes" : "no");
  std::printf("  ECC                           %s\n", p.ECCEnabled ? "on" : "off");
  std::printf("  PCI bus id                    %s\n", bus);
}

}  // namespace

int main() {
  // Part 1: by hand.
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);  // 0: no driver
  cudaRuntimeGetVersion(&runtime);
  std::printf("-- part 1: the CUDA runtime API --\n");
  std::printf("CUDA driver supports CUDA %s, runtime %s\n", driver ? version(driver).c_str() : "(no driver)",
              version(runtime).c_str());
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return skip_exit_code;
  }
  std::printf("%d CUDA device(s)\n\n", count);
  for (int d = 0; d < count; ++d) print_properties(d);

  // Part 2: kernelforge.
  std::printf("\n-- part 2: kernelforge %s --\n", KERNELFORGE_VERSION_STRING);
  std::string archs;
  for (int a : kf::compiled_architectures()) archs += (archs.empty() ? "sm_" : ", sm_") + std::to_string(a);
  std::printf("library compiled for: %s\n", archs.c_str());
  bool all_ok = true;
  for (int d = 0; d < count; ++d) {
    try {
      const kf::device_info info = kf::get_device_info(d);
      std::printf("device %d: %s, cc %d.%d, %d SMs, peak %.0f GB/s, %.1f FP32 TFLOP/s: ", d, info.name.c_str(),
                  info.cc_major, info.cc_minor, info.sm_count, info.peak_bandwidth_gbs, info.peak_fp32_tflops);
      kf::require_kernel_image(d);
      std::printf("kernelforge can run here\n");
    } catch (const kf::error& e) {
      std::printf("\n  %s: %s\n", kf::to_string(e.code()), e.what());
      all_ok = false;
    }
  }
  std::printf("\n%s\n", all_ok ? "PASSED" : "FAILED");
  return all_ok ? 0 : 1;
}
